//! One strategy at one point, aggregated over its replications: a `Stat` per scalar of
//! `SCALAR_NAMES`, the latency histograms merged (in replication order) and each latency's
//! exact smallest and largest value (a histogram only knows its buckets' edges, which can lie
//! above a hold's cap: 2.000895 s for a 2 s cap), and the set of buckets each latency's
//! samples fell in, from which the result files encode the histograms (`v2::encode`) without
//! walking their 27,648 counts.

use std::cell::Cell;

use hdrhistogram::Histogram;

use super::stats::{Stat, Welford};
use super::v2::{Layout, Touched};
use crate::metrics::{new_histogram, RunMetrics, Samples, LATENCY_NAMES, SCALAR_NAMES};
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
    /// Exact (min, max) of each latency in microseconds, `None` before its first sample.
    extremes: [Option<(u64, u64)>; LATENCY_NAMES.len()],
    /// Each latency's last `ladder_s`, with its histogram's sample count then: a ladder is
    /// four scans of a histogram's 27,648 counts, and the summary, the table and the result
    /// files each ask for every ladder. Cleared by every change made here; the count also
    /// catches a change made to `histograms` directly.
    ladders: Cell<[Option<Ladder>; LATENCY_NAMES.len()]>,
    /// The buckets of `histograms` (all of one layout) that samples were recorded in. A
    /// change made to `histograms` directly is not marked here; `v2::encode` notices it.
    touched: [Touched; LATENCY_NAMES.len()],
    layout: Layout,
    /// Whether `add_samples` marks `touched` (`untracked`: it does not, and the histograms are
    /// then encoded and read by walking their counts).
    tracks: bool,
}

/// A latency's ladder (`Aggregate::ladder_s`) and its histogram's sample count when computed.
type Ladder = (u64, [f64; 5]);

impl Default for Aggregate {
    fn default() -> Self {
        Self::new()
    }
}

impl Aggregate {
    pub fn new() -> Self {
        let histograms = [new_histogram(), new_histogram(), new_histogram()];
        let layout = Layout::of(&histograms[0]);
        Aggregate {
            scalars: [Welford::default(); SCALAR_NAMES.len()],
            histograms,
            extremes: [None; LATENCY_NAMES.len()],
            ladders: Cell::new([None; LATENCY_NAMES.len()]),
            touched: std::array::from_fn(|_| Touched::new(&layout)),
            layout,
            tracks: true,
        }
    }

    /// `new`, for an aggregate of many replications whose histograms are read a few times:
    /// a run's. Marking each sample's bucket cost about 16 instructions a sample (2.5% of a
    /// fan-out run), to save walks of the counts a run makes a handful of times.
    pub fn untracked() -> Self {
        Aggregate { tracks: false, ..Self::new() }
    }

    /// Back to `new()`'s state, keeping the histograms' memory: a sweep's worker reuses one
    /// aggregate for every strategy of every point. A reset zeroes the 216 KB of counters in
    /// place; `new` zeroes as much in freshly allocated memory (an allocation, and page faults
    /// when the allocator maps it), three histograms per strategy per point.
    pub fn reset(&mut self) {
        let Aggregate { scalars, histograms, extremes, ladders, touched, layout: _, tracks: _ } =
            self;
        *scalars = [Welford::default(); SCALAR_NAMES.len()];
        histograms.iter_mut().for_each(Histogram::reset);
        *extremes = [None; LATENCY_NAMES.len()];
        ladders.set([None; LATENCY_NAMES.len()]);
        touched.iter_mut().for_each(Touched::clear);
    }

    /// Add one replication (call in replication order).
    pub fn add(&mut self, run: &RunMetrics) {
        self.add_scalars(&run.scalars());
        self.add_samples(run.samples());
    }

    /// Record one replication's latency samples (in `LATENCY_NAMES` order) into the histograms.
    pub fn add_samples(&mut self, samples: [&Samples; 3]) {
        self.ladders.set([None; LATENCY_NAMES.len()]);
        for ((h, s), ext) in self.histograms.iter_mut().zip(samples).zip(&mut self.extremes) {
            if let Some(range) = s.record_into(h) {
                widen(ext, range);
            }
        }
        if !self.tracks {
            return;
        }
        for (touched, s) in self.touched.iter_mut().zip(samples) {
            for &v in s.values() {
                touched.insert(self.layout.index_of(v));
            }
        }
    }

    /// Merge the latencies of `other` (histograms and exact extremes) into this one. Counts
    /// are integers, so merging is exact and its order does not matter (unlike the scalars'
    /// floating-point sums, which `other` does not carry over).
    pub fn add_latencies(&mut self, other: &Aggregate) {
        self.ladders.set([None; LATENCY_NAMES.len()]);
        for (mine, theirs) in self.histograms.iter_mut().zip(&other.histograms) {
            mine.add(theirs).expect("latency histograms share one range (metrics::new_histogram)");
        }
        for (mine, theirs) in self.extremes.iter_mut().zip(other.extremes) {
            if let Some(e) = theirs {
                widen(mine, e);
            }
        }
        for (mine, theirs) in self.touched.iter_mut().zip(&other.touched) {
            mine.union(theirs);
        }
    }

    /// The layout of `histograms` and the buckets of each that samples were recorded in, for
    /// `v2::encode`.
    pub fn touched(&self) -> (&Layout, &[Touched; LATENCY_NAMES.len()]) {
        (&self.layout, &self.touched)
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
        let i = SCALAR_NAMES
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("`{name}` is not one of metrics::SCALAR_NAMES"));
        self.scalars[i].stat()
    }

    /// p50, p90, p99, p99.9 and max of latency `index` (in `LATENCY_NAMES` order), in seconds,
    /// pooled over every sample of every replication (all 0 when there is none). The max is
    /// exact; a percentile is its histogram bucket's upper edge (within 0.1%), but never
    /// beyond the exact extremes.
    pub fn ladder_s(&self, index: usize) -> [f64; 5] {
        let h = &self.histograms[index];
        let mut ladders = self.ladders.get();
        if let Some((count, ladder)) = ladders[index] {
            if count == h.len() {
                return ladder;
            }
        }
        let Some((lo, hi)) = self.extremes[index].filter(|_| !h.is_empty()) else {
            return [0.0; 5];
        };
        // One walk of the counts for the four (sorted) quantiles: `value_at_quantiles` gives
        // each what `value_at_quantile` gives it; `quantiles` walks the touched buckets only.
        let quantiles = [0.50, 0.90, 0.99, 0.999];
        let values = self.quantiles(index, quantiles).unwrap_or_else(|| {
            let mut values = [0; 4];
            values.iter_mut().zip(h.value_at_quantiles(quantiles)).for_each(|(at, v)| *at = v);
            values
        });
        let mut ladder = [0.0, 0.0, 0.0, 0.0, secs(hi)];
        for (at, v) in ladder.iter_mut().zip(values) {
            *at = secs(v.clamp(lo, hi));
        }
        ladders[index] = Some((h.len(), ladder));
        self.ladders.set(ladders);
        ladder
    }

    /// `value_at_quantiles` of the histogram of latency `index` for `quantiles` (ascending,
    /// each in (0, 1]), read from its touched buckets; `None` when they do not hold all of its
    /// counts (a change made to it directly) or it is empty.
    fn quantiles(&self, index: usize, quantiles: [f64; 4]) -> Option<[u64; 4]> {
        let h = &self.histograms[index];
        let targets = quantiles.map(|q| ((q.min(1.0) * h.len() as f64).ceil() as u64).max(1));
        let (mut found, mut sum) = ([None; 4], 0_u64);
        let mut next = 0;
        for (bucket, count) in self.touched[index].counts(h, &self.layout) {
            sum = sum.checked_add(count)?;
            while next < targets.len() && sum >= targets[next] {
                found[next] = Some(bucket);
                next += 1;
            }
        }
        // As in `v2::encode`: equal sums of non-negative counts, so no bucket was left out.
        if sum != h.len() || sum == u64::MAX {
            return None;
        }
        let mut values = [0; 4];
        for (at, bucket) in values.iter_mut().zip(found) {
            *at = h.highest_equivalent(self.layout.value_for(bucket?));
        }
        Some(values)
    }

    /// The exact smallest value of latency `index`, in seconds (0 when there is none).
    pub fn min_s(&self, index: usize) -> f64 {
        self.extremes[index].map_or(0.0, |(lo, _)| secs(lo))
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

/// Widen `ext` to take in `(lo, hi)`.
fn widen(ext: &mut Option<(u64, u64)>, (lo, hi): (u64, u64)) {
    *ext = Some(ext.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::v2::{self, NotEncoded};

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
            let (h, (lo, hi)) = (&a.histograms[i], a.extremes[i].unwrap());
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
        assert!(a.histograms[0].max() > 2_000_000);
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
        a.add_latencies(&same);
        assert_eq!(a.ladder_s(1)[4], before[4]);
        a.histograms[1].saturating_record_n(36_000_000_000, 100);
        assert_ne!(a.ladder_s(1)[0], before[0], "a change made to the histogram directly");
        a.reset();
        assert_eq!(a.ladder_s(1), [0.0; 5]);
    }

    /// The V2 encoding of every histogram, as the result files hold them.
    fn encoded(a: &Aggregate) -> Vec<Vec<u8>> {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut s = V2Serializer::new();
        let mut encode = |h: &Histogram<u64>| {
            let mut bytes = Vec::new();
            s.serialize(h, &mut bytes).expect("serialising to memory succeeds");
            bytes
        };
        a.histograms.iter().map(&mut encode).collect()
    }

    /// Each histogram's V2 encoding from the touched buckets, when they cover its counts.
    fn from_touched(a: &Aggregate) -> Vec<Result<Vec<u8>, NotEncoded>> {
        let (layout, touched) = a.touched();
        let encode = |(h, t)| {
            let mut bytes = Vec::new();
            v2::encode(h, layout, t, &mut bytes).map(|()| bytes)
        };
        a.histograms.iter().zip(touched).map(encode).collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The ladder's quantiles read from the touched buckets are `value_at_quantiles`'.
        #[test]
        fn quantiles_of_the_touched_buckets_are_value_at_quantiles(
            values in proptest::collection::vec(
                proptest::prop_oneof![
                    0_u64..3000,
                    0_u64..100_000_000,
                    proptest::prelude::any::<u64>()
                ],
                1..300,
            ),
            repeat in 1_usize..4,
        ) {
            let mut run = RunMetrics::new();
            values.iter().for_each(|&v| run.ttft_us.record(v));
            let mut a = Aggregate::new();
            (0..repeat).for_each(|_| a.add(&run));
            let quantiles = [0.50, 0.90, 0.99, 0.999];
            let theirs: Vec<u64> = a.histograms[1].value_at_quantiles(quantiles).collect();
            proptest::prop_assert_eq!(a.quantiles(1, quantiles).map(Vec::from), Some(theirs));
        }
    }

    /// An untracked aggregate marks no bucket: its histograms, ladders and the bytes written
    /// of it are a tracked one's, by walks of the counts; merged into a tracked one, it
    /// leaves the touched buckets short, and they are not used.
    #[test]
    fn an_untracked_aggregate_reads_and_writes_as_a_tracked_one() {
        let (mut tracked, mut untracked) = (Aggregate::new(), Aggregate::untracked());
        let mut run = RunMetrics::new();
        for us in [0, 3, 2_049, 70_000, 1_000_000, 36_000_000_000_000] {
            run.ttft_us.record(us);
            run.completion_us.record(us * 3 + 1);
            tracked.add(&run);
            untracked.add(&run);
        }
        assert_eq!(encoded(&tracked), encoded(&untracked));
        for i in 0..3 {
            assert_eq!(tracked.ladder_s(i), untracked.ladder_s(i), "latency {i}");
        }
        let bytes = |a: &Aggregate| super::super::write::aggregate_intervals(0, "s", a);
        assert_eq!(bytes(&tracked), bytes(&untracked));
        assert_eq!(from_touched(&untracked)[1], Err(NotEncoded::Uncovered));
        let mut other = Aggregate::untracked();
        run.ttft_us.record(123_456_789);
        other.add(&run);
        tracked.add_latencies(&other);
        assert_eq!(from_touched(&tracked)[1], Err(NotEncoded::Uncovered));
        assert_eq!(
            bytes(&tracked),
            super::super::write::histogram_intervals(0, "s", &tracked.histograms)
        );
    }

    /// The touched buckets follow every sample added, merged or reset: the histograms encode
    /// from them, to the bytes of a walk of their counts. A change made to the histograms
    /// directly leaves them short, and the encoding says so.
    #[test]
    fn the_touched_buckets_cover_every_count() {
        let covered =
            |a: &Aggregate| from_touched(a) == encoded(a).into_iter().map(Ok).collect::<Vec<_>>();
        let mut run = RunMetrics::new();
        let (mut a, mut b) = (Aggregate::new(), Aggregate::new());
        for us in [0, 1, 2047, 2048, 5_000, 1_000_000, 36_000_000_000, 36_000_000_000_000] {
            run.launch_wait_us.record(us);
            run.completion_us.record(us / 7 + 3);
            a.add(&run);
            b.add(&run);
            assert!(covered(&a), "{us}");
        }
        b.add_samples([&run.ttft_us, &run.launch_wait_us, &run.completion_us]);
        a.add_latencies(&b);
        assert!(covered(&a));
        a.histograms[2].record(77).unwrap();
        assert_eq!(from_touched(&a)[2], Err(NotEncoded::Uncovered));
        assert_eq!(a.quantiles(2, [0.5, 0.9, 0.99, 0.999]), None);
        assert_eq!(Aggregate::new().quantiles(2, [0.5, 0.9, 0.99, 0.999]), None);
        a.reset();
        assert!(covered(&a));
        a.add(&run);
        assert!(covered(&a));
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
        assert_eq!(encoded(&used), encoded(&fresh));
        assert_eq!(used.histograms, fresh.histograms);
        assert_eq!(used.replications(), 0);
        assert_eq!((used.ladder_s(0), used.min_s(0)), ([0.0; 5], 0.0));
        // And it counts the next runs as a new one does: same stats, ladders, bytes.
        run.makespan_us = 90_000_000;
        let mut again = Aggregate::new();
        for a in [&mut used, &mut again] {
            a.add(&run);
            run.cost_usd += 1.0;
            a.add(&run);
            run.cost_usd -= 1.0;
        }
        assert_eq!(used.stats(), again.stats());
        assert_eq!(encoded(&used), encoded(&again));
        for i in 0..LATENCY_NAMES.len() {
            assert_eq!(used.ladder_s(i), again.ladder_s(i));
            assert_eq!(used.min_s(i), again.min_s(i));
            assert_eq!(used.histograms[i].max(), again.histograms[i].max());
            assert_eq!(used.histograms[i].min_nz(), again.histograms[i].min_nz());
        }
    }
}
