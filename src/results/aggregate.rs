//! One strategy at one point, aggregated over its replications: a `Stat` per scalar of
//! `SCALAR_NAMES` and the latency histograms merged (in replication order).

use hdrhistogram::Histogram;

use super::stats::{Stat, Welford};
use crate::metrics::{new_histogram, RunMetrics, LATENCY_NAMES, SCALAR_NAMES};
use crate::time::secs;

/// The percentiles reported for every latency, with their column suffixes.
pub const PERCENTILES: [(f64, &str); 4] =
    [(0.50, "p50"), (0.90, "p90"), (0.99, "p99"), (0.999, "p999")];

/// Running aggregate: add runs in replication order, read stats at any time.
#[derive(Debug, Clone)]
pub struct Aggregate {
    scalars: [Welford; SCALAR_NAMES.len()],
    /// Latency histograms merged over replications, in `LATENCY_NAMES` order.
    pub histograms: [Histogram<u64>; LATENCY_NAMES.len()],
}

impl Default for Aggregate {
    fn default() -> Self {
        Self::new()
    }
}

impl Aggregate {
    pub fn new() -> Self {
        Aggregate {
            scalars: [Welford::default(); SCALAR_NAMES.len()],
            histograms: [new_histogram(), new_histogram(), new_histogram()],
        }
    }

    /// Add one replication (call in replication order).
    pub fn add(&mut self, run: &RunMetrics) {
        self.add_scalars(&run.scalars());
        self.add_histograms(run.histograms());
    }

    /// Merge latency histograms (in `LATENCY_NAMES` order). Counts are integers, so merging
    /// is exact and its order does not matter (unlike the scalars' floating-point sums).
    pub fn add_histograms<'h>(&mut self, hists: impl IntoIterator<Item = &'h Histogram<u64>>) {
        for (mine, theirs) in self.histograms.iter_mut().zip(hists) {
            mine.add(theirs).expect("latency histograms share one range (metrics::new_histogram)");
        }
    }

    /// Add the scalars of one replication (for callers that keep no histograms).
    pub fn add_scalars(&mut self, scalars: &[f64; SCALAR_NAMES.len()]) {
        for (w, x) in self.scalars.iter_mut().zip(scalars) {
            w.add(*x);
        }
    }

    /// Replications added so far.
    pub fn replications(&self) -> u64 {
        self.scalars[0].stat().n
    }

    /// Stats in `SCALAR_NAMES` order.
    pub fn stats(&self) -> [Stat; SCALAR_NAMES.len()] {
        self.scalars.map(|w| w.stat())
    }

    /// The stat of the scalar called `name` (one of `SCALAR_NAMES`).
    pub fn stat(&self, name: &str) -> Stat {
        let i = SCALAR_NAMES
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("`{name}` is not one of metrics::SCALAR_NAMES"));
        self.scalars[i].stat()
    }

    /// p50, p90, p99, p99.9 and max of latency `index` (in `LATENCY_NAMES` order), in seconds
    /// (all 0 for an empty histogram).
    pub fn ladder_s(&self, index: usize) -> [f64; 5] {
        let h = &self.histograms[index];
        if h.is_empty() {
            return [0.0; 5];
        }
        let q = |p: f64| secs(h.value_at_quantile(p));
        [q(0.50), q(0.90), q(0.99), q(0.999), secs(h.max())]
    }

    /// `ladder_s` of the latency called `name` (one of `LATENCY_NAMES`).
    pub fn ladder_of(&self, name: &str) -> [f64; 5] {
        let i = LATENCY_NAMES
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("`{name}` is not one of metrics::LATENCY_NAMES"));
        self.ladder_s(i)
    }
}
