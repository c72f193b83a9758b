//! Heatmap for two-axis sweeps: the first two axes as the grid, the cell colour (and its
//! printed value) the cost saved by waiting (the first `wait_first` strategy) vs `eager`, in
//! percent of eager's mean cost; with a colour bar. Without those two strategies it compares
//! the second strategy to the first; with one strategy it shows its mean cost.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::slice::{groups, in_slice, slice_text};
use super::style::{self, num};
use super::{category, frame, mesh_style, DrawResult, Figure, Spec};
use crate::results::{Results, SummaryRow};

#[derive(Debug, Clone)]
pub struct HeatSpec {
    pub x_title: String,
    pub y_title: String,
    pub x_labels: Vec<String>,
    pub y_labels: Vec<String>,
    /// (x index, y index, value).
    pub cells: Vec<(usize, usize, f64)>,
    /// What the colour means, with its unit.
    pub value_title: String,
}

/// (candidate, reference) strategies of the comparison, if there are two.
pub fn comparison(strategies: &[String]) -> Option<(String, String)> {
    let wait = strategies.iter().find(|s| s.starts_with("wait_first"));
    match (wait, strategies.iter().find(|s| *s == "eager")) {
        (Some(w), Some(e)) => Some((w.clone(), e.clone())),
        _ if strategies.len() >= 2 => Some((strategies[1].clone(), strategies[0].clone())),
        _ => None,
    }
}

pub fn figures(r: &Results, held: &[String]) -> Vec<Figure> {
    if r.axis_keys.len() < 2 || r.summary.is_empty() {
        return Vec::new();
    }
    let strategies = r.strategies();
    // x: the first group of axes (zipped axes move together); y: the next group with two or
    // more combinations; the others are held at the slice.
    let groups = groups(r);
    let swept: Vec<&Vec<usize>> =
        groups.iter().filter(|g| r.summary.combos(g).len() >= 2).collect();
    let (Some(gx), Some(gy)) = (swept.first(), swept.get(1)) else { return Vec::new() };
    let free: Vec<usize> = gx.iter().chain(gy.iter()).copied().collect();
    let (xs, ys) = (r.summary.combos(gx).to_strings(), r.summary.combos(gy).to_strings());
    let cmp = comparison(&strategies);
    let cells = cells(r, (gx, &xs), (gy, &ys), (held, &free), |at| match &cmp {
        Some((cand, base)) => match (at(cand), at(base)) {
            (Some(c), Some(b)) if b.abs() > 0.0 => Some((b - c) / b * 100.0),
            _ => None,
        },
        None => at(&strategies[0]),
    });
    if cells.is_empty() {
        return Vec::new();
    }
    let value_title = match &cmp {
        Some((c, b)) => format!("Cost saved by {c} vs {b} (%)"),
        None => format!("Mean cost of {} (USD)", strategies[0]),
    };
    let keys =
        |g: &[usize]| g.iter().map(|&a| r.axis_keys[a].as_str()).collect::<Vec<_>>().join(" / ");
    let label = |c: &Vec<String>| {
        c.iter().map(|v| super::rules::display_value(v)).collect::<Vec<_>>().join(" / ")
    };
    let spec = HeatSpec {
        x_title: keys(gx),
        y_title: keys(gy),
        x_labels: xs.iter().map(label).collect(),
        y_labels: ys.iter().map(label).collect(),
        cells,
        value_title,
    };
    let caption = caption(&spec, cmp.is_some());
    let mut title = match &cmp {
        Some((c, b)) => format!("Cost saved by {c} vs {b}, % of {b}'s mean cost"),
        None => format!("Mean cost per run of {} (USD)", strategies[0]),
    };
    let fixed = slice_text(r, &groups, held, &free);
    if !fixed.is_empty() {
        title.push_str(&format!(" (at {fixed})"));
    }
    vec![Figure { name: "heatmap_cost_saved".into(), title, caption, spec: Spec::Heatmap(spec) }]
}

/// A side of the grid: its group of axes and their combinations.
type Side<'a> = (&'a [usize], &'a [Vec<String>]);

/// The value of each (x, y) cell of the slice that has one: `value` of a lookup of the cost
/// of a strategy there. The costs are found in one pass over the summary (a search of it per
/// cell was cubic in a grid's side): the first row of the slice at each (strategy, x, y).
fn cells(
    r: &Results,
    (gx, xs): Side<'_>,
    (gy, ys): Side<'_>,
    (held, free): (&[String], &[usize]),
    value: impl Fn(&dyn Fn(&str) -> Option<f64>) -> Option<f64>,
) -> Vec<(usize, usize, f64)> {
    let combo = |row: &SummaryRow, g: &[usize]| -> Vec<String> {
        g.iter().map(|&a| row.axis_values[a].clone()).collect()
    };
    let mut cost = std::collections::HashMap::new();
    for row in r.summary.iter().filter(|row| in_slice(row, held, free)) {
        let key = (row.strategy.to_string(), combo(&row, gx), combo(&row, gy));
        cost.entry(key).or_insert_with(|| row.get("cost_usd_mean"));
    }
    let mut cells = Vec::new();
    for (i, xv) in xs.iter().enumerate() {
        for (j, yv) in ys.iter().enumerate() {
            let at = |s: &str| *cost.get(&(s.to_string(), xv.clone(), yv.clone()))?;
            if let Some(v) = value(&at) {
                cells.push((i, j, v));
            }
        }
    }
    cells
}

fn caption(s: &HeatSpec, saving: bool) -> String {
    let max = s.cells.iter().max_by(|a, b| a.2.total_cmp(&b.2));
    let min = s.cells.iter().min_by(|a, b| a.2.total_cmp(&b.2));
    let (Some(max), Some(min)) = (max, min) else { return String::new() };
    let at = |c: &(usize, usize, f64)| {
        format!("{} = {}, {} = {}", s.x_title, s.x_labels[c.0], s.y_title, s.y_labels[c.1])
    };
    let unit = if saving { "%" } else { " USD" };
    format!(
        "{}: highest {}{unit} at {}; lowest {}{unit} at {}.",
        s.value_title.trim_end_matches(" (%)").trim_end_matches(" (USD)"),
        num(max.2),
        at(max),
        num(min.2),
        at(min)
    )
}

pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &HeatSpec,
) -> DrawResult {
    let (lo, hi) = super::scale::extent(s.cells.iter().map(|c| c.2));
    let span = if hi > lo { hi - lo } else { 1.0 };
    let t = |v: f64| (v - lo) / span;
    let body = frame(root, title, &[])?;
    let (main, bar) = body.split_horizontally(style::WIDTH - 190);
    let (nx, ny) = (s.x_labels.len() as f64, s.y_labels.len() as f64);
    let mut chart = super::builder(&main)
        .y_label_area_size(super::label_area_px(&s.y_labels))
        .build_cartesian_2d(-0.5..nx - 0.5, -0.5..ny - 0.5)?;
    mesh_style(&mut chart)
        .disable_mesh()
        .x_desc(s.x_title.as_str())
        .y_desc(s.y_title.as_str())
        .x_labels(s.x_labels.len() + 1)
        .y_labels(s.y_labels.len() + 1)
        .x_label_formatter(&|v| category(&s.x_labels, *v, false))
        .y_label_formatter(&|v| category(&s.y_labels, *v, false))
        .draw()?;
    let cells = s.cells.iter().map(|&(i, j, v)| {
        let (x, y) = (i as f64, j as f64);
        Rectangle::new([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)], style::colormap(t(v)).filled())
    });
    chart.draw_series(cells)?;
    let texts = s.cells.iter().map(|&(i, j, v)| {
        let ink = if t(v) > 0.6 { BLACK } else { WHITE };
        let font = style::text_style(style::TICK_PX, ink, (HPos::Center, VPos::Center));
        Text::new(num(v), (i as f64, j as f64), font)
    });
    chart.draw_series(texts)?;
    draw_colorbar(&bar, lo, lo + span, &s.value_title)
}

fn draw_colorbar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lo: f64,
    hi: f64,
    title: &str,
) -> DrawResult {
    let (y0, y1) = super::axis_range(lo, hi);
    let mut chart = ChartBuilder::on(area)
        .margin_top(10)
        .margin_bottom(20 + 90)
        .margin_right(10)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..1.0, y0..y1)?;
    let short = if title.starts_with("Cost saved") { "Cost saved (%)" } else { "Mean cost (USD)" };
    mesh_style(&mut chart)
        .disable_mesh()
        .disable_x_axis()
        .y_desc(short)
        .y_label_formatter(&|v| num(*v))
        .draw()?;
    const STEPS: usize = 100;
    let step = (hi - lo) / STEPS as f64;
    let bars = (0..STEPS).map(|k| {
        let y = lo + k as f64 * step;
        Rectangle::new(
            [(0.0, y), (1.0, y + step)],
            style::colormap(k as f64 / (STEPS - 1) as f64).filled(),
        )
    });
    chart.draw_series(bars)?;
    Ok(())
}
