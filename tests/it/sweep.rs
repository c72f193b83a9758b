//! `sweep`, `merge`, `tune` through the real binary: byte-identical outputs across --jobs,
//! shards + merge, and kill -9 + --resume; a sweep point equals a standalone run; bad specs
//! exit 2 and write nothing; `tune` finds a closed-form optimum.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::common::wait_for_records;

const BIN: &str = env!("CARGO_BIN_EXE_prefixsim");

/// 6 points (2 x 3), 2 strategies, 3 replications; TTFT of the first writer 0.5 s + 5100/20000.
const TINY: &str = r#"# tiny sweep for tests
name = "tiny"
seed = 1
replications = 3
strategies = ["eager", "wait_first(max_wait=5s)"]
[workload]
agents = 3
parent_tokens = 5000
turns = "const(1)"
[sweep]
"workload.agents" = [2, 4]
max_wait = "0s..2s step 1s"
"#;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("prefixsim-it-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Every file under `dir` and `dir/histograms` (relative name -> bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for sub in ["", "histograms"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                let name = format!("{sub}/{}", p.file_name().unwrap().to_string_lossy());
                out.insert(name, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn jobs_shards_and_merge_give_identical_bytes() {
    let d = scratch("jobs");
    let f = write_file(&d, "tiny.toml", TINY);
    let (one, two) = (d.join("one"), d.join("two"));
    ok(&["sweep", s(&f), "--jobs", "1", "--out", s(&one)]);
    ok(&["sweep", s(&f), "--jobs", "2", "--out", s(&two)]);
    let reference = files(&one);
    assert_eq!(reference.len(), 5, "journal, manifest, 2 CSVs, one histogram log");
    let log = String::from_utf8(reference["histograms/latency.hlog"].clone()).unwrap();
    assert_eq!(log.lines().filter(|l| l.starts_with("Tag=")).count(), 6 * 2 * 3);
    assert_eq!(files(&two), reference, "--jobs 2 differs from --jobs 1");

    // Three shards as three concurrent processes, then merge.
    let shards: Vec<PathBuf> = (0..3).map(|k| d.join(format!("shard{k}"))).collect();
    let children: Vec<_> = shards
        .iter()
        .enumerate()
        .map(|(k, dir)| {
            Command::new(BIN)
                .args(["sweep", s(&f), "--shard", &format!("{k}/3"), "--out", s(dir)])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let merged = d.join("merged");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|p| s(p)));
    args.extend(["--out", s(&merged)]);
    ok(&args);
    assert_eq!(files(&merged), reference, "3 shards merged differ from one run");

    // Missing and overlapping shards, and shards of another experiment: exit 2, clear message.
    let o = run(&["merge", s(&shards[0]), s(&shards[1]), "--out", s(&d.join("m2"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing shards: 2/3"));
    let o = run(&["merge", s(&shards[0]), s(&shards[0]), s(&shards[2]), "--out", s(&d.join("m3"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("overlapping"));
    let g = write_file(&d, "other.toml", &TINY.replace("seed = 1", "seed = 2"));
    let other = d.join("other1");
    ok(&["sweep", s(&g), "--shard", "1/3", "--out", s(&other)]);
    let o = run(&["merge", s(&shards[0]), s(&other), s(&shards[2]), "--out", s(&d.join("m4"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("different experiments"));
    std::fs::remove_dir_all(&d).unwrap();
}

/// 40 points of 2 replications; the sweeps to interrupt sleep 25 ms per point
/// (`PREFIXSIM_SWEEP_THROTTLE_MS`, wall clock only), so they run >= 0.5 s on any machine.
const LONG: &str = r#"# kill test
name = "killme"
seed = 3
replications = 2
strategies = ["eager", "wait_first(max_wait=1s)"]
[workload]
agents = 6
parent_tokens = 5000
turns = "const(2)"
[sweep]
"workload.parent_tokens" = "1000..40000 step 1000"
"#;

#[test]
fn killed_part_way_then_resumed_equals_uninterrupted() {
    let d = scratch("kill");
    let f = write_file(&d, "long.toml", LONG);
    let (killed, reference) = (d.join("killed"), d.join("reference"));
    let mut child = Command::new(BIN)
        .args(["sweep", s(&f), "--jobs", "2", "--out", s(&killed)])
        .env("PREFIXSIM_SWEEP_THROTTLE_MS", "25")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the journal holds the header and at least two points, then SIGKILL.
    let journal = killed.join("sweep.journal");
    wait_for_records(&journal, 2);
    let killed_ok = Command::new("kill").args(["-9", &child.id().to_string()]).status().unwrap();
    assert!(killed_ok.success());
    child.wait().unwrap();
    assert!(!killed.join("manifest.json").exists(), "the sweep finished before the kill");
    let lines = std::fs::read(&journal).unwrap().iter().filter(|&&c| c == b'\n').count();
    assert!(lines < 41, "the sweep finished before the kill ({lines} journal lines)");

    let out = ok(&["sweep", s(&f), "--jobs", "2", "--resume", "--json", "--out", s(&killed)]);
    let rep: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(rep["resumed_from"].as_u64().unwrap() >= 2, "{rep}");
    assert_eq!(rep["complete"], true);
    ok(&["sweep", s(&f), "--jobs", "1", "--out", s(&reference)]);
    assert_eq!(files(&killed), files(&reference), "resumed != uninterrupted");

    // Ctrl-C (SIGINT): running points finish and are saved, the exit names the resume command.
    let interrupted = d.join("interrupted");
    let child = Command::new(BIN)
        .args(["sweep", s(&f), "--jobs", "2", "--out", s(&interrupted)])
        .env("PREFIXSIM_SWEEP_THROTTLE_MS", "25")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_records(&interrupted.join("sweep.journal"), 2);
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted") && err.contains("--resume"), "{err}");
    ok(&["sweep", s(&f), "--resume", "--out", s(&interrupted)]);
    assert_eq!(files(&interrupted), files(&reference), "interrupted + resumed != uninterrupted");

    // A resume against another experiment is refused (exit 2) and leaves the journal alone.
    let g = write_file(&d, "other.toml", &LONG.replace("seed = 3", "seed = 4"));
    let before = std::fs::read(&journal).unwrap();
    let o = run(&["sweep", s(&g), "--resume", "--out", s(&killed)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("different experiment"));
    assert_eq!(std::fs::read(&journal).unwrap(), before);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_sweep_point_equals_a_run_of_that_point() {
    use prefixsim::results::{self, Aggregate, SummaryRow};
    let d = scratch("point");
    let f = write_file(&d, "tiny.toml", TINY);
    let out = d.join("out");
    ok(&["sweep", s(&f), "--out", s(&out)]);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    // Point 4 is workload.agents = 4, max_wait = 1s (the second axis varies fastest).
    let sweep_rows: Vec<String> = summary
        .lines()
        .filter(|l| l.starts_with("4,4,1s,1,"))
        // After point, agents, max_wait and its seconds column (`max_wait_s`).
        .map(|l| l.splitn(5, ',').nth(4).unwrap().to_string())
        .collect();
    assert_eq!(sweep_rows.len(), 2);
    // The same experiment run on its own, as `run --out` does (point 0, no axes).
    let sets = ["workload.agents=4".to_string()];
    let (mut table, _) = prefixsim::config::load(&f, &sets).unwrap();
    table.remove("sweep");
    let strategies = toml::Value::Array(vec!["eager".into(), "wait_first(max_wait=1s)".into()]);
    table.insert("strategies".into(), strategies);
    let exp = prefixsim::config::resolve(&table, "x").unwrap();
    for (s, want) in exp.strategies.iter().zip(&sweep_rows) {
        let mut agg = Aggregate::new();
        for r in 0..exp.replications {
            agg.add(&crate::model::simulate(&exp, s, r).unwrap());
        }
        let label = prefixsim::config::strategy_label(s);
        let row = SummaryRow::from_aggregate(0, &[], &label, &agg);
        let line = results::summary_line(&row);
        assert_eq!(line.split_once(',').unwrap().1, want);
    }
    // And `prefixsim run --out` of that point writes the same rows and histograms.
    let run_dir = d.join("run");
    ok(&[
        "run",
        s(&f),
        "--set",
        "workload.agents=4",
        "--set",
        r#"strategies=["eager","wait_first(max_wait=1s)"]"#,
        "--out",
        s(&run_dir),
    ]);
    let run_summary = std::fs::read_to_string(run_dir.join("summary.csv")).unwrap();
    let run_rows: Vec<String> =
        run_summary.lines().skip(1).map(|l| l.split_once(',').unwrap().1.to_string()).collect();
    assert_eq!(run_rows, sweep_rows);
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let sweep_runs: Vec<&str> =
        runs.lines().filter(|l| l.starts_with("4,4,1s,1,")).map(|l| &l[9..]).collect();
    let run_runs = std::fs::read_to_string(run_dir.join("runs.csv")).unwrap();
    let run_runs: Vec<&str> = run_runs.lines().skip(1).map(|l| &l[2..]).collect();
    assert_eq!(run_runs, sweep_runs);
    // The point's intervals are the run's, tagged with the point.
    let intervals = |dir: &Path, point: &str| -> Vec<String> {
        let log = std::fs::read_to_string(dir.join("histograms/latency.hlog")).unwrap();
        log.lines()
            .filter_map(|l| l.strip_prefix(&format!("Tag=p{point}_")))
            .map(String::from)
            .collect()
    };
    let sweep_intervals = intervals(&out, "00004");
    assert_eq!(sweep_intervals.len(), 2 * 3);
    assert_eq!(sweep_intervals, intervals(&run_dir, "00000"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_specs_exit_2_name_the_problem_and_write_nothing() {
    let d = scratch("bad");
    let head = TINY.split("[sweep]").next().unwrap();
    let cases = [
        ("\"workload.agents\" = [2, 3]\n\"workload.agentz\" = [1, 2]", "[sweep] workload.agentz = 1: unknown key"),
        ("\"workload.agents\" = \"8..2 step 1\"", "empty"),
        ("\"workload.agents\" = \"1..8 step 0\"", "step of zero"),
        ("zip = [\"workload.agents\", \"max_wait\"]\n\"workload.agents\" = [1, 2]\nmax_wait = [\"1s\"]", "same length"),
        ("\"workload.agents\" = []", "empty list"),
        ("max_wait = [\"fast\"]", "max_wait = fast"),
    ];
    for (i, (spec, want)) in cases.iter().enumerate() {
        let f = write_file(&d, &format!("bad{i}.toml"), &format!("{head}[sweep]\n{spec}\n"));
        let out = d.join(format!("out{i}"));
        let o = run(&["sweep", s(&f), "--out", s(&out)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(want), "{spec}: `{err}` does not name `{want}`");
        assert!(!out.exists(), "{spec}: wrote {}", out.display());
    }
    let f = write_file(&d, "ok.toml", TINY);
    for shard in ["3/3", "1/0", "x"] {
        let o = run(&["sweep", s(&f), "--shard", shard, "--out", s(&d.join("o"))]);
        assert_eq!(o.status.code(), Some(2), "--shard {shard}");
        assert!(!d.join("o").exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A bad value is refused by every shard, also one none of whose points has it, with the same
/// message and exit code 2 before anything is written: no shard succeeds while another fails.
#[test]
fn every_shard_refuses_a_bad_value_the_same_way() {
    let d = scratch("bad-shards");
    let head = TINY.split("[sweep]").next().unwrap();
    // 9 points each; the bad value is in points 6-8 (agents = 0) or 2, 5, 8 (max_wait).
    let specs = [
        "\"workload.agents\" = [2, 4, 0]\nmax_wait = \"0s..2s step 1s\"",
        "\"workload.agents\" = [2, 3, 4]\nmax_wait = [\"0s\", \"1s\", \"fast\"]",
    ];
    for (i, spec) in specs.iter().enumerate() {
        let f = write_file(&d, &format!("bad{i}.toml"), &format!("{head}[sweep]\n{spec}\n"));
        let mut first: Option<String> = None;
        for (shard, force) in [("0/9", false), ("4/9", false), ("8/9", false), ("0/9", true)] {
            let out = d.join(format!("out{i}"));
            let mut args = vec!["sweep", s(&f), "--shard", shard, "--out", s(&out)];
            args.extend(force.then_some("--force"));
            let o = run(&args);
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert_eq!(o.status.code(), Some(2), "{spec} --shard {shard}: {err}");
            assert!(!out.exists(), "{spec} --shard {shard} wrote {}", out.display());
            match &first {
                None => first = Some(err),
                Some(e) => assert_eq!(&err, e, "{spec}: --shard {shard} says otherwise"),
            }
        }
        let first = first.unwrap();
        assert!(first.contains("[sweep] workload.agents = 0") || first.contains("max_wait = fast"));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Values that pass one at a time but not together (with a 150,000-token prefix, a 60,000-token
/// task puts the first request past the model's 200k window): every shard checks its own
/// points before running any, so the shard with that point exits 2 naming the point and its
/// values and writes nothing, with or without --force; a shard without it runs.
#[test]
fn a_combination_refused_together_stops_the_shards_that_run_it() {
    let d = scratch("combo");
    let f = write_file(&d, "combo.toml", super::common::REFUSED_TOGETHER);
    let want = "[sweep] point 3 (workload.subagent_tokens = 150000, workload.task_tokens = \
                60000): ";
    let mut errs = Vec::new();
    for args in [&["--shard", "1/2"][..], &["--shard", "1/2", "--force"], &[], &["--force"]] {
        let out = d.join("bad");
        let o = run(&[&["sweep", s(&f), "--out", s(&out)][..], args].concat());
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && err.contains("context window"), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
        errs.push(err);
    }
    assert!(errs.iter().all(|e| e == &errs[0]), "one message with and without --force: {errs:?}");
    let out = d.join("good");
    ok(&["sweep", s(&f), "--shard", "0/2", "--out", s(&out)]);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + 2, "points 0 and 2");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Closed form (const latencies, one turn, cold parent, anthropic policy, Sonnet 4.5 at
/// $3 / $15 per Mtok): the first writer's TTFT is 0.5 s + (50000 + 100) / 20000 tok/s = 3.005 s.
/// A cap W < 3.005 s releases the 3 held agents before the entry is ready: all 4 write
/// 50,100 tokens at 1.25x: 4 * 50100 * 3.75e-6 + 4 * 100 * 15e-6 = $0.7575 (as eager, W = 0).
/// W >= 3.005 s: agent 0 writes (0.187875), 3 agents read 50,000 at 0.1x and write 100:
/// 3 * (50000 * 0.3e-6 + 100 * 3.75e-6) = 0.046125; + output 0.006 = $0.24. Cost is flat above
/// 3.005 s and launch wait is 3.005 s for every W above it (on_ready release), so the
/// recommendation is the smallest candidate >= 3.005 s. Each refinement splits the interval
/// between the recommendation's neighbours (two steps wide) in 8, so the step shrinks 4x:
/// 1 s, 250 ms, 62.5 ms, 15.625 ms (rounded to 1 ms): after 3 rounds within 16 ms above.
const TUNE: &str = r#"# tune: closed form
name = "tune"
seed = 1
replications = 3
strategies = ["eager", "wait_first(max_wait=5s)"]
[workload]
agents = 4
parent_tokens = 50000
brief_tokens = 0
task_tokens = 100
turns = "const(1)"
output_tokens = "const(100)"
[latency]
overhead = "const(500ms)"
prefill_rate = "const(20000)"
cached_rate = "const(1000000)"
decode_rate = "const(50)"
ready_delay = "0s"
"#;

#[test]
fn tune_finds_the_closed_form_optimum() {
    let d = scratch("tune");
    let f = write_file(&d, "tune.toml", TUNE);
    // tune --out: a directory of its own (it must not exist or be empty).
    let res = d.join("res");
    let out = ok(&[
        "tune",
        s(&f),
        "--param",
        "max_wait",
        "--range",
        "0s..6s step 1s",
        "--refine",
        "3",
        "--json",
        "--out",
        s(&res),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["param"], "max_wait");
    assert_eq!(v["objective"], "cost");
    // The experiment's name and question travel with tune.json, and the report quotes it.
    assert_eq!(v["name"], "tune");
    assert_eq!(v["question"], "tune: closed form");
    ok(&["report", s(&res), "--out", s(&d.join("review.md"))]);
    let md = std::fs::read_to_string(d.join("review.md")).unwrap();
    assert!(md.contains("> tune: closed form"), "{md}");
    let rec = v["recommended"].as_f64().unwrap();
    assert!((3.005..=3.005 + 0.0161).contains(&rec), "recommended {rec}");
    assert_eq!(v["flat"], false);
    let cands = v["candidates"].as_array().unwrap();
    for c in cands {
        let (w, cost) = (c["value"].as_f64().unwrap(), c["cost_usd"].as_f64().unwrap());
        let want = if w >= 3.005 { 0.24 } else { 0.7575 };
        assert!((cost - want).abs() < 1e-9, "cap {w}: cost {cost}, closed form {want}");
        assert!((c["objective"].as_f64().unwrap() - cost).abs() < 1e-12);
        // The launch wait is the cap below the TTFT (histograms: 3 significant digits).
        let lw = c["launch_wait_pooled_p99_s"].as_f64().unwrap();
        assert!((lw - w.min(3.005)).abs() <= 0.0051, "cap {w}: launch wait {lw}");
        // A constant TTFT: the cap fires before the first token in every replication or none.
        let p = c["p_cap_before_first_token"].as_f64().unwrap();
        assert_eq!(p, if w >= 3.005 { 0.0 } else { 1.0 }, "cap {w}");
    }
    // No spread: p5 = p99 = 3.005 s, not a knife edge, and tune says how thin the margin is.
    let e = &v["hold_edge"];
    assert_eq!((e["ttft_p05_s"].as_f64(), e["ttft_p99_s"].as_f64()), (Some(3.005), Some(3.005)));
    assert_eq!(e["knife_edge"], false);
    assert!((e["margin_over_p99_s"].as_f64().unwrap() - (rec - 3.005)).abs() < 1e-9);
    let text = v["notes"].to_string();
    assert!(text.contains("3.005 s in every replication"), "{text}");
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains("saves nothing against 0s")),
        "{notes:?}"
    );
    assert_eq!(std::fs::read_to_string(res.join("tune.json")).unwrap(), out);

    // With a bound p99 launch wait <= 2 s, no cap reaches the cache: the best is the cheapest
    // feasible value, and every feasible value costs the same: the objective is flat; the tie
    // goes to the least launch wait, W = 0.
    let out = ok(&[
        "tune",
        s(&f),
        "--param",
        "max_wait",
        "--range",
        "0s..6s step 1s",
        "--objective",
        "cost_subject_to_p99_launch_wait<=2s",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["recommended"].as_f64(), Some(0.0));
    assert_eq!(v["flat"], true);
    let o = run(&[
        "tune",
        s(&f),
        "--param",
        "max_wait",
        "--range",
        "0s..6s step 1s",
        "--objective",
        "speed",
    ]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&d).unwrap();
}

/// 3 points of 3 replications that ask for the hold answer (`[report] answer = "hold_cap"`).
const HOLD: &str = r#"# a sweep with hold answers
name = "tiny-hold"
seed = 5
replications = 3
strategies = ["eager", "wait_first(max_wait=5s)"]
[workload]
kind = "fork"
agents = 3
parent_tokens = 5000
parent_warm = false
turns = "const(1)"
[sweep]
"workload.parent_tokens" = [5000, 60000, 150000]
[report]
answer = "hold_cap"
"#;

/// hold.csv: one row per point, the same bytes across --jobs and shards + merge, and each row
/// the answer `run --out` gives at that point (hold.json); without `answer = "hold_cap"` there
/// is no hold.csv.
#[test]
fn hold_csv_is_the_run_answer_per_point_and_the_same_across_jobs_and_shards() {
    let d = scratch("hold");
    let f = write_file(&d, "hold.toml", HOLD);
    let (one, two) = (d.join("one"), d.join("two"));
    ok(&["sweep", s(&f), "--jobs", "1", "--out", s(&one)]);
    ok(&["sweep", s(&f), "--jobs", "2", "--out", s(&two)]);
    let reference = files(&one);
    let hold = String::from_utf8(reference["/hold.csv"].clone()).unwrap();
    let mut lines = hold.lines();
    assert_eq!(
        lines.next().unwrap(),
        "point,workload.parent_tokens,strategy,cap_s,cap_lo_s,cap_hi_s,p_after_cap,\
         p_after_cap_draws,ttft_p50_s,ttft_p95_s,ttft_p99_s,draws,knife_edge"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 3, "{hold}");
    assert_eq!(files(&two), reference, "--jobs 2 differs from --jobs 1");
    let shards: Vec<PathBuf> = (0..2).map(|k| d.join(format!("shard{k}"))).collect();
    for (k, dir) in shards.iter().enumerate() {
        ok(&["sweep", s(&f), "--shard", &format!("{k}/2"), "--out", s(dir)]);
    }
    let merged = d.join("merged");
    ok(&["merge", s(&shards[0]), s(&shards[1]), "--out", s(&merged)]);
    assert_eq!(files(&merged), reference, "2 shards merged differ from one run");

    // Each row is what `run --out` at that point writes to hold.json.
    let results = prefixsim::results::Results::load(&one).unwrap();
    assert_eq!(results.hold_rows.len(), 3);
    for (point, size) in ["5000", "60000", "150000"].iter().enumerate() {
        let run_dir = d.join(format!("run{point}"));
        let set = format!("workload.parent_tokens={size}");
        ok(&["run", s(&f), "--set", &set, "--out", s(&run_dir)]);
        let json = std::fs::read_to_string(run_dir.join("hold.json")).unwrap();
        let h: serde_json::Value = serde_json::from_str(&json).unwrap();
        let row = results.hold_at(point as u32).unwrap();
        assert!(rows[point].starts_with(&format!("{point},{size},")), "{}", rows[point]);
        assert_eq!(row.cap_s, h["cap_s"].as_f64().unwrap(), "point {point}");
        assert_eq!(row.p_after_cap, h["p_after_cap"].as_f64().unwrap(), "point {point}");
        assert_eq!(row.ttft_p99_s, h["ttft_p99_s"].as_f64().unwrap(), "point {point}");
        assert_eq!(row.draws as u64, h["draws"].as_u64().unwrap(), "point {point}");
        assert_eq!(row.knife_edge, h["knife_edge"].as_bool().unwrap(), "point {point}");
        assert_eq!(&*row.strategy, h["strategy"].as_str().unwrap());
    }

    // No answer asked for: no hold.csv.
    let g =
        write_file(&d, "cost.toml", &HOLD.replace("answer = \"hold_cap\"", "answer = \"cost\""));
    let cost = d.join("cost");
    ok(&["sweep", s(&g), "--out", s(&cost)]);
    assert!(!cost.join("hold.csv").exists());
    std::fs::remove_dir_all(&d).unwrap();
}
