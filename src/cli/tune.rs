//! `prefixsim tune FILE --param KEY --range R [--objective ...] [--json] [--out DIR]`: the value
//! of one parameter that minimises an objective (see `crate::sweep::tune`).

use std::path::PathBuf;

use super::shared::Overrides;
use super::CliResult;
use crate::api::{self, Error, TuneRequest};

pub const EXAMPLES: &str = "  prefixsim tune experiments/default.toml --param max_wait
  prefixsim tune experiments/default.toml --param max_wait --range '0s..10s step 1s'
  prefixsim tune experiments/default.toml --param wait_first.max_wait --range '0s..10s step 500ms' \\
      --objective 'cost_subject_to_p99_launch_wait<=3s' --json
  prefixsim tune experiments/default.toml --param workload.concurrency --range '1..16 x2' \\
      --strategy eager --objective 'cost+0.001*p95_makespan' --out results/tune --force
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
    /// Also write DIR/tune.json (DIR absent or empty, or --force to replace it).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// "I know, do it": start even when the candidates or the estimated work or memory are
    /// above the limits (docs/limits.md), and replace --out when it holds files (atomically).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> CliResult {
    let req = TuneRequest {
        sets: args.overrides.assignments()?,
        file: args.file,
        param: args.param,
        range: args.range,
        objective: args.objective,
        lambda: args.lambda,
        strategy: args.strategy,
        refine: args.refine,
        jobs: args.jobs,
        out: args.out,
        force: args.force,
    };
    let report = api::tune(&req)?;
    match args.json {
        true => out!("{}", report.to_json())?,
        false => out!("{}", report.table())?,
    }
    match report.unmet_objective() {
        Some(o) => Err(Error::Usage(format!("no value in the range meets the objective `{o}`"))),
        None => Ok(()),
    }
}
