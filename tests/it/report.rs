//! The design-review report answers the experiment's question: `[report] answer` is checked
//! like every other key, the hold-cap pivot is the one a reader computes by hand from
//! summary.csv, and counts agree with their nouns.

use crate::common::{bin, scratch};
use prefixsim::report::words::{count, is_are};

const HOLD: &str = r#"name = "tiny-hold"
question = "Which hold cap for a given prefix size?"
model = "claude-sonnet-4.6"
seed = 7
replications = 6
strategies = ["eager", "wait_first(max_wait=1s)", "wait_first(max_wait=5s)", "wait_first(max_wait=30s)", "prewarm"]

[workload]
kind = "fork"
agents = 4
parent_tokens = 50000
parent_warm = false
turns = "const(1)"

[sweep]
"workload.parent_tokens" = [5000, 300000]

[report]
answer = "hold_cap"
"#;

fn exit_2_naming(text: &str, name: &str, parts: &[&str]) {
    let dir = scratch("report", name);
    let file = dir.join("exp.toml");
    std::fs::write(&file, text).unwrap();
    let o = bin().args(["run", file.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for p in parts {
        assert!(err.contains(p), "`{p}` missing from: {err}");
    }
    assert!(err.contains("exp.toml"), "the file is named: {err}");
}

#[test]
fn an_unknown_answer_exits_2_naming_key_value_and_the_accepted_values() {
    let text = HOLD.replace("answer = \"hold_cap\"", "answer = \"cheapest\"");
    exit_2_naming(&text, "bad-answer", &["report.answer", "\"cheapest\"", "hold_cap, cost"]);
}

#[test]
fn an_unknown_report_key_exits_2_naming_it_and_the_accepted_keys() {
    let text = HOLD.replace("answer = \"hold_cap\"", "answr = \"hold_cap\"");
    exit_2_naming(&text, "bad-key", &["report.answr", "did you mean `report.answer`", "tolerance"]);
}

#[test]
fn an_assumption_the_file_does_not_set_exits_2() {
    let text = format!("{HOLD}assumptions = [\"workload.brief_tokenz\"]\n");
    exit_2_naming(&text, "bad-assumption", &["report.assumptions", "workload.brief_tokenz"]);
}

#[test]
fn counts_agree_with_their_noun_and_verb() {
    assert_eq!(format!("1 of {} {}", count(7, "point", "points"), is_are(1)), "1 of 7 points is");
    assert_eq!(format!("{} {}", count(1, "slice", "slices"), is_are(1)), "1 slice is");
    assert_eq!(format!("{} {}", count(3, "slice", "slices"), is_are(3)), "3 slices are");
}

/// summary.csv as (point value, strategy, mean cost) rows.
fn costs(summary: &str) -> Vec<(String, String, f64)> {
    let mut lines = summary.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (v, s, c) = (col("workload.parent_tokens"), col("strategy"), col("cost_usd_mean"));
    lines
        .map(|l| {
            // Strategy labels hold no comma here; the cells split plainly.
            let cells: Vec<&str> = l.split(',').collect();
            (cells[v].to_string(), cells[s].to_string(), cells[c].parse().unwrap())
        })
        .collect()
}

#[test]
fn a_small_sweeps_report_states_the_pivot_cap_computed_by_hand_from_summary_csv() {
    let dir = scratch("report", "pivot");
    let file = dir.join("hold.toml");
    std::fs::write(&file, HOLD).unwrap();
    let out = dir.join("results");
    let o = bin()
        .args(["sweep", file.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md_path = dir.join("README.md");
    let o = bin()
        .args(["report", out.to_str().unwrap(), "--out", md_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(&md_path).unwrap();
    let rows = costs(&std::fs::read_to_string(out.join("summary.csv")).unwrap());
    let results = prefixsim::results::Results::load(&out).unwrap();
    // By hand: the cheapest strategy's mean cost at each size, then the smallest cap (eager
    // being no hold) within 5% of it.
    let caps = [
        ("eager", "no hold (`eager`)"),
        ("wait_first(max_wait=1s)", "1 s"),
        ("wait_first(max_wait=5s)", "5 s"),
        ("wait_first(max_wait=30s)", "30 s"),
    ];
    for size in ["5000", "300000"] {
        let here: Vec<&(String, String, f64)> = rows.iter().filter(|r| r.0 == size).collect();
        let best = here.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
        let cost_of = |s: &str| here.iter().find(|r| r.1 == s).unwrap().2;
        let pick = caps.iter().find(|(s, _)| cost_of(s) <= best * 1.05).map(|c| c.1);
        let pick = pick.expect("a cap within 5%");
        // The row: the size, the cap to use (hold.csv) and how often the first token comes
        // after it, then the listed cap within tolerance, beside it.
        let row = md.lines().find(|l| l.starts_with(&format!("| {size} |"))).unwrap();
        let cells: Vec<&str> = row.split(" | ").collect();
        assert_eq!(cells[3], pick, "the answer table's row `{row}`:\n{md}");
        let point = if size == "5000" { 0 } else { 1 };
        let h = results.hold_at(point).expect("a hold answer at every point");
        let cap = format!("{:.3}", h.cap_s);
        let cap = cap.trim_end_matches('0').trim_end_matches('.');
        assert!(cells[1].starts_with(&format!("{cap} s")), "hold.csv's cap {cap} in `{row}`");
    }
    // "The cap to use" is hold.csv's, and nothing else is called so.
    let lead = md.lines().find(|l| l.starts_with("- The cap to use (`hold.csv`")).unwrap();
    assert!(lead.contains("for `workload.parent_tokens` = 5000"), "{lead}");
    for l in md.lines().filter(|l| l.to_lowercase().contains("the cap to use")) {
        assert!(l.contains("hold.csv"), "`the cap to use` not from hold.csv: {l}");
    }
    assert!(md.contains("## Answer: the hold cap to use"), "{md}");
    assert!(md.contains("## Assumptions"), "{md}");
    let borrowed = "`calibrated`: claude-sonnet-4.5's calibrated fit (no measurements of \
                    claude-sonnet-4.6), fit to 267 measured requests of claude-sonnet-4.5";
    assert!(md.contains(borrowed), "{md}");
}
