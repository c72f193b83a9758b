//! Rules that keep a figure's finding visible, as plain functions on values and series: a
//! swept value as people read it (`8.57s`, not `8571428us`), and lines that coincide drawn
//! once under a combined label. The axis rules (log past `scale::LOG_RATIO`, evenly placed
//! when values crowd, share axes cut at 1 or 100%) live in `scale`; their tests are here.

use super::series::Series;
use super::style::num;

/// A swept value as people read it: a duration that is not a whole number of milliseconds in
/// seconds with three significant digits (`8571428us` -> `8.57s`); durations written in a
/// unit (`1min`, `500ms`), numbers and words as they are; inside a call (`const(2000)`) too.
pub fn display_value(v: &str) -> String {
    let t = v.trim();
    let Some(us) = crate::time::parse_duration_us(t).ok().filter(|_| t.parse::<f64>().is_err())
    else {
        return v.to_string();
    };
    if us % 1000 == 0 || us < 1000 {
        return t.to_string();
    }
    format!("{}s", num(crate::time::secs(us)))
}

/// Series drawn as one line, drawn once: the first keeps its colour and shape, its label
/// joined with the others' (`kind = a = b`, a shared `key = ` said once). `=` when the points
/// are the same (x, mean and CI within 1e-9 of their size), `≈` when the means differ by at
/// most `NEAR` of the figure's y range at every x (under a pixel) and the CIs by at most ten
/// times that. Order is kept otherwise.
pub fn merge_coinciding(series: Vec<Series>) -> Vec<Series> {
    let (lo, hi) = super::scale::extent(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let tol = if hi > lo { (hi - lo) * NEAR } else { 0.0 };
    let mut out: Vec<Series> = Vec::new();
    for se in series {
        let same = out.iter_mut().find_map(|o| coincide(o, &se, tol).map(|exact| (o, exact)));
        match same {
            Some((o, exact)) => o.label = joined(&o.label, &se.label, exact),
            None => out.push(se),
        }
    }
    out
}

/// The share of a figure's y range two lines may differ by and still be drawn as one.
pub const NEAR: f64 = 1e-3;

/// `Some(true)` when `a` and `b` are the same, `Some(false)` when within `tol` (means; CIs
/// within ten times it), `None` when apart.
fn coincide(a: &Series, b: &Series, tol: f64) -> Option<bool> {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1e-12);
    if a.points.len() != b.points.len() || a.points.is_empty() {
        return None;
    }
    let pairs = || a.points.iter().zip(&b.points);
    if pairs().any(|(p, q)| !close(p.0, q.0)) {
        return None;
    }
    if pairs().all(|(p, q)| close(p.1, q.1) && close(p.2, q.2)) {
        return Some(true);
    }
    let near = pairs().all(|(p, q)| (p.1 - q.1).abs() <= tol && (p.2 - q.2).abs() <= 10.0 * tol);
    near.then_some(false)
}

/// `a = b` (`a ≈ b` when not `exact`), with a `key = ` both labels share said once.
fn joined(a: &str, b: &str, exact: bool) -> String {
    let sign = if exact { "=" } else { "≈" };
    match (a.split_once(" = "), b.split_once(" = ")) {
        (Some((ka, _)), Some((kb, vb))) if ka == kb => format!("{a} {sign} {vb}"),
        _ => format!("{a} {sign} {b}"),
    }
}

/// Should small multiples each get their own y scale? When the panels' ranges (lowest to
/// highest of each band) differ by 4x or more, one shared scale leaves the narrowest a flat
/// line: 5k-token prefixes' $0.83 -> $0.61 under 500k-token prefixes' $22.
pub fn own_scales(extents: &[(f64, f64)]) -> bool {
    let spans: Vec<f64> = extents
        .iter()
        .map(|(lo, hi)| (hi - lo).max(hi.abs().max(lo.abs()) * 0.05))
        .filter(|w| w.is_finite() && *w > 0.0)
        .collect();
    let (lo, hi) = super::scale::extent(spans.iter().copied());
    spans.len() >= 2 && hi / lo >= 4.0
}

/// Do two of `series` share a colour (a palette of fewer colours than lines wrapped round)?
pub fn colours_repeat(series: &[Series]) -> bool {
    series.iter().enumerate().any(|(i, a)| series[..i].iter().any(|b| b.color == a.color))
}

#[cfg(test)]
mod tests {
    use super::super::axis::x_axis;
    use super::super::scale::{self, crowded, share_cap};
    use super::super::style;
    use super::*;

    fn series(label: &str, ys: &[f64]) -> Series {
        let points = ys.iter().enumerate().map(|(i, y)| (i as f64, *y, 0.5)).collect();
        Series { label: label.into(), color: style::INK, shape: style::shape(0), points }
    }

    #[test]
    fn durations_read_as_durations() {
        assert_eq!(display_value("8571428us"), "8.57s");
        assert_eq!(display_value("1min"), "1min");
        assert_eq!(display_value("1500ms"), "1500ms");
        assert_eq!(display_value("0s"), "0s");
        assert_eq!(display_value("2000"), "2000");
        assert_eq!(display_value("const(2000)"), "const(2000)");
        let x = x_axis("workload.parent_turn_every", &["0s".into(), "8571428us".into()]);
        assert_eq!(&x.labels[..], ["0s", "8.57s"]);
    }

    #[test]
    fn the_axis_is_chosen_from_the_values() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // All positive, spanning 20x or more: log.
        let x = x_axis("wait_first.max_wait", &v(&["1s", "2s", "5s", "10s", "30s"]));
        assert!(x.log && !x.categorical);
        // A zero among values crowded near it: evenly placed, in value order, labelled.
        let x = x_axis("workload.parent_turn_every", &v(&["0s", "1min", "10s", "8571428us", "2s"]));
        assert!(!x.log && x.categorical && !x.words);
        assert_eq!(x.positions, [0.0, 4.0, 3.0, 2.0, 1.0]);
        assert_eq!(x.title, "workload.parent_turn_every (evenly spaced)");
        let s = super::super::axis::x_scale_max(&x, 8);
        assert_eq!(s.label(2.0), "8.57s");
        assert_eq!(s.label(4.0), "1min");
        // An even grid stays to scale.
        let x = x_axis("workload.parent_idle", &v(&["0s", "1min", "2min", "3min", "4min"]));
        assert!(!x.log && !x.categorical);
        assert!(crowded(&[0.0, 2.0, 8.57, 10.0, 60.0]));
        assert!(!crowded(&[0.0, 60.0, 120.0, 180.0]));
        assert!(!crowded(&[0.0, 60.0, 600.0]), "0s, 1min, 10min stay to scale");
        assert!(!crowded(&[1.0, 2.0]));
    }

    #[test]
    fn units_are_said_once() {
        let v = ["0.01", "0.1", "1"].map(String::from);
        let x = x_axis("capacity (share of distinct tokens)", &v);
        assert_eq!(x.title, "capacity (share of distinct tokens, log scale)");
        let x = x_axis("workload.parent_tokens", &["5000".into(), "500000".into()]);
        assert_eq!(x.title, "workload.parent_tokens (tokens, log scale)");
    }

    #[test]
    fn coinciding_series_are_drawn_once() {
        let merged = merge_coinciding(vec![
            series("kind = fork_drop_tool(tool=Bash)", &[46.2, 98.8]),
            series("kind = fork", &[45.9, 68.1]),
            series("kind = fork_edit_system", &[46.2, 98.8]),
        ]);
        let labels: Vec<&str> = merged.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["kind = fork_drop_tool(tool=Bash) = fork_edit_system", "kind = fork"]);
        let apart = merge_coinciding(vec![series("a", &[1.0, 2.0]), series("b", &[1.0, 2.1])]);
        assert_eq!(apart.len(), 2);
        // Under a pixel apart on a 0-100 axis: one line, said to be near.
        let near = merge_coinciding(vec![
            series("kind = a", &[96.5383, 92.3864]),
            series("kind = b", &[96.5377, 92.3820]),
            series("kind = c", &[0.0, 100.0]),
        ]);
        assert_eq!(near[0].label, "kind = a ≈ b");
    }

    #[test]
    fn panels_get_their_own_scale_when_one_would_flatten_some() {
        assert!(own_scales(&[(0.6, 0.83), (6.9, 22.0), (2.0, 9.0)]));
        assert!(!own_scales(&[(40.0, 60.0), (45.0, 70.0), (38.0, 66.0)]));
        assert!(!own_scales(&[(1.0, 2.0)]));
        let blue = series("a", &[1.0]);
        let mut red = series("b", &[1.0]);
        assert!(colours_repeat(&[blue.clone(), red.clone()]));
        red.color = style::series_color(1);
        assert!(!colours_repeat(&[blue, red]));
    }

    #[test]
    fn share_axes_stop_at_one() {
        assert_eq!(share_cap("Token hit rate (%)"), Some(100.0));
        assert_eq!(share_cap("Share of runs: cap before first token"), Some(1.0));
        assert_eq!(share_cap("Cost per run (USD)"), None);
        let s = scale::linear(0.0, 1.0, true).capped(1.0);
        assert!(s.hi <= 1.0 && s.ticks.iter().all(|t| *t <= 1.0), "{s:?}");
        assert_eq!(s.ticks.last(), Some(&1.0));
    }
}
