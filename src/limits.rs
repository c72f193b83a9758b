//! Limits: what a command may ask for before it starts, the value ranges inside which the
//! arithmetic is exact, and whose fault a run that stopped is.
//!
//! `run`, `sweep` and `tune` estimate their work (simulated requests), the memory of their
//! largest run and the bytes they will write before they start, and refuse (exit 2) above
//! `WorkLimits`, naming the estimate and the input that drives it; `--force` or the `[limits]`
//! keys raise them. The estimates are sums of documented per-item sizes, meant to be within a
//! small factor of the truth and never far below it. docs/limits.md is the user's page.
//!
//! Pure: no I/O, no clock. Knows the experiment's shape, not how the model runs it.

use crate::config::{AgentKind, ExperimentSpec};
use crate::dist::Dist;

mod schedule;
pub use schedule::{dist_high, past_horizon};

/// Most input tokens one run may bill (estimated): 2^53, where every count is still exact in
/// a double. Not raised by `--force`: beyond it the sums are no longer exact.
pub const MAX_RUN_TOKENS: f64 = 9_007_199_254_740_992.0;
/// Most a number in a result file may be, in magnitude. Nothing prefixsim writes comes near
/// it (a run bills at most 2^53 tokens at most $1M per million); above it a file is not ours,
/// and plot axes would overflow.
pub const MAX_RESULT_ABS: f64 = 1e30;

/// The `[limits]` keys that bound a command's work. They change no result, so they are not
/// part of the rendered experiment (nor of its content hash).
pub const WORK_LIMIT_KEYS: [&str; 4] =
    ["max_requests", "max_memory_mb", "max_output_mb", "max_points"];

/// Bounds on a whole command, checked against its estimate before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkLimits {
    /// Simulated requests, all runs of the command together (about 1 us of CPU each).
    pub max_requests: u64,
    /// Memory of the largest single run plus what the command keeps, in MiB.
    pub max_memory_mb: u64,
    /// Bytes written (result files, the sweep journal), in MiB.
    pub max_output_mb: u64,
    /// Sweep points, or tune candidates.
    pub max_points: u64,
}

impl Default for WorkLimits {
    fn default() -> Self {
        WorkLimits {
            max_requests: 10_000_000_000,
            max_memory_mb: 8 * 1024,
            max_output_mb: 10 * 1024,
            max_points: 100_000,
        }
    }
}

impl WorkLimits {
    /// The `[limits]` work keys of a raw experiment table (`config::resolve` has checked them);
    /// a key that is absent keeps its default.
    pub fn from_table(table: &toml::Table) -> WorkLimits {
        let mut l = WorkLimits::default();
        let Some(t) = table.get("limits").and_then(toml::Value::as_table) else { return l };
        let get = |k: &str| t.get(k).and_then(toml::Value::as_integer).map(|i| i.max(1) as u64);
        for (key, slot) in WORK_LIMIT_KEYS.iter().zip([
            &mut l.max_requests,
            &mut l.max_memory_mb,
            &mut l.max_output_mb,
            &mut l.max_points,
        ]) {
            if let Some(v) = get(key) {
                *slot = v;
            }
        }
        l
    }
}

/// Whose fault a failed run is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The experiment's own values stopped it (its horizon, its event limit, a rate limit that
    /// can never admit a request): bad input, exit 2.
    #[error("{0}")]
    Input(String),
    /// Anything else is a bug: exit 1.
    #[error("{0}")]
    Internal(String),
    /// Stopped from outside by its `exec::Watch` (the Python package's Ctrl-C) before every
    /// task ran; the command line never stops a run this way.
    #[error("interrupted")]
    Interrupted,
}

impl RunError {
    pub fn is_input(&self) -> bool {
        matches!(self, RunError::Input(_))
    }

    /// The same fault with its message rewritten (to add context).
    pub fn map(self, f: impl FnOnce(String) -> String) -> RunError {
        match self {
            RunError::Input(m) => RunError::Input(f(m)),
            RunError::Internal(m) => RunError::Internal(f(m)),
            RunError::Interrupted => RunError::Interrupted,
        }
    }
}

impl From<String> for RunError {
    fn from(msg: String) -> Self {
        RunError::Internal(msg)
    }
}

// -------------------------------------------------------------------------------------------
// Sizes. Each constant over-estimates what it stands for (measured on x86-64).

/// One block of a prompt's digest chain (layer, two token counts, a 32-byte digest).
const ENTRY_BYTES: f64 = 56.0;
/// One agent besides its prompt's blocks: its hash state, three random streams, bookkeeping.
const AGENT_BYTES: f64 = 2048.0;
/// One stored cache entry (slab slot, LRU links, hash-map slot), three per request at most.
const CACHE_ENTRY_BYTES: f64 = 3.0 * 128.0;
/// One queued event per agent.
const EVENT_BYTES: f64 = 32.0;
/// Three latency histograms (1 us .. 10 h, 3 digits: 264 KiB each).
const HISTOGRAMS_BYTES: f64 = 3.0 * 264.0 * 1024.0;
/// One replication's scalars as a command keeps them.
const KEPT_RUN_BYTES: f64 = 18.0 * 8.0 + 64.0;
/// A runs.csv row, a summary.csv row, one point's three histogram intervals (per strategy;
/// ~320 bytes each for the default workload's 10 replications).
const RUNS_ROW_BYTES: f64 = 300.0;
const SUMMARY_ROW_BYTES: f64 = 1500.0;
const HISTOGRAM_INTERVALS_BYTES: f64 = 3.0 * 512.0;
/// One request of a `--trace`d replication held until trace.csv is written: about four
/// timeline rows (three strings each) and the run's request record (measured: 975 B a
/// request, 20,000 agents x 6 strategies of the default experiment).
const TRACE_REQUEST_BYTES: f64 = 1280.0;
/// One request's rows of trace.csv (measured: 239 B).
const TRACE_CSV_REQUEST_BYTES: f64 = 320.0;
/// One value of an `empirical(file=...)` distribution as a run holds it: the spec's copies
/// (the experiment, each worker's tape key) and a sampler's (measured: 83 B a value).
const EMPIRICAL_VALUE_BYTES: f64 = 96.0;

/// Runs of one strategy per replication that the hold answer's search makes (`sweep::hold`:
/// 13 grid caps and 2 refinements of 7, at the point fit and at each calibration refit); a
/// test there holds the two together.
pub const HOLD_SEARCH_RUNS: f64 =
    (13.0 + 14.0) * (1.0 + crate::config::latency_presets::CALIBRATION_DRAWS as f64);

/// The runs of one strategy per replication that `exp`'s hold answer adds: `HOLD_SEARCH_RUNS`
/// when `[report] answer = "hold_cap"` and a `wait_first` is run (`sweep::hold::for_experiment`),
/// else 0.
pub fn hold_search_runs(exp: &ExperimentSpec) -> f64 {
    use crate::config::{Answer, Strategy};
    let holds = exp.strategies.iter().any(|s| matches!(s, Strategy::WaitFirst { .. }));
    if exp.report.answer == Some(Answer::HoldCap) && holds && cfg!(feature = "sweep") {
        HOLD_SEARCH_RUNS
    } else {
        0.0
    }
}

/// The size of one simulated run (one strategy, one replication) of an experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSize {
    pub requests: f64,
    pub memory_bytes: f64,
    /// Input tokens billed (means; a request's prompt grows by a turn's output and result).
    pub tokens: f64,
    /// The turns a single agent may draw (the 1e-8 tail), and the parent's turns.
    pub turns_high: f64,
    pub parent_turns: f64,
}

/// The parent's turns while the fan-out runs: at most one per `parent_turn_every` up to the
/// horizon, and never more than the run's event limit.
fn parent_turns(exp: &ExperimentSpec) -> f64 {
    let turns = exp.limits.horizon_us.checked_div(exp.workload.parent_turn_every_us);
    turns.map_or(0.0, |n| n.min(exp.limits.max_events) as f64)
}

/// The values of every `empirical` distribution of `exp` (a values file's are held whole).
pub fn empirical_values(exp: &ExperimentSpec) -> f64 {
    let w = &exp.workload;
    let mut dists = vec![
        &w.parent_turn_tokens,
        &w.turns,
        &w.output_tokens,
        &w.tool_latency_us,
        &w.tool_result_tokens,
    ];
    for l in std::iter::once(&exp.latency).chain(exp.latency_other.as_ref()) {
        dists.extend([
            &l.overhead_us,
            &l.prefill_rate,
            &l.cached_rate,
            &l.decode_rate,
            &l.ready_delay_us,
            &l.attention_rate,
        ]);
    }
    dists.extend(exp.rate_limits.as_ref().map(|r| &r.retry_jitter_us));
    let values = |d: &Dist| match d {
        Dist::Empirical(v) => v.len() as f64,
        _ => 0.0,
    };
    dists.into_iter().map(values).sum()
}

/// Estimate one run of `exp`.
pub fn run_size(exp: &ExperimentSpec) -> RunSize {
    let w = &exp.workload;
    let btw = w.kind == AgentKind::Btw;
    let turns = if btw { 1.0 } else { w.turns.mean().max(1.0) };
    let turns_high = if btw { 1.0 } else { dist_high(&w.turns).clamp(1.0, u32::MAX as f64) };
    let parent_turns = parent_turns(exp);
    let agents = f64::from(w.agents);
    let requests = agents * turns + parent_turns + 1.0;
    // Every agent's prompt: the line it forks (5 blocks, plus the parent's exchanges), its
    // brief and task, two blocks a turn; the largest agent reserves room for its own turns.
    let line_blocks = 6.0 + 2.0 * parent_turns;
    let per_agent = AGENT_BYTES + (line_blocks + 3.0 + 2.0 * turns) * ENTRY_BYTES;
    let memory_bytes = (agents + 1.0) * (per_agent + EVENT_BYTES)
        + 2.0 * turns_high * ENTRY_BYTES
        + 3.0 * line_blocks * ENTRY_BYTES
        + requests * CACHE_ENTRY_BYTES
        + HISTOGRAMS_BYTES
        + empirical_values(exp) * EMPIRICAL_VALUE_BYTES;
    let exchange = w.output_tokens.mean() + w.tool_result_tokens.mean();
    let line = if w.kind == AgentKind::Subagent { w.subagent_tokens } else { w.parent_tokens };
    let base =
        (line + w.brief_tokens + w.task_tokens) as f64 + parent_turns * w.parent_turn_tokens.mean();
    // Turn k re-sends the base and the k earlier exchanges: T * base + T^2 / 2 * exchange.
    let per_agent_tokens = turns * base + turns * turns / 2.0 * exchange;
    let tokens = agents * per_agent_tokens + parent_turns * base;
    RunSize { requests, memory_bytes, tokens, turns_high, parent_turns }
}

/// Bytes of the result files for `runs` replications over `rows` (point, strategy) rows with
/// `axes` axis columns; a sweep writes them twice (journal, then the outputs).
pub fn output_bytes(rows: f64, runs: f64, axes: usize) -> f64 {
    let axis_cols = 24.0 * axes as f64;
    runs * (RUNS_ROW_BYTES + axis_cols)
        + rows * (SUMMARY_ROW_BYTES + axis_cols + HISTOGRAM_INTERVALS_BYTES)
}

/// What a command keeps in memory per replication and per (point, strategy) row.
pub fn kept_bytes(rows: f64, runs: f64) -> f64 {
    runs * KEPT_RUN_BYTES + rows * HISTOGRAMS_BYTES
}

/// One input that drives an estimate, and how far it is above its default.
#[derive(Debug, Clone, PartialEq)]
pub struct Driver {
    /// How to name it: `replications = 1000000000`, `[sweep] workload.agents = 2000000`.
    pub what: String,
    /// Its value over its default (the largest ratio is named in a refusal).
    pub ratio: f64,
}

impl Driver {
    pub fn new(what: impl Into<String>, value: f64, default: f64) -> Driver {
        Driver { what: what.into(), ratio: value / default.max(1e-300) }
    }
}

/// The inputs that size one experiment's runs, each against a typical value (the defaults;
/// 8 turns): the one furthest above is named when `resource` is refused.
pub fn drivers(exp: &ExperimentSpec, resource: Resource) -> Vec<Driver> {
    let w = &exp.workload;
    let size = run_size(exp);
    let turns = crate::config::dist_label(&w.turns, crate::config::Quantity::Number);
    let r = exp.replications;
    let mut d = vec![
        Driver::new(format!("workload.agents = {}", w.agents), w.agents.into(), 10.0),
        Driver::new(format!("replications = {r}"), r.into(), 100.0),
    ];
    d.push(match resource {
        Resource::Memory => Driver::new(
            format!("workload.turns = \"{turns}\" (an agent may draw {})", sci(size.turns_high)),
            size.turns_high,
            8.0,
        ),
        _ => Driver::new(format!("workload.turns = \"{turns}\""), w.turns.mean(), 8.0),
    });
    if size.parent_turns > 0.0 {
        let every = crate::time::Human(w.parent_turn_every_us);
        let what = format!(
            "workload.parent_turn_every = \"{every}\" (up to {} parent turns a run)",
            sci(size.parent_turns)
        );
        d.push(Driver::new(what, size.parent_turns, 100.0));
    }
    if resource == Resource::Tokens {
        let p = w.parent_tokens.max(w.subagent_tokens);
        d.push(Driver::new(format!("workload.parent_tokens = {p}"), p as f64, 50_000.0));
    }
    d
}

/// What an estimate measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Requests,
    Memory,
    Output,
    Points,
    Tokens,
}

impl Resource {
    fn describe(self, x: f64) -> String {
        match self {
            Resource::Requests => format!("{} simulated requests", sci(x)),
            Resource::Memory => format!("{} of memory", bytes(x)),
            Resource::Output => format!("{} of result files", bytes(x)),
            Resource::Points => format!("{} points", sci(x)),
            Resource::Tokens => format!("{} input tokens in one run", sci(x)),
        }
    }
}

/// A number for people: exact below a million, else 3 significant digits in e-notation.
pub fn sci(x: f64) -> String {
    if x < 1e6 {
        format!("{}", x.round())
    } else {
        format!("{x:.2e}")
    }
}

/// Bytes for people.
pub fn bytes(x: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = x;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// An estimate of a command: every resource with how it was reached and what drives it.
#[derive(Debug, Clone, Default)]
pub struct Estimate {
    /// (resource, amount, how it was reached, its drivers)
    pub parts: Vec<(Resource, f64, String, Vec<Driver>)>,
    /// A point whose runs cannot end before its horizon (`past_horizon`), named: refused first.
    pub past_horizon: Option<String>,
}

impl Estimate {
    pub fn add(&mut self, r: Resource, amount: f64, how: impl Into<String>, drivers: Vec<Driver>) {
        self.parts.push((r, amount, how.into(), drivers));
    }

    /// Refuse the first resource above its limit, naming the estimate, how it was reached,
    /// the input that drives it most and how to go on. `force` lifts every limit but the
    /// token bound (past which the counts are not exact).
    pub fn check(&self, limits: &WorkLimits, force: bool) -> Result<(), LimitError> {
        if let Some(why) = &self.past_horizon {
            return Err(LimitError::PastHorizon(why.clone()));
        }
        for (r, amount, how, drivers) in &self.parts {
            let (limit, key, scale) = match r {
                Resource::Requests => (limits.max_requests as f64, "limits.max_requests", 1.0),
                Resource::Memory => (limits.max_memory_mb as f64, "limits.max_memory_mb", MIB),
                Resource::Output => (limits.max_output_mb as f64, "limits.max_output_mb", MIB),
                Resource::Points => (limits.max_points as f64, "limits.max_points", 1.0),
                Resource::Tokens => (MAX_RUN_TOKENS, "", 1.0),
            };
            let over = !amount.is_finite() || *amount > limit * scale;
            if !over || (force && *r != Resource::Tokens) {
                continue;
            }
            let cause = drivers
                .iter()
                .max_by(|a, b| a.ratio.total_cmp(&b.ratio))
                .map(|d| format!("; it comes mostly from {}", d.what))
                .unwrap_or_default();
            let what = r.describe(*amount);
            let how = how.clone();
            if *r == Resource::Tokens {
                return Err(LimitError::Inexact { what, how, cause });
            }
            return Err(LimitError::Above {
                resource: *r,
                what,
                how,
                key,
                limit: limit as u64,
                cause,
            });
        }
        Ok(())
    }
}

/// A limit for people: MiB limits as bytes, counts as numbers.
fn limit_text(resource: Resource, limit: u64) -> String {
    match resource {
        Resource::Memory | Resource::Output => bytes(limit as f64 * MIB),
        _ => sci(limit as f64),
    }
}

/// Why a command refused to start: its estimate is above a limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimitError {
    /// Above a `[limits]` key (`--force` lifts it).
    #[error(
        "refusing to start: estimated {what} ({how}), above {key} = {limit} ({}){cause}; \
         lower it, raise the limit (`--set {key}=N` or `[limits]` in the file), or pass \
         --force (see docs/limits.md)",
        limit_text(*resource, *limit)
    )]
    Above {
        resource: Resource,
        /// The estimate, for people (`2.00e10 simulated requests`).
        what: String,
        /// How it was reached.
        how: String,
        key: &'static str,
        limit: u64,
        /// `; it comes mostly from ...`, or empty.
        cause: String,
    },
    /// Past 2^53 input tokens in one run, where counts stop being exact (never lifted).
    #[error(
        "this would bill about {what} ({how}), more than 2^53, where token counts stop \
         being exact{cause}: make the runs smaller"
    )]
    Inexact { what: String, how: String, cause: String },
    /// A run cannot end before its horizon (`past_horizon`; never lifted: it would stop there).
    #[error("{0}")]
    PastHorizon(String),
}

/// `past_horizon` of one experiment as an error (`run`, under `--force` too).
pub fn check_horizon(exp: &ExperimentSpec) -> Result<(), LimitError> {
    past_horizon(exp).map_or(Ok(()), |why| Err(LimitError::PastHorizon(why)))
}

const MIB: f64 = 1024.0 * 1024.0;

/// The estimate of `run`: every strategy x replication of `exp`; `out`: result files written.
/// (The command itself calls `estimate_run_traced`; the tests and fuzz targets call this.)
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn estimate_run(exp: &ExperimentSpec, out: bool) -> Estimate {
    estimate_run_traced(exp, out, false)
}

/// `estimate_run`, with `trace`: trace.csv written too (with `out`), the timeline of every
/// strategy's replication 0 held until it is.
pub fn estimate_run_traced(exp: &ExperimentSpec, out: bool, trace: bool) -> Estimate {
    let size = run_size(exp);
    let (s, r) = (exp.strategies.len() as f64, f64::from(exp.replications));
    let h = hold_search_runs(exp);
    let mut e = Estimate::default();
    let drv = |res| {
        let mut d = drivers(exp, res);
        d.push(Driver::new(format!("{s} strategies"), s, 5.0));
        d
    };
    let runs = match h {
        0.0 => format!("{s} strategies"),
        h => format!("({s} strategies + {h} runs of the hold cap's search)"),
    };
    let how = format!("{runs} x {r} replications x {} per run", sci(size.requests));
    e.add(Resource::Requests, (s + h) * r * size.requests, how, drv(Resource::Requests));
    let kept = kept_bytes(s, s * r);
    let mut how = format!("{} for the largest run, {} kept", bytes(size.memory_bytes), bytes(kept));
    let (traced, mut mem_drivers) = (s * size.requests, drv(Resource::Memory));
    let trace = trace && out;
    let trace_mem = if trace { traced * TRACE_REQUEST_BYTES } else { 0.0 };
    if trace {
        how.push_str(&format!(", {} for --trace", bytes(trace_mem)));
        mem_drivers.push(trace_driver(traced, trace_mem, size.memory_bytes + kept));
    }
    e.add(Resource::Memory, size.memory_bytes + kept + trace_mem, how, mem_drivers);
    if out {
        let mut how = format!("{} runs.csv rows", sci(s * r));
        let mut amount = output_bytes(s, s * r, 0);
        let mut drivers = drv(Resource::Output);
        if trace {
            let csv = traced * TRACE_CSV_REQUEST_BYTES;
            how.push_str(&format!(", {} of trace.csv", bytes(csv)));
            drivers.push(trace_driver(traced, csv, amount));
            amount += csv;
        }
        e.add(Resource::Output, amount, how, drivers);
    }
    e.add(Resource::Tokens, size.tokens, "per run".to_string(), drivers(exp, Resource::Tokens));
    e
}

/// `--trace` as what drives an estimate: `traced` requests (every strategy's replication 0)
/// take `amount` besides the `rest`; named first when it is the larger part.
fn trace_driver(traced: f64, amount: f64, rest: f64) -> Driver {
    let what = format!(
        "--trace (the timeline of replication 0: {} requests of every strategy, {} kept)",
        sci(traced),
        bytes(amount)
    );
    Driver { what, ratio: if amount > rest { f64::INFINITY } else { 0.0 } }
}

/// The estimate of a grid's size alone (checked before its points are looked at): `how` it
/// is reached, and each axis (name, number of values) as a driver.
pub fn estimate_grid(points: u64, how: &str, axes: &[(String, usize)]) -> Estimate {
    let mut e = Estimate::default();
    let drivers = axes
        .iter()
        .map(|(a, n)| Driver::new(format!("{a} ({n} values)"), *n as f64, 1.0))
        .collect();
    e.add(Resource::Points, points as f64, how.to_string(), drivers);
    e
}

/// The resources a grid's estimate sums or bounds, in the order of `estimate_points`' arrays.
const RESOURCES: [Resource; 4] =
    [Resource::Requests, Resource::Memory, Resource::Output, Resource::Tokens];

/// The largest contribution so far to one resource: (amount, point label, its drivers).
type Largest = Option<(f64, String, Vec<Driver>)>;

fn keep_largest(slot: &mut Largest, amount: f64, label: &str, exp: &ExperimentSpec, r: Resource) {
    if slot.as_ref().is_none_or(|(a, _, _)| amount > *a) {
        *slot = Some((amount, label.to_string(), drivers(exp, r)));
    }
}

/// The estimate of a grid of points (a sweep's, a tune's candidates): `points` yields each
/// point's label and experiment; `extra` more points as large as the largest may follow (tune
/// refinement); `axes` axis columns; `writes`: result files and a journal (sweep).
pub fn estimate_points(
    what: &str,
    n: u64,
    points: impl Iterator<Item = (String, ExperimentSpec)>,
    extra: u64,
    axes: usize,
    writes: bool,
) -> Estimate {
    let (mut requests, mut output, mut memory, mut tokens) = (0.0, 0.0, 0.0f64, 0.0f64);
    let mut largest: [Largest; 4] = Default::default();
    let mut max_requests = 0.0f64;
    let mut past = None;
    for (label, exp) in points {
        if past.is_none() {
            past = past_horizon(&exp).map(|why| format!("{label}: {why}"));
        }
        let size = run_size(&exp);
        let (s, r) = (exp.strategies.len() as f64, f64::from(exp.replications));
        let req = (s + hold_search_runs(&exp)) * r * size.requests;
        let mem = size.memory_bytes + kept_bytes(s, s * r);
        let out = 2.0 * output_bytes(s, s * r, axes);
        (requests, output, max_requests) = (requests + req, output + out, max_requests.max(req));
        (memory, tokens) = (memory.max(mem), tokens.max(size.tokens));
        let amounts = [req, mem, out, size.tokens];
        for ((slot, amount), r) in largest.iter_mut().zip(amounts).zip(RESOURCES) {
            keep_largest(slot, amount, &label, &exp, r);
        }
    }
    requests += extra as f64 * max_requests;
    let grid = Driver::new(format!("{what} ({} points)", n + extra), (n + extra) as f64, 10.0);
    let mut e = Estimate { past_horizon: past, ..Estimate::default() };
    let amounts = [requests, memory, output, tokens];
    for ((slot, amount), r) in largest.into_iter().zip(amounts).zip(RESOURCES) {
        if r == Resource::Output && !writes {
            continue;
        }
        let Some((top, label, drv)) = slot else { continue };
        let at = |what: String| match label.contains(&what) {
            true => what,
            false => format!("{what} (at {label})"),
        };
        let mut drivers: Vec<Driver> =
            drv.into_iter().map(|d| Driver { what: at(d.what), ratio: d.ratio }).collect();
        let how = match r {
            Resource::Memory | Resource::Tokens => format!("the largest point, {label}"),
            _ => {
                drivers.push(grid.clone());
                format!("{} points, the largest {label} with {}", n + extra, r.describe(top))
            }
        };
        e.add(r, amount, how, drivers);
    }
    e
}
