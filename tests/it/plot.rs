//! Tests: plot and report. Fixtures are tiny result directories written here, in the format of
//! README.md, "Result files", from closed-form toy numbers (not a simulation): enough for
//! every figure kind, small enough to keep the tests fast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use prefixsim::metrics::{LATENCY_NAMES, SCALAR_NAMES};
use prefixsim::plot::{self, Spec};
use prefixsim::results::{slug, Results};

use super::common::bin;

// ---------------------------------------------------------------- fixtures

/// A fresh, empty directory under the target dir (no wall clock, no randomness in its name).
fn scratch(name: &str) -> PathBuf {
    super::common::scratch("plot-tests", name)
}

fn hdr_line(values_us: &[u64]) -> String {
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
fn spread(i: usize) -> f64 {
    (i as f64 * 0.618_033_988_75).fract()
}

/// Toy closed forms for one (agents, parent tokens, strategy, replication): every scalar of
/// SCALAR_NAMES, and the latency samples (us) of each LATENCY_NAMES histogram.
fn toy_run(
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

fn hold_cap_s(value: &str) -> f64 {
    value.trim_end_matches('s').parse().unwrap()
}

struct Fixture<'a> {
    name: &'a str,
    kind: &'a str,
    strategies: &'a [&'a str],
    /// (key, values as written).
    axes: Vec<(&'a str, Vec<&'a str>)>,
    replications: u64,
    /// Keep only these points of the grid (a `zip`): the index of each axis' value.
    keep: fn(&[usize]) -> bool,
}

fn every_point(_: &[usize]) -> bool {
    true
}

/// Every combination of the axes' values, first axis slowest.
fn grid(axes: &[(&str, Vec<&str>)]) -> Vec<Vec<String>> {
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

fn mean_sd_ci(v: &[f64]) -> (f64, f64, f64) {
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
fn write_fixture(dir: &Path, f: &Fixture) {
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
fn write_trace(dir: &Path) {
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

const STRATEGIES: [&str; 3] = ["eager", "wait_first(max_wait=5s)", "stagger(interval=1s)"];

fn sweep2_fixture(name: &str) -> PathBuf {
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

fn run_fixture(name: &str) -> PathBuf {
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
fn many_fixture(name: &str) -> PathBuf {
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

const MANY: [&str; 7] = [
    "eager",
    "wait_first(max_wait=1s)",
    "wait_first(max_wait=2s)",
    "wait_first(max_wait=5s)",
    "wait_first(max_wait=10s)",
    "stagger(interval=1s)",
    "prewarm",
];

fn hold_fixture(name: &str) -> PathBuf {
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

// ---------------------------------------------------------------- checks

/// Well-formed XML with an `<svg>` root: every tag closed in order, quoted attributes,
/// text without a raw `<` or a bare `&`; no NaN or infinite coordinate.
fn assert_svg(svg: &str, name: &str) {
    let body = svg.trim_start();
    let body = match body.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").expect("XML declaration closed").1.trim_start(),
        None => body,
    };
    assert!(body.starts_with("<svg"), "{name}: the root is not <svg>");
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..text.len().min(i + 8)];
            let known = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"];
            assert!(known.iter().any(|e| ent.starts_with(e)), "{name}: bare & in `{text}`");
        }
        let close = rest[open..].find('>').map(|c| open + c);
        let close = close.unwrap_or_else(|| panic!("{name}: unclosed tag"));
        let tag = &rest[open + 1..close];
        assert_eq!(tag.matches('"').count() % 2, 0, "{name}: unbalanced quotes in <{tag}>");
        if let Some(end) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(end.trim()), "{name}: </{end}> closes the wrong element");
        } else if !tag.ends_with('/') && !tag.starts_with('!') {
            stack.push(tag.split_whitespace().next().unwrap_or(""));
        }
        rest = &rest[close + 1..];
        if stack.is_empty() {
            break;
        }
    }
    assert!(stack.is_empty() && rest.trim().is_empty(), "{name}: elements left open: {stack:?}");
    assert!(!svg.contains("NaN") && !svg.contains("inf\""), "{name}: non-finite coordinate");
}

/// Decode a PNG: (width, height, RGB(A) bytes, channels).
pub(crate) fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<u8>, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf, info.color_type.samples())
}

/// (share of non-white pixels, number of distinct colours among them, capped).
pub(crate) fn ink(rgb: &[u8], channels: usize) -> (f64, usize) {
    let mut colours = std::collections::BTreeSet::new();
    let mut non_white = 0usize;
    for px in rgb.chunks(channels) {
        if px[..3].iter().any(|c| *c < 240) {
            non_white += 1;
            if colours.len() < 10_000 {
                colours.insert((px[0] / 16, px[1] / 16, px[2] / 16));
            }
        }
    }
    (non_white as f64 / (rgb.len() / channels) as f64, colours.len())
}

fn figure<'a>(figs: &'a [plot::Figure], name: &str) -> &'a plot::Figure {
    figs.iter().find(|f| f.name == name).unwrap_or_else(|| {
        panic!("no figure {name}; have {:?}", figs.iter().map(|f| &f.name).collect::<Vec<_>>())
    })
}

/// One strategy; the parent's pace zipped with its exchange size, crossed with agent kinds:
/// `[sweep] parent_turn_every x parent_turn_tokens (zip) x kind`.
fn one_strategy_zip_fixture(name: &str) -> PathBuf {
    let dir = scratch(name);
    let f = Fixture {
        name: "toy-kinds",
        kind: "sweep",
        strategies: &STRATEGIES[2..],
        axes: vec![
            ("workload.parent_turn_every", vec!["0s", "1min", "2s"]),
            ("workload.parent_turn_tokens", vec!["const(2000)", "const(67)"]),
            ("workload.kind", vec!["fork", "fork_drop_tool(tool=Bash)"]),
        ],
        replications: 3,
        // The zip: 0s and 1min go with 2000 tokens, 2s with 67.
        keep: |i| (i[0] == 2) == (i[1] == 1),
    };
    write_fixture(&dir, &f);
    dir
}

// ---------------------------------------------------------------- tests

#[test]
fn one_strategy_draws_a_line_per_value_of_the_other_axis_and_zips_share_figures() {
    let r = Results::load(&one_strategy_zip_fixture("one-strategy-zip")).unwrap();
    let figs = plot::figures(&r);
    let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
    // parent_turn_tokens follows parent_turn_every (the zip): no figures of its own.
    assert!(!names.iter().any(|n| n.ends_with("_vs_workload_parent_turn_tokens")), "{names:?}");
    let Spec::Metric(pace) = &figure(&figs, "cost_vs_workload_parent_turn_every").spec else {
        panic!("a metric figure")
    };
    // One line per kind (not one per strategy), each with a point at every pace: the zipped
    // partner is not held at one value, which would leave one point per line.
    let labels: Vec<&str> = pace.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["kind = fork", "kind = fork_drop_tool(tool=Bash)"]);
    assert!(pace.series.iter().all(|s| s.points.len() == 3), "{:?}", pace.series);
    let Spec::Metric(kind) = &figure(&figs, "cost_vs_workload_kind").spec else {
        panic!("a metric figure")
    };
    assert_eq!(kind.series.len(), 3, "one line per pace");
    let Spec::Heatmap(h) = &figure(&figs, "heatmap_cost_saved").spec else { panic!("heatmap") };
    // The zipped partner is named with its axis: its values move with x.
    assert_eq!(
        (h.x_title.as_str(), h.y_title.as_str()),
        ("workload.parent_turn_every / workload.parent_turn_tokens", "workload.kind")
    );
    assert_eq!(h.cells.len(), 6, "3 paces x 2 kinds, none left empty by the zip");
}

#[test]
fn every_figure_kind_is_a_valid_svg_with_its_axis_titles() {
    // The checker itself can fail.
    for bad in ["<svg><g></svg>", "<svg>a & b</svg>", "<svg><text x=\"1>t</text></svg>", "<g></g>"]
    {
        assert!(std::panic::catch_unwind(|| assert_svg(bad, "bad")).is_err(), "{bad} passed");
    }
    let sweep = Results::load(&sweep2_fixture("kinds-sweep")).unwrap();
    let run = Results::load(&run_fixture("kinds-run")).unwrap();
    let figs: Vec<plot::Figure> =
        plot::figures(&sweep).into_iter().chain(plot::figures(&run)).collect();
    let expect: [(&str, &[&str]); 6] = [
        ("cost_vs_workload_agents", &["workload.agents (agents)", "Cost per run (USD)", "eager"]),
        ("heatmap_cost_saved", &["workload.agents", "workload.parent_tokens", "Cost saved (%)"]),
        (
            "pareto_cost_makespan",
            &["Makespan p99 over replications (s)", "Mean cost per run (USD)", "frontier"],
        ),
        (
            "ttft_percentiles",
            &["Percentile (log scale of 1/(1-p))", "Time to first token (s)", "99%", "90%"],
        ),
        ("completion_histogram", &["Agent completion time (s)", "Share of samples (%)"]),
        (
            "timeline_wait_first_max_wait_5s_",
            &["Simulated time (s)", "Agent", "hold", "request: hit", "first entry ready (1.25 s)"],
        ),
    ];
    let mut kinds = std::collections::BTreeSet::new();
    for (name, titles) in expect {
        let f = figure(&figs, name);
        kinds.insert(f.spec.kind());
        let svg = plot::render_svg(f).unwrap();
        assert_svg(&svg, name);
        // Each title is the text of a `<text>` element (or a wrapped legend label's head).
        let texts = svg_texts(&svg);
        for t in titles {
            assert!(texts.iter().any(|x| x.text.contains(t)), "{name}: no text `{t}`");
        }
    }
    assert_eq!(kinds.len(), 6, "metric, heatmap, pareto, percentiles, histogram, timeline");
}

#[test]
fn the_hold_cap_axis_marks_the_5s_default() {
    let r = Results::load(&hold_fixture("hold")).unwrap();
    let figs = plot::figures(&r);
    let f = figure(&figs, "cost_vs_wait_first_max_wait");
    let Spec::Metric(m) = &f.spec else { panic!("metric figure") };
    // 1s, 2s, 5s, 10s span 10x: a linear axis to scale, 5 s at 5.
    assert_eq!(m.x.positions, [1.0, 2.0, 5.0, 10.0]);
    assert_eq!(m.x.marker.as_ref().map(|m| m.0), Some(5.0));
    // The per-point labels wait_first(max_wait=1s), ..=2s, ... are one series.
    let labels: Vec<&str> = m.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["eager", "wait_first(max_wait=x)"]);
    assert!(m.series.iter().all(|s| s.points.len() == 4), "four points per line");
    assert!(r.histograms.keys().any(|k| k.1 == "wait_first(max_wait=x)"), "histograms follow");
    let svg = plot::render_svg(f).unwrap();
    assert!(svg.contains("default hold cap 5 s"), "marker label");
    assert!(svg.contains("wait_first.max_wait (s)"), "x title with unit");
}

#[test]
fn a_family_of_hold_caps_becomes_an_x_axis_with_references() {
    let dir = scratch("family");
    let s =
        ["eager", "wait_first(max_wait=1s)", "wait_first(max_wait=5s)", "wait_first(max_wait=10s)"];
    let f = Fixture {
        name: "toy-family",
        kind: "run",
        strategies: &s,
        axes: vec![],
        replications: 3,
        keep: every_point,
    };
    write_fixture(&dir, &f);
    let figs = plot::figures(&Results::load(&dir).unwrap());
    let fig = figure(&figs, "cost_vs_wait_first_max_wait");
    let Spec::Metric(m) = &fig.spec else { panic!("metric figure") };
    // 1, 5, 10 s are drawn to scale (10x: linear), 5 s at 5.
    assert_eq!(m.x.marker.as_ref().map(|m| m.0), Some(5.0));
    let labels: Vec<&str> = m.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["wait_first", "eager"], "the family, then eager as a flat reference");
    assert_eq!(m.series[1].points[0].1, m.series[1].points[1].1, "reference is flat");
    assert!(fig.caption.contains("at wait_first.max_wait = 1s"), "{}", fig.caption);
}

#[test]
fn png_decodes_and_is_drawn() {
    let r = Results::load(&run_fixture("png")).unwrap();
    let figs = plot::figures(&r);
    for name in ["timeline_eager", "launch_wait_percentiles"] {
        let bytes = plot::render_png(figure(&figs, name)).unwrap();
        let (w, h, rgb, ch) = decode_png(&bytes);
        assert_eq!((w, h), (1200, 750));
        let (share, colours) = ink(&rgb, ch);
        assert!(share > 0.02 && colours >= 4, "{name}: {share} ink, {colours} colours");
    }
}

#[test]
fn same_input_same_bytes_through_the_cli() {
    let dir = run_fixture("det");
    let (a, b) = (dir.join("a"), dir.join("b"));
    for out in [&a, &b] {
        let o = bin()
            .args(["plot", dir.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut names: Vec<String> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n.ends_with(".png")) && names.iter().any(|n| n.ends_with(".svg")));
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "no temporary files left");
    for n in &names {
        assert_eq!(
            std::fs::read(a.join(n)).unwrap(),
            std::fs::read(b.join(n)).unwrap(),
            "{n} differs"
        );
    }
}

#[test]
fn a_directory_without_results_exits_2() {
    let dir = scratch("empty");
    for cmd in ["plot", "report"] {
        let o = bin().args([cmd, dir.to_str().unwrap()]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("no results here"), "{cmd}: {err}");
    }
}

#[test]
fn a_malformed_summary_names_file_and_line_and_exits_2() {
    let dir = run_fixture("malformed");
    let text = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let broken = text.replacen(",eager,3,", ",eager,three,", 1);
    std::fs::write(dir.join("summary.csv"), broken).unwrap();
    let o = bin().args(["plot", dir.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("summary.csv:2") && err.contains("`three`"), "{err}");
}

#[test]
fn report_markdown_snapshot_of_a_tiny_sweep() {
    let r = Results::load(&sweep2_fixture("report-snap")).unwrap();
    // The covered-prefix figure's caption quotes the calibrated latency table, which a new fit
    // changes: it has its own closed-form tests, and stays out of this snapshot.
    let figs: Vec<plot::Figure> =
        plot::figures(&r).into_iter().filter(|f| f.name != "covered_prefix").collect();
    let md = prefixsim::report::build::build(&r, &figs).to_markdown();
    insta::assert_snapshot!("report_sweep_markdown", md);
}

#[test]
fn report_cli_writes_markdown_html_and_figures() {
    let dir = run_fixture("report-cli");
    let out = dir.join("out").join("review.md");
    let o = bin()
        .args(["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(&out).unwrap();
    let html = std::fs::read_to_string(out.with_extension("html")).unwrap();
    for f in ["pareto_cost_makespan", "timeline_eager", "ttft_percentiles"] {
        assert!(md.contains(&format!("]({f}.svg)")), "markdown links {f}");
        assert!(out.with_file_name(format!("{f}.svg")).exists(), "{f}.svg written");
    }
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(
        html.matches("src=\"data:image/png;base64,").count(),
        md.matches("](").count(),
        "one embedded image per figure"
    );
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"), "self-contained");
    assert!(md.contains("Lowest mean cost: `wait_first(max_wait=5s)`"), "{md}");
    // Same input, same bytes: a second report elsewhere is identical, HTML (PNGs) included.
    let again = dir.join("again").join("review.md");
    let o = bin()
        .args(["report", dir.to_str().unwrap(), "--out", again.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(std::fs::read_to_string(&again).unwrap(), md);
    assert!(std::fs::read_to_string(again.with_extension("html")).unwrap() == html, "HTML differs");
}

/// The browser the HTML test uses: $PREFIXSIM_CHROMIUM when set (only it: `none` skips), else
/// Debian's `chromium`.
pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PREFIXSIM_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.exists())
}

/// Pixels within 40 (per channel) of `c`.
fn pixels_near(rgb: &[u8], channels: usize, c: (u8, u8, u8)) -> usize {
    let near = |a: u8, b: u8| (a as i32 - b as i32).abs() <= 40;
    rgb.chunks(channels).filter(|p| near(p[0], c.0) && near(p[1], c.1) && near(p[2], c.2)).count()
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        // Written to the process's stderr directly (not `eprintln!`, which the test harness
        // captures), so the skip shows in every test log.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED html_report_renders_in_headless_chromium: no browser at /usr/bin/chromium \
             (apt-get install -y chromium, or set PREFIXSIM_CHROMIUM=/path/to/chrome)"
        );
        return;
    };
    let dir = run_fixture("chromium");
    let out = dir.join("out").join("report.md");
    let o = bin()
        .args(["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let shot = dir.join("shot.png");
    let profile = dir.join("profile");
    let url = format!("file://{}", out.with_extension("html").display());
    let mut child = Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .args(["--hide-scrollbars", "--window-size=1280,4200"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = std::time::Instant::now(); // a test's timeout, not simulated time
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (w, h, rgb, ch) = decode_png(&std::fs::read(&shot).expect("a screenshot"));
    assert_eq!((w, h), (1280, 4200));
    let (share, colours) = ink(&rgb, ch);
    // The page's own CSS has no saturated colour: strategy red and blue come only from drawn figures.
    let red = pixels_near(&rgb, ch, (214, 39, 40));
    let blue = pixels_near(&rgb, ch, (31, 119, 180));
    println!(
        "chromium screenshot: {:.1}% ink, {colours} colours, {red} red px, {blue} blue px",
        share * 100.0
    );
    assert!(share > 0.03 && colours > 20, "the page looks blank");
    assert!(red > 500 && blue > 500, "figures not drawn: {red} red, {blue} blue pixels");
}

#[test]
fn tune_and_replay_results_have_figures_and_report_sections() {
    let dir = scratch("tune-replay");
    let cand = |v: f64, cost: f64, wait: f64| {
        serde_json::json!({"value": v, "label": format!("{v}s"), "objective": cost, "objective_ci95": 0.1,
            "cost_usd": cost, "cost_ci95": 0.1, "launch_wait_pooled_p99_s": wait, "makespan_p95_s": 30.0, "feasible": true,
            "p_cap_before_first_token": if v < 3.1 { 1.0 } else { 0.0 }})
    };
    let tune = serde_json::json!({
        "param": "max_wait", "strategy": "wait_first(max_wait=5s)", "objective": "cost", "replications": 5,
        "recommended": 4.0, "recommended_label": "4s", "recommended_objective": 2.2, "recommended_ci95": 0.1,
        "flat": false, "notes": ["a note"],
        "candidates": [cand(0.0, 3.8, 0.0), cand(2.0, 3.8, 2.0), cand(4.0, 2.2, 3.1), cand(6.0, 2.2, 3.1)],
    });
    let ttl = |t: &str, s: f64, h: f64| serde_json::json!({"ttl": t, "ttl_s": s, "hit_rate": h});
    let replay = serde_json::json!({
        "kind": "replay", "trace": "toy.jsonl", "format": "mooncake", "requests": 10, "distinct_tokens": 1000,
        "model": "claude-sonnet-4.5", "winner": "cache.ttl=5m",
        "curves": {"hit_rate_vs_ttl": [ttl("30s", 30.0, 0.05), ttl("5m", 300.0, 0.3), ttl("1h", 3600.0, 0.37)]},
        "reuse_gap": {"hdr_v2_deflate_base64_us": hdr_line(&[1_000_000, 60_000_000, 400_000_000])},
        "results": [{"label": "cache.ttl=5m", "hit_rate": 0.3, "cost_usd": 4.5, "saving_usd": 0.4, "redundant_writes": 1}],
    });
    std::fs::write(dir.join("tune.json"), tune.to_string()).unwrap();
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    let r = Results::load(&dir).unwrap();
    let figs = plot::figures(&r);
    let tf = figure(&figs, "tune_objective");
    let Spec::Metric(m) = &tf.spec else { panic!("metric figure") };
    assert_eq!(m.highlight.as_ref().map(|h| h.0), Some(4.0), "recommendation marked at 4 s");
    assert_eq!(m.x.marker.as_ref().map(|h| h.0), Some(5.0), "default 5 s marked");
    let svg = plot::render_svg(tf).unwrap();
    assert!(svg.contains("Objective: cost (USD)") && svg.contains("max_wait (s)"));
    let svg = plot::render_svg(figure(&figs, "replay_hit_rate_vs_ttl")).unwrap();
    assert!(svg.contains("Token hit rate (%)") && svg.contains("TTL"));
    let f = figure(&figs, "replay_reuse_gap_percentiles");
    assert!(f.caption.contains("66.7% of reuses come within 5 min"), "{}", f.caption);
    let md = prefixsim::report::build::build(&r, &figs).to_markdown();
    assert!(md.contains("`tune` recommends `max_wait` = 4s for `wait_first(max_wait=5s)`"), "{md}");
    assert!(md.contains("| `cache.ttl=5m` | 30.0 | 4.50 | 0.400 | 1 |"), "{md}");
    // A wait_first tune: the share of runs whose cap fired first, as a figure and a column.
    let Spec::Metric(p) = &figure(&figs, "tune_p_cap_before_first_token").spec else {
        panic!("a metric figure")
    };
    let ys: Vec<f64> = p.series[0].points.iter().map(|q| q.1).collect();
    assert_eq!(ys, [1.0, 1.0, 0.0, 0.0]);
    assert!(md.contains("| cap before first token (share of runs) |"), "{md}");
    assert!(md.contains("| 4s | 2.2 ± 0.1 | 2.2 ± 0.1 | 3.1 | 30 | yes | 0 |"), "{md}");
}

// ---------------------------------------------------------------- the covered-prefix figure

/// A `<text>` of a figure's SVG as a viewer with DejaVu Sans draws it: its string (no-break
/// spaces read as spaces), its anchor on the baseline (x where `text-anchor` sets it, y the
/// baseline; turned with the text), whether it is turned, and the box its glyphs' ink
/// occupies in pixels (x0, y0, x1, y1), turned with the text.
#[derive(Debug, Clone, PartialEq)]
struct DrawnText {
    text: String,
    x: f64,
    y: f64,
    rotated: bool,
    bbox: (f64, f64, f64, f64),
}

/// Every `<text>` of an SVG, in drawing order, measured in the embedded font (the one measure
/// of text in these tests). Its baseline is `dy` below (x, y), its size `font-size` pixels to
/// the em, set from x as `text-anchor` says, turned about (x, y) by `transform`.
fn svg_texts(svg: &str) -> Vec<DrawnText> {
    use ab_glyph::{Font, FontRef};
    let faces = [dejavu::sans::regular(), dejavu::sans::bold()]
        .map(|b| FontRef::try_from_slice(b).expect("the embedded DejaVu"));
    let mut out = Vec::new();
    for part in svg.split("<text ").skip(1) {
        let (tag, rest) = part.split_once('>').expect("a closed tag");
        let tag = &format!(" {tag}");
        let content = rest.split("</text>").next().expect("a closed element").trim_matches('\n');
        let num = |n: &str| attr(tag, n).and_then(|v| v.parse::<f64>().ok()).expect(n);
        let (x, y, em) = (num("x"), num("y"), num("font-size"));
        let face = &faces[(attr(tag, "font-weight").as_deref() == Some("bold")) as usize];
        let k = em as f32 / face.units_per_em().expect("units per em");
        let dy = attr(tag, "dy").expect("dy");
        let baseline =
            y + em * dy.strip_suffix("em").and_then(|v| v.parse::<f64>().ok()).expect("dy in em");
        let text = content
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&");
        // Pen positions and ink, in the text's frame (x right, y down, pixels from the pen's
        // start on the baseline).
        let (mut pen, mut prev, mut ink) = (0f32, None, (f32::MAX, f32::MAX, f32::MIN, f32::MIN));
        for c in text.chars() {
            let id = face.glyph_id(c);
            pen += prev.map_or(0.0, |p| face.kern_unscaled(p, id) * k);
            if let Some(o) = face.outline(id) {
                let b = o.bounds;
                // Font units, y up: `min.y` is the top, `max.y` the bottom.
                ink = (
                    ink.0.min(pen + b.min.x * k),
                    ink.1.min(-b.min.y * k),
                    ink.2.max(pen + b.max.x * k),
                    ink.3.max(-b.max.y * k),
                );
            }
            pen += face.h_advance_unscaled(id) * k;
            prev = Some(id);
        }
        let start = match attr(tag, "text-anchor").as_deref() {
            Some("middle") => -pen / 2.0,
            Some("end") => -pen,
            _ => 0.0,
        } as f64;
        let angle = attr(tag, "transform")
            .map(|t| {
                t.trim_start_matches("rotate(").split(',').next().unwrap().parse::<f64>().unwrap()
            })
            .unwrap_or(0.0);
        let (c, s) = (angle.to_radians().cos().round(), angle.to_radians().sin().round());
        let turn =
            |px: f64, py: f64| (x + c * (px - x) - s * (py - y), y + s * (px - x) + c * (py - y));
        let bbox = if ink.0 > ink.2 {
            (x, y, x, y)
        } else {
            let a = turn(x + start + ink.0 as f64, baseline + ink.1 as f64);
            let b = turn(x + start + ink.2 as f64, baseline + ink.3 as f64);
            (a.0.min(b.0), a.1.min(b.1), a.0.max(b.0), a.1.max(b.1))
        };
        let text = text.replace('\u{a0}', " ");
        let (x, y) = turn(x, baseline);
        out.push(DrawnText { text, x, y, rotated: angle != 0.0, bbox });
    }
    out
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(tag[start..].split('"').next()?.to_string())
}

/// (cx, cy, r) of every `<circle>`.
fn svg_circles(svg: &str) -> Vec<(f64, f64, f64)> {
    svg.split("<circle")
        .skip(1)
        .map(|p| {
            let tag = p.split('>').next().unwrap();
            let num = |n: &str| attr(tag, n).unwrap().parse::<f64>().unwrap();
            (num("cx"), num("cy"), num("r"))
        })
        .collect()
}

/// Least squares `pos = a + b * v` over (v, pos); the largest residual.
fn fit_line(pairs: &[(f64, f64)]) -> (f64, f64, f64) {
    let n = pairs.len() as f64;
    let (mv, mp) =
        (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = pairs.iter().map(|p| (p.0 - mv).powi(2)).sum();
    let sxy: f64 = pairs.iter().map(|p| (p.0 - mv) * (p.1 - mp)).sum();
    let b = sxy / sxx;
    let a = mp - b * mv;
    let worst = pairs.iter().map(|p| (p.1 - a - b * p.0).abs()).fold(0.0, f64::max);
    (a, b, worst)
}

/// The axis ticks as drawn: the labels of `values` that share one x (y axis) or one baseline
/// (x axis) with the most members, as (value, pixel position along the axis). An x label is
/// centred on its tick; a y label's tick is the horizontal grid line of `svg` beside it,
/// within 8 px of the middle of its ink (the rasteriser's layout sets it a few pixels high).
fn drawn_ticks(svg: &str, texts: &[DrawnText], values: &[f64], x_axis: bool) -> Vec<(f64, f64)> {
    use prefixsim::plot::scale::short as tokens_label;
    let rows: Vec<f64> = svg
        .split("<line ")
        .map(|l| format!(" {}", l.split('>').next().unwrap()))
        .filter(|l| l.contains("#E1E1E1"))
        .filter_map(|l| {
            let (y1, y2) = (attr(&l, "y1")?.parse::<f64>().ok()?, attr(&l, "y2")?);
            (y2.parse::<f64>().ok()? == y1).then_some(y1)
        })
        .collect();
    let mut groups: BTreeMap<i64, Vec<(f64, f64)>> = BTreeMap::new();
    for t in texts.iter().filter(|t| !t.rotated) {
        let Some(v) = values.iter().find(|v| tokens_label(**v) == t.text) else { continue };
        let middle = (t.bbox.1 + t.bbox.3) / 2.0;
        let (key, pos) = match x_axis {
            true => (t.y, Some(t.x)),
            false => (t.x, rows.iter().copied().find(|y| (y - middle).abs() <= 8.0)),
        };
        let Some(pos) = pos else { continue };
        groups.entry(key.round() as i64).or_default().push((*v, pos));
    }
    groups.into_values().max_by_key(|g| g.len()).unwrap_or_default()
}

#[test]
fn covered_prefix_points_are_the_closed_form_of_the_latency_presets() {
    use prefixsim::config::latency_presets::FITS;
    use prefixsim::model::latency::{DEFAULT_OVERHEAD_US, DEFAULT_PREFILL_RATE};
    use prefixsim::plot::covered::{self, PointKind};
    let s = covered::spec(None);
    // The lines' overhead: the median of the fits' median overheads (an odd count: the middle).
    let mut o: Vec<f64> = FITS.iter().filter(|f| f.identified).map(|f| f.overhead_s).collect();
    o.sort_by(f64::total_cmp);
    let median =
        if o.len() % 2 == 1 { o[o.len() / 2] } else { (o[o.len() / 2 - 1] + o[o.len() / 2]) / 2.0 };
    assert_eq!(s.line_overhead_s, median);
    for fit in FITS {
        let name = fit.fitted_on.trim_start_matches("claude-");
        let found = s.points.iter().find(|p| p.label == name);
        if !fit.identified {
            assert!(found.is_none(), "{name}: a fit that identifies nothing is no point");
            continue;
        }
        let p = found.unwrap_or_else(|| panic!("{name}"));
        assert_eq!(p.kind, PointKind::Calibrated);
        // y = (5 s - the model's median overhead) x its prefill rate.
        assert_eq!(p.covered_tokens, (5.0 - fit.overhead_s).max(0.0) * fit.prefill_rate, "{name}");
        // The whisker: the overhead's 10th and 90th percentiles. The 19 body values sit at
        // 0, 5%, ..., 90%, so p10 is body[2] and p90 body[18] (the tail's threshold); the
        // higher overhead covers less.
        let q = fit.overhead.body_s;
        let (lo, hi) = p.whisker.unwrap();
        let at = |o: f64| (5.0 - o).max(0.0) * fit.prefill_rate;
        assert!((lo - at(q[18])).abs() < 1e-3, "{name}: {lo}");
        assert!((hi - at(q[2])).abs() < 1e-3, "{name}: {hi}");
    }
    let launch = s.points.iter().find(|p| p.kind == PointKind::Launch2024).unwrap();
    // (5 s - 0.5 s) x 9,100 tok/s = 40,950 tokens: the old headline's "about 41k".
    let want = (5.0 - DEFAULT_OVERHEAD_US / 1e6) * DEFAULT_PREFILL_RATE;
    assert!((launch.covered_tokens - want).abs() < 1e-6 && (want - 40_950.0).abs() < 1e-6);
    assert_eq!(s.points.len(), FITS.iter().filter(|f| f.identified).count() + 1);
}

#[test]
fn covered_prefix_is_drawn_to_scale_with_its_text_inside_the_canvas() {
    use prefixsim::plot::covered;
    let fig = covered::standalone();
    let Spec::Covered(s) = &fig.spec else { panic!("a covered figure") };
    let svg = plot::render_svg(&fig).unwrap();
    assert_svg(&svg, "covered_prefix");
    let texts = svg_texts(&svg);
    // Ticks: the x labels (1-2-5 rates) at positions linear in log10(rate), the y labels
    // (tokens) linear in tokens, within a pixel of rounding.
    assert!(s.x_ticks.len() >= 4 && s.y_ticks.len() >= 4, "{:?} {:?}", s.x_ticks, s.y_ticks);
    let xt = drawn_ticks(&svg, &texts, &s.x_ticks, true);
    assert_eq!(xt.len(), s.x_ticks.len(), "{xt:?}");
    let log: Vec<(f64, f64)> = xt.iter().map(|&(v, p)| (v.log10(), p)).collect();
    let (ax, bx, worst) = fit_line(&log);
    assert!(worst <= 1.0 && bx > 0.0, "x ticks off the log scale by {worst} px");
    let yt = drawn_ticks(&svg, &texts, &s.y_ticks, false);
    assert_eq!(yt.len(), s.y_ticks.len(), "{yt:?}");
    let (ay, by, worst) = fit_line(&yt);
    assert!(worst <= 1.0 && by < 0.0, "y ticks off the linear scale by {worst} px");
    // The plotted numbers: each calibrated point's circle sits at its rate and covered tokens
    // on those scales (the legend's dot is larger, r = 9).
    let mut dots: Vec<(f64, f64)> =
        svg_circles(&svg).into_iter().filter(|c| c.2 == 7.0).map(|c| (c.0, c.1)).collect();
    dots.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter(|p| p.kind == covered::PointKind::Calibrated)
        .map(|p| (ax + bx * p.prefill_rate.log10(), ay + by * p.covered_tokens))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(dots.len(), pts.len());
    for (d, p) in dots.iter().zip(&pts) {
        assert!(
            (d.0 - p.0).abs() <= 1.5 && (d.1 - p.1).abs() <= 1.5,
            "drawn {d:?}, expected {p:?}"
        );
    }
    // Every text lies inside the 1200 x 750 canvas (its glyphs' box, turned texts too), and
    // every model is labelled directly.
    for t in &texts {
        let (x0, y0, x1, y1) = t.bbox;
        let inside = x0 >= 0.0 && x1 <= 1200.0 && y0 >= 0.0 && y1 <= 750.0;
        assert!(inside, "text `{}` leaves the canvas: {t:?}", t.text);
    }
    for p in &s.points {
        assert!(texts.iter().any(|t| t.text == p.label), "no label `{}`", p.label);
    }
    // Placed labels stay in the plotting area and never overlap one another.
    let placed = covered::layout::place_labels(s, 660, 560);
    let boxes: Vec<(i32, i32, i32)> = placed
        .iter()
        .map(|l| {
            let w = covered::layout::text_width(&l.text, prefixsim::plot::style::TICK_PX);
            (if l.left { l.x - w } else { l.x }, l.y, w)
        })
        .collect();
    for (i, a) in boxes.iter().enumerate() {
        assert!(a.0 >= 0 && a.0 + a.2 <= 660 && a.1 >= 0 && a.1 <= 560, "{:?}", placed[i]);
        for b in &boxes[i + 1..] {
            let apart = a.0 + a.2 <= b.0 || b.0 + b.2 <= a.0 || (a.1 - b.1).abs() >= 20;
            assert!(apart, "labels overlap: {a:?} {b:?}");
        }
    }
}

/// A manifest's resolved experiment, as `run --out` writes it, with a given latency.
fn with_experiment(dir: &Path, overhead: &str, prefill_rate: &str) {
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["experiment"] = format!(
        "name = \"toy\"\nmodel = \"claude-sonnet-4.5\"\n[workload]\nkind = \"fork\"\n\
         parent_tokens = 50000\nparent_warm = false\nbrief_tokens = 2000\ntask_tokens = 200\n\
         [latency]\noverhead = \"{overhead}\"\nprefill_rate = \"{prefill_rate}\"\n"
    )
    .into();
    std::fs::write(&path, m.to_string()).unwrap();
}

#[test]
fn covered_prefix_belongs_to_hold_experiments_and_marks_their_latency() {
    use prefixsim::plot::covered::PointKind;
    let no_hold = Results::load(&one_strategy_zip_fixture("covered-none")).unwrap();
    assert!(!plot::figures(&no_hold).iter().any(|f| f.name == "covered_prefix"));
    // A hold experiment on the 2024 figures: the launch point is the experiment's, and the
    // reference is its cold prompt, 50,000 + 2,000 + 200 = 52,200 tokens.
    let dir = run_fixture("covered-launch");
    with_experiment(&dir, "const(500ms)", "const(9100)");
    let r = Results::load(&dir).unwrap();
    let figs = plot::figures(&r);
    let f = figure(&figs, "covered_prefix");
    let Spec::Covered(s) = &f.spec else { panic!("a covered figure") };
    assert_eq!(s.reference.0, 52_200.0);
    let launch = s.points.iter().find(|p| p.kind == PointKind::Launch2024).unwrap();
    assert_eq!(launch.label, "launch 2024 (this experiment)");
    assert!(
        f.caption.contains("assumes the launch-2024 latency of claude-sonnet-4.5"),
        "{}",
        f.caption
    );
    // The cap of the fixture's wait_first: 5 s covers (5 - 0.5) x 9,100 = 40,950 tokens.
    assert!(f.caption.contains("5 s covers 41k tokens"), "{}", f.caption);
    let md = prefixsim::report::build::build(&r, &figs).to_markdown();
    assert!(md.contains("](covered_prefix.svg)"), "the report shows it");
    // Its own latency: a point of its own at (5 - 1) x 30,000 = 120,000 tokens.
    let dir = hold_fixture("covered-own");
    with_experiment(&dir, "const(1s)", "const(30000)");
    let figs = plot::figures(&Results::load(&dir).unwrap());
    let Spec::Covered(s) = &figure(&figs, "covered_prefix").spec else { panic!("covered") };
    let own = s.points.iter().find(|p| p.kind == PointKind::Experiment).unwrap();
    assert_eq!((own.prefill_rate, own.covered_tokens), (30_000.0, 120_000.0));
}

#[test]
fn covered_prefix_alone_through_the_cli_same_bytes() {
    let dir = scratch("covered-cli");
    let (a, b) = (dir.join("a"), dir.join("b"));
    for out in [&a, &b] {
        let o = bin()
            .args(["plot", "--covered-prefix", "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for n in ["covered_prefix.svg", "covered_prefix.png"] {
        let bytes = std::fs::read(a.join(n)).unwrap();
        assert_eq!(bytes, std::fs::read(b.join(n)).unwrap(), "{n} differs");
    }
    let (w, h, rgb, ch) = decode_png(&std::fs::read(a.join("covered_prefix.png")).unwrap());
    assert_eq!((w, h), (1200, 750));
    let (share, colours) = ink(&rgb, ch);
    assert!(share > 0.02 && colours >= 4, "{share} ink, {colours} colours");
    let o = bin().args(["plot"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "DIR or --covered-prefix is required");
}

// ------------------------------------------------ properties of every drawn figure

/// Every figure of the fixtures: sweeps (two axes, a zip, a hold-cap family) and a run.
/// `test` names the fixtures' directories (tests run in parallel).
fn every_fixture_figure(test: &str) -> Vec<plot::Figure> {
    let mut out = Vec::new();
    for dir in [
        sweep2_fixture(&format!("{test}-sweep")),
        hold_fixture(&format!("{test}-hold")),
        run_fixture(&format!("{test}-run")),
        one_strategy_zip_fixture(&format!("{test}-zip")),
        many_fixture(&format!("{test}-many")),
    ] {
        out.extend(plot::figures(&Results::load(&dir).unwrap()));
    }
    out
}

#[test]
fn no_text_leaves_the_canvas_or_overlaps_another() {
    for f in every_fixture_figure("text") {
        let svg = plot::render_svg(&f).unwrap();
        let texts: Vec<DrawnText> =
            svg_texts(&svg).into_iter().filter(|t| !t.text.trim().is_empty()).collect();
        let boxes: Vec<(f64, f64, f64, f64)> = texts.iter().map(|t| t.bbox).collect();
        for (t, b) in texts.iter().zip(&boxes) {
            let inside = b.0 >= -0.5 && b.2 <= 1200.5 && b.1 >= -0.5 && b.3 <= 750.5;
            assert!(inside, "{}: text `{}` leaves the canvas: {b:?}", f.name, t.text);
        }
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                let (a, b) = (boxes[i], boxes[j]);
                // 1 px of slack: neighbouring rows may touch.
                let apart =
                    a.2 <= b.0 + 1.0 || b.2 <= a.0 + 1.0 || a.3 <= b.1 + 1.0 || b.3 <= a.1 + 1.0;
                assert!(
                    apart,
                    "{}: `{}` overlaps `{}` ({a:?} / {b:?})",
                    f.name, texts[i].text, texts[j].text
                );
            }
        }
    }
}

/// The series a figure names by its own label (a line's end label, a small multiple's
/// caption, a point's label), and whether they are drawn as small multiples.
fn named_series(f: &plot::Figure) -> Option<(Vec<String>, bool)> {
    use prefixsim::plot::labels::DIRECT_LABELS_MAX;
    match &f.spec {
        Spec::Metric(m) if !m.x.words && m.series.len() >= 2 => Some((
            m.series.iter().map(|s| s.label.clone()).collect(),
            m.series.len() > DIRECT_LABELS_MAX,
        )),
        Spec::Percentiles(l) if l.series.len() >= 2 => Some((
            l.series.iter().map(|s| s.label.clone()).collect(),
            l.series.len() > DIRECT_LABELS_MAX,
        )),
        Spec::Histogram(l) if l.series.len() >= 2 => {
            Some((l.series.iter().map(|s| s.label.clone()).collect(), true))
        }
        Spec::Covered(c) => Some((c.points.iter().map(|p| p.label.clone()).collect(), false)),
        _ => None,
    }
}

#[test]
fn every_series_is_labelled_once_where_it_is_drawn_and_no_legend_repeats_it() {
    let (mut direct, mut panels) = (0, 0);
    let mut figs = every_fixture_figure("labels");
    figs.push(plot::covered::standalone());
    for f in figs {
        let Some((names, multiples)) = named_series(&f) else { continue };
        let svg = plot::render_svg(&f).unwrap();
        let texts = svg_texts(&svg);
        // A long label wraps (after a space, `,`, `(` or `=`): its first line starts it.
        let starts = |t: &DrawnText, name: &str| {
            let t = t.text.trim();
            let cut = |rest: &str| rest.starts_with(' ') || t.ends_with([',', '(', '=']);
            t == name || (t.len() >= 4 && name.strip_prefix(t).is_some_and(cut))
        };
        for name in &names {
            let n = texts.iter().filter(|t| starts(t, name)).count();
            assert_eq!(n, 1, "{}: `{name}` labelled {n} times", f.name);
        }
        // A small multiple's caption sits above its panel: captions in rows, left to right.
        if multiples {
            let at: Vec<&DrawnText> =
                names.iter().map(|n| texts.iter().find(|t| t.text.trim() == n).unwrap()).collect();
            for w in at.windows(2) {
                let next_row = w[1].bbox.1 > w[0].bbox.3;
                assert!(w[1].x > w[0].x || next_row, "{}: panels out of order", f.name);
            }
            panels += 1;
        } else {
            direct += 1;
        }
    }
    assert!(direct >= 6 && panels >= 3, "direct {direct}, small multiples {panels}");
}

#[test]
fn the_percentile_curves_end_at_the_plot_edge_by_their_labels() {
    let dir = sweep2_fixture("ends");
    let figs = plot::figures(&Results::load(&dir).unwrap());
    let f = figure(&figs, "launch_wait_percentiles");
    let Spec::Percentiles(l) = &f.spec else { panic!("percentiles") };
    let texts = svg_texts(&plot::render_svg(f).unwrap());
    let labels: Vec<&DrawnText> = l
        .series
        .iter()
        .map(|s| texts.iter().find(|t| t.text == s.label).expect("labelled"))
        .collect();
    // One column, right of everything else drawn but the title.
    let x0 = labels[0].bbox.0;
    assert!(labels.iter().all(|t| (t.bbox.0 - x0).abs() < 1.0), "one column");
    let others = texts.iter().filter(|t| !labels.iter().any(|l| l.text == t.text));
    assert!(others.filter(|t| t.bbox.1 > 80.0).all(|t| t.bbox.2 <= x0), "labels beside the plot");
}

/// The box (x0, y0, x1, y1) of the non-white pixels of an RGB(A) image within `region`.
fn ink_box(
    rgb: &[u8],
    ch: usize,
    width: u32,
    region: (f64, f64, f64, f64),
) -> (f64, f64, f64, f64) {
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for (i, px) in rgb.chunks(ch).enumerate() {
        let (x, y) = ((i as u32 % width) as f64, (i as u32 / width) as f64);
        let inside = x >= region.0 && x < region.2 && y >= region.1 && y < region.3;
        if inside && px[..3].iter().any(|c| *c < 200) {
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x + 1.0), y1.max(y + 1.0));
        }
    }
    (x0, y0, x1, y1)
}

#[test]
fn svg_text_is_real_text_in_the_font_stack_where_the_png_draws_it() {
    // The em the SVG's text is set at: DejaVu Sans's as the PNG's rasteriser scales it.
    let face = ab_glyph::FontRef::try_from_slice(dejavu::sans::regular()).unwrap();
    let per_em =
        ab_glyph::Font::height_unscaled(&face) / ab_glyph::Font::units_per_em(&face).unwrap();
    assert_eq!(plot::svg::SIZE_PER_EM as f32, per_em);
    let mut turned = 0;
    let mut figs = every_fixture_figure("font");
    figs.push(plot::covered::standalone());
    for f in figs {
        let svg = plot::render_svg(&f).unwrap();
        // Text a viewer can search, select and read aloud, in the font stack; no outlines.
        let n = svg.matches("<text ").count();
        let stack = format!("font-family=\"{}\"", plot::style::FONT);
        assert!(n >= 4 && svg.matches(&stack).count() == n, "{}: {n} texts", f.name);
        assert!(!svg.contains("<use") && !svg.contains("<path id="), "{}: outlines", f.name);
        // The title, as written, is a text of its own.
        let texts = svg_texts(&svg);
        let head = f.title.split(" (").next().unwrap();
        let title = texts
            .iter()
            .find(|t| !t.text.is_empty() && (t.text.starts_with(head) || head.starts_with(&t.text)))
            .unwrap_or_else(|| panic!("{}: no title `{head}`", f.name));
        // Drawn where the PNG draws it, at its size: the PNG's ink in the title's rows (the
        // title alone is there) is the text's box, give or take the rasteriser's pixel and
        // its habit of setting each glyph's ink at its pen, truncated (a pixel or two back).
        let (w, _, rgb, ch) = decode_png(&plot::render_png(&f).unwrap());
        // Across the text, 2 px; along it, 4 (each glyph's pen truncated to a pixel).
        let near = |a: (f64, f64, f64, f64), b: (f64, f64, f64, f64), turned: bool| {
            let (dx, dy) = if turned { (2.0, 4.0) } else { (4.0, 2.0) };
            let d = [(a.0 - b.0).abs(), (a.1 - b.1).abs(), (a.2 - b.2).abs(), (a.3 - b.3).abs()];
            d[0].max(d[2]) <= dx && d[1].max(d[3]) <= dy
        };
        let png = ink_box(&rgb, ch, w, (0.0, 0.0, w as f64, title.bbox.3 + 1.0));
        assert!(near(title.bbox, png, false), "{}: title {:?}, PNG {png:?}", f.name, title.bbox);
        // So is the y axis's title, turned, alone at the left edge.
        if let Some(t) = texts.iter().find(|t| t.rotated && t.bbox.2 < 60.0) {
            let region = (0.0, t.bbox.1 - 4.0, t.bbox.2 + 1.0, t.bbox.3 + 4.0);
            let png = ink_box(&rgb, ch, w, region);
            assert!(near(t.bbox, png, true), "{}: `{}` {:?}, PNG {png:?}", f.name, t.text, t.bbox);
            turned += 1;
        }
    }
    assert!(turned >= 10, "turned axis titles checked: {turned}");
}

/// A text centred on its anchor (an x tick label), not turned.
fn centred(t: &DrawnText) -> bool {
    !t.rotated && ((t.bbox.0 + t.bbox.2) / 2.0 - t.x).abs() <= 2.0
}

#[test]
fn numeric_x_ticks_sit_in_proportion_to_their_values() {
    let mut checked = 0;
    for f in every_fixture_figure("ticks") {
        let Spec::Metric(m) = &f.spec else { continue };
        // Small multiples (many series) repeat the axis per panel, side by side in a row.
        if m.x.words || m.series.len() > plot::labels::DIRECT_LABELS_MAX {
            continue;
        }
        let svg = plot::render_svg(&f).unwrap();
        let texts = svg_texts(&svg);
        // The axis as drawn: the tick count fits the plot's width, so try each.
        let drawn = |s: &plot::scale::Scale| {
            let drawn: Vec<&DrawnText> = texts.iter().filter(|t| centred(t)).collect();
            s.ticks.iter().all(|p| drawn.iter().any(|t| t.text == s.label(*p)))
        };
        let Some(scale) = (4..=8).rev().map(|n| plot::axis::x_scale_max(&m.x, n)).find(drawn)
        else {
            panic!("{}: no tick set of {} drawn", f.name, m.x.key)
        };
        // The x tick labels: one row of texts, each the label of one of the scale's ticks.
        let mut rows: BTreeMap<i64, Vec<(f64, f64)>> = BTreeMap::new();
        for t in texts.iter().filter(|t| centred(t)) {
            if let Some(p) = scale.ticks.iter().find(|p| scale.label(**p) == t.text) {
                rows.entry(t.y.round() as i64).or_default().push((*p, t.x));
            }
        }
        let row = rows.into_values().max_by_key(|r| r.len()).unwrap_or_default();
        assert!(row.len() >= 3, "{}: ticks {:?} not found", f.name, scale.ticks);
        let (_, b, worst) = fit_line(&row);
        assert!(b > 0.0 && worst <= 1.0, "{}: ticks off {} by {worst} px", f.name, m.x.key);
        checked += 1;
    }
    assert!(checked >= 5, "numeric axes checked: {checked}");
}

#[test]
fn every_legend_entry_is_one_drawn_series_with_its_own_colour_and_shape() {
    let mut checked = 0;
    for f in every_fixture_figure("legend") {
        let Spec::Metric(m) = &f.spec else { continue };
        if m.series.len() < 2 {
            continue;
        }
        let svg = plot::render_svg(&f).unwrap();
        let texts = svg_texts(&svg);
        for s in &m.series {
            let head: String = s.label.chars().take(12).collect();
            let n = texts.iter().filter(|t| t.text.starts_with(&head)).count();
            assert!(n >= 1, "{}: no legend entry for `{}`", f.name, s.label);
            let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", s.color.0, s.color.1, s.color.2);
            let lines = svg.split("<polyline").filter(|p| p.contains(&stroke)).count();
            // The legend's sample and the series itself (a words axis draws bars, not a line).
            assert!(lines >= 1, "{}: series `{}` not drawn", f.name, s.label);
        }
        let mut pairs: Vec<_> = m.series.iter().map(|s| (s.color, s.shape)).collect();
        pairs.dedup();
        let shapes: std::collections::BTreeSet<String> =
            m.series.iter().map(|s| format!("{:?}", s.shape)).collect();
        assert_eq!(shapes.len(), m.series.len().min(7), "{}: shapes repeat", f.name);
        checked += 1;
    }
    assert!(checked >= 3, "multi-series figures checked: {checked}");
}

#[test]
fn the_slice_is_the_baseline_and_at_picks_another() {
    let dir = sweep2_fixture("slice");
    let r = Results::load(&dir).unwrap();
    let default = plot::figures(&r);
    let f = figure(&default, "cost_vs_workload_agents");
    assert!(f.title.contains("(at parent_tokens = "), "{}", f.title);
    let at = plot::figures_at(&r, &[("parent_tokens".into(), "10000".into())]).unwrap();
    let f = figure(&at, "cost_vs_workload_agents");
    assert!(f.title.ends_with("(at parent_tokens = 10000)"), "{}", f.title);
    let e = plot::figures_at(&r, &[("nope".into(), "1".into())]).unwrap_err().to_string();
    assert!(e.contains("`nope` is not a swept axis") && e.contains("workload.agents"), "{e}");
    let e =
        plot::figures_at(&r, &[("workload.agents".into(), "3".into())]).unwrap_err().to_string();
    assert!(e.contains("has no value `3`"), "{e}");
    let out =
        bin().args(["plot"]).arg(&dir).args(["--at", "agents=99", "--format", "svg"]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agents=99"));
}

#[test]
fn a_declared_baseline_is_read_from_the_stored_experiment() {
    let dir = sweep2_fixture("baseline");
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["experiment"] = "[plot]\nbaseline = { \"workload.parent_tokens\" = 10000 }\n".into();
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    let r = Results::load(&dir).unwrap();
    let f = figure(&plot::figures(&r), "cost_vs_workload_agents").clone();
    assert!(f.title.ends_with("(at parent_tokens = 10000)"), "{}", f.title);
}

#[test]
fn the_plot_baseline_key_resolves_renders_and_rejects_non_values() {
    use prefixsim::config::{parse_table, render, resolve};
    let t = parse_table("[plot]\nbaseline = { \"cache.ttl\" = \"5m\" }\n", "e.toml").unwrap();
    let e = resolve(&t, "e.toml").unwrap();
    assert_eq!(e.plot_baseline, [("cache.ttl".to_string(), toml::Value::from("5m"))]);
    assert!(render(&e).contains("[plot.baseline]"), "{}", render(&e));
    let t = parse_table("[plot]\nbaseline = { \"cache.ttl\" = [1] }\n", "e.toml").unwrap();
    let msg = resolve(&t, "e.toml").unwrap_err().to_string();
    assert!(msg.contains("plot.baseline") && msg.contains("swept value"), "{msg}");
    let t = parse_table("[plot]\nbase = 1\n", "e.toml").unwrap();
    assert!(resolve(&t, "e.toml").unwrap_err().to_string().contains("plot.base"));
}
