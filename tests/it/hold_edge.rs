//! Tests: when the first writer's response begins against a `wait_first` cap. The model's
//! record of it (`RunMetrics::hold_first_token_us`, `hold_capped`) against closed forms, with a
//! constant and with an empirical overhead, and `tune`'s per-candidate probability and its
//! knife-edge rule through the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use prefixsim::config::{Release, Strategy};
use prefixsim::dist::Dist;
use prefixsim::time::US_PER_S;

use crate::model::{experiment, simulate};

fn wait_first(max_wait_us: u64, release: Release) -> Strategy {
    Strategy::WaitFirst { max_wait_us, release }
}

/// The closed-form workload's first writer: 0.5 s + (50,000 + 100) / 20,000 tok/s = 3.005 s.
const TTFT_US: u64 = 3_005_000;

#[test]
fn a_constant_ttft_is_on_one_side_of_the_cap_or_the_other() {
    let exp = experiment(4);
    // (cap, release, capped): below the TTFT the cap fires first; at the TTFT's very
    // microsecond the response has begun (not capped); a zero cap is no hold at all.
    let cases = [
        (2 * US_PER_S, Release::OnReady, true),
        (TTFT_US - 1, Release::OnReady, true),
        (TTFT_US, Release::OnReady, false),
        (5 * US_PER_S, Release::OnReady, false),
        (2 * US_PER_S, Release::Timer, true),
        (4 * US_PER_S, Release::Timer, false),
        (0, Release::OnReady, true),
    ];
    for (cap, release, capped) in cases {
        let m = simulate(&exp, &wait_first(cap, release), 0).unwrap();
        assert_eq!(m.hold_first_token_us, Some(TTFT_US), "cap {cap} us");
        assert_eq!(m.hold_capped, capped, "cap {cap} us, {release:?}");
    }
    for s in [Strategy::Eager, Strategy::Sequential, Strategy::Prewarm] {
        let m = simulate(&exp, &s, 0).unwrap();
        assert_eq!((m.hold_first_token_us, m.hold_capped), (None, false), "{s:?}");
    }
}

/// 20 overhead values (the shape of a calibrated preset's quantiles), microseconds.
fn overheads_us() -> Vec<f64> {
    (0..20).map(|i| 800_000.0 + 150_000.0 * i as f64).collect()
}

#[test]
fn with_an_empirical_overhead_the_cap_fires_first_as_often_as_the_quantiles_say() {
    // TTFT = overhead + 50,100 / 20,000 tok/s = overhead + 2.505 s, the overhead one of the
    // 20 values with probability 1/20 each. A cap of 4.4 s fires first when the overhead
    // exceeds 4.4 - 2.505 = 1.895 s: values 0.8 + 0.15 i > 1.895 for i >= 8 (1.85 < 1.895 <
    // 2.0), so P(capped) = 12 / 20 = 0.6. Over n = 4000 replications the share is within
    // 4 standard deviations, 4 * sqrt(0.6 * 0.4 / 4000) = 0.031, of it.
    let mut exp = experiment(3);
    exp.latency.overhead_us = Dist::Empirical(overheads_us());
    let prefill_us = 2_505_000u64;
    let cap_us = 4_400_000u64;
    let above = overheads_us().iter().filter(|&&o| o as u64 + prefill_us > cap_us).count();
    assert_eq!(above, 12);
    let n = 4000u32;
    let mut capped = 0u32;
    for r in 0..n {
        let m = simulate(&exp, &wait_first(cap_us, Release::OnReady), r).unwrap();
        let t = m.hold_first_token_us.expect("the first writer's response began");
        // Every replication's first token is one of the 20 values plus the prefill, exactly,
        // and the cap fired first exactly when it came later than the cap.
        let overhead = t - prefill_us;
        assert!(overheads_us().contains(&(overhead as f64)), "replication {r}: {overhead} us");
        assert_eq!(m.hold_capped, t > cap_us, "replication {r}");
        capped += u32::from(m.hold_capped);
    }
    let share = capped as f64 / n as f64;
    let want = above as f64 / 20.0;
    assert!((share - want).abs() <= 0.031, "measured {share}, closed form {want}");
}

// ---------------------------------------------------------------- tune, through the binary

fn scratch(name: &str) -> PathBuf {
    super::common::scratch("hold-edge", name)
}

fn tune_json(file: &Path, range: &str) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_prefixsim"))
        .args(["tune", file.to_str().unwrap(), "--param", "max_wait", "--range", range])
        .args(["--refine", "0", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The closed-form fan-out of `sweep.rs`'s tune test, with an empirical overhead: 0.8 s to
/// 3.65 s in steps of 0.15 s, plus 50,100 / 20,000 = 2.505 s of prefill: the first writer's
/// TTFT is one of 3.305, 3.455, ..., 6.155 s.
const EDGE: &str = r#"# tune: an empirical overhead
name = "edge"
seed = 3
replications = 200
strategies = ["wait_first(max_wait=5s)"]
[workload]
agents = 4
parent_tokens = 50000
brief_tokens = 0
task_tokens = 100
turns = "const(1)"
output_tokens = "const(100)"
[latency]
overhead = "empirical([800ms, 950ms, 1100ms, 1250ms, 1400ms, 1550ms, 1700ms, 1850ms, 2000ms, 2150ms, 2300ms, 2450ms, 2600ms, 2750ms, 2900ms, 3050ms, 3200ms, 3350ms, 3500ms, 3650ms])"
prefill_rate = "const(20000)"
cached_rate = "const(1000000)"
decode_rate = "const(50)"
ready_delay = "0s"
"#;

/// The share of the 20 TTFT values above `cap_s`: the closed form of p_cap_before_first_token.
fn share_above(cap_s: f64) -> f64 {
    (0..20).filter(|&i| 3.305 + 0.15 * i as f64 > cap_s + 1e-9).count() as f64 / 20.0
}

#[test]
fn tune_reports_the_chance_the_cap_fires_first_and_keeps_off_the_knife_edge() {
    let d = scratch("edge");
    let f = d.join("edge.toml");
    std::fs::write(&f, EDGE).unwrap();
    let v = tune_json(&f, "0s, 2s, 4s, 4.5s, 5s, 6s, 6.2s, 8s");
    for c in v["candidates"].as_array().unwrap() {
        let cap = c["value"].as_f64().unwrap();
        let p = c["p_cap_before_first_token"].as_f64().unwrap();
        // 200 replications: each of the 20 values is drawn ~10 times; 4 sd of a share of
        // 200 draws is at most 4 * sqrt(0.25 / 200) = 0.142.
        assert!((p - share_above(cap)).abs() <= 0.142, "cap {cap}: {p} vs {}", share_above(cap));
        if cap < 3.305 {
            assert_eq!(p, 1.0, "cap {cap}: below every TTFT");
        }
        if cap >= 6.155 {
            assert_eq!(p, 0.0, "cap {cap}: above every TTFT");
        }
    }
    let e = &v["hold_edge"];
    let (p95, p99) = (e["ttft_p95_s"].as_f64().unwrap(), e["ttft_p99_s"].as_f64().unwrap());
    // The top values of the 20 are 5.855, 6.005 and 6.155 s: with 200 draws the p95 and p99
    // are among them.
    assert!((5.7..=6.156).contains(&p95) && (5.85..=6.156).contains(&p99), "{e}");
    // Every cap that reaches the TTFT more often costs less, so the best is 6.2 s or 8 s (no
    // cap fires first); the recommendation is at or above the p99 and says its margin.
    let rec = v["recommended"].as_f64().unwrap();
    assert!(rec >= p99, "recommended {rec} below the p99 {p99}");
    assert_eq!(e["knife_edge"], false);
    let margin = e["margin_over_p99_s"].as_f64().unwrap();
    assert!((margin - (rec - p99)).abs() < 1e-9);
    let notes: Vec<&str> =
        v["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(notes.iter().any(|n| n.contains("margin kept")), "{notes:?}");
}

#[test]
fn a_cap_below_the_spread_is_flagged_when_nothing_safe_ties() {
    // Candidates 4 s and 5 s only: 5 s is best (fewer capped runs), and it lies inside the
    // spread (p5 ~3.46 s, p95 ~5.86 s) with no candidate above it: tune warns.
    let d = scratch("warn");
    let f = d.join("edge.toml");
    std::fs::write(&f, EDGE).unwrap();
    let v = tune_json(&f, "4s, 5s");
    assert_eq!(v["recommended"].as_f64(), Some(5.0));
    assert_eq!(v["hold_edge"]["knife_edge"], true, "{}", v["hold_edge"]);
    assert!(v["hold_edge"]["margin_over_p95_s"].as_f64().unwrap() < 0.0);
    let notes = v["notes"].to_string();
    assert!(notes.contains("warning: max_wait = 5s is on a knife edge"), "{notes}");
}
