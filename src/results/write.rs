//! Writers of the result files (README.md, "Result files"). `run --out` and `sweep --out`
//! both call these; a run is a sweep with no axes and one point (point 0).
//!
//! Every file goes to `NAME.tmp` first and is renamed into place, so a reader never sees half a
//! file. Floats are written `{:.6}`; nothing written depends on the clock, the host or the
//! working directory.

use std::borrow::Cow;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::aggregate::{Aggregate, PERCENTILES};
use crate::config::{slug, strategy_label, Experiment};
use crate::metrics::{LATENCY_NAMES, SCALAR_NAMES};

/// Write `bytes` to `path` atomically: `path.tmp`, then rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// The fixed float format of every result file.
pub fn fmt_f(x: f64) -> String {
    format!("{x:.6}")
}

/// A CSV cell: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
pub fn csv_cell(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

/// An axis value as a CSV cell: strings as they are, floats `{:.6}`, the rest as TOML.
pub fn axis_cell(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => csv_cell(s).into_owned(),
        toml::Value::Float(x) => fmt_f(*x),
        other => csv_cell(&other.to_string()).into_owned(),
    }
}

/// One swept key and the values it takes, in point order of the sweep's first varying axis.
/// `--shard K/N`: the points whose index mod N == K (K is 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// One swept axis as `manifest.json` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestAxis<'a> {
    pub key: &'a str,
    pub values: Vec<serde_json::Value>,
}

/// `manifest.json` of a run or a sweep (or one shard of it): the one definition of its
/// fields and their order, shared by `run --out` and `sweep`.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest<'a> {
    pub prefixsim_version: &'a str,
    /// `"run"` or `"sweep"`.
    pub kind: &'a str,
    pub name: &'a str,
    pub question: &'a str,
    pub seed: u64,
    pub replications: u32,
    pub strategies: Vec<String>,
    pub axes: Vec<ManifestAxis<'a>>,
    pub points: u64,
    pub shard: Option<Shard>,
    /// SHA-256 of `experiment`, hex.
    pub content_hash: String,
    /// The resolved experiment's canonical TOML (a sweep's base experiment and its `[sweep]`).
    pub experiment: &'a str,
}

impl<'a> Manifest<'a> {
    /// The manifest of a resolved experiment whose canonical text is `experiment_text`;
    /// `kind`, `axes`, `points` and `shard` are the caller's.
    pub fn new(kind: &'a str, exp: &'a Experiment, experiment_text: &'a str) -> Self {
        Manifest {
            prefixsim_version: env!("CARGO_PKG_VERSION"),
            kind,
            name: &exp.name,
            question: &exp.question,
            seed: exp.seed,
            replications: exp.replications,
            strategies: exp.strategies.iter().map(strategy_label).collect(),
            axes: Vec::new(),
            points: 1,
            shard: None,
            content_hash: content_hash(experiment_text),
            experiment: experiment_text,
        }
    }
}

/// SHA-256 of `text`, lowercase hex.
pub fn content_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The text of `manifest.json` (pretty JSON, fields in the documented order, final newline).
pub fn manifest_json(m: &Manifest<'_>) -> String {
    let mut s = serde_json::to_string_pretty(m).expect("manifest serialises");
    s.push('\n');
    s
}

pub fn write_manifest(dir: &Path, m: &Manifest<'_>) -> io::Result<()> {
    write_atomic(&dir.join("manifest.json"), manifest_json(m).as_bytes())
}

/// One row of `summary.csv`: one strategy at one point.
#[derive(Debug, Clone, Copy)]
pub struct SummaryRow<'a> {
    pub point: u32,
    pub axis_values: &'a [toml::Value],
    pub strategy: &'a str,
    pub aggregate: &'a Aggregate,
}

fn axis_header(axis_keys: &[String]) -> String {
    axis_keys.iter().map(|k| format!("{},", csv_cell(k))).collect()
}

fn axis_values(values: &[toml::Value]) -> String {
    values.iter().map(|v| format!("{},", axis_cell(v))).collect()
}

/// `point,<axes>,strategy,replications,<m>_mean,<m>_sd,<m>_ci95...,<l>_p50_s,...,<l>_max_s`.
pub fn summary_header(axis_keys: &[String]) -> String {
    let mut h = format!("point,{}strategy,replications", axis_header(axis_keys));
    for m in SCALAR_NAMES {
        h.push_str(&format!(",{m}_mean,{m}_sd,{m}_ci95"));
    }
    for l in LATENCY_NAMES {
        for (_, p) in PERCENTILES {
            h.push_str(&format!(",{l}_{p}_s"));
        }
        h.push_str(&format!(",{l}_max_s"));
    }
    h
}

pub fn summary_line(row: &SummaryRow<'_>) -> String {
    let agg = row.aggregate;
    let mut s = format!(
        "{},{}{},{}",
        row.point,
        axis_values(row.axis_values),
        csv_cell(row.strategy),
        agg.replications()
    );
    for st in agg.stats() {
        s.push_str(&format!(",{},{},{}", fmt_f(st.mean), fmt_f(st.sd), fmt_f(st.ci95)));
    }
    for i in 0..LATENCY_NAMES.len() {
        for x in agg.ladder_s(i) {
            s.push(',');
            s.push_str(&fmt_f(x));
        }
    }
    s
}

/// Write `summary.csv` (rows in the order given: point, then strategy order).
pub fn write_summary(dir: &Path, axis_keys: &[String], rows: &[SummaryRow<'_>]) -> io::Result<()> {
    let mut text = summary_header(axis_keys);
    text.push('\n');
    for r in rows {
        text.push_str(&summary_line(r));
        text.push('\n');
    }
    write_atomic(&dir.join("summary.csv"), text.as_bytes())
}

/// `point,<axes>,replication,strategy,<SCALAR_NAMES>`.
pub fn runs_header(axis_keys: &[String]) -> String {
    format!("point,{}replication,strategy,{}", axis_header(axis_keys), SCALAR_NAMES.join(","))
}

pub fn runs_line(
    point: u32,
    axis_vals: &[toml::Value],
    replication: u32,
    strategy: &str,
    scalars: &[f64; SCALAR_NAMES.len()],
) -> String {
    let mut s = format!("{point},{}{replication},{}", axis_values(axis_vals), csv_cell(strategy));
    for x in scalars {
        s.push(',');
        s.push_str(&fmt_f(*x));
    }
    s
}

/// `runs.csv`, written row by row into `runs.csv.tmp` and renamed by `finish`. Dropped without
/// `finish`, it leaves only the `.tmp` file (never a half `runs.csv`).
pub struct RunsWriter {
    out: BufWriter<fs::File>,
    tmp: PathBuf,
    path: PathBuf,
}

impl RunsWriter {
    pub fn create(dir: &Path, axis_keys: &[String]) -> io::Result<Self> {
        let path = dir.join("runs.csv");
        let tmp = tmp_path(&path);
        let mut out = BufWriter::new(fs::File::create(&tmp)?);
        writeln!(out, "{}", runs_header(axis_keys))?;
        Ok(RunsWriter { out, tmp, path })
    }

    pub fn row(
        &mut self,
        point: u32,
        axis_vals: &[toml::Value],
        replication: u32,
        strategy: &str,
        scalars: &[f64; SCALAR_NAMES.len()],
    ) -> io::Result<()> {
        writeln!(self.out, "{}", runs_line(point, axis_vals, replication, strategy, scalars))
    }

    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        drop(self.out);
        fs::rename(&self.tmp, &self.path)
    }
}

/// `p<point:05>_<strategy slug>_<latency name>.hdr`.
pub fn histogram_file_name(point: u32, strategy: &str, latency: &str) -> String {
    format!("p{point:05}_{}_{latency}.hdr", slug(strategy))
}

/// HdrHistogram V2 + deflate, base64 (standard alphabet, padded), one line.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serialising to memory succeeds");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The inverse of `encode_histogram` (for readers of result files).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram V2 log: {e:?}"))
}

/// Write the merged latency histograms of one strategy at one point under `dir/histograms/`.
pub fn write_histograms(dir: &Path, point: u32, strategy: &str, agg: &Aggregate) -> io::Result<()> {
    let hdir = dir.join("histograms");
    fs::create_dir_all(&hdir)?;
    for (name, h) in LATENCY_NAMES.iter().zip(&agg.histograms) {
        let mut text = encode_histogram(h);
        text.push('\n');
        write_atomic(&hdir.join(histogram_file_name(point, strategy, name)), text.as_bytes())?;
    }
    Ok(())
}

/// One row of `trace.csv` (replication 0 of a run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRow {
    pub strategy: String,
    pub agent: u32,
    pub request: u32,
    /// hold | rate_limit | prefill | decode | tool | entry_ready
    pub segment: &'static str,
    pub start_us: u64,
    pub end_us: u64,
    /// hit | partial | miss | redundant_write | none
    pub outcome: &'static str,
}

pub const TRACE_HEADER: &str = "strategy,agent,request,segment,start_s,end_s,outcome";

pub fn write_trace(dir: &Path, rows: &[TraceRow]) -> io::Result<()> {
    let mut text = String::from(TRACE_HEADER);
    text.push('\n');
    for r in rows {
        text.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            csv_cell(&r.strategy),
            r.agent,
            r.request,
            r.segment,
            fmt_f(crate::time::secs(r.start_us)),
            fmt_f(crate::time::secs(r.end_us)),
            r.outcome
        ));
    }
    write_atomic(&dir.join("trace.csv"), text.as_bytes())
}
