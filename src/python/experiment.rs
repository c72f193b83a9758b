//! `prefixsim._native.Experiment`: an experiment file read, its keys set as `--set` sets them
//! (the same checks and messages), run into a `RunResult`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::run::PyRunResult;
use super::{input, to_py, value, wait};
use crate::api::{Experiment, RunOptions};

/// A resolved experiment: every key checked.
#[pyclass(name = "Experiment", module = "prefixsim._native", from_py_object)]
#[derive(Clone)]
pub(crate) struct PyExperiment {
    pub exp: Experiment,
}

#[pymethods]
impl PyExperiment {
    /// An experiment file's text; `origin` names it in errors.
    #[staticmethod]
    #[pyo3(signature = (text, origin = "<experiment>"))]
    fn from_text(text: &str, origin: &str) -> PyResult<PyExperiment> {
        let exp = Experiment::from_text(text, origin, &[]).map_err(to_py)?;
        Ok(PyExperiment { exp })
    }

    /// An experiment file; errors name it.
    #[staticmethod]
    fn from_file(path: PathBuf) -> PyResult<PyExperiment> {
        Ok(PyExperiment { exp: Experiment::from_file(&path).map_err(to_py)? })
    }

    /// The embedded default experiment (what `prefixsim` with no command runs).
    #[staticmethod]
    fn default_experiment() -> PyExperiment {
        PyExperiment { exp: Experiment::default_experiment() }
    }

    /// A dict of the file's tables and keys (`{"workload": {"agents": 8}}`); a `sweep` dict
    /// keeps its axes in the dict's order.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<PyExperiment> {
        let text = dict_text(d)?;
        let exp = Experiment::from_text(&text, "<dict>", &[]).map_err(to_py)?;
        Ok(PyExperiment { exp })
    }

    /// Set the dotted `key` to `value`, as `--set key=value` does (its checks and messages).
    fn set(&mut self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = value::to_toml(value, key)?;
        self.set_assignment(&format!("{key}={v}"))
    }

    /// Apply one `--set` assignment as the command line writes it: `workload.agents=16`.
    fn set_assignment(&mut self, assignment: &str) -> PyResult<()> {
        self.exp = self.exp.clone().set(assignment).map_err(to_py)?;
        Ok(())
    }

    /// The experiment's table (after every `set`) as TOML text, its `[sweep]` axes in their
    /// order.
    fn to_toml(&self) -> PyResult<String> {
        let order = crate::sweep::spec::key_order(self.exp.text());
        toml_text(self.exp.table().clone(), &order)
    }

    /// The experiment's table (after every `set`) as a dict: the values as written.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        value::table_to_py(py, self.exp.table())
    }

    /// Where the experiment came from (a path, `<experiment>`, `<dict>` or the default's).
    #[getter]
    fn origin(&self) -> String {
        self.exp.origin().to_string()
    }

    #[getter]
    fn name(&self) -> String {
        self.exp.config().name.clone()
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.exp.config().seed
    }

    #[getter]
    fn replications(&self) -> u32 {
        self.exp.config().replications
    }

    /// The strategies' labels, in the experiment's order.
    #[getter]
    fn strategies(&self) -> Vec<String> {
        self.exp.config().strategies.iter().map(crate::config::strategy_label).collect()
    }

    /// Every replication of every strategy (`prefixsim run`), with the hold answer when `hold`
    /// and the experiment asks for it; `progress(done, total)` is called as replications end.
    #[pyo3(signature = (jobs = None, hold = true, force = false, progress = None))]
    fn run(
        &self,
        py: Python<'_>,
        jobs: Option<usize>,
        hold: bool,
        force: bool,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyRunResult> {
        let exp = self.exp.clone();
        let opts = RunOptions { jobs, hold, force, ..RunOptions::default() };
        let waited = wait::blocking(py, progress.as_ref(), move || {
            let ran = exp.execute(&opts);
            (exp, ran)
        })?;
        let (exp, ran) = waited.value;
        if let Some(e) = waited.interrupted {
            return Err(e);
        }
        Ok(PyRunResult::new(exp, ran.map_err(to_py)?))
    }

    fn __copy__(&self) -> PyExperiment {
        self.clone()
    }

    fn __repr__(&self) -> String {
        let c = self.exp.config();
        format!(
            "Experiment({:?}: {} strategies, {} replications, seed {}, from {})",
            c.name,
            c.strategies.len(),
            c.replications,
            c.seed,
            self.exp.origin()
        )
    }
}

/// The TOML text of an experiment dict, its `sweep` axes in the dict's order.
fn dict_text(d: &Bound<'_, PyDict>) -> PyResult<String> {
    let toml::Value::Table(table) = value::to_toml(d.as_any(), "experiment")? else {
        unreachable!("a dict is a table")
    };
    let sweep = d.get_item("sweep")?;
    let axes: Vec<String> = match sweep.as_ref().and_then(|s| s.cast::<PyDict>().ok()) {
        Some(s) => s.keys().iter().map(|k| k.extract()).collect::<PyResult<_>>()?,
        None => Vec::new(),
    };
    toml_text(table, &axes)
}

/// `table` as TOML text: its tables as the `toml` crate writes them (keys sorted), then its
/// `sweep` table by hand, the axes of `order` first and in that order (the first varies
/// slowest), any other after them.
fn toml_text(mut table: toml::Table, order: &[String]) -> PyResult<String> {
    let sweep = table.remove("sweep");
    let mut text = toml::to_string(&table).map_err(|e| input(format!("experiment: {e}")))?;
    if let Some(other) = sweep.as_ref().filter(|s| !s.is_table()) {
        return Err(input(format!("sweep: expected a table of axes, got {other}")));
    }
    if let Some(toml::Value::Table(sweep)) = sweep {
        text.push_str("\n[sweep]\n");
        let first = order.iter().filter(|k| sweep.contains_key(*k));
        let rest = sweep.keys().filter(|k| !order.contains(k));
        for key in first.chain(rest) {
            let quoted = toml::Value::String(key.clone());
            text.push_str(&format!("{quoted} = {}\n", sweep[key]));
        }
    }
    Ok(text)
}
