//! Statistics over replications: running mean and sample standard deviation (Welford, in a
//! fixed order so sums are reproducible), and the 95% confidence half-width from Student's t.
//! Knows nothing of what the numbers measure.

use std::cell::Cell;

/// Mean, sample standard deviation and 95% CI half-width of `n` values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub n: u64,
    pub mean: f64,
    /// Sample standard deviation (divisor n - 1); 0 when n < 2.
    pub sd: f64,
    /// Half-width of the 95% confidence interval of the mean, `t(0.975, n-1) * sd / sqrt(n)`;
    /// 0 when n < 2 (no interval can be computed from one value).
    pub ci95: f64,
}

/// Welford's running mean and sum of squared deviations. Values must be added in a fixed
/// order (replication index) for byte-identical output.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Welford {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Welford {
    pub fn add(&mut self, x: f64) {
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Values added so far.
    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn stat(&self) -> Stat {
        if self.n < 2 {
            return Stat { n: self.n, mean: self.mean, sd: 0.0, ci95: 0.0 };
        }
        let sd = (self.m2 / (self.n - 1) as f64).max(0.0).sqrt();
        let ci95 = t_975(self.n - 1) * sd / (self.n as f64).sqrt();
        Stat { n: self.n, mean: self.mean, sd, ci95 }
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (two-sided 95%).
/// Solved by bisection on the exact finite-series CDF for integer df (Abramowitz & Stegun
/// 26.7.3/26.7.4); above 100,000 df the normal quantile 1.959964 is within 1e-5.
///
/// The bisection costs about df/2 terms per step, and every summary of a run asks for the same
/// df once per metric, so the last answer is kept per thread: a repeated df is a lookup.
pub fn t_975(df: u64) -> f64 {
    assert!(df >= 1, "t quantile needs at least one degree of freedom");
    if df > 100_000 {
        return 1.959_963_984_540_054;
    }
    thread_local! {
        /// The last (df, quantile) solved on this thread; df 0 is never asked for.
        static LAST: Cell<(u64, f64)> = const { Cell::new((0, 0.0)) };
    }
    LAST.with(|last| match last.get() {
        (d, t) if d == df => t,
        _ => {
            let t = bisect_t_975(df);
            last.set((df, t));
            t
        }
    })
}

/// `t_975` by at most 80 halvings of [1.9, 13]. Once an interval halves into itself (its ends
/// adjacent or equal floats, after about 55 steps) every later step repeats it, so stopping
/// there gives the 80-step answer bit for bit.
fn bisect_t_975(df: u64) -> f64 {
    let (mut lo, mut hi) = (1.9f64, 13.0f64);
    for _ in 0..80 {
        let before = (lo.to_bits(), hi.to_bits());
        let mid = 0.5 * (lo + hi);
        if central_mass(mid, df) < 0.95 {
            lo = mid;
        } else {
            hi = mid;
        }
        if (lo.to_bits(), hi.to_bits()) == before {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// `P(|T| < t)` for Student's t with integer `df`: with `theta = atan(t / sqrt(df))`,
/// odd df: `(2/pi)(theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...))` (df - 2 terms in cos),
/// even df: `sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)`.
fn central_mass(t: f64, df: u64) -> f64 {
    let theta = (t / (df as f64).sqrt()).atan();
    let (s, c) = theta.sin_cos();
    let c2 = c * c;
    let odd = df % 2 == 1;
    let (mut term, mut k) = if odd { (c, 3) } else { (1.0, 2) };
    // Odd df from 3, even df from 2: the series' first term; df 1 has none.
    let mut sum = if df == 1 { 0.0 } else { term };
    while k < df {
        term *= c2 * (k - 1) as f64 / k as f64;
        sum += term;
        k += 2;
    }
    if odd {
        2.0 / std::f64::consts::PI * (theta + s * sum)
    } else {
        s * sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_closed_forms_and_tables() {
        // df = 1 (Cauchy): t = tan(pi * (0.975 - 0.5)) = tan(0.475 pi).
        let cauchy = (0.475 * std::f64::consts::PI).tan();
        assert!((t_975(1) - cauchy).abs() < 1e-9, "{}", t_975(1));
        // df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so t = (2p - 1) / sqrt(2 p (1 - p)).
        let p: f64 = 0.975;
        let two = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
        assert!((t_975(2) - two).abs() < 1e-9, "{}", t_975(2));
        // Printed tables: df 10 -> 2.228139, 30 -> 2.042272, 99 -> 1.984217.
        for (df, t) in [(10, 2.228_139), (30, 2.042_272), (99, 1.984_217)] {
            assert!((t_975(df) - t).abs() < 1e-6, "df {df}: {}", t_975(df));
        }
        assert!((t_975(1_000_000) - 1.959_964).abs() < 1e-6);
    }

    /// The bisection as first written: 80 halvings, no early stop.
    fn t_975_80_steps(df: u64) -> f64 {
        let (mut lo, mut hi) = (1.9, 13.0);
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if central_mass(mid, df) < 0.95 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    #[test]
    fn the_early_stop_and_the_memo_give_the_80_step_bits() {
        let dfs = (1..=400).chain([999, 1_000, 4_999, 9_999, 65_537, 99_999]);
        for df in dfs {
            let exact = t_975_80_steps(df).to_bits();
            assert_eq!(bisect_t_975(df).to_bits(), exact, "df {df}");
            // Asked twice in a row (a lookup), then after another df (solved again).
            assert_eq!(t_975(df).to_bits(), exact, "df {df}");
            assert_eq!(t_975(df).to_bits(), exact, "df {df}");
            assert_eq!(t_975(df + 1).to_bits(), t_975_80_steps(df + 1).to_bits(), "df {df}");
            assert_eq!(t_975(df).to_bits(), exact, "df {df}");
        }
    }

    #[test]
    fn welford_matches_the_two_pass_formula() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, sd = sqrt(32/7).
        let mut w = Welford::default();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            w.add(x);
        }
        let s = w.stat();
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert!((s.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // ci95 = t(0.975, 7) * sd / sqrt(8), t(0.975, 7) = 2.364624 (tables).
        assert!((s.ci95 - 2.364_624 * s.sd / 8f64.sqrt()).abs() < 1e-5);
        let mut one = Welford::default();
        one.add(3.0);
        assert_eq!(one.stat(), Stat { n: 1, mean: 3.0, sd: 0.0, ci95: 0.0 });
    }
}
