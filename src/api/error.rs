//! The one error type at the edge: every library call and every command fails with an `Error`
//! whose cause is the typed error of the module that failed. Whose fault it is (`is_input`:
//! the input's, exit 2; else a bug or the file system's, exit 1) is decided here, from the
//! cause, and nowhere else.

use std::path::PathBuf;
use std::process::ExitCode;

use super::outdir::OutDirError;
use crate::calibrate::CalibrateError;
use crate::config::ConfigError;
use crate::limits::{LimitError, RunError};
use crate::replay::{SetError, SettingError, TraceError};
use crate::results::{ResultsError, WriteError};
#[cfg(feature = "sweep")]
use crate::sweep::SweepError;

/// Why a library call (or a command) failed. `is_input` tells the caller's mistakes (a bad
/// key, a run that stops at its own limits, a malformed trace) from bugs and I/O failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The experiment file or a `set` assignment is wrong (names the key and the value).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The estimated work is above the limits (`RunOptions::force` lifts them).
    #[error(transparent)]
    Limits(#[from] LimitError),
    /// A run failed: its own values stopped it (input) or a bug.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A sweep's grid is wrong, its journal is another sweep's, or a point or the writer failed.
    #[cfg(feature = "sweep")]
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// A trace could not be read or a record of it is malformed (names the line).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A calibration input could not be read or parsed (names the file and line).
    #[error(transparent)]
    Calibrate(#[from] CalibrateError),
    /// A replay `set` or `what_if` assignment is wrong (names the assignment); `via` says
    /// which (`--set` or `--what-if`).
    #[error("{via} {source}")]
    Set {
        /// `--set` or `--what-if`.
        via: &'static str,
        /// The assignment and why it was refused.
        source: SetError,
    },
    /// The replay's settings, or one what-if choice (`choice`, when not the base), are
    /// refused as a whole.
    #[error("{}{source}", choice.as_ref().map(|c| format!("--what-if `{c}`: ")).unwrap_or_default())]
    Setting {
        /// The what-if choice refused (`None`: the base settings).
        choice: Option<String>,
        /// Why.
        source: SettingError,
    },
    /// The output directory is a file, not empty, or another process is writing it.
    #[error(transparent)]
    OutDir(#[from] OutDirError),
    /// The results of a run could not be written.
    #[error("writing results to {path}: {source}")]
    Write {
        /// The directory written to.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written (names it).
    #[error(transparent)]
    File(#[from] WriteError),
    /// A results directory could not be read, or a file of it is malformed (names the file
    /// and line).
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// An error about a file, said after its name (`FILE: ...`), once.
    #[error("{origin}: {}", error.to_string().replace(&format!("{origin}: "), ""))]
    InFile {
        /// The file.
        origin: String,
        /// The error (its message may name the file too: it is said once, in front).
        error: Box<Error>,
    },
    /// The command line's arguments are wrong (names the option).
    #[error("{0}")]
    Usage(String),
    /// A failure at the edge that is not the input's fault (a figure that could not be drawn,
    /// a file that could not be written), with its context.
    #[error(transparent)]
    Failed(anyhow::Error),
}

impl Error {
    /// True when the input is at fault (the command line exits 2 for these).
    pub fn is_input(&self) -> bool {
        match self {
            Error::Config(_)
            | Error::Limits(_)
            | Error::Trace(_)
            | Error::Calibrate(_)
            | Error::Set { .. }
            | Error::Setting { .. }
            | Error::Usage(_) => true,
            Error::Run(e) => e.is_input(),
            #[cfg(feature = "sweep")]
            Error::Sweep(e) => e.is_input(),
            Error::OutDir(e) => e.is_input(),
            Error::Results(e) => !matches!(e, ResultsError::Io { .. }),
            Error::InFile { error, .. } => error.is_input(),
            Error::File(e) => e.is_refused(),
            Error::Write { .. } | Error::Failed(_) => false,
        }
    }

    /// The process's exit code for this error: 2 for the input's fault, 1 otherwise.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(if self.is_input() { 2 } else { 1 })
    }

    /// The error and its causes, each said once: a cause whose text the message already holds
    /// (`{path}: {source}` followed by the source itself) is not repeated.
    pub fn report(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            let c_text = c.to_string();
            if !text.contains(&c_text) {
                text.push_str(": ");
                text.push_str(&c_text);
            }
            cause = c.source();
        }
        text
    }

    /// `e` as an error of the command line's arguments, its causes said once.
    pub(crate) fn usage(e: impl Into<anyhow::Error>) -> Error {
        Error::Usage(Error::Failed(e.into()).report())
    }

    /// `e` as a failure at the edge (exit 1).
    pub(crate) fn failed(e: impl Into<anyhow::Error>) -> Error {
        Error::Failed(e.into())
    }
}
