//! Tests: engine.
