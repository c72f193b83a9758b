//! The output of a command that writes files: a directory (`--out DIR`) or one file (`--out
//! FILE`), under one contract (docs/limits.md, "What --out accepts"). A directory must not
//! exist or be empty; one that holds files is refused unless forced, and then replaced
//! atomically: the command writes into a fresh hidden sibling (`.NAME.prefixsim-new`), which
//! `OutDir::commit` swaps in with two renames (the old directory goes to `.NAME.prefixsim-old`
//! and is removed), so an interrupted command leaves the old directory or the new one, never
//! a mix. A file must not exist unless forced; it is always written to `NAME.tmp` and renamed.
//!
//! The directory is locked while it is written, so that a second process writing it is refused
//! instead of interleaving with the first. The lock is an advisory `flock` on the directory
//! itself (no lock file is left behind), and on the staging directory, which becomes the
//! directory when swapped in; the kernel releases it when the process ends, however it ends.
//! Errors name the directory by the command line's option (`--out DIR`), which is also
//! `RunOptions::out` and `SweepOptions::dir`.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// Why an output directory is refused: the first three are the caller's to fix (exit 2), the
/// others are the file system's (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    /// It exists and is a file.
    #[error("--out {0}: exists and is not a directory")]
    NotADirectory(PathBuf),
    /// It holds files, and the command would mix its own with them.
    #[error(
        "--out {0}: the directory is not empty; choose another, or add --force to replace it{1}"
    )]
    NotEmpty(PathBuf, &'static str),
    /// The file exists.
    #[error("--out {0}: the file exists; choose another name, or add --force to replace it")]
    FileExists(PathBuf),
    /// It cannot be replaced as a whole: it has no name of its own (`.`, `..`, `/`).
    #[error("--out {0}: cannot replace this directory as a whole; name a directory")]
    NoName(PathBuf),
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
        /// `create`, `open`, `lock`, `replace` or `clear`.
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

/// Refuse `dir` when it is a file, or (unless `force`) a directory with files in it: the
/// command's files would mix with what is there. A directory that does not exist yet is fine.
/// `hint` ends the refusal (`sweep` points at `--resume` when the directory holds a journal).
pub fn check_empty(dir: &Path, force: bool, hint: &'static str) -> Result<(), OutDirError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutDirError::NotADirectory(dir.to_path_buf()));
    }
    if !force && !is_empty(dir) {
        return Err(OutDirError::NotEmpty(dir.to_path_buf(), hint));
    }
    Ok(())
}

/// True when `dir` does not exist or holds nothing.
fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none())
}

/// Refuse `file` when it exists, unless `force`; a directory, FIFO or device there is refused
/// even so (the file is written to `NAME.tmp` and renamed, which would replace none of them).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub fn check_file(file: &Path, force: bool) -> Result<(), OutDirError> {
    if let Err(e) = crate::results::replaceable(file) {
        return Err(OutDirError::NotAFile { path: e.path, source: e.source });
    }
    if !force && std::fs::symlink_metadata(file).is_ok() {
        return Err(OutDirError::FileExists(file.to_path_buf()));
    }
    Ok(())
}

/// The held lock of an output directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _handle: File,
    /// The directory did not exist before `lock` created it.
    created: bool,
    dir: PathBuf,
}

impl DirLock {
    /// Remove the directory if this process created it and it is empty (after a failure).
    pub fn remove_if_empty(&self) {
        if self.created {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Create `dir` if needed and lock it. Another process holding the lock is the caller's
/// error: two writers must not interleave. A swap that a crash cut between its two renames
/// (`dir` gone, `.NAME.prefixsim-old` there) is undone first: the old directory comes back.
pub fn lock(dir: &Path) -> Result<DirLock, OutDirError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutDirError::NotADirectory(dir.to_path_buf()));
    }
    let io = |what, source| OutDirError::Io { dir: dir.to_path_buf(), what, source };
    if let Some(old) = sibling(dir, "old").filter(|o| !dir.exists() && o.is_dir()) {
        // Locked: another process is between its renames right now.
        let _held = lock_handle(&old)?;
        std::fs::rename(&old, dir).map_err(|e| io("replace", e))?;
    }
    let created = !dir.exists();
    std::fs::create_dir_all(dir).map_err(|e| io("create", e))?;
    let handle = lock_handle(dir)?;
    check_written(dir)?;
    Ok(DirLock { _handle: handle, created, dir: dir.to_path_buf() })
}

/// Open `dir` and take its lock without waiting.
fn lock_handle(dir: &Path) -> Result<File, OutDirError> {
    let io = |what, source| OutDirError::Io { dir: dir.to_path_buf(), what, source };
    let handle = File::open(dir).map_err(|e| io("open", e))?;
    match handle.try_lock() {
        Ok(()) => Ok(handle),
        Err(TryLockError::WouldBlock) => Err(OutDirError::Locked(dir.to_path_buf())),
        Err(TryLockError::Error(e)) => Err(io("lock", e)),
    }
}

/// `.NAME.prefixsim-<what>` beside `dir` (`new`: the staging directory; `old`: the replaced
/// one, between the swap's two renames); `None` when `dir` has no name (`.`, `/`).
fn sibling(dir: &Path, what: &str) -> Option<PathBuf> {
    let name = dir.file_name()?.to_string_lossy();
    Some(dir.with_file_name(format!(".{name}.prefixsim-{what}")))
}

/// Where a command writes its files (`path`), and the swap that puts them at `--out`
/// (`commit`). Dropped uncommitted (the command failed), it removes what it wrote: the
/// staging directory, or the directory it created. The lock is held until it is dropped.
#[derive(Debug)]
pub struct OutDir {
    lock: DirLock,
    /// The staging directory and its lock, when a directory with files is replaced.
    staging: Option<(PathBuf, File)>,
    done: bool,
}

/// Open `dir` for a command's files: refused when it is a file, or a directory with files in it
/// unless `force` (then the files go to a staging directory that `OutDir::commit` swaps in).
/// Locked: a second process writing `dir` is refused. `hint` ends a refusal (see `check_empty`).
pub fn open(dir: &Path, force: bool, hint: &'static str) -> Result<OutDir, OutDirError> {
    if dir.is_dir() {
        // A directory another process is writing is said so, before it is called not empty.
        drop(lock_handle(dir)?);
    }
    check_empty(dir, force, hint)?;
    let lock = lock(dir)?;
    if is_empty(dir) {
        return Ok(OutDir { lock, staging: None, done: false });
    }
    let new = sibling(dir, "new").ok_or_else(|| OutDirError::NoName(dir.to_path_buf()))?;
    let io = |what, source| OutDirError::Io { dir: new.clone(), what, source };
    // Holding `dir`'s lock, no other process stages for it: one there is a crashed command's.
    if std::fs::symlink_metadata(&new).is_ok() {
        std::fs::remove_dir_all(&new).map_err(|e| io("clear", e))?;
    }
    std::fs::create_dir(&new).map_err(|e| io("create", e))?;
    let handle = lock_handle(&new)?;
    Ok(OutDir { lock, staging: Some((new, handle)), done: false })
}

impl OutDir {
    /// Where the command writes: the directory itself, or the staging directory.
    pub fn path(&self) -> &Path {
        self.staging.as_ref().map_or(&self.lock.dir, |(p, _)| p)
    }

    /// Where `written` (a path under `path`) is once committed: under `--out`.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub fn shown(&self, written: &Path) -> PathBuf {
        match (&self.staging, written.strip_prefix(self.path())) {
            (Some(_), Ok(rest)) => self.lock.dir.join(rest),
            _ => written.to_path_buf(),
        }
    }

    /// Put what was written at `--out`: swap the staging directory in (the old directory is
    /// renamed aside, the new one into its place, then the old one removed).
    pub fn commit(mut self) -> Result<(), OutDirError> {
        self.done = true;
        let Some((new, _)) = &self.staging else { return Ok(()) };
        if let Err(e) = swap(&self.lock.dir, new) {
            let _ = std::fs::remove_dir_all(new);
            return Err(e);
        }
        Ok(())
    }
}

/// Put `new` in the place of `dir`: `dir` renamed aside, `new` renamed into its place, the old
/// one removed. Cut between the renames, `lock` renames the old one back.
fn swap(dir: &Path, new: &Path) -> Result<(), OutDirError> {
    let io = |what, source| OutDirError::Io { dir: dir.to_path_buf(), what, source };
    let old = sibling(dir, "old").ok_or_else(|| OutDirError::NoName(dir.to_path_buf()))?;
    if std::fs::symlink_metadata(&old).is_ok() {
        std::fs::remove_dir_all(&old).map_err(|e| io("clear", e))?;
    }
    std::fs::rename(dir, &old).map_err(|e| io("replace", e))?;
    if let Err(e) = std::fs::rename(new, dir) {
        let _ = std::fs::rename(&old, dir);
        return Err(io("replace", e));
    }
    std::fs::remove_dir_all(&old).map_err(|e| io("clear", e))
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        match &self.staging {
            Some((new, _)) => {
                let _ = std::fs::remove_dir_all(new);
            }
            None => self.lock.remove_if_empty(),
        }
    }
}

/// Open `dir` to continue a sweep in place (`sweep --resume`), locked. A replacing sweep that
/// was killed left its journal in the staging directory: that directory is swapped in first,
/// so that no finished point is lost.
#[cfg_attr(not(feature = "sweep"), allow(dead_code))]
pub fn resume(dir: &Path, journal: &str) -> Result<DirLock, OutDirError> {
    let lock = lock(dir)?;
    let Some(new) = sibling(dir, "new").filter(|n| n.join(journal).is_file()) else {
        return Ok(lock);
    };
    let staging = lock_handle(&new)?;
    swap(dir, &new)?;
    // The staging directory's lock is the lock of `dir` now: held throughout, no gap.
    drop(lock);
    Ok(DirLock { _handle: staging, created: false, dir: dir.to_path_buf() })
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
