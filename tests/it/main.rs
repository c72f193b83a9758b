//! The one integration-test binary: a module per behaviour.

mod cache;
mod cli;
mod engine;
mod hold_edge;
mod input;
mod model;
mod plot;
mod replay;
mod scenarios;
mod sweep;
