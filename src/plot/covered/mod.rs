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
//! `config::latency_presets` (the `fits()` table and `LatencyParams::default`), none is written
//! here. In a hold experiment's report the experiment's own latency is marked and its cold
//! prompt drawn as the horizontal reference.
//!
//! Reads the latency presets (static data) and the result files; never simulates. The figure
//! is drawn by `layout`.

use plotters::style::RGBColor;

use super::axis::is_hold_cap;
use super::scale::{self, linear_ticks, log_ticks};
use super::style::{self, num};
use super::{Figure, Spec};
use crate::config::latency_presets::{self, Fit, LatencyPreset};
use crate::config::parse_dist;
use crate::config::LatencyParams;
use crate::dist::{Dist, Quantity};
use crate::results::{parse_label, Results};

pub mod layout;

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
    /// `covered_tokens(POINT_CAP_S, overhead_s, prefill_rate)`.
    pub covered_tokens: f64,
    /// Covered at the overhead's 90th and 10th percentiles (low, high); `None` when constant.
    pub whisker: Option<(f64, f64)>,
}

impl CoveredPoint {
    /// A point at its median overhead `overhead_s`, for the default cap.
    fn new(
        label: String,
        kind: PointKind,
        rate: f64,
        overhead_s: f64,
        whisker: Option<(f64, f64)>,
    ) -> Self {
        let covered_tokens = covered_tokens(POINT_CAP_S, overhead_s, rate);
        CoveredPoint { label, kind, prefill_rate: rate, overhead_s, covered_tokens, whisker }
    }
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

/// The fits a preset may use as its own (`Fit::identified`): the figure's points and lines.
pub(crate) fn identified() -> impl Iterator<Item = &'static Fit> {
    latency_presets::fits().iter().filter(|f| f.identified)
}

/// The median of the identified calibrated models' median overheads (the cap lines' overhead).
pub fn reference_overhead_s() -> f64 {
    let mut o: Vec<f64> = identified().map(|f| f.overhead_s).collect();
    o.sort_by(f64::total_cmp);
    let n = o.len();
    if n % 2 == 1 {
        o[n / 2]
    } else {
        (o[n / 2 - 1] + o[n / 2]) / 2.0
    }
}

fn calibrated_point(fit: &Fit) -> CoveredPoint {
    let (lo_p, hi_p) = WHISKER_P;
    let whisker = (
        covered_tokens(POINT_CAP_S, fit.overhead.quantile_s(hi_p), fit.prefill_rate),
        covered_tokens(POINT_CAP_S, fit.overhead.quantile_s(lo_p), fit.prefill_rate),
    );
    let label = fit.fitted_on.trim_start_matches("claude-").to_string();
    CoveredPoint::new(label, PointKind::Calibrated, fit.prefill_rate, fit.overhead_s, Some(whisker))
}

fn launch_point() -> CoveredPoint {
    let p = LatencyParams::default();
    let overhead_s = p.overhead_us.quantile(0.5) / 1e6;
    let rate = p.prefill_rate.quantile(0.5);
    CoveredPoint::new("launch 2024".into(), PointKind::Launch2024, rate, overhead_s, None)
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
        for a in m.axes.iter().filter(|a| is_hold_cap(&a.key)) {
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

    /// The median overhead (seconds) and prefill rate (tokens per second).
    fn medians(&self) -> (f64, f64) {
        (self.overhead.quantile(0.5) / 1e6, self.prefill_rate.quantile(0.5))
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
    let mut points: Vec<CoveredPoint> = identified().map(calibrated_point).collect();
    points.push(launch_point());
    let mut reference = (
        REFERENCE_PREFIX_TOKENS,
        format!("{}-token prefix", scale::short(REFERENCE_PREFIX_TOKENS)),
    );
    if let Some(e) = exp {
        mark_experiment(&mut points, e);
        if let Some(t) = e.cold_prompt_tokens {
            reference = (t, format!("experiment's cold prompt {}", scale::short(t)));
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
            identified().count()
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
            let (o, r) = e.medians();
            let label = format!("this experiment ({short})");
            points.push(CoveredPoint::new(label, PointKind::Experiment, r, o, None));
        }
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
                scale::short(p.covered_tokens),
                num(p.overhead_s),
                scale::short(p.prefill_rate)
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
    let (o, r) = e.medians();
    let caps: Vec<String> = e
        .caps_s
        .iter()
        .map(|&c| format!("{} s covers {} tokens", num(c), scale::short(covered_tokens(c, o, r))))
        .collect();
    let mut s = format!(
        "This experiment assumes {which} (median overhead {} s, {} tok/s)",
        num(o),
        scale::short(r)
    );
    if !caps.is_empty() {
        s.push_str(&format!(": {}", caps.join(", ")));
    }
    match e.cold_prompt_tokens {
        Some(t) => s.push_str(&format!(", against a cold prompt of {} tokens.", scale::short(t))),
        None => s.push('.'),
    }
    s
}
