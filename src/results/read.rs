//! Reading a results directory (README.md, "Result files"), strictly: the trace into memory,
//! the summary, the runs and the histograms into indexes by point (`Summary`, `Runs`,
//! `Histograms`) that stream the rows, read a point's rows or decode a histogram again only
//! when it is asked for.
//!
//! Every file is optional, but what is present must parse: a malformed file is an error
//! naming the file and line. A directory with none of the known files holds no results.
//! This module knows the file formats, not what a figure or a report makes of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::csv::Csv;
use super::csv::{axis_cell, csv_cell};
use super::csv_lines::CsvLines;
use super::error::{read_opt, ResultsError};
use super::histograms::{load_histograms, Histograms};
use super::hlog::{histogram_tag, HISTOGRAM_LOG};
use super::runs::{Run, Runs};
use super::schema::{
    fmt_f, is_seconds_column, parse_label, Label, Manifest, SummaryRow, TraceRow, SEGMENT_KINDS,
    STRATEGY_COLUMNS,
};
use super::summary::Summary;
use crate::metrics::LATENCY_NAMES;

/// Everything a results directory holds.
#[derive(Debug, Default)]
pub struct Results {
    pub dir: PathBuf,
    pub manifest: Option<Manifest>,
    /// Axis keys (summary.csv columns between `point` and `strategy`).
    pub axis_keys: Vec<String>,
    /// The rows of summary.csv, indexed by point (in file order within a point): streamed
    /// or read again, with the columns `plot` and `report` read, when asked for.
    pub summary: Summary,
    /// The runs of runs.csv, indexed by point: read again, with the columns `plot` and
    /// `report` read, when asked for (`runs_of`).
    pub runs: Runs,
    /// (point, strategy label, latency name) -> merged histogram, microseconds: indexed,
    /// decoded when asked for.
    pub histograms: Histograms,
    pub trace: Vec<TraceRow>,
    pub tune: Option<serde_json::Value>,
    /// hold.json: a run's hold answer (`sweep::hold::HoldAnswer`), as `run --out` writes it.
    pub hold: Option<serde_json::Value>,
    /// hold.csv: a sweep's hold answer per point that has one (`HOLD_CSV`), in point order.
    pub hold_rows: Vec<HoldRow>,
    pub replay: Option<serde_json::Value>,
}

fn json_error(path: &Path, e: serde_json::Error) -> ResultsError {
    ResultsError::Malformed { path: path.to_path_buf(), line: e.line(), msg: e.to_string() }
}

/// Parse a JSON result file; every number in it must be one prefixsim could have written.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, ResultsError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(path, e))?;
    check_json(path, "", &v)?;
    serde_json::from_value(v).map_err(|e| json_error(path, e))
}

fn check_json(path: &Path, at: &str, v: &serde_json::Value) -> Result<(), ResultsError> {
    match v {
        serde_json::Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let name = at.rsplit('.').next().unwrap_or(at);
            match super::csv::check_number(name, x) {
                Some(why) => {
                    let (path, field) = (path.to_path_buf(), at.to_string());
                    Err(ResultsError::BadField { path, field, msg: format!("{n} {why}") })
                }
                None => Ok(()),
            }
        }
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_json(path, &format!("{at}[{i}]"), x)),
        serde_json::Value::Object(m) => m.iter().try_for_each(|(k, x)| {
            let field = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            check_json(path, &field, x)
        }),
        _ => Ok(()),
    }
}

impl Results {
    /// Read every known file of `dir`; error if none is there or one is malformed.
    pub fn load(dir: &Path) -> Result<Results, ResultsError> {
        if !dir.is_dir() {
            return Err(ResultsError::NoResults(dir.to_path_buf()));
        }
        let mut r = Results { dir: dir.to_path_buf(), ..Results::default() };
        let p = dir.join("manifest.json");
        if let Some(t) = read_opt(&p)? {
            r.manifest = Some(read_json(&p, &t)?);
        }
        let files = [
            ("tune.json", &mut r.tune),
            ("replay.json", &mut r.replay),
            ("hold.json", &mut r.hold),
        ];
        for (name, slot) in files {
            let p = dir.join(name);
            if let Some(t) = read_opt(&p)? {
                *slot = Some(read_json(&p, &t)?);
            }
        }
        if let Some(mut lines) = CsvLines::open(&dir.join("summary.csv"))? {
            r.summary = Summary::read(&mut lines)?;
            r.axis_keys = r.summary.axis_keys().to_vec();
        }
        if let Some(mut lines) = CsvLines::open(&dir.join(HOLD_CSV))? {
            r.hold_rows = read_hold(&mut lines, &r.summary)?;
        }
        if let Some(mut lines) = CsvLines::open(&dir.join("runs.csv"))? {
            r.runs = Runs::read(&mut lines)?;
        }
        if let Some(mut lines) = CsvLines::open(&dir.join("trace.csv"))? {
            r.trace = parse_trace(&mut lines)?;
        }
        r.histograms = load_histograms(dir, &r.strategies())?;
        r.check_complete()?;
        r.unify_swept_strategies();
        if r.manifest.is_none()
            && r.summary.is_empty()
            && r.trace.is_empty()
            && r.tune.is_none()
            && r.replay.is_none()
        {
            return Err(ResultsError::NoResults(dir.to_path_buf()));
        }
        Ok(r)
    }

    /// A run or sweep writes its manifest last: without one, its files are unfinished; with
    /// one, every file it vouches for (summary.csv, runs.csv, each row's three histograms)
    /// must be there. Directories of `tune` and `replay` have no manifest and are not checked.
    fn check_complete(&self) -> Result<(), ResultsError> {
        let dir = self.dir.clone();
        let has = |name: &str| dir.join(name).exists();
        let incomplete = |msg: String| ResultsError::Incomplete { dir: dir.clone(), msg };
        let Some(m) = &self.manifest else {
            let written = ["summary.csv", "runs.csv", HOLD_CSV, "histograms"];
            return match written.into_iter().find(|f| has(f)) {
                Some(f) => Err(incomplete(format!(
                    "{f} without manifest.json: the run or sweep that wrote it did not finish \
                     (the manifest is written last); run it again"
                ))),
                None => Ok(()),
            };
        };
        if !matches!(m.kind.as_str(), "run" | "sweep") {
            return Ok(());
        }
        let mut missing: Vec<String> =
            ["summary.csv", "runs.csv"].into_iter().filter(|f| !has(f)).map(String::from).collect();
        for (point, strategy) in self.summary.written_labels() {
            for l in LATENCY_NAMES {
                let key = (point, strategy.to_string(), l.to_string());
                if !self.histograms.contains_key(&key) {
                    let tag = histogram_tag(point, strategy, l);
                    missing.push(format!("{HISTOGRAM_LOG} interval {tag}"));
                }
            }
        }
        if let Some(first) = missing.first() {
            return Err(incomplete(format!(
                "manifest.json vouches for {first}{}, which is missing: the directory is \
                 incomplete; run it again",
                if missing.len() > 1 {
                    format!(" (and {} more)", missing.len() - 1)
                } else {
                    String::new()
                }
            )));
        }
        Ok(())
    }

    /// A sweep over a strategy's own parameter (`max_wait = "0s..10s step 2s"`) writes that
    /// strategy under a new label at each point (`wait_first(max_wait=0s)`, `..=2s`, ...). Give
    /// those rows one label, the manifest's with the swept value(s) replaced by `x`
    /// (`wait_first(max_wait=x)`), so that each strategy is one series.
    fn unify_swept_strategies(&mut self) {
        let Some(m) = &self.manifest else { return };
        let manifest = m.strategies.clone();
        let mut map: BTreeMap<String, String> = BTreeMap::new();
        for raw in labels_by_last_row(&self.summary).filter(|s| !manifest.iter().any(|m| m == s)) {
            let (fam, params) = parse_label(raw);
            let keys: Vec<&String> = params.iter().map(|p| &p.0).collect();
            let cands: Vec<&String> = manifest
                .iter()
                .filter(|c| {
                    let (f, p) = parse_label(c);
                    f == fam && p.iter().map(|q| &q.0).collect::<Vec<_>>() == keys
                })
                .collect();
            let [base] = cands[..] else { continue };
            let (_, base_params) = parse_label(base);
            let parts: Vec<String> = params
                .iter()
                .zip(&base_params)
                .map(|(p, b)| format!("{}={}", p.0, if p.1 == b.1 { p.1.as_str() } else { "x" }))
                .collect();
            let unified = format!("{fam}({})", parts.join(","));
            map.insert(base.clone(), unified.clone());
            map.insert(raw.to_string(), unified);
        }
        // The manifest's own label is one of the swept values only if no point has it next
        // to another member of its group; otherwise it is a strategy of its own. (Rows of a
        // point per group, counted in one walk: a scan of every row per row was quadratic.)
        let mut crowded: BTreeMap<&String, bool> = BTreeMap::new();
        let mut here: BTreeMap<&String, usize> = BTreeMap::new();
        let mut at = None;
        for (point, label) in self.summary.written_labels() {
            if at != Some(point) {
                here.clear();
                at = Some(point);
            }
            if let Some(u) = map.get(label) {
                let n = here.entry(u).or_insert(0);
                *n += 1;
                *crowded.entry(u).or_insert(false) |= *n > 1;
            }
        }
        let clash: Vec<String> = map
            .iter()
            .filter(|(k, u)| manifest.contains(k) && crowded.get(u).copied().unwrap_or(false))
            .map(|(k, _)| k.clone())
            .collect();
        for k in clash {
            map.remove(&k);
        }
        if map.is_empty() {
            return;
        }
        let rename = |s: &mut String| {
            if let Some(u) = map.get(s.as_str()) {
                *s = u.clone();
            }
        };
        if let Some(m) = &mut self.manifest {
            m.strategies.iter_mut().for_each(rename);
            m.strategies.dedup();
        }
        self.summary.relabel(|s| map.get(s).cloned());
        self.runs.relabel(|s| map.get(s).cloned());
        self.histograms.relabel(|s| map.get(s).cloned());
    }

    /// Strategy labels in the manifest's order, else in order of first appearance.
    pub fn strategies(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.manifest.as_ref().map(|m| m.strategies.clone()).unwrap_or_default();
        let seen = self
            .summary
            .labels()
            .map(|(_, l)| l.as_str())
            .chain(self.trace.iter().map(|t| t.strategy.as_str()));
        for s in seen {
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        }
        out
    }

    /// The experiment name (manifest), else the directory's name.
    pub fn name(&self) -> String {
        match &self.manifest {
            Some(m) => m.name.clone(),
            None => {
                self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            }
        }
    }

    /// The distinct points of the summary, ascending.
    pub fn points(&self) -> Vec<u32> {
        self.summary.points()
    }

    /// The summary rows of `point`, in file order, read again (`Summary::rows_at`).
    pub fn rows_at(&self, point: u32) -> Vec<SummaryRow> {
        self.summary.rows_at(point)
    }

    /// The runs.csv rows of (`point`, `strategy`), in file order (`Runs::of`).
    pub fn runs_of<'a>(&'a self, point: u32, strategy: &'a str) -> impl Iterator<Item = Run<'a>> {
        self.runs.of(point, strategy)
    }

    /// What was read again after `load` (histograms decoded, runs looked up) and did not
    /// parse, as the error naming its file and line: the directory changed under the reader.
    pub fn check_reads(&self) -> Result<(), ResultsError> {
        self.histograms.check()?;
        self.summary.check()?;
        self.runs.check()
    }

    /// The summary row of (`point`, `strategy`), read again.
    pub fn row(&self, point: u32, strategy: &str) -> Option<SummaryRow> {
        self.summary.row(point, strategy)
    }

    /// The hold answer of `point` (hold.csv), if it has one.
    pub fn hold_at(&self, point: u32) -> Option<&HoldRow> {
        let i = self.hold_rows.binary_search_by_key(&point, |h| h.point).ok()?;
        Some(&self.hold_rows[i])
    }
}

/// A sweep's hold answers: `hold.csv`, one row per point whose experiment asks for one
/// (`[report] answer = "hold_cap"` with a `wait_first`), in point order; no file when no
/// point does. Columns: `point`, the axis columns of summary.csv, then `HOLD_COLUMNS`.
pub const HOLD_CSV: &str = "hold.csv";

/// The columns of hold.csv after the axis columns (README.md, "Result files"): the fields of
/// `sweep::hold::HoldAnswer`, the interval split in two, an empty cell where it has none.
pub const HOLD_COLUMNS: [&str; 11] = [
    "strategy",
    "cap_s",
    "cap_lo_s",
    "cap_hi_s",
    "p_after_cap",
    "p_after_cap_draws",
    "ttft_p50_s",
    "ttft_p95_s",
    "ttft_p99_s",
    "draws",
    "knife_edge",
];

/// One point's hold answer as hold.csv holds it (`sweep::hold::HoldAnswer`, which this module
/// cannot name: `results` knows nothing of how answers are found).
#[derive(Debug, Clone, PartialEq)]
pub struct HoldRow {
    pub point: u32,
    /// The `wait_first` whose cap it is (a label of the experiment's strategies).
    pub strategy: Label,
    /// The cap to use, seconds.
    pub cap_s: f64,
    /// The smallest and largest cap recommended over the calibration's refits: both or none
    /// (no refits, or some refit has no cap meeting the objective).
    pub cap_range_s: Option<[f64; 2]>,
    /// Share (0-1) of replications whose first token came after the cap, at the point fit.
    pub p_after_cap: f64,
    /// The same share pooled over the refits (none without refits).
    pub p_after_cap_draws: Option<f64>,
    /// The first writer's time to first token from the hold's start, at the point fit.
    pub ttft_p50_s: f64,
    pub ttft_p95_s: f64,
    pub ttft_p99_s: f64,
    /// Refits the interval comes from (0: none).
    pub draws: u32,
    pub knife_edge: bool,
}

/// The header line of hold.csv for these axis columns (`results::axis_columns`), without
/// its `\n`.
pub fn hold_header(axis_columns: &[String]) -> String {
    let axes: String = axis_columns.iter().map(|k| format!("{},", csv_cell(k))).collect();
    format!("point,{axes}{}", HOLD_COLUMNS.join(","))
}

/// The line of `row` (without its `\n`); `axis_cells` are the point's axis cells in
/// `axis_columns` order (`results::axis_cells`), as runs.csv writes them.
pub fn hold_line(row: &HoldRow, axis_cells: &[toml::Value]) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), fmt_f);
    let mut s = format!("{},", row.point);
    for v in axis_cells {
        s.push_str(&axis_cell(v));
        s.push(',');
    }
    let cells = [
        csv_cell(&row.strategy).into_owned(),
        fmt_f(row.cap_s),
        opt(row.cap_range_s.map(|r| r[0])),
        opt(row.cap_range_s.map(|r| r[1])),
        fmt_f(row.p_after_cap),
        opt(row.p_after_cap_draws),
        fmt_f(row.ttft_p50_s),
        fmt_f(row.ttft_p95_s),
        fmt_f(row.ttft_p99_s),
        row.draws.to_string(),
        row.knife_edge.to_string(),
    ];
    s.push_str(&cells.join(","));
    s
}

/// Read hold.csv (its header read), checking every row: its header is `point`, the axis
/// columns of `summary` (when there is one), then `HOLD_COLUMNS`; points ascend, once each,
/// and are points of the summary; shares are 0-1, durations and draws not negative, the
/// interval both-or-neither and ordered. One row a point in memory (~100 bytes; labels
/// shared), like the summary's index. Errors name the file and line.
fn read_hold(lines: &mut CsvLines, summary: &Summary) -> Result<Vec<HoldRow>, ResultsError> {
    let csv = lines.csv.clone();
    let bad =
        |line: usize, msg: String| ResultsError::Malformed { path: csv.path.clone(), line, msg };
    let n = csv.header.len();
    let first = n.checked_sub(HOLD_COLUMNS.len()).filter(|&f| f >= 1);
    let shape_ok = first.is_some_and(|f| {
        csv.header[0] == "point" && csv.header[f..].iter().zip(HOLD_COLUMNS).all(|(a, b)| a == b)
    });
    let Some(first) = first.filter(|_| shape_ok) else {
        return Err(bad(
            1,
            format!("the header must be `point,<axis columns...>,{}`", HOLD_COLUMNS.join(",")),
        ));
    };
    let axes = &csv.header[1..first];
    let keys: Vec<&String> =
        (0..axes.len()).filter(|&i| !is_seconds_column(axes, i)).map(|i| &axes[i]).collect();
    if !summary.is_empty()
        && keys.iter().map(|k| k.as_str()).ne(summary.axis_keys().iter().map(String::as_str))
    {
        return Err(bad(
            1,
            format!(
                "axis columns `{}` are not summary.csv's (`{}`)",
                keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(","),
                summary.axis_keys().join(",")
            ),
        ));
    }
    let points = summary.points();
    let mut rows: Vec<HoldRow> = Vec::new();
    while let Some(line) = lines.next_row()? {
        let f = lines.row();
        let point: u32 = csv.parse_field(line, f, 0)?;
        if let Some(last) = rows.last().map(|r| r.point).filter(|&l| point <= l) {
            return Err(bad(
                line,
                format!("point {point} after point {last}: one row a point, in point order"),
            ));
        }
        if !summary.is_empty() && points.binary_search(&point).is_err() {
            return Err(bad(line, format!("point {point} is not a point of summary.csv")));
        }
        let num = |i: usize| csv.parse_number(line, f, first + i);
        let opt = |i: usize| match f[first + i].is_empty() {
            true => Ok(None),
            false => num(i).map(Some),
        };
        let text = &f[first];
        let strategy = match rows.last() {
            Some(r) if &*r.strategy == text.as_str() => r.strategy.clone(),
            _ => Label::from(text.as_str()),
        };
        let range = match (opt(2)?, opt(3)?) {
            (Some(lo), Some(hi)) if lo <= hi => Some([lo, hi]),
            (None, None) => None,
            (lo, hi) => {
                let msg = format!(
                    "cap_lo_s `{}` and cap_hi_s `{}`: both or neither, the first not above \
                     the second",
                    lo.map_or(String::new(), fmt_f),
                    hi.map_or(String::new(), fmt_f)
                );
                return Err(bad(line, msg));
            }
        };
        let knife_edge = match f[first + 10].as_str() {
            "true" => true,
            "false" => false,
            other => {
                return Err(bad(
                    line,
                    format!("column `knife_edge`: `{other}` is not true or false"),
                ))
            }
        };
        let row = HoldRow {
            point,
            strategy,
            cap_s: num(1)?,
            cap_range_s: range,
            p_after_cap: num(4)?,
            p_after_cap_draws: opt(5)?,
            ttft_p50_s: num(6)?,
            ttft_p95_s: num(7)?,
            ttft_p99_s: num(8)?,
            draws: csv.parse_field(line, f, first + 9)?,
            knife_edge,
        };
        let seconds = [row.cap_s, row.ttft_p50_s, row.ttft_p95_s, row.ttft_p99_s];
        let shares = [Some(row.p_after_cap), row.p_after_cap_draws];
        if let Some(x) = seconds.iter().chain(row.cap_range_s.iter().flatten()).find(|x| **x < 0.0)
        {
            return Err(bad(
                line,
                format!("a duration of {} s: durations are not negative", fmt_f(*x)),
            ));
        }
        if let Some(x) = shares.into_iter().flatten().find(|x| !(0.0..=1.0).contains(x)) {
            return Err(bad(line, format!("a share of {}: shares are 0-1", fmt_f(x))));
        }
        rows.push(row);
    }
    rows.shrink_to_fit();
    Ok(rows)
}

/// The distinct labels of the summary as written, ordered by the last row that carries each:
/// a walk over them meets each label's last row in point order, as a walk over the rows would.
fn labels_by_last_row(summary: &Summary) -> impl Iterator<Item = &str> {
    let mut last: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, (_, l)) in summary.written_labels().enumerate() {
        last.insert(l, i);
    }
    let mut labels: Vec<(usize, &str)> = last.into_iter().map(|(l, i)| (i, l)).collect();
    labels.sort_unstable();
    labels.into_iter().map(|(_, l)| l)
}

/// How many of `STRATEGY_COLUMNS` the header has at `at` (all or none: files written before
/// them have none). They restate the strategy label, so the reader skips them.
pub(super) fn strategy_columns_at(csv: &Csv, at: usize) -> usize {
    let n = STRATEGY_COLUMNS.len();
    let here = csv.header.get(at..at + n);
    if here.is_some_and(|h| h.iter().zip(STRATEGY_COLUMNS).all(|(a, b)| a == b)) {
        n
    } else {
        0
    }
}

fn parse_trace(lines: &mut CsvLines) -> Result<Vec<TraceRow>, ResultsError> {
    let csv = &lines.csv.clone();
    let cols = ["strategy", "agent", "request", "segment", "start_s", "end_s", "outcome"];
    let mut idx = [0usize; 7];
    for (i, c) in cols.iter().enumerate() {
        idx[i] = csv.column(c)?;
    }
    let mut rows = Vec::new();
    while let Some(line) = lines.next_row()? {
        let f = lines.row();
        let segment = f[idx[3]].clone();
        if !SEGMENT_KINDS.contains(&segment.as_str()) {
            return Err(ResultsError::Malformed {
                path: csv.path.clone(),
                line,
                msg: format!("segment `{segment}` is not one of {}", SEGMENT_KINDS.join("|")),
            });
        }
        let row = TraceRow {
            strategy: f[idx[0]].clone(),
            agent: csv.parse_field(line, f, idx[1])?,
            request: csv.parse_field(line, f, idx[2])?,
            segment,
            start_s: csv.parse_number(line, f, idx[4])?,
            end_s: csv.parse_number(line, f, idx[5])?,
            outcome: f[idx[6]].clone(),
        };
        if row.end_s < row.start_s || row.end_s.is_nan() || row.start_s.is_nan() {
            return Err(ResultsError::Malformed {
                path: csv.path.clone(),
                line,
                msg: format!("end_s {} is before start_s {}", row.end_s, row.start_s),
            });
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(point: u32) -> HoldRow {
        HoldRow {
            point,
            strategy: "wait_first(max_wait=1s,release=timer)".into(),
            cap_s: 2.75,
            cap_range_s: Some([2.5, 3.125]),
            p_after_cap: 0.02,
            p_after_cap_draws: Some(0.0625),
            ttft_p50_s: 1.5,
            ttft_p95_s: 2.5,
            ttft_p99_s: 3.0,
            draws: 20,
            knife_edge: true,
        }
    }

    fn read(text: &str) -> Result<Vec<HoldRow>, ResultsError> {
        let path = super::super::test_csv("hold", "hold", text);
        read_hold(&mut CsvLines::open(&path).unwrap().unwrap(), &Summary::default())
    }

    #[test]
    fn hold_csv_reads_back_what_is_written_and_names_the_line_of_a_bad_row() {
        let cells = [toml::Value::String("5m".into()), toml::Value::Integer(300)];
        let head = hold_header(&["cache.ttl".into(), "cache.ttl_s".into()]);
        let none = HoldRow { cap_range_s: None, p_after_cap_draws: None, draws: 0, ..row(4) };
        let text =
            format!("{head}\n{}\n{}\n", hold_line(&row(1), &cells), hold_line(&none, &cells));
        assert!(text.contains("1,5m,300,\"wait_first(max_wait=1s,release=timer)\",2.750000,"));
        assert!(text.contains(",2.750000,,,0.020000,,1.500000,"), "{text}");
        assert_eq!(read(&text).unwrap(), vec![row(1), none]);
        let bad = |from: &str, to: &str, want: &str| {
            let e = read(&text.replacen(from, to, 1)).unwrap_err().to_string();
            assert!(e.contains("hold.csv:") && e.contains(want), "{from} -> {to}: {e}");
        };
        bad(",true\n", ",yes\n", ":2: column `knife_edge`: `yes` is not true or false");
        bad("\n4,", "\n1,", ":3: point 1 after point 1");
        bad(",0.020000,", ",1.500000,", ":2: a share of 1.500000");
        bad("2.500000,3.125000", "2.500000,", ":2: cap_lo_s `2.500000` and cap_hi_s ``");
        bad("2.500000,3.125000", "3.500000,3.125000", ":2: cap_lo_s");
        bad(",2.750000,2.500000", ",-1.000000,2.500000", ":2: a duration of -1.000000 s");
        bad(",20,true", ",x,true", ":2: column `draws`: `x` is not a valid number");
        bad(",2.750000,2.500000", ",inf,2.500000", "column `cap_s`: `inf` is not a finite number");
        bad("knife_edge", "knife", ":1: the header must be");
    }
}
