//! Tests: the claude-code inference's cache TTL, the fitted tail's exceedance on held-out
//! sessions, and the `--validate` backtest.

use super::*;

#[test]
fn a_prefix_used_six_minutes_ago_is_cached_at_1h_not_at_5m_and_logs_keep_their_split() {
    let dir = scratch("ttl");
    // Turns 6 minutes apart: each reads the previous call's prompt, if it has not expired.
    let calls = generate_with(8, 6, 6, true, noise, 360.0);
    let [cc, usage, _] = write_all(&calls, Timing::Both, &dir);
    let reads = |args: &[&str]| -> Vec<u64> {
        let v = calibrate_json(args);
        TRUTHS.iter().map(|t| model(&v, t.model)["cache_read_requests"].as_u64().unwrap()).collect()
    };
    // 6 sessions of 6 turns: 5 reads each.
    assert_eq!(reads(&[p(&cc)]), [0, 0], "5m (the default): expired");
    assert_eq!(reads(&[p(&cc), "--ttl", "5m"]), [0, 0]);
    assert_eq!(reads(&[p(&cc), "--ttl", "1h"]), [30, 30]);
    assert_eq!(reads(&[p(&cc), "--ttl", "none"]), [30, 30]);
    assert_eq!(reads(&[p(&usage), "--ttl", "5m"]), [30, 30], "the provider's split is kept");
    let (code, _, err) = run(&["calibrate", p(&cc), "--ttl", "soon"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--ttl"), "{err}");
}

#[test]
fn a_heavy_tail_is_exceeded_as_often_as_predicted_on_held_out_sessions() {
    let dir = scratch("heavy_tail");
    let calls = generate_with(13, 60, 15, true, heavy_noise, 30.0);
    let [_, usage, _] = write_all(&calls, Timing::Both, &dir);
    let v = calibrate_json(&[p(&usage)]);
    for t in &TRUTHS {
        let m = model(&v, t.model);
        assert_eq!(m["requests"], 900);
        let e = &m["held_out"]["exceed"];
        let share = |k: &str| e[k].as_f64().unwrap();
        // 900 requests: the binomial standard error is 0.7% at p95 and 0.3% at p99.
        assert!((0.43..=0.57).contains(&share("p50")), "{}: {e}", t.model);
        assert!((0.075..=0.125).contains(&share("p90")), "{}: {e}", t.model);
        assert!((0.035..=0.065).contains(&share("p95")), "{}: {e}", t.model);
        assert!((0.002..=0.02).contains(&share("p99")), "{}: {e}", t.model);
        // Above the 90% quantile (0.3 s + excess), the excess is a GPD of shape 0.3.
        let shape = m["overhead_distribution"]["shape"].as_f64().unwrap();
        assert!((0.1..=0.5).contains(&shape), "{}: shape {shape}", t.model);
    }
}

#[test]
fn validate_backtests_each_model_and_notes_models_it_has_no_fit_for() {
    let dir = scratch("validate");
    let [_, train, _] = write_all(&generate(21, 12, 8, true), Timing::Both, &dir);
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let [_, test, _] = write_all(&generate(22, 5, 8, true), Timing::Both, &other);
    // A model the fit has not seen, in a second validate file.
    let stranger = dir.join("stranger.jsonl");
    let text =
        std::fs::read_to_string(&test).unwrap().replace("claude-haiku-4-5-20251001", "claude-x");
    std::fs::write(&stranger, text).unwrap();
    let args = ["calibrate", p(&train), "--validate", p(&test), p(&stranger), "--json"];
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("note: claude-x: in the --validate files but not fitted"), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    for t in &TRUTHS {
        let val = &model(&v, t.model)["validation"];
        let mut keys: Vec<&String> = val.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["exceed", "median_abs_error_s", "requests"]);
        let want = if t.model.contains("haiku") { 40 } else { 80 };
        assert_eq!(val["requests"], want, "{}", t.model);
        assert!(val["median_abs_error_s"].as_f64().unwrap() < 0.3, "{val}");
        let e = &val["exceed"];
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["p50", "p90", "p95", "p99"]);
        assert!((0.25..=0.75).contains(&e["p50"].as_f64().unwrap()), "{val}");
    }
    // The table has the backtest.
    let (code, table, _) = run(&["calibrate", p(&train), "--validate", p(&test)]);
    assert_eq!(code, 0);
    assert!(table.contains("Backtest on ") && table.contains("> p99"), "{table}");
}

#[test]
fn a_bad_validate_file_names_file_and_line_exits_2_and_writes_nothing() {
    let dir = scratch("validate_bad");
    let [_, train, _] = write_all(&generate(23, 4, 4, true), Timing::Both, &dir);
    let bad = dir.join("bad.jsonl");
    let good = usage_log(&generate(24, 1, 2, true), Timing::Both);
    std::fs::write(&bad, format!("{}{{\"model\": \"m\", \"usage\": 5}}\n", good)).unwrap();
    let out = dir.join("out");
    let (code, stdout, stderr) =
        run(&["calibrate", p(&train), "--validate", p(&bad), "--out", p(&out)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.jsonl:5:"), "{stderr}");
    assert!(stdout.is_empty() && !out.exists());
    // --validate-format applies to the validate files only.
    let (code, _, stderr) =
        run(&["calibrate", p(&train), "--validate", p(&train), "--validate-format", "otlp"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("usage.jsonl: no model call"), "{stderr}");
}
