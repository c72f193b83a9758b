//! The reader of OpenTelemetry spans exported as OTLP JSON (`calibrate` and `replay` both read
//! them) (`resourceSpans` ->
//! `scopeSpans` -> `spans`), one export object per file or one per line (JSON Lines, as the
//! Collector's file exporter writes), with the GenAI semantic conventions
//! (https://opentelemetry.io/docs/specs/semconv/gen-ai/):
//!
//! - model: `gen_ai.response.model`, else `gen_ai.request.model`;
//! - provider: `gen_ai.provider.name`, else its older name `gen_ai.system`;
//! - tokens: `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` (or their older names
//!   `gen_ai.usage.prompt_tokens`, `gen_ai.usage.completion_tokens`),
//!   `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens` (or
//!   its newer name `gen_ai.usage.cache_write.input_tokens`);
//! - time to first token: `gen_ai.response.time_to_first_chunk` (seconds; also read:
//!   `gen_ai.response.time_to_first_token`); duration: `endTimeUnixNano - startTimeUnixNano`.
//!
//! The conventions say `gen_ai.usage.input_tokens` INCLUDES the cached tokens (for Anthropic:
//! `input_tokens + cache_read + cache_creation`), so `prefill = input - cache_read`. OpenAI's
//! and Gemini's own counts include them too, so a span of those providers (`openai`,
//! `azure.ai.openai`, `gcp.gemini`, `gcp.vertex_ai`, `gcp.gen_ai`; older `gen_ai.system`
//! values `az.ai.openai`, `gemini`, `vertex_ai`) is always read that way, and one whose
//! input is below its cache read is an error. Older Anthropic instrumentations copied
//! Anthropic's `input_tokens`, which excludes them: when any call of another (or no) provider
//! in a file has `input < cache_read + cache_creation`, every such call of the file is read
//! that way (`prefill = input + cache_creation`), and a note says so. Spans that are not model calls
//! (no model or no input tokens, or a `gen_ai.operation.name` other than `chat`,
//! `text_completion`, `generate_content`) are skipped. A call's conversation is its
//! `gen_ai.conversation.id`, else its trace id; its send time its `startTimeUnixNano`.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::usage_log::Split;
use super::TraceError;

#[derive(Deserialize)]
struct Export {
    #[serde(rename = "resourceSpans", alias = "resource_spans", default)]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
struct ResourceSpans {
    #[serde(rename = "scopeSpans", alias = "scope_spans", default)]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
struct Span {
    #[serde(rename = "traceId", alias = "trace_id", default)]
    trace_id: String,
    #[serde(rename = "spanId", alias = "span_id", default)]
    span_id: String,
    #[serde(default)]
    name: String,
    #[serde(rename = "startTimeUnixNano", alias = "start_time_unix_nano")]
    start: Option<Value>,
    #[serde(rename = "endTimeUnixNano", alias = "end_time_unix_nano")]
    end: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: Value,
}

/// One model call read from a span, before the file-wide input-token rule is applied.
struct Call {
    conversation: Option<String>,
    start_ns: Option<u64>,
    writes_recorded: bool,
    model: String,
    /// The provider's input count includes the cached tokens whatever the instrumentation
    /// (OpenAI, Gemini): the file-wide rule does not apply.
    includes_cached: bool,
    trace_id: String,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    ttft_s: Option<f64>,
    duration_s: Option<f64>,
}

/// One model call of a span file, with the provider's split as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanCall {
    pub model: String,
    /// `gen_ai.conversation.id`, else the trace id.
    pub conversation: String,
    pub trace_id: String,
    /// `startTimeUnixNano`, where the span has one (> 0).
    pub start_ns: Option<u64>,
    pub split: Split,
    pub ttft_s: Option<f64>,
    pub duration_s: Option<f64>,
}

/// The model calls of an OTLP JSON export (or JSON Lines of exports), in file order, and a
/// note when the file's input counts were read as Anthropic's (excluding cached tokens).
pub fn read(path: &Path) -> Result<(Vec<SpanCall>, Option<String>), TraceError> {
    let bytes = crate::input::read_all(path).map_err(|e| TraceError::io(path, e))?;
    let mut calls = Vec::new();
    let mut spans = 0usize;
    let mut stream = serde_json::Deserializer::from_slice(&bytes).into_iter::<Export>();
    // The line an export starts on (JSON Lines: its line), counted incrementally.
    let (mut counted, mut line) = (0usize, 1usize);
    loop {
        let start = stream.byte_offset()
            + bytes[stream.byte_offset()..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        line += bytes[counted..start].iter().filter(|&&b| b == b'\n').count();
        counted = start;
        let Some(export) = stream.next() else { break };
        let export = export
            .map_err(|e| TraceError::line(path, e.line() as u64, format!("bad OTLP JSON: {e}")))?;
        for span in export.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans)
        {
            spans += 1;
            let at = |e: SpanError| {
                let m = format!("span `{}` (spanId {}): {e}", span.name, span.span_id);
                TraceError::line(path, line as u64, m)
            };
            if let Some(call) = call(span).map_err(at)? {
                calls.push(call);
            }
        }
    }
    if calls.is_empty() {
        return Err(TraceError::file(
            path,
            format!("no model call among its {spans} spans (no span has a gen_ai model and gen_ai.usage.input_tokens)"),
        ));
    }
    Ok(finish(path, calls))
}

/// Apply the file-wide input-token rule to every call.
fn finish(path: &Path, calls: Vec<Call>) -> (Vec<SpanCall>, Option<String>) {
    let below = |c: &Call| c.input < c.cache_read + c.cache_write;
    let excludes = calls.iter().any(|c| !c.includes_cached && below(c));
    let note = excludes.then(|| {
        format!(
            "{}: gen_ai.usage.input_tokens is below cache_read + cache_creation in some spans: read as \
             Anthropic's input_tokens (excluding cached tokens) in every span of this file that is \
             not OpenAI's or Gemini's",
            path.display()
        )
    });
    let calls = calls
        .into_iter()
        .map(|c| {
            // Excluding: `input` is the uncached part; else it holds the read and written ones.
            let uncached = if excludes && !c.includes_cached {
                c.input
            } else {
                c.input - c.cache_read - c.cache_write
            };
            let split = Split {
                uncached,
                cache_write: c.cache_write,
                cache_read: c.cache_read,
                output: c.output,
                writes_recorded: c.writes_recorded,
            };
            SpanCall {
                model: c.model,
                conversation: c.conversation.unwrap_or_else(|| c.trace_id.clone()),
                trace_id: c.trace_id,
                start_ns: c.start_ns,
                split,
                ttft_s: c.ttft_s,
                duration_s: c.duration_s,
            }
        })
        .collect();
    (calls, note)
}

const CALL_OPERATIONS: [&str; 3] = ["chat", "text_completion", "generate_content"];

/// `gen_ai.provider.name` (and older `gen_ai.system`) values of APIs whose input count
/// includes the cached tokens: OpenAI (`prompt_tokens`, `input_tokens`) and Gemini
/// (`promptTokenCount`), direct or through Azure and Vertex AI.
const INCLUDING_PROVIDERS: [&str; 8] = [
    "openai",
    "azure.ai.openai",
    "az.ai.openai",
    "gcp.gemini",
    "gcp.vertex_ai",
    "gcp.gen_ai",
    "gemini",
    "vertex_ai",
];

/// What is wrong with one span (the reader adds the file, line and span).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum SpanError {
    #[error("{key} = {source}")]
    Attribute { key: &'static str, source: BadValue },
    #[error("time to first token {ttft_s} s is later than the span's end ({duration_s} s)")]
    TtftAfterEnd { ttft_s: f64, duration_s: f64 },
    #[error("endTimeUnixNano {end} is before startTimeUnixNano {start}")]
    EndBeforeStart { start: u64, end: u64 },
    #[error(
        "gen_ai.usage.input_tokens = {input} is below its cache read {cached} + write {written}, \
         which {provider}'s input count includes"
    )]
    CachedAboveInput { provider: String, input: u64, cached: u64, written: u64 },
}

/// What is wrong with one attribute value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum BadValue {
    #[error("{0} is not a number")]
    Number(Value),
    #[error("{0} is not a token count")]
    Count(f64),
    #[error("{0} is not a duration in seconds")]
    Seconds(f64),
    #[error("{0} is not a whole number of nanoseconds")]
    Nanoseconds(Value),
}

/// The model call a span records, `None` when it records none.
fn call(span: &Span) -> Result<Option<Call>, SpanError> {
    let attr = |key: &str| span.attributes.iter().find(|kv| kv.key == key).map(|kv| &kv.value);
    if let Some(op) = attr("gen_ai.operation.name").and_then(string) {
        if !CALL_OPERATIONS.contains(&op.as_str()) {
            return Ok(None);
        }
    }
    let model = attr("gen_ai.response.model")
        .or_else(|| attr("gen_ai.request.model"))
        .and_then(string)
        .filter(|m| !m.trim().is_empty());
    // The conventions' names, else their deprecated ones (older instrumentations).
    let pick = |new: &'static str, old: &'static str| match (attr(new), attr(old)) {
        (None, Some(_)) => old,
        _ => new,
    };
    let input_key = pick("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens");
    let output_key = pick("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens");
    let (Some(model), Some(_)) = (model, attr(input_key)) else {
        return Ok(None);
    };
    let tokens = |key: &'static str| -> Result<u64, SpanError> {
        attr(key).map_or(Ok(0), |v| count(v).map_err(|source| SpanError::Attribute { key, source }))
    };
    // The conventions' name, else its newer one; either says the span counts writes.
    let write_key =
        ["gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_write.input_tokens"]
            .into_iter()
            .find(|k| attr(k).is_some());
    let cache_write = write_key.map_or(Ok(0), tokens)?;
    let ttft = ["gen_ai.response.time_to_first_chunk", "gen_ai.response.time_to_first_token"]
        .into_iter()
        .find_map(|k| Some((k, attr(k)?)));
    let ttft_s = match ttft {
        Some((key, v)) => Some(seconds(v).map_err(|source| SpanError::Attribute { key, source })?),
        None => None,
    };
    let (start_ns, duration_s) = times(span)?;
    if let (Some(t), Some(d)) = (ttft_s, duration_s) {
        if t > d + 1e-6 {
            return Err(SpanError::TtftAfterEnd { ttft_s: t, duration_s: d });
        }
    }
    let provider = attr("gen_ai.provider.name").or_else(|| attr("gen_ai.system")).and_then(string);
    let includes_cached = provider.as_deref().is_some_and(|p| INCLUDING_PROVIDERS.contains(&p));
    let call = Call {
        conversation: attr("gen_ai.conversation.id").and_then(string).filter(|c| !c.is_empty()),
        start_ns,
        writes_recorded: write_key.is_some(),
        model,
        includes_cached,
        trace_id: span.trace_id.clone(),
        input: tokens(input_key)?,
        output: tokens(output_key)?,
        cache_read: tokens("gen_ai.usage.cache_read.input_tokens")?,
        cache_write,
        ttft_s,
        duration_s,
    };
    if includes_cached && call.input < call.cache_read.saturating_add(call.cache_write) {
        return Err(SpanError::CachedAboveInput {
            provider: provider.unwrap_or_default(),
            input: call.input,
            cached: call.cache_read,
            written: call.cache_write,
        });
    }
    Ok(Some(call))
}

/// The span's start (when it has one, > 0) and its duration in seconds (when it has both
/// ends).
fn times(span: &Span) -> Result<(Option<u64>, Option<f64>), SpanError> {
    let nanos = |v: &Option<Value>, key: &'static str| -> Result<Option<u64>, SpanError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(v) => uint(v).map(Some).map_err(|source| SpanError::Attribute { key, source }),
        }
    };
    let start = nanos(&span.start, "startTimeUnixNano")?;
    let end = nanos(&span.end, "endTimeUnixNano")?;
    match (start, end) {
        (Some(start), Some(end)) if end < start => Err(SpanError::EndBeforeStart { start, end }),
        (Some(s), Some(e)) if s > 0 => Ok((Some(s), Some((e - s) as f64 / 1e9))),
        (Some(s), None) if s > 0 => Ok((Some(s), None)),
        _ => Ok((None, None)),
    }
}

/// A string AnyValue.
fn string(v: &Value) -> Option<String> {
    v.get("stringValue").and_then(Value::as_str).map(str::to_string)
}

/// A token count: an `intValue` (a JSON string or number, as OTLP JSON allows), a whole
/// `doubleValue`, or a `stringValue` holding a whole number.
fn count(v: &Value) -> Result<u64, BadValue> {
    let x = number(v)?;
    if x.fract() == 0.0 && (0.0..9e15).contains(&x) {
        Ok(x as u64)
    } else {
        Err(BadValue::Count(x))
    }
}

/// Seconds: a non-negative finite number.
fn seconds(v: &Value) -> Result<f64, BadValue> {
    let x = number(v)?;
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(BadValue::Seconds(x))
    }
}

fn number(v: &Value) -> Result<f64, BadValue> {
    let inner = ["intValue", "doubleValue", "stringValue"].iter().find_map(|k| v.get(k));
    let parsed = match inner {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| BadValue::Number(v.clone()))
}

/// A uint64 written as a JSON string or number.
fn uint(v: &Value) -> Result<u64, BadValue> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| BadValue::Nanoseconds(v.clone()))
}
