//! How well a calibration predicts requests it was not fitted to: the k-fold check by session
//! (each fold predicted by a fit to the others) and the backtest on `--validate` files. Both
//! report the median absolute error of the point prediction and the share of measured TTFTs
//! above the predicted p50, p90, p95 and p99, a request's predicted quantile being its token
//! terms plus that quantile of the overhead distribution the simulator draws from. Pure.

use super::fit::{self, median, Coefs, Loss, Row};
use super::tail::{self, Spliced};

/// The 2024 launch figures (Claude 3.5 Sonnet, https://www.anthropic.com/news/prompt-caching;
/// derivation in `model::latency`): 500 ms, 9,100 prefilled tokens/s, 51,500 cached tokens/s.
pub const LAUNCH_2024_OVERHEAD_S: f64 = 0.5;
pub const LAUNCH_2024_PREFILL_RATE: f64 = 9_100.0;
pub const LAUNCH_2024_CACHED_RATE: f64 = 51_500.0;

/// The predicted quantiles whose exceedance is reported.
pub const EXCEED_PROBS: [f64; 4] = [0.5, 0.9, 0.95, 0.99];

/// Shares (0-1) of measured TTFTs above the predicted quantile at each of `EXCEED_PROBS`.
pub type Exceed = [f64; 4];

/// The k-fold check: median absolute errors and exceedance on requests of held-out sessions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeldOut {
    pub folds: usize,
    pub median_fit_s: f64,
    pub least_squares_s: f64,
    pub launch_2024_s: f64,
    pub exceed: Exceed,
}

/// The backtest of one model on the `--validate` files.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Validation {
    pub requests: usize,
    pub median_abs_error_s: f64,
    pub exceed: Exceed,
}

/// Counts toward `Exceed`: requests, and how many measured TTFTs were above each quantile.
#[derive(Default)]
struct Tally {
    n: usize,
    above: [usize; 4],
}

impl Tally {
    fn add(&mut self, rows: &[Row], coefs: &Coefs, overhead: &Spliced) {
        let q = EXCEED_PROBS.map(|p| overhead.quantile(p));
        for r in rows {
            let terms = coefs.per_token_s(r);
            for (above, q) in self.above.iter_mut().zip(q) {
                *above += usize::from(r.ttft_s > terms + q);
            }
        }
        self.n += rows.len();
    }
    fn shares(&self) -> Exceed {
        self.above.map(|a| a as f64 / self.n.max(1) as f64)
    }
}

/// k-fold by session (session `i` in fold `i mod k`): each fold's requests are predicted by
/// fits to the other folds (median fit, with the attention column when `attention`; least
/// squares; the 2024 figures), and by the median fit's overhead distribution from those folds.
pub fn held_out(sessions: &[Vec<Row>], folds: usize, attention: bool) -> Option<HeldOut> {
    let k = folds.min(sessions.len());
    if k < 2 {
        return None;
    }
    let (mut l1, mut l2, mut launch) = (Vec::new(), Vec::new(), Vec::new());
    let mut tally = Tally::default();
    for fold in 0..k {
        let part = |keep: bool| -> Vec<Row> {
            let chosen = sessions.iter().enumerate().filter(|(i, _)| (i % k == fold) != keep);
            chosen.flat_map(|(_, s)| s.iter().copied()).collect()
        };
        let (train, test) = (part(true), part(false));
        if train.is_empty() || test.is_empty() {
            continue;
        }
        let f1 = fit::fit(&train, Loss::Absolute, attention);
        let f2 = fit::fit(&train, Loss::Squared, attention);
        l1.extend(test.iter().map(|r| (r.ttft_s - f1.predict(r)).abs()));
        l2.extend(test.iter().map(|r| (r.ttft_s - f2.predict(r)).abs()));
        launch.extend(launch_errors(&test));
        let residuals: Vec<f64> = train.iter().map(|r| r.ttft_s - f1.predict(r)).collect();
        tally.add(&test, &f1, &tail::overhead(f1.overhead_s, &residuals));
    }
    (!l1.is_empty()).then(|| HeldOut {
        folds: k,
        median_fit_s: median(&mut l1),
        least_squares_s: median(&mut l2),
        launch_2024_s: median(&mut launch),
        exceed: tally.shares(),
    })
}

/// The backtest of a fit (`coefs`, `overhead`) on the timed requests `rows` of the
/// `--validate` files.
pub fn backtest(rows: &[Row], coefs: &Coefs, overhead: &Spliced) -> Validation {
    let mut tally = Tally::default();
    tally.add(rows, coefs, overhead);
    let mut abs: Vec<f64> = rows.iter().map(|r| (r.ttft_s - coefs.predict(r)).abs()).collect();
    Validation {
        requests: rows.len(),
        median_abs_error_s: median(&mut abs),
        exceed: tally.shares(),
    }
}

/// Absolute errors of the 2024 launch figures on `rows`.
pub fn launch_errors(rows: &[Row]) -> Vec<f64> {
    rows.iter()
        .map(|r| {
            let predicted = LAUNCH_2024_OVERHEAD_S
                + r.prefill / LAUNCH_2024_PREFILL_RATE
                + r.cached / LAUNCH_2024_CACHED_RATE;
            (r.ttft_s - predicted).abs()
        })
        .collect()
}
