//! The fixtures of the plot tests: tiny result directories written in the format of README.md,
//! "Result files", from closed-form toy numbers (not a simulation): enough for every figure
//! kind, small enough to keep the tests fast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use prefixsim::metrics::{LATENCY_NAMES, SCALAR_NAMES};
use prefixsim::results::slug;

/// A fresh, empty directory under the target dir (no wall clock, no randomness in its name).
pub(super) fn scratch(name: &str) -> PathBuf {
    crate::common::scratch("plot-tests", name)
}

pub(super) fn hdr_line(values_us: &[u64]) -> String {
    use base64::Engine;
    let mut h = Histogram::<u64>::new_with_bounds(1, 36_000_000_000, 3).unwrap();
    for v in values_us {
        h.record(*v).unwrap();
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(&h, &mut bytes).unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A low-discrepancy spread in [0, 1) (golden ratio), deterministic.
pub(super) fn spread(i: usize) -> f64 {
    (i as f64 * 0.618_033_988_75).fract()
}

/// Toy closed forms for one (agents, parent tokens, strategy, replication): every scalar of
/// SCALAR_NAMES, and the latency samples (us) of each LATENCY_NAMES histogram.
pub(super) fn toy_run(
    agents: u64,
    tokens: u64,
    strategy: &str,
    cap_s: f64,
    rep: u64,
) -> (Vec<f64>, Vec<Vec<u64>>) {
    let usd = 3e-6; // $3 per Mtok input
    let prefill_s = tokens as f64 / 20_000.0;
    let (writes, reads, hold_s, gap_s) = match strategy {
        "eager" => (agents, 0, 0.0, 0.0),
        s if s.starts_with("wait_first") => (1, agents - 1, prefill_s.min(cap_s) + 0.5, 0.0),
        _ => (1, agents - 1, 0.0, 1.0),
    };
    let jitter = 1.0 + 0.02 * (rep as f64 - 1.0);
    let cost = (writes * tokens) as f64 * 1.25 * usd + (reads * tokens) as f64 * 0.1 * usd;
    let uncached_cost = (agents * tokens) as f64 * usd;
    let makespan_s = (0.5 + prefill_s + 2.0 + hold_s + gap_s * (agents - 1) as f64) * jitter;
    let hit = reads as f64 / agents as f64;
    let launch_p99 = hold_s.max(gap_s * (agents - 1) as f64);
    let scalars: BTreeMap<&str, f64> = [
        ("cost_usd", cost * jitter),
        ("cost_relative", cost / uncached_cost),
        ("hit_rate", hit),
        ("requests", agents as f64),
        ("requests_with_hit", reads as f64),
        ("redundant_writes", (writes - 1) as f64),
        ("cache_read", (reads * tokens) as f64),
        ("cache_write", (writes * tokens) as f64),
        ("makespan_s", makespan_s),
        ("throughput_agents_per_min", agents as f64 / makespan_s * 60.0),
        ("launch_wait_p99_s", launch_p99),
        ("completion_p99_s", makespan_s),
    ]
    .into_iter()
    .collect();
    let row = SCALAR_NAMES.iter().map(|n| scalars.get(n).copied().unwrap_or(0.0)).collect();
    let n = 60usize;
    let sample = |base_s: f64, i: usize| {
        ((base_s * (0.6 + 0.8 * spread(i + rep as usize * n))) * 1e6) as u64
    };
    let launch: Vec<u64> = (0..n).map(|i| if i == 0 { 0 } else { sample(launch_p99, i) }).collect();
    let ttft: Vec<u64> = (0..n).map(|i| sample(0.5 + prefill_s * (1.0 - hit), i)).collect();
    let completion: Vec<u64> = (0..n).map(|i| sample(makespan_s, i)).collect();
    (row, vec![launch, ttft, completion])
}

pub(super) fn hold_cap_s(value: &str) -> f64 {
    value.trim_end_matches('s').parse().unwrap()
}

pub(super) struct Fixture<'a> {
    pub(super) name: &'a str,
    pub(super) kind: &'a str,
    pub(super) strategies: &'a [&'a str],
    /// (key, values as written).
    pub(super) axes: Vec<(&'a str, Vec<&'a str>)>,
    pub(super) replications: u64,
    /// Keep only these points of the grid (a `zip`): the index of each axis' value.
    pub(super) keep: fn(&[usize]) -> bool,
}

pub(super) fn every_point(_: &[usize]) -> bool {
    true
}

/// Every combination of the axes' values, first axis slowest.
pub(super) fn grid(axes: &[(&str, Vec<&str>)]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for (_, values) in axes {
        out = out
            .into_iter()
            .flat_map(|p: Vec<String>| {
                values.iter().map(move |v| [p.clone(), vec![v.to_string()]].concat())
            })
            .collect();
    }
    out
}

pub(super) fn mean_sd_ci(v: &[f64]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = if n > 1.0 {
        (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, sd, 4.303 * sd / n.sqrt()) // t(0.975, 2 df) = 4.303 for 3 replications
}

/// Write manifest.json, summary.csv, runs.csv and histograms/ for `f` into `dir`.
pub(super) fn write_fixture(dir: &Path, f: &Fixture) {
    let keys: Vec<&str> = f.axes.iter().map(|a| a.0).collect();
    let points: Vec<Vec<String>> = grid(&f.axes)
        .into_iter()
        .filter(|p| {
            let idx: Vec<usize> = p
                .iter()
                .zip(&f.axes)
                .map(|(v, a)| a.1.iter().position(|x| x == v).unwrap())
                .collect();
            (f.keep)(&idx)
        })
        .collect();
    let axes_json: Vec<serde_json::Value> =
        f.axes.iter().map(|(k, v)| serde_json::json!({"key": k, "values": v})).collect();
    let manifest = serde_json::json!({
        "prefixsim_version": "0.1.0", "kind": f.kind, "name": f.name,
        "question": "Does holding the fan-out until the first response begins pay off?",
        "seed": 42, "replications": f.replications, "strategies": f.strategies,
        "axes": axes_json, "points": points.len(), "shard": null,
        "content_hash": "0".repeat(64),
        "experiment": "name = \"toy\"\nseed = 42\n[workload]\nagents = 4\n",
    });
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap())
        .unwrap();
    let lead: String = keys.iter().map(|k| format!("{k},")).collect();
    let mut summary = format!("point,{lead}strategy,replications");
    for m in SCALAR_NAMES {
        summary.push_str(&format!(",{m}_mean,{m}_sd,{m}_ci95"));
    }
    for l in LATENCY_NAMES {
        summary.push_str(&format!(",{l}_pooled_p50_s,{l}_pooled_p90_s,{l}_pooled_p99_s,{l}_pooled_p999_s,{l}_min_s,{l}_max_s"));
    }
    summary.push('\n');
    let mut runs = format!("point,{lead}replication,strategy,{}\n", SCALAR_NAMES.join(","));
    std::fs::create_dir_all(dir.join("histograms")).unwrap();
    for (p, values) in points.iter().enumerate() {
        let get = |key: &str, default: u64| {
            keys.iter().position(|k| *k == key).map_or(default, |i| values[i].parse().unwrap())
        };
        let (agents, tokens) = (get("workload.agents", 8), get("workload.parent_tokens", 20_000));
        let cols: String = values.iter().map(|v| format!("{v},")).collect();
        for s in f.strategies {
            // Like `sweep` over a strategy's own parameter: the label carries the point's value.
            let label = match keys.iter().position(|k| *k == "wait_first.max_wait") {
                Some(i) if s.starts_with("wait_first") => {
                    format!("wait_first(max_wait={})", values[i])
                }
                _ => s.to_string(),
            };
            let s = label.as_str();
            let mut reps = Vec::new();
            let mut samples = vec![Vec::new(); 3];
            for r in 0..f.replications {
                let cap_s = keys
                    .iter()
                    .position(|k| *k == "wait_first.max_wait")
                    .map_or(5.0, |i| hold_cap_s(&values[i]));
                let (row, lat) = toy_run(agents, tokens, s, cap_s, r);
                let fields: Vec<String> = row.iter().map(|x| format!("{x:.6}")).collect();
                runs.push_str(&format!("{p},{cols}{r},{s},{}\n", fields.join(",")));
                for (acc, l) in samples.iter_mut().zip(lat) {
                    acc.extend(l);
                }
                reps.push(row);
            }
            summary.push_str(&format!("{p},{cols}{s},{}", f.replications));
            for m in 0..SCALAR_NAMES.len() {
                let (mean, sd, ci) = mean_sd_ci(&reps.iter().map(|r| r[m]).collect::<Vec<_>>());
                summary.push_str(&format!(",{mean:.6},{sd:.6},{ci:.6}"));
            }
            for (l, acc) in LATENCY_NAMES.iter().zip(&samples) {
                let mut sorted = acc.clone();
                sorted.sort_unstable();
                let q = |q: f64| {
                    sorted[((q * sorted.len() as f64) as usize).min(sorted.len() - 1)] as f64 / 1e6
                };
                summary.push_str(&format!(
                    ",{:.6},{:.6},{:.6},{:.6},{:.6},{:.6}",
                    q(0.5),
                    q(0.9),
                    q(0.99),
                    q(0.999),
                    q(0.0),
                    q(1.0)
                ));
                let file = dir.join("histograms").join(format!("p{p:05}_{}_{l}.hdr", slug(s)));
                std::fs::write(file, hdr_line(acc) + "\n").unwrap();
            }
            summary.push('\n');
        }
    }
    std::fs::write(dir.join("summary.csv"), summary).unwrap();
    std::fs::write(dir.join("runs.csv"), runs).unwrap();
}

/// trace.csv for a run of 3 agents per strategy: eager (3 writers), wait_first (hold, hits).
pub(super) fn write_trace(dir: &Path) {
    let mut t = String::from("strategy,agent,request,segment,start_s,end_s,outcome\n");
    for a in 0..3u32 {
        t.push_str(&format!(
            "eager,{a},0,prefill,0.000000,1.000000,{}\n",
            if a == 0 { "miss" } else { "redundant_write" }
        ));
        t.push_str(&format!("eager,{a},0,decode,1.000000,3.000000,none\n"));
        t.push_str(&format!("eager,{a},1,tool,3.000000,5.000000,none\n"));
        t.push_str(&format!("eager,{a},1,prefill,5.000000,5.100000,hit\n"));
        t.push_str(&format!("eager,{a},1,decode,5.100000,7.000000,none\n"));
    }
    t.push_str("eager,0,0,entry_ready,1.000000,1.000000,none\n");
    let w = "wait_first(max_wait=5s)";
    t.push_str(&format!(
        "{w},0,0,prefill,0.000000,1.000000,miss\n{w},0,0,decode,1.000000,3.000000,none\n"
    ));
    // A ready delay of 0.25 s: the entry is readable at the end of its entry_ready segment.
    t.push_str(&format!("{w},0,0,entry_ready,1.000000,1.250000,none\n"));
    for a in 1..3u32 {
        t.push_str(&format!("{w},{a},0,hold,0.000000,1.000000,none\n"));
        t.push_str(&format!("{w},{a},0,rate_limit,1.000000,1.500000,none\n"));
        t.push_str(&format!("{w},{a},0,prefill,1.500000,1.600000,hit\n"));
        t.push_str(&format!("{w},{a},0,decode,1.600000,3.600000,none\n"));
    }
    std::fs::write(dir.join("trace.csv"), t).unwrap();
}

pub(super) const STRATEGIES: [&str; 3] =
    ["eager", "wait_first(max_wait=5s)", "stagger(interval=1s)"];

pub(super) fn sweep2_fixture(name: &str) -> PathBuf {
    let dir = scratch(name);
    let f = Fixture {
        name: "toy-sweep",
        kind: "sweep",
        strategies: &STRATEGIES,
        axes: vec![
            ("workload.agents", vec!["2", "4", "8"]),
            ("workload.parent_tokens", vec!["10000", "50000"]),
        ],
        replications: 3,
        keep: every_point,
    };
    write_fixture(&dir, &f);
    dir
}

pub(super) fn run_fixture(name: &str) -> PathBuf {
    let dir = scratch(name);
    let f = Fixture {
        name: "toy-run",
        kind: "run",
        strategies: &STRATEGIES[..2],
        axes: vec![],
        replications: 3,
        keep: every_point,
    };
    write_fixture(&dir, &f);
    write_trace(&dir);
    dir
}

/// A run of seven strategies: more than can be labelled directly.
pub(super) fn many_fixture(name: &str) -> PathBuf {
    let dir = scratch(name);
    let f = Fixture {
        name: "toy-many",
        kind: "run",
        strategies: &MANY,
        axes: vec![],
        replications: 3,
        keep: every_point,
    };
    write_fixture(&dir, &f);
    dir
}

pub(super) const MANY: [&str; 7] = [
    "eager",
    "wait_first(max_wait=1s)",
    "wait_first(max_wait=2s)",
    "wait_first(max_wait=5s)",
    "wait_first(max_wait=10s)",
    "stagger(interval=1s)",
    "prewarm",
];

pub(super) fn hold_fixture(name: &str) -> PathBuf {
    let dir = scratch(name);
    let f = Fixture {
        name: "toy-hold",
        kind: "sweep",
        strategies: &STRATEGIES[..2],
        axes: vec![
            ("wait_first.max_wait", vec!["1s", "2s", "5s", "10s"]),
            ("workload.parent_tokens", vec!["200000"]),
        ],
        replications: 3,
        keep: every_point,
    };
    write_fixture(&dir, &f);
    dir
}
