//! The module's functions over measured data: `replay` (a trace through the cache, as
//! `prefixsim replay`), `calibrate` (the latency fit, as `prefixsim calibrate`) and `models`
//! (the presets and a file's models, as `prefixsim models --json`).

use std::path::PathBuf;

use pyo3::prelude::*;

use super::{to_py, wait};
use crate::api::{self, CalibrateRequest, Error, ReplayRequest};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    Ok(())
}

/// Replay `trace` as `prefixsim replay` does (with `what_if` choices, the TTL ladder too; with
/// `out`, replay.json there). Returns (the `--json` document, the table, the warnings).
#[pyfunction]
#[pyo3(signature = (trace, what_if = Vec::new(), format = None, sets = Vec::new(),
    lenient = false, instant_ready = false, out = None, force = false))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    trace: PathBuf,
    what_if: Vec<String>,
    format: Option<String>,
    sets: Vec<String>,
    lenient: bool,
    instant_ready: bool,
    out: Option<PathBuf>,
    force: bool,
) -> PyResult<(String, String, Vec<String>)> {
    let req = ReplayRequest { trace, format, sets, what_if, lenient, instant_ready, out, force };
    let waited = wait::blocking(py, None, move || api::replay_command(&req))?;
    let done = waited.or_interrupted()?.map_err(to_py)?;
    Ok((done.json, done.text, done.warnings))
}

/// What `calibrate` returns: the `--json` document, the text, latency.toml, the notes and the
/// warnings.
type Calibrated = (String, String, String, Vec<String>, Vec<String>);

/// Fit the latency model to `inputs` as `prefixsim calibrate` does (backtested on `validate`;
/// with `out`, its files there). Returns (the `--json` document, the text, latency.toml, the
/// notes, the warnings).
#[pyfunction]
#[pyo3(signature = (inputs, validate = Vec::new(), format = None, validate_format = None,
    ttl = "5m", out = None, force = false))]
#[allow(clippy::too_many_arguments)]
fn calibrate(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    validate: Vec<PathBuf>,
    format: Option<String>,
    validate_format: Option<String>,
    ttl: &str,
    out: Option<PathBuf>,
    force: bool,
) -> PyResult<Calibrated> {
    let ttl_us = api::parse_ttl(ttl).map_err(|e| to_py(prefixed("ttl", e)))?;
    let req = CalibrateRequest { inputs, format, ttl_us, validate, validate_format, out, force };
    let waited = wait::blocking(py, None, move || api::calibrate_command(&req))?;
    let d = waited.or_interrupted()?.map_err(to_py)?;
    Ok((d.json, d.text, d.latency_toml, d.notes, d.warnings))
}

/// `prefixsim models --json`: the presets, then the models `models_file` defines.
#[pyfunction]
#[pyo3(signature = (models_file = None))]
fn models(models_file: Option<PathBuf>) -> PyResult<String> {
    let rows = api::model_rows(models_file.as_deref()).map_err(to_py)?;
    Ok(api::models_json(&rows))
}

/// `e` with the argument it is about in front (`ttl: a TTL must be positive`).
fn prefixed(what: &str, e: Error) -> Error {
    Error::Usage(format!("{what}: {e}"))
}
