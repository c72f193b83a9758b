//! What every trace reader hands the replay: one request at a time, in send-time order, with
//! its block hash ids already cut to the cacheable full blocks. Plus the reader's errors and
//! the bookkeeping shared by readers (conversation names, cache namespaces, warnings).
//!
//! A namespace is a (hash-id scope, model) pair: ids are compared only within one namespace,
//! because caches are per model and `hash_id_scope: local` ids are per file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One request as the replay sees it.
#[derive(Debug, Clone, Copy)]
pub struct TraceRequest<'a> {
    /// Send time, microseconds from the trace's start (non-decreasing across requests).
    pub time_us: u64,
    /// Index into `TraceMeta::conversations`, or `NO_CONVERSATION`.
    pub conversation: u32,
    /// Index of the (scope, model) namespace the ids live in.
    pub namespace: u32,
    /// The model the request was sent to, as the trace names it.
    pub model: &'a str,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Tokens per full block.
    pub block_tokens: u64,
    /// Ids of the full blocks, in prompt order. `input_tokens - len * block_tokens` trailing
    /// tokens (a partial block, or the remainder) are never cached.
    pub block_ids: &'a [u64],
    /// Measured time from send to the first streamed token, where the trace records it.
    pub ttft_us: Option<u64>,
    /// Measured time from send to the end of the response (`api_time`), where recorded.
    pub api_time_us: Option<u64>,
}

impl TraceRequest<'_> {
    /// Tokens after the last full block: billed as uncached input.
    pub fn tail_tokens(&self) -> u64 {
        self.input_tokens - self.block_ids.len() as u64 * self.block_tokens
    }
}

pub const NO_CONVERSATION: u32 = u32::MAX;

/// A malformed trace: names the file and where in it.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{file}:{line}: {message}")]
    Line { file: PathBuf, line: u64, message: String },
    #[error("{file}: {message}")]
    File { file: PathBuf, message: String },
    #[error("cannot read {file}: {source}")]
    Io { file: PathBuf, source: std::io::Error },
}

/// What is wrong with one record of a trace; the reader adds the file and line
/// ([`TraceError::line`]) or the record's place ([`TraceError::file`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordError {
    #[error("bad record: {text} (column {column})")]
    Json { text: String, column: usize },
    #[error("timestamp {0} is not a non-negative number of ms")]
    MooncakeTime(f64),
    #[error(
        "timestamp {ms} ms is earlier than the previous record's {previous_ms} ms (the trace must \
         be sorted by time)"
    )]
    MooncakeUnsorted { ms: f64, previous_ms: f64 },
    #[error(
        "{ids} hash_ids for input_length {input}, expected ceil({input} / {block_size}) = \
         {expected} (is block_size right? set it with --set block_size=N)"
    )]
    MooncakeBlocks { ids: usize, input: u64, block_size: u64, expected: u64 },
    #[error("timestamp_ms {0} is not a non-negative number")]
    RequestsTime(f64),
    #[error(
        "timestamp_ms {ms} is earlier than the previous request's {previous_ms} (the trace must \
         be sorted by time)"
    )]
    RequestsUnsorted { ms: f64, previous_ms: f64 },
    #[error("missing field `{0}`")]
    Missing(&'static str),
    #[error(
        "{ids} hash_ids for in = {input}, expected floor({input} / {block_size}) = {expected}"
    )]
    ClaudeCodeBlocks { ids: usize, input: u64, block_size: u64, expected: u64 },
    #[error("{field} = {value} is not a duration in seconds")]
    NotSeconds { field: &'static str, value: f64 },
    #[error(
        "ttft {ttft_s} s is later than api_time {api_time_s} s (the response cannot end before \
         it begins)"
    )]
    TtftAfterApiTime { ttft_s: f64, api_time_s: f64 },
    #[error(transparent)]
    Window(#[from] super::window::WindowError),
    #[error(transparent)]
    Body(#[from] super::body::BodyError),
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
}

impl TraceError {
    pub fn line(file: &Path, line: u64, message: impl Into<String>) -> Self {
        TraceError::Line { file: file.to_path_buf(), line, message: message.into() }
    }
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        TraceError::File { file: file.to_path_buf(), message: message.into() }
    }
    pub fn io(file: &Path, source: std::io::Error) -> Self {
        TraceError::Io { file: file.to_path_buf(), source }
    }
}

/// What readers learn about a trace besides its requests.
#[derive(Debug, Default)]
pub struct TraceMeta {
    /// Conversation names (claude-code: the file stem; requests: the `conversation` field).
    pub conversations: Vec<String>,
    conversation_index: BTreeMap<String, u32>,
    namespaces: BTreeMap<(u32, String), u32>,
    /// Lines skipped with `--lenient`, with the reason.
    pub warnings: Vec<String>,
    /// Requests handed to the replay.
    pub requests: u64,
}

impl TraceMeta {
    /// The index of a conversation, created on first use.
    pub fn conversation(&mut self, name: &str) -> u32 {
        intern(&mut self.conversations, &mut self.conversation_index, name)
    }
    /// The namespace of ids of `scope` (0 for a global scope) sent to `model`.
    pub fn namespace(&mut self, scope: u32, model: &str) -> u32 {
        let next = self.namespaces.len() as u32;
        *self.namespaces.entry((scope, model.to_string())).or_insert(next)
    }
    /// Record a skipped line (`--lenient`).
    pub fn warn(&mut self, e: TraceError) {
        self.warnings.push(format!("{e} (skipped)"));
    }
}

/// The index of `name` in `names`, appended on first use.
pub fn intern(names: &mut Vec<String>, index: &mut BTreeMap<String, u32>, name: &str) -> u32 {
    if let Some(&i) = index.get(name) {
        return i;
    }
    let i = names.len() as u32;
    names.push(name.to_string());
    index.insert(name.to_string(), i);
    i
}

/// A JSON error of one record, without serde's "at line 1" (the record is one line; the
/// caller names the file's line).
pub fn json_error(e: &serde_json::Error) -> RecordError {
    let text = e.to_string();
    let text = text.rfind(" at line ").map_or(text.as_str(), |i| &text[..i]);
    RecordError::Json { text: text.to_string(), column: e.column() }
}

/// Call `each` with every non-blank line of the JSONL trace `path`, in order. An error of
/// `each` becomes a `TraceError` naming the line: with `lenient` it is kept in `meta` as a
/// warning and the line skipped, else it is the result.
pub fn for_each_line<E: std::fmt::Display>(
    path: &Path,
    lenient: bool,
    meta: &mut TraceMeta,
    mut each: impl FnMut(&[u8], &mut TraceMeta) -> Result<(), E>,
) -> Result<(), TraceError> {
    let mut reader = crate::input::open(path).map_err(|e| TraceError::io(path, e))?;
    let (mut buf, mut line_no) = (Vec::with_capacity(4096), 0u64);
    loop {
        line_no += 1;
        if read_line(&mut *reader, &mut buf, path, line_no)? == 0 {
            return Ok(());
        }
        if buf.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        if let Err(e) = each(&buf, meta) {
            let e = TraceError::line(path, line_no, e.to_string());
            if !lenient {
                return Err(e);
            }
            meta.warn(e);
        }
    }
}

/// Read line `line_no` of `path` into `buf` (cleared first), at most
/// `input::MAX_LINE_BYTES` long; `Ok(0)` at the end of the file.
pub fn read_line(
    reader: &mut dyn std::io::BufRead,
    buf: &mut Vec<u8>,
    path: &Path,
    line_no: u64,
) -> Result<usize, TraceError> {
    use crate::input::{LineError, MAX_LINE_BYTES};
    crate::input::read_line(reader, buf, MAX_LINE_BYTES).map_err(|e| match e {
        LineError::Io(e) => TraceError::io(path, e),
        LineError::TooLong => TraceError::line(
            path,
            line_no,
            format!("line longer than {} MiB (is this a trace file?)", MAX_LINE_BYTES >> 20),
        ),
    })
}
