//! `prefixsim check`: an experiment file validated as `run` or `sweep` would before starting
//! (parsed, every key resolved and range-checked, a `[sweep]`'s every point resolved, the work
//! estimated against the limits), without running anything or writing a file.

use std::path::Path;

use super::error::Error;
use super::experiment::Experiment;
use super::sweep::Sweep;
use crate::limits::{self, Estimate, Resource, WorkLimits};

/// What a valid file would run.
#[derive(Debug, Clone)]
pub struct Checked {
    /// `run` (no `[sweep]` table) or `sweep`.
    pub command: &'static str,
    /// Points of the grid (1 for a run).
    pub points: u64,
    /// The swept axes, in file order (none for a run).
    pub axes: Vec<String>,
    /// Strategies and replications (of the first point: an axis may change them).
    pub strategies: usize,
    pub replications: u32,
    /// The work estimated against the limits, as the command estimates it.
    pub estimate: Estimate,
}

/// Check `file` with the `--set` assignments `sets`: the errors `run` (or, with a `[sweep]`
/// table, `sweep`) would give before starting, the same words and exit code.
pub fn check(file: &Path, sets: &[String]) -> Result<Checked, Error> {
    let (_, table) = Experiment::read_table(file, sets)?;
    if crate::config::sweep_table(&table).is_none() {
        let exp = Experiment::load(file, sets)?;
        limits::check_horizon(&exp.resolved)?;
        let estimate = limits::estimate_run(&exp.resolved, false);
        estimate.check(&WorkLimits::from_table(&exp.table), false)?;
        let (strategies, replications) = (exp.resolved.strategies.len(), exp.resolved.replications);
        return Ok(Checked {
            command: "run",
            points: 1,
            axes: Vec::new(),
            strategies,
            replications,
            estimate,
        });
    }
    // `Sweep::load` refuses the grid and the points' work above the limits, every point
    // resolved; the estimate is made again here to be shown.
    let sweep = Sweep::load(file, sets, false, None)?;
    let base = sweep.first_point_counts();
    Ok(Checked {
        command: "sweep",
        points: sweep.points(),
        axes: sweep.axes(),
        strategies: base.0,
        replications: base.1,
        estimate: sweep.work()?,
    })
}

impl Checked {
    /// A few lines: what would run and the work estimated.
    pub fn text(&self, file: &Path) -> String {
        let mut s =
            format!("ok: {} is valid; `prefixsim {}` would run\n", file.display(), self.command);
        match self.axes.is_empty() {
            true => s.push_str("  1 point"),
            false => s.push_str(&format!(
                "  {} points of [sweep] {}",
                self.points,
                self.axes.join(" x ")
            )),
        }
        s.push_str(&format!(
            ", {} strategies x {} replications each\n",
            self.strategies, self.replications
        ));
        for (r, amount, how, _) in &self.estimate.parts {
            s.push_str(&format!("  {}: {how}\n", describe(*r, *amount)));
        }
        s
    }
}

/// An amount of a resource in words (as the limits' errors say it).
fn describe(r: Resource, x: f64) -> String {
    match r {
        Resource::Requests => format!("{} simulated requests", limits::sci(x)),
        Resource::Memory => format!("{} of memory", limits::bytes(x)),
        Resource::Output => format!("{} of result files", limits::bytes(x)),
        Resource::Points => format!("{} points", limits::sci(x)),
        Resource::Tokens => format!("{} input tokens in one run", limits::sci(x)),
    }
}
