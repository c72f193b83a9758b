//! Experiment files: the resolved experiment the model runs, parsing from TOML, `--set`
//! overrides on dotted keys, defaults and validation.
//!
//! CONTRACT: the types in `experiment.rs` are shared by model, sweep, report and replay.

pub mod experiment;
pub use experiment::*;
