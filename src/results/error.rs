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
    /// Not a regular file, above its size limit, or a line too long (`input::Refused`).
    #[error("{path}: {msg}")]
    Refused { path: PathBuf, msg: String },
}

impl ResultsError {
    /// Line `line` of the file at `path` is not what prefixsim writes, for `msg`.
    pub(crate) fn malformed(path: &Path, line: usize, msg: impl Into<String>) -> ResultsError {
        ResultsError::Malformed { path: path.to_path_buf(), line, msg: msg.into() }
    }

    /// An I/O error reading the file at `path`: the input's refusal when `input` refused it
    /// (`Refused`), else the machine's (`Io`).
    pub(crate) fn io(path: &Path, e: std::io::Error) -> ResultsError {
        let path = path.to_path_buf();
        if crate::input::is_refused(&e) {
            ResultsError::Refused { path, msg: e.to_string() }
        } else {
            ResultsError::Io { path, source: e }
        }
    }
}

/// The largest JSON result file (`manifest.json`, `tune.json`, `replay.json`, `hold.json`) or
/// legacy histogram file read: 64 MiB (`input::MAX_FILE_ENV` replaces it). A manifest of a
/// 100,000-point sweep is a few KiB; a replay.json of a long trace a few MiB.
pub const MAX_RESULT_JSON_BYTES: u64 = 64 << 20;

/// The text of `path`, `None` if there is no such file. A directory where the file should
/// be, anything else that is not a regular file, a file above `MAX_RESULT_JSON_BYTES` and
/// bytes that are not UTF-8 are the input's fault (naming the line of the first bad byte).
pub(crate) fn read_opt(path: &Path) -> Result<Option<String>, ResultsError> {
    if !exists(path)? {
        return Ok(None);
    }
    let what = "a JSON result file";
    let read = crate::input::read_capped(path, MAX_RESULT_JSON_BYTES, what);
    let bytes = read.map_err(|e| ResultsError::io(path, e))?;
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        let msg = format!("not UTF-8 text (byte 0x{:02x} at offset {at})", bytes[at]);
        ResultsError::malformed(path, line, msg)
    })
}

/// Whether there is a file at `path`: `false` if nothing is there; an error naming it if a
/// directory, a FIFO, a device or a socket is (checked before opening: a FIFO would block).
fn exists(path: &Path) -> Result<bool, ResultsError> {
    if path.is_dir() {
        return Err(ResultsError::malformed(path, 1, "a directory where a file should be"));
    }
    match crate::input::regular_len(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ResultsError::io(path, e)),
    }
}

/// The file at `path` opened for reading a line at a time (lines capped at
/// `input::MAX_LINE_BYTES`); `None` if there is none, an error naming it if something other
/// than a regular file is there.
pub(crate) fn open_opt(
    path: &Path,
) -> Result<Option<crate::input::LineCapped<std::fs::File>>, ResultsError> {
    if !exists(path)? {
        return Ok(None);
    }
    match std::fs::File::open(path) {
        Ok(f) => Ok(Some(crate::input::LineCapped::new(f, crate::input::MAX_LINE_BYTES))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ResultsError::io(path, e)),
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
