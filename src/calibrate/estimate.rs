//! Per-model estimates from observations: the median-regression fit of TTFT (with the
//! attention term where the data identifies it), the decode rate, 95% intervals by a seeded
//! bootstrap over sessions, the overhead distribution with its fitted tail, the first
//! bootstrap refits as draws, and the 2024 launch figures' error on the same requests. The
//! held-out and backtest checks are in `check`. Pure: no I/O, no clock.
//!
//! A parameter the data cannot identify is `None`, with the reason: never a made-up value.

use super::check::{self, launch_errors, HeldOut, Validation};
use super::fit::{self, median, quantile, Coefs, Loss, Row};
use super::tail::{self, Spliced};
use super::{Observation, Observations};
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
/// Residual quantiles reported (JSON `residual_quantiles_s`): at 2.5%, 7.5%, ..., 97.5%.
pub const RESIDUAL_QUANTILES: usize = 20;
/// Bootstrap refits handed on as draws (`draws`): the first ones, in resample order, so the
/// same seed gives the same draws.
pub const CALIBRATION_DRAWS: usize = 20;
/// `identified`: at least this many timed requests in at least this many sessions, and a
/// prefill rate whose 95% interval is bounded (`is_identified`).
pub const IDENTIFIED_MIN_REQUESTS: usize = 100;
pub const IDENTIFIED_MIN_SESSIONS: usize = 5;

/// Whether a fit is well enough measured to stand for its model (a preset may use it as is):
/// `IDENTIFIED_MIN_REQUESTS` timed requests in `IDENTIFIED_MIN_SESSIONS` sessions and a
/// bounded 95% interval of the prefill rate.
pub fn is_identified(requests: usize, sessions: usize, prefill: Option<&Interval>) -> bool {
    requests >= IDENTIFIED_MIN_REQUESTS
        && sessions >= IDENTIFIED_MIN_SESSIONS
        && prefill.is_some_and(|i| i.hi.is_some())
}

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
    /// Given whenever the attention column could be fitted, also when the rate is `None`
    /// (its interval is why).
    pub attention_rate: Option<Interval>,
    pub decode_rate: Option<Interval>,
}

/// One bootstrap refit as the simulator would use it: its rates and the overhead distribution
/// of its own residuals on its resample.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    pub overhead: Spliced,
    pub prefill_rate: Option<f64>,
    pub cached_rate: Option<f64>,
    pub attention_rate: Option<f64>,
}

/// One request's row and, for the figure, its fitted TTFT.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub row: Row,
    pub fitted_s: f64,
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
    /// Prefilled x context tokens per second (tokens²/s): `None` unless identified.
    pub attention_rate: Option<f64>,
    pub decode_rate: Option<f64>,
    pub decode_requests: usize,
    /// The fitted coefficients the rates come from (attention only when identified).
    pub coefs: Coefs,
    /// The fixed part plus every residual, with its fitted tail: what the simulator draws.
    pub overhead_distribution: Spliced,
    /// See `is_identified`.
    pub identified: bool,
    /// The first `CALIBRATION_DRAWS` bootstrap refits.
    pub draws: Vec<Draw>,
    /// The backtest on `--validate` files (`check::validate`); `None` without requests there.
    pub validation: Option<Validation>,
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
    /// Every row with its fitted TTFT, in input order (for the figures).
    pub points: Vec<Point>,
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
        let Some(row) = row(o) else { continue };
        let i = *index.entry(o.group).or_insert_with(|| {
            out.push(Session::new());
            out.len() - 1
        });
        let decode = match o.duration_s {
            Some(d) if o.output_tokens >= MIN_DECODE_OUTPUT_TOKENS && d > row.ttft_s => {
                Some(o.output_tokens as f64 / (d - row.ttft_s))
            }
            _ => None,
        };
        out[i].push(Unit { row, decode });
    }
    out
}

/// An observation's row of the fit: `None` without a measured TTFT.
fn row(o: &Observation) -> Option<Row> {
    let (prefill, cached) = (o.prefill_tokens as f64, o.cached_tokens as f64);
    o.ttft_s.map(|ttft_s| Row { prefill, cached, ttft_s })
}

/// Backtest every model of `cal` on the timed requests of `data` with the same model id (sets
/// `validation`: `check::backtest`); returns the ids of `data`'s timed models that `cal` has
/// no fit for.
pub fn validate(cal: &mut Calibration, data: &Observations) -> Vec<String> {
    for m in &mut cal.models {
        let Some(id) = data.models.iter().position(|x| *x == m.model) else { continue };
        let of_model = data.obs.iter().filter(|o| o.model as usize == id);
        let rows: Vec<Row> = of_model.filter_map(row).collect();
        if !rows.is_empty() {
            m.validation = Some(check::backtest(&rows, &m.coefs, &m.overhead_distribution));
        }
    }
    let timed = |i: usize| data.obs.iter().any(|o| o.model as usize == i && o.ttft_s.is_some());
    let mut unknown: Vec<String> = (data.models.iter().enumerate())
        .filter(|&(i, name)| timed(i) && !cal.models.iter().any(|m| m.model == *name))
        .map(|(_, name)| name.clone())
        .collect();
    unknown.sort();
    unknown
}

/// A model's bootstrap: the refits, in resample order, and the decode medians.
struct Boot {
    coefs: Vec<Coefs>,
    decode: Vec<f64>,
    /// The first `CALIBRATION_DRAWS` refits' overhead distributions.
    draws: Vec<Spliced>,
}

fn model_fit(name: &str, total: usize, sessions: &[Session], settings: &Settings) -> ModelFit {
    let rows: Vec<Row> = sessions.iter().flatten().map(|u| u.row).collect();
    let mut decode: Vec<f64> = sessions.iter().flatten().filter_map(|u| u.decode).collect();
    let decode_rate = (!decode.is_empty()).then(|| median(&mut decode));
    let unit =
        if sessions.len() >= MIN_SESSIONS_FOR_SESSION_BOOTSTRAP { "session" } else { "request" };
    let units: Vec<Session> = if unit == "session" {
        sessions.to_vec()
    } else {
        sessions.iter().flatten().map(|&u| vec![u]).collect()
    };
    let picks = resamples(name, units.len(), settings);
    // The attention term is kept only where its interval excludes 0; else the model is refitted
    // without it (and its interval still reported).
    let with = fit::fit(&rows, Loss::Absolute, true);
    let boot_with = bootstrap(&units, &picks, &with, 0);
    let attention_ci = interval(boot_with.coefs.iter().filter_map(|c| c.s_per_attention));
    let attention =
        with.s_per_attention.is_some_and(|s| s > 0.0) && attention_ci.is_some_and(|i| i.lo > 0.0);
    let (coefs, boot) = if attention {
        (with, bootstrap(&units, &picks, &with, CALIBRATION_DRAWS))
    } else {
        let without = fit::fit(&rows, Loss::Absolute, false);
        (without, bootstrap(&units, &picks, &without, CALIBRATION_DRAWS))
    };
    let (prefill_rate, cached_rate) = (rate(coefs.s_per_prefill), rate(coefs.s_per_cached));
    let attention_rate = rate(coefs.s_per_attention);
    let ci95 = ci95(&coefs, &boot, attention_ci, decode_rate);
    let mut residuals: Vec<f64> = rows.iter().map(|r| r.ttft_s - coefs.predict(r)).collect();
    let mut abs: Vec<f64> = residuals.iter().map(|r| r.abs()).collect();
    let overhead_distribution = tail::overhead(coefs.overhead_s, &residuals);
    residuals.sort_by(f64::total_cmp);
    let draws = boot.draws.into_iter().zip(&boot.coefs).map(|(d, c)| draw(d, c)).collect();
    let mut not_identifiable = reasons(&coefs, decode_rate.is_none());
    if !attention {
        not_identifiable.push(("attention_rate", attention_reason(&with, attention_ci)));
    }
    ModelFit {
        model: name.to_string(),
        preset: crate::config::preset_for_api_id(name),
        requests: rows.len(),
        requests_total: total,
        sessions: sessions.len(),
        cache_read_requests: rows.iter().filter(|r| r.cached > 0.0).count(),
        overhead_s: coefs.overhead_s,
        prefill_rate,
        cached_rate,
        attention_rate,
        decode_rate,
        decode_requests: decode.len(),
        coefs,
        overhead_distribution,
        identified: is_identified(rows.len(), sessions.len(), ci95.prefill_rate.as_ref()),
        draws,
        validation: None,
        median_abs_error_s: median(&mut abs),
        launch_2024_median_abs_error_s: median(&mut launch_errors(&rows)),
        ci95,
        bootstrap_unit: unit,
        residual_quantiles_s: residual_quantiles(&residuals),
        held_out: check::held_out(sessions_rows(sessions).as_slice(), settings.folds, attention),
        not_identifiable,
        points: rows.iter().map(|&row| Point { row, fitted_s: coefs.predict(&row) }).collect(),
    }
}

/// The 95% intervals of the fit `coefs` from its bootstrap `boot`: a rate's only where the
/// fit has the rate, the attention rate's (`attention_ci`) whenever it could be fitted.
fn ci95(coefs: &Coefs, boot: &Boot, attention_ci: Option<Interval>, decode: Option<f64>) -> Ci95 {
    let of = |s: fn(&Coefs) -> Option<f64>| {
        rate(s(coefs)).and(interval(boot.coefs.iter().filter_map(s))).map(rate_interval)
    };
    Ci95 {
        overhead_s: interval(boot.coefs.iter().map(|c| c.overhead_s))
            .unwrap_or(Interval { lo: f64::NAN, hi: None }),
        prefill_rate: of(|c| c.s_per_prefill),
        cached_rate: of(|c| c.s_per_cached),
        attention_rate: attention_ci.map(rate_interval),
        decode_rate: decode.and(interval(boot.decode.iter().copied())),
    }
}

/// Each session's rows, for the held-out check.
fn sessions_rows(sessions: &[Session]) -> Vec<Vec<Row>> {
    sessions.iter().map(|s| s.iter().map(|u| u.row).collect()).collect()
}

/// The residuals (ascending) at 2.5%, 7.5%, ..., 97.5%.
fn residual_quantiles(sorted: &[f64]) -> Vec<f64> {
    (0..RESIDUAL_QUANTILES)
        .map(|k| quantile(sorted, (2 * k + 1) as f64 / (2 * RESIDUAL_QUANTILES) as f64))
        .collect()
}

fn draw(overhead: Spliced, c: &Coefs) -> Draw {
    Draw {
        overhead,
        prefill_rate: rate(c.s_per_prefill),
        cached_rate: rate(c.s_per_cached),
        attention_rate: rate(c.s_per_attention),
    }
}

/// Why the attention term is left out, in words.
fn attention_reason(with: &Coefs, ci: Option<Interval>) -> String {
    match (with.s_per_attention, ci) {
        (None, _) | (_, None) => "prefilled x context tokens do not vary".into(),
        (Some(s), _) if s <= 0.0 => {
            "the fitted time per prefilled x context token² is not positive (held at 0)".into()
        }
        (Some(s), Some(i)) => {
            let r = rate_interval(i);
            format!(
                "the 95% interval of its coefficient includes 0 (fit with the term: {:.3e} tokens²/s, \
                 interval [{:.3e}, {}])",
                1.0 / s,
                r.lo,
                r.hi.map_or("unbounded".to_string(), |h| format!("{h:.3e}"))
            )
        }
    }
}

/// Tokens per second from seconds per token; `None` when the coefficient is absent or held at 0.
pub fn rate(s_per_token: Option<f64>) -> Option<f64> {
    s_per_token.filter(|&s| s > 0.0).map(|s| 1.0 / s)
}

/// Why each missing parameter is missing, in words.
fn reasons(c: &Coefs, no_decode: bool) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let constant = "every request prefilled the same number of tokens";
    let no_reads = "no request read from the cache (or all read the same amount)";
    let columns = [
        ("prefill_rate", c.s_per_prefill, "prefilled", constant),
        ("cached_rate", c.s_per_cached, "cached", no_reads),
    ];
    for (key, coef, what, absent) in columns {
        match coef {
            None => out.push((key, absent.to_string())),
            Some(s) if s <= 0.0 => out.push((
                key,
                format!("the fitted time per {what} token is not positive (held at 0)"),
            )),
            _ => {}
        }
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

/// The units each of `resamples` bootstrap resamples draws (with replacement, as many as there
/// are). Each model draws from its own stream, derived from the seed and its id. The picks
/// are drawn again on each pass over them (the same stream gives the same picks), not held:
/// held, 400 resamples of a million requests would be 3.2 GB.
struct Picks {
    seed: u64,
    key: u64,
    units: usize,
    resamples: usize,
}

impl Picks {
    fn iter(&self) -> impl Iterator<Item = Vec<usize>> {
        let mut rng = rng::stream(self.seed, &[self.key]);
        let units = self.units;
        (0..self.resamples).map(move |_| (0..units).map(|_| rng.random_range(0..units)).collect())
    }
}

fn resamples(name: &str, units: usize, settings: &Settings) -> Picks {
    Picks { seed: settings.seed, key: model_key(name), units, resamples: settings.resamples }
}

/// Refit every resample of `picks` from `full` (with its columns); the first `draws` refits
/// also get the overhead distribution of their residuals on their resample.
fn bootstrap(units: &[Session], picks: &Picks, full: &Coefs, draws: usize) -> Boot {
    let attention = full.s_per_attention.is_some();
    let mut boot = Boot { coefs: Vec::new(), decode: Vec::new(), draws: Vec::new() };
    let (mut rows, mut dec) = (Vec::new(), Vec::new());
    for pick in picks.iter() {
        rows.clear();
        dec.clear();
        for u in pick.iter().flat_map(|&i| &units[i]) {
            rows.push(u.row);
            dec.extend(u.decode);
        }
        if !rows.is_empty() {
            let c =
                fit::fit_with(&rows, Loss::Absolute, attention, Some(full), BOOTSTRAP_TOLERANCE);
            if boot.draws.len() < draws {
                let residuals: Vec<f64> = rows.iter().map(|r| r.ttft_s - c.predict(r)).collect();
                boot.draws.push(tail::overhead(c.overhead_s, &residuals));
            }
            boot.coefs.push(c);
        }
        if !dec.is_empty() {
            boot.decode.push(median(&mut dec));
        }
    }
    boot
}

/// A stable 64-bit key of a model id (FNV-1a), so a model's draws do not depend on the others.
fn model_key(name: &str) -> u64 {
    name.bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The 2.5% and 97.5% percentiles, `None` for no values.
fn interval(values: impl Iterator<Item = f64>) -> Option<Interval> {
    let mut values: Vec<f64> = values.collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(Interval { lo: quantile(&values, 0.025), hi: Some(quantile(&values, 0.975)) })
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
