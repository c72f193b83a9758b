//! Tests: `run --otlp FILE` writes spans that the OpenTelemetry protocol's own types
//! (`opentelemetry-proto`, serde JSON) parse as `ExportTraceServiceRequest`s, one a line,
//! whose requests and tokens are replication 0's in runs.csv, with the fan-out as
//! parent/child (workflow -> agents -> chat requests), and the same bytes run to run.

use std::collections::{BTreeMap, BTreeSet};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;

use crate::common::{bin, scratch};

fn int_attr(span: &Span, key: &str) -> Option<i64> {
    let kv = span.attributes.iter().find(|kv| kv.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        Any::IntValue(v) => Some(*v),
        _ => None,
    }
}

fn text_attr(span: &Span, key: &str) -> Option<String> {
    let kv = span.attributes.iter().find(|kv| kv.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        Any::StringValue(v) => Some(v.clone()),
        _ => None,
    }
}

/// Replication 0's (requests, cache_read, cache_write, uncached, output) per strategy.
fn runs_csv(dir: &std::path::Path) -> BTreeMap<String, [i64; 5]> {
    let text = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let keys = ["requests", "cache_read", "cache_write", "uncached", "output"].map(col);
    let mut out = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[col("replication")] == "0" {
            let v = keys.map(|k| cells[k].parse::<f64>().unwrap() as i64);
            out.insert(cells[col("strategy")].to_string(), v);
        }
    }
    out
}

#[test]
fn run_otlp_spans_parse_as_export_requests_and_match_the_run() {
    let dir = scratch("otlp_export", "default");
    let (out, spans_file) = (dir.join("out"), dir.join("spans.jsonl"));
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/default.toml");
    let run = |spans: &std::path::Path, out: &std::path::Path| {
        let o = bin()
            .args(["run", file, "--set", "replications=2", "--out"])
            .arg(out)
            .arg("--otlp")
            .arg(spans)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&spans_file, &out);
    let text = std::fs::read_to_string(&spans_file).unwrap();
    let mut spans: Vec<Span> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let req: ExportTraceServiceRequest = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {}: {e}: {}", i + 1, &line[..line.len().min(300)]));
        spans.extend(
            req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans),
        );
    }
    let ids: BTreeMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let expected = runs_csv(&out);
    let mut got: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    let mut traces = BTreeSet::new();
    for s in
        spans.iter().filter(|s| text_attr(s, "gen_ai.operation.name").as_deref() == Some("chat"))
    {
        let agent = ids[&s.parent_span_id];
        assert_eq!(text_attr(agent, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
        let root = ids[&agent.parent_span_id];
        assert!(root.parent_span_id.is_empty(), "the workflow span is the root");
        assert_eq!((&s.trace_id, &agent.trace_id), (&root.trace_id, &root.trace_id));
        assert!(s.start_time_unix_nano <= s.end_time_unix_nano);
        assert!(agent.start_time_unix_nano <= s.start_time_unix_nano);
        let strategy = text_attr(root, "prefixsim.strategy").unwrap();
        traces.insert((strategy.clone(), s.trace_id.clone()));
        let [input, read, write, output] = [
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.output_tokens",
        ]
        .map(|k| int_attr(s, k).unwrap());
        let t = got.entry(strategy).or_default();
        for (slot, v) in t.iter_mut().zip([1, read, write, input - read - write, output]) {
            *slot += v;
        }
    }
    assert_eq!(got, expected, "requests and tokens per strategy, replication 0");
    assert_eq!(traces.len(), expected.len(), "one trace per run");
    // Ids and times come from the seed and the simulated clock: the same bytes again.
    let again = dir.join("again.jsonl");
    run(&again, &dir.join("out2"));
    assert_eq!(std::fs::read(&again).unwrap(), text.as_bytes());
}
