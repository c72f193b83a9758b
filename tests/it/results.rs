//! The result files read back as they were written: for any manifest, summary rows, runs rows
//! and trace rows the writers accept, `Results::load` returns the same records. A real run's
//! files: exact extremes (no hold beyond its cap), tidy strategy columns, and one interval log
//! that a standard HdrHistogram log reader decodes to the histograms `Results` reads.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;
use prefixsim::metrics::{new_histogram, RunMetrics, LATENCY_NAMES, SCALAR_NAMES};
use prefixsim::results::{
    self, summary_columns, write_atomic, Manifest, ManifestAxis, Results, Shard, SummaryRow,
    TraceRow, Values, SEGMENT_KINDS,
};
use proptest::prelude::*;

use super::results_parts::histogram_keys;

/// A value as the result files hold it: a whole number of millionths (written `{:.6}`).
fn value() -> impl Strategy<Value = f64> {
    (0u64..1_000_000_000_000).prop_map(|k| k as f64 / 1e6)
}

/// Strategy labels as `config::strategy_label` writes them, distinct in their slugs.
fn labels() -> impl Strategy<Value = Vec<String>> {
    let family = prop::sample::select(vec!["eager", "stagger", "wait_first", "prewarm"]);
    let params = prop::collection::vec(("[a-z_]{1,8}", "[0-9]{1,4}(ms|s)"), 0..3);
    let label = (family, params).prop_map(|(f, ps)| {
        if ps.is_empty() {
            return f.to_string();
        }
        let ps: Vec<String> = ps.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{f}({})", ps.join(", "))
    });
    prop::collection::vec(label, 1..4).prop_map(|mut v| {
        let mut seen = std::collections::BTreeSet::new();
        v.retain(|l| seen.insert(results::slug(l)));
        v
    })
}

/// Axis cell text: anything on one line without surrounding blanks (commas, quotes and
/// unpaired parentheses included: the writer quotes them).
fn axis_text() -> impl Strategy<Value = String> {
    "[a-z0-9_.,()\"=]([a-z0-9_.,()\" =]{0,10}[a-z0-9_.,()\"=])?"
}

/// Scalars of runs.csv: counts are whole numbers (written as integers).
fn scalars() -> impl Strategy<Value = Values> {
    prop::collection::vec(value(), SCALAR_NAMES.len()).prop_map(|v| {
        let whole = |name: &str, x: f64| {
            if results::INTEGER_SCALARS.contains(&name) {
                x.round()
            } else {
                x
            }
        };
        SCALAR_NAMES.iter().zip(v).map(|(s, x)| (s.to_string(), whole(s, x))).collect()
    })
}

fn summary_values() -> impl Strategy<Value = Values> {
    let cols = summary_columns();
    prop::collection::vec(value(), cols.len())
        .prop_map(move |v| cols.iter().cloned().zip(v).collect())
}

/// One row of `runs.csv`: one replication of one strategy at one point.
#[derive(Debug, Clone)]
struct RunRow {
    point: u32,
    axis_values: Vec<String>,
    replication: u32,
    strategy: String,
    values: Values,
}

/// A run directory's rows: `points` points, each strategy once per point, `axes` axis values.
#[derive(Debug, Clone)]
struct Rows {
    axis_keys: Vec<String>,
    strategies: Vec<String>,
    summary: Vec<SummaryRow>,
    runs: Vec<RunRow>,
    /// Latency samples (microseconds) of each summary row, in `LATENCY_NAMES` order.
    samples: Vec<[Vec<u64>; 3]>,
}

fn rows() -> impl Strategy<Value = Rows> {
    (0usize..3, labels(), 1u32..4).prop_flat_map(|(axes, strategies, points)| {
        let axis_keys: Vec<String> = (0..axes).map(|a| format!("workload.key{a}")).collect();
        let cells = (points as usize) * strategies.len();
        let point_axes =
            prop::collection::vec(prop::collection::vec(axis_text(), axes), points as usize);
        let summary = prop::collection::vec((1u32..50, summary_values()), cells);
        let runs = prop::collection::vec(prop::collection::vec(scalars(), 1..3), cells);
        let sample = || prop::collection::vec(1u64..36_000_000_000, 0..8);
        let samples = prop::collection::vec([sample(), sample(), sample()], cells);
        (Just(axis_keys), Just(strategies), point_axes, summary, runs, samples).prop_map(
            |(axis_keys, strategies, point_axes, summary, runs, samples)| {
                let mut rows =
                    Rows { axis_keys, strategies, summary: vec![], runs: vec![], samples };
                let mut cell = 0;
                for (point, axis_values) in point_axes.iter().enumerate() {
                    for strategy in &rows.strategies {
                        let (replications, values) = summary[cell].clone();
                        let (point, strategy) = (point as u32, strategy.clone());
                        let axis_values = axis_values.clone();
                        for (r, values) in runs[cell].iter().enumerate() {
                            rows.runs.push(RunRow {
                                point,
                                axis_values: axis_values.clone(),
                                replication: r as u32,
                                strategy: strategy.clone(),
                                values: values.clone(),
                            });
                        }
                        let (axis_values, strategy) =
                            (axis_values.into_iter().collect(), strategy.into());
                        let row = SummaryRow { point, axis_values, strategy, replications, values };
                        rows.summary.push(row);
                        cell += 1;
                    }
                }
                rows
            },
        )
    })
}

fn manifest(strategies: Vec<String>) -> impl Strategy<Value = Manifest> {
    let axis = ("[a-z.]{1,12}", prop::collection::vec(any::<i64>(), 0..4)).prop_map(|(key, v)| {
        ManifestAxis { key, values: v.into_iter().map(serde_json::Value::from).collect() }
    });
    let text = "[ -~]{0,40}";
    (
        (text, text, any::<u64>(), 1u32..1000),
        prop::collection::vec(axis, 0..3),
        (1u64..1000, prop::option::of((0u64..4, 4u64..8))),
        (text, prop::bool::ANY),
    )
        .prop_map(
            move |((name, question, seed, reps), axes, (points, shard), (exp, sweep))| Manifest {
                prefixsim_version: env!("CARGO_PKG_VERSION").to_string(),
                kind: if sweep { "sweep" } else { "run" }.to_string(),
                name,
                question,
                seed: Some(seed),
                replications: Some(reps),
                strategies: strategies.clone(),
                axes,
                points: Some(points),
                shard: shard.map(|(index, count)| Shard { index, count }),
                content_hash: Some(results::content_hash(&exp)),
                experiment: Some(exp),
            },
        )
}

/// The three histograms of a row's samples.
fn histograms(samples: &[Vec<u64>; 3]) -> [Histogram<u64>; 3] {
    samples.clone().map(|values| {
        let mut h = new_histogram();
        values.iter().for_each(|&v| h.record(v).unwrap());
        h
    })
}

/// The aggregate of a row's samples, as one replication.
fn aggregate(samples: &[Vec<u64>; 3]) -> results::Aggregate {
    let mut run = RunMetrics::new();
    let latencies = [&mut run.launch_wait_us, &mut run.ttft_us, &mut run.completion_us];
    for (latency, values) in latencies.into_iter().zip(samples) {
        values.iter().for_each(|&v| latency.record(v));
    }
    let mut agg = results::Aggregate::new();
    agg.add(&run);
    agg
}

/// Write a complete run or sweep directory: summary, runs, the histogram log, manifest last.
fn write_dir(dir: &Path, m: &Manifest, rows: &Rows) {
    results::write_summary(dir, &rows.axis_keys, &rows.summary).unwrap();
    let mut text = results::runs_header(&rows.axis_keys) + "\n";
    for r in &rows.runs {
        let axes: Vec<toml::Value> = r.axis_values.iter().cloned().map(toml::Value::from).collect();
        let scalars = SCALAR_NAMES.map(|m| r.values.get(m).copied().unwrap());
        let line = results::runs_line(r.point, &axes, r.replication, &r.strategy, &scalars);
        text.push_str(&(line + "\n"));
    }
    write_atomic(&dir.join("runs.csv"), text).unwrap();
    let mut log = results::HistogramLog::create(dir).unwrap();
    for (r, samples) in rows.summary.iter().zip(&rows.samples) {
        log.add(r.point, &r.strategy, &aggregate(samples)).unwrap();
    }
    log.commit().unwrap();
    results::write_manifest(dir, m).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_written_directory_reads_back_equal(
        (rows, m) in rows().prop_flat_map(|rows| {
            let strategies = rows.strategies.clone();
            (Just(rows), manifest(strategies))
        })
    ) {
        let dir = tempdir();
        write_dir(dir.path(), &m, &rows);
        let r = Results::load(dir.path()).unwrap();
        prop_assert_eq!(r.manifest.as_ref(), Some(&m));
        prop_assert_eq!(&r.axis_keys, &rows.axis_keys);
        prop_assert_eq!(r.summary.iter().count(), rows.summary.len());
        for (got, want) in r.summary.iter().zip(&rows.summary) {
            prop_assert_eq!(
                (got.point, &got.axis_values, &got.strategy, got.replications),
                (want.point, &want.axis_values, &want.strategy, want.replications)
            );
            for c in results::SUMMARY_COLUMNS_READ {
                prop_assert_eq!(got.get(c), want.get(c), "{}", c);
            }
        }
        let mut runs = Vec::new();
        for p in r.points() {
            rows.strategies.iter().for_each(|s| runs.extend(r.runs_of(p, s)));
        }
        prop_assert_eq!(runs.len(), rows.runs.len());
        for (got, want) in runs.iter().zip(&rows.runs) {
            prop_assert_eq!((got.point, got.replication), (want.point, want.replication));
            prop_assert_eq!(got.strategy, &want.strategy);
            for c in results::runs::RUN_COLUMNS {
                prop_assert_eq!(got.get(c), want.values.get(c).copied(), "{}", c);
            }
        }
        prop_assert_eq!(histogram_keys(&r).len(), rows.summary.len() * 3);
        for (row, samples) in rows.summary.iter().zip(&rows.samples) {
            for (l, h) in LATENCY_NAMES.iter().zip(histograms(samples)) {
                let key = (row.point, row.strategy.to_string(), l.to_string());
                prop_assert_eq!(r.histograms.get(&key).unwrap(), &h);
            }
        }
    }

    #[test]
    fn trace_rows_read_back_equal(
        strategies in labels(),
        raw in prop::collection::vec(
            (0usize..3, 0u32..100, 0u32..1000, 0usize..6, 0u64..10_000_000_000, 0u64..1_000_000_000, 0usize..5),
            0..40,
        )
    ) {
        let outcomes = ["hit", "partial", "miss", "redundant_write", ""];
        let rows: Vec<TraceRow> = raw
            .into_iter()
            .map(|(s, agent, request, seg, start, len, o)| TraceRow {
                strategy: strategies[s % strategies.len()].clone(),
                agent,
                request,
                segment: SEGMENT_KINDS[seg].to_string(),
                start_s: start as f64 / 1e6,
                end_s: (start + len) as f64 / 1e6,
                outcome: outcomes[o].to_string(),
            })
            .collect();
        let dir = tempdir();
        results::write_trace(dir.path(), &rows).unwrap();
        match Results::load(dir.path()) {
            Ok(r) => prop_assert_eq!(r.trace, rows),
            // A directory with an empty trace and nothing else holds no results.
            Err(e) => prop_assert!(rows.is_empty(), "{e}"),
        }
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> TempDir {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("prefixsim-results-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// One `run --out` of a 2 s hold that the first writer's 50k-token prefill outlasts in part of
/// the replications, so that many holds end exactly at the cap.
fn capped_run() -> TempDir {
    let dir = tempdir();
    let toml = "replications = 20\nstrategies = [\"eager\", \"wait_first(max_wait=2s)\", \
                \"wait_first(max_wait=1500ms, release=timer)\"]\n\
                [workload]\nkind = \"fork\"\nagents = 6\nparent_tokens = 50000\n\
                turns = \"const(1)\"\n";
    let opts = prefixsim::RunOptions { out: Some(dir.path().to_path_buf()), ..Default::default() };
    prefixsim::Experiment::from_toml(toml).unwrap().run(&opts).unwrap();
    dir
}

/// The cell of summary.csv's `column` in the row of `label`, as a number (read from the file:
/// `Results` keeps only the columns plot and report read).
fn summary_cell(dir: &Path, label: &str, column: &str) -> f64 {
    let path = dir.join("summary.csv");
    let mut lines = results::table::CsvLines::open(&path).unwrap().unwrap();
    let (s, c) = (lines.csv.column("strategy").unwrap(), lines.csv.column(column).unwrap());
    while lines.next_row().unwrap().is_some() && &lines.row()[s] != label {}
    lines.row()[c].parse().unwrap()
}

#[test]
fn no_hold_exceeds_its_cap_and_the_extremes_are_exact() {
    let dir = capped_run();
    let r = Results::load(dir.path()).unwrap();
    for (label, cap) in
        [("wait_first(max_wait=2s)", 2.0), ("wait_first(max_wait=1500ms, release=timer)", 1.5)]
    {
        let max = summary_cell(dir.path(), label, "launch_wait_max_s");
        assert_eq!(max, cap, "{label}: the longest hold is the cap itself");
        for p in ["p50", "p90", "p99", "p999"] {
            let x = summary_cell(dir.path(), label, &results::pooled_column("launch_wait", p));
            assert!(x <= cap, "{label}: pooled {p} {x} beyond the cap {cap}");
        }
        // Its histogram alone would say more: the bucket's upper edge.
        let h = &r.histograms.get(&(0, label.to_string(), "launch_wait".to_string())).unwrap();
        assert!(h.max() as f64 / 1e6 > cap);
    }
    assert_eq!(summary_cell(dir.path(), "eager", "launch_wait_min_s"), 0.0);
    assert_eq!(summary_cell(dir.path(), "eager", "launch_wait_max_s"), 0.0);
}

#[test]
fn the_strategy_is_in_numeric_columns_and_counts_are_integers() {
    let dir = capped_run();
    let text = std::fs::read_to_string(dir.path().join("runs.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..7],
        [
            "point",
            "replication",
            "strategy",
            "strategy_family",
            "max_wait_s",
            "release",
            "interval_s"
        ]
    );
    let requests = header.iter().position(|h| *h == "requests").unwrap();
    let rows: Vec<Vec<String>> = lines.map(results::split_fields).collect();
    let timer = rows.iter().find(|r| r[2].contains("timer")).unwrap();
    assert_eq!(&timer[3..7], ["wait_first", "1.500000", "timer", ""]);
    assert!(rows.iter().all(|r| r[requests].parse::<u64>().is_ok()), "requests as integers");
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let line = summary.lines().find(|l| l.contains("max_wait=2s")).unwrap();
    assert!(line.contains(",20,wait_first,2,on_ready,,"), "whole seconds as integers: {line}");
}

/// A small sweep over a duration axis (`cache.ttl`) and a number axis, through the binary.
fn ttl_sweep() -> TempDir {
    let dir = tempdir();
    let exp = dir.path().join("ttl.toml");
    let toml = "name = \"ttl\"\nreplications = 2\n\
                strategies = [\"eager\", \"wait_first(max_wait=1500ms)\"]\n\
                [workload]\nkind = \"fork\"\nagents = 3\nparent_tokens = 20000\n\
                turns = \"const(1)\"\n[sweep]\n\"cache.ttl\" = [\"5m\", \"1h\"]\n\
                \"workload.agents\" = [2, 3]\n";
    std::fs::write(&exp, toml).unwrap();
    let out = dir.path().join("out");
    let o = super::common::bin().arg("sweep").arg(&exp).arg("--out").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

#[test]
fn a_duration_axis_has_a_numeric_seconds_column_that_the_reader_skips() {
    let dir = ttl_sweep();
    let out = dir.path().join("out");
    for file in ["summary.csv", "runs.csv"] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        let mut lines = text.lines();
        let header = results::split_fields(lines.next().unwrap());
        assert_eq!(header[1..4], ["cache.ttl", "cache.ttl_s", "workload.agents"], "{file}");
        let ttls: std::collections::BTreeSet<(String, String)> =
            lines.map(results::split_fields).map(|f| (f[1].clone(), f[2].clone())).collect();
        let want = [("1h", "3600"), ("5m", "300")].map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(ttls, want.into_iter().collect(), "{file}");
    }
    let r = Results::load(&out).unwrap();
    assert_eq!(r.axis_keys, ["cache.ttl", "workload.agents"]);
    assert!(r.summary.iter().all(|row| row.axis_values.len() == 2));
    for row in r.summary.iter() {
        let runs = r.runs_of(row.point, &row.strategy).count();
        assert_eq!(runs, 2, "two replications of each row");
    }
}

#[test]
fn the_long_format_holds_every_summary_cell_once() {
    let dir = ttl_sweep();
    let out = dir.path().join("out");
    let long_path = dir.path().join("long.csv");
    let o = super::common::bin()
        .args(["export", out.to_str().unwrap(), "--format", "long", "--out"])
        .arg(&long_path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.path().join("long.csv.tmp").exists(), "written atomically");
    let wide = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let long = std::fs::read_to_string(&long_path).unwrap();
    let mut wide_lines = wide.lines().map(results::split_fields);
    let wide_head = wide_lines.next().unwrap();
    let mut long_lines = long.lines().map(results::split_fields);
    let long_head = long_lines.next().unwrap();
    let n = long_head.len();
    assert_eq!(long_head[n - 2..], ["metric", "value"]);
    // Every (row id, column) cell of the wide file, and the long file's rows, as a multiset.
    let ids = &long_head[..n - 2];
    let mut cells: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    for f in wide_lines {
        let id: Vec<String> =
            ids.iter().map(|k| f[wide_head.iter().position(|h| h == k).unwrap()].clone()).collect();
        for (h, v) in wide_head.iter().zip(&f) {
            if !ids.contains(h) {
                cells.entry((id.clone(), h.clone())).or_default().push(v.clone());
            }
        }
    }
    let mut rows = 0;
    for f in long_lines {
        let key = (f[..n - 2].to_vec(), f[n - 2].clone());
        let left = cells.get_mut(&key).unwrap_or_else(|| panic!("{key:?} is no summary cell"));
        assert_eq!(left.pop().as_ref(), Some(&f[n - 1]), "{key:?}");
        rows += 1;
    }
    assert!(cells.values().all(Vec::is_empty), "summary cells missing from the long form");
    assert_eq!(rows, (wide.lines().count() - 1) * (wide_head.len() - ids.len()));
    assert!(
        long_head.contains(&"cache.ttl_s".to_string())
            && long_head.contains(&"strategy".to_string())
    );
    // Bad input: a directory without results is exit 2 and writes nothing.
    let o = super::common::bin()
        .args(["export", dir.path().to_str().unwrap(), "--format", "long"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.path().join("summary_long.csv").exists());
}

#[test]
fn the_interval_log_decodes_to_the_histograms_read() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let dir = capped_run();
    let r = Results::load(dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join(results::HISTOGRAM_LOG)).unwrap();
    assert!(text.starts_with("#[Histogram log format version 1.3]\n"), "{text}");
    let mut tags = Vec::new();
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        let LogEntry::Interval(i) = entry.unwrap() else { continue };
        let tag = i.tag().unwrap().as_str().to_string();
        let bytes = base64_decode(i.encoded_histogram());
        let h: Histogram<u64> = Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap();
        tags.push((tag, h));
    }
    let keys: Vec<(String, String)> = r
        .strategies()
        .into_iter()
        .flat_map(|s| LATENCY_NAMES.map(|l| (s.clone(), l.into())))
        .collect();
    assert_eq!(tags.len(), keys.len(), "one interval per strategy and latency");
    for ((tag, h), (s, l)) in tags.iter().zip(keys) {
        assert_eq!(*tag, results::histogram_tag(0, &s, &l), "in strategy order");
        assert_eq!(h, r.histograms.get(&(0, s, l)).unwrap(), "{tag}");
    }
}

#[test]
fn a_malformed_interval_log_is_an_error_naming_its_line() {
    let dir = capped_run();
    let path = dir.path().join(results::HISTOGRAM_LOG);
    let good = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    // The second interval (a TTFT), rewritten; `ttft` is its 0-based line index.
    let ttft = lines.iter().position(|l| l.starts_with("Tag=")).unwrap() + 1;
    let cases = [
        (lines[ttft].replacen("Tag=", "", 1), "without `Tag=`"),
        (lines[ttft].replacen("HISTF", "!!", 1), "not base64"),
        (lines[ttft].replacen("_ttft,", "_latency,", 1), "expected p<point:05>"),
        (lines[ttft].replacen(",0.000,", ",x,", 1), "start `x`"),
        (lines[ttft].rsplit_once(',').unwrap().0.to_string(), "found 4"),
        (format!("{}\n{}", lines[ttft], lines[ttft]), "appears twice"),
    ];
    for (bad, want) in cases {
        let mut text = lines.clone();
        text[ttft] = &bad;
        std::fs::write(&path, text.join("\n") + "\n").unwrap();
        let e = Results::load(dir.path()).unwrap_err().to_string();
        let at = format!("latency.hlog:{}: ", ttft + 1 + usize::from(want == "appears twice"));
        assert!(e.contains(&at) && e.contains(want), "{want}: {e}");
    }
}

/// Intervals out of their written order read to the same histograms; one named twice, however
/// far apart, is an error naming the second.
#[test]
fn an_interval_log_out_of_order_reads_the_same_and_a_repeat_is_found() {
    let dir = capped_run();
    let path = dir.path().join(results::HISTOGRAM_LOG);
    let good = std::fs::read_to_string(&path).unwrap();
    // Decoded before the file changes: the index reads the file again when asked.
    let want = Results::load(dir.path()).unwrap();
    let want: Vec<_> = histogram_keys(&want)
        .into_iter()
        .map(|k| (want.histograms.get(&k).unwrap().clone(), k))
        .collect();
    let (head, mut intervals): (Vec<&str>, Vec<&str>) =
        good.lines().partition(|l| !l.starts_with("Tag="));
    intervals.reverse();
    std::fs::write(&path, [head.clone(), intervals.clone()].concat().join("\n") + "\n").unwrap();
    let got = Results::load(dir.path()).unwrap();
    assert_eq!(histogram_keys(&got), want.iter().map(|w| w.1.clone()).collect::<Vec<_>>());
    for (h, key) in &want {
        assert_eq!(got.histograms.get(key).unwrap(), h, "{key:?}");
    }
    intervals.push(intervals[1]);
    let text = [head.clone(), intervals].concat();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    let e = Results::load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains(&format!("latency.hlog:{}: ", text.len())) && e.contains("appears twice"),
        "{e}"
    );
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}
