//! Tests: scenarios.
