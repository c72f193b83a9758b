//! Tests: the fan-out model. Closed forms with deterministic latencies (derivations in the
//! comments), determinism and common random numbers; property tests under random workloads
//! (`props`), a tokio reference model of the same protocol (`reference`), and the parent and
//! the agents' arrivals over time (`over_time`).

use prefixsim::config::{AgentKind, ExperimentSpec, Policy, RateLimits, Release, Strategy, Ttl};
use prefixsim::dist::Dist;
use prefixsim::metrics::RunMetrics;
use prefixsim::model::{simulate_detailed, Outcome, RequestRecord, SegmentKind, SimError};
use prefixsim::time::{US_PER_H, US_PER_MIN, US_PER_MS, US_PER_S};

mod over_time;
mod props;
mod reference;

/// The closed-form workload (benches/closed_form.toml, which the benches share):
/// `agents` cold forks of a 50k-token parent (15k tools, 5k system, 30k history), no brief, a
/// 100-token task, one turn of 100 output tokens; claude-sonnet-4.5 ($3 / $15 per MTok,
/// 1024-token minimum); latency 500 ms + prefill 20k tok/s + cached 1M tok/s, decode 50
/// tok/s, ready delay 0; no rate limits.
pub fn experiment(agents: u32) -> ExperimentSpec {
    let file = include_str!("../../benches/closed_form.toml");
    let mut exp = prefixsim::Experiment::from_toml(file).unwrap().config().clone();
    exp.workload.agents = agents;
    exp
}

/// One replication's metrics, as a fresh simulator runs it.
pub fn simulate(exp: &ExperimentSpec, s: &Strategy, r: u32) -> Result<RunMetrics, SimError> {
    let mut m = RunMetrics::new();
    prefixsim::model::Simulator::new().run_into(exp, s, r, &mut m).map(|()| m)
}

fn wait_first(max_wait_us: u64) -> Strategy {
    Strategy::WaitFirst { max_wait_us, release: Release::OnReady }
}

// Per request of the closed-form workload (sonnet 4.5: input $3, output $15 per MTok):
// - a full write: 50_100 tokens written at 1.25x: 50_100 * 3.75e-6 = 0.1878750, plus output
//   100 * 15e-6 = 0.0015 -> 0.189375 USD; TTFT 0.5 + 50_100 / 20_000 = 3.005 s.
// - a hit on the parent prefix: 50_000 read at 0.1x: 0.015, 100 written: 0.000375, output
//   0.0015 -> 0.016875 USD; TTFT 0.5 + 100 / 20_000 + 50_000 / 1e6 = 0.555 s.
// Decode: 100 / 50 = 2 s.
const FULL_USD: f64 = 0.189375;
const HIT_USD: f64 = 0.016875;
const FULL_TTFT_US: u64 = 3_005_000;
const HIT_TTFT_US: u64 = 555_000;
const DECODE_US: u64 = 2_000_000;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn sends(records: &[RequestRecord]) -> Vec<(u32, u64)> {
    let mut v: Vec<_> = records.iter().map(|r| (r.agent, r.send_us)).collect();
    v.sort();
    v
}

#[test]
fn eager_cold_fanout_writes_the_shared_prefix_n_times() {
    // All 4 send at t = 0; nothing is ready (agent 0's entries are pending until 3.005 s), so
    // each writes its 50_100 tokens. Agents 1..3 each find the two shared entries (end of
    // system, end of history) pending: 2 redundant writes each = 6.
    let d = simulate_detailed(&experiment(4), &Strategy::Eager, 0).unwrap();
    let m = &d.metrics;
    assert_eq!(m.tokens.cache_write_5m, 4 * 50_100);
    assert_eq!(m.tokens.cache_read, 0);
    assert_eq!(m.requests, 4);
    assert_eq!(m.requests_with_hit, 0);
    assert_eq!(m.redundant_writes, 6);
    assert!(close(m.cost_usd, 4.0 * FULL_USD), "{}", m.cost_usd);
    assert!(close(m.cost_uncached_usd, 4.0 * (50_100.0 * 3.0 + 100.0 * 15.0) / 1e6));
    assert_eq!(m.makespan_us, FULL_TTFT_US + DECODE_US);
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, 0), (2, 0), (3, 0)]);
    assert_eq!(d.requests[1].usage.redundant_writes, 2);
    assert_eq!(m.launch_wait_us.max(), 0);
}

#[test]
fn wait_first_released_by_the_first_token_writes_once_and_reads_n_minus_1() {
    // Agent 0 sends at 0; its response begins at 3.005 s < the 5 s cap, which releases agents
    // 1..3 together at 3.005 s. Its entry is ready at exactly 3.005 s (send + TTFT), so they
    // read the 50_000-token parent prefix and write only their 100-token task.
    let d = simulate_detailed(&experiment(4), &wait_first(5 * US_PER_S), 0).unwrap();
    let m = &d.metrics;
    assert_eq!(m.tokens.cache_write_5m, 50_100 + 3 * 100);
    assert_eq!(m.tokens.cache_read, 3 * 50_000);
    assert_eq!(m.requests_with_hit, 3);
    assert_eq!(m.redundant_writes, 0);
    assert!(close(m.cost_usd, FULL_USD + 3.0 * HIT_USD), "{}", m.cost_usd);
    let t = FULL_TTFT_US;
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, t), (2, t), (3, t)]);
    assert_eq!(m.launch_wait_us.max(), t);
    // Makespan: the released agents finish at 3.005 + 0.555 + 2 = 5.56 s.
    assert_eq!(m.makespan_us, t + HIT_TTFT_US + DECODE_US);
    let holds = d.segments.iter().filter(|s| s.kind == SegmentKind::Hold).count();
    assert_eq!(holds, 3);
}

#[test]
fn wait_first_capped_before_the_first_token_writes_n_times() {
    // The cap (2 s) comes before agent 0's first token (3.005 s): agents 1..3 are released at
    // 2 s, find both shared entries still pending, and write again: 4 full writes and
    // 2 * 3 = 6 redundant writes; the cost is eager's.
    let d = simulate_detailed(&experiment(4), &wait_first(2 * US_PER_S), 0).unwrap();
    let m = &d.metrics;
    assert_eq!(m.tokens.cache_write_5m, 4 * 50_100);
    assert_eq!(m.tokens.cache_read, 0);
    assert_eq!(m.redundant_writes, 6);
    assert!(close(m.cost_usd, 4.0 * FULL_USD));
    let c = 2 * US_PER_S;
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, c), (2, c), (3, c)]);
    assert!(d.requests[1..].iter().all(|r| Outcome::of(&r.usage) == Outcome::RedundantWrite));
}

#[test]
fn wait_first_timer_release_always_holds_max_wait() {
    // release = timer: the held agents go at exactly max_wait = 4 s, after the entry became
    // ready at 3.005 s: they read.
    let s = Strategy::WaitFirst { max_wait_us: 4 * US_PER_S, release: Release::Timer };
    let d = simulate_detailed(&experiment(3), &s, 0).unwrap();
    let c = 4 * US_PER_S;
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, c), (2, c)]);
    assert_eq!(d.metrics.tokens.cache_read, 2 * 50_000);
}

#[test]
fn wait_first_zero_is_eager() {
    let a = simulate(&experiment(4), &wait_first(0), 0).unwrap();
    let b = simulate(&experiment(4), &Strategy::Eager, 0).unwrap();
    assert_eq!(a.scalars(), b.scalars());
}

#[test]
fn sequential_reads_after_the_first_and_chains_the_launches() {
    // Agent i sends when agent i-1's first request ends. Agent 0: 0 -> 5.005 s (full write);
    // each next agent reads the parent prefix: 2.555 s per agent. Sends at 0, 5.005, 7.56,
    // 10.115 s; makespan 12.67 s; cost = one full write + 3 hits.
    let d = simulate_detailed(&experiment(4), &Strategy::Sequential, 0).unwrap();
    let m = &d.metrics;
    let first = FULL_TTFT_US + DECODE_US;
    let step = HIT_TTFT_US + DECODE_US;
    let expected: Vec<_> =
        (0..4u32).map(|i| (i, if i == 0 { 0 } else { first + (i as u64 - 1) * step })).collect();
    assert_eq!(sends(&d.requests), expected);
    assert_eq!(m.makespan_us, first + 3 * step);
    assert!(close(m.cost_usd, FULL_USD + 3.0 * HIT_USD));
    assert_eq!(m.redundant_writes, 0);
}

#[test]
fn stagger_reads_once_the_interval_passes_the_first_token() {
    // Agent i sends at 2i s. Agent 0's entries are ready at 3.005 s: agent 1 (2 s) misses and
    // rewrites both shared entries while pending (2 redundant writes); agents 2 (4 s) and
    // 3 (6 s) read. Cost: 2 full + 2 hits.
    let s = Strategy::Stagger { interval_us: 2 * US_PER_S };
    let d = simulate_detailed(&experiment(4), &s, 0).unwrap();
    let m = &d.metrics;
    let expected: Vec<_> = (0..4u32).map(|i| (i, 2 * US_PER_S * i as u64)).collect();
    assert_eq!(sends(&d.requests), expected);
    assert_eq!(m.redundant_writes, 2);
    assert_eq!(m.requests_with_hit, 2);
    assert!(close(m.cost_usd, 2.0 * FULL_USD + 2.0 * HIT_USD), "{}", m.cost_usd);
}

#[test]
fn prewarm_writes_once_with_no_output_and_every_agent_reads() {
    // The warming request sends the 50_000-token shared prefix, max_tokens = 0: TTFT
    // 0.5 + 50_000 / 20_000 = 3 s, 50_000 * 3.75e-6 = 0.1875 USD, 0 output. All 4 agents wait
    // for its entries (ready at 3 s), then read 50_000 and write 100 each.
    let d = simulate_detailed(&experiment(4), &Strategy::Prewarm, 0).unwrap();
    let m = &d.metrics;
    assert_eq!(m.requests, 5);
    assert_eq!(m.agents, 4);
    assert_eq!(m.tokens.output, 400);
    assert_eq!(m.tokens.cache_write_5m, 50_000 + 4 * 100);
    assert_eq!(m.tokens.cache_read, 4 * 50_000);
    assert!(close(m.cost_usd, 0.1875 + 4.0 * HIT_USD), "{}", m.cost_usd);
    let warm = 3 * US_PER_S;
    assert_eq!(sends(&d.requests), vec![(0, warm), (1, warm), (2, warm), (3, warm), (4, 0)]);
    assert_eq!(m.makespan_us, warm + HIT_TTFT_US + DECODE_US);
    assert_eq!(m.launch_wait_us.min(), warm);
}

#[test]
fn a_warm_parent_makes_every_agent_read() {
    // The parent's entries (end of system, end of history) were written 4 min ago: alive for
    // 5 min. Every agent reads 50_000 and writes its task: 4 hits even under eager.
    let mut exp = experiment(4);
    exp.workload.parent_warm = true;
    exp.workload.parent_idle_us = 4 * US_PER_MIN;
    let m = simulate(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(m.tokens.cache_read, 4 * 50_000);
    assert_eq!(m.tokens.cache_write_5m, 4 * 100);
    assert!(close(m.cost_usd, 4.0 * HIT_USD));
    // Times are relative to the fan-out start, not to the parent's last request.
    assert_eq!(m.makespan_us, HIT_TTFT_US + DECODE_US);
}

#[test]
fn a_parent_idle_past_the_ttl_does_not() {
    // Idle exactly 5 min (an entry expires at last_use + ttl) or 10 min: the parent's entries
    // expired; the fan-out is cold: eager writes 4 times. With a 1 h TTL, 10 min is warm.
    for idle in [5 * US_PER_MIN, 10 * US_PER_MIN] {
        let mut exp = experiment(4);
        exp.workload.parent_warm = true;
        exp.workload.parent_idle_us = idle;
        let m = simulate(&exp, &Strategy::Eager, 0).unwrap();
        assert_eq!(m.tokens.cache_read, 0, "idle {idle}");
        assert!(close(m.cost_usd, 4.0 * FULL_USD));
    }
    let mut exp = experiment(4);
    exp.workload.parent_warm = true;
    exp.workload.parent_idle_us = 10 * US_PER_MIN;
    exp.cache.ttl = Ttl::OneHour;
    let m = simulate(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(m.tokens.cache_read, 4 * 50_000);
    // 1h writes cost 2x: 100 * 6e-6 = 0.0006 per task instead of 0.000375.
    assert_eq!(m.tokens.cache_write_1h, 4 * 100);
    assert!(close(m.cost_usd, 4.0 * (0.015 + 0.0006 + 0.0015)), "{}", m.cost_usd);
}

#[test]
fn the_concurrency_cap_queues_agents_for_a_slot() {
    // 4 agents, 2 slots, eager: agents 0, 1 at 0 (full writes, done at 5.005 s); agents 2, 3
    // get the freed slots at 5.005 s and read. Launch wait counts from the slot: all 0.
    let mut exp = experiment(4);
    exp.workload.concurrency = 2;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    let first = FULL_TTFT_US + DECODE_US;
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, 0), (2, first), (3, first)]);
    assert_eq!(d.metrics.requests_with_hit, 2);
    assert_eq!(d.metrics.launch_wait_us.max(), 0);
}

#[test]
fn later_turns_extend_the_prompt_and_read_the_previous_turn() {
    // One agent, 3 turns: request k+1 = request k + response (100) + tool result (500).
    // Turn 0 writes 50_100; turn 1 reads 50_100 (its previous last-message entry, 2 blocks back,
    // within the 20-block lookback) and writes 600; turn 2 reads 50_700, writes 600.
    let mut exp = experiment(1);
    exp.workload.turns = Dist::Const(3.0);
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    let u: Vec<_> =
        d.requests.iter().map(|r| (r.usage.cache_read, r.usage.cache_write_5m)).collect();
    assert_eq!(u, vec![(0, 50_100), (50_100, 600), (50_700, 600)]);
    // Turn 1 is sent after response 0 (5.005 s) and the 2 s tool call.
    assert_eq!(d.requests[1].send_us, FULL_TTFT_US + DECODE_US + 2 * US_PER_S);
}

#[test]
fn rate_limits_give_429s_and_retry_when_the_bucket_refills() {
    // ITPM 120_000 (2_000 tokens/s refill). Eager, 3 cold agents of 50_100 tokens each: the
    // first two fit in the full bucket (100_200 <= 120_000), the third gets a 429: it needs
    // 50_100 and 19_800 are left: (50_100 - 19_800) / 2_000 = 15.15 s, no jitter.
    let mut exp = experiment(3);
    exp.rate_limits = Some(RateLimits {
        rpm: 1_000,
        itpm: 120_000,
        otpm: 100_000,
        cache_reads_count: false,
        retry_jitter_us: Dist::Const(0.0),
        interval_us: US_PER_MIN,
        parent_counts: false,
    });
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(d.metrics.rate_limited, 1);
    assert_eq!(d.metrics.throttled_us, 15_150_000);
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, 0), (2, 15_150_000)]);
    // By then agent 0's entries are ready: the retried request reads.
    assert_eq!(d.requests[2].usage.cache_read, 50_000);
}

#[test]
fn same_seed_same_metrics_and_different_seed_differs() {
    let mut exp = random_experiment(6);
    let a = simulate(&exp, &wait_first(5 * US_PER_S), 3).unwrap();
    let b = simulate(&exp, &wait_first(5 * US_PER_S), 3).unwrap();
    assert_eq!(a.scalars(), b.scalars());
    assert_eq!(a.samples(), b.samples());
    exp.seed += 1;
    let c = simulate(&exp, &wait_first(5 * US_PER_S), 3).unwrap();
    assert_ne!(a.scalars(), c.scalars());
}

/// A workload with random turns, outputs, tools and latencies.
pub fn random_experiment(agents: u32) -> ExperimentSpec {
    let mut exp = experiment(agents);
    exp.workload.turns = Dist::Uniform { low: 1.0, high: 4.0 };
    exp.workload.output_tokens = Dist::LogNormal { median: 300.0, p90: 900.0 };
    exp.workload.tool_latency_us = Dist::Exp { mean: 2e6 };
    exp.workload.tool_result_tokens = Dist::Uniform { low: 100.0, high: 3000.0 };
    exp.latency.overhead_us = Dist::LogNormal { median: 5e5, p90: 1.5e6 };
    exp.latency.prefill_rate = Dist::Normal { mean: 20_000.0, sd: 3_000.0 };
    exp
}

#[test]
fn adding_an_agent_leaves_the_others_draws_unchanged() {
    // Each agent's workload draws (turns, output tokens, tool results -> its prompt sizes) come
    // from its own stream: agents 0..5 see the same sequence with 6 or 7 agents, under any
    // strategy (common random numbers).
    let per_agent = |agents: u32, s: &Strategy| {
        let d = simulate_detailed(&random_experiment(agents), s, 1).unwrap();
        let mut v: Vec<_> = d
            .requests
            .iter()
            .filter(|r| r.agent < 6)
            .map(|r| (r.agent, r.request, r.output_tokens, r.prompt_tokens))
            .collect();
        v.sort();
        v
    };
    let base = per_agent(6, &Strategy::Eager);
    assert!(base.len() > 6);
    assert_eq!(base, per_agent(7, &Strategy::Eager));
    assert_eq!(base, per_agent(7, &Strategy::Sequential));
    assert_eq!(base, per_agent(6, &wait_first(5 * US_PER_S)));
}

#[test]
fn agent_kinds_break_or_keep_the_prefix() {
    // Warm parent (idle 0), eager, 2 agents, the first request each:
    // fork and fork_deny_at_call read the 50_000-token parent prefix; /btw too;
    // fork_drop_tool reads nothing (the tool list changed: everything after it differs);
    // fork_edit_system reads nothing (no entry sits at the end of the tools block);
    // fork_other_model reads nothing (another model's cache); a subagent reads nothing.
    let read = |kind: AgentKind| {
        let mut exp = experiment(2);
        exp.workload.parent_warm = true;
        exp.workload.kind = kind;
        simulate(&exp, &Strategy::Eager, 0).unwrap().tokens.cache_read
    };
    assert_eq!(read(AgentKind::Fork), 100_000);
    assert_eq!(read(AgentKind::ForkDenyAtCall { tool: "Edit".into() }), 100_000);
    assert_eq!(read(AgentKind::Btw), 100_000);
    assert_eq!(read(AgentKind::ForkDropTool { tool: "Bash".into() }), 0);
    assert_eq!(read(AgentKind::ForkEditSystem), 0);
    assert_eq!(read(AgentKind::ForkOtherModel { model: "claude-haiku-4.5".into() }), 0);
    assert_eq!(read(AgentKind::Subagent), 0);
}

#[test]
fn bounds_stop_a_run_with_an_error() {
    let mut exp = experiment(4);
    exp.limits.max_events = 3;
    let err = simulate(&exp, &Strategy::Eager, 0).unwrap_err();
    assert!(err.to_string().contains("event limit"), "{err}");
    let mut exp = experiment(4);
    exp.limits.horizon_us = US_PER_S;
    let err = simulate(&exp, &Strategy::Eager, 0).unwrap_err();
    assert!(err.to_string().contains("horizon"), "{err}");
}

#[test]
fn subagents_share_their_own_prefix_with_siblings_not_the_parent() {
    // A warm parent does not help subagents: their prefix is the type's own tools + system
    // (15_000 tokens), then the task (100). Under wait_first, agent 0 writes 15_100 tokens
    // (TTFT 0.5 + 15_100 / 20_000 = 1.255 s); the siblings, released at 1.255 s, read the
    // 15_000-token type prefix (the end-of-system breakpoint) and write their task.
    let mut exp = experiment(3);
    exp.workload.kind = AgentKind::Subagent;
    exp.workload.parent_warm = true;
    let d = simulate_detailed(&exp, &wait_first(5 * US_PER_S), 0).unwrap();
    let reads: Vec<_> = d.requests.iter().map(|r| r.usage.cache_read).collect();
    assert_eq!(reads, vec![0, 15_000, 15_000]);
    assert_eq!(sends(&d.requests), vec![(0, 0), (1, 1_255_000), (2, 1_255_000)]);
}

#[test]
fn a_denied_call_returns_at_once_with_a_short_error_result() {
    // fork_deny_at_call with every call denied: turn 1 is sent the moment response 0 ends
    // (no tool latency), and its prompt grew by the response (100) and the 20-token error.
    let mut exp = experiment(1);
    exp.workload.kind = AgentKind::ForkDenyAtCall { tool: "Edit".into() };
    exp.workload.denied_call_share = 1.0;
    exp.workload.turns = Dist::Const(2.0);
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(d.requests[1].send_us, FULL_TTFT_US + DECODE_US);
    let denied = prefixsim::model::workload::DENIED_RESULT_TOKENS;
    assert_eq!(d.requests[1].prompt_tokens, 50_100 + 100 + denied);
    // The same fork without denials waits the 2 s tool call and appends its 500-token result.
    exp.workload.denied_call_share = 0.0;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(d.requests[1].send_us, FULL_TTFT_US + DECODE_US + 2 * US_PER_S);
    assert_eq!(d.requests[1].prompt_tokens, 50_100 + 100 + 500);
}

#[test]
fn the_timeline_has_a_segment_per_phase() {
    // wait_first, 2 agents, 2 turns: agent 1 is held until 3.005 s; every request has a
    // prefill, a decode and (it writes) an entry_ready mark; one tool call per agent.
    let mut exp = experiment(2);
    exp.workload.turns = Dist::Const(2.0);
    let d = simulate_detailed(&exp, &wait_first(5 * US_PER_S), 0).unwrap();
    let count = |k| d.segments.iter().filter(|s| s.kind == k).count();
    assert_eq!(count(SegmentKind::Hold), 1);
    assert_eq!(count(SegmentKind::Prefill), 4);
    assert_eq!(count(SegmentKind::Decode), 4);
    assert_eq!(count(SegmentKind::EntryReady), 4);
    assert_eq!(count(SegmentKind::Tool), 2);
    let hold = d.segments.iter().find(|s| s.kind == SegmentKind::Hold).unwrap();
    assert_eq!((hold.agent, hold.start_us, hold.end_us), (1, 0, FULL_TTFT_US));
    let first = d.segments.iter().find(|s| s.kind == SegmentKind::Prefill).unwrap();
    assert_eq!((first.agent, first.outcome), (0, Outcome::Miss));
}

#[test]
fn every_block_policy_writes_every_boundary() {
    // every-block: every block boundary is a cache point, no minimum length. Eager, cold:
    // agents 1..3 find the three shared boundaries (tools, system, history) pending: 3
    // redundant writes each. Under wait_first they read the longest ready prefix (50_000).
    let mut exp = experiment(4);
    exp.cache.policy = Policy::EveryBlock;
    let m = simulate(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(m.redundant_writes, 9);
    assert_eq!(m.tokens.cache_write_5m, 4 * 50_100);
    assert!(close(m.cost_usd, 4.0 * FULL_USD));
    let m = simulate(&exp, &wait_first(5 * US_PER_S), 0).unwrap();
    assert_eq!(m.tokens.cache_read, 3 * 50_000);
    assert!(close(m.cost_usd, FULL_USD + 3.0 * HIT_USD));
}

/// A reused `Simulator` (event heap, launch buffers, caches emptied but kept) and a reused
/// `RunMetrics` give exactly what fresh ones give, whatever ran before: a cache, a held agent,
/// a counter or a sample left over from the previous run would show up in some field here.
#[test]
fn a_reused_simulator_equals_a_fresh_one() {
    use prefixsim::config::Overload;
    use prefixsim::metrics::RunMetrics;
    use prefixsim::model::Simulator;
    let mut cold = experiment(6);
    cold.workload.turns = Dist::Uniform { low: 1.0, high: 4.0 };
    cold.workload.concurrency = 4;
    let mut warm = cold.clone();
    warm.workload.parent_warm = true;
    let mut other_model = cold.clone();
    other_model.workload.kind = AgentKind::ForkOtherModel { model: "claude-haiku-4.5".into() };
    // Every optional counter at work: 429s, 529s with give-ups, isolated misses, a parent
    // that advances and draws on the buckets.
    let mut busy = warm.clone();
    busy.workload.parent_turn_every_us = 20 * US_PER_S;
    busy.cache.miss_probability = 0.2;
    busy.rate_limits = Some(RateLimits {
        rpm: 1_000,
        itpm: 120_000,
        otpm: 100_000,
        cache_reads_count: false,
        retry_jitter_us: Dist::Uniform { low: 0.0, high: 1e6 },
        interval_us: US_PER_MIN,
        parent_counts: true,
    });
    busy.overload = Some(Overload {
        probability: 0.3,
        max_retries: 1,
        initial_backoff_us: 500_000,
        max_backoff_us: 8 * US_PER_S,
    });
    let strategies = [
        Strategy::Eager,
        wait_first(5 * US_PER_S),
        wait_first(0),
        Strategy::Stagger { interval_us: US_PER_S },
        Strategy::Sequential,
        Strategy::Prewarm,
    ];
    let mut sim = Simulator::new();
    let mut reused = RunMetrics::new();
    let runs = [&warm, &busy, &cold, &other_model, &busy, &cold, &warm];
    for (i, exp) in runs.into_iter().enumerate() {
        for strategy in &strategies {
            sim.run_into(exp, strategy, i as u32, &mut reused).unwrap();
            let fresh = simulate(exp, strategy, i as u32).unwrap();
            assert_eq!(reused, fresh, "run {i} {strategy:?}");
        }
    }
    let mut busy_total = RunMetrics::new();
    for strategy in &strategies {
        sim.run_into(&busy, strategy, 1, &mut reused).unwrap();
        busy_total.rate_limited += reused.rate_limited;
        busy_total.overloaded += reused.overloaded;
        busy_total.failed_agents += reused.failed_agents;
        busy_total.isolated_misses += reused.isolated_misses;
        busy_total.parent_requests += reused.parent_requests;
    }
    let b = &busy_total;
    let counted = [b.rate_limited, b.overloaded, b.failed_agents, b.isolated_misses];
    assert!(counted.iter().all(|&c| c > 0), "the busy runs exercise every counter: {b:?}");
    assert!(b.parent_requests > 0);
}

/// `RunMetrics::reset` returns every field to `new()`'s value.
#[test]
fn reset_metrics_equal_new_ones() {
    use prefixsim::metrics::RunMetrics;
    let mut m = simulate(&experiment(3), &wait_first(0), 0).unwrap();
    m.parent_cost_usd = 1.0;
    m.hold_first_token_us = Some(1);
    assert_ne!(m, RunMetrics::new());
    m.reset();
    assert_eq!(m, RunMetrics::new());
}
