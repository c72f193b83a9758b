//! `prefixsim run FILE [--set k=v]... [--seed N] [--json] [--out DIR] [--trace] [--jobs N]`:
//! every strategy of one experiment side by side. Parses arguments, checks the limits, calls
//! `crate::exec` (which folds replications in index order, so `--jobs` never changes a byte)
//! and prints.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::guard::{self, check_work, lock_dir};
use super::shared::Overrides;
use super::{CliError, CliResult};
use crate::config::{self, Experiment};
use crate::exec::{self, ModelSim};
use crate::limits::{self, WorkLimits};
use crate::sweep::hold;

pub const EXAMPLES: &str = "  prefixsim run experiments/default.toml
  prefixsim run experiments/default.toml --set workload.agents=32 --set cache.ttl=1h
  prefixsim run experiments/default.toml --set 'strategies=[\"eager\",\"wait_first(max_wait=2s)\"]'
  prefixsim run experiments/hold_vs_prefix_size.toml --seed 7 --json
  prefixsim run experiments/default.toml --out results/default --trace --jobs 2
  prefixsim run experiments/default.toml --out results/default --force --set replications=20
";

const AFTER_HELP: &str = "\
Values after --set are TOML (`workload.agents=16`, `workload.parent_warm=true`); a bare word
is a string (`cache.ttl=1h`, `workload.kind=fork_drop_tool(tool=Bash)`). A `[sweep]` table in
FILE is ignored here (use `prefixsim sweep`). Exit code 2 on a bad file or value (a value from
--set names the --set), on work above the limits of docs/limits.md (`--force` lifts them), on
--out into a directory that is not empty (`--force` writes over its files), or when a run stops
at its own limits.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The experiment file (TOML; every key is documented in README.md, "Experiment files").
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
    /// when the experiment asks for the hold answer) to DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --out: also write trace.csv (every agent's segments in replication 0).
    #[arg(long, requires = "out")]
    pub trace: bool,
    /// Threads for replications (default: all cores); output does not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Start even when the estimated work, memory or output is above the limits
    /// (docs/limits.md); with --out, write into a directory that is not empty.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> CliResult {
    let sets = args.overrides.assignments()?;
    let (table, exp) = load(&args.file, &sets, args.seed)?;
    let estimate = limits::estimate_run(&exp, args.out.is_some());
    check_work(&estimate, &WorkLimits::from_table(&table), args.force)?;
    execute_and_print(&table, &exp, &args, &ModelSim { origin: args.file.display().to_string() })
}

/// `prefixsim` with no command: the embedded default experiment, as a table.
pub fn run_default() -> CliResult {
    let (table, exp) = config::load_default(&[]).map_err(CliError::input)?;
    let args = Args {
        file: PathBuf::from(config::DEFAULT_ORIGIN),
        overrides: Overrides::default(),
        seed: None,
        json: false,
        out: None,
        trace: false,
        jobs: None,
        force: false,
    };
    execute_and_print(&table, &exp, &args, &ModelSim { origin: config::DEFAULT_ORIGIN.into() })
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

/// Refuse `--out DIR` when DIR is a file, or a directory with files in it (unless `force`):
/// a run's files would mix with what is there.
fn check_out_dir(dir: &Path, force: bool) -> Result<(), CliError> {
    if dir.exists() && !dir.is_dir() {
        let e = anyhow::anyhow!("--out {}: exists and is not a directory", dir.display());
        return Err(CliError::input(e));
    }
    let mut entries = std::fs::read_dir(dir).into_iter().flatten();
    if !force && entries.next().is_some() {
        return Err(CliError::input(anyhow::anyhow!(
            "--out {}: the directory is not empty; choose another, or add --force to write \
             the run's files over what is there",
            dir.display()
        )));
    }
    Ok(())
}

/// Simulate with the library's executor, write `--out` files, print the table or JSON.
pub fn execute_and_print(
    table: &toml::Table,
    exp: &Experiment,
    args: &Args,
    sim: &ModelSim,
) -> CliResult {
    if let Some(dir) = &args.out {
        check_out_dir(dir, args.force)?;
    }
    let jobs = args.jobs.unwrap_or_else(exec::default_jobs).max(1);
    let outcomes = exec::execute(sim, exp, jobs, true).map_err(guard::run_error)?;
    // The hold answer is printed under the table and written to `--out`; `--json` alone
    // prints neither, so it is not computed then.
    let hold = match !args.json || args.out.is_some() {
        true => hold::for_experiment(sim, table, exp, jobs).map_err(guard::run_error)?,
        false => None,
    };
    if let Some(dir) = &args.out {
        let trace = match args.trace {
            true => Some(exec::run::trace_rows(sim, exp).map_err(guard::run_error)?),
            false => None,
        };
        let lock = lock_dir(dir, "--out")?;
        exec::write_out(dir, exp, &outcomes, trace.as_deref())
            .with_context(|| format!("writing results to {}", dir.display()))
            .map_err(CliError::internal)?;
        if let Some(h) = &hold {
            let json = serde_json::to_string_pretty(h).map_err(CliError::internal)? + "\n";
            crate::sweep::output::write_atomic(&dir.join("hold.json"), &json)
                .map_err(|e| CliError::internal(anyhow::anyhow!(e)))?;
        }
        drop(lock);
    }
    let mut text = if args.json {
        exec::json_text(exp, &outcomes)
    } else {
        exec::table_text_with_overrides(exp, &outcomes, &args.overrides.as_typed())
    };
    if let (Some(h), false) = (&hold, args.json) {
        text.push_str(&format!("\n{}\n", crate::numfmt::capitalised(&h.sentence())));
    }
    out!("{text}")?;
    if let Some(dir) = &args.out {
        // After the JSON, on stderr: stdout stays one JSON document.
        let wrote = wrote_lines(dir, args.trace, hold.is_some());
        if args.json {
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
