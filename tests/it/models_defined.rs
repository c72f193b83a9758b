//! Models the user defines (`[models."name"]` in an experiment, or a file named by `--models`):
//! they run at their own prices, `models` lists them, errors name the file and the key, and
//! the rendered experiment carries the definition. Also the presets' tiers and Haiku 3.5's
//! ITPM rule, end to end.

use std::path::{Path, PathBuf};

use super::common::{bin, scratch};

fn default_experiment() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/default.toml")
}

/// Haiku 4.5's numbers at twice its prices: every run of it is Haiku 4.5's, each cost doubled.
const DOUBLE_HAIKU: &str = r#"# Haiku 4.5 at twice its prices (a leading comment, as any file may have).
[models."acme-haiku-2x"]
policy = "anthropic"
input_usd_per_mtok = 2.0
output_usd_per_mtok = 10.0
read_multiplier = 0.1
write_5m_multiplier = 1.25
write_1h_multiplier = 2.0
min_cacheable_tokens = 4096
context_window_tokens = 200000
thinking_history = "stripped"
latency_from = "claude-haiku-4.5"
source = "https://example.com/acme/pricing"
checked = "2026-12-05"
"#;

/// `prefixsim ARGS`: exit code, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

/// The default experiment's results (`run --json`, 20 replications) with `extra` arguments.
fn results(extra: &[&str]) -> Vec<serde_json::Value> {
    let exp = default_experiment();
    let mut args = vec!["run", exp.to_str().unwrap(), "--json", "--set", "replications=20"];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["results"].as_array().unwrap().clone()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_model_defined_in_a_file_runs_at_its_own_prices() {
    let dir = scratch("models_defined", "runs");
    let file = write(&dir, "acme.toml", DOUBLE_HAIKU);
    let base = results(&[]);
    let acme = results(&["--models", &file, "--set", "model=acme-haiku-2x"]);
    assert_eq!(base.len(), acme.len());
    for (b, a) in base.iter().zip(&acme) {
        let (cost_b, cost_a) = (b["cost_usd"].as_f64().unwrap(), a["cost_usd"].as_f64().unwrap());
        assert!(cost_b > 0.0 && (cost_a - 2.0 * cost_b).abs() < 1e-9 * cost_a, "{b} {a}");
        // The same latency (Haiku 4.5's fit) and the same cache: everything else is equal.
        assert_eq!(a["hit_rate"], b["hit_rate"], "{}", a["strategy"]);
        assert_eq!(a["ttft_pooled_s"], b["ttft_pooled_s"], "{}", a["strategy"]);
    }
}

#[test]
fn a_model_defined_in_the_experiment_is_rendered_with_it() {
    let dir = scratch("models_defined", "inline");
    let text = std::fs::read_to_string(default_experiment()).unwrap();
    let text = text.replace("model = \"claude-haiku-4.5\"", "model = \"acme-haiku-2x\"");
    let exp = write(&dir, "exp.toml", &format!("{text}\n{DOUBLE_HAIKU}"));
    let (code, _, err) =
        run(&["run", &exp, "--set", "replications=2", "--out", dir.join("out").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let manifest = std::fs::read_to_string(dir.join("out/manifest.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let rendered = v["experiment"].as_str().unwrap();
    assert!(rendered.contains("[models.acme-haiku-2x]"), "{rendered}");
    assert!(rendered.contains("latency_from = \"claude-haiku-4.5\""), "{rendered}");
    // The rendered experiment runs as it stands, on the same numbers.
    let again = write(&dir, "rendered.toml", rendered);
    let (code, out2, err) = run(&["run", &again, "--json"]);
    assert_eq!(code, 0, "{err}");
    let (_, out1, _) = run(&["run", &exp, "--set", "replications=2", "--json"]);
    let cost = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["results"].clone();
    assert_eq!(cost(&out1), cost(&out2));
}

#[test]
fn models_lists_the_file_models_beside_the_presets() {
    let dir = scratch("models_defined", "list");
    let file = write(&dir, "acme.toml", DOUBLE_HAIKU);
    let (code, out, err) = run(&["models", "--models", &file, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), prefixsim::config::preset_names().len() + 1);
    let acme = models.iter().find(|m| m["name"] == "acme-haiku-2x").unwrap();
    assert_eq!(acme["defined_in"], file.as_str());
    assert_eq!(acme["prices"]["cache_read_usd_per_mtok"], 0.2);
    let source = acme["latency"]["source"].as_str().unwrap();
    assert!(source.contains("borrows the fit of claude-haiku-4.5"), "{source}");
    let (_, table, _) = run(&["models", "--models", &file]);
    assert!(table.lines().any(|l| l.starts_with("acme-haiku-2x (file) ")), "{table}");
    let (_, sources, _) = run(&["models", "--models", &file, "--sources"]);
    assert!(sources.contains("https://example.com/acme/pricing"), "{sources}");
}

/// Each mistake in a models file: exit 2, one line naming the file and the key.
#[test]
fn a_bad_definition_names_its_file_and_key() {
    let dir = scratch("models_defined", "errors");
    let cases = [
        ("unknown key", DOUBLE_HAIKU.replace("policy =", "polcy ="), "models.acme-haiku-2x.polcy"),
        (
            "missing price",
            DOUBLE_HAIKU.replace("read_multiplier = 0.1\n", ""),
            "models.acme-haiku-2x.read_multiplier",
        ),
        (
            "negative price",
            DOUBLE_HAIKU.replace("= 2.0\noutput", "= -2.0\noutput"),
            "models.acme-haiku-2x.input_usd_per_mtok",
        ),
        (
            "a preset's name",
            DOUBLE_HAIKU.replace("acme-haiku-2x", "claude-haiku-4-5-20251001"),
            "models.claude-haiku-4-5-20251001",
        ),
        (
            "no latency",
            DOUBLE_HAIKU.replace("latency_from = \"claude-haiku-4.5\"\n", ""),
            "models.acme-haiku-2x.latency_from",
        ),
        (
            "a tier past the window",
            DOUBLE_HAIKU.replace(
                "thinking_history",
                "tier_threshold_tokens = 300000\ntier_input_multiplier = 2.0\n\
                 tier_output_multiplier = 1.5\nthinking_history",
            ),
            "models.acme-haiku-2x.tier_threshold_tokens",
        ),
    ];
    let exp = default_experiment();
    for (what, text, key) in cases {
        let file = write(&dir, "bad.toml", &text);
        let args =
            ["run", exp.to_str().unwrap(), "--models", &file, "--set", "model=acme-haiku-2x"];
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{what}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(&file) && err.contains(key), "{what}: {err}");
        let (code, _, err) = run(&["models", "--models", &file]);
        assert_eq!(code, 2, "{what}: models: {err}");
    }
    // The policy the definition names decides; another provider's is refused.
    let file = write(&dir, "ok.toml", DOUBLE_HAIKU);
    let args = ["run", exp.to_str().unwrap(), "--models", &file, "--set", "model=acme-haiku-2x"];
    let (code, _, err) = run(&[&args[..], &["--set", "cache.policy=openai"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cache.policy") && err.contains("models.acme-haiku-2x.policy"), "{err}");
    // Defined twice (the file and the experiment): an error naming both.
    let text = std::fs::read_to_string(&exp).unwrap();
    let twice = write(&dir, "twice.toml", &format!("{text}\n{DOUBLE_HAIKU}"));
    let (code, _, err) = run(&["run", &twice, "--models", &file, "--set", "model=acme-haiku-2x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&twice) && err.contains(&file), "{err}");
}

/// Haiku 3.5's cache reads count toward its input-tokens-per-minute limit (the rate-limits
/// page's dagger): the same fan-out is throttled where, counting its uncached and written
/// tokens only, it is not.
#[test]
fn haiku_3_5_counts_cache_reads_toward_itpm() {
    let limited = [
        "--set",
        "model=claude-haiku-3.5",
        "--set",
        "rate_limits.itpm=400000",
        "--set",
        "rate_limits.rpm=4000",
        "--set",
        "rate_limits.otpm=400000",
    ];
    let throttled = |extra: &[&str]| -> f64 {
        let r = results(&[&limited[..], extra].concat());
        r.iter().map(|s| s["throttled_s"].as_f64().unwrap()).sum()
    };
    let counted = throttled(&[]);
    let uncounted = throttled(&["--set", "model_params.itpm_counts_cache_reads=false"]);
    assert!(counted > 0.0, "Haiku 3.5's reads fill its ITPM bucket");
    assert_eq!(uncounted, 0.0, "without its reads the fan-out fits");
    // Haiku 4.5 at the same limits: its reads do not count.
    let haiku45 = results(&[&limited[..], &["--set", "model=claude-haiku-4.5"]].concat());
    let t: f64 = haiku45.iter().map(|s| s["throttled_s"].as_f64().unwrap()).sum();
    assert_eq!(t, 0.0);
}

/// A request past a price tier's threshold is served at the tier's rates, not refused: the
/// model's window is its window.
#[test]
fn a_request_above_a_tier_pays_the_tier() {
    for (model, tokens) in [("gpt-5.4", "300000"), ("claude-haiku-5.5", "150000")] {
        let exp = default_experiment();
        let policy = if model.starts_with("gpt") { "openai" } else { "anthropic" };
        let args = [
            "run",
            exp.to_str().unwrap(),
            "--json",
            "--set",
            "replications=2",
            "--set",
            &format!("model={model}"),
            "--set",
            &format!("cache.policy={policy}"),
            "--set",
            &format!("workload.subagent_tokens={tokens}"),
        ];
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{model}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let long = v["results"][0]["long_context_requests"].as_f64().unwrap_or(0.0);
        assert!(long > 0.0, "{model}: {out}");
    }
}
