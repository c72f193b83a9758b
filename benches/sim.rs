//! Benchmarks of the engine and the fan-out model (`cargo bench --bench sim`).
//!
//! - `engine_events`: a heap loop of 10k events in flight, each rescheduling one more.
//! - `default_workload`: experiments/default.toml's fan-out (10 cold forks, 50k-token prefix,
//!   3-8 turns), 16 replications per iteration, per strategy (0 eager .. 4 prewarm).
//! - `fanout_64x20`: 64 agents, 20 turns each (1,280 requests), one replication.
//! - `server_default_workload`: the default workload on a self-hosted server
//!   (`cache.policy = "vllm"`, `[server]` defaults: one Llama 3.1 8B replica), per strategy.
//!
//! Throughput is reported as items per second: events, or simulated API requests.

use divan::counter::ItemsCount;
use divan::Bencher;
use prefixsim::cache::preset;
use prefixsim::config::server::server_preset;
use prefixsim::config::{
    AgentKind, CacheParams, Experiment, LatencyParams, Policy, Release, RunLimits, Strategy, Ttl,
    Workload, DEFAULT_TURN_BLOCKS,
};
use prefixsim::dist::Dist;
use prefixsim::engine::{Bounds, Engine};
use prefixsim::metrics::RunMetrics;
use prefixsim::model::{simulate, Simulator};
use prefixsim::time::{SimDuration, SimTime};

fn main() {
    divan::main();
}

#[divan::bench]
fn engine_events(bencher: Bencher) {
    const IN_FLIGHT: u64 = 10_000;
    const EVENTS: u64 = 1_000_000;
    let mut engine = Engine::with_capacity(Bounds::UNBOUNDED, IN_FLIGHT as usize + 1);
    bencher.counter(ItemsCount::new(EVENTS)).bench_local(|| {
        engine.reset(Bounds { max_events: EVENTS, horizon: SimTime::MAX }, SimTime::ZERO);
        for i in 0..IN_FLIGHT {
            engine.schedule_at(SimTime::from_us(i * 7 % 1000), i);
        }
        let mut x = 0u64;
        while let Ok(Some((_, e))) = engine.pop() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(e);
            engine.schedule_in(SimDuration::from_us(1 + (x >> 54)), e);
        }
        divan::black_box(x)
    });
}

fn experiment(agents: u32, turns: f64) -> Experiment {
    Experiment {
        name: "bench".into(),
        question: String::new(),
        seed: 42,
        replications: 1,
        strategies: vec![],
        // Sonnet 4.5's prices with a 1M window: long agents never outgrow it.
        model: preset("claude-sonnet-4.6").expect("preset"),
        cache: CacheParams {
            policy: Policy::Anthropic,
            ttl: Ttl::FiveMin,
            capacity_tokens: None,
            parent_ttl: None,
            ttl_by_kind: Vec::new(),
            miss_probability: 0.0,
            hosted: Default::default(),
        },
        workload: Workload {
            kind: AgentKind::Fork,
            agents,
            arrival_every_us: 0,
            concurrency: 16,
            parent_tokens: 50_000,
            parent_warm: false,
            parent_idle_us: 0,
            parent_turn_every_us: 0,
            parent_turn_tokens: Dist::Const(2000.0),
            brief_tokens: 500,
            task_tokens: 100,
            subagent_tokens: 15_000,
            turns: Dist::Const(turns),
            output_tokens: Dist::LogNormal { median: 300.0, p90: 1000.0 },
            tool_latency_us: Dist::LogNormal { median: 1.5e6, p90: 6e6 },
            tool_result_tokens: Dist::LogNormal { median: 500.0, p90: 3000.0 },
            denied_call_share: 0.0,
            turn_blocks: DEFAULT_TURN_BLOCKS.to_vec(),
            parent_exchange_blocks: DEFAULT_TURN_BLOCKS.to_vec(),
            thinking: false,
            parent_thinking: None,
            output_max_tokens: u64::MAX,
            tool_result_max_tokens: u64::MAX,
        },
        latency: LatencyParams {
            overhead_us: Dist::Const(5e5),
            prefill_rate: Dist::Const(20_000.0),
            cached_rate: Dist::Const(1_000_000.0),
            decode_rate: Dist::Const(50.0),
            ready_delay_us: Dist::Const(0.0),
        },
        latency_other: None,
        rate_limits: None,
        overload: None,
        limits: RunLimits { max_events: 10_000_000, horizon_us: 24 * 3_600_000_000 },
        plot_baseline: Vec::new(),
        report: prefixsim::config::ReportSpec::default(),
        server: None,
    }
}

fn strategies() -> [(&'static str, Strategy); 5] {
    [
        ("eager", Strategy::Eager),
        ("wait_first", Strategy::WaitFirst { max_wait_us: 5_000_000, release: Release::OnReady }),
        ("stagger", Strategy::Stagger { interval_us: 1_000_000 }),
        ("sequential", Strategy::Sequential),
        ("prewarm", Strategy::Prewarm),
    ]
}

/// Each iteration runs replications `0..reps` (a fixed set, so the request count is fixed).
fn bench_replications(bencher: Bencher, exp: &Experiment, strategy: &Strategy, reps: u32) {
    let requests: u64 = (0..reps).map(|r| simulate(exp, strategy, r).expect("runs").requests).sum();
    let mut sim = Simulator::new();
    let mut metrics = RunMetrics::new();
    bencher.counter(ItemsCount::new(requests)).bench_local(|| {
        for rep in 0..reps {
            sim.run_into(exp, strategy, rep, &mut metrics).expect("runs");
        }
        divan::black_box(metrics.cost_usd)
    });
}

/// 10 cold forks of a 50k-token parent, a 2k brief, 3-8 turns, lognormal outputs, tool
/// latency and tool results: the workload both `default_workload` benches run.
fn default_fanout() -> Experiment {
    let mut exp = experiment(10, 3.0);
    exp.workload.brief_tokens = 2_000;
    exp.workload.task_tokens = 200;
    exp.workload.turns = Dist::Uniform { low: 3.0, high: 8.0 };
    exp.workload.output_tokens = Dist::LogNormal { median: 300.0, p90: 1500.0 };
    exp.workload.tool_latency_us = Dist::LogNormal { median: 2e6, p90: 10e6 };
    exp.workload.tool_result_tokens = Dist::LogNormal { median: 500.0, p90: 4000.0 };
    exp
}

/// The fan-out of `default_fanout` on the API model.
#[divan::bench(args = [0, 1, 2, 3, 4])]
fn default_workload(bencher: Bencher, strategy: usize) {
    let exp = default_fanout();
    let (_, s) = &strategies()[strategy];
    bench_replications(bencher, &exp, s, 16);
}

#[divan::bench(args = [0, 1])]
fn fanout_64x20(bencher: Bencher, strategy: usize) {
    let mut exp = experiment(64, 20.0);
    exp.workload.concurrency = 64;
    let (_, s) = &strategies()[strategy];
    bench_replications(bencher, &exp, s, 1);
}

/// `default_workload` on the `vllm` server model (prefill steps, GPU block cache, decode).
#[divan::bench(args = [0, 1, 2, 3, 4])]
fn server_default_workload(bencher: Bencher, strategy: usize) {
    let mut exp = default_fanout();
    exp.cache.policy = Policy::Vllm;
    exp.server = server_preset("llama-3.1-8b", Policy::Vllm);
    let (_, s) = &strategies()[strategy];
    bench_replications(bencher, &exp, s, 16);
}
