//! The command line: one file per subcommand (usage text with examples, args, `run`).
//!
//! This is the edge: only here (and in `report`, `plot`, the sweep writer and the replay
//! reader) do we touch files, stdout, the environment or the wall clock.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod calibrate;
pub mod export;
pub mod guard;
pub mod merge;
pub mod models;
pub mod plot;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod sweep;
pub mod tune;

/// An error that ends the process: bad input exits 2, a bug or I/O failure exits 1.
#[derive(Debug)]
pub enum CliError {
    /// The user's input is wrong (usage, experiment file, trace): exit code 2.
    Input(anyhow::Error),
    /// Anything else: exit code 1.
    Internal(anyhow::Error),
}

impl CliError {
    pub fn input(e: impl Into<anyhow::Error>) -> Self {
        CliError::Input(e.into())
    }
    pub fn internal(e: impl Into<anyhow::Error>) -> Self {
        CliError::Internal(e.into())
    }
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Input(_) => ExitCode::from(2),
            CliError::Internal(_) => ExitCode::from(1),
        }
    }
}

impl std::fmt::Display for CliError {
    /// The error and its causes, each said once: a cause whose text the message already holds
    /// (`{path}: {source}` followed by the source itself) is not repeated.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = match self {
            CliError::Input(e) | CliError::Internal(e) => e,
        };
        let mut text = e.to_string();
        for cause in e.chain().skip(1) {
            let c = cause.to_string();
            if !text.contains(&c) {
                text.push_str(": ");
                text.push_str(&c);
            }
        }
        f.write_str(&text)
    }
}

pub type CliResult = Result<(), CliError>;

/// `--latency FILE` as the `--set latency.from=...` it stands for (made absolute, because
/// `latency.from` is otherwise relative to the experiment file's directory).
pub fn latency_set(file: &Option<std::path::PathBuf>) -> Result<Option<String>, CliError> {
    let Some(file) = file else { return Ok(None) };
    let abs = std::path::absolute(file)
        .map_err(|e| CliError::input(anyhow::anyhow!("--latency {}: {e}", file.display())))?;
    let value = toml::Value::String(abs.display().to_string());
    Ok(Some(format!("latency.from={value}")))
}

#[derive(Parser, Debug)]
#[command(
    name = "prefixsim",
    version,
    about = "Discrete-event simulator of prompt caching for fleets of LLM agents",
    long_about = "Discrete-event simulator of prompt caching for fleets of LLM agents.\n\n\
With no command, runs the embedded default experiment (a Claude Code workflow fan-out,\n\
all launch strategies side by side) and prints the comparison table.",
    after_help = "Examples:\n  prefixsim                               # the default experiment\n  prefixsim scenarios                     # the seed chapter's table\n  prefixsim run experiments/hold_vs_prefix_size.toml --set workload.agents=32\n  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold\n  prefixsim replay data/mooncake/conversation_trace.jsonl --what-if\n  prefixsim models                        # presets: prices, per-model latency\n  prefixsim calibrate data/claude-code-ttft   # fit latency per model from measured requests"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one experiment: every strategy side by side, with replications.
    Run(run::Args),
    /// The seed chapter's prefix-cache table and exercises, computed.
    Scenarios(scenarios::Args),
    /// Run a parameter sweep (a `[sweep]` table), resumable and shardable.
    Sweep(sweep::Args),
    /// Combine the outputs of sweep shards into one.
    Merge(merge::Args),
    /// Find the value of one parameter that minimises an objective.
    Tune(tune::Args),
    /// Draw figures from the files a run or sweep wrote.
    Plot(plot::Args),
    /// Write a design-review report (Markdown and HTML) from a results directory.
    Report(report::Args),
    /// Write summary.csv in long form (one row per point, strategy and metric).
    Export(export::Args),
    /// Replay a real trace through the cache, with what-if cache choices.
    Replay(replay::Args),
    /// List the model presets: API ids, prices, minimum cacheable length, latency.
    Models(models::Args),
    /// Fit the latency model per model from measured requests (traces, usage logs, OTLP spans).
    Calibrate(calibrate::Args),
}

/// Parse the command line and run it; the only place that maps errors to exit codes.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        None => run::run_default(),
        Some(Command::Run(a)) => run::run(a),
        Some(Command::Scenarios(a)) => scenarios::run(a),
        Some(Command::Sweep(a)) => sweep::run(a),
        Some(Command::Merge(a)) => merge::run(a),
        Some(Command::Tune(a)) => tune::run(a),
        Some(Command::Plot(a)) => plot::run(a),
        Some(Command::Report(a)) => report::run(a),
        Some(Command::Export(a)) => export::run(a),
        Some(Command::Replay(a)) => replay::run(a),
        Some(Command::Models(a)) => models::run(a),
        Some(Command::Calibrate(a)) => calibrate::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
