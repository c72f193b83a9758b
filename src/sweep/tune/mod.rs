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

mod candidate;
mod edge;
mod objective;

pub use candidate::{evaluate, saves_nothing, ties, Candidate};
pub use edge::{edge_notes, Edge, FirstTokenSpread};
pub use objective::{parse_values, Kind, Objective, Value};

use super::table;
use crate::exec::{ordered, Runner};
use crate::limits::RunError;

/// `tune` was given an experiment without strategies to optimise.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the experiment lists no strategies")]
pub struct NoStrategies;

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

/// Choose among `cands`; `None` when no candidate is feasible. `hold_cap`: the values are a
/// `wait_first` hold cap (durations), kept off the knife edge.
pub fn choose(cands: &[Candidate], hold_cap: bool) -> Option<Verdict> {
    let feasible: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].feasible).collect();
    let best = *feasible
        .iter()
        .min_by(|&&a, &&b| cands[a].objective.total_cmp(&cands[b].objective).then(a.cmp(&b)))?;
    let tied: Vec<usize> =
        feasible.iter().copied().filter(|&i| i == best || ties(&cands[i], &cands[best])).collect();
    // The least added latency, then the smallest value (values are distinct: no two tie).
    let key = |i: usize| (cands[i].launch_wait_pooled_p99_s, cands[i].value.x);
    let less = |a: (f64, f64), b: (f64, f64)| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)).is_lt();
    let pick = tied.iter().copied().fold(best, |p, i| if less(key(i), key(p)) { i } else { p });
    let flat = feasible.len() > 1 && tied.len() == feasible.len();
    let edge = if hold_cap { edge::off_the_edge(cands, &tied, pick) } else { None };
    let recommended = edge.as_ref().map_or(pick, |(r, _)| *r);
    Some(Verdict { best, recommended, flat, edge: edge.map(|e| e.1) })
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
    if out.len() < values.len() {
        // Only a stopped `exec::Watch` ends `ordered` early here.
        return Err(RunError::Interrupted);
    }
    Ok(out)
}
