//! Latency presets per model: the parameters of `model::latency`'s model for each model preset,
//! fitted to measured times to first token, plus the 2024 launch figures as a named
//! alternative.
//!
//! `calibrated` (the default): fitted by `prefixsim calibrate data/claude-code-ttft` (real
//! Claude Code sessions of 2025 whose requests carry a measured TTFT; docs/calibrate.md has the
//! method, the intervals and the command that reproduces every number here, and a test checks
//! this table against a fresh fit). The overhead is a distribution: the fitted fixed part plus
//! the fit's residual quantiles, so simulated TTFTs are as spread as measured ones. A model
//! without data borrows the fit of its nearest measured sibling and says so (`source`).
//!
//! `launch-2024`: 500 ms + 9,100 tok/s uncached, 51,500 tok/s cached, the fit to Anthropic's
//! prompt-caching launch post of August 2024 (Claude 3.5 Sonnet; see `model::latency`).

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
        match s {
            "calibrated" => Some(LatencyPreset::Calibrated),
            "launch-2024" => Some(LatencyPreset::Launch2024),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LatencyPreset::Calibrated => "calibrated",
            LatencyPreset::Launch2024 => "launch-2024",
        }
    }
}

/// One fitted model. Rates in tokens per second; times in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The model preset the fit was made on.
    pub fitted_on: &'static str,
    /// Requests with a measured TTFT behind the fit.
    pub requests: u32,
    /// Median fixed part of the TTFT (the median of `overhead_quantiles_s`).
    pub overhead_s: f64,
    /// The fixed part plus the fit's residual quantiles (2.5%, 7.5%, ..., 97.5%), clamped at 0.
    pub overhead_quantiles_s: [f64; 20],
    pub prefill_rate: f64,
    /// `None`: the data cannot identify it (see `CACHED_RATE_FALLBACK`).
    pub cached_rate: Option<f64>,
    /// `None`: the data cannot identify it (see `DECODE_RATE_FALLBACK`).
    pub decode_rate: Option<f64>,
}

/// What a model without its own cached-read rate uses (a named assumption): the rate of the
/// two well-measured fits that identify one, Sonnet 4 (147,009 tok/s) and Sonnet 4.5 (144,893).
/// Where it is not identifiable (Opus 4.5, Haiku 4.5), reading cached tokens is too fast to
/// separate from the fixed part, so a fast rate is the consistent choice.
pub const CACHED_RATE_FALLBACK: f64 = 145_000.0;
/// Output tokens per second where no duration was measured.
pub const DECODE_RATE_FALLBACK: f64 = 50.0;

include!("latency_fits.rs");

/// The fit a model preset uses, and where it comes from: its own data, or a sibling's.
pub fn fit_for(model: &str) -> Option<(&'static Fit, String)> {
    let model = crate::cache::preset_for_api_id(model)?;
    let (fitted_on, borrowed) = match BORROWED.iter().find(|(m, _)| *m == model) {
        Some((_, from)) => (*from, true),
        // OpenAI and Gemini presets: a Claude model of a similar tier (docs/providers.md).
        None => crate::config::presets_hosted::latency_sibling(model)
            .map_or((model, false), |from| (from, true)),
    };
    let fit = FITS.iter().find(|f| f.fitted_on == fitted_on)?;
    let source = if borrowed {
        format!(
            "no measurements of {model}: borrows the fit of {fitted_on} ({} requests)",
            fit.requests
        )
    } else {
        format!("fit to {} measured requests of {model} (data/claude-code-ttft)", fit.requests)
    };
    Some((fit, source))
}

/// The latency parameters of `model` under `preset`. Every preset model has one.
pub fn params(model: &str, preset: LatencyPreset) -> Option<LatencyParams> {
    match preset {
        LatencyPreset::Launch2024 => Some(LatencyParams::default()),
        LatencyPreset::Calibrated => {
            let (fit, _) = fit_for(model)?;
            let quantiles_us = fit.overhead_quantiles_s.iter().map(|s| (s * 1e6).round()).collect();
            Some(LatencyParams {
                overhead_us: Dist::Empirical(quantiles_us),
                prefill_rate: Dist::Const(fit.prefill_rate),
                cached_rate: Dist::Const(fit.cached_rate.unwrap_or(CACHED_RATE_FALLBACK)),
                decode_rate: Dist::Const(fit.decode_rate.unwrap_or(DECODE_RATE_FALLBACK)),
                ready_delay_us: Dist::Const(0.0),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_preset_has_calibrated_latency() {
        for name in crate::cache::preset_names() {
            let (fit, source) = fit_for(name).unwrap_or_else(|| panic!("{name}"));
            assert!(fit.overhead_s > 0.0 && fit.prefill_rate > 0.0, "{name}");
            assert!(!source.is_empty());
            let p = params(name, LatencyPreset::Calibrated).unwrap();
            assert!(matches!(p.overhead_us, Dist::Empirical(ref v) if v.len() == 20));
        }
    }

    #[test]
    fn overhead_quantiles_are_sorted_and_centred_on_the_median() {
        for fit in FITS {
            let q = fit.overhead_quantiles_s;
            assert!(q.windows(2).all(|w| w[0] <= w[1]), "{}", fit.fitted_on);
            assert!(q[0] >= 0.0);
            // The 47.5% and 52.5% quantiles bracket the median fixed part (to the
            // quantiles' 1 ms rounding).
            let (lo, hi) = (q[9] - 1e-3, q[10] + 1e-3);
            assert!(lo <= fit.overhead_s && fit.overhead_s <= hi, "{}", fit.fitted_on);
        }
    }

    #[test]
    fn api_ids_name_the_same_latency() {
        let a = params("claude-sonnet-4-5-20250929", LatencyPreset::Calibrated);
        assert_eq!(a, params("claude-sonnet-4.5", LatencyPreset::Calibrated));
        assert!(a.is_some());
    }
}
