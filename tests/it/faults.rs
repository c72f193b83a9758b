//! The exit-code contract under faults (issue 15), through the binary: each test reproduces a
//! break a bad-input campaign found and checks the fix. Exit 2 is the input's fault and names
//! the file, key or field; nothing hangs (every child runs under a deadline), nothing aborts,
//! and nothing half-written passes for whole. docs/limits.md states the contract.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::common::{copy_dir, wait_for_records};

const BIN: &str = env!("CARGO_BIN_EXE_prefixsim");

/// A fresh scratch directory under the target dir.
fn scratch(name: &str) -> PathBuf {
    super::common::scratch("faults", name)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Wait for `child` at most `limit`; a child still running then is a hang (killed, failed).
fn wait_deadline(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Run the binary with `args` under a 60 s deadline.
fn run(args: &[&str]) -> Output {
    let child =
        Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_deadline(child, Duration::from_secs(60), &args.join(" "))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2, and stderr holds every needle.
fn check_2(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    assert_said_once(&err);
}

/// No message part is repeated: "X (os error 21): X (os error 21)" was the break.
fn assert_said_once(err: &str) {
    let parts: Vec<&str> = err.trim().split(": ").filter(|p| p.len() > 8).collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(!parts[i + 1..].contains(p), "`{p}` said twice in: {err}");
    }
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// A small experiment: 2 strategies x 3 replications, 3 agents.
const SMALL: &str = "# small\nname = \"small\"\nseed = 5\nreplications = 3\n\
strategies = [\"eager\", \"wait_first(max_wait=2s)\"]\n[workload]\nagents = 3\n\
parent_tokens = 5000\nturns = \"const(2)\"\n";

/// A results directory of a real `run --out` (with trace.csv).
fn run_dir(d: &Path) -> PathBuf {
    let f = write(d, "small.toml", SMALL);
    let out = d.join("run");
    ok(&["run", s(&f), "--out", s(&out), "--trace"]);
    out
}

/// A results directory of a real `tune --out`.
fn tune_dir(d: &Path) -> PathBuf {
    let f = write(d, "small.toml", SMALL);
    let out = d.join("tune");
    let args = ["tune", s(&f), "--param", "max_wait", "--range", "0s,1s,2s", "--refine", "0"];
    ok(&[&args[..], &["--out", s(&out)]].concat());
    out
}

// 1. A hang: plot on absurd values in tune.json; NaN, inf and negative CIs are accepted.

#[test]
fn absurd_values_in_results_are_refused_not_drawn_forever() {
    let d = scratch("absurd");
    let tune = tune_dir(&d);
    let text = std::fs::read_to_string(tune.join("tune.json")).unwrap();
    let fields = ["objective_ci95", "objective", "value", "launch_wait_pooled_p99_s"];
    for (i, (field, x)) in
        fields.iter().flat_map(|f| [(f, 1.7e308), (f, -1.7e308), (f, 1e308)]).enumerate()
    {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["candidates"][1][*field] = serde_json::json!(x);
        let dir = d.join(format!("t{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, "tune.json", &v.to_string());
        let o = run(&["plot", s(&dir), "--format", "svg"]);
        check_2(&o, &["tune.json", &format!("candidates[1].{field}")]);
        assert!(!dir.join("plots").exists(), "{field} = {x}: figures were written");
    }
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["candidates"][0]["objective_ci95"] = serde_json::json!(-0.5);
    let dir = d.join("negative");
    std::fs::create_dir_all(&dir).unwrap();
    write(&dir, "tune.json", &v.to_string());
    check_2(&run(&["report", s(&dir)]), &["tune.json", "objective_ci95", "negative"]);

    let runs = run_dir(&d);
    let summary = std::fs::read_to_string(runs.join("summary.csv")).unwrap();
    let header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for (name, bad) in
        [("cost_usd_mean", "NaN"), ("hit_rate_mean", "inf"), ("cost_usd_ci95", "-1.0")]
    {
        let mut lines: Vec<String> = summary.lines().map(String::from).collect();
        let mut cells: Vec<String> = lines[2].split(',').map(String::from).collect();
        // The label `wait_first(max_wait=2s)` holds no comma: cells line up with the header.
        cells[col(name)] = bad.into();
        lines[2] = cells.join(",");
        std::fs::write(runs.join("summary.csv"), lines.join("\n") + "\n").unwrap();
        check_2(&run(&["plot", s(&runs)]), &["summary.csv:3", name, bad]);
    }
}

/// The last guard: whatever reaches the figures, an axis range is finite and wide enough, so
/// drawing ends (plotters' tick search spun forever on an infinite width).
#[test]
fn axis_ranges_are_clamped_before_plotters_sees_them() {
    use prefixsim::{plot, results::Results};
    let d = scratch("clamp");
    let mut r = Results::load(&tune_dir(&d)).unwrap();
    let cands = r.tune.as_mut().unwrap()["candidates"].as_array_mut().unwrap();
    cands[0]["objective_ci95"] = serde_json::json!(1.7e308);
    cands[1]["objective"] = serde_json::json!(-1.7e308);
    cands[2]["launch_wait_pooled_p99_s"] = serde_json::json!(1e308);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let figs = plot::figures(&r);
        let svgs: Vec<usize> =
            figs.iter().map(|f| plot::render_svg(f).map(|s| s.len()).unwrap_or(0)).collect();
        let _ = tx.send(svgs);
    });
    let svgs = rx.recv_timeout(Duration::from_secs(60)).expect("drawing hung");
    // Objective, launch wait, the capped share, and the covered-prefix figure of a hold.
    assert_eq!(svgs.len(), 4, "every tune figure");
}

// 2. Allocation aborts: estimate work and memory first, refuse above the limits.

#[test]
fn work_that_cannot_finish_is_refused_before_it_starts() {
    let d = scratch("work");
    let f = write(&d, "small.toml", SMALL);
    let out = d.join("out");
    // A billion agents through 16 slots, or 1e10 turns with a tool call between two, would
    // also outlast the horizon (refused first, under --force too: tests/it/limits_horizon.rs):
    // as many slots as agents, and a horizon past the turns' floor, leave the work alone.
    for (set, key, room) in [
        (
            "workload.agents=1000000000",
            "workload.agents = 1000000000",
            "workload.concurrency=1000000000",
        ),
        ("replications=1000000000", "replications = 1000000000", "seed=5"),
        ("workload.turns=10000000000", "workload.turns", "limits.horizon=100000000h"),
    ] {
        let start = Instant::now();
        let o = run(&["run", s(&f), "--set", set, "--set", room, "--out", s(&out)]);
        check_2(&o, &["refusing to start: estimated", "limits.max_", key, "--force"]);
        assert!(start.elapsed() < Duration::from_secs(10), "{set}: not refused at once");
        assert!(!out.exists(), "{set}: --out was created");
    }
    let slots = ["--set", "workload.concurrency=1000000000"];
    let tune = ["tune", s(&f), "--param", "workload.agents", "--range", "1..1000000000 x2"];
    let tune = [&tune[..], &slots[..]].concat();
    check_2(&run(&tune), &["refusing to start", "workload.agents = 536870912"]);
    // A [limits] key lowers (or raises) a limit; --force lifts it.
    let o = run(&["run", s(&f), "--set", "limits.max_requests=10"]);
    check_2(&o, &["limits.max_requests = 10", "simulated requests"]);
    ok(&["run", s(&f), "--set", "limits.max_requests=10", "--force"]);
    check_2(&run(&["run", s(&f), "--set", "limits.max_requests=0"]), &["limits.max_requests"]);
    // Files without end are refused before they are read, not read until memory runs out.
    if Path::new("/dev/zero").exists() {
        let device = "is a character device, not a regular file";
        check_2(&run(&["run", "/dev/zero"]), &["/dev/zero", device]);
        check_2(&run(&["sweep", "/dev/zero"]), &["/dev/zero", device]);
        let o = run(&["run", s(&f), "--set", "workload.turns=empirical(file=/dev/zero)"]);
        check_2(&o, &["workload.turns", device]);
    }
}

// 3. Sweeps that cannot finish: huge grids, `sweep` as an axis key.

#[test]
fn sweeps_that_cannot_finish_are_refused() {
    let d = scratch("grids");
    let head = SMALL;
    let cases = [
        (
            "\"workload.agents\" = \"1..1000 step 1\"\n\"workload.parent_tokens\" = \"1..1000 step 1\"\n\
             \"workload.task_tokens\" = \"1..1000 step 1\"\n",
            vec!["1.00e9 points", "limits.max_points", "1000 x 1000 x 1000"],
        ),
        ("\"sweep\" = \"1..1e18 x1.0001\"\n", vec!["[sweep] sweep", "changes no result"]),
        ("\"sweep.x\" = [1, 2]\n", vec!["[sweep] sweep.x", "not an axis"]),
        ("\"limits.max_points\" = [1, 2]\n", vec!["limits.max_points", "not an axis"]),
    ];
    for (i, (spec, needles)) in cases.iter().enumerate() {
        let f = write(&d, &format!("g{i}.toml"), &format!("{head}[sweep]\n{spec}"));
        let out = d.join(format!("out{i}"));
        let start = Instant::now();
        check_2(&run(&["sweep", s(&f), "--out", s(&out)]), needles);
        assert!(start.elapsed() < Duration::from_secs(10), "{spec}: not refused at once");
        assert!(!out.exists(), "{spec}: wrote {}", out.display());
    }
}

/// The limits are one machine's: a shard is checked on its own points. 12 points exceed
/// `max_points = 5`; `--shard 0/3` runs points 0, 3, 6, 9 (4 of 12) and is let through, and its
/// refusal at `--shard 0/2` (6 points) says which shard and how many points.
#[test]
fn a_shard_is_checked_on_its_own_points() {
    let d = scratch("shard-limits");
    let spec = "[limits]\nmax_points = 5\n[sweep]\n\"workload.parent_tokens\" = \"1000..12000 step 1000\"\n";
    let f = write(&d, "g.toml", &format!("{SMALL}{spec}"));
    check_2(&run(&["sweep", s(&f), "--out", s(&d.join("all"))]), &["12 points", "max_points"]);
    check_2(
        &run(&["sweep", s(&f), "--shard", "0/2", "--out", s(&d.join("half"))]),
        &["shard 0/2: 6 of 12 points", "max_points"],
    );
    ok(&["sweep", s(&f), "--shard", "0/3", "--out", s(&d.join("third"))]);
    let summary = std::fs::read_to_string(d.join("third/summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + 4 * 2, "4 points x 2 strategies:\n{summary}");
}

// 4. A warm parent with nothing to cache.

#[test]
fn a_warm_parent_with_no_tokens_caches_nothing() {
    let d = scratch("warm0");
    let f = write(&d, "small.toml", SMALL);
    let warm = ok(&[
        "run",
        s(&f),
        "--json",
        "--set",
        "workload.parent_tokens=0",
        "--set",
        "workload.parent_warm=true",
    ]);
    let cold = ok(&["run", s(&f), "--json", "--set", "workload.parent_tokens=0"]);
    // Nothing cached at t0 and t0 unchanged (parent_idle = 0): the cold run, byte for byte.
    assert_eq!(warm, cold);
}

// 5. Exit 1 for bad input: non-UTF-8 bytes, odd files; messages said twice.

#[test]
fn bad_bytes_and_odd_files_are_bad_input_named_once() {
    let d = scratch("bytes");
    let runs = run_dir(&d);
    for name in ["summary.csv", "runs.csv", "trace.csv", "manifest.json"] {
        let copy = d.join(format!("copy-{name}"));
        copy_dir(&runs, &copy);
        let mut bytes = std::fs::read(copy.join(name)).unwrap();
        let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 3;
        bytes[at] = 0xff;
        std::fs::write(copy.join(name), bytes).unwrap();
        for cmd in ["plot", "report"] {
            check_2(&run(&[cmd, s(&copy)]), &[&format!("{name}:2"), "not UTF-8"]);
        }
    }
    let copy = d.join("copy-dir");
    copy_dir(&runs, &copy);
    std::fs::remove_file(copy.join("summary.csv")).unwrap();
    std::fs::create_dir(copy.join("summary.csv")).unwrap();
    check_2(&run(&["plot", s(&copy)]), &["summary.csv", "a directory where a file should be"]);

    // Sweeps: a journal whose header is not UTF-8 on --resume; a file given as a shard.
    let f = write(&d, "sweep.toml", &format!("{SMALL}[sweep]\n\"workload.agents\" = [2, 3]\n"));
    let out = d.join("sweep");
    ok(&["sweep", s(&f), "--out", s(&out)]);
    let journal = out.join("sweep.journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes[5] = 0xfe;
    std::fs::write(&journal, &bytes).unwrap();
    check_2(&run(&["sweep", s(&f), "--out", s(&out), "--resume"]), &["sweep.journal:1", "UTF-8"]);
    check_2(&run(&["merge", s(&out), "--out", s(&d.join("m"))]), &["sweep.journal:1"]);
    let file = write(&d, "not-a-dir", "x");
    check_2(
        &run(&["merge", s(&file), "--out", s(&d.join("m2"))]),
        &["not-a-dir", "not a directory"],
    );
    assert!(!d.join("m2").exists(), "merge left its --out behind");
}

// 6. A failed run that looks complete: the manifest last, readers check it.

#[test]
fn a_run_that_failed_to_write_never_looks_complete() {
    let d = scratch("fulldisk");
    let out = run_dir(&d);
    let f = d.join("small.toml");
    // A full disk for runs.csv only: its temporary file is /dev/full (ENOSPC on write).
    if Path::new("/dev/full").exists() {
        std::os::unix::fs::symlink("/dev/full", out.join("runs.csv.tmp")).unwrap();
        // --force (the directory is not empty) writes beside it and swaps the new one in whole:
        // the trap goes with the old directory (docs/limits.md, "What --out accepts").
        let o = run(&["run", s(&f), "--out", s(&out), "--set", "seed=6", "--force"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(out.join("runs.csv.tmp").symlink_metadata().is_err(), "the old files stayed");
    }
    // A run that did not finish has no manifest: plot and report refuse its directory.
    std::fs::remove_file(out.join("manifest.json")).unwrap();
    check_2(&run(&["plot", s(&out)]), &["without manifest.json", "did not finish"]);
    check_2(&run(&["report", s(&out)]), &["without manifest.json"]);
    // Complete again, then a file the manifest vouches for goes missing.
    ok(&["run", s(&f), "--out", s(&out), "--force"]);
    ok(&["plot", s(&out), "--format", "svg"]);
    let log = out.join("histograms").join("latency.hlog");
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("Tag=p00000_eager_ttft,"))
        .map(|l| l.to_string() + "\n")
        .collect();
    assert_eq!(kept.lines().count() + 1, text.lines().count());
    std::fs::write(&log, kept).unwrap();
    check_2(&run(&["plot", s(&out)]), &["latency.hlog interval p00000_eager_ttft", "missing"]);
    ok(&["run", s(&f), "--out", s(&out), "--force"]);
    std::fs::remove_file(out.join("runs.csv")).unwrap();
    check_2(&run(&["report", s(&out)]), &["runs.csv", "missing"]);
}

// 7. NaN in outputs: parameters outside the ranges where the arithmetic is exact.

#[test]
fn parameters_beyond_exact_arithmetic_are_refused_and_nan_is_never_printed() {
    let d = scratch("nan");
    let f = write(&d, "small.toml", SMALL);
    for (set, key) in [
        ("model_params.input_usd_per_mtok=1e308", "model_params.input_usd_per_mtok"),
        ("model_params.output_usd_per_mtok=1e308", "model_params.output_usd_per_mtok"),
        ("model_params.read_multiplier=1e300", "model_params.read_multiplier"),
        ("workload.parent_tokens=9223372036854775807", "workload.parent_tokens"),
        ("workload.output_tokens=1e300", "workload.output_tokens"),
    ] {
        check_2(&run(&["run", s(&f), "--set", set]), &["small.toml", key, "docs/limits.md"]);
    }
    // The largest allowed price: finite everywhere, in the table, the JSON and the CSV files.
    let out = d.join("out");
    let big = [
        "--set",
        "model_params.input_usd_per_mtok=1000000",
        "--set",
        "model_params.write_1h_multiplier=1000",
    ];
    let table = ok(&[&["run", s(&f)][..], &big].concat());
    let json = ok(&[&["run", s(&f), "--json", "--out", s(&out)][..], &big].concat());
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    for text in [&table, &json, &csv] {
        assert!(!text.to_lowercase().contains("nan") && !text.contains("inf"), "{text}");
    }
    assert!(!json.contains("null"), "{json}");
}

// 8. Limits the input caused exit 2; a failed sweep leaves no journal.

#[test]
fn runs_stopped_by_their_own_limits_are_bad_input() {
    let d = scratch("bounded");
    let f = write(&d, "small.toml", SMALL);
    for (set, needle) in
        [("limits.horizon=3s", "horizon reached"), ("limits.max_events=3", "event limit reached")]
    {
        check_2(&run(&["run", s(&f), "--set", set]), &[needle, "raise limits."]);
    }
    let o = run(&["run", s(&f), "--set", "rate_limits.rpm=0", "--out", s(&d.join("o"))]);
    check_2(&o, &["can never be admitted", "rate_limits.rpm"]);
    assert!(!d.join("o").exists());
    let tune =
        ["tune", s(&f), "--param", "max_wait", "--range", "0s,1s", "--set", "limits.horizon=3s"];
    check_2(&run(&tune), &["horizon reached"]);
    // A sweep whose third point stops at its horizon: exit 2, and nothing is left behind.
    let g = write(
        &d,
        "sweep.toml",
        &format!("{SMALL}[sweep]\n\"limits.horizon\" = [\"1h\", \"1h\", \"3s\"]\n"),
    );
    let out = d.join("sweep");
    check_2(
        &run(&["sweep", s(&g), "--out", s(&out), "--jobs", "1"]),
        &["point 2", "horizon reached"],
    );
    assert!(!out.exists(), "a failed sweep left {}", out.display());
}

// 9. One output, one writer; SIGTERM and SIGHUP are Ctrl-C.

const LONG: &str = "# long\nname = \"long\"\nseed = 3\nreplications = 2\n\
strategies = [\"eager\", \"wait_first(max_wait=1s)\"]\n[workload]\nagents = 6\n\
parent_tokens = 5000\nturns = \"const(2)\"\n[sweep]\n\
\"workload.parent_tokens\" = \"1000..40000 step 1000\"\n";

fn spawn_slow_sweep(f: &Path, out: &Path) -> Child {
    Command::new(BIN)
        .args(["sweep", s(f), "--jobs", "2", "--out", s(out)])
        .env("PREFIXSIM_SWEEP_THROTTLE_MS", "40")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_second_writer_is_refused_and_sigterm_sighup_stop_cleanly() {
    let d = scratch("lock");
    let f = write(&d, "long.toml", LONG);
    let reference = d.join("reference");
    ok(&["sweep", s(&f), "--out", s(&reference)]);
    for signal in ["-TERM", "-HUP"] {
        let out = d.join(format!("out{signal}"));
        let first = spawn_slow_sweep(&f, &out);
        wait_for_records(&out.join("sweep.journal"), 2);
        for extra in [&[][..], &["--resume"][..]] {
            let o = run(&[&["sweep", s(&f), "--out", s(&out)][..], extra].concat());
            check_2(&o, &["another prefixsim process is writing there"]);
        }
        check_2(&run(&["merge", s(&reference), "--out", s(&out)]), &["another prefixsim process"]);
        let kill = Command::new("kill").args([signal, &first.id().to_string()]).status().unwrap();
        assert!(kill.success());
        let o = wait_deadline(first, Duration::from_secs(60), signal);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{signal}: {err}");
        assert!(err.contains("interrupted") && err.contains("--resume"), "{signal}: {err}");
        assert!(!out.join("manifest.json").exists(), "{signal}: finished before the signal");
        ok(&["sweep", s(&f), "--resume", "--out", s(&out)]);
        for name in ["summary.csv", "runs.csv", "manifest.json", "sweep.journal"] {
            let (a, b) = (std::fs::read(out.join(name)), std::fs::read(reference.join(name)));
            assert_eq!(a.unwrap(), b.unwrap(), "{signal}: {name} differs after resume");
        }
    }
}

/// `prefixsim ... | head` closes the pipe early: the output stops there, with no panic and exit 0
/// (as `cat`/`grep` under a shell's SIGPIPE would end, but without a signal). The read end is
/// closed before the child writes, so the first write already fails with EPIPE.
#[test]
fn a_closed_stdout_pipe_is_not_a_crash() {
    let cases: [&[&str]; 5] = [
        &["plot", "--help"],
        &["models"],
        &["run", "experiments/default.toml", "--set", "replications=2"],
        &["scenarios", "--json"],
        &["man"],
    ];
    for args in cases {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = wait_deadline(child, Duration::from_secs(60), &args.join(" "));
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?} panicked on a closed pipe:\n{err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}
