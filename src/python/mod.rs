//! The Python extension module `prefixsim._native` (the `python` feature; built by maturin
//! from python/pyproject.toml): an edge like `cli`, calling `api`. It hands Python the bytes
//! the command line writes (summary.csv, runs.csv, the `--json` documents), which the
//! pure-Python package (python/prefixsim/) turns into pandas DataFrames, so the two give the
//! same numbers by construction. Every simulation runs on a thread of its own with the GIL
//! released (`wait::blocking`), which Ctrl-C stops cleanly.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use crate::api::Error;

mod calls;
mod experiment;
mod inputs;
mod run;
mod value;
mod wait;

create_exception!(
    _native,
    PrefixsimError,
    PyException,
    "A prefixsim call failed: an I/O error or a bug (the command line's exit 1)."
);
create_exception!(
    _native,
    InputError,
    PrefixsimError,
    "Bad input: a file, key or value the command line refuses with exit 2, with its message."
);

/// `e` as the Python exception the command line's exit code stands for: 2 is `InputError`.
pub(crate) fn to_py(e: Error) -> PyErr {
    match e.is_input() {
        true => InputError::new_err(e.to_string()),
        false => PrefixsimError::new_err(e.to_string()),
    }
}

/// An input error with `message` (a bad argument of a Python call).
pub(crate) fn input(message: impl Into<String>) -> PyErr {
    InputError::new_err(message.into())
}

/// The module maturin loads as `prefixsim._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PrefixsimError", py.get_type::<PrefixsimError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("LATENCY_NAMES", crate::metrics::LATENCY_NAMES.to_vec())?;
    m.add_class::<experiment::PyExperiment>()?;
    m.add_class::<run::PyRunResult>()?;
    m.add_class::<run::PyHistogram>()?;
    calls::register(m)?;
    inputs::register(m)?;
    Ok(())
}
