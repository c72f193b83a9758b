//! Tests: `replay` of usage logs and OTLP spans (the formats `calibrate` reads). One tiny log,
//! written in both formats, against a split computed by hand; the CLI's guessing, the
//! recorded row and the error on a bad line.
//!
//! The log (tests/fixtures/replay_logs): conversation `a` sends at 0 s (1,280 written, 100
//! uncached), 60 s (reads 1,280, writes 256, 50 uncached) and 660 s (10 minutes later: the
//! provider's 5-minute entries are gone, it writes 1,792, 50 uncached); conversation `b` at
//! 30 s (writes 512, 10 uncached); 10 output tokens each. Prompts: 1,380 + 522 + 1,586 +
//! 1,842 = 5,330 tokens. Cacheable prefixes (read + write) are whole 128-token blocks: 10, 4,
//! 12 and 14 blocks.
//!
//! - TTL 5m (sliding from the last use at 60 s, gone at 360 s): the recorded split exactly,
//!   read 1,280, written 1,280 + 512 + 256 + 1,792 = 3,840, uncached 210.
//! - TTL 1h: the call at 660 s reads a's 12 blocks (1,536) and writes 2: read 2,816,
//!   written 1,280 + 512 + 256 + 256 = 2,304, uncached 210; hit rate 2,816 / 5,330.

use std::path::PathBuf;

use prefixsim::replay::{self, CacheChoice, ChoiceStats, ReplaySettings, TraceFormat};

use crate::common::bin;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay_logs").join(name)
}

fn choice(settings: &ReplaySettings, ttl: &str) -> CacheChoice {
    let mut s = settings.clone();
    s.apply_set(&format!("cache.ttl={ttl}")).unwrap();
    s.cache
}

/// (read, written, uncached, output) of a choice or of the recorded split.
fn split(s: &ChoiceStats) -> (u64, u64, u64, u64) {
    let a = &s.account;
    (a.cache_read, a.cache_write(), a.uncached, a.output)
}

fn check_closed_form(file: &str, format: TraceFormat) {
    let settings = ReplaySettings::new(format);
    let choices = [choice(&settings, "5m"), choice(&settings, "1h")];
    let r = replay::replay(&fixture(file), &settings, &choices).unwrap();
    assert_eq!(r.requests, 4, "{file}");
    let recorded = r.recorded.as_ref().expect("a log replay keeps the recorded split");
    assert_eq!(split(recorded), (1280, 3840, 210, 40), "{file}: recorded");
    assert_eq!(split(&r.choices[0].1), (1280, 3840, 210, 40), "{file}: simulated 5m");
    assert_eq!(split(&r.choices[1].1), (2816, 2304, 210, 40), "{file}: simulated 1h");
    let hit = r.choices[1].1.account.hit_rate();
    assert!((hit - 2816.0 / 5330.0).abs() < 1e-12, "{file}: {hit}");
    // The same tokens at the same prices: the 5m replay costs what the provider billed.
    assert!((recorded.cost_usd - r.choices[0].1.cost_usd).abs() < 1e-12, "{file}");
    assert!(r.choices[1].1.cost_usd < recorded.cost_usd, "{file}: 1h reads more");
    assert_eq!(r.conversations, ["a", "b"], "{file}");
}

#[test]
fn a_usage_log_replays_to_the_hand_computed_split() {
    check_closed_form("anthropic-usage.jsonl", TraceFormat::UsageLog);
}

#[test]
fn otlp_spans_out_of_order_replay_to_the_same_split() {
    check_closed_form("spans.jsonl", TraceFormat::Otlp);
}

/// Without writes in the record (OpenAI), the whole prompt is cacheable: two calls of one
/// session 10 s apart with 1,000- and 1,300-token prompts share 7 blocks of 128 (896 tokens).
#[test]
fn automatic_caching_caches_the_whole_prompt() {
    let dir = crate::common::scratch("replay_logs", "openai");
    let p = dir.join("chat.jsonl");
    let line = |t: u64, prompt: u64, cached: u64| {
        format!(
            "{{\"timestamp_ms\": {t}, \"session\": 1, \"model\": \"claude-sonnet-4-5\", \"usage\": \
             {{\"prompt_tokens\": {prompt}, \"completion_tokens\": 1, \"prompt_tokens_details\": \
             {{\"cached_tokens\": {cached}}}}}}}\n"
        )
    };
    std::fs::write(&p, line(0, 1000, 0) + &line(10_000, 1300, 896)).unwrap();
    let settings = ReplaySettings::new(TraceFormat::UsageLog);
    let r = replay::replay(&p, &settings, std::slice::from_ref(&settings.cache)).unwrap();
    // Written: 7 blocks, then 3 more (1,280 of 1,300); read: 7 blocks.
    assert_eq!(split(&r.choices[0].1), (896, 896 + 384, 1000 - 896 + 1300 - 1280, 2));
    assert_eq!(split(r.recorded.as_ref().unwrap()), (896, 0, 1000 + 1300 - 896, 2));
}

#[test]
fn the_cli_guesses_the_format_and_shows_the_recorded_row() {
    for file in ["anthropic-usage.jsonl", "spans.jsonl"] {
        let out = bin().arg("replay").arg(fixture(file)).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        let recorded = text.lines().find(|l| l.starts_with("recorded (provider)")).unwrap();
        assert!(recorded.contains("1,280") && recorded.contains("3,840"), "{recorded}");
        assert!(text.contains("one growing prompt per conversation and model"), "{text}");
        let out = bin().arg("replay").arg(fixture(file)).arg("--json").output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["recorded"]["cache_write"], 3840, "{file}");
        assert_eq!(v["cache_write"], 3840, "{file}");
    }
}

#[test]
fn a_bad_line_exits_2_naming_the_file_and_line() {
    let dir = crate::common::scratch("replay_logs", "bad");
    let p = dir.join("usage.jsonl");
    let good = std::fs::read_to_string(fixture("anthropic-usage.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    let bad = r#"{"model": "claude-sonnet-4-5", "usage": {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 11}}}"#;
    std::fs::write(&p, format!("{first}\n{bad}\n")).unwrap();
    let out = bin().arg("replay").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let want = format!("{}:2: ", p.display());
    assert!(err.contains(&want) && err.contains("cached_tokens` = 11"), "{err}");
    assert!(out.stdout.is_empty());
}
