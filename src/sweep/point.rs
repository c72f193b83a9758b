//! One sweep point, start to finish: its experiment table (base + axis values), every
//! replication of every strategy, and the finished record (runs.csv rows, summary.csv rows,
//! histograms) that the journal stores and the outputs are assembled from.
//!
//! Memory per point: one strategy's aggregate (scalars + three merged histograms) at a time
//! and the formatted rows; only the aggregate's memory outlives the point (each worker
//! thread keeps one, reset for every strategy).

use serde::{Deserialize, Serialize};

use super::Simulator;
use crate::limits::RunError;
use crate::metrics::{RunMetrics, SCALAR_NAMES};
use crate::results::{self, Aggregate, SummaryRow};

/// What a finished point contributes to every output file, already formatted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: u64,
    /// runs.csv rows, each ending in `\n`.
    pub runs: String,
    /// summary.csv rows, each ending in `\n`.
    pub summary: String,
    /// The point's intervals of `histograms/latency.hlog` (three per strategy), each line
    /// ending in `\n`.
    pub hists: String,
}

/// The header line of runs.csv for these axis keys (with its `\n`).
pub fn runs_header(axis_keys: &[String]) -> String {
    results::runs_header(axis_keys) + "\n"
}

/// The header line of summary.csv for these axis keys (with its `\n`).
pub fn summary_header(axis_keys: &[String]) -> String {
    results::summary_header(axis_keys) + "\n"
}

thread_local! {
    /// This thread's aggregate between points: a reset zeroes its three 216 KB histograms in
    /// place, where `Aggregate::new` allocates three more (`Aggregate::reset`).
    static SPARE: std::cell::RefCell<Option<Aggregate>> = const { std::cell::RefCell::new(None) };
}

/// Run every replication of every strategy of one point and format its record with the
/// shared result-file formatters (`crate::results`), exactly as `run --out` formats a run.
/// `values` are the point's axis values in axis order (for the CSV columns).
pub fn run_point<S: Simulator>(
    sim: &S,
    exp: &S::Exp,
    point: u64,
    values: &[toml::Value],
) -> Result<PointRecord, RunError> {
    let desc = sim.describe(exp);
    let p32 = u32::try_from(point).map_err(|_| format!("point {point} is beyond u32"))?;
    let (mut runs, mut summary, mut hists) = (String::new(), String::new(), String::new());
    let mut m = RunMetrics::new();
    let mut agg = SPARE.with_borrow_mut(Option::take).unwrap_or_default();
    // Strategy outer, replication inner: the row order of `run --out`.
    for (s, label) in desc.strategies.iter().enumerate() {
        agg.reset();
        for r in 0..desc.replications {
            sim.simulate_into(exp, s, r, &mut m)?;
            // `scalars()` reads three quantiles: compute it once for the row and the aggregate.
            let scalars = m.scalars();
            if let Some(i) = scalars.iter().position(|x| !x.is_finite()) {
                // The inputs are range-checked so the arithmetic stays finite: a bug.
                return Err(RunError::Internal(format!(
                    "{label}, replication {r}: {} is {}: a bug, please report it",
                    SCALAR_NAMES[i], scalars[i]
                )));
            }
            runs.push_str(&results::runs_line(p32, values, r, label, &scalars));
            runs.push('\n');
            agg.add_scalars(&scalars);
            agg.add_samples(m.samples());
        }
        let row = SummaryRow::from_aggregate(p32, values, label, &agg);
        summary.push_str(&results::summary_line(&row));
        summary.push('\n');
        hists.push_str(&results::aggregate_intervals(p32, label, &agg));
    }
    SPARE.with_borrow_mut(|spare| *spare = Some(agg));
    Ok(PointRecord { point, runs, summary, hists })
}
