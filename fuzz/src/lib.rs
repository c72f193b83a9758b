//! The fuzz targets of prefixsim: one function per target, taking arbitrary bytes. Each
//! checks the exit-code contract from the inside: bad input is an error value, never a panic
//! or a hang, and what the parsers accept round-trips. libFuzzer runs them through
//! `fuzz_targets/*.rs` (nightly, `cargo fuzz run`); `src/bin/smoke.rs` runs them on stable
//! with a seeded mutator for a bounded time (`.ci/run`). See README.md.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use prefixsim::config::{self, ExperimentSpec};
use prefixsim::limits::{self, RunError, WorkLimits};
use prefixsim::replay::{self, ReplaySettings, TraceFormat as Format};
use prefixsim::sweep::{spec, tune};

/// One fuzz target: takes any bytes, panics only on a bug.
pub type Target = fn(&[u8]);

/// Every target by name, in the order the smoke run takes them.
pub const TARGETS: [(&str, Target); 6] = [
    ("experiment", experiment),
    ("sweep_spec", sweep_spec),
    ("trace_mooncake", trace_mooncake),
    ("trace_claude_code", trace_claude_code),
    ("trace_requests", trace_requests),
    ("results", results),
];

/// This process's scratch directory (one file per target, rewritten for every input).
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("prefixsim-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a scratch directory");
        d
    })
}

/// An experiment file, then (after a line `%%`) one `--set` assignment per line: parse, set,
/// resolve; what resolves must render to TOML that resolves to the same experiment and
/// renders to the same text; small experiments are simulated (one replication per strategy)
/// and may fail only through their own limits, never as a bug (`RunError::Internal`).
pub fn experiment(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (file, sets) = match text.split_once("\n%%\n") {
        Some((f, s)) => (f, s.lines().collect::<Vec<_>>()),
        None => (&*text, Vec::new()),
    };
    let Ok(mut table) = config::parse_table(file, "fuzz.toml") else { return };
    for s in &sets {
        if config::apply_set(&mut table, s).is_err() {
            return;
        }
    }
    let limits = WorkLimits::from_table(&table);
    if let Some(sweep) = config::sweep_table(&table) {
        let _ = spec::Grid::from_table(sweep, &spec::key_order(file));
    }
    let exp = match config::resolve(&table, "fuzz.toml") {
        Ok(e) => e,
        Err(e) => return assert!(!e.to_string().is_empty()),
    };
    let rendered = config::render(&exp);
    let again = config::parse_table(&rendered, "fuzz.toml")
        .and_then(|t| config::resolve(&t, "fuzz.toml"))
        .unwrap_or_else(|e| panic!("the rendered experiment does not resolve: {e}\n{rendered}"));
    assert_eq!(again, exp, "render/parse round trip\n{rendered}");
    assert_eq!(config::render(&again), rendered, "render is not a fixed point");
    let _ = limits::estimate_run(&exp, true).check(&limits, false);
    simulate_small(exp);
}

/// Simulate one replication of each strategy when the run is small (bounded time per input).
fn simulate_small(mut exp: ExperimentSpec) {
    exp.replications = 1;
    exp.limits.max_events = exp.limits.max_events.min(200_000);
    let tight = WorkLimits { max_requests: 5_000, max_memory_mb: 32, ..WorkLimits::default() };
    if limits::estimate_run(&exp, false).check(&tight, false).is_err() {
        return;
    }
    for s in &exp.strategies {
        match prefixsim::model::simulate_detailed(&exp, s, 0)
            .map(|d| d.metrics)
            .map_err(RunError::from)
        {
            Ok(m) => {
                let bad = m.scalars().iter().position(|x| !x.is_finite());
                assert!(
                    bad.is_none(),
                    "a non-finite metric ({bad:?}) for {}",
                    config::render(&exp)
                );
            }
            Err(RunError::Input(_)) => {}
            Err(RunError::Internal(e)) => {
                panic!("a bug on valid input: {e}\n{}", config::render(&exp))
            }
            // Only a stopped `Watch` interrupts a run, and none is installed here.
            Err(RunError::Interrupted) => panic!("interrupted with no watch: a bug"),
        }
    }
}

/// The `[sweep]` grammar: a table of axes (lists, ranges, zip groups) and, as plain strings,
/// a range and tune's `--range` and `--objective`.
pub fn sweep_spec(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = spec::parse_range(&text);
    let _ = tune::parse_values(&text);
    let _ = tune::Objective::parse(&text, None);
    let Ok(table) = text.parse::<toml::Table>() else { return };
    let Some(sweep) = table.get("sweep").and_then(toml::Value::as_table) else { return };
    let Ok(grid) = spec::Grid::from_table(sweep, &spec::key_order(&text)) else { return };
    let n = grid.points();
    assert!(n >= 1);
    for i in [0, n / 2, n - 1] {
        assert_eq!(grid.point(i).len(), grid.axes.len());
    }
}

fn trace(data: &[u8], format: Format, name: &str) {
    let path = scratch().join(name);
    std::fs::write(&path, data).expect("the scratch file is writable");
    for lenient in [false, true] {
        let mut settings = ReplaySettings::new(format);
        settings.lenient = lenient;
        let base = settings.cache.clone();
        let mut small = base.clone();
        (small.label, small.capacity_tokens) = ("small".into(), Some(4096));
        match replay::replay(&path, &settings, &[base, small]) {
            Ok(r) => assert_eq!(r.choices.len(), 2),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

/// The Mooncake reader (JSON lines of `timestamp`, `input_length`, `hash_ids`).
pub fn trace_mooncake(data: &[u8]) {
    trace(data, Format::Mooncake, "trace.jsonl");
}

/// The Claude Code session reader (one JSON object per conversation).
pub fn trace_claude_code(data: &[u8]) {
    trace(data, Format::ClaudeCode, "session.json");
}

/// The request-bodies reader (JSON lines of `timestamp_ms`, `body`).
pub fn trace_requests(data: &[u8]) {
    trace(data, Format::Requests, "requests.jsonl");
}

/// The result-file names `results` writes its input to, chosen by the input's first byte.
pub const RESULT_FILES: [&str; 7] = [
    "summary.csv",
    "runs.csv",
    "trace.csv",
    "tune.json",
    "replay.json",
    "manifest.json",
    "histograms/latency.hlog",
];

/// The result-file readers and everything drawn from them: the first byte picks the file
/// (`RESULT_FILES`), the rest is its content, written into a directory of a complete run; the
/// directory is read, every figure drawn as SVG and the report built. Bad files are errors.
pub fn results(data: &[u8]) {
    let Some((&which, content)) = data.split_first() else { return };
    let dir = scratch().join("results");
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(base_results(), &dir);
    let name = RESULT_FILES[which as usize % RESULT_FILES.len()];
    std::fs::write(dir.join(name), content).expect("the scratch file is writable");
    let r = match prefixsim::results::Results::load(&dir) {
        Ok(r) => r,
        Err(e) => return assert!(!e.to_string().is_empty()),
    };
    let figures = prefixsim::plot::figures(&r);
    for f in &figures {
        if let Err(e) = prefixsim::plot::render_svg(f) {
            panic!("figure {} of valid results failed: {e}", f.name);
        }
    }
    let _ = prefixsim::report::build::build(&r, &figures).to_markdown();
}

/// A complete `run --out --trace` directory (a tiny experiment), made once per process.
pub fn base_results() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch().join("base");
        let text = "name = \"fuzz\"\nreplications = 2\nstrategies = [\"eager\", \"prewarm\"]\n\
                    [workload]\nagents = 3\nturns = \"const(2)\"\n";
        let exp = prefixsim::Experiment::from_toml(text).expect("the base experiment resolves");
        let opts = prefixsim::RunOptions {
            jobs: Some(1),
            out: Some(dir.clone()),
            trace: true,
            ..Default::default()
        };
        exp.run(&opts).expect("the base runs and writes");
        dir
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("the scratch directory is writable");
    for e in std::fs::read_dir(from).expect("the base exists") {
        let p = e.expect("a directory entry").path();
        let dest = to.join(p.file_name().expect("a file name"));
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("the scratch directory is writable");
        }
    }
}

/// Seed inputs of `target` (valid examples the mutator starts from).
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |p: PathBuf| std::fs::read(p).unwrap_or_default();
    match target {
        "experiment" => {
            let mut out: Vec<Vec<u8>> = ["default", "drop_tool_vs_deny", "hold_vs_prefix_size", "warm_vs_cold_parent"]
                .iter()
                .map(|n| read(root.join("experiments").join(format!("{n}.toml"))))
                .collect();
            out.push(b"replications = 2\n[workload]\nagents = 3\nparent_warm = true\n%%\nworkload.parent_tokens=0\n".to_vec());
            out.push(b"replications = 1\n[rate_limits]\nrpm = 50\n[limits]\nmax_events = 1000\n".to_vec());
            out
        }
        "sweep_spec" => vec![
            b"[sweep]\n\"workload.agents\" = \"1..64 x2\"\nmax_wait = \"0s..10s step 500ms\"\n".to_vec(),
            b"[sweep]\nzip = [\"a\", \"b\"]\na = [1, 2]\nb = [3, 4]\nc = [5.5, 6.5]\n".to_vec(),
            b"0s..10s step 1s".to_vec(),
            b"cost_subject_to_p99_launch_wait<=2s".to_vec(),
        ],
        "trace_mooncake" => vec![
            b"{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 10, \"hash_ids\": [1, 2]}\n\
              {\"timestamp\": 1500, \"input_length\": 1600, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}\n"
                .to_vec(),
        ],
        "trace_claude_code" => vec![
            br#"{"id": "c1", "block_size": 64, "hash_id_scope": "local", "requests": [
              {"t": 0.0, "type": "n", "model": "claude-opus-4-5", "in": 128, "out": 10, "hash_ids": [1, 2]},
              {"t": 5.0, "type": "subagent", "duration_ms": 2000.0, "requests": [
                {"t": 0.0, "type": "n", "model": "claude-haiku-4-5", "in": 130, "out": 10, "hash_ids": [10, 11]}]},
              {"t": 250.0, "type": "n", "model": "claude-opus-4-5", "in": 200, "out": 10, "hash_ids": [1, 2, 3]}]}"#
                .to_vec(),
        ],
        "trace_requests" => vec![
            br#"{"timestamp_ms": 0, "conversation": "a", "output_tokens": 10, "body": {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}], "messages": [{"role": "user", "content": "hello"}]}}
{"timestamp_ms": 2000, "conversation": "a", "body": {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [{"type": "text", "text": "hello again", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}}
"#
            .to_vec(),
        ],
        "results" => RESULT_FILES
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut v = vec![i as u8];
                v.extend(read(base_results().join(name)));
                v
            })
            .chain(std::iter::once({
                let mut v = vec![3u8];
                v.extend(TUNE_JSON.as_bytes());
                v
            }))
            .collect(),
        _ => Vec::new(),
    }
}

/// A small tune.json (the base run has none).
const TUNE_JSON: &str = r#"{"name": "fuzz", "question": "", "param": "max_wait", "strategy": "wait_first(max_wait=5s)",
 "objective": "cost", "replications": 3, "recommended": 2.0, "recommended_label": "2s", "recommended_objective": 1.5,
 "recommended_ci95": 0.1, "flat": false, "refine_rounds": 0, "notes": [], "candidates": [
 {"value": 0.0, "label": "0s", "objective": 2.0, "objective_ci95": 0.1, "cost_usd": 2.0, "cost_ci95": 0.1, "launch_wait_pooled_p99_s": 0.0, "makespan_p95_s": 30.0, "feasible": true},
 {"value": 2.0, "label": "2s", "objective": 1.5, "objective_ci95": 0.1, "cost_usd": 1.5, "cost_ci95": 0.1, "launch_wait_pooled_p99_s": 2.0, "makespan_p95_s": 32.0, "feasible": true},
 {"value": 5.0, "label": "5s", "objective": 1.5, "objective_ci95": 0.1, "cost_usd": 1.5, "cost_ci95": 0.1, "launch_wait_pooled_p99_s": 5.0, "makespan_p95_s": 35.0, "feasible": true}]}"#;

/// Tokens the mutator splices in: numbers at the edges of every range, odd bytes, keys.
pub const DICTIONARY: &[&str] = &[
    "1e308",
    "-1.7e308",
    "1.7e308",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "1",
    "-0.0",
    "1e-300",
    "18446744073709551615",
    "9223372036854775807",
    "4294967295",
    "1000000000",
    "1e30",
    "\"\"",
    "[]",
    "{}",
    ",",
    "\n",
    "\"",
    "=",
    ".",
    "(",
    ")",
    "null",
    "true",
    "false",
    "\"0us\"",
    "\"1us\"",
    "\"24h\"",
    "\"100000000h\"",
    "const(0)",
    "uniform(0, 1e9)",
    "lognormal(median=2, p90=1e9)",
    "exp(mean=1e9)",
    "empirical([0, 1e9])",
    "empirical(file=/dev/zero)",
    "\"1..1e18 x1.0001\"",
    "\"0s..10s step 0s\"",
    "x2",
    "step 1",
    "[sweep]",
    "[limits]",
    "[workload]",
    "[rate_limits]",
    "[model_params]",
    "[cache]",
    "workload.agents",
    "workload.turns",
    "workload.parent_tokens",
    "workload.parent_warm",
    "workload.parent_turn_every",
    "workload.kind",
    "replications",
    "strategies",
    "sweep",
    "limits.horizon",
    "limits.max_events",
    "limits.max_points",
    "rate_limits.rpm",
    "rate_limits.itpm",
    "model_params.input_usd_per_mtok",
    "cache.capacity_tokens",
    "cache.policy",
    "every-block",
    "prewarm",
    "sequential",
    "wait_first(max_wait=0s)",
    "stagger(interval=0s)",
    "fork_drop_tool(tool=Bash)",
    "btw",
    "subagent",
    "\"hash_ids\"",
    "\"timestamp\"",
    "\"input_length\"",
    "\"block_size\"",
    "\"requests\"",
    "\"cache_control\"",
    "{\"type\": \"ephemeral\"}",
    "\"messages\"",
    "\"body\"",
    "\"candidates\"",
    "\"objective_ci95\"",
    "\"value\"",
    "point",
    "strategy",
    "_ci95",
];
