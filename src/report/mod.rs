//! The design-review report (Markdown and HTML) and the terminal tables.
//!
//! Everything here works from a results directory read by `crate::results` (the owner of the
//! file formats), never from a live simulation, except `table` (terminal tables of `run`).

#[cfg(feature = "plot")]
pub mod answer;
#[cfg(feature = "plot")]
pub mod assumptions;
#[cfg(feature = "plot")]
pub mod build;
pub mod doc;
pub mod table;
pub mod words;
