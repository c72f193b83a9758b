//! Tests: the model's tape (`model::tape`): strategies and sweep points that share a
//! replication's draws run exactly as they run alone; a sweep's check of one changed value
//! answers as resolving the whole experiment does; setting an axis's value (`table`) and
//! `tune`'s verdict (`tune`).

mod table;
mod tune;

use prefixsim::config::{ExperimentSpec, Overload, RateLimits};
use prefixsim::dist::Dist;
use prefixsim::metrics::RunMetrics;
use prefixsim::model::Simulator;

/// `exp` with `sets` applied over the default experiment.
fn default_with(sets: &[&str]) -> ExperimentSpec {
    let exp = sets.iter().try_fold(prefixsim::Experiment::default_experiment(), |e, s| e.set(s));
    exp.unwrap_or_else(|e| panic!("{sets:?}: {e}")).config().clone()
}

/// Every run of `runs` (an experiment, a strategy, a replication) on one simulator, in
/// order, each as a fresh simulator runs it alone.
fn assert_runs_as_alone(runs: &[(&ExperimentSpec, usize, u32)]) {
    let mut shared = Simulator::new();
    for (i, &(exp, s, r)) in runs.iter().enumerate() {
        let (mut reused, mut alone) = (RunMetrics::new(), RunMetrics::new());
        let strategy = &exp.strategies[s];
        shared.run_into(exp, strategy, r, &mut reused).expect("runs");
        Simulator::new().run_into(exp, strategy, r, &mut alone).expect("runs");
        assert_eq!(reused, alone, "run {i}: {} strategy {s} replication {r}", exp.name);
    }
}

/// Replication-major: every strategy of a replication back to back, the tape drawn by the
/// first and read by the others; and the same again in reverse, where a tape drawn by a
/// later replication is found stale.
fn assert_strategies_share_tapes(exp: &ExperimentSpec, reps: u32) {
    let n = exp.strategies.len();
    let mut order: Vec<_> = (0..reps).flat_map(|r| (0..n).map(move |s| (exp, s, r))).collect();
    assert_runs_as_alone(&order);
    order.reverse();
    assert_runs_as_alone(&order);
}

const EVERY_BLOCK_KIND: &str =
    "workload.turn_blocks=[\"user\",\"thinking\",\"text\",\"tool_use\",\"tool_result\"]";
const DRAWN_PREFILL: &str = "latency.prefill_rate=\"lognormal(median=5000, p90=20000)\"";

#[test]
fn strategies_that_share_a_tape_run_as_they_run_alone() {
    for sets in [
        &[][..],
        &["workload.kind=\"fork\"", "workload.parent_tokens=30000", "workload.turns=5"],
        &["workload.kind=\"fork_deny_at_call\"", "workload.parent_tokens=30000"],
        &["workload.kind=\"btw\"", "workload.parent_tokens=30000"],
        &["workload.kind=\"fork\"", "workload.parent_turn_every=\"20s\""],
        &["workload.thinking=true", EVERY_BLOCK_KIND],
        &["workload.task_tokens=0", "workload.brief_tokens=0"],
        &["workload.agents=40", "workload.concurrency=7", "workload.arrival_every=\"3s\""],
        &["overload.probability=0.3", "overload.max_retries=1"],
        &["workload.kind=\"fork_other_model(model=claude-sonnet-4.6)\"", "workload.turns=4"],
        &[DRAWN_PREFILL, "latency.overhead=\"uniform(0.1s, 2s)\""],
        &["latency.decode_rate=\"lognormal(median=50, p90=150)\"", "workload.turns=4"],
    ] {
        let exp = default_with(sets);
        assert_strategies_share_tapes(&exp, 4);
    }
}

/// Every agent request's decode time, read from the tape, is its own output tokens at the
/// (constant) decode rate, for every strategy sharing the tape, whatever
/// the path: capped outputs, thinking, 429 and 529 retries, give-ups, a denied call.
#[test]
fn every_request_decodes_its_own_output_tokens() {
    let capped = ["workload.output_max_tokens=250", "workload.kind=\"fork\""];
    let mut busy = default_with(&["workload.kind=\"fork_deny_at_call\"", "workload.turns=6"]);
    busy.rate_limits = Some(RateLimits {
        rpm: 1_000,
        itpm: 120_000,
        otpm: 100_000,
        cache_reads_count: false,
        retry_jitter_us: Dist::Uniform { low: 0.0, high: 1e6 },
        interval_us: 60_000_000,
        parent_counts: false,
    });
    busy.overload = Some(Overload {
        probability: 0.3,
        max_retries: 2,
        initial_backoff_us: 500_000,
        max_backoff_us: 8_000_000,
    });
    let exps = [default_with(&capped), default_with(&["workload.thinking=true"]), busy];
    let mut sim = Simulator::new();
    let mut checked = 0;
    for exp in &exps {
        let Dist::Const(rate) = exp.latency.decode_rate else { panic!("{}", exp.name) };
        for r in 0..3 {
            for strategy in &exp.strategies {
                let d = sim.run_detailed(exp, strategy, r).expect("runs");
                for q in d.requests.iter().filter(|q| q.agent < exp.workload.agents) {
                    let decode = (q.output_tokens as f64 / rate * 1e6).round() as u64;
                    assert_eq!(q.decode_us, decode, "{} {strategy:?} {r}: {q:?}", exp.name);
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 300, "{checked} requests");
}

/// A sweep's points: one replication number on one thread, experiments that differ in one
/// key each. A tape drawn for one must never be read by another whose workload, seed or
/// model differs (the key); where they differ only outside it, it may.
#[test]
fn a_tape_serves_only_the_workload_it_was_drawn_for() {
    let points: Vec<ExperimentSpec> = [
        &[][..],
        &["workload.output_tokens=\"lognormal(median=300, p90=900)\""],
        &["workload.task_tokens=151"],
        &["seed=43"],
        &["model=\"claude-sonnet-4.5\""],
        &["workload.tool_result_max_tokens=3000"],
        &["latency.preset=\"launch-2024\""],
        &["cache.ttl=\"1h\""],
        &[],
    ]
    .iter()
    .map(|sets| default_with(sets))
    .collect();
    let runs: Vec<_> = points.iter().flat_map(|p| [(p, 0, 0), (p, 1, 0)]).collect();
    assert_runs_as_alone(&runs);
}

/// The model's check of a changed value (`check_changed`, which resolves only `[workload]`
/// when only its keys changed) gives the answer and the error of resolving the whole table.
#[test]
fn checking_a_changed_value_answers_as_resolving_does() {
    use prefixsim::exec::{ModelRunner, Runner};
    let head = "name = \"c\"\nmodel = \"claude-haiku-3.5\"\n\
                strategies = [\"eager\", \"wait_first(max_wait=5s)\"]\n";
    let api = format!("{head}[workload]\nagents = 3\nparent_tokens = 5000\n");
    let server = format!("{head}[cache]\npolicy = \"vllm\"\n[workload]\nagents = 3\n");
    let v = |s: &str| toml::Value::String(s.into());
    let cases: Vec<(&str, &str, toml::Value)> = vec![
        (&api, "workload.agents", 4.into()),
        (&api, "workload.agents", 0.into()),
        (&api, "workload.agentz", 1.into()),
        (&api, "workload.task_tokens", 900_000_000.into()),
        (&api, "workload.parent_tokens", 300_000.into()),
        (&api, "workload.thinking", true.into()),
        (&api, "workload.turns", v("bogus(2)")),
        (&api, "workload.turns", v("uniform(1, 3)")),
        (&api, "workload.tool_latency", 5.into()),
        (&api, "workload.kind", v("nope")),
        (&api, "workload.kind", v("subagent")),
        (&api, "strategy.wait_first.max_wait", v("fast")),
        (&api, "latency.overhead", v("x")),
        (&api, "latency.overhead", v("const(1s)")),
        (&server, "workload.parent_turn_every", v("90s")),
        (&server, "workload.parent_turn_every", v("0s")),
    ];
    let sim = ModelRunner { origin: "c.toml".into() };
    for (text, key, value) in cases {
        let base_table: toml::Table = text.parse().unwrap();
        let base = sim.resolve(&base_table).unwrap();
        let mut t = base_table.clone();
        prefixsim::sweep::table::set_value(&mut t, key, value.clone()).unwrap();
        let whole = sim.resolve(&t).map(drop).map_err(|e| e.to_string());
        let changed = sim.check_changed(&base, &t, &[key]).map_err(|e| e.to_string());
        assert_eq!(changed, whole, "{key} = {value}");
    }
}
