//! The command line: one file per subcommand (usage text with examples, args, `run`).
//!
//! This is the edge: only here (and in `report`, `plot`, the sweep writer and the replay
//! reader) do we touch files, stdout, the environment or the wall clock.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `print!` that returns a [`CliResult`]: a closed pipe (`| head`) is not an error, where
/// `print!` would panic.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::stdout(format!($($arg)*).as_bytes()) };
}

/// `println!` that returns a [`CliResult`] (see [`out!`]).
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::stdout(format!("{}\n", format_args!($($arg)*)).as_bytes()) };
}

pub mod calibrate;
pub mod check;
pub mod completions;
pub mod export;
pub mod merge;
pub mod models;
pub mod otlp;
pub mod plot;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod serve;
pub mod shared;
pub mod sweep;
pub mod tune;

pub use crate::api::Error;

/// What a command returns: nothing, or the error that ends the process (`Error::exit_code`:
/// 2 for bad input, 1 for a bug or an I/O failure).
pub type CliResult = Result<(), Error>;

/// Help prose as paragraphs for clap to wrap at the terminal's width: the lines of a
/// paragraph are joined; an indented line (a table row, a TOML snippet) stays as it is.
pub fn reflow(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_paragraph = false;
    for line in text.lines() {
        let prose = !line.is_empty() && !line.starts_with(' ');
        if prose && in_paragraph {
            out.push(' ');
        } else if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
        in_paragraph = prose;
    }
    out
}

#[derive(Parser, Debug)]
#[command(
    name = "prefixsim",
    version,
    about = "Discrete-event simulator of prompt caching for fleets of LLM agents",
    long_about = "Discrete-event simulator of prompt caching for fleets of LLM agents.\n\n\
With no command, runs the embedded default experiment (a Claude Code workflow fan-out, \
all launch strategies side by side) and prints the comparison table."
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
    /// Validate an experiment file without running it: keys, ranges, points, work limits.
    Check(check::Args),
    /// Print the JSON Schema of the experiment file.
    Schema(check::SchemaArgs),
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
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page (or write one per command into a directory).
    Man(completions::ManArgs),
    /// A live page for design reviews: controls, table and figures updated as they change.
    Serve(serve::Args),
}

/// The examples printed under the top-level help.
const EXAMPLES: &str = "  prefixsim                               # the default experiment
  prefixsim scenarios                     # the seed chapter's table
  prefixsim run experiments/hold_vs_prefix_size.toml --set workload.agents=32
  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --force
  prefixsim replay data/mooncake/conversation_trace.jsonl --what-if
  prefixsim models                        # presets: prices, per-model latency
  prefixsim calibrate data/claude-code-ttft   # fit latency per model from measured requests
  prefixsim completions bash > prefixsim.bash
";

/// A command's examples (`None`: the top level), printed under its help exactly as written:
/// clap rewraps help text at the terminal's width, which would break a command in the middle.
pub fn examples(command: Option<&str>) -> Option<&'static str> {
    Some(match command {
        None => EXAMPLES,
        Some("run") => run::EXAMPLES,
        Some("scenarios") => scenarios::EXAMPLES,
        Some("sweep") => sweep::EXAMPLES,
        Some("check") => check::EXAMPLES,
        Some("schema") => check::SCHEMA_EXAMPLES,
        Some("merge") => merge::EXAMPLES,
        Some("tune") => tune::EXAMPLES,
        Some("plot") => plot::EXAMPLES,
        Some("report") => report::EXAMPLES,
        Some("replay") => replay::EXAMPLES,
        Some("models") => models::EXAMPLES,
        Some("calibrate") => calibrate::EXAMPLES,
        Some("completions") => completions::EXAMPLES,
        Some("man") => completions::MAN_EXAMPLES,
        Some("serve") => serve::EXAMPLES,
        Some("export") => export::EXAMPLES,
        _ => return None,
    })
}

/// The command whose help the arguments ask for: the first word that is not an option (or
/// the one after `help`); `None` for the top level.
fn help_target(args: &[String]) -> Option<String> {
    let mut words = args.iter().skip(1).filter(|a| !a.starts_with('-'));
    match words.next().map(String::as_str) {
        Some("help") => words.next().cloned(),
        other => other.map(str::to_string),
    }
}

pub use crate::replay::output::sorted_json;

/// Write to stdout and flush. A closed pipe (`| head`) is not an error: the reader has what it
/// wanted, and the work behind the output (files written, a run finished) is done.
pub fn stdout(bytes: &[u8]) -> CliResult {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::failed(e)),
        _ => Ok(()),
    }
}

/// Print clap's help, then the command's examples verbatim (exit 0).
fn print_help(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    let args: Vec<String> = std::env::args().collect();
    if let Some(ex) = examples(help_target(&args).as_deref()) {
        let _ = outln!("\nExamples:\n{}", ex.trim_end());
    }
    ExitCode::SUCCESS
}

/// Parse the command line and run it; the only place that maps errors to exit codes.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => return print_help(&e),
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
        Some(Command::Check(a)) => check::run(a),
        Some(Command::Schema(a)) => check::schema(a),
        Some(Command::Merge(a)) => merge::run(a),
        Some(Command::Tune(a)) => tune::run(a),
        Some(Command::Plot(a)) => plot::run(a),
        Some(Command::Report(a)) => report::run(a),
        Some(Command::Export(a)) => export::run(a),
        Some(Command::Replay(a)) => replay::run(a),
        Some(Command::Models(a)) => models::run(a),
        Some(Command::Calibrate(a)) => calibrate::run(a),
        Some(Command::Completions(a)) => completions::completions(a),
        Some(Command::Man(a)) => completions::man(a),
        Some(Command::Serve(a)) => serve::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.report());
            e.exit_code()
        }
    }
}
