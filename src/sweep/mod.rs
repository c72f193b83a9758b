//! Parameter sweeps: the `[sweep]` grid, a resumable and shardable pipeline that streams point
//! records to a journal, the result files assembled from it, the merge of shards, and tuning.
//!
//! The simulator is behind `crate::exec::Runner` (`exec::ModelRunner` runs the model), points
//! run on the one executor (`crate::exec::ordered`), so this module knows nothing of caches or
//! agents. Invariants:
//! a point's record depends only on (experiment, point values), never on which other points
//! run, in which order or on how many workers; outputs are a pure function of the journal.

pub mod exec;
pub mod hold;
pub mod journal;
pub mod merge;
pub mod output;
pub mod point;
pub mod spec;
pub mod table;
pub mod tune;

use std::path::{Path, PathBuf};

pub use exec::{ExecOptions, Outcome};
pub use journal::{PointSeq, Shard, JOURNAL_FILE};
pub use point::{PointHold, PointRecord};
pub use spec::Grid;

pub use crate::exec::{Description, ResolveError, Runner};
use crate::limits::RunError;

/// Why a sweep or a merge failed, by cause.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The experiment, its `[sweep]` grid or a point's values are refused (names the key or
    /// the point).
    #[error("{0}")]
    Refused(String),
    /// A point's run failed: its values stopped it, or a bug (`RunError` says which). Its
    /// journal could never complete (the point fails again on resume), so it was removed.
    #[error("point {point}: {source}; nothing was kept")]
    Point {
        /// The point's index in the grid.
        point: u64,
        /// Why its run failed.
        source: RunError,
    },
    /// The journal in the directory is another sweep's, or the shards given to merge do not
    /// make one sweep (names them).
    #[error("{0}")]
    Mismatch(String),
    /// Reading or writing the journal or the outputs failed (names the file), or a bug.
    #[error("{0}")]
    Failed(String),
}

impl SweepError {
    /// True when the input is at fault: the experiment, the grid, the shards, or a point
    /// whose own values stopped it.
    pub fn is_input(&self) -> bool {
        match self {
            SweepError::Refused(_) | SweepError::Mismatch(_) => true,
            SweepError::Point { source, .. } => source.is_input(),
            SweepError::Failed(_) => false,
        }
    }

    fn failed(e: impl std::fmt::Display) -> Self {
        SweepError::Failed(e.to_string())
    }
}

/// A validated sweep: the base table (its `[sweep]` kept, which `resolve` ignores), the grid and
/// what the manifest says.
#[derive(Debug, Clone)]
pub struct Plan {
    pub base: toml::Table,
    pub grid: Grid,
    pub content_hash: String,
    /// The experiment file (after `--set`) as TOML, `[sweep]` included.
    pub experiment_text: String,
    pub desc: Description,
    /// Per axis, whether it has a seconds column (`results::has_seconds_column`), found once
    /// rather than from every value for every point.
    seconds: Vec<bool>,
}

impl Plan {
    /// Validate the sweep of `table`; `order` is the `[sweep]` keys' file order
    /// (`spec::key_order`). Every value of every axis is checked (`check_axes`), then the first
    /// point: the work is linear in the axes' lengths, whatever their product, so a shard of
    /// a large grid does not pay for the other shards' points.
    pub fn new<S: Runner>(
        sim: &S,
        table: toml::Table,
        order: &[String],
    ) -> Result<Plan, SweepError> {
        // The base keeps its `[sweep]`, which `resolve` ignores: `[report] assumptions` may
        // name its axes, in the base and in every point's table.
        let base = table;
        let sweep = match base.get("sweep").cloned() {
            Some(toml::Value::Table(t)) => t,
            Some(other) => {
                return Err(SweepError::Refused(format!(
                    "`sweep` must be a table, found `{other}`"
                )))
            }
            None => return Err(SweepError::Refused("the experiment has no [sweep] table".into())),
        };
        let exp = sim.resolve(&base).map_err(|e| SweepError::Refused(e.to_string()))?;
        let mut sweep_only = toml::Table::new();
        sweep_only.insert("sweep".into(), toml::Value::Table(sweep.clone()));
        let sweep_text = toml::to_string(&sweep_only).map_err(SweepError::failed)?;
        let experiment_text = format!("{}\n{sweep_text}", sim.render(&exp));
        let grid =
            Grid::from_table(&sweep, order).map_err(|e| SweepError::Refused(e.to_string()))?;
        let seconds = grid.axes.iter().map(|a| crate::results::has_seconds_column(&a.values));
        let plan = Plan {
            seconds: seconds.collect(),
            base,
            grid,
            content_hash: crate::results::content_hash(&experiment_text),
            experiment_text,
            desc: sim.describe(&exp),
        };
        plan.check_axes(sim, &exp)?;
        let first = plan.point_table(0).map_err(|e| SweepError::Refused(e.to_string()))?;
        sim.resolve(&first)
            .map_err(|e| SweepError::Refused(format!("[sweep] {}: {e}", plan.point_label(0))))?;
        Ok(plan)
    }

    /// Each value of each axis (with its zip partners) set alone on the base experiment, so an
    /// error names the axis that causes it: every shard checks every value, and refuses a bad
    /// one before any point runs. One table is set and put back value after value, and the
    /// simulator checks only what the value can change (`Runner::check_changed`).
    fn check_axes<S: Runner>(&self, sim: &S, base: &S::Exp) -> Result<(), SweepError> {
        let mut t = self.base.clone();
        for (a, axis) in self.grid.axes.iter().enumerate() {
            let group = self.grid.group_of(a);
            let keys: Vec<String> =
                group.iter().map(|&b| table::canonical_key(&self.grid.axes[b].key)).collect();
            for (i, v) in axis.values.iter().enumerate() {
                let sets = group.iter().map(|&b| &self.grid.axes[b]);
                let sets = sets.map(|b| (b.key.as_str(), &b.values[i]));
                check_set(sim, base, &mut t, sets, &keys)?.map_err(|e| {
                    SweepError::Refused(format!(
                        "[sweep] {} = {}: {e}",
                        axis.key,
                        spec::value_text(v)
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// Every point of `seq` with all its values set, checked as `check_axes` checks one value:
    /// a combination the experiment refuses is bad input, found before any point runs. The
    /// points are this shard's, so the work is linear in the shard, not the grid.
    pub fn check_points<S: Runner>(&self, sim: &S, seq: PointSeq) -> Result<(), SweepError> {
        let base = sim.resolve(&self.base).map_err(|e| SweepError::Refused(e.to_string()))?;
        let keys: Vec<String> =
            self.grid.axes.iter().map(|a| table::canonical_key(&a.key)).collect();
        let mut t = self.base.clone();
        for i in seq.iter() {
            check_set(sim, &base, &mut t, self.grid.point(i).into_iter(), &keys)?.map_err(|e| {
                SweepError::Refused(format!("[sweep] {}: {e}", self.point_label(i)))
            })?;
        }
        Ok(())
    }

    /// `point 3 (workload.agents = 4, max_wait = 1s)`.
    pub fn point_label(&self, index: u64) -> String {
        let values: Vec<String> = self
            .grid
            .point(index)
            .iter()
            .map(|(k, v)| format!("{k} = {}", spec::value_text(v)))
            .collect();
        format!("point {index} ({})", values.join(", "))
    }

    /// The experiment table of point `index`.
    pub fn point_table(&self, index: u64) -> Result<toml::Table, table::KeyError> {
        let mut t = self.base.clone();
        for (key, value) in self.grid.point(index) {
            table::set_value(&mut t, key, value.clone())?;
        }
        Ok(t)
    }

    pub fn axis_keys(&self) -> Vec<String> {
        self.grid.axes.iter().map(|a| a.key.clone()).collect()
    }

    /// The axis cells of point `index`, in the order of the header's axis columns.
    fn csv_axis_cells(&self, index: u64) -> Vec<toml::Value> {
        let values: Vec<toml::Value> =
            self.grid.point(index).into_iter().map(|(_, v)| v.clone()).collect();
        crate::results::axis_cells(&values, &self.seconds)
    }

    /// manifest.json's text for this sweep (or one shard of it).
    pub fn manifest(&self, shard: Option<Shard>) -> String {
        let m = crate::results::Manifest {
            prefixsim_version: env!("CARGO_PKG_VERSION").to_string(),
            kind: "sweep".to_string(),
            name: self.desc.name.clone(),
            question: self.desc.question.clone(),
            seed: Some(self.desc.seed),
            replications: Some(self.desc.replications),
            strategies: self.desc.strategies.clone(),
            axes: self
                .grid
                .axes
                .iter()
                .map(|a| crate::results::ManifestAxis {
                    key: a.key.clone(),
                    values: a.values.iter().map(spec::value_json).collect(),
                })
                .collect(),
            points: Some(self.grid.points()),
            shard,
            content_hash: Some(self.content_hash.clone()),
            experiment: Some(self.experiment_text.clone()),
        };
        crate::results::manifest_json(&m)
    }

    fn header(&self, shard: Option<Shard>) -> journal::Header {
        let axes = self.grid.axes.iter();
        journal::Header {
            format: journal::FORMAT.into(),
            content_hash: self.content_hash.clone(),
            points: self.grid.points(),
            shard,
            // Each key, and `<key>_s` after a duration-valued one.
            axis_keys: crate::results::axis_columns(axes.map(|a| (a.key.as_str(), &a.values[..]))),
            manifest: self.manifest(None),
            hold: true,
        }
    }
}

/// Whether `t` with the (key, value) `sets` resolves (`Runner::check_changed`; `keys` are
/// the keys set, in full), putting `t` back after. The outer error: a value that cannot be set.
fn check_set<'v, S: Runner>(
    sim: &S,
    base: &S::Exp,
    t: &mut toml::Table,
    sets: impl Iterator<Item = (&'v str, &'v toml::Value)>,
    keys: &[String],
) -> Result<Result<(), ResolveError>, SweepError> {
    let mut undo = Vec::with_capacity(keys.len());
    for (key, value) in sets {
        let u = table::set_value_undoable(t, key, value.clone());
        undo.push(u.map_err(|e| SweepError::Refused(format!("[sweep] {key}: {e}")))?);
    }
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let checked = sim.check_changed(base, t, &keys);
    undo.into_iter().rev().for_each(|u| u.restore(t));
    Ok(checked)
}

/// Where and how to run a sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The results directory (the journal, then the outputs), locked while written.
    pub dir: PathBuf,
    /// Run only this shard's points (`index` of `count`: the points whose index mod `count`
    /// is `index`).
    pub shard: Option<Shard>,
    /// Continue the journal in `dir`, if it is this sweep's; otherwise start it again.
    pub resume: bool,
    /// Without `resume`: replace `dir` when it holds files (atomically, when the sweep ends or
    /// is interrupted); otherwise such a directory is refused (`api::run_sweep`).
    pub force: bool,
    /// How the points run.
    pub exec: ExecOptions,
}

/// What a sweep run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub outcome: Outcome,
    /// Points of this shard already in the journal before this run (resume).
    pub resumed_from: u64,
    /// Points of this shard.
    pub points: u64,
}

/// Run (or resume) a sweep into `opts.dir` and, when complete, write its outputs. Each point
/// carries its hold answer when its experiment asks for one (`PointHold`).
pub fn run_sweep<S: PointHold>(
    sim: &S,
    plan: &Plan,
    opts: &SweepOptions,
) -> Result<SweepReport, SweepError> {
    let header = plan.header(opts.shard);
    let seq = header.point_seq();
    let path = opts.dir.join(JOURNAL_FILE);
    let (writer, first) = open_journal(&opts.dir, &header, opts.resume)?;
    let work = |point: u64| -> Result<PointRecord, RunError> {
        let t = plan.point_table(point).map_err(|e| RunError::Internal(e.to_string()))?;
        let exp = sim.resolve(&t).map_err(|e| RunError::Input(e.to_string()))?;
        point::run_point_with_hold(sim, &t, &exp, point, &plan.csv_axis_cells(point))
    };
    let outcome = match exec::execute(seq, first, &work, writer, opts.exec) {
        Ok(o) => o,
        // A point that fails fails again on resume (same experiment, same numbers): the
        // journal can never complete, so it goes; I/O failures keep it (resume after fixing).
        Err(exec::ExecError::Point { point, source }) => {
            let _ = std::fs::remove_file(&path);
            return Err(SweepError::Point { point, source });
        }
        Err(e) => return Err(SweepError::failed(e)),
    };
    if outcome == Outcome::Complete {
        output::finalize(&opts.dir, &path, &plan.manifest(opts.shard))
            .map_err(SweepError::failed)?;
    }
    Ok(SweepReport { outcome, resumed_from: first, points: seq.len() })
}

/// Open the journal: continue a matching one (`resume`), or start a new one.
fn open_journal(
    dir: &Path,
    header: &journal::Header,
    resume: bool,
) -> Result<(journal::Writer, u64), SweepError> {
    let path = &dir.join(JOURNAL_FILE);
    std::fs::create_dir_all(dir)
        .map_err(|e| SweepError::Failed(format!("{}: {e}", dir.display())))?;
    if resume {
        let scan = journal::scan(path).map_err(|e| match e {
            journal::JournalError::BadHeader { .. } => SweepError::Mismatch(e.to_string()),
            e => SweepError::failed(e),
        })?;
        if let Some(scan) = scan {
            check_same(&scan.header, header, path)?;
            let w = journal::Writer::resume(path, scan.valid_len).map_err(SweepError::failed)?;
            return Ok((w, scan.records));
        }
    }
    Ok((journal::Writer::create(path, header).map_err(SweepError::failed)?, 0))
}

fn check_same(
    found: &journal::Header,
    want: &journal::Header,
    path: &Path,
) -> Result<(), SweepError> {
    let p = path.display();
    if found.content_hash != want.content_hash {
        return Err(SweepError::Mismatch(format!(
            "{p}: cannot resume: the journal is of a different experiment (content hash {} , \
             this file has {}); use another --out or remove the directory",
            found.content_hash, want.content_hash
        )));
    }
    if found.shard != want.shard {
        let show = |s: Option<Shard>| {
            s.map_or("no shard".to_string(), |s| format!("--shard {}/{}", s.index, s.count))
        };
        return Err(SweepError::Mismatch(format!(
            "{p}: cannot resume: the journal was written with {}, this run has {}",
            show(found.shard),
            show(want.shard)
        )));
    }
    if found != want {
        return Err(SweepError::Mismatch(format!(
            "{p}: cannot resume: the journal was written by another prefixsim version"
        )));
    }
    Ok(())
}

/// Why a `--shard K/N` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not of the form `K/N`.
    #[error("--shard `{0}`: expected K/N, e.g. 0/4 (K counts from 0)")]
    NotKN(String),
    /// `K` or `N` is not a whole number.
    #[error("--shard `{text}`: {part} is not a number")]
    NotANumber {
        /// The text given.
        text: String,
        /// `K` or `N`.
        part: char,
    },
    /// `N` is 0.
    #[error("--shard `{0}`: N must be at least 1")]
    NoShards(String),
    /// `K` is `N` or more.
    #[error(
        "--shard `{text}`: K counts from 0, so K must be below N (0..{last}); with Slurm use \
         --array=0-{last}"
    )]
    IndexPastLast {
        /// The text given.
        text: String,
        /// The last shard's index, `N - 1`.
        last: u64,
    },
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    /// Parse `K/N` (K is 0-based: 0 <= K < N).
    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let (k, n) = text.split_once('/').ok_or_else(|| ShardError::NotKN(text.into()))?;
        let num = |s: &str, part| {
            s.trim().parse::<u64>().map_err(|_| ShardError::NotANumber { text: text.into(), part })
        };
        let (k, n) = (num(k, 'K')?, num(n, 'N')?);
        if n == 0 {
            return Err(ShardError::NoShards(text.into()));
        }
        if k >= n {
            return Err(ShardError::IndexPastLast { text: text.into(), last: n - 1 });
        }
        Ok(Shard { index: k, count: n })
    }
}

#[cfg(test)]
mod tests;
