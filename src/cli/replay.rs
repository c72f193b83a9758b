//! `prefixsim replay TRACE`: replay a real trace through the prefix cache, with what-if cache
//! choices side by side. The edge: reads the trace, prints a table or JSON, writes
//! `replay.json` (tmp + rename). Bad input (trace, `--set`) exits 2 and prints nothing on stdout.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::{CliResult, Error};
use crate::api::{outdir, TraceReplay};
use crate::replay::{output, TraceFormat as Format};

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
    #[arg(long, value_parser = ["mooncake", "claude-code", "requests", "usage-log", "otlp"])]
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

pub fn run(mut args: Args) -> CliResult {
    (args.trace, args.what_if) = positionals(&args)?;
    // Opened (and locked) first: a directory that will be refused is refused before the work.
    let out = args.out.as_deref().map(|d| outdir::open(d, args.force, "")).transpose()?;
    let format = match &args.format {
        Some(f) => parse_format(f),
        None => guess_format(&args.trace).map_err(Error::usage)?,
    };
    let mut replay = TraceReplay::new(&args.trace, format);
    for s in &args.sets {
        replay = replay.set(s)?;
    }
    replay = replay.lenient(args.lenient).instant_ready(args.instant_ready);
    if !args.what_if.is_empty() {
        replay = args.what_if.iter().fold(replay.with_ttl_ladder(), |r, w| r.what_if(w));
    }
    let result = replay.replay()?;
    for w in result.warnings.iter().take(20) {
        eprintln!("warning: {w}");
    }
    if result.reuse_gap_us.is_empty() {
        eprintln!(
            "warning: no prefix block appears twice in this trace, so nothing can hit; \
             check --format and block_size"
        );
    }
    let settings = replay.settings();
    let name = args.trace.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    if let Some(out) = out {
        let curves = replay.curves(result.distinct_tokens)?;
        let v = output::replay_file_json(&result, &settings, &name, &curves);
        let path = out.path().join("replay.json");
        crate::results::write_atomic(&path, super::sorted_json(v)).map_err(Error::failed)?;
        out.commit()?;
    }
    let text = if args.json {
        super::sorted_json(output::stdout_json(&result, &settings, !args.what_if.is_empty()))
    } else {
        output::text(&result, &settings, &name)
    };
    super::stdout(text.as_bytes())
}

fn parse_format(f: &str) -> Format {
    match f {
        "mooncake" => Format::Mooncake,
        "claude-code" => Format::ClaudeCode,
        "usage-log" => Format::UsageLog,
        "otlp" => Format::Otlp,
        _ => Format::Requests,
    }
}

/// A directory is claude-code, a file with `resourceSpans` in its first 64 KiB OTLP spans;
/// else a `.json` file is claude-code, and the first JSONL line decides.
fn guess_format(path: &Path) -> anyhow::Result<Format> {
    use crate::input::contains as has;
    if path.is_dir() {
        return Ok(Format::ClaudeCode);
    }
    let head =
        crate::input::head(path).with_context(|| format!("cannot read {}", path.display()))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    if has(&head, b"\"resourceSpans\"") || has(&head, b"\"resource_spans\"") {
        Ok(Format::Otlp)
    } else if crate::input::has_extension(path, &["json"]) {
        Ok(Format::ClaudeCode)
    } else if has(first, b"\"hash_ids\"") {
        Ok(Format::Mooncake)
    } else if has(first, b"\"body\"") {
        Ok(Format::Requests)
    } else if has(first, b"\"usage\"") || has(first, b"\"usageMetadata\"") {
        Ok(Format::UsageLog)
    } else {
        Err(anyhow!(
            "{}:1: cannot tell the trace format (no `hash_ids`, `body`, `usage`, `usageMetadata` \
             or `resourceSpans` key); use --format",
            path.display()
        ))
    }
}
