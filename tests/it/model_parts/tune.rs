//! Tests: `tune`'s verdict (`sweep::tune`): ties, the knife edge of a hold cap, refinement.

use prefixsim::sweep::tune::{choose, edge_notes, refine, Candidate, Kind, Value};

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
    let notes = edge_notes("max_wait", &c, v.recommended, v.edge.as_ref().unwrap()).join(" ");
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
    let notes = edge_notes("max_wait", &c, v.recommended, v.edge.as_ref().unwrap()).join(" ");
    assert!(notes.starts_with("warning: max_wait = 2500ms is on a knife edge"), "{notes}");
    assert!(notes.contains("in 49% of replications"), "{notes}");
}

#[test]
fn refine_between_neighbours() {
    let c: Vec<Candidate> = [0.0, 4.0, 8.0].iter().map(|&x| cand(x, vec![1.0], 0.0)).collect();
    let xs: Vec<f64> = refine(&c, 1, 8).iter().map(|v| v.x).collect();
    assert_eq!(xs, vec![1.0, 2.0, 3.0, 5.0, 6.0, 7.0]);
}
