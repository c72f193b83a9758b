//! Tests: `calibrate` reads OpenAI and Gemini usage (usage logs and OTLP spans) with each API's
//! token accounting: OpenAI's and Gemini's prompt counts include the cached tokens, Anthropic's
//! `input_tokens` do not. The fixtures in `tests/fixtures/calibrate/` are hand-written to the
//! documented formats (their README gives the calls and the timing model they follow).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::common::bin;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calibrate").join(name)
}

/// `calibrate FILE --json`: exit code, the output (null on failure), stderr.
fn calibrate(file: &Path) -> (i32, Value, String) {
    let out = bin().arg("calibrate").arg(file).arg("--json").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v, err)
}

/// The model `id` of an output.
fn model<'a>(v: &'a Value, id: &str) -> &'a Value {
    let models = v["models"].as_array().unwrap_or_else(|| panic!("no models in {v}"));
    models.iter().find(|m| m["model"] == id).unwrap_or_else(|| panic!("no {id} in {v}"))
}

/// The fitted numbers of one model and their intervals, without its name (the attention
/// column's interval, whose lower end is rounding noise on exact data, left out).
fn fit(m: &Value) -> Vec<Value> {
    let keys = ["requests", "overhead_s", "prefill_rate", "cached_rate", "decode_rate"];
    let ci = keys[1..].iter().map(|k| m["ci95"][*k].clone());
    keys.iter().map(|k| m[*k].clone()).chain(ci).collect()
}

/// The parameters the fixtures' timings follow (their README).
fn assert_truth(m: &Value) {
    for (key, truth) in [
        ("overhead_s", 0.5),
        ("prefill_rate", 50_000.0),
        ("cached_rate", 500_000.0),
        ("decode_rate", 100.0),
    ] {
        let got = m[key].as_f64().unwrap_or(f64::NAN);
        assert!((got / truth - 1.0).abs() < 0.01, "{} {key}: {got} vs {truth}", m["model"]);
    }
}

#[test]
fn openai_and_gemini_usage_logs_fit_like_the_same_calls_in_anthropic_form() {
    let (code, anthropic, err) = calibrate(&fixture("anthropic-form.jsonl"));
    assert_eq!(code, 0, "{err}");
    let reference = model(&anthropic, "gpt-5.4");
    assert_truth(reference);
    for (file, id) in [
        ("openai-chat.jsonl", "gpt-5.4"),
        ("openai-responses.jsonl", "gpt-5.6-terra"),
        ("gemini.jsonl", "gemini-2.5-flash"),
    ] {
        let (code, v, err) = calibrate(&fixture(file));
        assert_eq!(code, 0, "{file}: {err}");
        let m = model(&v, id);
        assert_eq!(m["requests"], 10, "{file}");
        // Read as Anthropic's input_tokens (prefill = the whole prompt), the cached tokens
        // would count twice and every rate would move.
        assert_eq!(fit(m), fit(reference), "{file}");
    }
}

#[test]
fn otlp_openai_and_gemini_spans_include_the_cached_tokens_beside_an_older_anthropic_span() {
    // The Anthropic span's input (20) is below its cache read: the file-wide rule reads
    // Anthropic spans as excluding the cache, but never OpenAI's or Gemini's.
    let (code, v, err) = calibrate(&fixture("otlp-openai-gemini.jsonl"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("excluding cached tokens"), "{err}");
    assert_truth(model(&v, "gpt-5.4"));
    assert_truth(model(&v, "gemini-2.5-flash"));
    let (_, usage_log, _) = calibrate(&fixture("openai-chat.jsonl"));
    assert_eq!(fit(model(&v, "gpt-5.4")), fit(model(&usage_log, "gpt-5.4")));
}

#[test]
fn cached_tokens_above_the_prompt_are_refused_naming_file_line_and_keys() {
    let dir = super::common::scratch("engine_calibrate", "bad");
    let chat = dir.join("chat.jsonl");
    let good = std::fs::read_to_string(fixture("openai-chat.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    let bad = first.replace("\"prompt_tokens\": 12000", "\"prompt_tokens\": 100");
    let bad = bad.replace("\"cached_tokens\": 0", "\"cached_tokens\": 128");
    std::fs::write(&chat, format!("{first}\n{bad}\n")).unwrap();
    let (code, _, err) = calibrate(&chat);
    assert_eq!(code, 2, "{err}");
    let want = "chat.jsonl:2: `usage.prompt_tokens_details.cached_tokens` = 128 is more than \
                `usage.prompt_tokens` = 100";
    assert!(err.contains(want), "{err}");
    // An OpenAI span whose input is below its cache read.
    let spans = dir.join("spans.jsonl");
    let otlp = std::fs::read_to_string(fixture("otlp-openai-gemini.jsonl")).unwrap();
    let line = otlp.lines().next().unwrap();
    std::fs::write(&spans, line.replacen("\"15160\"", "\"3000\"", 1)).unwrap();
    let (code, _, err) = calibrate(&spans);
    assert_eq!(code, 2, "{err}");
    let want = "gen_ai.usage.input_tokens = 3000 is below its cache read 12160 + write 0, which \
                openai's input count includes";
    assert!(err.contains("spans.jsonl:1: span `chat`") && err.contains(want), "{err}");
}

/// A user's own GPT fit runs: `calibrate --out` writes its table under the preset's name, and
/// an OpenAI experiment takes it with `--latency` (= `latency.from`) instead of the Claude fit
/// the preset borrows.
#[test]
fn a_fitted_gpt_latency_is_used_by_an_openai_experiment() {
    let dir = super::common::scratch("engine_calibrate", "latency_from");
    let mut calibrate = bin();
    calibrate.arg("calibrate").arg(fixture("openai-chat.jsonl")).arg("--out").arg(&dir);
    assert_eq!(calibrate.output().unwrap().status.code(), Some(0));
    let table = std::fs::read_to_string(dir.join("latency.toml")).unwrap();
    assert!(table.contains("[latency.\"gpt-5.4\"]") && table.contains("const(50000)"), "{table}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |latency: Option<&Path>| {
        let mut cmd = bin();
        cmd.arg("run").arg(root.join("experiments/default.toml"));
        for set in ["model=gpt-5.4", "cache.policy=openai", "replications=2"] {
            cmd.args(["--set", set]);
        }
        if let Some(file) = latency {
            cmd.arg("--latency").arg(file);
        }
        let out = cmd.arg("--json").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_ne!(run(Some(&dir.join("latency.toml"))), run(None));
}
