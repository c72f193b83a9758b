//! Arguments that `run`, `sweep` and `tune` share (flattened into each): the overrides of an
//! experiment file, and the models file it may name models of. A command that words a flag's
//! help its own way says so with `mut_arg`.

use std::path::PathBuf;

use super::Error;

/// `--set KEY=VALUE`..., `--latency FILE` and `--models FILE`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct Overrides {
    /// Override a dotted key of the file, e.g. `--set workload.agents=16` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A calibration file (`prefixsim calibrate --out DIR` writes DIR/latency.toml): the
    /// latency of the experiment's model; the same as `--set latency.from=FILE`.
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// A file of model definitions (`[models."name"]` tables, docs/models.md) that `model =`
    /// may name; the same as `--set models_file=FILE`.
    #[arg(long, value_name = "FILE")]
    pub models: Option<PathBuf>,
}

impl Overrides {
    /// The `--set` assignments, then `--latency FILE` and `--models FILE` as the
    /// `latency.from=...` and `models_file=...` they stand for (made absolute, because both are
    /// otherwise relative to the experiment file's directory).
    pub fn assignments(&self) -> Result<Vec<String>, Error> {
        let mut out = self.set.clone();
        for (flag, key, file) in [
            ("--latency", "latency.from", &self.latency),
            ("--models", "models_file", &self.models),
        ] {
            let Some(file) = file else { continue };
            let abs = std::path::absolute(file)
                .map_err(|e| Error::usage(anyhow::anyhow!("{flag} {}: {e}", file.display())))?;
            let value = toml::Value::String(abs.display().to_string());
            out.push(format!("{key}={value}"));
        }
        Ok(out)
    }

    /// The overrides as the user typed them (`--latency` as given, not made absolute), for
    /// the line under a table's question.
    pub fn as_typed(&self) -> Vec<String> {
        let mut out = self.set.clone();
        if let Some(file) = &self.latency {
            out.push(format!("latency.from={}", file.display()));
        }
        if let Some(file) = &self.models {
            out.push(format!("models_file={}", file.display()));
        }
        out
    }
}
