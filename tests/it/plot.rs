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
use prefixsim::report::results::{slug, Results};

// ---------------------------------------------------------------- fixtures

/// A fresh, empty directory under the target dir (no wall clock, no randomness in its name).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plot-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
        summary.push_str(&format!(",{l}_p50_s,{l}_p90_s,{l}_p99_s,{l}_p999_s,{l}_max_s"));
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
                    ",{:.6},{:.6},{:.6},{:.6},{:.6}",
                    q(0.5),
                    q(0.9),
                    q(0.99),
                    q(0.999),
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

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_prefixsim"))
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
fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<u8>, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf, info.color_type.samples())
}

/// (share of non-white pixels, number of distinct colours among them, capped).
fn ink(rgb: &[u8], channels: usize) -> (f64, usize) {
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
    assert_eq!(
        (h.x_title.as_str(), h.y_title.as_str()),
        ("workload.parent_turn_every", "workload.kind")
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
        for t in titles {
            assert!(svg.contains(&format!(">{t}<")) || svg.contains(t), "{name}: no text `{t}`");
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
    // 1s, 2s, 5s, 10s are not evenly spaced: positions are indices, and 5 s is index 2.
    assert_eq!(m.x.marker.as_ref().map(|m| m.0), Some(2.0));
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
    // 1, 5, 10 s are not evenly spaced: index positions, and 5 s sits at index 1.
    assert_eq!(m.x.marker.as_ref().map(|m| m.0), Some(1.0));
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
    let figs = plot::figures(&r);
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
fn chromium() -> Option<PathBuf> {
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
            "cost_usd": cost, "cost_ci95": 0.1, "launch_wait_p99_s": wait, "makespan_p95_s": 30.0, "feasible": true})
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
    assert!(md.contains("| `cache.ttl=5m` | 30 | 4.5 | 0.4 | 1 |"), "{md}");
}
