//! `prefixsim run FILE [--set k=v]... [--seed N] [--json] [--out DIR] [--trace] [--jobs N]`:
//! every strategy of one experiment side by side. Parses arguments, runs the experiment
//! through `crate::api` (which checks the limits and `--out`, and folds replications in index
//! order, so `--jobs` never changes a byte) and prints.

use std::path::{Path, PathBuf};

use super::shared::Overrides;
use super::CliResult;
use crate::api::{Experiment, RunOptions};

pub const EXAMPLES: &str = "  prefixsim run experiments/default.toml
  prefixsim run experiments/default.toml --set workload.agents=32 --set cache.ttl=1h
  prefixsim run experiments/default.toml --set 'strategies=[\"eager\",\"wait_first(max_wait=2s)\"]'
  prefixsim run experiments/hold_vs_prefix_size.toml --seed 7 --json
  prefixsim run experiments/default.toml --out results/default --trace --jobs 2 --force
  prefixsim run experiments/default.toml --out results/default --force --set replications=20
";

const AFTER_HELP: &str = "\
Values after --set are TOML (`workload.agents=16`, `workload.parent_warm=true`); a bare word
is a string (`cache.ttl=1h`, `workload.kind=fork_drop_tool(tool=Bash)`). A `[sweep]` table in
FILE is ignored here (use `prefixsim sweep`). Exit code 2 on a bad file or value (a value from
--set names the --set), on work above the limits of docs/limits.md (`--force` lifts them), on
--out into a directory that is not empty (`--force` replaces it: the files are written beside
it and swapped in when the run is done), or when a run stops at its own limits.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The experiment file (TOML; every key is documented in docs/experiments.md).
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    /// The experiment seed (overrides the file's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the result files (manifest.json, summary.csv, runs.csv, histograms/, and hold.json
    /// when the experiment asks for the hold answer) to DIR, absent or empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --out: also write trace.csv (every agent's segments in replication 0).
    #[arg(long, requires = "out")]
    pub trace: bool,
    /// Also write replication 0 of every strategy as OpenTelemetry spans (OTLP/JSON, one
    /// ExportTraceServiceRequest a line; docs/otlp.md). An existing FILE needs --force.
    #[arg(long, value_name = "FILE")]
    pub otlp: Option<PathBuf>,
    /// The Unix time, in seconds, the spans' simulated clock starts at (default 0).
    #[arg(long, value_name = "SECONDS", requires = "otlp", default_value_t = 0)]
    pub otlp_epoch: u64,
    /// Threads for replications (default: all cores); output does not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// "I know, do it": start even when the estimated work, memory or output is above the
    /// limits (docs/limits.md), and replace --out when it holds files (atomically).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> CliResult {
    let sets = args.overrides.assignments()?;
    let exp = Experiment::load_seeded(&args.file, &sets, args.seed)?;
    let opts = RunOptions {
        // Printed under the table and written to `--out`; `--json` alone shows neither.
        hold: !args.json || args.out.is_some(),
        jobs: args.jobs,
        out: args.out,
        trace: args.trace,
        trace_lanes: None, // trace.csv has every agent
        force: args.force,
        progress: true,
    };
    if let Some(path) = &args.otlp {
        super::otlp::check_target(path, args.force)?;
    }
    run_and_print(&exp, &opts, args.json, &args.overrides.as_typed())?;
    if let Some(path) = &args.otlp {
        let epoch_ns = args.otlp_epoch.saturating_mul(1_000_000_000);
        let (runs, spans) = super::otlp::write(exp.config(), path, epoch_ns)?;
        eprintln!(
            "wrote {} ({spans} spans, {runs} traces: replication 0 of each strategy)",
            path.display()
        );
    }
    Ok(())
}

/// `prefixsim` with no command: the embedded default experiment, as a table.
pub fn run_default() -> CliResult {
    let opts = RunOptions { hold: true, progress: true, ..RunOptions::default() };
    run_and_print(&Experiment::default_experiment(), &opts, false, &[])
}

/// Run `exp` and print the table (saying which `overrides` changed it) or JSON, the hold
/// answer and what was written.
fn run_and_print(
    exp: &Experiment,
    opts: &RunOptions,
    json: bool,
    overrides: &[String],
) -> CliResult {
    let ran = exp.execute(opts)?;
    let mut text = match json {
        true => ran.summary(exp).to_json(),
        false => crate::report::run::table_text(exp.config(), &ran.outcomes, &ran.notes, overrides),
    };
    if let (Some(h), false) = (&ran.hold, json) {
        text.push_str(&format!("\n{}\n", crate::numfmt::capitalised(&h.sentence())));
    }
    out!("{text}")?;
    if let Some(dir) = &opts.out {
        // After the JSON, on stderr: stdout stays one JSON document.
        let wrote = wrote_lines(dir, opts.trace, ran.hold.is_some());
        if json {
            eprint!("{wrote}");
        } else {
            out!("{wrote}")?;
        }
    }
    Ok(())
}

/// What `--out` wrote and what to do with it, as `sweep` says it.
fn wrote_lines(dir: &Path, trace: bool, hold: bool) -> String {
    let d = dir.display();
    let trace = if trace { ", trace.csv" } else { "" };
    let hold = if hold { ", hold.json" } else { "" };
    format!(
        "wrote {d}/{{summary.csv, runs.csv, histograms/, manifest.json{trace}{hold}}}\n\
         next: prefixsim plot {d}   prefixsim report {d}\n"
    )
}
