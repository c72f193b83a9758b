//! A run: every replication of every strategy of one experiment (a sweep with no axes),
//! simulated by the one executor replication by replication (each one's strategies back to
//! back on one worker) and folded per strategy in replication order, and its result files
//! (point 0, no axes).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::{ordered, Runner};
use crate::config::{self, ExperimentSpec};
use crate::limits::RunError;
use crate::metrics::{RunMetrics, EXTRA_NAMES, SCALAR_NAMES};
use crate::results::stats::Welford;
use crate::results::{self, Aggregate, Batched, Manifest, SummaryRow, TraceRow};

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
    hists: Vec<Option<Batched>>,
}

type Scalars = ([f64; SCALAR_NAMES.len()], [f64; EXTRA_NAMES.len()]);

/// Every replication of every strategy, on `jobs` threads. A task is one replication of
/// every strategy, simulated strategy 0, 1, 2... back to back on one worker, so a simulator
/// that keeps what a replication's strategies share (its workload) finds it on that thread.
/// Scalars are folded in replication order on this thread, each strategy's into its own
/// list, so each strategy sees its replications in order as if run alone; histograms are
/// merged on the workers. The first failing run in (replication, strategy) order is the
/// error, naming its strategy and replication. Fewer replications than `jobs` use fewer
/// threads. A progress bar is drawn on stderr when `progress` and stderr is a terminal.
pub fn execute<S: Runner>(
    sim: &S,
    exp: &S::Exp,
    jobs: usize,
    progress: bool,
) -> Result<Vec<StrategyOutcome>, RunError> {
    let desc = sim.describe(exp);
    let reps = desc.replications as usize;
    let n_strategies = desc.strategies.len();
    // Each strategy's scalars and extras, folded in order; its aggregate is made at the end.
    let mut folded = folded_with_room(n_strategies, reps)?;
    let bar = progress_bar((n_strategies * reps) as u64, progress);
    let init =
        || Worker { metrics: RunMetrics::new(), hists: (0..n_strategies).map(|_| None).collect() };
    // The task's result must move to this thread: one small Vec (a few hundred bytes) per
    // replication, against the thousands of events of its runs.
    let work = |w: &mut Worker, r: usize| -> Result<Vec<Scalars>, (usize, RunError)> {
        let mut out = Vec::with_capacity(n_strategies);
        for (s, hist) in w.hists.iter_mut().enumerate() {
            sim.simulate_into(exp, s, r as u32, &mut w.metrics).map_err(|e| (s, e))?;
            hist.get_or_insert_with(Batched::default).add_samples(w.metrics.samples());
            out.push((w.metrics.scalars(), w.metrics.extras()));
        }
        Ok(out)
    };
    let fold = |_: usize, results: Vec<Scalars>| {
        for ((runs, sums), (scalars, extras)) in folded.iter_mut().zip(results) {
            for (w, x) in sums.iter_mut().zip(extras) {
                w.add(x);
            }
            runs.push(scalars);
        }
        bar(Some(n_strategies as u64));
        Ok(())
    };
    let result = ordered(reps, jobs, &AtomicBool::new(false), init, work, fold);
    bar(None);
    let workers = result.map_err(|(r, (s, e))| {
        let label = &desc.strategies[s];
        e.map(|m| format!("strategy {label}, replication {r}: {m}"))
    })?;
    // Only a stopped `Watch` ends `ordered` early here.
    if folded.first().is_some_and(|f| f.0.len() < reps) {
        return Err(RunError::Interrupted);
    }
    let outcomes = outcomes(&desc.strategies, folded, workers);
    check_finite(&outcomes)?;
    Ok(outcomes)
}

/// One strategy's scalars (every replication's, in order) and extras.
type Folded = (Vec<[f64; SCALAR_NAMES.len()]>, [Welford; EXTRA_NAMES.len()]);

/// Each strategy's `Folded`, with room for `reps` replications' scalars reserved without
/// aborting: more than the machine holds is an error (exit 1, docs/limits.md).
fn folded_with_room(n_strategies: usize, reps: usize) -> Result<Vec<Folded>, RunError> {
    let mut folded: Vec<Folded> = (0..n_strategies).map(|_| Default::default()).collect();
    for (runs, _) in &mut folded {
        if runs.try_reserve_exact(reps).is_err() {
            let each = std::mem::size_of::<[f64; SCALAR_NAMES.len()]>() as f64;
            let total = crate::limits::bytes(each * reps as f64 * n_strategies as f64);
            return Err(RunError::Internal(format!(
                "memory ran out: {total} for the scalars of {reps} replications of \
                 {n_strategies} strategies; lower replications"
            )));
        }
    }
    Ok(folded)
}

/// Each strategy's outcome: the first worker's histograms moved in (not added into fresh
/// ones), the other workers' added, then the scalars in replication order (the same Welford
/// sums as folding them one by one).
fn outcomes(labels: &[String], folded: Vec<Folded>, workers: Vec<Worker>) -> Vec<StrategyOutcome> {
    let mut aggregates: Vec<Option<Aggregate>> = labels.iter().map(|_| None).collect();
    for worker in workers {
        for (mine, theirs) in aggregates.iter_mut().zip(worker.hists) {
            let theirs = theirs.map(Batched::finish);
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

/// A progress bar on stderr when asked, stderr is a terminal and there is more than one task
/// (a hidden bar still takes a lock at every replication); without the `progress` feature,
/// none. Called with `Some(n)`: `n` more tasks are done; with `None`: all are, clear it.
#[cfg(feature = "progress")]
fn progress_bar(total: u64, show: bool) -> impl Fn(Option<u64>) {
    use std::io::IsTerminal;
    let bar = (show && std::io::stderr().is_terminal() && total > 1)
        .then(|| indicatif::ProgressBar::new(total));
    move |done| match (&bar, done) {
        (Some(bar), Some(n)) => bar.inc(n),
        (Some(bar), None) => bar.finish_and_clear(),
        (None, _) => {}
    }
}

#[cfg(not(feature = "progress"))]
fn progress_bar(_total: u64, _show: bool) -> impl Fn(Option<u64>) {
    |_| {}
}

/// Every number about to be printed or written is finite: a NaN or an infinity here is a bug
/// (the inputs are range-checked so that the arithmetic stays finite), never an output.
fn check_finite(outcomes: &[StrategyOutcome]) -> Result<(), RunError> {
    for o in outcomes {
        let extras = o.extras.iter().map(Welford::stat).zip(EXTRA_NAMES);
        for (st, name) in o.aggregate.stats().into_iter().zip(SCALAR_NAMES).chain(extras) {
            if let Some(x) = [st.mean, st.sd, st.ci95].into_iter().find(|x| !x.is_finite()) {
                let msg = format!("{}: {name} is {x}: a bug, please report it", o.label);
                return Err(RunError::Internal(msg));
            }
        }
        if let Some(r) = o.runs.iter().position(|s| s.iter().any(|x| !x.is_finite())) {
            let msg = format!("{}, replication {r}: a metric is not finite: a bug", o.label);
            return Err(RunError::Internal(msg));
        }
    }
    Ok(())
}

/// Replication 0 of every strategy with every agent's segments (`trace.csv`). It reruns
/// runs that already succeeded, so a failure here is a bug.
pub fn trace_rows<S: Runner>(sim: &S, exp: &S::Exp) -> Result<Vec<TraceRow>, RunError> {
    let desc = sim.describe(exp);
    let mut rows = Vec::new();
    for (s, label) in desc.strategies.iter().enumerate() {
        let t = sim.trace(exp, s).map_err(|e| RunError::Internal(format!("{label}: {e}")))?;
        rows.extend(t);
    }
    Ok(rows)
}

/// The rows of a run's summary.csv (point 0, no axes), one per strategy.
pub fn summary_rows(outcomes: &[StrategyOutcome]) -> Vec<SummaryRow> {
    let row = |o: &StrategyOutcome| SummaryRow::from_aggregate(0, &[], &o.label, &o.aggregate);
    outcomes.iter().map(row).collect()
}

/// Write summary.csv, runs.csv, histograms/latency.hlog (and trace.csv) for one run (point 0, no axes),
/// then manifest.json last: a directory whose manifest is missing is unfinished, and readers
/// refuse it. A manifest of an earlier run is removed first, so it never vouches for a mix.
pub fn write_out(
    dir: &Path,
    exp: &ExperimentSpec,
    outcomes: &[StrategyOutcome],
    trace: Option<&[TraceRow]>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::remove_file(dir.join("manifest.json")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let toml_text = config::render(exp);
    results::write_summary(dir, &[], &summary_rows(outcomes))?;
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::thread::ThreadId;

    use super::*;
    use crate::exec::{Description, ResolveError};

    /// Numbers that are a function of (strategy, replication), every call recorded with its
    /// thread, a failure at each run of `fail`; `alone`: only that strategy, as strategy 0.
    #[derive(Default)]
    struct Recorder {
        reps: u32,
        strategies: usize,
        alone: Option<usize>,
        fail: Vec<(usize, u32)>,
        calls: Mutex<Vec<(ThreadId, usize, u32)>>,
    }

    fn recorder(reps: u32, strategies: usize) -> Recorder {
        Recorder { reps, strategies, ..Default::default() }
    }

    impl Runner for Recorder {
        type Exp = ();

        fn resolve(&self, _: &toml::Table) -> Result<(), ResolveError> {
            Ok(())
        }

        fn describe(&self, _: &()) -> Description {
            let all = (0..self.strategies).map(|s| format!("s{s}"));
            Description {
                name: "recorder".into(),
                question: "in which order?".into(),
                seed: 0,
                replications: self.reps,
                strategies: match self.alone {
                    Some(s) => vec![format!("s{s}")],
                    None => all.collect(),
                },
            }
        }

        fn render(&self, _: &()) -> String {
            String::new()
        }

        fn simulate_into(
            &self,
            _: &(),
            s: usize,
            r: u32,
            m: &mut RunMetrics,
        ) -> Result<(), RunError> {
            let s = self.alone.unwrap_or(s);
            self.calls.lock().unwrap().push((std::thread::current().id(), s, r));
            if self.fail.contains(&(s, r)) {
                return Err(RunError::Input("boom".into()));
            }
            let x = 1000 * (s as u64 + 1) + u64::from(r);
            *m = RunMetrics::new();
            (m.agents, m.requests, m.makespan_us, m.parent_requests) = (1, x, x, x % 7);
            (m.cost_usd, m.cost_uncached_usd) = (x as f64, 2.0 * x as f64);
            for (i, samples) in [&mut m.launch_wait_us, &mut m.ttft_us, &mut m.completion_us]
                .into_iter()
                .enumerate()
            {
                samples.record(x * (i as u64 + 1));
            }
            Ok(())
        }
    }

    #[test]
    fn each_strategy_gets_what_it_gets_run_alone() {
        for jobs in [1, 2, 3] {
            let all = execute(&recorder(25, 3), &(), jobs, false).unwrap();
            assert_eq!(all.len(), 3);
            for (s, o) in all.iter().enumerate() {
                let alone = Recorder { alone: Some(s), ..recorder(25, 3) };
                let alone = execute(&alone, &(), 1, false).unwrap().remove(0);
                assert_eq!(o.label, alone.label);
                assert_eq!(o.runs, alone.runs, "jobs {jobs}, strategy {s}");
                let costs: Vec<f64> = o.runs.iter().map(|x| x[0]).collect();
                let want: Vec<f64> = (0..25).map(|r| (1000 * (s + 1) + r) as f64).collect();
                assert_eq!(costs, want, "jobs {jobs}, strategy {s}: replication order");
                assert_eq!(o.extras, alone.extras);
                assert_eq!(o.aggregate.stats(), alone.aggregate.stats());
                let hists = |a: &Aggregate| results::aggregate_intervals(0, "x", a);
                assert_eq!(hists(&o.aggregate), hists(&alone.aggregate));
            }
        }
    }

    #[test]
    fn a_worker_runs_a_replications_strategies_back_to_back() {
        for jobs in [1, 2] {
            let rec = recorder(30, 3);
            execute(&rec, &(), jobs, false).unwrap();
            let calls = rec.calls.into_inner().unwrap();
            assert_eq!(calls.len(), 90);
            let mut threads: Vec<ThreadId> = Vec::new();
            for c in &calls {
                if !threads.contains(&c.0) {
                    threads.push(c.0);
                }
            }
            for t in threads {
                let mine: Vec<(usize, u32)> =
                    calls.iter().filter(|c| c.0 == t).map(|c| (c.1, c.2)).collect();
                let mut last = None;
                for chunk in mine.chunks(3) {
                    let r = chunk[0].1;
                    assert_eq!(chunk, [(0, r), (1, r), (2, r)], "jobs {jobs}: {mine:?}");
                    assert!(last < Some(r), "jobs {jobs}: replications in order: {mine:?}");
                    last = Some(r);
                }
            }
        }
    }

    #[test]
    fn the_first_failure_in_replication_then_strategy_order_is_the_error() {
        for jobs in [1, 2] {
            let rec = Recorder { fail: vec![(0, 5), (2, 1)], ..recorder(8, 3) };
            let e = execute(&rec, &(), jobs, false).err().expect("a run fails");
            assert!(e.is_input());
            assert_eq!(e.to_string(), "strategy s2, replication 1: boom", "jobs {jobs}");
        }
    }
}
