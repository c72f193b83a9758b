//! Metric vs swept parameter: one line per strategy, the 95% CI band (mean ± ci95) around it.
//!
//! A numeric, evenly spaced axis is drawn to scale; any other axis (geometric grids, words)
//! puts its values at evenly spaced positions labelled with the values. When the swept key
//! is the hold cap (`max_wait`/`stagger` in the key), the documented default 5 s is marked.
//! For sweeps with several axes, the other axes are held at their middle value.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{self, num};
use super::{builder, err, frame, mesh_style, padded, DrawResult, Figure, Mark, Spec};
use crate::results::{Results, SummaryRow};

/// The metrics drawn against a swept parameter: (column stem, y title, file stem, higher is better).
pub const METRICS: [(&str, &str, &str, bool); 5] = [
    ("cost_usd", "Cost per run (USD)", "cost", false),
    ("hit_rate", "Token hit rate (%)", "hit_rate", true),
    ("makespan_s", "Makespan (s)", "makespan", false),
    ("launch_wait_p99_s", "Launch wait p99 (s)", "launch_wait_p99", false),
    ("throughput_agents_per_min", "Throughput (agents/min)", "throughput", true),
];

/// A swept axis as the x axis of a figure.
#[derive(Debug, Clone)]
pub struct XAxis {
    pub key: String,
    pub title: String,
    /// Position of each value on the axis (the value itself, or its index).
    pub positions: Vec<f64>,
    pub labels: Vec<String>,
    /// True when positions are indices (labels are then drawn at integer positions).
    pub categorical: bool,
    /// True when the values are words (not numbers or durations): drawn as a dot plot.
    pub words: bool,
    /// The hold-cap default: (position, label).
    pub marker: Option<(f64, String)>,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: RGBColor,
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
    let title = format!("{key}{unit}");
    let labels: Vec<String> = values.to_vec();
    let linear =
        nums.as_ref().is_some_and(|n| evenly_spaced(&n.iter().map(|x| x.0).collect::<Vec<_>>()));
    let (positions, categorical) = match (&nums, linear) {
        (Some(n), true) => (n.iter().map(|x| x.0).collect(), false),
        _ => ((0..values.len()).map(|i| i as f64).collect(), true),
    };
    let words = nums.is_none();
    let mut axis =
        XAxis { key: key.into(), title, positions, labels, categorical, words, marker: None };
    if is_hold_cap(key) {
        if let Some(n) = &nums {
            let secs: Vec<f64> = n.iter().map(|x| x.0).collect();
            axis.marker = locate(&secs, &axis.positions, style::DEFAULT_HOLD_CAP_S)
                .map(|p| (p, "default hold cap 5 s".to_string()));
        }
    }
    axis
}

fn evenly_spaced(v: &[f64]) -> bool {
    if v.len() < 3 {
        return v.len() == 2 && v[1] > v[0];
    }
    let step = v[1] - v[0];
    step > 0.0 && v.windows(2).all(|w| ((w[1] - w[0]) - step).abs() <= step * 0.01)
}

/// The axis position of `value`, interpolating between the sorted values; None if outside.
fn locate(values: &[f64], positions: &[f64], value: f64) -> Option<f64> {
    let mut pairs: Vec<(f64, f64)> =
        values.iter().copied().zip(positions.iter().copied()).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    pairs.windows(2).find(|w| w[0].0 <= value && value <= w[1].0).map(|w| {
        let f = if w[1].0 > w[0].0 { (value - w[0].0) / (w[1].0 - w[0].0) } else { 0.0 };
        w[0].1 + f * (w[1].1 - w[0].1)
    })
}

/// The distinct values of axis `a` in the summary, in first-seen order.
pub fn axis_values(r: &Results, a: usize) -> Vec<String> {
    let mut vals: Vec<String> = Vec::new();
    for row in &r.summary {
        if !vals.contains(&row.axis_values[a]) {
            vals.push(row.axis_values[a].clone());
        }
    }
    vals
}

/// The value every other axis is held at: its middle distinct value.
pub fn held_values(r: &Results) -> Vec<String> {
    (0..r.axis_keys.len())
        .map(|a| {
            let v = axis_values(r, a);
            v[v.len() / 2].clone()
        })
        .collect()
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
    AxisValue(usize, String),
}

impl Member {
    fn has(&self, row: &SummaryRow) -> bool {
        match self {
            Member::Strategy(s) => &row.strategy == s,
            Member::AxisValue(g, v) => &row.axis_values[*g] == v,
        }
    }
}

/// True when axis `o` follows axis `a` (a `zip`): in every summary row, each value of `a` goes
/// with one value of `o`.
pub fn follows(r: &Results, o: usize, a: usize) -> bool {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for row in &r.summary {
        let p = (row.axis_values[a].as_str(), row.axis_values[o].as_str());
        match seen.iter().find(|q| q.0 == p.0) {
            Some(q) if q.1 != p.1 => return false,
            Some(_) => {}
            None => seen.push(p),
        }
    }
    true
}

/// With a single strategy, the lines of axis `a`'s figures are the values of another axis (the
/// first with two or more values that does not follow `a`), so a comparison across, say,
/// agent kinds is drawn as lines instead of being held at one value.
fn group_axis(r: &Results, a: usize, n_strategies: usize) -> Option<usize> {
    if n_strategies != 1 {
        return None;
    }
    (0..r.axis_keys.len()).find(|&o| o != a && axis_values(r, o).len() >= 2 && !follows(r, o, a))
}

/// One figure per metric per axis with at least two values (an axis zipped to an earlier one
/// draws no figures of its own). One line per strategy; with a single strategy, one line per
/// value of another axis (`group_axis`).
pub fn figures(r: &Results) -> Vec<Figure> {
    let mut out = Vec::new();
    let strategies = r.strategies();
    let held = if r.summary.is_empty() { Vec::new() } else { held_values(r) };
    for a in 0..r.axis_keys.len() {
        let values = axis_values(r, a);
        if values.len() < 2 || (0..a).any(|o| follows(r, a, o)) {
            continue;
        }
        let x = x_axis(&r.axis_keys[a], &values);
        let group = group_axis(r, a, strategies.len());
        let free = |o: usize| {
            o == a || follows(r, o, a) || group.is_some_and(|g| o == g || follows(r, o, g))
        };
        let slice =
            |row: &SummaryRow| (0..held.len()).all(|o| free(o) || row.axis_values[o] == held[o]);
        let fixed: Vec<String> = (0..held.len())
            .filter(|&o| !free(o))
            .map(|o| format!("{} = {}", style::short_key(&r.axis_keys[o]), held[o]))
            .collect();
        let lines: Vec<Line> = match group {
            None => strategies
                .iter()
                .map(|s| Line {
                    label: s.clone(),
                    color: style::strategy_color(s, &strategies),
                    member: Member::Strategy(s.clone()),
                })
                .collect(),
            Some(g) => {
                let gv = axis_values(r, g);
                let n = gv.len();
                gv.into_iter()
                    .enumerate()
                    .map(|(k, v)| Line {
                        label: format!("{} = {v}", style::short_key(&r.axis_keys[g])),
                        color: style::colormap(k as f64 / (n - 1).max(1) as f64 * 0.9),
                        member: Member::AxisValue(g, v),
                    })
                    .collect()
            }
        };
        for (metric, y_title, stem, higher_better) in METRICS {
            let scale = if metric == "hit_rate" { 100.0 } else { 1.0 };
            let mut series = Vec::new();
            for line in &lines {
                let mut points = Vec::new();
                for row in r.summary.iter().filter(|row| line.member.has(row) && slice(row)) {
                    let i = values.iter().position(|v| v == &row.axis_values[a]).unwrap_or(0);
                    let (Some(m), ci) =
                        (row.get(&format!("{metric}_mean")), row.get(&format!("{metric}_ci95")))
                    else {
                        continue;
                    };
                    points.push((x.positions[i], m * scale, ci.unwrap_or(0.0) * scale));
                }
                points.sort_by(|p, q| p.0.total_cmp(&q.0));
                if !points.is_empty() {
                    series.push(Series { label: line.label.clone(), color: line.color, points });
                }
            }
            if series.is_empty() {
                continue;
            }
            let what = y_title.split(" (").next().unwrap_or(y_title);
            let mut title = format!("{what} vs {}", r.axis_keys[a]);
            if !fixed.is_empty() {
                title.push_str(&format!(" ({})", fixed.join(", ")));
            }
            let spec =
                MetricSpec { x: x.clone(), highlight: None, y_title: y_title.into(), series };
            let mut caption = caption(&spec, what, y_title, higher_better);
            if !fixed.is_empty() {
                // Say where the other axes are held: "At agents = 8 (parent_tokens = 50000), ..."
                if let Some((head, tail)) = caption.split_once(", ") {
                    caption = format!("{head} ({}), {tail}", fixed.join(", "));
                }
            }
            let name = format!("{stem}_vs_{}", crate::results::slug(&r.axis_keys[a]));
            out.push(Figure { name, title, caption, spec: Spec::Metric(spec) });
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
    let pts = s.series.iter().flat_map(|se| se.points.iter());
    let lo = pts.clone().map(|p| p.1 - p.2).fold(f64::INFINITY, f64::min);
    let hi = pts.map(|p| p.1 + p.2).fold(f64::NEG_INFINITY, f64::max);
    let (y0, y1) = padded(lo, hi, lo >= 0.0);
    // Room at the top for the marker lines' labels.
    let marks = s.x.marker.iter().chain(s.highlight.iter()).count();
    let y1 = y1 + (y1 - y0) * 0.07 * marks as f64;
    let xmin = s.x.positions.iter().copied().fold(f64::INFINITY, f64::min);
    let xmax = s.x.positions.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (x0, x1) =
        if s.x.categorical { (xmin - 0.3, xmax + 0.3) } else { padded(xmin, xmax, false) };
    let legend: Vec<(String, Mark)> = if s.series.len() > 1 {
        s.series.iter().map(|se| (se.label.clone(), Mark::Line(se.color))).collect()
    } else {
        Vec::new()
    };
    let area = frame(root, title, &legend)?;
    let mut chart = builder(&area).build_cartesian_2d(x0..x1, y0..y1).map_err(err)?;
    let fmt_x = x_formatter(&s.x);
    let categorical = s.x.categorical;
    let n_labels = if categorical { s.x.labels.len() + 1 } else { 10 };
    mesh_style(&mut chart)
        .x_desc(s.x.title.as_str())
        .y_desc(s.y_title.as_str())
        .x_labels(n_labels)
        .y_labels(8)
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&|v| num(*v))
        .draw()
        .map_err(err)?;
    draw_lines(&mut chart, &s.series)?;
    draw_markers(&mut chart, s, y0, y1)
}

/// Tick labels: the values' own text at category positions (at most ~12 shown), or plain
/// numbers on a to-scale axis (durations in seconds, as the axis title says).
fn x_formatter(x: &XAxis) -> impl Fn(&f64) -> String {
    let labels = x.labels.clone();
    let categorical = x.categorical;
    let step = labels.len().div_ceil(12).max(1);
    move |v: &f64| {
        if !categorical {
            return num(*v);
        }
        let i = v.round();
        let shown = (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len();
        if shown && (i as usize).is_multiple_of(step) {
            labels[i as usize].clone()
        } else {
            String::new()
        }
    }
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Every band first (so no band covers a line), then lines with their points.
fn draw_lines<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, series: &[Series]) -> DrawResult {
    for se in series {
        let mut band: Vec<(f64, f64)> = se.points.iter().map(|p| (p.0, p.1 + p.2)).collect();
        band.extend(se.points.iter().rev().map(|p| (p.0, p.1 - p.2)));
        chart.draw_series(std::iter::once(Polygon::new(band, se.color.mix(0.18)))).map_err(err)?;
    }
    for se in series {
        let c = se.color;
        let line =
            LineSeries::new(se.points.iter().map(|p| (p.0, p.1)), c.stroke_width(style::LINE_PX));
        chart.draw_series(line).map_err(err)?;
        chart
            .draw_series(se.points.iter().map(|p| Circle::new((p.0, p.1), 5, c.filled())))
            .map_err(err)?;
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
        chart.draw_series(std::iter::once(line)).map_err(err)?;
        let font = (style::FONT, style::TICK_PX).into_font().color(&ink);
        let text = Text::new(format!(" {label}"), (*x, y1 - (y1 - y0) * drop), font);
        chart.draw_series(std::iter::once(text)).map_err(err)?;
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
    let (v0, v1) = padded(lo, hi, lo >= 0.0);
    let legend: Vec<(String, Mark)> = if s.series.len() > 1 {
        s.series.iter().map(|se| (se.label.clone(), Mark::Dot(se.color))).collect()
    } else {
        Vec::new()
    };
    let area = frame(root, title, &legend)?;
    let chars = s.x.labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let label_px = (chars as f64 * 0.55 * style::TICK_PX as f64 / 1.24 + 75.0).clamp(130.0, 500.0);
    let mut chart = builder(&area)
        .y_label_area_size(label_px as u32)
        .build_cartesian_2d(v0..v1, -0.5..n as f64 - 0.5)
        .map_err(err)?;
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
        .x_label_formatter(&|v| num(*v))
        .y_label_formatter(&fmt_y)
        .draw()
        .map_err(err)?;
    let k = s.series.len().max(1) as f64;
    for (j, se) in s.series.iter().enumerate() {
        let off = if k > 1.0 { 0.3 * (j as f64 / (k - 1.0) - 0.5) } else { 0.0 };
        let c = se.color;
        let row = |p: &(f64, f64, f64)| (n - 1) as f64 - p.0 + off;
        let bars = se.points.iter().map(|p| {
            PathElement::new(vec![(p.1 - p.2, row(p)), (p.1 + p.2, row(p))], c.stroke_width(3))
        });
        chart.draw_series(bars).map_err(err)?;
        chart
            .draw_series(se.points.iter().map(|p| Circle::new((p.1, row(p)), 8, c.filled())))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_cap_keys() {
        assert!(is_hold_cap("max_wait") && is_hold_cap("strategy.wait_first.max_wait"));
        assert!(is_hold_cap("prefix_stagger_ms"));
        assert!(!is_hold_cap("strategy.stagger.interval") && !is_hold_cap("workload.agents"));
    }

    #[test]
    fn uneven_values_sit_at_even_positions_and_5s_is_interpolated() {
        let v: Vec<String> = ["1s", "2s", "10s"].map(String::from).into();
        let x = x_axis("max_wait", &v);
        assert!(x.categorical && !x.words);
        // 5 s lies between 2 s (index 1) and 10 s (index 2): 1 + (5 - 2) / (10 - 2) = 1.375.
        assert_eq!(x.marker.map(|m| m.0), Some(1.375));
    }
}
