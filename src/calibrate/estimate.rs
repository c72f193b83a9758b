//! Per-model estimates from observations: the median-regression fit of TTFT, the decode rate,
//! 95% intervals by a seeded bootstrap over sessions, the residual distribution, held-out
//! errors, and the 2024 launch figures' error on the same requests. Pure: no I/O, no clock.
//!
//! A parameter the data cannot identify is `None`, with the reason: never a made-up value.

use super::fit::{self, median, quantile, Coefs, Loss, Row};
use super::Observations;
use crate::rng::{self, RngExt};

/// The bootstrap and cross-validation settings (the CLI uses the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Bootstrap resamples per model.
    pub resamples: usize,
    /// Root seed of the bootstrap; each model's stream is derived from it and the model id.
    pub seed: u64,
    /// Folds of the held-out comparison (sessions are split among them).
    pub folds: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { resamples: 400, seed: 42, folds: 5 }
    }
}

/// Fewer requests with a measured TTFT than this: the model is skipped (3 coefficients).
pub const MIN_REQUESTS: usize = 5;
/// Fewer sessions than this: the bootstrap resamples requests instead (resampling one or two
/// sessions would give intervals of (almost) zero width).
pub const MIN_SESSIONS_FOR_SESSION_BOOTSTRAP: usize = 3;
/// A request counts toward the decode rate when it produced at least this many tokens: below,
/// `duration - ttft` is mostly the response's fixed tail, not decoding.
pub const MIN_DECODE_OUTPUT_TOKENS: u64 = 200;
/// A bootstrap refit starts from the full fit and stops at a relative improvement of the
/// absolute loss below this: far finer than the spread it measures.
pub const BOOTSTRAP_TOLERANCE: f64 = 1e-7;
/// Residual quantiles kept for the simulator: at 2.5%, 7.5%, ..., 97.5%.
pub const RESIDUAL_QUANTILES: usize = 20;

/// The 2024 launch figures (Claude 3.5 Sonnet, https://www.anthropic.com/news/prompt-caching;
/// derivation in `model::latency`): 500 ms, 9,100 prefilled tokens/s, 51,500 cached tokens/s.
pub const LAUNCH_2024_OVERHEAD_S: f64 = 0.5;
pub const LAUNCH_2024_PREFILL_RATE: f64 = 9_100.0;
pub const LAUNCH_2024_CACHED_RATE: f64 = 51_500.0;

/// A 95% interval; an upper end `None` is unbounded (a rate whose coefficient's interval
/// reaches zero).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ci95 {
    pub overhead_s: Interval,
    pub prefill_rate: Option<Interval>,
    pub cached_rate: Option<Interval>,
    pub decode_rate: Option<Interval>,
}

/// Median absolute errors on requests of held-out sessions (k-fold by session).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeldOut {
    pub folds: usize,
    pub median_fit_s: f64,
    pub least_squares_s: f64,
    pub launch_2024_s: f64,
}

/// One model's calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFit {
    pub model: String,
    pub preset: Option<&'static str>,
    /// Requests with a measured TTFT (the fit's rows) and all requests of the model.
    pub requests: usize,
    pub requests_total: usize,
    pub sessions: usize,
    /// Fit rows with a cache read.
    pub cache_read_requests: usize,
    pub overhead_s: f64,
    pub prefill_rate: Option<f64>,
    pub cached_rate: Option<f64>,
    pub decode_rate: Option<f64>,
    pub decode_requests: usize,
    pub median_abs_error_s: f64,
    pub launch_2024_median_abs_error_s: f64,
    pub ci95: Ci95,
    /// `"session"` or `"request"`.
    pub bootstrap_unit: &'static str,
    /// Residuals (measured - fitted) at 2.5%, 7.5%, ..., 97.5%.
    pub residual_quantiles_s: Vec<f64>,
    pub held_out: Option<HeldOut>,
    /// Why each `None` parameter is not identifiable, e.g. `("cached_rate", "no cache reads")`.
    pub not_identifiable: Vec<(&'static str, String)>,
    /// (fitted, measured) TTFT of every row, seconds, in input order (for the figure).
    pub points: Vec<(f64, f64)>,
}

/// A model with too little data to fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub model: String,
    pub requests_total: usize,
    pub requests_with_ttft: usize,
    pub reason: String,
}

/// Every model's calibration, sorted by model id.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub models: Vec<ModelFit>,
    pub skipped: Vec<Skipped>,
    pub settings: Settings,
}

/// One request of the fit: its row and, when it qualifies, its decode rate (tokens/s).
#[derive(Debug, Clone, Copy)]
struct Unit {
    row: Row,
    decode: Option<f64>,
}

/// One session's requests (the bootstrap's unit of resampling).
type Session = Vec<Unit>;

/// Calibrate every model of `data`.
pub fn calibrate(data: &Observations, settings: &Settings) -> Calibration {
    let mut order: Vec<usize> = (0..data.models.len()).collect();
    order.sort_by(|&a, &b| data.models[a].cmp(&data.models[b]));
    let mut models = Vec::new();
    let mut skipped = Vec::new();
    for m in order {
        let name = &data.models[m];
        let total = data.obs.iter().filter(|o| o.model as usize == m).count();
        let sessions = sessions_of(data, m as u32);
        let n: usize = sessions.iter().map(Vec::len).sum();
        if n < MIN_REQUESTS {
            let reason = format!(
                "{n} requests with a measured time to first token (at least {MIN_REQUESTS} needed)"
            );
            skipped.push(Skipped {
                model: name.clone(),
                requests_total: total,
                requests_with_ttft: n,
                reason,
            });
            continue;
        }
        models.push(model_fit(name, total, &sessions, settings));
    }
    Calibration { models, skipped, settings: *settings }
}

/// The model's requests with a TTFT, grouped by session in order of first appearance.
fn sessions_of(data: &Observations, model: u32) -> Vec<Session> {
    let mut index = std::collections::BTreeMap::new();
    let mut out: Vec<Session> = Vec::new();
    for o in data.obs.iter().filter(|o| o.model == model) {
        let Some(ttft_s) = o.ttft_s else { continue };
        let i = *index.entry(o.group).or_insert_with(|| {
            out.push(Session::new());
            out.len() - 1
        });
        let decode = match o.duration_s {
            Some(d) if o.output_tokens >= MIN_DECODE_OUTPUT_TOKENS && d > ttft_s => {
                Some(o.output_tokens as f64 / (d - ttft_s))
            }
            _ => None,
        };
        let row = Row { prefill: o.prefill_tokens as f64, cached: o.cached_tokens as f64, ttft_s };
        out[i].push(Unit { row, decode });
    }
    out
}

fn model_fit(name: &str, total: usize, sessions: &[Session], settings: &Settings) -> ModelFit {
    let rows: Vec<Row> = sessions.iter().flatten().map(|u| u.row).collect();
    let coefs = fit::fit(&rows, Loss::Absolute);
    let mut decode: Vec<f64> = sessions.iter().flatten().filter_map(|u| u.decode).collect();
    let decode_rate = (!decode.is_empty()).then(|| median(&mut decode));
    let mut residuals: Vec<f64> =
        rows.iter().map(|r| r.ttft_s - coefs.predict(r.prefill, r.cached)).collect();
    let mut abs: Vec<f64> = residuals.iter().map(|r| r.abs()).collect();
    residuals.sort_by(f64::total_cmp);
    let residual_quantiles_s = (0..RESIDUAL_QUANTILES)
        .map(|k| quantile(&residuals, (2 * k + 1) as f64 / (2 * RESIDUAL_QUANTILES) as f64))
        .collect();
    let unit =
        if sessions.len() >= MIN_SESSIONS_FOR_SESSION_BOOTSTRAP { "session" } else { "request" };
    let ci95 = bootstrap(name, sessions, unit == "session", &coefs, settings);
    let (prefill_rate, cached_rate) = (rate(coefs.s_per_prefill), rate(coefs.s_per_cached));
    ModelFit {
        model: name.to_string(),
        preset: crate::cache::preset_for_api_id(name),
        requests: rows.len(),
        requests_total: total,
        sessions: sessions.len(),
        cache_read_requests: rows.iter().filter(|r| r.cached > 0.0).count(),
        overhead_s: coefs.overhead_s,
        prefill_rate,
        cached_rate,
        decode_rate,
        decode_requests: decode.len(),
        median_abs_error_s: median(&mut abs),
        launch_2024_median_abs_error_s: median(&mut launch_errors(&rows)),
        ci95: Ci95 {
            prefill_rate: prefill_rate.and(ci95.prefill_rate),
            cached_rate: cached_rate.and(ci95.cached_rate),
            decode_rate: decode_rate.and(ci95.decode_rate),
            ..ci95
        },
        bootstrap_unit: unit,
        residual_quantiles_s,
        held_out: held_out(sessions, settings.folds),
        not_identifiable: reasons(&coefs, decode_rate.is_none()),
        points: rows.iter().map(|r| (coefs.predict(r.prefill, r.cached), r.ttft_s)).collect(),
    }
}

/// Tokens per second from seconds per token; `None` when the coefficient is absent or held at 0.
fn rate(s_per_token: Option<f64>) -> Option<f64> {
    s_per_token.filter(|&s| s > 0.0).map(|s| 1.0 / s)
}

/// Absolute errors of the 2024 launch figures on `rows`.
fn launch_errors(rows: &[Row]) -> Vec<f64> {
    rows.iter()
        .map(|r| {
            let predicted = LAUNCH_2024_OVERHEAD_S
                + r.prefill / LAUNCH_2024_PREFILL_RATE
                + r.cached / LAUNCH_2024_CACHED_RATE;
            (r.ttft_s - predicted).abs()
        })
        .collect()
}

/// Why each missing parameter is missing, in words.
fn reasons(c: &Coefs, no_decode: bool) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    match c.s_per_prefill {
        None => {
            out.push(("prefill_rate", "every request prefilled the same number of tokens".into()))
        }
        Some(s) if s <= 0.0 => out.push((
            "prefill_rate",
            "the fitted time per prefilled token is not positive (held at 0)".into(),
        )),
        _ => {}
    }
    match c.s_per_cached {
        None => out.push((
            "cached_rate",
            "no request read from the cache (or all read the same amount)".into(),
        )),
        Some(s) if s <= 0.0 => out.push((
            "cached_rate",
            "the fitted time per cached token is not positive (held at 0)".into(),
        )),
        _ => {}
    }
    if no_decode {
        out.push((
            "decode_rate",
            format!(
                "no request has a duration, a TTFT and at least {MIN_DECODE_OUTPUT_TOKENS} output tokens"
            ),
        ));
    }
    out
}

/// Percentile intervals over `resamples` bootstrap refits, resampling whole sessions (or
/// requests). Each model draws from its own stream, derived from the seed and its id.
fn bootstrap(
    name: &str,
    sessions: &[Session],
    by_session: bool,
    full: &Coefs,
    settings: &Settings,
) -> Ci95 {
    let units: Vec<Session> = if by_session {
        sessions.to_vec()
    } else {
        sessions.iter().flatten().map(|&u| vec![u]).collect()
    };
    let mut rng = rng::stream(settings.seed, &[model_key(name)]);
    let (mut o, mut a, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rows = Vec::new();
    let mut dec = Vec::new();
    for _ in 0..settings.resamples {
        rows.clear();
        dec.clear();
        for _ in 0..units.len() {
            for u in &units[rng.random_range(0..units.len())] {
                rows.push(u.row);
                dec.extend(u.decode);
            }
        }
        if !rows.is_empty() {
            let c = fit::fit_with(&rows, Loss::Absolute, Some(full), BOOTSTRAP_TOLERANCE);
            o.push(c.overhead_s);
            a.extend(c.s_per_prefill);
            b.extend(c.s_per_cached);
        }
        if !dec.is_empty() {
            d.push(median(&mut dec));
        }
    }
    Ci95 {
        overhead_s: percentile_interval(&mut o).unwrap_or(Interval { lo: f64::NAN, hi: None }),
        prefill_rate: percentile_interval(&mut a).map(rate_interval),
        cached_rate: percentile_interval(&mut b).map(rate_interval),
        decode_rate: percentile_interval(&mut d),
    }
}

/// A stable 64-bit key of a model id (FNV-1a), so a model's draws do not depend on the others.
fn model_key(name: &str) -> u64 {
    name.bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The 2.5% and 97.5% percentiles, `None` for no values.
fn percentile_interval(values: &mut [f64]) -> Option<Interval> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(Interval { lo: quantile(values, 0.025), hi: Some(quantile(values, 0.975)) })
}

/// A coefficient interval (seconds per token) as a rate interval: `[1/hi, 1/lo]`, unbounded
/// above when the coefficient's interval reaches 0.
fn rate_interval(s: Interval) -> Interval {
    let hi_s = s.hi.unwrap_or(f64::INFINITY);
    Interval {
        lo: if hi_s > 0.0 { 1.0 / hi_s } else { f64::INFINITY },
        hi: (s.lo > 0.0).then(|| 1.0 / s.lo),
    }
}

/// k-fold by session: each session's requests are predicted by fits to the other folds.
fn held_out(sessions: &[Session], folds: usize) -> Option<HeldOut> {
    let k = folds.min(sessions.len());
    if k < 2 {
        return None;
    }
    let (mut l1, mut l2, mut launch) = (Vec::new(), Vec::new(), Vec::new());
    for fold in 0..k {
        let part = |keep: bool| -> Vec<Row> {
            let chosen = sessions.iter().enumerate().filter(|(i, _)| (i % k == fold) != keep);
            chosen.flat_map(|(_, s)| s.iter().map(|u| u.row)).collect()
        };
        let (train, test) = (part(true), part(false));
        if train.is_empty() || test.is_empty() {
            continue;
        }
        let (f1, f2) = (fit::fit(&train, Loss::Absolute), fit::fit(&train, Loss::Squared));
        for r in &test {
            l1.push((r.ttft_s - f1.predict(r.prefill, r.cached)).abs());
            l2.push((r.ttft_s - f2.predict(r.prefill, r.cached)).abs());
        }
        launch.extend(launch_errors(&test));
    }
    (!l1.is_empty()).then(|| HeldOut {
        folds: k,
        median_fit_s: median(&mut l1),
        least_squares_s: median(&mut l2),
        launch_2024_s: median(&mut launch),
    })
}
