//! `prefixsim replay TRACE`: replay a real trace through the prefix cache, with what-if cache
//! choices side by side. The arguments and the printing: `api::replay_command` reads the
//! trace, replays it and writes `replay.json` (tmp + rename). Bad input (trace, `--set`) exits
//! 2 and prints nothing on stdout.

use std::path::PathBuf;

use anyhow::anyhow;

use super::{CliResult, Error};
use crate::api::{self, ReplayRequest};
use crate::replay::TraceFormat;

pub const EXAMPLES: &str = "  prefixsim replay data/mooncake/conversation_trace.jsonl
  prefixsim replay --what-if data/mooncake/conversation_trace.jsonl --json
  prefixsim replay data/claude-code-traces --what-if 'cache.ttl=1h,cache.capacity_tokens=2000000'
  prefixsim replay data/claude-code-traces --what-if=cache.ttl=none --what-if=cache.capacity_tokens=500000
  prefixsim replay data/mooncake/conversation_trace.jsonl --format mooncake --set block_size=512 --set cache.ttl=none --instant-ready
  prefixsim replay data/samples/requests.jsonl --format requests --set model=claude-opus-4.5 --out results/replay --force
  prefixsim replay data/samples/usage-log.jsonl --what-if cache.ttl=1h
  prefixsim replay data/samples/otlp.json --format otlp --json
";

const AFTER_HELP: &str = "\
--what-if compares TTL 5m, 1h and none with the base choice, plus each CHOICE given: as
`--what-if=CHOICE`, or as a word after TRACE (`--what-if cache.ttl=1h`): a word KEY=VALUE that
names no file is a choice, so `--what-if TRACE` replays TRACE.

Keys for --set and --what-if (value syntax as in experiment files):
  cache.ttl=5m|1h|none        sliding lifetime from the last use's start (default 5m)
  cache.capacity_tokens=N|none  LRU capacity in tokens (default none: unbounded)
  cache.policy=anthropic|every-block  requests format only (hash-id traces: every-block)
  model=NAME|per-request      prices and latency model (default: per-request, each request's own
                              model, for claude-code traces; claude-sonnet-4.5 for the others)
  block_size=N                tokens per block: mooncake (default 512), usage-log and otlp
                              (the prefix-identity model's block, default 128)
  seed=N                      latency draws (default 42)
  latency.KEY=DIST            KEY: overhead, prefill_rate, cached_rate, decode_rate or
                              ready_delay; DIST e.g. const(500ms)

An entry is readable from its writer's measured ttft where the trace records one (claude-code),
never later than the writer's measured response end (api_time), and from the latency model only
where the trace records neither; --instant-ready makes entries readable at once.

Usage logs and OTLP spans (the formats calibrate reads) record token counts, not content: the
table shows the provider's recorded split as its first row, and the choices simulated under an
assumption (one growing prompt per conversation and model; docs/replay.md says which).";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The trace: a JSONL file, a claude-code conversation file, or a directory of them (any file may be gzipped: `.gz`).
    pub trace: PathBuf,
    /// What-if choices written after --what-if without `=` (`--what-if cache.ttl=1h`).
    #[arg(value_name = "CHOICE", requires = "what_if")]
    pub choices: Vec<String>,
    /// Trace format (default: guessed from the file: a directory or `.json` is claude-code,
    /// a JSONL line with `hash_ids` mooncake, one with `body` requests, a file with
    /// `resourceSpans` otlp, a first line with `usage` or `usageMetadata` usage-log).
    #[arg(long, value_parser = TraceFormat::NAMES)]
    pub format: Option<String>,
    /// Override a replay key (repeatable): `--set cache.ttl=1h`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print JSON for programs (an array with --what-if).
    #[arg(long)]
    pub json: bool,
    /// Write replay.json (results, reuse gaps, hit-rate curves) into DIR (absent or empty).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace --out when it holds files (atomically: written beside it, then swapped in);
    /// without it such a directory is refused.
    #[arg(long)]
    pub force: bool,
    /// Compare cache choices: TTL 5m, 1h and none, plus each given choice
    /// (`--what-if=key=value[,key=value]`). Repeatable.
    #[arg(
        long = "what-if",
        value_name = "CHOICE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub what_if: Vec<String>,
    /// Skip malformed lines with a warning instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Entries readable as soon as they are written (no measured timing, no latency model).
    #[arg(long)]
    pub instant_ready: bool,
}

/// The trace and the what-if choices among the positional words: a word `KEY=VALUE...` that
/// names no file is a choice (`--what-if cache.ttl=1h TRACE` reads as it was meant); the
/// other is the trace.
fn positionals(args: &Args) -> Result<(PathBuf, Vec<String>), Error> {
    let words = std::iter::once(args.trace.clone()).chain(args.choices.iter().map(PathBuf::from));
    let is_choice = |w: &PathBuf| w.to_str().is_some_and(|t| t.contains('=')) && !w.exists();
    let (choices, traces): (Vec<PathBuf>, Vec<PathBuf>) = words.partition(is_choice);
    let [trace] = <[PathBuf; 1]>::try_from(traces).map_err(|traces| {
        let shown: Vec<String> = traces.iter().map(|t| t.display().to_string()).collect();
        Error::usage(anyhow!(
            "expected one TRACE and what-if choices `cache.KEY=VALUE`, got {}",
            if shown.is_empty() { "no trace".to_string() } else { shown.join(", ") }
        ))
    })?;
    let mut what_if = args.what_if.clone();
    what_if.extend(choices.iter().map(|c| c.display().to_string()));
    Ok((trace, what_if))
}

pub fn run(args: Args) -> CliResult {
    let (trace, what_if) = positionals(&args)?;
    let req = ReplayRequest {
        trace,
        format: args.format,
        sets: args.sets,
        what_if,
        lenient: args.lenient,
        instant_ready: args.instant_ready,
        out: args.out,
        force: args.force,
    };
    let done = api::replay_command(&req)?;
    for w in &done.warnings {
        eprintln!("warning: {w}");
    }
    super::stdout(if args.json { &done.json } else { &done.text }.as_bytes())
}
