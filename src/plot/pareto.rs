//! Pareto plot: mean cost vs p99 makespan, one point per strategy and parameter value, with
//! the frontier (no other point is both cheaper and faster) drawn as a step line.
//!
//! The p99 makespan is the nearest-rank 99th percentile of the replications' makespans
//! (runs.csv); without runs.csv, the p99 of agent completion time (summary.csv) stands in,
//! and the axis title says so. Sweep axes that are not strategy parameters (`max_wait`,
//! `stagger`, `strateg...`) are held at their middle value: other workloads are no alternative.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::is_hold_cap;
use super::scale::extent;
use super::style::{self, num};
use super::{builder, frame, marker, mesh_style, padded, DrawResult, Figure, Mark, Spec};
use crate::numfmt::tick;
use crate::results::{Results, SummaryRow};

#[derive(Debug, Clone)]
pub struct ParetoPoint {
    pub strategy: String,
    /// The axis values of its sweep point ("" for a run).
    pub at: String,
    pub x_s: f64,
    pub cost_usd: f64,
    pub on_frontier: bool,
}

#[derive(Debug, Clone)]
pub struct ParetoSpec {
    pub x_title: String,
    pub strategies: Vec<(String, RGBColor)>,
    pub points: Vec<ParetoPoint>,
}

impl ParetoSpec {
    /// The points on the frontier, fastest first.
    pub fn front(&self) -> Vec<&ParetoPoint> {
        let mut front: Vec<&ParetoPoint> = self.points.iter().filter(|p| p.on_frontier).collect();
        front.sort_by(|a, b| a.x_s.total_cmp(&b.x_s));
        front
    }

    /// The strategies no point of which is on the frontier.
    pub fn never_on(&self) -> Vec<&str> {
        let front = self.front();
        let on = |st: &&str| front.iter().any(|p| p.strategy == *st);
        self.strategies.iter().map(|(st, _)| st.as_str()).filter(|st| !on(st)).collect()
    }
}

/// Nearest-rank percentile `q` (0..=1) of `v` (sorted here).
pub fn nearest_rank(mut v: Vec<f64>, q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Mark the points no other point dominates (strictly cheaper at no larger x, or as cheap and faster).
pub fn mark_frontier(points: &mut [ParetoPoint]) {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a]
            .x_s
            .total_cmp(&points[b].x_s)
            .then(points[a].cost_usd.total_cmp(&points[b].cost_usd))
    });
    let mut best = f64::INFINITY;
    for i in order {
        if points[i].cost_usd < best {
            best = points[i].cost_usd;
            points[i].on_frontier = true;
        }
    }
}

/// The summary rows whose axes `fixed` are at `held`, in point order: the points found in the
/// summary's index and read again, or, when they are many of the points, the summary streamed.
fn slice_rows<'a>(
    r: &'a Results,
    fixed: &'a [usize],
    held: &'a [String],
) -> Box<dyn Iterator<Item = SummaryRow> + 'a> {
    let at_held = move |values: &[&str]| fixed.iter().all(|&a| values[a] == held[a]);
    let mut points: Vec<u32> =
        r.summary.axes().filter(|(_, values)| at_held(values)).map(|(p, _)| p).collect();
    points.dedup();
    let in_slice = move |row: &SummaryRow| fixed.iter().all(|&a| row.axis_values[a] == held[a]);
    // A point read again is a seek and a buffer's read: cheaper than the whole file only
    // for a small share of its points.
    if points.len() * 8 > r.summary.points().len() {
        return Box::new(r.summary.iter().filter(in_slice));
    }
    Box::new(points.into_iter().flat_map(move |p| r.rows_at(p).into_iter().filter(in_slice)))
}

pub fn figures(r: &Results, held: &[String]) -> Vec<Figure> {
    if r.summary.is_empty() {
        return Vec::new();
    }
    let strategies = r.strategies();
    let from_runs = !r.runs.is_empty();
    // Points of different workloads are not alternatives: hold every axis that is not a
    // strategy parameter at its middle value.
    let design = |k: &str| is_hold_cap(k) || k.contains("strateg");
    let fixed: Vec<usize> = (0..r.axis_keys.len()).filter(|&a| !design(&r.axis_keys[a])).collect();
    let mut points = Vec::new();
    for row in slice_rows(r, &fixed, held) {
        let x = if from_runs {
            let ms: Vec<f64> =
                r.runs_of(row.point, &row.strategy).filter_map(|u| u.get("makespan_s")).collect();
            nearest_rank(ms, 0.99)
        } else {
            row.get("completion_pooled_p99_s")
        };
        let (Some(x_s), Some(cost_usd)) = (x, row.get("cost_usd_mean")) else { continue };
        let at: Vec<String> = (0..r.axis_keys.len())
            .filter(|a| !fixed.contains(a))
            .map(|a| format!("{}={}", r.axis_keys[a], row.axis_values[a]))
            .collect();
        points.push(ParetoPoint {
            strategy: row.strategy.to_string(),
            at: at.join(", "),
            x_s,
            cost_usd,
            on_frontier: false,
        });
    }
    if points.is_empty() {
        return Vec::new();
    }
    mark_frontier(&mut points);
    let x_title = if from_runs {
        "Makespan p99 over replications (s)"
    } else {
        "Agent completion time p99 (s)"
    };
    let strategies: Vec<(String, RGBColor)> = strategies
        .iter()
        .filter(|s| points.iter().any(|p| &p.strategy == *s))
        .map(|s| (s.clone(), style::strategy_color(s, &strategies)))
        .collect();
    let spec = ParetoSpec { x_title: x_title.into(), strategies, points };
    let desc: Vec<String> = fixed
        .iter()
        .map(|&a| format!("{} = {}", style::short_key(&r.axis_keys[a]), held[a]))
        .collect();
    let (at, slice) = match desc.join(", ") {
        d if d.is_empty() => (d.clone(), d),
        d => (format!("At {d}: "), format!(" ({d})")),
    };
    let caption = format!("{at}{}", caption(&spec));
    let what = if from_runs { "p99 makespan" } else { "p99 completion time" };
    let title = format!("Cost vs {what}: Pareto frontier{slice}");
    vec![Figure { name: "pareto_cost_makespan".into(), title, caption, spec: Spec::Pareto(spec) }]
}

fn caption(s: &ParetoSpec) -> String {
    let front = s.front();
    let name = |p: &ParetoPoint| {
        if p.at.is_empty() {
            p.strategy.clone()
        } else {
            format!("{} at {}", p.strategy, p.at)
        }
    };
    let shown: Vec<String> = front
        .iter()
        .take(4)
        .map(|p| format!("{} ({} s, {} USD)", name(p), num(p.x_s), num(p.cost_usd)))
        .collect();
    let more =
        if front.len() > 4 { format!(" and {} more", front.len() - 4) } else { String::new() };
    let never = s.never_on();
    let mut text = format!(
        "{} of {} points are on the frontier, fastest first: {}{more}.",
        front.len(),
        s.points.len(),
        shown.join("; ")
    );
    if !never.is_empty() {
        text.push_str(&format!(" Never on it: {}.", never.join(", ")));
    }
    text
}

/// The frontier as a staircase: from each point across to the next one's makespan, then down
/// to its cost; on from the last to the axis's end `x1`.
fn frontier_steps(s: &ParetoSpec, x1: f64) -> Vec<(f64, f64)> {
    let front: Vec<(f64, f64)> = s.front().iter().map(|p| (p.x_s, p.cost_usd)).collect();
    let mut steps = Vec::new();
    for (k, p) in front.iter().enumerate() {
        if k > 0 {
            steps.push((p.0, front[k - 1].1));
        }
        steps.push(*p);
    }
    if let Some(last) = front.last() {
        steps.push((x1, last.1));
    }
    steps
}

pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &ParetoSpec,
) -> DrawResult {
    let (lo, hi) = extent(s.points.iter().map(|p| p.x_s));
    let (x0, x1) = padded(lo, hi, false);
    // Cost from zero: a cut axis would make a small saving look large.
    let (y0, y1) = padded(0.0, extent(s.points.iter().map(|p| p.cost_usd)).1, true);
    let mut legend = vec![("frontier".to_string(), Mark::Line(style::INK))];
    legend.extend(
        s.strategies
            .iter()
            .enumerate()
            .map(|(i, (st, c))| (st.clone(), Mark::Point(*c, style::shape(i)))),
    );
    legend.push((String::new(), Mark::Note));
    legend.push(("Points at one place are drawn side by side.".to_string(), Mark::Note));
    let area = frame(root, title, &legend)?;
    let mut chart = builder(&area).build_cartesian_2d(x0..x1, y0..y1)?;
    mesh_style(&mut chart)
        .x_desc(s.x_title.as_str())
        .y_desc("Mean cost per run (USD)")
        .x_labels(super::scale::ticks_for_width(area.dim_in_pixel().0))
        .x_label_formatter(&|v| tick(*v, x1 - x0))
        .y_label_formatter(&|v| tick(*v, y1 - y0))
        .draw()?;
    let steps = PathElement::new(frontier_steps(s, x1), style::INK.stroke_width(2));
    chart.draw_series(std::iter::once(steps))?;
    // Points that coincide (within a marker of each other) are drawn side by side, in
    // strategy order, centred on their place: each one seen, none moved at random.
    let px_per_x = chart.plotting_area().dim_in_pixel().0.max(1) as f64 / (x1 - x0);
    let mut drawn: Vec<(f64, f64, usize)> = Vec::new();
    for (i, (st, _)) in s.strategies.iter().enumerate() {
        for p in s.points.iter().filter(|p| &p.strategy == st) {
            drawn.push((p.x_s, p.cost_usd, i));
        }
    }
    let at = |p: &(f64, f64, usize)| chart.backend_coord(&(p.0, p.1));
    let near = |a: (i32, i32), b: (i32, i32)| (a.0 - b.0).abs() < 12 && (a.1 - b.1).abs() < 12;
    for (k, p) in drawn.iter().enumerate() {
        let group: Vec<usize> = (0..drawn.len()).filter(|&j| near(at(&drawn[j]), at(p))).collect();
        let rank = group.iter().position(|&j| j == k).unwrap_or(0) as f64;
        let dx_px = (rank - (group.len() - 1) as f64 / 2.0) * 20.0;
        let (i, c) = (p.2, s.strategies[p.2].1);
        marker(chart.plotting_area(), (p.0 + dx_px / px_per_x, p.1), style::shape(i), c, 9)?;
    }
    let ring = s
        .points
        .iter()
        .filter(|p| p.on_frontier)
        .map(|p| Circle::new((p.x_s, p.cost_usd), 12, style::INK.stroke_width(2)));
    chart.draw_series(ring)?;
    Ok(())
}
