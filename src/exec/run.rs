//! A run: every replication of every strategy of one experiment (a sweep with no axes),
//! simulated by the one executor and folded in (strategy, replication) order, and its result
//! files (point 0, no axes).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::{ordered, Simulator};
use crate::config::{self, Experiment};
use crate::limits::RunError;
use crate::metrics::{RunMetrics, EXTRA_NAMES, SCALAR_NAMES};
use crate::results::stats::Welford;
use crate::results::{self, Aggregate, Manifest, SummaryRow, TraceRow};

/// One strategy's results: the aggregate and every replication's scalars (for runs.csv).
pub struct StrategyOutcome {
    pub label: String,
    pub aggregate: Aggregate,
    pub runs: Vec<[f64; SCALAR_NAMES.len()]>,
    /// The optional counters over replications, in `EXTRA_NAMES` order: the advancing
    /// parent's own requests and cost (`workload.parent_turn_every`, counted apart from the
    /// fan-out), 529s and agents that gave up (`[overload]`), isolated misses
    /// (`cache.miss_probability`), long-context requests. Not among `SCALAR_NAMES`.
    pub extras: [Welford; EXTRA_NAMES.len()],
}

/// A worker's state: its metrics buffer (reused run after run) and, per strategy, the
/// histograms it merged (integer counts: exact in any order, combined at the end).
struct Worker {
    metrics: RunMetrics,
    hists: Vec<Option<Aggregate>>,
}

type Scalars = ([f64; SCALAR_NAMES.len()], [f64; EXTRA_NAMES.len()]);

/// Every replication of every strategy, on `jobs` threads. Scalars are folded in (strategy,
/// replication) order on this thread; histograms are merged on the workers. The first failing
/// run (in that order) is the error, naming its strategy and replication. A progress bar is
/// drawn on stderr when `progress` and stderr is a terminal.
pub fn execute<S: Simulator>(
    sim: &S,
    exp: &S::Exp,
    jobs: usize,
    progress: bool,
) -> Result<Vec<StrategyOutcome>, RunError> {
    let desc = sim.describe(exp);
    let reps = desc.replications as usize;
    let n_strategies = desc.strategies.len();
    let total = n_strategies * reps;
    // Each strategy's scalars and extras, folded in order; its aggregate is made at the end.
    let mut folded: Vec<Folded> =
        (0..n_strategies).map(|_| (Vec::with_capacity(reps), Default::default())).collect();
    let bar = progress_bar(total as u64, progress);
    let init = || Worker { metrics: RunMetrics::new(), hists: vec![None; n_strategies] };
    let work = |w: &mut Worker, k: usize| -> Result<Scalars, RunError> {
        let (s, r) = (k / reps, k % reps);
        sim.simulate_into(exp, s, r as u32, &mut w.metrics)?;
        let agg = w.hists[s].get_or_insert_with(Aggregate::new);
        agg.add_samples(w.metrics.samples());
        Ok((w.metrics.scalars(), w.metrics.extras()))
    };
    let fold = |k: usize, (scalars, extras): Scalars| {
        let (runs, sums) = &mut folded[k / reps];
        for (w, x) in sums.iter_mut().zip(extras) {
            w.add(x);
        }
        runs.push(scalars);
        if let Some(bar) = &bar {
            bar.inc(1);
        }
        Ok(())
    };
    let result = ordered(total, jobs, &AtomicBool::new(false), init, work, fold);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let workers = result.map_err(|(k, e)| {
        let label = &desc.strategies[k / reps];
        e.map(|m| format!("strategy {label}, replication {}: {m}", k % reps))
    })?;
    let outcomes = outcomes(&desc.strategies, folded, workers);
    check_finite(&outcomes)?;
    Ok(outcomes)
}

/// One strategy's scalars (every replication's, in order) and extras.
type Folded = (Vec<[f64; SCALAR_NAMES.len()]>, [Welford; EXTRA_NAMES.len()]);

/// Each strategy's outcome: the first worker's histograms moved in (not copied into fresh
/// ones: 216 KB of counters zeroed and added per strategy), the other workers' added, then
/// the scalars in replication order (the same Welford sums as folding them one by one).
fn outcomes(labels: &[String], folded: Vec<Folded>, workers: Vec<Worker>) -> Vec<StrategyOutcome> {
    let mut aggregates: Vec<Option<Aggregate>> = labels.iter().map(|_| None).collect();
    for worker in workers {
        for (mine, theirs) in aggregates.iter_mut().zip(worker.hists) {
            match (mine.as_mut(), theirs) {
                (Some(mine), Some(theirs)) => mine.add_latencies(&theirs),
                (None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
    }
    let parts = labels.iter().zip(folded).zip(aggregates);
    parts
        .map(|((label, (runs, extras)), aggregate)| {
            let mut aggregate = aggregate.unwrap_or_default();
            for scalars in &runs {
                aggregate.add_scalars(scalars);
            }
            StrategyOutcome { label: label.clone(), aggregate, runs, extras }
        })
        .collect()
}

/// A progress bar on stderr when asked, stderr is a terminal and there is more than one task;
/// otherwise none (a hidden bar still takes a lock at every replication); without the
/// `progress` feature, none.
#[cfg(feature = "progress")]
fn progress_bar(total: u64, show: bool) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    (show && std::io::stderr().is_terminal() && total > 1)
        .then(|| indicatif::ProgressBar::new(total))
}

#[cfg(not(feature = "progress"))]
fn progress_bar(_total: u64, _show: bool) -> Option<NoBar> {
    None
}

/// The progress bar's type when the `progress` feature is off: there is none to make.
#[cfg(not(feature = "progress"))]
enum NoBar {}

#[cfg(not(feature = "progress"))]
impl NoBar {
    fn inc(&self, _n: u64) {
        match *self {}
    }
    fn finish_and_clear(self) {
        match self {}
    }
}

/// Every number about to be printed or written is finite: a NaN or an infinity here is a bug
/// (the inputs are range-checked so that the arithmetic stays finite), never an output.
fn check_finite(outcomes: &[StrategyOutcome]) -> Result<(), RunError> {
    for o in outcomes {
        let stats = o.aggregate.stats().into_iter().zip(SCALAR_NAMES);
        for (st, name) in stats.chain(o.extras.iter().zip(EXTRA_NAMES).map(|(w, n)| (w.stat(), n)))
        {
            for x in [st.mean, st.sd, st.ci95] {
                if !x.is_finite() {
                    return Err(RunError::Internal(format!(
                        "{}: {name} is {x}: a bug, please report it",
                        o.label
                    )));
                }
            }
        }
        if let Some((r, _)) =
            o.runs.iter().enumerate().find(|(_, s)| s.iter().any(|x| !x.is_finite()))
        {
            return Err(RunError::Internal(format!(
                "{}, replication {r}: a metric is not finite: a bug",
                o.label
            )));
        }
    }
    Ok(())
}

/// Replication 0 of every strategy with every agent's segments (`trace.csv`). It reruns
/// runs that already succeeded, so a failure here is a bug.
pub fn trace_rows<S: Simulator>(sim: &S, exp: &S::Exp) -> Result<Vec<TraceRow>, RunError> {
    let desc = sim.describe(exp);
    let mut rows = Vec::new();
    for (s, label) in desc.strategies.iter().enumerate() {
        let t = sim.trace(exp, s).map_err(|e| RunError::Internal(format!("{label}: {e}")))?;
        rows.extend(t);
    }
    Ok(rows)
}

/// Write summary.csv, runs.csv, histograms/latency.hlog (and trace.csv) for one run (point 0, no axes),
/// then manifest.json last: a directory whose manifest is missing is unfinished, and readers
/// refuse it. A manifest of an earlier run is removed first, so it never vouches for a mix.
pub fn write_out(
    dir: &Path,
    exp: &Experiment,
    outcomes: &[StrategyOutcome],
    trace: Option<&[TraceRow]>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::remove_file(dir.join("manifest.json")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let toml_text = config::render(exp);
    let rows: Vec<SummaryRow> = outcomes
        .iter()
        .map(|o| SummaryRow::from_aggregate(0, &[], &o.label, &o.aggregate))
        .collect();
    results::write_summary(dir, &[], &rows)?;
    let mut runs = results::RunsWriter::create(dir, &[])?;
    for o in outcomes {
        for (r, scalars) in o.runs.iter().enumerate() {
            runs.row(0, &[], r as u32, &o.label, scalars)?;
        }
    }
    runs.finish()?;
    let mut hists = results::HistogramLog::create(dir)?;
    for o in outcomes {
        hists.add(0, &o.label, &o.aggregate)?;
    }
    hists.commit()?;
    if let Some(rows) = trace {
        results::write_trace(dir, rows)?;
    }
    Ok(results::write_manifest(dir, &Manifest::new("run", exp, &toml_text))?)
}
