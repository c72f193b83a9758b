//! Tests: `prefixsim calibrate`. A seeded generator draws API calls from known latency
//! parameters with heavy-tailed noise and writes them in each input format (the same calls:
//! every format must give the same fit); the fit must recover the parameters within its own
//! intervals. The generator also writes the committed samples `data/samples/usage-log.jsonl`
//! and `data/samples/otlp.json` (`PREFIXSIM_WRITE_SAMPLES=1` rewrites them). Then: what is not
//! identifiable is null, bad input names file and line; the JSON schema, latency.toml as
//! distributions, determinism and the bundled traces (`outputs`); the cache TTL of the
//! claude-code inference, the fitted tail's exceedance on held-out sessions and the
//! `--validate` backtest (`checks`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use prefixsim::config::parse_dist_in;
use prefixsim::dist::{Dist, Quantity};
use prefixsim::rng::{ChaCha8Rng, RngExt};
use serde_json::Value;

use super::common::bin;

mod checks;
mod outputs;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn scratch(name: &str) -> PathBuf {
    super::common::scratch("calibrate", name)
}

/// Run the binary: exit code, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

/// `calibrate ARGS --json`, which must succeed.
fn calibrate_json(args: &[&str]) -> Value {
    let mut all = vec!["calibrate"];
    all.extend_from_slice(args);
    all.push("--json");
    let (code, stdout, stderr) = run(&all);
    assert_eq!(code, 0, "calibrate {args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The generator.

/// Known latency parameters of one model.
#[derive(Clone, Copy)]
struct Truth {
    model: &'static str,
    overhead_s: f64,
    prefill_rate: f64,
    cached_rate: f64,
    decode_rate: f64,
}

const TRUTHS: [Truth; 2] = [
    Truth {
        model: "claude-haiku-4-5-20251001",
        overhead_s: 0.7,
        prefill_rate: 110_000.0,
        cached_rate: 900_000.0,
        decode_rate: 150.0,
    },
    Truth {
        model: "claude-sonnet-4-5-20250929",
        overhead_s: 1.6,
        prefill_rate: 45_000.0,
        cached_rate: 300_000.0,
        decode_rate: 60.0,
    },
];

const BLOCK: u64 = 64;

/// One generated API call. Its prompt is `blocks` full 64-token blocks plus `tail` tokens; the
/// first `read_blocks` were the previous call's blocks (a cache read), the rest were written.
#[derive(Clone)]
struct Call {
    model: &'static str,
    session: String,
    send_s: f64,
    blocks: Vec<u64>,
    read_blocks: usize,
    tail: u64,
    output: u64,
    ttft_s: f64,
    duration_s: f64,
}

impl Call {
    fn input(&self) -> u64 {
        self.blocks.len() as u64 * BLOCK + self.tail
    }
    fn read(&self) -> u64 {
        self.read_blocks as u64 * BLOCK
    }
    fn written(&self) -> u64 {
        (self.blocks.len() - self.read_blocks) as u64 * BLOCK
    }
}

/// Laplace(0, b) shifted so that, mixed with 10% outliers above 2 s, the noise has median 0
/// exactly: the core's CDF at the mixture median is 0.5 / 0.9, so its shift is `b ln(9/8)`.
/// Outliers (queueing, retries) add 2-20 s.
fn noise(rng: &mut ChaCha8Rng) -> f64 {
    let b = 0.1;
    if rng.random::<f64>() < 0.1 {
        return 2.0 + 18.0 * rng.random::<f64>();
    }
    let u: f64 = rng.random::<f64>() - 0.5;
    -b * u.signum() * (1.0 - 2.0 * u.abs()).ln() - b * (9.0f64 / 8.0).ln()
}

/// A heavy tail: Laplace(0, 0.1 s) for 85% of calls, and for 15% 0.3 s plus a generalized
/// Pareto excess (scale 1 s, shape 0.3), by inversion.
fn heavy_noise(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = rng.random::<f64>();
    if rng.random::<f64>() < 0.15 {
        return 0.3 + 1.0 / 0.3 * ((1.0 - u).powf(-0.3) - 1.0);
    }
    let u = u - 0.5;
    -0.1 * u.signum() * (1.0 - 2.0 * u.abs()).ln()
}

/// `sessions` sessions of `turns` calls per model. A session starts cold (10-30k tokens of
/// tools and system) and each turn appends 1-600 blocks, reading the previous call's; with
/// `cache_reads` off, no call reads (each is its own prompt). Decode time has a median-1
/// multiplicative noise. Timings are whole milliseconds; turns are 30 s apart.
fn generate(seed: u64, sessions: usize, turns: usize, cache_reads: bool) -> Vec<Call> {
    generate_with(seed, sessions, turns, cache_reads, noise, 30.0)
}

/// `generate` with another TTFT noise and another gap between turns (seconds).
fn generate_with(
    seed: u64,
    sessions: usize,
    turns: usize,
    cache_reads: bool,
    noise: fn(&mut ChaCha8Rng) -> f64,
    gap_s: f64,
) -> Vec<Call> {
    let mut out = Vec::new();
    for (m, t) in TRUTHS.iter().enumerate() {
        for s in 0..sessions {
            let mut rng = prefixsim::rng::stream(seed, &[m as u64, s as u64]);
            let mut blocks: Vec<u64> = Vec::new();
            let mut next_id = 1u64;
            for k in 0..turns {
                let cold = blocks.is_empty() || !cache_reads;
                let new: usize =
                    if cold { rng.random_range(156..470) } else { rng.random_range(1..600) };
                // No reads, or a compaction at ~180k tokens: the prompt starts over.
                if !cache_reads || blocks.len() + new > 2800 {
                    blocks.clear();
                }
                let read_blocks = blocks.len();
                blocks.extend(next_id..next_id + new as u64);
                next_id += new as u64;
                let tail = rng.random_range(0..BLOCK);
                let output = rng.random_range(50..2000);
                let mut call = Call {
                    model: t.model,
                    session: format!("s{m}{s:02}"),
                    send_s: gap_s * k as f64,
                    blocks: blocks.clone(),
                    read_blocks,
                    tail,
                    output,
                    ttft_s: 0.0,
                    duration_s: 0.0,
                };
                let fitted = t.overhead_s
                    + (call.written() + tail) as f64 / t.prefill_rate
                    + call.read() as f64 / t.cached_rate;
                // Whole milliseconds, so that every encoding parses to the same f64.
                let ms = |s: f64| (s * 1e3).round().max(1.0) / 1e3;
                call.ttft_s = ms(fitted + noise(&mut rng));
                let wobble = 0.15 * (rng.random::<f64>() + rng.random::<f64>() - 1.0);
                call.duration_s = ms(call.ttft_s + output as f64 / t.decode_rate * wobble.exp());
                out.push(call);
            }
        }
    }
    out
}

/// Which timings an encoding writes.
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    Both,
    TtftOnly,
}

fn usage_log(calls: &[Call], timing: Timing) -> String {
    let mut out = String::new();
    for c in calls {
        let duration = match timing {
            Timing::Both => format!(", \"duration_ms\": {:.0}", c.duration_s * 1e3),
            Timing::TtftOnly => String::new(),
        };
        let _ = writeln!(
            out,
            "{{\"model\": \"{}\", \"usage\": {{\"input_tokens\": {}, \"cache_creation_input_tokens\": {}, \
             \"cache_read_input_tokens\": {}, \"output_tokens\": {}}}, \"ttft_ms\": {:.0}{duration}, \
             \"session\": \"{}\"}}",
            c.model,
            c.tail,
            c.written(),
            c.read(),
            c.output,
            c.ttft_s * 1e3,
            c.session
        );
    }
    out
}

/// An OTLP JSON export, one span per line: per session a trace with an `invoke_agent` span
/// (not a model call: skipped) and a `chat` span per call. `inclusive`: input tokens as the
/// semantic conventions say (cache reads and writes included); else Anthropic's own count.
fn otlp(calls: &[Call], timing: Timing, inclusive: bool) -> String {
    let mut spans = Vec::new();
    let mut traces: Vec<&str> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let trace_id = format!("{:032x}", 0x5eed_0000 + c.session[1..].parse::<u64>().unwrap());
        if !traces.contains(&c.session.as_str()) {
            traces.push(&c.session);
            spans.push(format!(
                "{{\"traceId\": \"{trace_id}\", \"spanId\": \"{:016x}\", \"name\": \"invoke_agent coder\", \
                 \"startTimeUnixNano\": \"1760000000000000000\", \"endTimeUnixNano\": \"1760000900000000000\", \
                 \"attributes\": [{{\"key\": \"gen_ai.operation.name\", \"value\": {{\"stringValue\": \"invoke_agent\"}}}}, \
                 {{\"key\": \"gen_ai.request.model\", \"value\": {{\"stringValue\": \"{}\"}}}}, \
                 {{\"key\": \"gen_ai.usage.input_tokens\", \"value\": {{\"intValue\": \"1\"}}}}]}}",
                0xa000 + traces.len(),
                c.model
            ));
        }
        let start = 1_760_000_000_000_000_000u64 + (c.send_s * 1e9) as u64;
        let end = match timing {
            Timing::Both => {
                format!(
                    ", \"endTimeUnixNano\": \"{}\"",
                    start + (c.duration_s * 1e3).round() as u64 * 1_000_000
                )
            }
            Timing::TtftOnly => String::new(),
        };
        let input = if inclusive { c.input() } else { c.tail };
        let attr = |k: &str, v: String| format!("{{\"key\": \"{k}\", \"value\": {v}}}");
        let attrs = [
            attr("gen_ai.operation.name", "{\"stringValue\": \"chat\"}".into()),
            attr("gen_ai.provider.name", "{\"stringValue\": \"anthropic\"}".into()),
            attr("gen_ai.request.model", format!("{{\"stringValue\": \"{}\"}}", c.model)),
            attr("gen_ai.response.model", format!("{{\"stringValue\": \"{}\"}}", c.model)),
            attr("gen_ai.usage.input_tokens", format!("{{\"intValue\": \"{input}\"}}")),
            attr("gen_ai.usage.output_tokens", format!("{{\"intValue\": {}}}", c.output)),
            attr(
                "gen_ai.usage.cache_read.input_tokens",
                format!("{{\"intValue\": \"{}\"}}", c.read()),
            ),
            attr(
                "gen_ai.usage.cache_creation.input_tokens",
                format!("{{\"intValue\": \"{}\"}}", c.written()),
            ),
            attr(
                "gen_ai.response.time_to_first_chunk",
                format!("{{\"doubleValue\": {:.3}}}", c.ttft_s),
            ),
        ];
        spans.push(format!(
            "{{\"traceId\": \"{trace_id}\", \"spanId\": \"{:016x}\", \"name\": \"chat {}\", \"kind\": 3, \
             \"startTimeUnixNano\": \"{start}\"{end}, \"attributes\": [{}]}}",
            0xb000 + i,
            c.model,
            attrs.join(", ")
        ));
    }
    format!(
        "{{\"resourceSpans\": [{{\"resource\": {{\"attributes\": [{{\"key\": \"service.name\", \
         \"value\": {{\"stringValue\": \"agent\"}}}}]}}, \"scopeSpans\": [{{\"scope\": {{\"name\": \
         \"genai-instrumentation\"}}, \"spans\": [\n{}\n]}}]}}]}}\n",
        spans.join(",\n")
    )
}

/// Claude Code traces: one file per session in `dir`.
fn claude_code(calls: &[Call], timing: Timing, dir: &Path) {
    let mut by_session: BTreeMap<&str, Vec<&Call>> = BTreeMap::new();
    for c in calls {
        by_session.entry(&c.session).or_default().push(c);
    }
    for (session, calls) in by_session {
        let requests: Vec<String> = calls
            .iter()
            .map(|c| {
                let ids: Vec<String> = c.blocks.iter().map(u64::to_string).collect();
                let api = match timing {
                    Timing::Both => format!(", \"api_time\": {:.3}", c.duration_s),
                    Timing::TtftOnly => String::new(),
                };
                format!(
                    "{{\"t\": {}, \"type\": \"n\", \"model\": \"{}\", \"in\": {}, \"out\": {}, \
                     \"hash_ids\": [{}], \"ttft\": {:.3}{api}}}",
                    c.send_s,
                    c.model,
                    c.input(),
                    c.output,
                    ids.join(","),
                    c.ttft_s
                )
            })
            .collect();
        let text = format!(
            "{{\"id\": \"{session}\", \"block_size\": 64, \"hash_id_scope\": \"local\", \"requests\": [\n{}\n]}}\n",
            requests.join(",\n")
        );
        std::fs::write(dir.join(format!("{session}.json")), text).unwrap();
    }
}

/// Write the three encodings of `calls` under `dir`: (claude-code dir, usage log, otlp).
fn write_all(calls: &[Call], timing: Timing, dir: &Path) -> [PathBuf; 3] {
    let cc = dir.join("claude-code");
    std::fs::create_dir_all(&cc).unwrap();
    claude_code(calls, timing, &cc);
    let usage = dir.join("usage.jsonl");
    std::fs::write(&usage, usage_log(calls, timing)).unwrap();
    let spans = dir.join("spans.json");
    std::fs::write(&spans, otlp(calls, timing, true)).unwrap();
    [cc, usage, spans]
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Recovery, identifiability, equality across formats.

/// The model `id` of a `--json` output.
fn model<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == id)
        .unwrap_or_else(|| panic!("no {id} in {v}"))
}

fn within(v: &Value, key: &str, truth: f64) {
    let ci = &v["ci95"][key];
    let lo = ci[0].as_f64().unwrap();
    let hi = ci[1].as_f64().unwrap_or(f64::INFINITY);
    assert!(
        lo <= truth && truth <= hi,
        "{} {key}: {truth} outside [{lo}, {hi}] (fit {})",
        v["model"],
        v[key]
    );
}

/// The fitted numbers of an output, without what names the input.
fn numbers(v: &Value) -> Vec<Value> {
    v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let keys = [
                "model",
                "requests",
                "overhead_s",
                "prefill_rate",
                "cached_rate",
                "decode_rate",
                "ci95",
                "residual_quantiles_s",
                "overhead_distribution",
                "held_out",
                "draws",
            ];
            Value::Array(keys.iter().map(|k| m[k].clone()).collect())
        })
        .collect()
}

#[test]
fn every_format_recovers_known_parameters_within_its_intervals() {
    let dir = scratch("recover");
    let calls = generate(7, 30, 12, true);
    let outputs: Vec<Value> =
        write_all(&calls, Timing::Both, &dir).iter().map(|f| calibrate_json(&[p(f)])).collect();
    for v in &outputs {
        for t in &TRUTHS {
            let m = model(v, t.model);
            assert_eq!(m["requests"], 360);
            within(m, "overhead_s", t.overhead_s);
            within(m, "prefill_rate", t.prefill_rate);
            within(m, "cached_rate", t.cached_rate);
            within(m, "decode_rate", t.decode_rate);
            assert_eq!(m["bootstrap"]["unit"], "session");
        }
    }
    // The same calls in three encodings: the claude-code inference finds exactly the reads
    // the generator made, so the three fits are the same numbers.
    assert_eq!(numbers(&outputs[0]), numbers(&outputs[1]), "claude-code vs usage-log");
    assert_eq!(numbers(&outputs[1]), numbers(&outputs[2]), "usage-log vs otlp");
}

#[test]
fn the_median_fit_beats_least_squares_and_the_2024_figures_on_held_out_sessions() {
    let dir = scratch("held_out");
    let calls = generate(11, 30, 12, true);
    let [_, usage, _] = write_all(&calls, Timing::Both, &dir);
    let v = calibrate_json(&[p(&usage)]);
    for t in &TRUTHS {
        let h = &model(&v, t.model)["held_out"]["median_abs_error_s"];
        let (l1, l2) = (h["median_fit"].as_f64().unwrap(), h["least_squares"].as_f64().unwrap());
        assert!(l1 < l2, "{}: median fit {l1} vs least squares {l2}", t.model);
        assert!(l1 < h["launch_2024"].as_f64().unwrap());
    }
}

#[test]
fn without_cache_reads_cached_rate_is_null() {
    let dir = scratch("no_reads");
    let calls = generate(3, 12, 6, false);
    for f in write_all(&calls, Timing::Both, &dir) {
        let v = calibrate_json(&[p(&f)]);
        for t in &TRUTHS {
            let m = model(&v, t.model);
            assert_eq!(m["cache_read_requests"], 0, "{f:?}");
            assert!(m["cached_rate"].is_null() && m["ci95"]["cached_rate"].is_null(), "{f:?}: {m}");
            assert!(m["not_identifiable"]["cached_rate"]
                .as_str()
                .unwrap()
                .contains("no request read"));
            assert!(m["prefill_rate"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn without_durations_decode_rate_is_null() {
    let dir = scratch("no_durations");
    let calls = generate(5, 8, 6, true);
    for f in write_all(&calls, Timing::TtftOnly, &dir) {
        let v = calibrate_json(&[p(&f)]);
        for t in &TRUTHS {
            let m = model(&v, t.model);
            assert!(m["decode_rate"].is_null() && m["ci95"]["decode_rate"].is_null(), "{f:?}: {m}");
            assert_eq!(m["decode_requests"], 0);
            assert!(m["overhead_s"].as_f64().unwrap().is_finite());
        }
    }
    // latency.toml leaves the rate out, with a comment saying why.
    let out = dir.join("out");
    let (code, _, err) = run(&["calibrate", p(&dir.join("usage.jsonl")), "--out", p(&out)]);
    assert_eq!(code, 0, "{err}");
    let toml_text = std::fs::read_to_string(out.join("latency.toml")).unwrap();
    assert!(!toml_text.contains("decode_rate ="), "{toml_text}");
    assert!(toml_text.contains("# decode_rate: not identifiable"), "{toml_text}");
}

#[test]
fn otlp_input_tokens_that_exclude_the_cache_are_detected() {
    let dir = scratch("otlp_exclusive");
    let calls = generate(9, 6, 6, true);
    let inclusive = dir.join("inclusive.json");
    let exclusive = dir.join("exclusive.jsonl");
    std::fs::write(&inclusive, otlp(&calls, Timing::Both, true)).unwrap();
    // JSON Lines: two exports, one per line (as the Collector's file exporter writes).
    let (a, b) = calls.split_at(calls.len() / 2);
    let lines =
        [otlp(a, Timing::Both, false), otlp(b, Timing::Both, false)].map(|s| s.replace('\n', ""));
    std::fs::write(&exclusive, lines.join("\n") + "\n").unwrap();
    let (code, out_exclusive, err) = run(&["calibrate", p(&exclusive), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("excluding cached tokens"), "{err}");
    let v1 = calibrate_json(&[p(&inclusive)]);
    let v2: Value = serde_json::from_str(&out_exclusive).unwrap();
    assert_eq!(numbers(&v1), numbers(&v2));
}

// ---------------------------------------------------------------------------------------------
// Bad input.

#[test]
fn a_malformed_line_names_file_and_line_exits_2_and_writes_nothing() {
    let dir = scratch("malformed");
    let good = usage_log(&generate(1, 1, 3, true), Timing::Both);
    let lines: Vec<&str> = good.lines().collect();
    let cases = [
        ("usage.jsonl", format!("{}\n{}\n{{\"model\": \"x\", \"usage\": 5}}\n", lines[0], lines[1]), "usage.jsonl:3:"),
        ("usage2.jsonl", format!("{}\n\n{}\n", lines[0], lines[1].replace("\"ttft_ms\"", "\"ttft\"").replace("\"duration_ms\"", "\"dur\"")), "usage2.jsonl:3: needs `ttft_ms` or `duration_ms`"),
        ("usage3.jsonl", format!("{}\n", lines[0].replace("\"ttft_ms\": ", "\"ttft_ms\": -")), "usage3.jsonl:1: `ttft_ms` = -"),
        ("spans.json", "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"traceId\": \"a\", \"spanId\": \"b\", \"name\": \"chat\", \"attributes\": [{\"key\": \"gen_ai.request.model\", \"value\": {\"stringValue\": \"m\"}}, {\"key\": \"gen_ai.usage.input_tokens\", \"value\": {\"intValue\": \"-3\"}}]}]}]}]}\n\n{\"resourceSpans\": \n".to_string(), "spans.json:1: span `chat` (spanId b): gen_ai.usage.input_tokens = -3 is not a token count"),
        ("spans2.json", "{\"resourceSpans\": []}\n{\"resourceSpans\": [}\n".to_string(), "spans2.json:2: bad OTLP JSON"),
    ];
    for (name, text, needle) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out_dir = dir.join(format!("out-{name}"));
        let (code, stdout, stderr) = run(&["calibrate", p(&file), "--out", p(&out_dir)]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.contains(needle), "{name}: `{needle}` not in {stderr}");
        assert!(stdout.is_empty(), "{name}: printed {stdout}");
        assert!(!out_dir.exists(), "{name}: --out was written");
    }
    // A bad claude-code trace names the file and the request.
    let cc = dir.join("cc");
    std::fs::create_dir_all(&cc).unwrap();
    std::fs::write(cc.join("a.json"), "{\"block_size\": 64, \"requests\": [{\"t\": 0, \"type\": \"n\", \"model\": \"m\", \"in\": 130, \"out\": 1, \"hash_ids\": [1]}]}").unwrap();
    let (code, _, stderr) = run(&["calibrate", p(&cc), "--out", p(&dir.join("out-cc"))]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a.json") && stderr.contains("requests[0]"), "{stderr}");
    assert!(!dir.join("out-cc").exists());
}

#[test]
fn an_existing_out_dir_gets_no_partial_files_on_bad_input() {
    let dir = scratch("out_kept");
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("keep.txt"), "mine").unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"model\": \"m\", \"usage\": {\"input_tokens\": 1, \"output_tokens\": 1}, \"ttft_ms\": \"fast\"}\n").unwrap();
    let (code, _, stderr) =
        run(&["calibrate", "--format", "usage-log", p(&bad), "--out", p(&out_dir), "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.jsonl:1:"), "{stderr}");
    let names: Vec<_> =
        std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["keep.txt"]);
}
