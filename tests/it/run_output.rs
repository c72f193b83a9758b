//! Tests: a run's outputs from the executor, on a stand-in simulator with numbers worked out by
//! hand: the aggregation, the table and JSON `run` prints (snapshots), the result files, and
//! that `--jobs` changes no byte.

use std::path::PathBuf;

use prefixsim::config::{self, ExperimentSpec};
use prefixsim::exec::{execute, write_out, StrategyOutcome};
use prefixsim::exec::{Description, ModelRunner, ResolveError, Runner};
use prefixsim::limits::RunError;
use prefixsim::metrics::{RunMetrics, SCALAR_NAMES};
use prefixsim::results::{self, Aggregate, TraceRow};

/// A fresh scratch directory under the target dir (no absolute paths end up in outputs).
fn scratch(name: &str) -> PathBuf {
    super::common::scratch("run_output", name)
}

/// `run --json`'s document for `out`, a run of `exp`.
fn json_text(exp: &ExperimentSpec, out: &[StrategyOutcome]) -> String {
    prefixsim::RunSummary::new(exp, out, prefixsim::model::notes(exp)).to_json()
}

/// `run`'s table for `out`, a run of `exp`.
fn table_text(exp: &ExperimentSpec, out: &[StrategyOutcome]) -> String {
    prefixsim::report::run::table_text(exp, out, &prefixsim::model::notes(exp), &[])
}

/// A stand-in simulator: replication r of strategy index i has cost (i + 1) * (r + 1) dollars,
/// launch waits of r ms for each of 3 agents, and makespan (r + 1) s.
struct Fake;

/// The fake's metrics for replication `r` of strategy number `i`.
fn fake_metrics(i: usize, r: u32) -> RunMetrics {
    let i = i as f64;
    let mut m = RunMetrics::new();
    m.cost_usd = (i + 1.0) * f64::from(r + 1);
    m.cost_uncached_usd = 10.0 * f64::from(r + 1);
    m.tokens.cache_read = 100 * u64::from(r);
    m.tokens.uncached = 100;
    m.requests = 3;
    m.agents = 3;
    m.makespan_us = u64::from(r + 1) * 1_000_000;
    m.parent_requests = u64::from(r) + 10;
    m.parent_cost_usd = 0.5 * f64::from(r + 1);
    for _ in 0..3 {
        m.launch_wait_us.record(u64::from(r) * 1_000 + 1);
        m.completion_us.record(u64::from(r + 1) * 1_000_000);
    }
    m
}

/// Resolves, describes and renders as the real simulator does; simulates `fake_metrics`.
impl Runner for Fake {
    type Exp = ExperimentSpec;
    fn resolve(&self, t: &toml::Table) -> Result<ExperimentSpec, ResolveError> {
        Ok(config::resolve(t, "fake")?)
    }
    fn describe(&self, e: &ExperimentSpec) -> Description {
        ModelRunner { origin: "fake".into() }.describe(e)
    }
    fn render(&self, e: &ExperimentSpec) -> String {
        config::render(e)
    }
    fn simulate_into(
        &self,
        _: &ExperimentSpec,
        s: usize,
        r: u32,
        out: &mut RunMetrics,
    ) -> Result<(), RunError> {
        *out = fake_metrics(s, r);
        Ok(())
    }
    fn trace(&self, e: &ExperimentSpec, s: usize) -> Result<Vec<TraceRow>, RunError> {
        Ok(vec![TraceRow {
            strategy: config::strategy_label(&e.strategies[s]),
            agent: 0,
            request: 0,
            segment: "prefill".into(),
            start_s: 0.0,
            end_s: 1.5,
            outcome: "miss".into(),
        }])
    }
}

fn small_experiment(reps: u32) -> ExperimentSpec {
    let t = config::parse_table(
        &format!("replications = {reps}\nstrategies = [\"eager\", \"wait_first(max_wait=5s, release=timer)\"]\n"),
        "small.toml",
    )
    .unwrap();
    config::resolve(&t, "small.toml").unwrap()
}

#[test]
fn aggregation_matches_hand_computation() {
    // Strategy 1 (index 1): costs 2, 4, 6, 8 over 4 replications. mean = 5; squared deviations
    // 9 + 1 + 1 + 9 = 20, sd = sqrt(20 / 3) = 2.581989; ci95 = t(0.975, 3) * sd / 2 with
    // t(0.975, 3) = 3.182446 (tables) -> 4.108535.
    let exp = small_experiment(4);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let cost = out[1].aggregate.stat("cost_usd");
    assert!((cost.mean - 5.0).abs() < 1e-12);
    assert!((cost.sd - (20.0f64 / 3.0).sqrt()).abs() < 1e-12);
    assert!((cost.ci95 - 3.182_446 * (20.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-5);
    // Hit rate of replication r: 100r / (100r + 100) -> 0, 1/2, 2/3, 3/4: mean 23/48.
    assert!((out[0].aggregate.stat("hit_rate").mean - 23.0 / 48.0).abs() < 1e-12);
    // Merged launch waits: 3 each of 1us, 1001us, 2001us, 3001us: p50 = 1001us (3 sig. digits),
    // max = 3001us (the histogram reports its bucket's highest equivalent value, 3001 here).
    let ladder = out[0].aggregate.ladder_of("launch_wait");
    assert!((ladder[0] - 0.001001).abs() < 2e-6, "{ladder:?}");
    assert!((ladder[4] - 0.003001).abs() < 3e-6, "{ladder:?}");
    assert_eq!(out[0].runs.len(), 4);
    assert_eq!(out[0].aggregate.histograms()[0].len(), 12);
}

#[test]
fn output_bytes_do_not_depend_on_jobs() {
    let exp = small_experiment(37);
    let one = execute(&Fake, &exp, 1, false).unwrap();
    let three = execute(&Fake, &exp, 3, false).unwrap();
    assert_eq!(json_text(&exp, &one), json_text(&exp, &three));
    assert_eq!(table_text(&exp, &one), table_text(&exp, &three));
    let (d1, d3) = (scratch("jobs1"), scratch("jobs3"));
    write_out(&d1, &exp, &one, None).unwrap();
    write_out(&d3, &exp, &three, None).unwrap();
    for f in ["manifest.json", "summary.csv", "runs.csv"] {
        assert_eq!(std::fs::read(d1.join(f)).unwrap(), std::fs::read(d3.join(f)).unwrap(), "{f}");
    }
}

#[test]
fn failures_report_the_first_failing_run() {
    struct Failing;
    impl Runner for Failing {
        type Exp = ExperimentSpec;
        fn resolve(&self, t: &toml::Table) -> Result<ExperimentSpec, ResolveError> {
            Fake.resolve(t)
        }
        fn describe(&self, e: &ExperimentSpec) -> Description {
            Fake.describe(e)
        }
        fn render(&self, e: &ExperimentSpec) -> String {
            Fake.render(e)
        }
        fn simulate_into(
            &self,
            e: &ExperimentSpec,
            s: usize,
            r: u32,
            out: &mut RunMetrics,
        ) -> Result<(), RunError> {
            if r >= 5 {
                Err(RunError::Internal(format!("boom {r}")))
            } else {
                Fake.simulate_into(e, s, r, out)
            }
        }
    }
    let exp = small_experiment(20);
    for jobs in [1, 4] {
        let e = execute(&Failing, &exp, jobs, false).err().unwrap().to_string();
        assert!(e.contains("eager, replication 5: boom 5"), "{e}");
    }
}

#[test]
fn result_files_have_the_documented_format() {
    let exp = small_experiment(3);
    let out = execute(&Fake, &exp, 2, false).unwrap();
    let dir = scratch("files");
    let trace: Vec<TraceRow> =
        (0..exp.strategies.len()).flat_map(|s| Fake.trace(&exp, s).unwrap()).collect();
    write_out(&dir, &exp, &out, Some(&trace)).unwrap();

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["kind"], "run");
    assert_eq!(manifest["seed"], 42);
    assert_eq!(manifest["points"], 1);
    assert_eq!(manifest["shard"], serde_json::Value::Null);
    assert_eq!(manifest["strategies"][1], "wait_first(max_wait=5s, release=timer)");
    let text = manifest["experiment"].as_str().unwrap();
    assert_eq!(manifest["content_hash"], results::content_hash(text));
    // The embedded experiment resolves back to the same experiment.
    assert_eq!(config::resolve(&config::parse_table(text, "m").unwrap(), "m").unwrap(), exp);

    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 3);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        &header[..8],
        [
            "point",
            "strategy",
            "replications",
            "strategy_family",
            "max_wait_s",
            "release",
            "interval_s",
            "cost_usd_mean"
        ]
    );
    assert_eq!(header.len(), 7 + 3 * SCALAR_NAMES.len() + 6 * 3);
    assert!(lines[0].ends_with("completion_pooled_p999_s,completion_min_s,completion_max_s"));
    // Costs of the timer strategy: 2, 4, 6 -> mean 4, sd 2, ci95 = 4.302653 * 2 / sqrt(3).
    assert!(
        lines[2].starts_with(
            "0,\"wait_first(max_wait=5s, release=timer)\",3,wait_first,5,timer,,4.000000,2.000000,4.968275,"
        ),
        "{}",
        lines[2]
    );

    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 2 * 3);
    assert!(runs.starts_with(
        "point,replication,strategy,strategy_family,max_wait_s,release,interval_s,cost_usd,cost_relative,"
    ));
    assert!(runs.lines().nth(2).unwrap().starts_with("0,1,eager,eager,,,,2.000000,0.100000,"));

    let log = std::fs::read_to_string(dir.join(results::HISTOGRAM_LOG)).unwrap();
    assert_eq!(log.lines().filter(|l| l.starts_with("Tag=")).count(), 2 * 3);
    let tag = "Tag=p00000_wait_first_max_wait_5s__release_timer__launch_wait,";
    let line = log.lines().find(|l| l.starts_with(tag)).unwrap();
    let decoded = results::decode_histogram(line.rsplit_once(',').unwrap().1).unwrap();
    assert_eq!(decoded, out[1].aggregate.histograms()[0]);

    let trace = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    assert_eq!(trace, "strategy,agent,request,segment,start_s,end_s,outcome\neager,0,0,prefill,0.000000,1.500000,miss\n\"wait_first(max_wait=5s, release=timer)\",0,0,prefill,0.000000,1.500000,miss\n");
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn json_has_the_documented_fields() {
    let exp = small_experiment(2);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text(&exp, &out)).unwrap();
    assert_eq!(v["seed"], 42);
    let r = &v["results"][1];
    assert_eq!(r["strategy"], "wait_first(max_wait=5s, release=timer)");
    // Costs 2 and 4 -> 3; eager's 1 and 2 -> 1.5; relative 2.
    assert_eq!(r["cost_usd"], 3.0);
    assert_eq!(r["cost_relative_to_eager"], 2.0);
    for k in ["hit_rate", "redundant_writes", "makespan_s", "rate_limited"] {
        assert!(r[k].is_number(), "{k}");
    }
    for k in ["cache_read", "cache_write", "uncached", "output"] {
        assert!(r["tokens"][k].is_number(), "{k}");
    }
    for k in ["p50", "p99", "max"] {
        assert!(r["launch_wait_pooled_s"][k].is_number(), "{k}");
    }
}

#[test]
fn the_parents_own_turns_are_reported_apart_only_when_it_advances() {
    // Frozen parent (the default): no parent field, no parent line.
    let mut exp = small_experiment(2);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text(&exp, &out)).unwrap();
    assert!(v["results"][0].get("parent_cost_usd").is_none());
    assert!(!table_text(&exp, &out).contains("parent"));
    // Advancing: replications 0 and 1 have 10 and 11 parent requests costing 0.5 and 1.0 USD:
    // means 10.5 and 0.75, beside (not in) cost_usd (eager: 1 and 2 -> 1.5).
    exp.workload.parent_turn_every_us = 60_000_000;
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json_text(&exp, &out)).unwrap();
    let r = &v["results"][0];
    assert_eq!(
        (r["parent_requests"].as_f64(), r["parent_cost_usd"].as_f64()),
        (Some(10.5), Some(0.75))
    );
    assert_eq!(r["cost_usd"], 1.5);
    let table = table_text(&exp, &out);
    assert!(
        table.contains(
            "the parent's own turns (not in the cost above): eager: 10.5 requests, $0.7500;"
        ),
        "{table}"
    );
}

#[test]
fn table_starts_with_the_seed_and_has_a_row_per_strategy() {
    let exp = small_experiment(2);
    let out = execute(&Fake, &exp, 1, false).unwrap();
    let t = table_text(&exp, &out);
    assert!(t.starts_with("seed: 42\n"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("eager ") && l.contains("100.0%")), "{t}");
    assert!(
        t.lines().any(
            |l| l.starts_with("wait_first(max_wait=5s, release=timer)") && l.contains("200.0%")
        ),
        "{t}"
    );
    assert!(t.contains("p99.9"));
}

#[test]
fn summary_line_quotes_and_formats_axes() {
    let agg = Aggregate::new();
    let axis =
        [toml::Value::Integer(16), toml::Value::Float(0.5), toml::Value::String("a,b".into())];
    let row = results::SummaryRow::from_aggregate(7, &axis, "eager", &agg);
    assert!(results::summary_line(&row).starts_with("7,16,0.500000,\"a,b\",eager,0,eager,,,,0."));
    let keys = ["workload.agents".to_string()];
    assert!(
        results::summary_header(&keys).starts_with("point,workload.agents,strategy,replications,")
    );
    assert_eq!(results::runs_header(&keys).split(',').count(), 8 + SCALAR_NAMES.len());
}

/// The whole table and JSON for a hand-made run, as committed snapshots (review them when the
/// layout changes on purpose).
#[test]
fn table_and_json_snapshots() {
    let exp = small_experiment(4);
    let out = execute(&Fake, &exp, 2, false).unwrap();
    insta::assert_snapshot!("run_table", table_text(&exp, &out));
    insta::assert_snapshot!("run_json", json_text(&exp, &out));
}
