//! Reading a results directory (docs/results.md), strictly: the trace into memory,
//! the summary, the runs and the histograms into indexes by point (`Summary`, `Runs`,
//! `Histograms`) that stream the rows, read a point's rows or decode a histogram again only
//! when it is asked for.
//!
//! Every file is optional, but what is present must parse: a malformed file is an error
//! naming the file and line. A directory with none of the known files holds no results.
//! This module knows the file formats, not what a figure or a report makes of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::{read_opt, ResultsError};
use super::histograms::{load_histograms, Histograms};
use super::hlog::{histogram_tag, HISTOGRAM_LOG};
use super::hold::{read_hold, HoldRow, HOLD_CSV};
use super::runs::{Run, Runs};
use super::schema::{parse_label, Manifest, SummaryRow, TraceRow, SEGMENT_KINDS, TRACE_HEADER};
use super::summary::Summary;
use super::table::{check_number, CsvLines};
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
    ResultsError::malformed(path, e.line(), e.to_string())
}

/// Parse the JSON result file at `path` (`None` if there is none); every number in it must be
/// one prefixsim could have written.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, ResultsError> {
    let Some(text) = read_opt(path)? else { return Ok(None) };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| json_error(path, e))?;
    check_json(path, "", &v)?;
    serde_json::from_value(v).map(Some).map_err(|e| json_error(path, e))
}

/// A manifest's axis value as the text of its cell in summary.csv (`schema::axis_text`):
/// strings as they are, integers as written, floats `{:.6}`, arrays as TOML.
fn manifest_axis_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_f64() => {
            super::schema::fmt_f(n.as_f64().unwrap_or(f64::NAN))
        }
        serde_json::Value::Array(_) => {
            json_to_toml(v).map_or_else(|| v.to_string(), |t| t.to_string())
        }
        other => other.to_string(),
    }
}

fn json_to_toml(v: &serde_json::Value) -> Option<toml::Value> {
    Some(match v {
        serde_json::Value::String(s) => toml::Value::String(s.clone()),
        serde_json::Value::Bool(b) => toml::Value::Boolean(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        serde_json::Value::Array(a) => {
            toml::Value::Array(a.iter().map(json_to_toml).collect::<Option<_>>()?)
        }
        _ => return None,
    })
}

/// The values the manifest `m` lists for axis `key`, in its order, as cells.
fn listed_text(m: &Manifest, key: &str) -> String {
    let axis = m.axes.iter().find(|a| a.key == key);
    let cells: Vec<String> =
        axis.map_or(vec![], |a| a.values.iter().map(manifest_axis_text).collect());
    cells.join(", ")
}

/// `text` cut to 100 characters (with `...`), for echoing a value in an error.
fn capped(text: &str) -> String {
    match text.char_indices().nth(100) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

fn check_json(path: &Path, at: &str, v: &serde_json::Value) -> Result<(), ResultsError> {
    match v {
        serde_json::Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let name = at.rsplit('.').next().unwrap_or(at);
            check_number(name, x).map_or(Ok(()), |why| {
                let (path, field) = (path.to_path_buf(), at.to_string());
                Err(ResultsError::BadField { path, field, msg: format!("{n} {why}") })
            })
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
        r.manifest = read_json(&dir.join("manifest.json"))?;
        r.tune = read_json(&dir.join("tune.json"))?;
        r.replay = read_json(&dir.join("replay.json"))?;
        r.hold = read_json(&dir.join("hold.json"))?;
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
        r.check_axes()?;
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

    /// Every value of an axis column of summary.csv whose axis the manifest lists is one of
    /// the values it lists (a `NaN` or a value of another sweep is not what the sweep wrote).
    /// A manifest that lists no axes (a run, or an early version's) is not checked.
    fn check_axes(&self) -> Result<(), ResultsError> {
        let Some(m) = &self.manifest else { return Ok(()) };
        if m.axes.is_empty() {
            return Ok(());
        }
        let path = self.dir.join("summary.csv");
        // Sets: an axis of 100,000 values is looked up once per point.
        let listed: Vec<Option<std::collections::BTreeSet<String>>> = (self.axis_keys.iter())
            .map(|k| m.axes.iter().find(|a| &a.key == k))
            .map(|a| a.map(|a| a.values.iter().map(manifest_axis_text).collect()))
            .collect();
        for (line, values) in self.summary.stretch_axes() {
            for ((key, v), listed) in self.axis_keys.iter().zip(values).zip(&listed) {
                let msg = match listed {
                    Some(l) if !l.contains(v) => format!(
                        "column `{key}`: `{}` is not a value of this axis in manifest.json ({})",
                        capped(v),
                        capped(&listed_text(m, key))
                    ),
                    _ => continue,
                };
                return Err(ResultsError::malformed(&path, line, msg));
            }
        }
        Ok(())
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
        let Some(first) = missing.first() else { return Ok(()) };
        let more = match missing.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        Err(incomplete(format!(
            "manifest.json vouches for {first}{more}, which is missing: the directory is \
             incomplete; run it again"
        )))
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
        let dir = || self.dir.file_name().map(|n| n.to_string_lossy().into_owned());
        self.manifest.as_ref().map(|m| m.name.clone()).or_else(dir).unwrap_or_default()
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

    /// The hold answer of `point` (hold.csv), if it has one.
    pub fn hold_at(&self, point: u32) -> Option<&HoldRow> {
        let i = self.hold_rows.binary_search_by_key(&point, |h| h.point);
        i.ok().map(|i| &self.hold_rows[i])
    }
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

fn parse_trace(lines: &mut CsvLines) -> Result<Vec<TraceRow>, ResultsError> {
    let csv = &lines.csv.clone();
    let idx: Vec<usize> =
        TRACE_HEADER.split(',').map(|c| csv.column(c)).collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    while let Some(line) = lines.next_row()? {
        let f = lines.row();
        let segment = f[idx[3]].to_string();
        if !SEGMENT_KINDS.contains(&segment.as_str()) {
            let msg = format!("segment `{segment}` is not one of {}", SEGMENT_KINDS.join("|"));
            return Err(ResultsError::malformed(&csv.path, line, msg));
        }
        let row = TraceRow {
            strategy: f[idx[0]].to_string(),
            agent: csv.parse_field(line, f, idx[1])?,
            request: csv.parse_field(line, f, idx[2])?,
            segment,
            start_s: csv.parse_number(line, f, idx[4])?,
            end_s: csv.parse_number(line, f, idx[5])?,
            outcome: f[idx[6]].to_string(),
        };
        if row.end_s < row.start_s || row.end_s.is_nan() || row.start_s.is_nan() {
            let msg = format!("end_s {} is before start_s {}", row.end_s, row.start_s);
            return Err(ResultsError::malformed(&csv.path, line, msg));
        }
        rows.push(row);
    }
    Ok(rows)
}
