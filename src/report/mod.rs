//! Reading result files and writing the design-review report (Markdown and HTML).
//!
//! Everything here works from a results directory, never from a live simulation.
//! `table.rs` (terminal tables) belongs to the run CLI's area and is declared when it lands.

pub mod build;
pub mod csv;
pub mod doc;
pub mod results;
