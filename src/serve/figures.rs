//! What one request computes: a run's summary and the page's figures, drawn by the plot module
//! as SVG (cost by strategy, launch-wait and completion percentiles, one replication's
//! timeline, the covered-prefix figure), and one sweep point with the sweep's figure so far.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::settings::Refusal;
use crate::api::{Experiment, RunOptions};
use crate::plot::metric::{self, MetricSpec, Series};
use crate::plot::{self, style, Figure, Spec};
use crate::report::run::RunSummary;
use crate::results::Results;

/// A figure as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Drawn {
    pub name: String,
    pub title: String,
    pub caption: String,
    pub svg: String,
}

/// A scratch directory for one run's result files (the plot module reads figures from
/// files), removed when dropped, whether the request succeeded or not.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("prefixsim-serve-{}-{n}", std::process::id());
        Scratch(std::env::temp_dir().join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The page's figures, in the order it shows them (those of the plot module that a run
/// supports: the covered-prefix figure only with a `wait_first` strategy).
const SHOWN: [&str; 3] = ["launch_wait_percentiles", "completion_percentiles", "covered_prefix"];

/// The agents the page's timeline shows, as lanes: the first 16 (and the prewarm request's and
/// the parent's lanes), as many as the figure labels readably. Only these are traced, as the
/// run goes, so a run of 300,000 agents holds 16 agents' segments, not 300,000.
pub const TIMELINE_LANES: u32 = 16;

/// Run `exp` (one thread: concurrent users share the cores) and draw the page's figures, the
/// timeline of `timeline` (a strategy label; default the first strategy) with the lanes of
/// the first `TIMELINE_LANES` agents.
pub fn run_with_figures(
    exp: &Experiment,
    timeline: Option<&str>,
) -> Result<(RunSummary, Vec<Drawn>), Refusal> {
    let dir = Scratch::new();
    let opts = RunOptions {
        jobs: Some(1),
        out: Some(dir.0.clone()),
        trace: true,
        trace_lanes: Some(TIMELINE_LANES),
        ..Default::default()
    };
    let summary = exp.run(&opts);
    // One thread ran it (`jobs: 1`): its buffers, sized for this run, are not kept.
    crate::exec::model::release_buffers();
    let summary = summary.map_err(Refusal::from_api)?;
    let figures = plot::figures(&load(&dir.0)?);
    let mut drawn = vec![svg(&cost_by_strategy(&summary))?];
    let labels: Vec<&str> = summary.results.iter().map(|r| r.strategy.as_str()).collect();
    let lane = timeline.unwrap_or(labels.first().copied().unwrap_or(""));
    if !labels.contains(&lane) {
        let msg = format!("timeline = `{lane}`: the run's strategies are {}", labels.join(", "));
        return Err(Refusal::BadInput(msg));
    }
    for name in SHOWN {
        if let Some(f) = figures.iter().find(|f| f.name == name) {
            drawn.push(svg(f)?);
        }
        if name == "completion_percentiles" {
            let of_lane = |f: &&Figure| matches!(&f.spec, Spec::Timeline(t) if t.strategy == lane);
            if let Some(f) = figures.iter().find(of_lane) {
                drawn.push(svg(&sampled(f, exp.config().workload.agents))?);
            }
        }
    }
    Ok((summary, drawn))
}

/// The timeline `f` saying that its lanes are a sample when the run has more than
/// `TIMELINE_LANES` agents: in its title (drawn on the figure) and its caption, whose counts
/// are of the lanes shown.
fn sampled(f: &Figure, agents: u32) -> Figure {
    let mut f = f.clone();
    if agents > TIMELINE_LANES {
        f.title = format!("{} (agents 0-{} of {agents})", f.title, TIMELINE_LANES - 1);
        f.caption = format!(
            "Lanes: the first {TIMELINE_LANES} of {agents} agents (and the prewarm request's and \
             the parent's, when the run has them); the counts are of these lanes. {}",
            f.caption
        );
    }
    f
}

fn load(dir: &Path) -> Result<Results, Refusal> {
    Results::load(dir).map_err(|e| Refusal::Internal(format!("reading the run's results: {e}")))
}

/// Draw a figure for the page.
pub fn svg(f: &Figure) -> Result<Drawn, Refusal> {
    let svg = plot::render_svg(f).map_err(|e| Refusal::Internal(e.to_string()))?;
    Ok(Drawn { name: f.name.clone(), title: f.title.clone(), caption: f.caption.clone(), svg })
}

/// Mean cost per strategy with its 95% CI, one marker per strategy (the plot module's dot
/// plot for an axis of words).
pub fn cost_by_strategy(s: &RunSummary) -> Figure {
    let labels: Vec<String> = s.results.iter().map(|r| r.strategy.clone()).collect();
    let mut x = metric::x_axis("strategy", &labels);
    x.title = "Launch strategy".to_string();
    let series = s
        .results
        .iter()
        .enumerate()
        .map(|(i, r)| Series {
            label: r.strategy.clone(),
            color: style::strategy_color(&r.strategy, &labels),
            shape: style::shape(i),
            points: vec![(i as f64, r.cost_usd, r.cost_usd_ci95)],
        })
        .collect();
    let cheapest = s.results.iter().min_by(|a, b| a.cost_usd.total_cmp(&b.cost_usd));
    let caption = match cheapest {
        Some(r) => format!(
            "Mean cost per run over {} replications (bars: 95% CI); lowest: {} at ${:.4}.",
            s.replications, r.strategy, r.cost_usd
        ),
        None => "No strategies.".to_string(),
    };
    let spec = MetricSpec { x, highlight: None, y_title: "Cost per run (USD)".into(), series };
    Figure {
        name: "cost_by_strategy".into(),
        title: format!("Cost by strategy: {}", s.name),
        caption,
        spec: Spec::Metric(spec),
    }
}

/// The metrics a sweep can draw: (name, y axis title).
pub const SWEEP_METRICS: [(&str, &str); 4] = [
    ("cost_usd", "Cost per run (USD)"),
    ("launch_wait_p99_s", "Pooled p99 launch wait (s)"),
    ("completion_p99_s", "Pooled p99 completion (s)"),
    ("hit_rate", "Token hit rate (%)"),
];

/// The value of `metric` (one of `SWEEP_METRICS`) for one strategy: (mean, 95% CI half-width;
/// 0 for pooled percentiles, which have none).
pub fn metric_value(r: &crate::report::run::StrategyResult, metric: &str) -> (f64, f64) {
    match metric {
        "launch_wait_p99_s" => (r.launch_wait_pooled_s.p99, 0.0),
        "completion_p99_s" => (r.completion_pooled_s.p99, 0.0),
        "hit_rate" => (r.hit_rate * 100.0, 0.0),
        _ => (r.cost_usd, r.cost_usd_ci95),
    }
}

/// A sweep's figure with the points computed so far: `metric` against `key`, whose full list
/// of values fixes the axis from the first point on.
pub fn sweep_figure(key: &str, values: &[String], metric: &str, done: &[RunSummary]) -> Figure {
    let x = metric::x_axis(key, values);
    let labels: Vec<String> = done
        .first()
        .map(|s| s.results.iter().map(|r| r.strategy.clone()).collect())
        .unwrap_or_default();
    let series = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let mut points: Vec<(f64, f64, f64)> = done
                .iter()
                .zip(&x.positions)
                .filter_map(|(s, &p)| {
                    let (m, ci) = metric_value(s.strategy(label)?, metric);
                    Some((p, m, ci))
                })
                .collect();
            // Values may be given in any order; lines join them along the axis.
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: label.clone(),
                color: style::strategy_color(label, &labels),
                shape: style::shape(i),
                points,
            }
        })
        .collect();
    let y_title = SWEEP_METRICS.iter().find(|m| m.0 == metric).map_or("", |m| m.1).to_string();
    let title = format!("{y_title} vs {key} ({} of {} points)", done.len(), values.len());
    Figure {
        name: "sweep".into(),
        title,
        caption: String::new(),
        spec: Spec::Metric(MetricSpec { x, highlight: None, y_title, series }),
    }
}
