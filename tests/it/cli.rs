//! Tests: experiment files, `--set`, labels, and the `run` command's exit codes and outputs
//! (through the binary); `run_output.rs` has the executor's outputs on a stand-in simulator.

use std::path::{Path, PathBuf};

use prefixsim::config::{self, Strategy};

use super::common::bin;

/// A fresh scratch directory under the target dir (no absolute paths end up in outputs).
fn scratch(name: &str) -> PathBuf {
    super::common::scratch("cli", name)
}

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Run `prefixsim run FILE ARGS --out DIR/out` and check: exit 2, stderr names `needles`,
/// and nothing was written.
fn check_input_error(name: &str, toml_text: &str, extra: &[&str], needles: &[&str]) {
    let dir = scratch(name);
    let file = write_file(&dir, "exp.toml", toml_text);
    let out_dir = dir.join("out");
    let out = bin().arg("run").arg(&file).args(extra).arg("--out").arg(&out_dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("exp.toml"), "file not named: {stderr}");
    for n in needles {
        assert!(stderr.contains(n), "`{n}` not in: {stderr}");
    }
    assert!(!out_dir.exists(), "something was written for {name}");
}

#[test]
fn bad_input_exits_2_naming_key_and_value() {
    check_input_error(
        "unknown_key",
        "[workload]\nagnets = 4\n",
        &[],
        &["workload.agnets", "workload.agents"],
    );
    check_input_error(
        "negative",
        "[workload]\nparent_idle = \"-3s\"\n",
        &[],
        &["workload.parent_idle", "-3s"],
    );
    check_input_error(
        "bad_unit",
        "[latency]\noverhead = \"const(3 fortnights)\"\n",
        &[],
        &["latency.overhead", "fortnights"],
    );
    check_input_error(
        "malformed",
        "[workload]\nturns = \"uniform(3, )\"\n",
        &[],
        &["workload.turns", "uniform(3, )"],
    );
    check_input_error(
        "strategy",
        "strategies = [\"eager\", \"wait_frist(max_wait=5s)\"]\n",
        &[],
        &["strategies", "wait_frist"],
    );
    check_input_error("kind", "", &["--set", "workload.kind=spork"], &["workload.kind", "spork"]);
    check_input_error("set_unknown", "", &["--set", "workload.agentz=3"], &["workload.agentz"]);
    check_input_error(
        "set_negative",
        "",
        &["--set", "cache.ttl=-1h"],
        &["--set cache.ttl=-1h: ", "cache.ttl", "-1h"],
    );
    check_input_error("syntax", "seed = = 3\n", &[], &["exp.toml"]);
}

#[test]
fn set_overrides_keys() {
    let dir = scratch("set");
    let file = write_file(&dir, "e.toml", "# q\n[workload]\nagents = 4\n");
    let sets: Vec<String> = [
        "workload.agents=16",
        "cache.ttl=1h",
        r#"strategies=["eager","wait_first(max_wait=2s)"]"#,
        "workload.kind=fork_drop_tool(tool=Edit)",
        "latency.ready_delay=250ms",
    ]
    .map(String::from)
    .to_vec();
    let (_, e) = config::load(&file, &sets).unwrap();
    assert_eq!(e.workload.agents, 16);
    assert_eq!(e.cache.ttl, config::Ttl::OneHour);
    assert_eq!(
        e.strategies[1],
        Strategy::WaitFirst { max_wait_us: 2_000_000, release: config::Release::OnReady }
    );
    assert_eq!(e.workload.kind, config::AgentKind::ForkDropTool { tool: "Edit".into() });
    assert_eq!(e.latency.ready_delay_us, prefixsim::dist::Dist::Const(250_000.0));
    assert_eq!(e.question, "q");
    assert_eq!(e.name, "e");
}

#[test]
fn strategy_labels_round_trip() {
    for s in [
        Strategy::Eager,
        Strategy::WaitFirst { max_wait_us: 5_000_000, release: config::Release::OnReady },
        Strategy::WaitFirst { max_wait_us: 750_000, release: config::Release::Timer },
        Strategy::Stagger { interval_us: 60_000_000 },
        Strategy::Sequential,
        Strategy::Prewarm,
    ] {
        let label = config::strategy_label(&s);
        assert_eq!(config::parse_strategy(&label), Ok(s), "{label}");
    }
}

fn experiments_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments")
}

/// The real model through the binary: `--jobs 1` and `--jobs 2` print and write the same bytes.
#[test]
fn same_seed_same_bytes_across_jobs() {
    let dir = scratch("model_jobs");
    let file = experiments_dir().join("default.toml");
    let run = |jobs: &str, out: &Path| {
        let o = bin()
            .args([
                "run",
                "--set",
                "replications=6",
                "--seed",
                "7",
                "--json",
                "--trace",
                "--jobs",
                jobs,
            ])
            .arg(&file)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let (a, b) = (dir.join("a"), dir.join("b"));
    let (out_a, out_b) = (run("1", &a), run("2", &b));
    assert_eq!(out_a, out_b);
    let json: serde_json::Value = serde_json::from_slice(&out_a).unwrap();
    assert_eq!(json["seed"], 7);
    assert_eq!(json["results"].as_array().unwrap().len(), 6);
    let mut files = Vec::new();
    for sub in ["", "histograms"] {
        for e in std::fs::read_dir(a.join(sub)).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                files.push(Path::new(sub).join(e.file_name()));
            }
        }
    }
    files.sort();
    let want = "manifest, 2 CSVs, trace, one histogram log, the hold answer";
    assert_eq!(files.len(), 4 + 2, "{want}: {files:?}");
    for f in &files {
        assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{f:?}");
    }
    let manifest = std::fs::read_to_string(a.join("manifest.json")).unwrap();
    assert!(!manifest.contains(env!("CARGO_MANIFEST_DIR")), "absolute path in the manifest");
}

/// A different seed gives a different run (the seed reaches the model).
#[test]
fn seed_changes_the_draws() {
    let file = experiments_dir().join("default.toml");
    let run = |seed: &str| {
        bin()
            .args(["run", "--set", "replications=2", "--json", "--jobs", "1", "--seed", seed])
            .arg(&file)
            .output()
            .unwrap()
            .stdout
    };
    let (a, b) = (run("1"), run("2"));
    let ja: serde_json::Value = serde_json::from_slice(&a).unwrap();
    let jb: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_ne!(ja["results"][0]["makespan_s"], jb["results"][0]["makespan_s"]);
}

#[test]
fn no_command_runs_the_default_table() {
    let o = bin().output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("seed: 42\n"), "{text}");
    for label in
        ["eager", "wait_first(max_wait=5s)", "stagger(interval=1s)", "sequential", "prewarm"]
    {
        assert!(text.lines().any(|l| l.starts_with(label)), "{label} missing:\n{text}");
    }
}

#[test]
fn question_files_run() {
    for name in ["hold_vs_prefix_size.toml", "warm_vs_cold_parent.toml", "drop_tool_vs_deny.toml"] {
        let o = bin()
            .args(["run", "--set", "replications=2", "--json", "--jobs", "1"])
            .arg(experiments_dir().join(name))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn out_must_be_a_directory() {
    let dir = scratch("out_file");
    let file = write_file(&dir, "exp.toml", "replications = 1\n");
    let not_dir = write_file(&dir, "taken", "x");
    let o = bin().arg("run").arg(&file).arg("--out").arg(&not_dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a directory"));
    let o = bin().arg("run").arg(&file).arg("--trace").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "--trace without --out is a usage error");
}

#[test]
fn out_refuses_a_directory_that_is_not_empty_without_force() {
    let dir = scratch("out_not_empty");
    let file = write_file(&dir, "exp.toml", "replications = 2\n");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    write_file(&out, "notes.txt", "mine");
    let run =
        |extra: &[&str]| bin().arg("run").arg(&file).arg("--out").arg(&out).args(extra).output();
    let o = run(&[]).unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not empty") && stderr.contains("--force"), "{stderr}");
    assert!(!out.join("manifest.json").exists(), "written although refused");
    let o = run(&["--force"]).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let wrote =
        format!("wrote {}/{{summary.csv, runs.csv, histograms/, manifest.json}}", out.display());
    assert!(stdout.contains(&wrote), "{stdout}");
    // --force replaces the directory whole: the files of the run, and nothing else.
    assert!(out.join("manifest.json").exists() && !out.join("notes.txt").exists());
    // With --json the listing goes to stderr: stdout stays one JSON document.
    let o = run(&["--force", "--json"]).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok());
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrote "));
}

#[test]
fn the_table_says_what_set_overrode_under_the_question() {
    let file = experiments_dir().join("default.toml");
    let o = bin()
        .args(["run", "--set", "replications=2", "--set", "cache.ttl=1h", "--jobs", "1"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[2].starts_with("question: "), "{text}");
    assert!(
        lines[3].starts_with("overridden: --set replications=2 --set cache.ttl=1h (the question"),
        "{text}"
    );
    // Headings: no `429s`, the pooled latencies named as in summary.csv, units in headings.
    assert!(!text.contains("429s"), "{text}");
    assert!(text.contains("launch_wait_pooled") && text.contains("completion_pooled"), "{text}");
    assert!(text.contains("rate-limited") && text.contains("cost (USD)"), "{text}");
}

#[test]
fn tune_takes_strategy_qualified_keys_and_suggests_on_a_typo() {
    let file = experiments_dir().join("default.toml");
    let tune = |param: &str| {
        bin()
            .args(["tune", "--param", param, "--range", "1s,5s", "--refine", "0", "--jobs", "1"])
            .args(["--set", "replications=4", "--json"])
            .arg(&file)
            .output()
            .unwrap()
    };
    for param in ["max_wait", "wait_first.max_wait", "strategy.wait_first.max_wait"] {
        let o = tune(param);
        assert_eq!(o.status.code(), Some(0), "{param}: {}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["strategy"].as_str().unwrap().starts_with("wait_first"), "{param}: {v}");
    }
    for (typo, meant) in [("wait_first.max_wiat", "wait_first.max_wait"), ("max_wiat", "max_wait")]
    {
        let o = tune(typo);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("did you mean `{meant}`?")), "{stderr}");
    }
}

#[test]
fn replay_what_if_before_the_trace_does_not_swallow_it() {
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mooncake/conversation_trace.jsonl");
    let replay = |args: &[&str]| {
        let mut c = bin();
        c.arg("replay");
        for a in args {
            c.arg(if *a == "TRACE" { trace.as_os_str() } else { std::ffi::OsStr::new(a) });
        }
        let o = c.arg("--json").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_array().map(|a| a.len()).unwrap_or(0)
    };
    assert_eq!(replay(&["--what-if", "TRACE"]), 3, "5m, 1h and none");
    assert_eq!(replay(&["TRACE", "--what-if"]), 3);
    let choice = "cache.capacity_tokens=100000";
    assert_eq!(replay(&["TRACE", "--what-if", choice]), 4, "the old form");
    assert_eq!(replay(&["--what-if", choice, "TRACE"]), 4, "the old form, trace last");
    assert_eq!(replay(&["TRACE", &format!("--what-if={choice}")]), 4);
}

#[test]
fn completions_and_man_pages_are_generated() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = bin().args(["completions", shell]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&o.stdout);
        assert!(script.contains("prefixsim") && script.contains("what-if"), "{shell}: {script}");
    }
    let o = bin().arg("man").output().unwrap();
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH prefixsim"), "{page}");
    assert!(page.contains(".SH EXAMPLES") && page.contains("prefixsim scenarios"), "{page}");
    let dir = scratch("man");
    let o = bin().args(["man", "--out"]).arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_to_string(dir.join("prefixsim-run.1")).unwrap();
    assert!(run.contains(".TH prefixsim-run") && run.contains("\\-\\-set"), "{run}");
    assert!(run.contains("prefixsim run experiments/default.toml"), "{run}");
}

mod props {
    use prefixsim::config::{self, Quantity, Release, Strategy as Launch};
    use prefixsim::config::{dist_label, parse_dist};
    use prefixsim::dist::Dist;
    use proptest::prelude::*;

    fn strategy() -> impl Strategy<Value = Launch> {
        let us = 0u64..10_000_000_000;
        prop_oneof![
            Just(Launch::Eager),
            Just(Launch::Sequential),
            Just(Launch::Prewarm),
            (us.clone(), any::<bool>()).prop_map(|(max_wait_us, timer)| Launch::WaitFirst {
                max_wait_us,
                release: if timer { Release::Timer } else { Release::OnReady }
            }),
            us.prop_map(|interval_us| Launch::Stagger { interval_us }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn strategy_labels_round_trip(s in strategy()) {
            let label = config::strategy_label(&s);
            prop_assert_eq!(config::parse_strategy(&label), Ok(s), "{}", label);
        }

        #[test]
        fn duration_dist_labels_round_trip(a in 0u64..100_000_000_000, b in 0u64..1_000_000_000) {
            for d in [Dist::Const(a as f64), Dist::Uniform { low: a as f64, high: (a + b) as f64 },
                      Dist::Normal { mean: a as f64, sd: b as f64 }, Dist::Exp { mean: b as f64 },
                      Dist::Empirical(vec![a as f64, b as f64])] {
                let label = dist_label(&d, Quantity::Duration);
                prop_assert_eq!(parse_dist(&label, Quantity::Duration), Ok(d), "{}", label);
            }
        }

        #[test]
        fn number_dist_labels_round_trip(a in 0.0f64..1e9, b in 0.0f64..1e9) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            for d in [Dist::Const(a), Dist::Uniform { low: lo, high: hi }, Dist::Normal { mean: a, sd: b },
                      Dist::LogNormal { median: lo.max(1e-3), p90: hi.max(1e-3) }] {
                let label = dist_label(&d, Quantity::Number);
                prop_assert_eq!(parse_dist(&label, Quantity::Number), Ok(d), "{}", label);
            }
        }
    }
}

/// `empirical(file=...)` is read relative to the experiment file, at resolve time.
#[test]
fn empirical_files_are_relative_to_the_experiment() {
    let dir = scratch("empirical");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    write_file(&dir, "data/tools.txt", "# tool latencies\n1s, 2s\n500ms\n");
    let file = write_file(
        &dir,
        "e.toml",
        "[workload]\ntool_latency = \"empirical(file=data/tools.txt)\"\n",
    );
    let (_, e) = config::load(&file, &[]).unwrap();
    assert_eq!(e.workload.tool_latency_us, prefixsim::dist::Dist::Empirical(vec![1e6, 2e6, 5e5]));
    let bad = write_file(
        &dir,
        "bad.toml",
        "[workload]\ntool_latency = \"empirical(file=data/none.txt)\"\n",
    );
    let err = config::load(&bad, &[]).unwrap_err().to_string();
    assert!(err.contains("workload.tool_latency") && err.contains("none.txt"), "{err}");
}
