//! Tests: the prefix cache of docs/cache.md (closed forms from the docs; an entry's life and the
//! LRU in `lifecycle`, properties in `props`).
//!
//! "The docs" are Anthropic's prompt-caching page,
//! https://platform.claude.com/docs/en/build-with-claude/prompt-caching, and prices its pricing
//! page, https://platform.claude.com/docs/en/about-claude/pricing.
//!
//! Conventions: "block k" in a comment is 1-based as in the docs' examples; indices in code are
//! 0-based, so block 35 is index 34. Times are microseconds.

use prefixsim::cache::{
    cost_usd, reference_prefix_key, Block, Breakpoint, Cache, CacheError, Digest, EntryStore,
    Layer, Policy, Prompt, State, Ttl, Usage, WriteOutcome,
};
use prefixsim::config::{preset, preset_names, ModelParams};
use prefixsim::replay::body::request_from_json;
use prefixsim::time::{SimTime, US_PER_MIN, US_PER_S};
use proptest::prelude::*;
use serde_json::json;

mod lifecycle;
mod props;

/// A model whose every prefix is cacheable (minimum 1 token), Sonnet-4.5 prices.
fn any_length_model() -> ModelParams {
    ModelParams { min_cacheable_tokens: 1, ..preset("claude-sonnet-4.5").unwrap() }
}

/// A prompt of synthetic message blocks: `ids[i]` is block i's content, `tokens` each.
fn prompt_of(model: &str, ids: &[u64], tokens: u64) -> Prompt {
    let mut p = Prompt::new("ws", model);
    for &id in ids {
        p.push(Block::synthetic(Layer::Messages, tokens, id));
    }
    p
}

fn bp(index: usize) -> Breakpoint {
    Breakpoint { index, ttl: Ttl::FiveMin }
}

fn bp1h(index: usize) -> Breakpoint {
    Breakpoint { index, ttl: Ttl::OneHour }
}

/// Ready one microsecond after it is sent (an instant first token).
fn instant(now: u64) -> impl FnOnce(&Usage) -> SimTime {
    move |_| at(now + 1)
}

/// The instant `us` microseconds after the start.
fn at(us: u64) -> SimTime {
    SimTime::from_us(us)
}

// ---------------------------------------------------------------- lookback (the docs: 20 blocks)

/// The docs' example: turn 3 has 35 blocks, its breakpoint on block 35; the lookback checks
/// blocks 35 down to 16 (20 positions counting the breakpoint). A turn-2 entry at block 15 is
/// "one position outside the window, so there is no cache hit"; one at block 16 is a hit.
/// Each block is 100 tokens, the model minimum is 1,024 (Sonnet 4.5): both prefixes pass it.
#[test]
fn lookback_window_is_20_positions_counting_the_breakpoint() {
    let model = preset("claude-sonnet-4.5").unwrap();
    let ids: Vec<u64> = (0..35).collect();
    let turn3 = prompt_of(&model.name, &ids, 100);
    for (written_block, expect_read) in [(15usize, 0u64), (16, 1_600)] {
        let mut cache = Cache::new(Policy::Anthropic, &model, None);
        let turn2 = prompt_of(&model.name, &ids[..written_block], 100);
        cache.serve(&turn2, &[bp(written_block - 1)], at(0), instant(0)).unwrap();
        let u = cache.serve(&turn3, &[bp(34)], at(US_PER_S), instant(US_PER_S)).unwrap();
        assert_eq!(u.cache_read, expect_read, "prior write at block {written_block}");
        // Whatever is not read is written up to the breakpoint, the last block: 3,500 in all.
        assert_eq!(u.cache_write_5m, 3_500 - expect_read);
        assert_eq!(u.uncached, 0);
    }
}

/// The lookback resumes at the next (earlier) breakpoint: with a second breakpoint on block 15,
/// the turn-2 entry at block 15 is found although it is outside the last breakpoint's window.
#[test]
fn lookback_resumes_from_an_earlier_breakpoint() {
    let model = any_length_model();
    let ids: Vec<u64> = (0..35).collect();
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    cache.serve(&prompt_of(&model.name, &ids[..15], 100), &[bp(14)], at(0), instant(0)).unwrap();
    let u = cache.serve(&prompt_of(&model.name, &ids, 100), &[bp(14), bp(34)], at(10), instant(10));
    let u = u.unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m, u.uncached), (1_500, 2_000, 0));
}

// ---------------------------------------------------------------- minimum length

/// Sonnet 4.5's minimum is 1,024 tokens (the docs' minimum cacheable lengths). A 1,000-token
/// prompt is "processed without caching": both counters 0, twice in a row (nothing was written).
/// At exactly 1,024 tokens the prefix is cacheable: written once, then read.
#[test]
fn below_the_minimum_both_counters_are_zero() {
    let model = preset("claude-sonnet-4.5").unwrap();
    assert_eq!(model.min_cacheable_tokens, 1_024);
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let short = prompt_of(&model.name, &[1, 2], 500); // 1,000 tokens
    for t in [0, 10 * US_PER_S] {
        let u = cache.serve(&short, &[bp(1)], at(t), instant(t)).unwrap();
        assert_eq!((u.cache_read, u.cache_write(), u.uncached), (0, 0, 1_000));
    }
    let exact = prompt_of(&model.name, &[1, 2], 512); // 1,024 tokens
    let u = cache.serve(&exact, &[bp(1)], at(20 * US_PER_S), instant(20 * US_PER_S)).unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m, u.uncached), (0, 1_024, 0));
    let u = cache.serve(&exact, &[bp(1)], at(30 * US_PER_S), instant(30 * US_PER_S)).unwrap();
    assert_eq!((u.cache_read, u.cache_write(), u.uncached), (1_024, 0, 0));
}

// ---------------------------------------------------------------- mixed TTL (the docs)

/// The docs' A/B/C rule: A = tokens at the highest hit, B = the highest 1h breakpoint after A,
/// C = the last breakpoint; read A, 1h write B - A, 5m write C - B.
/// Blocks of 1,000 tokens; breakpoints 1h on blocks 2 and 4, 5m on block 6; 7 blocks.
/// Request 1 (cold): A = 0, B = 4,000, C = 6,000 -> read 0, 1h 4,000, 5m 2,000, uncached 1,000.
/// Request 2 shares blocks 1-2 only: A = 2,000 (block 2's 1h entry), B = 4,000, C = 6,000
/// -> read 2,000, 1h 2,000, 5m 2,000, uncached 1,000.
/// Its bill on Sonnet 4.5 ($3 in, $15 out per MTok), 100 output tokens:
/// 3e-6 * (1,000 + 1.25 * 2,000 + 2 * 2,000 + 0.1 * 2,000) + 15e-6 * 100 = 0.0231 + 0.0015.
#[test]
fn mixed_ttl_bill_follows_the_abc_rule() {
    let model = any_length_model();
    let bps = [bp1h(1), bp1h(3), bp(5)];
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let first = prompt_of(&model.name, &[1, 2, 3, 4, 5, 6, 7], 1_000);
    let u = cache.serve(&first, &bps, at(0), instant(0)).unwrap();
    assert_eq!(
        (u.cache_read, u.cache_write_1h, u.cache_write_5m, u.uncached),
        (0, 4_000, 2_000, 1_000)
    );
    let second = prompt_of(&model.name, &[1, 2, 13, 14, 15, 16, 17], 1_000);
    let u = cache.serve(&second, &bps, at(US_PER_S), instant(US_PER_S)).unwrap();
    assert_eq!(
        (u.cache_read, u.cache_write_1h, u.cache_write_5m, u.uncached),
        (2_000, 2_000, 2_000, 1_000)
    );
    let cost = cost_usd(&model, &u, 100);
    assert!((cost - (0.0231 + 0.0015)).abs() < 1e-12, "{cost}");
}

/// A 1h breakpoint after a 5m one is refused, naming the block.
#[test]
fn one_hour_after_five_minutes_is_an_input_error() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let p = prompt_of(&model.name, &[1, 2, 3], 100);
    let e = cache.serve(&p, &[bp(0), bp1h(2)], at(0), instant(0)).unwrap_err();
    assert_eq!(e, CacheError::TtlOrder { index: 2, previous: 0 });
    let e = cache.serve(&p, &[bp(0), bp(1), bp(2), bp(2), bp(2)], at(0), instant(0)).unwrap_err();
    assert_eq!(e, CacheError::TooManyBreakpoints { count: 5, index: 2 });
    assert!(e.to_string().contains("block 2"), "{e}");
}

// ---------------------------------------------------------------- keys: model and layers

/// Caches are per model: identical content for another model never hits.
#[test]
fn a_different_model_never_hits() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::EveryBlock, &model, None);
    cache.serve(&prompt_of("claude-sonnet-4.5", &[1, 2, 3], 100), &[], at(0), instant(0)).unwrap();
    let other = prompt_of("claude-opus-4.5", &[1, 2, 3], 100);
    let u = cache.serve(&other, &[], at(10), instant(10)).unwrap();
    assert_eq!(u.cache_read, 0);
    // And another scope (workspace) never hits either.
    let mut p = Prompt::new("other-workspace", "claude-sonnet-4.5");
    for id in [1, 2, 3] {
        p.push(Block::synthetic(Layer::Messages, 100, id));
    }
    assert_eq!(cache.peek(&p, &[], at(20)).unwrap().cache_read, 0);
}

fn body(
    tools: serde_json::Value,
    system: &str,
    tool_choice: serde_json::Value,
) -> serde_json::Value {
    json!({
        "model": "claude-sonnet-4.5",
        "tools": tools,
        "system": system,
        "tool_choice": tool_choice,
        "messages": [
            {"role": "user", "content": "Fix the failing test in src/lib.rs, please."},
            {"role": "assistant", "content": [{"type": "text", "text": "Looking at it now."}]},
            {"role": "user", "content": [{"type": "text", "text": "Thanks, go ahead."}]}
        ]
    })
}

fn tools() -> serde_json::Value {
    json!([
        {"name": "Bash", "description": "Run a shell command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
        {"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    ])
}

/// Serve `first`, then `second` 1 s later under `every-block`; return (second's usage, the
/// token count of each of second's first two blocks: tools, system).
fn serve_pair(first: &serde_json::Value, second: &serde_json::Value) -> (Usage, u64, u64) {
    let mut cache = Cache::new(Policy::EveryBlock, &any_length_model(), None);
    let (p1, _) = request_from_json(first).unwrap();
    cache.serve(&p1, &[], at(0), instant(0)).unwrap();
    let (p2, _) = request_from_json(second).unwrap();
    let u = cache.serve(&p2, &[], at(US_PER_S), instant(US_PER_S)).unwrap();
    (u, p2.prefix_tokens(0), p2.prefix_tokens(1))
}

/// `tool_choice` is folded in before the first message: the tools and system blocks still
/// hit (read = their tokens), every message misses.
#[test]
fn a_tool_choice_change_keeps_the_tools_and_system_hits() {
    let a = body(tools(), "You are a coding agent.", json!({"type": "auto"}));
    let b = body(tools(), "You are a coding agent.", json!({"type": "none"}));
    let (u, _, tools_and_system) = serve_pair(&a, &b);
    assert_eq!(u.cache_read, tools_and_system);
    assert!(u.cache_write() > 0);
}

/// Tool definitions are the first layer: a changed tool invalidates everything.
#[test]
fn a_tool_definition_change_misses_everything() {
    let a = body(tools(), "You are a coding agent.", json!({"type": "auto"}));
    let mut t = tools();
    t.as_array_mut().unwrap().truncate(1); // drop Read
    let b = body(t, "You are a coding agent.", json!({"type": "auto"}));
    let (u, _, _) = serve_pair(&a, &b);
    assert_eq!(u.cache_read, 0);
}

/// A system edit invalidates system and messages, not the tools block.
#[test]
fn a_system_edit_keeps_the_tools_hit() {
    let a = body(tools(), "You are a coding agent.", json!({"type": "auto"}));
    let b = body(tools(), "You are a coding agent. Read-only mode.", json!({"type": "auto"}));
    let (u, tools_only, _) = serve_pair(&a, &b);
    assert_eq!(u.cache_read, tools_only);
    assert!(tools_only > 0);
}

// ---------------------------------------------------------------- every-block (the seed demo)

/// The seed's loop: the longest ready prefix; once the match breaks, later equal blocks do not
/// count (blocks 1, 2 equal, block 3 differs, blocks 4-5 equal in content: read = 2 blocks).
#[test]
fn every_block_match_stops_at_the_first_difference() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::EveryBlock, &model, None);
    cache.serve(&prompt_of(&model.name, &[1, 2, 3, 4, 5], 10), &[], at(0), instant(0)).unwrap();
    let u =
        cache.serve(&prompt_of(&model.name, &[1, 2, 9, 4, 5], 10), &[], at(5), instant(5)).unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m, u.uncached), (20, 30, 0));
    // A fork: the same prefix plus one appended block reads everything before it.
    let u = cache
        .serve(&prompt_of(&model.name, &[1, 2, 3, 4, 5, 6], 10), &[], at(9), instant(9))
        .unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m), (50, 10));
}

/// Two identical concurrent requests: the second finds every entry pending, reads nothing and
/// writes each of the 4 boundaries again: 4 redundant writes.
#[test]
fn every_block_concurrent_writes_are_redundant() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::EveryBlock, &model, None);
    let p = prompt_of(&model.name, &[1, 2, 3, 4], 10);
    cache.serve(&p, &[], at(0), |_| at(1_000)).unwrap();
    let u = cache.serve(&p, &[], at(10), |_| at(2_000)).unwrap();
    assert_eq!((u.cache_read, u.redundant_writes), (0, 4));
}

// ---------------------------------------------------------------- request bodies

fn body_err(b: serde_json::Value) -> String {
    request_from_json(&b).unwrap_err().to_string()
}

#[test]
fn body_errors_name_the_block() {
    let cc = json!({"type": "ephemeral"});
    let msg = |i: u32| json!({"role": "user", "content": [{"type": "text", "text": format!("m{i}"), "cache_control": cc}]});
    let five = json!({"model": "m", "messages": [msg(0), msg(1), msg(2), msg(3), msg(4)]});
    let e = body_err(five);
    assert!(e.contains("`messages[4].content[0].cache_control`") && e.contains("5th"), "{e}");
    let order = json!({"model": "m", "system": [{"type": "text", "text": "s", "cache_control": cc}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "x"},
            {"type": "text", "text": "y", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]});
    let e = body_err(order);
    assert!(e.contains("`messages[0].content[1].cache_control`") && e.contains("1h"), "{e}");
    let e = body_err(json!({"model": "m", "messages": [{"role": "user", "content": "a"}, 7]}));
    assert!(e.contains("`messages[1]`"), "{e}");
    let e = body_err(json!({"messages": []}));
    assert!(e.contains("`model`"), "{e}");
    let e = body_err(json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "2h"}}]}]}));
    assert!(e.contains("`messages[0].content[0].cache_control.ttl`"), "{e}");
    let auto = json!({"model": "m", "cache_control": {"type": "ephemeral", "ttl": "1h"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": cc}]}]});
    assert!(body_err(auto).contains("`cache_control`"));
}

/// Default granularity: tools one block, system one block, each message one block; tokens
/// ceil(chars / 4) of the canonical bytes; a string system prompt is its raw text.
#[test]
fn body_blocks_and_breakpoints() {
    let b = json!({
        "model": "claude-sonnet-4.5",
        "tools": [{"name": "Bash", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "system": "abcdefghi",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "cache_control": {"type": "ephemeral"}
    });
    let (p, bps) = request_from_json(&b).unwrap();
    assert_eq!(p.len(), 4);
    // Canonical tools: [{"name":"Bash"}] = 17 chars -> 5 tokens; system 9 chars -> 3 tokens;
    // {"content":"hi","role":"user"} = 30 chars -> 8 tokens.
    assert_eq!((p.block_tokens(0), p.block_tokens(1), p.block_tokens(2)), (5, 3, 8));
    assert_eq!(
        bps,
        vec![
            Breakpoint { index: 0, ttl: Ttl::OneHour },
            Breakpoint { index: 3, ttl: Ttl::FiveMin }
        ]
    );
}

/// Markers are not content: moving `cache_control` (automatic caching moves it every turn)
/// leaves every digest unchanged.
#[test]
fn markers_do_not_change_digests() {
    let a = json!({"model": "m", "system": [{"type": "text", "text": "s"}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}]}]});
    let b = json!({"model": "m", "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "q"}]}]});
    let (pa, _) = request_from_json(&a).unwrap();
    let (pb, _) = request_from_json(&b).unwrap();
    assert_eq!(pa.prefix_key(1), pb.prefix_key(1));
}

/// Key order is content (the API caches the bytes it is sent; the docs warn about clients that
/// randomise a `tool_use` input's key order). Two bodies read from text that differ only in the
/// order of the keys of `messages[1]`'s tool_use input share blocks 0..=2 (tools, system,
/// messages[0]) and no further: blocks 3 and 4 (messages[1], messages[2]) differ. The tokens
/// are equal (the same characters). A marker moved elsewhere changes nothing.
#[test]
fn key_order_is_content_from_the_block_that_differs() {
    let text = |input: &str, marker: &str| {
        format!(
            r#"{{"model": "claude-sonnet-4.5", "tools": [{{"name": "Read", "input_schema": {{"type": "object"}}}}],
              "system": "sys", "messages": [
              {{"role": "user", "content": [{{"type": "text", "text": "read it"{marker}}}]}},
              {{"role": "assistant", "content": [{{"type": "tool_use", "id": "t1", "name": "Read", "input": {input}}}]}},
              {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}]}}]}}"#
        )
    };
    let marker = r#", "cache_control": {"type": "ephemeral"}"#;
    let parse = |t: String| {
        let j: serde_json::Value = serde_json::from_str(&t).unwrap();
        prefixsim::replay::body::parse_body(&j).unwrap().prompt("default")
    };
    let a = parse(text(r#"{"path": "a.rs", "limit": 10}"#, ""));
    let b = parse(text(r#"{"limit": 10, "path": "a.rs"}"#, ""));
    let a_marked = parse(text(r#"{"path": "a.rs", "limit": 10}"#, marker));
    assert_eq!(a.len(), 5);
    let shared =
        |a: &Prompt, b: &Prompt| (0..5).take_while(|&i| a.prefix_key(i) == b.prefix_key(i)).count();
    assert_eq!(shared(&a, &b), 3);
    assert_eq!(shared(&a, &a_marked), 5);
    assert_eq!(a.tokens(), b.tokens());
    // Built as `Value`s, the bodies keep the order `json!` wrote: they differ too.
    let v = |input: serde_json::Value| {
        json!({"model": "m", "messages": [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": input}]}]})
    };
    let (va, _) = request_from_json(&v(json!({"path": "a.rs", "limit": 10}))).unwrap();
    let (vb, _) = request_from_json(&v(json!({"limit": 10, "path": "a.rs"}))).unwrap();
    assert_ne!(va.prefix_key(0), vb.prefix_key(0));
}

/// Automatic caching over turns: turn 2 appends an assistant and a user message; its breakpoint
/// moves to the new last block and the lookback finds turn 1's entry two positions back.
/// Under Anthropic, turn 2 reads all of turn 1 and writes its two new messages.
#[test]
fn automatic_caching_reads_the_previous_turn() {
    let model = any_length_model();
    let turn1 = json!({"model": "claude-sonnet-4.5", "cache_control": {"type": "ephemeral"},
        "system": "You are helpful.", "messages": [{"role": "user", "content": "What is 2+2?"}]});
    let mut turn2 = turn1.clone();
    let msgs = turn2["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "assistant", "content": "4"}));
    msgs.push(json!({"role": "user", "content": "And 3+3?"}));
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let (p1, b1) = request_from_json(&turn1).unwrap();
    cache.serve(&p1, &b1, at(0), instant(0)).unwrap();
    let (p2, b2) = request_from_json(&turn2).unwrap();
    let u = cache.serve(&p2, &b2, at(US_PER_S), instant(US_PER_S)).unwrap();
    assert_eq!(u.cache_read, p1.tokens());
    assert_eq!(u.cache_write_5m, p2.tokens() - p1.tokens());
    // The incremental build of turn 2 from turn 1 equals the build from scratch.
    let parsed1 = prefixsim::replay::body::parse_body(&turn1).unwrap();
    let parsed2 = prefixsim::replay::body::parse_body(&turn2).unwrap();
    let ext = parsed2.extend_prompt(&parsed1, &parsed1.prompt("default")).unwrap();
    assert_eq!(ext.prefix_key(ext.len() - 1), p2.prefix_key(p2.len() - 1));
    // A body that changes `tool_choice` does not extend its parent.
    let mut other = turn2.clone();
    other["tool_choice"] = json!({"type": "none"});
    let parsed3 = prefixsim::replay::body::parse_body(&other).unwrap();
    assert!(parsed3.extend_prompt(&parsed1, &parsed1.prompt("default")).is_none());
}

// ---------------------------------------------------------------- presets and price

#[test]
fn presets_follow_the_newer_docs() {
    let names = preset_names();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted");
    for n in &names {
        assert_eq!(preset(n).unwrap().name, *n);
    }
    // The docs' current minimums: Sonnet 4.6 1,024 (an earlier version of the page said 2,048).
    assert_eq!(preset("claude-sonnet-4.6").unwrap().min_cacheable_tokens, 1_024);
    assert_eq!(preset("claude-opus-4.5").unwrap().min_cacheable_tokens, 4_096);
    assert_eq!(preset("claude-fable-5.1").unwrap().read_multiplier, 0.025);
    assert_eq!(preset("claude-sonnet-5").unwrap().input_usd_per_mtok, 2.0);
    assert!(preset("gpt-4").is_none());
}

/// The cost formula of docs/cache.md on Haiku 4.5 ($1 in, $5 out):
/// 1e-6 * (100 + 1.25 * 200 + 2 * 300 + 0.1 * 1000) + 5e-6 * 10 = 1e-6 * 1,050 + 5e-5 = 0.0011.
#[test]
fn cost_formula() {
    let m = preset("claude-haiku-4.5").unwrap();
    let u = Usage {
        cache_read: 1_000,
        cache_write_5m: 200,
        cache_write_1h: 300,
        uncached: 100,
        redundant_writes: 0,
        storage_token_s: 0,
    };
    assert!((cost_usd(&m, &u, 10) - 0.0011).abs() < 1e-15);
}

/// Earlier turns' thinking (the extended-thinking page): a body whose last user message is a
/// new instruction (not only tool results) is processed without the thinking blocks of the
/// assistant messages before it, on a model that strips them (claude-sonnet-4.5) or with
/// thinking disabled; a model that keeps them (claude-sonnet-4.6) keeps every byte. In a tool
/// loop (the last user message is a tool result) nothing is stripped: the thinking blocks after
/// the last instruction are the current turn's.
#[test]
fn earlier_turns_thinking_is_stripped_on_the_models_that_strip_it() {
    let think = json!({"type": "thinking", "thinking": "check the test first", "signature": "s"});
    let body = |model: &str, last_user: serde_json::Value, thinking: &str| {
        json!({"model": model, "system": "sys", "thinking": {"type": thinking, "budget_tokens": 2000},
            "messages": [
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": [think, {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
            last_user]})
    };
    let tool_result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]});
    let with_text = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "ok"}, {"type": "text", "text": "now fork"}]});
    let prompt = |b: serde_json::Value| request_from_json(&b).unwrap().0;
    let stripped_msg = json!({"model": "x", "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]}]});
    let tokens_without = prompt(stripped_msg.clone()).tokens();
    // In the tool loop: kept on both models (same blocks, same tokens).
    let loop45 = prompt(body("claude-sonnet-4.5", tool_result.clone(), "enabled"));
    let loop46 = prompt(body("claude-sonnet-4.6", tool_result, "enabled"));
    assert_eq!(loop45.tokens(), loop46.tokens());
    // After an instruction: sonnet-4.5 drops the thinking block from messages[1] (block 2).
    let s45 = prompt(body("claude-sonnet-4.5", with_text.clone(), "enabled"));
    let s46 = prompt(body("claude-sonnet-4.6", with_text.clone(), "enabled"));
    let off46 = prompt(body("claude-sonnet-4.6", with_text, "disabled"));
    let message1 = |p: &prefixsim::cache::Prompt| p.block_tokens(2);
    assert_eq!(message1(&s45), tokens_without);
    assert_eq!(message1(&off46), tokens_without);
    assert!(message1(&s46) > tokens_without);
    assert_eq!(s46.tokens() - s45.tokens(), message1(&s46) - tokens_without);
}
