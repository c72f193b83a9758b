//! Reader of the Claude Code session traces (kv-cache-tester format; see
//! `data/claude-code-traces/NOTICE.md`): one JSON object per conversation, or a directory of
//! them read in sorted file-name order, each replayed after the previous one (its times
//! offset by the previous file's last send time).
//!
//! Blocks: `len(hash_ids) == floor(in / block_size)`, every id a full block; the `in %
//! block_size` trailing tokens have no id and are never cached. Sub-agents (`type:
//! "subagent"`) are nested with their own `requests`; the entry's `t` is when the sub-agent
//! *finished*, so a sub-agent request is sent at `(entry.t - duration_ms/1000) + request.t`
//! (an `async_launched` entry without `duration_ms` starts at its `t`). With
//! `hash_id_scope: "local"` ids are per file (and shared by the file's sub-agents); each
//! request's `model` picks its cache (caches are per model). One file in memory at a time.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::trace::{RecordError, TraceError, TraceMeta, TraceRequest};
use crate::time::US_PER_S;

#[derive(Deserialize)]
struct ConversationFile {
    id: Option<String>,
    block_size: u64,
    #[serde(default)]
    hash_id_scope: Option<String>,
    requests: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    t: f64,
    #[serde(rename = "type")]
    kind: String,
    model: Option<String>,
    #[serde(rename = "in")]
    input: Option<u64>,
    out: Option<u64>,
    hash_ids: Option<Vec<u64>>,
    duration_ms: Option<f64>,
    requests: Option<Vec<Entry>>,
    /// Seconds from send to the first streamed token (recorded by some traces).
    ttft: Option<f64>,
    /// Seconds from send to the end of the response.
    api_time: Option<f64>,
}

/// One request placed on the file's clock.
struct Placed {
    time_us: u64,
    model: String,
    input: u64,
    output: u64,
    ids: Vec<u64>,
    ttft_us: Option<u64>,
    api_time_us: Option<u64>,
}

/// The `.json` (or `.json.gz`) files of `path` in sorted name order (or `path` itself if it
/// is a file).
pub fn files(path: &Path) -> Result<Vec<PathBuf>, TraceError> {
    crate::input::files(path, &["json"]).map_err(|e| TraceError::io(path, e))
}

/// Read a file or a directory of conversations, calling `sink` per request in time order.
pub fn read(
    path: &Path,
    lenient: bool,
    meta: &mut TraceMeta,
    sink: &mut dyn FnMut(&TraceRequest),
) -> Result<(), TraceError> {
    let mut offset_us = 0u64;
    for (index, file) in files(path)?.iter().enumerate() {
        match read_file(file, index as u32 + 1, offset_us, meta, sink) {
            Ok(end_us) => offset_us = end_us,
            Err(e) if lenient => meta.warn(e),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One conversation; returns the absolute time of its last send.
fn read_file(
    file: &Path,
    scope: u32,
    offset_us: u64,
    meta: &mut TraceMeta,
    sink: &mut dyn FnMut(&TraceRequest),
) -> Result<u64, TraceError> {
    let bytes = crate::input::read_all(file).map_err(|e| TraceError::io(file, e))?;
    let conv: ConversationFile = serde_json::from_slice(&bytes)
        .map_err(|e| TraceError::line(file, e.line() as u64, format!("bad trace: {e}")))?;
    drop(bytes);
    if conv.block_size == 0 {
        return Err(TraceError::file(file, "block_size is 0"));
    }
    let scope = match conv.hash_id_scope.as_deref() {
        None | Some("local") => scope,
        Some("global") => 0,
        Some(other) => {
            return Err(TraceError::file(file, format!("unknown hash_id_scope `{other}`")))
        }
    };
    let mut placed = Vec::new();
    place(conv.requests, 0.0, conv.block_size, "requests", file, &mut placed)?;
    // Stable: requests sent at the same microsecond keep their order in the file.
    placed.sort_by_key(|p| p.time_us);
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = conv.id.or(stem).unwrap_or_default();
    let conversation = meta.conversation(&name);
    let mut end_us = offset_us;
    for p in &placed {
        end_us = offset_us + p.time_us;
        meta.requests += 1;
        let namespace = meta.namespace(scope, &p.model);
        sink(&TraceRequest {
            time_us: end_us,
            conversation,
            namespace,
            model: &p.model,
            input_tokens: p.input,
            output_tokens: p.output,
            block_tokens: conv.block_size,
            block_ids: &p.ids,
            ttft_us: p.ttft_us,
            api_time_us: p.api_time_us,
        });
    }
    Ok(end_us)
}

/// Place the requests of one `requests` array (the parent's or a sub-agent's) whose clock
/// starts at `base_s`, recursing into sub-agents.
fn place(
    entries: Vec<Entry>,
    base_s: f64,
    block_size: u64,
    where_: &str,
    file: &Path,
    out: &mut Vec<Placed>,
) -> Result<(), TraceError> {
    let mut last_t = f64::NEG_INFINITY;
    for (i, e) in entries.into_iter().enumerate() {
        let at = || format!("{where_}[{i}]");
        let bad = |m: String| TraceError::file(file, format!("{}: {m}", at()));
        if !(e.t.is_finite() && e.t >= 0.0) {
            return Err(bad(format!("t = {} is not a non-negative number of seconds", e.t)));
        }
        if e.kind == "subagent" {
            let start_s = e.t - e.duration_ms.unwrap_or(0.0) / 1000.0;
            if start_s < -1e-9 {
                return Err(bad(format!(
                    "sub-agent starts before the conversation (t {} - duration {} ms < 0)",
                    e.t,
                    e.duration_ms.unwrap_or(0.0)
                )));
            }
            let inner = e.requests.unwrap_or_default();
            place(
                inner,
                base_s + start_s.max(0.0),
                block_size,
                &format!("{}.requests", at()),
                file,
                out,
            )?;
            continue;
        }
        if e.t < last_t {
            return Err(bad(format!(
                "t = {} s is earlier than the previous request's {} s",
                e.t, last_t
            )));
        }
        last_t = e.t;
        out.push(placed(e, base_s, block_size).map_err(|e| bad(e.to_string()))?);
    }
    Ok(())
}

fn placed(e: Entry, base_s: f64, block_size: u64) -> Result<Placed, RecordError> {
    let model = e.model.ok_or(RecordError::Missing("model"))?;
    let input = e.input.ok_or(RecordError::Missing("in"))?;
    let ids = e.hash_ids.ok_or(RecordError::Missing("hash_ids"))?;
    let expected = input / block_size;
    if ids.len() as u64 != expected {
        let ids = ids.len();
        return Err(RecordError::ClaudeCodeBlocks { ids, input, block_size, expected });
    }
    super::window::check(&model, input, e.out.unwrap_or(0))?;
    let time_us = ((base_s + e.t) * US_PER_S as f64).round() as u64;
    let ttft_us = seconds_us(e.ttft, "ttft")?;
    let api_time_us = seconds_us(e.api_time, "api_time")?;
    if let (Some(ttft), Some(api)) = (ttft_us, api_time_us) {
        if ttft > api {
            let (ttft_s, api_time_s) = (ttft as f64 / 1e6, api as f64 / 1e6);
            return Err(RecordError::TtftAfterApiTime { ttft_s, api_time_s });
        }
    }
    Ok(Placed { time_us, model, input, output: e.out.unwrap_or(0), ids, ttft_us, api_time_us })
}

/// A recorded duration in seconds as microseconds; it must be a non-negative number.
fn seconds_us(s: Option<f64>, field: &'static str) -> Result<Option<u64>, RecordError> {
    match s {
        None => Ok(None),
        Some(s) if s.is_finite() && (0.0..1e7).contains(&s) => {
            Ok(Some((s * US_PER_S as f64).round() as u64))
        }
        Some(value) => Err(RecordError::NotSeconds { field, value }),
    }
}
