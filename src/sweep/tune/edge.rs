//! A `wait_first` hold cap against the first writer's time to first token: where a
//! recommended cap sits (`Edge`), the rule that moves it off the knife edge, and what `tune`
//! says about it.

use super::candidate::{nearest_rank, Candidate};

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

/// `Edge`'s rule: the recommendation and where it sits.
pub(super) fn off_the_edge(
    cands: &[Candidate],
    tied: &[usize],
    pick: usize,
) -> Option<(usize, Edge)> {
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
pub fn edge_notes(param: &str, cands: &[Candidate], recommended: usize, e: &Edge) -> Vec<String> {
    let c = &cands[recommended];
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
    let note = if let Some(m) = e.moved_from {
        format!(
            "{param} = {} (the tie rule's pick) is on a knife edge: the cap fires before the \
             first writer's response begins in {} of replications ({spread}); recommended \
             instead {param} = {}, the smallest cap clear of the edge whose objective ties with \
             the best; {margin}",
            cands[m].value.label(),
            pct(&cands[m]),
            c.value.label()
        )
    } else if e.knife_edge {
        format!(
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
        )
    } else if t.p05_s == t.p99_s && cap >= t.p99_s {
        format!(
            "the first writer's time to first token is {} in every replication (p5 = p99: no \
             spread in this latency model), so {param} = {} is safe by {}; a latency with \
             spread (latency.preset = \"calibrated\" draws measured ones) needs more margin",
            s(t.p99_s),
            c.value.label(),
            s(cap - t.p99_s)
        )
    } else if cap < t.p05_s {
        format!(
            "{param} = {} fires before the first writer's response begins in {} of \
             replications: the hold is in effect off ({spread})",
            c.value.label(),
            pct(c)
        )
    } else {
        format!(
            "{param} = {}: the cap fires first in {} of replications ({spread}); {margin}",
            c.value.label(),
            pct(c)
        )
    };
    vec![note]
}
