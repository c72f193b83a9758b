//! Drawing the covered-prefix figure: every line and point is labelled where it is drawn (caps
//! at their lines' ends, models beside their points, clear of the data and of one another),
//! what the lines and points assume is a note in the plot's empty corner. The layout is
//! computed in plot pixels before drawing, from estimated text widths.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{identified, CoveredSpec, PointKind, POINT_CAP_S, WHISKER_P};
use crate::plot::labels::{self, Placed, PxBox};
use crate::plot::scale::{self, TickedAxis};
use crate::plot::style::{self, num};
use crate::plot::{builder, frame, mesh_style, DrawResult, Mark};

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<TickedAxis, TickedAxis>>;

/// Every line and point is labelled where it is drawn (caps at their lines' ends, models
/// beside their points); what the lines and points assume is a note in the plot's empty top
/// left corner, or in a column on the right when data fills that corner.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &CoveredSpec,
) -> DrawResult {
    // Where the plot would be with no column: if the note fits inside it, no column.
    let (w, h) = plot_size(title);
    let inside = note_box(s, w, h);
    let column: Vec<(String, Mark)> = match inside {
        Some(_) => Vec::new(),
        None => note_lines(s).into_iter().map(|l| (l, Mark::Note)).collect(),
    };
    let area = frame(root, title, &column)?;
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let x = TickedAxis { lo: lx0, hi: lx1, ticks: s.x_ticks.iter().map(|v| v.log10()).collect() };
    let y = TickedAxis { lo: 0.0, hi: s.y_max, ticks: s.y_ticks.clone() };
    let mut chart = builder(&area).build_cartesian_2d(x, y)?;
    mesh_style(&mut chart)
        .x_desc("Prefill rate (uncached tokens per second, log scale)")
        .y_desc("Cold prefix covered by the cap (tokens)")
        .x_label_formatter(&|v| scale::short(10f64.powf(*v)))
        .y_label_formatter(&|v| scale::short(*v))
        .draw()?;
    draw_reference(&mut chart, s)?;
    draw_caps(&mut chart, s)?;
    draw_points(&mut chart, s)?;
    draw_labels(&chart, s, inside)
}

/// The plotting area's size (pixels) with no column: the canvas less the title (one line,
/// as `frame` draws it) and `builder`'s margins and label areas.
fn plot_size(title: &str) -> (i32, i32) {
    let title_h = 14 + (style::title_px(title) as f64 * 1.05) as i32 + 6;
    (style::WIDTH as i32 - 20 - 130 - 40, style::HEIGHT as i32 - title_h - 10 - 20 - 90)
}

/// What the lines and points assume, one short line each.
fn note_lines(s: &CoveredSpec) -> Vec<String> {
    let mut l = vec![
        format!("Lines: overhead {} s,", num(s.line_overhead_s)),
        format!("the median of {} fits.", identified().count()),
        format!("Points: a {} s cap at each", num(POINT_CAP_S)),
        "model's own median overhead;".to_string(),
        format!("bars: its p{}-p{}.", num(WHISKER_P.0 * 100.0), num(WHISKER_P.1 * 100.0)),
    ];
    for &(c, _) in s.caps.iter().filter(|(c, _)| cap_span(s, *c).is_none()) {
        l.push(format!("A cap of {} s covers nothing.", num(c)));
    }
    l
}

const LAUNCH: RGBColor = RGBColor(230, 120, 0);
const EXPERIMENT: RGBColor = style::HIGHLIGHT;
const REFERENCE: RGBColor = RGBColor(150, 150, 150);

fn draw_reference<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, s: &CoveredSpec) -> DrawResult {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let y = s.reference.0;
    let dashes = 60;
    let dash = (0..dashes).map(|i| {
        let a = lx0 + (lx1 - lx0) * i as f64 / dashes as f64;
        let b = a + (lx1 - lx0) * 0.6 / dashes as f64;
        PathElement::new(vec![(a, y), (b, y)], REFERENCE.stroke_width(2))
    });
    chart.draw_series(dash)?;
    Ok(())
}

/// A cap's line `y = k * x` (k = cap - the lines' overhead) within the axes: its rate range
/// (`None` when the cap is at most the overhead or the line misses the axes).
fn cap_span(s: &CoveredSpec, cap_s: f64) -> Option<(f64, f64, f64)> {
    let k = (cap_s - s.line_overhead_s).max(0.0);
    if k <= 0.0 {
        return None;
    }
    let (x0, x1) = (s.x_range.0, s.x_range.1.min(s.y_max / k));
    (x1 > x0).then_some((k, x0, x1))
}

/// Where a cap's label goes: the line's far end, below it when the line leaves through the
/// top, above it when it leaves through the right; (log10 rate, tokens, below).
fn cap_label_at(s: &CoveredSpec, cap_s: f64) -> Option<(f64, f64, bool)> {
    let (k, _, x1) = cap_span(s, cap_s)?;
    Some((x1.log10(), k * x1, x1 < s.x_range.1))
}

fn cap_label(cap_s: f64) -> String {
    format!("cap {} s ", num(cap_s))
}

/// Each cap's line, clipped to the axes, labelled at its far end.
fn draw_caps<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, s: &CoveredSpec) -> DrawResult {
    for &(cap, color) in &s.caps {
        let Some((k, x0, x1)) = cap_span(s, cap) else { continue };
        let steps = 160;
        let pts: Vec<(f64, f64)> = (0..=steps)
            .map(|i| {
                let lx = x0.log10() + (x1.log10() - x0.log10()) * i as f64 / steps as f64;
                (lx, k * 10f64.powf(lx))
            })
            .collect();
        let line = PathElement::new(pts, color.stroke_width(style::LINE_PX));
        chart.draw_series(std::iter::once(line))?;
        let Some((lx, y, below)) = cap_label_at(s, cap) else { continue };
        // A white ground under the label: the dashed reference may pass behind it.
        let area = chart.plotting_area().strip_coord_spec();
        let (base, (px, py)) = (area.get_base_pixel(), chart.backend_coord(&(lx, y)));
        let (px, py) = (px - base.0, py - base.1);
        let (tw, row) = (text_width(&cap_label(cap), style::TICK_PX), row_px());
        let top = if below { py } else { py - row + 2 };
        // Short of the label's trailing space, so the line's end stays drawn.
        let right = px - text_width(" ", style::TICK_PX);
        area.draw(&Rectangle::new([(px - tw, top), (right, top + row - 4)], WHITE.filled()))?;
        let v = if below { VPos::Top } else { VPos::Bottom };
        let font = (style::FONT, style::TICK_PX, FontStyle::Bold).into_font().color(&color);
        let label = Text::new(cap_label(cap), (lx, y), font.pos(Pos::new(HPos::Right, v)));
        chart.draw_series(std::iter::once(label))?;
    }
    Ok(())
}

fn draw_points<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, s: &CoveredSpec) -> DrawResult {
    for p in &s.points {
        let x = p.prefill_rate.log10();
        if let Some((lo, hi)) = p.whisker {
            let w = PathElement::new(
                vec![(x, lo.min(s.y_max)), (x, hi.min(s.y_max))],
                style::INK.stroke_width(2),
            );
            chart.draw_series(std::iter::once(w))?;
        }
        let at = (x, p.covered_tokens);
        let area = chart.plotting_area();
        match p.kind {
            PointKind::Calibrated => area.draw(&Circle::new(at, 7, style::INK.filled()))?,
            PointKind::Launch2024 => area.draw(&TriangleMarker::new(at, 10, LAUNCH.filled()))?,
            PointKind::Experiment => area.draw(&Cross::new(at, 9, EXPERIMENT.stroke_width(4)))?,
        }
    }
    Ok(())
}

/// Estimated width of `text` drawn at `px` (DejaVu Sans: ~0.6 em per char, drawn at 1/1.24).
pub fn text_width(text: &str, px: u32) -> i32 {
    (text.chars().count() as f64 * 0.6 * px as f64 / 1.24).ceil() as i32
}

/// One row of text at the tick size (pixels).
fn row_px() -> i32 {
    (style::TICK_PX as f64 / 1.24 * 1.25).ceil() as i32
}

/// The data's boxes in a `w` x `h` plot: points, whiskers, and the cap lines sampled every
/// few pixels.
fn data_boxes(s: &CoveredSpec, w: i32, h: i32) -> Vec<PxBox> {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let px = |lx: f64| ((lx - lx0) / (lx1 - lx0) * w as f64).round() as i32;
    let py = |tokens: f64| ((1.0 - tokens / s.y_max) * h as f64).round() as i32;
    let mut out = Vec::new();
    for p in &s.points {
        let (x, y) = (px(p.prefill_rate.log10()), py(p.covered_tokens));
        out.push((x - 10, y - 10, 20, 20));
        if let Some((lo, hi)) = p.whisker {
            let (top, bottom) = (py(hi.min(s.y_max)), py(lo.min(s.y_max)));
            out.push((x - 2, top, 4, bottom - top));
        }
    }
    for &(cap, _) in &s.caps {
        let Some((k, x0, x1)) = cap_span(s, cap) else { continue };
        let steps = 120;
        for i in 0..=steps {
            let lx = x0.log10() + (x1.log10() - x0.log10()) * i as f64 / steps as f64;
            out.push((px(lx) - 3, py(k * 10f64.powf(lx)) - 3, 6, 6));
        }
    }
    out
}

/// The text already drawn in a `w` x `h` plot: the reference's label and the caps' labels.
fn text_boxes(s: &CoveredSpec, w: i32, h: i32) -> Vec<PxBox> {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let py = |tokens: f64| ((1.0 - tokens / s.y_max) * h as f64).round() as i32;
    let row = row_px();
    let mut out = vec![reference_box(s, w, h)];
    for &(cap, _) in &s.caps {
        let Some((lx, y, below)) = cap_label_at(s, cap) else { continue };
        let tw = text_width(&cap_label(cap), style::TICK_PX);
        let (x, y) = (((lx - lx0) / (lx1 - lx0) * w as f64).round() as i32, py(y));
        out.push((x - tw, if below { y } else { y - row }, tw, row));
    }
    out
}

/// The note's size in pixels.
fn note_size(s: &CoveredSpec) -> (i32, i32) {
    let lines = note_lines(s);
    let tw = lines.iter().map(|l| text_width(l, style::TICK_PX)).max().unwrap_or(0);
    (tw + 8, lines.len() as i32 * row_px() + 4)
}

/// The note's box in the plot's top left corner, 8 px in, moved down by rows until it
/// overlaps no data and no drawn text (`None` when it never does above the middle).
pub fn note_box(s: &CoveredSpec, w: i32, h: i32) -> Option<PxBox> {
    let (nw, nh) = note_size(s);
    let mut all = data_boxes(s, w, h);
    all.extend(text_boxes(s, w, h));
    (0..)
        .map(|k| (8, 8 + k * row_px(), nw, nh))
        .take_while(|b| b.1 + b.3 <= h / 2 && b.0 + b.2 <= w)
        .find(|b| !all.iter().any(|t| labels::overlaps(*b, *t)))
}

/// Every point's label beside it (`labels::place_beside`), clear of the data, the drawn
/// text, the note (when in the plot) and one another.
pub fn place_labels(s: &CoveredSpec, w: i32, h: i32) -> Vec<Placed> {
    let (lx0, lx1) = (s.x_range.0.log10(), s.x_range.1.log10());
    let px = |rate: f64| ((rate.log10() - lx0) / (lx1 - lx0) * w as f64).round() as i32;
    let py = |tokens: f64| ((1.0 - tokens / s.y_max) * h as f64).round() as i32;
    let mut taken = data_boxes(s, w, h);
    taken.extend(text_boxes(s, w, h));
    taken.extend(note_box(s, w, h));
    let wanted: Vec<((i32, i32), String, i32)> = s
        .points
        .iter()
        .map(|p| {
            let at = (px(p.prefill_rate), py(p.covered_tokens));
            (at, p.label.clone(), text_width(&p.label, style::TICK_PX))
        })
        .collect();
    labels::place_beside(&wanted, row_px(), (w, h), &mut taken)
}

/// The reference's label: right-aligned at 99% of the width, just above its line.
fn reference_box(s: &CoveredSpec, w: i32, h: i32) -> PxBox {
    let tw = text_width(&s.reference.1, style::TICK_PX);
    let row = row_px();
    let y = ((1.0 - s.reference.0 / s.y_max) * h as f64).round() as i32;
    (w - w / 100 - tw, y - row, tw, row)
}

fn draw_labels<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    s: &CoveredSpec,
    note: Option<PxBox>,
) -> DrawResult {
    let area = chart.plotting_area().strip_coord_spec();
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    if let Some(b) = note {
        let font = style::text_style(style::TICK_PX, style::NOTE, (HPos::Left, VPos::Top));
        for (i, l) in note_lines(s).into_iter().enumerate() {
            area.draw(&Text::new(l, (b.0 + 4, b.1 + 2 + i as i32 * row_px()), font.clone()))?;
        }
    }
    let r = reference_box(s, w, h);
    area.draw(&Rectangle::new(
        [(r.0 - 3, r.1 + 2), (r.0 + r.2 + 3, r.1 + r.3 - 3)],
        WHITE.filled(),
    ))?;
    let font = style::text_style(style::TICK_PX, REFERENCE, (HPos::Right, VPos::Bottom));
    area.draw(&Text::new(s.reference.1.clone(), (r.0 + r.2, r.1 + r.3 - 3), font))?;
    for l in place_labels(s, w, h) {
        let hpos = if l.left { HPos::Right } else { HPos::Left };
        let font = style::text_style(style::TICK_PX, style::INK, (hpos, VPos::Center));
        if (l.y - l.point.1).abs() > 4 {
            let from = (l.point.0 + if l.left { -8 } else { 8 }, l.point.1);
            let to = (l.x + if l.left { 4 } else { -4 }, l.y);
            area.draw(&PathElement::new(vec![from, to], REFERENCE.stroke_width(1)))?;
        }
        let tw = text_width(&l.text, style::TICK_PX);
        let x0 = if l.left { l.x - tw - 3 } else { l.x - 3 };
        let half = (style::TICK_PX as f64 / 1.24 * 0.6).ceil() as i32;
        let bg = Rectangle::new([(x0, l.y - half), (x0 + tw + 6, l.y + half)], WHITE.filled());
        area.draw(&bg)?;
        area.draw(&Text::new(l.text, (l.x, l.y), font))?;
    }
    Ok(())
}
