//! Figures from tune.json: the objective (± its 95% CI), the p99 launch wait and, for a
//! wait_first strategy, the share of runs whose cap fired before the first token, against the
//! tuned parameter's candidates; the recommendation marked (and the 5 s default when the
//! parameter is the hold cap).
//!
//! Reads the fields `tune --out` writes (`param`, `objective`, `recommended_label`,
//! `candidates[].{label, objective, objective_ci95, launch_wait_pooled_p99_s,
//! p_cap_before_first_token}`); a field that is absent draws no figure rather than guessing.

use serde_json::Value;

use super::axis::{is_hold_cap, x_axis, XAxis};
use super::metric::{MetricSpec, Series};
use super::style::{self, num};
use super::{Figure, Spec};
use crate::results::Results;

/// (label, value, ci95) of every candidate that has `field`.
fn column(t: &Value, field: &str, ci: Option<&str>) -> Vec<(String, f64, f64)> {
    let Some(cands) = t.get("candidates").and_then(Value::as_array) else { return Vec::new() };
    cands
        .iter()
        .filter_map(|c| {
            let label = c
                .get("label")
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| c.get("value").map(|v| v.to_string()))?;
            let v = c.get(field)?.as_f64()?;
            let e = ci.and_then(|k| c.get(k)).and_then(Value::as_f64).unwrap_or(0.0);
            Some((label, v, e))
        })
        .collect()
}

/// Candidates to scale (refinement packs them unevenly): x = their `value` (seconds for
/// durations), the default hold cap marked as in every hold-cap figure.
fn axis(t: &Value, key: &str, labels: &[String]) -> (XAxis, Option<(f64, String)>) {
    let mut x = x_axis(key, labels);
    let cands = t.get("candidates").and_then(Value::as_array).cloned().unwrap_or_default();
    let values: Option<Vec<f64>> = labels
        .iter()
        .map(|l| {
            let c = cands.iter().find(|c| c.get("label").and_then(Value::as_str) == Some(l))?;
            c.get("value")?.as_f64()
        })
        .collect();
    if let Some(v) = values.filter(|v| v.windows(2).all(|w| w[0] < w[1])) {
        let at = |s: f64| if x.log { s.max(f64::MIN_POSITIVE).log10() } else { s };
        x.positions = v.iter().map(|s| at(*s)).collect();
        x.title = super::axis::title_to_scale(key, labels, x.log);
        x.categorical = false;
        x.words = false;
        let cap = at(style::DEFAULT_HOLD_CAP_S);
        x.marker = x
            .marker
            .take()
            .filter(|_| is_hold_cap(key))
            .map(|_| (cap, "default hold cap 5 s".into()));
    }
    let rec = t.get("recommended_label").and_then(Value::as_str).and_then(|l| {
        let i = labels.iter().position(|x| x == l)?;
        Some((x.positions[i], format!("recommended {l}")))
    });
    (x, rec)
}

pub fn figures(r: &Results) -> Vec<Figure> {
    let Some(t) = &r.tune else { return Vec::new() };
    let Some(param) = t.get("param").and_then(Value::as_str) else { return Vec::new() };
    let objective = t.get("objective").and_then(Value::as_str).unwrap_or("objective");
    let color = style::strategy_color(t.get("strategy").and_then(Value::as_str).unwrap_or(""), &[]);
    let cost = objective.starts_with("cost");
    let objective_title = format!("Objective: {objective}{}", if cost { " (USD)" } else { "" });
    let fires = "share of runs whose cap fires before the first token";
    // (field, its ci95 field, y title, file stem, what it is, its unit)
    let specs = [
        (
            "objective",
            Some("objective_ci95"),
            objective_title,
            "tune_objective",
            objective,
            if cost { " USD" } else { "" },
        ),
        (
            "launch_wait_pooled_p99_s",
            None,
            "Pooled p99 launch wait (s)".into(),
            "tune_launch_wait_p99",
            "pooled p99 launch wait",
            " s",
        ),
        (
            "p_cap_before_first_token",
            None,
            "Share of runs: cap before first token".into(),
            "tune_p_cap_before_first_token",
            fires,
            "",
        ),
    ];
    let mut out = Vec::new();
    for (field, ci, y_title, name, what, unit) in specs {
        let col = column(t, field, ci);
        if col.len() < 2 {
            continue;
        }
        let labels: Vec<String> = col.iter().map(|c| c.0.clone()).collect();
        let (x, rec) = axis(t, param, &labels);
        let points = col.iter().enumerate().map(|(i, c)| (x.positions[i], c.1, c.2)).collect();
        let series =
            vec![Series { label: param.to_string(), color, shape: style::Shape::Circle, points }];
        let caption = caption(t, param, &col, what, unit);
        let spec = MetricSpec { x, highlight: rec, y_title, series };
        out.push(Figure {
            name: name.into(),
            title: format!("tune: {what} vs {param}"),
            caption,
            spec: Spec::Metric(spec),
        });
    }
    out
}

fn caption(t: &Value, param: &str, col: &[(String, f64, f64)], what: &str, unit: &str) -> String {
    let min = col.iter().min_by(|a, b| a.1.total_cmp(&b.1));
    let max = col.iter().reduce(|a, b| if b.1 > a.1 { b } else { a });
    let (Some(min), Some(max)) = (min, max) else { return String::new() };
    let mut s = format!(
        "Over {} candidates of {param}, {what} ranges from {}{unit} (at {}) to {}{unit} (at {})",
        col.len(),
        num(min.1),
        min.0,
        num(max.1),
        max.0
    );
    if let Some(l) = t.get("recommended_label").and_then(Value::as_str) {
        s.push_str(&format!("; tune recommends {param} = {l}"));
    }
    s.push('.');
    s
}
