//! Metric vs swept parameter: one line per strategy, the 95% CI band (mean ± ci95) around it.
//!
//! A numeric, evenly spaced axis is drawn to scale; any other axis (geometric grids, words)
//! puts its values at evenly spaced positions labelled with the values. When the swept key
//! is the hold cap (`max_wait`/`stagger` in the key), the documented default 5 s is marked.
//! For sweeps with several axes, the other axes are held at their middle value.

use std::sync::Arc;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::covered::TickedAxis;
use super::labels::{self, DIRECT_LABELS_MAX};
use super::scale;
use super::slice::{combos, groups};
use super::style::{self, num};
use super::{builder, frame, marker, mesh_style, DrawResult, Figure, Mark, Spec};
use crate::results::summary::Combos;
use crate::results::{Results, SummaryRow};

/// The metrics drawn against a swept parameter: (column stem, y title, file stem, higher is better).
pub const METRICS: [(&str, &str, &str, bool); 5] = [
    ("cost_usd", "Cost per run (USD)", "cost", false),
    ("hit_rate", "Token hit rate (%)", "hit_rate", true),
    ("makespan_s", "Makespan (s)", "makespan", false),
    ("launch_wait_p99_s", "Per-replication p99 launch wait (s)", "launch_wait_p99", false),
    ("throughput_agents_per_min", "Throughput (agents/min)", "throughput", true),
];

/// A line of more points than this is reduced, once built, to the lowest and highest mean of
/// each of this many equal parts of the x axis: finer than the pixel columns of any plot (the
/// figure is this wide), so what is held and drawn is bounded by the width, not the points.
const X_PARTS: usize = style::WIDTH as usize;

/// A figure with a line of more points than this says how such lines are drawn: well under
/// the ~700 columns of a plot and the width of a panel of the grid, so that a line reduced
/// when drawn is said in the caption.
const NOTE_ABOVE: usize = 200;

/// What the caption of a figure with a line of more than `NOTE_ABOVE` points adds.
const PER_COLUMN_NOTE: &str = " A line of more points than the plot has pixel columns is drawn \
    as the lowest and highest mean in each column, without markers.";

/// A swept axis as the x axis of a figure.
#[derive(Debug, Clone)]
pub struct XAxis {
    pub key: String,
    pub title: String,
    /// Position of each value on the axis (the value itself, or its index).
    pub positions: Vec<f64>,
    /// Shared: the figures of one axis (a metric each) have the same labels, one a point.
    pub labels: Arc<[String]>,
    /// True when positions are indices (labels are then drawn at integer positions).
    pub categorical: bool,
    /// True when positions are log10 of the values (a numeric axis spanning 20x or more).
    pub log: bool,
    /// What else moves along this axis (zipped partners' values), shown under the axis title.
    pub note: Option<String>,
    /// True when the values are words (not numbers or durations): drawn as a dot plot.
    pub words: bool,
    /// The hold-cap default: (position, label).
    pub marker: Option<(f64, String)>,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: RGBColor,
    pub shape: style::Shape,
    /// (x position, mean, ci95 half-width), ascending in x.
    pub points: Vec<(f64, f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct MetricSpec {
    pub x: XAxis,
    /// A second labelled vertical line (e.g. tune's recommendation): (position, label).
    pub highlight: Option<(f64, String)>,
    pub y_title: String,
    pub series: Vec<Series>,
}

/// The value of an axis entry in display units: a number, or a duration in seconds.
pub fn axis_number(text: &str) -> Option<(f64, bool)> {
    let t = text.trim().trim_matches('"');
    if let Ok(v) = t.parse::<f64>() {
        return Some((v, false));
    }
    crate::time::parse_duration_us(t).ok().map(|us| (crate::time::secs(us), true))
}

/// Is this key the hold cap, whose documented default is 5 s? `max_wait` of `wait_first`, or a
/// key named after Claude Code's `..._PREFIX_STAGGER_MS`; not the `stagger` strategy's own
/// `interval` (agent i sends at i * interval: a different knob with no such default).
pub fn is_hold_cap(key: &str) -> bool {
    key.contains("max_wait") || (key.contains("stagger") && !key.contains("interval"))
}

/// Build the x axis of `key` from its distinct values (in the order first written).
pub fn x_axis(key: &str, values: &[String]) -> XAxis {
    x_axis_of(key, values.to_vec())
}

/// `x_axis` of values given up to it: they become its labels (not copied: an axis of every
/// point of a sweep has 100,000).
fn x_axis_of(key: &str, values: Vec<String>) -> XAxis {
    let nums: Option<Vec<(f64, bool)>> = values.iter().map(|v| axis_number(v)).collect();
    let is_duration = nums.as_ref().is_some_and(|n| n.iter().any(|x| x.1));
    let unit = if is_duration || is_hold_cap(key) {
        " (s)"
    } else if key.contains("tokens") {
        " (tokens)"
    } else if key.ends_with("agents") || key.ends_with("concurrency") {
        " (agents)"
    } else {
        ""
    };
    let n = values.len();
    let labels: Arc<[String]> = values.into();
    let secs: Option<Vec<f64>> = nums.as_ref().map(|n| n.iter().map(|x| x.0).collect());
    let log = secs.as_ref().is_some_and(|v| scale::wants_log(v));
    let positions = match &secs {
        Some(v) if log => v.iter().map(|x| x.log10()).collect(),
        Some(v) => v.clone(),
        None => (0..n).map(|i| i as f64).collect(),
    };
    let words = nums.is_none();
    let title = match (unit, log) {
        ("", true) => format!("{key} (log scale)"),
        (u, true) => {
            format!("{key} ({}, log scale)", u.trim_start_matches(" (").trim_end_matches(')'))
        }
        (u, false) => format!("{key}{u}"),
    };
    let mut axis = XAxis {
        key: key.into(),
        title,
        positions,
        labels,
        categorical: words,
        words,
        log,
        marker: None,
        note: None,
    };
    if is_hold_cap(key)
        && secs.as_ref().is_some_and(|v| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            lo <= style::DEFAULT_HOLD_CAP_S && style::DEFAULT_HOLD_CAP_S <= hi
        })
    {
        let p = if log { style::DEFAULT_HOLD_CAP_S.log10() } else { style::DEFAULT_HOLD_CAP_S };
        axis.marker = Some((p, "default hold cap 5 s".to_string()));
    }
    axis
}

/// The distinct values of axis `a` in the summary, in first-seen order (of points).
pub fn axis_values(r: &Results, a: usize) -> Vec<String> {
    // The set only answers "seen?" (linear in points, where a scan of `vals` was quadratic in
    // a long axis); the order is `vals`', first appearance. The summary's index holds the
    // axis values of every point: the file is not read.
    let mut seen = std::collections::HashSet::new();
    let mut vals: Vec<String> = Vec::new();
    for (_, values) in r.summary.axes() {
        if seen.insert(values[a]) {
            vals.push(values[a].to_string());
        }
    }
    vals
}

/// One line of a metric figure: its legend label, colour, and the summary rows on it.
struct Line {
    label: String,
    color: RGBColor,
    member: Member,
}

/// Which summary rows belong to a line.
enum Member {
    Strategy(String),
    /// Axis index and value.
    /// A group of axes and its combination.
    Combo(Vec<usize>, Vec<String>),
}

impl Member {
    fn has(&self, row: &SummaryRow) -> bool {
        match self {
            Member::Strategy(s) => &row.strategy == s,
            Member::Combo(g, c) => g.iter().zip(c).all(|(&a, v)| &row.axis_values[a] == v),
        }
    }
}

/// True when axis `o` follows axis `a` (a `zip`): in every summary row, each value of `a` goes
/// with one value of `o`.
pub fn follows(r: &Results, o: usize, a: usize) -> bool {
    // Value of `a` -> the value of `o` first seen with it (a map: a list was quadratic in a
    // long axis).
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (_, values) in r.summary.axes() {
        let (va, vo) = (values[a], values[o]);
        if *seen.entry(va).or_insert(vo) != vo {
            return false;
        }
    }
    true
}

/// With a single strategy, the lines of group `g`'s figures are the combinations of another
/// group (the first with two or more), so a comparison across, say, agent kinds is drawn as
/// lines instead of being held at one value.
fn group_lines(r: &Results, groups: &[Vec<usize>], g: usize, n_strategies: usize) -> Option<usize> {
    if n_strategies != 1 {
        return None;
    }
    (0..groups.len()).find(|&o| o != g && combos(r, &groups[o]).len() >= 2)
}

/// A group's combination as one label: `5m / 1h` for zipped axes.
fn combo_label(c: &[&str]) -> String {
    c.join(" / ")
}

/// The x axis of a group: its first axis's values, to scale when they are numbers (the zipped
/// partners' values then named in the axis title), else each combination as a category.
fn group_axis(r: &Results, g: &[usize], cs: &Combos<'_>) -> XAxis {
    let lead: Vec<String> = cs.iter().map(|c| c[0].to_string()).collect();
    if g.len() == 1 {
        return x_axis_of(&r.axis_keys[g[0]], lead);
    }
    let distinct = lead.iter().collect::<std::collections::HashSet<_>>().len();
    let numeric = lead.iter().all(|v| axis_number(v).is_some());
    if numeric && distinct == lead.len() {
        let mut x = x_axis_of(&r.axis_keys[g[0]], lead);
        let partners: Vec<String> = (1..g.len())
            .map(|j| {
                let pairs: Vec<String> =
                    cs.iter().map(|c| format!("{} → {}", c[0], c[j])).collect();
                format!("{} (zipped): {}", style::short_key(&r.axis_keys[g[j]]), pairs.join(", "))
            })
            .collect();
        x.note = Some(partners.join("; "));
        return x;
    }
    let keys: Vec<&str> = g.iter().map(|&a| r.axis_keys[a].as_str()).collect();
    let labels: Arc<[String]> = cs.iter().map(|c| combo_label(&c)).collect();
    XAxis {
        key: keys.join(" / "),
        title: keys.join(" / "),
        positions: (0..labels.len()).map(|i| i as f64).collect(),
        labels,
        categorical: true,
        words: true,
        log: false,
        marker: None,
        note: None,
    }
}

/// "agents = 8, ttl / parent_ttl = 5m / 5m": where the axes outside `free` are held.
pub fn slice_text(r: &Results, groups: &[Vec<usize>], held: &[String], free: &[usize]) -> String {
    groups
        .iter()
        .filter(|g| !g.iter().any(|a| free.contains(a)))
        .filter(|g| combos(r, g).len() >= 2)
        .map(|g| {
            let keys: Vec<&str> = g.iter().map(|&a| style::short_key(&r.axis_keys[a])).collect();
            let vals: Vec<&str> = g.iter().map(|&a| held[a].as_str()).collect();
            format!("{} = {}", keys.join(" / "), vals.join(" / "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One figure per metric per group of axes with at least two combinations (zipped axes share
/// one). One line per strategy; with a single strategy, one line per combination of another
/// group (`group_lines`). The other axes are held at `held` (see `slice`), said in the title.
pub fn figures(r: &Results, held: &[String]) -> Vec<Figure> {
    let mut out = Vec::new();
    if r.summary.is_empty() {
        return out;
    }
    let strategies = r.strategies();
    let groups = groups(r);
    for (gi, g) in groups.iter().enumerate() {
        let cs = combos(r, g);
        if cs.len() < 2 {
            continue;
        }
        let x = group_axis(r, g, &cs);
        let span = x
            .positions
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &p| (lo.min(p), hi.max(p)));
        let line_group = group_lines(r, &groups, gi, strategies.len());
        let mut free: Vec<usize> = g.clone();
        if let Some(lg) = line_group {
            free.extend(&groups[lg]);
        }
        let slice = |row: &SummaryRow| {
            (0..held.len()).all(|o| free.contains(&o) || row.axis_values[o] == held[o])
        };
        let fixed = slice_text(r, &groups, held, &free);
        let lines: Vec<Line> = match line_group {
            None => strategies
                .iter()
                .map(|s| Line {
                    label: s.clone(),
                    color: style::strategy_color(s, &strategies),
                    member: Member::Strategy(s.clone()),
                })
                .collect(),
            Some(lg) => {
                let lg = &groups[lg];
                let lcs = combos(r, lg);
                let keys: Vec<&str> =
                    lg.iter().map(|&a| style::short_key(&r.axis_keys[a])).collect();
                let n = lcs.len();
                lcs.iter()
                    .enumerate()
                    .map(|(k, c)| Line {
                        label: format!("{} = {}", keys.join(" / "), combo_label(&c)),
                        color: style::series_color(k, n),
                        member: Member::Combo(
                            lg.clone(),
                            c.into_iter().map(String::from).collect(),
                        ),
                    })
                    .collect()
            }
        };
        // One walk over the summary for every figure of the group: each (metric, line) gets
        // its points as the rows stream past, reduced per part of the x axis as they come.
        let mut built: Vec<Vec<Built>> =
            METRICS.iter().map(|_| lines.iter().map(|_| Built::default()).collect()).collect();
        let names: Vec<(String, String)> =
            METRICS.iter().map(|m| (format!("{}_mean", m.0), format!("{}_ci95", m.0))).collect();
        let mut rows = r.summary.iter();
        while let Some(row) = rows.next() {
            if !slice(&row) {
                continue;
            }
            let px = x.positions[cs.of_stretch(rows.stretch())];
            for (li, _) in lines.iter().enumerate().filter(|(_, l)| l.member.has(&row)) {
                for (mi, (mean, ci)) in names.iter().enumerate() {
                    let Some(m) = row.get(mean) else { continue };
                    let scale = if METRICS[mi].0 == "hit_rate" { 100.0 } else { 1.0 };
                    let ci = row.get(ci).unwrap_or(0.0) * scale;
                    built[mi][li].push((px, m * scale, ci), span);
                }
            }
        }
        for ((_, y_title, stem, higher_better), built) in METRICS.into_iter().zip(built) {
            let (mut series, mut reduced) = (Vec::new(), false);
            for (li, (line, b)) in lines.iter().zip(built).enumerate() {
                reduced |= b.count > NOTE_ABOVE;
                let points = b.finish(span);
                if !points.is_empty() {
                    series.push(Series {
                        label: line.label.clone(),
                        color: line.color,
                        shape: style::shape(li + li / style::SHAPES.len()),
                        points,
                    });
                }
            }
            if series.is_empty() {
                continue;
            }
            let what = y_title.split(" (").next().unwrap_or(y_title);
            let mut title = format!("{what} vs {}", x.key);
            if !fixed.is_empty() {
                title.push_str(&format!(" (at {fixed})"));
            }
            let mut spec =
                MetricSpec { x: x.clone(), highlight: None, y_title: y_title.into(), series };
            let mut caption = caption(&spec, what, y_title, higher_better);
            spec.x = drawn_axis(spec.x, &spec.series);
            if reduced {
                caption.push_str(PER_COLUMN_NOTE);
            }
            if !fixed.is_empty() {
                // Say where the other axes are held: "At agents = 8 (parent_tokens = 50000), ..."
                if let Some((head, tail)) = caption.split_once(", ") {
                    caption = format!("{head} ({fixed}), {tail}");
                }
            }
            let name = format!("{stem}_vs_{}", crate::results::slug(&r.axis_keys[g[0]]));
            out.push(Figure { name, title, caption, spec: Spec::Metric(spec) });
        }
    }
    out
}

/// The x axis as a figure drawn to scale needs it once its lines are built: the lowest and
/// highest positions (the scale's range) and the first of each position a line reaches (the
/// caption names the value at the last), with their labels, in axis order. An axis of words
/// is drawn a row per value and kept whole; so is one no longer than `X_PARTS`.
fn drawn_axis(x: XAxis, series: &[Series]) -> XAxis {
    if x.words || x.positions.len() <= X_PARTS {
        return x;
    }
    let mut reached: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    reached.sort_by(f64::total_cmp);
    reached.dedup();
    let lowest = (0..x.positions.len()).min_by(|&i, &j| x.positions[i].total_cmp(&x.positions[j]));
    let highest = (0..x.positions.len()).max_by(|&i, &j| x.positions[i].total_cmp(&x.positions[j]));
    let mut seen: Vec<bool> = vec![false; reached.len()];
    let keep: Vec<usize> = (0..x.positions.len())
        .filter(|&i| {
            let first_reached = match reached.binary_search_by(|p| p.total_cmp(&x.positions[i])) {
                Ok(k) if !seen[k] => {
                    seen[k] = true;
                    true
                }
                _ => false,
            };
            first_reached || Some(i) == lowest || Some(i) == highest
        })
        .collect();
    XAxis {
        positions: keep.iter().map(|&i| x.positions[i]).collect(),
        labels: keep.iter().map(|&i| x.labels[i].clone()).collect(),
        ..x
    }
}

/// A point of a line as it is built: (x position, mean, ci95 half-width).
type Seen = (f64, f64, f64);

/// The points of one line of a metric figure, as the summary streams past: all of them up to
/// `X_PARTS`, past that reduced per part of the x axis (`per_column`) whenever the buffer
/// fills, so a line holds at most a few times `X_PARTS` points whatever the sweep's size.
/// Reducing in batches keeps what one reduction of the whole line keeps: a part's lowest
/// and highest mean (first and last of ties, in x then walk order) are the lowest and highest
/// of the batch that holds them, and so are the line's ends. The walk order of points of one
/// x is kept by stable sorts: a reduced batch (sorted, earlier) comes before the points after.
#[derive(Default)]
struct Built {
    points: Vec<Seen>,
    count: usize,
}

impl Built {
    /// What the buffer holds before it is reduced: a reduction keeps up to two points a part
    /// and the ends, so each frees room for at least `X_PARTS` more.
    const FULL: usize = 3 * X_PARTS + 2;

    fn push(&mut self, p: Seen, span: (f64, f64)) {
        if self.points.capacity() == 0 {
            self.points.reserve_exact(Built::FULL);
        }
        self.points.push(p);
        self.count += 1;
        if self.points.len() >= Built::FULL {
            self.reduce(span);
        }
    }

    fn reduce(&mut self, span: (f64, f64)) {
        self.points.sort_by(|p, q| p.0.total_cmp(&q.0));
        let kept = per_column(&self.points, |px| x_part(span, px));
        self.points.clear();
        self.points.extend(kept);
    }

    /// The line, ascending in x: every point, or more than `X_PARTS` reduced per part.
    fn finish(mut self, span: (f64, f64)) -> Vec<Seen> {
        if self.count > X_PARTS {
            self.reduce(span);
        } else {
            self.points.sort_by(|p, q| p.0.total_cmp(&q.0));
        }
        // Held until every figure is drawn: no spare capacity.
        self.points.into_boxed_slice().into()
    }
}

/// Which of `X_PARTS` equal parts of the span `lo..=hi` holds `x`.
fn x_part((lo, hi): (f64, f64), x: f64) -> i64 {
    let at = if hi > lo { (x - lo) / (hi - lo) } else { 0.0 };
    (at * (X_PARTS - 1) as f64).round() as i64
}

/// `points` (ascending in x) reduced to what can be seen of them: in each run of points in
/// one `column`, the point of the lowest mean and that of the highest, in x order (one if it
/// is both), and the first and last points. The line through them reaches every column's
/// extremes and both ends, as the full line would.
fn per_column(points: &[(f64, f64, f64)], column: impl Fn(f64) -> i64) -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < points.len() {
        let c = column(points[start].0);
        let len = points[start..].iter().take_while(|p| column(p.0) == c).count();
        let run = &points[start..start + len];
        let lowest = (0..len).min_by(|&i, &j| run[i].1.total_cmp(&run[j].1)).unwrap_or(0);
        let highest = (0..len).max_by(|&i, &j| run[i].1.total_cmp(&run[j].1)).unwrap_or(0);
        out.push(run[lowest.min(highest)]);
        if lowest != highest {
            out.push(run[lowest.max(highest)]);
        }
        start += len;
    }
    if let (Some(&first), Some(&last)) = (points.first(), points.last()) {
        if out.first() != Some(&first) {
            out.insert(0, first);
        }
        if out.last() != Some(&last) {
            out.push(last);
        }
    }
    out
}

/// "At KEY = V, S has the lowest mean cost (a USD), 42% less than eager (b USD)."
fn caption(spec: &MetricSpec, what: &str, y_title: &str, higher_better: bool) -> String {
    let unit = y_title.rsplit_once('(').map(|(_, u)| u.trim_end_matches(')')).unwrap_or("");
    let fmt =
        |v: f64| if unit == "%" { format!("{}%", num(v)) } else { format!("{} {unit}", num(v)) };
    let Some(&last_x) = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .max_by(f64::total_cmp)
        .as_ref()
    else {
        return String::new();
    };
    let at: Vec<(&str, f64)> = spec
        .series
        .iter()
        .filter_map(|s| s.points.iter().find(|p| p.0 == last_x).map(|p| (s.label.as_str(), p.1)))
        .collect();
    let i = spec.x.positions.iter().position(|&p| p == last_x).unwrap_or(0);
    let where_ = format!("At {} = {}", spec.x.key, spec.x.labels[i]);
    let better = |a: f64, b: f64| if higher_better { a > b } else { a < b };
    let best = at.iter().copied().reduce(|a, b| if better(b.1, a.1) { b } else { a });
    let Some(best) = best else { return String::new() };
    let word = if higher_better { "highest" } else { "lowest" };
    let what = what.to_lowercase();
    let reference = at
        .iter()
        .copied()
        .find(|s| s.0 == "eager" && s.0 != best.0)
        .or_else(|| at.iter().copied().reduce(|a, b| if better(a.1, b.1) { b } else { a }))
        .filter(|r| r.0 != best.0);
    let mut text = format!("{where_}, {} has the {word} mean {what}, {}", best.0, fmt(best.1));
    if let Some(r) = reference {
        if r.1.abs() > 1e-12 {
            let pct = (best.1 - r.1) / r.1.abs() * 100.0;
            let dir = if pct < 0.0 { "less" } else { "more" };
            text.push_str(&format!(", {}% {dir} than {} ({})", num(pct.abs()), r.0, fmt(r.1)));
        } else {
            text.push_str(&format!(" ({}: {})", r.0, fmt(r.1)));
        }
    }
    text.push_str("; bands are 95% confidence intervals of the mean.");
    text
}

pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &MetricSpec,
) -> DrawResult {
    if s.x.words {
        return draw_dots(root, title, s);
    }
    if s.series.len() > DIRECT_LABELS_MAX {
        return draw_panels(root, title, s);
    }
    let (lo, hi) = y_extent(s);
    // Room at the top for the marker lines' labels.
    let marks = s.x.marker.iter().chain(s.highlight.iter()).count();
    let probe = scale::linear(lo, hi, lo >= 0.0);
    let hi = hi + (probe.hi - probe.lo) * 0.08 * marks as f64;
    let y = scale::linear(lo, hi, lo >= 0.0);
    // Few lines are labelled at their ends; many keep the legend column.
    let direct = (2..=DIRECT_LABELS_MAX).contains(&s.series.len());
    let mut legend: Vec<(String, Mark)> = if s.series.len() > 1 && !direct {
        s.series.iter().map(|se| (se.label.clone(), Mark::Series(se.color, se.shape))).collect()
    } else {
        Vec::new()
    };
    // Zipped partners move with x: their values, named in the legend column.
    if let Some(n) = &s.x.note {
        if !legend.is_empty() {
            legend.push((String::new(), Mark::Note));
        }
        legend.push((n.clone(), Mark::Note));
    }
    let framed = frame(root, title, &legend)?;
    let named: Vec<(String, RGBColor, style::Shape)> = match direct {
        true => s.series.iter().map(|se| (se.label.clone(), se.color, se.shape)).collect(),
        false => Vec::new(),
    };
    let (area, strip, end_labels) = labels::end_strip(&framed, &named);
    let x = x_scale_max(&s.x, scale::ticks_for_width(area.dim_in_pixel().0));
    let mut chart = builder(&area).build_cartesian_2d(x.ranged(), y.ranged())?;
    let x_title = s.x.title.clone();
    let (xs, ys) = (x.clone(), y.clone());
    mesh_style(&mut chart)
        .x_desc(x_title.as_str())
        .y_desc(s.y_title.as_str())
        .x_label_formatter(&|v| xs.label(*v))
        .y_label_formatter(&|v| ys.label(*v))
        .draw()?;
    draw_lines(&mut chart, &s.series)?;
    draw_markers(&mut chart, s, y.lo, y.hi)?;
    if direct {
        let (top, bottom) =
            (chart.backend_coord(&(x.lo, y.hi)).1, chart.backend_coord(&(x.lo, y.lo)).1);
        let base = framed.get_base_pixel();
        let strip_x = strip.get_base_pixel().0 - base.0;
        let ends: Vec<(i32, i32)> = s
            .series
            .iter()
            .map(|se| {
                let y = se.points.last().map_or(bottom, |p| chart.backend_coord(&(p.0, p.1)).1);
                (strip_x, y - base.1)
            })
            .collect();
        let rows = (top - base.1, bottom - base.1);
        labels::draw_end_labels(&framed, strip_x, &end_labels, &ends, rows)?;
    }
    Ok(())
}

/// Many lines: small multiples, one panel per series on shared axes, the series in its
/// colour with its band and markers, every other series a thin grey line behind it (so each
/// is seen whole and against the rest). The axis titles are said once.
fn draw_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &MetricSpec,
) -> DrawResult {
    let (lo, hi) = y_extent(s);
    let y = scale::linear_max(lo, hi, lo >= 0.0, 4);
    let mut x_title = s.x.title.clone();
    if let Some((_, label)) = &s.x.marker {
        x_title.push_str(&format!("; vertical line: {label}"));
    }
    let titles = (x_title.as_str(), s.y_title.as_str());
    let (panels, fit) = labels::grid(root, title, s.x.note.as_ref(), titles, s.series.len())?;
    // A log axis keeps every k-th tick the panel's width holds.
    let mut x = x_scale_max(&s.x, fit);
    let step = x.ticks.len().div_ceil(fit).max(1);
    x.ticks = x.ticks.iter().copied().step_by(step).collect();
    for (i, (panel, se)) in panels.iter().zip(&s.series).enumerate() {
        let mut chart =
            labels::panel_builder(panel, &se.label).build_cartesian_2d(x.ranged(), y.ranged())?;
        let (xs, ys) = (x.clone(), y.clone());
        mesh_style(&mut chart)
            .x_label_formatter(&|v| xs.label(*v))
            .y_label_formatter(&|v| ys.label(*v))
            .draw()?;
        for other in s.series.iter().filter(|o| o.label != se.label) {
            let pts = other.points.iter().map(|p| (p.0, p.1));
            chart.draw_series(LineSeries::new(pts, style::CONTEXT.stroke_width(2)))?;
        }
        if let Some((mx, _)) = s.x.marker {
            let line = PathElement::new(vec![(mx, y.lo), (mx, y.hi)], style::INK.stroke_width(1));
            chart.draw_series(std::iter::once(line))?;
        }
        draw_lines(&mut chart, std::slice::from_ref(&s.series[i]))?;
    }
    Ok(())
}

/// The lowest and highest value a figure's bands reach.
fn y_extent(s: &MetricSpec) -> (f64, f64) {
    let pts = s.series.iter().flat_map(|se| se.points.iter());
    let lo = pts.clone().map(|p| p.1 - p.2).fold(f64::INFINITY, f64::min);
    let hi = pts.map(|p| p.1 + p.2).fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The x axis drawn to scale: log10 positions get a log axis, plain ones a linear axis.
pub fn x_scale(x: &XAxis) -> scale::Scale {
    x_scale_max(x, scale::MAX_TICKS)
}

/// `x_scale` with at most `max` ticks on a linear axis.
pub fn x_scale_max(x: &XAxis, max: usize) -> scale::Scale {
    let values: Vec<f64> =
        x.positions.iter().map(|p| if x.log { 10f64.powf(*p) } else { *p }).collect();
    if x.log {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        scale::log_scale(lo, hi)
    } else {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        scale::linear_max(lo, hi, false, max)
    }
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<TickedAxis, TickedAxis>>;

/// Every band first (so no band covers a line), then lines with their markers. A line of more
/// points than the plot has pixel columns is drawn as its extremes per column (`per_column`),
/// without markers, which would only overlap into a band.
fn draw_lines<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, series: &[Series]) -> DrawResult {
    let columns = chart.plotting_area().dim_in_pixel().0 as usize;
    let seen: Vec<std::borrow::Cow<'_, [(f64, f64, f64)]>> = series
        .iter()
        .map(|se| match se.points.len() > columns {
            true => per_column(&se.points, |x| i64::from(chart.backend_coord(&(x, 0.0)).0)).into(),
            false => se.points.as_slice().into(),
        })
        .collect();
    for (se, points) in series.iter().zip(&seen) {
        let mut band: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1 + p.2)).collect();
        band.extend(points.iter().rev().map(|p| (p.0, p.1 - p.2)));
        chart.draw_series(std::iter::once(Polygon::new(band, se.color.mix(0.15))))?;
    }
    for ((se, points), all) in series.iter().zip(&seen).zip(series.iter().map(|s| &s.points)) {
        let c = se.color;
        let line =
            LineSeries::new(points.iter().map(|p| (p.0, p.1)), c.stroke_width(style::LINE_PX));
        chart.draw_series(line)?;
        if all.len() <= columns {
            for p in points.iter() {
                marker(chart.plotting_area(), (p.0, p.1), se.shape, c, 7)?;
            }
        }
    }
    Ok(())
}

/// The default hold cap and the highlight (e.g. tune's recommendation) as labelled lines.
fn draw_markers<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    s: &MetricSpec,
    y0: f64,
    y1: f64,
) -> DrawResult {
    let lines =
        [(s.x.marker.as_ref(), style::INK, 0.02), (s.highlight.as_ref(), style::HIGHLIGHT, 0.09)];
    for (mark, ink, drop) in lines {
        let Some((x, label)) = mark else { continue };
        let line = PathElement::new(vec![(*x, y0), (*x, y1)], ink.stroke_width(2));
        chart.draw_series(std::iter::once(line))?;
        let font = (style::FONT, style::TICK_PX).into_font().color(&ink);
        let text = Text::new(format!(" {label}"), (*x, y1 - (y1 - y0) * drop), font);
        chart.draw_series(std::iter::once(text))?;
    }
    Ok(())
}

/// Words on an axis have no order: a dot plot, one row per value (first on top), the metric
/// across, each strategy a dot with its 95% CI as a bar, rows offset so they do not overlap.
fn draw_dots<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &MetricSpec,
) -> DrawResult {
    let n = s.x.labels.len();
    let pts = s.series.iter().flat_map(|se| se.points.iter());
    let lo = pts.clone().map(|p| p.1 - p.2).fold(f64::INFINITY, f64::min);
    let hi = pts.map(|p| p.1 + p.2).fold(f64::NEG_INFINITY, f64::max);
    let legend: Vec<(String, Mark)> = if s.series.len() > 1 {
        s.series.iter().map(|se| (se.label.clone(), Mark::Series(se.color, se.shape))).collect()
    } else {
        Vec::new()
    };
    let area = frame(root, title, &legend)?;
    let v = scale::linear_max(lo, hi, lo >= 0.0, scale::ticks_for_width(area.dim_in_pixel().0));
    let chars = s.x.labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let label_px = (chars as f64 * 0.55 * style::TICK_PX as f64 / 1.24 + 75.0).clamp(130.0, 500.0);
    let mut chart = builder(&area)
        .y_label_area_size(label_px as u32)
        .build_cartesian_2d(v.ranged(), -0.5..n as f64 - 0.5)?;
    let labels = s.x.labels.clone();
    let fmt_y = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= labels.len() {
            return String::new();
        }
        labels[labels.len() - 1 - i as usize].clone()
    };
    mesh_style(&mut chart)
        .disable_y_mesh()
        .x_desc(s.y_title.as_str())
        .y_desc(s.x.title.as_str())
        .y_labels(n + 1)
        .x_label_formatter(&|t| v.label(*t))
        .y_label_formatter(&fmt_y)
        .draw()?;
    let k = s.series.len().max(1) as f64;
    for (j, se) in s.series.iter().enumerate() {
        let off = if k > 1.0 { 0.3 * (j as f64 / (k - 1.0) - 0.5) } else { 0.0 };
        let c = se.color;
        let row = |p: &(f64, f64, f64)| (n - 1) as f64 - p.0 + off;
        let bars = se.points.iter().map(|p| {
            PathElement::new(vec![(p.1 - p.2, row(p)), (p.1 + p.2, row(p))], c.stroke_width(3))
        });
        chart.draw_series(bars)?;
        for p in &se.points {
            marker(chart.plotting_area(), (p.1, row(p)), se.shape, c, 8)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reduced_per_column_keeps_each_columns_lowest_and_highest_and_both_ends() {
        let points: Vec<(f64, f64, f64)> =
            (0..10).map(|i| (i as f64, [3., 1., 5., 2., 9., 0., 4., 4., 7., 6.][i], 0.5)).collect();
        // Columns of 3 points: {0,1,2}, {3,4,5}, {6,7,8}, {9}.
        let got = per_column(&points, |x| (x / 3.0).floor() as i64);
        let xs: Vec<f64> = got.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 8.0, 9.0]);
        assert!(got.iter().all(|p| points.contains(p)), "only points of the line: {got:?}");
    }

    /// A long line with ties in x and in mean, out of x order, as a sweep's rows arrive.
    fn long_line(n: usize) -> Vec<(f64, f64, f64)> {
        (0..n)
            .map(|i| {
                let x = ((i * 7919) % (n / 3)) as f64;
                let mean = ((i * 104_729) % 97) as f64 / 7.0;
                (x, mean, (i % 5) as f64)
            })
            .collect()
    }

    #[test]
    fn a_line_reduced_as_it_is_built_is_the_line_reduced_whole() {
        for n in [10, X_PARTS, X_PARTS + 1, 5 * Built::FULL + 17, 40_000] {
            let line = long_line(n);
            let span = line
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
            let mut built = Built::default();
            for &p in &line {
                built.push(p, span);
            }
            assert!(built.points.len() < Built::FULL, "bounded by the width, not the points");
            let mut whole = line.clone();
            whole.sort_by(|p, q| p.0.total_cmp(&q.0));
            if whole.len() > X_PARTS {
                whole = per_column(&whole, |px| x_part(span, px));
            }
            assert_eq!(built.finish(span), whole, "{n} points");
        }
    }

    #[test]
    fn an_axis_drawn_keeps_its_range_and_the_values_its_lines_reach() {
        let values: Vec<String> = (0..3 * X_PARTS).map(|i| (1000 + i % 1000).to_string()).collect();
        let x = x_axis("workload.task_tokens", &values);
        assert!(!x.log);
        let points = vec![(1020.0, 2.0, 0.0), (1500.0, 1.0, 0.0)];
        let series =
            [Series { label: "a".into(), color: style::INK, shape: style::shape(0), points }];
        let drawn = drawn_axis(x.clone(), &series);
        assert_eq!(drawn.positions, [1000.0, 1020.0, 1500.0, 1999.0]);
        assert_eq!(&drawn.labels[..], ["1000", "1020", "1500", "1999"]);
        let range = |x: &XAxis| (x_scale(x).lo, x_scale(x).hi);
        assert_eq!(range(&drawn), range(&x));
        let spec = |x: XAxis| MetricSpec {
            x,
            highlight: None,
            y_title: "Cost (USD)".into(),
            series: series.to_vec(),
        };
        assert_eq!(
            caption(&spec(drawn), "Cost", "Cost (USD)", false),
            caption(&spec(x), "Cost", "Cost (USD)", false)
        );
    }

    #[test]
    fn a_line_of_one_point_a_column_is_kept_whole() {
        let points: Vec<(f64, f64, f64)> = (0..5).map(|i| (i as f64, i as f64, 0.0)).collect();
        assert_eq!(per_column(&points, |x| x as i64), points);
    }

    #[test]
    fn the_hold_cap_keys() {
        assert!(is_hold_cap("max_wait") && is_hold_cap("strategy.wait_first.max_wait"));
        assert!(is_hold_cap("prefix_stagger_ms"));
        assert!(!is_hold_cap("strategy.stagger.interval") && !is_hold_cap("workload.agents"));
    }

    #[test]
    fn hold_caps_are_to_scale_on_a_log_axis_with_5s_at_its_value() {
        let v: Vec<String> = ["1s", "2s", "10s", "30s"].map(String::from).into();
        let x = x_axis("max_wait", &v);
        assert!(x.log && !x.categorical && !x.words);
        assert_eq!(x.positions, [0.0, 2f64.log10(), 1.0, 30f64.log10()]);
        assert_eq!(x.marker.map(|m| m.0), Some(5f64.log10()));
        let y = x_axis("workload.parent_idle", &["0s".into(), "1min".into(), "10min".into()]);
        assert!(!y.log && y.positions == [0.0, 60.0, 600.0], "linear, to scale: {y:?}");
    }
}
