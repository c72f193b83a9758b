//! `tune`: the value of one parameter that minimises an objective, by a coarse grid and then
//! finer grids around the best value. Every candidate runs the same replications with the same
//! seed (common random numbers), so candidates are compared by paired differences: two values
//! tie when the 95% CI of their per-replication objective difference contains zero. Among
//! values that tie with the best, the recommendation is the one with the least added latency
//! (p99 launch wait), then the smallest value.
//!
//! Knows nothing of the model: candidates are simulated through `super::Simulator`.

use serde::Serialize;

use super::spec::{duration_value, parse_range};
use super::{table, Simulator};
use crate::limits::RunError;
use crate::metrics::RunMetrics;
use crate::results::{t_975, Aggregate};
use crate::time::{parse_duration_us, Human};

/// What `tune` minimises.
#[derive(Debug, Clone, PartialEq)]
pub enum Objective {
    /// Mean cost in USD.
    Cost,
    /// Mean cost + lambda (USD per second) * the 95th percentile of makespan over replications.
    CostPlusMakespan { lambda_usd_per_s: f64 },
    /// Mean cost, among values whose quantile `q` of latency `latency` is at most `max_s`.
    CostSubjectTo { q: f64, latency: String, max_s: f64, text: String },
}

impl Objective {
    /// Parse `cost`, `cost+L*p95_makespan` (L in USD per second, or the word `lambda` with
    /// `lambda` given) or `cost_subject_to_pQ_LATENCY<=X` (X a duration; LATENCY one of
    /// launch_wait, ttft, completion).
    pub fn parse(text: &str, lambda: Option<f64>) -> Result<Objective, String> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if t == "cost" {
            return Ok(Objective::Cost);
        }
        if let Some(rest) = t.strip_prefix("cost+") {
            let l = rest.strip_suffix("*p95_makespan").ok_or_else(|| {
                format!("objective `{text}`: expected `cost+LAMBDA*p95_makespan`")
            })?;
            let lambda_usd_per_s = match l {
                "lambda" => lambda.ok_or_else(|| {
                    format!("objective `{text}` uses `lambda`: give --lambda (USD per second)")
                })?,
                num => num
                    .parse()
                    .map_err(|_| format!("objective `{text}`: `{num}` is not a number"))?,
            };
            if !(lambda_usd_per_s >= 0.0 && lambda_usd_per_s.is_finite()) {
                return Err(format!("objective `{text}`: lambda must be zero or positive"));
            }
            return Ok(Objective::CostPlusMakespan { lambda_usd_per_s });
        }
        if let Some(rest) = t.strip_prefix("cost_subject_to_p") {
            let (lhs, x) = rest
                .split_once("<=")
                .ok_or_else(|| format!("objective `{text}`: expected `...<=DURATION`"))?;
            let (q, latency) = lhs
                .split_once('_')
                .ok_or_else(|| format!("objective `{text}`: expected `pQ_LATENCY`"))?;
            let q = match q {
                "50" => 0.5,
                "90" => 0.9,
                "95" => 0.95,
                "99" => 0.99,
                "999" => 0.999,
                other => return Err(format!("objective `{text}`: unknown percentile p{other}")),
            };
            if !crate::metrics::LATENCY_NAMES.contains(&latency) {
                return Err(format!(
                    "objective `{text}`: unknown latency `{latency}` (launch_wait, ttft, completion)"
                ));
            }
            let max_us = parse_duration_us(x).map_err(|e| format!("objective `{text}`: {e}"))?;
            return Ok(Objective::CostSubjectTo {
                q,
                latency: latency.to_string(),
                max_s: crate::time::secs(max_us),
                text: t.clone(),
            });
        }
        Err(format!(
            "unknown objective `{text}` (cost, cost+LAMBDA*p95_makespan, \
             cost_subject_to_p99_launch_wait<=2s)"
        ))
    }

    pub fn name(&self) -> String {
        match self {
            Objective::Cost => "cost".into(),
            Objective::CostPlusMakespan { lambda_usd_per_s } => {
                format!("cost+{lambda_usd_per_s}*p95_makespan")
            }
            Objective::CostSubjectTo { text, .. } => text.clone(),
        }
    }
}

/// How a candidate value is written back into the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    Int,
    Float,
    /// Microseconds, written as a duration.
    Duration,
}

/// A candidate value: `x` in base units (microseconds for durations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    pub x: f64,
    pub kind: Kind,
}

impl Value {
    pub fn toml(&self) -> toml::Value {
        match self.kind {
            Kind::Int => toml::Value::Integer(self.x.round() as i64),
            Kind::Float => toml::Value::Float(self.x),
            Kind::Duration => duration_value(self.x.round() as u64),
        }
    }
    /// The value for JSON: seconds for durations.
    pub fn json(&self) -> f64 {
        match self.kind {
            Kind::Duration => self.x / 1e6,
            _ => self.x,
        }
    }
    pub fn label(&self) -> String {
        match self.kind {
            Kind::Int => format!("{}", self.x.round() as i64),
            Kind::Float => format!("{}", self.x),
            Kind::Duration => Human(self.x.round() as u64).to_string(),
        }
        .replace(".000s", "s")
    }
}

/// Parse `--range`: a range (`0s..10s step 1s`, `1..64 x2`) or a comma list (`0s, 2s, 5s`).
pub fn parse_values(text: &str) -> Result<Vec<Value>, String> {
    let items: Vec<toml::Value> = if text.contains("..") {
        parse_range(text)?
    } else {
        text.split(',').map(|s| toml::Value::String(s.trim().to_string())).collect()
    };
    let mut out = items
        .iter()
        .map(|v| match v {
            toml::Value::Integer(i) => Ok(Value { x: *i as f64, kind: Kind::Int }),
            toml::Value::Float(f) => Ok(Value { x: *f, kind: Kind::Float }),
            toml::Value::String(s) => {
                if let Ok(i) = s.parse::<i64>() {
                    Ok(Value { x: i as f64, kind: Kind::Int })
                } else if let Ok(f) = s.parse::<f64>() {
                    Ok(Value { x: f, kind: Kind::Float })
                } else {
                    parse_duration_us(s)
                        .map(|us| Value { x: us as f64, kind: Kind::Duration })
                        .map_err(|e| format!("--range value `{s}`: {e}"))
                }
            }
            other => Err(format!("--range value `{other}` is not a number or a duration")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if out.is_empty() {
        return Err(format!("--range `{text}` has no values"));
    }
    if out.iter().any(|v| v.kind != out[0].kind) && out.iter().any(|v| v.kind == Kind::Duration) {
        return Err(format!("--range `{text}` mixes durations and plain numbers"));
    }
    out.sort_by(|a, b| a.x.total_cmp(&b.x));
    out.dedup_by(|a, b| a.x == b.x);
    Ok(out)
}

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
    pub launch_wait_p99_s: f64,
    pub makespan_p95_s: f64,
    /// The constrained latency quantile (for `CostSubjectTo`), seconds.
    pub bound_latency_s: Option<f64>,
}

/// The p-th quantile (nearest rank) of `xs`.
fn nearest_rank(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let rank = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

/// Simulate every replication of strategy 0 of `exp` at `value` and measure the objective.
pub fn evaluate<S: Simulator>(
    sim: &S,
    exp: &S::Exp,
    value: Value,
    objective: &Objective,
) -> Result<Candidate, RunError> {
    let reps = sim.describe(exp).replications;
    let mut agg = Aggregate::new();
    let mut m = RunMetrics::new();
    let (mut costs, mut makespans) = (Vec::new(), Vec::new());
    for r in 0..reps {
        sim.simulate_into(exp, 0, r, &mut m)?;
        agg.add(&m);
        costs.push(m.cost_usd);
        makespans.push(crate::time::secs(m.makespan_us));
    }
    let cost = agg.stat("cost_usd");
    let lambda = match objective {
        Objective::CostPlusMakespan { lambda_usd_per_s } => *lambda_usd_per_s,
        _ => 0.0,
    };
    let samples: Vec<f64> = costs.iter().zip(&makespans).map(|(c, s)| c + lambda * s).collect();
    let makespan_p95_s = nearest_rank(&mut makespans.clone(), 0.95);
    let (feasible, bound_latency_s) = match objective {
        Objective::CostSubjectTo { q, latency, max_s, .. } => {
            let i = crate::metrics::LATENCY_NAMES.iter().position(|l| l == latency).unwrap_or(0);
            let h = &agg.histograms[i];
            let v = if h.is_empty() { 0.0 } else { crate::time::secs(h.value_at_quantile(*q)) };
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
        launch_wait_p99_s: agg.ladder_of("launch_wait")[2],
        makespan_p95_s,
        bound_latency_s,
    };
    let numbers = [c.cost_usd, c.cost_ci95, c.objective, c.launch_wait_p99_s, c.makespan_p95_s];
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
            same && c.launch_wait_p99_s > c0.launch_wait_p99_s + 1e-9
        })
        .collect()
}

/// The verdict over a set of candidates (sorted by value).
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Index of the candidate with the lowest objective.
    pub best: usize,
    /// Index of the recommended candidate (ties broken by added latency, then value).
    pub recommended: usize,
    /// Every feasible candidate ties with the best.
    pub flat: bool,
}

/// Choose among `cands`; `None` when no candidate is feasible.
pub fn choose(cands: &[Candidate]) -> Option<Verdict> {
    let feasible: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].feasible).collect();
    let best = *feasible
        .iter()
        .min_by(|&&a, &&b| cands[a].objective.total_cmp(&cands[b].objective).then(a.cmp(&b)))?;
    let tied: Vec<usize> =
        feasible.iter().copied().filter(|&i| i == best || ties(&cands[i], &cands[best])).collect();
    let recommended = *tied
        .iter()
        .min_by(|&&a, &&b| {
            let (x, y) = (&cands[a], &cands[b]);
            x.launch_wait_p99_s
                .total_cmp(&y.launch_wait_p99_s)
                .then(x.value.x.total_cmp(&y.value.x))
        })
        .expect("the best is in the tie set");
    Some(Verdict { best, recommended, flat: feasible.len() > 1 && tied.len() == feasible.len() })
}

/// New values between the recommended value's neighbours (`parts` equal steps), skipping
/// values already evaluated. Empty when the grid cannot be refined.
pub fn refine(cands: &[Candidate], rec: usize, parts: u32) -> Vec<Value> {
    let v = cands[rec].value;
    let lo = if rec > 0 { cands[rec - 1].value.x } else { v.x };
    let hi = if rec + 1 < cands.len() { cands[rec + 1].value.x } else { v.x };
    let mut out: Vec<Value> = Vec::new();
    for i in 1..parts {
        let mut x = lo + (hi - lo) * i as f64 / parts as f64;
        match v.kind {
            Kind::Float => {}
            Kind::Int => x = x.round(),
            // Durations refine to whole milliseconds (finer than any hold cap matters).
            Kind::Duration => x = (x / 1000.0).round() * 1000.0,
        }
        let new = Value { x, kind: v.kind };
        let seen = cands.iter().any(|c| c.value.x == x) || out.iter().any(|o| o.x == x);
        if !seen {
            out.push(new);
        }
    }
    out
}

/// Set `param` to `value` in `base` (and keep only the strategy the param belongs to).
pub fn candidate_table(
    base: &toml::Table,
    param: &str,
    value: Value,
) -> Result<toml::Table, String> {
    let mut t = base.clone();
    table::set_value(&mut t, param, value.toml())?;
    Ok(t)
}

/// Keep only the strategy `tune` optimises: the first strategy named like the parameter's
/// strategy (`strategy.wait_first.max_wait` -> the first `wait_first`), else `label`, else the
/// first strategy of the file.
pub fn focus_strategy(
    base: &mut toml::Table,
    param: &str,
    label: Option<&str>,
) -> Result<String, String> {
    let key = table::canonical_key(param);
    let list: Vec<String> = base
        .get("strategies")
        .and_then(|s| s.as_array())
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let chosen = if let Some(l) = label {
        l.to_string()
    } else if let Some(name) = key.strip_prefix("strategy.").and_then(|r| r.split('.').next()) {
        list.iter()
            .find(|s| s.trim().split('(').next() == Some(name))
            .cloned()
            .unwrap_or_else(|| name.to_string())
    } else {
        list.first().cloned().ok_or("the experiment lists no strategies")?
    };
    base.insert("strategies".into(), toml::Value::Array(vec![chosen.clone().into()]));
    Ok(chosen)
}

/// The outcome of a tuning run: every candidate evaluated (sorted by value) and the verdict.
#[derive(Debug, Clone)]
pub struct Tuned {
    pub strategy: String,
    pub candidates: Vec<Candidate>,
    pub verdict: Option<Verdict>,
    pub rounds: u32,
}

/// Grid search with refinement: evaluate `values`, then `rounds` times a finer grid (`parts`
/// steps) between the neighbours of the recommended value. `base` is the experiment table
/// (strategies already focused); candidates run on `jobs` threads, results in value order.
#[allow(clippy::too_many_arguments)]
pub fn run_tune<S: Simulator>(
    sim: &S,
    base: &toml::Table,
    strategy: String,
    param: &str,
    values: Vec<Value>,
    objective: &Objective,
    rounds: u32,
    jobs: usize,
) -> Result<Tuned, RunError> {
    let mut cands: Vec<Candidate> = Vec::new();
    let mut todo = values;
    let mut done_rounds = 0;
    loop {
        let new = evaluate_all(sim, base, param, &todo, objective, jobs)?;
        cands.extend(new);
        cands.sort_by(|a, b| a.value.x.total_cmp(&b.value.x));
        let verdict = choose(&cands);
        let Some(v) = &verdict else { break };
        if done_rounds >= rounds || todo.is_empty() {
            break;
        }
        todo = refine(&cands, v.recommended, 8);
        if todo.is_empty() {
            break;
        }
        done_rounds += 1;
    }
    let verdict = choose(&cands);
    Ok(Tuned { strategy, candidates: cands, verdict, rounds: done_rounds })
}

fn evaluate_all<S: Simulator>(
    sim: &S,
    base: &toml::Table,
    param: &str,
    values: &[Value],
    objective: &Objective,
    jobs: usize,
) -> Result<Vec<Candidate>, RunError> {
    // A value the experiment refuses is the user's input, like a run that stops at its limits.
    let one = |v: Value| -> Result<Candidate, RunError> {
        let named = |e: String| format!("--param {param} = {}: {e}", v.label());
        let t = candidate_table(base, param, v).map_err(|e| RunError::Input(named(e)))?;
        let exp = sim.resolve(&t).map_err(|e| RunError::Input(named(e)))?;
        evaluate(sim, &exp, v, objective).map_err(|e| e.map(named))
    };
    let jobs = jobs.max(1).min(values.len().max(1));
    let mut slots: Vec<Option<Result<Candidate, RunError>>> = vec![None; values.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|j| {
                let one = &one;
                s.spawn(move || {
                    (j..values.len()).step_by(jobs).map(|i| (i, one(values[i]))).collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (i, r) in h.join().unwrap_or_default() {
                slots[i] = Some(r);
            }
        }
    });
    let panicked = || Err(RunError::Internal("a tuning worker panicked".into()));
    slots.into_iter().map(|s| s.unwrap_or_else(panicked)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(x: f64, samples: Vec<f64>, lw: f64) -> Candidate {
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        Candidate {
            value: Value { x, kind: Kind::Int },
            costs: samples.clone(),
            samples,
            cost_usd: mean,
            cost_ci95: 0.0,
            objective: mean,
            feasible: true,
            launch_wait_p99_s: lw,
            makespan_p95_s: 0.0,
            bound_latency_s: None,
        }
    }

    #[test]
    fn ties_prefer_less_latency_then_smaller_values() {
        let c = vec![
            cand(1.0, vec![2.0, 2.0, 2.0], 0.0),
            cand(2.0, vec![1.0, 1.0, 1.0], 3.0),
            cand(3.0, vec![1.0, 1.0, 1.0], 2.0),
            cand(4.0, vec![1.0, 1.0, 1.0], 2.0),
        ];
        let v = choose(&c).unwrap();
        assert_eq!(v.best, 1);
        assert_eq!(v.recommended, 2, "least latency, then the smallest value");
        assert!(!v.flat);
        // Noisy but equal on average: the paired CI contains zero, so the objective is flat.
        let c = vec![cand(1.0, vec![1.0, 2.0, 3.0], 0.0), cand(2.0, vec![1.1, 1.9, 3.1], 1.0)];
        let v = choose(&c).unwrap();
        assert!(v.flat);
        assert_eq!(v.recommended, 0);
    }

    #[test]
    fn objectives_parse() {
        assert_eq!(Objective::parse("cost", None), Ok(Objective::Cost));
        assert_eq!(
            Objective::parse("cost+0.01*p95_makespan", None),
            Ok(Objective::CostPlusMakespan { lambda_usd_per_s: 0.01 })
        );
        assert!(Objective::parse("cost+lambda*p95_makespan", None).is_err());
        let o = Objective::parse("cost_subject_to_p99_launch_wait<=2s", None).unwrap();
        assert!(
            matches!(o, Objective::CostSubjectTo { q, max_s, .. } if q == 0.99 && max_s == 2.0)
        );
        assert!(Objective::parse("speed", None).is_err());
    }

    #[test]
    fn refine_between_neighbours() {
        let c: Vec<Candidate> = [0.0, 4.0, 8.0].iter().map(|&x| cand(x, vec![1.0], 0.0)).collect();
        let xs: Vec<f64> = refine(&c, 1, 8).iter().map(|v| v.x).collect();
        assert_eq!(xs, vec![1.0, 2.0, 3.0, 5.0, 6.0, 7.0]);
    }
}
