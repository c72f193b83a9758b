//! Units stated once and names shared: `--set` takes the strategy parameters' short names that
//! `tune --param` and `[sweep]` take, an unknown key suggests the closest known one, and the
//! tables state one time unit per group of columns, once, in the heading.

use std::path::Path;
use std::process::Output;

use crate::common::bin;

fn default_run(sets: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = bin();
    cmd.arg("run").arg(root.join("experiments/default.toml"));
    cmd.args(["--set", "replications=3", "--set", "workload.agents=4"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.output().unwrap()
}

fn stdout_ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The output without its `overridden: --set ...` line (which echoes the spelling).
fn results(out: &str) -> String {
    out.lines().filter(|l| !l.starts_with("overridden: ")).collect::<Vec<_>>().join("\n")
}

fn error_2(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn set_takes_the_short_names_tune_takes() {
    let short = results(&stdout_ok(&default_run(&["max_wait=3s"])));
    assert!(short.contains("wait_first(max_wait=3s)"), "{short}");
    // The file's two caps (2s, 5s) both become 3s, run once.
    assert_eq!(short.matches("\nwait_first(max_wait=3s) ").count(), 1, "{short}");
    assert!(!short.contains("wait_first(max_wait=2s)"), "{short}");
    for long in ["wait_first.max_wait=3s", "strategy.wait_first.max_wait=3s"] {
        assert_eq!(results(&stdout_ok(&default_run(&[long]))), short, "--set {long}");
    }
    let stagger = results(&stdout_ok(&default_run(&["interval=2s"])));
    assert!(stagger.contains("stagger(interval=2s)"), "{stagger}");
    assert_eq!(results(&stdout_ok(&default_run(&["stagger.interval=2s"]))), stagger);
}

#[test]
fn set_of_a_strategy_parameter_no_strategy_has_names_the_strategies() {
    let err = error_2(&default_run(&["strategies=[\"eager\"]", "max_wait=3s"]));
    assert!(err.contains("no `wait_first` strategy in `strategies` (eager)"), "{err}");
}

#[test]
fn an_unknown_key_suggests_the_closest_known_one() {
    for (set, want) in [
        ("max_wiat=3s", "did you mean `max_wait`?"),
        ("ttl=1h", "did you mean `cache.ttl`?"),
        ("workload.agentz=3", "did you mean `workload.agents`?"),
        ("workload.horizon=1h", "did you mean `limits.horizon`?"),
    ] {
        let err = error_2(&default_run(&[set]));
        assert!(err.contains(want), "--set {set}: {err}");
    }
}

/// The two heading lines of the comparison table `run` prints.
fn headings(stdout: &str) -> (String, String) {
    let lines: Vec<&str> = stdout.lines().collect();
    let rule = lines.iter().position(|l| l.starts_with("-----")).expect("a table rule");
    (lines[rule - 2].to_string(), lines[rule - 1].to_string())
}

#[test]
fn each_group_of_time_columns_states_its_unit_once() {
    let out = stdout_ok(&default_run(&[]));
    let (groups, names) = headings(&out);
    for unit in ["(ms)", "(s)", "(min)"] {
        assert!(!names.contains(unit), "a unit in the sub-headings: {names}");
    }
    for group in ["launch_wait_pooled (", "completion_pooled (", "makespan ("] {
        assert_eq!(groups.matches(group).count(), 1, "{group} in {groups}");
    }
    assert!(groups.contains("redundant") && names.contains("entries"), "{groups}\n{names}");
    assert!(out.contains("redundant entries: cache entries (not agents)"), "{out}");
}
