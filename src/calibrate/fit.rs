//! The regression behind `calibrate`: `ttft = overhead + a * prefill_tokens + b * cached_tokens`
//! with every coefficient non-negative, fitted by least absolute deviations (median regression)
//! through iteratively reweighted least squares, each step an exact non-negative least squares.
//!
//! Why median regression: measured TTFTs have a heavy right tail (queueing, retries, a slow
//! proxy); a squared loss lets a few 30 s requests pull every coefficient, an absolute loss
//! fits the typical request and leaves the tail to the residuals, which the caller keeps as a
//! distribution. Pure arithmetic in a fixed order: the same rows give the same bits.

/// One request as the regression sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// Uncached + cache-write tokens (prefilled).
    pub prefill: f64,
    /// Cache-read tokens.
    pub cached: f64,
    /// Measured time to first token, seconds.
    pub ttft_s: f64,
}

/// Fitted coefficients: seconds, seconds per prefilled token, seconds per cached token.
/// A column the rows cannot identify (all zero, or constant and so confounded with the
/// overhead) is `None`; a coefficient held at zero by the constraint is `Some(0.0)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coefs {
    pub overhead_s: f64,
    pub s_per_prefill: Option<f64>,
    pub s_per_cached: Option<f64>,
}

impl Coefs {
    pub fn predict(&self, prefill: f64, cached: f64) -> f64 {
        self.overhead_s
            + self.s_per_prefill.unwrap_or(0.0) * prefill
            + self.s_per_cached.unwrap_or(0.0) * cached
    }
}

/// The loss: `Absolute` is median regression, `Squared` ordinary least squares (kept to show
/// what the heavy tail does to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    Absolute,
    Squared,
}

/// IRLS stops after this many reweightings, or when the absolute loss improves by less than
/// `TOLERANCE` (relative; a bootstrap refit may use a looser one).
const MAX_ITERATIONS: usize = 200;
pub const TOLERANCE: f64 = 1e-10;
/// Residuals below 0.1 ms weigh as 0.1 ms (the weight is `1 / |r|`; the traces record TTFT to
/// 10 ms, so this changes no fit measurably).
const MIN_RESIDUAL_S: f64 = 1e-4;

/// Which columns the rows identify: a column with no non-zero value, or one value only (then
/// it is a multiple of the overhead's), is left out.
pub fn identifiable(rows: &[Row]) -> (bool, bool) {
    let varies = |f: fn(&Row) -> f64| {
        let (lo, hi) = rows
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        rows.len() > 1 && hi > lo
    };
    (varies(|r| r.prefill), varies(|r| r.cached))
}

/// Fit the rows (at least one) with `loss`, to the default tolerance.
pub fn fit(rows: &[Row], loss: Loss) -> Coefs {
    fit_with(rows, loss, None, TOLERANCE)
}

/// Fit the rows (at least one) with `loss`; IRLS starts from `start` when given (a bootstrap
/// refit starts from the full fit) and stops when the absolute loss improves by less than
/// `tolerance` (relative). Column scaling keeps the 3x3 systems well conditioned (token counts
/// are ~1e5, coefficients ~1e-5).
pub fn fit_with(rows: &[Row], loss: Loss, start: Option<&Coefs>, tolerance: f64) -> Coefs {
    assert!(!rows.is_empty(), "fit needs at least one row");
    let (use_p, use_c) = identifiable(rows);
    let scale = |f: fn(&Row) -> f64| {
        let m = rows.iter().map(f).sum::<f64>() / rows.len() as f64;
        if m > 0.0 {
            m
        } else {
            1.0
        }
    };
    let (sp, sc) = (scale(|r| r.prefill), scale(|r| r.cached));
    let active = [true, use_p, use_c];
    let x: Vec<[f64; 3]> = rows.iter().map(|r| [1.0, r.prefill / sp, r.cached / sc]).collect();
    let y: Vec<f64> = rows.iter().map(|r| r.ttft_s).collect();
    let mut w = vec![1.0; rows.len()];
    let mut beta = match (start, loss) {
        (Some(c), Loss::Absolute) => [
            c.overhead_s.max(0.0),
            if use_p { c.s_per_prefill.unwrap_or(0.0).max(0.0) * sp } else { 0.0 },
            if use_c { c.s_per_cached.unwrap_or(0.0).max(0.0) * sc } else { 0.0 },
        ],
        _ => nnls(&x, &y, &w, active),
    };
    if loss == Loss::Absolute {
        let mut best = abs_loss(&x, &y, &beta);
        for _ in 0..MAX_ITERATIONS {
            for ((wi, xi), yi) in w.iter_mut().zip(&x).zip(&y) {
                *wi = 1.0 / (yi - dot(xi, &beta)).abs().max(MIN_RESIDUAL_S);
            }
            let next = nnls(&x, &y, &w, active);
            let l = abs_loss(&x, &y, &next);
            if l > best * (1.0 - tolerance) {
                if l < best {
                    beta = next;
                }
                break;
            }
            best = l;
            beta = next;
        }
    }
    Coefs {
        overhead_s: beta[0],
        s_per_prefill: use_p.then_some(beta[1] / sp),
        s_per_cached: use_c.then_some(beta[2] / sc),
    }
}

fn dot(x: &[f64; 3], b: &[f64; 3]) -> f64 {
    x[0] * b[0] + x[1] * b[1] + x[2] * b[2]
}

fn abs_loss(x: &[[f64; 3]], y: &[f64], b: &[f64; 3]) -> f64 {
    x.iter().zip(y).map(|(xi, yi)| (yi - dot(xi, b)).abs()).sum()
}

/// Exact weighted non-negative least squares over the `active` columns: the optimum is the
/// unconstrained solution on its own support, so trying every support (at most 8) and keeping
/// the best feasible one finds it.
fn nnls(x: &[[f64; 3]], y: &[f64], w: &[f64], active: [bool; 3]) -> [f64; 3] {
    // Weighted normal equations, accumulated once.
    let mut a = [[0.0; 3]; 3];
    let mut v = [0.0; 3];
    for ((xi, yi), wi) in x.iter().zip(y).zip(w) {
        for j in 0..3 {
            v[j] += wi * xi[j] * yi;
            for k in 0..3 {
                a[j][k] += wi * xi[j] * xi[k];
            }
        }
    }
    let yy: f64 = y.iter().zip(w).map(|(yi, wi)| wi * yi * yi).sum();
    let mut best = ([0.0; 3], yy);
    for mask in 1u8..8 {
        let cols: Vec<usize> = (0..3).filter(|&j| mask & (1 << j) != 0).collect();
        if cols.iter().any(|&j| !active[j]) {
            continue;
        }
        let Some(sol) = solve_subset(&a, &v, &cols) else { continue };
        if sol.iter().any(|&c| c < 0.0) {
            continue;
        }
        let mut beta = [0.0; 3];
        for (&j, &c) in cols.iter().zip(&sol) {
            beta[j] = c;
        }
        // Weighted SSE = y'Wy - 2 b'v + b'Ab.
        let mut sse = yy;
        for j in 0..3 {
            sse -= 2.0 * beta[j] * v[j];
            for k in 0..3 {
                sse += beta[j] * a[j][k] * beta[k];
            }
        }
        if sse < best.1 {
            best = (beta, sse);
        }
    }
    best.0
}

/// Solve the normal equations restricted to `cols` by Gaussian elimination with partial
/// pivoting; `None` when (numerically) singular.
fn solve_subset(a: &[[f64; 3]; 3], v: &[f64; 3], cols: &[usize]) -> Option<Vec<f64>> {
    let n = cols.len();
    let mut m: Vec<Vec<f64>> =
        cols.iter().map(|&j| cols.iter().map(|&k| a[j][k]).chain([v[j]]).collect()).collect();
    let norm = cols.iter().map(|&j| a[j][j]).fold(0.0, f64::max);
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() <= 1e-12 * norm.max(f64::MIN_POSITIVE) {
            return None;
        }
        m.swap(c, p);
        let pivot = m[c].clone();
        for row in m.iter_mut().skip(c + 1) {
            let f = row[c] / pivot[c];
            for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                *x -= f * p;
            }
        }
    }
    let mut sol = vec![0.0; n];
    for c in (0..n).rev() {
        let s: f64 = (c + 1..n).map(|k| m[c][k] * sol[k]).sum();
        sol[c] = (m[c][n] - s) / m[c][c];
    }
    Some(sol)
}

/// The `q` quantile (0..=1) of `sorted` (ascending, non-empty), linearly interpolated between
/// order statistics (R's type 7).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of nothing");
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The median of `values` (any order; sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    quantile(values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(f: impl Fn(f64, f64) -> f64, pts: &[(f64, f64)]) -> Vec<Row> {
        pts.iter().map(|&(p, c)| Row { prefill: p, cached: c, ttft_s: f(p, c) }).collect()
    }

    const PTS: [(f64, f64); 8] = [
        (1000.0, 0.0),
        (20_000.0, 5000.0),
        (5000.0, 80_000.0),
        (60_000.0, 10_000.0),
        (300.0, 150_000.0),
        (12_000.0, 40_000.0),
        (90_000.0, 0.0),
        (2500.0, 120_000.0),
    ];

    #[test]
    fn exact_data_is_recovered_by_both_losses() {
        // ttft = 0.8 + p / 20,000 + c / 100,000.
        let r = rows(|p, c| 0.8 + p / 20_000.0 + c / 100_000.0, &PTS);
        for loss in [Loss::Absolute, Loss::Squared] {
            let f = fit(&r, loss);
            assert!((f.overhead_s - 0.8).abs() < 1e-6, "{loss:?} {f:?}");
            assert!((1.0 / f.s_per_prefill.unwrap() - 20_000.0).abs() < 1e-2);
            assert!((1.0 / f.s_per_cached.unwrap() - 100_000.0).abs() < 1e-1);
        }
    }

    #[test]
    fn one_outlier_moves_least_squares_not_the_median_fit() {
        let mut r = rows(|p, c| 0.8 + p / 20_000.0 + c / 100_000.0, &PTS);
        r[1].ttft_s += 60.0; // a retried request
        let l1 = fit(&r, Loss::Absolute);
        let l2 = fit(&r, Loss::Squared);
        assert!((l1.overhead_s - 0.8).abs() < 1e-3, "{l1:?}");
        assert!((1.0 / l1.s_per_prefill.unwrap() - 20_000.0).abs() < 50.0, "{l1:?}");
        assert!((l2.overhead_s - 0.8).abs() > 1.0, "least squares is pulled: {l2:?}");
    }

    #[test]
    fn negative_slopes_are_held_at_zero_and_constant_columns_are_unidentified() {
        // TTFT falls with cached tokens: the constraint keeps b at 0, never negative.
        let r = rows(|p, c| 2.0 + p / 10_000.0 - c / 1e6, &PTS);
        let f = fit(&r, Loss::Absolute);
        assert_eq!(f.s_per_cached, Some(0.0));
        // No cache reads: the column is not identifiable.
        let r = rows(|p, _| 1.0 + p / 10_000.0, &[(1000.0, 0.0), (5000.0, 0.0), (9000.0, 0.0)]);
        let f = fit(&r, Loss::Absolute);
        assert_eq!(f.s_per_cached, None);
        assert!((f.overhead_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
    }
}
