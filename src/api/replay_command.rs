//! `prefixsim replay` as one call: a trace replayed as the command line asks (format guessed
//! or named, `--set`, `--what-if` with the TTL ladder), its table and JSON as the command
//! prints them, its warnings, and `replay.json` written into an output directory. The command
//! line parses arguments and prints; the Python package calls the same.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::error::Error;
use super::outdir;
use super::replay::TraceReplay;
use crate::replay::{output, TraceFormat};

/// The trace's skipped-line warnings kept (the table counts them all).
const WARNINGS_MAX: usize = 20;

/// What `prefixsim replay` is asked.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ReplayRequest {
    /// The trace: a file, or a directory of claude-code traces.
    pub trace: PathBuf,
    /// `mooncake`, `claude-code`, `requests`, `usage-log` or `otlp`; `None`: guessed from the
    /// file (`replay --format`'s help says how).
    pub format: Option<String>,
    /// Replay settings, `KEY=VALUE` each (`--set`).
    pub sets: Vec<String>,
    /// What-if choices (`--what-if`); when any is given (even an empty one), TTL 5m, 1h and
    /// none are compared too.
    pub what_if: Vec<String>,
    /// Skip malformed lines with a warning instead of failing.
    pub lenient: bool,
    /// Entries readable as soon as they are written.
    pub instant_ready: bool,
    /// Write replay.json here (absent or empty, unless `force`).
    pub out: Option<PathBuf>,
    /// Replace `out` when it holds files.
    pub force: bool,
}

/// What `prefixsim replay` prints for a request.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ReplayDone {
    /// What `replay --json` prints (one object, or an array with what-if choices).
    pub json: String,
    /// The table `replay` prints.
    pub text: String,
    /// The lines `replay` prints as `warning: ...` on stderr, in order: the first
    /// `WARNINGS_MAX` skipped lines, then the warning that no block repeats, if none does.
    pub warnings: Vec<String>,
}

/// Replay the trace as `prefixsim replay` does; with `out`, write replay.json there (the
/// directory opened and locked before the work, refused if it holds files without `force`).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn replay_command(req: &ReplayRequest) -> Result<ReplayDone, Error> {
    // Opened (and locked) first: a directory that will be refused is refused before the work.
    let out = req.out.as_deref().map(|d| outdir::open(d, req.force, "")).transpose()?;
    let format = match &req.format {
        Some(f) => parse_format(f)?,
        None => guess_format(&req.trace).map_err(Error::usage)?,
    };
    let mut replay = TraceReplay::new(&req.trace, format);
    for s in &req.sets {
        replay = replay.set(s)?;
    }
    replay = replay.lenient(req.lenient).instant_ready(req.instant_ready);
    if !req.what_if.is_empty() {
        replay = req.what_if.iter().fold(replay.with_ttl_ladder(), |r, w| r.what_if(w));
    }
    let result = replay.replay()?;
    let mut warnings: Vec<String> = result.warnings.iter().take(WARNINGS_MAX).cloned().collect();
    if result.reuse_gap_us.is_empty() {
        warnings.push(
            "no prefix block appears twice in this trace, so nothing can hit; \
             check --format and block_size"
                .to_string(),
        );
    }
    let settings = replay.settings();
    let name = req.trace.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    if let Some(out) = out {
        let curves = replay.curves(result.distinct_tokens)?;
        let v = output::replay_file_json(&result, &settings, &name, &curves);
        let path = out.path().join("replay.json");
        crate::results::write_atomic(&path, output::sorted_json(v)).map_err(Error::failed)?;
        out.commit()?;
    }
    let json =
        output::sorted_json(output::stdout_json(&result, &settings, !req.what_if.is_empty()));
    let text = output::text(&result, &settings, &name);
    Ok(ReplayDone { json, text, warnings })
}

/// A format named by the caller; an unknown name is an input error listing the names.
fn parse_format(name: &str) -> Result<TraceFormat, Error> {
    TraceFormat::parse(name).ok_or_else(|| {
        let shown: String = name.chars().take(40).collect();
        Error::Usage(format!(
            "unknown trace format `{shown}` (one of: {})",
            TraceFormat::NAMES.join(", ")
        ))
    })
}

/// A directory is claude-code, a file with `resourceSpans` in its first 64 KiB OTLP spans;
/// else a `.json` file is claude-code, and the first JSONL line decides.
fn guess_format(path: &Path) -> anyhow::Result<TraceFormat> {
    use crate::input::contains as has;
    if path.is_dir() {
        return Ok(TraceFormat::ClaudeCode);
    }
    let head =
        crate::input::head(path).with_context(|| format!("cannot read {}", path.display()))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    if has(&head, b"\"resourceSpans\"") || has(&head, b"\"resource_spans\"") {
        Ok(TraceFormat::Otlp)
    } else if crate::input::has_extension(path, &["json"]) {
        Ok(TraceFormat::ClaudeCode)
    } else if has(first, b"\"hash_ids\"") {
        Ok(TraceFormat::Mooncake)
    } else if has(first, b"\"body\"") {
        Ok(TraceFormat::Requests)
    } else if has(first, b"\"usage\"") || has(first, b"\"usageMetadata\"") {
        Ok(TraceFormat::UsageLog)
    } else {
        Err(anyhow!(
            "{}:1: cannot tell the trace format (no `hash_ids`, `body`, `usage`, `usageMetadata` \
             or `resourceSpans` key); use --format",
            path.display()
        ))
    }
}
