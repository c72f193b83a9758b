//! Which slice of a sweep a figure shows: the value every axis not drawn is held at.
//!
//! Axes that move together (a `[sweep] zip`, or an axis whose every value goes with one value
//! of another) form a group and are held at one of their combinations. The default slice is
//! the experiment's declared baseline (`[plot] baseline`, stored with the experiment in
//! `manifest.json`), else the experiment's own base value of each axis when it is one of the
//! swept values, else the middle value written; `plot --at KEY=VALUE` overrides any of them.

use super::axis::{axis_number, axis_values, follows};
use super::style::short_key;
use crate::results::{Results, SummaryRow};

/// Why a slice (`--at KEY=VALUE`, `[plot] baseline`) names no point of the results; `what`
/// says where the pair came from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SliceError {
    #[error("--at {key}={value}: these results hold no sweep to slice")]
    NoSweep { key: String, value: String },
    #[error("{what} {key}={value}: `{key}` is not a swept axis; the axes are: {axes}")]
    NotAnAxis { what: String, key: String, value: String, axes: String },
    #[error("{what} {key}={value}: `{axis}` has no value `{value}`; its values are: {values}")]
    NoValue { what: String, key: String, value: String, axis: String, values: String },
    #[error(
        "{what}: no point of the zipped axes {keys} has {wanted}; their combinations are: \
         {combinations}"
    )]
    NoCombination { what: String, keys: String, wanted: String, combinations: String },
}

/// The groups of axes that move together, each in axis order, groups by their first axis.
pub fn groups(r: &Results) -> Vec<Vec<usize>> {
    let n = r.axis_keys.len();
    let zips = stored_zips(r);
    let mut group_of: Vec<usize> = (0..n).collect();
    for zip in &zips {
        let idx: Vec<usize> =
            zip.iter().filter_map(|k| r.axis_keys.iter().position(|a| a == k)).collect();
        if let Some(&first) = idx.iter().min() {
            for &i in &idx {
                group_of[i] = group_of[first];
            }
        }
    }
    for a in 0..n {
        if group_of[a] == a {
            if let Some(o) = (0..a).find(|&o| follows(r, a, o)) {
                group_of[a] = group_of[o];
            }
        }
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    for a in 0..n {
        match out.iter_mut().find(|g| group_of[g[0]] == group_of[a]) {
            Some(g) => g.push(a),
            None => out.push(vec![a]),
        }
    }
    out
}

/// "agents = 8, ttl / parent_ttl = 5m / 5m": where the axes outside `free` are held.
pub fn slice_text(r: &Results, groups: &[Vec<usize>], held: &[String], free: &[usize]) -> String {
    groups
        .iter()
        .filter(|g| !g.iter().any(|a| free.contains(a)))
        .filter(|g| r.summary.combos(g).len() >= 2)
        .map(|g| {
            let keys: Vec<&str> = g.iter().map(|&a| short_key(&r.axis_keys[a])).collect();
            let vals: Vec<&str> = g.iter().map(|&a| held[a].as_str()).collect();
            format!("{} = {}", keys.join(" / "), vals.join(" / "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Is `row` in the slice: every axis but the `free` ones at its `held` value?
pub fn in_slice(row: &SummaryRow, held: &[String], free: &[usize]) -> bool {
    (0..held.len()).all(|o| free.contains(&o) || row.axis_values[o] == held[o])
}

/// The stored experiment text of the results (the manifest's `experiment`), parsed.
fn stored_experiment(r: &Results) -> Option<toml::Table> {
    let text = r.manifest.as_ref()?.experiment.as_ref()?;
    text.parse::<toml::Table>().ok()
}

fn stored_zips(r: &Results) -> Vec<Vec<String>> {
    let Some(t) = stored_experiment(r) else { return Vec::new() };
    let Some(zip) = t.get("sweep").and_then(|s| s.get("zip")).and_then(|z| z.as_array()) else {
        return Vec::new();
    };
    let names = |v: &toml::Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    if zip.iter().all(|v| v.is_str()) {
        vec![names(&toml::Value::Array(zip.clone()))]
    } else {
        zip.iter().map(names).collect()
    }
}

/// A TOML scalar as the text a summary row holds.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `[plot] baseline` of the stored experiment, as (key, value) in file order.
pub fn declared_baseline(r: &Results) -> Vec<(String, String)> {
    let Some(t) = stored_experiment(r) else { return Vec::new() };
    let Some(b) = t.get("plot").and_then(|p| p.get("baseline")).and_then(|b| b.as_table()) else {
        return Vec::new();
    };
    b.iter().map(|(k, v)| (k.clone(), value_text(v))).collect()
}

/// The experiment's own value of a dotted key (`cache.ttl`), as text.
fn base_value(t: &toml::Table, key: &str) -> Option<String> {
    let mut v: Option<&toml::Value> = None;
    let mut table = t;
    for part in key.split('.') {
        let next = table.get(part)?;
        v = Some(next);
        if let Some(inner) = next.as_table() {
            table = inner;
        }
    }
    v.filter(|x| !x.is_table()).map(value_text)
}

/// Do two axis texts name the same value (`5m` = `5min` = `300s`, `50000` = `50000.0`)?
pub fn same_value(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim().trim_matches('"'), b.trim().trim_matches('"'));
    if a == b {
        return true;
    }
    match (axis_number(a), axis_number(b)) {
        (Some(x), Some(y)) => x.1 == y.1 && (x.0 - y.0).abs() <= 1e-9 * x.0.abs().max(1.0),
        _ => false,
    }
}

/// The axis `key` names: its full dotted name, or its last part when that is unique.
pub fn find_axis(r: &Results, key: &str) -> Option<usize> {
    if let Some(i) = r.axis_keys.iter().position(|k| k == key) {
        return Some(i);
    }
    let short: Vec<usize> =
        (0..r.axis_keys.len()).filter(|&i| short_key(&r.axis_keys[i]) == key).collect();
    (short.len() == 1).then(|| short[0])
}

/// The held value of every axis: the default slice, then each `at` (KEY, VALUE) applied.
/// An unknown key or a value the axis does not have is an error naming it and the choices;
/// `what` names where the pair came from (`--at` or `[plot] baseline`).
pub fn held(r: &Results, at: &[(String, String)]) -> Result<Vec<String>, SliceError> {
    let mut held = base_slice(r);
    if held.is_empty() || r.axis_keys.is_empty() {
        if let Some((k, v)) = at.first() {
            return Err(SliceError::NoSweep { key: k.clone(), value: v.clone() });
        }
        return Ok(held);
    }
    let groups = groups(r);
    apply(r, &groups, &mut held, &declared_baseline(r), "[plot] baseline")?;
    apply(r, &groups, &mut held, at, "--at")?;
    Ok(held)
}

/// The slice without a declared baseline: each group at the experiment's own values where
/// they were swept, else at its middle combination (results without a stored experiment).
pub fn base_slice(r: &Results) -> Vec<String> {
    let Some(first) = r.summary.first_axes() else { return Vec::new() };
    let mut held: Vec<String> = first.into_iter().map(String::from).collect();
    let groups = groups(r);
    let stored = stored_experiment(r);
    for g in &groups {
        let cs = r.summary.combos(g);
        // The file's own values of the group's keys, where they are swept values.
        let base = stored.as_ref().and_then(|t| {
            cs.iter().find(|c| {
                g.iter().zip(c.iter()).all(|(&a, v)| {
                    base_value(t, &r.axis_keys[a]).is_some_and(|b| same_value(&b, v))
                })
            })
        });
        let c = base.unwrap_or_else(|| cs.get(cs.len() / 2));
        for (&a, v) in g.iter().zip(c) {
            held[a] = v.to_string();
        }
    }
    held
}

/// Set the groups named by `pairs` to the combination matching every pair given for them.
fn apply(
    r: &Results,
    groups: &[Vec<usize>],
    held: &mut [String],
    pairs: &[(String, String)],
    what: &str,
) -> Result<(), SliceError> {
    let mut wanted: Vec<(usize, String)> = Vec::new();
    for (k, v) in pairs {
        let Some(a) = find_axis(r, k) else {
            let (what, key, value, axes) =
                (what.into(), k.clone(), v.clone(), r.axis_keys.join(", "));
            return Err(SliceError::NotAnAxis { what, key, value, axes });
        };
        let values = axis_values(r, a);
        if !values.iter().any(|x| same_value(x, v)) {
            let (what, key, value) = (what.into(), k.clone(), v.clone());
            let (axis, values) = (r.axis_keys[a].clone(), values.join(", "));
            return Err(SliceError::NoValue { what, key, value, axis, values });
        }
        wanted.push((a, v.clone()));
    }
    for g in groups {
        let mine: Vec<&(usize, String)> = wanted.iter().filter(|w| g.contains(&w.0)).collect();
        if mine.is_empty() {
            continue;
        }
        let cs = r.summary.combos(g);
        let fits = |c: &Vec<&str>| {
            mine.iter().all(|(a, v)| {
                let i = g.iter().position(|x| x == a).unwrap_or(0);
                same_value(c[i], v)
            })
        };
        let Some(c) = cs.iter().find(|c| fits(c)) else {
            let shown: Vec<String> = cs.iter().map(|c| c.join(" / ")).collect();
            let keys: Vec<&str> = g.iter().map(|&a| r.axis_keys[a].as_str()).collect();
            let wanted: Vec<String> =
                mine.iter().map(|(a, v)| format!("{}={v}", r.axis_keys[*a])).collect();
            return Err(SliceError::NoCombination {
                what: what.into(),
                keys: keys.join(" / "),
                wanted: wanted.join(", "),
                combinations: shown.join(", "),
            });
        };
        for (&a, v) in g.iter().zip(c) {
            held[a] = v.to_string();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_numbers_compare_by_value() {
        assert!(same_value("5m", "5min") && same_value("300s", "5m"));
        assert!(same_value("50000", "50000.0") && same_value("true", "true"));
        assert!(!same_value("5m", "1h") && !same_value("fork", "fork_drop_tool"));
    }
}
