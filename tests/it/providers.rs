//! Tests: the `openai` and `gemini` cache policies, closed forms from docs/providers.md
//! (OpenAI's prompt-caching guide, Gemini's context-caching page), and their configuration.
//! Times are microseconds.

use prefixsim::cache::{cost_usd, Block, Breakpoint, Cache, Layer, Prompt, Ttl, Usage};
use prefixsim::config::preset;
use prefixsim::config::{
    parse_table, resolve, ExperimentSpec, GeminiMode, HostedParams, ModelParams, OpenAiContract,
    OpenAiParams, OpenAiRetention, Policy, Strategy,
};
use prefixsim::time::{SimTime, US_PER_H, US_PER_S};
use std::process::Command;

/// A prompt of synthetic blocks `(id, tokens)`.
fn prompt(model: &ModelParams, blocks: &[(u64, u64)]) -> Prompt {
    let mut p = Prompt::new("ws", &model.name);
    for &(id, tokens) in blocks {
        p.push(Block::synthetic(Layer::Messages, tokens, id));
    }
    p
}

fn bp(index: usize) -> Breakpoint {
    Breakpoint { index, ttl: Ttl::FiveMin }
}

/// Ready one microsecond after it is sent.
/// An instant `us` microseconds into the run.
fn at(us: u64) -> SimTime {
    SimTime::from_us(us)
}

/// Entries readable 1 us after `now`.
fn instant(now: u64) -> impl FnOnce(&Usage) -> SimTime {
    move |_| at(now + 1)
}

fn cache(policy: Policy, model: &ModelParams, hosted: &HostedParams) -> Cache {
    Cache::new(policy, model, None).with_hosted(hosted)
}

fn openai(contract: OpenAiContract) -> HostedParams {
    HostedParams { openai: OpenAiParams::defaults(contract), ..HostedParams::default() }
}

// ------------------------------------------------------------------ openai, classic contract

/// "a 3,000-token prompt after a 2,600-token shared prefix reads 2,560 tokens (1,024 plus 12
/// steps of 128); a 1,000-token shared prefix reads nothing" (docs/providers.md, section 7).
#[test]
fn classic_hits_grow_in_128_token_steps_from_1024() {
    let m = preset("gpt-5.4").unwrap();
    let mut c = cache(Policy::OpenAi, &m, &openai(OpenAiContract::Classic));
    c.serve(&prompt(&m, &[(1, 2_600), (2, 400)]), &[], at(0), instant(0)).unwrap();
    let u = c.serve(&prompt(&m, &[(1, 2_600), (3, 400)]), &[], at(10), instant(10)).unwrap();
    assert_eq!(u.cache_read, 2_560);
    assert_eq!(u.cache_read + u.cache_write() + u.uncached, 3_000);
    assert_eq!(u.uncached, 3_000 - 2_944, "the tail past the last 128-token step is not cached");

    let mut c = cache(Policy::OpenAi, &m, &openai(OpenAiContract::Classic));
    c.serve(&prompt(&m, &[(1, 1_000), (2, 2_000)]), &[], at(0), instant(0)).unwrap();
    let u = c.serve(&prompt(&m, &[(1, 1_000), (3, 2_000)]), &[], at(10), instant(10)).unwrap();
    assert_eq!(u.cache_read, 0, "1,000 shared tokens are below the 1,024 minimum");
}

/// Classic contract: no write fee. A cold request costs what it would cost uncached; the
/// next one reads at 0.1x input.
#[test]
fn classic_writes_cost_the_input_price() {
    let m = preset("gpt-5.4").unwrap();
    let mut c = cache(Policy::OpenAi, &m, &openai(OpenAiContract::Classic));
    let p = prompt(&m, &[(1, 10_240)]);
    let cold = c.serve(&p, &[], at(0), instant(0)).unwrap();
    assert_eq!(cold.cache_write(), 10_240);
    let expected = 10_240.0 * 2.50 / 1e6 + 100.0 * 15.0 / 1e6;
    assert!((cost_usd(&m, &cold, 100) - expected).abs() < 1e-12);
    let warm = c.serve(&p, &[], at(10), instant(10)).unwrap();
    assert_eq!(warm.cache_read, 10_240);
    assert!((cost_usd(&m, &warm, 0) - 10_240.0 * 0.25 / 1e6).abs() < 1e-12);
}

/// "16 requests on one prefix+key within 60 s: requests 1-15 on machine 0, the 16th on
/// machine 1 and a miss; with overflow_window elapsed, the 17th is back on machine 0".
#[test]
fn the_16th_request_of_a_burst_misses_on_a_new_machine() {
    let m = preset("gpt-5.4").unwrap();
    let mut c = cache(Policy::OpenAi, &m, &openai(OpenAiContract::Classic));
    let p = prompt(&m, &[(1, 50_000), (2, 100)]);
    let reads: Vec<u64> = (0..16u64)
        .map(|i| c.serve(&p, &[], at(i * US_PER_S), instant(i * US_PER_S)).unwrap().cache_read)
        .collect();
    assert_eq!(reads[0], 0, "the first request is cold");
    assert!(reads[1..15].iter().all(|&r| r > 0), "2-15 hit machine 0: {reads:?}");
    assert_eq!(reads[15], 0, "the 16th overflows to machine 1, cold");
    // Request 1 (sent at 0) leaves machine 0's window at 60 s: the 17th goes home and hits.
    let u = c.serve(&p, &[], at(60 * US_PER_S), instant(60 * US_PER_S)).unwrap();
    assert_eq!(u.cache_read, 50_048);
}

/// Retention `in_memory` forgets an entry after `in_memory_idle` without use (5 minutes).
#[test]
fn in_memory_retention_expires_after_the_idle_time() {
    let m = preset("gpt-5.4").unwrap();
    let mut h = openai(OpenAiContract::Classic);
    h.openai.retention = OpenAiRetention::InMemory;
    let mut c = cache(Policy::OpenAi, &m, &h);
    let p = prompt(&m, &[(1, 5_000)]);
    c.serve(&p, &[], at(0), instant(0)).unwrap();
    let idle = h.openai.in_memory_idle_us;
    assert_eq!(c.peek(&p, &[], at(idle - 1)).unwrap().cache_read, 4_992);
    assert_eq!(c.peek(&p, &[], at(idle)).unwrap().cache_read, 0);
}

// -------------------------------------------------------------- openai, breakpoint contract

/// GPT-5.6: "cache writes cost 1.25x the uncached input token rate"; a sibling that differs
/// after the shared part reads it only through a breakpoint at its end.
#[test]
fn breakpoint_contract_writes_at_125_percent_and_reads_at_breakpoints() {
    let m = preset("gpt-5.6-terra").unwrap();
    let mut c = cache(Policy::OpenAi, &m, &openai(OpenAiContract::Breakpoints));
    let a = prompt(&m, &[(1, 20_000), (2, 100)]);
    let u = c.serve(&a, &[bp(1)], at(0), instant(0)).unwrap();
    assert_eq!(u.cache_write_5m, 20_100);
    let expected = 20_100.0 * 2.00 * 1.25 / 1e6;
    assert!((cost_usd(&m, &u, 0) - expected).abs() < 1e-12);
    let b = prompt(&m, &[(1, 20_000), (3, 100)]);
    assert_eq!(c.peek(&b, &[bp(1)], at(10)).unwrap().cache_read, 0, "implicit breakpoint only");
    let mut c = cache(Policy::OpenAi, &m, &openai(OpenAiContract::Breakpoints));
    c.serve(&a, &[bp(0), bp(1)], at(0), instant(0)).unwrap();
    let u = c.peek(&b, &[bp(0), bp(1)], at(10)).unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m), (20_000, 100), "explicit breakpoint");
}

// ------------------------------------------------------------------------- gemini explicit

/// "a cache costs input x tokens once, storage x tokens x TTL for its whole TTL, and
/// cached x tokens per read": 50k tokens on Gemini 3.1 Pro for one hour = $0.10 creation +
/// $0.225 storage; each read $0.01.
#[test]
fn explicit_storage_costs_tokens_times_hours_times_price() {
    let m = preset("gemini-3.1-pro-preview").unwrap();
    let mut h = HostedParams::default();
    h.gemini.mode = GeminiMode::Explicit;
    let mut c = cache(Policy::Gemini, &m, &h);
    let agent = |id| prompt(&m, &[(1, 1_000), (2, 49_000), (id, 100)]);
    let bps = [bp(0), bp(1), bp(2)];
    let create = c.serve(&agent(10), &bps, at(0), instant(0)).unwrap();
    assert_eq!(create.cache_write(), 50_000);
    assert_eq!(create.storage_token_s, 50_000 * 3_600);
    let storage = 50_000.0 * 1.0 * 4.50 / 1e6;
    let input = 50_100.0 * 2.00 / 1e6;
    assert!((cost_usd(&m, &create, 0) - (input + storage)).abs() < 1e-12);
    let read = c.serve(&agent(11), &bps, at(10), instant(10)).unwrap();
    assert_eq!((read.cache_read, read.uncached, read.storage_token_s), (50_000, 100, 0));
    // Reads do not extend the object's TTL: it is gone one hour after its creation.
    assert_eq!(c.peek(&agent(12), &bps, at(US_PER_H - 1)).unwrap().cache_read, 50_000);
    assert_eq!(c.peek(&agent(12), &bps, at(US_PER_H)).unwrap().cache_read, 0);
}

// ------------------------------------------------------------------------- gemini implicit

fn run(text: &str, strategy: &Strategy) -> prefixsim::metrics::RunMetrics {
    let exp = experiment(text);
    crate::model::simulate(&exp, strategy, 0).unwrap()
}

fn experiment(text: &str) -> ExperimentSpec {
    resolve(&parse_table(text, "p.toml").unwrap(), "p.toml").unwrap()
}

/// Implicit caching's hit probability at its extremes: 0 never reads, 1 reads exactly what a
/// sure cache reads.
#[test]
fn implicit_hit_probability_zero_never_hits_and_one_always_does() {
    let base = "model = \"gemini-2.5-flash\"\nreplications = 1\n[workload]\nagents = 6\n\
                turns = \"const(3)\"\n";
    let seq = Strategy::Sequential;
    let never = run(&format!("{base}[gemini]\nimplicit_hit_probability = 0\n"), &seq);
    assert_eq!(never.tokens.cache_read, 0);
    let always = run(&format!("{base}[gemini]\nimplicit_hit_probability = 1\n"), &seq);
    assert!(always.tokens.cache_read > 0);
    let half = run(&format!("{base}[gemini]\nimplicit_hit_probability = 0.5\n"), &seq);
    assert!(half.tokens.cache_read > 0 && half.tokens.cache_read < always.tokens.cache_read);
}

// -------------------------------------------------------------------------- configuration

#[test]
fn policy_and_model_default_to_each_other() {
    let e = experiment("[cache]\npolicy = \"openai\"\n");
    assert_eq!((e.cache.policy, e.model.name.as_str()), (Policy::OpenAi, "gpt-5.4"));
    let e = experiment("model = \"gpt-5.6-luna\"\n");
    assert_eq!(e.cache.policy, Policy::OpenAi);
    assert_eq!(e.cache.hosted.openai.contract, OpenAiContract::Breakpoints);
    assert_eq!(e.cache.hosted.openai.retention, OpenAiRetention::HalfHour);
    assert!(e.rate_limits.is_none());
    let e = experiment("model = \"gpt-5.4\"\n[rate_limits]\nrpm = 100\n");
    assert!(e.rate_limits.unwrap().cache_reads_count, "cached tokens count toward TPM");
    let e = experiment("[cache]\npolicy = \"gemini\"\n[gemini]\nmode = \"explicit\"\n");
    assert_eq!(e.model.name, "gemini-2.5-flash");
    assert_eq!(e.cache.hosted.gemini.mode, GeminiMode::Explicit);
    let e = experiment("");
    assert_eq!((e.cache.policy, e.model.name.as_str()), (Policy::Anthropic, "claude-sonnet-4.5"));
    assert_eq!(e.cache.hosted, HostedParams::default());
}

#[test]
fn hosted_experiments_render_and_read_back() {
    for text in [
        "model = \"gpt-5.4\"\n[openai]\nmachines = 3\nretention = \"in_memory\"\n",
        "model = \"gpt-5.6-terra\"\n[openai]\nretention = \"12h\"\n",
        "model = \"gemini-3.8-flash\"\n[gemini]\nmode = \"explicit\"\nexplicit_ttl = \"5m\"\n",
    ] {
        let e = experiment(text);
        let again = experiment(&prefixsim::config::render(&e));
        assert_eq!(again, e, "{text}");
    }
}

fn refused(text: &str) -> String {
    resolve(&parse_table(text, "p.toml").unwrap(), "p.toml").unwrap_err().to_string()
}

#[test]
fn bad_hosted_values_name_key_and_value() {
    let e = refused("model = \"claude-sonnet-4.5\"\n[cache]\npolicy = \"openai\"\n");
    assert!(e.contains("cache.policy") && e.contains("anthropic") && e.contains("gpt-5.4"), "{e}");
    let e = refused("[cache]\npolicy = \"openia\"\n");
    assert!(e.contains("\"openia\"") && e.contains("\"openai\""), "{e}");
    let e = refused("model = \"gpt-5.4\"\n[openai]\nmachine = 3\n");
    assert!(e.contains("openai.machine") && e.contains("did you mean `openai.machines`"), "{e}");
    let e = refused("model = \"gpt-5.4\"\n[openai]\nretention = \"30m\"\n");
    assert!(e.contains("openai.retention") && e.contains("classic"), "{e}");
    let e = refused("model = \"gpt-5.4\"\n[openai]\nmachines = 0\n");
    assert!(e.contains("openai.machines"), "{e}");
    let e = refused("[cache]\npolicy = \"gemini\"\n[gemini]\nimplicit_hit_probability = 2\n");
    assert!(e.contains("gemini.implicit_hit_probability"), "{e}");
    let e = refused("[gemini]\nmode = \"cached\"\n");
    assert!(e.contains("gemini.mode") && e.contains("cached"), "{e}");
}

#[test]
fn set_policy_on_the_command_line_exits_2_with_a_claude_model() {
    let bin = || Command::new(env!("CARGO_BIN_EXE_prefixsim"));
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/default.toml");
    let args = ["run", file, "--set", "cache.policy=openai", "--set", "replications=1"];
    let out = bin().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cache.policy") && err.contains("model"), "{err}");
    let out = bin()
        .args(["run", file, "--set", "cache.policy=openai", "--set", "model=gpt-5.4"])
        .args(["--set", "replications=2", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
