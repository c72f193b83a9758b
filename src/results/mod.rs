//! Results of runs and sweeps, and the one owner of their file formats: aggregation of
//! `RunMetrics` over replications (mean, sd, 95% CI, merged histograms), the schema of the
//! result files (`manifest.json`, `summary.csv`, `runs.csv`, `histograms/latency.hlog`, `trace.csv`),
//! their writers and their reader, which `plot` and `report` use.
//!
//! Knows nothing of how runs are simulated. Output is byte-reproducible: values are added in
//! index order, floats have a fixed format, files carry no timestamps, hosts or absolute paths,
//! and every file is written to `NAME.tmp` and renamed (`write_atomic`, `AtomicFile`).

pub mod aggregate;
pub mod counts;
pub mod error;
pub mod histograms;
pub mod hlog;
pub mod hold;
pub mod otlp;
pub mod read;
pub mod runs;
pub mod schema;
pub mod stats;
pub mod summary;
pub mod summary_rows;
pub mod table;
pub mod write;

pub use aggregate::{Aggregate, Batched};
pub use error::ResultsError;
pub use hlog::*;
pub use hold::{hold_header, hold_line, HoldRow, HOLD_CSV};
pub use read::Results;
pub use schema::*;
pub use stats::{t_975, Welford};
pub use table::split_fields;
pub use write::*;

/// `text` written to `NAME.csv` in a scratch directory of `area` (a test's own file, for the
/// readers to index as `Results::load` does).
#[cfg(test)]
fn test_csv(area: &str, name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prefixsim-{area}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.csv"));
    std::fs::write(&path, text).unwrap();
    path
}
