//! The design-review report (Markdown and HTML) and the terminal tables.
//!
//! Everything here works from a results directory read by `crate::results` (the owner of the
//! file formats), never from a live simulation, except `run` and `table` (the typed results
//! and the terminal tables of a run, from the executor's outcomes).

#[cfg(feature = "plot")]
pub mod answer;
#[cfg(feature = "plot")]
pub mod assumptions;
#[cfg(feature = "plot")]
pub mod build;
#[cfg(feature = "plot")]
pub mod cost_answer;
pub mod doc;
pub mod run;
#[cfg(feature = "sweep")]
pub mod sweep;
pub mod table;
pub mod words;
