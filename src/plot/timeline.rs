//! Timeline of a single run (trace.csv, replication 0), one figure per strategy: one lane per
//! agent (agent 0 on top), coloured segments for hold, rate-limit wait, prefill, decode and
//! tool time, a marker per request (hit, partial, miss, redundant write) at its prefill, and
//! a vertical line where the first writer's entry becomes ready (the trace's `entry_ready`
//! row; without one, the first writing request's first token, and the legend says so).

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{self, num};
use super::{builder, category, frame, mesh_style, padded, DrawResult, Figure, Mark, Spec};
use crate::results::{slug, Results};

/// Drawn segment kinds, in legend order.
pub const LANE_KINDS: [&str; 5] = ["hold", "rate_limit", "prefill", "decode", "tool"];
/// Request outcomes, in legend order (trace.csv spelling).
pub const OUTCOMES: [&str; 4] = ["hit", "partial", "miss", "redundant_write"];

#[derive(Debug, Clone)]
pub struct TimelineSpec {
    pub strategy: String,
    pub agents: Vec<u32>,
    /// (lane, kind, start s, end s).
    pub segments: Vec<(usize, String, f64, f64)>,
    /// (lane, time s, outcome).
    pub marks: Vec<(usize, f64, String)>,
    /// When the first writer's entry becomes readable (trace `entry_ready`), or, when the
    /// trace has no such row, when the first writing request's first token arrives.
    pub ready_s: Option<f64>,
    /// True when `ready_s` comes from an `entry_ready` row.
    pub ready_is_entry: bool,
    /// The lane of `prewarm`'s warming request (`prewarm_agent`): labelled "prewarm", not as
    /// an agent.
    pub prewarm_lane: Option<usize>,
}

/// When the first writer's entry becomes readable (`true`), or, without `entry_ready` rows, the
/// end of the first writing prefill (its first token; `false`).
fn ready(rows: &[&crate::results::TraceRow]) -> (Option<f64>, bool) {
    let entry_ready_s = rows
        .iter()
        .filter(|t| t.segment == "entry_ready")
        .map(|t| t.end_s) // the segment runs from first token to readable
        .min_by(f64::total_cmp);
    let first_token_s = rows
        .iter()
        .filter(|t| {
            t.segment == "prefill" && WRITES.contains(&normalize_outcome(&t.outcome).as_str())
        })
        .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
        .map(|t| t.end_s);
    match entry_ready_s {
        Some(t) => (Some(t), true),
        None => (first_token_s, false),
    }
}

/// The agent id of `prewarm`'s warming request in a trace of strategy `s`: the highest id,
/// one past the workload's agents, whose rows hold no decode (it asks for no output).
fn prewarm_agent(s: &str, rows: &[&crate::results::TraceRow], agents: &[u32]) -> Option<u32> {
    if crate::results::parse_label(s).0 != "prewarm" {
        return None;
    }
    let last = *agents.last()?;
    let decodes = rows.iter().any(|t| t.agent == last && t.segment == "decode");
    (last as usize + 1 == agents.len() && agents.len() > 1 && !decodes).then_some(last)
}

/// Outcomes of a request that writes an entry.
const WRITES: [&str; 3] = ["miss", "partial", "redundant_write"];

/// `RedundantWrite`, `redundant-write` and `redundant_write` all mean the same outcome.
pub fn normalize_outcome(o: &str) -> String {
    let mut out = String::new();
    for (i, c) in o.trim().chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(if c == '-' || c == ' ' { '_' } else { c.to_ascii_lowercase() });
    }
    out
}

pub fn figures(r: &Results) -> Vec<Figure> {
    let mut out = Vec::new();
    for s in r.strategies() {
        let rows: Vec<_> = r.trace.iter().filter(|t| t.strategy == s).collect();
        if rows.is_empty() {
            continue;
        }
        let mut agents: Vec<u32> = rows.iter().map(|t| t.agent).collect();
        agents.sort_unstable();
        agents.dedup();
        let lane = |a: u32| agents.iter().position(|x| *x == a).unwrap_or(0);
        let segments = rows
            .iter()
            .filter(|t| LANE_KINDS.contains(&t.segment.as_str()))
            .map(|t| (lane(t.agent), t.segment.clone(), t.start_s, t.end_s))
            .collect();
        // One mark per (agent, request): its outcome, at its prefill's start.
        let mut requests: BTreeMap<(u32, u32), (Option<f64>, f64, String)> = BTreeMap::new();
        for t in &rows {
            let e =
                requests.entry((t.agent, t.request)).or_insert((None, t.start_s, String::new()));
            e.1 = e.1.min(t.start_s);
            if t.segment == "prefill" {
                e.0 = Some(e.0.map_or(t.start_s, |p: f64| p.min(t.start_s)));
            }
            let o = normalize_outcome(&t.outcome);
            if OUTCOMES.contains(&o.as_str()) && (e.2.is_empty() || t.segment == "prefill") {
                e.2 = o;
            }
        }
        let marks = requests
            .iter()
            .filter(|(_, v)| !v.2.is_empty())
            .map(|((a, _), v)| (lane(*a), v.0.unwrap_or(v.1), v.2.clone()))
            .collect();
        let (ready_s, ready_is_entry) = ready(&rows);
        let prewarm_lane = prewarm_agent(&s, &rows, &agents).map(lane);
        let spec = TimelineSpec {
            strategy: s.clone(),
            agents,
            segments,
            marks,
            ready_s,
            ready_is_entry,
            prewarm_lane,
        };
        out.push(Figure {
            name: format!("timeline_{}", slug(&s)),
            title: format!("Timeline of one run: {s}"),
            caption: caption(&spec),
            spec: Spec::Timeline(spec),
        });
    }
    out
}

fn caption(s: &TimelineSpec) -> String {
    let count = |o: &str| s.marks.iter().filter(|m| m.2 == o).count();
    let end = s.segments.iter().map(|x| x.3).fold(0.0, f64::max);
    let hold = s.segments.iter().filter(|x| x.1 == "hold").map(|x| x.3 - x.2).fold(0.0, f64::max);
    let ready = match (s.ready_s, s.ready_is_entry) {
        (Some(t), true) => format!("the first writer's entry is ready at {} s", num(t)),
        (Some(t), false) => format!("the first writer's first token arrives at {} s", num(t)),
        (None, _) => "no request writes an entry".into(),
    };
    format!(
        "{}: {ready}; of {} requests, {} hit, {} partial, {} miss, {} redundant writes; longest hold {} s; last agent done at {} s.",
        s.strategy,
        s.marks.len(),
        count("hit"),
        count("partial"),
        count("miss"),
        count("redundant_write"),
        num(hold),
        num(end)
    )
}

fn outcome_color(o: &str) -> RGBColor {
    match o {
        "hit" => RGBColor(0, 120, 60),
        "partial" => RGBColor(150, 120, 0),
        "miss" => RGBColor(200, 0, 0),
        _ => RGBColor(120, 0, 160),
    }
}

/// The launch window shown zoomed: up to twice the first entry's readiness (at least 1 s), or
/// None when that is most of the run anyway.
pub fn zoom_end(s: &TimelineSpec) -> Option<f64> {
    let end = s.segments.iter().map(|x| x.3).chain(s.ready_s).fold(0.0, f64::max);
    let first_starts = s.segments.iter().map(|x| x.2).fold(0.0, f64::max).min(end);
    let t = match s.ready_s {
        Some(r) => (2.0 * r).max(1.0),
        None => (0.1 * first_starts).max(1.0),
    };
    let t = super::scale::linear(0.0, t, true).hi;
    (t < 0.4 * end).then_some(t)
}

pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &TimelineSpec,
) -> DrawResult {
    let end = s.segments.iter().map(|x| x.3).chain(s.ready_s).fold(0.0, f64::max);
    let (_, x1) = padded(0.0, end, true);
    let area = frame(root, title, &legend(s))?;
    match zoom_end(s) {
        Some(z) => {
            let w = area.dim_in_pixel().0;
            let (left, right) = area.split_horizontally(w * 2 / 5);
            let zoom = format!("First {} s (zoom)", num(z));
            draw_panel(&left, s, z, &zoom, true)?;
            draw_panel(&right, s, x1, "Whole run: simulated time (s)", false)
        }
        None => draw_panel(&area, s, x1, "Simulated time (s)", true),
    }
}

/// One panel of lanes from 0 to `x1` seconds; agent labels only on the first panel.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &TimelineSpec,
    x1: f64,
    x_title: &str,
    agent_labels: bool,
) -> DrawResult {
    let n = s.agents.len();
    let y_of = |lane: usize| (n - 1 - lane) as f64;
    let fit = super::scale::ticks_for_width(area.dim_in_pixel().0);
    let x = super::scale::linear_max(0.0, x1, true, fit);
    let x = super::scale::Scale {
        hi: x1,
        ticks: x.ticks.into_iter().filter(|t| *t <= x1).collect(),
        ..x
    };
    let mut b = builder(area);
    if !agent_labels {
        b.y_label_area_size(20);
    }
    let mut chart = b.build_cartesian_2d(x.ranged(), -0.7..n as f64 - 0.3)?;
    let name = |(lane, a): (usize, &u32)| match s.prewarm_lane == Some(lane) {
        true => "prewarm".to_string(),
        false => format!("agent {a}"),
    };
    let agents: Vec<String> =
        s.agents.iter().enumerate().filter(|_| agent_labels).map(name).collect();
    let xs = x.clone();
    mesh_style(&mut chart)
        .disable_y_mesh()
        .x_desc(x_title)
        .y_desc(if agent_labels { "Agent" } else { "" })
        .y_labels(n.min(16) + 1)
        .x_label_formatter(&|v| xs.label(*v))
        .y_label_formatter(&|v| category(&agents, *v, true))
        .draw()?;
    let h = 0.3;
    let clip = |t: f64| t.min(x1);
    for kind in LANE_KINDS {
        let c = style::segment_color(kind);
        let mine: Vec<_> = s.segments.iter().filter(|x| x.1 == kind && x.2 < x1).collect();
        if mine.is_empty() {
            continue;
        }
        let bars = mine.iter().map(|x| {
            Rectangle::new([(x.2, y_of(x.0) - h), (clip(x.3), y_of(x.0) + h)], c.filled())
        });
        chart.draw_series(bars)?;
    }
    let marks: Vec<(f64, f64, &str)> = s
        .marks
        .iter()
        .filter(|m| m.1 <= x1)
        .map(|m| (m.1, y_of(m.0) + h + 0.12, m.2.as_str()))
        .collect();
    draw_marks(&mut chart, &marks, if n > 24 { 4 } else { 7 })?;
    if let Some(t) = s.ready_s.filter(|t| *t <= x1) {
        let ink = style::HIGHLIGHT;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(t, -0.7), (t, n as f64 - 0.3)],
            ink.stroke_width(2),
        )))?;
    }
    Ok(())
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<super::scale::TickedAxis, plotters::coord::types::RangedCoordf64>,
>;

/// Request outcomes at (time, lane y): hit/partial a dot, miss a cross, redundant write a triangle.
fn draw_marks<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    marks: &[(f64, f64, &str)],
    size: i32,
) -> DrawResult {
    for o in OUTCOMES {
        let c = outcome_color(o);
        let mine = marks.iter().filter(|m| m.2 == o).map(|m| (m.0, m.1));
        match o {
            "miss" => chart.draw_series(mine.map(|p| Cross::new(p, size, c.stroke_width(3))))?,
            "redundant_write" => {
                chart.draw_series(mine.map(|p| TriangleMarker::new(p, size + 1, c.filled())))?
            }
            _ => chart.draw_series(mine.map(|p| Circle::new(p, size, c.filled())))?,
        };
    }
    Ok(())
}

/// Segment kinds and outcomes present, and the entry-ready line: a key, not series. Each kind
/// and outcome recurs in every lane, many times, so no one bar or marker could carry its name
/// (direct labels name lines; here they would cover the lanes they explain), and the key is
/// short (at most ten rows) beside the lanes.
fn legend(s: &TimelineSpec) -> Vec<(String, Mark)> {
    let mut out: Vec<(String, Mark)> = LANE_KINDS
        .iter()
        .filter(|k| s.segments.iter().any(|x| x.1 == **k))
        .map(|k| (k.replace('_', "-"), Mark::Box(style::segment_color(k))))
        .collect();
    for o in OUTCOMES.iter().filter(|o| s.marks.iter().any(|m| m.2 == **o)) {
        let c = outcome_color(o);
        let mark = match *o {
            "miss" => Mark::Cross(c),
            "redundant_write" => Mark::Triangle(c),
            _ => Mark::Dot(c),
        };
        out.push((format!("request: {}", o.replace('_', " ")), mark));
    }
    if let Some(t) = s.ready_s {
        let what = if s.ready_is_entry { "first entry ready" } else { "first writer's 1st token" };
        out.push((format!("{what} ({} s)", num(t)), Mark::Line(style::HIGHLIGHT)));
    }
    out
}
