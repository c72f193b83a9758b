//! The one integration-test binary: a module per behaviour.

mod api_rules;
mod cache;
mod cli;
mod engine;
mod model;
mod plot;
mod replay;
mod scenarios;
mod sweep;
