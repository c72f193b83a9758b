//! `prefixsim replay TRACE`: replay a real trace through the prefix cache, with what-if cache
//! choices side by side. The edge: reads the trace, prints a table or JSON, writes
//! `replay.json` (tmp + rename). Bad input (trace, `--set`) exits 2 and prints nothing on stdout.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::{CliError, CliResult};
use crate::replay::{self, output, CacheChoice, Format, ReplaySettings};

pub const EXAMPLES: &str = "  prefixsim replay data/mooncake/conversation_trace.jsonl
  prefixsim replay --what-if data/mooncake/conversation_trace.jsonl --json
  prefixsim replay data/claude-code-traces --what-if 'cache.ttl=1h,cache.capacity_tokens=2000000'
  prefixsim replay data/claude-code-traces --what-if=cache.ttl=none --what-if=cache.capacity_tokens=500000
  prefixsim replay data/mooncake/conversation_trace.jsonl --format mooncake --set block_size=512 --set cache.ttl=none --instant-ready
  prefixsim replay data/samples/requests.jsonl --format requests --set model=claude-opus-4.5 --out results/replay
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
  block_size=N                mooncake tokens per block (default 512)
  seed=N                      latency draws (default 42)
  latency.KEY=DIST            KEY: overhead, prefill_rate, cached_rate, decode_rate or
                              ready_delay; DIST e.g. const(500ms)

An entry is readable from its writer's measured ttft where the trace records one (claude-code),
never later than the writer's measured response end (api_time), and from the latency model only
where the trace records neither; --instant-ready makes entries readable at once.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The trace: a JSONL file, a claude-code conversation file, or a directory of them (any file may be gzipped: `.gz`).
    pub trace: PathBuf,
    /// What-if choices written after --what-if without `=` (`--what-if cache.ttl=1h`).
    #[arg(value_name = "CHOICE", requires = "what_if")]
    pub choices: Vec<String>,
    /// Trace format (default: guessed from the file: a directory or `.json` is claude-code,
    /// a JSONL line with `hash_ids` mooncake, one with `body` requests).
    #[arg(long, value_parser = ["mooncake", "claude-code", "requests"])]
    pub format: Option<String>,
    /// Override a replay key (repeatable): `--set cache.ttl=1h`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print JSON for programs (an array with --what-if).
    #[arg(long)]
    pub json: bool,
    /// Write replay.json (results, reuse gaps, hit-rate curves) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
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
fn positionals(args: &Args) -> Result<(PathBuf, Vec<String>), CliError> {
    let words = std::iter::once(args.trace.clone()).chain(args.choices.iter().map(PathBuf::from));
    let is_choice = |w: &PathBuf| w.to_str().is_some_and(|t| t.contains('=')) && !w.exists();
    let (choices, traces): (Vec<PathBuf>, Vec<PathBuf>) = words.partition(is_choice);
    let [trace] = <[PathBuf; 1]>::try_from(traces).map_err(|traces| {
        let shown: Vec<String> = traces.iter().map(|t| t.display().to_string()).collect();
        CliError::input(anyhow!(
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
    let format = match &args.format {
        Some(f) => parse_format(f),
        None => guess_format(&args.trace).map_err(CliError::input)?,
    };
    let mut settings = ReplaySettings::new(format);
    for s in &args.sets {
        settings.apply_set(s).map_err(|e| CliError::input(anyhow!("--set {e}")))?;
    }
    settings.cache.label = base_label(&settings, &args.sets);
    settings.lenient = args.lenient;
    settings.instant_ready = args.instant_ready;
    settings.validate().map_err(|e| CliError::input(anyhow!(e)))?;
    let choices = choices(&settings, &args.what_if)?;
    let result = replay::replay(&args.trace, &settings, &choices).map_err(CliError::input)?;
    for w in result.warnings.iter().take(20) {
        eprintln!("warning: {w}");
    }
    if result.reuse_gap_us.is_empty() {
        eprintln!(
            "warning: no prefix block appears twice in this trace, so nothing can hit; \
             check --format and block_size"
        );
    }
    let name = args.trace.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    if let Some(dir) = &args.out {
        let curves = replay::curves(&args.trace, &settings, result.distinct_tokens)
            .map_err(CliError::input)?;
        let mut v = output::replay_file_json(&result, &settings, &name, &curves);
        v.sort_all_objects(); // keys sorted, as ever
        write_atomic(dir, "replay.json", &(serde_json::to_string_pretty(&v).expect("json") + "\n"))
            .map_err(CliError::internal)?;
    }
    let text = if args.json {
        let mut v = output::stdout_json(&result, &settings, !args.what_if.is_empty());
        v.sort_all_objects(); // keys sorted, as ever
        serde_json::to_string_pretty(&v).expect("json values serialize") + "\n"
    } else {
        output::text(&result, &settings, &name)
    };
    super::stdout(text.as_bytes())
}

fn parse_format(f: &str) -> Format {
    match f {
        "mooncake" => Format::Mooncake,
        "claude-code" => Format::ClaudeCode,
        _ => Format::Requests,
    }
}

/// A directory or `.json` file is claude-code; else the first JSONL line decides.
fn guess_format(path: &Path) -> anyhow::Result<Format> {
    if path.is_dir() || crate::input::has_extension(path, &["json"]) {
        return Ok(Format::ClaudeCode);
    }
    let mut head = Vec::new();
    crate::input::open(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .take(1 << 16)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let has = |key: &[u8]| first.windows(key.len()).any(|w| w == key);
    if has(b"\"hash_ids\"") {
        Ok(Format::Mooncake)
    } else if has(b"\"body\"") {
        Ok(Format::Requests)
    } else {
        Err(anyhow!(
            "{}:1: cannot tell the trace format (no `hash_ids` or `body` key); use --format",
            path.display()
        ))
    }
}

/// The label of the base choice: its `cache.*` assignments, or the default TTL.
fn base_label(settings: &ReplaySettings, sets: &[String]) -> String {
    let cache: Vec<&str> =
        sets.iter().map(|s| s.trim()).filter(|s| s.starts_with("cache.")).collect();
    if cache.is_empty() && settings.cache.ttl_as_sent {
        "as sent".to_string()
    } else if cache.is_empty() {
        "cache.ttl=5m".to_string()
    } else {
        cache.join(",")
    }
}

/// The choices to replay: the base alone, or with `--what-if` TTL 5m, 1h, none and each
/// given choice applied on top of the base (duplicates by label dropped).
fn choices(settings: &ReplaySettings, what_if: &[String]) -> Result<Vec<CacheChoice>, CliError> {
    if what_if.is_empty() {
        return Ok(vec![settings.cache.clone()]);
    }
    let mut specs: Vec<String> =
        ["cache.ttl=5m", "cache.ttl=1h", "cache.ttl=none"].map(String::from).to_vec();
    specs.extend(what_if.iter().filter(|w| !w.trim().is_empty()).cloned());
    // Request bodies carry their own TTLs: the choice "as sent" comes first.
    let mut out: Vec<CacheChoice> = Vec::new();
    if settings.cache.ttl_as_sent {
        out.push(settings.cache.clone());
    }
    for spec in specs {
        let mut s = settings.clone();
        for assignment in spec.split(',') {
            s.apply_set(assignment).map_err(|e| CliError::input(anyhow!("--what-if {e}")))?;
        }
        if s.model != settings.model
            || s.per_request_prices != settings.per_request_prices
            || s.latency != settings.latency
            || s.block_size != settings.block_size
            || s.seed != settings.seed
        {
            return Err(CliError::input(anyhow!(
                "--what-if `{spec}`: a choice may change only cache.* keys (use --set for the rest)"
            )));
        }
        s.validate().map_err(|e| CliError::input(anyhow!("--what-if `{spec}`: {e}")))?;
        s.cache.label = spec.trim().to_string();
        if !out.iter().any(|c| c.label == s.cache.label) {
            out.push(s.cache);
        }
    }
    Ok(out)
}

/// Write `dir/name` through `name.tmp` and a rename.
fn write_atomic(dir: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(crate::results::write_atomic(&dir.join(name), text)?)
}
