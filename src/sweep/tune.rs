//! `tune`: the value of one parameter that minimises an objective, by a coarse grid and then
//! finer grids around the best value. Every candidate runs the same replications with the same
//! seed (common random numbers), so candidates are compared by paired differences: two values
//! tie when the 95% CI of their per-replication objective difference contains zero. Among
//! values that tie with the best, the recommendation is the one with the least added latency
//! (p99 launch wait), then the smallest value.
//!
//! A `wait_first` hold cap is never left on a knife edge. Every replication records when the
//! first writer's response began after the hold's start (`RunMetrics::hold_first_token_us`)
//! and whether the cap fired first (`hold_capped`); a candidate's `p_cap_before_first_token`
//! is the share of its replications where it did (the hold then saved nothing). When the tie
//! rule's pick lies in [p5, p99) of the first writer's time to first token (TTFT, over the
//! pick's replications), its saving hangs on the draw: the recommendation moves to the
//! smallest feasible cap at or above the TTFT's p99 that ties with the best, else at or above
//! its p95; if none ties, the pick stays and is flagged as on the knife edge when below p95.
//! See `Edge`.
//!
//! Knows nothing of the model: candidates are simulated through `crate::exec::Runner`, on
//! the one executor (`crate::exec::ordered`), folded in value order.

use serde::Serialize;

use super::spec::{duration_value, parse_range, RangeError};
use super::{table, Runner};
use crate::exec::ordered;
use crate::limits::RunError;
use crate::metrics::RunMetrics;
use crate::results::{t_975, Aggregate};
use crate::time::{parse_duration_us, DurationError, Human};

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
    pub fn parse(text: &str, lambda: Option<f64>) -> Result<Objective, ObjectiveError> {
        use ObjectiveError as E;
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let text = || text.to_string();
        if t == "cost" {
            return Ok(Objective::Cost);
        }
        if let Some(rest) = t.strip_prefix("cost+") {
            let l = rest
                .strip_suffix("*p95_makespan")
                .ok_or_else(|| E::Expected { text: text(), form: "cost+LAMBDA*p95_makespan" })?;
            let lambda_usd_per_s = match l {
                "lambda" => lambda.ok_or_else(|| E::LambdaMissing(text()))?,
                num => num.parse().map_err(|_| E::NotANumber { text: text(), num: num.into() })?,
            };
            if !(lambda_usd_per_s >= 0.0 && lambda_usd_per_s.is_finite()) {
                return Err(E::NegativeLambda(text()));
            }
            return Ok(Objective::CostPlusMakespan { lambda_usd_per_s });
        }
        if let Some(rest) = t.strip_prefix("cost_subject_to_p") {
            let (lhs, x) = rest
                .split_once("<=")
                .ok_or_else(|| E::Expected { text: text(), form: "...<=DURATION" })?;
            let (q, latency) = lhs
                .split_once('_')
                .ok_or_else(|| E::Expected { text: text(), form: "pQ_LATENCY" })?;
            let q = match q {
                "50" => 0.5,
                "90" => 0.9,
                "95" => 0.95,
                "99" => 0.99,
                "999" => 0.999,
                other => return Err(E::Percentile { text: text(), p: other.into() }),
            };
            if !crate::metrics::LATENCY_NAMES.contains(&latency) {
                return Err(E::Latency { text: text(), latency: latency.into() });
            }
            let max_us = parse_duration_us(x)
                .map_err(|e| E::Duration { text: text(), reason: e.to_string() })?;
            return Ok(Objective::CostSubjectTo {
                q,
                latency: latency.to_string(),
                max_s: crate::time::secs(max_us),
                text: t.clone(),
            });
        }
        Err(E::Unknown(text()))
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

/// Why `--objective` is refused (the text is quoted as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectiveError {
    #[error(
        "unknown objective `{0}` (cost, cost+LAMBDA*p95_makespan, \
         cost_subject_to_p99_launch_wait<=2s)"
    )]
    Unknown(String),
    #[error("objective `{text}`: expected `{form}`")]
    Expected { text: String, form: &'static str },
    #[error("objective `{0}` uses `lambda`: give --lambda (USD per second)")]
    LambdaMissing(String),
    #[error("objective `{text}`: `{num}` is not a number")]
    NotANumber { text: String, num: String },
    #[error("objective `{0}`: lambda must be zero or positive")]
    NegativeLambda(String),
    #[error("objective `{text}`: unknown percentile p{p}")]
    Percentile { text: String, p: String },
    #[error("objective `{text}`: unknown latency `{latency}` (launch_wait, ttft, completion)")]
    Latency { text: String, latency: String },
    #[error("objective `{text}`: {reason}")]
    Duration { text: String, reason: String },
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

/// Why `--range` gives no candidate values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RangeArgError {
    #[error(transparent)]
    Range(#[from] RangeError),
    #[error("--range value `{value}`: {source}")]
    Value { value: String, source: DurationError },
    #[error("--range value `{0}` is not a number or a duration")]
    NotANumber(String),
    #[error("--range `{0}` has no values")]
    Empty(String),
    #[error("--range `{0}` mixes durations and plain numbers")]
    Mixed(String),
}

/// `tune` was given an experiment without strategies to optimise.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the experiment lists no strategies")]
pub struct NoStrategies;

/// Parse `--range`: a range (`0s..10s step 1s`, `1..64 x2`) or a comma list (`0s, 2s, 5s`).
pub fn parse_values(text: &str) -> Result<Vec<Value>, RangeArgError> {
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
                        .map_err(|source| RangeArgError::Value { value: s.clone(), source })
                }
            }
            other => Err(RangeArgError::NotANumber(other.to_string())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if out.is_empty() {
        return Err(RangeArgError::Empty(text.into()));
    }
    if out.iter().any(|v| v.kind != out[0].kind) && out.iter().any(|v| v.kind == Kind::Duration) {
        return Err(RangeArgError::Mixed(text.into()));
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
fn nearest_rank(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let rank = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

/// Simulate every replication of strategy 0 of `exp` at `value` and measure the objective.
pub fn evaluate<S: Runner>(
    sim: &S,
    exp: &S::Exp,
    value: Value,
    objective: &Objective,
) -> Result<Candidate, RunError> {
    let reps = sim.describe(exp).replications;
    let mut agg = Aggregate::new();
    let mut m = RunMetrics::new();
    let (mut costs, mut makespans) = (Vec::new(), Vec::new());
    let (mut first_token_s, mut capped, mut holds) = (Vec::new(), 0u32, false);
    // The bounded latency's every sample: feasibility reads its exact quantile, not a
    // histogram bucket's edge (up to 0.1% above the value, so a cap's own 2 s read 2.0009 s).
    let bounded = match objective {
        Objective::CostSubjectTo { latency, .. } => {
            crate::metrics::LATENCY_NAMES.iter().position(|l| l == latency)
        }
        _ => None,
    };
    let mut bounded_s: Vec<f64> = Vec::new();
    for r in 0..reps {
        sim.simulate_into(exp, 0, r, &mut m)?;
        agg.add(&m);
        if let Some(i) = bounded {
            bounded_s.extend(m.samples()[i].values().iter().map(|&us| crate::time::secs(us)));
        }
        costs.push(m.cost_usd);
        makespans.push(crate::time::secs(m.makespan_us));
        first_token_s.push(m.hold_first_token_us.map(crate::time::secs));
        capped += u32::from(m.hold_capped);
        holds |= m.hold_capped || m.hold_first_token_us.is_some();
    }
    if !holds {
        first_token_s.clear();
    }
    let p_cap_before_first_token = holds.then(|| f64::from(capped) / f64::from(reps.max(1)));
    let cost = agg.stat("cost_usd");
    let lambda = match objective {
        Objective::CostPlusMakespan { lambda_usd_per_s } => *lambda_usd_per_s,
        _ => 0.0,
    };
    let samples: Vec<f64> = costs.iter().zip(&makespans).map(|(c, s)| c + lambda * s).collect();
    let makespan_p95_s = nearest_rank(&mut makespans.clone(), 0.95);
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

/// The verdict over a set of candidates (sorted by value).
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Index of the candidate with the lowest objective.
    pub best: usize,
    /// Index of the recommended candidate (ties broken by added latency, then value; a hold
    /// cap then kept off the knife edge, see `Edge`).
    pub recommended: usize,
    /// Every feasible candidate ties with the best.
    pub flat: bool,
    /// Tuning a `wait_first` hold cap: where the recommendation sits against the first
    /// writer's time to first token.
    pub edge: Option<Edge>,
}

/// The first writer's time to first token from the hold's start, over a candidate's
/// replications, seconds (nearest rank; a first token that never came counts as later than
/// any: infinite).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstTokenSpread {
    pub p05_s: f64,
    pub p50_s: f64,
    pub p95_s: f64,
    pub p99_s: f64,
}

impl FirstTokenSpread {
    /// `None` when there are no samples (not a `wait_first` candidate).
    pub fn of(samples: &[Option<f64>]) -> Option<FirstTokenSpread> {
        if samples.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = samples.iter().map(|s| s.unwrap_or(f64::INFINITY)).collect();
        Some(FirstTokenSpread {
            p05_s: nearest_rank(&mut v, 0.05),
            p50_s: nearest_rank(&mut v, 0.50),
            p95_s: nearest_rank(&mut v, 0.95),
            p99_s: nearest_rank(&mut v, 0.99),
        })
    }
}

/// Where a recommended hold cap sits against the first writer's time to first token (TTFT).
///
/// The rule: a cap in [p5, p99) of the TTFT is near the cliff (the hold saves the writes in
/// some replications and nothing in others). Then the recommendation becomes the smallest
/// feasible cap at or above the TTFT's p99 whose objective ties with the best (the same paired
/// 95% CI rule as every tie), else the smallest at or above its p95; if none ties, the tie
/// rule's pick stays. A final cap in [p5, p95) is on the knife edge, and `tune` warns.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// The TTFT over the tie rule's pick's replications (common random numbers: every
    /// candidate's first writer draws the same TTFT).
    pub ttft: FirstTokenSpread,
    /// The tie rule's pick, when the recommendation moved off the edge.
    pub moved_from: Option<usize>,
    /// The recommendation lies in [p5, p95) of the TTFT.
    pub knife_edge: bool,
}

/// Choose among `cands`; `None` when no candidate is feasible. `hold_cap`: the values are a
/// `wait_first` hold cap (durations), kept off the knife edge.
pub fn choose(cands: &[Candidate], hold_cap: bool) -> Option<Verdict> {
    let feasible: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].feasible).collect();
    let best = *feasible
        .iter()
        .min_by(|&&a, &&b| cands[a].objective.total_cmp(&cands[b].objective).then(a.cmp(&b)))?;
    let tied: Vec<usize> =
        feasible.iter().copied().filter(|&i| i == best || ties(&cands[i], &cands[best])).collect();
    let pick = *tied
        .iter()
        .min_by(|&&a, &&b| {
            let (x, y) = (&cands[a], &cands[b]);
            x.launch_wait_pooled_p99_s
                .total_cmp(&y.launch_wait_pooled_p99_s)
                .then(x.value.x.total_cmp(&y.value.x))
        })
        .expect("the best is in the tie set");
    let flat = feasible.len() > 1 && tied.len() == feasible.len();
    let edge = if hold_cap { off_the_edge(cands, &tied, pick) } else { None };
    let recommended = edge.as_ref().map_or(pick, |(r, _)| *r);
    Some(Verdict { best, recommended, flat, edge: edge.map(|e| e.1) })
}

/// `Edge`'s rule: the recommendation and where it sits.
fn off_the_edge(cands: &[Candidate], tied: &[usize], pick: usize) -> Option<(usize, Edge)> {
    let ttft = FirstTokenSpread::of(&cands[pick].first_token_s)?;
    let cap = |i: usize| cands[i].value.json();
    let mut rec = pick;
    if ttft.p05_s <= cap(pick) && cap(pick) < ttft.p99_s {
        let smallest_at = |bound: f64| {
            tied.iter()
                .copied()
                .filter(|&i| cap(i) >= bound)
                .min_by(|&a, &b| cap(a).total_cmp(&cap(b)))
        };
        rec = smallest_at(ttft.p99_s).or_else(|| smallest_at(ttft.p95_s)).unwrap_or(pick);
    }
    let knife_edge = ttft.p05_s <= cap(rec) && cap(rec) < ttft.p95_s;
    Some((rec, Edge { ttft, moved_from: (rec != pick).then_some(pick), knife_edge }))
}

/// What `tune` says about a hold cap's place against the first writer's TTFT: the move off
/// the knife edge, the warning, or the margin kept.
pub fn edge_notes(param: &str, cands: &[Candidate], v: &Verdict) -> Vec<String> {
    let Some(e) = &v.edge else { return Vec::new() };
    let c = &cands[v.recommended];
    let (cap, t) = (c.value.json(), e.ttft);
    let s = |x: f64| if x.is_finite() { format!("{x:.3} s") } else { "never".to_string() };
    let pct = |c: &Candidate| format!("{:.0}%", c.p_cap_before_first_token.unwrap_or(0.0) * 100.0);
    let spread = format!(
        "the first writer's time to first token from the hold's start: p5 {}, p50 {}, p95 {}, p99 {}",
        s(t.p05_s),
        s(t.p50_s),
        s(t.p95_s),
        s(t.p99_s)
    );
    let side = |d: f64| match d {
        d if !d.is_finite() => "below (it never began in some replications)".to_string(),
        d if d >= 0.0 => format!("{} above", s(d)),
        d => format!("{} below", s(-d)),
    };
    let margin =
        format!("margin kept: {} the p95, {} the p99", side(cap - t.p95_s), side(cap - t.p99_s));
    let mut out = Vec::new();
    if let Some(m) = e.moved_from {
        out.push(format!(
            "{param} = {} (the tie rule's pick) is on a knife edge: the cap fires before the \
             first writer's response begins in {} of replications ({spread}); recommended \
             instead {param} = {}, the smallest cap clear of the edge whose objective ties with \
             the best; {margin}",
            cands[m].value.label(),
            pct(&cands[m]),
            c.value.label()
        ));
    } else if e.knife_edge {
        out.push(format!(
            "warning: {param} = {} is on a knife edge: the cap fires before the first writer's \
             response begins in {} of replications, and then the hold saves nothing ({spread}); \
             no feasible cap at or above the p95 ties with the best ({}); {margin}",
            c.value.label(),
            pct(c),
            if cands.iter().any(|x| x.value.json() >= t.p95_s) {
                "those that reach it cost more or break the objective's bound".to_string()
            } else {
                format!("extend --range above {}", s(t.p99_s))
            }
        ));
    } else if t.p05_s == t.p99_s && cap >= t.p99_s {
        out.push(format!(
            "the first writer's time to first token is {} in every replication (p5 = p99: no \
             spread in this latency model), so {param} = {} is safe by {}; a latency with \
             spread (latency.preset = \"calibrated\" draws measured ones) needs more margin",
            s(t.p99_s),
            c.value.label(),
            s(cap - t.p99_s)
        ));
    } else if cap < t.p05_s {
        out.push(format!(
            "{param} = {} fires before the first writer's response begins in {} of \
             replications: the hold is in effect off ({spread})",
            c.value.label(),
            pct(c)
        ));
    } else {
        out.push(format!(
            "{param} = {}: the cap fires first in {} of replications ({spread}); {margin}",
            c.value.label(),
            pct(c)
        ));
    }
    out
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

/// Is `param` the `wait_first` hold cap (`max_wait`, `strategy.wait_first.max_wait`)?
pub fn is_hold_cap(param: &str) -> bool {
    table::canonical_key(param) == "strategy.wait_first.max_wait"
}

/// Set `param` to `value` in `base` (and keep only the strategy the param belongs to).
pub fn candidate_table(
    base: &toml::Table,
    param: &str,
    value: Value,
) -> Result<toml::Table, table::KeyError> {
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
) -> Result<String, NoStrategies> {
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
        list.first().cloned().ok_or(NoStrategies)?
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
pub fn run_tune<S: Runner>(
    sim: &S,
    base: &toml::Table,
    strategy: String,
    param: &str,
    values: Vec<Value>,
    objective: &Objective,
    rounds: u32,
    jobs: usize,
) -> Result<Tuned, RunError> {
    let hold_cap = is_hold_cap(param) && values.iter().all(|v| v.kind == Kind::Duration);
    let mut cands: Vec<Candidate> = Vec::new();
    let mut todo = values;
    let mut done_rounds = 0;
    loop {
        let new = evaluate_all(sim, base, param, &todo, objective, jobs)?;
        cands.extend(new);
        cands.sort_by(|a, b| a.value.x.total_cmp(&b.value.x));
        let verdict = choose(&cands, hold_cap);
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
    let verdict = choose(&cands, hold_cap);
    Ok(Tuned { strategy, candidates: cands, verdict, rounds: done_rounds })
}

fn evaluate_all<S: Runner>(
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
        let t =
            candidate_table(base, param, v).map_err(|e| RunError::Input(named(e.to_string())))?;
        let exp = sim.resolve(&t).map_err(|e| RunError::Input(named(e.to_string())))?;
        evaluate(sim, &exp, v, objective).map_err(|e| e.map(named))
    };
    let mut out = Vec::with_capacity(values.len());
    let never = std::sync::atomic::AtomicBool::new(false);
    ordered(
        values.len(),
        jobs.max(1),
        &never,
        || (),
        |_, i| one(values[i]),
        |_, c| {
            out.push(c);
            Ok(())
        },
    )
    .map_err(|(_, e)| e)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
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
            launch_wait_pooled_p99_s: lw,
            makespan_p95_s: 0.0,
            bound_latency_s: None,
            first_token_s: Vec::new(),
            p_cap_before_first_token: None,
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
        let v = choose(&c, false).unwrap();
        assert_eq!(v.best, 1);
        assert_eq!(v.recommended, 2, "least latency, then the smallest value");
        assert!(!v.flat);
        // Noisy but equal on average: the paired CI contains zero, so the objective is flat.
        let c = vec![cand(1.0, vec![1.0, 2.0, 3.0], 0.0), cand(2.0, vec![1.1, 1.9, 3.1], 1.0)];
        let v = choose(&c, false).unwrap();
        assert!(v.flat);
        assert_eq!(v.recommended, 0);
    }

    /// A hold-cap candidate over 100 replications whose first writer's TTFT is 2.00, 2.01,
    /// ..., 2.99 s (nearest rank: p5 2.04, p50 2.49, p95 2.94, p99 2.98): a replication costs
    /// 1 when its TTFT is at most the cap, else 2 (every held agent writes again); the p99
    /// launch wait is the cap or the TTFT's p99, the smaller.
    fn hold(cap_s: f64) -> Candidate {
        let ttft: Vec<f64> = (0..100).map(|i| 2.0 + i as f64 / 100.0).collect();
        let costs: Vec<f64> =
            ttft.iter().map(|&t| if t <= cap_s + 1e-12 { 1.0 } else { 2.0 }).collect();
        let capped = costs.iter().filter(|&&c| c == 2.0).count() as f64 / 100.0;
        let mut c = cand(cap_s * 1e6, costs, cap_s.min(2.98));
        c.value.kind = Kind::Duration;
        c.first_token_s = ttft.into_iter().map(Some).collect();
        c.p_cap_before_first_token = Some(capped);
        c
    }

    #[test]
    fn a_hold_cap_on_the_knife_edge_moves_to_the_smallest_safe_tie() {
        // 2.97 s: 2 of 100 replications (2.98, 2.99) cost 1 more: paired differences of mean
        // 0.02, sd 0.141, 95% CI 1.98 * 0.141 / 10 = 0.028 > 0.02: it ties with the best
        // (3 s, 4 s: cost 1), and has the least launch wait. It lies in [p5, p99) = [2.04,
        // 2.98): the recommendation moves to the smallest tie at or above 2.98 s: 3 s.
        let c = vec![hold(1.0), hold(2.5), hold(2.97), hold(3.0), hold(4.0)];
        let pick = choose(&c, false).unwrap();
        assert_eq!(pick.recommended, 2, "the tie rule alone picks the knife edge");
        assert!(pick.edge.is_none());
        let v = choose(&c, true).unwrap();
        assert_eq!(v.recommended, 3);
        let e = v.edge.clone().unwrap();
        assert_eq!(e.moved_from, Some(2));
        assert!(!e.knife_edge);
        let t = e.ttft;
        assert_eq!((t.p05_s, t.p50_s, t.p95_s, t.p99_s), (2.04, 2.49, 2.94, 2.98));
        let notes = edge_notes("max_wait", &c, &v).join(" ");
        assert!(
            notes.contains("max_wait = 2970ms (the tie rule's pick) is on a knife edge"),
            "{notes}"
        );
        assert!(notes.contains("in 2% of replications"), "{notes}");
        assert!(notes.contains("0.060 s above the p95, 0.020 s above the p99"), "{notes}");
    }

    #[test]
    fn a_knife_edge_with_no_safe_tie_stays_and_warns() {
        // Without 3 s and 4 s, 2.97 s is the best; no candidate reaches 2.98 s (p99), and
        // 2.97 >= 2.94 (p95): it stays, not on the knife edge. With only 1 s and 2.5 s, 2.5 s
        // is the best and lies in [p5, p95): a warning.
        let c = vec![hold(1.0), hold(2.5), hold(2.97)];
        let v = choose(&c, true).unwrap();
        assert_eq!((v.recommended, v.edge.as_ref().unwrap().knife_edge), (2, false));
        let c = vec![hold(1.0), hold(2.5)];
        let v = choose(&c, true).unwrap();
        assert_eq!(v.recommended, 1);
        assert!(v.edge.as_ref().unwrap().knife_edge);
        let notes = edge_notes("max_wait", &c, &v).join(" ");
        assert!(notes.starts_with("warning: max_wait = 2500ms is on a knife edge"), "{notes}");
        assert!(notes.contains("in 49% of replications"), "{notes}");
    }

    #[test]
    fn objectives_parse() {
        assert_eq!(Objective::parse("cost", None), Ok(Objective::Cost));
        assert_eq!(
            Objective::parse("cost+0.01*p95_makespan", None),
            Ok(Objective::CostPlusMakespan { lambda_usd_per_s: 0.01 })
        );
        assert_eq!(
            Objective::parse("cost+lambda*p95_makespan", None),
            Err(ObjectiveError::LambdaMissing("cost+lambda*p95_makespan".into()))
        );
        let o = Objective::parse("cost_subject_to_p99_launch_wait<=2s", None).unwrap();
        assert!(
            matches!(o, Objective::CostSubjectTo { q, max_s, .. } if q == 0.99 && max_s == 2.0)
        );
        assert_eq!(Objective::parse("speed", None), Err(ObjectiveError::Unknown("speed".into())));
        let e = Objective::parse("cost_subject_to_p42_ttft<=1s", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "objective `cost_subject_to_p42_ttft<=1s`: unknown percentile p42"
        );
    }

    #[test]
    fn refine_between_neighbours() {
        let c: Vec<Candidate> = [0.0, 4.0, 8.0].iter().map(|&x| cand(x, vec![1.0], 0.0)).collect();
        let xs: Vec<f64> = refine(&c, 1, 8).iter().map(|v| v.x).collect();
        assert_eq!(xs, vec![1.0, 2.0, 3.0, 5.0, 6.0, 7.0]);
    }
}
