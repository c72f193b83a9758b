//! The design-review report (Markdown and HTML) and the terminal tables.
//!
//! Everything here works from a results directory read by `crate::results` (the owner of the
//! file formats), never from a live simulation, except `run` and `table` (the typed results
//! and the terminal tables of a run, from the executor's outcomes).

// The design-review report (`prefixsim report`) and the terminal tables are the command
// line's (`table` the Python package's too); the typed results of a run (`run`) are the
// library's.
#[cfg(feature = "cli")]
pub mod answer;
#[cfg(feature = "cli")]
pub mod assumptions;
#[cfg(feature = "cli")]
pub mod build;
#[cfg(feature = "cli")]
pub mod cost_answer;
#[cfg(feature = "cli")]
pub mod doc;
#[cfg(feature = "cli")]
pub mod ranges;
pub mod run;
#[cfg(feature = "cli")]
pub mod sweep;
#[cfg(any(feature = "cli", feature = "python"))]
pub mod table;
#[cfg(feature = "cli")]
pub mod words;
