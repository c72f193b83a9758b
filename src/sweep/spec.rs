//! The `[sweep]` table: axes (a dotted key over a list, a linear range or a log range), `zip`
//! groups, and the grid of points they span, enumerated lazily by index.
//!
//! Knows nothing of what a key means: whether a key exists is decided by resolving the
//! experiment with the value set (`super::Runner::resolve`). File order is recovered from the
//! source text's spans, because `toml::Table` sorts its keys.

use crate::time::{parse_duration_us, DurationError, Human};

/// Most values one axis may have, and most points a grid may have.
pub const MAX_AXIS_VALUES: usize = 1_000_000;
/// (Point indices are `u32` in the result files.)
pub const MAX_POINTS: u64 = u32::MAX as u64;

/// Why a `[sweep]` table was refused; every message names the key and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("[sweep] {key}: {msg}")]
    Axis { key: String, msg: String },
    #[error("[sweep] zip: {0}")]
    Zip(String),
    #[error("[sweep] defines no axis (add e.g. `workload.agents = [1, 2, 4]`)")]
    NoAxis,
    #[error("[sweep] spans {0} points, more than {MAX_POINTS}")]
    TooLarge(u128),
}

/// One swept key and its values, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<toml::Value>,
}

/// The grid: axes in file order, grouped (a zip group moves together; the others are alone).
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub axes: Vec<Axis>,
    groups: Groups,
    points: u64,
}

/// The axes that move together: a zip group, or an axis alone.
#[derive(Debug, Clone, Default, PartialEq)]
struct Groups {
    /// Indices into `axes`; the first group varies slowest (the outermost loop).
    members: Vec<Vec<usize>>,
    /// Each axis's group, an index into `members`.
    of_axis: Vec<usize>,
}

impl Grid {
    /// Parse the `[sweep]` table. `order` lists dotted keys in file order (others go last, sorted).
    pub fn from_table(sweep: &toml::Table, order: &[String]) -> Result<Grid, SpecError> {
        let mut leaves = crate::config::flatten_keys(sweep);
        let zip = leaves.iter().position(|(k, _)| k == "zip").map(|i| leaves.remove(i).1);
        let pos = |k: &str| order.iter().position(|o| o == k).unwrap_or(usize::MAX);
        leaves.sort_by(|a, b| (pos(&a.0), &a.0).cmp(&(pos(&b.0), &b.0)));
        if leaves.is_empty() {
            return Err(SpecError::NoAxis);
        }
        // `"workload.agents" = [..]` and `[sweep.workload] agents = [..]` are one axis twice.
        if let Some(w) = leaves.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(SpecError::Axis {
                key: w[0].0.clone(),
                msg: "given twice (once as a quoted dotted key, once through a table): keep one"
                    .into(),
            });
        }
        if let Some((key, _)) = leaves.iter().find(|(k, _)| changes_nothing(k)) {
            return Err(SpecError::Axis {
                key: key.clone(),
                msg: "not an axis: this key changes no result, so every point would be the \
                      same (a sweep cannot sweep `sweep`, a work limit, `name` or `question`)"
                    .into(),
            });
        }
        let axes = leaves
            .into_iter()
            .map(|(key, v)| axis_values(&key, v).map(|values| Axis { key, values }))
            .collect::<Result<Vec<_>, _>>()?;
        let groups = zip_groups(&axes, zip)?;
        let points: u128 = groups
            .members
            .iter()
            .map(|g| axes[g[0]].values.len() as u128)
            .fold(1u128, |acc, n| acc.saturating_mul(n));
        if points > MAX_POINTS as u128 {
            return Err(SpecError::TooLarge(points));
        }
        Ok(Grid { axes, groups, points: points as u64 })
    }

    pub fn points(&self) -> u64 {
        self.points
    }

    /// The axes that move with axis `axis` (itself and its zip partners), in axis order.
    pub fn group_of(&self, axis: usize) -> &[usize] {
        &self.groups.members[self.groups.of_axis[axis]]
    }

    /// The (key, value) assignments of point `index`, in axis order.
    pub fn point(&self, index: u64) -> Vec<(&str, &toml::Value)> {
        let mut picks = vec![0usize; self.axes.len()];
        let mut rest = index;
        for g in self.groups.members.iter().rev() {
            let n = self.axes[g[0]].values.len() as u64;
            let i = (rest % n) as usize;
            rest /= n;
            for &a in g {
                picks[a] = i;
            }
        }
        self.axes.iter().zip(picks).map(|(a, i)| (a.key.as_str(), &a.values[i])).collect()
    }
}

/// Keys a point may not set: `sweep` itself (the experiment ignores it), the work limits
/// (they bound the command, not the experiment), and the experiment's `name` and `question`
/// (they label the results; no number depends on them).
pub fn changes_nothing(key: &str) -> bool {
    let work_limit =
        key.strip_prefix("limits.").is_some_and(|k| crate::limits::WORK_LIMIT_KEYS.contains(&k));
    key == "sweep" || key.starts_with("sweep.") || work_limit || key == "name" || key == "question"
}

/// Dotted keys of a `[sweep]` table in the order they appear in `text` (from the parser's spans).
pub fn key_order(text: &str) -> Vec<String> {
    let Ok(doc) = toml::de::DeTable::parse(text) else { return Vec::new() };
    let Some(sweep) = doc.get_ref().get("sweep") else { return Vec::new() };
    let mut out = Vec::new();
    spans(sweep.get_ref(), "", &mut out);
    out.sort();
    out.into_iter().map(|(_, k)| k).collect()
}

fn spans(v: &toml::de::DeValue<'_>, prefix: &str, out: &mut Vec<(usize, String)>) {
    if let toml::de::DeValue::Table(t) = v {
        for (k, val) in t.iter() {
            let key = format!("{prefix}{}", k.get_ref());
            if matches!(val.get_ref(), toml::de::DeValue::Table(_)) {
                spans(val.get_ref(), &format!("{key}."), out);
            } else {
                out.push((k.span().start, key));
            }
        }
    }
}

fn zip_groups(axes: &[Axis], zip: Option<&toml::Value>) -> Result<Groups, SpecError> {
    let lists: Vec<Vec<String>> = match zip {
        None => Vec::new(),
        Some(toml::Value::Array(items)) if items.iter().all(|i| i.is_str()) => {
            vec![items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect()]
        }
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|g| match g {
                toml::Value::Array(keys) if keys.iter().all(|k| k.is_str()) => {
                    Ok(keys.iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
                }
                _ => Err(SpecError::Zip(format!("expected a list of keys, found `{g}`"))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(SpecError::Zip(format!("expected a list of axis keys, found `{other}`")))
        }
    };
    let mut group_of: Vec<Option<usize>> = vec![None; axes.len()];
    for (gi, list) in lists.iter().enumerate() {
        if list.len() < 2 {
            return Err(SpecError::Zip(format!("a zip group needs two or more keys: {list:?}")));
        }
        let mut lens = Vec::with_capacity(list.len());
        for key in list {
            let a = axes
                .iter()
                .position(|a| &a.key == key)
                .ok_or_else(|| SpecError::Zip(format!("`{key}` is not an axis of [sweep]")))?;
            if group_of[a].replace(gi).is_some() {
                return Err(SpecError::Zip(format!("`{key}` appears in two zip groups")));
            }
            lens.push((key, axes[a].values.len()));
        }
        if lens.iter().any(|l| l.1 != lens[0].1) {
            let lens: Vec<String> = lens.iter().map(|(k, n)| format!("{k} has {n}")).collect();
            return Err(SpecError::Zip(format!(
                "zipped axes must have the same length: {}",
                lens.join(", ")
            )));
        }
    }
    let mut groups = Groups::default();
    let mut placed: Vec<Option<usize>> = vec![None; lists.len()];
    for (a, &g) in group_of.iter().enumerate() {
        let slot = match g.and_then(|gi| placed[gi]) {
            Some(slot) => slot,
            None => {
                groups.members.push(Vec::new());
                let slot = groups.members.len() - 1;
                if let Some(gi) = g {
                    placed[gi] = Some(slot);
                }
                slot
            }
        };
        groups.members[slot].push(a);
        groups.of_axis.push(slot);
    }
    Ok(groups)
}

/// The values of one axis: a non-empty list, or a range string.
pub fn axis_values(key: &str, v: &toml::Value) -> Result<Vec<toml::Value>, SpecError> {
    let err = |msg: String| SpecError::Axis { key: key.to_string(), msg };
    match v {
        toml::Value::Array(items) if items.is_empty() => Err(err("empty list".into())),
        toml::Value::Array(items) if items.len() > MAX_AXIS_VALUES => {
            Err(err(format!("more than {MAX_AXIS_VALUES} values")))
        }
        toml::Value::Array(items) => Ok(items.clone()),
        toml::Value::String(s) => parse_range(s).map_err(|e| err(e.to_string())),
        other => Err(err(format!(
            "`{other}` is neither a list nor a range (`\"1..64 step 1\"`, `\"1..64 x2\"`, \
             `\"0s..10s step 500ms\"`)"
        ))),
    }
}

/// A number or a duration, as a range bound or step.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i64),
    Float(f64),
    Us(u64),
}

/// Why a range string (`"A..B step S"`, `"A..B xF"`) gives no values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RangeError {
    #[error("`{0}` is not a range (`A..B step S` or `A..B xF`)")]
    NotARange(String),
    #[error("`{0}`: missing `step S` or `xF` after the bounds")]
    NoStep(String),
    /// A bound or the step is neither a number nor a duration.
    #[error("`{text}`: {source}")]
    Num { text: String, source: DurationError },
    #[error("`{text}`: factor `{factor}` is not a number")]
    Factor { text: String, factor: String },
    #[error("range `{text}`: {why}")]
    Values { text: String, why: ValuesError },
    #[error("range `{0}` is empty (the lower bound exceeds the upper)")]
    Empty(String),
}

/// Why a well-formed range's bounds, step or factor give no values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValuesError {
    #[error("expected `step S` or `xF`, found `{0}`")]
    How(String),
    #[error("more than {MAX_AXIS_VALUES} values")]
    TooMany,
    #[error("step of zero")]
    ZeroStep,
    #[error("negative step")]
    NegativeStep,
    #[error("mixes durations and plain numbers (give every part a unit)")]
    MixedStep,
    #[error("mixes durations and plain numbers")]
    MixedLog,
    #[error("factor x{0} must be greater than 1")]
    Factor(f64),
    #[error("a log range must start above zero")]
    LogFromZero,
}

fn parse_num(s: &str) -> Result<Num, RangeError> {
    let s = s.trim();
    if let Ok(i) = s.replace('_', "").parse::<i64>() {
        return Ok(Num::Int(i));
    }
    if let Ok(f) = s.replace('_', "").parse::<f64>() {
        if f.is_finite() {
            return Ok(Num::Float(f));
        }
    }
    parse_duration_us(s).map(Num::Us).map_err(|source| RangeError::Num { text: s.into(), source })
}

/// Parse `"A..B step S"` (A, A+S, ... up to B inclusive) or `"A..B xF"` (A, A*F, ... up to B).
pub fn parse_range(text: &str) -> Result<Vec<toml::Value>, RangeError> {
    let (a, rest) = text.split_once("..").ok_or_else(|| RangeError::NotARange(text.into()))?;
    let rest = rest.trim();
    let (b, how) =
        rest.split_once(char::is_whitespace).ok_or_else(|| RangeError::NoStep(text.into()))?;
    let how = how.trim();
    let (lo, hi) = (parse_num(a)?, parse_num(b)?);
    let values = if let Some(step) = how.strip_prefix("step") {
        linear(lo, hi, parse_num(step)?)
    } else if let Some(f) = how.strip_prefix('x') {
        let f: f64 = f
            .trim()
            .parse()
            .map_err(|_| RangeError::Factor { text: text.into(), factor: f.into() })?;
        log(lo, hi, f)
    } else {
        Err(ValuesError::How(how.into()))
    }
    .map_err(|why| RangeError::Values { text: text.into(), why })?;
    if values.is_empty() {
        return Err(RangeError::Empty(text.into()));
    }
    Ok(values)
}

fn linear(lo: Num, hi: Num, step: Num) -> Result<Vec<toml::Value>, ValuesError> {
    let check = |n: f64| {
        if n + 1.0 > MAX_AXIS_VALUES as f64 {
            Err(ValuesError::TooMany)
        } else {
            Ok(n.max(-1.0) as i64 + 1)
        }
    };
    match (lo, hi, step) {
        (_, _, Num::Int(0)) | (_, _, Num::Us(0)) => Err(ValuesError::ZeroStep),
        (_, _, Num::Float(0.0)) => Err(ValuesError::ZeroStep),
        (_, _, Num::Int(s)) if s < 0 => Err(ValuesError::NegativeStep),
        (_, _, Num::Float(s)) if s < 0.0 => Err(ValuesError::NegativeStep),
        (Num::Int(a), Num::Int(b), Num::Int(s)) => {
            let n = if b < a { 0 } else { check(((b - a) / s) as f64)? };
            Ok((0..n).map(|i| toml::Value::Integer(a + i * s)).collect())
        }
        (Num::Us(a), Num::Us(b), Num::Us(s)) => {
            let n = if b < a { 0 } else { check(((b - a) / s) as f64)? };
            Ok((0..n as u64).map(|i| duration_value(a + i * s)).collect())
        }
        (Num::Us(_), _, _) | (_, Num::Us(_), _) | (_, _, Num::Us(_)) => Err(ValuesError::MixedStep),
        _ => {
            let (a, b, s) = (as_f64(lo), as_f64(hi), as_f64(step));
            let n = if b < a { 0 } else { check(((b - a) / s + 1e-9).floor())? };
            Ok((0..n).map(|i| toml::Value::Float(round12(a + i as f64 * s))).collect())
        }
    }
}

fn log(lo: Num, hi: Num, factor: f64) -> Result<Vec<toml::Value>, ValuesError> {
    if !(factor > 1.0 && factor.is_finite()) {
        return Err(ValuesError::Factor(factor));
    }
    let start = as_f64(lo);
    if start <= 0.0 {
        return Err(ValuesError::LogFromZero);
    }
    let mut out = Vec::new();
    let mut i = 0i32;
    loop {
        let x = start * factor.powi(i);
        if x > as_f64(hi) * (1.0 + 1e-12) {
            break;
        }
        if out.len() >= MAX_AXIS_VALUES {
            return Err(ValuesError::TooMany);
        }
        let v = match (lo, hi) {
            (Num::Us(_), Num::Us(_)) => duration_value(x.round() as u64),
            (Num::Us(_), _) | (_, Num::Us(_)) => return Err(ValuesError::MixedLog),
            (Num::Int(_), Num::Int(_)) if factor.fract() == 0.0 => {
                toml::Value::Integer(x.round() as i64)
            }
            _ => toml::Value::Float(round12(x)),
        };
        out.push(v);
        i += 1;
    }
    Ok(out)
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
        Num::Us(us) => us as f64,
    }
}

/// Round to 12 significant digits, so `0.1 + 2 * 0.1` is written `0.3`.
fn round12(x: f64) -> f64 {
    format!("{x:.12e}").parse().unwrap_or(x)
}

/// A duration as the experiment file writes it (`500ms`, `5s`).
pub fn duration_value(us: u64) -> toml::Value {
    toml::Value::String(Human(us).to_string())
}

/// A value as a CSV cell: strings bare, numbers as TOML writes them, lists as inline TOML.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(f) => format!("{f}"),
        other => other.to_string(),
    }
}

/// A value as JSON (for manifests and `tune --json`).
pub fn value_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => serde_json::Value::String(s.clone()),
        toml::Value::Integer(i) => serde_json::Value::from(*i),
        toml::Value::Float(f) => serde_json::Value::from(*f),
        toml::Value::Boolean(b) => serde_json::Value::Bool(*b),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(value_json).collect()),
        other => serde_json::Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid of the `[sweep]` table of `text`.
    fn grid(text: &str) -> Result<Grid, SpecError> {
        let t: toml::Table = text.parse().unwrap();
        Grid::from_table(t["sweep"].as_table().unwrap(), &key_order(text))
    }

    fn ints(v: &[toml::Value]) -> Vec<i64> {
        v.iter().map(|x| x.as_integer().unwrap()).collect()
    }

    #[test]
    fn ranges() {
        assert_eq!(ints(&parse_range("1..5 step 2").unwrap()), vec![1, 3, 5]);
        assert_eq!(ints(&parse_range("1..64 x2").unwrap()), vec![1, 2, 4, 8, 16, 32, 64]);
        let d = parse_range("0s..1s step 500ms").unwrap();
        assert_eq!(d, vec![duration_value(0), duration_value(500_000), duration_value(1_000_000)]);
        let f = parse_range("0.1..0.3 step 0.1").unwrap();
        assert_eq!(f, vec![toml::Value::Float(0.1), toml::Value::Float(0.2), 0.3.into()]);
        assert!(parse_range("1..5 step 0").unwrap_err().to_string().contains("step of zero"));
        assert!(parse_range("5..1 step 1").unwrap_err().to_string().contains("empty"));
        assert!(parse_range("1..5 x1").is_err());
        assert!(parse_range("1s..5 step 1").unwrap_err().to_string().contains("mixes"));
    }

    #[test]
    fn grid_order_and_zip() {
        let g = grid("[sweep]\nb = [1, 2]\na = [10, 20, 30]\n").unwrap();
        assert_eq!(g.points(), 6);
        assert_eq!(g.axes[0].key, "b", "file order, not sorted");
        let p: Vec<_> = (0..6).map(|i| g.point(i)[1].1.as_integer().unwrap()).collect();
        assert_eq!(p, vec![10, 20, 30, 10, 20, 30]);
        let g =
            grid("[sweep]\nzip = [\"a\", \"b\"]\na = [1, 2]\nb = [3, 4]\nc = [5, 6]\n").unwrap();
        assert_eq!(g.points(), 4);
        let p1: Vec<_> = g.point(2).iter().map(|(_, v)| v.as_integer().unwrap()).collect();
        assert_eq!(p1, vec![2, 4, 5]);
        let e = grid("[sweep]\nzip = [\"a\", \"b\"]\na = [1, 2]\nb = [3]\n").unwrap_err();
        assert!(e.to_string().contains("same length"), "{e}");
    }

    #[test]
    fn one_key_given_twice_is_refused() {
        // Both spell the key `workload.agents`: two axes of it would set it twice a point.
        let text = "[sweep]\n\"workload.agents\" = [1, 2]\n[sweep.workload]\nagents = [3]\n";
        let e = grid(text).unwrap_err();
        assert!(e.to_string().starts_with("[sweep] workload.agents: given twice"), "{e}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// `A..B step S` over integers: A, A+S, ... , the last within S of B, never past it.
        #[test]
        fn linear_int_ranges(a in -50i64..50, len in 0i64..100, s in 1i64..20) {
            let b = a + len;
            let v = ints(&parse_range(&format!("{a}..{b} step {s}")).unwrap());
            proptest::prop_assert_eq!(v.len() as i64, len / s + 1);
            proptest::prop_assert_eq!(v[0], a);
            proptest::prop_assert!(v.windows(2).all(|w| w[1] - w[0] == s));
            proptest::prop_assert!(*v.last().unwrap() <= b && b - v.last().unwrap() < s);
        }

        /// Point indices map one-to-one onto value combinations, zipped axes moving together.
        #[test]
        fn points_are_a_bijection(n1 in 1usize..5, n2 in 1usize..5) {
            let list = |n: usize, base: i64| -> String {
                let v: Vec<String> = (0..n as i64).map(|i| (base + i).to_string()).collect();
                format!("[{}]", v.join(", "))
            };
            let text = format!(
                "[sweep]\nzip = [\"a\", \"c\"]\na = {}\nb = {}\nc = {}\n",
                list(n1, 0), list(n2, 100), list(n1, 200)
            );
            let g = grid(&text).unwrap();
            proptest::prop_assert_eq!(g.points(), (n1 * n2) as u64);
            let mut seen = std::collections::BTreeSet::new();
            for p in 0..g.points() {
                let v: Vec<i64> = g.point(p).iter().map(|(_, v)| v.as_integer().unwrap()).collect();
                proptest::prop_assert_eq!(v[2] - 200, v[0], "zipped axes move together");
                proptest::prop_assert!(seen.insert(v));
            }
        }
    }

    #[test]
    fn dotted_keys_keep_file_order() {
        let text = "[sweep]\nworkload.agents = [1]\nlatency.overhead = [\"1s\"]\n";
        assert_eq!(key_order(text), vec!["workload.agents", "latency.overhead"]);
    }
}
