//! Tests: model.
