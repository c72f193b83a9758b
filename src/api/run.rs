//! Running an experiment: the limits checked, the output directory checked and locked, every
//! replication of every strategy on the one executor, the hold answer when the experiment asks
//! for it, and the result files. `prefixsim run` is this and a print.

use std::path::PathBuf;

use super::error::Error;
use super::experiment::Experiment;
use super::outdir;
use crate::exec::{self, ModelRunner, StrategyOutcome};
use crate::limits::{self, WorkLimits};
use crate::report::run::RunSummary;
#[cfg(feature = "sweep")]
use crate::sweep::hold::{self, HoldAnswer};

/// How to run an experiment (`Default`: all cores, no files, the limits checked).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Threads for replications; `None`: all cores. Never changes a result.
    pub jobs: Option<usize>,
    /// Also write the result files (manifest.json, summary.csv, runs.csv, histograms/) here:
    /// a directory that does not exist or is empty (unless `force`, which replaces it
    /// atomically), locked while the run runs and its files are written.
    pub out: Option<PathBuf>,
    /// With `out`: also write trace.csv (every agent's segments in replication 0).
    pub trace: bool,
    /// With `trace`: only agents 0..N in trace.csv (and the prewarm request and the parent),
    /// recorded as the run goes, so the trace's memory is bounded by N however many agents
    /// run (the page's timeline); `None`: every agent.
    pub trace_lanes: Option<u32>,
    /// Start even when the estimated work is above the experiment's `[limits]`, and replace
    /// `out` when it holds files (as `--force` does).
    pub force: bool,
    /// Also search the hold answer (`Experiment::hold_answer`) when the experiment asks for
    /// it (`[report] answer = "hold_cap"`); with `out`, written as hold.json. Needs the
    /// `sweep` feature.
    pub hold: bool,
    /// Draw a progress bar on stderr when it is a terminal.
    pub progress: bool,
}

/// A finished run: each strategy's outcome, the model's notes, and the hold answer when asked.
pub(crate) struct Ran {
    pub outcomes: Vec<StrategyOutcome>,
    pub notes: Vec<String>,
    #[cfg(feature = "sweep")]
    pub hold: Option<HoldAnswer>,
}

impl Ran {
    /// The typed results (the `run --json` document).
    pub fn summary(&self, exp: &Experiment) -> RunSummary {
        RunSummary::new(&exp.resolved, &self.outcomes, self.notes.clone())
    }
}

impl Experiment {
    /// Every replication of every strategy; with `opts.out`, the result files too.
    pub fn run(&self, opts: &RunOptions) -> Result<RunSummary, Error> {
        Ok(self.execute(opts)?.summary(self))
    }

    /// The cap to use for this experiment's `wait_first` hold, with its interval over the
    /// latency calibration's refits (`sweep::hold`), as `run`, `tune --param max_wait`,
    /// `report` and `serve` give it; `None` unless `[report] answer = "hold_cap"` and a
    /// `wait_first` strategy is run.
    #[cfg(feature = "sweep")]
    pub fn hold_answer(&self, jobs: Option<usize>) -> Result<Option<HoldAnswer>, Error> {
        let jobs = jobs.unwrap_or_else(exec::default_jobs).max(1);
        Ok(hold::for_experiment(&self.runner(), &self.table, &self.resolved, jobs)?)
    }

    pub(super) fn runner(&self) -> ModelRunner {
        ModelRunner { origin: self.origin.clone() }
    }

    /// `run`, keeping what the command prints: the outcomes and the hold answer. Everything
    /// is checked before anything runs, and the files are written under the directory's lock.
    pub(crate) fn execute(&self, opts: &RunOptions) -> Result<Ran, Error> {
        let exp = &self.resolved;
        // A run that cannot end before its horizon is refused under --force too.
        limits::check_horizon(exp)?;
        if !opts.force {
            // A trace of a few lanes (`trace_lanes`) holds a few agents' requests: nothing
            // beside the run's own memory; a full trace holds every request of replication 0.
            let full_trace = opts.trace && opts.trace_lanes.is_none();
            let estimate = limits::estimate_run_traced(exp, opts.out.is_some(), full_trace);
            estimate.check(&WorkLimits::from_table(&self.table), false)?;
        }
        // Opened (and locked) before the work: a directory that will be refused is refused now.
        let out = match &opts.out {
            Some(dir) => Some(outdir::open(dir, opts.force, "")?),
            None => None,
        };
        let runner = self.runner();
        let jobs = opts.jobs.unwrap_or_else(exec::default_jobs).max(1);
        let outcomes = exec::execute(&runner, exp, jobs, opts.progress)?;
        let ran = Ran {
            outcomes,
            notes: crate::model::notes(exp),
            #[cfg(feature = "sweep")]
            hold: match opts.hold {
                true => hold::for_experiment(&runner, &self.table, exp, jobs)?,
                false => None,
            },
        };
        if let Some(out) = out {
            self.write_files(&ran, out, opts.trace, opts.trace_lanes)?;
        }
        Ok(ran)
    }

    /// Write `ran`, a run of this experiment, into `out` (opened and locked by the caller) and
    /// swap it in: the files `RunOptions::out` names, with trace.csv when `trace` (of agents
    /// 0..N with `trace_lanes`).
    pub(crate) fn write_files(
        &self,
        ran: &Ran,
        out: outdir::OutDir,
        trace: bool,
        trace_lanes: Option<u32>,
    ) -> Result<(), Error> {
        let (exp, runner) = (&self.resolved, self.runner());
        let dir = &out.path().to_path_buf();
        let trace = match (trace, trace_lanes) {
            (true, Some(lanes)) => Some(runner.sampled_trace_rows(exp, lanes)?),
            (true, None) => Some(exec::trace_rows(&runner, exp)?),
            (false, _) => None,
        };
        exec::write_out(dir, exp, &ran.outcomes, trace.as_deref())
            .map_err(|source| Error::Write { path: dir.clone(), source })?;
        #[cfg(feature = "sweep")]
        if let Some(h) = &ran.hold {
            let json = serde_json::to_string_pretty(h).expect("a hold answer serializes");
            crate::results::write_atomic(&dir.join("hold.json"), json + "\n")?;
        }
        Ok(out.commit()?)
    }
}
