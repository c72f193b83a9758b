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
    /// An interpolated body and a generalized Pareto tail (`Spliced`).
    Spliced(Box<Spliced>),
}

use crate::rng::{ChaCha8Rng, RngExt};

mod exp;
mod spliced;
pub use spliced::{Spliced, SplicedError};

/// 64 / ln 2, rounded to nearest.
const INV_LN2_64: f64 = 64.0 / std::f64::consts::LN_2;
pub use exp::{scaled_exp2_64, EXP2_64_MAX_ARG};

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
    /// `sample`'s value, bit for bit (a lognormal through `Sampler::sample_u64`'s fast exp).
    pub fn sample_u64(&self, rng: &mut ChaCha8Rng) -> u64 {
        Sampler::new(self).sample_u64(rng)
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
    /// `sigma64` is `sigma * 64 / ln 2`, the exponent's scale in units of ln2/64.
    LogNormal {
        median: f64,
        sigma: f64,
        sigma64: f64,
    },
    Other(&'d Dist),
}

impl<'d> Sampler<'d> {
    pub fn new(dist: &'d Dist) -> Self {
        let kind = match dist {
            Dist::Const(x) => Kind::Const(*x),
            Dist::LogNormal { median, p90 } => {
                let sigma = lognormal_sigma(*median, *p90);
                Kind::LogNormal { median: *median, sigma, sigma64: sigma * INV_LN2_64 }
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
            Kind::LogNormal { median, sigma, .. } => lognormal(median, sigma, rng),
            Kind::Other(dist) => dist.sample(rng),
        }
    }

    /// Draw a whole number: `round_u64(self.sample(rng))`, bit for bit, with a lognormal's exp
    /// computed inline where that cannot change the whole number (`sample_whole`).
    #[inline(always)]
    pub fn sample_u64(&self, rng: &mut ChaCha8Rng) -> u64 {
        self.sample_whole(rng).unwrap_or_else(round_u64)
    }

    /// Draw a value `v` for a caller that reads only `round_u64(v)`: `Ok` of that whole
    /// number, or `Err(v)` for the caller to round itself. Either way the whole number is that
    /// of `self.sample(rng)` bit for bit, and the draw consumes the same random numbers. A
    /// lognormal's exp is `scaled_exp2_64` of the normal draw times `sigma64` (`Ok`), unless
    /// the result is too near a half to be sure (`fast_round`): then it is recomputed from the
    /// same normal draw with libm's exp, as `sample` does (`Err`); other kinds are always
    /// `Err`.
    #[inline(always)]
    fn sample_whole(&self, rng: &mut ChaCha8Rng) -> Result<u64, f64> {
        match self.kind {
            Kind::LogNormal { median, sigma, sigma64 } => {
                let z = standard_normal(rng);
                let t = sigma64 * z;
                let fast = if t.abs() <= EXP2_64_MAX_ARG {
                    fast_round(scaled_exp2_64(t, median))
                } else {
                    None
                };
                fast.ok_or_else(|| median * (sigma * z).exp())
            }
            _ => Err(self.sample(rng)),
        }
    }
}

/// `round_u64(y)` for `y` computed with `scaled_exp2_64` in place of libm's exp, when that is
/// provably the whole number the same computation with libm's exp rounds to; `None` when `y`
/// is too near a half (or out of range) to be sure: the caller then uses libm's.
///
/// Why the margin `y * 2^-45` is enough, with u = 2^-53:
/// - The exponent: ours is `t = sigma64 * z`, `sigma64 = sigma * (64.0 / LN_2)`, and
///   `64.0 / LN_2` is within 2u of 64/ln2, so `t` ln2/64 is within 4u |sigma z| of sigma z;
///   libm's is `s = sigma * z`, within u |sigma z|. With |t| <= 1536, |sigma z| < 16.7, so
///   the two exponents differ by less than 5u * 16.7 = 83.5u: a relative factor within 83.6u.
/// - `scaled_exp2_64(t, median)` is within 3.4u of `median * 2^(t/64)`; libm's exp is within
///   1 ulp, at most 2u relative: glibc's exp (since 2.28, from Arm's optimized-routines,
///   github.com/ARM-software/optimized-routines) has a worst case of 0.51 ulp in
///   round-to-nearest, and the glibc manual ("Known Maximum Errors in Math Functions",
///   sourceware.org/glibc/manual) lists no larger error for exp on x86-64; its product by
///   `median` rounds within u. So the two lognormal values are within
///   83.6u + 3.4u + 2u + u = 90u of each other, relative (plus terms of order u^2). The margin
///   below leaves room for up to 75 further roundings of a computation from the draw (each
///   adding at most 2u: 240u (1 + 2^-40)); the one caller rounds the draw itself.
/// - Below 2^51, `n = (y + SHIFT) - SHIFT` is an integer nearest `y` and `y - n` is exact
///   (Sterbenz for n >= 1), so `0.5 - |y - n|` is `y`'s distance to the nearest half: exact
///   when at most 1/4, and above 1/4 (within u/2) otherwise. If it exceeds `y * 2^-45` = 256u y
///   (exact, a power of two), the libm value, within 91u y of `y`, is strictly on the same side
///   of the same half, so it rounds to the same whole number, `n`: no half is that near, so
///   `n`'s ties-to-even never applies and it is `round_u64`'s half-away-from-zero.
#[inline(always)]
fn fast_round(y: f64) -> Option<u64> {
    const BELOW: f64 = (1u64 << 51) as f64;
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52: y + SHIFT rounds y to an integer
    const MARGIN: f64 = 1.0 / (1u64 << 45) as f64;
    let shifted = y + SHIFT;
    let n = shifted - SHIFT;
    let whole = shifted.to_bits() - SHIFT.to_bits();
    let in_range = y > 0.0 && y < BELOW;
    (in_range && 0.5 - (y - n).abs() > y * MARGIN).then_some(whole)
}

/// A lognormal draw: the median times e to the sigma times a standard normal.
#[inline]
fn lognormal(median: f64, sigma: f64, rng: &mut ChaCha8Rng) -> f64 {
    median * (sigma * standard_normal(rng)).exp()
}

/// `x.round().max(0.0) as u64` (half away from zero; negatives and NaN give 0, values past
/// `u64::MAX` saturate), without `f64::round`: baseline x86-64 has no rounding instruction,
/// so `round` is a software routine there, a tenth of a draw's cost. Here it is the
/// truncation of `x + 0.5`, which is `floor(x + 0.5)`, `round`'s result, for every `x` in
/// [0.5, 2^52) (u = 2^-53):
/// - there `x + 0.5` is a multiple of `ulp(x)` (0.5 is one: `ulp(x)` <= 1/2), so it is exact
///   unless it reaches the next power of two 2^k above `x`; then it is below 2^k + 1/2, and
///   rounds to within `ulp(x)` <= 1/2 of itself, to a value in [2^k, 2^k + 1): the same
///   truncation, 2^k;
/// - below 0.5 the sum can round up to 1 (`0.5 - u/2 + 0.5` rounds to even, 1.0), but there
///   every `x` rounds to 0, as it returns at once; and from 2^52 every `x` is whole already
///   (there `x + 0.5` could round up an odd `x`).
///
/// Two dependent instructions, an add and a truncation, on the chain from a request's time to
/// its microseconds, where the truncation, back-conversion, subtraction, comparison and
/// carry it replaces (same results, `round_u64_is_round_then_clamp`) were five. The
/// truncation goes through `i64`: x86-64 converts `f64` to `i64` in one instruction, where
/// `u64` takes a branch or a correction for the top bit; and unchecked, since the sum is
/// known to be in range there (a checked `as` adds a saturation and a NaN test).
#[inline]
pub fn round_u64(x: f64) -> u64 {
    const WHOLE: f64 = (1u64 << 52) as f64;
    if x.is_nan() || x < 0.5 {
        return 0; // negatives and everything below a half round to 0
    }
    if x >= WHOLE {
        return x as u64; // already whole; saturates past u64::MAX
    }
    // SAFETY: 0.5 <= x < 2^52 here, so `x + 0.5` is finite and its truncation fits an `i64`.
    let whole: i64 = unsafe { (x + 0.5).to_int_unchecked() };
    whole as u64
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

    #[test]
    fn quantiles_are_the_draws_quantiles() {
        let spliced = Spliced::new(vec![1.0, 2.0, 3.0], 0.9, 1.0, 0.2, 100.0).unwrap();
        let dists = [
            Dist::Const(3.0),
            Dist::Uniform { low: 1.0, high: 9.0 },
            Dist::Normal { mean: 5.0, sd: 3.0 },
            Dist::Normal { mean: 1.0, sd: 3.0 },
            Dist::LogNormal { median: 300.0, p90: 1500.0 },
            Dist::Exp { mean: 2.0 },
            Dist::Empirical(vec![4.0, 1.0, 2.0, 8.0]),
            Dist::Spliced(Box::new(spliced)),
        ];
        let n = 100_000;
        for d in &dists {
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

    /// `Dist::sample` then `round_u64`: the libm computation `sample_u64` must reproduce.
    fn libm_u64(d: &Dist, rng: &mut ChaCha8Rng) -> u64 {
        round_u64(d.sample(rng))
    }

    #[test]
    fn whole_draws_are_the_libm_draws_rounded() {
        let lognormal = |median: f64, p90: f64| Dist::LogNormal { median, p90 };
        let dists = [
            lognormal(300.0, 1500.0),
            lognormal(0.7, 3.0),
            lognormal(2e6, 1e7),
            lognormal(500.0, 4000.0),
            lognormal(1e12, 1e15),
            lognormal(300.0, 300.0),
            lognormal(0.0, 5.0),
            lognormal(-4.0, 5.0),
            Dist::Const(2.5),
            Dist::Uniform { low: 1.0, high: 9.0 },
            Dist::Normal { mean: 5.0, sd: 3.0 },
            Dist::Exp { mean: 2.0 },
            Dist::Empirical(vec![1.5, 2.0, 4.5]),
        ];
        for d in &dists {
            for seed in [1, 2, 3] {
                let (mut a, mut b) =
                    (crate::rng::stream(seed, &[4]), crate::rng::stream(seed, &[4]));
                let s = Sampler::new(d);
                for _ in 0..150_000 {
                    assert_eq!(s.sample_u64(&mut a), libm_u64(d, &mut b), "{d:?}");
                }
                assert_eq!(d.sample_u64(&mut a), libm_u64(d, &mut b), "{d:?}");
            }
        }
    }

    #[test]
    fn almost_every_lognormal_draw_takes_the_fast_exp() {
        let d = Dist::LogNormal { median: 2e6, p90: 1e7 };
        let (s, mut rng) = (Sampler::new(&d), crate::rng::stream(5, &[]));
        let fast = (0..1_000_000).filter(|_| s.sample_whole(&mut rng).is_ok()).count();
        assert!(fast > 999_000, "{fast}");
    }

    /// A lognormal sampler whose next draw from `rng` lands within a few ulps of `target`.
    fn aimed_at(target: f64, sigma: f64, rng: &ChaCha8Rng, ulps: i32) -> Sampler<'static> {
        let z = standard_normal(&mut rng.clone());
        let mut median = target / (sigma * z).exp();
        for _ in 0..ulps.abs() {
            median = if ulps > 0 { median.next_up() } else { median.next_down() };
        }
        Sampler { kind: Kind::LogNormal { median, sigma, sigma64: sigma * INV_LN2_64 } }
    }

    #[test]
    fn a_draw_next_to_a_half_falls_back_to_libm() {
        let mut rng = crate::rng::stream(6, &[]);
        let mut fell_back = 0;
        for i in 0..20_000u32 {
            let target = f64::from(i % 5_000) * 37.0 + 0.5;
            let sigma = [0.3, 1.2, 2.0][i as usize % 3];
            let s = aimed_at(target, sigma, &rng, i as i32 % 9 - 4);
            let Kind::LogNormal { median, sigma, .. } = s.kind else { unreachable!() };
            let libm = round_u64(lognormal(median, sigma, &mut rng.clone()));
            let whole = s.sample_whole(&mut rng.clone());
            fell_back += usize::from(whole.is_err());
            assert_eq!(s.sample_u64(&mut rng), libm, "{median} {sigma}");
        }
        // Every aimed draw is within a few ulps of its half: none may trust the fast exp.
        assert_eq!(fell_back, 20_000);
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
