//! Tests: experiment files, `--set`, labels, aggregation math, result files, and the `run`
//! command's exit codes (through the binary).

use std::path::{Path, PathBuf};

use prefixsim::config::{self, Experiment, Strategy};
use prefixsim::exec::{execute, write_out, StrategyOutcome};
use prefixsim::exec::{Description, ModelRunner, ResolveError, Runner};
use prefixsim::limits::RunError;
use prefixsim::metrics::{RunMetrics, SCALAR_NAMES};
use prefixsim::results::{self, Aggregate, TraceRow};

use super::common::bin;

/// `run --json`'s document for `out`, a run of `exp`.
fn json_text(exp: &Experiment, out: &[StrategyOutcome]) -> String {
    prefixsim::RunSummary::new(exp, out, prefixsim::model::notes(exp)).to_json()
}

/// `run`'s table for `out`, a run of `exp`.
fn table_text(exp: &Experiment, out: &[StrategyOutcome]) -> String {
    prefixsim::report::run::table_text(exp, out, &prefixsim::model::notes(exp), &[])
}

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

/// A stand-in simulator: replication r of strategy index i has cost (i + 1) * (r + 1) dollars,
/// launch waits of r ms for each of 3 agents, and makespan (r + 1) s.
struct Fake;

/// The fake's metrics for replication `r` of strategy number `i`.
fn fake_metrics(i: usize, r: u32) -> RunMetrics {
    let i = i as f64;
    let mut m = RunMetrics::new();
    m.cost_usd = (i + 1.0) * f64::from(r + 1);
    m.cost_uncached_usd = 10.0 * f64::from(r + 1);
    m.tokens.cache_read = 100 * u64::from(r);
    m.tokens.uncached = 100;
    m.requests = 3;
    m.agents = 3;
    m.makespan_us = u64::from(r + 1) * 1_000_000;
    m.parent_requests = u64::from(r) + 10;
    m.parent_cost_usd = 0.5 * f64::from(r + 1);
    for _ in 0..3 {
        m.launch_wait_us.record(u64::from(r) * 1_000 + 1);
        m.completion_us.record(u64::from(r + 1) * 1_000_000);
    }
    m
}

/// Resolves, describes and renders as the real simulator does; simulates `fake_metrics`.
impl Runner for Fake {
    type Exp = Experiment;
    fn resolve(&self, t: &toml::Table) -> Result<Experiment, ResolveError> {
        Ok(config::resolve(t, "fake")?)
    }
    fn describe(&self, e: &Experiment) -> Description {
        ModelRunner { origin: "fake".into() }.describe(e)
    }
    fn render(&self, e: &Experiment) -> String {
        config::render(e)
    }
    fn simulate_into(
        &self,
        _: &Experiment,
        s: usize,
        r: u32,
        out: &mut RunMetrics,
    ) -> Result<(), RunError> {
        *out = fake_metrics(s, r);
        Ok(())
    }
    fn trace(&self, e: &Experiment, s: usize) -> Result<Vec<TraceRow>, RunError> {
        Ok(vec![TraceRow {
            strategy: config::strategy_label(&e.strategies[s]),
            agent: 0,
            request: 0,
            segment: "prefill".into(),
            start_s: 0.0,
            end_s: 1.5,
            outcome: "miss".into(),
        }])
    }
}

fn small_experiment(reps: u32) -> Experiment {
    let t = config::parse_table(
        &format!("replications = {reps}\nstrategies = [\"eager\", \"wait_first(max_wait=5s, release=timer)\"]\n"),
        "small.toml",
    )
    .unwrap();
    config::resolve(&t, "small.toml").unwrap()
}

#[test]
fn aggregation_matches_hand_computation() {
    // Strategy 1 (index 1): costs 2, 4, 6, 8 over 4 replications. mean = 5; squared deviations
    // 9 + 1 + 1 + 9 = 20, sd = sqrt(20 / 3) = 2.581989; ci95 = t(0.975, 3) * sd / 2 with
    // t(0.975, 3) = 3.182446 (tables) -> 4.108535.
    let exp = small_experiment(4);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let cost = out[1].aggregate.stat("cost_usd");
    assert!((cost.mean - 5.0).abs() < 1e-12);
    assert!((cost.sd - (20.0f64 / 3.0).sqrt()).abs() < 1e-12);
    assert!((cost.ci95 - 3.182_446 * (20.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-5);
    // Hit rate of replication r: 100r / (100r + 100) -> 0, 1/2, 2/3, 3/4: mean 23/48.
    assert!((out[0].aggregate.stat("hit_rate").mean - 23.0 / 48.0).abs() < 1e-12);
    // Merged launch waits: 3 each of 1us, 1001us, 2001us, 3001us: p50 = 1001us (3 sig. digits),
    // max = 3001us (the histogram reports its bucket's highest equivalent value, 3001 here).
    let ladder = out[0].aggregate.ladder_of("launch_wait");
    assert!((ladder[0] - 0.001001).abs() < 2e-6, "{ladder:?}");
    assert!((ladder[4] - 0.003001).abs() < 3e-6, "{ladder:?}");
    assert_eq!(out[0].runs.len(), 4);
    assert_eq!(out[0].aggregate.histograms()[0].len(), 12);
}

#[test]
fn output_bytes_do_not_depend_on_jobs() {
    let exp = small_experiment(37);
    let one = execute(&Fake, &exp, 1, false).unwrap();
    let three = execute(&Fake, &exp, 3, false).unwrap();
    assert_eq!(json_text(&exp, &one), json_text(&exp, &three));
    assert_eq!(table_text(&exp, &one), table_text(&exp, &three));
    let (d1, d3) = (scratch("jobs1"), scratch("jobs3"));
    write_out(&d1, &exp, &one, None).unwrap();
    write_out(&d3, &exp, &three, None).unwrap();
    for f in ["manifest.json", "summary.csv", "runs.csv"] {
        assert_eq!(std::fs::read(d1.join(f)).unwrap(), std::fs::read(d3.join(f)).unwrap(), "{f}");
    }
}

#[test]
fn failures_report_the_first_failing_run() {
    struct Failing;
    impl Runner for Failing {
        type Exp = Experiment;
        fn resolve(&self, t: &toml::Table) -> Result<Experiment, ResolveError> {
            Fake.resolve(t)
        }
        fn describe(&self, e: &Experiment) -> Description {
            Fake.describe(e)
        }
        fn render(&self, e: &Experiment) -> String {
            Fake.render(e)
        }
        fn simulate_into(
            &self,
            e: &Experiment,
            s: usize,
            r: u32,
            out: &mut RunMetrics,
        ) -> Result<(), RunError> {
            if r >= 5 {
                Err(RunError::Internal(format!("boom {r}")))
            } else {
                Fake.simulate_into(e, s, r, out)
            }
        }
    }
    let exp = small_experiment(20);
    for jobs in [1, 4] {
        let e = execute(&Failing, &exp, jobs, false).err().unwrap().to_string();
        assert!(e.contains("eager, replication 5: boom 5"), "{e}");
    }
}

#[test]
fn result_files_have_the_documented_format() {
    let exp = small_experiment(3);
    let out = execute(&Fake, &exp, 2, false).unwrap();
    let dir = scratch("files");
    let trace: Vec<TraceRow> =
        (0..exp.strategies.len()).flat_map(|s| Fake.trace(&exp, s).unwrap()).collect();
    write_out(&dir, &exp, &out, Some(&trace)).unwrap();

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["kind"], "run");
    assert_eq!(manifest["seed"], 42);
    assert_eq!(manifest["points"], 1);
    assert_eq!(manifest["shard"], serde_json::Value::Null);
    assert_eq!(manifest["strategies"][1], "wait_first(max_wait=5s, release=timer)");
    let text = manifest["experiment"].as_str().unwrap();
    assert_eq!(manifest["content_hash"], results::content_hash(text));
    // The embedded experiment resolves back to the same experiment.
    assert_eq!(config::resolve(&config::parse_table(text, "m").unwrap(), "m").unwrap(), exp);

    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 3);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        &header[..8],
        [
            "point",
            "strategy",
            "replications",
            "strategy_family",
            "max_wait_s",
            "release",
            "interval_s",
            "cost_usd_mean"
        ]
    );
    assert_eq!(header.len(), 7 + 3 * SCALAR_NAMES.len() + 6 * 3);
    assert!(lines[0].ends_with("completion_pooled_p999_s,completion_min_s,completion_max_s"));
    // Costs of the timer strategy: 2, 4, 6 -> mean 4, sd 2, ci95 = 4.302653 * 2 / sqrt(3).
    assert!(
        lines[2].starts_with(
            "0,\"wait_first(max_wait=5s, release=timer)\",3,wait_first,5,timer,,4.000000,2.000000,4.968275,"
        ),
        "{}",
        lines[2]
    );

    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 2 * 3);
    assert!(runs.starts_with(
        "point,replication,strategy,strategy_family,max_wait_s,release,interval_s,cost_usd,cost_relative,"
    ));
    assert!(runs.lines().nth(2).unwrap().starts_with("0,1,eager,eager,,,,2.000000,0.100000,"));

    let log = std::fs::read_to_string(dir.join(results::HISTOGRAM_LOG)).unwrap();
    assert_eq!(log.lines().filter(|l| l.starts_with("Tag=")).count(), 2 * 3);
    let tag = "Tag=p00000_wait_first_max_wait_5s__release_timer__launch_wait,";
    let line = log.lines().find(|l| l.starts_with(tag)).unwrap();
    let decoded = results::decode_histogram(line.rsplit_once(',').unwrap().1).unwrap();
    assert_eq!(decoded, out[1].aggregate.histograms()[0]);

    let trace = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    assert_eq!(trace, "strategy,agent,request,segment,start_s,end_s,outcome\neager,0,0,prefill,0.000000,1.500000,miss\n\"wait_first(max_wait=5s, release=timer)\",0,0,prefill,0.000000,1.500000,miss\n");
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn json_has_the_documented_fields() {
    let exp = small_experiment(2);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text(&exp, &out)).unwrap();
    assert_eq!(v["seed"], 42);
    let r = &v["results"][1];
    assert_eq!(r["strategy"], "wait_first(max_wait=5s, release=timer)");
    // Costs 2 and 4 -> 3; eager's 1 and 2 -> 1.5; relative 2.
    assert_eq!(r["cost_usd"], 3.0);
    assert_eq!(r["cost_relative_to_eager"], 2.0);
    for k in ["hit_rate", "redundant_writes", "makespan_s", "rate_limited"] {
        assert!(r[k].is_number(), "{k}");
    }
    for k in ["cache_read", "cache_write", "uncached", "output"] {
        assert!(r["tokens"][k].is_number(), "{k}");
    }
    for k in ["p50", "p99", "max"] {
        assert!(r["launch_wait_pooled_s"][k].is_number(), "{k}");
    }
}

#[test]
fn the_parents_own_turns_are_reported_apart_only_when_it_advances() {
    // Frozen parent (the default): no parent field, no parent line.
    let mut exp = small_experiment(2);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text(&exp, &out)).unwrap();
    assert!(v["results"][0].get("parent_cost_usd").is_none());
    assert!(!table_text(&exp, &out).contains("parent"));
    // Advancing: replications 0 and 1 have 10 and 11 parent requests costing 0.5 and 1.0 USD:
    // means 10.5 and 0.75, beside (not in) cost_usd (eager: 1 and 2 -> 1.5).
    exp.workload.parent_turn_every_us = 60_000_000;
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text(&exp, &out)).unwrap();
    let r = &v["results"][0];
    assert_eq!(
        (r["parent_requests"].as_f64(), r["parent_cost_usd"].as_f64()),
        (Some(10.5), Some(0.75))
    );
    assert_eq!(r["cost_usd"], 1.5);
    let table = table_text(&exp, &out);
    assert!(
        table.contains(
            "the parent's own turns (not in the cost above): eager: 10.5 requests, $0.7500;"
        ),
        "{table}"
    );
}

#[test]
fn table_starts_with_the_seed_and_has_a_row_per_strategy() {
    let exp = small_experiment(2);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let t = table_text(&exp, &out);
    assert!(t.starts_with("seed: 42\n"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("eager ") && l.contains("100.0%")), "{t}");
    assert!(
        t.lines().any(
            |l| l.starts_with("wait_first(max_wait=5s, release=timer)") && l.contains("200.0%")
        ),
        "{t}"
    );
    assert!(t.contains("p99.9"));
}

#[test]
fn summary_line_quotes_and_formats_axes() {
    let agg = Aggregate::new();
    let axis =
        [toml::Value::Integer(16), toml::Value::Float(0.5), toml::Value::String("a,b".into())];
    let row = results::SummaryRow::from_aggregate(7, &axis, "eager", &agg);
    assert!(results::summary_line(&row).starts_with("7,16,0.500000,\"a,b\",eager,0,eager,,,,0."));
    let keys = ["workload.agents".to_string()];
    assert!(
        results::summary_header(&keys).starts_with("point,workload.agents,strategy,replications,")
    );
    assert_eq!(results::runs_header(&keys).split(',').count(), 8 + SCALAR_NAMES.len());
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

/// The whole table and JSON for a hand-made run, as committed snapshots (review them when the
/// layout changes on purpose).
#[test]
fn table_and_json_snapshots() {
    let exp = small_experiment(4);
    let out = execute(&Fake, &exp, 2, false).unwrap();
    insta::assert_snapshot!("run_table", table_text(&exp, &out));
    insta::assert_snapshot!("run_json", json_text(&exp, &out));
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
    assert!(out.join("manifest.json").exists() && out.join("notes.txt").exists());
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
