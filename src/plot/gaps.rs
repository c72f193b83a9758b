//! A histogram on a log x axis with labelled vertical markers: replay's reuse gaps, which run
//! from milliseconds to hours, in log-spaced bins so the mass near zero is seen, with the
//! TTLs (5 min, 1 h, the replay's own) marked where a reuse stops being a hit.

use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::latency::{single_spec, LatencySpec, BINS};
use super::scale;
use super::style;
use super::{builder, frame, mesh_style, DrawResult};

/// `latency::single_spec` with log-spaced bins from the smallest sample (at least 1 ms) to the
/// largest, when they span `scale::LOG_RATIO` or more (else the linear bins), and `markers`.
pub fn single_spec_log(
    what: &str,
    label: &str,
    color: RGBColor,
    h: &Histogram<u64>,
    markers: Vec<(f64, String)>,
) -> LatencySpec {
    let mut spec = LatencySpec { markers, ..single_spec(what, label, color, h) };
    let (lo, hi) = (crate::time::secs(h.min()).max(1e-3), crate::time::secs(h.max()));
    if scale::wants_log(&[lo, hi]) {
        spec.edges_s = log_edges(lo, hi * 1.0001);
        spec.series[0].shares = shares_in(h, &spec.edges_s);
        spec.log_x = true;
    }
    spec
}

/// `BINS + 1` edges spaced evenly in log10 from `lo_s` to `hi_s` (both positive).
pub fn log_edges(lo_s: f64, hi_s: f64) -> Vec<f64> {
    let (a, b) = (lo_s.log10(), hi_s.max(lo_s * 1.01).log10());
    (0..=BINS).map(|i| 10f64.powf(a + (b - a) * i as f64 / BINS as f64)).collect()
}

/// The share (%) of `h`'s samples in each bin of `edges` (seconds); samples below the first
/// edge count in the first bin, above the last in the last.
pub fn shares_in(h: &Histogram<u64>, edges: &[f64]) -> Vec<f64> {
    let mut counts = vec![0u64; edges.len() - 1];
    for v in h.iter_recorded() {
        let s = crate::time::secs(h.median_equivalent(v.value_iterated_to()));
        let i = edges.partition_point(|e| *e <= s).saturating_sub(1).min(counts.len() - 1);
        counts[i] += v.count_at_value();
    }
    let total = h.len().max(1) as f64;
    counts.into_iter().map(|c| c as f64 * 100.0 / total).collect()
}

/// The range a log histogram draws: its bins and every marker (seconds), widened a little.
fn x_range(s: &LatencySpec) -> (f64, f64) {
    let marks = s.markers.iter().map(|m| m.0);
    let (lo, hi) = scale::extent(s.edges_s.iter().copied().chain(marks));
    (lo.max(1e-6), hi * 1.5)
}

/// Draw `s` (one series, `log_x`): step outline of its shares over log-spaced bins, a
/// labelled vertical line at each marker.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &LatencySpec,
) -> DrawResult {
    let area = frame(root, title, &[])?;
    let (lo, hi) = x_range(s);
    let x = scale::log_scale(lo, hi);
    let ymax = s.series.iter().flat_map(|x| x.shares.iter()).copied().fold(0.0, f64::max);
    let y = scale::linear(0.0, ymax * 1.15, true).capped(100.0);
    let mut chart = builder(&area).build_cartesian_2d(x.ranged(), y.ranged())?;
    let (xs, ys) = (x.clone(), y.clone());
    let x_title = format!("{} (s, log scale)", s.what);
    mesh_style(&mut chart)
        .x_desc(x_title.as_str())
        .y_desc("Share of samples (%)")
        .x_label_formatter(&|v| xs.label(*v))
        .y_label_formatter(&|v| ys.label(*v))
        .draw()?;
    for se in &s.series {
        let mut steps = vec![(s.edges_s[0].log10(), 0.0)];
        for (i, v) in se.shares.iter().enumerate() {
            steps.push((s.edges_s[i].log10(), *v));
            steps.push((s.edges_s[i + 1].log10(), *v));
        }
        steps.push((s.edges_s[s.edges_s.len() - 1].log10(), 0.0));
        let path = PathElement::new(steps, se.color.stroke_width(style::LINE_PX));
        chart.draw_series(std::iter::once(path))?;
    }
    for (k, (at, label)) in s.markers.iter().enumerate() {
        let p = at.log10();
        let line = PathElement::new(vec![(p, y.lo), (p, y.hi)], style::INK.stroke_width(2));
        chart.draw_series(std::iter::once(line))?;
        let font = (style::FONT, style::TICK_PX).into_font().color(&style::INK);
        let drop = 0.03 + 0.08 * k as f64;
        let text = Text::new(format!(" {label}"), (p, y.hi - (y.hi - y.lo) * drop), font);
        chart.draw_series(std::iter::once(text))?;
    }
    Ok(())
}

/// The markers of a reuse-gap figure: the 5 min and 1 h TTLs, and `ttl` (the replay's own,
/// as written in replay.json) when it is another duration.
pub fn ttl_markers(ttl: Option<&str>) -> Vec<(f64, String)> {
    let mut out = vec![(300.0, "5 min TTL".to_string()), (3600.0, "1 h TTL".to_string())];
    let own = ttl.and_then(|t| crate::time::parse_duration_us(t).ok()).map(crate::time::secs);
    if let Some(s) = own.filter(|s| *s > 0.0 && out.iter().all(|m| (m.0 - s).abs() > 1e-9)) {
        out.push((s, format!("this replay's TTL {}", ttl.unwrap_or_default())));
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_bins_spread_a_gap_distribution_and_ttls_are_marked() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 36_000_000_000, 3).unwrap();
        for us in [1_000u64, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 3_000_000_000] {
            h.record_n(us, 10).unwrap();
        }
        let edges = log_edges(0.001, 3000.0);
        assert_eq!(edges.len(), BINS + 1);
        let shares = shares_in(&h, &edges);
        let filled = shares.iter().filter(|s| **s > 0.0).count();
        assert_eq!(filled, 7, "one bin per decade of samples: {shares:?}");
        assert!((shares.iter().sum::<f64>() - 100.0).abs() < 1e-9);
        let m = ttl_markers(Some("10min"));
        let labels: Vec<&str> = m.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["5 min TTL", "this replay's TTL 10min", "1 h TTL"]);
        assert_eq!(ttl_markers(Some("none")).len(), 2);
        assert_eq!(ttl_markers(Some("5m")).len(), 2);
    }
}
