//! Tests: plot.
