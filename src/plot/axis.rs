//! A swept axis as the x axis of a figure: what its values are (numbers, durations, words),
//! where they sit (to scale, on a log scale past `scale::LOG_RATIO`, evenly in their order when
//! they would crowd to scale, or evenly as categories), shown as people read them (`8.57s`),
//! the hold-cap default marked on it, and which axes move together (`follows`). It knows the
//! summary's axis values, not what is drawn against them.

use std::sync::Arc;

use super::rules::display_value;
use super::scale;
use super::style;
use crate::results::summary::Combos;
use crate::results::Results;

/// A swept axis as the x axis of a figure.
#[derive(Debug, Clone)]
pub struct XAxis {
    pub key: String,
    pub title: String,
    /// Position of each value on the axis (the value itself, or its index).
    pub positions: Vec<f64>,
    /// Shared: the figures of one axis (a metric each) have the same labels, one a point.
    pub labels: Arc<[String]>,
    /// True when positions are places 0, 1, ... (labels drawn at integer positions): words in
    /// their order, or numbers that would crowd to scale, in ascending order (`scale::crowded`).
    pub categorical: bool,
    /// True when positions are log10 of the values (a numeric axis spanning 20x or more).
    pub log: bool,
    /// What else moves along this axis (zipped partners' values), shown under the axis title.
    pub note: Option<String>,
    /// True when the values are words (not numbers or durations): drawn as a dot plot.
    pub words: bool,
    /// The hold-cap default: (position, label).
    pub marker: Option<(f64, String)>,
}

/// The value of an axis entry in display units: a number, or a duration in seconds.
pub fn axis_number(text: &str) -> Option<(f64, bool)> {
    let t = text.trim().trim_matches('"');
    if let Ok(v) = t.parse::<f64>() {
        return Some((v, false));
    }
    crate::time::parse_duration_us(t).ok().map(|us| (crate::time::secs(us), true))
}

/// Is this key the hold cap, whose documented default is 5 s? `max_wait` of `wait_first`, or a
/// key named after Claude Code's `..._PREFIX_STAGGER_MS`; not the `stagger` strategy's own
/// `interval` (agent i sends at i * interval: a different knob with no such default).
pub fn is_hold_cap(key: &str) -> bool {
    key.contains("max_wait") || (key.contains("stagger") && !key.contains("interval"))
}

/// Build the x axis of `key` from its distinct values (in the order first written).
pub fn x_axis(key: &str, values: &[String]) -> XAxis {
    x_axis_of(key, values.to_vec())
}

/// `x_axis` of values given up to it: they become its labels (not copied: an axis of every
/// point of a sweep has 100,000).
fn x_axis_of(key: &str, values: Vec<String>) -> XAxis {
    let nums: Option<Vec<(f64, bool)>> = values.iter().map(|v| axis_number(v)).collect();
    let is_duration = nums.as_ref().is_some_and(|n| n.iter().any(|x| x.1));
    let secs: Option<Vec<f64>> = nums.as_ref().map(|n| n.iter().map(|x| x.0).collect());
    let log = secs.as_ref().is_some_and(|v| scale::wants_log(v));
    let ranked = !log && secs.as_ref().is_some_and(|v| scale::crowded(v));
    let positions = match &secs {
        Some(v) if log => v.iter().map(|x| x.log10()).collect(),
        Some(v) if ranked => scale::ranks(v),
        Some(v) => v.clone(),
        None => (0..values.len()).map(|i| i as f64).collect(),
    };
    let words = nums.is_none();
    let unit = axis_unit(key, is_duration);
    let labels: Arc<[String]> = values.iter().map(|v| super::rules::display_value(v)).collect();
    let mut axis = XAxis {
        key: key.into(),
        title: axis_title(key, unit, log, ranked),
        positions,
        labels,
        categorical: words || ranked,
        words,
        log,
        marker: None,
        note: None,
    };
    let cap = style::DEFAULT_HOLD_CAP_S;
    axis.marker = match &secs {
        Some(v) if is_hold_cap(key) && ranked => v
            .iter()
            .position(|x| (x - cap).abs() < 1e-9)
            .map(|i| (axis.positions[i], "default hold cap 5 s".to_string())),
        Some(v) if is_hold_cap(key) => {
            let (lo, hi) = scale::extent(v.iter().copied());
            let p = if log { cap.log10() } else { cap };
            (lo <= cap && cap <= hi).then(|| (p, "default hold cap 5 s".to_string()))
        }
        _ => None,
    };
    axis
}

/// The title of `key`'s axis drawn to scale (`log` or linear) over `values` as written: what
/// a figure that places the values itself (tune's refined candidates) says.
pub fn title_to_scale(key: &str, values: &[String], log: bool) -> String {
    let is_duration = values.iter().any(|v| axis_number(v).is_some_and(|n| n.1));
    axis_title(key, axis_unit(key, is_duration), log, false)
}

/// The unit of an axis's values, from its key ("" when the key says it, as in
/// `capacity (share of distinct tokens)`, or none is known).
fn axis_unit(key: &str, is_duration: bool) -> &'static str {
    if key.contains('(') {
        ""
    } else if is_duration || is_hold_cap(key) {
        "s"
    } else if key.contains("tokens") {
        "tokens"
    } else if key.ends_with("agents") || key.ends_with("concurrency") {
        "agents"
    } else {
        ""
    }
}

/// An axis title naming its unit once, and how values are placed when not to scale: `key
/// (s, log scale)`; `key (evenly spaced)` when each tick is labelled with its value (and
/// unit); a key ending in its own `(...)` gets the scale inside it.
fn axis_title(key: &str, unit: &str, log: bool, ranked: bool) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if !unit.is_empty() && !ranked {
        parts.push(unit);
    }
    if log {
        parts.push("log scale");
    }
    if ranked {
        parts.push("evenly spaced");
    }
    match (parts.is_empty(), key.strip_suffix(')')) {
        (true, _) => key.to_string(),
        (false, Some(head)) => format!("{head}, {})", parts.join(", ")),
        (false, None) => format!("{key} ({})", parts.join(", ")),
    }
}

/// The distinct values of axis `a` in the summary, in first-seen order (of points).
pub fn axis_values(r: &Results, a: usize) -> Vec<String> {
    // The set only answers "seen?" (linear in points, where a scan of `vals` was quadratic in
    // a long axis); the order is `vals`', first appearance. The summary's index holds the
    // axis values of every point: the file is not read.
    let mut seen = std::collections::HashSet::new();
    let mut vals: Vec<String> = Vec::new();
    for (_, values) in r.summary.axes() {
        if seen.insert(values[a]) {
            vals.push(values[a].to_string());
        }
    }
    vals
}

/// True when axis `o` follows axis `a` (a `zip`): in every summary row, each value of `a` goes
/// with one value of `o`.
pub fn follows(r: &Results, o: usize, a: usize) -> bool {
    // Value of `a` -> the value of `o` first seen with it (a map: a list was quadratic in a
    // long axis).
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (_, values) in r.summary.axes() {
        let (va, vo) = (values[a], values[o]);
        if *seen.entry(va).or_insert(vo) != vo {
            return false;
        }
    }
    true
}

/// The x axis of a group: its first axis's values, to scale when they are numbers (the zipped
/// partners' values then named in the axis title), else each combination as a category.
pub fn group_axis(r: &Results, g: &[usize], cs: &Combos<'_>) -> XAxis {
    let lead: Vec<String> = cs.iter().map(|c| c[0].to_string()).collect();
    if g.len() == 1 {
        return x_axis_of(&r.axis_keys[g[0]], lead);
    }
    let distinct = lead.iter().collect::<std::collections::HashSet<_>>().len();
    let numeric = lead.iter().all(|v| axis_number(v).is_some());
    if numeric && distinct == lead.len() {
        let mut x = x_axis_of(&r.axis_keys[g[0]], lead);
        let partners: Vec<String> = (1..g.len())
            .map(|j| {
                let pairs: Vec<String> =
                    cs.iter().map(|c| format!("{} → {}", display_value(c[0]), c[j])).collect();
                format!("{} (zipped): {}", style::short_key(&r.axis_keys[g[j]]), pairs.join(", "))
            })
            .collect();
        x.note = Some(partners.join("; "));
        return x;
    }
    let keys: Vec<&str> = g.iter().map(|&a| r.axis_keys[a].as_str()).collect();
    // Many zipped keys: values as written (0.5, not 0.500000), and the keys named once, in
    // the figure's title, so each category fits beside the plot.
    let (sep, title) = match keys.len() {
        0..=2 => (" / ", keys.join(" / ")),
        _ => ("/", "values of the title's keys".to_string()),
    };
    let labels: Arc<[String]> = cs
        .iter()
        .map(|c| c.iter().map(|v| display_value(&compact(v))).collect::<Vec<_>>().join(sep))
        .collect();
    XAxis {
        key: keys.join(" / "),
        title,
        positions: (0..labels.len()).map(|i| i as f64).collect(),
        labels,
        categorical: true,
        words: true,
        log: false,
        marker: None,
        note: None,
    }
}

/// A number as short as it reads the same (`0.500000` -> `0.5`); anything else as it is.
fn compact(v: &str) -> String {
    match v.parse::<f64>() {
        Ok(x) if v.contains('.') && x.is_finite() => format!("{x}"),
        _ => v.to_string(),
    }
}

/// The x axis drawn to scale (log10 positions get a log axis, plain ones a linear axis), with
/// at most `max` ticks on a linear axis; numbers placed evenly get a tick and label each.
pub fn x_scale_max(x: &XAxis, max: usize) -> scale::Scale {
    if x.categorical && !x.words {
        let n = x.positions.iter().fold(0.0f64, |m, p| m.max(*p)) as usize + 1;
        let mut names = vec![String::new(); n];
        for (p, l) in x.positions.iter().zip(x.labels.iter()) {
            names[*p as usize].clone_from(l);
        }
        return scale::ranked(names);
    }
    let (lo, hi) =
        scale::extent(x.positions.iter().map(|p| if x.log { 10f64.powf(*p) } else { *p }));
    match x.log {
        // Few values: a tick at each (1, 2, 5, 10, 30 as swept), not at 1-2-5.
        true if x.positions.len() <= max.max(scale::MAX_TICKS) => {
            let mut s = scale::log_scale(lo, hi);
            s.ticks = x.positions.clone();
            s.ticks.sort_by(f64::total_cmp);
            s.ticks.dedup();
            s
        }
        true => scale::log_scale(lo, hi),
        false => scale::linear_max(lo, hi, false, max),
    }
}
