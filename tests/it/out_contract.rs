//! Tests: one `--out` contract for every command that writes (docs/limits.md, "What --out
//! accepts"): a directory that holds files (a file that exists) is refused with exit 2 and one
//! line naming it, unless `--force`, which replaces it whole; a killed replacement leaves the
//! old directory, and `sweep --resume` picks up the points it finished; every file goes under
//! `--out`; and the README's commands run top to bottom twice.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::common::{bin, scratch, wait_for_records};

const SMALL: &str = "replications = 2\nstrategies = [\"eager\"]\n[workload]\nagents = 2\n\
                     turns = \"const(1)\"\n";

fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin().args(args).current_dir(dir).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The names under `dir`, sorted, hidden ones included.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A scratch directory with an experiment file `e.toml` (SMALL) and a results directory
/// `old/` holding one stray file.
fn setup(name: &str) -> (PathBuf, PathBuf) {
    let d = scratch("out_contract", name);
    std::fs::write(d.join("e.toml"), SMALL).unwrap();
    let old = d.join("old");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(old.join("stray.txt"), "an earlier command's\n").unwrap();
    (d, old)
}

/// Refused with exit 2 and one line naming `--out` and the directory, nothing written.
fn assert_refused(o: &Output, dir: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains(&format!("--out {dir}")) && e.contains("--force"), "{e}");
}

#[test]
fn every_directory_writer_refuses_a_full_directory_and_replaces_it_with_force() {
    let (d, _) = setup("dirs");
    assert_eq!(run_in(&d, &["run", "e.toml", "--out", "res"]).status.code(), Some(0));
    let sweep = "replications = 2\nstrategies = [\"eager\"]\n[workload]\nturns = \"const(1)\"\n\
                 [sweep]\n\"workload.agents\" = [1, 2]\n";
    std::fs::write(d.join("s.toml"), sweep).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "e.toml", "--out", "old"],
        vec!["sweep", "s.toml", "--out", "old"],
        vec!["tune", "e.toml", "--param", "workload.concurrency", "--range", "1,2", "--out", "old"],
        vec!["plot", "res", "--out", "old", "--format", "svg"],
        vec!["plot", "--covered-prefix", "--out", "old", "--format", "svg"],
        vec!["replay", "data/requests.jsonl", "--out", "old"],
        vec!["man", "--out", "old"],
    ];
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::copy(repo.join("data/samples/requests.jsonl"), d.join("data/requests.jsonl")).unwrap();
    for args in &cases {
        let o = run_in(&d, args);
        assert_refused(&o, "old");
        assert_eq!(names(&d.join("old")), ["stray.txt"], "{args:?}");
        let mut forced = args.clone();
        forced.push("--force");
        let o = run_in(&d, &forced);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let now = names(&d.join("old"));
        assert!(!now.contains(&"stray.txt".to_string()) && !now.is_empty(), "{args:?}: {now:?}");
        // Nothing is left beside it, and it is full again for the next case.
        assert!(!names(&d).iter().any(|n| n.contains("prefixsim-")), "{:?}", names(&d));
        std::fs::write(d.join("old/stray.txt"), "again\n").unwrap();
        for n in now {
            let p = d.join("old").join(n);
            let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
        }
    }
}

#[test]
fn merge_refuses_a_full_directory_and_never_a_shard() {
    let (d, _) = setup("merge");
    let sweep = "replications = 2\nstrategies = [\"eager\"]\n[workload]\nturns = \"const(1)\"\n\
                 [sweep]\n\"workload.agents\" = [1, 2]\n";
    std::fs::write(d.join("s.toml"), sweep).unwrap();
    for k in ["0", "1"] {
        let o = run_in(&d, &["sweep", "s.toml", "--shard", &format!("{k}/2"), "--out", k]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_refused(&run_in(&d, &["merge", "0", "1", "--out", "old"]), "old");
    let o = run_in(&d, &["merge", "0", "1", "--out", "old", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.join("old/manifest.json").is_file() && !d.join("old/stray.txt").exists());
    // --force never replaces a shard it reads.
    let o = run_in(&d, &["merge", "0", "1", "--out", "1", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(d.join("1/sweep.journal").is_file());
}

#[test]
fn file_outputs_refuse_an_existing_file_unless_forced() {
    let (d, _) = setup("files");
    assert_eq!(run_in(&d, &["run", "e.toml", "--out", "res"]).status.code(), Some(0));
    std::fs::write(d.join("long.csv"), "mine\n").unwrap();
    let o = run_in(&d, &["export", "res", "--format", "long", "--out", "long.csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--out long.csv: the file exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(d.join("long.csv")).unwrap(), "mine\n");
    let o = run_in(&d, &["export", "res", "--format", "long", "--out", "long.csv", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(d.join("long.csv")).unwrap().starts_with("point,"));
    std::fs::write(d.join("r.md"), "mine\n").unwrap();
    let o = run_in(&d, &["report", "res", "--out", "r.md"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(d.join("r.md")).unwrap(), "mine\n");
    let o = run_in(&d, &["report", "res", "--out", "r.md", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.join("r.html").is_file());
}

#[test]
fn covered_prefix_writes_under_out_and_needs_it() {
    let (d, _) = setup("covered");
    let o = run_in(&d, &["plot", "--covered-prefix", "--json", "--format", "svg"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run_in(&d, &["plot", "--covered-prefix", "--json", "--format", "svg", "--out", "f"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(names(&d.join("f")), ["covered_prefix.svg"]);
    assert_eq!(names(&d), ["e.toml", "f", "old"], "wrote outside --out");
    let json = String::from_utf8(o.stdout).unwrap();
    assert!(json.contains("\"f/covered_prefix.svg\""), "{json}");
}

/// 40 points; run with `PREFIXSIM_SWEEP_THROTTLE_MS=25` (wall clock only), >= 0.5 s anywhere.
const LONG: &str = "name = \"killme\"\nseed = 3\nreplications = 2\nstrategies = [\"eager\"]\n\
                    [workload]\nagents = 6\nturns = \"const(2)\"\n\
                    [sweep]\n\"workload.parent_tokens\" = \"1000..40000 step 1000\"\n";

#[test]
fn a_replacing_sweep_killed_leaves_the_old_directory_and_resume_keeps_its_points() {
    let (d, old) = setup("killed");
    std::fs::write(d.join("long.toml"), LONG).unwrap();
    let mut child = bin()
        .args(["sweep", "long.toml", "--jobs", "2", "--out", "old", "--force"])
        .env("PREFIXSIM_SWEEP_THROTTLE_MS", "25")
        .current_dir(&d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let staging = d.join(".old.prefixsim-new");
    wait_for_records(&staging.join("sweep.journal"), 2);
    let killed = Command::new("kill").args(["-9", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    child.wait().unwrap();
    // Interrupted while replacing: the old directory, whole; the new one beside it.
    assert_eq!(names(&old), ["stray.txt"]);
    let journal = std::fs::read(staging.join("sweep.journal")).unwrap();
    // --resume takes the points the killed sweep finished.
    let o =
        run_in(&d, &["sweep", "long.toml", "--jobs", "2", "--out", "old", "--resume", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rep: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(rep["resumed_from"].as_u64().unwrap() >= 2, "{rep}");
    assert!(std::fs::read(old.join("sweep.journal")).unwrap().starts_with(&journal[..64]));
    assert!(!old.join("stray.txt").exists() && old.join("manifest.json").is_file());
    assert!(!staging.exists());
}

#[test]
fn a_failed_replacement_leaves_the_old_directory() {
    let (d, old) = setup("failed");
    // A run stopped by its own limits fails after --out is opened: nothing of it is kept.
    let o =
        run_in(&d, &["run", "e.toml", "--out", "old", "--force", "--set", "limits.horizon=1ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(names(&old), ["stray.txt"]);
    assert!(!d.join(".old.prefixsim-new").exists());
    // And one into a new directory leaves none.
    let o = run_in(&d, &["run", "e.toml", "--out", "new", "--set", "limits.horizon=1ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!d.join("new").exists());
}

/// The README's commands (its `sh` blocks' `prefixsim` lines, but `serve`, which does not
/// end), run top to bottom twice in a scratch directory that sees `experiments/` and `data/`.
/// Before the `--out` contract, `run --out results/default` failed the second time.
#[test]
fn the_readme_commands_run_twice() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let commands = sh_commands(&readme);
    assert!(commands.len() >= 15, "{commands:?}");
    let d = scratch("out_contract", "readme");
    for sub in ["experiments", "data"] {
        std::os::unix::fs::symlink(repo.join(sub), d.join(sub)).unwrap();
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_prefixsim")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for pass in 1..=2 {
        // The second time, the commands that write or read what the commands wrote (the
        // others read only the repository's files: the same run again).
        let touches =
            |c: &&String| ["--out", "results/", "calibration/", ">"].iter().any(|w| c.contains(w));
        for c in commands.iter().filter(|c| pass == 1 || touches(c)) {
            let o = Command::new("sh")
                .args(["-c", c])
                .current_dir(&d)
                .env("PATH", &path)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "pass {pass}: `{c}`:\n{}", stderr(&o));
        }
    }
}

/// The `prefixsim ...` lines of the ```` ```sh ```` blocks, comments cut.
fn sh_commands(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim_end() == "```sh";
            continue;
        }
        let cmd = line.split(" # ").next().unwrap().trim();
        if in_sh && cmd.starts_with("prefixsim ") && !cmd.starts_with("prefixsim serve") {
            out.push(cmd.to_string());
        }
    }
    out
}
