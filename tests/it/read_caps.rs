//! Every file argument of every command, replaced by something that is not a file prefixsim
//! can read whole: `/dev/zero` (a device without end, symlinked where a directory member is
//! expected), a FIFO with no writer (opening it would block), and a sparse file of 3 GiB.
//! Each is refused with exit 2 and one line naming the file, soon (every command runs under a
//! safety timeout), never read into memory (exit 1 or 134) or waited on. Also: axis values
//! held to the manifest (N9), and no `.tmp` file and a named path when a write fails (N6).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::{bin, copy_dir};

fn scratch(name: &str) -> PathBuf {
    super::common::scratch("read_caps", name)
}

/// A small sweep: two points, one strategy, the cost answer (no hold search).
const SWEEP: &str = r#"name = "caps"
seed = 1
replications = 1
model = "claude-haiku-4.5"
strategies = ["eager"]

[workload]
agents = 2

[report]
answer = "cost"

[sweep]
"workload.agents" = [2, 3]
"#;

/// Exit code and stderr of `cmd`, killed (and the test failed) after 120 s.
fn run(mut cmd: Command) -> (Option<i32>, String) {
    let what = format!("{cmd:?}");
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish in 120 s (blocked on a FIFO, or reading without end)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cmd(args: &[&str]) -> Command {
    let mut c = bin();
    c.args(args);
    c
}

/// `cmd` exits 2 with one line `error: ...` that names `file`.
fn refused(c: Command, file: &str) {
    let what = format!("{c:?}");
    let (code, err) = run(c);
    assert_eq!(code, Some(2), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: one line: {err}");
    assert!(err.starts_with("error: ") && err.contains(file), "{what}: names {file}: {err}");
}

/// The three bad kinds of file, put at `path` (replacing what is there).
#[derive(Clone, Copy, Debug)]
enum Bad {
    DevZero,
    Fifo,
    Sparse,
}
const BAD: [Bad; 3] = [Bad::DevZero, Bad::Fifo, Bad::Sparse];

fn put(bad: Bad, path: &Path) {
    let _ = std::fs::remove_file(path);
    match bad {
        Bad::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Bad::Fifo => {
            let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
            assert!(ok, "mkfifo {}", path.display());
        }
        Bad::Sparse => std::fs::File::create(path).unwrap().set_len(3 << 30).unwrap(),
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A finished sweep (and its two shards) under `dir`: (sweep, shard 0, shard 1, experiment).
fn sweeps(dir: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let exp = dir.join("caps.toml");
    std::fs::write(&exp, SWEEP).unwrap();
    let (all, s0, s1) = (dir.join("all"), dir.join("s0"), dir.join("s1"));
    for (out, shard) in [(&all, None), (&s0, Some("0/2")), (&s1, Some("1/2"))] {
        let mut c = cmd(&["sweep", s(&exp), "--out", s(out)]);
        if let Some(shard) = shard {
            c.args(["--shard", shard]);
        }
        let (code, err) = run(c);
        assert_eq!(code, Some(0), "{err}");
    }
    (all, s0, s1, exp)
}

#[test]
fn result_files_that_are_not_files_are_refused() {
    let dir = scratch("results");
    let (all, _, _, _) = sweeps(&dir);
    let members = ["runs.csv", "summary.csv", "manifest.json", "histograms/latency.hlog"];
    for bad in BAD {
        for member in members {
            let copy = dir.join(format!("{bad:?}-{}", member.replace('/', "_")));
            copy_dir(&all, &copy);
            put(bad, &copy.join(member));
            let out = dir.join("out");
            let name = Path::new(member).file_name().unwrap().to_str().unwrap();
            refused(cmd(&["plot", s(&copy), "--out", s(&out), "--format", "svg"]), name);
            refused(cmd(&["report", s(&copy), "--out", s(&out.join("r.md"))]), name);
            refused(cmd(&["export", s(&copy), "--format", "long", "--out", "-"]), name);
        }
        // tune.json and replay.json: directories of their own (no manifest).
        for json in ["tune.json", "replay.json"] {
            let d = dir.join(format!("{bad:?}-{json}"));
            std::fs::create_dir_all(&d).unwrap();
            put(bad, &d.join(json));
            let out = dir.join("out");
            refused(cmd(&["plot", s(&d), "--out", s(&out), "--format", "svg"]), json);
            refused(cmd(&["report", s(&d), "--out", s(&out.join("r.md"))]), json);
        }
    }
}

#[test]
fn journals_that_are_not_files_are_refused_by_merge_and_resume() {
    let dir = scratch("journals");
    let (all, s0, s1, exp) = sweeps(&dir);
    for bad in BAD {
        let shard = dir.join(format!("{bad:?}-s0"));
        copy_dir(&s0, &shard);
        put(bad, &shard.join("sweep.journal"));
        let out = dir.join(format!("{bad:?}-merged"));
        refused(cmd(&["merge", s(&shard), s(&s1), "--out", s(&out)]), "sweep.journal");
        let resumed = dir.join(format!("{bad:?}-all"));
        copy_dir(&all, &resumed);
        put(bad, &resumed.join("sweep.journal"));
        refused(cmd(&["sweep", s(&exp), "--out", s(&resumed), "--resume"]), "sweep.journal");
    }
}

#[test]
fn input_files_that_are_not_files_are_refused() {
    let dir = scratch("inputs");
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/default.toml");
    for bad in BAD {
        let f = dir.join(format!("{bad:?}.in"));
        put(bad, &f);
        let name = f.file_name().unwrap().to_str().unwrap();
        refused(cmd(&["run", s(&f)]), name);
        refused(cmd(&["sweep", s(&f)]), name);
        let set = format!("latency.from={}", s(&f));
        refused(cmd(&["run", s(&exp), "--set", &set]), name);
        refused(cmd(&["run", s(&exp), "--latency", s(&f)]), name);
        let set = format!("workload.turns=empirical(file={})", s(&f));
        refused(cmd(&["run", s(&exp), "--set", &set]), name);
        refused(cmd(&["calibrate", s(&f)]), name);
        refused(cmd(&["calibrate", s(&f), "--format", "usage-log"]), name);
        for format in ["mooncake", "requests", "claude-code"] {
            refused(cmd(&["replay", "--format", format, s(&f)]), name);
        }
    }
}

#[test]
fn a_file_above_its_limit_says_the_limit_and_how_to_raise_it() {
    let dir = scratch("limit");
    let f = dir.join("big.json");
    std::fs::File::create(&f).unwrap().set_len(65 << 20).unwrap();
    let d = dir.join("tune");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::rename(&f, d.join("tune.json")).unwrap();
    let (code, err) = run(cmd(&["report", s(&d), "--out", s(&dir.join("r.md"))]));
    assert_eq!(code, Some(2), "{err}");
    for part in ["tune.json", "65 MiB", "above the 64 MiB limit", "PREFIXSIM_MAX_FILE_MB"] {
        assert!(err.contains(part), "{part}: {err}");
    }
    // Raised, the file is read (and is then malformed: zeros are not JSON).
    let mut c = cmd(&["report", s(&d), "--out", s(&dir.join("r.md"))]);
    c.env("PREFIXSIM_MAX_FILE_MB", "100");
    let (code, err) = run(c);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("above the") && err.contains("tune.json"), "{err}");
}

#[test]
fn an_axis_value_the_manifest_does_not_list_is_refused() {
    let dir = scratch("axes");
    let (all, _, _, _) = sweeps(&dir);
    let summary = all.join("summary.csv");
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    assert!(lines[2].starts_with("1,3,"), "{}", lines[2]);
    lines[2] = lines[2].replacen("1,3,", "1,NaN,", 1);
    std::fs::write(&summary, lines.join("\n") + "\n").unwrap();
    for args in [
        vec!["report", s(&all), "--out", s(&dir.join("r.md"))],
        vec!["plot", s(&all), "--out", s(&dir.join("p")), "--format", "svg"],
    ] {
        let (code, err) = run(cmd(&args));
        assert_eq!(code, Some(2), "{err}");
        let want = "summary.csv:3: column `workload.agents`: `NaN` is not a value of this axis";
        assert!(err.contains(want) && err.contains("(2, 3)"), "{err}");
    }
}

#[test]
fn a_failed_write_leaves_no_tmp_file_and_names_its_path() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("full");
    let (all, s0, s1, _) = sweeps(&dir);
    // merge: a directory holding a trap (sweep.journal.tmp, here /dev/full) is refused, and
    // replaced whole under --force: the merge writes beside it, where no trap is.
    let out = dir.join("merged");
    std::fs::create_dir_all(&out).unwrap();
    let tmp = out.join("sweep.journal.tmp");
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let (code, err) = run(cmd(&["merge", s(&s0), s(&s1), "--out", s(&out)]));
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = run(cmd(&["merge", s(&s0), s(&s1), "--out", s(&out), "--force"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::symlink_metadata(&tmp).is_err(), "sweep.journal.tmp is left behind");
    // export: the long file goes to summary_long.csv.tmp, here /dev/full.
    let tmp = all.join("summary_long.csv.tmp");
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let (code, err) = run(cmd(&["export", s(&all), "--format", "long"]));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("summary_long.csv.tmp: No space left on device"), "{err}");
    assert!(std::fs::symlink_metadata(&tmp).is_err(), "summary_long.csv.tmp is left behind");
}

#[test]
fn export_does_not_replace_a_device_or_a_fifo_with_a_file() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("export-out");
    let (all, _, _, _) = sweeps(&dir);
    let fifo = dir.join("out.csv");
    put(Bad::Fifo, &fifo);
    refused(cmd(&["export", s(&all), "--format", "long", "--out", s(&fifo)]), "out.csv");
    let still = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(still.is_fifo(), "the FIFO was replaced by a file");
}

#[test]
fn an_output_directory_whose_result_file_is_not_a_file_is_refused_before_any_run() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("out-members");
    let (all, _, _, exp) = sweeps(&dir);
    for member in ["summary.csv", "runs.csv", "hold.csv", "histograms/latency.hlog"] {
        // `sweep --resume` over a finished sweep rewrites its outputs from the journal.
        let copy = dir.join(format!("resume-{}", member.replace('/', "_")));
        copy_dir(&all, &copy);
        put(Bad::Fifo, &copy.join(member));
        refused(cmd(&["sweep", s(&exp), "--out", s(&copy), "--resume"]), member);
        let still = std::fs::symlink_metadata(copy.join(member)).unwrap().file_type();
        assert!(still.is_fifo(), "{member}: the FIFO was replaced");
    }
    let out = dir.join("run-out");
    std::fs::create_dir_all(out.join("runs.csv")).unwrap();
    let run = cmd(&["run", s(&exp), "--set", "replications=2", "--out", s(&out), "--force"]);
    refused(run, "runs.csv: is a directory, not a regular file");
    assert!(!out.join("summary.csv").exists(), "the run wrote before it was refused");
}
