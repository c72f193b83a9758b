//! One strategy at one point, aggregated over its replications: a `Stat` per scalar of
//! `SCALAR_NAMES`, each latency's samples counted in a histogram of its own (`counts::Counts`:
//! `metrics::new_histogram`'s buckets, counted and read through the buckets samples fell in),
//! and each latency's exact smallest and largest value (a histogram only knows its buckets'
//! edges, which can lie above a hold's cap: 2.000895 s for a 2 s cap).

use std::cell::Cell;

use hdrhistogram::Histogram;

use super::counts::{Counts, Layout};
use super::stats::{Stat, Welford};
use crate::metrics::{RunMetrics, Samples, LATENCY_BOUNDS, LATENCY_NAMES, SCALAR_NAMES};
use crate::time::secs;

/// The percentiles reported for every latency, with their column suffixes.
pub const PERCENTILES: [(f64, &str); 4] =
    [(0.50, "p50"), (0.90, "p90"), (0.99, "p99"), (0.999, "p999")];

/// Running aggregate: add runs in replication order, read stats at any time.
#[derive(Debug, Clone)]
pub struct Aggregate {
    scalars: [Welford; SCALAR_NAMES.len()],
    /// Latency histograms merged over replications, in `LATENCY_NAMES` order, all of
    /// `layout` (`metrics::new_histogram`'s).
    latencies: [Counts; LATENCY_NAMES.len()],
    /// Exact (min, max) of each latency in microseconds, `None` before its first sample.
    extremes: [Option<(u64, u64)>; LATENCY_NAMES.len()],
    /// Each latency's last `ladder_s`: the summary, the table and the result files each ask
    /// for every ladder. Cleared by every change.
    ladders: Cell<[Option<[f64; 5]>; LATENCY_NAMES.len()]>,
    layout: Layout,
}

impl Default for Aggregate {
    fn default() -> Self {
        Self::new()
    }
}

impl Aggregate {
    pub fn new() -> Self {
        let layout = latency_layout();
        Aggregate {
            scalars: [Welford::default(); SCALAR_NAMES.len()],
            latencies: std::array::from_fn(|_| Counts::new(&layout)),
            extremes: [None; LATENCY_NAMES.len()],
            ladders: Cell::new([None; LATENCY_NAMES.len()]),
            layout,
        }
    }

    /// Back to `new()`'s state, keeping the counts' memory: a sweep's worker reuses one
    /// aggregate for every strategy of every point. Only the buckets samples fell in are
    /// zeroed.
    pub fn reset(&mut self) {
        let Aggregate { scalars, latencies, extremes, ladders, layout: _ } = self;
        *scalars = [Welford::default(); SCALAR_NAMES.len()];
        latencies.iter_mut().for_each(Counts::clear);
        *extremes = [None; LATENCY_NAMES.len()];
        ladders.set([None; LATENCY_NAMES.len()]);
    }

    /// Add one replication (call in replication order).
    pub fn add(&mut self, run: &RunMetrics) {
        self.add_scalars(&run.scalars());
        self.add_samples(run.samples());
    }

    /// Count one replication's latency samples (in `LATENCY_NAMES` order), each in the bucket
    /// `Histogram::saturating_record` would count it in.
    pub fn add_samples(&mut self, samples: [&Samples; 3]) {
        self.add_values(samples.map(Samples::values));
    }

    /// `add_samples` of the values themselves.
    fn add_values(&mut self, values: [&[u64]; 3]) {
        self.ladders.set([None; LATENCY_NAMES.len()]);
        let layout = &self.layout;
        for ((counts, vs), ext) in self.latencies.iter_mut().zip(values).zip(&mut self.extremes) {
            let (mut lo, mut hi) = (u64::MAX, 0);
            for &v in vs {
                counts.record(layout.index_of(v));
                (lo, hi) = (lo.min(v), hi.max(v));
            }
            if !vs.is_empty() {
                widen(ext, (lo, hi));
            }
        }
    }

    /// Merge the latencies of `other` (counts and exact extremes) into this one. Counts are
    /// integers, so merging is exact and its order does not matter (unlike the scalars'
    /// floating-point sums, which `other` does not carry over).
    pub fn add_latencies(&mut self, other: &Aggregate) {
        self.ladders.set([None; LATENCY_NAMES.len()]);
        for (mine, theirs) in self.latencies.iter_mut().zip(&other.latencies) {
            mine.add(theirs);
        }
        for (mine, theirs) in self.extremes.iter_mut().zip(other.extremes) {
            if let Some(e) = theirs {
                widen(mine, e);
            }
        }
    }

    /// The layout of the latencies' counts and the counts, in `LATENCY_NAMES` order.
    pub fn counts(&self) -> (&Layout, &[Counts; LATENCY_NAMES.len()]) {
        (&self.layout, &self.latencies)
    }

    /// The latencies as `hdrhistogram` histograms (`metrics::new_histogram`'s bounds), in
    /// `LATENCY_NAMES` order: built from the counts at each call.
    pub fn histograms(&self) -> [Histogram<u64>; LATENCY_NAMES.len()] {
        std::array::from_fn(|i| self.latencies[i].histogram(&self.layout))
    }

    /// Add the scalars of one replication (for callers that keep no histograms).
    pub fn add_scalars(&mut self, scalars: &[f64; SCALAR_NAMES.len()]) {
        for (w, x) in self.scalars.iter_mut().zip(scalars) {
            w.add(*x);
        }
    }

    /// Replications added so far.
    pub fn replications(&self) -> u64 {
        self.scalars[0].count()
    }

    /// Stats in `SCALAR_NAMES` order.
    pub fn stats(&self) -> [Stat; SCALAR_NAMES.len()] {
        self.scalars.map(|w| w.stat())
    }

    /// The stat of the scalar called `name` (one of `SCALAR_NAMES`).
    pub fn stat(&self, name: &str) -> Stat {
        self.scalars[position(&SCALAR_NAMES, name, "SCALAR_NAMES")].stat()
    }

    /// p50, p90, p99, p99.9 and max of latency `index` (in `LATENCY_NAMES` order), in seconds,
    /// pooled over every sample of every replication (all 0 when there is none). The max is
    /// exact; a percentile is its histogram bucket's upper edge (within 0.1%), but never
    /// beyond the exact extremes.
    pub fn ladder_s(&self, index: usize) -> [f64; 5] {
        let mut ladders = self.ladders.get();
        if let Some(ladder) = ladders[index] {
            return ladder;
        }
        let Some((lo, hi)) = self.extremes[index] else {
            return [0.0; 5];
        };
        let [p50, p90, p99, p999] =
            self.quantiles(index, [0.50, 0.90, 0.99, 0.999]).map(|v| secs(v.clamp(lo, hi)));
        let ladder = [p50, p90, p99, p999, secs(hi)];
        ladders[index] = Some(ladder);
        self.ladders.set(ladders);
        ladder
    }

    /// Quantile `q` (in (0, 1]) of latency `index`, in seconds, as `ladder_s` reads its
    /// percentiles: the upper edge of its bucket, within the exact extremes (0 when empty).
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    pub fn quantile_s(&self, index: usize, q: f64) -> f64 {
        let Some((lo, hi)) = self.extremes[index] else {
            return 0.0;
        };
        let [v] = self.quantiles(index, [q]);
        secs(v.clamp(lo, hi))
    }

    /// `Histogram::value_at_quantiles` of latency `index` for `quantiles` (ascending, each in
    /// (0, 1]), in one walk of its counted buckets: the highest value of the first bucket
    /// whose running count reaches `ceil(q * total)` (at least 1). All 0 when it is empty.
    fn quantiles<const N: usize>(&self, index: usize, quantiles: [f64; N]) -> [u64; N] {
        let counts = &self.latencies[index];
        let total = counts.total();
        let targets = quantiles.map(|q| ((q.min(1.0) * total as f64).ceil() as u64).max(1));
        let (mut values, mut sum, mut next) = ([0; N], 0_u64, 0);
        for (bucket, count) in counts.iter() {
            sum = sum.saturating_add(count);
            while next < targets.len() && sum >= targets[next] {
                values[next] = self.layout.highest_equivalent(bucket);
                next += 1;
            }
        }
        values
    }

    /// The exact smallest value of latency `index`, in seconds (0 when there is none).
    pub fn min_s(&self, index: usize) -> f64 {
        self.extremes[index].map_or(0.0, |(lo, _)| secs(lo))
    }

    /// `ladder_s` of the latency called `name` (one of `LATENCY_NAMES`).
    pub fn ladder_of(&self, name: &str) -> [f64; 5] {
        self.ladder_s(position(&LATENCY_NAMES, name, "LATENCY_NAMES"))
    }
}

/// Where `name` is in `names` (`metrics::<list>`); a name not there is a bug of the caller.
fn position(names: &[&str], name: &str, list: &str) -> usize {
    let at = names.iter().position(|n| *n == name);
    at.unwrap_or_else(|| panic!("`{name}` is not one of metrics::{list}"))
}

/// The samples a `Batched` holds before it counts them (per latency): 32 KB.
const BATCH: usize = 1 << 12;

/// An `Aggregate` of many replications' latencies that counts their samples in batches: a
/// run's. Counted one replication at a time, nearly every sample's bucket was a cache miss
/// (the simulation in between had pushed the counts out), 7% of a fan-out run's cycles:
/// appended to a buffer, they are counted `BATCH` at a time, while the buckets stay in cache.
/// The counts are the same, in whatever order.
#[derive(Default)]
pub struct Batched {
    agg: Aggregate,
    pending: [Vec<u64>; LATENCY_NAMES.len()],
}

impl Batched {
    /// Take one replication's latency samples (in `LATENCY_NAMES` order).
    pub fn add_samples(&mut self, samples: [&Samples; 3]) {
        for (pending, s) in self.pending.iter_mut().zip(samples) {
            pending.extend_from_slice(s.values());
        }
        if self.pending.iter().any(|p| p.len() >= BATCH) {
            self.count();
        }
    }

    /// The aggregate of every sample taken.
    pub fn finish(mut self) -> Aggregate {
        self.count();
        self.agg
    }

    fn count(&mut self) {
        let [a, b, c] = &self.pending;
        self.agg.add_values([a, b, c]);
        self.pending.iter_mut().for_each(Vec::clear);
    }
}

/// The layout of `new_histogram`'s buckets.
fn latency_layout() -> Layout {
    let (low, high, sigfig) = LATENCY_BOUNDS;
    Layout::new(low, high, sigfig)
}

/// Widen `ext` to take in `(lo, hi)`.
fn widen(ext: &mut Option<(u64, u64)>, (lo, hi): (u64, u64)) {
    *ext = Some(ext.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::new_histogram;

    #[test]
    fn the_ladder_is_each_quantile_looked_up_alone() {
        // Samples spread over six decades, then one value, then two far apart: each rung is
        // what `value_at_quantile` alone gives it, within the exact extremes.
        let spreads: [&[u64]; 3] = [
            &[3, 40, 41, 500, 7_000, 80_000, 80_001, 900_000, 3_000_000],
            &[12_345],
            &[1, 9e9 as u64],
        ];
        for values in spreads {
            let mut run = RunMetrics::new();
            for (i, &us) in values.iter().enumerate() {
                for _ in 0..=i {
                    run.ttft_us.record(us);
                }
            }
            let mut a = Aggregate::new();
            a.add(&run);
            let i = LATENCY_NAMES.iter().position(|n| *n == "ttft").unwrap();
            let (h, (lo, hi)) = (&a.histograms()[i], a.extremes[i].unwrap());
            let alone =
                [0.50, 0.90, 0.99, 0.999].map(|q| secs(h.value_at_quantile(q).clamp(lo, hi)));
            assert_eq!(a.ladder_s(i)[..4], alone, "{values:?}");
        }
    }

    #[test]
    fn extremes_are_exact_and_bound_the_percentiles() {
        let mut run = RunMetrics::new();
        for us in [1_000_000, 2_000_000, 2_000_000] {
            run.launch_wait_us.record(us);
        }
        let (mut a, mut b) = (Aggregate::new(), Aggregate::new());
        a.add(&run);
        run.launch_wait_us.clear();
        run.launch_wait_us.record(999_999);
        b.add(&run);
        a.add_latencies(&b);
        // The histogram's edges: 2,000,895 us above 2 s, 999,936 us below 999,999 us.
        assert!(a.histograms()[0].max() > 2_000_000);
        let ladder = a.ladder_s(0);
        assert_eq!(ladder[4], 2.0);
        assert!(ladder.iter().all(|&x| x <= 2.0), "{ladder:?}");
        assert_eq!(a.min_s(0), 0.999_999);
        assert_eq!(Aggregate::new().ladder_s(0), [0.0; 5]);
    }

    /// A ladder asked for again is the one computed, and one asked for after any change is
    /// computed anew (as a fresh aggregate of the same runs computes it).
    #[test]
    fn a_ladder_follows_every_change() {
        let mut run = RunMetrics::new();
        let (mut a, mut same) = (Aggregate::new(), Aggregate::new());
        for (i, us) in [5_000, 1_000_000, 70_000_000, 3, 2_000_000].into_iter().enumerate() {
            run.ttft_us.record(us);
            for agg in [&mut a, &mut same] {
                agg.add(&run);
            }
            let fresh = same.clone();
            assert_eq!(a.ladder_s(1), Aggregate { ladders: Cell::default(), ..fresh }.ladder_s(1));
            assert_eq!(a.ladder_s(1), same.ladder_s(1), "step {i}");
        }
        let before = a.ladder_s(1);
        let mut late = RunMetrics::new();
        late.ttft_us.record(36_000_000_000);
        let mut other = Aggregate::new();
        (0..100).for_each(|_| other.add(&late));
        a.add_latencies(&other);
        assert_ne!(a.ladder_s(1)[0], before[0], "a merge");
        a.reset();
        assert_eq!(a.ladder_s(1), [0.0; 5]);
    }

    /// A latency's reference histogram and exact extremes.
    type Recorded = (Histogram<u64>, Option<(u64, u64)>);

    /// Each latency's histogram, as `Samples::record_into` records the runs' samples into
    /// histograms of `new_histogram` (the reference), with their exact extremes.
    fn recorded(runs: &[RunMetrics]) -> [Recorded; 3] {
        std::array::from_fn(|i| {
            let mut h = new_histogram();
            let mut ext = None;
            for run in runs {
                if let Some(range) = run.samples()[i].record_into(&mut h) {
                    widen(&mut ext, range);
                }
            }
            (h, ext)
        })
    }

    /// Runs of samples anywhere (0, the histogram's highest value and beyond included).
    fn runs() -> impl proptest::strategy::Strategy<Value = Vec<RunMetrics>> {
        use proptest::prelude::*;
        let value = prop_oneof![0_u64..3000, 0_u64..100_000_000, any::<u64>()];
        let run = prop::collection::vec(prop::collection::vec(value, 0..40), 3).prop_map(|v| {
            let mut run = RunMetrics::new();
            let latencies = [&mut run.launch_wait_us, &mut run.ttft_us, &mut run.completion_us];
            for (latency, values) in latencies.into_iter().zip(v) {
                values.into_iter().for_each(|x| latency.record(x));
            }
            run
        });
        prop::collection::vec(run, 1..6)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The counts hold what a histogram of the samples holds, however the runs arrive:
        /// added one by one, merged from two aggregates (one of them reset and reused), each
        /// ladder the values `value_at_quantiles` reads of that histogram.
        #[test]
        fn the_counts_are_the_histograms_of_the_samples(runs in runs(), split in 0_usize..6) {
            let want = recorded(&runs);
            let mut one = Aggregate::new();
            runs.iter().for_each(|r| one.add_samples(r.samples()));
            let (mut head, mut tail) = (Aggregate::new(), Aggregate::new());
            runs.iter().for_each(|r| tail.add_samples(r.samples()));
            tail.reset();
            let split = split.min(runs.len());
            runs[..split].iter().for_each(|r| head.add_samples(r.samples()));
            runs[split..].iter().for_each(|r| tail.add_samples(r.samples()));
            head.add_latencies(&tail);
            let quantiles = [0.50, 0.90, 0.99, 0.999];
            for a in [&one, &head] {
                let hists = a.histograms();
                for (i, (h, ext)) in want.iter().enumerate() {
                    proptest::prop_assert!(hists[i] == *h, "latency {}", i);
                    proptest::prop_assert_eq!(a.extremes[i], *ext);
                    let theirs: Vec<u64> = h.value_at_quantiles(quantiles).collect();
                    let ours = a.quantiles(i, quantiles);
                    proptest::prop_assert_eq!(&ours[..], if h.is_empty() { &[0; 4][..] } else { &theirs[..] });
                }
            }
        }
    }

    /// Samples taken in batches, whole batches and a part one, are counted as one by one.
    #[test]
    fn batched_samples_are_counted_as_added() {
        let (mut one, mut batched) = (Aggregate::new(), Batched::default());
        let mut x = 11_u64;
        for r in 0..(3 * BATCH / 40 + 7) {
            let mut run = RunMetrics::new();
            for _ in 0..(r % 81) {
                x = crate::rng::mix64(x);
                run.ttft_us.record(x % 50_000_000);
                run.launch_wait_us.record(x % 7);
            }
            run.completion_us.record(x >> (x % 64));
            one.add_samples(run.samples());
            batched.add_samples(run.samples());
        }
        let batched = batched.finish();
        assert_eq!(batched.latencies, one.latencies);
        assert_eq!(batched.extremes, one.extremes);
        assert!(one.latencies[1].total() > 2 * BATCH as u64, "more than two batches");
    }

    #[test]
    fn a_reset_aggregate_is_a_new_one() {
        let mut run = RunMetrics::new();
        for us in [0, 7, 1_000_000, 36_000_000_000_000] {
            run.launch_wait_us.record(us);
            run.ttft_us.record(us / 3);
        }
        run.completion_us.record(5);
        run.cost_usd = 2.5;
        let mut used = Aggregate::new();
        used.add(&run);
        used.add(&run);
        used.reset();
        let fresh = Aggregate::new();
        assert_eq!(used.latencies, fresh.latencies);
        assert_eq!(used.histograms(), fresh.histograms());
        assert_eq!(used.replications(), 0);
        assert_eq!((used.ladder_s(0), used.min_s(0)), ([0.0; 5], 0.0));
        // And it counts the next runs as a new one does: same stats, ladders, counts.
        run.makespan_us = 90_000_000;
        let mut again = Aggregate::new();
        for a in [&mut used, &mut again] {
            a.add(&run);
            run.cost_usd += 1.0;
            a.add(&run);
            run.cost_usd -= 1.0;
        }
        assert_eq!(used.stats(), again.stats());
        assert_eq!(used.latencies, again.latencies);
        for i in 0..LATENCY_NAMES.len() {
            assert_eq!(used.ladder_s(i), again.ladder_s(i));
            assert_eq!(used.min_s(i), again.min_s(i));
        }
    }
}
