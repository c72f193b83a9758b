//! prefixsim: a discrete-event simulator of prompt caching for fleets of LLM agents.
//!
//! An experiment (a TOML file: a workload, a cache, a latency model and the launch strategies
//! to compare) is run replication by replication; every strategy sees the same random numbers,
//! and the same experiment and seed give the same numbers however many threads run it.
//!
//! # Running an experiment
//!
//! [`Experiment::from_toml`] (or [`Experiment::from_file`]) reads and checks every key;
//! [`Experiment::run`] returns a [`RunSummary`] with one typed [`StrategyResult`] per strategy:
//! costs in USD, hit rate, latency percentiles in seconds.
//!
//! ```
//! use prefixsim::{Experiment, RunOptions};
//!
//! let exp = Experiment::from_toml(
//!     r#"
//!     seed = 7
//!     replications = 4
//!     strategies = ["eager", "wait_first(max_wait=5s)"]
//!     [workload]
//!     agents = 4
//!     turns = "const(2)"
//!     "#,
//! )?;
//! let summary = exp.run(&RunOptions { jobs: Some(2), ..RunOptions::default() })?;
//! let eager = summary.strategy("eager").expect("listed in the file");
//! let held = summary.strategy("wait_first(max_wait=5s)").expect("listed in the file");
//! // Holding the forks until the first one has written the shared prefix reads it instead.
//! assert!(held.hit_rate >= eager.hit_rate);
//! assert!(held.launch_wait_pooled_s.p99 >= eager.launch_wait_pooled_s.p99);
//! assert_eq!(summary.results.len(), 2);
//! # Ok::<(), prefixsim::Error>(())
//! ```
//!
//! Keys are overridden as on the command line (`--set`), and a bad key or value is an
//! [`Error`] naming it:
//!
//! ```
//! use prefixsim::{Experiment, RunOptions};
//!
//! let exp = Experiment::default_experiment().set("replications=2")?.set("workload.agents=3")?;
//! assert_eq!(exp.config().workload.agents, 3);
//! let json = exp.run(&RunOptions::default())?.to_json(); // what `prefixsim run --json` prints
//! assert!(json.contains("\"cost_usd\""));
//!
//! let err = Experiment::from_toml("[workload]\nagnets = 4\n").unwrap_err();
//! assert!(err.is_input());
//! assert!(err.to_string().contains("workload.agnets"));
//! # Ok::<(), prefixsim::Error>(())
//! ```
//!
//! A [`Watch`] installed on the calling thread ([`Watch::scope`]) stops a run, a sweep or a
//! tune from another thread (the tasks running finish; a sweep keeps its journal) and counts
//! its tasks as they end:
//!
//! ```
//! use prefixsim::{Experiment, RunOptions, Watch};
//!
//! let exp = Experiment::default_experiment().set("replications=4")?;
//! let watch = Watch::new();
//! let summary = watch.scope(|| exp.run(&RunOptions::default()))?;
//! assert_eq!(watch.progress(), (4, 4), "replications done, of");
//! assert_eq!(summary.replications, 4);
//! # Ok::<(), prefixsim::Error>(())
//! ```
//!
//! # Sweeps
//!
//! An experiment with a `[sweep]` table is a grid of experiments; [`Experiment::sweep`] checks
//! every axis value and [`run_sweep`] runs the grid into a directory (a resumable journal,
//! then `summary.csv`, `runs.csv`, `histograms/`, `manifest.json`).
//!
//! ```
//! use prefixsim::{ExecOptions, Experiment, SweepOptions};
//!
//! let exp = Experiment::from_toml(
//!     r#"
//!     replications = 2
//!     strategies = ["eager"]
//!     [workload]
//!     turns = "const(1)"
//!     [sweep]
//!     "workload.agents" = [1, 2, 3]
//!     "#,
//! )?;
//! let sweep = exp.sweep()?;
//! assert_eq!((sweep.points(), sweep.axes()), (3, vec!["workload.agents".to_string()]));
//! let dir = std::env::temp_dir().join(format!("prefixsim-doc-sweep-{}", std::process::id()));
//! let exec = ExecOptions { jobs: 2, progress: false, ctrl_c: false, throttle_ms: 0 };
//! let opts = SweepOptions { dir: dir.clone(), shard: None, resume: false, force: false, exec };
//! let done = prefixsim::run_sweep(&sweep, &opts)?;
//! assert!(done.complete);
//! assert!(dir.join("summary.csv").exists());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), prefixsim::Error>(())
//! ```
//!
//! # Replaying a trace
//!
//! [`TraceReplay`] runs a real request log through the cache, one pass for every cache
//! choice compared:
//!
//! ```
//! use prefixsim::{TraceFormat, TraceReplay};
//!
//! // Two requests sharing a 3-block prefix, six minutes apart (Mooncake JSONL, 4-token blocks).
//! let path = std::env::temp_dir().join(format!("prefixsim-doc-{}.jsonl", std::process::id()));
//! std::fs::write(
//!     &path,
//!     "{\"timestamp\": 0, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n\
//!      {\"timestamp\": 360000, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n",
//! )
//! .unwrap();
//! let r = TraceReplay::new(&path, TraceFormat::Mooncake)
//!     .set("block_size=4")?
//!     .what_if("cache.ttl=none")
//!     .run()?;
//! assert_eq!(r.requests, 2);
//! let (five_min, never) = (&r.choices[0], &r.choices[1]);
//! assert_eq!(five_min.requests_with_hit, 0, "the prefix expired 5 min after its last use");
//! assert_eq!(never.requests_with_hit, 1, "with no TTL the second request reads it");
//! assert!(never.cost_usd < five_min.cost_usd);
//! # std::fs::remove_file(&path).unwrap();
//! # Ok::<(), prefixsim::Error>(())
//! ```
//!
//! # Calibrating latency
//!
//! [`calibrate_files`] fits the latency model per model from measured requests:
//!
//! ```
//! let fits = prefixsim::calibrate_files(
//!     &["data/samples/usage-log.jsonl".into()],
//!     &prefixsim::CalibrateSettings { resamples: 20, ..Default::default() },
//! )?;
//! assert!(!fits.is_empty());
//! assert!(fits.iter().all(|f| f.overhead_s >= 0.0 && f.requests > 0));
//! # Ok::<(), prefixsim::Error>(())
//! ```
//!
//! # Cargo features
//!
//! `cli` (the binary, with the report and `serve`), `plot` (figures, the calibration figure)
//! and `sweep` (grids, [`tune`], [`merge_shards`], on tokio) are on by default; with
//! `default-features = false` everything above except [`Experiment::sweep`] and [`run_sweep`]
//! is there, without clap, plotters, tokio, indicatif or the embedded font. `progress` draws
//! the progress bars ([`RunOptions::progress`]).
//!
//! # What is API
//!
//! The API is what this page lists: the items re-exported at the crate root and the [`errors`]
//! module. Those are documented, and their changes are breaking changes. The modules behind
//! them are private to the crate; the `internals` feature makes them public (and hidden from
//! the docs) for the integration tests, the benchmarks and the fuzz targets, which are
//! separate crates. Code outside this repository should not turn it on.
//!
//! # Layout
//!
//! See ARCHITECTURE.md for the codemap and the invariants. In short:
//! `engine` is a clock and an event heap that knows no cache; `cache` is the prefix cache,
//! pure (no clock, no I/O, no randomness); `model` is the only module that knows both;
//! `exec` is the one executor behind `run`, `sweep` and `tune` (and the one `Runner`
//! trait); `api` is the typed entry point above, and the only way in: `cli` parses arguments,
//! calls `api` and prints. `cli`, `report`, `plot`, `sweep` (its writer) and `replay` (its
//! reader) are the edge.

#![warn(missing_docs)]

/// The modules behind the API. Without the `internals` feature they are private to the crate;
/// the integration tests, the benchmarks and the fuzz targets (separate crates) turn it on to
/// reach the pieces they exercise, and even then they are hidden from the docs.
macro_rules! internal_modules {
    ($($(#[$attr:meta])* $name:ident;)*) => {$(
        $(#[$attr])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        $(#[$attr])*
        #[cfg(not(feature = "internals"))]
        mod $name;
    )*};
}

mod api;
// Without `internals`, what only the tests and benchmarks use reads as dead code, and the
// items re-exported as API lack field docs: allowed in the modules where that is still so.
internal_modules! {
    #[cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
    cache;
    #[allow(missing_docs)]
    #[cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
    calibrate;
    #[cfg(feature = "cli")]
    cli;
    #[allow(missing_docs)]
    #[cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
    config;
    dist;
    engine;
    exec;
    input;
    #[allow(missing_docs)]
    #[cfg_attr(
        not(all(feature = "cli", feature = "plot", feature = "sweep")),
        allow(dead_code, unused_imports)
    )]
    limits;
    metrics;
    #[allow(missing_docs)]
    model;
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    numfmt;
    // Without `cli` only the calibration figure draws (the Python package's `calibrate`).
    #[cfg(feature = "plot")]
    #[cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
    plot;
    #[allow(missing_docs)]
    #[cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
    replay;
    report;
    #[allow(missing_docs)]
    #[cfg_attr(
        not(all(feature = "cli", feature = "plot", feature = "sweep")),
        allow(dead_code, unused_imports)
    )]
    results;
    rng;
    #[cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
    scenarios;
    #[cfg(all(feature = "serve", feature = "cli"))]
    serve;
    #[cfg(feature = "sweep")]
    sweep;
    time;
}
#[cfg(feature = "python")]
mod python;

/// The `prefixsim` binary's whole `main`: parse the command line, run the command, print its
/// error once and return its exit code (2 for bad input, 1 for a bug or an I/O failure).
#[cfg(feature = "cli")]
#[doc(hidden)]
pub fn cli_main() -> std::process::ExitCode {
    cli::main()
}

pub use api::{
    calibrate_files, ChoiceResult, Error, Experiment, LatencyFit, ReplaySummary, RunOptions,
    TraceReplay,
};
#[cfg(feature = "sweep")]
pub use api::{merge_shards, run_sweep, tune, Sweep, SweepSummary, TuneReport, TuneRequest};
pub use calibrate::Settings as CalibrateSettings;
pub use exec::Watch;
pub use replay::TraceFormat;
pub use report::run::{Percentiles, RunSummary, StrategyResult, Tokens};
#[cfg(feature = "sweep")]
pub use sweep::hold::HoldAnswer;
#[cfg(feature = "sweep")]
pub use sweep::{merge::MergeReport, ExecOptions, Shard, SweepOptions};

/// The errors inside [`Error`], each naming the file, key or value at fault.
pub mod errors {
    pub use crate::api::OutDirError;
    pub use crate::calibrate::CalibrateError;
    pub use crate::config::latency_file::LatencyFileError;
    pub use crate::config::ConfigError;
    pub use crate::limits::{LimitError, RunError};
    pub use crate::replay::{SetError, SettingError, TraceError};
    pub use crate::results::{ResultsError, WriteError};
    #[cfg(feature = "sweep")]
    pub use crate::sweep::{ShardError, SweepError};
}
