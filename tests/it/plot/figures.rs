//! The text and geometry of drawn figures, read back from their SVG (and PNG): the
//! covered-prefix figure to scale, and properties of every figure of the fixtures (text inside
//! the canvas and apart, series labelled once, ticks in proportion, the SVG's text where the
//! PNG draws it).

use super::*;

// ---------------------------------------------------------------- the covered-prefix figure

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
    use prefixsim::config::latency_presets::fits;
    use prefixsim::model::latency::{DEFAULT_OVERHEAD_US, DEFAULT_PREFILL_RATE};
    use prefixsim::plot::covered::{self, PointKind};
    let s = covered::spec(None);
    // The lines' overhead: the median of the fits' median overheads (an odd count: the middle).
    let mut o: Vec<f64> = fits().iter().filter(|f| f.identified).map(|f| f.overhead_s).collect();
    o.sort_by(f64::total_cmp);
    let median =
        if o.len() % 2 == 1 { o[o.len() / 2] } else { (o[o.len() / 2 - 1] + o[o.len() / 2]) / 2.0 };
    assert_eq!(s.line_overhead_s, median);
    for fit in fits() {
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
    assert_eq!(s.points.len(), fits().iter().filter(|f| f.identified).count() + 1);
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
