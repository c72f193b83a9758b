//! The library's entry points: an experiment read from TOML, run with options, giving typed
//! results (`Summary`); its `[sweep]` grid (`Sweep`); a trace replay (`TraceReplay`) and a
//! latency calibration (`calibrate_files`). Each is a thin typed layer over the modules the
//! command line uses, so the library and `prefixsim` give the same numbers.

use std::path::{Path, PathBuf};

use crate::calibrate::{self, CalibrateError};
use crate::config::{self, ConfigError};
use crate::exec::{self, ModelSim, Summary};
use crate::limits::{self, LimitError, RunError, WorkLimits};
use crate::replay::{self, CacheChoice, ReplaySettings, SetError, SettingError, TraceError};
#[cfg(feature = "sweep")]
pub use crate::sweep::hold::HoldAnswer;
#[cfg(feature = "sweep")]
use crate::sweep::SweepError;

#[cfg(feature = "sweep")]
mod grid;
#[cfg(feature = "sweep")]
pub use grid::{run_sweep, Sweep, SweepSummary};

/// Why a library call failed. `is_input` tells the caller's mistakes (a bad key, a run that
/// stops at its own limits, a malformed trace) from bugs and I/O failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The experiment file or a `set` assignment is wrong (names the key and the value).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The estimated work is above the limits (`RunOptions::check_limits`).
    #[error(transparent)]
    Limits(#[from] LimitError),
    /// A run failed: its own values stopped it (input) or a bug.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A sweep's grid is wrong, or a point or the writer failed.
    #[cfg(feature = "sweep")]
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// A trace could not be read or a record of it is malformed (names the line).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A calibration input could not be read or parsed (names the file and line).
    #[error(transparent)]
    Calibrate(#[from] CalibrateError),
    /// A replay `set` or `what_if` assignment is wrong (names the assignment); `via` says
    /// which (`--set` or `what-if`).
    #[error("{via} {source}")]
    Set {
        /// `--set` or `what-if`.
        via: &'static str,
        /// The assignment and why it was refused.
        source: SetError,
    },
    /// The replay's settings, or one what-if choice (`choice`, when not the base), are
    /// refused as a whole.
    #[error("{}{source}", choice.as_ref().map(|c| format!("what-if `{c}`: ")).unwrap_or_default())]
    Setting {
        /// The what-if choice refused (`None`: the base settings).
        choice: Option<String>,
        /// Why.
        source: SettingError,
    },
    /// The results of a run could not be written.
    #[error("writing results to {path}: {source}")]
    Write {
        /// The directory written to.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// True when the input is at fault (the command line exits 2 for these).
    pub fn is_input(&self) -> bool {
        match self {
            Error::Config(_)
            | Error::Limits(_)
            | Error::Trace(_)
            | Error::Calibrate(_)
            | Error::Set { .. }
            | Error::Setting { .. } => true,
            Error::Run(e) => e.is_input(),
            #[cfg(feature = "sweep")]
            Error::Sweep(e) => matches!(e, SweepError::Input(_)),
            Error::Write { .. } => false,
        }
    }
}

/// How to run an experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Threads for replications; `None`: all cores. Never changes a result.
    pub jobs: Option<usize>,
    /// Also write the result files (manifest.json, summary.csv, runs.csv, histograms/) here.
    pub out: Option<PathBuf>,
    /// With `out`: also write trace.csv (every agent's segments in replication 0).
    pub trace: bool,
    /// Refuse work above the experiment's `[limits]` (as the command line does without
    /// `--force`).
    pub check_limits: bool,
    /// Draw a progress bar on stderr when it is a terminal.
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { jobs: None, out: None, trace: false, check_limits: true, progress: false }
    }
}

/// A resolved experiment: every key checked, ready to run.
#[derive(Debug, Clone)]
pub struct Experiment {
    origin: String,
    /// The file's text: a sweep keeps its axes in the order written.
    #[cfg_attr(not(feature = "sweep"), allow(dead_code))]
    text: String,
    table: toml::Table,
    resolved: config::Experiment,
}

impl Experiment {
    /// Parse and resolve an experiment file's text (the README's "Experiment files").
    pub fn from_toml(text: &str) -> Result<Experiment, Error> {
        Experiment::from_text(text, "<experiment>")
    }

    /// Read and resolve an experiment file; errors name the file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Experiment, Error> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = config::read_experiment(path)
            .map_err(|source| ConfigError::Io { path: origin.clone(), source })?;
        Experiment::from_text(&text, &origin)
    }

    /// The embedded default experiment (what `prefixsim` with no command runs).
    pub fn default_experiment() -> Experiment {
        Experiment::from_text(config::DEFAULT_EXPERIMENT, config::DEFAULT_ORIGIN)
            .expect("the embedded default experiment resolves")
    }

    fn from_text(text: &str, origin: &str) -> Result<Experiment, Error> {
        let table = config::parse_table(text, origin)?;
        let resolved = config::resolve(&table, origin)?;
        Ok(Experiment { origin: origin.to_string(), text: text.to_string(), table, resolved })
    }

    /// Override one dotted key, as `--set` does: `set("workload.agents=16")`.
    pub fn set(mut self, assignment: &str) -> Result<Experiment, Error> {
        config::apply_set(&mut self.table, assignment)?;
        self.resolved = config::resolve(&self.table, &self.origin)?;
        Ok(self)
    }

    /// The resolved experiment (every parameter, in base units).
    pub fn config(&self) -> &config::Experiment {
        &self.resolved
    }

    /// The cap to use for this experiment's `wait_first` hold, with its interval over the
    /// latency calibration's refits (`sweep::hold`), as `run`, `tune --param max_wait`,
    /// `report` and `serve` give it; `None` unless `[report] answer = "hold_cap"` and a
    /// `wait_first` strategy is run.
    #[cfg(feature = "sweep")]
    pub fn hold_answer(&self, jobs: Option<usize>) -> Result<Option<HoldAnswer>, Error> {
        let sim = ModelSim { origin: self.origin.clone() };
        let jobs = jobs.unwrap_or_else(exec::default_jobs).max(1);
        Ok(crate::sweep::hold::for_experiment(&sim, &self.table, &self.resolved, jobs)?)
    }

    /// Every replication of every strategy; with `opts.out`, the result files too.
    pub fn run(&self, opts: &RunOptions) -> Result<Summary, Error> {
        let exp = &self.resolved;
        if opts.check_limits {
            let estimate = limits::estimate_run(exp, opts.out.is_some());
            estimate.check(&WorkLimits::from_table(&self.table), false)?;
        }
        let sim = ModelSim { origin: self.origin.clone() };
        let jobs = opts.jobs.unwrap_or_else(exec::default_jobs).max(1);
        let outcomes = exec::execute(&sim, exp, jobs, opts.progress)?;
        if let Some(dir) = &opts.out {
            let trace = match opts.trace {
                true => Some(exec::run::trace_rows(&sim, exp)?),
                false => None,
            };
            exec::write_out(dir, exp, &outcomes, trace.as_deref())
                .map_err(|source| Error::Write { path: dir.clone(), source })?;
        }
        Ok(Summary::new(exp, &outcomes))
    }
}

/// A trace replay: a trace file, its settings (the `replay --set` keys) and the cache choices
/// to compare (the base, then each `what_if`).
#[derive(Debug, Clone)]
pub struct TraceReplay {
    path: PathBuf,
    settings: ReplaySettings,
    /// The `cache.*` assignments given to `set`: the base choice's label.
    cache_sets: Vec<String>,
    what_if: Vec<String>,
}

/// One cache choice's totals over the whole trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceResult {
    /// The assignments that made the choice (`cache.ttl=1h`).
    pub label: String,
    /// Requests replayed.
    pub requests: u64,
    /// Requests that read at least one token from the cache.
    pub requests_with_hit: u64,
    /// Share of input tokens read from the cache.
    pub hit_rate: f64,
    /// What the trace's requests cost with this cache choice, USD.
    pub cost_usd: f64,
    /// The same requests with no caching.
    pub cost_uncached_usd: f64,
    /// Blocks written while an equal entry was still pending (docs/cache.md).
    pub redundant_writes: u64,
}

/// A replay's results: one `ChoiceResult` per choice, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySummary {
    /// Requests in the trace.
    pub requests: u64,
    /// Distinct prefix blocks over the whole trace.
    pub distinct_blocks: u64,
    /// One per cache choice: the base, then each `what_if`, in order.
    pub choices: Vec<ChoiceResult>,
    /// Lines skipped with `lenient`.
    pub warnings: Vec<String>,
}

impl TraceReplay {
    /// Replay `path`, a trace in `format`.
    pub fn new(path: impl Into<PathBuf>, format: replay::TraceFormat) -> TraceReplay {
        TraceReplay {
            path: path.into(),
            settings: ReplaySettings::new(format),
            cache_sets: Vec::new(),
            what_if: Vec::new(),
        }
    }

    /// Apply one setting, as `replay --set` does: `set("block_size=16")`.
    pub fn set(mut self, assignment: &str) -> Result<TraceReplay, Error> {
        self.settings
            .apply_set(assignment)
            .map_err(|source| Error::Set { via: "--set", source })?;
        if assignment.trim().starts_with("cache.") {
            self.cache_sets.push(assignment.trim().to_string());
        }
        Ok(self)
    }

    /// Also replay the base choice with `spec` applied (`cache.ttl=1h`, or several joined by
    /// commas); only `cache.*` keys may differ.
    pub fn what_if(mut self, spec: &str) -> TraceReplay {
        self.what_if.push(spec.to_string());
        self
    }

    /// The base choice (labelled as `prefixsim replay` labels it), then each `what_if`.
    fn choices(&self) -> Result<Vec<CacheChoice>, Error> {
        let base = &self.settings;
        let mut first = base.cache.clone();
        first.label = match (self.cache_sets.is_empty(), base.cache.ttl_as_sent) {
            (true, true) => "as sent".to_string(),
            (true, false) => "cache.ttl=5m".to_string(),
            (false, _) => self.cache_sets.join(","),
        };
        let mut out = vec![first];
        for spec in &self.what_if {
            let mut s = base.clone();
            for a in spec.split(',') {
                s.apply_set(a).map_err(|source| Error::Set { via: "what-if", source })?;
            }
            if s.model != base.model || s.latency != base.latency || s.block_size != base.block_size
            {
                let choice = Some(spec.clone());
                return Err(Error::Setting { choice, source: SettingError::WhatIfNotCache });
            }
            s.validate().map_err(|source| Error::Setting { choice: Some(spec.clone()), source })?;
            s.cache.label = spec.trim().to_string();
            out.push(s.cache);
        }
        Ok(out)
    }

    /// Replay the trace once through every choice.
    pub fn run(&self) -> Result<ReplaySummary, Error> {
        self.settings.validate().map_err(|source| Error::Setting { choice: None, source })?;
        let r = replay::replay(&self.path, &self.settings, &self.choices()?)?;
        let choices = r
            .choices
            .iter()
            .map(|(c, s)| ChoiceResult {
                label: c.label.clone(),
                requests: s.requests,
                requests_with_hit: s.requests_with_hit,
                hit_rate: s.account.hit_rate(),
                cost_usd: s.cost_usd,
                cost_uncached_usd: s.cost_uncached_usd,
                redundant_writes: s.redundant_writes,
            })
            .collect();
        Ok(ReplaySummary {
            requests: r.requests,
            distinct_blocks: r.distinct_blocks,
            choices,
            warnings: r.warnings,
        })
    }
}

/// One model's fitted latency: seconds and tokens per second (`None`: not identifiable from
/// the data, e.g. no cache reads for `cached_rate`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyFit {
    /// The model id as the input spells it.
    pub model: String,
    /// Requests with a measured time to first token (the fit's rows).
    pub requests: usize,
    /// Fixed time before the first token, seconds.
    pub overhead_s: f64,
    /// Uncached and cache-write input tokens prefilled per second.
    pub prefill_rate: Option<f64>,
    /// Cache-read input tokens per second.
    pub cached_rate: Option<f64>,
    /// Output tokens per second after the first.
    pub decode_rate: Option<f64>,
    /// Median absolute error of the fitted TTFT, seconds.
    pub median_abs_error_s: f64,
}

/// Fit the latency model per model from measured requests (claude-code traces, usage logs,
/// OTLP exports; the format of each input is guessed). Models with too little data are left
/// out; none left is an error.
pub fn calibrate_files(
    inputs: &[PathBuf],
    settings: &calibrate::Settings,
) -> Result<Vec<LatencyFit>, Error> {
    let mut data = calibrate::Observations::default();
    for input in inputs {
        calibrate::read(input, None, &mut data)?;
    }
    let cal = calibrate::calibrate(&data, settings);
    if cal.models.is_empty() {
        let why: Vec<String> =
            cal.skipped.iter().map(|s| format!("{}: {}", s.model, s.reason)).collect();
        let what = inputs.first().map_or(PathBuf::new(), |p| p.clone());
        let why = format!("no model has enough data to fit ({})", why.join("; "));
        return Err(Error::Calibrate(TraceError::file(&what, why).into()));
    }
    Ok(cal
        .models
        .iter()
        .map(|m| LatencyFit {
            model: m.model.clone(),
            requests: m.requests,
            overhead_s: m.overhead_s,
            prefill_rate: m.prefill_rate,
            cached_rate: m.cached_rate,
            decode_rate: m.decode_rate,
            median_abs_error_s: m.median_abs_error_s,
        })
        .collect())
}
