//! Tests: the library API (`prefixsim::Experiment`, `run_sweep`, `TraceReplay`,
//! `calibrate_files`) gives what the command line gives, byte for byte where it prints the
//! same thing, whatever the number of threads; its errors are typed and say whose fault.

use std::path::{Path, PathBuf};

use prefixsim::errors::{LimitError, RunError};
use prefixsim::{Error, ExecOptions, Experiment, RunOptions, Shard, SweepOptions};

use super::common::bin;

fn scratch(name: &str) -> PathBuf {
    super::common::scratch("library", name)
}

const SMALL: &str = "replications = 6\n[workload]\nagents = 4\nturns = \"const(2)\"\n";

#[test]
fn run_gives_the_bytes_of_run_json_whatever_the_jobs() {
    let dir = scratch("json");
    let file = dir.join("small.toml");
    std::fs::write(&file, SMALL).unwrap();
    let out = bin().args(["run", "--json", "--jobs", "1"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let exp = Experiment::from_file(&file).unwrap();
    for jobs in [1, 3] {
        let s = exp.run(&RunOptions { jobs: Some(jobs), ..RunOptions::default() }).unwrap();
        assert_eq!(s.to_json(), String::from_utf8(out.stdout.clone()).unwrap(), "jobs {jobs}");
    }
}

#[test]
fn results_are_typed_per_strategy() {
    let s = Experiment::from_toml(SMALL).unwrap().run(&RunOptions::default()).unwrap();
    assert_eq!(s.results.len(), 5, "the default strategies");
    let eager = s.strategy("eager").unwrap();
    assert_eq!(eager.cost_relative_to_eager, Some(1.0));
    for r in &s.results {
        let l = r.launch_wait_pooled_s;
        assert!(l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max);
        assert!((0.0..=1.0).contains(&r.hit_rate), "{}", r.strategy);
        assert!(r.cost_usd > 0.0 && r.tokens.output > 0.0);
        assert_eq!(r.parent_requests, None, "only when the parent advances");
    }
}

#[test]
fn run_out_writes_the_files_of_run_out() {
    let dir = scratch("out");
    let file = dir.join("small.toml");
    std::fs::write(&file, SMALL).unwrap();
    let cli_dir = dir.join("cli");
    let st = bin().arg("run").arg(&file).arg("--out").arg(&cli_dir).output().unwrap();
    assert_eq!(st.status.code(), Some(0));
    let lib_dir = dir.join("lib");
    let opts = RunOptions { out: Some(lib_dir.clone()), ..RunOptions::default() };
    Experiment::from_file(&file).unwrap().run(&opts).unwrap();
    for f in ["manifest.json", "summary.csv", "runs.csv"] {
        let read = |d: &Path| std::fs::read(d.join(f)).unwrap();
        assert_eq!(read(&cli_dir), read(&lib_dir), "{f}");
    }
}

/// Values that pass one at a time but not together (a 150,000-token prompt with a 60,000-token
/// task is past claude-haiku-4.5's 200k window): the library, as the command, checks a shard's
/// points before running any, so the error names the point and nothing is written.
#[test]
fn a_library_sweep_checks_its_points_before_running_any() {
    let dir = scratch("sweep-combo");
    let text = super::common::REFUSED_TOGETHER;
    let sweep = Experiment::from_toml(text).unwrap().sweep().unwrap();
    let exec = ExecOptions { jobs: 1, progress: false, ctrl_c: false, throttle_ms: 0 };
    let opts = |dir: PathBuf, shard| SweepOptions { dir, shard, resume: false, force: false, exec };
    let bad = dir.join("bad");
    let e = prefixsim::run_sweep(&sweep, &opts(bad.clone(), None)).unwrap_err();
    assert!(e.is_input(), "{e}");
    let want = "point 3 (workload.subagent_tokens = 150000, workload.task_tokens = 60000)";
    assert!(e.to_string().contains(want) && e.to_string().contains("context window"), "{e}");
    assert!(!bad.exists(), "wrote {}", bad.display());
    // Shard 0/2 (points 0 and 2) does not hold point 3: it runs.
    let shard = Some("0/2".parse::<Shard>().unwrap());
    let done = prefixsim::run_sweep(&sweep, &opts(dir.join("good"), shard)).unwrap();
    assert!(done.complete && done.points_done == 2, "{done:?}");
}

#[test]
fn errors_say_whose_fault() {
    let e = Experiment::from_toml("[workload]\nagnets = 4\n").unwrap_err();
    assert!(matches!(e, Error::Config(_)) && e.is_input(), "{e}");
    let e = Experiment::default_experiment().set("cache.ttl=-5s").unwrap_err();
    assert!(e.is_input() && e.to_string().contains("cache.ttl"), "{e}");
    let big = Experiment::default_experiment().set("replications=1000000000").unwrap();
    let e = big.run(&RunOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Limits(LimitError::Above { .. })), "{e}");
    assert!(e.is_input());
    // A run that stops at its own event limit is the experiment's fault too.
    let tight = Experiment::from_toml(SMALL).unwrap().set("limits.max_events=3").unwrap();
    let e = tight.run(&RunOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Run(RunError::Input(_))), "{e}");
    assert!(e.to_string().contains("strategy eager, replication 0"), "{e}");
}

#[test]
fn a_sweep_through_the_library_writes_what_the_command_writes() {
    let dir = scratch("sweep");
    let text = format!("{SMALL}[sweep]\n\"workload.agents\" = [1, 3]\n");
    let file = dir.join("s.toml");
    std::fs::write(&file, &text).unwrap();
    let cli_dir = dir.join("cli");
    let st = bin().arg("sweep").arg(&file).arg("--out").arg(&cli_dir).output().unwrap();
    assert_eq!(st.status.code(), Some(0), "{}", String::from_utf8_lossy(&st.stderr));
    let sweep = Experiment::from_file(&file).unwrap().sweep().unwrap();
    assert_eq!(sweep.points(), 2);
    let lib_dir = dir.join("lib");
    let exec = ExecOptions { jobs: 2, progress: false, ctrl_c: false, throttle_ms: 0 };
    let opts =
        SweepOptions { dir: lib_dir.clone(), shard: None, resume: false, force: false, exec };
    let done = prefixsim::run_sweep(&sweep, &opts).unwrap();
    assert!(done.complete && done.points_done == 2);
    for f in ["manifest.json", "summary.csv", "runs.csv"] {
        let read = |d: &Path| std::fs::read(d.join(f)).unwrap();
        assert_eq!(read(&cli_dir), read(&lib_dir), "{f}");
    }
}

/// Every experiment file the repository ships (experiments/, benches/) reads and checks: a
/// change to the file format that refuses one of them fails here, not in a benchmark nobody
/// runs in CI.
#[test]
fn every_shipped_experiment_file_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["experiments", "benches", "benches/peer"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 8, "found only {files:?}");
    for path in files {
        if let Err(e) = Experiment::from_file(&path) {
            panic!("{}: {e}", path.display());
        }
    }
}

#[test]
fn a_rate_may_be_a_bare_number_as_the_docs_say() {
    let text = "[latency]\nprefill_rate = 9100\ncached_rate = 1000000.5\ndecode_rate = 50\n";
    Experiment::from_toml(text).expect("bare numbers for rates");
    let err = Experiment::from_toml("[latency]\noverhead = 5\n").unwrap_err().to_string();
    assert!(err.contains("a duration needs a unit"), "{err}");
}
