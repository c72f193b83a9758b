//! Arguments that `run`, `sweep` and `tune` share (flattened into each): the overrides of an
//! experiment file. A command that words a flag's help its own way says so with `mut_arg`.

use std::path::PathBuf;

use super::Error;

/// `--set KEY=VALUE`... and `--latency FILE`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct Overrides {
    /// Override a dotted key of the file, e.g. `--set workload.agents=16` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A calibration file (`prefixsim calibrate --out DIR` writes DIR/latency.toml): the
    /// latency of the experiment's model; the same as `--set latency.from=FILE`.
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
}

impl Overrides {
    /// The `--set` assignments, then `--latency FILE` as the `latency.from=...` it stands for
    /// (made absolute, because `latency.from` is otherwise relative to the experiment file's
    /// directory).
    pub fn assignments(&self) -> Result<Vec<String>, Error> {
        let mut out = self.set.clone();
        if let Some(file) = &self.latency {
            let abs = std::path::absolute(file)
                .map_err(|e| Error::usage(anyhow::anyhow!("--latency {}: {e}", file.display())))?;
            let value = toml::Value::String(abs.display().to_string());
            out.push(format!("latency.from={value}"));
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
        out
    }
}
