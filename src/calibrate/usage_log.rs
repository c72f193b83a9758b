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

/// Read a usage log (optionally gzipped) into `out`.
pub fn read(path: &Path, out: &mut Observations) -> Result<(), CalibrateError> {
    let mut reader = input::open(path).map_err(|e| TraceError::io(path, e))?;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut parsed: Vec<(u64, Line)> = Vec::new();
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
        parsed.push((line_no, line));
    }
    if parsed.is_empty() {
        return Err(TraceError::file(path, "no API call in this usage log").into());
    }
    for (line_no, line) in parsed {
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
    Ok(())
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
