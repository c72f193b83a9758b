//! `prefixsim tune FILE --param KEY --range R [--objective ...] [--json] [--out DIR]`: the value
//! of one parameter that minimises an objective (see `crate::sweep::tune`).

use std::path::PathBuf;

use serde::Serialize;

use super::guard::{self, check_work, lock_dir};
use super::shared::Overrides;
use super::{CliError, CliResult};
use crate::config;
use crate::exec::{self, ModelSim, ResolveError, Simulator};
use crate::limits::{self, WorkLimits};
use crate::sweep::hold;
use crate::sweep::tune::{self, Candidate, Objective, Tuned};
use crate::sweep::{output, table};

pub const EXAMPLES: &str = "  prefixsim tune experiments/default.toml --param max_wait
  prefixsim tune experiments/default.toml --param max_wait --range '0s..10s step 1s'
  prefixsim tune experiments/default.toml --param wait_first.max_wait --range '0s..10s step 500ms' \\
      --objective 'cost_subject_to_p99_launch_wait<=3s' --json
  prefixsim tune experiments/default.toml --param workload.concurrency --range '1..16 x2' \\
      --strategy eager --objective 'cost+0.001*p95_makespan' --out results/tune
";

const AFTER_HELP: &str = "\
Every candidate runs the file's replications with the file's seed (common random numbers),
so candidates are compared pairwise: two values tie when the 95% CI of their per-replication
difference contains zero. Among ties the recommendation has the least p99 launch wait, then
the smallest value. After the coarse --range, --refine rounds evaluate 7 values between the
neighbours of the current recommendation.

A wait_first candidate's p_capped is the share of replications whose cap fired before the first
writer's response began (the hold then saved nothing). A hold cap is kept off that knife edge:
when the pick lies in [p5, p99) of the first writer's time to first token, the recommendation
moves to the smallest cap at or above its p99 (else p95) that ties with the best; tune says
the margin it kept, and warns when no such cap ties.

Tuning the hold cap (max_wait) gives the hold answer that `run`, `report` and `serve` print for
the same experiment (without --range, over their grid 0s,1s,...,10s,15s,20s,30s,60s): the
same search runs again at each of the latency calibration's 20 bootstrap refits (when the
experiment runs at the calibrated preset), and tune prints the range of caps they recommend
and how often the first token comes after the recommended cap over their replications. A cap
after which the first token comes in more than 5% of replications is on a knife edge.

Objectives:
  cost                                    mean cost per run (USD)
  cost+0.002*p95_makespan                 cost + lambda (USD per second) * p95 makespan
  cost+lambda*p95_makespan --lambda 0.002 the same, lambda given apart
  cost_subject_to_p99_launch_wait<=2s     least cost among values meeting the bound
                                          (also p50/p90/p95/p999; ttft, completion)

`max_wait` and `wait_first.max_wait` are short for strategy.wait_first.max_wait, `interval` and
`stagger.interval` for strategy.stagger.interval.
Exit code 2 on a bad file, key, range or objective, on work above the limits of docs/limits.md
(`--force` lifts them), or when a candidate's run stops at its own limits.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
#[command(mut_arg("set", |a| a.help("Override a dotted key of the file (repeatable).")))]
pub struct Args {
    /// The experiment file.
    pub file: PathBuf,
    /// The parameter: a dotted key, or `max_wait` / `wait_first.max_wait` /
    /// `strategy.<name>.<param>`.
    #[arg(long, value_name = "KEY")]
    pub param: String,
    /// Candidate values: `0s..10s step 1s`, `1..64 x2` or a comma list `0s,1s,5s`. Optional
    /// for the hold cap (`max_wait`): the grid `run`, `report` and `serve` search.
    #[arg(long, value_name = "R")]
    pub range: Option<String>,
    /// What to minimise (see below).
    #[arg(long, default_value = "cost")]
    pub objective: String,
    /// Lambda in USD per second of p95 makespan, for `cost+lambda*p95_makespan`.
    #[arg(long)]
    pub lambda: Option<f64>,
    /// The strategy to tune (default: the one the parameter belongs to, else the file's first).
    #[arg(long, value_name = "LABEL")]
    pub strategy: Option<String>,
    /// Refinement rounds after the coarse grid.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub refine: u32,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Threads (default: all cores); results do not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write DIR/tune.json.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Start even when the candidates or the estimated work or memory are above the limits
    /// (docs/limits.md).
    #[arg(long)]
    pub force: bool,
}

fn input(msg: String) -> CliError {
    CliError::input(anyhow::anyhow!(msg))
}

/// The strategy parameters `tune` can vary, in full and in every short spelling.
const STRATEGY_PARAMS: [&str; 6] = [
    "max_wait",
    "wait_first.max_wait",
    "strategy.wait_first.max_wait",
    "interval",
    "stagger.interval",
    "strategy.stagger.interval",
];

/// Refuse a strategy parameter tune cannot vary, or an undotted key that is no parameter,
/// suggesting the closest spelling; dotted experiment keys are checked by the resolver (which
/// suggests too).
fn check_param(param: &str) -> Result<(), CliError> {
    let key = table::canonical_key(param);
    let known = STRATEGY_PARAMS.iter().any(|p| table::canonical_key(p) == key);
    let top_level = ["seed", "replications"].contains(&param);
    let experiment_key = param.contains('.') && !key.starts_with("strategy.");
    if known || top_level || experiment_key {
        return Ok(());
    }
    let spellings = STRATEGY_PARAMS.iter().copied().chain(["seed", "replications"]);
    let hint = config::call::did_you_mean(param, spellings)
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    Err(input(format!(
        "--param {param}: not a parameter tune can vary; {hint}(strategy parameters: max_wait \
         (= wait_first.max_wait, strategy.wait_first.max_wait), interval (= stagger.interval, \
         strategy.stagger.interval); or a numeric dotted key of the experiment, e.g. \
         workload.concurrency)"
    )))
}

pub fn run(args: Args) -> CliResult {
    check_param(&args.param)?;
    let sets = args.overrides.assignments()?;
    let origin = args.file.display().to_string();
    let text = config::read_experiment(&args.file)
        .map_err(|e| input(format!("cannot read {origin}: {e}")))?;
    let mut table = config::parse_table(&text, &origin).map_err(CliError::input)?;
    for s in &sets {
        config::apply_set(&mut table, s).map_err(CliError::input)?;
    }
    table.remove("sweep");
    let objective = Objective::parse(&args.objective, args.lambda).map_err(CliError::input)?;
    let range = range_of(&args)?;
    let values = tune::parse_values(&range).map_err(|e| input(e.to_string()))?;
    let strategy = tune::focus_strategy(&mut table, &args.param, args.strategy.as_deref())
        .map_err(|e| input(format!("{origin}: {e}")))?;
    let sim = ModelSim { origin: origin.clone() };
    sim.resolve(&table).map_err(|e| match e {
        ResolveError::Config(e) => CliError::input(e.blame_set(&sets)),
        e => input(e.to_string()),
    })?;
    let probe = tune::candidate_table(&table, &args.param, values[0])
        .map_err(|e| e.to_string())
        .and_then(|t| sim.resolve(&t).map_err(|e| e.to_string()))
        .map_err(|e| input(format!("--param {} = {}: {e}", args.param, values[0].label())))?;
    let desc = sim.describe(&probe);
    check_limits(&args, &sim, &table, &values)?;
    let jobs = args.jobs.unwrap_or_else(exec::default_jobs);
    let hold_cap = tune::is_hold_cap(&args.param)
        && values.iter().all(|v| v.kind == tune::Kind::Duration)
        && table::canonical_key(&args.param) == table::canonical_key(hold::HOLD_PARAM);
    let (tuned, answer) = if hold_cap {
        let (r, o) = (&range, &objective);
        let base = sim.resolve(&table).map_err(|e| input(e.to_string()))?;
        let draws = hold::draw_tables(&table, &base);
        hold::answer(&sim, &table, &draws, &strategy, r, values, o, args.refine, jobs)
    } else {
        let (p, o) = (&args.param, &objective);
        tune::run_tune(&sim, &table, strategy, p, values, o, args.refine, jobs).map(|t| (t, None))
    }
    .map_err(guard::run_error)?;
    let mut report = Report::new(&args.param, &objective, desc.replications, &tuned);
    if let Some(a) = &answer {
        report.notes.push(a.sentence());
    }
    report.hold = answer;
    (report.name, report.question) = (desc.name, desc.question);
    let json = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
    if let Some(dir) = &args.out {
        let _lock = lock_dir(dir, "--out")?;
        output::write_atomic(&dir.join("tune.json"), &json)
            .map_err(|e| CliError::internal(anyhow::anyhow!(e)))?;
    }
    if args.json {
        out!("{json}")?;
    } else {
        out!("{}", report.table(&tuned))?;
    }
    if tuned.verdict.is_none() {
        return Err(input(format!(
            "no value in the range meets the objective `{}`",
            objective.name()
        )));
    }
    Ok(())
}

/// `--range`, or for the hold cap the hold answer's grid (`sweep::hold::HOLD_RANGE`).
fn range_of(args: &Args) -> Result<String, CliError> {
    let hold = table::canonical_key(&args.param) == table::canonical_key(hold::HOLD_PARAM);
    match &args.range {
        Some(r) => Ok(r.clone()),
        None if hold => Ok(hold::HOLD_RANGE.to_string()),
        None => {
            Err(input(format!("--param {}: give the candidate values with --range", args.param)))
        }
    }
}

/// Refuse (unless `--force`) more candidates than `limits.max_points`, then work or memory
/// above the limits: every coarse candidate is estimated, and each refinement round adds 7
/// candidates as large as the largest.
fn check_limits(
    args: &Args,
    sim: &ModelSim,
    table: &toml::Table,
    values: &[tune::Value],
) -> Result<(), CliError> {
    if args.force {
        return Ok(());
    }
    let limits = WorkLimits::from_table(table);
    let extra = 7 * u64::from(args.refine);
    let n = values.len() as u64;
    let how = format!("{n} values of --range and {extra} of --refine {}", args.refine);
    let axes = [(format!("--range {}", range_of(args)?), values.len())];
    check_work(&limits::estimate_grid(n + extra, &how, &axes), &limits, false)?;
    let mut failed = None;
    let exps = values.iter().map_while(|&v| {
        let named = |e: String| format!("--param {} = {}: {e}", args.param, v.label());
        let exp = tune::candidate_table(table, &args.param, v)
            .map_err(|e| e.to_string())
            .and_then(|t| sim.resolve(&t).map_err(|e| e.to_string()));
        match exp {
            Ok(exp) => Some((format!("candidate {} = {}", args.param, v.label()), exp)),
            Err(e) => {
                failed = Some(named(e));
                None
            }
        }
    });
    let estimate = limits::estimate_points("--range", n, exps, extra, 0, false);
    if let Some(m) = failed {
        return Err(input(m));
    }
    check_work(&estimate, &limits, false)
}

#[derive(Serialize)]
struct CandJson {
    value: f64,
    label: String,
    /// `null` when the candidate breaks the objective's bound.
    objective: Option<f64>,
    objective_ci95: f64,
    cost_usd: f64,
    cost_ci95: f64,
    launch_wait_pooled_p99_s: f64,
    makespan_p95_s: f64,
    feasible: bool,
    /// `wait_first`: share of replications whose cap fired before the first token.
    p_cap_before_first_token: Option<f64>,
}

/// Where the recommended hold cap sits against the first writer's time to first token.
#[derive(Serialize)]
struct EdgeJson {
    ttft_p05_s: Option<f64>,
    ttft_p50_s: Option<f64>,
    ttft_p95_s: Option<f64>,
    ttft_p99_s: Option<f64>,
    /// The recommendation lies in [p5, p95) of that time.
    knife_edge: bool,
    /// The tie rule's pick when the recommendation moved off the knife edge.
    moved_from: Option<String>,
    margin_over_p95_s: Option<f64>,
    margin_over_p99_s: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    /// The experiment's name and question (as in a run's manifest.json).
    name: String,
    question: String,
    param: String,
    strategy: String,
    objective: String,
    replications: u32,
    recommended: Option<f64>,
    recommended_label: Option<String>,
    recommended_objective: Option<f64>,
    recommended_ci95: Option<f64>,
    flat: bool,
    /// Tuning a wait_first hold cap: see `sweep::tune::Edge`.
    hold_edge: Option<EdgeJson>,
    refine_rounds: u32,
    notes: Vec<String>,
    /// Tuning the hold cap: the answer with its interval over the calibration's refits
    /// (`sweep::hold`), what `run`, `report` and `serve` print for the same experiment.
    hold: Option<hold::HoldAnswer>,
    candidates: Vec<CandJson>,
}

/// The 95% CI half-width of a candidate's objective over its replications.
fn ci_of(c: &Candidate) -> f64 {
    let mut w = crate::results::Welford::default();
    c.samples.iter().for_each(|&x| w.add(x));
    w.stat().ci95
}

impl Report {
    fn new(param: &str, objective: &Objective, replications: u32, t: &Tuned) -> Report {
        let c = &t.candidates;
        let rec = t.verdict.as_ref().map(|v| &c[v.recommended]);
        Report {
            name: String::new(),
            question: String::new(),
            param: param.to_string(),
            strategy: t.strategy.clone(),
            objective: objective.name(),
            replications,
            recommended: rec.map(|r| r.value.json()),
            recommended_label: rec.map(|r| r.value.label()),
            recommended_objective: rec.map(|r| r.objective),
            recommended_ci95: rec.map(ci_of),
            flat: t.verdict.as_ref().is_some_and(|v| v.flat),
            hold_edge: edge_json(t),
            refine_rounds: t.rounds,
            notes: notes(param, t),
            hold: None,
            candidates: c
                .iter()
                .map(|c| CandJson {
                    value: c.value.json(),
                    label: c.value.label(),
                    objective: c.feasible.then_some(c.objective),
                    objective_ci95: ci_of(c),
                    cost_usd: c.cost_usd,
                    cost_ci95: c.cost_ci95,
                    launch_wait_pooled_p99_s: c.launch_wait_pooled_p99_s,
                    makespan_p95_s: c.makespan_p95_s,
                    feasible: c.feasible,
                    p_cap_before_first_token: c.p_cap_before_first_token,
                })
                .collect(),
        }
    }

    fn table(&self, t: &Tuned) -> String {
        let mut s = format!(
            "tune {} for {} | objective {} | {} replications, common random numbers\n",
            self.param, self.strategy, self.objective, self.replications
        );
        s.push_str(&format!(
            "{:>12} {:>14} {:>12} {:>12} {:>22} {:>14} {:>9}\n",
            "value",
            "objective",
            "±95% CI",
            "cost_usd",
            "launch_wait_pooled_p99",
            "makespan_p95",
            "p_capped"
        ));
        let rec = t.verdict.as_ref().map(|v| v.recommended);
        for (i, c) in self.candidates.iter().enumerate() {
            let obj = c.objective.map_or("infeasible".to_string(), |o| format!("{o:.6}"));
            let mark = if Some(i) == rec { "  <- recommended" } else { "" };
            let capped = c.p_cap_before_first_token.map_or("-".to_string(), |p| format!("{p:.2}"));
            s.push_str(&format!(
                "{:>12} {:>14} {:>12.6} {:>12.6} {:>21.3}s {:>13.3}s {capped:>9}{mark}\n",
                c.label,
                obj,
                c.objective_ci95,
                c.cost_usd,
                c.launch_wait_pooled_p99_s,
                c.makespan_p95_s
            ));
        }
        match (&self.recommended_label, self.recommended_objective, self.recommended_ci95) {
            (Some(l), Some(o), Some(ci)) => s.push_str(&format!(
                "recommended: {} = {l}  (objective {o:.6} ± {ci:.6}, 95% CI)\n",
                self.param
            )),
            _ => s.push_str("recommended: none (no value meets the objective)\n"),
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }
}

fn edge_json(t: &Tuned) -> Option<EdgeJson> {
    let v = t.verdict.as_ref()?;
    let e = v.edge.as_ref()?;
    let cap = t.candidates[v.recommended].value.json();
    let finite = |x: f64| x.is_finite().then_some(x);
    Some(EdgeJson {
        ttft_p05_s: finite(e.ttft.p05_s),
        ttft_p50_s: finite(e.ttft.p50_s),
        ttft_p95_s: finite(e.ttft.p95_s),
        ttft_p99_s: finite(e.ttft.p99_s),
        knife_edge: e.knife_edge,
        moved_from: e.moved_from.map(|m| t.candidates[m].value.label()),
        margin_over_p95_s: finite(cap - e.ttft.p95_s),
        margin_over_p99_s: finite(cap - e.ttft.p99_s),
    })
}

fn notes(param: &str, t: &Tuned) -> Vec<String> {
    let c = &t.candidates;
    let mut out = Vec::new();
    if let Some(v) = &t.verdict {
        out.extend(tune::edge_notes(param, c, v));
    }
    if t.verdict.as_ref().is_some_and(|v| v.flat) {
        out.push(format!(
            "the objective is flat over {}..{}: no value is clearly better (every difference \
             is within its 95% CI)",
            c[0].value.label(),
            c[c.len() - 1].value.label()
        ));
    }
    let useless = tune::saves_nothing(c);
    if let (Some(&first), Some(&last)) = (useless.first(), useless.last()) {
        let mut n = format!(
            "{param} {}..{} saves nothing against {} (same cost within its 95% CI) but adds up \
             to {:.3} s of p99 launch wait",
            c[first].value.label(),
            c[last].value.label(),
            c[0].value.label(),
            c[last].launch_wait_pooled_p99_s - c[0].launch_wait_pooled_p99_s
        );
        if param.ends_with("max_wait") {
            n.push_str(
                ": a hold cap shorter than the first writer's time to first token releases the \
                 held agents before its cache entry is ready, so they miss and write again, and \
                 every held agent waits the whole cap",
            );
        }
        out.push(n);
    }
    out
}
