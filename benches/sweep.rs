//! Benchmark: a sweep of 10,000 default-workload replications (every strategy of the embedded
//! default experiment: 5 strategies, 10 forks of a cold 50k prefix, 3-8 turns) through the
//! whole pipeline (workers, writer, journal, outputs), `--jobs 2`; then the same with 10x the
//! points and a tenth of the replications each, to show memory flat in the number of points
//! (peak RSS from /proc/self/status).
//!
//! Run: `cargo bench --bench sweep`. Prints wall time, replications/s and peak RSS.

use std::time::Instant;

use prefixsim::config;
use prefixsim::exec::ModelRunner;
use prefixsim::sweep::{self, ExecOptions, Plan, SweepOptions};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Sweep `points` values of `workload.task_tokens` with `reps` replications each.
fn bench(points: u64, reps: u32, jobs: usize) {
    let mut table =
        config::parse_table(config::DEFAULT_EXPERIMENT, config::DEFAULT_ORIGIN).unwrap();
    config::apply_set(&mut table, &format!("replications={reps}")).unwrap();
    // The pipeline alone: `cost` answers from the summary, where the default's `hold_cap` would
    // run a hold search at every point.
    config::apply_set(&mut table, "report.answer=cost").unwrap();
    let mut sweep = toml::Table::new();
    let range = format!("200..{} step 1", 199 + points);
    sweep.insert("workload.task_tokens".into(), range.into());
    table.insert("sweep".into(), sweep.into());
    let sim = ModelRunner { origin: "default".into() };
    let plan = Plan::new(&sim, table, &[]).unwrap();
    let dir = std::env::temp_dir().join(format!("prefixsim-bench-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = SweepOptions {
        dir: dir.clone(),
        shard: None,
        resume: false,
        force: true,
        exec: ExecOptions { jobs, progress: false, ctrl_c: false, throttle_ms: 0 },
    };
    let t = Instant::now();
    let rep = sweep::run_sweep(&sim, &plan, &opts).unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(rep.outcome, sweep::Outcome::Complete);
    let total = points * reps as u64;
    println!(
        "sweep {points:>6} points x {reps:>4} replications x 5 strategies, --jobs {jobs}: \
         {secs:>7.3} s  {:>9.0} replications/s  {:>9.0} simulations/s  peak RSS {} MiB",
        total as f64 / secs,
        5.0 * total as f64 / secs,
        peak_rss_kib() / 1024
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Where the time goes, on one thread: the model alone, then plus the aggregation (merging
/// three latency histograms per run) that every point does.
fn breakdown(reps: u32) {
    use prefixsim::metrics::RunMetrics;
    use prefixsim::results::Aggregate;
    let (_, exp) = config::load_default(&[]).unwrap();
    let mut model = prefixsim::model::Simulator::new();
    let mut m = RunMetrics::new();
    let t = Instant::now();
    for r in 0..reps {
        for s in &exp.strategies {
            model.run_into(&exp, s, r, &mut m).unwrap();
        }
    }
    let model_s = t.elapsed().as_secs_f64();
    let mut agg = Aggregate::new();
    let t = Instant::now();
    for r in 0..reps {
        for s in &exp.strategies {
            model.run_into(&exp, s, r, &mut m).unwrap();
            agg.add(&m);
        }
    }
    let both_s = t.elapsed().as_secs_f64();
    println!(
        "one thread, {reps} replications x 5 strategies: model {:.1} us/simulation, \
         + aggregation {:.1} us/simulation",
        model_s * 1e6 / (5.0 * reps as f64),
        (both_s - model_s) * 1e6 / (5.0 * reps as f64)
    );
}

fn main() {
    breakdown(500);
    let jobs = 2;
    bench(100, 100, jobs);
    bench(1_000, 10, jobs);
    bench(10_000, 1, jobs);
}
