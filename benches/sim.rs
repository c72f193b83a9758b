//! Benchmarks of the engine and the fan-out model (`cargo bench --bench sim`).
//!
//! - `engine_events`: a heap loop of 10k events in flight, each rescheduling one more.
//! - `engine_events_few`: the same with 16 in flight, as a fan-out of 16 agents keeps them
//!   (the engine's short sorted run, not its heap).
//! - `default_workload`: experiments/default.toml's fan-out (10 cold forks, 50k-token prefix,
//!   3-8 turns), 16 replications per iteration, per strategy (0 eager .. 4 prewarm).
//! - `fanout_64x20`: 64 agents, 20 turns each (1,280 requests), one replication.
//! - `server_default_workload`: the default workload on a self-hosted server
//!   (`cache.policy = "vllm"`, `[server]` defaults: one Llama 3.1 8B replica), per strategy.
//! - `run_peer_fanout`, `run_default_experiment`: what `prefixsim run FILE --jobs 1` does
//!   for benches/peer/fanout.toml (240k requests) and experiments/default.toml, parsed from
//!   the files' text: every replication of every strategy, and the summary.
//!
//! Throughput is reported as items per second: events, or simulated API requests.

use divan::counter::ItemsCount;
use divan::Bencher;
use prefixsim::config::preset;
use prefixsim::config::server::server_preset;
use prefixsim::config::{ExperimentSpec, Policy, Release, Strategy};
use prefixsim::dist::Dist;
use prefixsim::engine::{Bounds, Engine};
use prefixsim::metrics::RunMetrics;
use prefixsim::model::{simulate_detailed, Simulator};
use prefixsim::time::{SimDuration, SimTime};
use prefixsim::RunOptions;

fn main() {
    divan::main();
}

#[divan::bench]
fn engine_events(bencher: Bencher) {
    events_in_flight(bencher, 10_000);
}

#[divan::bench]
fn engine_events_few(bencher: Bencher) {
    events_in_flight(bencher, 16);
}

/// 1 M events through the engine, `in_flight` of them queued at any time.
fn events_in_flight(bencher: Bencher, in_flight: u64) {
    const EVENTS: u64 = 1_000_000;
    let mut engine = Engine::with_capacity(Bounds::UNBOUNDED, in_flight as usize + 1);
    bencher.counter(ItemsCount::new(EVENTS)).bench_local(|| {
        engine.reset(Bounds { max_events: EVENTS, horizon: SimTime::MAX }, SimTime::ZERO);
        for i in 0..in_flight {
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

/// The tests' closed-form fan-out (benches/closed_form.toml) made stochastic: a 500-token
/// brief, `turns` turns, lognormal outputs, tool latency and tool results, on Sonnet 4.6
/// (Sonnet 4.5's prices with a 1M window: long agents never outgrow it).
fn experiment(agents: u32, turns: f64) -> ExperimentSpec {
    let file = include_str!("closed_form.toml");
    let mut exp = prefixsim::Experiment::from_toml(file).expect("resolves").config().clone();
    exp.workload.agents = agents;
    exp.name = "bench".into();
    exp.question = String::new();
    exp.seed = 42;
    exp.strategies = vec![];
    exp.model = preset("claude-sonnet-4.6").expect("preset");
    exp.workload.brief_tokens = 500;
    exp.workload.turns = Dist::Const(turns);
    exp.workload.output_tokens = Dist::LogNormal { median: 300.0, p90: 1000.0 };
    exp.workload.tool_latency_us = Dist::LogNormal { median: 1.5e6, p90: 6e6 };
    exp.workload.tool_result_tokens = Dist::LogNormal { median: 500.0, p90: 3000.0 };
    exp
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
fn bench_replications(bencher: Bencher, exp: &ExperimentSpec, strategy: &Strategy, reps: u32) {
    let requests: u64 = (0..reps)
        .map(|r| simulate_detailed(exp, strategy, r).expect("runs").metrics.requests)
        .sum();
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
fn default_fanout() -> ExperimentSpec {
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

/// One whole `run --jobs 1` of an experiment file's text per iteration; items are the
/// simulated requests of every replication of every strategy (the prewarm request included).
fn bench_file(bencher: Bencher, text: &str) {
    let exp = prefixsim::Experiment::from_toml(text).expect("the file resolves");
    let opts = RunOptions { jobs: Some(1), force: true, ..RunOptions::default() };
    let summary = exp.run(&opts).expect("runs");
    let reps = f64::from(summary.replications);
    let requests: f64 = summary.results.iter().map(|r| r.requests * reps).sum();
    bencher
        .counter(ItemsCount::new(requests.round() as u64))
        .bench_local(|| exp.run(&opts).expect("runs"));
}

/// benches/peer/fanout.toml: 16 forks x 5 turns, 1,000 replications x 3 strategies.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn run_peer_fanout(bencher: Bencher) {
    bench_file(bencher, include_str!("peer/fanout.toml"));
}

/// experiments/default.toml: 3 Explore sub-agents, 200 replications x 6 strategies.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn run_default_experiment(bencher: Bencher) {
    bench_file(bencher, include_str!("../experiments/default.toml"));
}
