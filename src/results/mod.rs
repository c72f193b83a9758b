//! Results of runs and sweeps: aggregation of `RunMetrics` over replications (mean, sd, 95% CI,
//! merged histograms) and the writers of the result files (`manifest.json`, `summary.csv`,
//! `runs.csv`, `histograms/*.hdr`, `trace.csv`) that `plot` and `report` read.
//!
//! Knows nothing of how runs are simulated. Output is byte-reproducible: values are added in
//! index order, floats have a fixed format, files carry no timestamps, hosts or absolute paths,
//! and every file is written to `NAME.tmp` and renamed.

pub mod aggregate;
pub mod stats;
pub mod write;

pub use aggregate::Aggregate;
pub use stats::{t_975, Stat, Welford};
pub use write::*;
