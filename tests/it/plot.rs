//! Tests: plot and report, on the tiny result directories of `fixtures`; the text and
//! geometry of drawn figures are checked in `figures`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use prefixsim::plot::{self, Spec};
use prefixsim::results::Results;

use super::common::bin;

mod figures;
mod fixtures;

use fixtures::*;

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
    // partner is not held at one value, which would leave one point per line. The fixture's
    // two kinds have the same numbers: one line, both named.
    let labels: Vec<&str> = pace.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["kind = fork = fork_drop_tool(tool=Bash)"]);
    assert!(pace.series.iter().all(|s| s.points.len() == 3), "{:?}", pace.series);
    let Spec::Metric(kind) = &figure(&figs, "cost_vs_workload_kind").spec else {
        panic!("a metric figure")
    };
    // One line per pace; the fixture's three have the same numbers: drawn once, all named.
    let paces = ["0s / const(2000)", "1min / const(2000)", "2s / const(67)"];
    assert_eq!(kind.series.len(), 1, "{:?}", kind.series);
    assert!(paces.iter().all(|p| kind.series[0].label.contains(p)), "{}", kind.series[0].label);
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
    assert!(
        super::results_parts::histogram_keys(&r).iter().any(|k| k.1 == "wait_first(max_wait=x)"),
        "histograms follow"
    );
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
