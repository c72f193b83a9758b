//! `TuneReport`: what `tune` found, as tune.json holds it (the field names are its schema) and
//! as the table `prefixsim tune` prints: every candidate, the recommendation and the notes
//! (the objective's flatness, values that save nothing, the hold cap's knife edge).

use serde::Serialize;

use crate::exec::Description;
use crate::sweep::hold;
use crate::sweep::tune::{self, Candidate, Objective, Tuned};

#[derive(Debug, Clone, Serialize)]
struct CandJson {
    value: f64,
    label: String,
    /// `null` when the candidate breaks the objective's bound.
    objective: Option<f64>,
    objective_ci95: f64,
    cost_usd: f64,
    cost_ci95: f64,
    launch_wait_pooled_p99_s: f64,
    makespan_p95_s: f64,
    feasible: bool,
    /// `wait_first`: share of replications whose cap fired before the first token.
    p_cap_before_first_token: Option<f64>,
}

/// What `tune` found: tune.json's schema.
#[derive(Debug, Clone, Serialize)]
pub struct TuneReport {
    /// The experiment's name and question (as in a run's manifest.json).
    name: String,
    question: String,
    param: String,
    strategy: String,
    objective: String,
    replications: u32,
    recommended: Option<f64>,
    recommended_label: Option<String>,
    recommended_objective: Option<f64>,
    recommended_ci95: Option<f64>,
    flat: bool,
    /// Tuning a wait_first hold cap: where the recommended cap sits against the first
    /// writer's time to first token (`sweep::tune::Edge`).
    hold_edge: Option<serde_json::Value>,
    refine_rounds: u32,
    notes: Vec<String>,
    /// Tuning the hold cap: the answer with its interval over the calibration's refits
    /// (`sweep::hold`), what `run`, `report` and `serve` print for the same experiment.
    hold: Option<hold::HoldAnswer>,
    candidates: Vec<CandJson>,
    /// The recommended candidate's index (the table marks it).
    #[serde(skip)]
    recommended_index: Option<usize>,
}

/// The 95% CI half-width of a candidate's objective over its replications.
fn ci_of(c: &Candidate) -> f64 {
    let mut w = crate::results::Welford::default();
    c.samples.iter().for_each(|&x| w.add(x));
    w.stat().ci95
}

impl TuneReport {
    /// The report of `t`, a search of `param` for `objective` in the experiment `desc`
    /// describes; `hold`: the hold answer, when the search was the hold cap's; `borrowed`:
    /// the latency line of a latency fitted on another model (`config::latency_origin`), a
    /// note unless the hold answer's sentence says it.
    pub fn new(
        param: &str,
        objective: &Objective,
        desc: &Description,
        t: &Tuned,
        hold: Option<hold::HoldAnswer>,
        borrowed: Option<String>,
    ) -> TuneReport {
        let c = &t.candidates;
        let rec = t.verdict.as_ref().map(|v| &c[v.recommended]);
        let mut notes = notes(param, t);
        notes.extend(hold.as_ref().map(|a| a.sentence()));
        if hold.as_ref().is_none_or(|h| h.latency_borrowed.is_none()) {
            notes.extend(borrowed);
        }
        TuneReport {
            name: desc.name.clone(),
            question: desc.question.clone(),
            param: param.to_string(),
            strategy: t.strategy.clone(),
            objective: objective.name(),
            replications: desc.replications,
            recommended: rec.map(|r| r.value.json()),
            recommended_label: rec.map(|r| r.value.label()),
            recommended_objective: rec.map(|r| r.objective),
            recommended_ci95: rec.map(ci_of),
            flat: t.verdict.as_ref().is_some_and(|v| v.flat),
            hold_edge: edge_json(t),
            refine_rounds: t.rounds,
            notes,
            hold,
            candidates: c
                .iter()
                .map(|c| CandJson {
                    value: c.value.json(),
                    label: c.value.label(),
                    objective: c.feasible.then_some(c.objective),
                    objective_ci95: ci_of(c),
                    cost_usd: c.cost_usd,
                    cost_ci95: c.cost_ci95,
                    launch_wait_pooled_p99_s: c.launch_wait_pooled_p99_s,
                    makespan_p95_s: c.makespan_p95_s,
                    feasible: c.feasible,
                    p_cap_before_first_token: c.p_cap_before_first_token,
                })
                .collect(),
            recommended_index: t.verdict.as_ref().map(|v| v.recommended),
        }
    }

    /// tune.json's text (pretty, with a final newline): what `tune --json` prints.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes") + "\n"
    }

    /// The objective no candidate met, if none did (`tune` then exits 2 after printing).
    pub fn unmet_objective(&self) -> Option<&str> {
        self.recommended.is_none().then_some(self.objective.as_str())
    }

    /// The table `prefixsim tune` prints.
    pub fn table(&self) -> String {
        let mut s = format!(
            "tune {} for {} | objective {} | {} replications, common random numbers\n",
            self.param, self.strategy, self.objective, self.replications
        );
        s.push_str(&format!(
            "{:>12} {:>14} {:>12} {:>12} {:>26} {:>16} {:>9}\n",
            "value",
            "objective",
            "±95% CI",
            "cost_usd",
            "launch_wait_pooled_p99 (s)",
            "makespan_p95 (s)",
            "p_capped"
        ));
        let rec = self.recommended_index;
        for (i, c) in self.candidates.iter().enumerate() {
            let obj = c.objective.map_or("infeasible".to_string(), |o| format!("{o:.6}"));
            let mark = if Some(i) == rec { "  <- recommended" } else { "" };
            let capped = c.p_cap_before_first_token.map_or("-".to_string(), |p| format!("{p:.2}"));
            s.push_str(&format!(
                "{:>12} {:>14} {:>12.6} {:>12.6} {:>26.3} {:>16.3} {capped:>9}{mark}\n",
                c.label,
                obj,
                c.objective_ci95,
                c.cost_usd,
                c.launch_wait_pooled_p99_s,
                c.makespan_p95_s
            ));
        }
        match (&self.recommended_label, self.recommended_objective, self.recommended_ci95) {
            (Some(l), Some(o), Some(ci)) => s.push_str(&format!(
                "recommended: {} = {l}  (objective {o:.6} ± {ci:.6}, 95% CI)\n",
                self.param
            )),
            _ => s.push_str("recommended: none (no value meets the objective)\n"),
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }
}

fn edge_json(t: &Tuned) -> Option<serde_json::Value> {
    let v = t.verdict.as_ref()?;
    let e = v.edge.as_ref()?;
    let cap = t.candidates[v.recommended].value.json();
    let finite = |x: f64| x.is_finite().then_some(x);
    Some(serde_json::json!({
        "ttft_p05_s": finite(e.ttft.p05_s),
        "ttft_p50_s": finite(e.ttft.p50_s),
        "ttft_p95_s": finite(e.ttft.p95_s),
        "ttft_p99_s": finite(e.ttft.p99_s),
        // The recommendation lies in [p5, p95) of that time; `moved_from`: the tie rule's
        // pick when the recommendation moved off the knife edge.
        "knife_edge": e.knife_edge,
        "moved_from": e.moved_from.map(|m| t.candidates[m].value.label()),
        "margin_over_p95_s": finite(cap - e.ttft.p95_s),
        "margin_over_p99_s": finite(cap - e.ttft.p99_s),
    }))
}

fn notes(param: &str, t: &Tuned) -> Vec<String> {
    let c = &t.candidates;
    let mut out = Vec::new();
    if let Some((v, e)) = t.verdict.as_ref().and_then(|v| Some((v, v.edge.as_ref()?))) {
        out.extend(tune::edge_notes(param, c, v.recommended, e));
    }
    if t.verdict.as_ref().is_some_and(|v| v.flat) {
        out.push(format!(
            "the objective is flat over {}..{}: no value is clearly better (every difference \
             is within its 95% CI)",
            c[0].value.label(),
            c[c.len() - 1].value.label()
        ));
    }
    let useless = tune::saves_nothing(c);
    if let (Some(&first), Some(&last)) = (useless.first(), useless.last()) {
        let mut n = format!(
            "{param} {}..{} saves nothing against {} (same cost within its 95% CI) but adds up \
             to {:.3} s of p99 launch wait",
            c[first].value.label(),
            c[last].value.label(),
            c[0].value.label(),
            c[last].launch_wait_pooled_p99_s - c[0].launch_wait_pooled_p99_s
        );
        if param.ends_with("max_wait") {
            n.push_str(
                ": a hold cap shorter than the first writer's time to first token releases the \
                 held agents before its cache entry is ready, so they miss and write again, and \
                 every held agent waits the whole cap",
            );
        }
        out.push(n);
    }
    out
}
