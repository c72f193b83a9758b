//! `prefixsim calibrate INPUT...`: fit the latency model per model from measured requests
//! (Claude Code traces, a usage log, OTLP spans), and backtest it on other files
//! (`--validate`). The arguments and the printing: `api::calibrate_command` reads the inputs,
//! fits, and writes `latency.toml`, `calibration.json` and the figures (tmp + rename, all or
//! nothing). Bad input (also a bad `--validate` file) exits 2 before anything is written or
//! printed on stdout.

use std::path::PathBuf;

use super::{CliResult, Error};
use crate::api::{self, CalibrateRequest};
use crate::calibrate::ObservationFormat as Format;

pub const EXAMPLES: &str = "  prefixsim calibrate data/claude-code-ttft
  prefixsim calibrate data/claude-code-ttft --json
  prefixsim calibrate data/claude-code-ttft --out calibration/ --force
  prefixsim calibrate data/samples/usage-log.jsonl
  prefixsim calibrate data/samples/otlp.json --format otlp --json
  prefixsim calibrate data/claude-code-ttft --ttl 1h
  prefixsim calibrate data/claude-code-ttft --validate data/samples/usage-log.jsonl
";

const AFTER_HELP: &str = "\
Model: ttft = overhead + (uncached + cache_write) / prefill_rate + cache_read / cached_rate
(+ uncached_and_written x context / attention_rate where the data identifies it), fitted per
model by median regression (coefficients >= 0); the overhead is the fitted fixed part plus
every residual: measured quantiles up to p90, a generalized Pareto tail above, truncated at
600 s. decode_rate is the median of output_tokens / (duration - ttft) over requests with at
least 200 output tokens. Intervals: 95% bootstrap over sessions (400 resamples, seed 42). A
parameter the data cannot identify is shown as `-` (JSON null) and left out of latency.toml.
--validate backtests the fit: median error and the share of measured TTFTs above the
predicted p50/p90/p95/p99. Formats and assumptions: docs/calibrate.md.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// Input files or directories (a directory: claude-code traces; any file may be gzipped).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Input format (default: guessed per input: a directory or a JSON object with `requests` is
    /// claude-code, JSON Lines with `usage` a usage log, JSON with `resourceSpans` OTLP).
    #[arg(long, value_parser = Format::NAMES)]
    pub format: Option<String>,
    /// Print JSON for programs: {"models": [...]}.
    #[arg(long)]
    pub json: bool,
    /// Write latency.toml, calibration.json and the figures ttft_fit and ttft_residuals (SVG
    /// and PNG) into DIR (absent or empty).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace --out when it holds files (atomically: written beside it, then swapped in);
    /// without it such a directory is refused.
    #[arg(long)]
    pub force: bool,
    /// Cache TTL of the claude-code cache-read inference: a prefix counts as read only if a
    /// request of the same model in the same file carried it less than this before
    /// (e.g. 5m, 1h; `none`: never expires). Usage logs and OTLP spans carry the provider's own
    /// split: the TTL does not apply to them.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_ttl)]
    pub ttl: Ttl,
    /// Backtest: predict these files' requests with the fit to INPUT (same formats; per model,
    /// requests, median abs error, share above the predicted p50/p90/p95/p99).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub validate: Vec<PathBuf>,
    /// Format of the --validate files (default: guessed per file, as for INPUT).
    #[arg(long, value_parser = Format::NAMES, requires = "validate")]
    pub validate_format: Option<String>,
}

/// A parsed `--ttl`: microseconds, `None` for `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl(pub Option<u64>);

fn parse_ttl(text: &str) -> Result<Ttl, Error> {
    api::parse_ttl(text).map(Ttl)
}

pub fn run(args: Args) -> CliResult {
    let req = CalibrateRequest {
        inputs: args.inputs,
        format: args.format,
        ttl_us: args.ttl.0,
        validate: args.validate,
        validate_format: args.validate_format,
        out: args.out,
        force: args.force,
    };
    let done = api::calibrate_command(&req)?;
    for note in &done.notes {
        eprintln!("note: {note}");
    }
    for w in &done.warnings {
        eprintln!("warning: {w}");
    }
    super::stdout(if args.json { &done.json } else { &done.text }.as_bytes())
}
