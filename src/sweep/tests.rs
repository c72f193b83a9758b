//! The machinery end to end with the fake simulator: jobs, shards + merge, resume.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::fake::{Fake, FAKE};
use super::*;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("prefixsim-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn plan(text: &str) -> Result<Plan, SweepError> {
    let t: toml::Table = text.parse().unwrap();
    Plan::new(&Fake, t, &spec::key_order(text))
}

fn opts(dir: &Path, jobs: usize, shard: Option<Shard>, resume: bool) -> SweepOptions {
    SweepOptions {
        dir: dir.to_path_buf(),
        shard,
        resume,
        exec: ExecOptions { jobs, progress: false, ctrl_c: false, throttle_ms: 0 },
    }
}

/// Every file under `dir` (relative path -> bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for sub in ["", "histograms"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                out.insert(
                    format!("{sub}/{}", p.file_name().unwrap().to_string_lossy()),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn run(dir: &Path, jobs: usize, shard: Option<Shard>, resume: bool) -> SweepReport {
    let p = plan(FAKE).unwrap();
    run_sweep(&Fake, &p, &opts(dir, jobs, shard, resume)).unwrap()
}

#[test]
fn jobs_shards_and_resume_give_the_same_bytes() {
    let one = tmp("one");
    assert_eq!(run(&one, 1, None, false).outcome, Outcome::Complete);
    let reference = files(&one);
    assert_eq!(reference.len(), 6, "journal, manifest, 3 csv, one histogram log");
    let summary = String::from_utf8(reference["/summary.csv"].clone()).unwrap();
    assert_eq!(summary.lines().count(), 1 + 10 * 2);
    assert!(summary.starts_with("point,workload.agents,max_wait,max_wait_s,strategy,replications,"));
    // The fake answers at an even number of agents: 2 and 4, each at both caps.
    let hold = String::from_utf8(reference["/hold.csv"].clone()).unwrap();
    let want = "point,workload.agents,max_wait,max_wait_s,strategy,cap_s,cap_lo_s,cap_hi_s,\
                p_after_cap,p_after_cap_draws,ttft_p50_s,ttft_p95_s,ttft_p99_s,draws,knife_edge\n\
                2,2,0s,0,wait_first(max_wait=1s),0.500000,0.000000,0.833333,0.500000,0.125000,\
                0.500000,1.500000,2.500000,3,false\n\
                3,2,2s,2,wait_first(max_wait=1s),2.500000,,,0.500000,,0.500000,1.500000,\
                2.500000,0,false\n";
    assert!(hold.starts_with(want), "{hold}");
    assert_eq!(hold.lines().count(), 1 + 4, "{hold}");
    let two = tmp("two");
    run(&two, 2, None, false);
    assert_eq!(files(&two), reference, "--jobs 2 == --jobs 1");

    let shards: Vec<PathBuf> = (0..3).map(|k| tmp(&format!("shard{k}"))).collect();
    for (k, d) in shards.iter().enumerate() {
        run(d, 2, Some(Shard { index: k as u64, count: 3 }), false);
    }
    let merged = tmp("merged");
    merge::merge(&shards, &merged).unwrap();
    assert_eq!(files(&merged), reference, "3 shards merged == one run");
    let e = merge::merge(&shards[..2], &tmp("bad")).unwrap_err();
    assert!(e.to_string().contains("missing shards: 2/3"), "{e}");
    let e = merge::merge(&[shards[0].clone(), shards[0].clone(), shards[1].clone()], &tmp("bad"))
        .unwrap_err();
    assert!(e.to_string().contains("overlapping"), "{e}");

    // A crash at any byte of the journal, then --resume: the same outputs.
    let journal = std::fs::read(one.join(JOURNAL_FILE)).unwrap();
    let resumed = tmp("resumed");
    for cut in (0..journal.len()).step_by(journal.len() / 9) {
        std::fs::create_dir_all(&resumed).unwrap();
        std::fs::write(resumed.join(JOURNAL_FILE), &journal[..cut]).unwrap();
        let r = run(&resumed, 2, None, true);
        assert!(r.resumed_from <= 10);
        assert_eq!(files(&resumed), reference, "cut at byte {cut}");
    }
    for d in [one, two, merged, resumed].iter().chain(&shards) {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn the_number_of_files_does_not_grow_with_the_points() {
    let head = FAKE.split("[sweep]").next().unwrap();
    let layout = |points: u32| {
        let d = tmp(&format!("points{points}"));
        let text = format!("{head}[sweep]\nworkload.agents = \"1..{points} step 1\"\n");
        run_sweep(&Fake, &plan(&text).unwrap(), &opts(&d, 2, None, false)).unwrap();
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
    let head = FAKE.split("[sweep]").next().unwrap();
    let odd = format!("{head}[sweep]\nworkload.agents = [1, 3]\n");
    let d = tmp("nohold");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("hold.csv"), "an earlier sweep's\n").unwrap();
    run_sweep(&Fake, &plan(&odd).unwrap(), &opts(&d, 2, None, false)).unwrap();
    assert!(!d.join("hold.csv").exists());
    assert!(d.join("summary.csv").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn resume_refuses_another_experiment() {
    let d = tmp("other");
    run(&d, 1, None, false);
    let other = FAKE.replace("seed = 7", "seed = 8");
    let p = plan(&other).unwrap();
    let e = run_sweep(&Fake, &p, &opts(&d, 1, None, true)).unwrap_err();
    assert!(
        matches!(e, SweepError::Mismatch(_)) && e.to_string().contains("different experiment"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_specs_name_the_problem() {
    let cases = [
        ("[sweep]\nworkload.agentz = [1, 2]", "workload.agentz"),
        ("[sweep]\nworkload.agents = \"5..1 step 1\"", "empty"),
        ("[sweep]\nworkload.agents = \"1..5 step 0\"", "step of zero"),
        ("[sweep]\nworkload.agents = []", "empty list"),
        ("[sweep]\nzip = [\"workload.agents\", \"max_wait\"]\nworkload.agents = [1, 2]\nmax_wait = [\"1s\"]", "same length"),
        ("[sweep]\nworkload.agents = [0]", "workload.agents = 0"),
    ];
    let head = FAKE.split("[sweep]").next().unwrap();
    for (sweep, want) in cases {
        let e = plan(&format!("{head}{sweep}\n")).unwrap_err();
        assert!(matches!(e, SweepError::Refused(_)), "{e}");
        assert!(e.to_string().contains(want), "{sweep}: {e}");
    }
}

#[test]
fn a_point_does_not_depend_on_other_points() {
    // Point (agents=3, max_wait=2s) alone, as a one-point sweep, has the same summary row.
    let one = tmp("alone");
    run(&one, 1, None, false);
    let all = std::fs::read_to_string(one.join("summary.csv")).unwrap();
    let head = FAKE.split("[sweep]").next().unwrap();
    let single = format!("{head}[sweep]\nworkload.agents = [3]\nmax_wait = [\"2s\"]\n");
    let d = tmp("alone1");
    run_sweep(&Fake, &plan(&single).unwrap(), &opts(&d, 1, None, false)).unwrap();
    let alone = std::fs::read_to_string(d.join("summary.csv")).unwrap();
    let strip = |l: &str| l.split_once(',').unwrap().1.to_string();
    let want: Vec<String> = all.lines().filter(|l| l.starts_with("5,")).map(strip).collect();
    let got: Vec<String> = alone.lines().skip(1).map(strip).collect();
    assert_eq!(got, want);
    std::fs::remove_dir_all(&one).unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}

/// The model's check of a changed value (`check_changed`, which resolves only `[workload]`
/// when only its keys changed) gives the answer and the error of resolving the whole table.
#[test]
fn checking_a_changed_value_answers_as_resolving_does() {
    use crate::exec::ModelRunner;
    let head = "name = \"c\"\nmodel = \"claude-haiku-3.5\"\n\
                strategies = [\"eager\", \"wait_first(max_wait=5s)\"]\n";
    let api = format!("{head}[workload]\nagents = 3\nparent_tokens = 5000\n");
    let server = format!("{head}[cache]\npolicy = \"vllm\"\n[workload]\nagents = 3\n");
    let v = |s: &str| toml::Value::String(s.into());
    let cases: Vec<(&str, &str, toml::Value)> = vec![
        (&api, "workload.agents", 4.into()),
        (&api, "workload.agents", 0.into()),
        (&api, "workload.agentz", 1.into()),
        (&api, "workload.task_tokens", 900_000_000.into()),
        (&api, "workload.parent_tokens", 300_000.into()),
        (&api, "workload.thinking", true.into()),
        (&api, "workload.turns", v("bogus(2)")),
        (&api, "workload.turns", v("uniform(1, 3)")),
        (&api, "workload.tool_latency", 5.into()),
        (&api, "workload.kind", v("nope")),
        (&api, "workload.kind", v("subagent")),
        (&api, "strategy.wait_first.max_wait", v("fast")),
        (&api, "latency.overhead", v("x")),
        (&api, "latency.overhead", v("const(1s)")),
        (&server, "workload.parent_turn_every", v("90s")),
        (&server, "workload.parent_turn_every", v("0s")),
    ];
    let sim = ModelRunner { origin: "c.toml".into() };
    for (text, key, value) in cases {
        let base_table: toml::Table = text.parse().unwrap();
        let base = sim.resolve(&base_table).unwrap();
        let mut t = base_table.clone();
        table::set_value(&mut t, key, value.clone()).unwrap();
        let whole = sim.resolve(&t).map(drop).map_err(|e| e.to_string());
        let changed = sim.check_changed(&base, &t, &[key]).map_err(|e| e.to_string());
        assert_eq!(changed, whole, "{key} = {value}");
    }
}
