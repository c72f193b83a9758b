//! The text syntax of distributions in experiment and latency files: `const(x)`, `uniform(a, b)`,
//! `normal(mean, sd)`, `lognormal(median=m, p90=q)`, `exp(mean=m)`, `empirical([v, ...])`,
//! `empirical(file=path)`, `spliced([v, ...], p_tail=p, scale=s, shape=k, max=m)`, or a bare
//! value meaning `const(value)`. Durations need a unit on
//! every value. `dist_label` writes the canonical text, which parses back to the same `Dist`.

use std::path::Path;

use super::call::{bind, parse_call, CallError};
use crate::dist::{Dist, Quantity};
use crate::time::{exact_duration, parse_duration_us, DurationError};

/// Why a distribution's text was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error("`{0}` is not a number")]
    NotANumber(String),
    #[error("`{0}` must be a finite number >= 0")]
    OutOfRange(String),
    #[error("missing `{0}`")]
    Missing(String),
    /// A parameter's value was refused.
    #[error("`{name}`: {source}")]
    Param { name: String, source: Box<DistError> },
    #[error("uniform: high is below low in `{0}`")]
    UniformOrder(String),
    #[error("lognormal needs 0 < median <= p90 in `{0}`")]
    LogNormalOrder(String),
    #[error(
        "unknown distribution `{0}` (use const, uniform, normal, lognormal, exp, empirical, spliced)"
    )]
    Unknown(String),
    #[error("empirical: `{0}` is not a `[...]` list")]
    NotAList(String),
    #[error("empirical takes a `[...]` list or `file=path`")]
    EmpiricalArgs,
    #[error("empirical needs at least one value")]
    EmpiricalEmpty,
    /// A listed value was refused.
    #[error("empirical: {0}")]
    EmpiricalValue(Box<DistError>),
    #[error("empirical: cannot read `{path}`: {reason}")]
    Unreadable { path: String, reason: String },
    #[error(transparent)]
    Spliced(#[from] crate::dist::SplicedError),
    /// A value of a values file was refused.
    #[error("{source} (in `{path}`)")]
    InFile { source: Box<DistError>, path: String },
}

/// Parse a distribution; an `empirical(file=...)` path is taken relative to the current directory.
pub fn parse_dist(text: &str, q: Quantity) -> Result<Dist, DistError> {
    parse_dist_in(text, q, None)
}

/// Parse a distribution; `empirical(file=...)` paths are relative to `base_dir` when given.
pub fn parse_dist_in(text: &str, q: Quantity, base_dir: Option<&Path>) -> Result<Dist, DistError> {
    let t = text.trim();
    if !t.contains('(') {
        return Ok(Dist::Const(parse_value(t, q)?));
    }
    let call = parse_call(t)?;
    let dist = match call.name {
        "const" => Dist::Const(one(&bind(&call, &["x"])?, 0, "x", q)?),
        "uniform" => {
            let a = bind(&call, &["low", "high"])?;
            let (low, high) = (one(&a, 0, "low", q)?, one(&a, 1, "high", q)?);
            if high < low {
                return Err(DistError::UniformOrder(t.to_string()));
            }
            Dist::Uniform { low, high }
        }
        "normal" => {
            let a = bind(&call, &["mean", "sd"])?;
            Dist::Normal { mean: one(&a, 0, "mean", q)?, sd: one(&a, 1, "sd", q)? }
        }
        "lognormal" => {
            let a = bind(&call, &["median", "p90"])?;
            let (median, p90) = (one(&a, 0, "median", q)?, one(&a, 1, "p90", q)?);
            if median <= 0.0 || p90 < median {
                return Err(DistError::LogNormalOrder(t.to_string()));
            }
            Dist::LogNormal { median, p90 }
        }
        "exp" => Dist::Exp { mean: one(&bind(&call, &["mean"])?, 0, "mean", q)? },
        "empirical" => parse_empirical(&bind(&call, &["values", "file"])?, q, base_dir)?,
        "spliced" => parse_spliced(&bind(&call, &["body", "p_tail", "scale", "shape", "max"])?, q)?,
        other => return Err(DistError::Unknown(other.to_string())),
    };
    Ok(dist)
}

fn one(slots: &[Option<&str>], i: usize, name: &str, q: Quantity) -> Result<f64, DistError> {
    let text = slots[i].ok_or_else(|| DistError::Missing(name.to_string()))?;
    parse_value(text, q)
        .map_err(|e| DistError::Param { name: name.to_string(), source: Box::new(e) })
}

/// One value: a duration with a unit (stored in microseconds) or a plain non-negative number.
pub fn parse_value(text: &str, q: Quantity) -> Result<f64, DistError> {
    match q {
        Quantity::Duration => Ok(parse_duration_us(text)? as f64),
        Quantity::Number | Quantity::Rate => {
            let t = text.trim();
            // `1_000` is a number; most values have no `_` and need no copy.
            let x: f64 = if t.contains('_') { t.replace('_', "").parse() } else { t.parse() }
                .map_err(|_| DistError::NotANumber(t.to_string()))?;
            let infinite_rate = q == Quantity::Rate && x == f64::INFINITY;
            if !(x.is_finite() || infinite_rate) || x < 0.0 {
                return Err(DistError::OutOfRange(text.trim().to_string()));
            }
            Ok(x)
        }
    }
}

fn parse_empirical(
    slots: &[Option<&str>],
    q: Quantity,
    base_dir: Option<&Path>,
) -> Result<Dist, DistError> {
    let key = EmpiricalKey::of(slots, q, base_dir);
    if let Some(values) = key.as_ref().and_then(EmpiricalKey::cached) {
        return Ok(Dist::Empirical(values));
    }
    let values = match (slots[0], slots[1]) {
        (Some(list), None) if list.starts_with('[') => {
            let inner = list
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .ok_or_else(|| DistError::NotAList(list.to_string()))?;
            parse_list(inner.split(','), q)?
        }
        // A positional argument that is not a list is a file name.
        (Some(file), None) | (None, Some(file)) => read_values(file, q, base_dir)?,
        _ => return Err(DistError::EmpiricalArgs),
    };
    if values.is_empty() {
        return Err(DistError::EmpiricalEmpty);
    }
    if let Some(key) = key {
        key.keep(&values);
    }
    Ok(Dist::Empirical(values))
}

/// What an `empirical` distribution's values depend on: its arguments' text, the quantity, the
/// directory a file name is relative to, and the file's length and modification time.
#[derive(PartialEq)]
struct EmpiricalKey {
    q: Quantity,
    args: Vec<Option<String>>,
    base_dir: Option<std::path::PathBuf>,
    stamp: Option<(u64, std::time::SystemTime)>,
}

/// The empirical distributions parsed last in this process (`EMPIRICAL_KEPT` at most): a run
/// resolves its experiment again for each run of a hold search and each sweep point, on
/// whichever thread runs it, and a resolved experiment holds the values inline: parsing a
/// file of millions of values for each of them would cost more than the runs. The values
/// parse the same whether kept or not.
static EMPIRICAL: std::sync::Mutex<Vec<(EmpiricalKey, Vec<f64>)>> =
    std::sync::Mutex::new(Vec::new());
const EMPIRICAL_KEPT: usize = 4;

impl EmpiricalKey {
    /// `None` when the values file cannot be looked at (reading it says why).
    fn of(slots: &[Option<&str>], q: Quantity, base_dir: Option<&Path>) -> Option<EmpiricalKey> {
        let file = match (slots[0], slots.get(1).copied().flatten()) {
            (Some(list), None) if list.starts_with('[') => None,
            (Some(f), None) | (None, Some(f)) => Some(values_path(f, base_dir)),
            _ => return None,
        };
        let stamp = match file {
            Some(path) => {
                let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
                Some((meta.len(), meta.modified().ok()?))
            }
            None => None,
        };
        let args = slots.iter().map(|s| s.map(str::to_string)).collect();
        Some(EmpiricalKey { q, args, base_dir: base_dir.map(Path::to_path_buf), stamp })
    }

    fn cached(&self) -> Option<Vec<f64>> {
        let kept = EMPIRICAL.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(k, _)| k == self).map(|(_, v)| v.clone())
    }

    fn keep(self, values: &[f64]) {
        let mut kept = EMPIRICAL.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= EMPIRICAL_KEPT {
            kept.remove(0);
        }
        kept.push((self, values.to_vec()));
    }
}

/// `spliced([body...], p_tail=p, scale=s, shape=k, max=m)`: the body and `scale`, `max` in
/// the quantity's unit, `p_tail` and `shape` plain numbers (`shape` may be negative).
fn parse_spliced(slots: &[Option<&str>], q: Quantity) -> Result<Dist, DistError> {
    let list = slots[0].ok_or_else(|| DistError::Missing("body".into()))?;
    let inner = list
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .ok_or_else(|| DistError::NotAList(list.to_string()))?;
    let body = parse_list(inner.split(','), q)?;
    let number = |i: usize, name: &str| -> Result<f64, DistError> {
        let text = slots[i].ok_or_else(|| DistError::Missing(name.to_string()))?.trim();
        let bad = || DistError::Param {
            name: name.to_string(),
            source: Box::new(DistError::NotANumber(text.to_string())),
        };
        text.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(bad)
    };
    let (p_tail, shape) = (number(1, "p_tail")?, number(3, "shape")?);
    let (scale, max) = (one(slots, 2, "scale", q)?, one(slots, 4, "max", q)?);
    let spliced = crate::dist::Spliced::new(body, p_tail, scale, shape, max)?;
    Ok(Dist::Spliced(Box::new(spliced)))
}

fn parse_list<'a>(
    items: impl Iterator<Item = &'a str>,
    q: Quantity,
) -> Result<Vec<f64>, DistError> {
    items
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| parse_value(s, q).map_err(|e| DistError::EmpiricalValue(Box::new(e))))
        .collect()
}

/// The largest values file `empirical(file=...)` reads (a file or device without end, like
/// `/dev/zero`, is refused at this size instead of filling memory).
pub const MAX_VALUES_FILE_BYTES: u64 = 64 << 20;

/// The text of the regular file at `path` (`what` it is, for the refusal), refused past `max`
/// bytes (or `input::MAX_FILE_ENV`) and when it is not a regular file: checked before it is
/// opened, so a FIFO with no writer does not block.
pub fn read_bounded(path: &Path, max: u64, what: &str) -> std::io::Result<String> {
    crate::input::read_capped_text(path, max, what)
}

/// Where the values file `file` (as written, quotes allowed) is.
fn values_path(file: &str, base_dir: Option<&Path>) -> std::path::PathBuf {
    let file = file.trim().trim_matches(['"', '\'']);
    match base_dir {
        Some(dir) => dir.join(file),
        None => Path::new(file).to_path_buf(),
    }
}

/// A values file: numbers (or durations with units) separated by whitespace, commas or lines;
/// `#` starts a comment. The values go straight into one vector (8 bytes a value): the text
/// is split in place, nothing is allocated per value.
fn read_values(file: &str, q: Quantity, base_dir: Option<&Path>) -> Result<Vec<f64>, DistError> {
    let path = values_path(file, base_dir);
    let text = read_bounded(&path, MAX_VALUES_FILE_BYTES, "a values file").map_err(|e| {
        DistError::Unreadable { path: path.display().to_string(), reason: e.to_string() }
    })?;
    let tokens = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| c == ',' || c.is_whitespace()));
    let mut values = parse_list(tokens, q)
        .map_err(|e| DistError::InFile { source: Box::new(e), path: path.display().to_string() })?;
    values.shrink_to_fit();
    Ok(values)
}

/// The canonical text of a distribution; `parse_dist(&dist_label(d, q), q) == d`.
pub fn dist_label(d: &Dist, q: Quantity) -> String {
    let v = |x: &f64| value_label(*x, q);
    match d {
        Dist::Const(x) => format!("const({})", v(x)),
        Dist::Uniform { low, high } => format!("uniform({}, {})", v(low), v(high)),
        Dist::Normal { mean, sd } => format!("normal({}, {})", v(mean), v(sd)),
        Dist::LogNormal { median, p90 } => {
            format!("lognormal(median={}, p90={})", v(median), v(p90))
        }
        Dist::Exp { mean } => format!("exp(mean={})", v(mean)),
        Dist::Empirical(values) => {
            let items: Vec<String> = values.iter().map(v).collect();
            format!("empirical([{}])", items.join(", "))
        }
        Dist::Spliced(s) => {
            let items: Vec<String> = s.body.iter().map(v).collect();
            format!(
                "spliced([{}], p_tail={}, scale={}, shape={}, max={})",
                items.join(", "),
                s.p_tail,
                v(&s.scale),
                s.shape,
                v(&s.max)
            )
        }
    }
}

fn value_label(x: f64, q: Quantity) -> String {
    match q {
        Quantity::Duration => exact_duration(x.round().max(0.0) as u64),
        Quantity::Number | Quantity::Rate => format!("{x}"),
    }
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn parses_every_family() {
        let (d, n) = (Quantity::Duration, Quantity::Number);
        let s = crate::dist::Spliced::new(vec![5e5, 1e6, 2e6], 0.9, 8e5, -0.2, 600e6).unwrap();
        for (text, q, want) in [
            ("const(2s)", d, Dist::Const(2e6)),
            ("500ms", d, Dist::Const(5e5)),
            ("20000", n, Dist::Const(20000.0)),
            ("uniform(1s, 3s)", d, Dist::Uniform { low: 1e6, high: 3e6 }),
            ("normal(100, 10)", n, Dist::Normal { mean: 100.0, sd: 10.0 }),
            ("lognormal(median=2s, p90=5s)", d, Dist::LogNormal { median: 2e6, p90: 5e6 }),
            ("exp(mean=1min)", d, Dist::Exp { mean: 60e6 }),
            ("empirical([1s, 500ms])", d, Dist::Empirical(vec![1e6, 5e5])),
            (
                "spliced([500ms, 1s, 2s], p_tail=0.9, scale=800ms, shape=-0.2, max=10min)",
                d,
                Dist::Spliced(Box::new(s)),
            ),
        ] {
            assert_eq!(parse_dist(text, q), Ok(want), "{text}");
        }
    }

    #[test]
    fn refuses_malformed() {
        let d = Quantity::Duration;
        for bad in [
            "const(2)",
            "const(-2s)",
            "uniform(3s, 1s)",
            "lognormal(median=5s, p90=2s)",
            "gamma(1s)",
            "exp(mean=1s",
            "empirical([])",
            "uniform(1s)",
            "2 s s",
            "5parsecs",
            "spliced([1s, 2s], p_tail=0.9, scale=1s, shape=0.1)",
            "spliced([2s, 1s], p_tail=0.9, scale=1s, shape=0.1, max=9s)",
            "spliced([1s, 2s], p_tail=1.5, scale=1s, shape=0.1, max=9s)",
            "spliced([1s, 2s], p_tail=0.9, scale=1s, shape=1, max=9s)",
            "spliced([1s, 2s], p_tail=0.9, scale=1s, shape=x, max=9s)",
            "spliced([1s, 2s], p_tail=0.9, scale=1s, shape=0.1, max=1s)",
            "spliced(1s, p_tail=0.9, scale=1s, shape=0.1, max=9s)",
        ] {
            assert!(parse_dist(bad, d).is_err(), "{bad}");
        }
        assert!(parse_dist("-3", Quantity::Number).is_err());
    }

    #[test]
    fn labels_round_trip() {
        for (text, q) in [
            ("const(2s)", Quantity::Duration),
            ("uniform(1500ms, 3s)", Quantity::Duration),
            ("normal(100, 10.5)", Quantity::Number),
            ("lognormal(median=2s, p90=5s)", Quantity::Duration),
            ("exp(mean=250ms)", Quantity::Duration),
            ("empirical([1, 2.5, 3])", Quantity::Number),
            (
                "spliced([300ms, 1s, 2100ms], p_tail=0.9, scale=610ms, shape=0.21, max=10min)",
                Quantity::Duration,
            ),
            ("spliced([1, 2], p_tail=0.5, scale=3, shape=-0.5, max=9)", Quantity::Number),
        ] {
            let dist = parse_dist(text, q).unwrap();
            assert_eq!(dist_label(&dist, q), text);
            assert_eq!(parse_dist(&dist_label(&dist, q), q).unwrap(), dist);
        }
    }

    /// Empirical quantile of `n` draws (nearest rank).
    fn quantile(d: &Dist, q: f64, n: usize) -> f64 {
        let mut rng = crate::rng::stream(7, &[1]);
        let mut v: Vec<f64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        v.sort_by(f64::total_cmp);
        v[((q * n as f64).ceil() as usize).clamp(1, n) - 1]
    }

    #[test]
    fn samples_have_the_stated_shape() {
        // 40,000 draws: the sampling error of a quantile is well under 3% here.
        let n = 40_000;
        let close = |x: f64, want: f64| (x - want).abs() <= 0.03 * want;
        let ln = Dist::LogNormal { median: 2.0, p90: 10.0 };
        assert!(close(quantile(&ln, 0.5, n), 2.0), "{}", quantile(&ln, 0.5, n));
        assert!(close(quantile(&ln, 0.9, n), 10.0), "{}", quantile(&ln, 0.9, n));
        let normal = Dist::Normal { mean: 100.0, sd: 10.0 };
        // mean + 1.2816 sd is the 90th percentile.
        assert!(close(quantile(&normal, 0.5, n), 100.0));
        assert!(close(quantile(&normal, 0.9, n), 112.816));
        let exp = Dist::Exp { mean: 3.0 };
        // The median of an exponential is mean * ln 2.
        assert!(close(quantile(&exp, 0.5, n), 3.0 * std::f64::consts::LN_2));
        let truncated = Dist::Normal { mean: 0.0, sd: 1.0 };
        assert!(quantile(&truncated, 0.0, n) >= 0.0, "normal is truncated at 0");
        let u = Dist::Uniform { low: 1.0, high: 3.0 };
        assert!(close(quantile(&u, 0.25, n), 1.5));
    }
}
