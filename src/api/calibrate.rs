//! `calibrate_files`: the latency model fitted per model from measured requests, as typed
//! values.

use std::path::PathBuf;

use super::error::Error;
use crate::calibrate;
use crate::replay::TraceError;

/// One model's fitted latency: seconds and tokens per second (`None`: not identifiable from
/// the data, e.g. no cache reads for `cached_rate`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyFit {
    /// The model id as the input spells it.
    pub model: String,
    /// Requests with a measured time to first token (the fit's rows).
    pub requests: usize,
    /// Fixed time before the first token, seconds.
    pub overhead_s: f64,
    /// Uncached and cache-write input tokens prefilled per second.
    pub prefill_rate: Option<f64>,
    /// Cache-read input tokens per second.
    pub cached_rate: Option<f64>,
    /// Output tokens per second after the first.
    pub decode_rate: Option<f64>,
    /// Median absolute error of the fitted TTFT, seconds.
    pub median_abs_error_s: f64,
}

/// Fit the latency model per model from measured requests (claude-code traces, usage logs,
/// OTLP exports; the format of each input is guessed). Models with too little data are left
/// out; none left is an error.
pub fn calibrate_files(
    inputs: &[PathBuf],
    settings: &calibrate::Settings,
) -> Result<Vec<LatencyFit>, Error> {
    let mut data = calibrate::Observations::default();
    for input in inputs {
        calibrate::read(input, None, &mut data)?;
    }
    let cal = calibrate::calibrate(&data, settings);
    if cal.models.is_empty() {
        let why: Vec<String> =
            cal.skipped.iter().map(|s| format!("{}: {}", s.model, s.reason)).collect();
        let what = inputs.first().map_or(PathBuf::new(), |p| p.clone());
        let why = format!("no model has enough data to fit ({})", why.join("; "));
        return Err(Error::Calibrate(TraceError::file(&what, why).into()));
    }
    Ok(cal
        .models
        .iter()
        .map(|m| LatencyFit {
            model: m.model.clone(),
            requests: m.requests,
            overhead_s: m.overhead_s,
            prefill_rate: m.prefill_rate,
            cached_rate: m.cached_rate,
            decode_rate: m.decode_rate,
            median_abs_error_s: m.median_abs_error_s,
        })
        .collect())
}
