//! Latency per model: the `models` listing, `--latency FILE`, and a fork to another model
//! running at that model's latency.

use std::path::{Path, PathBuf};

use prefixsim::config::{AgentKind, LatencyParams, Strategy};
use prefixsim::dist::Dist;
use prefixsim::model::simulate_detailed;
use prefixsim::time::US_PER_MS;

use super::common::bin;

fn scratch(name: &str) -> PathBuf {
    super::common::scratch("latency", name)
}

#[test]
fn models_lists_every_preset_with_its_latency() {
    let out = bin().args(["models", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), prefixsim::config::preset_names().len());
    for m in models {
        let name = m["name"].as_str().unwrap();
        for id in m["api_ids"].as_array().unwrap() {
            let id = id.as_str().unwrap();
            assert_eq!(prefixsim::config::preset_for_api_id(id), Some(name), "{id}");
        }
        assert!(m["prices"]["input_usd_per_mtok"].as_f64().unwrap() > 0.0);
        assert!(m["min_cacheable_tokens"].as_u64().unwrap() >= 512);
        let window = m["context_window_tokens"].as_u64().unwrap();
        // Claude windows; the other providers' presets carry their standard-price range.
        let claude = name.starts_with("claude-");
        assert!(!claude || window == 200_000 || window == 1_000_000, "{name} window {window}");
        if let Some(long) = m["long_context_window_tokens"].as_u64() {
            assert!(long > window, "{name}: a long-context offer is larger than the window");
        }
        let l = &m["latency"];
        for key in ["overhead_s", "prefill_rate", "decode_rate"] {
            assert!(l[key].as_f64().unwrap() > 0.0, "{name} {key}");
        }
        // null: the fit found no time per cached token, and none is simulated.
        assert!(l["cached_rate"].is_null() || l["cached_rate"].as_f64().unwrap() > 0.0, "{name}");
        let tail = l["overhead_p99_s"].as_f64().unwrap();
        assert!(tail > l["overhead_s"].as_f64().unwrap(), "{name}: the p99 is in the tail");
        assert!(!l["source"].as_str().unwrap().is_empty());
    }
    // Opus 4.1's 14 requests in 4 sessions identify no fit: it borrows Opus 4.5's, and says so.
    let opus = models.iter().find(|m| m["name"] == "claude-opus-4.1").unwrap();
    let source = opus["latency"]["source"].as_str().unwrap();
    assert!(source.contains("do not identify") && source.contains("claude-opus-4.5"), "{source}");
    let sonnet = models.iter().find(|m| m["name"] == "claude-sonnet-4.5").unwrap();
    assert!(sonnet["api_ids"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i == "claude-sonnet-4-5-20250929"));
    assert_eq!(sonnet["context_window_tokens"], 200_000);
    assert_eq!(sonnet["long_context_window_tokens"], 1_000_000, "Sonnet 4.5's 1M beta");
    let haiku = models.iter().find(|m| m["name"] == "claude-haiku-4.5").unwrap();
    assert!(haiku["long_context_window_tokens"].is_null());
    let table = String::from_utf8(bin().arg("models").output().unwrap().stdout).unwrap();
    let sonnet_line = table.lines().find(|l| l.starts_with("claude-sonnet-4.5 ")).unwrap();
    assert!(sonnet_line.contains("200k (1M beta)"), "{sonnet_line}");
}

#[test]
fn a_latency_file_is_the_same_as_setting_latency_from() {
    let dir = scratch("from");
    std::fs::write(
        dir.join("latency.toml"),
        "[latency.\"claude-haiku-4-5-20251001\"]\noverhead = \"const(3s)\"\nprefill_rate = \"const(1000)\"\n",
    )
    .unwrap();
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/default.toml");
    let run = |extra: &[&str]| {
        let out = bin()
            .arg("run")
            .arg(&exp)
            .args(["--json", "--set", "replications=3"])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let file = dir.join("latency.toml").display().to_string();
    let by_flag = run(&["--latency", "latency.toml"]);
    let by_set = run(&["--set", &format!("latency.from=\"{file}\"")]);
    assert_eq!(by_flag, by_set);
    assert_ne!(by_flag, run(&[]), "a 3 s overhead at 1,000 tok/s changes the run");
    let missing = bin().arg("run").arg(&exp).args(["--latency", "nope.toml"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("latency.from"));
}

#[test]
fn a_fork_to_another_model_runs_at_that_models_latency() {
    // The closed-form workload (tests/it/model.rs): one cold fork, 50,000 + 100 tokens to
    // prefill, 100 output tokens. The experiment's model runs at 500 ms + 20k tok/s; the
    // other model (Haiku 4.5) at 1 s + 10k tok/s and 25 tok/s of decode:
    // ttft = 1 s + 50,100 / 10,000 = 6.01 s, decode = 100 / 25 = 4 s.
    let mut exp = super::model::experiment(1);
    exp.workload.kind = AgentKind::ForkOtherModel { model: "claude-haiku-4.5".into() };
    exp.latency_other = Some(LatencyParams {
        overhead_us: Dist::Const(1000.0 * US_PER_MS as f64),
        prefill_rate: Dist::Const(10_000.0),
        cached_rate: Dist::Const(1_000_000.0),
        decode_rate: Dist::Const(25.0),
        ready_delay_us: Dist::Const(0.0),
        attention_rate: Dist::Const(f64::INFINITY),
    });
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(d.requests[0].ttft_us, 6_010_000);
    assert_eq!(d.requests[0].decode_us, 4_000_000);
    // Without its own latency it runs at the experiment's: 0.5 s + 50,100 / 20,000 = 3.005 s.
    exp.latency_other = None;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(d.requests[0].ttft_us, 3_005_000);
}

/// The calibrated presets are what a fresh `calibrate` of the bundled traces gives:
/// `src/config/latency_fits.json` is generated from `calibrate data/claude-code-ttft --json`
/// and must equal a fresh rendering byte for byte. To regenerate it after a change to the fit
/// or the data: `PREFIXSIM_WRITE_FITS=1 cargo test --release --test it calibrated_presets`.
#[test]
fn calibrated_presets_match_a_fresh_fit_of_the_bundled_traces() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = bin().arg("calibrate").arg(root.join("data/claude-code-ttft")).arg("--json").output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fresh = render_fits(&v);
    let path = root.join("src/config/latency_fits.json");
    if std::env::var_os("PREFIXSIM_WRITE_FITS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == fresh,
        "latency_fits.json is stale: regenerate it (PREFIXSIM_WRITE_FITS=1)"
    );
    for fit in prefixsim::config::latency_presets::fits() {
        assert_eq!(fit.draws.len(), prefixsim::config::latency_presets::CALIBRATION_DRAWS);
    }
}

/// `latency_fits.json` from `calibrate --json`: one fit per model with a preset, by preset name.
fn render_fits(v: &serde_json::Value) -> String {
    let mut models: Vec<&serde_json::Value> =
        v["models"].as_array().unwrap().iter().filter(|m| m["preset"].is_string()).collect();
    models.sort_by_key(|m| m["preset"].as_str().unwrap().to_string());
    let overhead = |o: &serde_json::Value| {
        serde_json::json!({
            "body_s": o["body_s"], "p_tail": o["p_tail"], "scale_s": o["scale_s"],
            "shape": o["shape"], "max_s": o["max_s"],
        })
    };
    let fits: Vec<serde_json::Value> = models
        .iter()
        .map(|m| {
            let draws: Vec<serde_json::Value> = m["draws"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "overhead": overhead(&d["overhead_distribution"]),
                        "prefill_rate": d["prefill_rate"], "cached_rate": d["cached_rate"],
                        "attention_rate": d["attention_rate"],
                    })
                })
                .collect();
            serde_json::json!({
                "fitted_on": m["preset"], "requests": m["requests"], "sessions": m["sessions"],
                "identified": m["identified"], "overhead_s": m["overhead_s"],
                "overhead": overhead(&m["overhead_distribution"]),
                "prefill_rate": m["prefill_rate"], "cached_rate": m["cached_rate"],
                "decode_rate": m["decode_rate"], "attention_rate": m["attention_rate"],
                "draws": draws,
            })
        })
        .collect();
    serde_json::to_string_pretty(&fits).unwrap() + "\n"
}
