//! The Anthropic cache as the API behaves (docs/anthropic.md), each rule in closed form on the
//! closed-form workload of `model::experiment` (a 50k-token parent: 15k tools, 5k system, 30k
//! history; a 100-token task; one 100-token response; claude-sonnet-4.5; time to first token
//! 0.5 s + prefill at 20k tok/s + reads at 1M tok/s; decode 50 tok/s).

use crate::model::{experiment, simulate};
use prefixsim::config::preset;
use prefixsim::config::{
    self, AgentKind, BlockKind, ExperimentSpec, Overload, RateLimits, Release, Strategy, Ttl,
};
use prefixsim::dist::Dist;
use prefixsim::metrics::RunMetrics;
use prefixsim::model::{notes, simulate_detailed, RequestRecord, SimError};
use prefixsim::time::{US_PER_MIN, US_PER_S};

/// The records of agent `a`'s requests, in order.
fn of(records: &[RequestRecord], a: u32) -> Vec<RequestRecord> {
    records.iter().filter(|r| r.agent == a).copied().collect()
}

/// Two forks off a warm parent that sends one exchange every 10 s; fork 1 arrives 1 s after
/// exchange `k`, so it carries exchanges 1..=k.
fn advancing(kind: AgentKind, k: u64, exchange_tokens: u64) -> ExperimentSpec {
    let mut exp = experiment(2);
    exp.workload.kind = kind;
    exp.workload.parent_warm = true;
    exp.workload.parent_turn_every_us = 10 * US_PER_S;
    exp.workload.parent_turn_tokens = Dist::Const(exchange_tokens as f64);
    exp.workload.arrival_every_us = k * 10 * US_PER_S + US_PER_S;
    exp
}

/// Lookback positions are content blocks. A dropped tool means the forks never match the
/// parent's entries; fork 1 can read only fork 0's entries. Fork 0 (at t0, no exchange) wrote
/// at block 1 (end of system: 20,000 tokens), block 2 (end of the history: 50,000) and block 3
/// (its task). Fork 1 carries k exchanges of 3 blocks (text, tool_use, tool_result; 1,000
/// tokens each): its last breakpoint is block 3 + 3k, and the 20 positions checked from it
/// (the breakpoint counting as the first) reach down to block 3k - 16. Block 2 is in reach iff
/// 3k - 16 <= 2, k <= 6: then fork 1 reads 50,000 and writes 3,000k + 100; at k = 7 it falls
/// back on the system entry: reads 20,000, writes 50,000 + 21,000 + 100 - 20,000 = 51,100.
/// With one block per exchange (the old model) k = 7 is 8 positions back: still a hit.
#[test]
fn the_lookback_counts_content_blocks() {
    let drop = || AgentKind::ForkDropTool { tool: "Bash".into() };
    let fork1 = |exp: &ExperimentSpec| {
        let d = simulate_detailed(exp, &Strategy::Eager, 0).unwrap();
        of(&d.requests, 1)[0].usage
    };
    let six = fork1(&advancing(drop(), 6, 3_000));
    assert_eq!((six.cache_read, six.cache_write()), (50_000, 18_100));
    let seven = fork1(&advancing(drop(), 7, 3_000));
    assert_eq!((seven.cache_read, seven.cache_write()), (20_000, 51_100));
    let mut one_block = advancing(drop(), 7, 3_000);
    one_block.workload.parent_exchange_blocks = vec![BlockKind::Text];
    let old = fork1(&one_block);
    assert_eq!((old.cache_read, old.cache_write()), (50_000, 21_100));
}

/// An agent turn is shaped too: with [text, tool_use, tool_result] a response of 101 tokens
/// is two blocks of 51 and 50, then the result: the second request reads the first request's
/// last entry (its 50,100 tokens) three positions back and writes 101 + 500.
#[test]
fn an_agent_turn_is_three_positions_and_reads_the_previous_request() {
    let mut exp = experiment(1);
    exp.workload.turns = Dist::Const(2.0);
    exp.workload.output_tokens = Dist::Const(101.0);
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    let r = of(&d.requests, 0);
    assert_eq!(r[1].prompt_tokens, 50_100 + 101 + 500);
    assert_eq!((r[1].usage.cache_read, r[1].usage.cache_write()), (50_100, 601));
}

/// Caps on what one turn adds (a client's `max_tokens`, a truncated tool result): drawn
/// values are clamped, nothing else is drawn. Output 101 capped at 60 (two blocks of 30), a
/// 500-token result capped at 200: the second request holds 50,100 + 60 + 200.
#[test]
fn caps_clamp_output_and_tool_results() {
    let mut exp = experiment(1);
    exp.workload.turns = Dist::Const(2.0);
    exp.workload.output_tokens = Dist::Const(101.0);
    exp.workload.output_max_tokens = 60;
    exp.workload.tool_result_max_tokens = 200;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    let r = of(&d.requests, 0);
    assert_eq!((r[0].output_tokens, r[1].prompt_tokens), (60, 50_100 + 60 + 200));
}

/// Thinking blocks of earlier turns. The parent thinks and its exchange is [thinking, text,
/// tool_use, tool_result] of 500 tokens each. Its turn 1 (at 10 s) reads the warm history and
/// writes an entry at its last block (52,000 tokens), ready at 10 + 0.5 + 2,000/20,000 +
/// 50,000/1e6 = 10.65 s. Fork 1 (at 11 s) sends that history, then its task (a user message,
/// not a tool result). A model that keeps thinking (claude-sonnet-4.6) reads the parent's
/// entry: 52,000, and writes its task (100). A model that strips it (claude-sonnet-4.5)
/// processes the history without the thinking block: it diverges from the parent's entry at
/// that block and reads the history's end (50,000; written by the warm parent), then writes
/// text, tool_use and tool_result (1,500) and the task: 1,600; the thinking block is not sent.
#[test]
fn earlier_thinking_is_stripped_by_the_models_that_strip_it() {
    let fork1 = |model: &str| {
        let mut exp = advancing(AgentKind::Fork, 1, 2_000);
        exp.model = preset(model).unwrap();
        exp.workload.thinking = true;
        let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
        of(&d.requests, 1)[0]
    };
    let kept = fork1("claude-sonnet-4.6");
    assert_eq!(
        (kept.usage.cache_read, kept.usage.cache_write(), kept.prompt_tokens),
        (52_000, 100, 52_100)
    );
    let stripped = fork1("claude-sonnet-4.5");
    assert_eq!(
        (stripped.usage.cache_read, stripped.usage.cache_write(), stripped.prompt_tokens),
        (50_000, 1_600, 51_600)
    );
}

/// Changing the thinking parameters invalidates the messages layer only: agents with thinking
/// on fork a warm parent without it; the tools and system entry (20,000 tokens) is theirs, the
/// history entry (50,000) is not. The same setting on both reads all 50,000.
#[test]
fn thinking_parameters_invalidate_the_messages_layer_only() {
    let fork0 = |parent_thinking: bool| {
        let mut exp = experiment(1);
        exp.workload.parent_warm = true;
        exp.workload.thinking = true;
        exp.workload.parent_thinking = Some(parent_thinking);
        let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
        d.requests[0].usage
    };
    assert_eq!((fork0(false).cache_read, fork0(false).cache_write()), (20_000, 30_100));
    assert_eq!((fork0(true).cache_read, fork0(true).cache_write()), (50_000, 100));
}

/// `max_tokens: 0` is refused with extended thinking, so for thinking agents the warming
/// request goes without thinking: its entries at the history's and the brief's end are in
/// another messages layer, only its system entry (20,000) is the agents'. Each of the 3 agents
/// (released together at the warming entry's readiness, 0.5 + 52,000/20,000 = 3.1 s) reads
/// 20,000 and writes 52,100 - 20,000 = 32,100; without thinking each reads 52,000, writes 100.
/// And the run says so.
#[test]
fn prewarm_warms_only_tools_and_system_for_thinking_agents() {
    let agents = |thinking: bool| {
        let mut exp = experiment(3);
        exp.workload.brief_tokens = 2_000;
        exp.workload.thinking = thinking;
        exp.strategies = vec![Strategy::Prewarm];
        let d = simulate_detailed(&exp, &Strategy::Prewarm, 0).unwrap();
        let usage: Vec<_> = (0..3).map(|a| of(&d.requests, a)[0].usage).collect();
        (usage, notes(&exp))
    };
    let (on, said) = agents(true);
    for u in &on {
        assert_eq!((u.cache_read, u.cache_write()), (20_000, 32_100));
    }
    assert!(
        said.iter().any(|n| n.contains("prewarm") && n.contains("tools and system")),
        "{said:?}"
    );
    let (off, quiet) = agents(false);
    for u in &off {
        assert_eq!((u.cache_read, u.cache_write()), (52_000, 100));
    }
    assert!(quiet.is_empty());
}

/// A request longer than its model's window is an error naming the key that grew it. 190,000
/// tokens of parent, a 100-token task, 3 turns of 100 output tokens and 5,000-token tool
/// results: request 0 holds 190,100 + 100; request 1, 195,200 + 100; request 2, 200,300 + 100
/// = 200,400 > 200,000 (claude-sonnet-4.5): the tool results (10,000) outgrew the outputs
/// (200). With a declared long-context offer in use (1M window, 2x input and 1.5x output above
/// 200,000 input tokens) it runs, and request 2 (200,300 input tokens) pays the long prices on
/// all its tokens: it reads request 1's 195,200 and writes 5,100.
#[test]
fn the_context_window_and_long_context_prices() {
    let mut exp = experiment(1);
    exp.workload.parent_tokens = 190_000;
    exp.workload.turns = Dist::Const(3.0);
    exp.workload.tool_result_tokens = Dist::Const(5_000.0);
    match simulate(&exp, &Strategy::Eager, 0) {
        Err(SimError::ContextWindow {
            agent: 0,
            request: 2,
            tokens: 200_400,
            window: 200_000,
            key,
            ..
        }) => {
            assert_eq!(key, "workload.tool_result_tokens")
        }
        other => panic!("{other:?}"),
    }
    exp.model.long_context = Some(config::LongContext {
        window_tokens: 1_000_000,
        threshold_tokens: 200_000,
        input_multiplier: 2.0,
        output_multiplier: 1.5,
    });
    exp.model.use_long_context = true;
    let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!(d.metrics.long_context_requests, 1);
    let r2 = d.requests[2];
    assert_eq!((r2.usage.cache_read, r2.usage.cache_write_5m), (195_200, 5_100));
    let want = (6.0 * (0.1 * 195_200.0 + 1.25 * 5_100.0) + 22.5 * 100.0) / 1e6;
    assert!((r2.cost_usd - want).abs() < 1e-12, "{} vs {want}", r2.cost_usd);
    let r1 = d.requests[1];
    let normal = (3.0 * (0.1 * 190_100.0 + 1.25 * 5_100.0) + 15.0 * 100.0) / 1e6;
    assert!((r1.cost_usd - normal).abs() < 1e-12, "{} vs {normal}", r1.cost_usd);
}

/// TTL buckets (Claude Code: the main conversation 1 h on a subscription, everything else
/// 5 min): the parent wrote its entries 10 minutes before the fan-out. With the parent's TTL
/// 5 min they expired: the fork writes all 50,100. With the parent's 1 h bucket they are alive:
/// it reads 50,000 and writes its task at its own TTL (5 min), or 1 h when its kind's bucket
/// says so.
#[test]
fn ttl_per_request_kind() {
    let fork = |parent_ttl: Option<Ttl>, fork_ttl: Option<Ttl>| {
        let mut exp = experiment(1);
        exp.workload.parent_warm = true;
        exp.workload.parent_idle_us = 10 * US_PER_MIN;
        exp.cache.parent_ttl = parent_ttl;
        exp.cache.ttl_by_kind = fork_ttl.map(|t| ("fork".to_string(), t)).into_iter().collect();
        simulate_detailed(&exp, &Strategy::Eager, 0).unwrap().requests[0].usage
    };
    let cold = fork(None, None);
    assert_eq!((cold.cache_read, cold.cache_write_5m), (0, 50_100));
    let sub = fork(Some(Ttl::OneHour), None);
    assert_eq!((sub.cache_read, sub.cache_write_5m, sub.cache_write_1h), (50_000, 100, 0));
    let both = fork(Some(Ttl::OneHour), Some(Ttl::OneHour));
    assert_eq!((both.cache_read, both.cache_write_5m, both.cache_write_1h), (50_000, 0, 100));
}

/// The scalars and extras of every replication of every strategy.
fn fingerprint(exp: &ExperimentSpec) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for s in &exp.strategies {
        for r in 0..exp.replications {
            let m: RunMetrics = simulate(exp, s, r).unwrap();
            out.push(m.scalars().iter().chain(&m.extras()).map(|x| x.to_bits()).collect());
        }
    }
    out
}

/// Enabling nothing changes nothing: an isolated-miss probability of 0 and a 529 probability
/// of 0 draw from their own streams (or not at all) and leave every number of the shipped
/// default experiment as it was.
#[test]
fn zero_probabilities_change_nothing() {
    let (_, mut exp) = config::load_default(&[]).unwrap();
    exp.replications = 8;
    let before = fingerprint(&exp);
    exp.cache.miss_probability = 0.0;
    exp.overload = Some(Overload {
        probability: 0.0,
        max_retries: 2,
        initial_backoff_us: 500_000,
        max_backoff_us: 8 * US_PER_S,
    });
    assert_eq!(fingerprint(&exp), before);
}

/// An isolated miss: with probability 1 every lookup finds nothing. Under wait_first released
/// by the first token, agents 1 and 2 would read the 50,000-token prefix; they miss, and write
/// all 50,100 like agent 0: three full writes (3 x $0.189375) and 2 isolated misses.
#[test]
fn an_isolated_miss_writes_what_it_would_have_read() {
    let mut exp = experiment(3);
    exp.cache.miss_probability = 1.0;
    let s = Strategy::WaitFirst { max_wait_us: 10 * US_PER_S, release: Release::OnReady };
    let m = simulate(&exp, &s, 0).unwrap();
    assert_eq!(m.tokens.cache_read, 0);
    assert_eq!(m.isolated_misses, 2);
    assert!((m.cost_usd - 3.0 * 0.189375).abs() < 1e-12, "{}", m.cost_usd);
}

/// 529 overloaded with probability 1: the client (the SDK: 2 retries) tries 3 times, then the
/// agent gives up: 3 overloaded answers, 1 failed agent, no request served, no completion.
#[test]
fn overload_retries_as_the_sdk_then_gives_up() {
    let mut exp = experiment(1);
    exp.overload = Some(Overload {
        probability: 1.0,
        max_retries: 2,
        initial_backoff_us: 500_000,
        max_backoff_us: 8 * US_PER_S,
    });
    let m = simulate(&exp, &Strategy::Eager, 0).unwrap();
    assert_eq!((m.overloaded, m.failed_agents, m.requests), (3, 1, 0));
    assert!(m.completion_us.is_empty());
}

fn limits(rpm: u64, interval_us: u64, parent_counts: bool) -> RateLimits {
    RateLimits {
        rpm,
        itpm: 100_000_000,
        otpm: 100_000_000,
        cache_reads_count: false,
        retry_jitter_us: Dist::Const(0.0),
        interval_us,
        parent_counts,
    }
}

/// A per-minute limit enforced over a shorter interval: 60 RPM over 1 s is a bucket of one
/// request refilled at one per second, so three eager agents are admitted at 0, 1 and 2 s;
/// over a minute all three go at 0.
#[test]
fn a_short_enforcement_interval_spreads_a_burst() {
    let sends = |interval_us| {
        let mut exp = experiment(3);
        exp.rate_limits = Some(limits(60, interval_us, false));
        let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
        d.requests.iter().map(|r| r.send_us).collect::<Vec<_>>()
    };
    assert_eq!(sends(US_PER_S), vec![0, US_PER_S, 2 * US_PER_S]);
    assert_eq!(sends(US_PER_MIN), vec![0, 0, 0]);
}

/// Models of one rate-limit class share buckets. The parent (claude-sonnet-4.5, warm) draws
/// on them (`parent_counts`); ITPM 50,100 (a bucket of 50,100 tokens refilled at 835 tokens/s).
/// The fork's first request (all 50,100 tokens written: another model shares nothing) empties
/// the bucket at t0. The parent's turn 1 at 2 s counts its 2,000 written tokens (it reads the
/// rest): on the same bucket it finds 1,670 and waits for 330 more at 835/s, exactly (in
/// tokens x 60e6) (120e9 - 100.2e9) / 50,100 us rounded up = 395,210 us: sent at 2,395,210 us,
/// before turn 2 (at 4 s). When the fork runs on claude-haiku-4.5 (another class) the parent's
/// bucket is full: sent at 2 s.
#[test]
fn one_class_shares_the_buckets() {
    let first_parent_send = |other: &str| {
        let mut exp = experiment(1);
        exp.workload.kind = AgentKind::ForkOtherModel { model: other.into() };
        exp.workload.parent_warm = true;
        exp.workload.parent_turn_every_us = 2 * US_PER_S;
        let mut r = limits(1_000, US_PER_MIN, true);
        r.itpm = 50_100;
        exp.rate_limits = Some(r);
        let d = simulate_detailed(&exp, &Strategy::Eager, 0).unwrap();
        of(&d.requests, 2)[0].send_us
    };
    assert_eq!(first_parent_send("claude-sonnet-4.6"), 2_395_210);
    assert_eq!(first_parent_send("claude-haiku-4.5"), 2 * US_PER_S);
}

/// The new keys resolve, render and resolve back to the same experiment, and bad values are
/// errors naming the key.
#[test]
fn the_new_keys_round_trip_and_reject_bad_values() {
    let text = r#"
model = "claude-sonnet-4.5"
[model_params]
long_context_window_tokens = 1000000
long_context_threshold_tokens = 200000
long_context = true
[cache]
parent_ttl = "1h"
miss_probability = 0.01
[cache.ttl_by_kind]
fork = "5m"
subagent = "1h"
[workload]
thinking = true
parent_thinking = false
turn_blocks = ["user", "thinking", "text"]
parent_exchange_blocks = ["text", "tool_use", "tool_result"]
[rate_limits]
interval = "1s"
parent_counts = true
[overload]
probability = 0.05
"#;
    let e = config::resolve(&config::parse_table(text, "n.toml").unwrap(), "n.toml").unwrap();
    assert_eq!(e.model.window_tokens(), 1_000_000);
    assert_eq!(e.cache.agent_ttl("subagent"), Ttl::OneHour);
    assert_eq!(e.cache.agent_ttl("btw"), Ttl::FiveMin);
    assert_eq!(e.overload.as_ref().map(|o| o.max_retries), Some(2));
    let again = config::render(&e);
    assert_eq!(config::resolve(&config::parse_table(&again, "r").unwrap(), "r").unwrap(), e);
    let bad = |text: &str, key: &str| {
        let t = config::parse_table(text, "b.toml").unwrap();
        let msg = config::resolve(&t, "b.toml").unwrap_err().to_string();
        assert!(msg.contains(key), "{msg} lacks {key}");
    };
    bad("model = \"claude-haiku-3.5\"\n[workload]\nthinking = true\n", "workload.thinking");
    // Haiku 4.5 offers no larger window (Sonnet 4 and 4.5 offer 1M on request).
    bad(
        "model = \"claude-haiku-4.5\"\n[model_params]\nlong_context = true\n",
        "model_params.long_context",
    );
    bad("[workload]\nturn_blocks = [\"tool_result\", \"text\"]\n", "workload.turn_blocks");
    bad("[workload]\nturn_blocks = [\"thinking\"]\n", "workload.turn_blocks");
    bad("[rate_limits]\ninterval = \"2min\"\n", "rate_limits.interval");
    bad("[cache]\nmiss_probability = 1.5\n", "cache.miss_probability");
    bad("[cache.ttl_by_kind]\nforks = \"1h\"\n", "cache.ttl_by_kind.forks");
    bad("[workload]\nparent_tokens = 200000\n", "workload.parent_tokens");
    bad("[overload]\nprobability = 2\n", "overload.probability");
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("prefixsim-api-rules-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn prefixsim(args: &[&str]) -> (Option<i32>, String) {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_prefixsim")).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `run`: a request that outgrows the window exits 2 naming the key, before writing anything
/// (the workload of `the_context_window_and_long_context_prices`, from a file).
#[test]
fn run_exits_2_naming_the_key_that_outgrew_the_window() {
    let dir = scratch("window-run");
    let file = dir.join("long.toml");
    std::fs::write(
        &file,
        "replications = 1\nstrategies = [\"eager\"]\n[workload]\nagents = 1\nparent_tokens = 190000\n\
         turns = \"const(3)\"\ntool_result_tokens = \"const(5000)\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let (code, stderr) =
        prefixsim(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("workload.tool_result_tokens") && stderr.contains("200000"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// `replay` of request bodies: a body longer than its model's window (about 202,500 tokens of
/// system prompt to claude-haiku-4-5, whose window is 200k) is an error naming the line; `--lenient` skips it.
#[test]
fn replay_refuses_a_request_longer_than_the_window() {
    let dir = scratch("window-replay");
    let small = r#"{"timestamp_ms": 0, "body": {"model": "claude-haiku-4-5", "system": "s", "messages": [{"role": "user", "content": "hi"}]}}"#;
    let big = format!(
        r#"{{"timestamp_ms": 1, "body": {{"model": "claude-haiku-4-5", "system": "{}", "messages": [{{"role": "user", "content": "hi"}}]}}}}"#,
        "x".repeat(810_000)
    );
    let trace = dir.join("req.jsonl");
    std::fs::write(&trace, format!("{small}\n{big}\n")).unwrap();
    let t = trace.to_str().unwrap();
    let (code, stderr) = prefixsim(&["replay", t, "--format", "requests"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("req.jsonl:2") && stderr.contains("context window"), "{stderr}");
    let (code, stderr) = prefixsim(&["replay", t, "--format", "requests", "--lenient"]);
    assert_eq!(code, Some(0), "{stderr}");
}
