//! A results directory of many points is read with bounded work: loading it indexes the
//! histograms and decodes none; the figures and the report decode only those they draw (the
//! latencies of one point), whatever the number of points. A histogram that does not decode
//! is an error naming its line when it is drawn; the earlier one-file-per-histogram layout
//! reads to the same histograms.

use std::path::{Path, PathBuf};

use prefixsim::metrics::LATENCY_NAMES;
use prefixsim::results::{self, Results};
use prefixsim::{plot, report};

use super::common::{bin, scratch};
use super::results_parts::histogram_keys;

const STRATEGIES: usize = 2;

/// `sweep --out` of a small fork at `points` parent sizes, one replication each.
fn sweep(name: &str, points: u32) -> PathBuf {
    let dir = scratch("large-results", name);
    let toml = format!(
        "name = \"large\"\nreplications = 1\n\
         strategies = [\"eager\", \"wait_first(max_wait=2s)\"]\n\
         [workload]\nkind = \"fork\"\nagents = 3\nparent_tokens = 5000\nturns = \"const(1)\"\n\
         [sweep]\n\"workload.parent_tokens\" = \"1000..{} step 100\"\n",
        900 + points * 100
    );
    let file = dir.join("large.toml");
    std::fs::write(&file, toml).unwrap();
    let out = dir.join("out");
    let o = bin()
        .args(["sweep", file.to_str().unwrap(), "--jobs", "2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn the_report_of_a_sweep_decodes_only_the_histograms_it_draws() {
    let points = 400;
    let r = Results::load(&sweep("bounded", points)).unwrap();
    assert_eq!(histogram_keys(&r).len(), points as usize * STRATEGIES * LATENCY_NAMES.len());
    assert_eq!(r.histograms.decodes(), 0, "loading indexes the histograms, decodes none");
    let figures = plot::figures(&r);
    let drawn = figures.iter().filter(|f| f.name.ends_with("_percentiles")).count();
    assert_eq!(drawn, LATENCY_NAMES.len(), "every latency of the chosen point is drawn");
    let doc = report::build::build(&r, &figures).to_markdown();
    assert!(doc.contains("launch_wait_percentiles"), "{doc}");
    assert_eq!(
        r.histograms.decodes(),
        STRATEGIES * LATENCY_NAMES.len(),
        "one point's histograms, each decoded once, of {}",
        histogram_keys(&r).len()
    );
    r.histograms.check().unwrap();
}

/// A (point, strategy)'s runs, found by a search for the point, are the rows a scan finds, in
/// the same order, for every point and strategy of a sweep.
#[test]
fn the_runs_of_a_point_are_found_by_search_as_by_scan() {
    let dir = sweep("runs-of", 40);
    let r = Results::load(&dir).unwrap();
    assert!(!r.runs.is_empty());
    let text = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let mut lines = text.lines().map(results::split_fields);
    let head = lines.next().unwrap();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (p, rep, s, cost) = (col("point"), col("replication"), col("strategy"), col("cost_usd"));
    let rows: Vec<Vec<String>> = lines.collect();
    for row in r.summary.iter() {
        let found: Vec<_> = r
            .runs_of(row.point, &row.strategy)
            .map(|u| (u.point, u.replication, u.get("cost_usd")))
            .collect();
        let scanned: Vec<_> = rows
            .iter()
            .filter(|f| f[p] == row.point.to_string() && f[s] == row.strategy.as_str())
            .map(|f| (row.point, f[rep].parse().unwrap(), f[cost].parse().ok()))
            .collect();
        assert_eq!(found, scanned, "point {} {}", row.point, row.strategy);
        assert!(!found.is_empty(), "point {} {} has runs", row.point, row.strategy);
    }
}

/// Each interval of the log, as (tag, base64 histogram).
fn intervals(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join(results::HISTOGRAM_LOG)).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("Tag="))
        .map(|l| {
            let (tag, rest) = l.split_once(',').unwrap();
            (tag.to_string(), rest.rsplit(',').next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn a_histogram_that_does_not_decode_is_an_error_naming_its_line_when_drawn() {
    let dir = sweep("undecodable", 3);
    let path = dir.join(results::HISTOGRAM_LOG);
    // Valid base64 of three zero bytes: no V2 histogram. Every interval, so whichever the
    // figures ask for first is the one reported.
    let text = std::fs::read_to_string(&path).unwrap();
    let bad: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix("Tag=") {
            Some(_) => format!("{},AAAA", l.rsplit_once(',').unwrap().0),
            None => l.to_string(),
        })
        .collect();
    std::fs::write(&path, bad.join("\n") + "\n").unwrap();
    let r = Results::load(&dir).unwrap();
    assert!(r.histograms.check().is_ok(), "nothing is decoded yet");
    for args in [vec!["plot"], vec!["report"]] {
        let o = bin().args(&args).arg(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("latency.hlog:") && err.contains("not a V2 HdrHistogram"), "{err}");
        assert!(!dir.join("plots").exists(), "{args:?} wrote before it failed");
    }
}

#[test]
fn the_one_file_per_histogram_layout_reads_to_the_same_histograms() {
    let dir = sweep("legacy", 3);
    // Decoded now: a `Results` reads its histograms from the files when asked.
    let log = Results::load(&dir).unwrap();
    let want: Vec<_> = histogram_keys(&log)
        .into_iter()
        .map(|k| (log.histograms.get(&k).unwrap().clone(), k))
        .collect();
    assert_eq!(want.len(), 3 * STRATEGIES * LATENCY_NAMES.len());
    for (tag, encoded) in intervals(&dir) {
        std::fs::write(dir.join("histograms").join(tag + ".hdr"), encoded + "\n").unwrap();
    }
    std::fs::remove_file(dir.join(results::HISTOGRAM_LOG)).unwrap();
    let legacy = Results::load(&dir).unwrap();
    assert_eq!(legacy.histograms.decodes(), 0);
    let keys = histogram_keys(&legacy);
    assert_eq!(keys, want.iter().map(|w| w.1.clone()).collect::<Vec<_>>());
    for (h, key) in &want {
        assert_eq!(legacy.histograms.get(key).unwrap(), h, "{key:?}");
    }
}
