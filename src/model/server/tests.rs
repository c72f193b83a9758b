//! The server's step loop against closed forms: decodes first within the budget (`vllm`),
//! decode beside the steps (`sglang`).

use super::*;
use crate::cache::{Block, Layer, Policy};

/// A server prefilling one token a microsecond with no step overhead, decode steps of
/// 1 ms whatever the batch, a budget of 100 tokens and no caching (blocks of 2^40 tokens).
fn params(policy: Policy) -> ServerParams {
    let mut p = crate::config::server::server_preset("llama-3.1-8b", policy).unwrap();
    (p.prefill_tokens_per_s, p.step_overhead_us, p.step_token_budget) = (1e6, 0, 100);
    (p.decode_step_us, p.decode_per_ktok_us, p.block_tokens) = (1_000, 0, 1 << 40);
    p
}

/// `d` requests of 1 token that decode for ever arrive at 0; when their prefill ends, a
/// request of `t` tokens arrives. Its steps until its first token, and that token's time.
fn steps_to_first_token(p: &ServerParams, d: u32, t: u64) -> (u64, SimTime) {
    let prompt = |tokens: u64, id: u64| {
        let mut prompt = Prompt::new("s", "m");
        prompt.push(Block::synthetic(Layer::Messages, tokens, id));
        prompt
    };
    let mut prompts: Vec<Prompt> = (0..d).map(|i| prompt(1, u64::from(i))).collect();
    prompts.push(prompt(t, 1 << 20));
    let of = |who: Requester| match who {
        Requester::Agent(a) => &prompts[a as usize],
        _ => unreachable!(),
    };
    let mut s = Server::default();
    s.reset(p);
    let mut at = None;
    for a in 0..d {
        let who = Requester::Agent(a);
        // `or` takes its argument eagerly: every decoder arrives.
        at = at.or(s.arrive(0, (who, 0, 1_000_000), of(who), t0()));
    }
    // The decoders' one prefill step (none without decoders), then the long request.
    let mut now = match at {
        Some(start) => s.step(p, 0, start, &of).expect("the decoders' prefill step"),
        None => t0(),
    };
    let who = Requester::Agent(d);
    let mut next = s.arrive(0, (who, 0, 1), of(who), now).unwrap_or(now);
    s.done.clear();
    let mut steps = 0;
    loop {
        (now, steps) = (next, steps + 1);
        let step = s.step(p, 0, now, &of);
        let first = |(d, part): &(Served, Reply)| d.who == who && *part != Reply::End;
        if steps > 1 && s.done.iter().any(first) {
            return (steps - 1, now);
        }
        s.done.clear();
        next = step.expect("a prefill is pending");
    }
}

fn t0() -> SimTime {
    SimTime::ZERO
}

#[test]
fn vllm_decodes_take_their_tokens_from_the_budget_before_prefill() {
    // With D running decodes a prefill of T tokens takes ceil(T / (budget - D)) steps, each
    // costing its prefill tokens plus one decode step (D > 0).
    let p = params(Policy::Vllm);
    let t = 1_000u64;
    for d in [0u64, 1, 7, 50, 99] {
        let (steps, first) = steps_to_first_token(&p, d as u32, t);
        let want = t.div_ceil(p.step_token_budget - d);
        assert_eq!(steps, want, "D = {d}");
        let decode_us = if d > 0 { want * p.decode_step_us } else { 0 };
        let start = d; // the decoders' prefill step: d tokens
        assert_eq!(first.as_us(), start + t + decode_us, "D = {d}");
    }
}

#[test]
fn sglang_keeps_decoding_beside_the_prefill_steps() {
    // Its rule as modelled: the budget is the prefill's whatever decodes.
    let p = params(Policy::Sglang);
    for d in [0u32, 1, 50] {
        let (steps, first) = steps_to_first_token(&p, d, 1_000);
        assert_eq!(steps, 10, "D = {d}");
        assert_eq!(first.as_us(), u64::from(d) + 1_000, "D = {d}");
    }
}

#[test]
fn a_request_arriving_in_a_stretch_of_decode_steps_joins_at_the_next_step() {
    // Two 1-token prompts decode 10 tokens each (steps of 1 ms from 2 us on, run as one
    // stretch); a 50-token request arriving at 2.5 steps in cuts it after the 3rd step, shares
    // the 4th (50 us of prefill + 1 ms), so the decoders end 50 us later than alone.
    let p = params(Policy::Vllm);
    let prompt = |tokens: u64, id: u64| {
        let mut prompt = Prompt::new("s", "m");
        prompt.push(Block::synthetic(Layer::Messages, tokens, id));
        prompt
    };
    let prompts = [prompt(1, 0), prompt(1, 1), prompt(50, 2)];
    let of = |who: Requester| match who {
        Requester::Agent(a) => &prompts[a as usize],
        _ => unreachable!(),
    };
    let at = |us: u64| SimTime::from_us(us);
    let mut s = Server::default();
    s.reset(&p);
    for a in 0..2 {
        s.arrive(0, (Requester::Agent(a), 0, 10), of(Requester::Agent(a)), t0());
    }
    assert_eq!(s.step(&p, 0, t0(), &of), Some(at(2)), "the decoders' prefill step");
    assert_eq!(s.step(&p, 0, at(2), &of), Some(at(10_002)), "one stretch of 10 steps");
    let late = Requester::Agent(2);
    assert_eq!(s.arrive(0, (late, 0, 1), of(late), at(2_502)), Some(at(3_002)), "cut");
    assert_eq!(s.step(&p, 0, at(10_002), &of), None, "the stretch's old end is stale");
    let mut now = at(3_002);
    let mut ends = Vec::new();
    loop {
        let next = s.step(&p, 0, now, &of);
        ends.extend(s.done.drain(..).filter(|d| d.1 == Reply::End).map(|d| (d.0.who, now)));
        match next {
            Some(next) => now = next,
            None => break,
        }
    }
    let end_of = |a: u32| ends.iter().find(|e| e.0 == Requester::Agent(a)).map(|e| e.1);
    assert_eq!(end_of(0), Some(at(10_052)));
    assert_eq!(end_of(1), Some(at(10_052)));
}
