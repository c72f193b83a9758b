//! Tests: the figures a reviewer opens. `plot --format svg,png` writes a PNG beside every SVG
//! (runs, sweeps, replays, the covered-prefix figure), and so does `plots/` in the
//! repository; the drawn text says what the rules promise: units once, TTLs marked on the
//! reuse gaps, the prewarm request named as such, durations as durations.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::common::{bin, scratch};

/// Every file under `dir` (recursively) whose name ends in `ext`, as paths without it.
fn stems(dir: &Path, ext: &str) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(stems(&p, ext));
        } else if p.extension().is_some_and(|x| x == ext) {
            out.insert(p.with_extension(""));
        }
    }
    out
}

/// The SVGs under `dir` that have no PNG beside them.
fn svgs_without_png(dir: &Path) -> Vec<PathBuf> {
    let pngs = stems(dir, "png");
    stems(dir, "svg").into_iter().filter(|s| !pngs.contains(s)).collect()
}

fn ok(args: &[&str]) {
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "prefixsim {args:?}: {err}");
}

/// The text of every `<text>` element of `svg`, entities decoded (enough for these checks).
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.to_string()))
        .map(|t| {
            t.trim()
                .replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&apos;", "'")
        })
        .collect()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A run with a trace (timelines, latency), a replay and the covered-prefix figure, each
/// plotted as `svg,png`: one PNG per SVG; and what their text says.
#[test]
fn plot_writes_a_png_beside_every_svg_and_says_what_it_shows() {
    let dir = scratch("figures_shipped", "pairs");
    let d = |p: &str| dir.join(p).to_str().unwrap().to_string();
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/default.toml");
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/data/samples/requests.jsonl");
    ok(&["run", exp, "--out", &d("run"), "--trace", "--set", "replications=2"]);
    ok(&["plot", &d("run"), "--out", &d("figs/run"), "--format", "svg,png"]);
    let ttl = ["--set", "cache.policy=every-block", "--set", "cache.ttl=10min"];
    ok(&[&["replay", trace][..], &ttl, &["--out", &d("replay")]].concat());
    ok(&["plot", &d("replay"), "--out", &d("figs/replay"), "--format", "svg,png"]);
    ok(&["plot", "--covered-prefix", "--out", &d("figs/covered"), "--format", "svg,png"]);
    let figs = dir.join("figs");
    assert!(stems(&figs, "svg").len() >= 10, "{:?}", stems(&figs, "svg"));
    assert_eq!(svgs_without_png(&figs), Vec::<PathBuf>::new());
    for svg in stems(&figs, "svg") {
        for t in texts(&read(&svg.with_extension("svg"))) {
            assert!(!t.contains(") ("), "{}: a unit said twice in `{t}`", svg.display());
        }
    }
    // The reuse gaps: log-spaced bins on a log axis, the TTLs marked.
    let gaps = texts(&read(&figs.join("replay/replay_reuse_gap_histogram.svg")));
    for want in ["5 min TTL", "1 h TTL", "this replay's TTL 10min", "Reuse gap (s, log scale)"] {
        assert!(gaps.iter().any(|t| t == want), "no `{want}` in {gaps:?}");
    }
    let cap = texts(&read(&figs.join("replay/replay_hit_rate_vs_capacity.svg")));
    assert!(cap.iter().any(|t| t == "capacity (share of distinct tokens, log scale)"), "{cap:?}");
    // The prewarm request is not one of the 3 agents.
    let lanes = texts(&read(&figs.join("run/timeline_prewarm.svg")));
    assert!(lanes.iter().any(|t| t == "prewarm"), "{lanes:?}");
    assert!(!lanes.iter().any(|t| t == "agent 3"), "{lanes:?}");
}

/// A swept duration that is not whole milliseconds reads as seconds, and values that would
/// crowd near zero on a linear axis are placed evenly, each labelled.
#[test]
fn swept_durations_read_as_durations_and_crowded_values_are_spread() {
    let dir = scratch("figures_shipped", "durations");
    let d = |p: &str| dir.join(p).to_str().unwrap().to_string();
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/drop_tool_vs_deny.toml");
    ok(&["sweep", exp, "--out", &d("sweep"), "--set", "replications=2"]);
    ok(&["plot", &d("sweep"), "--out", &d("figs"), "--format", "svg"]);
    let every = texts(&read(&dir.join("figs/cost_vs_workload_parent_turn_every.svg")));
    for want in ["0s", "2s", "8.57s", "10s", "1min"] {
        assert!(every.iter().any(|t| t == want), "no tick `{want}` in {every:?}");
    }
    assert!(every.iter().any(|t| t == "workload.parent_turn_every (evenly spaced)"));
    for svg in stems(&dir.join("figs"), "svg") {
        let all = read(&svg.with_extension("svg"));
        assert!(!all.contains("8571428us"), "{}: a raw duration", svg.display());
        assert!(!all.contains("const(</text>"), "{}: a value broken in two", svg.display());
    }
}

/// `plots/` in the repository: a PNG beside every SVG (plots/regenerate.sh plots
/// `--format svg,png`).
#[test]
fn shipped_plots_have_a_png_beside_every_svg() {
    let plots = Path::new(env!("CARGO_MANIFEST_DIR")).join("plots");
    assert!(stems(&plots, "svg").len() > 20);
    assert_eq!(svgs_without_png(&plots), Vec::<PathBuf>::new(), "run plots/regenerate.sh");
}
