//! Tests: OpenAI's overflow as a swept assumption (`openai.overflow_probability`,
//! `openai.overflow_warm_probability`), `prompt_cache_key` (`openai.cache_key`), and Gemini
//! explicit caching as clients use it (one `cachedContents.create`, then requests naming the
//! object): docs/providers.md, sections 1, 2 and 7. Times are microseconds.

use prefixsim::cache::{Block, Cache, Layer, Prompt, Route, Usage};
use prefixsim::config::{
    parse_table, preset, resolve, CacheKeyMode, ExperimentSpec, GeminiMode, HostedParams,
    ModelParams, OpenAiContract, OpenAiParams, Policy, Release, Strategy,
};
use prefixsim::metrics::RunMetrics;
use prefixsim::time::{SimTime, US_PER_S};

fn at(us: u64) -> SimTime {
    SimTime::from_us(us)
}

fn instant(now: u64) -> impl FnOnce(&Usage) -> SimTime {
    move |_| at(now + 1)
}

fn fifty_k(m: &ModelParams) -> Prompt {
    let mut p = Prompt::new("ws", &m.name);
    p.push(Block::synthetic(Layer::Messages, 50_000, 1));
    p.push(Block::synthetic(Layer::Messages, 100, 2));
    p
}

/// A classic-contract cache with `edit` applied to its `[openai]`.
fn openai(edit: impl FnOnce(&mut OpenAiParams)) -> (Cache, ModelParams) {
    let m = preset("gpt-5.4").unwrap();
    let mut h = HostedParams {
        openai: OpenAiParams::defaults(OpenAiContract::Classic),
        ..HostedParams::default()
    };
    edit(&mut h.openai);
    (Cache::new(Policy::OpenAi, &m, None).with_hosted(&h), m)
}

/// The reads of 16 requests one second apart on one prefix, each of `route(i)`.
fn burst(c: &mut Cache, p: &Prompt, route: impl Fn(u64) -> Route) -> Vec<u64> {
    (0..16u64)
        .map(|i| {
            let now = i * US_PER_S;
            c.serve_routed(p, &[], (at(now), false, route(i)), instant(now)).unwrap().cache_read
        })
        .collect()
}

fn draws(overflow_draw: f64, warm_draw: f64) -> Route {
    Route { agent: None, overflow_draw, warm_draw }
}

/// `overflow_probability = 1`, cold overflow machines: the 16th request misses; at 0 it
/// never overflows and hits; a draw at or above the probability keeps a request home.
#[test]
fn the_overflow_probability_decides_whether_the_16th_request_leaves_home() {
    let (mut c, m) = openai(|o| o.overflow_probability = 1.0);
    let reads = burst(&mut c, &fifty_k(&m), |_| draws(0.99, 0.0));
    assert_eq!((reads[0], reads[15]), (0, 0), "{reads:?}");
    assert!(reads[1..15].iter().all(|&r| r == 50_048), "{reads:?}");

    let (mut c, m) = openai(|o| o.overflow_probability = 0.0);
    let reads = burst(&mut c, &fifty_k(&m), |_| draws(0.0, 0.0));
    assert_eq!(reads[15], 50_048, "never overflows: {reads:?}");

    let (mut c, m) = openai(|o| o.overflow_probability = 0.5);
    let stays = burst(&mut c, &fifty_k(&m), |_| draws(0.5, 0.0));
    assert_eq!(stays[15], 50_048, "a draw of 0.5 is not below 0.5: stays home");
    let (mut c, m) = openai(|o| o.overflow_probability = 0.5);
    let leaves = burst(&mut c, &fifty_k(&m), |_| draws(0.49, 0.0));
    assert_eq!(leaves[15], 0, "a draw of 0.49 overflows to a cold machine");
}

/// `overflow_warm_probability = 1`: the overflow machine holds what home holds, so the 16th
/// request hits although it left home.
#[test]
fn a_warm_overflow_machine_reads_the_home_prefix() {
    let (mut c, m) = openai(|o| {
        o.overflow_probability = 1.0;
        o.overflow_warm_probability = 1.0;
    });
    let reads = burst(&mut c, &fifty_k(&m), |_| draws(0.0, 0.99));
    assert!(reads[1..].iter().all(|&r| r == 50_048), "{reads:?}");
    let (mut c, m) = openai(|o| {
        o.overflow_probability = 1.0;
        o.overflow_warm_probability = 0.5;
    });
    assert_eq!(burst(&mut c, &fifty_k(&m), |_| draws(0.0, 0.5))[15], 0, "0.5 is not warm");
}

/// `prompt_cache_key`: different keys route to different machines (the second agent misses
/// what the first wrote); one key shares; sharded keys share within a shard.
#[test]
fn cache_keys_split_routes_by_mode() {
    let read = |mode: CacheKeyMode, shards: u32, second: u32| {
        let (mut c, m) = openai(|o| (o.cache_key, o.cache_key_shards) = (mode, shards));
        let p = fifty_k(&m);
        let route = |a| Route { agent: Some(a), ..Route::default() };
        c.serve_routed(&p, &[], (at(0), false, route(0)), instant(0)).unwrap();
        c.serve_routed(&p, &[], (at(10), false, route(second)), instant(10)).unwrap().cache_read
    };
    assert_eq!(read(CacheKeyMode::None, 1, 1), 50_048);
    assert_eq!(read(CacheKeyMode::Shared, 1, 1), 50_048);
    assert_eq!(read(CacheKeyMode::PerAgent, 1, 1), 0, "agent 1's key has its own machine");
    assert_eq!(read(CacheKeyMode::PerAgent, 1, 0), 50_048, "agent 0 again: its machine");
    assert_eq!(read(CacheKeyMode::Sharded, 2, 2), 50_048, "2 mod 2 = 0: agent 0's key");
    assert_eq!(read(CacheKeyMode::Sharded, 2, 3), 0, "3 mod 2 = 1: another key");
}

/// Each key has its own overflow window: 16 requests over two keys stay under 15 a key.
#[test]
fn each_key_counts_its_own_window() {
    let (mut c, m) = openai(|o| {
        (o.cache_key, o.cache_key_shards) = (CacheKeyMode::Sharded, 2);
        o.overflow_probability = 1.0;
    });
    let p = fifty_k(&m);
    let reads = burst(&mut c, &p, |i| Route { agent: Some(i as u32 % 2), ..Route::default() });
    let cold: Vec<usize> = (0..16).filter(|&i| reads[i] == 0).collect();
    assert_eq!(cold, [0, 1], "one cold start a key, no overflow: {reads:?}");
}

fn experiment(text: &str) -> ExperimentSpec {
    resolve(&parse_table(text, "h.toml").unwrap(), "h.toml").unwrap()
}

fn run(text: &str, strategy: &Strategy) -> RunMetrics {
    crate::model::simulate(&experiment(text), strategy, 0).unwrap()
}

const FORK: &str = "replications = 1\n[workload]\nkind = \"fork\"\nagents = 6\nparent_tokens = \
                    50000\nbrief_tokens = 2000\ntask_tokens = 200\nturns = \"const(1)\"\n\
                    output_tokens = \"const(100)\"\n";

/// In a fan-out of one turn each, per-agent keys give every agent a cold machine: a hold
/// reads nothing; one shared key (no overflow) reads the prefix on every held agent.
#[test]
fn per_agent_keys_read_nothing_in_a_held_fan_out_and_a_shared_key_reads_it() {
    let hold = Strategy::WaitFirst { max_wait_us: 60 * US_PER_S, release: Release::OnReady };
    let text = |key: &str| {
        format!("model = \"gpt-5.4\"\n{FORK}[openai]\ncache_key = \"{key}\"\noverflow_probability = 0\n")
    };
    assert_eq!(run(&text("per-agent"), &hold).tokens.cache_read, 0);
    let shared = run(&text("shared"), &hold);
    assert_eq!(shared.requests_with_hit, 5, "agents 1-5 read agent 0's prefix");
}

/// Gemini explicit under `eager`: one create call, one object billed once (input price plus
/// one TTL of storage), every agent's request reads it, no second create; the cost is the
/// closed form `P x input + P x storage x TTL + N x (P x cached + rest x input + out x
/// output)`.
#[test]
fn explicit_caching_creates_one_object_whatever_the_strategy() {
    let text = format!("model = \"gemini-3.1-pro-preview\"\n{FORK}[gemini]\nmode = \"explicit\"\n");
    let m = preset("gemini-3.1-pro-preview").unwrap();
    let mut costs = vec![];
    for s in [Strategy::Eager, Strategy::Prewarm, Strategy::Sequential] {
        let r = run(&text, &s);
        let p = r.tokens.cache_write_5m;
        assert_eq!(p, 52_000, "the object is the shared prefix: parent and brief");
        assert_eq!(r.tokens.cache_read, 6 * p, "{s:?}: all six agents read the one object");
        assert_eq!((r.redundant_writes, r.requests), (0, 7), "{s:?}: six requests and the create");
        let per_m = |usd: f64, tokens: u64| usd * tokens as f64 / 1e6;
        let expected = per_m(m.input_usd_per_mtok, p + r.tokens.uncached)
            + per_m(m.storage_usd_per_mtok_hour, p)
            + per_m(m.input_usd_per_mtok * m.read_multiplier, 6 * p)
            + per_m(m.output_usd_per_mtok, 6 * 100);
        assert!((r.cost_usd - expected).abs() < 1e-9, "{s:?}: {} vs {expected}", r.cost_usd);
        assert_eq!(r.tokens.uncached, 6 * 200, "{s:?}: each agent's own task");
        costs.push(r.cost_usd);
    }
    assert!(costs.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-12), "{costs:?}");
}

/// The agents wait for the create call: under `eager` no agent's first request goes before
/// the object is readable (their launch wait is the create call's latency).
#[test]
fn agents_wait_for_the_create_call_as_launch_wait() {
    let text = format!("model = \"gemini-2.5-flash\"\n{FORK}[gemini]\nmode = \"explicit\"\n");
    let r = run(&text, &Strategy::Eager);
    assert!(r.launch_wait_us.values().iter().all(|&w| w > 0), "{:?}", r.launch_wait_us);
    let implicit = run("model = \"gemini-2.5-flash\"\nreplications = 1\n", &Strategy::Eager);
    assert!(implicit.launch_wait_us.values().iter().all(|&w| w == 0));
    let h = HostedParams::default();
    assert_eq!(h.gemini.mode, GeminiMode::Implicit);
}
