//! `Experiment`: an experiment file read, its `--set` assignments applied and every key
//! resolved, ready to run (`run.rs`), sweep (`sweep.rs`) or tune (`tune.rs`).

use std::path::Path;

use super::error::Error;
use crate::config::{self, ConfigError};

/// A resolved experiment: every key checked, ready to run.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub(super) origin: String,
    /// The file's text: a sweep keeps its axes in the order written.
    #[cfg_attr(not(feature = "sweep"), allow(dead_code))]
    pub(super) text: String,
    pub(super) table: toml::Table,
    pub(super) resolved: config::ExperimentSpec,
}

impl Experiment {
    /// Parse and resolve an experiment file's text (docs/experiments.md).
    pub fn from_toml(text: &str) -> Result<Experiment, Error> {
        Experiment::from_text(text, "<experiment>", &[])
    }

    /// Read and resolve an experiment file; errors name the file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Experiment, Error> {
        Experiment::load(path.as_ref(), &[])
    }

    /// The embedded default experiment (what `prefixsim` with no command runs).
    pub fn default_experiment() -> Experiment {
        Experiment::from_text(config::DEFAULT_EXPERIMENT, config::DEFAULT_ORIGIN, &[])
            .expect("the embedded default experiment resolves")
    }

    /// Read `path` and apply `sets` (`--set` assignments) before resolving: an error about a
    /// key a `--set` assigned names that `--set`.
    pub(crate) fn load(path: &Path, sets: &[String]) -> Result<Experiment, Error> {
        let origin = path.display().to_string();
        let text = config::read_experiment(path)
            .map_err(|source| ConfigError::Io { path: origin.clone(), source })?;
        Experiment::from_text(&text, &origin, sets)
    }

    /// As `load`, with `--seed` too (a `seed=` assignment after the others).
    #[cfg(feature = "cli")]
    pub(crate) fn load_seeded(
        path: &Path,
        sets: &[String],
        seed: Option<u64>,
    ) -> Result<Experiment, Error> {
        let mut sets = sets.to_vec();
        if let Some(seed) = seed {
            if i64::try_from(seed).is_err() {
                return Err(Error::Usage(format!("--seed {seed}: seeds are at most {}", i64::MAX)));
            }
            sets.push(format!("seed={seed}"));
        }
        Experiment::load(path, &sets)
    }

    /// The text of `file` and its table with `sets` applied, unresolved (a sweep and a tune
    /// resolve each point and candidate apart).
    #[cfg(feature = "sweep")]
    pub(super) fn read_table(file: &Path, sets: &[String]) -> Result<(String, toml::Table), Error> {
        let origin = file.display().to_string();
        let text = config::read_experiment(file)
            .map_err(|e| Error::Usage(format!("cannot read {origin}: {e}")))?;
        let mut table = config::parse_table(&text, &origin)?;
        for s in sets {
            config::apply_set(&mut table, s)?;
        }
        Ok((text, table))
    }

    /// Parse `text` (naming it `origin` in errors) and apply `sets` before resolving.
    pub(crate) fn from_text(
        text: &str,
        origin: &str,
        sets: &[String],
    ) -> Result<Experiment, Error> {
        let mut table = config::parse_table(text, origin)?;
        for s in sets {
            config::apply_set(&mut table, s)?;
        }
        let resolved = config::resolve(&table, origin).map_err(|e| e.blame_set(sets))?;
        Ok(Experiment { origin: origin.to_string(), text: text.to_string(), table, resolved })
    }

    /// Override one dotted key, as `--set` does: `set("workload.agents=16")`.
    pub fn set(mut self, assignment: &str) -> Result<Experiment, Error> {
        config::apply_set(&mut self.table, assignment)?;
        self.resolved = config::resolve(&self.table, &self.origin)?;
        Ok(self)
    }

    /// Override dotted keys as `--set` does, all of them before resolving (so an error about
    /// a key an assignment set names that assignment, as `prefixsim run --set` says it).
    pub fn set_all(mut self, assignments: &[String]) -> Result<Experiment, Error> {
        for a in assignments {
            config::apply_set(&mut self.table, a)?;
        }
        self.resolved =
            config::resolve(&self.table, &self.origin).map_err(|e| e.blame_set(assignments))?;
        Ok(self)
    }

    /// The resolved experiment (every parameter, in base units).
    pub fn config(&self) -> &config::ExperimentSpec {
        &self.resolved
    }

    /// The raw table (after `set`): the values as written, which the resolved experiment no
    /// longer holds (a latency preset's name, the `[sweep]` table).
    #[cfg(any(all(feature = "serve", feature = "cli"), feature = "python"))]
    pub(crate) fn table(&self) -> &toml::Table {
        &self.table
    }

    /// Where the experiment came from, as errors and exported files name it.
    #[cfg(any(all(feature = "serve", feature = "cli"), feature = "python"))]
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// The text the experiment was read from (before any `set`).
    #[cfg(feature = "python")]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}
