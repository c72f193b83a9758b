//! prefixsim: a discrete-event simulator of prompt caching for fleets of LLM agents.
//!
//! See ARCHITECTURE.md for the codemap and the invariants. In short:
//! `engine` is a clock and an event heap that knows no cache; `cache` is the prefix cache,
//! pure (no clock, no I/O, no randomness); `model` is the only module that knows both;
//! `cli`, `report`, `plot`, `sweep` (its writer) and `replay` (its reader) are the edge.

pub mod cache;
pub mod calibrate;
pub mod cli;
pub mod config;
pub mod dist;
pub mod engine;
pub mod input;
pub mod limits;
pub mod metrics;
pub mod model;
pub mod plot;
pub mod replay;
pub mod report;
pub mod results;
pub mod rng;
pub mod scenarios;
pub mod sweep;
pub mod time;
