//! The self-hosted `vllm` and `sglang` policies: the GPU block cache and the server model's
//! closed forms (docs/providers.md sections 3-7).

use crate::model::simulate;
use prefixsim::cache::{Block, GpuCache, Layer, Prompt};
use prefixsim::config::{self, ExperimentSpec, Strategy};
use prefixsim::model::{simulate_detailed, RequestRecord};
use prefixsim::time::SimTime;

/// An instant `us` microseconds into the run.
fn t(us: u64) -> SimTime {
    SimTime::from_us(us)
}

/// An experiment from TOML text (every other key at its default).
fn exp(text: &str) -> ExperimentSpec {
    config::resolve(&config::parse_table(text, "s.toml").unwrap(), "s.toml").unwrap()
}

fn resolve_err(text: &str) -> String {
    let t = config::parse_table(text, "s.toml").unwrap();
    config::resolve(&t, "s.toml").unwrap_err().to_string()
}

/// A fork fan-out on a server that prefills one token a microsecond with no step overhead,
/// so that times are token counts. One turn, one output token.
fn fanout(policy: &str, agents: u32, server: &str) -> ExperimentSpec {
    exp(&format!(
        "[cache]\npolicy = \"{policy}\"\n\
         [workload]\nkind = \"fork\"\nagents = {agents}\nturns = 1\noutput_tokens = 1\n\
         parent_tokens = 50000\nbrief_tokens = 0\ntask_tokens = 100\n\
         [server]\nprefill_tokens_per_s = 1000000\nstep_overhead = \"0s\"\n{server}"
    ))
}

/// The request records of one run, by agent.
fn records(e: &ExperimentSpec, s: &Strategy) -> Vec<RequestRecord> {
    let mut r = simulate_detailed(e, s, 0).unwrap().requests;
    r.sort_by_key(|r| (r.agent, r.request));
    r
}

fn prompt(ids: &[(u64, u64)]) -> Prompt {
    let mut p = Prompt::new("s", "m");
    for &(id, tokens) in ids {
        p.push(Block::synthetic(Layer::Messages, tokens, id));
    }
    p
}

#[test]
fn vllm_caches_full_16_token_blocks_only() {
    // 50,008 tokens: 3,125 full blocks (50,000 tokens) are cached, the last 8 never.
    let p = prompt(&[(1, 50_000), (2, 8)]);
    let mut c = GpuCache::default();
    c.reset(16, 1_000_000);
    c.hold(&p);
    c.computed(&p, 0, 50_008, t(0));
    c.release(&p, t(0));
    let longer = prompt(&[(1, 50_000), (2, 8), (3, 100)]);
    assert_eq!(c.hit(&longer), 50_000, "3,125 blocks; the partial block is not readable");
    // A request of exactly the cached prompt still recomputes its last token: 50,007 -> 50,000.
    assert_eq!(c.hit(&p), 50_000);
}

#[test]
fn sglang_shares_to_the_token() {
    let p = prompt(&[(1, 50_000), (2, 8)]);
    let mut c = GpuCache::default();
    c.reset(1, 1_000_000);
    c.hold(&p);
    c.computed(&p, 0, 50_008, t(0));
    c.release(&p, t(0));
    assert_eq!(c.hit(&prompt(&[(1, 50_000), (2, 8), (3, 100)])), 50_008);
    assert_eq!(c.hit(&p), 50_007, "the last token is recomputed for the first output token");
}

#[test]
fn lru_skips_blocks_a_running_request_holds() {
    let (a, b, c) = (prompt(&[(1, 60)]), prompt(&[(2, 40)]), prompt(&[(3, 50)]));
    let mut cache = GpuCache::default();
    cache.reset(1, 100);
    cache.hold(&a);
    cache.computed(&a, 0, 60, t(0));
    // `a`'s decode runs until t = 1,000: its blocks stay held after its prefill.
    cache.release(&a, t(1_000));
    cache.hold(&b);
    cache.computed(&b, 0, 40, t(1));
    cache.release(&b, t(1));
    // `a` is the least recently used, but held: `b` goes instead, and 10 tokens over-commit.
    cache.hold(&c);
    cache.computed(&c, 0, 50, t(2));
    assert_eq!(cache.hit(&prompt(&[(1, 60), (9, 1)])), 60, "held blocks survive");
    assert_eq!(cache.hit(&prompt(&[(2, 40), (9, 1)])), 0, "the unheld blocks were evicted");
    assert_eq!((cache.evicted_tokens(), cache.overcommit_peak()), (40, 10));
    // Once `a`'s decode ends, its blocks are the LRU victims.
    cache.release(&c, t(2));
    let d = prompt(&[(4, 30)]);
    cache.hold(&d);
    cache.computed(&d, 0, 30, t(1_001));
    assert_eq!(cache.hit(&prompt(&[(1, 60), (9, 1)])), 20, "40 tokens from a's end went");
}

#[test]
fn vllm_blocks_are_readable_when_computed_before_the_writers_first_token() {
    // Steps of 1,010 tokens (1,010 us), shared equally: agent 1 arrives at 1,500 us, during
    // the second step, and is admitted at the third (2,020 us). vLLM: agent 0's blocks of
    // that step (505 tokens, scheduled before agent 1) count too: 2,525 tokens, of which 157
    // full blocks (2,512 tokens) are readable.
    let server = "prefill_sharing = \"processor-sharing\"\nstep_token_budget = 1010\n";
    let stagger = Strategy::Stagger { interval_us: 1_500 };
    let r = records(&fanout("vllm", 2, server), &stagger);
    assert_eq!((r[0].usage.cache_read, r[1].usage.cache_read), (0, 2_512));
    assert!(r[1].send_us < r[0].send_us + r[0].ttft_us, "read before the writer's first token");
    // SGLang: a chunk is readable once computed (one step behind): 2,020 tokens, to the token.
    let r = records(&fanout("sglang", 2, server), &stagger);
    assert_eq!(r[1].usage.cache_read, 2_020);
}

#[test]
fn fcfs_chunked_two_equal_prefills_finish_at_t_and_2t() {
    // Blocks larger than the prompt: nothing is readable, so the two prefills are equal. A
    // budget dividing the prompt (50,100 tokens = 6 steps of 8,350): agent 0's last step is
    // its own. (Otherwise agent 1 starts in that step and agent 0's first token comes at the
    // step's end: `ceil(P / B)` full steps.) With decode beside the steps (`sglang`): T, 2T.
    let server = "block_tokens = 1000000\nstep_token_budget = 8350\ndecode_per_ktok = \"0s\"\n";
    let r = records(&fanout("sglang", 2, server), &Strategy::Eager);
    let t = r[0].prompt_tokens; // one token a microsecond
    assert_eq!(r[1].prompt_tokens, t);
    assert_eq!((r[0].ttft_us, r[1].ttft_us), (t, 2 * t));
    // `vllm`: agent 0's one decode token shares agent 1's first step, taking 1 token of the
    // budget (so a seventh step of 1 token) and adding its decode step (6 ms): 2T + 6 ms.
    let r = records(&fanout("vllm", 2, server), &Strategy::Eager);
    assert_eq!((r[0].ttft_us, r[1].ttft_us), (t, 2 * t + 6_000));
}

#[test]
fn processor_sharing_two_equal_prefills_each_take_twice_as_long() {
    let server = "block_tokens = 1000000\nprefill_sharing = \"processor-sharing\"\n";
    let one = records(&fanout("vllm", 1, server), &Strategy::Eager);
    let two = records(&fanout("vllm", 2, server), &Strategy::Eager);
    let t = one[0].ttft_us;
    assert_eq!(t, one[0].prompt_tokens);
    assert_eq!((two[0].ttft_us, two[1].ttft_us), (2 * t, 2 * t));
}

#[test]
fn one_replica_computes_a_cold_prefix_once_under_fcfs() {
    // 16 eager agents on a cold 50k prefix: the queue holds them, each reads the prefix.
    let e = fanout("vllm", 16, "");
    let r = records(&e, &Strategy::Eager);
    assert_eq!(r[0].usage.cache_read, 0);
    assert!(r[1..].iter().all(|r| r.usage.cache_read >= 50_000), "{:?}", r[1].usage);
    // Every TTFT is shaped by the one shared prefill: at least agent 0's.
    assert!(r[1..].iter().all(|x| x.send_us + x.ttft_us >= r[0].ttft_us));
}

#[test]
fn holding_wins_back_ttft_and_gpu_time_under_processor_sharing() {
    let e = fanout("vllm", 16, "prefill_sharing = \"processor-sharing\"\n");
    let hold = Strategy::WaitFirst { max_wait_us: 60_000_000, release: config::Release::OnReady };
    let (eager, held) = (records(&e, &Strategy::Eager), records(&e, &hold));
    // Eager: all 16 prefill the 50k prefix at once, each at 1/16 of the server (reading at
    // most what the earlier ones computed in the first step): ~16 x 50k us.
    let slow = |r: &RequestRecord| r.usage.cache_read <= 8_192 && r.ttft_us > 600_000;
    assert!(eager.iter().all(slow), "{eager:?}");
    // Held: agent 0 computes it alone; the rest read it and, after the step in flight (agent
    // 0's one decode step: 6 ms + 2 ms for its 50k of context), prefill their own 100 tokens.
    assert!(held[1..].iter().all(|r| r.usage.cache_read >= 50_000 && r.ttft_us < 12_000));
    let (me, mh) = (simulate(&e, &Strategy::Eager, 0).unwrap(), simulate(&e, &hold, 0).unwrap());
    assert!(me.server.gpu_busy_us > 10 * mh.server.gpu_busy_us / 2, "{me:?} {mh:?}");
    assert!(me.cost_usd > mh.cost_usd);
}

#[test]
fn prefix_aware_routing_keeps_a_fan_out_on_one_replica() {
    let written = |router: &str| {
        let e = fanout("vllm", 16, &format!("replicas = 4\nrouter = \"{router}\"\n"));
        simulate(&e, &Strategy::Eager, 0).unwrap().tokens.cache_write_5m
    };
    let (aware, rr) = (written("prefix-aware"), written("round-robin"));
    // Round-robin computes the prefix once per replica, prefix-aware once.
    assert!(aware < 60_000 + 16 * 100, "{aware}");
    assert!(rr > 4 * 50_000, "{rr}");
}

#[test]
fn gpu_cost_is_busy_gpu_time_at_the_hourly_price() {
    // One request, one output token: busy = its prefill (P us) + one decode step (6 ms + the
    // context term), on 4 GPUs at $3.60 an hour = $0.000001 per GPU-millisecond.
    let e = fanout(
        "vllm",
        1,
        "gpus_per_replica = 4\ngpu_usd_per_hour = 3.6\ndecode_per_ktok = \"0s\"\n",
    );
    let m = simulate(&e, &Strategy::Eager, 0).unwrap();
    let r = &records(&e, &Strategy::Eager)[0];
    let busy_us = r.ttft_us + 6_000;
    assert_eq!(r.decode_us, 6_000);
    assert_eq!(m.server.gpu_busy_us, 4 * busy_us);
    let usd = 4.0 * busy_us as f64 / 3.6e9 * 3.6;
    assert!((m.cost_usd - usd).abs() < 1e-12, "{} vs {usd}", m.cost_usd);
    assert_eq!(m.server.gpu_provisioned_us, 4 * m.makespan_us);
}

#[test]
fn decode_slows_with_the_running_batch() {
    let server = "decode_per_running = \"1ms\"\ndecode_per_ktok = \"0s\"\n";
    // `sglang`: the batch as it stands at each first token. Agent 0's comes first: it
    // decodes alone (6 + 1 ms a token), agent 1 beside it (6 + 2 ms).
    let r = records(&fanout("sglang", 2, server), &Strategy::Eager);
    assert_eq!((r[0].decode_us, r[1].decode_us), (7_000, 8_000));
    // `vllm`: the batch as it runs: both decode in the same step (6 + 2 ms).
    let r = records(&fanout("vllm", 2, server), &Strategy::Eager);
    assert_eq!((r[0].decode_us, r[1].decode_us), (8_000, 8_000));
}

#[test]
fn server_keys_are_checked_with_did_you_mean() {
    let msg = resolve_err("[cache]\npolicy = \"vllm\"\n[server]\nreplica = 2\n");
    assert!(msg.contains("server.replica") && msg.contains("server.replicas"), "{msg}");
    let msg = resolve_err("[server]\nrouter = \"random\"\n");
    assert!(msg.contains("server.router") && msg.contains("prefix-aware"), "{msg}");
    let msg = resolve_err("[server]\nmodel = \"llama-3.1-8\"\n");
    assert!(msg.contains("llama-3.1-8b"), "{msg}");
    let msg = resolve_err("[cache]\npolicy = \"sglang\"\n[rate_limits]\nrpm = 50\n");
    assert!(msg.contains("rate_limits") && msg.contains("self-hosted"), "{msg}");
    let msg = resolve_err("[cache]\npolicy = \"vlm\"\n");
    assert!(msg.contains("\"vllm\""), "{msg}");
}

#[test]
fn server_presets_set_the_rates_and_render_round_trip() {
    let e = exp("[cache]\npolicy = \"sglang\"\n[server]\nmodel = \"llama-3.1-70b\"\n");
    let s = e.server.as_ref().unwrap();
    assert_eq!((s.gpus_per_replica, s.prefill_tokens_per_s, s.block_tokens), (4, 10_000.0, 1));
    let again = config::render(&e);
    assert_eq!(config::resolve(&config::parse_table(&again, "r").unwrap(), "r").unwrap(), e);
    assert!(exp("[server]\nreplicas = 2\n").server.is_none(), "anthropic ignores [server]");
}

/// A decode step of years (a duration key at its extreme) ends past any horizon: the run stops
/// with exit 2 naming the horizon, never a panic or a time that wraps round to the past.
#[test]
fn a_decode_step_of_years_stops_at_the_horizon() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for policy in ["vllm", "sglang"] {
        for key in ["decode_step", "decode_per_running", "decode_per_ktok"] {
            let out = crate::common::bin()
                .arg("run")
                .arg(root.join("experiments/default.toml"))
                .args(["--set", &format!("cache.policy={policy}")])
                .args(["--set", &format!("server.{key}=99999999h"), "--set", "replications=1"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{policy} {key}: {err}");
            assert!(err.contains("horizon") && !err.contains("panicked"), "{policy} {key}: {err}");
        }
    }
}
