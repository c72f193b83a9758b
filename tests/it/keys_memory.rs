//! Memory, end to end: what the estimate that admits a run counts (the `--trace` timeline,
//! `empirical(file=...)` values), and what `--force` past the machine's memory gives: exit 1
//! and one line, never an allocation abort. The binary runs under an address-space limit
//! (`ulimit -v`), so the outcome does not depend on the machine's memory.

use std::process::Output;

use prefixsim::limits::{estimate_run_traced, run_size, Resource};
use prefixsim::Experiment;

use crate::common::{bin, scratch};

/// `prefixsim ARGS` under a 4 GB address-space limit.
fn limited(args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_prefixsim");
    let script = format!("ulimit -v 4000000; exec \"$0\" {}", args.join(" "));
    std::process::Command::new("sh").args(["-c", &script, exe]).output().expect("sh runs")
}

/// Exit 1 with one line saying memory ran out (and naming `names`), no abort's message.
fn assert_out_of_memory(out: &Output, names: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: ") && err.contains("memory ran out"), "{err}");
    assert!(err.contains(names), "{err}");
    assert!(!err.contains("memory allocation of"), "{err}");
}

#[test]
fn forced_agents_past_memory_exit_1_once_whatever_the_threads() {
    for jobs in ["1", "2"] {
        let out = limited(&[
            "run",
            "experiments/default.toml",
            "--set",
            "workload.agents=4294967295",
            "--set",
            "report.answer=cost",
            // Past the launch schedule's floor (1.2e6 h under stagger(1s)), which is refused
            // before memory is reached, under --force too.
            "--set",
            "limits.horizon=10000000h",
            "--force",
            "--jobs",
            jobs,
        ]);
        assert_out_of_memory(&out, "4294967295 agents");
    }
}

#[test]
fn forced_replications_past_memory_exit_1() {
    let out = limited(&[
        "run",
        "experiments/default.toml",
        "--set",
        "replications=4294967295",
        "--force",
        "--jobs",
        "2",
    ]);
    assert_out_of_memory(&out, "4294967295 replications");
}

/// 20,000 agents of the default: their trace (6 strategies x 280,000 requests) is above
/// 1 GiB, the run without it below.
const TRACED: [&str; 8] = [
    "--set",
    "workload.agents=20000",
    "--set",
    "workload.concurrency=20000",
    "--set",
    "replications=1",
    "--set",
    "limits.max_memory_mb=1024",
];

#[test]
fn the_trace_counts_in_the_memory_estimate_and_is_named() {
    let dir = scratch("keys_memory", "trace");
    let out_dir = dir.join("out");
    let out = bin()
        .args(["run", "experiments/default.toml", "--trace", "--out"])
        .arg(&out_dir)
        .args(TRACED)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("limits.max_memory_mb") && err.contains("--trace"), "{err}");
    assert!(err.contains("it comes mostly from --trace"), "{err}");
    assert!(!out_dir.exists(), "refused before --out is created");
    // The same run untraced fits.
    let exp = TRACED
        .iter()
        .skip(1)
        .step_by(2)
        .fold(Experiment::from_file("experiments/default.toml").unwrap(), |e, s| e.set(s).unwrap());
    let memory = |trace| {
        let est = estimate_run_traced(exp.config(), true, trace);
        est.parts.iter().find(|p| p.0 == Resource::Memory).map(|p| p.1).unwrap()
    };
    assert!(memory(false) < 1024.0 * 1024.0 * 1024.0, "{}", memory(false));
    let requests = 6.0 * run_size(exp.config()).requests;
    assert!(memory(true) - memory(false) >= requests * 975.0, "975 B a request measured");
}

#[test]
fn empirical_values_count_in_the_memory_estimate() {
    let dir = scratch("keys_memory", "empirical");
    let values: String = (0..100_000).map(|i| format!("{}\n", 1 + i % 20)).collect();
    std::fs::write(dir.join("turns.txt"), values).unwrap();
    let file = dir.join("exp.toml");
    std::fs::write(&file, "[workload]\nturns = \"empirical(file=turns.txt)\"\n").unwrap();
    let with = Experiment::from_file(&file).unwrap();
    let without = with.clone().set("workload.turns=\"uniform(1, 20)\"").unwrap();
    let (a, b) = (run_size(with.config()), run_size(without.config()));
    // 83 B a value measured (the spec's copies and a sampler's).
    assert!(a.memory_bytes - b.memory_bytes >= 100_000.0 * 83.0, "{a:?} {b:?}");
}
