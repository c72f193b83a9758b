//! Python values as TOML values and back: what `Experiment.set`, `from_dict` and a sweep's
//! axes take (bool, int, float, str, lists and dicts of them, numpy scalars and arrays), and
//! what `Experiment.to_dict` gives.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};

use super::input;

/// `v` as a TOML value; `what` names it in the error (the key it is for).
pub(crate) fn to_toml(v: &Bound<'_, PyAny>, what: &str) -> PyResult<toml::Value> {
    use toml::Value;
    if v.is_instance_of::<PyBool>() {
        return Ok(Value::Boolean(v.extract()?));
    }
    if v.get_type().name()?.to_cow()?.starts_with("bool") {
        // numpy.bool_ (and numpy.bool), which is no int: before the ints.
        if let Ok(b) = v.extract::<bool>() {
            return Ok(Value::Boolean(b));
        }
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Value::String(v.extract()?));
    }
    if let Ok(dict) = v.cast::<PyDict>() {
        let mut table = toml::Table::new();
        for (k, x) in dict.iter() {
            let key: String =
                k.extract().map_err(|_| input(format!("{what}: a key is not a str")))?;
            let inner = format!("{what}.{key}");
            table.insert(key, to_toml(&x, &inner)?);
        }
        return Ok(Value::Table(table));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Value::Integer(i));
    }
    if let Ok(x) = v.extract::<f64>() {
        return Ok(Value::Float(x));
    }
    if let Ok(items) = v.try_iter() {
        let values: PyResult<Vec<Value>> = items.map(|x| to_toml(&x?, what)).collect();
        return Ok(Value::Array(values?));
    }
    let shown = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    Err(input(format!(
        "{what}: {} is not a value an experiment holds (bool, int, float, str, or a list or \
         dict of them)",
        crate::config::capped(&shown)
    )))
}

/// `v` as a Python value (tables as dicts, in their order).
pub(crate) fn to_py<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    use toml::Value;
    Ok(match v {
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(x) => x.into_pyobject(py)?.into_any(),
        Value::Boolean(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any(),
        Value::Array(a) => {
            let items: PyResult<Vec<Bound<'py, PyAny>>> = a.iter().map(|x| to_py(py, x)).collect();
            PyList::new(py, items?)?.into_any()
        }
        Value::Table(t) => table_to_py(py, t)?.into_any(),
    })
}

pub(crate) fn table_to_py<'py>(py: Python<'py>, t: &toml::Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, x) in t {
        d.set_item(k, to_py(py, x)?)?;
    }
    Ok(d)
}
