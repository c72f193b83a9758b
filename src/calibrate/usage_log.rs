//! Observations from a usage log: the calls `replay::usage_log` reads (the formats and each
//! API's token accounting are documented there and in docs/calibrate.md), each needing a
//! measured `ttft_ms` and/or `duration_ms`. `session` is the bootstrap group, else each line
//! is its own.

use std::path::Path;

use super::{CalibrateError, Observation, Observations};
use crate::replay::usage_log::{self, LoggedCall};
use crate::replay::TraceError;

/// Read a usage log (optionally gzipped) into `out`: at most `input::MAX_FILE_BYTES`
/// decompressed, and at most `MAX_CALIBRATE_REQUESTS` API calls in all inputs together.
pub fn read(path: &Path, out: &mut Observations) -> Result<(), CalibrateError> {
    usage_log::read(path, &mut |line_no, call| {
        if call.ttft_ms.is_none() && call.duration_ms.is_none() {
            let msg = "needs `ttft_ms` or `duration_ms` (or both)";
            return Err(TraceError::line(path, line_no, msg));
        }
        super::check_request_count(path, out.obs.len() + 1)
            .map_err(|CalibrateError::Trace(e)| e)?;
        add(out, line_no, &call);
        Ok(())
    })?;
    Ok(())
}

/// The observation of `call` (on line `line_no`), added to `out`.
fn add(out: &mut Observations, line_no: u64, call: &LoggedCall) {
    let group = match &call.session {
        Some(s) => format!("session {s}"),
        None => format!("line {line_no}"),
    };
    let obs = Observation {
        model: out.model(&call.model),
        group: out.group(&group),
        prefill_tokens: call.split.prefill(),
        cached_tokens: call.split.cache_read,
        output_tokens: call.split.output,
        ttft_s: call.ttft_ms.map(|ms| ms / 1e3),
        duration_s: call.duration_ms.map(|ms| ms / 1e3),
    };
    out.obs.push(obs);
}
