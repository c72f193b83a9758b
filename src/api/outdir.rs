//! The output directory of a run, sweep, tune or merge: refused when it is a file, or (for a
//! run) a directory with files in it unless forced; then locked, so that a second process
//! writing the same directory is refused instead of interleaving with the first.
//!
//! The lock is an advisory `flock` on the directory itself (no lock file is left behind); the
//! kernel releases it when the process ends, however it ends. Errors name the directory by the
//! command line's option (`--out DIR`), which is also `RunOptions::out` and `SweepOptions::dir`.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// Why an output directory is refused: the first three are the caller's to fix (exit 2), the
/// others are the file system's (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    /// It exists and is a file.
    #[error("--out {0}: exists and is not a directory")]
    NotADirectory(PathBuf),
    /// It holds files, and the run would mix its own with them.
    #[error(
        "--out {0}: the directory is not empty; choose another, or add --force to write the \
         run's files over what is there"
    )]
    NotEmpty(PathBuf),
    /// Another process holds its lock.
    #[error(
        "--out {0}: another prefixsim process is writing there (a run, sweep, tune or merge \
         still running); wait for it to finish, or choose another directory"
    )]
    Locked(PathBuf),
    /// One of the files the command writes is something other than a regular file there.
    #[error("--out {}: {source}", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What is there instead.
        #[source]
        source: std::io::Error,
    },
    /// It could not be created, opened or locked.
    #[error("--out {dir}: cannot {what} it: {source}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// `create`, `open` or `lock`.
        what: &'static str,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}

impl OutDirError {
    /// True when the caller chose the directory wrongly (exit 2), false for I/O failures.
    pub fn is_input(&self) -> bool {
        !matches!(self, OutDirError::Io { .. })
    }
}

/// Refuse `dir` when it is a file, or (unless `force`) a directory with files in it: a run's
/// files would mix with what is there. A directory that does not exist yet is fine.
pub fn check_empty(dir: &Path, force: bool) -> Result<(), OutDirError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutDirError::NotADirectory(dir.to_path_buf()));
    }
    let mut entries = std::fs::read_dir(dir).into_iter().flatten();
    if !force && entries.next().is_some() {
        return Err(OutDirError::NotEmpty(dir.to_path_buf()));
    }
    Ok(())
}

/// The held lock of an output directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _handle: File,
    /// The directory did not exist before `lock` created it.
    #[cfg_attr(not(feature = "sweep"), allow(dead_code))]
    created: bool,
    #[cfg_attr(not(feature = "sweep"), allow(dead_code))]
    dir: PathBuf,
}

impl DirLock {
    /// Remove the directory if this process created it and it is empty (after a failure).
    #[cfg(feature = "sweep")]
    pub fn remove_if_empty(&self) {
        if self.created {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Create `dir` if needed and lock it. Another process holding the lock is the caller's
/// error: two writers must not interleave.
pub fn lock(dir: &Path) -> Result<DirLock, OutDirError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutDirError::NotADirectory(dir.to_path_buf()));
    }
    let io = |what, source| OutDirError::Io { dir: dir.to_path_buf(), what, source };
    let created = !dir.exists();
    std::fs::create_dir_all(dir).map_err(|e| io("create", e))?;
    let handle = File::open(dir).map_err(|e| io("open", e))?;
    match handle.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(OutDirError::Locked(dir.to_path_buf())),
        Err(TryLockError::Error(e)) => return Err(io("lock", e)),
    }
    check_written(dir)?;
    Ok(DirLock { _handle: handle, created, dir: dir.to_path_buf() })
}

/// The files a run, sweep, tune or merge writes into its directory.
const WRITTEN: [&str; 9] = [
    "manifest.json",
    "summary.csv",
    "runs.csv",
    "trace.csv",
    "hold.json",
    "hold.csv",
    "tune.json",
    "sweep.journal",
    "histograms/latency.hlog",
];

/// Refuse `dir` when one of the files a command writes there is a FIFO, a device, a socket
/// or a directory: found before any simulation starts, not when the results are written.
fn check_written(dir: &Path) -> Result<(), OutDirError> {
    for name in WRITTEN {
        if let Err(e) = crate::results::replaceable(&dir.join(name)) {
            return Err(OutDirError::NotAFile { path: e.path, source: e.source });
        }
    }
    Ok(())
}
