//! Simulated time: integer microseconds, and the duration syntax users type (`500ms`, `5s`, `1h`).
//!
//! Knows nothing of events or caches. Time is never accumulated in floating point: a duration is
//! rounded to whole microseconds once, where it is parsed or drawn.

use std::fmt;

/// A point in simulated time, in microseconds since the start of a run.
pub type SimTime = u64;

/// Microseconds in one of each unit the parser accepts.
pub const US_PER_MS: u64 = 1_000;
pub const US_PER_S: u64 = 1_000_000;
pub const US_PER_MIN: u64 = 60 * US_PER_S;
pub const US_PER_H: u64 = 60 * US_PER_MIN;

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration (expected a number and a unit, e.g. `500ms`, `5s`, `1h`)")]
    Empty,
    #[error("negative duration `{0}`: durations must be zero or positive")]
    Negative(String),
    #[error("duration `{0}` has no unit (use us, ms, s, min or h, e.g. `5s`)")]
    MissingUnit(String),
    #[error("unknown unit `{unit}` in `{text}` (use us, ms, s, min or h)")]
    UnknownUnit { text: String, unit: String },
    #[error("`{0}` is not a number followed by a unit (e.g. `1.5s`)")]
    NotANumber(String),
    #[error("duration `{0}` is too large")]
    TooLarge(String),
}

/// Microseconds in one `unit`, or `None` for a unit we do not accept.
pub fn unit_us(unit: &str) -> Option<u64> {
    match unit {
        "us" | "µs" => Some(1),
        "ms" => Some(US_PER_MS),
        "s" | "sec" => Some(US_PER_S),
        "m" | "min" => Some(US_PER_MIN),
        "h" => Some(US_PER_H),
        _ => None,
    }
}

/// Parse `"<number><unit>"` (a bare `0` is accepted as zero) into whole microseconds,
/// rounding to the nearest microsecond once.
pub fn parse_duration_us(text: &str) -> Result<u64, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    if t.starts_with('-') {
        return Err(DurationError::Negative(t.to_string()));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == '+'))
        .unwrap_or(t.len());
    // `e` may start a unit name in future; we accept no unit starting with `e`, so this is safe.
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let value: f64 =
        num.replace('_', "").parse().map_err(|_| DurationError::NotANumber(t.to_string()))?;
    if unit.is_empty() {
        if value == 0.0 {
            return Ok(0);
        }
        return Err(DurationError::MissingUnit(t.to_string()));
    }
    let per = unit_us(unit).ok_or_else(|| DurationError::UnknownUnit {
        text: t.to_string(),
        unit: unit.to_string(),
    })?;
    let us = (value * per as f64).round();
    if !us.is_finite() || us >= u64::MAX as f64 {
        return Err(DurationError::TooLarge(t.to_string()));
    }
    Ok(us as u64)
}

/// A duration for people: the largest unit that shows it exactly, else seconds with 3 decimals.
pub struct Human(pub u64);

impl fmt::Display for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        for (per, name) in
            [(US_PER_H, "h"), (US_PER_MIN, "min"), (US_PER_S, "s"), (US_PER_MS, "ms")]
        {
            if us >= per && us.is_multiple_of(per) {
                return write!(f, "{}{}", us / per, name);
            }
        }
        if us == 0 {
            return write!(f, "0s");
        }
        if us < US_PER_MS {
            return write!(f, "{us}us");
        }
        write!(f, "{:.3}s", us as f64 / US_PER_S as f64)
    }
}

/// A duration in the largest unit that shows it exactly (`5s`, `1500ms`, `1000500us`, `0s`),
/// so that `parse_duration_us(exact_duration(us)) == us` for every value.
pub fn exact_duration(us: u64) -> String {
    if us == 0 {
        return "0s".to_string();
    }
    for (per, unit) in [(US_PER_H, "h"), (US_PER_MIN, "min"), (US_PER_S, "s"), (US_PER_MS, "ms")] {
        if us.is_multiple_of(per) {
            return format!("{}{unit}", us / per);
        }
    }
    format!("{us}us")
}

/// Seconds as `f64`, for output only (never fed back into simulated time).
pub fn secs(us: u64) -> f64 {
    us as f64 / US_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration_us("500ms"), Ok(500_000));
        assert_eq!(parse_duration_us("5s"), Ok(5_000_000));
        assert_eq!(parse_duration_us("1.5s"), Ok(1_500_000));
        assert_eq!(parse_duration_us("5min"), Ok(300_000_000));
        assert_eq!(parse_duration_us("1h"), Ok(3_600_000_000));
        assert_eq!(parse_duration_us("250us"), Ok(250));
        assert_eq!(parse_duration_us("0"), Ok(0));
    }

    #[test]
    fn refuses_bad_input() {
        assert!(matches!(parse_duration_us("-1s"), Err(DurationError::Negative(_))));
        assert!(matches!(parse_duration_us("5"), Err(DurationError::MissingUnit(_))));
        assert!(matches!(parse_duration_us("5parsecs"), Err(DurationError::UnknownUnit { .. })));
        assert!(matches!(parse_duration_us("fast"), Err(DurationError::NotANumber(_))));
    }

    #[test]
    fn human_form_round_trips() {
        for us in [0, 250, 1_000, 1_500_000, 5_000_000, 300_000_000, 3_600_000_000] {
            let text = Human(us).to_string();
            assert_eq!(parse_duration_us(&text), Ok(us), "{text}");
        }
    }

    #[test]
    fn exact_form_round_trips_in_its_largest_unit() {
        let cases = [(0, "0s"), (5_000_000, "5s"), (1_500_000, "1500ms"), (1_000_500, "1000500us")];
        for (us, text) in cases {
            assert_eq!(exact_duration(us), text);
            assert_eq!(parse_duration_us(text), Ok(us));
        }
    }
}
