//! The machinery end to end on a tiny experiment of the model: resume after a crash at any
//! byte, the files of many points, hold.csv (tests/it/sweep.rs runs jobs, shards and merge
//! through the binary).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::exec::ModelRunner;

/// Two agents, one turn each, every point with its hold answer.
const TINY: &str = r#"
name = "tiny"
seed = 7
replications = 3
strategies = ["eager", "wait_first(max_wait=1s)"]
[workload]
agents = 2
parent_tokens = 5000
turns = "const(1)"
[report]
answer = "hold_cap"
[sweep]
workload.agents = "1..5 step 1"
max_wait = ["0s", "2s"]
"#;

const SIM: ModelRunner = ModelRunner { origin: String::new() };

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("prefixsim-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn plan(text: &str) -> Result<Plan, SweepError> {
    let t: toml::Table = text.parse().unwrap();
    Plan::new(&SIM, t, &spec::key_order(text))
}

fn opts(dir: &Path, jobs: usize, resume: bool) -> SweepOptions {
    let exec = ExecOptions { jobs, progress: false, ctrl_c: false, throttle_ms: 0 };
    SweepOptions { dir: dir.to_path_buf(), shard: None, resume, force: true, exec }
}

/// Every file under `dir` (relative path -> bytes).
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

fn run(dir: &Path, jobs: usize, resume: bool) -> SweepReport {
    run_sweep(&SIM, &plan(TINY).unwrap(), &opts(dir, jobs, resume)).unwrap()
}

#[test]
fn a_crash_at_any_byte_then_resume_gives_the_same_bytes() {
    let one = tmp("one");
    assert_eq!(run(&one, 1, false).outcome, Outcome::Complete);
    let reference = files(&one);
    assert_eq!(reference.len(), 6, "journal, manifest, 3 csv, one histogram log");
    let summary = String::from_utf8(reference["/summary.csv"].clone()).unwrap();
    assert_eq!(summary.lines().count(), 1 + 10 * 2);
    assert!(summary.starts_with("point,workload.agents,max_wait,max_wait_s,strategy,replications,"));
    let hold = String::from_utf8(reference["/hold.csv"].clone()).unwrap();
    assert_eq!(hold.lines().count(), 1 + 10, "{hold}");
    // A crash at any byte of the journal, then --resume: the same outputs.
    let journal = std::fs::read(one.join(JOURNAL_FILE)).unwrap();
    let resumed = tmp("resumed");
    for cut in (0..journal.len()).step_by(journal.len() / 9) {
        std::fs::create_dir_all(&resumed).unwrap();
        std::fs::write(resumed.join(JOURNAL_FILE), &journal[..cut]).unwrap();
        let r = run(&resumed, 2, true);
        assert!(r.resumed_from <= 10);
        assert_eq!(files(&resumed), reference, "cut at byte {cut}");
    }
    for d in [one, resumed] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// A sweep of `TINY` without hold answers over `table` (the lines of its `[sweep]`) into `dir`.
fn sweep_of(dir: &Path, table: &str) {
    let head = TINY.split("[report]").next().unwrap();
    let text = format!("{head}[sweep]\n{table}\n");
    run_sweep(&SIM, &plan(&text).unwrap(), &opts(dir, 2, false)).unwrap();
}

#[test]
fn the_number_of_files_does_not_grow_with_the_points() {
    let layout = |points: u32| {
        let d = tmp(&format!("points{points}"));
        sweep_of(&d, &format!("workload.task_tokens = \"1..{points} step 1\""));
        let files = files(&d);
        std::fs::remove_dir_all(&d).unwrap();
        let log = String::from_utf8(files["histograms/latency.hlog"].clone()).unwrap();
        let intervals = log.lines().filter(|l| l.starts_with("Tag=")).count();
        (files.into_keys().collect::<Vec<_>>(), intervals)
    };
    let (few, few_intervals) = layout(2);
    let (many, many_intervals) = layout(2000);
    assert_eq!(many, few, "2,000 points, the same files as 2");
    assert_eq!((few_intervals, many_intervals), (2 * 2 * 3, 2000 * 2 * 3));
}

#[test]
fn no_point_with_a_hold_answer_writes_no_hold_csv_and_removes_an_old_one() {
    let d = tmp("nohold");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("hold.csv"), "an earlier sweep's\n").unwrap();
    sweep_of(&d, "workload.agents = [1, 3]");
    assert!(!d.join("hold.csv").exists());
    assert!(d.join("summary.csv").exists());
    std::fs::remove_dir_all(&d).unwrap();
}
