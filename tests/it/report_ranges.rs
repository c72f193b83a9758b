//! A hold answer over swept assumptions: the report and the sweep's closing text give each
//! stack's answer as a range over `[report] assumptions` and say which key drives which row
//! (a key that does not reach a row leaves its points identical); every output that uses a
//! latency fitted on another model names the model it came from.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{bin, scratch};

/// Two stacks crossed with two assumptions: Gemini's hit probability reaches only the Gemini
/// row, the file's brief size (listed as an assumption too) reaches both.
const RANGES: &str = r#"name = "tiny-ranges"
question = "Which hold cap, on which stack, over the assumptions?"
seed = 7
replications = 4
strategies = ["eager", "wait_first(max_wait=5s)"]

[workload]
kind = "fork"
agents = 4
parent_tokens = 20000
parent_warm = false
turns = "const(1)"

[sweep]
"cache.policy" = ["anthropic", "gemini"]
model = ["claude-sonnet-4.5", "gemini-2.5-flash"]
zip = ["cache.policy", "model"]
"gemini.implicit_hit_probability" = [0, 1]
"workload.brief_tokens" = [1000, 30000]

[report]
answer = "hold_cap"
assumptions = ["gemini.implicit_hit_probability", "workload.brief_tokens"]
"#;

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = scratch("report_ranges", name);
    let file = dir.join("exp.toml");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

fn sweep_and_report(dir: &Path, file: &Path) -> (String, String) {
    let out = dir.join("out");
    let s = ok(&bin()
        .args(["sweep", path(file), "--out", path(&out), "--jobs", "2"])
        .output()
        .unwrap());
    ok(&bin().args(["report", path(&out)]).output().unwrap());
    (s, std::fs::read_to_string(out.join("plots/report.md")).unwrap())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The finding of the row that starts `(policy, model)`.
fn row<'a>(md: &'a str, label: &str) -> &'a str {
    let start = format!("- ({label}): ");
    md.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("no row {label}:\n{md}"))
}

#[test]
fn each_row_is_a_range_over_the_assumptions_and_names_what_drives_it() {
    let (dir, file) = write("ranges", RANGES);
    let (closing, md) = sweep_and_report(&dir, &file);
    let anthropic = row(&md, "anthropic, claude-sonnet-4.5");
    let gemini = row(&md, "gemini, gemini-2.5-flash");
    // The Gemini key does not reach the Anthropic row: its points are identical.
    assert!(anthropic.contains("driven by `workload.brief_tokens`"), "{anthropic}");
    assert!(
        anthropic.contains("`gemini.implicit_hit_probability` does not change it"),
        "{anthropic}"
    );
    assert!(gemini.contains("`gemini.implicit_hit_probability`"), "{gemini}");
    assert!(!gemini.contains("`gemini.implicit_hit_probability` does not change it"), "{gemini}");
    // The ends of a range say at which values they occur (both keys drive the Gemini row).
    assert!(gemini.contains(" – "), "a range: {gemini}");
    assert!(gemini.contains("(0, ") || gemini.contains("(1, "), "values at the ends: {gemini}");
    // The table: a row per stack, the driving keys named.
    let table = md.lines().find(|l| l.starts_with("| anthropic | claude-sonnet-4.5 | ")).unwrap();
    assert!(table.contains("| `workload.brief_tokens` |"), "{table}");
    // The sweep's closing text prints the same rows, and names the borrowed latency.
    assert!(closing.contains("the hold answer over the assumptions"), "{closing}");
    assert!(closing.contains("(gemini, gemini-2.5-flash): the cap to use"), "{closing}");
    assert!(
        closing.contains("latency of gemini-2.5-flash: claude-haiku-4.5's calibrated fit"),
        "{closing}"
    );
    assert!(md.contains("Latency borrowed: gemini-2.5-flash runs at claude-haiku-4.5's"), "{md}");
}

#[test]
fn the_ranges_are_read_off_the_points_the_comparison_shows() {
    let (dir, file) = write("pivot", RANGES);
    let (_, md) = sweep_and_report(&dir, &file);
    // The held strategy's least and greatest mean cost on the Gemini row are two of the costs
    // the comparison table shows for its points (the same numbers, not a second computation).
    let gemini = md.lines().find(|l| l.starts_with("| gemini | gemini-2.5-flash | `")).unwrap();
    let cost = gemini.split(" | ").nth(5).unwrap(); // policy, model, driven by, cap, after
    let (lo, hi) = cost.split_once(" – ").unwrap_or_else(|| panic!("a range: {gemini}"));
    let usd = |c: &str| c.split(' ').next().unwrap().to_string();
    let held: Vec<String> = md
        .lines()
        .filter(|l| l.starts_with("| gemini | ") && l.contains(" | `wait_first(max_wait=5s)` | "))
        .map(|l| usd(l.split(" | ").nth(5).unwrap()))
        .collect();
    assert_eq!(held.len(), 4, "a comparison row per point:\n{md}");
    assert!(held.contains(&usd(lo)) && held.contains(&usd(hi)), "{lo}..{hi} in {held:?}");
    assert_ne!(usd(lo), usd(hi));
}

#[test]
fn an_assumption_neither_set_nor_swept_still_exits_2() {
    let text = RANGES.replace("\"workload.brief_tokens\"]", "\"workload.brief_tokenz\"]");
    let (_, file) = write("bad", &text);
    let o = bin().args(["sweep", path(&file), "--out", "/dev/null/x"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("report.assumptions") && err.contains("workload.brief_tokenz"), "{err}");
}

const GPT: &str = "model = \"gpt-5.4\"\n[cache]\npolicy = \"openai\"\n";

#[test]
fn run_names_a_borrowed_latency_in_its_headline_and_its_json() {
    let (_, file) = write("run", GPT);
    let args = ["run", path(&file), "--set", "replications=2"];
    let table = ok(&bin().args(args).output().unwrap());
    let line = "latency: claude-sonnet-4.5's calibrated fit (no measurements of gpt-5.4)";
    assert!(table.lines().nth(2) == Some(line), "{table}");
    let json = ok(&bin().args(args).arg("--json").output().unwrap());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["latency_borrowed"], line.trim_start_matches("latency: "));
    // A model measured on itself has neither.
    let (_, own) = write("own", "model = \"claude-haiku-4.5\"\n");
    let own =
        ok(&bin().args(["run", path(&own), "--json", "--set", "replications=2"]).output().unwrap());
    assert!(!own.contains("latency_borrowed"), "{own}");
}

#[test]
fn the_hold_answer_of_tune_names_a_borrowed_latency() {
    let text =
        "model = \"gpt-5.4\"\nstrategies = [\"wait_first(max_wait=5s)\"]\nreplications = 2\n\
                [cache]\npolicy = \"openai\"\n[workload]\nagents = 3\n";
    let (_, file) = write("tune", text);
    let o = bin().args(["tune", path(&file), "--param", "max_wait", "--json"]).output().unwrap();
    let json = ok(&o);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let b = "claude-sonnet-4.5's calibrated fit (no measurements of gpt-5.4)";
    assert_eq!(v["hold"]["latency_borrowed"], b, "{json}");
    assert!(v["hold"]["sentence"].as_str().unwrap().contains(b), "{json}");
}
