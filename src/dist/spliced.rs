//! The spliced distribution: an empirical body up to a tail probability and a generalized
//! Pareto (GPD) tail above it, truncated at a largest value. `calibrate` writes a model's time
//! to first token overhead in this form: the fit's residual quantiles for the body and a GPD
//! fitted to the residuals above the body's last quantile, so simulated draws reach past the
//! largest measured residual as often as the data's tail says, and never past `max`.
//!
//! Quantile function `Q(p)`, `n = body.len()`, `t = body[n - 1]` (the threshold):
//! - `p <= p_tail`: linear interpolation in `body`, `body[i]` being the quantile at
//!   `i * p_tail / (n - 1)`;
//! - `p > p_tail`: `t + G⁻¹(v)`, `v = (p - p_tail) / (1 - p_tail) * G(max - t)`, with
//!   `G(y) = 1 - (1 + shape * y / scale)^(-1 / shape)` (shape 0: `1 - exp(-y / scale)`).
//!
//! A draw is `Q(u)` of one uniform `u` in [0, 1).

use crate::rng::{ChaCha8Rng, RngExt};

/// Body quantiles, tail probability, and the GPD tail's scale, shape and upper bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Spliced {
    /// Quantiles at evenly spaced probabilities from 0 to `p_tail`, ascending, at least 2.
    pub body: Vec<f64>,
    /// Probability of the body, in (0, 1]; 1 leaves no tail.
    pub p_tail: f64,
    /// GPD scale, > 0, in the values' unit.
    pub scale: f64,
    /// GPD shape (xi), in [-1, 1): 0 is exponential, > 0 heavy, < 0 bounded.
    pub shape: f64,
    /// The largest value drawn, at or above the threshold.
    pub max: f64,
}

/// Why the parameters of a spliced distribution were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplicedError {
    #[error("spliced needs at least 2 body values")]
    BodyTooShort,
    #[error("spliced: the body values must be finite, >= 0 and ascending")]
    BodyOrder,
    #[error("spliced: p_tail must be in (0, 1]")]
    PTail,
    #[error("spliced: scale must be finite and > 0")]
    Scale,
    #[error("spliced: shape must be in [-1, 1)")]
    Shape,
    #[error("spliced: max must be finite and at least the last body value")]
    Max,
}

impl Spliced {
    /// Checked parameters.
    pub fn new(
        body: Vec<f64>,
        p_tail: f64,
        scale: f64,
        shape: f64,
        max: f64,
    ) -> Result<Spliced, SplicedError> {
        let finite = body.iter().all(|x| x.is_finite() && *x >= 0.0);
        let checks = [
            (body.len() >= 2, SplicedError::BodyTooShort),
            (finite && body.windows(2).all(|w| w[0] <= w[1]), SplicedError::BodyOrder),
            (p_tail > 0.0 && p_tail <= 1.0, SplicedError::PTail),
            (scale.is_finite() && scale > 0.0, SplicedError::Scale),
            ((-1.0..1.0).contains(&shape), SplicedError::Shape),
            (max.is_finite() && body.last().is_some_and(|&t| max >= t), SplicedError::Max),
        ];
        match checks.into_iter().find(|(ok, _)| !ok) {
            Some((_, e)) => Err(e),
            None => Ok(Spliced { body, p_tail, scale, shape, max }),
        }
    }

    /// Where the tail starts: the body's last value, its `p_tail` quantile.
    pub fn threshold(&self) -> f64 {
        self.body[self.body.len() - 1]
    }

    /// The value at probability `p` (clamped to [0, 1]).
    pub fn quantile(&self, p: f64) -> f64 {
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        if p <= self.p_tail || self.p_tail >= 1.0 {
            return self.body_quantile(p / self.p_tail);
        }
        let v = (p - self.p_tail) / (1.0 - self.p_tail) * self.gpd_cdf(self.max - self.threshold());
        (self.threshold() + self.gpd_inverse(v)).min(self.max)
    }

    /// Draw one value: the quantile of one uniform draw.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.quantile(rng.random::<f64>())
    }

    /// The mean, in closed form: the body's trapezoids and the truncated GPD's mean.
    pub fn mean(&self) -> f64 {
        let n = self.body.len();
        let trapezoids: f64 = self.body.windows(2).map(|w| (w[0] + w[1]) / 2.0).sum();
        let body = self.p_tail * trapezoids / (n - 1) as f64;
        if self.p_tail >= 1.0 {
            return body;
        }
        let m = self.max - self.threshold();
        let f_m = self.gpd_cdf(m);
        // E[Y | Y <= m] = (integral of the survival function to m - m (1 - G(m))) / G(m).
        let tail_excess =
            if f_m > 0.0 { (self.gpd_survival_integral(m) - m * (1.0 - f_m)) / f_m } else { 0.0 };
        body + (1.0 - self.p_tail) * (self.threshold() + tail_excess)
    }

    fn body_quantile(&self, r: f64) -> f64 {
        let x = r.clamp(0.0, 1.0) * (self.body.len() - 1) as f64;
        let i = (x.floor() as usize).min(self.body.len() - 2);
        let f = x - i as f64;
        self.body[i] + f * (self.body[i + 1] - self.body[i])
    }

    /// `G(y)`, the GPD's distribution function at excess `y >= 0`.
    fn gpd_cdf(&self, y: f64) -> f64 {
        let (s, k) = (self.scale, self.shape);
        if k.abs() < 1e-12 {
            return 1.0 - (-y / s).exp();
        }
        let base = 1.0 + k * y / s;
        if base <= 0.0 {
            return 1.0; // past a bounded tail's end
        }
        1.0 - base.powf(-1.0 / k)
    }

    /// `G⁻¹(v)` for `v` in [0, 1].
    fn gpd_inverse(&self, v: f64) -> f64 {
        let (s, k) = (self.scale, self.shape);
        let tail = (1.0 - v).max(0.0);
        if k.abs() < 1e-12 {
            return if tail > 0.0 { -s * tail.ln() } else { f64::INFINITY };
        }
        s / k * (tail.powf(-k) - 1.0)
    }

    /// The integral of `1 - G(y)` from 0 to `m`.
    fn gpd_survival_integral(&self, m: f64) -> f64 {
        let (s, k) = (self.scale, self.shape);
        if k.abs() < 1e-12 {
            return s * (1.0 - (-m / s).exp());
        }
        // The survival function is 0 past a bounded tail's end, at -s / k.
        let m = if k < 0.0 { m.min(-s / k) } else { m };
        let base = 1.0 + k * m / s;
        s / (1.0 - k) * (1.0 - base.powf(1.0 - 1.0 / k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(shape: f64) -> Spliced {
        Spliced::new(vec![0.5, 1.0, 1.5, 2.0], 0.9, 0.8, shape, 600.0).unwrap()
    }

    #[test]
    fn the_body_interpolates_and_the_tail_starts_at_the_threshold() {
        let s = example(0.2);
        assert_eq!(s.quantile(0.0), 0.5);
        assert!((s.quantile(0.3) - 1.0).abs() < 1e-12);
        assert!((s.quantile(0.45) - 1.25).abs() < 1e-12);
        assert_eq!(s.quantile(0.9), 2.0);
        assert_eq!(s.quantile(1.0), 600.0, "the truncation point is the largest value");
        let qs: Vec<f64> = (0..=1000).map(|i| s.quantile(i as f64 / 1000.0)).collect();
        assert!(qs.windows(2).all(|w| w[0] <= w[1]), "non-decreasing");
    }

    #[test]
    fn the_tail_is_the_closed_form_gpd() {
        // Exponential tail (shape 0): Q(p) = t - scale ln(1 - (p - p_tail)/(1 - p_tail)) when
        // the truncation is far (G(max - t) = 1 to double precision).
        let s = example(0.0);
        let q = s.quantile(0.99);
        assert!((q - (2.0 - 0.8 * (0.1f64).ln())).abs() < 1e-9, "{q}");
        // Heavy tail: Q = t + scale/xi ((1 - v)^-xi - 1), v = 0.9 * G(598).
        let s = example(0.5);
        let v = 0.9 * (1.0 - (1.0 + 0.5 * 598.0 / 0.8f64).powf(-2.0));
        let want = 2.0 + 0.8 / 0.5 * ((1.0 - v).powf(-0.5) - 1.0);
        assert!((s.quantile(0.99) - want).abs() < 1e-9);
        // Bounded tail: never past t + scale / |xi|.
        let s = example(-0.5);
        assert!((s.quantile(1.0) - (2.0 + 1.6)).abs() < 1e-9);
    }

    #[test]
    fn draws_match_the_quantiles_and_the_mean() {
        for shape in [-0.3, 0.0, 0.4] {
            let s = example(shape);
            let mut rng = crate::rng::stream(7, &[]);
            let n = 200_000;
            let mut v: Vec<f64> = (0..n).map(|_| s.sample(&mut rng)).collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let tol = if shape > 0.0 { 0.03 } else { 0.01 };
            assert!((mean - s.mean()).abs() / s.mean() < tol, "{shape}: {mean} vs {}", s.mean());
            v.sort_by(f64::total_cmp);
            for p in [0.1, 0.5, 0.9, 0.95, 0.99] {
                let got = v[(p * n as f64) as usize];
                let want = s.quantile(p);
                assert!((got - want).abs() / want < 0.03, "{shape} p{p}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        let ok = || vec![0.5, 1.0];
        assert_eq!(Spliced::new(vec![1.0], 0.9, 1.0, 0.0, 9.0), Err(SplicedError::BodyTooShort));
        assert_eq!(Spliced::new(vec![2.0, 1.0], 0.9, 1.0, 0.0, 9.0), Err(SplicedError::BodyOrder));
        assert_eq!(Spliced::new(ok(), 0.0, 1.0, 0.0, 9.0), Err(SplicedError::PTail));
        assert_eq!(Spliced::new(ok(), 0.9, 0.0, 0.0, 9.0), Err(SplicedError::Scale));
        assert_eq!(Spliced::new(ok(), 0.9, 1.0, 1.0, 9.0), Err(SplicedError::Shape));
        assert_eq!(Spliced::new(ok(), 0.9, 1.0, 0.0, 0.9), Err(SplicedError::Max));
        assert_eq!(Spliced::new(ok(), 0.9, 1.0, f64::NAN, 9.0), Err(SplicedError::Shape));
    }
}
