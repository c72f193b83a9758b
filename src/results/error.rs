//! How reading a results directory fails: `ResultsError` (every variant the user's input), the
//! opening of a result file that names it, and `FirstFailure`, where the readers that read
//! a file again on demand keep their first failure.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Why a results directory could not be read. Every variant is the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{0}: no results here (expected manifest.json, summary.csv, trace.csv, tune.json or replay.json, as written by `run --out`, `sweep --out`, `tune --out` or `replay --out`)")]
    NoResults(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {msg}")]
    Malformed { path: PathBuf, line: usize, msg: String },
    /// A JSON file's field holds a value no prefixsim writes.
    #[error("{path}: field `{field}`: {msg}")]
    BadField { path: PathBuf, field: String, msg: String },
    /// A run or sweep directory that its writer did not finish.
    #[error("{dir}: {msg}")]
    Incomplete { dir: PathBuf, msg: String },
}

impl ResultsError {
    /// Line `line` of the file at `path` is not what prefixsim writes, for `msg`.
    pub(crate) fn malformed(path: &Path, line: usize, msg: impl Into<String>) -> ResultsError {
        ResultsError::Malformed { path: path.to_path_buf(), line, msg: msg.into() }
    }
}

/// The text of `path`, `None` if there is no such file. A directory where the file should be
/// and bytes that are not UTF-8 are malformed input (naming the line of the first bad byte).
pub(crate) fn read_opt(path: &Path) -> Result<Option<String>, ResultsError> {
    let Some(mut file) = open_opt(path)? else { return Ok(None) };
    let mut bytes = Vec::new();
    let read = std::io::Read::read_to_end(&mut file, &mut bytes);
    read.map_err(|e| ResultsError::Io { path: path.to_path_buf(), source: e })?;
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        let msg = format!("not UTF-8 text (byte 0x{:02x} at offset {at})", bytes[at]);
        ResultsError::malformed(path, line, msg)
    })
}

/// The file at `path` opened for reading; `None` if there is none, an error naming it if a
/// directory is there.
pub(crate) fn open_opt(path: &Path) -> Result<Option<std::fs::File>, ResultsError> {
    if path.is_dir() {
        return Err(ResultsError::malformed(path, 1, "a directory where a file should be"));
    }
    match std::fs::File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ResultsError::Io { path: path.to_path_buf(), source: e }),
    }
}

/// The first of a reader's reads again (after `Results::load`) that failed: (file, line,
/// message). Kept, not returned where it happens, because the figures that read ask for a
/// histogram or runs and go on without them; `check` turns it into the error (exit 2).
#[derive(Debug, Default)]
pub(crate) struct FirstFailure(Mutex<Option<(PathBuf, usize, String)>>);

impl FirstFailure {
    pub(crate) fn record(&self, path: PathBuf, line: usize, msg: String) {
        let mut first = self.0.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert((path, line, msg));
    }

    /// Record the error of a read again: a malformed row names its own file and line; any
    /// other error (the file gone, unreadable) is placed at `path`, `line`.
    pub(crate) fn record_error(&self, e: ResultsError, path: PathBuf, line: usize) {
        match e {
            ResultsError::Malformed { path, line, msg } => self.record(path, line, msg),
            other => self.record(path, line, format!("reading it again: {other}")),
        }
    }

    pub(crate) fn check(&self) -> Result<(), ResultsError> {
        let first = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        first.map_or(Ok(()), |(path, line, msg)| Err(ResultsError::Malformed { path, line, msg }))
    }
}

/// Where the rows of `point` are in rows sorted by point: a binary search.
pub(crate) fn point_range<T>(
    rows: &[T],
    point: u32,
    of: impl Fn(&T) -> u32,
) -> std::ops::Range<usize> {
    let lo = rows.partition_point(|r| of(r) < point);
    lo..lo + rows[lo..].partition_point(|r| of(r) == point)
}
