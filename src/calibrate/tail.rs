//! The overhead distribution `calibrate` hands the simulator: the fitted fixed part plus every
//! residual, as a spliced distribution (`dist::Spliced`): the measured quantiles up to
//! `P_TAIL`, and above them a generalized Pareto tail fitted to the exceedances by
//! probability-weighted moments, truncated at `MAX_OVERHEAD_S`. Pure arithmetic.
//!
//! Why a fitted tail: a distribution of measured quantiles stops at the largest one it keeps;
//! a hold that is long enough for every simulated first token is then an artefact. The tail
//! lets simulated p99 and p99.9 come from the data's exceedances instead of a cut.

use super::fit::quantile;
pub use crate::dist::Spliced;

/// The body runs to this probability; above it, the generalized Pareto tail.
pub const P_TAIL: f64 = 0.90;
/// Body values at p = 0, 0.05, ..., `P_TAIL`.
pub const BODY_VALUES: usize = 19;
/// The largest overhead drawn, seconds: the tail is truncated here. ASSUMPTION (named): a
/// client gives up after the Anthropic SDKs' default request timeout of 10 minutes, so no first
/// token is measured later (docs/calibrate.md cites the SDKs).
pub const MAX_OVERHEAD_S: f64 = 600.0;
/// The tail's shape is clamped to this range: below -0.5 the probability-weighted moments are
/// unreliable (Hosking & Wallis 1987 recommend them for shapes under 0.5 in absolute value),
/// and at 1 or above the tail has no mean and the estimator no meaning.
pub const SHAPE_MIN: f64 = -0.5;
pub const SHAPE_MAX: f64 = 0.9;
/// Fewer exceedances than this: the tail is exponential (shape 0) with their mean excess as its
/// scale; two moments from one to three points are noise.
pub const MIN_EXCEEDANCES: usize = 4;
/// The tail's scale is at least 1 ms (the traces' TTFTs are recorded to 10 ms): a tail of no
/// exceedances, or of equal ones, still has a valid distribution.
pub const MIN_SCALE_S: f64 = 1e-3;

/// A generalized Pareto distribution of excesses over a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpd {
    pub scale: f64,
    pub shape: f64,
}

/// Fit a generalized Pareto distribution to `excesses` (positive, ascending) by
/// probability-weighted moments (Hosking & Wallis 1987, Technometrics 29(3)): with
/// `a0 = mean` and `a1 = E[X (1 - F(X))]` (unbiased estimator `b0 - b1`,
/// `b1 = 1/n sum (i - 1)/(n - 1) x_(i)`), `shape = 2 - a0 / (a0 - 2 a1)` and
/// `scale = 2 a0 a1 / (a0 - 2 a1)`. A clamped shape keeps the mean: `scale = a0 (1 - shape)`.
pub fn fit_gpd(excesses: &[f64]) -> Gpd {
    let n = excesses.len();
    if n == 0 {
        return Gpd { scale: 0.0, shape: 0.0 };
    }
    let a0 = excesses.iter().sum::<f64>() / n as f64;
    if n < MIN_EXCEEDANCES {
        return Gpd { scale: a0, shape: 0.0 };
    }
    let b1 = excesses.iter().enumerate().map(|(i, x)| i as f64 * x).sum::<f64>()
        / (n as f64 * (n - 1) as f64);
    let a1 = a0 - b1;
    let d = a0 - 2.0 * a1;
    // d <= 0: a tail at least as heavy as shape 1 (no mean); the clamp takes it.
    let shape = if d > 0.0 { 2.0 - a0 / d } else { SHAPE_MAX + 1.0 };
    if (SHAPE_MIN..=SHAPE_MAX).contains(&shape) {
        Gpd { scale: 2.0 * a0 * a1 / d, shape }
    } else {
        let shape = shape.clamp(SHAPE_MIN, SHAPE_MAX);
        Gpd { scale: a0 * (1.0 - shape), shape }
    }
}

/// The overhead distribution of a fit: its fixed part `fixed_s` plus each of its residuals,
/// spliced with a tail (`spliced`).
pub fn overhead(fixed_s: f64, residuals: &[f64]) -> Spliced {
    let mut values: Vec<f64> = residuals.iter().map(|r| fixed_s + r).collect();
    spliced(&mut values)
}

/// The spliced overhead distribution of `values` (the fixed part plus each residual, seconds,
/// any order, at least one): body quantiles clamped at 0, the tail fitted to the values above
/// the `P_TAIL` quantile.
fn spliced(values: &mut [f64]) -> Spliced {
    assert!(!values.is_empty(), "a distribution of nothing");
    values.sort_by(f64::total_cmp);
    // Interpolation may round one ulp past the next order statistic: keep the body ascending.
    let mut body: Vec<f64> = (0..BODY_VALUES)
        .map(|i| quantile(values, P_TAIL * i as f64 / (BODY_VALUES - 1) as f64).max(0.0))
        .collect();
    for i in 1..BODY_VALUES {
        body[i] = body[i].max(body[i - 1]);
    }
    let threshold = body[BODY_VALUES - 1];
    let excesses: Vec<f64> =
        values.iter().filter(|&&v| v > threshold).map(|v| v - threshold).collect();
    let g = fit_gpd(&excesses);
    let max = MAX_OVERHEAD_S.max(threshold);
    let (scale, shape) = (g.scale.max(MIN_SCALE_S), g.shape);
    Spliced::new(body.clone(), P_TAIL, scale, shape, max).unwrap_or_else(|e| {
        panic!("ascending quantiles >= 0, a clamped shape, a scale > 0: {e} ({body:?}, {g:?})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quantiles of a GPD at evenly spaced probabilities: a sample without sampling noise.
    fn gpd_sample(g: Gpd, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let v = (i as f64 + 0.5) / n as f64;
                if g.shape == 0.0 {
                    -g.scale * (1.0 - v).ln()
                } else {
                    g.scale / g.shape * ((1.0 - v).powf(-g.shape) - 1.0)
                }
            })
            .collect()
    }

    #[test]
    fn pwm_recovers_known_tails_and_clamps_the_shape() {
        for (scale, shape) in [(0.6, 0.2), (1.0, 0.0), (0.5, -0.3), (2.0, 0.45)] {
            let g = fit_gpd(&gpd_sample(Gpd { scale, shape }, 4000));
            assert!((g.shape - shape).abs() < 0.02, "{shape}: {g:?}");
            assert!((g.scale / scale - 1.0).abs() < 0.03, "{scale}: {g:?}");
        }
        let g = fit_gpd(&gpd_sample(Gpd { scale: 1.0, shape: 1.5 }, 4000));
        assert_eq!(g.shape, SHAPE_MAX);
        assert_eq!(fit_gpd(&[1.0, 3.0]), Gpd { scale: 2.0, shape: 0.0 }, "too few: exponential");
        assert_eq!(fit_gpd(&[]).scale, 0.0);
    }

    #[test]
    fn the_body_is_the_measured_quantiles_and_the_tail_starts_at_the_threshold() {
        let mut values: Vec<f64> = (0..=100).map(|i| i as f64 / 10.0).collect();
        let d = spliced(&mut values);
        assert_eq!(d.body.len(), BODY_VALUES);
        assert_eq!(d.body[0], 0.0);
        assert!((d.body[18] - 9.0).abs() < 1e-12, "the 90% quantile: {:?}", d.body);
        assert!((d.body[10] - 5.0).abs() < 1e-12);
        assert_eq!((d.p_tail, d.max), (P_TAIL, MAX_OVERHEAD_S));
        assert!((d.quantile(0.45) - 4.5).abs() < 1e-12);
        assert_eq!(d.quantile(P_TAIL), d.body[18]);
        // Above: increasing, and at most the truncation.
        let tail: Vec<f64> = [0.91, 0.95, 0.99, 0.999, 1.0].map(|p| d.quantile(p)).to_vec();
        assert!(tail.windows(2).all(|w| w[0] < w[1]) && tail[0] > 9.0, "{tail:?}");
        assert!(tail[4] <= MAX_OVERHEAD_S, "{tail:?}");
    }

    #[test]
    fn a_heavy_tail_runs_to_the_truncation_and_its_quantiles_follow_the_fit() {
        let g = Gpd { scale: 0.5, shape: 0.4 };
        // 900 body values in [0, 1), 100 exceedances of 1 s by the GPD.
        let mut values: Vec<f64> = (0..900).map(|i| i as f64 / 900.0).collect();
        values.extend(gpd_sample(g, 100).iter().map(|x| 1.0 + x));
        let d = spliced(&mut values);
        assert!((d.shape - 0.4).abs() < 0.1 && (d.scale / 0.5 - 1.0).abs() < 0.15, "{d:?}");
        assert!((d.quantile(1.0) - MAX_OVERHEAD_S).abs() < 1e-6);
        // The 99% quantile: the threshold plus the GPD's 90% quantile (truncation: negligible).
        let want = d.body[18] + d.scale / d.shape * (0.1f64.powf(-d.shape) - 1.0);
        assert!((d.quantile(0.99) / want - 1.0).abs() < 1e-3, "{} vs {want}", d.quantile(0.99));
    }
}
