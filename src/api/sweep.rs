//! The `[sweep]` grid of an experiment as a library value (`Sweep`) and its run into a results
//! directory (`run_sweep`), locked while it is written; behind the `sweep` feature.
//! `prefixsim sweep` loads its grid with `Sweep::load`, which also estimates the work against
//! the limits.

use std::path::{Path, PathBuf};

use super::error::Error;
use super::experiment::Experiment;
use super::outdir;
use crate::exec::{ModelRunner, Runner};
use crate::limits::{self, Estimate, LimitError, WorkLimits};
use crate::sweep::merge::MergeReport;
use crate::sweep::{self, Grid, Outcome, Plan, PointSeq, Shard, SweepError, SweepOptions};

impl Experiment {
    /// The experiment's `[sweep]` grid, every axis value checked.
    pub fn sweep(&self) -> Result<Sweep, Error> {
        let runner = self.runner();
        let order = sweep::spec::key_order(&self.text);
        let plan = Plan::new(&runner, self.table.clone(), &order)?;
        Ok(Sweep { runner, plan, file: None })
    }
}

/// A validated parameter sweep: the experiment without `[sweep]` and the grid of points.
pub struct Sweep {
    runner: ModelRunner,
    plan: Plan,
    /// Loaded from a file by `load`, whose points are already checked for `shard`: errors
    /// of the run name the file.
    file: Option<(String, Option<Shard>)>,
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
    pub fn run(&self, opts: &SweepOptions) -> Result<SweepSummary, Error> {
        run_sweep(self, opts)
    }

    /// The validated plan (for printing what ran).
    #[cfg(feature = "cli")]
    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Where `prefixsim sweep` writes when no directory is given: `results/<name>`, or
    /// `results/<name>-shardKofN`.
    pub fn default_dir(&self, shard: Option<Shard>) -> PathBuf {
        let base = crate::results::slug(&self.plan.desc.name.to_lowercase());
        match shard {
            None => PathBuf::from("results").join(base),
            Some(s) => {
                PathBuf::from("results").join(format!("{base}-shard{}of{}", s.index, s.count))
            }
        }
    }

    /// Read `file`, apply `sets` (as `--set`) and validate the sweep, as `prefixsim sweep`
    /// does; unless `force`, refuse a grid or a sweep above the work limits (the grid's size
    /// first, before a point is looked at). Under a `shard` the limits apply to the shard's
    /// points, the work of this machine. Every point of the shard is checked here (by the
    /// estimate, which resolves each, or under `force` on its own): values that pass alone may
    /// not pass together. Errors of the run name the file.
    pub fn load(
        file: &Path,
        sets: &[String],
        force: bool,
        shard: Option<Shard>,
    ) -> Result<Sweep, Error> {
        let origin = file.display().to_string();
        let (text, table) = Experiment::read_table(file, sets)?;
        blame_a_set(&table, &origin, sets)?;
        let order = sweep::spec::key_order(&text);
        Sweep::checked(origin, table, &order, force, shard)
    }

    /// `load`'s checks of a table read already (`table`, from `origin`, its axes in `order`):
    /// unless `force`, the grid and the work against the limits; every point of the `shard`.
    pub(crate) fn checked(
        origin: String,
        table: toml::Table,
        order: &[String],
        force: bool,
        shard: Option<Shard>,
    ) -> Result<Sweep, Error> {
        let runner = ModelRunner { origin: origin.clone() };
        let limits = WorkLimits::from_table(&table);
        let named = |e: Error| Error::InFile { origin: origin.clone(), error: Box::new(e) };
        if let Some(Ok(grid)) =
            crate::config::sweep_table(&table).map(|t| Grid::from_table(t, order))
        {
            let estimate = grid_estimate(&grid, shard);
            estimate.check(&limits, force).map_err(|e| named(e.into()))?;
        }
        let plan = Plan::new(&runner, table, order).map_err(|e| in_file(&origin, e))?;
        match force {
            false => estimate(&runner, &plan, shard)?
                .check(&limits, false)
                .map_err(|e| named(e.into()))?,
            // Worded as the estimate words it, so --force changes nothing of the message.
            true => {
                plan.check_points(&runner, PointSeq::of(plan.grid.points(), shard))?;
                // A point that cannot end before its horizon is refused under --force too.
                let past = estimate(&runner, &plan, shard)?.past_horizon;
                past.map_or(Ok(()), |why| Err(named(LimitError::PastHorizon(why).into())))?
            }
        }
        Ok(Sweep { runner, plan, file: Some((origin, shard)) })
    }
}

impl Sweep {
    /// The work of the whole grid, estimated as `load` estimates it (`prefixsim check`).
    #[cfg(feature = "cli")]
    pub(crate) fn work(&self) -> Result<Estimate, Error> {
        estimate(&self.runner, &self.plan, None)
    }

    /// Strategies and replications of the grid's first point (checked by `load`).
    #[cfg(feature = "cli")]
    pub(crate) fn first_point_counts(&self) -> (usize, u32) {
        let spec = self.plan.point_table(0).ok().and_then(|t| self.runner.resolve(&t).ok());
        spec.map_or((0, 0), |e| (e.strategies.len(), e.replications))
    }
}

/// A sweep error of the file `origin`: the input's named after the file, the others as they are.
fn in_file(origin: &str, e: SweepError) -> Error {
    match e.is_input() {
        true => Error::InFile { origin: origin.to_string(), error: Box::new(e.into()) },
        false => e.into(),
    }
}

/// An error in the base experiment (before the grid) about a key a `--set` assigned names
/// that `--set`, as `run` does; other errors are left to the points, which say where.
fn blame_a_set(table: &toml::Table, origin: &str, sets: &[String]) -> Result<(), Error> {
    if sets.is_empty() {
        return Ok(());
    }
    match crate::config::resolve(table, origin).map_err(|e| e.blame_set(sets)) {
        Err(e @ crate::config::ConfigError::FromSet { .. }) => Err(e.into()),
        _ => Ok(()),
    }
}

/// The grid's size against `limits.max_points`, before any point is resolved.
fn grid_estimate(grid: &Grid, shard: Option<Shard>) -> Estimate {
    let axes: Vec<(String, usize)> =
        grid.axes.iter().map(|a| (format!("[sweep] {}", a.key), a.values.len())).collect();
    let sizes: Vec<String> = axes.iter().map(|a| a.1.to_string()).collect();
    let seq = PointSeq::of(grid.points(), shard);
    let shard_text = match shard {
        Some(s) => format!(" (shard {}/{}: {} of {} points)", s.index, s.count, seq.len(), seq.end),
        None => String::new(),
    };
    let how = format!("the [sweep] grid, {}{shard_text}", sizes.join(" x "));
    limits::estimate_grid(seq.len(), &how, &axes)
}

/// The estimate of the sweep's (or the shard's) points, every one resolved (they are within
/// `limits.max_points`). Streamed: one point's experiment at a time. A point that does not
/// resolve (a combination of axis values the experiment refuses) is bad input, found before
/// any work.
fn estimate(runner: &ModelRunner, plan: &Plan, shard: Option<Shard>) -> Result<Estimate, Error> {
    let seq = PointSeq::of(plan.grid.points(), shard);
    let mut failed = None;
    let exps = seq.iter().map_while(|i| {
        let exp = plan
            .point_table(i)
            .map_err(|e| e.to_string())
            .and_then(|t| runner.resolve(&t).map_err(|e| e.to_string()));
        match exp {
            Ok(exp) => Some((plan.point_label(i), exp)),
            Err(e) => {
                failed = Some(format!("[sweep] {}: {e}", plan.point_label(i)));
                None
            }
        }
    });
    let what = match shard {
        Some(s) => format!("[sweep] shard {}/{}", s.index, s.count),
        None => "[sweep]".to_string(),
    };
    let e = limits::estimate_points(&what, seq.len(), exps, 0, plan.grid.axes.len(), true);
    match failed {
        Some(m) => Err(Error::Sweep(SweepError::Refused(m))),
        None => Ok(e),
    }
}

/// Run (or resume) `sweep` into `opts.dir` (journal, then summary.csv, runs.csv, histograms/
/// and manifest.json once every point is in), holding the directory's lock. The shard's
/// points are checked first, as the command checks them: values that pass alone but not
/// together are an input error naming the point and its values, before any point runs or
/// any file is written. Without `opts.resume`, `opts.dir` must not exist or be empty unless
/// `opts.force`, which replaces it whole (docs/limits.md, "What --out accepts").
pub fn run_sweep(sweep: &Sweep, opts: &SweepOptions) -> Result<SweepSummary, Error> {
    let Sweep { runner, plan, file } = sweep;
    let origin = file.as_ref().map(|(origin, _)| origin);
    if file.as_ref().map(|f| f.1) != Some(opts.shard) {
        plan.check_points(runner, PointSeq::of(plan.grid.points(), opts.shard))?;
    }
    let named = |e: SweepError| match origin {
        Some(origin) => in_file(origin, e),
        None => e.into(),
    };
    let rep = match opts.resume {
        true => {
            let lock = outdir::resume(&opts.dir, sweep::JOURNAL_FILE)?;
            sweep::run_sweep(runner, plan, opts).map_err(|e| {
                // A failed point removed the journal: leave no empty directory behind either.
                lock.remove_if_empty();
                named(e)
            })?
        }
        false => {
            let hint = "; a sweep journaled there continues with --resume";
            let hint = if opts.dir.join(sweep::JOURNAL_FILE).is_file() { hint } else { "" };
            let out = outdir::open(&opts.dir, opts.force, hint)?;
            let into = SweepOptions { dir: out.path().to_path_buf(), ..opts.clone() };
            let rep = match sweep::run_sweep(runner, plan, &into) {
                Ok(rep) => rep,
                Err(e) => {
                    // A failed point removed its journal, and `out` goes when dropped; another
                    // failure (I/O) keeps the journal, swapped in for --resume.
                    if into.dir.join(sweep::JOURNAL_FILE).is_file() {
                        let _ = out.commit();
                    }
                    return Err(named(e));
                }
            };
            // Interrupted too: the journal of the finished points is what --resume continues.
            out.commit()?;
            rep
        }
    };
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
        content_hash: plan.content_hash.clone(),
    })
}

/// Merge the shard directories `dirs` of one sweep (each the `dir` of a sharded `run_sweep`)
/// into `out`, byte-identical to the sweep run whole, holding `out`'s lock (`prefixsim
/// merge`); a directory this created is removed again when the merge is refused. `out` must
/// not exist or be empty unless `force`, which replaces it whole (`prefixsim merge --force`).
pub fn merge_shards(dirs: &[PathBuf], out: &Path, force: bool) -> Result<MergeReport, Error> {
    sweep::merge::check_not_a_shard(dirs, out)?;
    let dir = outdir::open(out, force, "")?;
    // Dropped on an error: the staging directory (or the one created) goes.
    let rep = sweep::merge::merge(dirs, dir.path())?;
    dir.commit()?;
    Ok(rep)
}
