//! Tests: what `prefixsim calibrate` writes: the JSON schema, `latency.toml` as distributions,
//! the same bytes for the same input, the committed samples, the help examples and the bundled
//! traces.

use super::*;

#[test]
fn json_schema() {
    let dir = scratch("schema");
    let [_, usage, _] = write_all(&generate(2, 6, 6, true), Timing::Both, &dir);
    let v = calibrate_json(&[p(&usage)]);
    let top: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(top, ["models"]);
    let models = v["models"].as_array().unwrap();
    let ids: Vec<&str> = models.iter().map(|m| m["model"].as_str().unwrap()).collect();
    assert_eq!(ids, ["claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"], "sorted by id");
    let presets: Vec<&str> = models.iter().map(|m| m["preset"].as_str().unwrap()).collect();
    assert_eq!(presets, ["claude-haiku-4.5", "claude-sonnet-4.5"]);
    for m in models {
        assert!(m["requests"].as_u64().unwrap() > 0);
        for key in ["overhead_s", "median_abs_error_s", "launch_2024_median_abs_error_s"] {
            assert!(m[key].as_f64().unwrap() >= 0.0, "{key}");
        }
        for key in ["overhead_s", "prefill_rate", "cached_rate", "decode_rate"] {
            let ci = m["ci95"][key].as_array().unwrap_or_else(|| panic!("ci95.{key}: {m}"));
            assert_eq!(ci.len(), 2);
            assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap_or(f64::INFINITY));
        }
        let q: Vec<f64> = m["residual_quantiles_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(q.len(), 20);
        assert!(q.windows(2).all(|w| w[0] <= w[1]), "ascending: {q:?}");
        assert!(q[9] <= 1e-3 && q[10] >= -1e-3, "a median fit's residuals straddle 0: {q:?}");
        check_distribution(&m["overhead_distribution"]);
        assert!(m["identified"].is_boolean());
        assert!(m["validation"].is_null(), "no --validate");
        assert!(m.as_object().unwrap().contains_key("attention_rate"));
        let draws = m["draws"].as_array().unwrap();
        assert_eq!(draws.len(), 20, "CALIBRATION_DRAWS");
        for d in draws {
            let mut keys: Vec<&String> = d.as_object().unwrap().keys().collect();
            keys.sort();
            assert_eq!(
                keys,
                ["attention_rate", "cached_rate", "overhead_distribution", "prefill_rate"]
            );
            check_distribution(&d["overhead_distribution"]);
            assert!(d["prefill_rate"].as_f64().unwrap() > 0.0);
        }
        assert_ne!(draws[0], draws[1], "each draw is its own refit");
        let e = &m["held_out"]["exceed"];
        let shares: Vec<f64> =
            ["p50", "p90", "p95", "p99"].map(|k| e[k].as_f64().unwrap()).to_vec();
        assert!(shares.windows(2).all(|w| w[0] >= w[1]) && shares[0] <= 1.0, "{e}");
    }
}

/// An `overhead_distribution`: 19 ascending body values from 0, p_tail 0.9, a positive scale,
/// a shape in the clamp, a 600 s truncation.
fn check_distribution(d: &Value) {
    let mut keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["body_s", "max_s", "p_tail", "scale_s", "shape"]);
    let body: Vec<f64> =
        d["body_s"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(body.len(), 19);
    assert!(body[0] >= 0.0 && body.windows(2).all(|w| w[0] <= w[1]), "{body:?}");
    assert_eq!(d["p_tail"], 0.9);
    assert!(d["scale_s"].as_f64().unwrap() > 0.0);
    let shape = d["shape"].as_f64().unwrap();
    assert!((-0.5..=0.9).contains(&shape), "{shape}");
    assert_eq!(d["max_s"], 600.0);
}

/// The `[latency.KEY]` tables of a latency.toml, parsed.
fn latency_tables(text: &str) -> toml::Table {
    let t: toml::Table = text.parse().unwrap_or_else(|e| panic!("latency.toml: {e}\n{text}"));
    t["latency"].as_table().unwrap().clone()
}

#[test]
fn latency_toml_is_tables_of_distributions_and_outputs_are_deterministic() {
    let dir = scratch("toml");
    let [_, usage, _] = write_all(&generate(4, 8, 8, true), Timing::Both, &dir);
    let a = dir.join("a");
    let names = [
        "latency.toml",
        "calibration.json",
        "ttft_fit.svg",
        "ttft_fit.png",
        "ttft_residuals.svg",
        "ttft_residuals.png",
    ];
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (code, _, err) = run(&["calibrate", p(&usage), "--out", p(&a), "--force"]);
        assert_eq!(code, 0, "{err}");
        runs.push(names.map(|n| std::fs::read(a.join(n)).unwrap()));
    }
    for (i, name) in names.iter().enumerate() {
        assert!(
            runs[0][i].len() > 100 && runs[0][i] == runs[1][i],
            "{name} differs between two runs"
        );
    }
    let leftovers: Vec<_> =
        std::fs::read_dir(&a).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 6, "no .tmp file is left: {leftovers:?}");
    let text = std::fs::read_to_string(a.join("latency.toml")).unwrap();
    assert!(
        text.starts_with("# Per-model latency") && text.contains("# command: prefixsim calibrate "),
        "{text}"
    );
    let json: Value =
        serde_json::from_slice(&std::fs::read(a.join("calibration.json")).unwrap()).unwrap();
    let tables = latency_tables(&text);
    let keys: Vec<&String> = tables.keys().collect();
    assert_eq!(keys, ["claude-haiku-4.5", "claude-sonnet-4.5"], "keyed by preset");
    for (key, table) in &tables {
        let m = json["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["preset"] == key.as_str())
            .unwrap();
        for (param, value) in table.as_table().unwrap() {
            let q = if param == "overhead" { Quantity::Duration } else { Quantity::Number };
            let text = value.as_str().unwrap();
            let dist = parse_dist_in(text, q, None)
                .unwrap_or_else(|e| panic!("{key}.{param} = {text}: {e}"));
            match (param.as_str(), dist) {
                ("overhead", Dist::Spliced(d)) => {
                    // The JSON's distribution, in microseconds; its median is the fitted
                    // overhead (a median fit leaves half the residuals on each side of 0).
                    let j = &m["overhead_distribution"];
                    let body: Vec<f64> = j["body_s"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap() * 1e6)
                        .collect();
                    assert!(d.body.iter().zip(&body).all(|(a, b)| (a - b).abs() < 1e-3), "{key}");
                    assert_eq!(d.shape, j["shape"].as_f64().unwrap());
                    assert!((d.scale - j["scale_s"].as_f64().unwrap() * 1e6).abs() < 1e-3);
                    assert_eq!((d.p_tail, d.max), (0.9, 600e6));
                    let median_s = d.quantile(0.5) / 1e6;
                    let fit = m["overhead_s"].as_f64().unwrap();
                    assert!((median_s - fit).abs() < 0.05, "{key}: median {median_s} vs fit {fit}");
                }
                (rate, Dist::Const(x)) => {
                    let fit = m[rate].as_f64().unwrap();
                    assert!((x - fit).abs() <= 0.6, "{key}.{rate}: {x} vs {fit}");
                }
                (other, d) => panic!("{key}.{other}: unexpected {d:?}"),
            }
        }
    }
}

#[test]
fn api_ids_of_two_spellings_of_one_preset_are_keyed_by_id() {
    let dir = scratch("two_spellings");
    let calls = generate(6, 6, 6, true);
    let text =
        usage_log(&calls, Timing::Both).replace("claude-haiku-4-5-20251001", "claude-sonnet-4-5");
    let file = dir.join("u.jsonl");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let (code, _, err) = run(&["calibrate", p(&file), "--out", p(&out)]);
    assert_eq!(code, 0, "{err}");
    let tables = latency_tables(&std::fs::read_to_string(out.join("latency.toml")).unwrap());
    let keys: Vec<&String> = tables.keys().collect();
    assert_eq!(keys, ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929"]);
}

// ---------------------------------------------------------------------------------------------
// Samples, --help examples, the bundled traces.

/// The committed samples are this generator's output (rewrite with PREFIXSIM_WRITE_SAMPLES=1).
#[test]
fn samples_are_the_generators_output() {
    let calls = generate(2025, 3, 8, true);
    let samples = [
        ("data/samples/usage-log.jsonl", usage_log(&calls, Timing::Both)),
        ("data/samples/otlp.json", otlp(&calls, Timing::Both, true)),
    ];
    for (path, text) in samples {
        if std::env::var_os("PREFIXSIM_WRITE_SAMPLES").is_some() {
            std::fs::write(repo(path), &text).unwrap();
        }
        let committed = std::fs::read_to_string(repo(path)).unwrap_or_default();
        assert!(
            committed == text,
            "{path} is not the generator's output (PREFIXSIM_WRITE_SAMPLES=1 rewrites it)"
        );
    }
}

#[test]
fn help_examples_run() {
    let (code, help, _) = run(&["calibrate", "--help"]);
    assert_eq!(code, 0);
    let examples: Vec<&str> =
        help.lines().map(str::trim).filter(|l| l.starts_with("prefixsim calibrate ")).collect();
    assert_eq!(examples.len(), 7, "{help}");
    let out = scratch("help").join("out");
    for line in examples {
        let args: Vec<String> = line
            .split_whitespace()
            .skip(1)
            .map(|a| {
                if a == "calibration/" {
                    out.to_str().unwrap().to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let out = bin().args(&args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(out.join("latency.toml").exists());
}

#[test]
fn bundled_traces_give_five_models_with_finite_overheads() {
    let v = calibrate_json(&[p(&repo("data/claude-code-ttft"))]);
    let presets: Vec<&str> =
        v["models"].as_array().unwrap().iter().map(|m| m["preset"].as_str().unwrap()).collect();
    assert_eq!(
        presets,
        [
            "claude-haiku-4.5",
            "claude-opus-4.1",
            "claude-opus-4.5",
            "claude-sonnet-4",
            "claude-sonnet-4.5"
        ]
    );
    let mut requests = 0;
    for m in v["models"].as_array().unwrap() {
        let o = m["overhead_s"].as_f64().unwrap();
        assert!(o.is_finite() && o > 0.0 && o < 10.0, "{}: {o}", m["model"]);
        assert!(
            m["median_abs_error_s"].as_f64().unwrap()
                < m["launch_2024_median_abs_error_s"].as_f64().unwrap()
        );
        requests += m["requests"].as_u64().unwrap();
    }
    assert_eq!(requests, 1169, "every request with a ttft is used");
}
