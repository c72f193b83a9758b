//! `prefixsim sweep FILE [--jobs N] [--shard K/N] [--resume] [--out DIR] [--set k=v]... [--json]`:
//! run the grid of a `[sweep]` table (see `crate::sweep`), resumable and shardable.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::shared::Overrides;
use super::CliResult;
use crate::api::{self, Error, ExecOptions, Shard, Sweep, SweepOptions};

pub const EXAMPLES: &str =
    "  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --force
  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --resume
  prefixsim sweep experiments/hold_vs_prefix_size.toml --jobs 2 --set replications=20 --out r/h --force
  prefixsim sweep experiments/hold_vs_prefix_size.toml --shard 0/2 --out results/shard-0 --force
  prefixsim sweep experiments/hold_vs_prefix_size.toml --shard 1/2 --out results/shard-1 --force
  prefixsim merge results/shard-* --out results/all --force
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
DIR must not exist or be empty: --force replaces it (the sweep writes beside it and swaps it in
when it ends or is interrupted; --resume after a kill picks up what was written beside it), and
--resume continues the sweep journaled in it.

--shard K/N runs the points whose index mod N == K; K counts from 0: on a cluster it is the
task's index (`--shard $SLURM_ARRAY_TASK_ID/8` under Slurm --array=0-7, Kubernetes
JOB_COMPLETION_INDEX). Ctrl-C, SIGTERM and SIGHUP finish the running points, save
them and print the command that resumes. Exit code 2 on a bad file, key, range or shard, on a
grid or work above the limits of docs/limits.md (`--force` lifts them), on a point stopped by
its own limits, on a DIR that holds files (without --force or --resume), or when another process
is writing DIR.";

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
    /// Continue the sweep journaled in DIR (after Ctrl-C, a crash or a kill), in place.
    #[arg(long)]
    pub resume: bool,
    /// Output directory, absent or empty (default: results/<experiment name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
    /// "I know, do it": start even when the grid, the estimated work, memory or output is above
    /// the limits (docs/limits.md), and replace DIR when it holds files (atomically).
    #[arg(long)]
    pub force: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    out: String,
    complete: bool,
    points: u64,
    points_done: u64,
    resumed_from: u64,
    shard: Option<Shard>,
    content_hash: &'a str,
}

pub fn run(args: Args) -> CliResult {
    let sets = args.overrides.assignments()?;
    let shard: Option<Shard> =
        args.shard.as_deref().map(str::parse).transpose().map_err(Error::usage)?;
    let sweep = Sweep::load(&args.file, &sets, args.force, shard)?;
    let dir = args.out.clone().unwrap_or_else(|| sweep.default_dir(shard));
    let exec = ExecOptions {
        jobs: args.jobs.unwrap_or_else(api::default_jobs).max(1),
        progress: std::io::stderr().is_terminal(),
        ctrl_c: true,
        throttle_ms: throttle_ms(),
    };
    let opts =
        SweepOptions { dir: dir.clone(), shard, resume: args.resume, force: args.force, exec };
    let done = api::run_sweep(&sweep, &opts)?;
    if args.json {
        let r = Report {
            out: dir.display().to_string(),
            complete: done.complete,
            points: done.points,
            points_done: done.points_done,
            resumed_from: done.resumed_from,
            shard,
            content_hash: &done.content_hash,
        };
        outln!("{}", serde_json::to_string_pretty(&r).expect("a report serializes"))?;
    } else if done.complete {
        out!(
            "{}",
            crate::report::sweep::done_text(sweep.plan(), &dir, done.points, done.resumed_from)
        )?;
    }
    if !done.complete {
        let how = resume_command(&args, &dir);
        return Err(Error::failed(anyhow::anyhow!(
            "interrupted: {} of {} points are saved in {}; continue with:\n  {how}",
            done.points_done,
            done.points,
            dir.join(api::JOURNAL_FILE).display()
        )));
    }
    Ok(())
}

/// `PREFIXSIM_SWEEP_THROTTLE_MS`: a test seam (see `ExecOptions::throttle_ms`); unset = 0.
fn throttle_ms() -> u64 {
    std::env::var("PREFIXSIM_SWEEP_THROTTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
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
