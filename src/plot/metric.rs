//! Metric vs swept parameter: one line per strategy, the 95% CI band (mean ± ci95) around it.
//!
//! A numeric, evenly spaced axis is drawn to scale; any other axis (geometric grids, words)
//! puts its values at evenly spaced positions labelled with the values. When the swept key
//! is the hold cap (`max_wait`/`stagger` in the key), the documented default 5 s is marked.
//! For sweeps with several axes, the other axes are held at their middle value.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{group_axis, x_scale_max, XAxis};
use super::labels::{self, DIRECT_LABELS_MAX};
use super::reduce::{drawn_axis, per_column, Built};
use super::scale::{self, TickedAxis};
use super::slice::{groups, in_slice, slice_text};
use super::style::{self, num};
use super::{builder, category, frame, marker, mesh_style, DrawResult, Figure, Mark, Spec};
use crate::results::summary::Combos;
use crate::results::{Results, SummaryRow};

/// The live page's figures build their x axes through here.
pub use super::axis::x_axis;
pub use super::series::Series;

/// The metrics drawn against a swept parameter: (column stem, y title, file stem, higher is better).
pub const METRICS: [(&str, &str, &str, bool); 5] = [
    ("cost_usd", "Cost per run (USD)", "cost", false),
    ("hit_rate", "Token hit rate (%)", "hit_rate", true),
    ("makespan_s", "Makespan (s)", "makespan", false),
    ("launch_wait_p99_s", "Per-replication p99 launch wait (s)", "launch_wait_p99", false),
    ("throughput_agents_per_min", "Throughput (agents/min)", "throughput", true),
];

/// A figure with a line of more points than this says how such lines are drawn: well under
/// the ~700 columns of a plot and the width of a panel of the grid, so that a line reduced
/// when drawn is said in the caption.
const NOTE_ABOVE: usize = 200;

/// What the caption of a figure with a line of more than `NOTE_ABOVE` points adds.
const PER_COLUMN_NOTE: &str = " A line of more points than the plot has pixel columns is drawn \
    as the lowest and highest mean in each column, without markers.";

#[derive(Debug, Clone)]
pub struct MetricSpec {
    pub x: XAxis,
    /// A second labelled vertical line (e.g. tune's recommendation): (position, label).
    pub highlight: Option<(f64, String)>,
    pub y_title: String,
    pub series: Vec<Series>,
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

/// With a single strategy, the lines of group `g`'s figures are the combinations of another
/// group (the first with two or more), so a comparison across, say, agent kinds is drawn as
/// lines instead of being held at one value.
fn group_lines(r: &Results, groups: &[Vec<usize>], g: usize, n_strategies: usize) -> Option<usize> {
    if n_strategies != 1 {
        return None;
    }
    (0..groups.len()).find(|&o| o != g && r.summary.combos(&groups[o]).len() >= 2)
}

/// One figure per metric per group of axes with at least two combinations (zipped axes share
/// one). One line per strategy; with a single strategy, one line per combination of another
/// group (`group_lines`). The other axes are held at `held` (see `slice`), said in the title.
pub fn figures(r: &Results, held: &[String]) -> Vec<Figure> {
    if r.summary.is_empty() {
        return Vec::new();
    }
    let strategies = r.strategies();
    let groups = groups(r);
    let swept = (0..groups.len()).filter(|&g| r.summary.combos(&groups[g]).len() >= 2);
    swept.flat_map(|g| group_figures(r, held, &groups, g, &strategies)).collect()
}

/// The figures of group `g` (a metric each), its lines built in one walk over the summary.
fn group_figures(
    r: &Results,
    held: &[String],
    groups: &[Vec<usize>],
    g: usize,
    strategies: &[String],
) -> Vec<Figure> {
    let cs = r.summary.combos(&groups[g]);
    let x = group_axis(r, &groups[g], &cs);
    let span = scale::extent(x.positions.iter().copied());
    let line_group = group_lines(r, groups, g, strategies.len()).map(|o| &groups[o]);
    let mut free: Vec<usize> = groups[g].clone();
    free.extend(line_group.into_iter().flatten());
    let lines = lines(r, strategies, line_group);
    let built = walk(r, (&x, &cs, span), &lines, held, &free);
    let fixed = slice_text(r, groups, held, &free);
    let stem = crate::results::slug(&r.axis_keys[groups[g][0]]);
    let at = Place { x: &x, span, fixed: &fixed, stem: &stem };
    METRICS.into_iter().zip(built).filter_map(|(m, b)| metric_figure(m, &at, &lines, b)).collect()
}

/// The lines of a group's figures: one per strategy, or one per combination of `other`.
fn lines(r: &Results, strategies: &[String], other: Option<&Vec<usize>>) -> Vec<Line> {
    let Some(lg) = other else {
        let line = |s: &String| Line {
            label: s.clone(),
            color: style::strategy_color(s, strategies),
            member: Member::Strategy(s.clone()),
        };
        return strategies.iter().map(line).collect();
    };
    let mut lcs = r.summary.combos(lg).iter().collect::<Vec<Vec<&str>>>();
    // Numbers and durations in ascending order (`0s`, `2s`, `8.57s`, `10s`, `1min`).
    if lcs.iter().all(|c| super::axis::axis_number(c[0]).is_some()) {
        let v = |c: &Vec<&str>| super::axis::axis_number(c[0]).map_or(0.0, |n| n.0);
        lcs.sort_by(|a, b| v(a).total_cmp(&v(b)));
    }
    let keys: Vec<&str> = lg.iter().map(|&a| style::short_key(&r.axis_keys[a])).collect();
    let shown = |c: &[&str]| c.iter().map(|v| super::rules::display_value(v)).collect::<Vec<_>>();
    let line = |(k, c): (usize, Vec<&str>)| Line {
        label: format!("{} = {}", keys.join(" / "), shown(&c).join(" / ")),
        color: style::series_color(k),
        member: Member::Combo(lg.clone(), c.into_iter().map(String::from).collect()),
    };
    lcs.into_iter().enumerate().map(line).collect()
}

/// One walk over the summary for every figure of a group: each (metric, line) gets its
/// points as the rows of the slice stream past, reduced per part of the x axis as they come.
fn walk(
    r: &Results,
    (x, cs, span): (&XAxis, &Combos<'_>, (f64, f64)),
    lines: &[Line],
    held: &[String],
    free: &[usize],
) -> Vec<Vec<Built>> {
    let mut built: Vec<Vec<Built>> =
        METRICS.iter().map(|_| lines.iter().map(|_| Built::default()).collect()).collect();
    let names: Vec<(String, String)> =
        METRICS.iter().map(|m| (format!("{}_mean", m.0), format!("{}_ci95", m.0))).collect();
    let mut rows = r.summary.iter();
    while let Some(row) = rows.next() {
        if !in_slice(&row, held, free) {
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
    built
}

/// Where a group's figures are: their x axis and its span, the slice held (as text) and the
/// axis's file-name stem.
struct Place<'a> {
    x: &'a XAxis,
    span: (f64, f64),
    fixed: &'a str,
    stem: &'a str,
}

/// The figure of one metric from its built lines (`None` when no line has a point).
fn metric_figure(
    (_, y_title, stem, higher_better): (&str, &str, &str, bool),
    at: &Place<'_>,
    lines: &[Line],
    built: Vec<Built>,
) -> Option<Figure> {
    let (mut series, mut reduced) = (Vec::new(), false);
    for (li, (line, b)) in lines.iter().zip(built).enumerate() {
        reduced |= b.count > NOTE_ABOVE;
        let points = b.finish(at.span);
        if !points.is_empty() {
            let (label, color) = (line.label.clone(), line.color);
            let shape = style::shape(li + li / style::SHAPES.len());
            series.push(Series { label, color, shape, points });
        }
    }
    if series.is_empty() {
        return None;
    }
    let series = super::rules::merge_coinciding(series);
    let what = y_title.split(" (").next().unwrap_or(y_title);
    let mut title = format!("{what} vs {}", at.x.key);
    if !at.fixed.is_empty() {
        title.push_str(&format!(" (at {})", at.fixed));
    }
    let mut spec = MetricSpec { x: at.x.clone(), highlight: None, y_title: y_title.into(), series };
    let mut caption = caption(&spec, what, y_title, higher_better);
    let reached = spec.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    spec.x = drawn_axis(spec.x, reached);
    if reduced {
        caption.push_str(PER_COLUMN_NOTE);
    }
    if !at.fixed.is_empty() {
        // Say where the other axes are held: "At agents = 8 (parent_tokens = 50000), ..."
        if let Some((head, tail)) = caption.split_once(", ") {
            caption = format!("{head} ({}), {tail}", at.fixed);
        }
    }
    let name = format!("{stem}_vs_{}", at.stem);
    Some(Figure { name, title, caption, spec: Spec::Metric(spec) })
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
    let cap = scale::share_cap(&s.y_title);
    let hi = match cap {
        Some(c) => (hi + (probe.hi - probe.lo) * 0.08 * marks as f64).min(c),
        None => hi + (probe.hi - probe.lo) * 0.08 * marks as f64,
    };
    let y = y_capped(scale::linear(lo, hi, lo >= 0.0), &s.y_title);
    // Few lines are labelled at their ends; many keep the legend column.
    let direct = (2..=DIRECT_LABELS_MAX).contains(&s.series.len());
    let mut legend = if direct { Vec::new() } else { series_legend(s) };
    // Zipped partners move with x: their values, named in the legend column (or under the
    // title when the lines are labelled at their ends, which take the column).
    if let Some(n) = s.x.note.as_ref().filter(|_| !direct) {
        if !legend.is_empty() {
            legend.push((String::new(), Mark::Note));
        }
        legend.push((n.clone(), Mark::Note));
    }
    let framed =
        super::frame_noted(root, title, direct.then_some(s.x.note.as_deref()).flatten(), &legend)?;
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
    if !direct {
        return Ok(());
    }
    let rows = (chart.backend_coord(&(x.lo, y.hi)).1, chart.backend_coord(&(x.lo, y.lo)).1);
    let end = |se: &Series| se.points.last().map_or(rows.1, |p| chart.backend_coord(&(p.0, p.1)).1);
    let ends: Vec<(i32, i32)> =
        s.series.iter().map(|se| (strip.get_base_pixel().0, end(se))).collect();
    labels::draw_end_labels(&framed, &strip, &end_labels, &ends, rows)
}

/// Many lines: small multiples, one panel per series, the series in its colour with its band
/// and markers. On shared axes every other series is a thin grey line behind it (so each is
/// seen whole and against the rest); when one shared y scale would flatten some panels
/// (`rules::own_scales`), each panel has its own y scale and no grey lines, and the title
/// says so. Colours that would repeat across panels give way to one colour for all. The
/// axis titles are said once.
fn draw_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &MetricSpec,
) -> DrawResult {
    let extents: Vec<(f64, f64)> = s.series.iter().map(band_extent).collect();
    let own = super::rules::own_scales(&extents);
    let (lo, hi) = y_extent(s);
    let shared = y_capped(scale::linear_max(lo, hi, lo >= 0.0, 4), &s.y_title);
    let mut x_title = s.x.title.clone();
    if let Some((_, label)) = &s.x.marker {
        x_title.push_str(&format!("; vertical line: {label}"));
    }
    let title = match own {
        true => format!("{title} (each panel its own y scale)"),
        false => title.to_string(),
    };
    let titles = (x_title.as_str(), s.y_title.as_str());
    let (panels, fit) = labels::grid(root, &title, s.x.note.as_ref(), titles, s.series.len())?;
    // A log axis keeps every k-th tick the panel's width holds.
    let mut x = x_scale_max(&s.x, fit);
    // Short labels (`1`, `30`, `2s`) fit twice as many.
    let short = x.ticks.iter().all(|t| x.label(*t).chars().count() <= 3);
    let step = x.ticks.len().div_ceil(if short { 2 * fit } else { fit }).max(1);
    x.ticks = x.ticks.iter().copied().step_by(step).collect();
    let one_look =
        super::rules::colours_repeat(&s.series).then(|| (s.series[0].color, s.series[0].shape));
    for (i, (panel, se)) in panels.iter().zip(&s.series).enumerate() {
        let y = match own {
            true => {
                y_capped(scale::linear_max(extents[i].0, extents[i].1, lo >= 0.0, 4), &s.y_title)
            }
            false => shared.clone(),
        };
        let mut chart =
            labels::panel_builder(panel, &se.label).build_cartesian_2d(x.ranged(), y.ranged())?;
        let (xs, ys) = (x.clone(), y.clone());
        mesh_style(&mut chart)
            .x_label_formatter(&|v| xs.label(*v))
            .y_label_formatter(&|v| ys.label(*v))
            .draw()?;
        for other in s.series.iter().filter(|o| !own && o.label != se.label) {
            let pts = other.points.iter().map(|p| (p.0, p.1));
            chart.draw_series(LineSeries::new(pts, style::CONTEXT.stroke_width(2)))?;
        }
        if let Some((mx, _)) = s.x.marker {
            let line = PathElement::new(vec![(mx, y.lo), (mx, y.hi)], style::INK.stroke_width(1));
            chart.draw_series(std::iter::once(line))?;
        }
        let mut drawn = s.series[i].clone();
        (drawn.color, drawn.shape) = one_look.unwrap_or((drawn.color, drawn.shape));
        draw_lines(&mut chart, std::slice::from_ref(&drawn))?;
    }
    Ok(())
}

/// A legend row per series (none for one series); a `key = ` every label starts with is said
/// once, in a row of its own above them (`parent_turn_every / parent_turn_tokens:`).
fn series_legend(s: &MetricSpec) -> Vec<(String, Mark)> {
    if s.series.len() < 2 {
        return Vec::new();
    }
    let key = s.series[0].label.split_once(" = ").map(|(k, _)| k);
    let shared = key.filter(|k| s.series.iter().all(|se| se.label.starts_with(&format!("{k} = "))));
    let mut rows: Vec<(String, Mark)> =
        shared.map(|k| (format!("{k}:"), Mark::Note)).into_iter().collect();
    for se in &s.series {
        let label = match shared {
            Some(k) => se.label[k.len() + 3..].to_string(),
            None => se.label.clone(),
        };
        rows.push((label, Mark::Series(se.color, se.shape)));
    }
    rows
}

/// `y` cut at 1 (or 100%) when its title says it is a share (`scale::share_cap`).
fn y_capped(y: scale::Scale, title: &str) -> scale::Scale {
    match scale::share_cap(title) {
        Some(c) => y.capped(c),
        None => y,
    }
}

/// The lowest and highest value a figure's bands reach.
fn y_extent(s: &MetricSpec) -> (f64, f64) {
    let pts = s.series.iter().flat_map(|se| se.points.iter());
    scale::extent(pts.flat_map(|p| [p.1 - p.2, p.1 + p.2]))
}

/// The lowest and highest value one series' band reaches.
fn band_extent(se: &Series) -> (f64, f64) {
    scale::extent(se.points.iter().flat_map(|p| [p.1 - p.2, p.1 + p.2]))
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
    let (lo, hi) = y_extent(s);
    let legend = series_legend(s);
    let area = frame(root, title, &legend)?;
    let v = scale::linear_max(lo, hi, lo >= 0.0, scale::ticks_for_width(area.dim_in_pixel().0));
    let v = y_capped(v, &s.y_title);
    let mut chart = builder(&area)
        .y_label_area_size(super::label_area_px(&s.x.labels))
        .build_cartesian_2d(v.ranged(), -0.5..n as f64 - 0.5)?;
    mesh_style(&mut chart)
        .disable_y_mesh()
        .x_desc(s.y_title.as_str())
        .y_desc(s.x.title.as_str())
        .y_labels(n + 1)
        .x_label_formatter(&|t| v.label(*t))
        .y_label_formatter(&|v| category(&s.x.labels, *v, true))
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
    use crate::plot::reduce::X_PARTS;

    #[test]
    fn an_axis_drawn_keeps_its_range_and_the_values_its_lines_reach() {
        let values: Vec<String> = (0..3 * X_PARTS).map(|i| (1000 + i % 1000).to_string()).collect();
        let x = x_axis("workload.task_tokens", &values);
        assert!(!x.log);
        let points = vec![(1020.0, 2.0, 0.0), (1500.0, 1.0, 0.0)];
        let series =
            [Series { label: "a".into(), color: style::INK, shape: style::shape(0), points }];
        let drawn = drawn_axis(x.clone(), series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        assert_eq!(drawn.positions, [1000.0, 1020.0, 1500.0, 1999.0]);
        assert_eq!(&drawn.labels[..], ["1000", "1020", "1500", "1999"]);
        let range = |x: &XAxis| {
            let s = x_scale_max(x, scale::MAX_TICKS);
            (s.lo, s.hi)
        };
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
}
