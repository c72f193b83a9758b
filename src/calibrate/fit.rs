//! The regression behind `calibrate`: `ttft = overhead + a * prefill_tokens + b * cached_tokens
//! (+ c * prefill_tokens * context_tokens)` with every coefficient non-negative, fitted by least
//! absolute deviations (median regression) through iteratively reweighted least squares, each
//! step an exact non-negative least squares. The optional fourth column is the attention of the
//! new tokens over the whole context (`context` = all input tokens of the request).
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

impl Row {
    /// All input tokens of the request.
    pub fn context(&self) -> f64 {
        self.prefill + self.cached
    }
    /// The attention column: prefilled tokens x context tokens.
    pub fn attention(&self) -> f64 {
        self.prefill * self.context()
    }
}

/// Fitted coefficients: seconds, seconds per prefilled token, seconds per cached token, seconds
/// per (prefilled x context) token². A column the rows cannot identify (all zero, or constant
/// and so confounded with the overhead) or not fitted is `None`; a coefficient held at zero by
/// the constraint is `Some(0.0)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coefs {
    pub overhead_s: f64,
    pub s_per_prefill: Option<f64>,
    pub s_per_cached: Option<f64>,
    pub s_per_attention: Option<f64>,
}

impl Coefs {
    /// The fitted TTFT of `row`, seconds.
    pub fn predict(&self, row: &Row) -> f64 {
        self.overhead_s + self.per_token_s(row)
    }
    /// The fitted TTFT without the overhead: the time the token terms take.
    pub fn per_token_s(&self, row: &Row) -> f64 {
        self.s_per_prefill.unwrap_or(0.0) * row.prefill
            + self.s_per_cached.unwrap_or(0.0) * row.cached
            + self.s_per_attention.unwrap_or(0.0) * row.attention()
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

/// Columns of the design: overhead, prefill, cached, attention.
const K: usize = 4;
type Vector = [f64; K];

/// Which token columns the rows identify: a column with no non-zero value, or one value only
/// (then it is a multiple of the overhead's), is left out. `(prefill, cached, attention)`.
pub fn identifiable(rows: &[Row]) -> (bool, bool, bool) {
    let varies = |f: fn(&Row) -> f64| {
        let (lo, hi) = rows
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        rows.len() > 1 && hi > lo
    };
    (varies(|r| r.prefill), varies(|r| r.cached), varies(Row::attention))
}

/// Fit the rows (at least one) with `loss`, to the default tolerance; the attention column is
/// fitted when `attention` is set.
pub fn fit(rows: &[Row], loss: Loss, attention: bool) -> Coefs {
    fit_with(rows, loss, attention, None, TOLERANCE)
}

/// The design of `rows`, each column scaled to mean 1 (token counts are ~1e5, products ~1e10,
/// coefficients ~1e-5: scaling keeps the normal equations well conditioned); the scales and
/// which columns are fitted.
fn design(rows: &[Row], attention: bool) -> (Vec<Vector>, Vector, [bool; K]) {
    let (use_p, use_c, use_a) = identifiable(rows);
    let scale = |f: &dyn Fn(&Row) -> f64| {
        let m = rows.iter().map(f).sum::<f64>() / rows.len() as f64;
        if m > 0.0 {
            m
        } else {
            1.0
        }
    };
    let sc: Vector =
        [1.0, scale(&|r| r.prefill), scale(&|r| r.cached), scale(&|r: &Row| r.attention())];
    let x = rows
        .iter()
        .map(|r| [1.0, r.prefill / sc[1], r.cached / sc[2], r.attention() / sc[3]])
        .collect();
    (x, sc, [true, use_p, use_c, use_a && attention])
}

/// Fit the rows (at least one) with `loss`; IRLS starts from `start` when given (a bootstrap
/// refit starts from the full fit) and stops when the absolute loss improves by less than
/// `tolerance` (relative).
pub fn fit_with(
    rows: &[Row],
    loss: Loss,
    attention: bool,
    start: Option<&Coefs>,
    tolerance: f64,
) -> Coefs {
    assert!(!rows.is_empty(), "fit needs at least one row");
    let (x, sc, active) = design(rows, attention);
    let y: Vec<f64> = rows.iter().map(|r| r.ttft_s).collect();
    let mut beta = match (start, loss) {
        (Some(c), Loss::Absolute) => {
            let coef = [Some(c.overhead_s), c.s_per_prefill, c.s_per_cached, c.s_per_attention];
            std::array::from_fn(|j| {
                if active[j] {
                    coef[j].unwrap_or(0.0).max(0.0) * sc[j]
                } else {
                    0.0
                }
            })
        }
        _ => nnls(&x, &y, &vec![1.0; rows.len()], active),
    };
    if loss == Loss::Absolute {
        beta = irls(&x, &y, beta, active, tolerance);
    }
    let coef = |j: usize| active[j].then_some(beta[j] / sc[j]);
    Coefs {
        overhead_s: beta[0],
        s_per_prefill: coef(1),
        s_per_cached: coef(2),
        s_per_attention: if attention { coef(3) } else { None },
    }
}

/// Median regression from `beta` by iteratively reweighted non-negative least squares.
fn irls(x: &[Vector], y: &[f64], mut beta: Vector, active: [bool; K], tolerance: f64) -> Vector {
    let mut w = vec![1.0; y.len()];
    let mut best = abs_loss(x, y, &beta);
    for _ in 0..MAX_ITERATIONS {
        for ((wi, xi), yi) in w.iter_mut().zip(x).zip(y) {
            *wi = 1.0 / (yi - dot(xi, &beta)).abs().max(MIN_RESIDUAL_S);
        }
        let next = nnls(x, y, &w, active);
        let l = abs_loss(x, y, &next);
        if l > best * (1.0 - tolerance) {
            if l < best {
                beta = next;
            }
            break;
        }
        best = l;
        beta = next;
    }
    beta
}

fn dot(x: &Vector, b: &Vector) -> f64 {
    x.iter().zip(b).map(|(x, b)| x * b).sum()
}

fn abs_loss(x: &[Vector], y: &[f64], b: &Vector) -> f64 {
    x.iter().zip(y).map(|(xi, yi)| (yi - dot(xi, b)).abs()).sum()
}

/// Exact weighted non-negative least squares over the `active` columns: the optimum is the
/// unconstrained solution on its own support, so trying every support (at most 16) and keeping
/// the best feasible one finds it.
fn nnls(x: &[Vector], y: &[f64], w: &[f64], active: [bool; K]) -> Vector {
    // Weighted normal equations, accumulated once.
    let mut a = [[0.0; K]; K];
    let mut v = [0.0; K];
    for ((xi, yi), wi) in x.iter().zip(y).zip(w) {
        for j in 0..K {
            v[j] += wi * xi[j] * yi;
            for k in 0..K {
                a[j][k] += wi * xi[j] * xi[k];
            }
        }
    }
    let yy: f64 = y.iter().zip(w).map(|(yi, wi)| wi * yi * yi).sum();
    let mut best = ([0.0; K], yy);
    for mask in 1u8..(1 << K) {
        let cols: Vec<usize> = (0..K).filter(|&j| mask & (1 << j) != 0).collect();
        if cols.iter().any(|&j| !active[j]) {
            continue;
        }
        let Some(sol) = solve_subset(&a, &v, &cols) else { continue };
        if sol.iter().any(|&c| c < 0.0) {
            continue;
        }
        let mut beta = [0.0; K];
        for (&j, &c) in cols.iter().zip(&sol) {
            beta[j] = c;
        }
        // Weighted SSE = y'Wy - 2 b'v + b'Ab.
        let mut sse = yy;
        for j in 0..K {
            sse -= 2.0 * beta[j] * v[j];
            for k in 0..K {
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
fn solve_subset(a: &[Vector; K], v: &Vector, cols: &[usize]) -> Option<Vec<f64>> {
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
