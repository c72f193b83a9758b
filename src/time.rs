//! Simulated time: integer microseconds, and the duration syntax users type (`500ms`, `5s`, `1h`).
//!
//! Knows nothing of events or caches. Time is never accumulated in floating point: a duration is
//! rounded to whole microseconds once, where it is parsed or drawn.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Sub};

/// A point in simulated time, in microseconds since the start of a run.
///
/// Distinct from [`SimDuration`] so that a duration cannot be passed where an instant is meant:
/// an instant plus a duration is an instant, an instant minus an instant is a duration, and two
/// instants do not add. Serialized as its number of microseconds.
///
/// ```
/// use prefixsim::time::{SimDuration, SimTime};
/// let sent = SimTime::from_us(1_000);
/// let first_token = sent + SimDuration::from_ms(2);
/// assert_eq!(first_token - sent, SimDuration::from_us(2_000));
/// ```
///
/// Two instants do not add, and a duration is not an instant:
///
/// ```compile_fail
/// use prefixsim::time::SimTime;
/// let _ = SimTime::from_us(1) + SimTime::from_us(2);
/// ```
///
/// ```compile_fail
/// use prefixsim::engine::{Bounds, Engine};
/// use prefixsim::time::SimDuration;
/// let mut engine = Engine::new(Bounds::UNBOUNDED);
/// engine.schedule_at(SimDuration::from_secs(1), ());
/// ```
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[repr(transparent)]
#[serde(transparent)]
pub struct SimTime(u64);

/// A span of simulated time, in whole microseconds. Serialized as its number of microseconds.
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[repr(transparent)]
#[serde(transparent)]
pub struct SimDuration(u64);

/// What instants and durations share: the bounds, conversions to and from microseconds, the
/// human display, and adding a duration without overflow.
macro_rules! microseconds {
    ($t:ident) => {
        impl $t {
            pub const ZERO: $t = $t(0);
            /// The largest value: for an instant, the end of time (no event is ever later).
            pub const MAX: $t = $t(u64::MAX);

            #[inline]
            pub const fn from_us(us: u64) -> $t {
                $t(us)
            }

            /// Microseconds (since the start of the run, for an instant).
            #[inline]
            pub const fn as_us(self) -> u64 {
                self.0
            }

            /// `self + d`, stopping at `MAX` instead of overflowing.
            #[inline]
            pub const fn saturating_add(self, d: SimDuration) -> $t {
                $t(self.0.saturating_add(d.0))
            }
        }

        /// As [`Human`] (for an instant: the time since the start of the run).
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                Human(self.0).fmt(f)
            }
        }
    };
}

microseconds!(SimTime);
microseconds!(SimDuration);

impl SimTime {
    /// The time from `earlier` to `self`, zero if `earlier` is later.
    #[inline]
    pub const fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    #[inline]
    pub const fn from_ms(ms: u64) -> SimDuration {
        SimDuration(ms * US_PER_MS)
    }

    #[inline]
    pub const fn from_secs(s: u64) -> SimDuration {
        SimDuration(s * US_PER_S)
    }

    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub const fn saturating_mul(self, n: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(n))
    }
}

/// `$lhs $op $rhs` is a `$out`, on their microseconds; like `u64`, overflow panics in debug
/// builds. `assign` also gives `$lhs $op= $rhs`.
macro_rules! arithmetic {
    ($tr:ident $f:ident $op:tt: $lhs:ident, $rhs:ident -> $out:ident) => {
        impl $tr<$rhs> for $lhs {
            type Output = $out;
            #[inline]
            fn $f(self, rhs: $rhs) -> $out {
                $out(self.0 $op rhs.0)
            }
        }
    };
    (assign $tr:ident $f:ident $op:tt: $lhs:ident, $rhs:ident) => {
        impl $tr<$rhs> for $lhs {
            #[inline]
            fn $f(&mut self, rhs: $rhs) {
                self.0 $op rhs.0;
            }
        }
    };
}

// An instant plus or minus a duration is an instant; two instants differ by a duration (and
// do not add); durations add and subtract.
arithmetic!(Add add +: SimTime, SimDuration -> SimTime);
arithmetic!(Sub sub -: SimTime, SimDuration -> SimTime);
arithmetic!(Sub sub -: SimTime, SimTime -> SimDuration);
arithmetic!(Add add +: SimDuration, SimDuration -> SimDuration);
arithmetic!(Sub sub -: SimDuration, SimDuration -> SimDuration);
arithmetic!(assign AddAssign add_assign +=: SimTime, SimDuration);
arithmetic!(assign AddAssign add_assign +=: SimDuration, SimDuration);

impl Div<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn div(self, n: u64) -> SimDuration {
        SimDuration(self.0 / n)
    }
}

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
fn unit_us(unit: &str) -> Option<u64> {
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
        return if value == 0.0 { Ok(0) } else { Err(DurationError::MissingUnit(t.to_string())) };
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
        match exact_duration(self.0) {
            text if text.ends_with("us") && self.0 >= US_PER_MS => {
                write!(f, "{:.3}s", secs(self.0))
            }
            text => f.write_str(&text),
        }
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
