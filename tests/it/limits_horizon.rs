//! Limits predicted: a run whose launch schedule alone lasts past its horizon is refused
//! before it starts (exit 2, the reason in hours), under `run`, `sweep` and `tune`; a run
//! stopped at its horizon names times as durations, never microseconds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bin, scratch};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The output of `cmd`, killed after a generous safety net (a refusal takes no time; a run
/// that started would take minutes): never a timing assertion, only a guard against a hang.
fn output_within(mut cmd: Command) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            child.kill().unwrap();
            panic!("the command ran past the safety net: it started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn refused(out: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` missing: {err}");
    }
    assert!(!err.contains(" us"), "microseconds in: {err}");
    err
}

const HUNDRED_K: [&str; 6] = [
    "--set",
    "workload.agents=100000",
    "--set",
    "workload.concurrency=100000",
    "--set",
    "replications=10",
];

#[test]
fn the_100k_agent_example_is_refused_with_the_reason_in_hours() {
    let out_dir = scratch("limits_horizon", "run").join("out");
    let mut cmd = bin();
    cmd.arg("run").arg(root().join("experiments/default.toml")).args(HUNDRED_K);
    cmd.arg("--out").arg(&out_dir);
    let needles = [
        "stagger(interval=1s)",
        "the launch schedule alone lasts 27.8 h",
        "past limits.horizon = 24 h",
        "--set limits.horizon=29h",
    ];
    refused(&output_within(cmd), &needles);
    assert!(!out_dir.exists(), "a refused run created {}", out_dir.display());
    // --force lifts the work limits, not this: the run would stop at its horizon anyway.
    let mut cmd = bin();
    cmd.arg("run").arg(root().join("experiments/default.toml")).args(HUNDRED_K).arg("--force");
    refused(&output_within(cmd), &["27.8 h"]);
    // `check` refuses it with run's own line, running nothing.
    let mut cmd = bin();
    cmd.arg("check").arg(root().join("experiments/default.toml")).args(HUNDRED_K);
    refused(&output_within(cmd), &needles);
}

#[test]
fn a_horizon_within_the_schedule_runs() {
    // 10 agents 1 s apart: 9 s of launches, inside a horizon of 1 h.
    let mut cmd = bin();
    cmd.arg("run").arg(root().join("experiments/default.toml"));
    cmd.args(["--set", "replications=2", "--set", "limits.horizon=1h"]);
    let out = output_within(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

const STAGGER: &str = "[\"eager\", \"stagger(interval=1min)\"]";

/// A small experiment of `strategies` (TOML), then `extra`.
fn small(dir: &Path, strategies: &str, extra: &str) -> PathBuf {
    let f = dir.join("small.toml");
    let text = format!(
        "name = \"small\"\nseed = 5\nreplications = 2\nstrategies = {strategies}\n\
         [workload]\nagents = 3\nparent_tokens = 5000\nturns = \"const(2)\"\n{extra}"
    );
    std::fs::write(&f, text).unwrap();
    f
}

#[test]
fn a_sweep_point_past_its_horizon_is_refused_before_the_sweep_starts() {
    let d = scratch("limits_horizon", "sweep");
    let f = small(&d, STAGGER, "[sweep]\n\"workload.agents\" = [3, 2000]\n");
    let out_dir = d.join("out");
    for force in [false, true] {
        let mut cmd = bin();
        cmd.arg("sweep").arg(&f).arg("--out").arg(&out_dir);
        if force {
            cmd.arg("--force");
        }
        // 1999 launches a minute apart: 33.3 h.
        refused(&output_within(cmd), &["point 1", "33.3 h", "stagger(interval=1min)"]);
        assert!(!out_dir.exists(), "a refused sweep created {}", out_dir.display());
    }
}

#[test]
fn a_tune_candidate_past_its_horizon_is_refused() {
    let d = scratch("limits_horizon", "tune");
    let f = small(&d, STAGGER, "[limits]\nhorizon = \"3h\"\n");
    let mut cmd = bin();
    cmd.arg("tune").arg(&f).args(["--param", "interval", "--range", "1s,2h"]);
    let needles = ["interval = 2h", "the launch schedule alone lasts 4 h", "limits.horizon = 3 h"];
    refused(&output_within(cmd), &needles);
}

#[test]
fn a_run_stopped_at_its_horizon_names_durations() {
    let d = scratch("limits_horizon", "stopped");
    let f = small(&d, "[\"eager\"]", "");
    let mut cmd = bin();
    cmd.arg("run").arg(&f).args(["--set", "limits.horizon=3s"]);
    refused(&output_within(cmd), &["horizon reached", "past the horizon of 3s"]);
}
