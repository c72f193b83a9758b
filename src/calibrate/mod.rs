//! `calibrate`: fit the simulator's latency model per model from measured requests.
//!
//! ```text
//!   readers (claude_code, usage_log, otlp)  ->  Observations  ->  estimate (fit, bootstrap)
//!        files, the only I/O                     plain data         pure, seeded
//!                                                    -> report (JSON, table, latency.toml), figure
//! ```
//!
//! The model is the one `model::latency` draws from:
//! `ttft = overhead + (uncached + cache_write) / prefill_rate + cache_read / cached_rate
//! (+ prefilled x context / attention_rate where identified)`, the overhead a spliced
//! distribution with a fitted tail (`tail`), and where a request's duration is known,
//! `decode_rate` from `(duration - ttft) / output_tokens`. `check` measures how well it predicts
//! held-out sessions and `--validate` files.
//! Everything after the readers is a pure function of the observations and the settings (seed
//! and resample count): the same input gives the same bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::replay::trace::intern;
use crate::replay::TraceError;

pub mod check;
pub mod claude_code;
pub mod estimate;
#[cfg(feature = "plot")]
pub mod figure;
pub mod fit;
pub mod otlp;
pub mod report;
pub mod tail;
pub mod usage_log;

pub use estimate::{calibrate, validate, Settings};

/// One API call: its token split (as the server billed it, or as inferred) and its timing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Index into `Observations::models`.
    pub model: u32,
    /// Index into `Observations::groups`: the bootstrap resamples whole groups (sessions).
    pub group: u32,
    /// Uncached + cache-write input tokens: prefilled.
    pub prefill_tokens: u64,
    /// Cache-read input tokens.
    pub cached_tokens: u64,
    pub output_tokens: u64,
    /// Measured time from send to the first token, seconds.
    pub ttft_s: Option<f64>,
    /// Measured time from send to the end of the response, seconds.
    pub duration_s: Option<f64>,
}

/// Everything the readers found, in input order.
#[derive(Debug, Default)]
pub struct Observations {
    pub obs: Vec<Observation>,
    /// Model ids as the input spells them.
    pub models: Vec<String>,
    /// Session names (`INPUT#NAME`), unique across inputs.
    pub groups: Vec<String>,
    model_index: BTreeMap<String, u32>,
    group_index: BTreeMap<String, u32>,
    /// What a reader assumed or skipped, for people (stderr).
    pub notes: Vec<String>,
    /// Each input and the format it was read as.
    pub inputs: Vec<(PathBuf, ObservationFormat)>,
}

impl Observations {
    /// The index of `model`, created on first use.
    pub fn model(&mut self, model: &str) -> u32 {
        intern(&mut self.models, &mut self.model_index, model)
    }
    /// The index of group `name` of the current input, created on first use.
    pub fn group(&mut self, name: &str) -> u32 {
        let key = format!("{}#{name}", self.inputs.len());
        intern(&mut self.groups, &mut self.group_index, &key)
    }
}

/// The format of a file of measured requests (`--format`): what `read` parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservationFormat {
    ClaudeCode,
    UsageLog,
    Otlp,
}

impl ObservationFormat {
    pub const NAMES: [&'static str; 3] = ["claude-code", "usage-log", "otlp"];
    const ALL: [ObservationFormat; 3] =
        [ObservationFormat::ClaudeCode, ObservationFormat::UsageLog, ObservationFormat::Otlp];

    pub fn parse(name: &str) -> Option<ObservationFormat> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Bad input: names the file, and the line or the record, and the value. Calibration inputs
/// are traces, so their readers build the replay's `TraceError` (`TraceError::line`, `file`,
/// `io`); this type keeps a calibration's failure apart from a replay's in `api::Error`.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Most API calls `calibrate` reads from all its inputs together: 200,000. Each is refitted
/// in every bootstrap resample (400, three bootstraps), about 0.2 ms a request: the limit is
/// about a minute of fitting. `MAX_CALIBRATE_REQUESTS_ENV` replaces it.
pub const MAX_CALIBRATE_REQUESTS: usize = 200_000;
/// The environment variable that replaces `MAX_CALIBRATE_REQUESTS`.
pub const MAX_CALIBRATE_REQUESTS_ENV: &str = "PREFIXSIM_MAX_CALIBRATE_REQUESTS";

/// Refuse `count` API calls (read so far, `path` the input being read) above the limit.
pub fn check_request_count(path: &Path, count: usize) -> Result<(), CalibrateError> {
    let set = std::env::var(MAX_CALIBRATE_REQUESTS_ENV).ok();
    let limit = set.and_then(|v| v.trim().parse().ok()).unwrap_or(MAX_CALIBRATE_REQUESTS);
    if count <= limit {
        return Ok(());
    }
    let msg = format!(
        "more than {limit} API calls in the inputs, the limit of calibrate's work (each is \
         refitted 1,200 times by the bootstrap); sample the inputs, or raise the limit with \
         {MAX_CALIBRATE_REQUESTS_ENV}=N (see docs/limits.md)"
    );
    Err(TraceError::file(path, msg).into())
}

/// Read one input (a file, or a directory of claude-code traces) into `out`, in `format` or
/// the guessed one, inferring claude-code cache reads with the default 5-minute TTL; returns
/// the format used.
pub fn read(
    input: &Path,
    format: Option<ObservationFormat>,
    out: &mut Observations,
) -> Result<ObservationFormat, CalibrateError> {
    read_with_ttl(input, format, Some(claude_code::DEFAULT_TTL_US), out)
}

/// `read` with the TTL of the claude-code cache inference (`None`: nothing expires). Usage
/// logs and OTLP spans carry the provider's own split, which the TTL does not touch.
pub fn read_with_ttl(
    input: &Path,
    format: Option<ObservationFormat>,
    ttl_us: Option<u64>,
    out: &mut Observations,
) -> Result<ObservationFormat, CalibrateError> {
    let format = match format {
        Some(f) => f,
        None => guess_format(input)?,
    };
    match format {
        ObservationFormat::ClaudeCode => claude_code::read(input, ttl_us, out)?,
        ObservationFormat::UsageLog => usage_log::read(input, out)?,
        ObservationFormat::Otlp => otlp::read(input, out)?,
    }
    check_request_count(input, out.obs.len())?;
    out.inputs.push((input.to_path_buf(), format));
    Ok(format)
}

/// A directory is claude-code; a file is told by its first 64 KiB: `resourceSpans` is an OTLP
/// export, a first line with `usage` or `usageMetadata` (Gemini) a usage log, `requests` a
/// claude-code trace.
pub fn guess_format(path: &Path) -> Result<ObservationFormat, CalibrateError> {
    use crate::input::contains as has;
    if path.is_dir() {
        return Ok(ObservationFormat::ClaudeCode);
    }
    let head = crate::input::head(path).map_err(|e| TraceError::io(path, e))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    if has(&head, b"\"resourceSpans\"") || has(&head, b"\"resource_spans\"") {
        Ok(ObservationFormat::Otlp)
    } else if has(first, b"\"usage\"") || has(first, b"\"usageMetadata\"") {
        Ok(ObservationFormat::UsageLog)
    } else if has(&head, b"\"requests\"") {
        Ok(ObservationFormat::ClaudeCode)
    } else {
        Err(TraceError::line(
            path,
            1,
            "cannot tell the format (no `resourceSpans`, `usage`, `usageMetadata` or `requests` key); \
             use --format",
        )
        .into())
    }
}
