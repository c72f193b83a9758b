//! `tune`: the value of one parameter of an experiment file that minimises an objective
//! (`crate::sweep::tune` searches; `crate::sweep::hold` for the hold cap), every argument
//! checked and the work estimated against the limits before any candidate runs, and
//! `tune.json` written under the output directory's lock. `prefixsim tune` is this and a
//! print. The report's JSON (`TuneReport`) is tune.json's schema.

use std::path::PathBuf;

use super::error::Error;
use super::experiment::Experiment;
use super::outdir;
use crate::config;
use crate::exec::{self, ModelRunner, ResolveError, Runner};
use crate::limits::{self, WorkLimits};
use crate::sweep::hold;
use crate::sweep::table::canonical_key;
use crate::sweep::tune::{self, Objective, Value};

pub use report::TuneReport;

mod report;

/// A tuning request: the fields are `prefixsim tune`'s arguments (see its `--help`).
#[derive(Debug, Clone)]
pub struct TuneRequest {
    /// The experiment file (its `[sweep]` table is ignored).
    pub file: PathBuf,
    /// `--set` assignments, applied in order.
    pub sets: Vec<String>,
    /// The parameter: a dotted key, or `max_wait` / `wait_first.max_wait` /
    /// `strategy.<name>.<param>`.
    pub param: String,
    /// The candidate values (`0s..10s step 1s`, `1..64 x2`, `0s,1s,5s`); optional for the
    /// hold cap, whose grid is the hold answer's.
    pub range: Option<String>,
    /// What to minimise: `cost`, `cost+LAMBDA*p95_makespan`, `cost_subject_to_p99_...<=2s`.
    pub objective: String,
    /// Lambda in USD per second of p95 makespan, for `cost+lambda*p95_makespan`.
    pub lambda: Option<f64>,
    /// The strategy to tune (default: the one the parameter belongs to, else the first).
    pub strategy: Option<String>,
    /// Refinement rounds after the coarse grid.
    pub refine: u32,
    /// Threads; `None`: all cores. Never changes a result.
    pub jobs: Option<usize>,
    /// Also write DIR/tune.json (locked while written).
    pub out: Option<PathBuf>,
    /// Start even when the candidates, the estimated work or memory are above the limits.
    pub force: bool,
}

/// Refuse a strategy parameter tune cannot vary, a key of no modelled quantity, or an
/// undotted key that is no parameter, suggesting the closest spelling; dotted experiment keys
/// are checked by the resolver (which suggests too).
fn check_param(param: &str) -> Result<(), Error> {
    let key = canonical_key(param);
    let spellings = config::names::strategy_param_spellings();
    if spellings.iter().any(|p| canonical_key(p) == key) {
        return Ok(());
    }
    if not_modelled(&key) {
        return Err(Error::Usage(format!(
            "--param {param}: not a parameter of the model: tune varies what the simulation \
             models (a workload, cache, latency, server, price or strategy key); `seed`, \
             `replications`, `limits.*`, `report.*`, `sweep.*`, `name` and `question` change \
             no modelled quantity"
        )));
    }
    if param.contains('.') && !key.starts_with("strategy.") {
        return Ok(());
    }
    let hint = config::call::did_you_mean(param, spellings.iter().map(String::as_str))
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    Err(Error::Usage(format!(
        "--param {param}: not a parameter tune can vary; {hint}(strategy parameters: max_wait \
         (= wait_first.max_wait, strategy.wait_first.max_wait), interval (= stagger.interval, \
         strategy.stagger.interval); or a numeric dotted key of the experiment, e.g. \
         workload.concurrency)"
    )))
}

/// Keys that set no modelled quantity: the random seed and the replication count (the
/// objective's noise, not the system), the run and work limits, the report's settings, and
/// what a sweep cannot sweep either (`sweep.*`, `name`, `question`).
fn not_modelled(key: &str) -> bool {
    ["seed", "replications"].contains(&key)
        || ["limits.", "report."].iter().any(|p| key.starts_with(p))
        || crate::sweep::spec::changes_nothing(key)
}

/// The candidate values of `table` at `param`, resolved one by one (for the limits and the
/// first probe); an error names the value.
fn resolve_candidate(
    runner: &ModelRunner,
    table: &toml::Table,
    param: &str,
    v: Value,
) -> Result<crate::config::ExperimentSpec, String> {
    tune::candidate_table(table, param, v)
        .map_err(|e| e.to_string())
        .and_then(|t| runner.resolve(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("--param {param} = {}: {e}", v.label()))
}

/// Search the value of `req.param` that minimises `req.objective` (for the hold cap, the hold
/// answer's search), every argument checked and the work estimated before any candidate
/// runs; with `req.out`, tune.json written there.
pub fn tune(req: &TuneRequest) -> Result<TuneReport, Error> {
    // `[sweep]` stays (`resolve` ignores it; `[report] assumptions` may name its axes).
    let (_, table) = Experiment::read_table(&req.file, &req.sets)?;
    tune_table(req, req.file.display().to_string(), table)
}

/// `tune` of an experiment's table read already (`req.file` and `req.sets` unread: `table`,
/// from `origin`, has its assignments applied).
pub(crate) fn tune_table(
    req: &TuneRequest,
    origin: String,
    mut table: toml::Table,
) -> Result<TuneReport, Error> {
    check_param(&req.param)?;
    let objective = Objective::parse(&req.objective, req.lambda).map_err(Error::usage)?;
    let range = range_of(req)?;
    let values = tune::parse_values(&range).map_err(Error::usage)?;
    let strategy = tune::focus_strategy(&mut table, &req.param, req.strategy.as_deref())
        .map_err(|e| Error::Usage(format!("{origin}: {e}")))?;
    let runner = ModelRunner { origin };
    runner.resolve(&table).map_err(|e| match e {
        ResolveError::Config(e) => Error::Config(e.blame_set(&req.sets)),
        e => Error::Usage(e.to_string()),
    })?;
    let probe = resolve_candidate(&runner, &table, &req.param, values[0]).map_err(Error::Usage)?;
    let desc = runner.describe(&probe);
    if !req.force {
        check_limits(req, &runner, &table, &values)?;
    }
    // Opened (and locked) before the work: a directory that will be refused is refused now.
    let out = req.out.as_deref().map(|d| outdir::open(d, req.force, "")).transpose()?;
    let jobs = req.jobs.unwrap_or_else(exec::default_jobs);
    let hold_cap = tune::is_hold_cap(&req.param)
        && values.iter().all(|v| v.kind == tune::Kind::Duration)
        && canonical_key(&req.param) == canonical_key(hold::HOLD_PARAM);
    let (tuned, answer) = if hold_cap {
        let base = runner.resolve(&table).map_err(|e| Error::Usage(e.to_string()))?;
        let draws = hold::draw_tables(&table, &base);
        let (r, o) = (&range, &objective);
        let (t, a) =
            hold::answer(&runner, &table, &draws, &strategy, r, values, o, req.refine, jobs)?;
        (t, a.map(|a| a.of_experiment(&base)))
    } else {
        let (p, o) = (&req.param, &objective);
        (tune::run_tune(&runner, &table, strategy, p, values, o, req.refine, jobs)?, None)
    };
    let borrowed = crate::config::latency_origin::borrowed(&probe).map(|b| b.line());
    let report = TuneReport::new(&req.param, &objective, &desc, &tuned, answer, borrowed);
    // No answer, no file: a tune.json always recommends a value.
    // (Dropped unwritten, `out` removes the directory it created or the staging one.)
    if let (Some(out), None) = (out, report.unmet_objective()) {
        crate::results::write_atomic(&out.path().join("tune.json"), report.to_json())?;
        out.commit()?;
    }
    Ok(report)
}

/// `--range`, or for the hold cap the hold answer's grid (`sweep::hold::HOLD_RANGE`).
fn range_of(req: &TuneRequest) -> Result<String, Error> {
    let hold = canonical_key(&req.param) == canonical_key(hold::HOLD_PARAM);
    match &req.range {
        Some(r) => Ok(r.clone()),
        None if hold => Ok(hold::HOLD_RANGE.to_string()),
        None => Err(Error::Usage(format!(
            "--param {}: give the candidate values with --range",
            req.param
        ))),
    }
}

/// Refuse more candidates than `limits.max_points`, then work or memory above the limits:
/// every coarse candidate is estimated, and each refinement round adds 7 candidates as large
/// as the largest.
fn check_limits(
    req: &TuneRequest,
    runner: &ModelRunner,
    table: &toml::Table,
    values: &[Value],
) -> Result<(), Error> {
    let limits = WorkLimits::from_table(table);
    let extra = 7 * u64::from(req.refine);
    let n = values.len() as u64;
    let how = format!("{n} values of --range and {extra} of --refine {}", req.refine);
    let axes = [(format!("--range {}", range_of(req)?), values.len())];
    limits::estimate_grid(n + extra, &how, &axes).check(&limits, false)?;
    let mut failed = None;
    let exps =
        values.iter().map_while(|&v| match resolve_candidate(runner, table, &req.param, v) {
            Ok(exp) => Some((format!("candidate {} = {}", req.param, v.label()), exp)),
            Err(e) => {
                failed = Some(e);
                None
            }
        });
    let estimate = limits::estimate_points("--range", n, exps, extra, 0, false);
    if let Some(m) = failed {
        return Err(Error::Usage(m));
    }
    Ok(estimate.check(&limits, false)?)
}
