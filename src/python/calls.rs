//! The module's functions: `sweep` and `tune` of an `Experiment`, as `prefixsim sweep` and
//! `prefixsim tune` run a file (their checks, limits and files).

use std::path::PathBuf;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::experiment::PyExperiment;
use super::{to_py, value, wait};
use crate::api::{self, Error, Sweep, TuneRequest};
use crate::sweep::{ExecOptions, SweepOptions};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    Ok(())
}

/// Run the grid of `axes` (pairs of a dotted key and its values, the first varying slowest;
/// empty: the experiment's own `[sweep]`) into `dir`, as `prefixsim sweep --out dir` does.
/// Returns what it did (`SweepSummary`'s fields); Ctrl-C raises `KeyboardInterrupt` once the
/// points running are in the journal, which `resume` continues.
#[pyfunction]
#[pyo3(signature = (experiment, axes, dir, jobs = None, resume = false, force = false,
    progress = None))]
#[allow(clippy::too_many_arguments)]
fn sweep<'py>(
    py: Python<'py>,
    experiment: &PyExperiment,
    axes: Vec<(String, Bound<'py, PyAny>)>,
    dir: PathBuf,
    jobs: Option<usize>,
    resume: bool,
    force: bool,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let exp = &experiment.exp;
    let mut table = exp.table().clone();
    let order: Vec<String> = match axes.is_empty() {
        true => crate::sweep::spec::key_order(exp.text()),
        false => {
            let mut grid = toml::Table::new();
            for (key, values) in &axes {
                grid.insert(key.clone(), value::to_toml(values, &format!("axes[{key:?}]"))?);
            }
            table.insert("sweep".into(), toml::Value::Table(grid));
            axes.iter().map(|(k, _)| k.clone()).collect()
        }
    };
    let origin = exp.origin().to_string();
    let jobs = jobs.unwrap_or_else(crate::exec::default_jobs).max(1);
    let exec = ExecOptions { jobs, progress: false, ctrl_c: false, throttle_ms: 0 };
    let opts = SweepOptions { dir, shard: None, resume, force, exec };
    let waited = wait::blocking(py, progress.as_ref(), move || {
        let sweep = Sweep::checked(origin, table, &order, force, None)?;
        api::run_sweep(&sweep, &opts)
    })?;
    let done = waited.value.map_err(to_py)?;
    match waited.interrupted {
        // Ctrl-C: say what the journal holds and how to go on.
        Some(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) && !done.complete => {
            let dir = done.dir.display();
            return Err(PyKeyboardInterrupt::new_err(format!(
                "sweep interrupted: {} of {} points are in {dir}; sweep(..., out={dir:?}, \
                 resume=True) continues it",
                done.points_done, done.points
            )));
        }
        // The progress callback's own error, or a Ctrl-C as the last point ended.
        Some(e) => return Err(e),
        None => {}
    }
    let d = PyDict::new(py);
    d.set_item("dir", done.dir)?;
    d.set_item("points", done.points)?;
    d.set_item("points_done", done.points_done)?;
    d.set_item("resumed_from", done.resumed_from)?;
    d.set_item("complete", done.complete)?;
    d.set_item("content_hash", done.content_hash)?;
    Ok(d)
}

/// Search the value of `param` that minimises `objective`, as `prefixsim tune` does (its
/// arguments, checks and limits; with `out`, tune.json). Returns (tune.json's text, the
/// table `tune` prints).
#[pyfunction]
#[pyo3(signature = (experiment, param, range = None, objective = "cost".to_string(), lam = None,
    strategy = None, refine = 2, jobs = None, out = None, force = false, progress = None))]
#[allow(clippy::too_many_arguments)]
fn tune(
    py: Python<'_>,
    experiment: &PyExperiment,
    param: String,
    range: Option<String>,
    objective: String,
    lam: Option<f64>,
    strategy: Option<String>,
    refine: u32,
    jobs: Option<usize>,
    out: Option<PathBuf>,
    force: bool,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(String, String)> {
    let exp = &experiment.exp;
    let origin = exp.origin().to_string();
    let table = exp.table().clone();
    let file = PathBuf::from(&origin);
    let req = TuneRequest {
        file,
        sets: Vec::new(),
        param,
        range,
        objective,
        lambda: lam,
        strategy,
        refine,
        jobs,
        out,
        force,
    };
    let waited = wait::blocking(py, progress.as_ref(), move || {
        let report = api::tune_table(&req, origin, table)?;
        Ok::<_, Error>((report.to_json(), report.table()))
    })?;
    waited.or_interrupted()?.map_err(to_py)
}
