//! Distributions of the workload and latency model: `const`, `uniform`, `normal` (truncated at 0),
//! `lognormal(median, p90)`, `exp(mean)`, `empirical(list or file)`, and `spliced` (an empirical
//! body with a generalized Pareto tail, `dist/spliced.rs`). Each has a quantile function.
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
    /// A count (tokens): plain numbers.
    Number,
    /// A rate (tokens/s): plain numbers, or `inf` for a term that takes no time.
    Rate,
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
    /// An interpolated body and a generalized Pareto tail (`Spliced`).
    Spliced(Box<Spliced>),
}

use crate::rng::{ChaCha8Rng, RngExt};

mod spliced;
pub use spliced::{Spliced, SplicedError};

impl Dist {
    /// Draw one value (never negative).
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            Dist::Const(x) => *x,
            Dist::Uniform { low, high } if high > low => rng.random_range(*low..*high),
            Dist::Uniform { low, .. } => *low,
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
            Dist::Exp { mean } => -mean * (1.0 - rng.random::<f64>()).ln(),
            Dist::Empirical(values) => values[rng.random_range(0..values.len())],
            Dist::Spliced(s) => s.sample(rng),
        }
    }

    /// The value at probability `p` in [0, 1]: the draw's exact quantile (an empirical list's
    /// nearest rank; the truncated normal's, as `sample` resamples below 0).
    pub fn quantile(&self, p: f64) -> f64 {
        use statrs::distribution::{ContinuousCDF, Normal};
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        let z = |p: f64| Normal::standard().inverse_cdf(p);
        match self {
            Dist::Const(x) => *x,
            Dist::Uniform { low, high } => low + p * (high - low).max(0.0),
            Dist::Normal { mean, sd } if *sd > 0.0 => {
                let below = Normal::standard().cdf(-mean / sd);
                (mean + sd * z(below + p * (1.0 - below))).max(0.0)
            }
            Dist::Normal { mean, .. } => mean.max(0.0),
            Dist::LogNormal { median, p90 } => {
                median * (lognormal_sigma(*median, *p90) * z(p)).exp()
            }
            Dist::Exp { mean } => -mean * (1.0 - p).ln(),
            Dist::Empirical(v) => {
                let mut s = v.clone();
                s.sort_by(f64::total_cmp);
                let rank = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len());
                s[rank - 1]
            }
            Dist::Spliced(s) => s.quantile(p),
        }
    }

    /// Draw a whole number (tokens, microseconds), rounded once, here: `round_u64` of
    /// `sample`'s value.
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
            Dist::Spliced(s) => s.mean(),
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

    /// Draw a whole number: `round_u64(self.sample(rng))`.
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
/// `u64::MAX` saturate), without `f64::round`, which baseline x86-64 computes in software (a
/// tenth of a draw's cost): the truncation of `x + 0.5`, which is `floor(x + 0.5)` for every
/// `x` in [0.5, 2^52) (there `x + 0.5` is exact, or rounds to the power of two it reaches);
/// from 2^52 every `x` is whole already. `round_u64_is_round_then_clamp` checks the edges.
#[inline]
pub fn round_u64(x: f64) -> u64 {
    const WHOLE: f64 = (1u64 << 52) as f64;
    if x.is_nan() || x < 0.5 {
        0
    } else if x >= WHOLE {
        x as u64
    } else {
        (x + 0.5) as i64 as u64
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
pub(crate) fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    rng.sample(rand_distr::StandardNormal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind, and a lognormal whose p90 is its median (a point mass).
    fn dists() -> [Dist; 10] {
        let spliced = Spliced::new(vec![1.0, 2.0, 3.0], 0.9, 1.0, 0.2, 100.0).unwrap();
        [
            Dist::Const(3.0),
            Dist::Uniform { low: 1.0, high: 9.0 },
            Dist::Normal { mean: 5.0, sd: 3.0 },
            Dist::Normal { mean: 1.0, sd: 3.0 },
            Dist::LogNormal { median: 300.0, p90: 1500.0 },
            Dist::LogNormal { median: 300.0, p90: 300.0 },
            Dist::Exp { mean: 2.0 },
            Dist::Empirical(vec![4.0, 1.0, 2.0, 8.0]),
            Dist::Empirical(vec![1.0, 2.0, 4.0]),
            Dist::Spliced(Box::new(spliced)),
        ]
    }

    #[test]
    fn quantiles_are_the_draws_quantiles() {
        let n = 100_000;
        for d in &dists() {
            let mut rng = crate::rng::stream(3, &[]);
            let mut v: Vec<f64> = (0..n).map(|_| d.sample(&mut rng)).collect();
            v.sort_by(f64::total_cmp);
            for p in [0.05, 0.3, 0.5, 0.9, 0.99] {
                let want = d.quantile(p);
                // The share of draws at or below the quantile is p (to sampling error), and
                // above a point mass's quantile, every draw is strictly above it.
                let below = v.partition_point(|x| *x <= want) as f64 / n as f64;
                let strictly = v.partition_point(|x| *x < want) as f64 / n as f64;
                assert!(strictly <= p + 0.006 && p <= below + 0.006, "{d:?} p{p}: {want}");
            }
        }
        assert_eq!(Dist::Exp { mean: 2.0 }.quantile(0.5), 2.0 * std::f64::consts::LN_2);
        assert_eq!(Dist::LogNormal { median: 300.0, p90: 1500.0 }.quantile(0.5), 300.0);
    }

    #[test]
    fn a_sampler_draws_what_its_distribution_draws() {
        for d in &dists() {
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
            0.500_000_000_000_000_1,
            1.499_999_999_999_999_8,
            2_251_799_813_685_247.5,
            4_503_599_627_370_494.5,
            4_503_599_627_370_495.0,
            4_503_599_627_370_496.0,
            4_503_599_627_370_497.0,
            f64::NEG_INFINITY,
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
        // Every magnitude: the positive doubles' bit patterns, uniformly.
        for _ in 0..1_000_000 {
            let x = f64::from_bits(rng.random::<u64>() >> 1);
            assert_eq!(round_u64(x), reference(x), "{x}");
        }
        // Halves, whole numbers and their neighbours around every power of two up to 2^54,
        // where `x + 0.5` changes binade.
        for k in 0..=54 {
            let p = 2f64.powi(k);
            for n in [p - 1.0, p, p + 1.0] {
                for h in [n - 0.5, n, n + 0.5] {
                    for x in [h.next_down(), h, h.next_up()] {
                        assert_eq!(round_u64(x), reference(x), "{x}");
                    }
                }
            }
        }
    }
}
