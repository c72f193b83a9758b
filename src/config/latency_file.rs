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

use super::dist_syntax::{parse_dist_in, DistError};
use crate::config::LatencyParams;
use crate::dist::{Dist, Quantity};

/// A parsed calibration file.
#[derive(Debug, PartialEq)]
pub struct LatencyFile {
    tables: toml::Table,
    /// `empirical(file=...)` paths are relative to the file's directory.
    dir: Option<std::path::PathBuf>,
}

const KEYS: [(&str, Quantity); 6] = [
    ("overhead", Quantity::Duration),
    ("prefill_rate", Quantity::Rate),
    ("cached_rate", Quantity::Rate),
    ("decode_rate", Quantity::Rate),
    ("ready_delay", Quantity::Duration),
    ("attention_rate", Quantity::Rate),
];

/// Why a calibration file, or its table for a model, was refused (the caller names the file).
#[derive(Debug, thiserror::Error)]
pub enum LatencyFileError {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    /// The TOML parser's message, trailing newline trimmed.
    #[error("{0}")]
    Toml(String),
    #[error("unknown key `{0}` (a calibration file has only [latency.\"MODEL\"] tables)")]
    UnknownTop(String),
    #[error("no [latency.\"MODEL\"] table")]
    NoTable,
    #[error("`latency.{0}` is not a table")]
    NotATable(String),
    #[error("no table for model `{model}` (the file has: {have})")]
    NoModel { model: String, have: String },
    #[error("unknown key `latency.\"{table}\".{key}` (known: {known})")]
    UnknownKey { table: String, key: String, known: String },
    #[error("`latency.\"{table}\".{key}` = {value}: expected a distribution string")]
    NotAString { table: String, key: String, value: String },
    #[error("`latency.\"{table}\".{key}` = \"{text}\": {source}")]
    Dist { table: String, key: String, text: String, source: Box<DistError> },
    #[error("`latency.\"{table}\".{key}` = \"{text}\": a rate must be positive")]
    NotPositive { table: String, key: String, text: String },
}

/// The largest latency file read: 16 MiB (`input::MAX_FILE_ENV` replaces it), as an experiment
/// file; `calibrate` writes a few KiB.
pub const MAX_LATENCY_FILE_BYTES: u64 = 16 << 20;

impl LatencyFile {
    /// Read and check the shape of `path` (a `[latency."MODEL"]` table per model).
    pub fn read(path: &Path) -> Result<Self, LatencyFileError> {
        let what = "a latency file";
        let text = crate::input::read_capped_text(path, MAX_LATENCY_FILE_BYTES, what)
            .map_err(LatencyFileError::Read)?;
        let mut top: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            LatencyFileError::Toml(super::error::toml_syntax(&e, &text))
        })?;
        if let Some(k) = top.keys().find(|k| *k != "latency") {
            return Err(LatencyFileError::UnknownTop(k.clone()));
        }
        let tables = match top.remove("latency") {
            Some(toml::Value::Table(t)) if !t.is_empty() => t,
            _ => return Err(LatencyFileError::NoTable),
        };
        if let Some((model, _)) = tables.iter().find(|(_, t)| !t.is_table()) {
            return Err(LatencyFileError::NotATable(model.clone()));
        }
        Ok(LatencyFile { tables, dir: path.parent().map(Path::to_path_buf) })
    }

    /// The parameters for `model` (a preset name): the file's table over `base`.
    pub fn params_for(
        &self,
        model: &str,
        base: LatencyParams,
    ) -> Result<LatencyParams, LatencyFileError> {
        let found = self.tables.iter().find(|(k, _)| {
            k.as_str() == model || super::presets::preset_for_api_id(k) == Some(model)
        });
        let Some((key, toml::Value::Table(table))) = found else {
            let have: Vec<&str> = self.tables.keys().map(String::as_str).collect();
            let (model, have) = (model.to_string(), have.join(", "));
            return Err(LatencyFileError::NoModel { model, have });
        };
        let mut p = base;
        for (name, value) in table {
            let (table, key) = (key.clone(), name.clone());
            let Some(&(_, q)) = KEYS.iter().find(|(k, _)| k == name) else {
                let known: Vec<&str> = KEYS.iter().map(|k| k.0).collect();
                return Err(LatencyFileError::UnknownKey { table, key, known: known.join(", ") });
            };
            let Some(text) = value.as_str() else {
                return Err(LatencyFileError::NotAString { table, key, value: value.to_string() });
            };
            let d = match parse_dist_in(text, q, self.dir.as_deref()) {
                Ok(d) => d,
                Err(source) => {
                    let text = text.to_string();
                    return Err(LatencyFileError::Dist {
                        table,
                        key,
                        text,
                        source: Box::new(source),
                    });
                }
            };
            if q == Quantity::Number && matches!(d, Dist::Const(x) if x <= 0.0) {
                let text = text.to_string();
                return Err(LatencyFileError::NotPositive { table, key, text });
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
        "attention_rate" => &mut p.attention_rate,
        _ => &mut p.ready_delay_us,
    }
}
