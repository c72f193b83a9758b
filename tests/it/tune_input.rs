//! Input that `tune`, a `[sweep]` and the experiment parser refuse in one line: an objective
//! whose lambda would overflow or leave the result files' range, a parameter that models
//! nothing, an objective no candidate meets (no tune.json), `name` / `question` as sweep axes,
//! TOML syntax errors, and echoes of very long user input.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{bin, scratch};

fn default_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/default.toml")
}

fn tune(args: &[&str]) -> Output {
    bin()
        .args(["tune", "--refine", "0", "--jobs", "1", "--set", "replications=4"])
        .args(args)
        .arg(default_file())
        .output()
        .unwrap()
}

/// The one line of an input error (exit 2).
fn refusal(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn lambda_is_bounded_so_the_objective_stays_finite_and_readable() {
    for objective in ["cost+1e308*p95_makespan", "cost+1e40*p95_makespan", "cost+-1*p95_makespan"] {
        let e = refusal(&tune(&["--param", "max_wait", "--objective", objective]));
        assert!(e.contains("out of range: 0 to 1e6 USD per second"), "{objective}: {e}");
    }
    let args =
        ["--param", "max_wait", "--range", "0s,2s", "--objective", "cost+lambda*p95_makespan"];
    for lambda in ["NaN", "inf", "1e7"] {
        let e = refusal(&tune(&[&args[..], &["--lambda", lambda]].concat()));
        assert!(e.contains("lambda = "), "{lambda}: {e}");
    }
    // At the bound the objective is written, and plot and report read it back.
    let dir = scratch("tune_input", "lambda_max");
    let out = dir.join("t");
    let mut cmd = bin();
    cmd.args(["tune", "--range", "0s,2s", "--refine", "0", "--jobs", "1"]);
    cmd.args(["--set", "replications=4", "--param", "max_wait"]);
    cmd.args(["--objective", "cost+1e6*p95_makespan", "--out"]).arg(&out).arg(default_file());
    assert_eq!(cmd.output().unwrap().status.code(), Some(0));
    let report = bin().arg("report").arg(&out).output().unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
}

#[test]
fn only_keys_of_the_model_are_parameters() {
    for param in ["limits.max_requests", "limits.horizon", "seed", "replications", "name"] {
        let e = refusal(&tune(&["--param", param, "--range", "1,2"]));
        assert!(e.contains(&format!("--param {param}: not a parameter of the model")), "{e}");
    }
    // A model key is still a parameter.
    let o = tune(&["--param", "workload.concurrency", "--range", "1,2"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn no_tune_json_without_an_answer() {
    let dir = scratch("tune_input", "infeasible");
    let out = dir.join("t");
    let mut cmd = bin();
    cmd.args(["tune", "--range", "0s,2s", "--refine", "0", "--jobs", "1"]);
    cmd.args(["--set", "replications=4", "--param", "max_wait"]);
    cmd.args(["--objective", "cost_subject_to_p99_completion<=1ms", "--out"]).arg(&out);
    let o = cmd.arg(default_file()).output().unwrap();
    let e = refusal(&o);
    assert!(e.contains("no value in the range meets the objective"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("recommended: none"));
    assert!(!out.join("tune.json").exists(), "a tune.json with no recommendation");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn name_and_question_are_not_sweep_axes() {
    let dir = scratch("tune_input", "axes");
    for key in ["name", "question"] {
        let file =
            write(&dir, &format!("{key}.toml"), &format!("[sweep]\n{key} = [\"a\", \"b\"]\n"));
        let o = bin().arg("sweep").arg(&file).arg("--out").arg(dir.join(key)).output().unwrap();
        let e = refusal(&o);
        assert!(e.contains(&format!("[sweep] {key}: not an axis")), "{e}");
    }
}

#[test]
fn toml_syntax_errors_are_one_line_with_line_and_column() {
    let dir = scratch("tune_input", "syntax");
    for (text, want) in [
        (
            "name = \"x\"\n[workload\nagents = 3\n",
            "line 2, column 10: unclosed table, expected `]`",
        ),
        ("name = \"x\"\nagents = = 3\n", "line 2, column 10: extra `=`"),
        ("[sweep]\nworkload.agents = [1,\n", "line 2, column 22: unclosed array"),
    ] {
        let file = write(&dir, "bad.toml", text);
        let e = refusal(&bin().arg("run").arg(&file).output().unwrap());
        assert!(e.contains(&format!("bad.toml: {want}")), "{e}");
    }
}

#[test]
fn long_user_input_is_echoed_capped() {
    // An argument is at most 128 KiB (Linux's MAX_ARG_STRLEN).
    let key = format!("workload.{}", "b".repeat(100_000));
    let o = bin().arg("run").arg(default_file()).arg("--set").arg(format!("{key}=1")).output();
    let e = refusal(&o.unwrap());
    assert!(e.len() < 1000, "a {} byte message", e.len());
    assert!(e.contains(&format!("... ({} bytes)", key.len())), "{e}");
    let o = tune(&["--param", "max_wait", "--objective", &"x".repeat(100_000)]);
    assert!(refusal(&o).len() < 1000);
}
