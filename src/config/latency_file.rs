//! Calibration files (`latency.from = "FILE"`, `--latency FILE`): the `latency.toml` that
//! `prefixsim calibrate --out DIR` writes, one table per model,
//!
//! ```toml
//! [latency."claude-sonnet-4.5"]
//! overhead = "empirical([0.93s, 1.1s, ...])"
//! prefill_rate = "const(46241)"
//! cached_rate = "const(144890)"   # absent where the data could not identify it
//! ```
//!
//! A table is found by the preset name or any API id of the experiment's model. A key the
//! table lacks keeps the value of `latency.preset`.

use std::path::Path;

use super::dist_syntax::parse_dist_in;
use crate::config::LatencyParams;
use crate::dist::{Dist, Quantity};

/// A parsed calibration file.
#[derive(Debug, PartialEq)]
pub struct LatencyFile {
    tables: toml::Table,
    /// `empirical(file=...)` paths are relative to the file's directory.
    dir: Option<std::path::PathBuf>,
}

const KEYS: [(&str, Quantity); 5] = [
    ("overhead", Quantity::Duration),
    ("prefill_rate", Quantity::Number),
    ("cached_rate", Quantity::Number),
    ("decode_rate", Quantity::Number),
    ("ready_delay", Quantity::Duration),
];

impl LatencyFile {
    /// Read and check the shape of `path` (a `[latency."MODEL"]` table per model).
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        let mut top: toml::Table =
            text.parse().map_err(|e: toml::de::Error| e.to_string().trim_end().to_string())?;
        if let Some(k) = top.keys().find(|k| *k != "latency") {
            return Err(format!(
                "unknown key `{k}` (a calibration file has only [latency.\"MODEL\"] tables)"
            ));
        }
        let tables = match top.remove("latency") {
            Some(toml::Value::Table(t)) if !t.is_empty() => t,
            _ => return Err("no [latency.\"MODEL\"] table".into()),
        };
        for (model, table) in &tables {
            if !table.is_table() {
                return Err(format!("`latency.{model}` is not a table"));
            }
        }
        Ok(LatencyFile { tables, dir: path.parent().map(Path::to_path_buf) })
    }

    /// The parameters for `model` (a preset name): the file's table over `base`.
    pub fn params_for(&self, model: &str, base: LatencyParams) -> Result<LatencyParams, String> {
        let found = self.tables.iter().find(|(k, _)| {
            k.as_str() == model || super::model_ids::preset_for_api_id(k) == Some(model)
        });
        let Some((key, toml::Value::Table(table))) = found else {
            let have: Vec<&str> = self.tables.keys().map(String::as_str).collect();
            return Err(format!(
                "no table for model `{model}` (the file has: {})",
                have.join(", ")
            ));
        };
        let mut p = base;
        for (name, value) in table {
            let Some(&(_, q)) = KEYS.iter().find(|(k, _)| k == name) else {
                let known: Vec<&str> = KEYS.iter().map(|k| k.0).collect();
                return Err(format!(
                    "unknown key `latency.\"{key}\".{name}` (known: {})",
                    known.join(", ")
                ));
            };
            let text = value.as_str().ok_or_else(|| {
                format!("`latency.\"{key}\".{name}` = {value}: expected a distribution string")
            })?;
            let d = parse_dist_in(text, q, self.dir.as_deref())
                .map_err(|e| format!("`latency.\"{key}\".{name}` = \"{text}\": {e}"))?;
            if q == Quantity::Number && matches!(d, Dist::Const(x) if x <= 0.0) {
                return Err(format!(
                    "`latency.\"{key}\".{name}` = \"{text}\": a rate must be positive"
                ));
            }
            *slot(&mut p, name) = d;
        }
        Ok(p)
    }
}

/// The field of `p` that the latency key `key` sets (`overhead`, `prefill_rate`, ...; any
/// other key is `ready_delay`, so callers check the key first).
pub(crate) fn slot<'p>(p: &'p mut LatencyParams, key: &str) -> &'p mut Dist {
    match key {
        "overhead" => &mut p.overhead_us,
        "prefill_rate" => &mut p.prefill_rate,
        "cached_rate" => &mut p.cached_rate,
        "decode_rate" => &mut p.decode_rate,
        _ => &mut p.ready_delay_us,
    }
}
