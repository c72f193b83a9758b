//! `prefixsim run FILE [--set k=v]... [--seed N] [--json] [--out DIR] [--trace] [--jobs N]`:
//! every strategy of one experiment side by side, with replications spread over threads and
//! folded in index order (so `--jobs` never changes a byte of output).
//!
//! The simulation itself is behind the `Simulator` trait; `ModelSim` is the real model.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use anyhow::Context;
use serde::Serialize;

use super::guard::{self, check_work, lock_dir};
use super::{CliError, CliResult};
use crate::config::{self, strategy_label, Experiment, Strategy};
use crate::limits::{self, RunError, WorkLimits};
use crate::metrics::{RunMetrics, EXTRA_NAMES, SCALAR_NAMES};
use crate::report::table;
use crate::results::stats::Welford;
use crate::results::{self, Aggregate, Manifest, SummaryRow, TraceRow};

const AFTER_HELP: &str = "\
Examples:
  prefixsim run experiments/default.toml
  prefixsim run experiments/default.toml --set workload.agents=32 --set cache.ttl=1h
  prefixsim run experiments/default.toml --set 'strategies=[\"eager\",\"wait_first(max_wait=2s)\"]'
  prefixsim run experiments/hold_vs_prefix_size.toml --seed 7 --json
  prefixsim run experiments/default.toml --out results/default --trace --jobs 2

Values after --set are TOML (`workload.agents=16`, `workload.parent_warm=true`); a bare word
is a string (`cache.ttl=1h`, `workload.kind=fork_drop_tool(tool=Bash)`). A `[sweep]` table in
FILE is ignored here (use `prefixsim sweep`). Exit code 2 on a bad file or value, on work above
the limits of docs/limits.md (`--force` lifts them), or when a run stops at its own limits.";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The experiment file (TOML; every key is documented in README.md, "Experiment files").
    pub file: PathBuf,
    /// Override a dotted key of the file, e.g. `--set workload.agents=16` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A calibration file (`prefixsim calibrate --out DIR` writes DIR/latency.toml): the
    /// latency of the experiment's model; the same as `--set latency.from=FILE`.
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// The experiment seed (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the result files (manifest.json, summary.csv, runs.csv, histograms/) to DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --out: also write trace.csv (every agent's segments in replication 0).
    #[arg(long, requires = "out")]
    pub trace: bool,
    /// Threads for replications (default: all cores); output does not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Start even when the estimated work, memory or output is above the limits
    /// (docs/limits.md).
    #[arg(long)]
    pub force: bool,
}

/// Why a replication failed: the message, and whether the experiment's input caused it (a
/// request outgrowing its model's context window: exit code 2) rather than a bug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimFailure {
    pub message: String,
    pub input: bool,
}

impl From<String> for SimFailure {
    fn from(message: String) -> Self {
        SimFailure { message, input: false }
    }
}

impl std::fmt::Display for SimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Something that simulates one replication of one strategy.
pub trait Simulator: Sync {
    fn simulate(
        &self,
        exp: &Experiment,
        strategy: &Strategy,
        replication: u32,
    ) -> Result<RunMetrics, SimFailure>;
    /// Replication 0 of `strategy` with every agent's segments, as `trace.csv` rows.
    fn trace(&self, exp: &Experiment, strategy: &Strategy) -> Result<Vec<TraceRow>, String>;
    /// As `simulate`, saying whose fault a failure is: `RunError::Input` when the experiment's
    /// own values stopped the run (exit 2). By default every failure is a bug.
    fn simulate_checked(
        &self,
        exp: &Experiment,
        strategy: &Strategy,
        replication: u32,
    ) -> Result<RunMetrics, RunError> {
        self.simulate(exp, strategy, replication).map_err(|f| match f.input {
            true => RunError::Input(f.message),
            false => RunError::Internal(f.message),
        })
    }
}

/// The fan-out model (`crate::model`).
pub struct ModelSim;

impl Simulator for ModelSim {
    fn simulate(&self, exp: &Experiment, s: &Strategy, r: u32) -> Result<RunMetrics, SimFailure> {
        crate::model::simulate(exp, s, r)
            .map_err(|e| SimFailure { message: e.to_string(), input: e.is_input() })
    }
    fn simulate_checked(
        &self,
        e: &Experiment,
        s: &Strategy,
        r: u32,
    ) -> Result<RunMetrics, RunError> {
        crate::model::simulate(e, s, r).map_err(RunError::from)
    }
    fn trace(&self, exp: &Experiment, s: &Strategy) -> Result<Vec<TraceRow>, String> {
        let (_, segments) = crate::model::simulate_traced(exp, s, 0).map_err(|e| e.to_string())?;
        let label = strategy_label(s);
        Ok(segments
            .iter()
            .map(|g| TraceRow {
                strategy: label.clone(),
                agent: g.agent,
                request: g.request,
                segment: g.kind.name().to_string(),
                start_s: crate::time::secs(g.start_us),
                end_s: crate::time::secs(g.end_us),
                outcome: g.outcome.name().to_string(),
            })
            .collect())
    }
}

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

pub fn run(mut args: Args) -> CliResult {
    args.set.extend(super::latency_set(&args.latency)?);
    let (table, exp) = load(&args.file, &args.set, args.seed)?;
    let estimate = limits::estimate_run(&exp, args.out.is_some());
    check_work(&estimate, &WorkLimits::from_table(&table), args.force)?;
    execute_and_print(&exp, &args, &ModelSim)
}

/// `prefixsim` with no command: the embedded default experiment, as a table.
pub fn run_default() -> CliResult {
    let (_, exp) = config::load_default(&[]).map_err(CliError::input)?;
    let args = Args {
        file: PathBuf::from(config::DEFAULT_ORIGIN),
        set: Vec::new(),
        latency: None,
        seed: None,
        json: false,
        out: None,
        trace: false,
        jobs: None,
        force: false,
    };
    execute_and_print(&exp, &args, &ModelSim)
}

/// Load, apply `--set`s and `--seed`; every failure is an input error naming file/key/value.
pub fn load(
    file: &Path,
    sets: &[String],
    seed: Option<u64>,
) -> Result<(toml::Table, Experiment), CliError> {
    let mut sets = sets.to_vec();
    if let Some(seed) = seed {
        if i64::try_from(seed).is_err() {
            return Err(CliError::input(anyhow::anyhow!(
                "--seed {seed}: seeds are at most {}",
                i64::MAX
            )));
        }
        sets.push(format!("seed={seed}"));
    }
    config::load(file, &sets).map_err(CliError::input)
}

/// Simulate, write `--out` files, print the table or JSON.
pub fn execute_and_print(exp: &Experiment, args: &Args, sim: &dyn Simulator) -> CliResult {
    if let Some(dir) = &args.out {
        if dir.exists() && !dir.is_dir() {
            let e = anyhow::anyhow!("--out {}: exists and is not a directory", dir.display());
            return Err(CliError::input(e));
        }
    }
    let jobs = args.jobs.unwrap_or_else(default_jobs).max(1);
    let outcomes = execute(exp, jobs, sim).map_err(|e| match e.downcast::<RunError>() {
        Ok(e) => guard::run_error(e),
        Err(e) => CliError::internal(e),
    })?;
    check_finite(&outcomes).map_err(CliError::internal)?;
    if let Some(dir) = &args.out {
        let trace = match args.trace {
            true => Some(trace_rows(exp, sim).map_err(CliError::internal)?),
            false => None,
        };
        let lock = lock_dir(dir, "--out")?;
        write_out(dir, exp, &outcomes, trace.as_deref())
            .with_context(|| format!("writing results to {}", dir.display()))
            .map_err(CliError::internal)?;
        drop(lock);
    }
    let text = if args.json { json_text(exp, &outcomes) } else { table_text(exp, &outcomes) };
    print!("{text}");
    Ok(())
}

/// Every number about to be printed or written is finite: a NaN or an infinity here is a bug
/// (the inputs are range-checked so that the arithmetic stays finite), never an output.
fn check_finite(outcomes: &[StrategyOutcome]) -> anyhow::Result<()> {
    for o in outcomes {
        let stats = o.aggregate.stats().into_iter().zip(SCALAR_NAMES);
        for (st, name) in stats.chain(o.extras.iter().zip(EXTRA_NAMES).map(|(w, n)| (w.stat(), n)))
        {
            for x in [st.mean, st.sd, st.ci95] {
                if !x.is_finite() {
                    anyhow::bail!("{}: {name} is {x}: a bug, please report it", o.label);
                }
            }
        }
        if let Some((r, _)) =
            o.runs.iter().enumerate().find(|(_, s)| s.iter().any(|x| !x.is_finite()))
        {
            anyhow::bail!("{}, replication {r}: a metric is not finite: a bug", o.label);
        }
    }
    Ok(())
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn trace_rows(exp: &Experiment, sim: &dyn Simulator) -> anyhow::Result<Vec<TraceRow>> {
    let mut rows = Vec::new();
    for s in &exp.strategies {
        let t = sim.trace(exp, s).map_err(|e| anyhow::anyhow!("{}: {e}", strategy_label(s)))?;
        rows.extend(t);
    }
    Ok(rows)
}

/// Every replication of every strategy, on `jobs` threads. Scalars are folded in (strategy,
/// replication) order on this thread; histograms are merged on the workers (integer counts:
/// exact in any order) and combined at the end. The first failing run (in that order) is the
/// error.
pub fn execute(
    exp: &Experiment,
    jobs: usize,
    sim: &dyn Simulator,
) -> anyhow::Result<Vec<StrategyOutcome>> {
    let reps = exp.replications as usize;
    let n_strategies = exp.strategies.len();
    let total = n_strategies * reps;
    let mut outcomes: Vec<StrategyOutcome> = exp
        .strategies
        .iter()
        .map(|s| StrategyOutcome {
            label: strategy_label(s),
            aggregate: Aggregate::new(),
            runs: Vec::with_capacity(reps),
            extras: Default::default(),
        })
        .collect();
    let progress = progress_bar(total as u64);
    let init = || -> Vec<Option<Aggregate>> { (0..n_strategies).map(|_| None).collect() };
    let work = |hists: &mut Vec<Option<Aggregate>>, k: usize| {
        let (s, r) = (k / reps, k % reps);
        let run = sim.simulate_checked(exp, &exp.strategies[s], r as u32)?;
        hists[s].get_or_insert_with(Aggregate::new).add_samples(run.samples());
        Ok((run.scalars(), run.extras()))
    };
    let fold =
        |k: usize, (scalars, extras): ([f64; SCALAR_NAMES.len()], [f64; EXTRA_NAMES.len()])| {
            let o = &mut outcomes[k / reps];
            o.aggregate.add_scalars(&scalars);
            for (w, x) in o.extras.iter_mut().zip(extras) {
                w.add(x);
            }
            o.runs.push(scalars);
            progress.inc(1);
        };
    let result = ordered_parallel(total, jobs, init, work, fold);
    progress.finish_and_clear();
    let workers = result.map_err(|(k, e): (usize, RunError)| {
        let label = strategy_label(&exp.strategies[k / reps]);
        anyhow::Error::new(e.map(|m| format!("strategy {label}, replication {}: {m}", k % reps)))
    })?;
    for worker in workers {
        for (o, agg) in outcomes.iter_mut().zip(worker) {
            if let Some(agg) = agg {
                o.aggregate.add_histograms(&agg.histograms);
            }
        }
    }
    Ok(outcomes)
}

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    if std::io::stderr().is_terminal() && total > 1 {
        indicatif::ProgressBar::new(total)
    } else {
        indicatif::ProgressBar::hidden()
    }
}

struct Queue {
    next: usize,
    folded: usize,
    stop: bool,
}

/// Run `work(state, k)` for k in 0..total on `jobs` threads, each with its own `init()` state,
/// and call `fold(k, value)` in index order on this thread. Workers stay within a window of
/// `4 * jobs` tasks past the last folded one, which bounds memory. Returns the workers' final
/// states, or the lowest failing index and its error.
pub fn ordered_parallel<S: Send, T: Send, E: Send>(
    total: usize,
    jobs: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
    mut fold: impl FnMut(usize, T),
) -> Result<Vec<S>, (usize, E)> {
    if jobs <= 1 || total <= 1 {
        let mut state = init();
        for k in 0..total {
            fold(k, work(&mut state, k).map_err(|e| (k, e))?);
        }
        return Ok(vec![state]);
    }
    let window = 4 * jobs;
    let queue = Mutex::new(Queue { next: 0, folded: 0, stop: false });
    let cv = Condvar::new();
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<T, E>)>();
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for _ in 0..jobs.min(total) {
            let tx = tx.clone();
            let (queue, cv, work, init) = (&queue, &cv, &work, &init);
            handles.push(scope.spawn(move || {
                let mut state = init();
                while let Some(k) = take(queue, cv, total, window) {
                    if tx.send((k, work(&mut state, k))).is_err() {
                        break;
                    }
                }
                state
            }));
        }
        drop(tx);
        let result = fold_in_order(rx, &queue, &cv, &mut fold);
        queue.lock().expect("queue lock").stop = true;
        cv.notify_all();
        let states: Vec<S> =
            handles.into_iter().map(|h| h.join().expect("a replication worker panicked")).collect();
        result.map(|()| states)
    })
}

fn fold_in_order<T, E>(
    rx: std::sync::mpsc::Receiver<(usize, Result<T, E>)>,
    queue: &Mutex<Queue>,
    cv: &Condvar,
    fold: &mut impl FnMut(usize, T),
) -> Result<(), (usize, E)> {
    let mut pending = std::collections::BTreeMap::new();
    let mut expect = 0;
    for (k, r) in rx {
        pending.insert(k, r);
        while let Some(r) = pending.remove(&expect) {
            fold(expect, r.map_err(|e| (expect, e))?);
            expect += 1;
            queue.lock().expect("queue lock").folded = expect;
            cv.notify_all();
        }
    }
    Ok(())
}

fn take(queue: &Mutex<Queue>, cv: &Condvar, total: usize, window: usize) -> Option<usize> {
    let mut q = queue.lock().expect("queue lock");
    loop {
        if q.stop || q.next >= total {
            return None;
        }
        if q.next < q.folded + window {
            q.next += 1;
            return Some(q.next - 1);
        }
        q = cv.wait(q).expect("queue lock");
    }
}

/// Write summary.csv, runs.csv, histograms/ (and trace.csv) for one run (point 0, no axes),
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
    for o in outcomes {
        results::write_histograms(dir, 0, &o.label, &o.aggregate)?;
    }
    if let Some(rows) = trace {
        results::write_trace(dir, rows)?;
    }
    Ok(results::write_manifest(dir, &Manifest::new("run", exp, &toml_text))?)
}

/// The seed first, then the comparison table, then the ladders.
pub fn table_text(exp: &Experiment, outcomes: &[StrategyOutcome]) -> String {
    let rows: Vec<table::Row<'_>> =
        outcomes.iter().map(|o| table::Row { label: &o.label, aggregate: &o.aggregate }).collect();
    let mut s = format!("seed: {}\n", exp.seed);
    s.push_str(&format!(
        "{}: {} x {} agents, {} replications, model {}\n",
        exp.name,
        config::kind_label(&exp.workload.kind),
        exp.workload.agents,
        exp.replications,
        exp.model.name
    ));
    if !exp.question.is_empty() {
        s.push_str(&format!("question: {}\n", exp.question));
    }
    s.push('\n');
    s.push_str(&table::comparison_table(&rows));
    s.push_str("\nmeans over replications (cost: ± 95% CI); latency percentiles pooled over all agents and replications\n");
    if exp.workload.parent_turn_every_us > 0 {
        s.push_str("the parent's own turns (not in the cost above):");
        for o in outcomes {
            let [requests, cost] = [0, 1].map(|i| o.extras[i].stat().mean);
            s.push_str(&format!(" {}: {requests:.1} requests, ${cost:.4};", o.label));
        }
        s.pop();
        s.push('\n');
    }
    for (i, what) in [
        (2, "529 overloaded responses"),
        (3, "agents that gave up after a 529"),
        (4, "isolated cache misses"),
        (5, "requests at long-context prices"),
    ] {
        if shown_extras(exp)[i] {
            s.push_str(&format!("{what} per replication:"));
            for o in outcomes {
                s.push_str(&format!(" {}: {:.2};", o.label, o.extras[i].stat().mean));
            }
            s.pop();
            s.push('\n');
        }
    }
    for note in crate::model::notes(exp) {
        s.push_str(&format!("note: {note}\n"));
    }
    s.push('\n');
    s.push_str(&table::ladders(&rows));
    s
}

#[derive(Serialize)]
struct JsonOut<'a> {
    seed: u64,
    name: &'a str,
    question: &'a str,
    replications: u32,
    results: Vec<JsonResult>,
    /// The documented rules that limited a strategy or kind (`model::notes`); absent if none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

/// Extra `i`'s mean over replications, when the run reports it.
fn extra(o: &StrategyOutcome, shown: &[bool; EXTRA_NAMES.len()], i: usize) -> Option<f64> {
    shown[i].then(|| o.extras[i].stat().mean)
}

#[derive(Serialize)]
struct JsonTokens {
    cache_read: f64,
    cache_write: f64,
    uncached: f64,
    output: f64,
}

#[derive(Serialize)]
struct JsonLadder {
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

#[derive(Serialize)]
struct JsonResult {
    strategy: String,
    cost_usd: f64,
    cost_usd_ci95: f64,
    cost_relative_to_eager: Option<f64>,
    cost_relative_to_uncached: f64,
    hit_rate: f64,
    redundant_writes: f64,
    requests: f64,
    tokens: JsonTokens,
    launch_wait_s: JsonLadder,
    ttft_s: JsonLadder,
    completion_s: JsonLadder,
    makespan_s: f64,
    makespan_s_ci95: f64,
    throughput_agents_per_min: f64,
    throughput_tokens_per_min: f64,
    rate_limited: f64,
    throttled_s: f64,
    /// Only when the parent advances (`workload.parent_turn_every` > 0): its own requests and
    /// cost per replication, not in `cost_usd`.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_requests: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_cost_usd: Option<f64>,
    /// Only with `[overload]`: 529s received and agents that gave up, per replication.
    #[serde(skip_serializing_if = "Option::is_none")]
    overloaded: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_agents: Option<f64>,
    /// Only with `cache.miss_probability` > 0: lookups that missed a readable entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    isolated_misses: Option<f64>,
    /// Only with `model_params.long_context`: requests billed at long-context prices.
    #[serde(skip_serializing_if = "Option::is_none")]
    long_context_requests: Option<f64>,
}

/// Which of `EXTRA_NAMES` a run of `exp` reports (its feature is on).
fn shown_extras(exp: &Experiment) -> [bool; EXTRA_NAMES.len()] {
    let advancing = exp.workload.parent_turn_every_us > 0;
    let overload = exp.overload.is_some();
    [
        advancing,
        advancing,
        overload,
        overload,
        exp.cache.miss_probability > 0.0,
        exp.model.use_long_context,
    ]
}

fn ladder(x: [f64; 5]) -> JsonLadder {
    JsonLadder { p50: x[0], p90: x[1], p99: x[2], p999: x[3], max: x[4] }
}

/// `{"seed": n, "results": [...]}`: means over replications; percentiles from the merged
/// histograms.
pub fn json_text(exp: &Experiment, outcomes: &[StrategyOutcome]) -> String {
    let eager =
        outcomes.iter().find(|o| o.label == "eager").map(|o| o.aggregate.stat("cost_usd").mean);
    let shown = shown_extras(exp);
    let results = outcomes
        .iter()
        .map(|o| {
            let a = &o.aggregate;
            let m = |name: &str| a.stat(name).mean;
            JsonResult {
                strategy: o.label.clone(),
                cost_usd: m("cost_usd"),
                cost_usd_ci95: a.stat("cost_usd").ci95,
                cost_relative_to_eager: eager.filter(|e| *e > 0.0).map(|e| m("cost_usd") / e),
                cost_relative_to_uncached: m("cost_relative"),
                hit_rate: m("hit_rate"),
                redundant_writes: m("redundant_writes"),
                requests: m("requests"),
                tokens: JsonTokens {
                    cache_read: m("cache_read"),
                    cache_write: m("cache_write"),
                    uncached: m("uncached"),
                    output: m("output"),
                },
                launch_wait_s: ladder(a.ladder_of("launch_wait")),
                ttft_s: ladder(a.ladder_of("ttft")),
                completion_s: ladder(a.ladder_of("completion")),
                makespan_s: m("makespan_s"),
                makespan_s_ci95: a.stat("makespan_s").ci95,
                throughput_agents_per_min: m("throughput_agents_per_min"),
                throughput_tokens_per_min: m("throughput_tokens_per_min"),
                rate_limited: m("rate_limited"),
                throttled_s: m("throttled_s"),
                parent_requests: extra(o, &shown, 0),
                parent_cost_usd: extra(o, &shown, 1),
                overloaded: extra(o, &shown, 2),
                failed_agents: extra(o, &shown, 3),
                isolated_misses: extra(o, &shown, 4),
                long_context_requests: extra(o, &shown, 5),
            }
        })
        .collect();
    let out = JsonOut {
        seed: exp.seed,
        name: &exp.name,
        question: &exp.question,
        replications: exp.replications,
        results,
        notes: crate::model::notes(exp),
    };
    let mut s = serde_json::to_string_pretty(&out).expect("results serialise");
    s.push('\n');
    s
}
