//! Tests: the vLLM V1 step budget. Running decodes take one token each of a step's
//! `step_token_budget` before the prefills do, and a step carrying both costs both parts, so
//! a prefill beside running decodes reaches its first token later and the decodes it shares
//! steps with end later; `sglang` keeps decoding beside the prefill steps.

use crate::model::simulate;
use prefixsim::config::{self, ExperimentSpec, Strategy};
use prefixsim::model::{simulate_detailed, RequestRecord};

/// Two agents of one turn with `out` output tokens on a server prefilling one token a
/// microsecond (no step overhead, no caching: blocks larger than the prompt), decode steps
/// of 1 ms whatever the batch, a budget of 1,000 tokens.
fn two_agents(policy: &str, out: u64) -> ExperimentSpec {
    let text = format!(
        "[cache]\npolicy = \"{policy}\"\n\
         [workload]\nkind = \"fork\"\nagents = 2\nturns = 1\noutput_tokens = {out}\n\
         parent_tokens = 50000\nbrief_tokens = 0\ntask_tokens = 100\n\
         [server]\nprefill_tokens_per_s = 1000000\nstep_overhead = \"0s\"\n\
         step_token_budget = 1000\nblock_tokens = 1000000\ndecode_step = \"1ms\"\n\
         decode_per_ktok = \"0s\"\ndecode_per_running = \"0s\"\n"
    );
    config::resolve(&config::parse_table(&text, "s.toml").unwrap(), "s.toml").unwrap()
}

fn records(e: &ExperimentSpec, s: &Strategy) -> Vec<RequestRecord> {
    let mut r = simulate_detailed(e, s, 0).unwrap().requests;
    r.sort_by_key(|r| (r.agent, r.request));
    r
}

/// Agent 1 is sent at 60 ms, while agent 0 decodes (from its first token at T us, in steps
/// of 1 ms): it joins at the next step boundary, then prefills `budget - 1` tokens a step
/// beside agent 0's decode, each step `tokens + 1 ms`.
#[test]
fn a_prefill_beside_a_running_decode_shares_the_budget_and_the_step_time() {
    const STAGGER_US: u64 = 60_000;
    const OUT: u64 = 1_000;
    let stagger = Strategy::Stagger { interval_us: STAGGER_US };
    let r = records(&two_agents("vllm", OUT), &stagger);
    let t = r[0].prompt_tokens;
    assert_eq!(r[1].prompt_tokens, t);
    assert_eq!(r[0].ttft_us, t, "alone: ceil(T / 1000) steps of prefill only");
    // The step in flight at 60 ms ends at the next decode step boundary after it.
    let joins = t + (STAGGER_US - t).div_ceil(1_000) * 1_000;
    let steps = t.div_ceil(1_000 - 1);
    assert_eq!(r[1].send_us, STAGGER_US);
    assert_eq!(r[1].ttft_us, joins - STAGGER_US + t + steps * 1_000, "T = {t}");
    // Agent 0's decode: OUT steps of 1 ms, and the steps it shared carried all of T.
    assert_eq!(r[0].decode_us, OUT * 1_000 + t);
    assert_eq!(r[1].decode_us, OUT * 1_000);
    // The old rule (decode beside the steps), still SGLang's: the prefill is alone.
    let r = records(&two_agents("sglang", OUT), &stagger);
    assert_eq!((r[1].ttft_us, r[0].decode_us), (t, OUT * 1_000));
}

#[test]
fn gpu_time_is_the_step_loop_and_runs_are_deterministic() {
    // Agent 1 arrives while agent 0 decodes, so some step runs from 0 to the last decode's
    // end: that is the busy time, on one GPU.
    let e = two_agents("vllm", 100);
    let stagger = Strategy::Stagger { interval_us: 60_000 };
    let m = simulate(&e, &stagger, 0).unwrap();
    let r = records(&e, &stagger);
    assert!(r[0].ttft_us + r[0].decode_us > r[1].send_us);
    let end = r.iter().map(|r| r.send_us + r.ttft_us + r.decode_us).max().unwrap();
    assert_eq!(m.server.gpu_busy_us, end);
    assert_eq!(simulate(&e, &stagger, 0).unwrap(), m);
    for policy in ["vllm", "sglang"] {
        let e = two_agents(policy, 300);
        let a = simulate_detailed(&e, &Strategy::Eager, 3).unwrap();
        let b = simulate_detailed(&e, &Strategy::Eager, 3).unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{policy}");
    }
}
