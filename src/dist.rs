//! Distributions of the workload and latency model: `const`, `uniform`, `normal` (truncated at 0),
//! `lognormal(median, p90)`, `exp(mean)`, `empirical(list or file)`.
//!
//! Values are plain `f64` in the quantity's base unit: microseconds for durations (already
//! converted from the unit the user typed), tokens for counts, tokens/s for rates. Parsing from
//! the experiment file's string syntax (`lognormal(median=2s, p90=5s)`) is config's
//! (`config::dist_syntax`); sampling takes the RNG explicitly.

/// What a distribution's values measure, which decides which units its text may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// A duration: values need a unit (`2s`, `500ms`) and are stored in microseconds.
    Duration,
    /// A count or rate (tokens, tokens/s): plain numbers.
    Number,
}

/// A distribution over non-negative values.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    Const(f64),
    Uniform {
        low: f64,
        high: f64,
    },
    /// Normal truncated at zero (resampled, bounded number of tries, then clamped).
    Normal {
        mean: f64,
        sd: f64,
    },
    /// Lognormal given by its median and 90th percentile (`mu = ln median`, `sigma = ln(p90/median)/1.2816`).
    LogNormal {
        median: f64,
        p90: f64,
    },
    Exp {
        mean: f64,
    },
    /// Uniform choice among the listed values.
    Empirical(Vec<f64>),
}

use crate::rng::{ChaCha8Rng, RngExt};

impl Dist {
    /// Draw one value (never negative).
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            Dist::Const(x) => *x,
            Dist::Uniform { low, high } => {
                if high > low {
                    rng.random_range(*low..*high)
                } else {
                    *low
                }
            }
            Dist::Normal { mean, sd } => {
                // Truncated at zero by resampling, with a bound; then clamped.
                for _ in 0..64 {
                    let x = mean + sd * standard_normal(rng);
                    if x >= 0.0 {
                        return x;
                    }
                }
                0.0
            }
            Dist::LogNormal { median, p90 } => {
                let sigma = lognormal_sigma(*median, *p90);
                median * (sigma * standard_normal(rng)).exp()
            }
            Dist::Exp { mean } => {
                let u: f64 = rng.random();
                -mean * (1.0 - u).ln()
            }
            Dist::Empirical(values) => values[rng.random_range(0..values.len())],
        }
    }

    /// Draw a whole number (tokens, microseconds), rounded once, here.
    pub fn sample_u64(&self, rng: &mut ChaCha8Rng) -> u64 {
        self.sample(rng).round().max(0.0) as u64
    }

    /// The distribution's mean (exact, used for documentation and closed-form checks).
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Const(x) => *x,
            Dist::Uniform { low, high } => (low + high) / 2.0,
            Dist::Normal { mean, .. } => *mean,
            Dist::LogNormal { median, p90 } => {
                let s = lognormal_sigma(*median, *p90);
                median * (s * s / 2.0).exp()
            }
            Dist::Exp { mean } => *mean,
            Dist::Empirical(v) => v.iter().sum::<f64>() / v.len() as f64,
        }
    }

    /// True when every draw gives the same value (no random number is consumed then).
    pub fn is_const(&self) -> bool {
        matches!(self, Dist::Const(_))
    }
}

/// z of the 90th percentile of the standard normal.
const Z90: f64 = 1.281_551_565_545;

fn lognormal_sigma(median: f64, p90: f64) -> f64 {
    if median > 0.0 && p90 > median {
        (p90 / median).ln() / Z90
    } else {
        0.0
    }
}

/// A standard normal draw: rand_distr's ziggurat (a fixed table; a logarithm only in the rare
/// tail), about twice as fast as Box-Muller's logarithm and cosine on every draw.
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    rng.sample(rand_distr::StandardNormal)
}
