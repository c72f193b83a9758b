//! Latency distributions from the HdrHistograms: percentile plots on the classic log
//! "nines" axis (x = log10(1 / (1 - p)), labelled 0%, 90%, 99%, 99.9%, ...), every curve
//! running on to its maximum at a last tick "max", and plain histograms (step outlines),
//! strategies labelled at the curves' ends or, when many (and for histograms, from two), one
//! small panel each.
//!
//! A run has one point; for a sweep, the point where every axis sits at its middle value is
//! drawn, and the title says which.

use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{self, num};
use plotters::coord::types::RangedCoordf64;

use super::labels::{self, DIRECT_LABELS_MAX};
use super::scale::{Scale, TickedAxis};
use super::{builder, frame, marker, mesh_style, padded, DrawResult, Figure, Spec};
use crate::results::Results;

/// Histogram bars per figure.
pub const BINS: usize = 40;
/// The deepest "nines" drawn: p = 99.9999%.
pub const MAX_NINES: f64 = 6.0;
/// Nines between the deepest percentile drawn and the "max" tick, where every curve ends.
pub const MAX_GAP: f64 = 0.5;

#[derive(Debug, Clone)]
pub struct LatSeries {
    pub label: String,
    pub color: RGBColor,
    pub count: u64,
    /// (nines = log10(1/(1-p)), latency s), ascending, up to the deepest percentile the
    /// samples resolve (p = 1 - 1/count, at most `MAX_NINES`).
    pub percentiles: Vec<(f64, f64)>,
    /// The largest sample (its histogram bucket's upper edge, as the percentiles), s: the
    /// 100th percentile, where the curve ends.
    pub max_s: f64,
    /// Share of samples (%) in each of the common bins.
    pub shares: Vec<f64>,
    pub p50_s: f64,
    pub p99_s: f64,
}

#[derive(Debug, Clone)]
pub struct LatencySpec {
    pub what: String,
    /// Common bin edges, seconds (`BINS + 1` of them).
    pub edges_s: Vec<f64>,
    pub series: Vec<LatSeries>,
    /// Bins spaced evenly in log10 (`gaps::log_edges`) and drawn on a log x axis.
    pub log_x: bool,
    /// Labelled vertical lines on the histogram: (seconds, label), e.g. TTLs.
    pub markers: Vec<(f64, String)>,
}

/// People's name of a latency histogram.
pub fn latency_title(name: &str) -> &'static str {
    match name {
        "launch_wait" => "Launch wait",
        "ttft" => "Time to first token",
        "completion" => "Agent completion time",
        _ => "Latency",
    }
}

/// The point whose latencies are drawn, and how to name it ("" for a run).
fn chosen_point(r: &Results, held: &[String]) -> Option<(u32, String)> {
    if r.summary.is_empty() {
        let p = r.histograms.first_point()?;
        return Some((p, String::new()));
    }
    let (point, _) = r.summary.axes().find(|(_, values)| values.iter().eq(held.iter()))?;
    let desc: Vec<String> = r
        .axis_keys
        .iter()
        .zip(held)
        .map(|(k, v)| format!("{} = {v}", style::short_key(k)))
        .collect();
    Some((point, desc.join(", ")))
}

fn curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let deepest = (h.len().max(1) as f64).log10().min(MAX_NINES);
    let steps = (deepest / 0.05).ceil().max(1.0) as usize;
    (0..=steps)
        .map(|i| {
            let t = (i as f64 * 0.05).min(deepest);
            let p = 1.0 - 10f64.powf(-t);
            (t, crate::time::secs(h.value_at_quantile(p)))
        })
        .collect()
}

fn shares(h: &Histogram<u64>, edges: &[f64]) -> Vec<f64> {
    let mut counts = vec![0u64; edges.len() - 1];
    let (lo, hi) = (edges[0], edges[edges.len() - 1]);
    for v in h.iter_recorded() {
        let s = crate::time::secs(h.median_equivalent(v.value_iterated_to()));
        let f = if hi > lo { (s - lo) / (hi - lo) } else { 0.0 };
        let i = ((f * counts.len() as f64) as usize).min(counts.len() - 1);
        counts[i] += v.count_at_value();
    }
    let total = h.len().max(1) as f64;
    counts.into_iter().map(|c| c as f64 * 100.0 / total).collect()
}

/// A percentile plot and a histogram per latency name with data at the chosen point.
pub fn figures(r: &Results, held: &[String]) -> Vec<Figure> {
    let Some((point, desc)) = chosen_point(r, held) else { return Vec::new() };
    let strategies = r.strategies();
    let mut out = Vec::new();
    for name in crate::metrics::LATENCY_NAMES {
        let hists: Vec<(&String, &Histogram<u64>)> = strategies
            .iter()
            .filter_map(|s| r.histograms.get(&(point, s.clone(), name.to_string())).map(|h| (s, h)))
            .filter(|(_, h)| !h.is_empty())
            .collect();
        if hists.is_empty() {
            continue;
        }
        let max_s = hists.iter().map(|(_, h)| crate::time::secs(h.max())).fold(0.0, f64::max);
        let edges_s = edges(max_s);
        let series: Vec<LatSeries> = hists
            .iter()
            .map(|(s, h)| lat_series(s, style::strategy_color(s, &strategies), h, &edges_s))
            .collect();
        let what = latency_title(name).to_string();
        let suffix = if desc.is_empty() { String::new() } else { format!(" ({desc})") };
        let spec =
            LatencySpec { what: what.clone(), edges_s, series, log_x: false, markers: vec![] };
        let at = if desc.is_empty() { String::new() } else { format!("At {desc}: ") };
        let titles =
            [format!("{what} by percentile{suffix}"), format!("{what} distribution{suffix}")];
        let captions = [percentile_caption(&spec), histogram_caption(&spec)];
        out.extend(pair(name, titles, captions.map(|c| format!("{at}{c}")), spec));
    }
    out
}

/// The percentile plot and the histogram of `spec`: `{stem}_percentiles`, `{stem}_histogram`.
pub fn pair(
    stem: &str,
    titles: [String; 2],
    captions: [String; 2],
    spec: LatencySpec,
) -> Vec<Figure> {
    let specs = [Spec::Percentiles(spec.clone()), Spec::Histogram(spec)];
    let parts = titles.into_iter().zip(captions).zip(specs).zip(["percentiles", "histogram"]);
    let figure = |(((title, caption), spec), kind)| Figure {
        name: format!("{stem}_{kind}"),
        title,
        caption,
        spec,
    };
    parts.map(figure).collect()
}

fn lat_series(label: &str, color: RGBColor, h: &Histogram<u64>, edges_s: &[f64]) -> LatSeries {
    LatSeries {
        label: label.to_string(),
        color,
        count: h.len(),
        percentiles: curve(h),
        max_s: crate::time::secs(h.max()),
        shares: shares(h, edges_s),
        p50_s: crate::time::secs(h.value_at_quantile(0.5)),
        p99_s: crate::time::secs(h.value_at_quantile(0.99)),
    }
}

fn edges(max_s: f64) -> Vec<f64> {
    let hi = if max_s > 0.0 { max_s * 1.0001 } else { 1e-3 };
    (0..=BINS).map(|i| hi * i as f64 / BINS as f64).collect()
}

/// A one-series spec (e.g. replay's reuse gaps), `what` naming the quantity.
pub fn single_spec(what: &str, label: &str, color: RGBColor, h: &Histogram<u64>) -> LatencySpec {
    let edges_s = edges(crate::time::secs(h.max()));
    let series = vec![lat_series(label, color, h, &edges_s)];
    LatencySpec { what: what.into(), edges_s, series, log_x: false, markers: vec![] }
}

fn percentile_caption(s: &LatencySpec) -> String {
    let parts: Vec<String> = s
        .series
        .iter()
        .map(|x| format!("{} {} s / {} s", x.label, num(x.p50_s), num(x.p99_s)))
        .collect();
    format!("{}, p50 / p99: {}.", s.what, parts.join("; "))
}

fn histogram_caption(s: &LatencySpec) -> String {
    let lo = s.series.iter().min_by(|a, b| a.p50_s.total_cmp(&b.p50_s));
    let hi = s.series.iter().max_by(|a, b| a.p50_s.total_cmp(&b.p50_s));
    let (Some(lo), Some(hi)) = (lo, hi) else { return String::new() };
    let n: Vec<String> = s.series.iter().map(|x| x.count.to_string()).collect();
    let n = if n.iter().all(|c| *c == n[0]) { n[0].clone() } else { n.join("/") };
    format!(
        "Median {} ranges from {} s ({}) to {} s ({}); {} samples per strategy, share per {} s bin.",
        s.what.to_lowercase(),
        num(lo.p50_s),
        lo.label,
        num(hi.p50_s),
        hi.label,
        n,
        num(s.edges_s[1] - s.edges_s[0])
    )
}

/// A log y axis when the slowest series' worst latency is 30x or more the fastest's (one
/// strategy would flatten the others against zero): (log, lower bound drawn).
pub fn percentile_y_log(s: &LatencySpec) -> Option<f64> {
    let tops: Vec<f64> = s.series.iter().map(top).collect();
    let ymax = tops.iter().copied().fold(0.0, f64::max);
    let positive = |v: &f64| *v > 0.0;
    let low_top = tops.iter().copied().filter(positive).fold(f64::INFINITY, f64::min);
    if !(ymax > 0.0 && low_top.is_finite() && ymax / low_top >= 30.0) {
        return None;
    }
    let floor = s
        .series
        .iter()
        .flat_map(|x| x.percentiles.iter().map(|p| p.1))
        .filter(positive)
        .fold(f64::INFINITY, f64::min);
    Some(floor.max(ymax * 1e-4).min(ymax / 10.0))
}

/// A series' largest value drawn: its max (never below its percentiles).
fn top(x: &LatSeries) -> f64 {
    x.percentiles.iter().map(|p| p.1).fold(x.max_s, f64::max)
}

/// The percentile figure's x axis: the whole nines up to the deepest percentile drawn (at
/// least 90%), then, `MAX_GAP` past that deepest percentile, the axis's end: a tick "max"
/// where every curve ends at its largest sample (so the curves end at the right edge, by
/// their labels).
fn nines_axis(s: &LatencySpec) -> TickedAxis {
    let deepest =
        s.series.iter().flat_map(|x| x.percentiles.last()).map(|p| p.0).fold(1.0, f64::max);
    let end = deepest + MAX_GAP;
    let ticks = (0..=deepest.floor() as usize).map(|i| i as f64).chain([end]).collect();
    TickedAxis { lo: 0.0, hi: end, ticks }
}

/// The label of an x tick of `x`: the last one is "max", the others their percentile.
fn nines_tick(x: &TickedAxis, v: f64) -> String {
    if (v - x.hi).abs() < 1e-9 {
        return "max".into();
    }
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    let p = 100.0 - 100.0 * 10f64.powi(-(i as i32));
    format!("{p:.*}%", (i as usize).saturating_sub(2))
}

/// The percentile figure's axes: the nines across (`nines_axis`), the latency up (log when
/// `percentile_y_log` says so), and the y title.
fn percentile_axes(s: &LatencySpec) -> (TickedAxis, Scale, String) {
    let x = nines_axis(s);
    let ymax = s.series.iter().map(top).fold(0.0, f64::max);
    match percentile_y_log(s) {
        Some(floor) => (
            x,
            super::scale::log_scale(floor, ymax),
            format!("{} (s, log scale; 0 at the bottom)", s.what),
        ),
        None => (x, super::scale::linear(0.0, ymax, true), format!("{} (s)", s.what)),
    }
}

const NINES_TITLE: &str = "Percentile (log scale of 1/(1-p))";

/// One curve per strategy; up to `DIRECT_LABELS_MAX` labelled at their ends, more drawn as
/// small multiples (`percentile_panels`).
pub fn draw_percentiles<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &LatencySpec,
) -> DrawResult {
    if s.series.len() > DIRECT_LABELS_MAX {
        return percentile_panels(root, title, s);
    }
    let (x, y, y_title) = percentile_axes(s);
    let framed = frame(root, title, &[])?;
    let named: Vec<(String, RGBColor, style::Shape)> = match s.series.len() {
        1 => Vec::new(),
        _ => s
            .series
            .iter()
            .enumerate()
            .map(|(i, x)| (x.label.clone(), x.color, style::shape(i)))
            .collect(),
    };
    let (area, strip, end_labels) = labels::end_strip(&framed, &named);
    let mut chart = builder(&area).build_cartesian_2d(x.clone(), y.ranged())?;
    let ys = y.clone();
    mesh_style(&mut chart)
        .x_desc(NINES_TITLE)
        .y_desc(y_title)
        .x_label_formatter(&|v| nines_tick(&x, *v))
        .y_label_formatter(&|v| ys.label(*v))
        .draw()?;
    let mut ends = Vec::new();
    for (i, se) in s.series.iter().enumerate() {
        let pts = percentile_points(se, x.hi, &y);
        draw_curve(&mut chart, &pts, se.color, Some(style::shape(i)))?;
        ends.push(pts.last().copied().unwrap_or((0.0, y.lo)));
    }
    if end_labels.is_empty() {
        return Ok(());
    }
    // The leaders start just past each curve's last marker.
    let ends: Vec<(i32, i32)> =
        ends.iter().map(|p| chart.backend_coord(p)).map(|(x, y)| (x + 10, y)).collect();
    let rows = (chart.backend_coord(&(0.0, y.hi)).1, chart.backend_coord(&(0.0, y.lo)).1);
    labels::draw_end_labels(&framed, &strip, &end_labels, &ends, rows)
}

/// A series' (nines, y position) points, values below the axis held at its bottom: its
/// percentiles, then up to its max at the deepest percentile (past p = 1 - 1/count every
/// percentile is the largest sample; past `MAX_NINES`, the rest of the tail is that one
/// step), then on at the max to `end`, the axis's "max" tick.
fn percentile_points(se: &LatSeries, end: f64, y: &Scale) -> Vec<(f64, f64)> {
    let floor = y.value(y.lo);
    let at = |v: f64| y.pos(v.max(floor));
    let mut pts: Vec<(f64, f64)> = se.percentiles.iter().map(|p| (p.0, at(p.1))).collect();
    let deepest = pts.last().map_or(0.0, |p| p.0);
    let max = at(top(se));
    pts.extend([(deepest, max), (end, max)]);
    pts
}

type NinesChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<TickedAxis, TickedAxis>>;

/// A curve in `c` (`pts` from `percentile_points`); with a shape, its marker at each whole
/// nine of its percentiles and at its max, which tells overlapping lines apart. The "max" tick
/// is `MAX_GAP` past the deepest percentile, so two markers never run together.
fn draw_curve<DB: DrawingBackend>(
    chart: &mut NinesChart<'_, DB>,
    pts: &[(f64, f64)],
    c: RGBColor,
    shape: Option<style::Shape>,
) -> DrawResult {
    let width = if shape.is_some() { style::LINE_PX } else { 2 };
    chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(width)))?;
    let Some(shape) = shape else { return Ok(()) };
    let (percentiles, max) = pts.split_at(pts.len().saturating_sub(2));
    let whole = percentiles.iter().filter(|p| (p.0 - p.0.round()).abs() < 1e-9);
    for p in whole.chain(max.last()) {
        marker(chart.plotting_area(), *p, shape, c, 7)?;
    }
    Ok(())
}

/// Too many curves to label: one panel per strategy on shared axes, its curve in colour over
/// the others in light grey.
fn percentile_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &LatencySpec,
) -> DrawResult {
    let (x, y, y_title) = percentile_axes(s);
    let titles = (NINES_TITLE, y_title.as_str());
    let (panels, fit) = labels::grid(root, title, None, titles, s.series.len())?;
    let y = Scale {
        ticks: y.ticks.iter().copied().step_by(y.ticks.len().div_ceil(5).max(1)).collect(),
        ..y
    };
    // Whole nines every `step`, as many as fit, none closer to the "max" tick than to another.
    let step = (x.ticks.len().div_ceil(fit)).max(1);
    let shown = |t: f64| {
        t == x.hi || ((t as usize).is_multiple_of(step) && x.hi - t >= MAX_GAP * step as f64)
    };
    let x = TickedAxis { ticks: x.ticks.iter().copied().filter(|t| shown(*t)).collect(), ..x };
    for (i, (panel, se)) in panels.iter().zip(&s.series).enumerate() {
        let mut chart =
            labels::panel_builder(panel, &se.label).build_cartesian_2d(x.clone(), y.ranged())?;
        let ys = y.clone();
        mesh_style(&mut chart)
            .x_label_formatter(&|v| nines_tick(&x, *v))
            .y_label_formatter(&|v| ys.label(*v))
            .draw()?;
        for other in s.series.iter().filter(|o| o.label != se.label) {
            draw_curve(&mut chart, &percentile_points(other, x.hi, &y), style::CONTEXT, None)?;
        }
        let own = Some(style::shape(i));
        draw_curve(&mut chart, &percentile_points(se, x.hi, &y), se.color, own)?;
    }
    Ok(())
}

/// Step outlines of the shares per bin: one strategy alone, or one small panel per strategy
/// (its outline in colour, the others' in light grey). Overlaid outlines of several
/// distributions cross each other all along the axis and have no free end to label, so
/// even two are drawn side by side.
pub fn draw_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &LatencySpec,
) -> DrawResult {
    let (x0, x1) = super::axis_range(s.edges_s[0], s.edges_s[s.edges_s.len() - 1]);
    let ymax = s.series.iter().flat_map(|x| x.shares.iter()).copied().fold(0.0, f64::max);
    let (y0, y1) = padded(0.0, ymax, true);
    let x_title = format!("{} (s)", s.what);
    let y_title = "Share of samples (%)";
    let x_fmt = |v: &f64| crate::numfmt::tick(*v, x1 - x0);
    let y_fmt = |v: &f64| crate::numfmt::tick(*v, y1 - y0);
    if s.series.len() < 2 {
        let area = frame(root, title, &[])?;
        let mut chart = builder(&area).build_cartesian_2d(x0..x1, y0..y1)?;
        mesh_style(&mut chart)
            .x_desc(x_title)
            .y_desc(y_title)
            .x_labels(super::scale::ticks_for_width(area.dim_in_pixel().0))
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        for se in &s.series {
            draw_steps(&mut chart, &s.edges_s, &se.shares, se.color, style::LINE_PX)?;
        }
        return Ok(());
    }
    let (panels, fit) = labels::grid(root, title, None, (&x_title, y_title), s.series.len())?;
    for (panel, se) in panels.iter().zip(&s.series) {
        let mut chart =
            labels::panel_builder(panel, &se.label).build_cartesian_2d(x0..x1, y0..y1)?;
        mesh_style(&mut chart)
            .x_labels(fit)
            .y_labels(5)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        for other in s.series.iter().filter(|o| o.label != se.label) {
            draw_steps(&mut chart, &s.edges_s, &other.shares, style::CONTEXT, 2)?;
        }
        draw_steps(&mut chart, &s.edges_s, &se.shares, se.color, style::LINE_PX)?;
    }
    Ok(())
}

/// The outline of `shares` over the bins `edges`, from and back to zero.
fn draw_steps<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    edges: &[f64],
    shares: &[f64],
    c: RGBColor,
    width: u32,
) -> DrawResult {
    let mut steps = vec![(edges[0], 0.0)];
    for (i, v) in shares.iter().enumerate() {
        steps.push((edges[i], *v));
        steps.push((edges[i + 1], *v));
    }
    steps.push((edges[edges.len() - 1], 0.0));
    chart.draw_series(std::iter::once(PathElement::new(steps, c.stroke_width(width))))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` launch waits spread over 0.1-2 s and one of `outlier_s`, in microseconds.
    fn tailed(n: u64, outlier_s: f64) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 36_000_000_000, 3).unwrap();
        for i in 0..n - 1 {
            h.record(100_000 + i * 1_900_000 / n).unwrap();
        }
        h.record((outlier_s * 1e6) as u64).unwrap();
        h
    }

    fn spec(hs: &[(&str, Histogram<u64>)]) -> LatencySpec {
        let max_s = hs.iter().map(|(_, h)| crate::time::secs(h.max())).fold(0.0, f64::max);
        let edges_s = edges(max_s);
        let series = hs.iter().map(|(l, h)| lat_series(l, style::INK, h, &edges_s)).collect();
        LatencySpec { what: "Launch wait".into(), edges_s, series, log_x: false, markers: vec![] }
    }

    /// Every curve ends at the "max" tick, at its histogram's max: 600 samples resolve p99.83%
    /// (the second largest, 2 s), not the one sample at 27.5 s (sequential's launch wait in
    /// the default experiment ran 18.2 s -> 27.55 s there).
    #[test]
    fn every_percentile_curve_runs_to_its_max() {
        let linear = vec![("one outlier", tailed(600, 27.5)), ("few", tailed(7, 3.0))];
        // A 30x spread between the series' tops: a log y axis.
        let log = [linear.clone(), vec![("one sample", tailed(1, 0.5))]].concat();
        for (hs, log) in [(linear, false), (log, true)] {
            let s = spec(&hs);
            assert_eq!(percentile_y_log(&s).is_some(), log);
            let (x, y, _) = percentile_axes(&s);
            assert_eq!(nines_tick(&x, x.hi), "max");
            assert_eq!(x.ticks.last(), Some(&x.hi));
            for ((label, h), se) in hs.iter().zip(&s.series) {
                let pts = percentile_points(se, x.hi, &y);
                let (end_x, end_y) = *pts.last().unwrap();
                let max = crate::time::secs(h.max());
                assert_eq!(end_x, x.hi, "{label}: the curve ends at the max tick");
                assert!(
                    y.value(end_y) >= max * (1.0 - 1e-9),
                    "{label}: ends at {} < max {max}",
                    y.value(end_y)
                );
                assert!(y.lo <= end_y && end_y <= y.hi, "{label}: the max is inside the axis");
                assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0), "{label}: nines ascend");
            }
        }
        // The deepest percentile of 600 samples is far below the outlier: the curve jumps there.
        let s = spec(&[("one outlier", tailed(600, 27.5))]);
        let last = s.series[0].percentiles.last().unwrap();
        assert!(last.1 < 2.1 && s.series[0].max_s > 27.0, "{last:?}");
    }

    #[test]
    fn the_nines_axis_labels_whole_nines_then_max() {
        let s = spec(&[("a", tailed(600, 27.5))]);
        let x = nines_axis(&s);
        let labels: Vec<String> = x.ticks.iter().map(|t| nines_tick(&x, *t)).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "max"]);
        assert!((x.hi - (600f64.log10() + MAX_GAP)).abs() < 1e-9);
    }

    #[test]
    fn figures_draw() {
        let s = spec(&[("one outlier", tailed(600, 27.5)), ("flat", tailed(1, 0.5))]);
        let f = Figure {
            name: "launch_wait_percentiles".into(),
            title: "Launch wait by percentile".into(),
            caption: String::new(),
            spec: Spec::Percentiles(s.clone()),
        };
        assert!(crate::plot::render_svg(&f).unwrap().contains("<svg"));
        let many: Vec<(String, Histogram<u64>)> = (0..DIRECT_LABELS_MAX + 1)
            .map(|i| (format!("s{i}"), tailed(600, 3.0 + i as f64)))
            .collect();
        let many: Vec<(&str, Histogram<u64>)> =
            many.iter().map(|(l, h)| (l.as_str(), h.clone())).collect();
        let f = Figure { spec: Spec::Percentiles(spec(&many)), ..f };
        assert!(crate::plot::render_svg(&f).unwrap().contains("<svg"));
    }
}
