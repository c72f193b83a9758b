//! `config::resolve` and `render` on small files: defaults, round trips, and errors naming the
//! key.

use prefixsim::cache::*;
use prefixsim::config::latency_presets::LatencyPreset;
use prefixsim::config::*;
use prefixsim::dist::Dist;
use prefixsim::time::{US_PER_H, US_PER_MIN};

/// Remembered distributions are the ones that read no file: a values file is read again at
/// every resolve, named as `file=` or as a bare positional argument.
#[test]
fn a_values_file_is_read_at_every_resolve() {
    let dir = std::env::temp_dir().join(format!("prefixsim-dist-memo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let origin = dir.join("x.toml").display().to_string();
    for spelling in ["empirical(file=v.txt)", "empirical(v.txt)"] {
        let text = format!("[workload]\nturns = \"{spelling}\"\n");
        let t = parse_table(&text, &origin).unwrap();
        std::fs::write(dir.join("v.txt"), "1\n2\n").unwrap();
        assert_eq!(resolve(&t, &origin).unwrap().workload.turns, Dist::Empirical(vec![1.0, 2.0]));
        std::fs::write(dir.join("v.txt"), "3\n").unwrap();
        assert_eq!(resolve(&t, &origin).unwrap().workload.turns, Dist::Empirical(vec![3.0]));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `text` resolved (as file `origin`).
fn resolved(text: &str, origin: &str) -> ExperimentSpec {
    resolve(&parse_table(text, origin).unwrap(), origin).unwrap()
}

/// `e` rendered and resolved again.
fn again(e: &ExperimentSpec) -> ExperimentSpec {
    resolved(&render(e), "r")
}

fn check_err(text: &str, key: &str, value_part: &str) {
    let t = parse_table(text, "x.toml").unwrap();
    let e = resolve(&t, "x.toml").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("x.toml"), "{msg}");
    assert!(msg.contains(key), "{msg} lacks {key}");
    assert!(msg.contains(value_part), "{msg} lacks {value_part}");
}

#[test]
fn other_ttls_where_the_policy_allows_them() {
    for policy in ["every-block", "vllm", "sglang"] {
        let text = format!("[cache]\npolicy = \"{policy}\"\nttl = \"30m\"\nparent_ttl = \"6h\"\n");
        let e = resolved(&text, "x.toml");
        assert_eq!(e.cache.ttl, Ttl::Other(30 * US_PER_MIN), "{policy}");
        assert_eq!(e.cache.parent_ttl, Some(Ttl::Other(6 * US_PER_H)), "{policy}");
        assert_eq!(again(&e), e, "{policy}: the TTL round-trips");
    }
    let text = "[cache]\npolicy = \"every-block\"\n[cache.ttl_by_kind]\nfork = \"90s\"\n";
    let e = resolved(text, "x.toml");
    assert_eq!(e.cache.ttl_by_kind, [("fork".to_string(), Ttl::Other(90_000_000))]);
}

#[test]
fn empty_file_takes_spec_defaults() {
    let e = resolve(&toml::Table::new(), "dir/fanout.toml").unwrap();
    assert_eq!(e.name, "fanout");
    assert_eq!(e.seed, 42);
    assert_eq!(e.replications, 100);
    assert_eq!(e.strategies.len(), 5);
    assert_eq!(e.model.input_usd_per_mtok, 3.0);
    assert_eq!(e.cache.ttl, Ttl::FiveMin);
    assert_eq!(e.workload.agents, 10);
    assert_eq!(e.workload.concurrency, 16);
    assert_eq!(e.workload.tool_latency_us, Dist::Const(2e6));
    // Latency: Sonnet 4.5's calibrated preset (its median fixed part is 1.8 s).
    let calibrated = latency_presets::params("claude-sonnet-4.5", LatencyPreset::Calibrated);
    assert_eq!(Some(e.latency.clone()), calibrated);
    assert_eq!(e.latency_other, None);
    assert_eq!(e.rate_limits, None);
    assert_eq!(e.workload.parent_turn_every_us, 0);
    assert_eq!(e.workload.parent_turn_tokens, Dist::Const(2000.0));
    assert_eq!(e.workload.arrival_every_us, 0);
}

#[test]
fn arrivals_resolve_render_and_reject_bad_values() {
    let e = resolved("[workload]\narrival_every = \"1min\"\n", "a");
    assert_eq!(e.workload.arrival_every_us, 60_000_000);
    let text = render(&e);
    assert!(text.contains("arrival_every = \"1min\""), "{text}");
    assert_eq!(again(&e), e);
    check_err("[workload]\narrival_every = \"-2s\"\n", "workload.arrival_every", "-2s");
    check_err("[workload]\narrival_every = 60\n", "workload.arrival_every", "60");
}

#[test]
fn parent_turns_resolve_render_and_reject_bad_values() {
    let src = "[workload]\nparent_turn_every = \"90s\"\n\
               parent_turn_tokens = \"lognormal(median=2000, p90=8000)\"\n";
    let e = resolved(src, "p");
    assert_eq!(e.workload.parent_turn_every_us, 90_000_000);
    assert_eq!(e.workload.parent_turn_tokens, Dist::LogNormal { median: 2000.0, p90: 8000.0 });
    let text = render(&e);
    assert!(text.contains("parent_turn_every = \"90s\""), "{text}");
    assert_eq!(resolved(&text, "p"), e);
    check_err("[workload]\nparent_turn_every = 60\n", "workload.parent_turn_every", "60");
    check_err("[workload]\nparent_turn_every = \"-1min\"\n", "workload.parent_turn_every", "-1min");
    check_err(
        "[workload]\nparent_turn_tokens = \"uniform(5\"\n",
        "workload.parent_turn_tokens",
        "uniform(5",
    );
    check_err(
        "[workload]\nparent_turns_every = \"1min\"\n",
        "workload.parent_turns_every",
        "did you mean",
    );
}

#[test]
fn default_experiment_resolves_and_renders_round_trip() {
    let e = resolved(DEFAULT_EXPERIMENT, "<default>");
    assert!(!e.question.is_empty());
    assert_eq!(again(&e), e);
    assert_eq!(render(&again(&e)), render(&e));
}

#[test]
fn rate_limits_and_overrides_render_round_trip() {
    let src = "model = \"claude-haiku-3.5\"\n[rate_limits]\nrpm = 50\ncache_reads_count = true\n\
               [model_params]\nread_multiplier = 0.05\n[cache]\nttl = \"1h\"\ncapacity_tokens = 9000\n\
               [workload]\nkind = \"fork_other_model(model=claude-opus-4.5)\"\n";
    let e = resolved(src, "r");
    assert_eq!(e.rate_limits.as_ref().map(|r| r.rpm), Some(50));
    assert_eq!(e.model.read_multiplier, 0.05);
    assert_eq!(again(&e), e);
}

#[test]
fn latency_comes_from_a_preset_a_file_or_keys_in_that_order() {
    let launch = resolve(&parse_table("[latency]\npreset = \"launch-2024\"\n", "r").unwrap(), "r");
    assert_eq!(launch.unwrap().latency, LatencyParams::default());
    // The API's model id names the preset; its calibrated latency follows.
    let haiku = "model = \"claude-haiku-4-5-20251001\"\n[latency]\nprefill_rate = \"const(7)\"\n";
    let e = resolved(haiku, "r");
    assert_eq!(e.model.name, "claude-haiku-4.5");
    let base = latency_presets::params("claude-haiku-4.5", LatencyPreset::Calibrated).unwrap();
    assert_eq!(e.latency, LatencyParams { prefill_rate: Dist::Const(7.0), ..base });
    // A calibration file: its table for the model, by API id; absent keys keep the preset.
    let dir = std::env::temp_dir().join(format!("prefixsim-latfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("latency.toml"),
        "[latency.\"claude-sonnet-4-5-20250929\"]\noverhead = \"const(1.5s)\"\n             prefill_rate = \"const(40000)\"\n",
    )
    .unwrap();
    let origin = dir.join("exp.toml").display().to_string();
    let text = "[latency]\nfrom = \"latency.toml\"\ndecode_rate = \"const(80)\"\n";
    let e = resolved(text, &origin);
    let base = latency_presets::params("claude-sonnet-4.5", LatencyPreset::Calibrated).unwrap();
    assert_eq!(e.latency.overhead_us, Dist::Const(1.5e6));
    assert_eq!(e.latency.prefill_rate, Dist::Const(40_000.0));
    assert_eq!(e.latency.cached_rate, base.cached_rate);
    assert_eq!(e.latency.decode_rate, Dist::Const(80.0));
    // The file has no table for Opus 4.5: the error names the key and the file's models.
    let opus = format!("model = \"claude-opus-4.5\"\n{text}");
    let err = resolve(&parse_table(&opus, &origin).unwrap(), &origin).unwrap_err().to_string();
    assert!(
        err.contains("latency.from") && err.contains("no table for model `claude-opus-4.5`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    check_err("[latency]\npreset = \"2023\"\n", "latency.preset", "calibrated, launch-2024");
    check_err("[latency]\nfrom = \"nope.toml\"\n", "latency.from", "cannot read it");
}

#[test]
fn a_fork_to_another_model_runs_at_that_models_latency() {
    let src = "[workload]\nkind = \"fork_other_model(model=claude-haiku-4.5)\"\n                   [latency.other_model]\ndecode_rate = \"const(99)\"\n";
    let e = resolved(src, "r");
    let haiku = latency_presets::params("claude-haiku-4.5", LatencyPreset::Calibrated).unwrap();
    assert_eq!(e.latency_other, Some(LatencyParams { decode_rate: Dist::Const(99.0), ..haiku }));
    assert_eq!(again(&e), e, "the other model's latency is rendered and read back");
    check_err(
        "[latency.other_model]\nprefill_rate = \"const(5)\"\n",
        "latency.other_model.prefill_rate",
        "unknown key",
    );
}

#[test]
fn calibrated_defaults_render_round_trip() {
    for model in preset_names() {
        let src = format!("model = \"{model}\"\n");
        let e = resolved(&src, "r");
        assert_eq!(again(&e).latency, e.latency, "{model}");
    }
}

#[test]
fn errors_name_key_and_value() {
    check_err("[workload]\nagnets = 3\n", "workload.agnets", "did you mean `workload.agents`");
    check_err("bogus = 1\n", "bogus", "bogus");
    check_err("[workload]\nparent_idle = \"-5s\"\n", "workload.parent_idle", "-5s");
    check_err(
        "[workload]\ntool_latency = \"const(2 parsecs)\"\n",
        "workload.tool_latency",
        "parsecs",
    );
    check_err("[workload]\ntool_latency = \"2\"\n", "workload.tool_latency", "\"2\"");
    check_err("[workload]\nturns = \"uniform(3\"\n", "workload.turns", "uniform(3");
    check_err("strategies = [\"eagre\"]\n", "strategies", "eagre");
    check_err("[workload]\nkind = \"spoon\"\n", "workload.kind", "spoon");
    check_err("model = \"gpt-9\"\n", "model", "gpt-9");
    check_err("[workload]\nkind = \"fork_other_model(model=gpt-9)\"\n", "workload.kind", "gpt-9");
    check_err("[cache]\nttl = \"7m\"\n", "cache.ttl", "7m");
    check_err("[cache]\nttl = \"7m\"\n", "cache.ttl", "prompt-caching");
    check_err("[cache]\nttl = \"0s\"\n", "cache.ttl", "zero");
    check_err("[cache]\npolicy = \"openai\"\nttl = \"30m\"\n", "cache.ttl", "retention");
    check_err("replications = 0\n", "replications", "0");
    check_err("strategies = [\"eager\", \"eager\"]\n", "strategies", "twice");
}

#[test]
fn sweep_table_is_left_alone() {
    let t = parse_table("[sweep]\n\"workload.agents\" = [1, 2]\n", "s").unwrap();
    assert!(resolve(&t, "s").is_ok());
    assert!(sweep_table(&t).is_some());
}

/// The messages of each kind of error, word for word (they are the CLI's output).
#[test]
fn errors_read_word_for_word() {
    for (text, want) in [
        ("[workload]\nagents = \"abc\"", "`workload.agents` = \"abc\": expected an integer >= 1"),
        (
            "[workload]\nagentz = 3",
            "unknown key `workload.agentz` (did you mean `workload.agents`?)",
        ),
        ("workload = 3", "`workload` = 3: expected a table"),
        ("name = 3", "`name` = 3: expected a string"),
        ("[workload]\nthinking = \"yes\"", "`workload.thinking` = \"yes\": expected true or false"),
        ("[cache]\nttl_by_kind = 3", "`cache.ttl_by_kind` = 3: expected a table"),
        (
            "[model_params]\ninput_usd_per_mtok = 2e7",
            "`model_params.input_usd_per_mtok` = 20000000: at most 1e6 (docs/limits.md)",
        ),
        ("[report]\nanswer = 3", "`report.answer` = 3: expected one of hold_cap, cost"),
        (
            "[report]\nanswr = 3",
            "unknown key `report.answr` (did you mean `report.answer`?) ([report] accepts answer, \
             tolerance, compare, strategy, assumptions)",
        ),
        (
            "[cache.ttl_by_kind]\nforks = \"1h\"",
            "unknown key `cache.ttl_by_kind.forks` (did you mean `cache.ttl_by_kind.fork`?)",
        ),
        (
            "[latency.other_model]\nprefill_rate = \"const(5)\"",
            "unknown key `latency.other_model.prefill_rate`",
        ),
    ] {
        let e = resolve(&parse_table(text, "x.toml").unwrap(), "x.toml").unwrap_err();
        assert_eq!(e.to_string(), format!("x.toml: {want}"), "{text}");
    }
}
