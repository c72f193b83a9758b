//! The prefix a hold cap covers: `(cap - overhead) x prefill_rate` tokens, the largest cold
//! prefix whose first writer's response begins before a `wait_first` cap of `cap` seconds. The
//! hold pays exactly when the cap exceeds the first writer's time to first token, so this is
//! the figure that says, per model, which prefixes a cap can save.
//!
//! One line per cap (2, 5, 10 s) over a band of prefill rates (log axis), drawn for one
//! reference overhead: the median of the calibrated models' median overheads. Each calibrated
//! model is a point at its own median overhead and prefill rate for the default 5 s cap, its
//! whisker the covered prefix at the 10th and 90th percentiles of its overhead (a slower fixed
//! part covers less); the 2024 launch figures are a triangle. Every number comes from
//! `config::latency_presets` (the `FITS` table and `LatencyParams::default`), none is written
//! here. In a hold experiment's report the experiment's own latency is marked and its cold
//! prompt drawn as the horizontal reference.
//!
//! Reads the latency presets (static data) and the result files; never simulates.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::labels::{self, Placed, PxBox};
use super::style::{self, num};
use super::{builder, frame, mesh_style, DrawResult, Figure, Mark, Spec};
use crate::config::latency_presets::{self, Fit, LatencyPreset, FITS};
use crate::config::parse_dist;
use crate::config::LatencyParams;
use crate::dist::{Dist, Quantity};
use crate::results::{parse_label, Results};

/// The caps drawn as lines, seconds.
pub const CAPS_S: [f64; 3] = [2.0, 5.0, 10.0];
/// The cap of the points: the documented default hold cap.
pub const POINT_CAP_S: f64 = style::DEFAULT_HOLD_CAP_S;
/// The band of prefill rates always shown (tokens per second); widened to hold every point.
pub const RATE_BAND: (f64, f64) = (5_000.0, 200_000.0);
/// The horizontal reference when no experiment gives its own prompt: a 50k-token prefix.
pub const REFERENCE_PREFIX_TOKENS: f64 = 50_000.0;
/// The whisker's overhead quantiles.
pub const WHISKER_P: (f64, f64) = (0.10, 0.90);

/// Tokens of cold prefix prefilled before the cap: `max(0, cap - overhead) * rate`.
pub fn covered_tokens(cap_s: f64, overhead_s: f64, prefill_rate: f64) -> f64 {
    (cap_s - overhead_s).max(0.0) * prefill_rate
}

/// What a point stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// A model's calibrated fit.
    Calibrated,
    /// The 2024 launch figures.
    Launch2024,
    /// The experiment's own latency, when it is neither of the above.
    Experiment,
}

#[derive(Debug, Clone)]
pub struct CoveredPoint {
    pub label: String,
    pub kind: PointKind,
    pub prefill_rate: f64,
    /// The median overhead, seconds.
    pub overhead_s: f64,
    pub cap_s: f64,
    /// `covered_tokens(cap_s, overhead_s, prefill_rate)`.
    pub covered_tokens: f64,
    /// Covered at the overhead's 90th and 10th percentiles (low, high); `None` when constant.
    pub whisker: Option<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct CoveredSpec {
    /// The overhead every cap line is drawn for, seconds, and where it comes from.
    pub line_overhead_s: f64,
    pub line_overhead_what: String,
    /// (cap s, colour).
    pub caps: Vec<(f64, RGBColor)>,
    pub points: Vec<CoveredPoint>,
    /// Horizontal reference: (tokens, label).
    pub reference: (f64, String),
    /// Prefill rates shown, tokens per second (drawn on a log axis).
    pub x_range: (f64, f64),
    pub x_ticks: Vec<f64>,
    /// Tokens shown (linear from 0).
    pub y_max: f64,
    pub y_ticks: Vec<f64>,
}

/// The quantile `p` of a fit's overhead: its 20 quantiles sit at (i + 0.5) / 20, linearly
/// interpolated between them, held flat beyond the outer ones.
pub fn overhead_quantile(q: &[f64; 20], p: f64) -> f64 {
    let pos = (p * 20.0 - 0.5).clamp(0.0, 19.0);
    let i = (pos.floor() as usize).min(18);
    let f = pos - i as f64;
    q[i] + (q[i + 1] - q[i]) * f
}

/// The median of the calibrated models' median overheads (the cap lines' overhead).
pub fn reference_overhead_s() -> f64 {
    let mut o: Vec<f64> = FITS.iter().map(|f| f.overhead_s).collect();
    o.sort_by(f64::total_cmp);
    let n = o.len();
    if n % 2 == 1 {
        o[n / 2]
    } else {
        (o[n / 2 - 1] + o[n / 2]) / 2.0
    }
}

fn calibrated_point(fit: &Fit) -> CoveredPoint {
    let q = &fit.overhead_quantiles_s;
    let (lo_p, hi_p) = WHISKER_P;
    let whisker = (
        covered_tokens(POINT_CAP_S, overhead_quantile(q, hi_p), fit.prefill_rate),
        covered_tokens(POINT_CAP_S, overhead_quantile(q, lo_p), fit.prefill_rate),
    );
    CoveredPoint {
        label: fit.fitted_on.trim_start_matches("claude-").to_string(),
        kind: PointKind::Calibrated,
        prefill_rate: fit.prefill_rate,
        overhead_s: fit.overhead_s,
        cap_s: POINT_CAP_S,
        covered_tokens: covered_tokens(POINT_CAP_S, fit.overhead_s, fit.prefill_rate),
        whisker: Some(whisker),
    }
}

fn launch_point() -> CoveredPoint {
    let p = LatencyParams::default();
    let overhead_s = dist_median(&p.overhead_us) / 1e6;
    let rate = dist_median(&p.prefill_rate);
    CoveredPoint {
        label: "launch 2024".into(),
        kind: PointKind::Launch2024,
        prefill_rate: rate,
        overhead_s,
        cap_s: POINT_CAP_S,
        covered_tokens: covered_tokens(POINT_CAP_S, overhead_s, rate),
        whisker: None,
    }
}

/// The median of a distribution (the middle of a sorted empirical list; the mean of a normal).
pub fn dist_median(d: &Dist) -> f64 {
    match d {
        Dist::Const(x) => *x,
        Dist::Uniform { low, high } => (low + high) / 2.0,
        Dist::Normal { mean, .. } => *mean,
        Dist::LogNormal { median, .. } => *median,
        Dist::Exp { mean } => mean * std::f64::consts::LN_2,
        Dist::Spliced(s) => s.quantile(0.5),
        Dist::Empirical(v) => {
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            let n = s.len();
            match n {
                0 => 0.0,
                _ if n % 2 == 1 => s[n / 2],
                _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
            }
        }
    }
}

/// What a hold experiment's manifest says about the first writer's latency and prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentLatency {
    pub model: String,
    pub overhead: Dist,
    pub prefill_rate: Dist,
    /// The wait_first caps among its strategies and swept hold-cap values, seconds, ascending.
    pub caps_s: Vec<f64>,
    /// The cold prompt of its first writer (parent + brief + task of a fork of a cold parent),
    /// when the experiment has one and no swept axis changes it.
    pub cold_prompt_tokens: Option<f64>,
}

impl ExperimentLatency {
    /// From the resolved experiment TOML in manifest.json; `None` when a key is missing.
    pub fn from_results(r: &Results) -> Option<ExperimentLatency> {
        let m = r.manifest.as_ref()?;
        let t: toml::Table = m.experiment.as_deref()?.parse().ok()?;
        let lat = t.get("latency")?.as_table()?;
        let dist = |k: &str, q| parse_dist(lat.get(k)?.as_str()?, q).ok();
        let mut caps_s: Vec<f64> = m.strategies.iter().filter_map(|s| hold_cap_s(s)).collect();
        for a in m.axes.iter().filter(|a| super::metric::is_hold_cap(&a.key)) {
            let text = a.values.iter().filter_map(|v| v.as_str());
            caps_s.extend(
                text.filter_map(|v| crate::time::parse_duration_us(v).ok()).map(crate::time::secs),
            );
        }
        caps_s.sort_by(f64::total_cmp);
        caps_s.dedup();
        let swept = |k: &str| r.axis_keys.iter().any(|a| a.contains(k));
        let w = t.get("workload")?.as_table()?;
        let int = |k: &str| w.get(k).and_then(|v| v.as_integer()).map(|v| v as f64);
        let kind = w.get("kind").and_then(|v| v.as_str()).unwrap_or("");
        let cold = w.get("parent_warm").and_then(|v| v.as_bool()) == Some(false);
        let fixed = !["tokens", "parent_warm", "kind"].iter().any(|k| swept(k));
        let cold_prompt_tokens = (kind.starts_with("fork") && cold && fixed)
            .then(|| Some(int("parent_tokens")? + int("brief_tokens")? + int("task_tokens")?))
            .flatten();
        Some(ExperimentLatency {
            model: t.get("model")?.as_str()?.to_string(),
            overhead: dist("overhead", Quantity::Duration)?,
            prefill_rate: dist("prefill_rate", Quantity::Number)?,
            caps_s,
            cold_prompt_tokens,
        })
    }

    /// Which named latency it is: the model's calibrated preset, the 2024 figures, or neither.
    fn preset(&self) -> Option<LatencyPreset> {
        [LatencyPreset::Calibrated, LatencyPreset::Launch2024].into_iter().find(|&p| {
            latency_presets::params(&self.model, p).is_some_and(|l| {
                l.overhead_us == self.overhead && l.prefill_rate == self.prefill_rate
            })
        })
    }
}

/// `wait_first(max_wait=5s)` -> 5.0 (a wait_first label without a cap: the documented default).
fn hold_cap_s(label: &str) -> Option<f64> {
    let (family, params) = parse_label(label);
    if family != "wait_first" {
        return None;
    }
    match params.iter().find(|(k, _)| k == "max_wait") {
        Some((_, v)) => crate::time::parse_duration_us(v).ok().map(crate::time::secs),
        None => Some(style::DEFAULT_HOLD_CAP_S),
    }
}

/// The figure's data: every calibrated model, the 2024 figures, and the experiment if given.
pub fn spec(exp: Option<&ExperimentLatency>) -> CoveredSpec {
    let mut points: Vec<CoveredPoint> = FITS.iter().map(calibrated_point).collect();
    points.push(launch_point());
    let mut reference = (
        REFERENCE_PREFIX_TOKENS,
        format!("{}-token prefix", tokens_label(REFERENCE_PREFIX_TOKENS)),
    );
    if let Some(e) = exp {
        mark_experiment(&mut points, e);
        if let Some(t) = e.cold_prompt_tokens {
            reference = (t, format!("experiment's cold prompt {}", tokens_label(t)));
        }
    }
    let line_overhead_s = reference_overhead_s();
    let n = CAPS_S.len();
    let caps = (0..n).map(|i| (CAPS_S[i], style::colormap(0.05 + 0.7 * i as f64 / n as f64)));
    let lo = points.iter().map(|p| p.prefill_rate).fold(RATE_BAND.0, f64::min);
    let hi = points.iter().map(|p| p.prefill_rate).fold(RATE_BAND.1, f64::max);
    let x_range = (lo / 1.15, hi * 1.15);
    let top = points
        .iter()
        .map(|p| p.whisker.map_or(p.covered_tokens, |w| w.1))
        .fold(reference.0, f64::max);
    let (y_max, y_ticks) = linear_ticks(top * 1.12);
    CoveredSpec {
        line_overhead_s,
        line_overhead_what: format!(
            "the median of the {} calibrated models' overheads",
            FITS.len()
        ),
        caps: caps.collect(),
        points,
        reference,
        x_ticks: log_ticks(x_range.0, x_range.1),
        x_range,
        y_max,
        y_ticks,
    }
}

/// Label the point the experiment's latency equals, or add its own.
fn mark_experiment(points: &mut Vec<CoveredPoint>, e: &ExperimentLatency) {
    let short = e.model.trim_start_matches("claude-").to_string();
    let found = match e.preset() {
        Some(LatencyPreset::Launch2024) => {
            points.iter_mut().find(|p| p.kind == PointKind::Launch2024)
        }
        Some(LatencyPreset::Calibrated) => latency_presets::fit_for(&e.model).and_then(|(f, _)| {
            let name = f.fitted_on.trim_start_matches("claude-");
            points.iter_mut().find(|p| p.kind == PointKind::Calibrated && p.label == name)
        }),
        None => None,
    };
    match found {
        Some(p) => p.label = format!("{} (this experiment)", p.label),
        None => {
            let (o, r) = (dist_median(&e.overhead) / 1e6, dist_median(&e.prefill_rate));
            points.push(CoveredPoint {
                label: format!("this experiment ({short})"),
                kind: PointKind::Experiment,
                prefill_rate: r,
                overhead_s: o,
                cap_s: POINT_CAP_S,
                covered_tokens: covered_tokens(POINT_CAP_S, o, r),
                whisker: None,
            });
        }
    }
}

/// 1-2-5 ticks within [lo, hi] (a log axis).
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

/// A top at or above `hi` on a step of 1, 2 or 5 x 10^k giving 4 to 8 intervals, and its ticks.
pub fn linear_ticks(hi: f64) -> (f64, Vec<f64>) {
    let hi = if hi > 0.0 { hi } else { 1.0 };
    let mut step = 10f64.powf((hi / 8.0).log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0, 20.0] {
        let s = step * m;
        if (hi / s).ceil() <= 8.0 {
            step = s;
            break;
        }
    }
    let n = (hi / step).ceil() as usize;
    (step * n as f64, (0..=n).map(|i| step * i as f64).collect())
}

/// Tokens as a tick label: 500, 5k, 50k, 1.5M.
pub fn tokens_label(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{}M", num(v / 1e6))
    } else if v.abs() >= 1e3 {
        format!("{}k", num(v / 1e3))
    } else {
        num(v)
    }
}

/// The figure alone (`prefixsim plot --covered-prefix`).
pub fn standalone() -> Figure {
    figure(None)
}

/// The figure for a results directory when it holds a hold experiment (any wait_first).
pub fn figures(r: &Results) -> Vec<Figure> {
    let tuned = r.tune.as_ref().and_then(|t| t.get("strategy")?.as_str().map(String::from));
    let holds = r.strategies().into_iter().chain(tuned).any(|s| parse_label(&s).0 == "wait_first");
    if !holds {
        return Vec::new();
    }
    vec![figure(ExperimentLatency::from_results(r).as_ref())]
}

fn figure(exp: Option<&ExperimentLatency>) -> Figure {
    let spec = spec(exp);
    Figure {
        name: "covered_prefix".into(),
        title: "Cold prefix a hold cap covers: (cap − overhead) × prefill rate".into(),
        caption: caption(&spec, exp),
        spec: Spec::Covered(spec),
    }
}

fn caption(s: &CoveredSpec, exp: Option<&ExperimentLatency>) -> String {
    let pts: Vec<String> = s
        .points
        .iter()
        .map(|p| {
            format!(
                "{} {} tokens ({} s overhead, {} tok/s)",
                p.label,
                tokens_label(p.covered_tokens),
                num(p.overhead_s),
                tokens_label(p.prefill_rate)
            )
        })
        .collect();
    let mut text = format!(
        "A wait_first hold saves the fan-out's writes only when the first writer's response \
         begins before the cap: with a cold prefix, when the prefix is at most (cap − overhead) \
         × prefill rate. Lines: caps of {} s at an overhead of {} s ({}). Points, a {} s cap at \
         each model's own median overhead (whiskers: its {}th-{}th percentile): {}.",
        CAPS_S.map(num).join(", "),
        num(s.line_overhead_s),
        s.line_overhead_what,
        num(POINT_CAP_S),
        num(WHISKER_P.0 * 100.0),
        num(WHISKER_P.1 * 100.0),
        pts.join("; ")
    );
    if let Some(e) = exp {
        text.push(' ');
        text.push_str(&experiment_sentence(e));
    }
    text
}

fn experiment_sentence(e: &ExperimentLatency) -> String {
    let which = match e.preset() {
        Some(p) => format!("the {} latency of {}", p.name(), e.model),
        None => format!("its own latency for {}", e.model),
    };
    let (o, r) = (dist_median(&e.overhead) / 1e6, dist_median(&e.prefill_rate));
    let caps: Vec<String> = e
        .caps_s
        .iter()
        .map(|&c| format!("{} s covers {} tokens", num(c), tokens_label(covered_tokens(c, o, r))))
        .collect();
    let mut s = format!(
        "This experiment assumes {which} (median overhead {} s, {} tok/s)",
        num(o),
        tokens_label(r)
    );
    if !caps.is_empty() {
        s.push_str(&format!(": {}", caps.join(", ")));
    }
    match e.cold_prompt_tokens {
        Some(t) => s.push_str(&format!(", against a cold prompt of {} tokens.", tokens_label(t))),
        None => s.push('.'),
    }
    s
}

/// A linear axis whose ticks are given (the log axis is drawn in log10 space with its 1-2-5
/// values as ticks). plotters' own `with_key_points` loses the f64 label formatter.
#[derive(Debug, Clone)]
pub struct TickedAxis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

impl Ranged for TickedAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        let f = if f.is_finite() { f } else { 0.0 };
        limit.0 + ((limit.1 - limit.0) as f64 * f).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<TickedAxis, TickedAxis>>;

/// Every line and point is labelled where it is drawn (caps at their lines' ends, models
/// beside their points); what the lines and points assume is a note in the plot's empty top
/// left corner, or in a column on the right when data fills that corner.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &CoveredSpec,
) -> DrawResult {
    // Where the plot would be with no column: if the note fits inside it, no column.
    let (w, h) = plot_size(title);
    let inside = note_box(s, w, h);
    let column: Vec<(String, Mark)> = match inside {
        Some(_) => Vec::new(),
        None => note_lines(s).into_iter().map(|l| (l, Mark::Note)).collect(),
    };
    let area = frame(root, title, &column)?;
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let x = TickedAxis { lo: lx0, hi: lx1, ticks: s.x_ticks.iter().map(|v| v.log10()).collect() };
    let y = TickedAxis { lo: 0.0, hi: s.y_max, ticks: s.y_ticks.clone() };
    let mut chart = builder(&area).build_cartesian_2d(x, y)?;
    mesh_style(&mut chart)
        .x_desc("Prefill rate (uncached tokens per second, log scale)")
        .y_desc("Cold prefix covered by the cap (tokens)")
        .x_label_formatter(&|v| tokens_label(10f64.powf(*v)))
        .y_label_formatter(&|v| tokens_label(*v))
        .draw()?;
    draw_reference(&mut chart, s)?;
    draw_caps(&mut chart, s)?;
    draw_points(&mut chart, s)?;
    draw_labels(&chart, s, inside)
}

/// The plotting area's size (pixels) with no column: the canvas less the title (one line,
/// as `frame` draws it) and `builder`'s margins and label areas.
fn plot_size(title: &str) -> (i32, i32) {
    let title_h = 14 + (style::title_px(title) as f64 * 1.05) as i32 + 6;
    (style::WIDTH as i32 - 20 - 130 - 40, style::HEIGHT as i32 - title_h - 10 - 20 - 90)
}

/// What the lines and points assume, one short line each.
fn note_lines(s: &CoveredSpec) -> Vec<String> {
    let mut l = vec![
        format!("Lines: overhead {} s,", num(s.line_overhead_s)),
        format!("the median of {} fits.", FITS.len()),
        format!("Points: a {} s cap at each", num(POINT_CAP_S)),
        "model's own median overhead;".to_string(),
        format!("bars: its p{}-p{}.", num(WHISKER_P.0 * 100.0), num(WHISKER_P.1 * 100.0)),
    ];
    for &(c, _) in s.caps.iter().filter(|(c, _)| cap_span(s, *c).is_none()) {
        l.push(format!("A cap of {} s covers nothing.", num(c)));
    }
    l
}

const LAUNCH: RGBColor = RGBColor(230, 120, 0);
const EXPERIMENT: RGBColor = style::HIGHLIGHT;
const REFERENCE: RGBColor = RGBColor(150, 150, 150);

fn draw_reference<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, s: &CoveredSpec) -> DrawResult {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let y = s.reference.0;
    let dashes = 60;
    let dash = (0..dashes).map(|i| {
        let a = lx0 + (lx1 - lx0) * i as f64 / dashes as f64;
        let b = a + (lx1 - lx0) * 0.6 / dashes as f64;
        PathElement::new(vec![(a, y), (b, y)], REFERENCE.stroke_width(2))
    });
    chart.draw_series(dash)?;
    Ok(())
}

/// A cap's line `y = k * x` (k = cap - the lines' overhead) within the axes: its rate range
/// (`None` when the cap is at most the overhead or the line misses the axes).
fn cap_span(s: &CoveredSpec, cap_s: f64) -> Option<(f64, f64, f64)> {
    let k = (cap_s - s.line_overhead_s).max(0.0);
    if k <= 0.0 {
        return None;
    }
    let (x0, x1) = (s.x_range.0, s.x_range.1.min(s.y_max / k));
    (x1 > x0).then_some((k, x0, x1))
}

/// Where a cap's label goes: the line's far end, below it when the line leaves through the
/// top, above it when it leaves through the right; (log10 rate, tokens, below).
fn cap_label_at(s: &CoveredSpec, cap_s: f64) -> Option<(f64, f64, bool)> {
    let (k, _, x1) = cap_span(s, cap_s)?;
    Some((x1.log10(), k * x1, x1 < s.x_range.1))
}

fn cap_label(cap_s: f64) -> String {
    format!("cap {} s ", num(cap_s))
}

/// Each cap's line, clipped to the axes, labelled at its far end.
fn draw_caps<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, s: &CoveredSpec) -> DrawResult {
    for &(cap, color) in &s.caps {
        let Some((k, x0, x1)) = cap_span(s, cap) else { continue };
        let steps = 160;
        let pts: Vec<(f64, f64)> = (0..=steps)
            .map(|i| {
                let lx = x0.log10() + (x1.log10() - x0.log10()) * i as f64 / steps as f64;
                (lx, k * 10f64.powf(lx))
            })
            .collect();
        let line = PathElement::new(pts, color.stroke_width(style::LINE_PX));
        chart.draw_series(std::iter::once(line))?;
        let Some((lx, y, below)) = cap_label_at(s, cap) else { continue };
        // A white ground under the label: the dashed reference may pass behind it.
        let area = chart.plotting_area().strip_coord_spec();
        let (base, (px, py)) = (area.get_base_pixel(), chart.backend_coord(&(lx, y)));
        let (px, py) = (px - base.0, py - base.1);
        let (tw, row) = (text_width(&cap_label(cap), style::TICK_PX), row_px());
        let top = if below { py } else { py - row + 2 };
        // Short of the label's trailing space, so the line's end stays drawn.
        let right = px - text_width(" ", style::TICK_PX);
        area.draw(&Rectangle::new([(px - tw, top), (right, top + row - 4)], WHITE.filled()))?;
        let v = if below { VPos::Top } else { VPos::Bottom };
        let font = (style::FONT, style::TICK_PX, FontStyle::Bold).into_font().color(&color);
        let label = Text::new(cap_label(cap), (lx, y), font.pos(Pos::new(HPos::Right, v)));
        chart.draw_series(std::iter::once(label))?;
    }
    Ok(())
}

fn draw_points<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, s: &CoveredSpec) -> DrawResult {
    for p in &s.points {
        let x = p.prefill_rate.log10();
        if let Some((lo, hi)) = p.whisker {
            let w = PathElement::new(
                vec![(x, lo.min(s.y_max)), (x, hi.min(s.y_max))],
                style::INK.stroke_width(2),
            );
            chart.draw_series(std::iter::once(w))?;
        }
        let at = (x, p.covered_tokens);
        let r = match p.kind {
            PointKind::Calibrated => {
                chart.draw_series(std::iter::once(Circle::new(at, 7, style::INK.filled())))
            }
            PointKind::Launch2024 => {
                chart.draw_series(std::iter::once(TriangleMarker::new(at, 10, LAUNCH.filled())))
            }
            PointKind::Experiment => {
                chart.draw_series(std::iter::once(Cross::new(at, 9, EXPERIMENT.stroke_width(4))))
            }
        };
        r?;
    }
    Ok(())
}

/// Estimated width of `text` drawn at `px` (DejaVu Sans: ~0.6 em per char, drawn at 1/1.24).
pub fn text_width(text: &str, px: u32) -> i32 {
    (text.chars().count() as f64 * 0.6 * px as f64 / 1.24).ceil() as i32
}

/// One row of text at the tick size (pixels).
fn row_px() -> i32 {
    (style::TICK_PX as f64 / 1.24 * 1.25).ceil() as i32
}

/// The data's boxes in a `w` x `h` plot: points, whiskers, and the cap lines sampled every
/// few pixels.
fn data_boxes(s: &CoveredSpec, w: i32, h: i32) -> Vec<PxBox> {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let px = |lx: f64| ((lx - lx0) / (lx1 - lx0) * w as f64).round() as i32;
    let py = |tokens: f64| ((1.0 - tokens / s.y_max) * h as f64).round() as i32;
    let mut out = Vec::new();
    for p in &s.points {
        let (x, y) = (px(p.prefill_rate.log10()), py(p.covered_tokens));
        out.push((x - 10, y - 10, 20, 20));
        if let Some((lo, hi)) = p.whisker {
            let (top, bottom) = (py(hi.min(s.y_max)), py(lo.min(s.y_max)));
            out.push((x - 2, top, 4, bottom - top));
        }
    }
    for &(cap, _) in &s.caps {
        let Some((k, x0, x1)) = cap_span(s, cap) else { continue };
        let steps = 120;
        for i in 0..=steps {
            let lx = x0.log10() + (x1.log10() - x0.log10()) * i as f64 / steps as f64;
            out.push((px(lx) - 3, py(k * 10f64.powf(lx)) - 3, 6, 6));
        }
    }
    out
}

/// The text already drawn in a `w` x `h` plot: the reference's label and the caps' labels.
fn text_boxes(s: &CoveredSpec, w: i32, h: i32) -> Vec<PxBox> {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let py = |tokens: f64| ((1.0 - tokens / s.y_max) * h as f64).round() as i32;
    let row = row_px();
    let mut out = vec![reference_box(s, w, h)];
    for &(cap, _) in &s.caps {
        let Some((lx, y, below)) = cap_label_at(s, cap) else { continue };
        let tw = text_width(&cap_label(cap), style::TICK_PX);
        let (x, y) = (((lx - lx0) / (lx1 - lx0) * w as f64).round() as i32, py(y));
        out.push((x - tw, if below { y } else { y - row }, tw, row));
    }
    out
}

/// The note's size in pixels.
fn note_size(s: &CoveredSpec) -> (i32, i32) {
    let lines = note_lines(s);
    let tw = lines.iter().map(|l| text_width(l, style::TICK_PX)).max().unwrap_or(0);
    (tw + 8, lines.len() as i32 * row_px() + 4)
}

/// The note's box in the plot's top left corner, 8 px in, moved down by rows until it
/// overlaps no data and no drawn text (`None` when it never does above the middle).
pub fn note_box(s: &CoveredSpec, w: i32, h: i32) -> Option<PxBox> {
    let (nw, nh) = note_size(s);
    let mut all = data_boxes(s, w, h);
    all.extend(text_boxes(s, w, h));
    (0..)
        .map(|k| (8, 8 + k * row_px(), nw, nh))
        .take_while(|b| b.1 + b.3 <= h / 2 && b.0 + b.2 <= w)
        .find(|b| !all.iter().any(|t| labels::overlaps(*b, *t)))
}

/// Every point's label beside it (`labels::place_beside`), clear of the data, the drawn
/// text, the note (when in the plot) and one another.
pub fn place_labels(s: &CoveredSpec, w: i32, h: i32) -> Vec<Placed> {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let px = |rate: f64| ((rate.log10() - lx0) / (lx1 - lx0) * w as f64).round() as i32;
    let py = |tokens: f64| ((1.0 - tokens / s.y_max) * h as f64).round() as i32;
    let mut taken = data_boxes(s, w, h);
    taken.extend(text_boxes(s, w, h));
    taken.extend(note_box(s, w, h));
    let wanted: Vec<((i32, i32), String, i32)> = s
        .points
        .iter()
        .map(|p| {
            let at = (px(p.prefill_rate), py(p.covered_tokens));
            (at, p.label.clone(), text_width(&p.label, style::TICK_PX))
        })
        .collect();
    labels::place_beside(&wanted, row_px(), (w, h), &mut taken)
}

/// The reference's label: right-aligned at 99% of the width, just above its line.
fn reference_box(s: &CoveredSpec, w: i32, h: i32) -> PxBox {
    let tw = text_width(&s.reference.1, style::TICK_PX);
    let row = row_px();
    let y = ((1.0 - s.reference.0 / s.y_max) * h as f64).round() as i32;
    (w - w / 100 - tw, y - row, tw, row)
}

fn draw_labels<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    s: &CoveredSpec,
    note: Option<PxBox>,
) -> DrawResult {
    let area = chart.plotting_area().strip_coord_spec();
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    if let Some(b) = note {
        let font = (style::FONT, style::TICK_PX)
            .into_font()
            .color(&style::NOTE)
            .pos(Pos::new(HPos::Left, VPos::Top));
        for (i, l) in note_lines(s).into_iter().enumerate() {
            area.draw(&Text::new(l, (b.0 + 4, b.1 + 2 + i as i32 * row_px()), font.clone()))?;
        }
    }
    let r = reference_box(s, w, h);
    area.draw(&Rectangle::new(
        [(r.0 - 3, r.1 + 2), (r.0 + r.2 + 3, r.1 + r.3 - 3)],
        WHITE.filled(),
    ))?;
    let font = (style::FONT, style::TICK_PX)
        .into_font()
        .color(&REFERENCE)
        .pos(Pos::new(HPos::Right, VPos::Bottom));
    area.draw(&Text::new(s.reference.1.clone(), (r.0 + r.2, r.1 + r.3 - 3), font))?;
    for l in place_labels(s, w, h) {
        let hpos = if l.left { HPos::Right } else { HPos::Left };
        let font = (style::FONT, style::TICK_PX)
            .into_font()
            .color(&style::INK)
            .pos(Pos::new(hpos, VPos::Center));
        if (l.y - l.point.1).abs() > 4 {
            let from = (l.point.0 + if l.left { -8 } else { 8 }, l.point.1);
            let to = (l.x + if l.left { 4 } else { -4 }, l.y);
            area.draw(&PathElement::new(vec![from, to], REFERENCE.stroke_width(1)))?;
        }
        let tw = text_width(&l.text, style::TICK_PX);
        let x0 = if l.left { l.x - tw - 3 } else { l.x - 3 };
        let half = (style::TICK_PX as f64 / 1.24 * 0.6).ceil() as i32;
        let bg = Rectangle::new([(x0, l.y - half), (x0 + tw + 6, l.y + half)], WHITE.filled());
        area.draw(&bg)?;
        area.draw(&Text::new(l.text, (l.x, l.y), font))?;
    }
    Ok(())
}
