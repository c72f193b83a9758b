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
                lognormal(*median, lognormal_sigma(*median, *p90), rng)
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
        round_u64(self.sample(rng))
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

/// A distribution ready to draw from: what `Dist::sample` would recompute on every draw (a
/// lognormal's sigma, a logarithm) computed once, and its kind in a tag of its own (a `Dist`'s
/// kind is folded into its list's capacity, which costs a decode at every draw). Its draws
/// are `Dist::sample`'s, bit for bit, and consume the same random numbers.
#[derive(Debug, Clone, Copy)]
pub struct Sampler<'d> {
    kind: Kind<'d>,
}

/// The kinds a `Sampler` draws without `Dist::sample`, and the rest.
#[derive(Debug, Clone, Copy)]
enum Kind<'d> {
    Const(f64),
    LogNormal { median: f64, sigma: f64 },
    Other(&'d Dist),
}

impl<'d> Sampler<'d> {
    pub fn new(dist: &'d Dist) -> Self {
        let kind = match dist {
            Dist::Const(x) => Kind::Const(*x),
            Dist::LogNormal { median, p90 } => {
                Kind::LogNormal { median: *median, sigma: lognormal_sigma(*median, *p90) }
            }
            other => Kind::Other(other),
        };
        Sampler { kind }
    }

    /// The value every draw gives, for a constant (which draws nothing from the stream).
    pub fn constant(&self) -> Option<f64> {
        match self.kind {
            Kind::Const(x) => Some(x),
            _ => None,
        }
    }

    /// Draw one value, as `Dist::sample`.
    #[inline]
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self.kind {
            Kind::Const(x) => x,
            Kind::LogNormal { median, sigma } => lognormal(median, sigma, rng),
            Kind::Other(dist) => dist.sample(rng),
        }
    }

    /// Draw a whole number, as `Dist::sample_u64`.
    #[inline]
    pub fn sample_u64(&self, rng: &mut ChaCha8Rng) -> u64 {
        round_u64(self.sample(rng))
    }
}

/// A lognormal draw: the median times e to the sigma times a standard normal.
#[inline]
fn lognormal(median: f64, sigma: f64, rng: &mut ChaCha8Rng) -> f64 {
    median * (sigma * standard_normal(rng)).exp()
}

/// `x.round().max(0.0) as u64` (half away from zero; negatives and NaN give 0, values past
/// `u64::MAX` saturate), without `f64::round`: baseline x86-64 has no rounding instruction,
/// so `round` is a software routine there, a tenth of a draw's cost. Below 2^53 the
/// truncation and the fraction `x - trunc(x)` are exact, so the result is the same. The
/// truncation goes through `i64`: x86-64 converts between `f64` and `i64` in one
/// instruction each way, where `u64` takes a branch or a correction for the top bit; and
/// unchecked, since `x` is known to be in range there (a checked `as` adds a saturation and a
/// NaN test, six instructions on every draw rounded).
#[inline]
pub fn round_u64(x: f64) -> u64 {
    const EXACT: f64 = (1u64 << 53) as f64;
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= EXACT {
        return x as u64; // already whole
    }
    // SAFETY: 0 < x < 2^53 here, so `x` is finite and its truncation fits an `i64`.
    let whole: i64 = unsafe { x.to_int_unchecked() };
    (whole + i64::from(x - whole as f64 >= 0.5)) as u64
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_draws_what_its_distribution_draws() {
        let dists = [
            Dist::Const(3.0),
            Dist::Uniform { low: 1.0, high: 9.0 },
            Dist::Normal { mean: 5.0, sd: 3.0 },
            Dist::LogNormal { median: 300.0, p90: 1500.0 },
            Dist::LogNormal { median: 300.0, p90: 300.0 },
            Dist::Exp { mean: 2.0 },
            Dist::Empirical(vec![1.0, 2.0, 4.0]),
        ];
        for d in &dists {
            let (mut a, mut b) = (crate::rng::stream(9, &[1]), crate::rng::stream(9, &[1]));
            let s = Sampler::new(d);
            for _ in 0..1000 {
                assert_eq!(s.sample(&mut a).to_bits(), d.sample(&mut b).to_bits(), "{d:?}");
                assert_eq!(s.sample_u64(&mut a), d.sample_u64(&mut b), "{d:?}");
            }
        }
    }

    #[test]
    fn round_u64_is_round_then_clamp() {
        let reference = |x: f64| x.round().max(0.0) as u64;
        let edges = [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.499_999_999_999_999_94,
            4_503_599_627_370_495.5,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            18_446_744_073_709_551_615.0,
            f64::MAX,
            1e300,
            -0.4,
            -3.0,
            f64::NAN,
            f64::INFINITY,
            1e-300,
        ];
        for x in edges {
            assert_eq!(round_u64(x), reference(x), "{x}");
        }
        let mut rng = crate::rng::stream(3, &[]);
        for _ in 0..100_000 {
            let x = Dist::LogNormal { median: 300.0, p90: 4000.0 }.sample(&mut rng);
            assert_eq!(round_u64(x), reference(x), "{x}");
            let y: f64 = rng.random::<f64>() * 10.0 - 1.0;
            assert_eq!(round_u64(y), reference(y), "{y}");
        }
    }
}
