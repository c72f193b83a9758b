//! Metric vs a strategy's own parameter: when several strategies of one family differ only in
//! one value (`wait_first(max_wait=1s)`, `..=2s`, `..=5s`), that value becomes the x axis.
//! For a run, the family is one line and every other strategy a flat reference line in its
//! own colour; for a sweep, there is one line per value of the first axis (a colour ramp),
//! the other axes held at their middle value. The hold cap's default (5 s) is marked.

use plotters::style::RGBColor;

use super::axis::{axis_number, axis_values, x_axis};
use super::metric::{MetricSpec, Series, METRICS};
use super::slice::{groups, slice_text};
use super::style::{self, num, short_key};
use super::{Figure, Spec};
pub use crate::results::parse_label;
use crate::results::{slug, Results};

/// (family, parameter, members as (label, value text)).
pub type Family = (String, String, Vec<(String, String)>);

/// A family whose members differ in exactly one numeric parameter: (family, parameter,
/// members as (label, value text)), at least 3 members, in the order the results list them.
pub fn varied_family(strategies: &[String]) -> Option<Family> {
    let parsed: Vec<(String, Vec<(String, String)>)> =
        strategies.iter().map(|s| parse_label(s)).collect();
    for (family, params) in &parsed {
        for (key, _) in params {
            let same_rest = |p: &Vec<(String, String)>| {
                let strip = |q: &Vec<(String, String)>| {
                    q.iter().filter(|kv| &kv.0 != key).cloned().collect::<Vec<_>>()
                };
                strip(p) == strip(params)
            };
            let members: Vec<(String, String)> = strategies
                .iter()
                .zip(&parsed)
                .filter(|(_, (f, p))| f == family && same_rest(p))
                .filter_map(|(s, (_, p))| {
                    p.iter().find(|kv| &kv.0 == key).map(|kv| (s.clone(), kv.1.clone()))
                })
                .filter(|(_, v)| axis_number(v).is_some())
                .collect();
            if members.len() >= 3 {
                return Some((family.clone(), key.clone(), members));
            }
        }
    }
    None
}

pub fn figures(r: &Results, held: &[String]) -> Vec<Figure> {
    let strategies = r.strategies();
    let Some((family, param, members)) = varied_family(&strategies) else { return Vec::new() };
    if r.summary.is_empty() {
        return Vec::new();
    }
    let key = format!("{family}.{param}");
    let values: Vec<String> = members.iter().map(|m| m.1.clone()).collect();
    let x = x_axis(&key, &values);
    let others: Vec<usize> = (1..r.axis_keys.len()).collect();
    let at_held =
        |row: &crate::results::SummaryRow| others.iter().all(|&o| row.axis_values[o] == held[o]);
    let lines = lines(r, &family, &members);
    // The rows at the held slice, read once for every metric, line and member (a figure of
    // one strategy per value of a parameter: a few rows a value).
    let held_rows: Vec<crate::results::SummaryRow> = r.summary.iter().filter(at_held).collect();
    let mut out = Vec::new();
    for (metric, y_title, stem, higher_better) in METRICS {
        let scale = if metric == "hit_rate" { 100.0 } else { 1.0 };
        let get = |strategy: &str, v: &Option<String>| {
            let row = held_rows.iter().find(|row| {
                row.strategy == strategy && v.as_ref().is_none_or(|v| &row.axis_values[0] == v)
            })?;
            Some((
                row.get(&format!("{metric}_mean"))? * scale,
                row.get(&format!("{metric}_ci95")).unwrap_or(0.0) * scale,
            ))
        };
        let mut series = Vec::new();
        for (li, (label, color, v)) in lines.iter().enumerate() {
            let points: Vec<(f64, f64, f64)> = members
                .iter()
                .enumerate()
                .filter_map(|(i, (s, _))| get(s, v).map(|(m, ci)| (x.positions[i], m, ci)))
                .collect();
            if !points.is_empty() {
                let shape = style::shape(li + li / style::SHAPES.len());
                series.push(Series { label: label.clone(), color: *color, shape, points });
            }
        }
        if r.axis_keys.is_empty() {
            let refs = reference_lines(&strategies, &members, &x.positions, |s| get(s, &None));
            series.extend(refs.into_iter().enumerate().map(|(k, mut se)| {
                se.shape = style::shape(lines.len() + k);
                se
            }));
        }
        if series.is_empty() {
            continue;
        }
        let series = super::rules::merge_coinciding(series);
        let what = y_title.split(" (").next().unwrap_or(y_title);
        let mut title = format!("{what} vs {family} {param}");
        let fixed = slice_text(r, &groups(r), held, &[0]);
        if !fixed.is_empty() {
            title.push_str(&format!(" (at {fixed})"));
        }
        let spec = MetricSpec { x: x.clone(), highlight: None, y_title: y_title.into(), series };
        let caption = caption(&spec, what, higher_better);
        out.push(Figure {
            name: format!("{stem}_vs_{}", slug(&key)),
            title,
            caption,
            spec: Spec::Metric(spec),
        });
    }
    out
}

/// The lines: (legend label, colour, axis-0 value or None for a run).
fn lines(
    r: &Results,
    family: &str,
    members: &[(String, String)],
) -> Vec<(String, RGBColor, Option<String>)> {
    if r.axis_keys.is_empty() {
        let color = style::strategy_color(&members[0].0, &[members[0].0.clone()]);
        return vec![(family.to_string(), color, None)];
    }
    let vals = axis_values(r, 0);
    let key = short_key(&r.axis_keys[0]);
    vals.iter()
        .enumerate()
        .map(|(i, v)| (format!("{key} = {v}"), style::series_color(i), Some(v.clone())))
        .collect()
}

/// Every strategy outside the family as a flat line across the x range, in its own colour.
fn reference_lines(
    strategies: &[String],
    members: &[(String, String)],
    positions: &[f64],
    get: impl Fn(&str) -> Option<(f64, f64)>,
) -> Vec<Series> {
    let (lo, hi) = super::scale::extent(positions.iter().copied());
    strategies
        .iter()
        .filter(|s| !members.iter().any(|m| &m.0 == *s))
        .filter_map(|s| {
            let (m, ci) = get(s)?;
            let color = style::strategy_color(s, strategies);
            let points = vec![(lo, m, ci), (hi, m, ci)];
            Some(Series { label: s.clone(), color, shape: style::shape(0), points })
        })
        .collect()
}

/// How the first line changes from the smallest to the largest parameter value.
fn caption(spec: &MetricSpec, what: &str, higher_better: bool) -> String {
    let unit = spec.y_title.rsplit_once('(').map(|(_, u)| u.trim_end_matches(')')).unwrap_or("");
    let fmt =
        |v: f64| if unit == "%" { format!("{}%", num(v)) } else { format!("{} {unit}", num(v)) };
    let Some(line) = spec.series.last().filter(|s| s.points.len() >= 2) else {
        return String::new();
    };
    let line = if spec.series.iter().any(|s| s.points.len() > 2) {
        spec.series.iter().rev().find(|s| s.points.len() > 2).unwrap_or(line)
    } else {
        line
    };
    let label_of = |x: f64| {
        spec.x
            .positions
            .iter()
            .position(|p| *p == x)
            .map(|i| spec.x.labels[i].clone())
            .unwrap_or_default()
    };
    let (first, last) = (line.points[0], line.points[line.points.len() - 1]);
    let best =
        line.points.iter().copied().reduce(|a, b| if (b.1 < a.1) != higher_better { b } else { a });
    let who =
        if line.label.contains(" = ") { format!("At {}", line.label) } else { line.label.clone() };
    let mut s = format!(
        "{who}, mean {} goes from {} at {} = {} to {} at {}",
        what.to_lowercase(),
        fmt(first.1),
        spec.x.key,
        label_of(first.0),
        fmt(last.1),
        label_of(last.0)
    );
    if let Some(b) = best {
        let word = if higher_better { "highest" } else { "lowest" };
        s.push_str(&format!("; {word} at {} ({})", label_of(b.0), fmt(b.1)));
    }
    s.push('.');
    if spec.x.marker.is_some() {
        s.push_str(" The vertical line marks the documented default hold cap, 5 s.");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse_and_families_are_found() {
        assert_eq!(parse_label("eager"), ("eager".into(), vec![]));
        let (f, p) = parse_label("wait_first(max_wait=5s,release=timer)");
        assert_eq!((f.as_str(), p.len()), ("wait_first", 2));
        let s: Vec<String> = [
            "eager",
            "wait_first(max_wait=1s)",
            "wait_first(max_wait=2s)",
            "wait_first(max_wait=5s)",
        ]
        .map(String::from)
        .into();
        let (fam, key, members) = varied_family(&s).unwrap();
        assert_eq!((fam.as_str(), key.as_str(), members.len()), ("wait_first", "max_wait", 3));
        assert!(varied_family(&s[..3]).is_none(), "two members are not a sweep");
    }
}
