//! `prefixsim sweep FILE [--jobs N] [--shard K/N] [--resume] [--out DIR] [--set k=v]... [--json]`:
//! run the grid of a `[sweep]` table (see `crate::sweep`), resumable and shardable.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::guard::{check_work, lock_dir};
use super::shared::Overrides;
use super::{CliError, CliResult};
use crate::config;
use crate::exec::{self, ModelSim, Simulator};
use crate::limits::{self, WorkLimits};
use crate::results::split_fields;
use crate::sweep::journal::PointSeq;
use crate::sweep::{self, ExecOptions, Outcome, Plan, SweepError};
use crate::sweep::{Grid, SweepOptions};

pub const EXAMPLES: &str =
    "  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold
  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --resume
  prefixsim sweep experiments/hold_vs_prefix_size.toml --jobs 2 --set replications=20 --out r/h
  prefixsim sweep experiments/hold_vs_prefix_size.toml --shard 0/2 --out results/shard-0
  prefixsim sweep experiments/hold_vs_prefix_size.toml --shard 1/2 --out results/shard-1
  prefixsim merge results/shard-* --out results/all
";

const AFTER_HELP: &str = "\
The [sweep] table of FILE names the axes; each is a dotted key over a list or a range:
  [sweep]
  \"workload.parent_tokens\" = [5000, 50000, 200000]   # a list
  \"workload.agents\" = \"1..64 x2\"                     # log range: 1, 2, 4, ..., 64
  max_wait = \"0s..10s step 500ms\"                   # linear range (strategy.wait_first.max_wait)
  zip = [\"workload.agents\", \"workload.concurrency\"]  # pair these axes instead of crossing them
The grid is the product of the axes in file order (the first varies slowest). Every point runs
every strategy with the file's replications and seed: all points see the same random numbers.

Outputs in DIR: runs.csv, summary.csv, histograms/, manifest.json and sweep.journal (the
journal lets --resume continue after a crash or kill, and `prefixsim merge` combine shards).

--shard K/N runs the points whose index mod N == K; K counts from 0: on a cluster it is the
task's index (`--shard $SLURM_ARRAY_TASK_ID/8` under Slurm --array=0-7, Kubernetes
JOB_COMPLETION_INDEX). Ctrl-C, SIGTERM and SIGHUP finish the running points, save
them and print the command that resumes. Exit code 2 on a bad file, key, range or shard, on a
grid or work above the limits of docs/limits.md (`--force` lifts them), on a point stopped by
its own limits, or when another process is writing DIR.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
#[command(mut_arg("set", |a| a.help(
    "Override a dotted key of the file, e.g. `--set replications=20` (repeatable)."
)))]
pub struct Args {
    /// The experiment file with a [sweep] table.
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Points simulated at once (default: all cores); outputs do not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Run only the points whose index mod N == K (K from 0).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Continue the sweep journaled in DIR (after Ctrl-C, a crash or a kill); without it an
    /// existing journal in DIR is replaced.
    #[arg(long)]
    pub resume: bool,
    /// Output directory (default: results/<experiment name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
    /// Start even when the grid, the estimated work, memory or output is above the limits
    /// (docs/limits.md).
    #[arg(long)]
    pub force: bool,
}

/// Read FILE, apply `--set`, and validate the sweep (every bad key or range is an input error).
pub fn load_plan(file: &Path, sets: &[String]) -> Result<(ModelSim, Plan), CliError> {
    load_checked(file, sets, true, None)
}

/// As `load_plan`; unless `force`, refuse a grid or a sweep above the work limits (the grid's
/// size first, before a point is looked at). Under `--shard` the limits apply to the shard's
/// points, the work of this machine.
fn load_checked(
    file: &Path,
    sets: &[String],
    force: bool,
    shard: Option<sweep::Shard>,
) -> Result<(ModelSim, Plan), CliError> {
    let origin = file.display().to_string();
    let text = config::read_experiment(file)
        .map_err(|e| CliError::input(anyhow::anyhow!("cannot read {origin}: {e}")))?;
    let mut table = config::parse_table(&text, &origin).map_err(CliError::input)?;
    for s in sets {
        config::apply_set(&mut table, s).map_err(CliError::input)?;
    }
    blame_a_set(&table, &origin, sets)?;
    let sim = ModelSim { origin: origin.clone() };
    let order = sweep::spec::key_order(&text);
    let limits = WorkLimits::from_table(&table);
    let named = |e: CliError| match e {
        CliError::Input(e) => CliError::input(anyhow::anyhow!("{origin}: {e}")),
        e => e,
    };
    if let Some(Ok(grid)) = config::sweep_table(&table).map(|t| Grid::from_table(t, &order)) {
        let axes: Vec<(String, usize)> =
            grid.axes.iter().map(|a| (format!("[sweep] {}", a.key), a.values.len())).collect();
        let sizes: Vec<String> = axes.iter().map(|a| a.1.to_string()).collect();
        let seq = PointSeq::of(grid.points(), shard);
        let how = format!("the [sweep] grid, {}{}", sizes.join(" x "), shard_text(shard, seq));
        check_work(&limits::estimate_grid(seq.len(), &how, &axes), &limits, force)
            .map_err(named)?;
    }
    let plan = Plan::new(&sim, table, &order).map_err(|e| sweep_err(&origin, e))?;
    // Values that pass alone may not pass together: this shard's points are checked before
    // any runs, by the estimate (which resolves each) or, under --force, on their own.
    match force {
        false => check_work(&estimate(&sim, &plan, shard)?, &limits, force).map_err(named)?,
        // Worded as the estimate words it, so --force changes nothing of the message.
        true => {
            plan.check_points(&sim, PointSeq::of(plan.grid.points(), shard)).map_err(
                |e| match e {
                    SweepError::Input(m) => CliError::input(anyhow::anyhow!(m)),
                    e => sweep_err(&origin, e),
                },
            )?
        }
    }
    Ok((sim, plan))
}

/// An error in the base experiment (before the grid) about a key a `--set` assigned names
/// that `--set`, as `run` does; other errors are left to the points, which say where.
fn blame_a_set(table: &toml::Table, origin: &str, sets: &[String]) -> Result<(), CliError> {
    if sets.is_empty() {
        return Ok(());
    }
    match config::resolve(table, origin).map_err(|e| e.blame_set(sets)) {
        Err(e @ config::ConfigError::FromSet { .. }) => Err(CliError::input(e)),
        _ => Ok(()),
    }
}

/// `" (shard 0/4: 25 of 100 points)"`, or nothing without a shard.
fn shard_text(shard: Option<sweep::Shard>, seq: PointSeq) -> String {
    match shard {
        Some(s) => format!(" (shard {}/{}: {} of {} points)", s.index, s.count, seq.len(), seq.end),
        None => String::new(),
    }
}

/// The estimate of the sweep's (or the shard's) points, every one resolved (they are within
/// `limits.max_points`).
fn estimate(
    sim: &ModelSim,
    plan: &Plan,
    shard: Option<sweep::Shard>,
) -> Result<limits::Estimate, CliError> {
    let seq = PointSeq::of(plan.grid.points(), shard);
    let mut failed = None;
    // Streamed: one point's experiment at a time. A point that does not resolve (a
    // combination of axis values the experiment refuses) is bad input, found before any work.
    let exps = seq.iter().map_while(|i| {
        let exp = plan
            .point_table(i)
            .map_err(|e| e.to_string())
            .and_then(|t| sim.resolve(&t).map_err(|e| e.to_string()));
        match exp {
            Ok(exp) => Some((plan.point_label(i), exp)),
            Err(e) => {
                failed = Some(format!("[sweep] {}: {e}", plan.point_label(i)));
                None
            }
        }
    });
    let what = match shard {
        Some(s) => format!("[sweep] shard {}/{}", s.index, s.count),
        None => "[sweep]".to_string(),
    };
    let e = limits::estimate_points(&what, seq.len(), exps, 0, plan.grid.axes.len(), true);
    match failed {
        Some(m) => Err(CliError::input(anyhow::anyhow!(m))),
        None => Ok(e),
    }
}

/// Map a sweep error to the CLI's exit codes, naming the file on input errors.
pub fn sweep_err(origin: &str, e: SweepError) -> CliError {
    match e {
        // Name the file once, in front, even when the resolver's message names it too.
        SweepError::Input(m) => {
            let m = m.replace(&format!("{origin}: "), "");
            CliError::input(anyhow::anyhow!("{origin}: {m}"))
        }
        SweepError::Internal(m) => CliError::internal(anyhow::anyhow!(m)),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    out: String,
    complete: bool,
    points: u64,
    points_done: u64,
    resumed_from: u64,
    shard: Option<sweep::Shard>,
    content_hash: &'a str,
}

pub fn run(args: Args) -> CliResult {
    let sets = args.overrides.assignments()?;
    let shard = match &args.shard {
        Some(s) => Some(sweep::parse_shard(s).map_err(CliError::input)?),
        None => None,
    };
    let (sim, plan) = load_checked(&args.file, &sets, args.force, shard)?;
    let dir = args.out.clone().unwrap_or_else(|| default_dir(&plan.desc.name, shard));
    let lock = lock_dir(&dir, "--out")?;
    let opts = SweepOptions {
        dir: dir.clone(),
        shard,
        resume: args.resume,
        exec: ExecOptions {
            jobs: args.jobs.unwrap_or_else(exec::default_jobs).max(1),
            progress: std::io::stderr().is_terminal(),
            ctrl_c: true,
            throttle_ms: throttle_ms(),
        },
    };
    let origin = args.file.display().to_string();
    let rep = sweep::run_sweep(&sim, &plan, &opts).map_err(|e| {
        // A failed point removed the journal: leave no empty directory behind either.
        lock.remove_if_empty();
        sweep_err(&origin, e)
    })?;
    let done = match rep.outcome {
        Outcome::Complete => rep.points,
        Outcome::Interrupted { done } => done,
    };
    if args.json {
        let r = Report {
            out: dir.display().to_string(),
            complete: rep.outcome == Outcome::Complete,
            points: rep.points,
            points_done: done,
            resumed_from: rep.resumed_from,
            shard,
            content_hash: &plan.content_hash,
        };
        outln!("{}", serde_json::to_string_pretty(&r).expect("a report serializes"))?;
    } else if rep.outcome == Outcome::Complete {
        print_done(&plan, &dir, rep.points, rep.resumed_from)?;
    }
    if let Outcome::Interrupted { done } = rep.outcome {
        let how = resume_command(&args, &dir);
        return Err(CliError::internal(anyhow::anyhow!(
            "interrupted: {done} of {} points are saved in {}; continue with:\n  {how}",
            rep.points,
            dir.join(sweep::JOURNAL_FILE).display()
        )));
    }
    Ok(())
}

/// `PREFIXSIM_SWEEP_THROTTLE_MS`: a test seam (see `ExecOptions::throttle_ms`); unset = 0.
fn throttle_ms() -> u64 {
    std::env::var("PREFIXSIM_SWEEP_THROTTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn default_dir(name: &str, shard: Option<sweep::Shard>) -> PathBuf {
    let base = crate::results::slug(&name.to_lowercase());
    match shard {
        None => PathBuf::from("results").join(base),
        Some(s) => PathBuf::from("results").join(format!("{base}-shard{}of{}", s.index, s.count)),
    }
}

fn print_done(plan: &Plan, dir: &Path, points: u64, resumed_from: u64) -> CliResult {
    let d = &plan.desc;
    outln!(
        "sweep {}: {points} points x {} strategies x {} replications{}",
        d.name,
        d.strategies.len(),
        d.replications,
        if resumed_from > 0 {
            format!(" ({resumed_from} resumed from the journal)")
        } else {
            String::new()
        }
    )?;
    for a in &plan.grid.axes {
        let vals: Vec<String> = a.values.iter().map(sweep::spec::value_text).collect();
        let shown = if vals.len() > 8 {
            format!("{} ... {} ({} values)", vals[..3].join(", "), vals[vals.len() - 1], vals.len())
        } else {
            vals.join(", ")
        };
        outln!("  axis {:<32} {shown}", a.key)?;
    }
    if let Ok(table) = summary_table(dir, plan.grid.axes.len(), 20) {
        out!("{table}")?;
    }
    let hold = if dir.join("hold.csv").exists() { ", hold.csv" } else { "" };
    outln!("wrote {}/{{summary.csv, runs.csv, histograms/, manifest.json{hold}}}", dir.display())?;
    outln!("next: prefixsim plot {0}   prefixsim report {0}", dir.display())
}

/// The first `max_rows` rows of DIR/summary.csv as a table for people.
fn summary_table(dir: &Path, axes: usize, max_rows: usize) -> std::io::Result<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(dir.join("summary.csv"))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let header = split_fields(&lines.next().transpose()?.unwrap_or_default());
    let wanted = ["cost_usd_mean", "hit_rate_mean", "launch_wait_pooled_p99_s", "makespan_s_mean"];
    let idx: Vec<usize> =
        wanted.iter().filter_map(|w| header.iter().position(|h| h == w)).collect();
    // Up to the strategy: the axes and the seconds columns of duration axes.
    let strategy = header.iter().position(|h| h == "strategy").unwrap_or(axes + 1);
    let keep: Vec<usize> = (0..=strategy).chain(idx).collect();
    let mut rows: Vec<Vec<String>> =
        vec![keep.iter().map(|&i| header.get(i).cloned().unwrap_or_default()).collect()];
    let mut more = 0usize;
    for line in lines {
        let cells = split_fields(&line?);
        if rows.len() > max_rows {
            more += 1;
            continue;
        }
        rows.push(keep.iter().map(|&i| cells.get(i).cloned().unwrap_or_default()).collect());
    }
    let widths: Vec<usize> =
        (0..keep.len()).map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> =
            r.iter().zip(&widths).map(|(cell, w)| format!("{cell:>w$}")).collect();
        out.push_str(&format!("  {}\n", cells.join("  ")));
    }
    if more > 0 {
        out.push_str(&format!("  ... {more} more rows in summary.csv\n"));
    }
    Ok(out)
}

fn resume_command(args: &Args, dir: &Path) -> String {
    let mut cmd =
        format!("prefixsim sweep {} --out {} --resume", args.file.display(), dir.display());
    if let Some(s) = &args.shard {
        cmd.push_str(&format!(" --shard {s}"));
    }
    for s in &args.overrides.set {
        cmd.push_str(&format!(" --set '{s}'"));
    }
    if let Some(file) = &args.overrides.latency {
        cmd.push_str(&format!(" --latency {}", file.display()));
    }
    cmd
}
