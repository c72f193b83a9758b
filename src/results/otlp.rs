//! A simulated run's requests as OpenTelemetry spans: OTLP/JSON, one
//! `ExportTraceServiceRequest` a line (the Collector file exporter's format), with the GenAI
//! semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/, read
//! 2026-12-05). Pure: rows in, lines out; it knows nothing of the engine.
//!
//! One trace per run (strategy and replication): a workflow span (the fan-out), under it one
//! `invoke_agent` span per agent, under each one `chat` span per request. Times are the
//! simulated clock from `epoch_ns` (the run starts at it); ids are derived from the seed, the
//! strategy, the replication, the agent and the request (never from a clock), so the same run
//! writes the same bytes. OTLP/JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
//! lowerCamelCase keys, trace and span ids as hex, enums as integers, 64-bit integers as
//! strings.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{json, Value};

/// One request of a run, as the spans show it (times in microseconds of the run's clock).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRequest {
    pub agent: u32,
    /// The agent's request number (0 = its first).
    pub request: u32,
    pub send_us: u64,
    pub ttft_us: u64,
    /// When its response ended.
    pub end_us: u64,
    pub model: String,
    /// The whole prompt: read + written + uncached (the conventions' `input_tokens`).
    pub input_tokens: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub output_tokens: u64,
}

/// One run (a trace).
#[derive(Debug, Clone)]
pub struct SpanRun<'a> {
    pub experiment: &'a str,
    pub strategy: &'a str,
    pub strategy_index: u32,
    pub seed: u64,
    pub replication: u32,
    /// Agents in the run: number `N` is the prewarm request, `N + 1` the parent.
    pub agents: u32,
    pub requests: &'a [SpanRequest],
}

/// Span kinds (OTLP `Span.SpanKind`).
const KIND_INTERNAL: u64 = 1;
const KIND_CLIENT: u64 = 3;

/// The `gen_ai.provider.name` of a model, by its name's family.
pub fn provider(model: &str) -> &'static str {
    match model {
        m if m.starts_with("claude") => "anthropic",
        m if m.starts_with("gpt") => "openai",
        m if m.starts_with("gemini") => "gcp.gemini",
        _ => "prefixsim",
    }
}

/// SplitMix64's finaliser: a fixed mix of the id parts.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The 16-byte trace id of a run, as hex.
pub fn trace_id(run: &SpanRun) -> String {
    let a = mix(run.seed ^ mix(u64::from(run.strategy_index) << 32 | u64::from(run.replication)));
    format!("{a:016x}{:016x}", mix(a) | 1)
}

/// The 8-byte span id of the part `key` of trace `trace` (never zero), as hex.
fn span_id(trace: &str, key: u64) -> String {
    let t = u64::from_str_radix(&trace[..16], 16).unwrap_or(0);
    format!("{:016x}", mix(t ^ mix(key)) | 1)
}

fn text(key: &str, v: &str) -> Value {
    json!({"key": key, "value": {"stringValue": v}})
}

fn int(key: &str, v: u64) -> Value {
    json!({"key": key, "value": {"intValue": v.to_string()}})
}

fn ns(epoch_ns: u64, us: u64) -> String {
    epoch_ns.saturating_add(us.saturating_mul(1_000)).to_string()
}

/// One span as OTLP/JSON.
struct SpanJson<'a> {
    trace: &'a str,
    id: String,
    parent: Option<String>,
    name: String,
    kind: u64,
    start_ns: String,
    end_ns: String,
    attributes: Vec<Value>,
}

impl SpanJson<'_> {
    fn value(self) -> Value {
        let mut v = json!({
            "traceId": self.trace, "spanId": self.id, "name": self.name, "kind": self.kind,
            "startTimeUnixNano": self.start_ns, "endTimeUnixNano": self.end_ns,
            "attributes": self.attributes,
        });
        if let Some(p) = self.parent {
            v["parentSpanId"] = json!(p);
        }
        v
    }
}

/// One `ExportTraceServiceRequest` line holding `spans`.
fn export_line(w: &mut dyn Write, run: &SpanRun, spans: Vec<Value>) -> std::io::Result<()> {
    let v = json!({"resourceSpans": [{
        "resource": {"attributes": [text("service.name", "prefixsim"),
                                    text("prefixsim.experiment", run.experiment)]},
        "scopeSpans": [{"scope": {"name": "prefixsim", "version": env!("CARGO_PKG_VERSION")},
                        "spans": spans}],
    }]});
    serde_json::to_writer(&mut *w, &v)?;
    w.write_all(b"\n")
}

/// The `chat` span of request `r` under the agent span `parent`.
fn request_span(trace: &str, parent: &str, r: &SpanRequest, epoch_ns: u64) -> Value {
    let key = u64::from(r.agent) << 32 | u64::from(r.request);
    let attributes = vec![
        text("gen_ai.operation.name", "chat"),
        text("gen_ai.provider.name", provider(&r.model)),
        text("gen_ai.request.model", &r.model),
        text("gen_ai.conversation.id", &format!("agent {}", r.agent)),
        int("gen_ai.usage.input_tokens", r.input_tokens),
        int("gen_ai.usage.output_tokens", r.output_tokens),
        int("gen_ai.usage.cache_read.input_tokens", r.cache_read),
        int("gen_ai.usage.cache_creation.input_tokens", r.cache_write),
        json!({"key": "gen_ai.response.time_to_first_chunk",
               "value": {"doubleValue": r.ttft_us as f64 / 1e6}}),
        int("prefixsim.request", u64::from(r.request)),
    ];
    SpanJson {
        trace,
        id: span_id(trace, key),
        parent: Some(parent.to_string()),
        name: format!("chat {}", r.model),
        kind: KIND_CLIENT,
        start_ns: ns(epoch_ns, r.send_us),
        end_ns: ns(epoch_ns, r.end_us),
        attributes,
    }
    .value()
}

/// Write `run` as lines of `w`: one per agent (its span and its requests'), then the
/// workflow span. Returns the number of spans written.
pub fn write_run(w: &mut dyn Write, run: &SpanRun, epoch_ns: u64) -> std::io::Result<u64> {
    let trace = trace_id(run);
    let root = span_id(&trace, u64::MAX);
    let mut by_agent: BTreeMap<u32, Vec<&SpanRequest>> = BTreeMap::new();
    for r in run.requests {
        by_agent.entry(r.agent).or_default().push(r);
    }
    let (mut spans, mut first_us, mut last_us) = (0u64, u64::MAX, 0u64);
    for (&agent, requests) in &by_agent {
        let start = requests.iter().map(|r| r.send_us).min().unwrap_or(0);
        let end = requests.iter().map(|r| r.end_us).max().unwrap_or(start);
        (first_us, last_us) = (first_us.min(start), last_us.max(end));
        let name = match agent.checked_sub(run.agents) {
            None => format!("agent {agent}"),
            Some(0) => "prewarm".to_string(),
            Some(_) => "parent".to_string(),
        };
        let id = span_id(&trace, u64::from(agent) << 32 | u64::from(u32::MAX));
        let mut lines = vec![SpanJson {
            trace: &trace,
            id: id.clone(),
            parent: Some(root.clone()),
            name: format!("invoke_agent {name}"),
            kind: KIND_INTERNAL,
            start_ns: ns(epoch_ns, start),
            end_ns: ns(epoch_ns, end),
            attributes: vec![
                text("gen_ai.operation.name", "invoke_agent"),
                text("gen_ai.agent.name", &name),
                text("gen_ai.agent.id", &agent.to_string()),
            ],
        }
        .value()];
        lines.extend(requests.iter().map(|r| request_span(&trace, &id, r, epoch_ns)));
        spans += lines.len() as u64;
        export_line(w, run, lines)?;
    }
    let workflow = SpanJson {
        trace: &trace,
        id: root,
        parent: None,
        name: format!("fan-out {}", run.strategy),
        kind: KIND_INTERNAL,
        start_ns: ns(epoch_ns, first_us.min(last_us)),
        end_ns: ns(epoch_ns, last_us),
        attributes: vec![
            text("prefixsim.strategy", run.strategy),
            int("prefixsim.seed", run.seed),
            int("prefixsim.replication", u64::from(run.replication)),
            int("prefixsim.requests", run.requests.len() as u64),
        ],
    };
    export_line(w, run, vec![workflow.value()])?;
    Ok(spans + 1)
}
