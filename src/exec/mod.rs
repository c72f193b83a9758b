//! Execution: the one `Runner` trait (what exec needs of a simulator: resolve a table,
//! run one replication of one strategy) and the one executor (`ordered`) behind `run`,
//! `sweep` and `tune`. A run is a sweep with no axes: every replication of every strategy of
//! one experiment, a replication's strategies simulated back to back on one worker and each
//! strategy's replications folded in order (`run::execute`); a sweep point is the same per
//! point (`crate::sweep::point`); a tune candidate is one strategy's run.
//!
//! Knows nothing of caches or agents: `ModelRunner` plugs the model in, tests plug in fakes.

pub mod model;
pub mod ordered;
pub mod run;
pub mod watch;

pub use model::ModelRunner;
pub use ordered::ordered;
pub use run::{execute, trace_rows, write_out, StrategyOutcome};
pub use watch::Watch;

use crate::limits::RunError;
use crate::metrics::RunMetrics;
use crate::results::TraceRow;

/// What the executor needs to know of a resolved experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    pub name: String,
    pub question: String,
    pub seed: u64,
    pub replications: u32,
    /// Strategy labels, in the experiment's order.
    pub strategies: Vec<String>,
}

/// Why an experiment table does not resolve: the message names the key and the value.
/// (Resolving tables is a sweep's and a tune's: a run's experiment is resolved already.)
#[cfg_attr(not(feature = "sweep"), allow(dead_code))]
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Refused by a runner's own resolver (the test fakes).
    #[cfg_attr(not(test), allow(dead_code))]
    #[error("{0}")]
    Refused(String),
}

/// A point runner: resolve a table into an experiment, and simulate one replication of one of
/// its strategies. Must be deterministic in (table, strategy, replication).
#[cfg_attr(not(feature = "sweep"), allow(dead_code))]
pub trait Runner: Send + Sync {
    type Exp: Send + Sync;
    /// Resolve and validate; the error names the key and the value.
    fn resolve(&self, table: &toml::Table) -> Result<Self::Exp, ResolveError>;
    /// Whether `table` resolves, where `table` is a table that resolved as `base` with the
    /// dotted keys `changed` set: the same answer and error as `resolve`, which a simulator may
    /// reach for less by reusing what the changed keys cannot affect (a sweep checks every
    /// value of every axis this way).
    fn check_changed(
        &self,
        base: &Self::Exp,
        table: &toml::Table,
        changed: &[&str],
    ) -> Result<(), ResolveError> {
        let _ = (base, changed);
        self.resolve(table).map(drop)
    }
    fn describe(&self, exp: &Self::Exp) -> Description;
    /// The resolved experiment as canonical TOML (hashed into the manifest).
    fn render(&self, exp: &Self::Exp) -> String;
    /// Run replication `rep` of strategy number `strategy` into `out` (reset by the callee);
    /// a failure says whether the experiment's values caused it (`RunError::Input`).
    fn simulate_into(
        &self,
        exp: &Self::Exp,
        strategy: usize,
        rep: u32,
        out: &mut RunMetrics,
    ) -> Result<(), RunError>;
    /// Replication 0 of strategy number `strategy` with every agent's segments, as
    /// `trace.csv` rows. A simulator that records no segments says so.
    fn trace(&self, exp: &Self::Exp, strategy: usize) -> Result<Vec<TraceRow>, RunError> {
        let _ = (exp, strategy);
        Err(RunError::Internal("this simulator records no trace".into()))
    }
}

/// Threads to use when the caller does not say: all cores.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
