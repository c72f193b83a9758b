//! What `tune` minimises (`--objective`) and the values it tries (`--range`), parsed.

use serde::Serialize;

use super::super::spec::{duration_value, parse_range, RangeError};
use crate::time::{parse_duration_us, DurationError, Human};

/// The largest lambda, USD per second of p95 makespan: far above any price of waiting, and
/// small enough that the objective stays finite and within what result files hold (1e30) for
/// any makespan up to the longest horizon.
pub const MAX_LAMBDA: f64 = 1e6;

/// What `tune` minimises.
#[derive(Debug, Clone, PartialEq)]
pub enum Objective {
    /// Mean cost in USD.
    Cost,
    /// Mean cost + lambda (USD per second) * the 95th percentile of makespan over replications.
    CostPlusMakespan { lambda_usd_per_s: f64 },
    /// Mean cost, among values whose quantile `q` of latency `latency` is at most `max_s`.
    CostSubjectTo { q: f64, latency: String, max_s: f64, text: String },
}

impl Objective {
    /// Parse `cost`, `cost+L*p95_makespan` (L in USD per second, or the word `lambda` with
    /// `lambda` given) or `cost_subject_to_pQ_LATENCY<=X` (X a duration; LATENCY one of
    /// launch_wait, ttft, completion).
    pub fn parse(text: &str, lambda: Option<f64>) -> Result<Objective, ObjectiveError> {
        use ObjectiveError as E;
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let text = || crate::config::capped(text).into_owned();
        if t == "cost" {
            return Ok(Objective::Cost);
        }
        if let Some(rest) = t.strip_prefix("cost+") {
            let l = rest
                .strip_suffix("*p95_makespan")
                .ok_or_else(|| E::Expected { text: text(), form: "cost+LAMBDA*p95_makespan" })?;
            let lambda_usd_per_s = match l {
                "lambda" => lambda.ok_or_else(|| E::LambdaMissing(text()))?,
                num => num.parse().map_err(|_| E::NotANumber { text: text(), num: num.into() })?,
            };
            if !(0.0..=MAX_LAMBDA).contains(&lambda_usd_per_s) {
                let lambda = match lambda_usd_per_s.abs() < 1e15 {
                    true => lambda_usd_per_s.to_string(),
                    false => format!("{lambda_usd_per_s:e}"),
                };
                return Err(E::Lambda { text: text(), lambda });
            }
            return Ok(Objective::CostPlusMakespan { lambda_usd_per_s });
        }
        if let Some(rest) = t.strip_prefix("cost_subject_to_p") {
            let (lhs, x) = rest
                .split_once("<=")
                .ok_or_else(|| E::Expected { text: text(), form: "...<=DURATION" })?;
            let (q, latency) = lhs
                .split_once('_')
                .ok_or_else(|| E::Expected { text: text(), form: "pQ_LATENCY" })?;
            let q = match q {
                "50" => 0.5,
                "90" => 0.9,
                "95" => 0.95,
                "99" => 0.99,
                "999" => 0.999,
                other => return Err(E::Percentile { text: text(), p: other.into() }),
            };
            if !crate::metrics::LATENCY_NAMES.contains(&latency) {
                return Err(E::Latency { text: text(), latency: latency.into() });
            }
            let max_us = parse_duration_us(x)
                .map_err(|e| E::Duration { text: text(), reason: e.to_string() })?;
            return Ok(Objective::CostSubjectTo {
                q,
                latency: latency.to_string(),
                max_s: crate::time::secs(max_us),
                text: t.clone(),
            });
        }
        Err(E::Unknown(text()))
    }

    pub fn name(&self) -> String {
        match self {
            Objective::Cost => "cost".into(),
            Objective::CostPlusMakespan { lambda_usd_per_s } => {
                format!("cost+{lambda_usd_per_s}*p95_makespan")
            }
            Objective::CostSubjectTo { text, .. } => text.clone(),
        }
    }
}

/// Why `--objective` is refused (the text is quoted as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectiveError {
    #[error(
        "unknown objective `{0}` (cost, cost+LAMBDA*p95_makespan, \
         cost_subject_to_p99_launch_wait<=2s)"
    )]
    Unknown(String),
    #[error("objective `{text}`: expected `{form}`")]
    Expected { text: String, form: &'static str },
    #[error("objective `{0}` uses `lambda`: give --lambda (USD per second)")]
    LambdaMissing(String),
    #[error("objective `{text}`: `{num}` is not a number")]
    NotANumber { text: String, num: String },
    #[error(
        "objective `{text}`: lambda = {lambda} is out of range: 0 to {MAX_LAMBDA:e} USD per second \
         of p95 makespan"
    )]
    Lambda { text: String, lambda: String },
    #[error("objective `{text}`: unknown percentile p{p}")]
    Percentile { text: String, p: String },
    #[error("objective `{text}`: unknown latency `{latency}` (launch_wait, ttft, completion)")]
    Latency { text: String, latency: String },
    #[error("objective `{text}`: {reason}")]
    Duration { text: String, reason: String },
}

/// How a candidate value is written back into the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    Int,
    Float,
    /// Microseconds, written as a duration.
    Duration,
}

/// A candidate value: `x` in base units (microseconds for durations).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    pub x: f64,
    pub kind: Kind,
}

impl Value {
    pub fn toml(&self) -> toml::Value {
        match self.kind {
            Kind::Int => toml::Value::Integer(self.x.round() as i64),
            Kind::Float => toml::Value::Float(self.x),
            Kind::Duration => duration_value(self.x.round() as u64),
        }
    }
    /// The value for JSON: seconds for durations.
    pub fn json(&self) -> f64 {
        match self.kind {
            Kind::Duration => self.x / 1e6,
            _ => self.x,
        }
    }
    pub fn label(&self) -> String {
        match self.kind {
            Kind::Int => format!("{}", self.x.round() as i64),
            Kind::Float => format!("{}", self.x),
            Kind::Duration => Human(self.x.round() as u64).to_string(),
        }
        .replace(".000s", "s")
    }
}

/// Why `--range` gives no candidate values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RangeArgError {
    #[error(transparent)]
    Range(#[from] RangeError),
    #[error("--range value `{value}`: {source}")]
    Value { value: String, source: DurationError },
    #[error("--range value `{0}` is not a number or a duration")]
    NotANumber(String),
    #[error("--range `{0}` has no values")]
    Empty(String),
    #[error("--range `{0}` mixes durations and plain numbers")]
    Mixed(String),
}

/// Parse `--range`: a range (`0s..10s step 1s`, `1..64 x2`) or a comma list (`0s, 2s, 5s`).
pub fn parse_values(text: &str) -> Result<Vec<Value>, RangeArgError> {
    let items: Vec<toml::Value> = if text.contains("..") {
        parse_range(text)?
    } else {
        text.split(',').map(|s| toml::Value::String(s.trim().to_string())).collect()
    };
    let mut out = items
        .iter()
        .map(|v| match v {
            toml::Value::Integer(i) => Ok(Value { x: *i as f64, kind: Kind::Int }),
            toml::Value::Float(f) => Ok(Value { x: *f, kind: Kind::Float }),
            toml::Value::String(s) => {
                if let Ok(i) = s.parse::<i64>() {
                    Ok(Value { x: i as f64, kind: Kind::Int })
                } else if let Ok(f) = s.parse::<f64>() {
                    Ok(Value { x: f, kind: Kind::Float })
                } else {
                    parse_duration_us(s)
                        .map(|us| Value { x: us as f64, kind: Kind::Duration })
                        .map_err(|source| RangeArgError::Value { value: s.clone(), source })
                }
            }
            other => Err(RangeArgError::NotANumber(other.to_string())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if out.is_empty() {
        return Err(RangeArgError::Empty(text.into()));
    }
    if out.iter().any(|v| v.kind != out[0].kind) && out.iter().any(|v| v.kind == Kind::Duration) {
        return Err(RangeArgError::Mixed(text.into()));
    }
    out.sort_by(|a, b| a.x.total_cmp(&b.x));
    out.dedup_by(|a, b| a.x == b.x);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse() {
        assert_eq!(Objective::parse("cost", None), Ok(Objective::Cost));
        assert_eq!(
            Objective::parse("cost+0.01*p95_makespan", None),
            Ok(Objective::CostPlusMakespan { lambda_usd_per_s: 0.01 })
        );
        assert_eq!(
            Objective::parse("cost+lambda*p95_makespan", None),
            Err(ObjectiveError::LambdaMissing("cost+lambda*p95_makespan".into()))
        );
        let o = Objective::parse("cost_subject_to_p99_launch_wait<=2s", None).unwrap();
        assert!(
            matches!(o, Objective::CostSubjectTo { q, max_s, .. } if q == 0.99 && max_s == 2.0)
        );
        assert_eq!(Objective::parse("speed", None), Err(ObjectiveError::Unknown("speed".into())));
        let e = Objective::parse("cost_subject_to_p42_ttft<=1s", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "objective `cost_subject_to_p42_ttft<=1s`: unknown percentile p42"
        );
    }
}
