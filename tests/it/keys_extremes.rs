//! Every key of the experiment schema at its extremes, in every policy context: each case
//! ends in a result or an input error (exit 0 or 2), never a bug (exit 1), a panic (101) or an
//! abort (134). The keys come from the schema itself (`config::keys::schema_keys` walks
//! `config::file::ExperimentFile` through serde), so a key added later is covered without
//! touching this file.

use std::panic::{catch_unwind, AssertUnwindSafe};

use prefixsim::config::keys::schema_keys;
use prefixsim::{Experiment, RunOptions};

use crate::common::{bin, scratch};

/// The extreme values every key is set to (as `--set` writes them), the last ones as a
/// distribution's parameters.
const VALUES: [&str; 11] = [
    "0",
    "-1",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "\"99999999h\"",
    "\"uniform(0, 1e308)\"",
    "\"lognormal(median=1, p90=1e308)\"",
    "\"uniform(0s, 99999999h)\"",
    "\"lognormal(median=1s, p90=99999999h)\"",
];

/// The contexts the campaign ran every key in: each policy, a hold, forks, a parent that
/// advances, a prompt above the long-context threshold, a second model's latency.
const BASE: &str = r#"name = "extremes"
seed = 7
replications = 1
model = "claude-haiku-4.5"
strategies = ["eager", "prewarm"]
[workload]
kind = "subagent"
agents = 3
concurrency = 2
subagent_tokens = 8500
brief_tokens = 3000
task_tokens = 150
turns = "uniform(2, 4)"
output_tokens = "lognormal(median=250, p90=700)"
tool_latency = "lognormal(median=4s, p90=12s)"
tool_result_tokens = "lognormal(median=2000, p90=6000)"
"#;

fn contexts() -> Vec<(&'static str, String)> {
    let with = |extra: &str| format!("{BASE}{extra}");
    let fork = "kind = \"fork\"\nparent_tokens = 50000\nparent_warm = false\n";
    vec![
        ("anthropic", with("[cache]\npolicy = \"anthropic\"\n")),
        ("every_block", with("[cache]\npolicy = \"every_block\"\nttl = \"1h\"\n")),
        ("openai", with("[cache]\npolicy = \"openai\"\n").replace("claude-haiku-4.5", "gpt-5.4")),
        (
            "gemini",
            with("[cache]\npolicy = \"gemini\"\n").replace("claude-haiku-4.5", "gemini-2.5-flash"),
        ),
        // 4 x 4096 GPUs for a few minutes: GPU-hours enough that a price of 1e308 overflows.
        (
            "vllm",
            with("[cache]\npolicy = \"vllm\"\n[server]\nreplicas = 4\ngpus_per_replica = 4096\n"),
        ),
        (
            "sglang",
            with(
                "[cache]\npolicy = \"sglang\"\n[server]\nreplicas = 2\nrouter = \"prefix-aware\"\n",
            ),
        ),
        (
            "wait_first",
            with("[rate_limits]\nrpm = 4000\nitpm = 2000000\n[overload]\nprobability = 0.2\n")
                .replace("\"prewarm\"", "\"wait_first(max_wait=2s)\""),
        ),
        ("fork", BASE.replace("kind = \"subagent\"\n", fork)),
        (
            "parent_advancing",
            BASE.replace("kind = \"subagent\"\n", fork)
                .replace("kind = \"fork\"", "kind = \"fork_deny_at_call(tool=Bash)\"")
                .replace(
                    "agents = 3\n",
                    "agents = 3\narrival_every = \"1min\"\nparent_turn_every = \"1min\"\n",
                ),
        ),
        (
            "long_context",
            BASE.replace("kind = \"subagent\"\n", fork)
                .replace("parent_tokens = 50000", "parent_tokens = 250000")
                .replace("claude-haiku-4.5", "claude-sonnet-4.5")
                + "[model_params]\nlong_context = true\n",
        ),
        (
            "other_model",
            BASE.replace("kind = \"subagent\"\n", fork)
                .replace("kind = \"fork\"", "kind = \"fork_other_model(model=claude-sonnet-4.5)\"")
                .replace("claude-haiku-4.5", "claude-opus-4.5"),
        ),
    ]
}

/// The keys to set: every leaf of the schema, a map's entries by one of their names
/// (`cache.ttl_by_kind.fork`), and no key that no value can reach (`sweep` is read apart).
fn keys_to_set() -> Vec<String> {
    let mut keys = Vec::new();
    for k in schema_keys() {
        match k.as_str() {
            "sweep" => {}
            "cache.ttl_by_kind" => {
                keys.extend(["fork", "subagent"].map(|kind| format!("{k}.{kind}")));
            }
            _ => keys.push(k),
        }
    }
    keys
}

/// How one case ended: `Ok(true)` with a result, `Ok(false)` with an input error, `Err` with
/// what went wrong (a bug's error, a panic).
fn run_case(toml: &str, assignment: &str) -> Result<bool, String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let exp = Experiment::from_toml(toml).expect("the context resolves");
        let opts = RunOptions { jobs: Some(1), ..RunOptions::default() };
        match exp.set(assignment).and_then(|exp| exp.run(&opts)) {
            Ok(_) => Ok(true),
            Err(e) if e.is_input() => Ok(false),
            Err(e) => Err(format!("exit 1: {}", e.report())),
        }
    }));
    outcome.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("panic: {msg}"))
    })
}

#[test]
fn the_schema_walk_finds_every_section_and_nested_keys() {
    let keys = schema_keys();
    for k in [
        "replications",
        "workload.turns",
        "server.gpu_usd_per_hour",
        "model_params.long_context_input_multiplier",
        "latency.other_model.decode_rate",
        "openai.overflow_window",
        "gemini.implicit_ttl",
        "rate_limits.itpm",
        "overload.max_backoff",
        "limits.max_memory_mb",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k} missing from the schema walk: {keys:?}");
    }
    assert!(keys.len() > 100, "{} keys: {keys:?}", keys.len());
}

#[test]
fn every_key_at_every_extreme_in_every_context_is_a_result_or_an_input_error() {
    let keys = keys_to_set();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for (name, toml) in contexts() {
        assert_eq!(run_case(&toml, "seed=7"), Ok(true), "the {name} context runs as written");
        for key in &keys {
            for value in VALUES {
                match run_case(&toml, &format!("{key}={value}")) {
                    Ok(r) => ran += usize::from(r),
                    Err(why) => failures.push(format!("({name}, {key}, {value}): {why}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
    // Each context runs with most keys at 0 or at a huge duration: the cases are runs.
    assert!(ran > 500, "only {ran} cases ran to a result");
}

/// The binary on a sample of cases (and the campaign's reproducers): the exit code itself,
/// which catches an abort the in-process run cannot.
#[test]
fn the_binary_exits_0_or_2_on_a_sample_of_extremes() {
    let dir = scratch("keys_extremes", "sample");
    let keys = keys_to_set();
    let mut failures = Vec::new();
    let mut cases = vec![
        ("vllm", "server.gpu_usd_per_hour=1e308".to_string()),
        ("long_context", "model_params.long_context_input_multiplier=1e308".to_string()),
        ("long_context", "model_params.long_context_output_multiplier=1e308".to_string()),
        ("vllm", "server.decode_per_ktok=\"2000000h\"".to_string()),
    ];
    for (i, (name, _)) in contexts().iter().enumerate() {
        for (j, key) in keys.iter().enumerate().skip(i % 13).step_by(13) {
            cases.push((name, format!("{key}={}", VALUES[(i + j) % VALUES.len()])));
        }
    }
    let contexts = contexts();
    for (name, assignment) in cases {
        let toml = &contexts.iter().find(|(n, _)| *n == name).expect("a context").1;
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, toml).unwrap();
        let out = bin().arg("run").arg(&file).args(["--set", &assignment, "--jobs", "1"]).output();
        let out = out.expect("the binary runs");
        if !matches!(out.status.code(), Some(0 | 2)) {
            let err = String::from_utf8_lossy(&out.stderr);
            failures.push(format!("({name}, {assignment}): {:?} {err}", out.status));
        }
    }
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}
