//! Numeric axes drawn to scale: linear or log10 as the values span, with 1-2-5 ticks and
//! short labels (`50k`, `1.5M`, `0.25`), few enough that they never run together.
//!
//! A log axis is drawn in log10 space (positions are `log10(value)`), so every figure keeps
//! one plain f64 coordinate system and the ticks are chosen here, not by plotters.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use super::style::num;

/// Values spanning at least this ratio (all positive) get a log axis.
pub const LOG_RATIO: f64 = 20.0;
/// At most this many tick labels on an axis.
pub const MAX_TICKS: usize = 8;

/// A numeric axis: its drawn range, ticks (in drawn coordinates) and whether it is log10.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    pub log: bool,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    /// The label of each integer position, when the values are placed evenly in their order
    /// (`ranked`); empty for an axis to scale.
    pub names: Vec<String>,
}

impl Scale {
    /// The drawn coordinate of a value.
    pub fn pos(&self, v: f64) -> f64 {
        if self.log {
            v.max(f64::MIN_POSITIVE).log10()
        } else {
            v
        }
    }

    /// The value at a drawn coordinate.
    pub fn value(&self, p: f64) -> f64 {
        if self.log {
            10f64.powf(p)
        } else {
            p
        }
    }

    /// The tick label at a drawn coordinate.
    pub fn label(&self, p: f64) -> String {
        if !self.names.is_empty() {
            return super::category(&self.names, p, false);
        }
        short(self.value(p))
    }

    /// The axis cut at `cap` (a share at 1, a percentage at 100): no range or tick above it.
    pub fn capped(mut self, cap: f64) -> Scale {
        if self.log || self.hi <= cap {
            return self;
        }
        self.hi = cap.max(self.lo + f64::EPSILON);
        self.ticks.retain(|t| *t <= cap * (1.0 + 1e-9));
        self
    }

    /// The plotters coordinate of this axis.
    pub fn ranged(&self) -> TickedAxis {
        TickedAxis { lo: self.lo, hi: self.hi, ticks: self.ticks.clone() }
    }
}

/// A linear axis whose ticks are given (the log axis is drawn in log10 space with its 1-2-5
/// values as ticks). plotters' own `with_key_points` loses the f64 label formatter.
#[derive(Debug, Clone)]
pub struct TickedAxis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        let f = if f.is_finite() { f } else { 0.0 };
        limit.0 + ((limit.1 - limit.0) as f64 * f).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// 1-2-5 ticks within [lo, hi] (a log axis).
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

/// A top at or above `hi` on a step of 1, 2 or 5 x 10^k giving 4 to 8 intervals, and its ticks.
pub fn linear_ticks(hi: f64) -> (f64, Vec<f64>) {
    let hi = if hi > 0.0 { hi } else { 1.0 };
    let mut step = 10f64.powf((hi / 8.0).log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0, 20.0] {
        let s = step * m;
        if (hi / s).ceil() <= 8.0 {
            step = s;
            break;
        }
    }
    let n = (hi / step).ceil() as usize;
    (step * n as f64, (0..=n).map(|i| step * i as f64).collect())
}

/// The lowest and highest of `values` (NaN left out; (inf, -inf) when there are none).
pub fn extent(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// Should `values` be drawn on a log axis? All positive, spanning `LOG_RATIO` or more.
pub fn wants_log(values: &[f64]) -> bool {
    let (lo, hi) = extent(values.iter().copied());
    lo > 0.0 && hi.is_finite() && hi / lo >= LOG_RATIO
}

/// Would `values` crowd on an axis to scale? Three or more distinct values whose closest two
/// are under an eighth of an even step apart (`0s, 2s, 8.57s, 10s, 60s`: four of five in the
/// first sixth of the axis; not `0s, 1min, 10min`). Such values are placed evenly in their
/// order instead (`ranked`).
pub fn crowded(values: &[f64]) -> bool {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    if v.len() < 3 {
        return false;
    }
    let even = (v[v.len() - 1] - v[0]) / (v.len() - 1) as f64;
    let closest = v.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
    closest < even / 8.0
}

/// The place of each value when placed evenly in ascending order: its rank among the
/// distinct values (equal values share a place).
pub fn ranks(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    values.iter().map(|x| v.iter().position(|y| y == x).unwrap_or(0) as f64).collect()
}

/// An axis of `names` placed evenly at 0, 1, ..., each labelled with its name.
pub fn ranked(names: Vec<String>) -> Scale {
    let n = names.len().max(1);
    Scale {
        log: false,
        lo: -0.5,
        hi: n as f64 - 0.5,
        ticks: (0..n).map(|i| i as f64).collect(),
        names,
    }
}

/// The most a share axis reaches: 100 when its title is in `(%)` (a hit rate, a share of
/// samples), 1 when it is a share as a fraction; none for any other axis.
pub fn share_cap(title: &str) -> Option<f64> {
    let t = title.to_lowercase();
    if t.ends_with("(%)") && (t.contains("rate") || t.contains("share")) {
        Some(100.0)
    } else if t.starts_with("share") || t.contains(" share") {
        Some(1.0)
    } else {
        None
    }
}

/// A log10 axis from `lo` to `hi` (both positive), padded by 4% of the decades shown.
pub fn log_scale(lo: f64, hi: f64) -> Scale {
    let (l0, l1) = (lo.log10(), hi.log10());
    let pad = ((l1 - l0) * 0.04).max(0.02);
    let (p0, p1) = (l0 - pad, l1 + pad);
    let mut ticks = log_ticks(10f64.powf(p0), 10f64.powf(p1));
    if ticks.len() > MAX_TICKS {
        // Too many decades for 1-2-5: the powers of ten alone (then every other one).
        ticks.retain(|v| (v.log10() - v.log10().round()).abs() < 1e-9);
        while ticks.len() > MAX_TICKS {
            ticks = ticks.into_iter().step_by(2).collect();
        }
    }
    let ticks = ticks.iter().map(|v| v.log10()).collect();
    Scale { log: true, lo: p0, hi: p1, ticks, names: Vec::new() }
}

/// A linear axis over [lo, hi] with a 1-2-5 step and at most `MAX_TICKS` ticks.
pub fn linear(lo: f64, hi: f64, from_zero: bool) -> Scale {
    linear_max(lo, hi, from_zero, MAX_TICKS)
}

/// The most x tick labels `px` pixels of axis hold without running together (~110 px each).
pub fn ticks_for_width(px: u32) -> usize {
    ((px.saturating_sub(170)) as usize / 110).clamp(4, MAX_TICKS)
}

/// A linear axis with at most `max` ticks (a narrow x axis takes fewer).
pub fn linear_max(lo: f64, hi: f64, from_zero: bool, max: usize) -> Scale {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let (p0, p1) = super::padded(lo, hi, from_zero && lo >= 0.0);
    let step = nice_step_n(p0, p1, max.max(3));
    let first = (p0 / step).ceil();
    let ticks: Vec<f64> = (0..=MAX_TICKS * 3)
        .map(|i| (first + i as f64) * step)
        .take_while(|v| *v <= p1 + step * 1e-9)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect();
    Scale { log: false, lo: p0, hi: p1, ticks, names: Vec::new() }
}

/// The smallest 1, 2, 2.5 or 5 x 10^k step putting at most `max` ticks in [p0, p1].
fn nice_step_n(p0: f64, p1: f64, max: usize) -> f64 {
    let width = if p1 > p0 && (p1 - p0).is_finite() { p1 - p0 } else { 1.0 };
    let base = 10f64.powf((width / max as f64).log10().floor() - 1.0);
    let count = |step: f64| ((p1 / step).floor() - (p0 / step).ceil() + 1.0) as usize;
    for k in 0..4 {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = base * m * 10f64.powi(k);
            if count(step) <= max {
                return step;
            }
        }
    }
    width
}

/// A tick label: thousands as `k`, millions as `M`, else three significant digits.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", num(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", num(v / 1e3))
    } else {
        num(v)
    }
}
