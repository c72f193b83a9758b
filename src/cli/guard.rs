//! What every writing command does before it writes: refuse work that cannot finish (the
//! estimate against `crate::limits::WorkLimits`, exit 2) and take the output directory's lock,
//! so that a second process writing the same directory is refused (exit 2) instead of
//! interleaving with the first.
//!
//! The lock is an advisory `flock` on the directory itself (no lock file is left behind); the
//! kernel releases it when the process ends, however it ends.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use super::CliError;
use crate::limits::{Estimate, RunError, WorkLimits};

/// Refuse `estimate` above `limits` unless `force`.
pub fn check_work(estimate: &Estimate, limits: &WorkLimits, force: bool) -> Result<(), CliError> {
    estimate.check(limits, force).map_err(CliError::input)
}

/// A run's failure as the CLI reports it: the experiment's values (exit 2) or a bug (exit 1).
pub fn run_error(e: RunError) -> CliError {
    match e {
        RunError::Input(m) => CliError::input(anyhow::anyhow!(m)),
        RunError::Internal(m) => CliError::internal(anyhow::anyhow!(m)),
    }
}

/// The held lock of an output directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _handle: File,
    /// The directory did not exist before `lock_dir` created it.
    pub created: bool,
    pub dir: PathBuf,
}

impl DirLock {
    /// Remove the directory if this process created it and it is empty (after a failure).
    pub fn remove_if_empty(&self) {
        if self.created {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Create `dir` if needed and lock it. Another process holding the lock is bad input (exit
/// 2): two writers must not interleave. `flag` names the option in messages (`--out`).
pub fn lock_dir(dir: &Path, flag: &str) -> Result<DirLock, CliError> {
    if dir.exists() && !dir.is_dir() {
        let e = anyhow::anyhow!("{flag} {}: exists and is not a directory", dir.display());
        return Err(CliError::input(e));
    }
    let created = !dir.exists();
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::internal(anyhow::anyhow!("{flag} {}: cannot create it: {e}", dir.display()))
    })?;
    let handle = File::open(dir).map_err(|e| {
        CliError::internal(anyhow::anyhow!("{flag} {}: cannot open it: {e}", dir.display()))
    })?;
    match handle.try_lock() {
        Ok(()) => Ok(DirLock { _handle: handle, created, dir: dir.to_path_buf() }),
        Err(TryLockError::WouldBlock) => Err(CliError::input(anyhow::anyhow!(
            "{flag} {}: another prefixsim process is writing there (a run, sweep, tune or merge \
             still running); wait for it to finish, or choose another directory",
            dir.display()
        ))),
        Err(TryLockError::Error(e)) => Err(CliError::internal(anyhow::anyhow!(
            "{flag} {}: cannot lock it: {e}",
            dir.display()
        ))),
    }
}
