//! One candidate value of `tune`: every replication of the focused strategy at that value,
//! measured against the objective (`evaluate`), and the paired comparisons between candidates
//! (common random numbers: every candidate runs the same replications).

use super::objective::{Objective, Value};
use crate::exec::Runner;
use crate::limits::RunError;
use crate::metrics::RunMetrics;
use crate::results::{t_975, Aggregate};

/// The measurements of one candidate.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub value: Value,
    /// Per replication: the objective's replication-level term (cost, or cost + lambda * makespan).
    pub samples: Vec<f64>,
    /// Per replication: cost in USD.
    pub costs: Vec<f64>,
    pub cost_usd: f64,
    pub cost_ci95: f64,
    pub objective: f64,
    pub feasible: bool,
    pub launch_wait_pooled_p99_s: f64,
    pub makespan_p95_s: f64,
    /// The constrained latency quantile (for `CostSubjectTo`), seconds.
    pub bound_latency_s: Option<f64>,
    /// `wait_first`, per replication: the first writer's first token after the hold's start,
    /// seconds (`None`: it never began). Empty for other strategies.
    pub first_token_s: Vec<Option<f64>>,
    /// `wait_first`: the share of replications whose cap fired before the first writer's
    /// response began (measured, `RunMetrics::hold_capped`); `None` for other strategies.
    pub p_cap_before_first_token: Option<f64>,
}

/// The p-th quantile (nearest rank) of `xs`.
pub(super) fn nearest_rank(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let rank = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

/// What the replications of one candidate measured, in replication order.
#[derive(Default)]
struct Measured {
    agg: Aggregate,
    costs: Vec<f64>,
    makespans: Vec<f64>,
    /// The bounded latency's every sample, seconds (`CostSubjectTo`).
    bounded_s: Vec<f64>,
    first_token_s: Vec<Option<f64>>,
    capped: u32,
    /// Some replication held (a `wait_first`).
    holds: bool,
}

/// Every replication of strategy 0 of `exp`. The bounded latency (`bounded`, an index of
/// `LATENCY_NAMES`) keeps every sample: feasibility reads its exact quantile, not a
/// histogram bucket's edge (up to 0.1% above the value, so a cap's own 2 s read 2.0009 s).
fn measure<S: Runner>(sim: &S, exp: &S::Exp, bounded: Option<usize>) -> Result<Measured, RunError> {
    let mut m = RunMetrics::new();
    let mut out = Measured { agg: Aggregate::new(), ..Measured::default() };
    for r in 0..sim.describe(exp).replications {
        sim.simulate_into(exp, 0, r, &mut m)?;
        out.agg.add(&m);
        if let Some(i) = bounded {
            out.bounded_s.extend(m.samples()[i].values().iter().map(|&us| crate::time::secs(us)));
        }
        out.costs.push(m.cost_usd);
        out.makespans.push(crate::time::secs(m.makespan_us));
        out.first_token_s.push(m.hold_first_token_us.map(crate::time::secs));
        out.capped += u32::from(m.hold_capped);
        out.holds |= m.hold_capped || m.hold_first_token_us.is_some();
    }
    Ok(out)
}

/// Simulate every replication of strategy 0 of `exp` at `value` and measure the objective.
pub fn evaluate<S: Runner>(
    sim: &S,
    exp: &S::Exp,
    value: Value,
    objective: &Objective,
) -> Result<Candidate, RunError> {
    let bounded = match objective {
        Objective::CostSubjectTo { latency, .. } => {
            crate::metrics::LATENCY_NAMES.iter().position(|l| l == latency)
        }
        _ => None,
    };
    let Measured { agg, costs, mut makespans, mut bounded_s, mut first_token_s, capped, holds } =
        measure(sim, exp, bounded)?;
    if !holds {
        first_token_s.clear();
    }
    let reps = costs.len() as f64;
    let p_cap_before_first_token = holds.then(|| f64::from(capped) / reps.max(1.0));
    let cost = agg.stat("cost_usd");
    let lambda = match objective {
        Objective::CostPlusMakespan { lambda_usd_per_s } => *lambda_usd_per_s,
        _ => 0.0,
    };
    let samples: Vec<f64> = costs.iter().zip(&makespans).map(|(c, s)| c + lambda * s).collect();
    let makespan_p95_s = nearest_rank(&mut makespans, 0.95);
    let (feasible, bound_latency_s) = match objective {
        Objective::CostSubjectTo { q, max_s, .. } => {
            let v = nearest_rank(&mut bounded_s, *q);
            (v <= *max_s, Some(v))
        }
        _ => (true, None),
    };
    let c = Candidate {
        value,
        samples,
        costs,
        cost_usd: cost.mean,
        cost_ci95: cost.ci95,
        objective: cost.mean + lambda * makespan_p95_s,
        feasible,
        launch_wait_pooled_p99_s: agg.ladder_of("launch_wait")[2],
        makespan_p95_s,
        bound_latency_s,
        first_token_s,
        p_cap_before_first_token,
    };
    let numbers =
        [c.cost_usd, c.cost_ci95, c.objective, c.launch_wait_pooled_p99_s, c.makespan_p95_s];
    if numbers.iter().chain(&c.samples).any(|x| !x.is_finite()) {
        // The inputs are range-checked so that the arithmetic stays finite: a bug.
        return Err(RunError::Internal("a result is not finite: a bug, please report it".into()));
    }
    Ok(c)
}

/// Mean and 95% CI half-width of the paired difference `a - b` over replications.
pub fn paired_diff(a: &[f64], b: &[f64]) -> (f64, f64) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = d.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let sd = (d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
    (mean, t_975(n as u64 - 1) * sd / (n as f64).sqrt())
}

/// Whether two candidates tie on the objective: equal within rounding, or a paired 95% CI of
/// the difference that contains zero.
pub fn ties(a: &Candidate, b: &Candidate) -> bool {
    let scale = a.objective.abs().max(b.objective.abs()).max(1e-12);
    if (a.objective - b.objective).abs() <= 1e-9 * scale {
        return true;
    }
    let (mean, ci) = paired_diff(&a.samples, &b.samples);
    // The p95-makespan term is not per replication; compare it exactly on top of the samples.
    let extra = (a.objective - a.samples.iter().sum::<f64>() / a.samples.len().max(1) as f64)
        - (b.objective - b.samples.iter().sum::<f64>() / b.samples.len().max(1) as f64);
    ci > 0.0 && (mean + extra).abs() <= ci
}

/// Candidates above the smallest value that cost the same as it (paired 95% CI of the cost
/// difference contains zero, or equal) but wait longer at launch: they save nothing.
pub fn saves_nothing(cands: &[Candidate]) -> Vec<usize> {
    let Some(c0) = cands.first() else { return Vec::new() };
    (1..cands.len())
        .filter(|&i| {
            let c = &cands[i];
            let (mean, ci) = paired_diff(&c.costs, &c0.costs);
            let same = mean.abs() <= ci || mean.abs() <= 1e-9 * c0.cost_usd.abs().max(1e-12);
            same && c.launch_wait_pooled_p99_s > c0.launch_wait_pooled_p99_s + 1e-9
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::objective::Kind;
    use super::*;

    /// Every agent but one waits exactly the 2 s cap, in every replication.
    struct AtTheCap;

    impl Runner for AtTheCap {
        type Exp = ();
        fn resolve(&self, _: &toml::Table) -> Result<(), crate::exec::ResolveError> {
            Ok(())
        }
        fn describe(&self, _: &()) -> crate::exec::Description {
            crate::exec::Description {
                name: "at the cap".into(),
                question: String::new(),
                seed: 1,
                replications: 4,
                strategies: vec!["wait_first(max_wait=2s)".into()],
            }
        }
        fn render(&self, _: &()) -> String {
            String::new()
        }
        fn simulate_into(
            &self,
            _: &(),
            _: usize,
            _: u32,
            m: &mut RunMetrics,
        ) -> Result<(), RunError> {
            *m = RunMetrics::new();
            m.cost_usd = 1.0;
            m.launch_wait_us.record(0);
            for _ in 0..9 {
                m.launch_wait_us.record(2_000_000);
            }
            Ok(())
        }
    }

    #[test]
    fn a_latency_bound_reads_exact_values_not_histogram_buckets() {
        let at = |bound: &str| {
            let o = Objective::parse(&format!("cost_subject_to_p99_launch_wait<={bound}"), None);
            let v = Value { x: 2.0, kind: Kind::Duration };
            evaluate(&AtTheCap, &(), v, &o.unwrap()).unwrap()
        };
        // The histogram's bucket holding 2 s reads 2.000895 s: above the cap it never passes.
        let c = at("2s");
        assert!(c.feasible, "{:?}", c.bound_latency_s);
        assert_eq!(c.bound_latency_s, Some(2.0));
        assert!(!at("1999ms").feasible);
    }
}
