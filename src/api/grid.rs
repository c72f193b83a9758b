//! The `[sweep]` grid of an experiment as a library value (`Sweep`) and its run into a results
//! directory (`run_sweep`); behind the `sweep` feature.

use std::path::PathBuf;

use super::{Error, Experiment};
use crate::exec::ModelSim;
use crate::sweep::{self, Outcome, Plan};

impl Experiment {
    /// The experiment's `[sweep]` grid, every axis value checked.
    pub fn sweep(&self) -> Result<Sweep, Error> {
        let sim = ModelSim { origin: self.origin.clone() };
        let order = sweep::spec::key_order(&self.text);
        let plan = Plan::new(&sim, self.table.clone(), &order)?;
        Ok(Sweep { sim, plan })
    }
}

/// A validated parameter sweep: the experiment without `[sweep]` and the grid of points.
pub struct Sweep {
    sim: ModelSim,
    plan: Plan,
}

/// What a finished (or interrupted) sweep did; its results are the files in `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSummary {
    /// The results directory.
    pub dir: PathBuf,
    /// Points of the grid (of this shard).
    pub points: u64,
    /// Points in the journal now.
    pub points_done: u64,
    /// Points already in the journal before this run (resume).
    pub resumed_from: u64,
    /// Every point is in and the result files are written.
    pub complete: bool,
    /// SHA-256 of the experiment, as in manifest.json.
    pub content_hash: String,
}

impl Sweep {
    /// Points of the whole grid.
    pub fn points(&self) -> u64 {
        self.plan.grid.points()
    }

    /// The axes' dotted keys, in file order (the first varies slowest).
    pub fn axes(&self) -> Vec<String> {
        self.plan.axis_keys()
    }

    /// Run (or resume) the sweep into `opts.dir`; the outputs are written when complete.
    pub fn run(&self, opts: &sweep::SweepOptions) -> Result<SweepSummary, Error> {
        run_sweep(self, opts)
    }
}

/// Run (or resume) `sweep` into `opts.dir` (journal, then summary.csv, runs.csv, histograms/
/// and manifest.json once every point is in). The shard's points are checked first, as the
/// command checks them: values that pass alone but not together are an input error naming
/// the point and its values, before any point runs or any file is written.
pub fn run_sweep(sweep: &Sweep, opts: &sweep::SweepOptions) -> Result<SweepSummary, Error> {
    let seq = sweep::PointSeq::of(sweep.plan.grid.points(), opts.shard);
    sweep.plan.check_points(&sweep.sim, seq)?;
    let rep = sweep::run_sweep(&sweep.sim, &sweep.plan, opts)?;
    let (complete, points_done) = match rep.outcome {
        Outcome::Complete => (true, rep.points),
        Outcome::Interrupted { done } => (false, done),
    };
    Ok(SweepSummary {
        dir: opts.dir.clone(),
        points: rep.points,
        points_done,
        resumed_from: rep.resumed_from,
        complete,
        content_hash: sweep.plan.content_hash.clone(),
    })
}
