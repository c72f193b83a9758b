//! The hold answer: the `wait_first` cap to use for an experiment, with its interval over the
//! calibration's uncertainty. One function, `answer`, computes it; `tune --param max_wait`,
//! `run` (and so `report`, which reads what `run` wrote) and `serve` all print its result, so
//! they give the same cap for the same experiment.
//!
//! The rule is `tune`'s (`sweep::tune`): the grid of caps (`HOLD_RANGE` unless the caller
//! gives one) and its refinements, every candidate on the same replications, the best cost
//! and its ties, kept off the knife edge of the first writer's time to first token. Then the
//! same search runs again at each of the calibration's bootstrap refits (`latency.draw = k`,
//! `config::latency_presets::CALIBRATION_DRAWS` of them): the caps it recommends there give
//! the interval, and the recommended cap's share of replications whose first token came after
//! it, pooled over the refits, is the probability the hold saves nothing there. An experiment
//! whose latency is not the calibrated preset's has no refits: its answer says so.

use serde::Serialize;

use super::tune::{self, Candidate, FirstTokenSpread, Objective, Tuned, Value};
use super::Runner;
use crate::limits::RunError;
use crate::numfmt::pct;

/// The hold cap's key, and the grid `run`, `report` and `serve` search (`tune --param
/// max_wait` without `--range`), with `tune`'s default refinement: whole seconds where caps
/// are usually chosen, then coarser out to a minute, past the first token of the largest cold
/// prefixes the presets allow (a 1M-token prefill at the slowest identified rate).
pub const HOLD_PARAM: &str = "max_wait";
pub const HOLD_RANGE: &str = "0s,1s,2s,3s,4s,5s,6s,8s,10s,15s,20s,30s,60s";
pub const HOLD_REFINE: u32 = 2;

/// A cap is on the knife edge when the first token comes after it in more than this share of
/// replications, at the point fit or pooled over the calibration's refits.
pub const KNIFE_EDGE_SHARE: f64 = 0.05;

/// The cap to use and how sure it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HoldAnswer {
    /// The strategy whose cap it is (the experiment's first `wait_first`).
    pub strategy: String,
    /// The grid searched (`tune --range`).
    pub range: String,
    /// The cap to use, seconds (0: no hold).
    pub cap_s: f64,
    /// The cap as `tune` labels it (`5s`, `2500ms`).
    pub cap_label: String,
    /// Share of replications whose first token came after the cap, at the point fit.
    pub p_after_cap: f64,
    /// The first writer's time to first token from the hold's start, at the point fit.
    pub ttft_p50_s: f64,
    /// Its 95th percentile.
    pub ttft_p95_s: f64,
    /// Its 99th percentile.
    pub ttft_p99_s: f64,
    /// Bootstrap refits of the latency fit the interval comes from (0: none available).
    pub draws: usize,
    /// The smallest and largest cap recommended over the refits (`None` without refits, or
    /// when some refit has no cap meeting the objective).
    pub cap_range_s: Option<[f64; 2]>,
    /// The cap's share of replications whose first token came after it, pooled over the
    /// refits (each with the experiment's replications).
    pub p_after_cap_draws: Option<f64>,
    /// The cap's saving hangs on the draw: see `KNIFE_EDGE_SHARE`.
    pub knife_edge: bool,
    /// Only when the latency searched is a fit made on another model
    /// (`config::latency_origin`): which, e.g. `claude-sonnet-4.5's calibrated fit (no
    /// measurements of gpt-5.4)`. The cap hangs on that fit's first token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_borrowed: Option<String>,
    /// `sentence()`, for readers of hold.json (the report).
    pub sentence: String,
}

impl HoldAnswer {
    /// The sentence when the answer is no hold: no cap cost less than sending every agent at
    /// once.
    fn no_hold_sentence(&self) -> String {
        let refits = match self.cap_range_s {
            Some([_, hi]) if hi > 0.0 => {
                format!("; over {} refits of the latency fit up to {hi:.2} s", self.draws)
            }
            Some(_) => format!(", at each of {} refits of the latency fit too", self.draws),
            None if self.draws > 0 => format!("; some of {} refits find no cap", self.draws),
            None => String::new(),
        };
        format!(
            "the cap to use: {HOLD_PARAM} = 0s, no hold (no cap costs less than sending every \
             agent at once: holding saves nothing here{refits}; first token p50 {:.2} s, p99 \
             {:.2} s)",
            self.ttft_p50_s, self.ttft_p99_s
        )
    }

    /// The answer for `exp` (the experiment searched), saying when its latency is borrowed.
    pub fn of_experiment(self, exp: &crate::config::ExperimentSpec) -> HoldAnswer {
        let answer =
            HoldAnswer { latency_borrowed: crate::config::latency_origin::phrase(exp), ..self };
        HoldAnswer { sentence: answer.sentence(), ..answer }
    }

    /// One sentence, as `run`, `tune`, `report` and `serve` print it.
    pub fn sentence(&self) -> String {
        let mut s = self.cap_sentence();
        if let Some(b) = &self.latency_borrowed {
            s.push_str(&format!(
                "; latency: {b}, so the first token the cap waits for is unmeasured on this model"
            ));
        }
        s
    }

    fn cap_sentence(&self) -> String {
        if self.cap_s == 0.0 {
            return self.no_hold_sentence();
        }
        let mut s = format!(
            "the cap to use: {} = {} (first token p50 {:.2} s, p95 {:.2} s, p99 {:.2} s; it comes \
             after the cap in {} of replications",
            HOLD_PARAM,
            self.cap_label,
            self.ttft_p50_s,
            self.ttft_p95_s,
            self.ttft_p99_s,
            pct(self.p_after_cap)
        );
        match (self.cap_range_s, self.p_after_cap_draws) {
            (Some([lo, hi]), Some(p)) => s.push_str(&format!(
                "); over {} refits of the latency fit the cap would be {:.2}-{:.2} s, and the \
                 first token comes after {} in {} of their replications",
                self.draws,
                lo,
                hi,
                self.cap_label,
                pct(p)
            )),
            (None, Some(p)) => s.push_str(&format!(
                "); over {} refits of the latency fit some find no cap meeting the objective, \
                 and the first token comes after {} in {} of their replications",
                self.draws,
                self.cap_label,
                pct(p)
            )),
            _ => s.push_str("); no calibration refits: the latency is not the calibrated preset's"),
        }
        if self.knife_edge {
            s.push_str(&format!(
                "; on a knife edge: the first token comes after the cap in more than {} of \
                 replications, and the hold then saves nothing",
                pct(KNIFE_EDGE_SHARE)
            ));
        }
        s
    }
}

/// The hold answer of an experiment whose `[report] answer` is `hold_cap` and which runs a
/// `wait_first`: `answer` over `HOLD_RANGE` with `tune`'s default objective (cost) and
/// refinement, for the experiment's first `wait_first`. `None` otherwise. `table` is the
/// experiment's TOML (after `--set`), `exp` its resolution.
pub fn for_experiment<S: Runner>(
    sim: &S,
    table: &toml::Table,
    exp: &crate::config::ExperimentSpec,
    jobs: usize,
) -> Result<Option<HoldAnswer>, RunError> {
    use crate::config::{Answer, Strategy};
    let holds = exp.strategies.iter().any(|s| matches!(s, Strategy::WaitFirst { .. }));
    if exp.report.answer != Some(Answer::HoldCap) || !holds {
        return Ok(None);
    }
    // `[sweep]` stays (`resolve` ignores it; `[report] assumptions` may name its axes).
    let mut base = table.clone();
    let Ok(strategy) = tune::focus_strategy(&mut base, HOLD_PARAM, None) else {
        return Ok(None);
    };
    let values = tune::parse_values(HOLD_RANGE).map_err(|e| RunError::Internal(e.to_string()))?;
    let draws = draw_tables(&base, exp);
    let (r, o) = (HOLD_RANGE, &Objective::Cost);
    let (_, answer) = answer(sim, &base, &draws, &strategy, r, values, o, HOLD_REFINE, jobs)?;
    Ok(answer.map(|a| a.of_experiment(exp)))
}

/// The hold answer for `base` (strategies focused on the `wait_first` to tune, as
/// `tune::focus_strategy` leaves them): `tune`'s search at the point fit, then at each of
/// `draws` (`draw_tables`: `base` at the calibration's refits).
/// Returns the point fit's search too (`tune` prints its candidates); `None` when no cap
/// meets the objective or `base` has no hold.
#[allow(clippy::too_many_arguments)]
pub fn answer<S: Runner>(
    sim: &S,
    base: &toml::Table,
    draws: &[toml::Table],
    strategy: &str,
    range: &str,
    values: Vec<Value>,
    objective: &Objective,
    refine: u32,
    jobs: usize,
) -> Result<(Tuned, Option<HoldAnswer>), RunError> {
    let search = |t: &toml::Table| {
        let v = values.clone();
        tune::run_tune(sim, t, strategy.into(), HOLD_PARAM, v, objective, refine, jobs)
    };
    let point = search(base)?;
    let Some(v) = &point.verdict else { return Ok((point, None)) };
    let rec = &point.candidates[v.recommended];
    let (Some(ttft), Some(p_after)) =
        (FirstTokenSpread::of(&rec.first_token_s), rec.p_cap_before_first_token)
    else {
        return Ok((point, None));
    };
    let mut caps: Vec<Option<f64>> = Vec::with_capacity(draws.len());
    let mut after = Vec::with_capacity(draws.len());
    for t in draws {
        let tuned = search(t)?;
        caps.push(tuned.verdict.as_ref().map(|v| tuned.candidates[v.recommended].value.json()));
        after.push(share_after(sim, t, &tuned, rec.value, objective)?);
    }
    let caps = caps.into_iter().collect::<Option<Vec<f64>>>().filter(|c| !c.is_empty());
    let (lo, hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let cap_range_s = caps.map(|c| c.iter().fold([lo, hi], |[l, h], &x| [l.min(x), h.max(x)]));
    let p_after_cap_draws =
        (!after.is_empty()).then(|| after.iter().sum::<f64>() / after.len() as f64);
    // A cap of 0 is no hold: nothing to fire before the first token, no edge to be on.
    let knife_edge = rec.value.x > 0.0
        && (p_after > KNIFE_EDGE_SHARE || p_after_cap_draws.is_some_and(|p| p > KNIFE_EDGE_SHARE));
    let answer = HoldAnswer {
        strategy: strategy.to_string(),
        range: range.to_string(),
        cap_s: rec.value.json(),
        cap_label: rec.value.label(),
        p_after_cap: p_after,
        ttft_p50_s: ttft.p50_s,
        ttft_p95_s: ttft.p95_s,
        ttft_p99_s: ttft.p99_s,
        draws: draws.len(),
        cap_range_s,
        p_after_cap_draws,
        knife_edge,
        latency_borrowed: None,
        sentence: String::new(),
    };
    let sentence = answer.sentence();
    Ok((point, Some(HoldAnswer { sentence, ..answer })))
}

/// `base` at each of the calibration's refits: its `[latency]` replaced by the calibrated
/// preset at `latency.draw = k`. None when `exp` (`base` resolved) does not run at the
/// calibrated preset's point fit (a file, another preset, or a key that changes a term): its
/// latency then has no calibration to draw from. Terms written out equal to the preset's (an
/// exported experiment) still count as the preset.
pub fn draw_tables(base: &toml::Table, exp: &crate::config::ExperimentSpec) -> Vec<toml::Table> {
    use crate::config::latency_presets::{self, LatencyPreset, CALIBRATION_DRAWS};
    let model = &exp.model.name;
    if latency_presets::params(model, LatencyPreset::Calibrated).as_ref() != Some(&exp.latency) {
        return Vec::new();
    }
    let other = base.get("latency").and_then(|l| l.get("other_model")).cloned();
    (0..CALIBRATION_DRAWS)
        .map(|k| {
            let mut latency = toml::Table::new();
            latency.insert("preset".into(), "calibrated".into());
            latency.insert("draw".into(), toml::Value::Integer(k as i64));
            if let Some(o) = &other {
                latency.insert("other_model".into(), o.clone());
            }
            let mut t = base.clone();
            t.insert("latency".into(), toml::Value::Table(latency));
            t
        })
        .collect()
}

/// The share of replications of `t` whose first token came after `cap`: read off `tuned`'s
/// candidate at that cap, else evaluated.
fn share_after<S: Runner>(
    sim: &S,
    t: &toml::Table,
    tuned: &Tuned,
    cap: Value,
    objective: &Objective,
) -> Result<f64, RunError> {
    let found = tuned.candidates.iter().find(|c| c.value.x == cap.x);
    let evaluated: Candidate;
    let c = match found {
        Some(c) => c,
        None => {
            let ct = tune::candidate_table(t, HOLD_PARAM, cap)
                .map_err(|e| RunError::Input(e.to_string()))?;
            let exp = sim.resolve(&ct).map_err(|e| RunError::Input(e.to_string()))?;
            evaluated = tune::evaluate(sim, &exp, cap, objective)?;
            &evaluated
        }
    };
    Ok(c.p_cap_before_first_token.unwrap_or(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `limits::HOLD_SEARCH_RUNS` (what the estimates and serve's budget count) is the runs
    /// this module's search makes per replication of one strategy: the grid and its
    /// refinements (7 values a round), at the point fit and at each refit.
    #[test]
    fn the_limits_count_the_search_this_module_makes() {
        let grid = tune::parse_values(HOLD_RANGE).map_or(0, |v| v.len()) as f64;
        let refits = crate::config::latency_presets::CALIBRATION_DRAWS as f64;
        let runs = (grid + 7.0 * f64::from(HOLD_REFINE)) * (1.0 + refits);
        assert_eq!(runs, crate::limits::HOLD_SEARCH_RUNS);
    }
}
