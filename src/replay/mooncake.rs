//! Reader of Mooncake-style JSONL traces: one `{"timestamp": ms, "input_length": n,
//! "output_length": n, "hash_ids": [..]}` per line, `len(hash_ids) == ceil(input_length /
//! block_size)`, the last block partial (so never cached) unless the input is a whole number
//! of blocks. Streaming: one line in memory at a time. The bundled trace is
//! `data/mooncake/conversation_trace.jsonl` (its source and licence: `data/mooncake/NOTICE.md`).
//!
//! Validation: bad JSON, a missing field, a wrong number of ids or a timestamp earlier than the
//! previous line's is an error naming the line (with `lenient`, a warning and the line skipped).

use std::path::Path;

use serde::Deserialize;

use super::trace::{RecordError, TraceError, TraceMeta, TraceRequest, NO_CONVERSATION};

#[derive(Deserialize)]
struct Line {
    timestamp: f64,
    input_length: u64,
    output_length: u64,
    hash_ids: Vec<u64>,
}

/// Read `path`, calling `sink` once per request in file order.
pub fn read(
    path: &Path,
    block_size: u64,
    model: &str,
    lenient: bool,
    meta: &mut TraceMeta,
    sink: &mut dyn FnMut(&TraceRequest),
) -> Result<(), TraceError> {
    let namespace = meta.namespace(0, model);
    let mut last_time_us = 0u64;
    super::trace::for_each_line(path, lenient, meta, |buf, meta| {
        let (time_us, line) = parse_line(buf, block_size, last_time_us)?;
        super::window::check(model, line.input_length, line.output_length)?;
        last_time_us = time_us;
        // All ids but a trailing partial block's.
        let partial = !line.input_length.is_multiple_of(block_size);
        let full = line.hash_ids.len() - usize::from(partial);
        meta.requests += 1;
        sink(&TraceRequest {
            time_us,
            conversation: NO_CONVERSATION,
            namespace,
            model,
            input_tokens: line.input_length,
            output_tokens: line.output_length,
            block_tokens: block_size,
            block_ids: &line.hash_ids[..full],
            ttft_us: None,
            api_time_us: None,
        });
        Ok::<(), RecordError>(())
    })
}

fn parse_line(buf: &[u8], block_size: u64, last_time_us: u64) -> Result<(u64, Line), RecordError> {
    let line: Line = serde_json::from_slice(buf).map_err(|e| super::trace::json_error(&e))?;
    if !(line.timestamp.is_finite() && line.timestamp >= 0.0) {
        return Err(RecordError::MooncakeTime(line.timestamp));
    }
    let time_us = (line.timestamp * 1000.0).round() as u64;
    if time_us < last_time_us {
        let previous_ms = last_time_us as f64 / 1000.0;
        return Err(RecordError::MooncakeUnsorted { ms: line.timestamp, previous_ms });
    }
    let expected = line.input_length.div_ceil(block_size);
    if line.hash_ids.len() as u64 != expected {
        return Err(RecordError::MooncakeBlocks {
            ids: line.hash_ids.len(),
            input: line.input_length,
            block_size,
            expected,
        });
    }
    Ok((time_us, line))
}
