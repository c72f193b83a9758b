//! Observations from a usage log: JSON Lines, one API call a line, as a program that logs its
//! SDK responses has them:
//!
//! ```json
//! {"model": "claude-sonnet-4-5-20250929",
//!  "usage": {"input_tokens": 120, "cache_creation_input_tokens": 1800,
//!            "cache_read_input_tokens": 42000, "output_tokens": 310},
//!  "ttft_ms": 2140, "duration_ms": 9870, "session": "run-7"}
//! ```
//!
//! `usage` is the Messages API object as returned: `input_tokens` are the tokens neither read
//! from nor written to the cache, so `prefill = input_tokens + cache_creation_input_tokens` and
//! `cached = cache_read_input_tokens` (missing or null cache fields are 0). `ttft_ms` and/or
//! `duration_ms` are required; `session` (string or number) is the bootstrap group, else each
//! line is its own. Other keys are ignored. A bad line is an error naming file and line.

use std::path::Path;

use serde::Deserialize;

use super::{CalibrateError, Observation, Observations};
use crate::input::{self, LineError, MAX_LINE_BYTES};
use crate::replay::TraceError;

#[derive(Deserialize)]
struct Line {
    model: String,
    usage: Usage,
    ttft_ms: Option<f64>,
    duration_ms: Option<f64>,
    session: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: u64,
}

/// Read a usage log (optionally gzipped) into `out`: at most `input::MAX_FILE_BYTES`
/// decompressed, and at most `MAX_CALIBRATE_REQUESTS` API calls in all inputs together.
pub fn read(path: &Path, out: &mut Observations) -> Result<(), CalibrateError> {
    let what = "a usage log (decompressed)";
    let mut reader = input::open_capped(path, input::MAX_FILE_BYTES, what)
        .map_err(|e| TraceError::io(path, e))?;
    let mut buf = Vec::new();
    let (mut line_no, before) = (0u64, out.obs.len());
    loop {
        line_no += 1;
        match input::read_line(&mut *reader, &mut buf, MAX_LINE_BYTES) {
            Ok(0) => break,
            Ok(_) => {}
            Err(LineError::Io(e)) => return Err(TraceError::io(path, e).into()),
            Err(LineError::TooLong) => {
                let msg = format!("line longer than {} MiB", MAX_LINE_BYTES >> 20);
                return Err(TraceError::line(path, line_no, msg).into());
            }
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line: Line = serde_json::from_slice(&buf).map_err(|e| {
            TraceError::line(path, line_no, crate::replay::trace::json_error(&e).to_string())
        })?;
        check(&line).map_err(|e| TraceError::line(path, line_no, e.to_string()))?;
        super::check_request_count(path, out.obs.len() + 1)?;
        add(out, line_no, &line);
    }
    if out.obs.len() == before {
        return Err(TraceError::file(path, "no API call in this usage log").into());
    }
    Ok(())
}

/// The observation of `line` (on line `line_no`), added to `out`.
fn add(out: &mut Observations, line_no: u64, line: &Line) {
    let group = match &line.session {
        Some(serde_json::Value::String(s)) => format!("session {s}"),
        Some(v) if !v.is_null() => format!("session {v}"),
        _ => format!("line {line_no}"),
    };
    let u = &line.usage;
    let obs = Observation {
        model: out.model(&line.model),
        group: out.group(&group),
        prefill_tokens: u.input_tokens + u.cache_creation_input_tokens.unwrap_or(0),
        cached_tokens: u.cache_read_input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens,
        ttft_s: line.ttft_ms.map(|ms| ms / 1e3),
        duration_s: line.duration_ms.map(|ms| ms / 1e3),
    };
    out.obs.push(obs);
}

/// What is wrong with one line of a usage log (the reader adds the file and line).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum RecordError {
    #[error("`model` is empty")]
    EmptyModel,
    #[error("`{key}` = {value} is not a non-negative number of milliseconds")]
    NotMilliseconds { key: &'static str, value: f64 },
    #[error("needs `ttft_ms` or `duration_ms` (or both)")]
    NoTiming,
    #[error(
        "`ttft_ms` = {ttft_ms} is later than `duration_ms` = {duration_ms} (the response cannot \
         end before it begins)"
    )]
    TtftAfterDuration { ttft_ms: f64, duration_ms: f64 },
}

/// The checks serde cannot make: a timing present, durations non-negative, ttft <= duration.
fn check(line: &Line) -> Result<(), RecordError> {
    if line.model.trim().is_empty() {
        return Err(RecordError::EmptyModel);
    }
    let ms = |v: Option<f64>, key: &'static str| match v {
        Some(value) if !(value.is_finite() && value >= 0.0) => {
            Err(RecordError::NotMilliseconds { key, value })
        }
        _ => Ok(()),
    };
    ms(line.ttft_ms, "ttft_ms")?;
    ms(line.duration_ms, "duration_ms")?;
    match (line.ttft_ms, line.duration_ms) {
        (None, None) => Err(RecordError::NoTiming),
        (Some(ttft_ms), Some(duration_ms)) if ttft_ms > duration_ms => {
            Err(RecordError::TtftAfterDuration { ttft_ms, duration_ms })
        }
        _ => Ok(()),
    }
}
