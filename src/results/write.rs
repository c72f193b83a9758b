//! Writers of the result files (docs/results.md). `run --out` and `sweep --out`
//! both call these; a run is a sweep with no axes and one point (point 0).
//!
//! Every file goes to `NAME.tmp` first and is renamed into place, so a reader never sees half a
//! file. Floats are written `{:.6}`; nothing written depends on the clock, the host or the
//! working directory.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::schema::*;
use super::table::csv_line;
use crate::config::{strategy_label, ExperimentSpec};
use crate::metrics::SCALAR_NAMES;

/// A file that could not be written: the path (the `.tmp` file or its final name) and why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl WriteError {
    /// True when the file is refused (something other than a regular file is where it goes),
    /// not a failure of the machine: the input's fault.
    pub fn is_refused(&self) -> bool {
        crate::input::is_refused(&self.source)
    }
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        io::Error::new(e.source.kind(), e)
    }
}

pub(super) fn at(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |source| WriteError { path: path.to_path_buf(), source }
}

/// `NAME.tmp` next to `NAME`: where every result file is written before it is renamed.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Refuse to rename a file over `path` when something other than a regular file is there: a
/// device (`--out /dev/null` run as root replaced the device with a file), a FIFO, a
/// directory. Nothing there, or a regular file, is fine.
pub fn replaceable(path: &Path) -> Result<(), WriteError> {
    match fs::metadata(path) {
        Ok(m) if !m.is_file() => match crate::input::regular_len(path) {
            Err(e) => Err(WriteError { path: path.to_path_buf(), source: e }),
            Ok(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Write `bytes` to `path` atomically: `path.tmp`, then rename. The one way every result,
/// figure and report file is written. On an error the `.tmp` file is removed.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), WriteError> {
    replaceable(path)?;
    let tmp = tmp_path(path);
    let done = fs::write(&tmp, bytes)
        .map_err(at(&tmp))
        .and_then(|()| fs::rename(&tmp, path).map_err(at(path)));
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    done
}

/// A file written piece by piece to `NAME.tmp`, synced and renamed to `NAME` by `commit`.
/// Dropped without a successful `commit` (an error on the way), it removes its `.tmp` file:
/// nothing half-written is left, neither `NAME` nor `NAME.tmp`.
pub struct AtomicFile {
    /// `None` once `commit` has taken it.
    out: Option<BufWriter<fs::File>>,
    tmp: PathBuf,
    path: PathBuf,
    renamed: bool,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile, WriteError> {
        replaceable(path)?;
        let tmp = tmp_path(path);
        let file = fs::File::create(&tmp).map_err(at(&tmp))?;
        let out = Some(BufWriter::new(file));
        Ok(AtomicFile { out, tmp, path: path.to_path_buf(), renamed: false })
    }

    pub fn write(&mut self, text: &str) -> Result<(), WriteError> {
        let out = self.out.as_mut().expect("an AtomicFile is written only before its commit");
        out.write_all(text.as_bytes()).map_err(at(&self.tmp))
    }

    /// Where the file is written until `commit`: `NAME.tmp` (what a failed write names).
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// The buffered `NAME.tmp`, for writers that take `std::io::Write`.
    pub fn writer(&mut self) -> &mut (impl Write + use<>) {
        self.out.as_mut().expect("an AtomicFile is written only before its commit")
    }

    pub fn commit(mut self) -> Result<(), WriteError> {
        let out = self.out.take().expect("committed once");
        let file = out.into_inner().map_err(|e| at(&self.tmp)(e.into_error()))?;
        file.sync_data().map_err(at(&self.tmp))?;
        fs::rename(&self.tmp, &self.path).map_err(at(&self.path))?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.renamed {
            // Close the file first (its buffer is dropped unwritten), then remove it.
            drop(self.out.take().map(BufWriter::into_parts));
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Manifest {
    /// The manifest of a resolved experiment whose canonical text is `experiment_text`, as a
    /// run with one point; a sweep sets `kind`, `axes`, `points` and `shard`.
    pub fn new(kind: &str, exp: &ExperimentSpec, experiment_text: &str) -> Self {
        Manifest {
            prefixsim_version: env!("CARGO_PKG_VERSION").to_string(),
            kind: kind.to_string(),
            name: exp.name.clone(),
            question: exp.question.clone(),
            seed: Some(exp.seed),
            replications: Some(exp.replications),
            strategies: exp.strategies.iter().map(strategy_label).collect(),
            axes: Vec::new(),
            points: Some(1),
            shard: None,
            content_hash: Some(content_hash(experiment_text)),
            experiment: Some(experiment_text.to_string()),
        }
    }
}

/// SHA-256 of `text`, lowercase hex.
pub fn content_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The text of `manifest.json` (pretty JSON, fields in the documented order, final newline).
pub fn manifest_json(m: &Manifest) -> String {
    let mut s = serde_json::to_string_pretty(m).expect("manifest serialises");
    s.push('\n');
    s
}

pub fn write_manifest(dir: &Path, m: &Manifest) -> Result<(), WriteError> {
    write_atomic(&dir.join("manifest.json"), manifest_json(m))
}

/// `point,<axes>,strategy,replications,<STRATEGY_COLUMNS>,<summary_columns>`.
pub fn summary_header(axis_keys: &[String]) -> String {
    let head = ["point"].iter().map(|c| c.to_string()).chain(axis_keys.iter().cloned());
    let tail = ["strategy", "replications"].into_iter().chain(STRATEGY_COLUMNS).map(String::from);
    csv_line(head.chain(tail).chain(summary_columns()))
}

/// The line of `row` (without its `\n`); `row.values` must hold every `summary_columns()`.
pub fn summary_line(row: &SummaryRow) -> String {
    let mut cells = vec![row.point.to_string()];
    cells.extend(row.axis_values.iter().cloned());
    cells.extend([row.strategy.to_string(), row.replications.to_string()]);
    cells.extend(strategy_cells(&row.strategy));
    for col in summary_columns() {
        let x = row.values.get(&col).unwrap_or_else(|| panic!("summary row without `{col}`"));
        cells.push(fmt_f(*x));
    }
    csv_line(cells)
}

/// The text of `summary.csv` (rows in the order given: point, then strategy order).
pub fn summary_text(axis_keys: &[String], rows: &[SummaryRow]) -> String {
    let lines = std::iter::once(summary_header(axis_keys)).chain(rows.iter().map(summary_line));
    lines.map(|l| l + "\n").collect()
}

/// Write `summary.csv` (`summary_text`).
pub fn write_summary(
    dir: &Path,
    axis_keys: &[String],
    rows: &[SummaryRow],
) -> Result<(), WriteError> {
    write_atomic(&dir.join("summary.csv"), summary_text(axis_keys, rows))
}

/// `point,<axes>,replication,strategy,<STRATEGY_COLUMNS>,<SCALAR_NAMES>`.
pub fn runs_header(axis_keys: &[String]) -> String {
    let head = ["point"].iter().map(|c| c.to_string()).chain(axis_keys.iter().cloned());
    let tail = ["replication", "strategy"].into_iter().chain(STRATEGY_COLUMNS);
    csv_line(head.chain(tail.chain(SCALAR_NAMES).map(String::from)))
}

/// The line of one replication (without its `\n`): `scalars` in `SCALAR_NAMES` order.
pub fn runs_line(
    point: u32,
    axis_vals: &[toml::Value],
    replication: u32,
    strategy: &str,
    scalars: &[f64; SCALAR_NAMES.len()],
) -> String {
    let mut cells = vec![point.to_string()];
    cells.extend(axis_vals.iter().map(axis_text));
    cells.extend([replication.to_string(), strategy.to_string()]);
    cells.extend(strategy_cells(strategy));
    for (&x, name) in scalars.iter().zip(SCALAR_NAMES) {
        cells.push(if INTEGER_SCALARS.contains(&name) { format!("{x:.0}") } else { fmt_f(x) });
    }
    csv_line(cells)
}

/// `runs.csv`, written row by row into `runs.csv.tmp` and renamed by `finish`. Dropped without
/// `finish`, it leaves only the `.tmp` file (never a half `runs.csv`).
pub struct RunsWriter {
    out: AtomicFile,
}

impl RunsWriter {
    pub fn create(dir: &Path, axis_keys: &[String]) -> Result<Self, WriteError> {
        let mut out = AtomicFile::create(&dir.join("runs.csv"))?;
        out.write(&(runs_header(axis_keys) + "\n"))?;
        Ok(RunsWriter { out })
    }

    pub fn row(
        &mut self,
        point: u32,
        axis_vals: &[toml::Value],
        replication: u32,
        strategy: &str,
        scalars: &[f64; SCALAR_NAMES.len()],
    ) -> Result<(), WriteError> {
        self.out.write(&(runs_line(point, axis_vals, replication, strategy, scalars) + "\n"))
    }

    pub fn finish(self) -> Result<(), WriteError> {
        self.out.commit()
    }
}

pub fn write_trace(dir: &Path, rows: &[TraceRow]) -> Result<(), WriteError> {
    let mut text = format!("{TRACE_HEADER}\n");
    for r in rows {
        let (agent, request) = (r.agent.to_string(), r.request.to_string());
        let (start, end) = (fmt_f(r.start_s), fmt_f(r.end_s));
        let cells = [&r.strategy, &agent, &request, &r.segment, &start, &end, &r.outcome];
        text.push_str(&(csv_line(cells) + "\n"));
    }
    write_atomic(&dir.join("trace.csv"), text)
}
