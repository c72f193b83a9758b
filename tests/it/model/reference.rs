//! The reference model: the same agent protocol written plainly as async tasks on tokio's
//! paused clock, with whole-millisecond latencies. For seeded workloads it must agree with the
//! engine on every request's send time, usage and cost.
//!
//! Shared with the engine (not under test here): the prompt builders (`model::workload`), the
//! cache (`Cache::serve`), the latency formula (`latency::draw`) and the per-agent streams.
//! Under test: the event ordering, the gating of the strategies (eager, wait_first with
//! `timeout(max_wait, first_response_began)`, sequential), the turn loop and the bookkeeping.

use super::experiment;
use prefixsim::cache::{self, Breakpoint, Cache, Prompt};
use prefixsim::config::{ExperimentSpec, Release, Strategy};
use prefixsim::dist::Dist;
use prefixsim::model::latency::{self, Work};
use prefixsim::model::{simulate_detailed, workload};
use prefixsim::rng::{self, site};
use prefixsim::time::SimTime;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep, timeout, Instant};

/// (agent, request, send_us, cache_read, cache_write, uncached, output, cost in 1e-9 USD).
type Row = (u32, u32, u64, u64, u64, u64, u64, i64);

struct World {
    cache: Cache,
    rows: Vec<Row>,
}

fn row(agent: u32, request: u32, send_us: u64, u: &cache::Usage, out: u64, cost: f64) -> Row {
    let nano_usd = (cost * 1e9).round() as i64;
    (agent, request, send_us, u.cache_read, u.cache_write(), u.uncached, out, nano_usd)
}

type Flag = (watch::Sender<bool>, watch::Receiver<bool>);

/// What every agent task shares.
#[derive(Clone)]
struct Ctx {
    exp: Arc<ExperimentSpec>,
    strategy: Strategy,
    replication: u32,
    world: Arc<Mutex<World>>,
    start: Instant,
    /// Agent 0's first response began.
    first_began: Flag,
    /// Per agent: its first request finished.
    done: Vec<Flag>,
}

/// One agent as a task: gate, then turns of request, first token, decode, tool call.
async fn agent(ctx: Ctx, a: u32) {
    let Ctx { exp, strategy, replication, world, start, first_began, done } = ctx;
    let w = &exp.workload;
    let stream = |s| rng::stream(exp.seed, &[replication as u64, a as u64, s]);
    let (mut work, mut lat) = (stream(site::WORKLOAD), stream(site::LATENCY));
    let turns = w.turns.sample_u64(&mut work).max(1) as u32;
    let mut out = w.output_tokens.sample_u64(&mut work);
    let shared = workload::shared(&exp, 4, w.thinking);
    let shared_end = shared.prompt.len() - 1;
    let mut prompt: Prompt = shared.prompt;
    workload::push_task(&mut prompt, a as u64, w.task_tokens);
    let mut chain = workload::Chain::new(prompt, false);
    match strategy {
        Strategy::WaitFirst { max_wait_us, release: Release::OnReady }
            if a > 0 && max_wait_us > 0 =>
        {
            let mut rx = first_began.1.clone();
            let _ = timeout(Duration::from_micros(max_wait_us), rx.wait_for(|b| *b)).await;
        }
        Strategy::Sequential if a > 0 => {
            let mut rx = done[a as usize - 1].1.clone();
            let _ = rx.wait_for(|b| *b).await;
        }
        _ => {}
    }
    for turn in 0..turns {
        let now = SimTime::from_us((Instant::now() - start).as_micros() as u64);
        let mut bps = [Breakpoint { index: 0, ttl: exp.cache.ttl }; 3];
        let prompt = &chain.prompt;
        let n = workload::breakpoints(1, shared_end, prompt.len() - 1, exp.cache.ttl, &mut bps);
        let timing = {
            let mut world = world.lock().unwrap();
            let mut timing = None;
            let u = world
                .cache
                .serve(prompt, &bps[..n], now, |u| {
                    let work = Work {
                        prefill_tokens: u.uncached + u.cache_write(),
                        cached_tokens: u.cache_read,
                        output_tokens: out,
                    };
                    let t = latency::draw(&exp.latency, work, &mut lat);
                    timing = Some(t);
                    now + t.ttft + t.ready_delay
                })
                .unwrap();
            let cost = cache::cost_usd(&exp.model, &u, out);
            world.rows.push(row(a, turn, now.as_us(), &u, out, cost));
            timing.expect("anthropic serve asks for the ready time")
        };
        sleep(Duration::from_micros(timing.ttft.as_us())).await;
        if a == 0 && turn == 0 {
            first_began.0.send_replace(true);
        }
        sleep(Duration::from_micros(timing.decode.as_us())).await;
        if turn == 0 {
            done[a as usize].0.send_replace(true);
        }
        if turn + 1 < turns {
            let tool_us = w.tool_latency_us.sample_u64(&mut work);
            let result = w.tool_result_tokens.sample_u64(&mut work);
            let t = workload::TurnTokens { output: out, result, user: w.task_tokens };
            workload::push_turn(&mut chain, &exp, a as u64, turn as u64, t);
            out = w.output_tokens.sample_u64(&mut work);
            sleep(Duration::from_micros(tool_us)).await;
        }
    }
}

/// Run the reference on the current (paused) runtime; rows sorted by (agent, request).
async fn reference(exp: &ExperimentSpec, strategy: &Strategy, replication: u32) -> Vec<Row> {
    let exp = Arc::new(exp.clone());
    let mut cache = Cache::from_params(&exp.cache, &exp.model);
    if exp.workload.parent_warm {
        let (p, bps) = workload::parent_request(&exp);
        cache.serve(&p, &bps, SimTime::ZERO, |_| SimTime::ZERO).unwrap();
    }
    let world = Arc::new(Mutex::new(World { cache, rows: Vec::new() }));
    let start = Instant::now();
    let first_began = watch::channel(false);
    let done: Vec<_> = (0..exp.workload.agents).map(|_| watch::channel(false)).collect();
    let ctx = Ctx {
        exp: exp.clone(),
        strategy: strategy.clone(),
        replication,
        world: world.clone(),
        start,
        first_began,
        done,
    };
    let mut tasks = Vec::new();
    for a in 0..exp.workload.agents {
        tasks.push(tokio::spawn(agent(ctx.clone(), a)));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut rows = std::mem::take(&mut world.lock().unwrap().rows);
    rows.sort();
    rows
}

fn engine(exp: &ExperimentSpec, strategy: &Strategy, replication: u32) -> Vec<Row> {
    let d = simulate_detailed(exp, strategy, replication).unwrap();
    let mut rows: Vec<Row> = d
        .requests
        .iter()
        .map(|r| row(r.agent, r.request, r.send_us, &r.usage, r.output_tokens, r.cost_usd))
        .collect();
    rows.sort();
    rows
}

/// Seeded workloads whose every latency is a whole number of milliseconds: sizes are
/// multiples of 1,000 tokens (cached reads at 1,000 tokens/ms), prefill 20 tokens/ms, decode
/// 20 ms/token, tool latencies in whole ms.
fn whole_ms_experiment(seed: u64, agents: u32, warm: bool) -> ExperimentSpec {
    let mut exp = experiment(agents);
    exp.seed = seed;
    exp.workload.parent_warm = warm;
    exp.workload.task_tokens = 1_000;
    exp.workload.turns = Dist::Empirical(vec![1.0, 2.0, 3.0]);
    exp.workload.output_tokens = Dist::Empirical(vec![1_000.0, 2_000.0]);
    exp.workload.tool_result_tokens = Dist::Empirical(vec![1_000.0, 3_000.0, 6_000.0]);
    exp.workload.tool_latency_us = Dist::Empirical(vec![300e3, 1_000e3, 2_500e3]);
    exp.latency.overhead_us = Dist::Empirical(vec![200e3, 500e3, 900e3]);
    exp
}

#[tokio::test(start_paused = true)]
async fn the_tokio_reference_agrees_with_the_engine() {
    let strategies = [
        Strategy::Eager,
        Strategy::WaitFirst { max_wait_us: 5_000_000, release: Release::OnReady },
        Strategy::WaitFirst { max_wait_us: 1_500_000, release: Release::OnReady },
        Strategy::Sequential,
    ];
    let mut compared = 0;
    for seed in 1..=6u64 {
        for agents in [1, 3, 5] {
            let warm = seed % 3 == 0;
            let exp = whole_ms_experiment(seed, agents, warm);
            for s in &strategies {
                let want = engine(&exp, s, 0);
                let got = reference(&exp, s, 0).await;
                assert_eq!(got, want, "seed {seed}, {agents} agents, warm {warm}, {s:?}");
                compared += want.len();
            }
        }
    }
    assert!(compared > 200, "{compared} requests compared");
}
