//! Tests: sweep.
