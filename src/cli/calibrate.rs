//! `prefixsim calibrate INPUT...`: fit the latency model per model from measured requests
//! (Claude Code traces, a usage log, OTLP spans), and backtest it on other files
//! (`--validate`). The edge: reads the inputs, prints the table or JSON, writes `latency.toml`,
//! `calibration.json` and the figures (tmp + rename, all or nothing). Bad input (also a bad
//! `--validate` file) exits 2 before anything is written or printed on stdout.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::{CliResult, Error};
use crate::api::outdir;
use crate::calibrate::figure::{self, Figure};
use crate::calibrate::{self, report, ObservationFormat as Format, Observations, Settings};

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

fn parse_ttl(text: &str) -> Result<Ttl, String> {
    if text.trim() == "none" {
        return Ok(Ttl(None));
    }
    match crate::time::parse_duration_us(text) {
        Ok(0) => Err("a TTL must be positive (or `none`)".into()),
        Ok(us) => Ok(Ttl(Some(us))),
        Err(e) => Err(format!("{e} (e.g. 5m, 1h, none)")),
    }
}

/// Read `inputs` into one set of observations; a bad file is an input error.
fn read_all(inputs: &[PathBuf], format: Option<&str>, ttl: Ttl) -> Result<Observations, Error> {
    let format = format.and_then(Format::parse);
    let mut data = Observations::default();
    for input in inputs {
        calibrate::read_with_ttl(input, format, ttl.0, &mut data).map_err(Error::usage)?;
    }
    Ok(data)
}

pub fn run(args: Args) -> CliResult {
    // Opened (and locked) first: a directory that will be refused is refused before the work.
    let out = args.out.as_deref().map(|d| outdir::open(d, args.force, "")).transpose()?;
    let data = read_all(&args.inputs, args.format.as_deref(), args.ttl)?;
    let validate = (!args.validate.is_empty())
        .then(|| read_all(&args.validate, args.validate_format.as_deref(), args.ttl))
        .transpose()?;
    if !data.obs.iter().any(|o| o.ttft_s.is_some()) {
        return Err(Error::usage(anyhow!(
            "{}: no request has a measured time to first token (ttft); nothing to fit",
            inputs_text(&data)
        )));
    }
    let mut cal = calibrate::calibrate(&data, &Settings::default());
    let notes = data.notes.iter().chain(validate.iter().flat_map(|v| &v.notes));
    for note in notes {
        eprintln!("note: {note}");
    }
    if let Some(v) = &validate {
        for model in calibrate::validate(&mut cal, v) {
            eprintln!("note: {model}: in the --validate files but not fitted from INPUT");
        }
    }
    if cal.models.is_empty() {
        // The error says why each model was skipped: no warning says it first.
        let why: Vec<String> =
            cal.skipped.iter().map(|s| format!("{}: {}", s.model, s.reason)).collect();
        let inputs = inputs_text(&data);
        let why = why.join("; ");
        return Err(Error::usage(anyhow!("{inputs}: no model has enough data to fit ({why})")));
    }
    for s in &cal.skipped {
        eprintln!("warning: {} skipped: {}", s.model, s.reason);
    }
    let inputs = inputs_text(&data);
    if let Some(out) = out {
        let mut files = vec![
            (
                "latency.toml".to_string(),
                report::latency_toml(&cal, &command(&args), &inputs).into_bytes(),
            ),
            ("calibration.json".to_string(), report::json(&cal).into_bytes()),
        ];
        for f in [Figure::Fit, Figure::Residuals] {
            let svg = figure::svg(&cal, f).map_err(Error::failed)?;
            files.push((format!("{}.svg", f.name()), svg.into_bytes()));
            files.push((format!("{}.png", f.name()), figure::png(&cal, f).map_err(Error::failed)?));
        }
        write_all(out.path(), &files).map_err(Error::failed)?;
        out.commit()?;
    }
    let text = if args.json {
        report::json(&cal)
    } else {
        let validated = validate.as_ref().map(inputs_text);
        report::text(&cal, &inputs, validated.as_deref())
    };
    super::stdout(text.as_bytes())
}

/// The command as typed (paths as given), for the header of latency.toml.
fn command(args: &Args) -> String {
    let mut parts = vec!["prefixsim calibrate".to_string()];
    parts.extend(args.inputs.iter().map(|p| p.display().to_string()));
    if let Some(f) = &args.format {
        parts.push(format!("--format {f}"));
    }
    let ttl = args.ttl.0.map(|us| crate::time::SimDuration::from_us(us).to_string());
    parts.push(format!("--ttl {}", ttl.as_deref().unwrap_or("none")));
    if let Some(d) = &args.out {
        parts.push(format!("--out {}", d.display()));
    }
    parts.join(" ")
}

/// `PATH (format)` for each input.
fn inputs_text(data: &Observations) -> String {
    let parts: Vec<String> =
        data.inputs.iter().map(|(p, f)| format!("{} ({})", p.display(), f.name())).collect();
    parts.join(", ")
}

/// Write every file to `NAME.tmp`, then rename them all: a failure leaves no partial file.
fn write_all(dir: &Path, files: &[(String, Vec<u8>)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = |name: &str| dir.join(format!("{name}.tmp"));
    for (name, bytes) in files {
        if let Err(e) = std::fs::write(tmp(name), bytes) {
            for (n, _) in files {
                let _ = std::fs::remove_file(tmp(n));
            }
            return Err(e).with_context(|| format!("cannot write {}", tmp(name).display()));
        }
    }
    for (name, _) in files {
        std::fs::rename(tmp(name), dir.join(name))
            .with_context(|| format!("cannot rename {}", tmp(name).display()))?;
    }
    Ok(())
}
