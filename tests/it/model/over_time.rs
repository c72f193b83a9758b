//! Tests: the fan-out as time goes on: an advancing parent (`workload.parent_turn_every`), whose
//! latest entries the forks read and whose history they fork as of their send, and agents
//! arriving over time (`workload.arrival_every`).

use super::*;

/// Two forks of a warm parent that advances: one exchange of 2_000 tokens every
/// `every_s` seconds (`parent_turn_every`), the forks launched `interval_s` apart (stagger).
fn advancing(kind: AgentKind, every_s: u64, interval_s: u64) -> prefixsim::model::Detailed {
    let mut exp = experiment(2);
    exp.workload.kind = kind;
    exp.workload.parent_warm = true;
    exp.workload.parent_turn_every_us = every_s * US_PER_S;
    exp.workload.parent_turn_tokens = Dist::Const(2_000.0);
    let s = Strategy::Stagger { interval_us: interval_s * US_PER_S };
    simulate_detailed(&exp, &s, 0).unwrap()
}

/// (cache_read, cache_write, prompt_tokens) of agent `a`'s requests (the parent is agent 3).
fn usage_of(d: &prefixsim::model::Detailed, a: u32) -> Vec<(u64, u64, u64)> {
    let mine = d.requests.iter().filter(|r| r.agent == a);
    mine.map(|r| (r.usage.cache_read, r.usage.cache_write(), r.prompt_tokens)).collect()
}

#[test]
fn an_advancing_parent_lets_a_fork_read_its_latest_entry() {
    // The warm parent's last request wrote its entries at t = 0 (end of system 20_000, last
    // message 50_000). It then sends a turn every 60 s, each appending a 2_000-token exchange:
    // - turn 1 at 60 s: prompt 52_000; reads its 50_000 entry, writes 2_000 (TTFT 0.5 + 0.1 +
    //   0.05 = 0.65 s: ready at 60.65 s); turn 2 at 120 s: prompt 54_000, reads 52_000, writes
    //   2_000 (ready at 120.652 s).
    // - fork 0 at 0 s forks the history as of then: reads 50_000, writes its 100-token task.
    // - fork 1 at 150 s carries both exchanges: prompt 54_100; it reads the parent's latest
    //   entry (turn 2's 54_000, the parent's prompt at that time) and writes its task only.
    // - fork 1 is done at 150 + 0.5 + 0.005 + 0.054 + 2 = 152.559 s: the turn due at 180 s
    //   finds every agent done and does not happen: 2 parent requests.
    let d = advancing(AgentKind::Fork, 60, 150);
    assert_eq!(usage_of(&d, 0), vec![(50_000, 100, 50_100)]);
    assert_eq!(usage_of(&d, 1), vec![(54_000, 100, 54_100)]);
    assert_eq!(usage_of(&d, 3), vec![(50_000, 2_000, 52_000), (52_000, 2_000, 54_000)]);
    let parent_sends: Vec<_> =
        d.requests.iter().filter(|r| r.agent == 3).map(|r| r.send_us).collect();
    assert_eq!(parent_sends, vec![60 * US_PER_S, 120 * US_PER_S]);
    // The parent is counted apart: 2 requests, 102_000 read (0.0306 USD), 4_000 written at
    // 1.25x (0.015), 2 x 100 output (0.003): 0.0486 USD. The fan-out's cost is the forks':
    // HIT_USD + 54_000 * 0.3e-6 + 100 * 3.75e-6 + 0.0015 = 0.016875 + 0.018075.
    let m = &d.metrics;
    assert_eq!(m.parent_requests, 2);
    assert_eq!(m.parent_tokens.cache_read, 102_000);
    assert_eq!(m.parent_tokens.cache_write_5m, 4_000);
    assert_eq!(m.parent_tokens.output, 200);
    assert!(close(m.parent_cost_usd, 0.0486), "{}", m.parent_cost_usd);
    assert_eq!(m.requests, 2);
    assert_eq!(m.tokens.cache_read, 104_000);
    assert!(close(m.cost_usd, 0.016875 + 0.018075), "{}", m.cost_usd);
    // fork_deny_at_call keeps the prefix: the same reads.
    let d = advancing(AgentKind::ForkDenyAtCall { tool: "Bash".into() }, 60, 150);
    assert_eq!(usage_of(&d, 1), vec![(54_000, 100, 54_100)]);
}

#[test]
fn an_advancing_parent_makes_a_dropped_tool_write_the_history_it_does_not_share() {
    // The same timeline with fork_drop_tool: the tools block differs, so no parent entry ever
    // matches. Fork 0 at 0 s writes its 50_100 tokens (entries at 20_000, 50_000, 50_100).
    // Fork 1 at 150 s: tools', system, history, exchanges 1 and 2, task (54_100). Its
    // shared-end breakpoint (54_000) looks back: 54_000 and 52_000 were never written by a
    // sibling, 50_000 was (fork 0, alive until 300 s): it reads 50_000 and writes the 4_000
    // tokens of history the parent added since fork 0, plus its task: 4_100.
    let d = advancing(AgentKind::ForkDropTool { tool: "Bash".into() }, 60, 150);
    assert_eq!(usage_of(&d, 0), vec![(0, 50_100, 50_100)]);
    assert_eq!(usage_of(&d, 1), vec![(50_000, 4_100, 54_100)]);
    // The parent's own requests are unchanged by the agents' kind.
    assert_eq!(usage_of(&d, 3), vec![(50_000, 2_000, 52_000), (52_000, 2_000, 54_000)]);
    // Forks 6 min apart (TTL 5 min): fork 0's entries, last used at 0 s, expired at 300 s.
    // Fork 1 at 360 s carries exchanges 1..5 (turns at 60..300 s; turn 6 at 360 s is sent
    // after it: its gate was scheduled first): 60_100 tokens.
    // - fork_drop_tool writes all of it;
    // - fork reads the parent's latest entry (turn 5's prompt, 60_000) and writes its task.
    let d = advancing(AgentKind::ForkDropTool { tool: "Bash".into() }, 60, 360);
    assert_eq!(usage_of(&d, 1), vec![(0, 60_100, 60_100)]);
    let d = advancing(AgentKind::Fork, 60, 360);
    assert_eq!(usage_of(&d, 1), vec![(60_000, 100, 60_100)]);
    assert_eq!(usage_of(&d, 3)[4], (58_000, 2_000, 60_000));
    // fork_edit_system: the system differs too; the same history writes.
    let d = advancing(AgentKind::ForkEditSystem, 60, 360);
    assert_eq!(usage_of(&d, 1), vec![(0, 60_100, 60_100)]);
}

#[test]
fn a_fork_sent_at_the_instant_of_a_parent_turn_carries_the_history_without_it() {
    // Parent turns every 120 s, forks 120 s apart: at 120 s the parent's turn 1 (scheduled
    // at the start, before the fork's gate) is processed first, but the fork left at the same
    // instant: it carries the history as of t = 0 (50_100 tokens) and reads the warm parent's
    // 50_000 entry. Had it carried exchange 1, it would have found the parent's 52_000 entry
    // pending (a redundant write) and written 2_100.
    let d = advancing(AgentKind::Fork, 120, 120);
    let parent_sends: Vec<_> =
        d.requests.iter().filter(|r| r.agent == 3).map(|r| r.send_us).collect();
    assert_eq!(parent_sends, vec![120 * US_PER_S]);
    assert_eq!(usage_of(&d, 1), vec![(50_000, 100, 50_100)]);
    assert_eq!(d.metrics.redundant_writes, 0);
}

#[test]
fn a_frozen_parent_is_the_default_and_an_advancing_one_before_its_first_turn_changes_nothing() {
    // parent_turn_every = 0 (the default): no parent request. A parent whose first turn would
    // come after the horizon (25 h > 24 h) never sends either, but every fork's prompt is
    // rebuilt from the parent's line at its first send: the same blocks, the same digests, so
    // the same metrics, for every kind and strategy.
    let kinds = [
        AgentKind::Fork,
        AgentKind::Btw,
        AgentKind::Subagent,
        AgentKind::ForkDropTool { tool: "Bash".into() },
        AgentKind::ForkEditSystem,
        AgentKind::ForkOtherModel { model: "claude-haiku-4.5".into() },
        AgentKind::ForkDenyAtCall { tool: "Edit".into() },
    ];
    for kind in kinds {
        let mut frozen = random_experiment(5);
        frozen.workload.kind = kind;
        frozen.workload.brief_tokens = 1_500;
        frozen.workload.parent_warm = true;
        let mut late = frozen.clone();
        late.workload.parent_turn_every_us = 25 * US_PER_H;
        for s in [Strategy::Eager, wait_first(5 * US_PER_S), Strategy::Prewarm] {
            let a = simulate(&frozen, &s, 2).unwrap();
            let b = simulate(&late, &s, 2).unwrap();
            assert_eq!(a.scalars(), b.scalars(), "{:?} {s:?}", frozen.workload.kind);
            assert_eq!(a.samples(), b.samples());
            assert_eq!((a.parent_requests, b.parent_requests), (0, 0));
        }
    }
}

#[test]
fn an_advancing_parent_is_deterministic() {
    let mut exp = random_experiment(6);
    exp.workload.parent_warm = true;
    exp.workload.parent_turn_every_us = 3 * US_PER_S;
    exp.workload.parent_turn_tokens = Dist::LogNormal { median: 2_000.0, p90: 8_000.0 };
    let s = Strategy::Stagger { interval_us: 2 * US_PER_S };
    let a = simulate(&exp, &s, 1).unwrap();
    let b = simulate(&exp, &s, 1).unwrap();
    assert!(a.parent_requests > 0);
    assert_eq!(a.scalars(), b.scalars());
    assert_eq!(a.samples(), b.samples());
    assert_eq!((a.parent_requests, a.parent_tokens), (b.parent_requests, b.parent_tokens));
    assert_eq!(a.parent_cost_usd.to_bits(), b.parent_cost_usd.to_bits());
    exp.seed += 1;
    let c = simulate(&exp, &s, 1).unwrap();
    assert_ne!(a.parent_tokens, c.parent_tokens);
}

/// Arrivals spread the fan-out without gating it: `arrival_every` is when agents ask for a
/// slot, the strategy still gates their first request.
#[test]
fn agents_arriving_over_time_launch_at_their_arrival_and_complete_from_it() {
    // Warm parent, eager, 3 forks arriving 10 s apart: each sends on arrival (launch wait 0),
    // reads the parent's 50_000 tokens (refreshed by every read, far from its 5 min TTL) and
    // writes its task: 3 hits. Each completes 0.555 + 2 = 2.555 s after its own arrival; the
    // makespan runs from t0 to the last one: 20 + 2.555 s.
    let mut exp = experiment(3);
    exp.workload.parent_warm = true;
    exp.workload.arrival_every_us = 10 * US_PER_S;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    let m = &d.metrics;
    let t = 10 * US_PER_S;
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, t), (2, 2 * t)]);
    assert_eq!(m.tokens.cache_read, 3 * 50_000);
    assert!(close(m.cost_usd, 3.0 * HIT_USD), "{}", m.cost_usd);
    assert_eq!(m.launch_wait_us.max(), 0);
    assert_eq!(m.completion_us.values(), [HIT_TTFT_US + DECODE_US; 3]);
    assert_eq!(m.makespan_us, 2 * t + HIT_TTFT_US + DECODE_US);

    // One slot, arrivals 1 s apart: agent 1 arrives at 1 s but gets the slot when agent 0
    // completes at 2.555 s (its launch wait, from the slot, is 0), so it completes
    // 2.555 + 2.555 - 1 = 4.11 s after arriving; agent 2 (arrived at 2 s) at 7.665 - 2 = 5.665 s.
    exp.workload.concurrency = 1;
    exp.workload.arrival_every_us = US_PER_S;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    let done = HIT_TTFT_US + DECODE_US;
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, done), (2, 2 * done)]);
    assert_eq!(
        d.metrics.completion_us.values(),
        [done, 2 * done - US_PER_S, 3 * done - 2 * US_PER_S]
    );

    // wait_first with arrivals 100 ms apart and a cold parent: agent 0 opens the hold at t0;
    // agents 1 and 2 arrive at 0.1 s and 0.2 s while it is open and are held until agent 0's
    // first token at 3.005 s, then read its entries. Launch wait counts from each one's slot,
    // taken on arrival: 3.005 - 0.1 and 3.005 - 0.2 s.
    exp.workload.concurrency = 16;
    exp.workload.parent_warm = false;
    exp.workload.arrival_every_us = 100 * US_PER_MS;
    let d = simulate_detailed(&exp, &wait_first(5 * US_PER_S), 0).unwrap();
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, FULL_TTFT_US), (2, FULL_TTFT_US)]);
    assert_eq!(d.metrics.tokens.cache_read, 2 * 50_000);
    assert_eq!(
        d.metrics.launch_wait_us.values(),
        [0, FULL_TTFT_US - 100 * US_PER_MS, FULL_TTFT_US - 200 * US_PER_MS]
    );
}
