//! Latency presets per model: the parameters of `model::latency`'s model for each model preset,
//! fitted to measured times to first token, plus the 2024 launch figures as a named
//! alternative.
//!
//! `calibrated` (the default): fitted by `prefixsim calibrate data/claude-code-ttft` (real
//! Claude Code sessions of 2025 whose requests carry a measured TTFT; docs/calibrate.md has the
//! method, the intervals and the command that reproduces every number here; `latency_fits.json`
//! is generated from that command's JSON and a test holds it to a fresh fit). The overhead is
//! a distribution: the fitted fixed part plus the fit's residuals, with a generalized Pareto
//! tail, so simulated TTFTs spread, tail included, as measured ones do. A model without data,
//! or whose data do not identify a fit, borrows the fit of its nearest well-measured sibling
//! and says so (`source`). A rate the data cannot identify is not filled in: an unidentified
//! cached rate is no time per cached token, what the fit itself found. Each fit carries
//! `CALIBRATION_DRAWS` bootstrap refits: `latency.draw = k` runs at the k-th, and `tune`
//! runs its objective at each to put an interval on the hold cap.
//!
//! `launch-2024`: 500 ms + 9,100 tok/s uncached, 51,500 tok/s cached, the fit to Anthropic's
//! prompt-caching launch post of August 2024 (Claude 3.5 Sonnet; see `model::latency`).

use std::sync::OnceLock;

use serde::Deserialize;

use super::LatencyParams;
use crate::dist::Dist;

/// Which family of latency defaults an experiment starts from (`latency.preset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyPreset {
    /// Per model, fitted to the bundled TTFT traces.
    Calibrated,
    /// One model for all: the 2024 launch-post figures.
    Launch2024,
}

impl LatencyPreset {
    pub const NAMES: [&'static str; 2] = ["calibrated", "launch-2024"];

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Calibrated, Self::Launch2024].into_iter().find(|p| p.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            LatencyPreset::Calibrated => "calibrated",
            LatencyPreset::Launch2024 => "launch-2024",
        }
    }
}

/// A fitted overhead distribution: the fixed part plus the fit's residuals, as `dist::Spliced`
/// (19 body quantiles at 0, 5%, ..., 90%, a generalized Pareto tail above, truncated).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overhead {
    pub body_s: [f64; 19],
    pub p_tail: f64,
    pub scale_s: f64,
    pub shape: f64,
    pub max_s: f64,
}

impl Overhead {
    /// The distribution in microseconds, as the simulator draws it.
    pub fn dist(&self) -> Dist {
        let body = self.body_s.iter().map(|s| (s * 1e6).round()).collect();
        let (scale, max) = (self.scale_s * 1e6, self.max_s * 1e6);
        match crate::dist::Spliced::new(body, self.p_tail, scale, self.shape, max) {
            Ok(s) => Dist::Spliced(Box::new(s)),
            Err(e) => unreachable!("a generated fit is a valid distribution: {e}"),
        }
    }

    /// The value at probability `p`, seconds.
    pub fn quantile_s(&self, p: f64) -> f64 {
        self.dist().quantile(p) / 1e6
    }
}

/// One bootstrap refit of a model (the calibration's uncertainty): `latency.draw = k` runs
/// the experiment at the model's k-th.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draw {
    pub overhead: Overhead,
    /// `None`: the refit found no time per prefilled token (its coefficient is 0).
    pub prefill_rate: Option<f64>,
    /// `None`: the refit found no time per cached token.
    pub cached_rate: Option<f64>,
    /// `None`: no attention term (`Fit::attention_rate`).
    pub attention_rate: Option<f64>,
}

/// One fitted model. Rates in tokens per second; times in seconds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fit {
    /// The model preset the fit was made on.
    pub fitted_on: String,
    /// Requests with a measured TTFT behind the fit, and the sessions they came in.
    pub requests: u32,
    pub sessions: u32,
    /// Whether the data identify the fit well enough for a preset to use it (calibrate's
    /// rule: enough requests and sessions, a bounded prefill interval). A model whose own fit
    /// is not identified borrows a sibling's (`borrowed`).
    pub identified: bool,
    /// Median fixed part of the TTFT.
    pub overhead_s: f64,
    /// The fixed part plus the residuals, with their tail.
    pub overhead: Overhead,
    pub prefill_rate: f64,
    /// `None`: the TTFT does not grow measurably with cached tokens (the fit's coefficient is
    /// 0), and the preset takes no time per cached token: what the fit itself predicts.
    pub cached_rate: Option<f64>,
    /// `None`: the data cannot identify it (see `DECODE_RATE_FALLBACK`).
    pub decode_rate: Option<f64>,
    /// Tokens² per second of the prefilled tokens' attention over the context; `None` unless
    /// the data identify it (its interval excludes no term), and then no such term.
    pub attention_rate: Option<f64>,
    /// The first `CALIBRATION_DRAWS` bootstrap refits (session resampling, seed 42).
    pub draws: Vec<Draw>,
}

/// Output tokens per second where no duration was measured.
pub const DECODE_RATE_FALLBACK: f64 = 50.0;

/// Bootstrap refits kept per model (calibrate's `draws`; the fits test holds every fit to it).
pub const CALIBRATION_DRAWS: usize = 20;

/// The fits per model preset, sorted by name: `latency_fits.json`, generated from
/// `prefixsim calibrate data/claude-code-ttft --json` by
/// `PREFIXSIM_WRITE_FITS=1 cargo test --release --test it calibrated_presets` (do not edit).
pub fn fits() -> &'static [Fit] {
    static FITS: OnceLock<Vec<Fit>> = OnceLock::new();
    FITS.get_or_init(|| match serde_json::from_str(include_str!("latency_fits.json")) {
        Ok(fits) => fits,
        Err(e) => unreachable!("the generated latency_fits.json reads: {e}"),
    })
}

/// Models whose own data, if any, do not identify a fit, and the well-measured model whose
/// fit they use: the nearest sibling of the same family (same serving tier), a named
/// assumption that `models` and every output using it state. It is each preset row's
/// `latency_from` (`presets.toml`): OpenAI and Gemini presets name a Claude model of a similar
/// tier (docs/providers.md).
pub fn borrowed() -> impl Iterator<Item = (&'static str, &'static str)> {
    /// A row of `presets.toml`, read for its `latency_from` only (the rest is `presets`').
    #[derive(Deserialize)]
    struct Row {
        latency_from: Option<String>,
    }
    #[derive(Deserialize)]
    struct Table {
        models: std::collections::BTreeMap<String, Row>,
    }
    static ROWS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    let rows = ROWS.get_or_init(|| {
        let table: Table = match toml::from_str(include_str!("presets.toml")) {
            Ok(t) => t,
            Err(e) => unreachable!("the embedded presets.toml reads: {e}"),
        };
        table.models.into_iter().filter_map(|(m, r)| Some((m, r.latency_from?))).collect()
    });
    rows.iter().map(|(m, from)| (m.as_str(), from.as_str()))
}

/// The fit a model preset uses, and where it comes from: its own data, or a sibling's when it
/// has none or its own is not identified.
pub fn fit_for(model: &str) -> Option<(&'static Fit, String)> {
    let model = crate::config::preset_for_api_id(model)?;
    let own = fits().iter().find(|f| f.fitted_on == model);
    let sibling = borrowed().find(|(m, _)| *m == model).map(|(_, from)| from);
    let (fit, borrowed) = match (own, sibling) {
        (Some(f), _) if f.identified => (f, false),
        (_, Some(from)) => (fits().iter().find(|f| f.fitted_on == from)?, true),
        (Some(f), None) => (f, false),
        (None, None) => return None,
    };
    let source = match (borrowed, own) {
        (false, _) => {
            format!("fit to {} measured requests of {model} (data/claude-code-ttft)", fit.requests)
        }
        (true, Some(o)) => format!(
            "{model}'s own {} measured requests in {} sessions do not identify a fit: borrows \
             the fit of {} ({} requests)",
            o.requests, o.sessions, fit.fitted_on, fit.requests
        ),
        (true, None) => format!(
            "no measurements of {model}: borrows the fit of {} ({} requests)",
            fit.fitted_on, fit.requests
        ),
    };
    Some((fit, source))
}

/// The latency parameters of `model` under `preset`. Every preset model has one. `draw`:
/// the calibration's k-th bootstrap refit instead of the point fit (`None` past the last, or
/// under `launch-2024`, which has no calibration).
pub fn params(model: &str, preset: LatencyPreset) -> Option<LatencyParams> {
    params_draw(model, preset, None)
}

/// `params` at the calibration's `draw`-th bootstrap refit (`None`: the point fit).
pub fn params_draw(
    model: &str,
    preset: LatencyPreset,
    draw: Option<usize>,
) -> Option<LatencyParams> {
    match preset {
        LatencyPreset::Launch2024 => draw.is_none().then(LatencyParams::default),
        LatencyPreset::Calibrated => {
            let (fit, _) = fit_for(model)?;
            let (overhead, prefill, cached, attention) = match draw {
                None => (fit.overhead, Some(fit.prefill_rate), fit.cached_rate, fit.attention_rate),
                Some(k) => {
                    let d = fit.draws.get(k)?;
                    (d.overhead, d.prefill_rate, d.cached_rate, d.attention_rate)
                }
            };
            Some(LatencyParams {
                overhead_us: overhead.dist(),
                prefill_rate: Dist::Const(prefill.unwrap_or(f64::INFINITY)),
                cached_rate: Dist::Const(cached.unwrap_or(f64::INFINITY)),
                decode_rate: Dist::Const(fit.decode_rate.unwrap_or(DECODE_RATE_FALLBACK)),
                ready_delay_us: Dist::Const(0.0),
                attention_rate: Dist::Const(attention.unwrap_or(f64::INFINITY)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_preset_has_calibrated_latency() {
        for name in crate::config::preset_names() {
            let (fit, source) = fit_for(name).unwrap_or_else(|| panic!("{name}"));
            assert!(fit.overhead_s > 0.0 && fit.prefill_rate > 0.0, "{name}");
            assert!(!source.is_empty());
            let p = params(name, LatencyPreset::Calibrated).unwrap();
            assert!(matches!(p.overhead_us, Dist::Spliced(ref s) if s.body.len() == 19));
            for k in 0..fit.draws.len() {
                assert!(params_draw(name, LatencyPreset::Calibrated, Some(k)).is_some());
            }
            assert!(params_draw(name, LatencyPreset::Calibrated, Some(fit.draws.len())).is_none());
        }
    }

    #[test]
    fn overheads_are_centred_on_the_median_fixed_part() {
        for fit in fits() {
            // A median regression leaves half the residuals on each side of 0: the overhead's
            // median is the fixed part (to the quantiles' 1 ms rounding).
            let median = fit.overhead.quantile_s(0.5);
            assert!((median - fit.overhead_s).abs() < 2e-3, "{}: {median}", fit.fitted_on);
        }
    }

    #[test]
    fn a_fit_that_is_not_identified_is_no_default() {
        for fit in fits().iter().filter(|f| !f.identified) {
            let (used, source) = fit_for(&fit.fitted_on).unwrap();
            assert_ne!(used.fitted_on, fit.fitted_on, "{source}");
            assert!(used.identified && source.contains("do not identify"), "{source}");
        }
        for (model, from) in borrowed() {
            let (used, _) = fit_for(model).unwrap();
            assert!(used.identified && used.fitted_on == from, "{model}");
        }
    }

    #[test]
    fn api_ids_name_the_same_latency() {
        let a = params("claude-sonnet-4-5-20250929", LatencyPreset::Calibrated);
        assert_eq!(a, params("claude-sonnet-4.5", LatencyPreset::Calibrated));
        assert!(a.is_some());
    }
}
