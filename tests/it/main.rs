//! The one integration-test binary: a module per behaviour.

mod api_rules;
mod cache;
mod calibrate;
mod cli;
mod common;
mod engine;
mod faults;
mod help_examples;
mod hold_edge;
mod input;
mod large_results;
mod latency;
mod layout;
mod library;
mod model;
mod plot;
mod providers;
mod readme;
mod replay;
mod report;
mod results;
mod run_output;
mod scenarios;
mod serve;
mod server;
mod sweep;
