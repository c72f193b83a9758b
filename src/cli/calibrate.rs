//! `prefixsim calibrate INPUT...`: fit the latency model per model from measured requests
//! (Claude Code traces, a usage log, OTLP spans). The edge: reads the inputs, prints the table
//! or JSON, writes `latency.toml`, `calibration.json` and the figure (tmp + rename, all or
//! nothing). Bad input exits 2 before anything is written or printed on stdout.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::{CliError, CliResult};
use crate::calibrate::{self, figure, report, Format, Observations, Settings};

pub const EXAMPLES: &str = "  prefixsim calibrate data/claude-code-ttft
  prefixsim calibrate data/claude-code-ttft --json
  prefixsim calibrate data/claude-code-ttft --out calibration/
  prefixsim calibrate data/samples/usage-log.jsonl
  prefixsim calibrate data/samples/otlp.json --format otlp --json
";

const AFTER_HELP: &str = "\
Model: ttft = overhead + (uncached + cache_write) / prefill_rate + cache_read / cached_rate,
fitted per model by median regression (coefficients >= 0); decode_rate is the median of
output_tokens / (duration - ttft) over requests with at least 200 output tokens. Intervals:
95% bootstrap over sessions (400 resamples, seed 42). A parameter the data cannot identify is
shown as `-` (JSON null) and left out of latency.toml. Formats and assumptions: docs/calibrate.md.";

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
    /// Write latency.toml, calibration.json, ttft_fit.svg and ttft_fit.png into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> CliResult {
    let format = args.format.as_deref().and_then(Format::parse);
    let mut data = Observations::default();
    for input in &args.inputs {
        calibrate::read(input, format, &mut data).map_err(CliError::input)?;
    }
    if !data.obs.iter().any(|o| o.ttft_s.is_some()) {
        return Err(CliError::input(anyhow!(
            "{}: no request has a measured time to first token (ttft); nothing to fit",
            inputs_text(&data)
        )));
    }
    let cal = calibrate::calibrate(&data, &Settings::default());
    for note in &data.notes {
        eprintln!("note: {note}");
    }
    for s in &cal.skipped {
        eprintln!("warning: {} skipped: {}", s.model, s.reason);
    }
    if cal.models.is_empty() {
        let why: Vec<String> =
            cal.skipped.iter().map(|s| format!("{}: {}", s.model, s.reason)).collect();
        return Err(CliError::input(anyhow!(
            "no model has enough data to fit ({})",
            why.join("; ")
        )));
    }
    let inputs = inputs_text(&data);
    if let Some(dir) = &args.out {
        let files = [
            ("latency.toml", report::latency_toml(&cal, &command(&args), &inputs).into_bytes()),
            ("calibration.json", report::json(&cal).into_bytes()),
            ("ttft_fit.svg", figure::svg(&cal).map_err(CliError::internal)?.into_bytes()),
            ("ttft_fit.png", figure::png(&cal).map_err(CliError::internal)?),
        ];
        write_all(dir, &files).map_err(CliError::internal)?;
    }
    let text = if args.json { report::json(&cal) } else { report::text(&cal, &inputs) };
    super::stdout(text.as_bytes())
}

/// The command as typed (paths as given), for the header of latency.toml.
fn command(args: &Args) -> String {
    let mut parts = vec!["prefixsim calibrate".to_string()];
    parts.extend(args.inputs.iter().map(|p| p.display().to_string()));
    if let Some(f) = &args.format {
        parts.push(format!("--format {f}"));
    }
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
fn write_all(dir: &Path, files: &[(&str, Vec<u8>)]) -> anyhow::Result<()> {
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
