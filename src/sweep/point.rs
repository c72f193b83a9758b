//! One sweep point, start to finish: its experiment table (base + axis values), every
//! replication of every strategy, its hold answer when the experiment asks for one
//! (`sweep::hold`), and the finished record (runs.csv rows, summary.csv rows, histograms,
//! the hold.csv row) that the journal stores and the outputs are assembled from.
//!
//! Memory per point: one aggregate (scalars + three merged histograms) per strategy and the
//! formatted rows; only the aggregates' memory outlives the point (each worker thread keeps
//! them, reset for every point).

use serde::{Deserialize, Serialize};

use super::hold::HoldAnswer;
use super::{Description, Runner};
use crate::exec::ModelRunner;
use crate::limits::RunError;
use crate::metrics::{RunMetrics, SCALAR_NAMES};
use crate::results::{self, Aggregate, SummaryRow};

/// What a finished point contributes to every output file, already formatted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: u64,
    /// runs.csv rows, each ending in `\n`.
    pub runs: String,
    /// summary.csv rows, each ending in `\n`.
    pub summary: String,
    /// The point's intervals of `histograms/latency.hlog` (three per strategy), each line
    /// ending in `\n`.
    pub hists: String,
    /// The point's hold.csv row ending in `\n`, or empty when its experiment asks for no
    /// hold answer. Missing (so empty) in the records of journals written before hold.csv
    /// (`journal::Header::hold`).
    #[serde(default)]
    pub hold: String,
}

/// What a sweep needs of its simulator beyond `Runner`: a point's hold answer
/// (`sweep::hold::for_experiment`), which only the model's experiments can ask for.
pub trait PointHold: Runner {
    /// The hold answer of the point whose table is `table` and resolution `exp`.
    fn hold(&self, table: &toml::Table, exp: &Self::Exp) -> Result<Option<HoldAnswer>, RunError>;
}

impl PointHold for ModelRunner {
    /// On one thread: the points run in parallel already.
    fn hold(
        &self,
        table: &toml::Table,
        exp: &crate::config::ExperimentSpec,
    ) -> Result<Option<HoldAnswer>, RunError> {
        super::hold::for_experiment(self, table, exp, 1)
    }
}

/// The hold.csv row of `answer` at `point` (`values`: its axis cells), with its `\n`.
pub fn hold_line(point: u32, values: &[toml::Value], answer: &HoldAnswer) -> String {
    let row = results::HoldRow {
        point,
        strategy: answer.strategy.as_str().into(),
        cap_s: answer.cap_s,
        cap_range_s: answer.cap_range_s,
        p_after_cap: answer.p_after_cap,
        p_after_cap_draws: answer.p_after_cap_draws,
        ttft_p50_s: answer.ttft_p50_s,
        ttft_p95_s: answer.ttft_p95_s,
        ttft_p99_s: answer.ttft_p99_s,
        draws: u32::try_from(answer.draws).unwrap_or(u32::MAX),
        knife_edge: answer.knife_edge,
    };
    results::hold_line(&row, values) + "\n"
}

/// `run_point`, then the point's hold answer (`PointHold::hold`) into the record: the whole
/// of a sweep point. `table` is the point's experiment table, `exp` its resolution.
pub fn run_point_with_hold<S: PointHold>(
    sim: &S,
    table: &toml::Table,
    exp: &S::Exp,
    point: u64,
    values: &[toml::Value],
) -> Result<PointRecord, RunError> {
    let mut record = run_point(sim, exp, point, values)?;
    if let Some(answer) = sim.hold(table, exp)? {
        let p32 = u32::try_from(point).map_err(|_| format!("point {point} is beyond u32"))?;
        record.hold = hold_line(p32, values, &answer);
    }
    Ok(record)
}

/// A worker thread's buffers, kept between points: one aggregate per strategy (a reset
/// zeroes its three 216 KB histograms in place, where `Aggregate::new` allocates three more:
/// `Aggregate::reset`) and the point's every run's scalars in the order run (at
/// `rep * strategies + strategy`), held until the rows are formatted in `run --out`'s order.
#[derive(Default)]
struct Spare {
    aggs: Vec<Aggregate>,
    scalars: Vec<[f64; SCALAR_NAMES.len()]>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Spare> =
        const { std::cell::RefCell::new(Spare { aggs: Vec::new(), scalars: Vec::new() }) };
}

/// Run every replication of every strategy of one point and format its record with the
/// shared result-file formatters (`crate::results`), exactly as `run --out` formats a run.
/// `values` are the point's axis values in axis order (for the CSV columns). Replication
/// outer, strategy inner (as `run` does, so a simulator's per-replication memo hits); the
/// first failing run in that order is the error.
pub fn run_point<S: Runner>(
    sim: &S,
    exp: &S::Exp,
    point: u64,
    values: &[toml::Value],
) -> Result<PointRecord, RunError> {
    let desc = sim.describe(exp);
    let p32 = u32::try_from(point).map_err(|_| format!("point {point} is beyond u32"))?;
    let mut spare = SPARE.with_borrow_mut(std::mem::take);
    let record = simulate_point(sim, exp, &desc, &mut spare).map(|()| {
        let (runs, summary, hists) = format_point(p32, values, &desc, &spare);
        PointRecord { point, runs, summary, hists, hold: String::new() }
    });
    SPARE.with_borrow_mut(|s| *s = spare);
    record
}

/// Every replication of every strategy into `spare` (its aggregates reset first),
/// replication outer.
fn simulate_point<S: Runner>(
    sim: &S,
    exp: &S::Exp,
    desc: &Description,
    spare: &mut Spare,
) -> Result<(), RunError> {
    let n = desc.strategies.len();
    let Spare { aggs, scalars: all } = spare;
    // New aggregates are already zero: reset only the ones a point before used.
    aggs.iter_mut().take(n).for_each(Aggregate::reset);
    if aggs.len() < n {
        aggs.resize_with(n, Aggregate::new);
    }
    all.clear();
    let mut m = RunMetrics::new();
    for r in 0..desc.replications {
        for (s, (label, agg)) in desc.strategies.iter().zip(aggs.iter_mut()).enumerate() {
            sim.simulate_into(exp, s, r, &mut m)?;
            // `scalars()` reads three quantiles: compute it once for the row and the aggregate.
            let scalars = m.scalars();
            if let Some(i) = scalars.iter().position(|x| !x.is_finite()) {
                // The inputs are range-checked so the arithmetic stays finite: a bug.
                return Err(RunError::Internal(format!(
                    "{label}, replication {r}: {} is {}: a bug, please report it",
                    SCALAR_NAMES[i], scalars[i]
                )));
            }
            agg.add_scalars(&scalars);
            agg.add_samples(m.samples());
            all.push(scalars);
        }
    }
    Ok(())
}

/// The point's runs.csv, summary.csv and histogram rows, strategy by strategy (the row order
/// of `run --out`).
fn format_point(
    p32: u32,
    values: &[toml::Value],
    desc: &Description,
    spare: &Spare,
) -> (String, String, String) {
    let (mut runs, mut summary, mut hists) = (String::new(), String::new(), String::new());
    let n = desc.strategies.len();
    for (s, (label, agg)) in desc.strategies.iter().zip(&spare.aggs).enumerate() {
        for (r, scalars) in spare.scalars.iter().skip(s).step_by(n).enumerate() {
            runs.push_str(&results::runs_line(p32, values, r as u32, label, scalars));
            runs.push('\n');
        }
        let row = SummaryRow::from_aggregate(p32, values, label, agg);
        summary.push_str(&results::summary_line(&row));
        summary.push('\n');
        hists.push_str(&results::aggregate_intervals(p32, label, agg));
    }
    (runs, summary, hists)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::config::ExperimentSpec;
    use crate::exec::ResolveError;

    const SIM: ModelRunner = ModelRunner { origin: String::new() };

    /// The model, with every (strategy, replication) it is asked for recorded.
    #[derive(Default)]
    struct Order(Mutex<Vec<(usize, u32)>>);

    impl Runner for Order {
        type Exp = ExperimentSpec;
        fn resolve(&self, t: &toml::Table) -> Result<ExperimentSpec, ResolveError> {
            SIM.resolve(t)
        }
        fn describe(&self, e: &ExperimentSpec) -> Description {
            SIM.describe(e)
        }
        fn render(&self, e: &ExperimentSpec) -> String {
            SIM.render(e)
        }
        fn simulate_into(
            &self,
            e: &ExperimentSpec,
            s: usize,
            r: u32,
            m: &mut RunMetrics,
        ) -> Result<(), RunError> {
            self.0.lock().unwrap().push((s, r));
            SIM.simulate_into(e, s, r, m)
        }
    }

    /// Two agents of one turn, three replications of `strategies`.
    fn tiny(strategies: &str) -> ExperimentSpec {
        let text = format!(
            "seed = 7\nreplications = 3\nstrategies = {strategies}\n\
             [workload]\nagents = 2\nparent_tokens = 5000\nturns = \"const(1)\"\n"
        );
        SIM.resolve(&text.parse().unwrap()).unwrap()
    }

    /// The record as the strategy-major loop made it: a fresh aggregate per strategy, its
    /// replications in order.
    fn strategy_major(e: &ExperimentSpec, point: u32, values: &[toml::Value]) -> PointRecord {
        let desc = SIM.describe(e);
        let (mut runs, mut summary, mut hists) = (String::new(), String::new(), String::new());
        let mut m = RunMetrics::new();
        for (s, label) in desc.strategies.iter().enumerate() {
            let mut agg = Aggregate::new();
            for r in 0..desc.replications {
                SIM.simulate_into(e, s, r, &mut m).unwrap();
                let scalars = m.scalars();
                runs += &(results::runs_line(point, values, r, label, &scalars) + "\n");
                agg.add_scalars(&scalars);
                agg.add_samples(m.samples());
            }
            let row = SummaryRow::from_aggregate(point, values, label, &agg);
            summary += &(results::summary_line(&row) + "\n");
            hists += &results::aggregate_intervals(point, label, &agg);
        }
        PointRecord { point: point.into(), runs, summary, hists, hold: String::new() }
    }

    #[test]
    fn a_point_runs_replication_major_and_writes_as_strategy_major() {
        let three = tiny(r#"["eager", "wait_first(max_wait=1s)", "sequential"]"#);
        let values = [toml::Value::Integer(4)];
        let order = Order::default();
        let record = run_point(&order, &three, 5, &values).unwrap();
        let want: Vec<(usize, u32)> = (0..3).flat_map(|r| (0..3).map(move |s| (s, r))).collect();
        assert_eq!(order.0.into_inner().unwrap(), want);
        assert_eq!(record, strategy_major(&three, 5, &values));
        // This thread's spare aggregates are reset between points, however many are used.
        let two = tiny(r#"["sequential", "eager"]"#);
        assert_eq!(run_point(&SIM, &two, 6, &values).unwrap(), strategy_major(&two, 6, &values));
        assert_eq!(run_point(&SIM, &three, 5, &values).unwrap(), record);
    }
}
