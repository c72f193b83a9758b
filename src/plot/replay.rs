//! Figures from replay.json (`replay --out`): token hit rate vs TTL and vs cache capacity
//! (the `curves`), and the distribution of reuse gaps between uses of a prefix block (its
//! embedded HdrHistogram) on the percentile axis and as a histogram.
//!
//! Reads only the fields `replay --out` writes; missing fields draw nothing.

use serde_json::Value;

use super::axis::x_axis;
use super::latency;
use super::metric::{MetricSpec, Series};
use super::style::{self, num};
use super::{Figure, Spec};
use crate::results::{decode_histogram, Results};

/// (x label, hit rate in %) of the curve `name`, x taken from `label_field`.
fn curve(r: &Value, name: &str, label_field: &str) -> Vec<(String, f64)> {
    let Some(points) = r.get("curves").and_then(|c| c.get(name)).and_then(Value::as_array) else {
        return Vec::new();
    };
    points
        .iter()
        .filter_map(|p| {
            let label = match p.get(label_field)? {
                Value::String(s) => s.clone(),
                other => num(other.as_f64()?),
            };
            Some((label, p.get("hit_rate")?.as_f64()? * 100.0))
        })
        .collect()
}

fn hit_rate_figure(r: &Value, name: &str, field: &str, key: &str, title: &str) -> Option<Figure> {
    let c = curve(r, name, field);
    if c.len() < 2 {
        return None;
    }
    let labels: Vec<String> = c.iter().map(|p| p.0.clone()).collect();
    let mut x = x_axis(key, &labels);
    x.marker = None; // the hold-cap default means nothing here
    let points = c.iter().enumerate().map(|(i, p)| (x.positions[i], p.1, 0.0)).collect();
    let series = vec![Series {
        label: "replay".into(),
        color: style::segment_color("prefill"),
        shape: style::Shape::Circle,
        points,
    }];
    let (lo, hi) = super::scale::extent(c.iter().map(|p| p.1));
    let caption = format!(
        "Token hit rate of the replayed trace goes from {}% at {key} = {} to {}% at {} (range {}%..{}%).",
        num(c[0].1),
        c[0].0,
        num(c[c.len() - 1].1),
        c[c.len() - 1].0,
        num(lo),
        num(hi)
    );
    let spec = MetricSpec { x, highlight: None, y_title: "Token hit rate (%)".into(), series };
    Some(Figure {
        name: format!("replay_{name}"),
        title: title.into(),
        caption,
        spec: Spec::Metric(spec),
    })
}

pub fn figures(r: &Results) -> Vec<Figure> {
    let Some(rep) = &r.replay else { return Vec::new() };
    let mut out = Vec::new();
    out.extend(hit_rate_figure(
        rep,
        "hit_rate_vs_ttl",
        "ttl",
        "TTL",
        "Replay: token hit rate vs cache TTL",
    ));
    out.extend(hit_rate_figure(
        rep,
        "hit_rate_vs_capacity",
        "fraction_of_distinct",
        "capacity (share of distinct tokens)",
        "Replay: token hit rate vs cache capacity (LRU)",
    ));
    let hist = rep
        .get("reuse_gap")
        .and_then(|g| g.get("hdr_v2_deflate_base64_us"))
        .and_then(Value::as_str)
        .and_then(|t| decode_histogram(t).ok());
    if let Some(h) = hist.filter(|h| !h.is_empty()) {
        let ttl = rep.pointer("/results/0/ttl").and_then(Value::as_str);
        let markers = super::gaps::ttl_markers(ttl);
        let color = style::segment_color("decode");
        let spec = super::gaps::single_spec_log("Reuse gap", "replay", color, &h, markers);
        let caption = format!(
            "Time between uses of the same prefix block over {} reuses: p50 {} s, p99 {} s; {}% of reuses come within 5 min (the default TTL), {}% within 1 h.",
            h.len(),
            num(spec.series[0].p50_s),
            num(spec.series[0].p99_s),
            num(h.percentile_below(300_000_000)),
            num(h.percentile_below(3_600_000_000))
        );
        let title = "Replay: reuse gap of prefix blocks";
        let titles = [format!("{title} by percentile"), title.into()];
        out.extend(latency::pair("replay_reuse_gap", titles, [caption.clone(), caption], spec));
    }
    out
}
