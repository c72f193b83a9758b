//! The library's entry points: an experiment read from TOML, run with options, giving typed
//! results (`RunSummary`); its `[sweep]` grid (`Sweep`) and tuning; a trace replay
//! (`TraceReplay`) and a latency calibration (`calibrate_files`). The command line is a thin
//! layer over these (it parses arguments, calls them and prints), so the library and
//! `prefixsim` give the same numbers and files, and share the checks: the limits, the output
//! directory's emptiness and lock.
//!
//! Every call fails with the one `Error`, whose cause is the failing module's typed error.

mod calibrate;
mod calibrate_command;
#[cfg(feature = "cli")]
mod check;
mod error;
mod experiment;
mod models;
pub(crate) mod outdir;
mod replay;
mod replay_command;
mod run;
#[cfg(feature = "sweep")]
mod sweep;
#[cfg(feature = "sweep")]
mod tune;

pub use calibrate::{calibrate_files, LatencyFit};
#[cfg_attr(not(feature = "cli"), allow(unused_imports))]
pub(crate) use calibrate_command::{calibrate_command, parse_ttl, CalibrateRequest};
#[cfg(feature = "cli")]
pub(crate) use check::check;
pub use error::Error;
pub use experiment::Experiment;
#[cfg_attr(not(feature = "cli"), allow(unused_imports))]
pub(crate) use models::{model_rows, models_json, ModelRow, Tier};
pub use outdir::OutDirError;
pub use replay::{ChoiceResult, ReplaySummary, TraceReplay};
#[cfg_attr(not(feature = "cli"), allow(unused_imports))]
pub(crate) use replay_command::{replay_command, ReplayRequest};
#[cfg(feature = "python")]
pub(crate) use run::Ran;
pub use run::RunOptions;
#[cfg(feature = "sweep")]
pub use sweep::{merge_shards, run_sweep, Sweep, SweepSummary};
#[cfg(feature = "python")]
pub(crate) use tune::tune_table;
#[cfg(feature = "sweep")]
pub use tune::{tune, TuneReport, TuneRequest};
#[allow(unused_imports)] // named by the Python module, not by the command line
pub(crate) use {
    calibrate_command::CalibrateDone,
    models::{Latency, Prices},
    replay_command::ReplayDone,
};

#[cfg(feature = "cli")]
pub(crate) use crate::exec::default_jobs;
#[cfg(feature = "cli")]
pub(crate) use crate::sweep::{ExecOptions, Shard, SweepOptions, JOURNAL_FILE};
