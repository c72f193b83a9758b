//! Reading result files and writing the design-review report (Markdown and HTML).
//!
//! Everything here works from a results directory, never from a live simulation, except
//! `table` (terminal tables and the result-file writers of `run`, owned by the run CLI).

pub mod build;
pub mod csv;
pub mod doc;
pub mod results;
pub mod table;
