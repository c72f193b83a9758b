//! The one integration-test binary: a module per behaviour.

mod cache;
mod calibrate;
mod cli;
mod engine;
mod input;
mod latency;
mod faults;
mod model;
mod plot;
mod replay;
mod scenarios;
mod sweep;
