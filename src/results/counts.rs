//! The latency histograms prefixsim records, merges and writes: bucket counts in HdrHistogram's
//! layout (`Counts`), with the set of buckets ever counted in, and their HdrHistogram V2
//! encoding written from that set (`encode`: the bytes of `hdrhistogram`'s `V2Serializer` for
//! the histogram `Counts::histogram` yields, which is what readers decode).
//!
//! An aggregate records a few hundred samples per replication into histograms of 27,648
//! buckets (a microsecond to ten hours at three significant digits), of which a point's or a
//! run's touch a few hundred. `hdrhistogram::Histogram` is the format's reference but a costly
//! home for that: a new histogram zeroes 216 KB, a reset zeroes them again, and its serializer
//! zeroes nine bytes per bucket up to the largest value's and reads every count on the way
//! (written through the crate, a 100-point sweep took 2.4x the instructions). `Counts` keeps
//! the counts in memory the allocator hands out zeroed (pages are mapped as samples reach
//! them), counts a sample in its bucket and the bucket's bit in `Touched`, and reads, merges,
//! clears and encodes through the touched buckets only.
//!
//! The format (HdrHistogram's V2, `v2_serializer.rs`): big-endian cookie, payload length,
//! normalizing offset (0), significant digits, lowest and highest trackable value and the
//! integer-to-double ratio (1.0), then the counts from bucket 0 to the largest value's bucket as
//! ZigZag LEB128 (at most 9 bytes, the ninth a whole byte), a run of k > 1 empty buckets written
//! as the count -k.

use hdrhistogram::Histogram;

/// HdrHistogram's cookie of an uncompressed V2 encoding (`V2_COOKIE`).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;

/// The bytes before the counts: cookie, length, offset, digits, low, high, ratio.
pub const V2_HEADER_SIZE: usize = 40;

/// Where a histogram puts a value: its bucket index, the same arithmetic as `hdrhistogram`'s
/// private `index_for` and `value_for` for the histogram's lowest discernible value and
/// significant digits (computed as `Histogram::new_with_bounds` computes them), and the bounds
/// its encoding's header carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    unit_magnitude: u32,
    half_count_magnitude: u32,
    half_count: usize,
    sub_bucket_mask: u64,
    leading_zero_count_base: u32,
    /// The number of buckets (`distinct_values`).
    len: usize,
    /// The bucket of the highest trackable value, where a saturating record puts a value whose
    /// own bucket is beyond the counts.
    high_index: usize,
    sigfig: u8,
    low: u64,
    high: u64,
}

impl Layout {
    /// The layout of `h`.
    pub fn of(h: &Histogram<u64>) -> Layout {
        Layout::new(h.low(), h.high(), h.sigfig())
    }

    /// The layout of `Histogram::new_with_bounds(low, high, sigfig)` (valid bounds), without
    /// making one: a histogram zeroes its counts (216 KB for the latencies'), and freeing
    /// them raises the allocator's threshold for fresh zeroed pages, so the `Counts` made
    /// next would be zeroed by hand, every page touched.
    pub fn new(low: u64, high: u64, sigfig: u8) -> Layout {
        let largest = 2 * 10_u32.pow(u32::from(sigfig));
        let unit_magnitude = (low as f64).log2().floor() as u32;
        let count_magnitude = f64::from(largest).log2().ceil() as u32;
        let half_count = 1_usize << (count_magnitude - 1);
        let mut layout = Layout {
            unit_magnitude,
            half_count_magnitude: count_magnitude - 1,
            half_count,
            sub_bucket_mask: ((1_u64 << count_magnitude) - 1) << unit_magnitude,
            leading_zero_count_base: 64 - unit_magnitude - count_magnitude,
            len: (buckets_to_cover(high, count_magnitude, unit_magnitude) + 1) * half_count,
            high_index: 0,
            sigfig,
            low,
            high,
        };
        layout.high_index = layout.index_for(high);
        layout
    }

    /// The bucket of `value` (which may lie beyond the counts).
    fn index_for(&self, value: u64) -> usize {
        let bucket = self.leading_zero_count_base - (value | self.sub_bucket_mask).leading_zeros();
        let sub_bucket = (value >> (bucket + self.unit_magnitude)) as usize;
        ((bucket as usize + 1) << self.half_count_magnitude) + sub_bucket - self.half_count
    }

    /// The bucket `Histogram::saturating_record` counts `value` in.
    #[inline]
    pub fn index_of(&self, value: u64) -> usize {
        let index = self.index_for(value);
        if index < self.len {
            index
        } else {
            self.high_index
        }
    }

    /// The lowest value of bucket `index`.
    pub fn value_for(&self, index: usize) -> u64 {
        let (sub_bucket, shift) = self.split(index);
        (sub_bucket as u64) << shift
    }

    /// The highest value of bucket `index` (`Histogram::highest_equivalent` of its values).
    pub fn highest_equivalent(&self, index: usize) -> u64 {
        let (sub_bucket, shift) = self.split(index);
        let lowest = (sub_bucket as u64) << shift;
        // As `next_non_equivalent`: the next bucket's lowest value, saturating, less one.
        lowest.saturating_add(1 << shift) - 1
    }

    /// Bucket `index` as its sub-bucket and the shift of its values' unit.
    fn split(&self, index: usize) -> (usize, u32) {
        let bucket = (index >> self.half_count_magnitude) as u32;
        let sub_bucket = (index & (self.half_count - 1)) + self.half_count;
        match bucket.checked_sub(1) {
            Some(b) => (sub_bucket, b + self.unit_magnitude),
            None => (sub_bucket - self.half_count, self.unit_magnitude),
        }
    }
}

/// How many buckets of `2^count_magnitude` sub-buckets a histogram of unit `2^unit_magnitude`
/// needs to count `high` (hdrhistogram's `buckets_to_cover`, one more when doubling would
/// pass `u64::MAX`).
fn buckets_to_cover(high: u64, count_magnitude: u32, unit_magnitude: u32) -> usize {
    let mut smallest_untrackable = 1_u64 << (count_magnitude + unit_magnitude);
    let mut buckets = 1;
    while smallest_untrackable <= high {
        if smallest_untrackable > u64::MAX / 2 {
            return buckets + 1;
        }
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    buckets
}

/// A set of bucket indices: the buckets `Counts` ever counted in since it was cleared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Touched {
    words: Vec<u64>,
}

impl Touched {
    /// An empty set for the buckets of `layout`.
    fn new(layout: &Layout) -> Touched {
        Touched { words: vec![0; layout.len.div_ceil(64)] }
    }

    #[inline]
    fn insert(&mut self, index: usize) {
        self.words[index / 64] |= 1 << (index % 64);
    }

    /// The indices, ascending.
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + bit
                })
            })
        })
    }
}

/// One latency's histogram: the counts of the buckets of a `Layout` (what
/// `Histogram::saturating_record` counts, saturating at `u64::MAX` as it does), their total and
/// the set of buckets counted in. Every count outside that set is zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    counts: Vec<u64>,
    touched: Touched,
    total: u64,
}

impl Counts {
    /// No counts, for the buckets of `layout`: the zeroed counts of a `Counts` this thread
    /// dropped, else allocated zeroed (`vec![0; n]` asks the allocator for zeroed memory:
    /// fresh pages, mapped when first counted in).
    pub fn new(layout: &Layout) -> Counts {
        let kept = SPARE_COUNTS.with_borrow_mut(|spare| {
            let at = spare.iter().rposition(|c| c.len() == layout.len)?;
            Some(spare.swap_remove(at))
        });
        let counts = kept.unwrap_or_else(|| vec![0; layout.len]);
        Counts { counts, touched: Touched::new(layout), total: 0 }
    }

    /// Count one sample in bucket `index` (`Layout::index_of`).
    #[inline]
    pub fn record(&mut self, index: usize) {
        self.counts[index] = self.counts[index].saturating_add(1);
        self.touched.insert(index);
        self.total = self.total.saturating_add(1);
    }

    /// Add the counts of `other` (of the same layout).
    pub fn add(&mut self, other: &Counts) {
        for (index, count) in other.iter() {
            self.counts[index] = self.counts[index].saturating_add(count);
            self.touched.insert(index);
        }
        self.total = self.total.saturating_add(other.total);
    }

    /// Back to no counts, zeroing the touched buckets only.
    pub fn clear(&mut self) {
        for index in self.touched.iter() {
            self.counts[index] = 0;
        }
        self.touched.words.fill(0);
        self.total = 0;
    }

    /// The number of samples counted (`Histogram::len`).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The non-zero counts, ascending: (bucket, count).
    pub fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let counts = self.touched.iter().map(|index| (index, self.counts[index]));
        counts.filter(|&(_, count)| count != 0)
    }

    /// The highest non-empty bucket, `None` when there is none.
    pub fn last(&self) -> Option<usize> {
        let (w, &word) = self.touched.words.iter().enumerate().rev().find(|(_, &w)| w != 0)?;
        Some(w * 64 + 63 - word.leading_zeros() as usize)
    }

    /// `Histogram::max` of these counts: the highest value of the highest non-empty bucket
    /// (0 when there is none). Above a lowest discernible value of 1, bucket 0 holds values
    /// from 0 to the unit, and a histogram's max is 0 when 0 is all it counted there; it is
    /// the histogram's otherwise.
    pub fn max(&self, layout: &Layout) -> u64 {
        self.last().map_or(0, |index| layout.highest_equivalent(index))
    }

    /// The `hdrhistogram::Histogram` of these counts (`layout` is theirs). For a lowest
    /// discernible value of 1 (the latencies') it equals the histogram the samples themselves
    /// were recorded in; above 1, its smallest non-zero value may differ (bucket 0 then holds
    /// values from 0 to the unit, which a histogram of the samples tells apart).
    pub fn histogram(&self, layout: &Layout) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(layout.low, layout.high, layout.sigfig)
            .expect("a layout is made of a histogram's valid bounds");
        for (index, count) in self.iter() {
            h.saturating_record_n(layout.value_for(index), count);
        }
        h
    }
}

/// How many dropped `Counts` buffers a thread keeps for the next `Counts::new` (216 KB each
/// for the latencies'): a run's or a library caller's aggregates come and go with each run,
/// and a fresh buffer from the allocator, once it has recycled freed ones, is zeroed in full
/// and its pages faulted in again.
const SPARE_COUNTS_KEPT: usize = 32;

thread_local! {
    /// Zeroed count buffers of dropped `Counts`, for `Counts::new`.
    static SPARE_COUNTS: std::cell::RefCell<Vec<Vec<u64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for Counts {
    /// Zero the counted buckets and keep the buffer for this thread's next `Counts::new`.
    fn drop(&mut self) {
        self.clear();
        let counts = std::mem::take(&mut self.counts);
        // `try_with`: a `Counts` dropped while the thread's own storage is torn down frees.
        let _ = SPARE_COUNTS.try_with(|spare| {
            if let Ok(mut spare) = spare.try_borrow_mut() {
                if spare.len() < SPARE_COUNTS_KEPT {
                    spare.push(counts);
                }
            }
        });
    }
}

/// A count above `i64::MAX`, which V2 cannot write (`V2Serializer` refuses it too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountTooLarge;

/// Append the V2 encoding of `counts` (of layout `layout`) to `out`: the bytes `V2Serializer`
/// writes of `counts.histogram(layout)`. On an error `out` is left as it was.
pub fn encode(layout: &Layout, counts: &Counts, out: &mut Vec<u8>) -> Result<(), CountTooLarge> {
    let start = out.len();
    out.extend_from_slice(&V2_COOKIE.to_be_bytes());
    out.extend_from_slice(&[0; 8]); // the length (set below), the normalizing offset
    out.extend_from_slice(&u32::from(layout.sigfig).to_be_bytes());
    out.extend_from_slice(&layout.low.to_be_bytes());
    out.extend_from_slice(&layout.high.to_be_bytes());
    out.extend_from_slice(&1.0_f64.to_be_bytes());
    // `V2Serializer` writes up to the bucket of `max()` (bucket 0 when empty).
    let last = counts.last().unwrap_or(0);
    let mut next = 0;
    for (index, count) in counts.iter() {
        skip(index - next, out);
        let Ok(count) = i64::try_from(count) else {
            out.truncate(start);
            return Err(CountTooLarge);
        };
        varint(zig_zag(count), out);
        next = index + 1;
    }
    skip(last + 1 - next, out);
    let counts_len = out.len() - start - V2_HEADER_SIZE;
    let counts_len = u32::try_from(counts_len).expect("9 bytes a bucket at most: far below 4 GiB");
    out[start + 4..start + 8].copy_from_slice(&counts_len.to_be_bytes());
    Ok(())
}

/// `zeros` empty buckets: one is the count 0, a run of more the count -run.
fn skip(zeros: usize, out: &mut Vec<u8>) {
    match zeros {
        0 => {}
        1 => out.push(0),
        // A run is shorter than the counts, far below 2^63.
        run => varint(zig_zag(-(run as i64)), out),
    }
}

fn zig_zag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// LEB128 in at most 9 bytes: eight 7-bit groups, then the top byte whole.
fn varint(mut x: u64, out: &mut Vec<u8>) {
    for _ in 0..8 {
        if x < 0x80 {
            out.push(x as u8);
            return;
        }
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    use proptest::prelude::*;

    /// The bounds of the histograms tested: the latencies' (`metrics::new_histogram`), the
    /// interval log's, a coarse one with a unit above 1, a fine one and one to `u64::MAX`.
    const BOUNDS: [(u64, u64, u8); 5] = [
        (1, 36_000_000_000, 3),
        (1, 3_600_000_000, 3),
        (1000, 1 << 40, 2),
        (3, 1 << 36, 4),
        (1, u64::MAX, 1),
    ];

    /// Values and counts to record, with a choice of `BOUNDS`: a few values anywhere (0,
    /// `low`, `high` and beyond included) with counts up to a sixteenth of `i64::MAX` (whose
    /// sum, even in one bucket, V2 can write), runs of neighbouring values, or nothing.
    pub(crate) fn recordings() -> impl Strategy<Value = (usize, Vec<(u64, u64)>)> {
        let value = prop_oneof![
            Just(0_u64),
            Just(1),
            Just(1000),
            0_u64..5_000,
            any::<u64>(),
            (0_u32..64).prop_flat_map(|bits| 0..=(1_u64 << bits)),
        ];
        let count = prop_oneof![8 => 1_u64..4, 1 => any::<u32>().prop_map(u64::from)];
        let huge = prop_oneof![3 => count.clone(), 1 => Just(i64::MAX as u64 / 16)];
        let sparse = prop::collection::vec((value.clone(), huge), 0..12);
        let dense = (value, 1_u64..3000, count).prop_map(|(start, n, c)| {
            (0..n).map(|i| (start.saturating_add(i), c)).collect::<Vec<_>>()
        });
        (0..BOUNDS.len(), prop_oneof![sparse, dense])
    }

    /// Count `n` samples in bucket `index`: `record` `n` times.
    fn record_n(counts: &mut Counts, index: usize, n: u64) {
        counts.record(index);
        counts.counts[index] = counts.counts[index].saturating_add(n - 1);
        counts.total = counts.total.saturating_add(n - 1);
    }

    /// A histogram of `BOUNDS[bounds]` with `values` recorded (saturating, as `Samples` does)
    /// and the counts of the same values.
    pub(crate) fn recorded(
        bounds: usize,
        values: &[(u64, u64)],
    ) -> (Histogram<u64>, Layout, Counts) {
        let (low, high, sigfig) = BOUNDS[bounds];
        let mut h = Histogram::new_with_bounds(low, high, sigfig).unwrap();
        let layout = Layout::of(&h);
        let mut counts = Counts::new(&layout);
        for &(v, n) in values {
            h.saturating_record_n(v, n);
            record_n(&mut counts, layout.index_of(v), n);
        }
        (h, layout, counts)
    }

    fn theirs(h: &Histogram<u64>) -> Vec<u8> {
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(h, &mut bytes).unwrap();
        bytes
    }

    /// Each bucket's count, its total and its max, as `h` has them.
    fn same_counts(
        counts: &Counts,
        layout: &Layout,
        h: &Histogram<u64>,
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(counts.total(), h.len());
        if layout.low == 1 {
            prop_assert_eq!(counts.max(layout), h.max());
        }
        for (index, &count) in counts.counts.iter().enumerate() {
            prop_assert_eq!(count, h.count_at(layout.value_for(index)), "bucket {}", index);
        }
        let nonzero = counts.counts.iter().filter(|&&c| c != 0).count();
        prop_assert_eq!(counts.iter().count(), nonzero, "iter holds every non-empty bucket");
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The bytes of `V2Serializer`, after whatever `out` held.
        #[test]
        fn encode_writes_the_bytes_of_v2_serializer((bounds, values) in recordings()) {
            let (h, layout, counts) = recorded(bounds, &values);
            let mut ours = b"before".to_vec();
            prop_assert_eq!(encode(&layout, &counts, &mut ours), Ok(()));
            prop_assert_eq!(&ours[..6], b"before");
            prop_assert_eq!(&ours[6..], &theirs(&h)[..]);
        }

        /// Counts hold what the histogram of the same samples holds, bucket by bucket; so does
        /// the histogram built of them (equal to it outright when the lowest value is 1).
        #[test]
        fn counts_are_the_histograms((bounds, values) in recordings()) {
            let (h, layout, counts) = recorded(bounds, &values);
            same_counts(&counts, &layout, &h)?;
            let built = counts.histogram(&layout);
            prop_assert_eq!(theirs(&built), theirs(&h));
            if layout.low == 1 {
                prop_assert!(built == h);
            }
        }

        /// Counts added are the counts of both sets of samples; cleared, they are new ones.
        #[test]
        fn add_and_clear_follow_the_histogram(
            (bounds, values) in recordings(),
            more in prop::collection::vec((any::<u64>(), 1_u64..3), 0..20),
        ) {
            let (mut h, layout, mut counts) = recorded(bounds, &values);
            let mut other = Counts::new(&layout);
            for &(v, n) in &more {
                h.saturating_record_n(v, n);
                record_n(&mut other, layout.index_of(v), n);
            }
            counts.add(&other);
            same_counts(&counts, &layout, &h)?;
            counts.clear();
            prop_assert_eq!(&counts, &Counts::new(&layout));
        }
    }

    /// A `Counts` made after others were dropped on this thread (their buffers kept) starts
    /// from zero counts, whatever they had counted.
    #[test]
    fn counts_made_from_kept_buffers_start_empty() {
        let layout = Layout::new(1, 36_000_000_000, 3);
        for round in 0..3 {
            let used: Vec<Counts> = (0..40)
                .map(|i| {
                    let mut c = Counts::new(&layout);
                    (0..50).for_each(|v| c.record(layout.index_of(v * 7919 + i + round)));
                    c
                })
                .collect();
            drop(used);
            for _ in 0..40 {
                let fresh = Counts::new(&layout);
                assert!(fresh.counts.iter().all(|&c| c == 0) && fresh.total == 0, "round {round}");
                assert_eq!(fresh.iter().count(), 0);
            }
        }
    }

    #[test]
    fn the_empty_histogram_is_its_header_and_one_zero() {
        let (h, layout, counts) = recorded(0, &[]);
        let mut ours = Vec::new();
        encode(&layout, &counts, &mut ours).unwrap();
        assert_eq!(ours, theirs(&h));
        assert_eq!((ours.len(), ours[V2_HEADER_SIZE]), (V2_HEADER_SIZE + 1, 0));
        assert_eq!((counts.last(), counts.max(&layout)), (None, 0));
    }

    /// A count V2 cannot hold is refused, as `V2Serializer` refuses it, and `out` is kept.
    #[test]
    fn a_count_beyond_i64_is_refused() {
        let (h, layout, counts) = recorded(0, &[(5, 1 << 63)]);
        let mut out = b"kept".to_vec();
        assert_eq!(encode(&layout, &counts, &mut out), Err(CountTooLarge));
        assert_eq!(out, b"kept");
        assert!(V2Serializer::new().serialize(&h, &mut Vec::new()).is_err());
    }

    /// Values beyond the highest trackable one: in their own bucket while the counts reach it,
    /// else in the highest's (where `saturating_record` puts them).
    #[test]
    fn index_of_follows_saturating_record() {
        for (low, high, sigfig) in BOUNDS {
            let mut h = Histogram::<u64>::new_with_bounds(low, high, sigfig).unwrap();
            let layout = Layout::of(&h);
            for v in [0, 1, low, high, high + 1, high.saturating_mul(2), u64::MAX] {
                h.reset();
                h.saturating_record(v);
                assert_eq!(h.count_at(layout.value_for(layout.index_of(v))), 1, "{v} in {high}");
            }
        }
    }

    /// A layout made from the bounds has the histogram's number of buckets and header; and
    /// every bucket of every layout: its lowest value lands in it, and its highest value is
    /// `highest_equivalent`'s (the top of the range `value_at_quantile` answers with).
    #[test]
    fn a_layout_of_bounds_is_the_histograms_bucket_by_bucket() {
        for (low, high, sigfig) in
            BOUNDS.into_iter().chain([(1, 2, 0), (7, 15, 5), (2, 1 << 63, 3)])
        {
            let h = Histogram::<u64>::new_with_bounds(low, high, sigfig).unwrap();
            let layout = Layout::new(low, high, sigfig);
            assert_eq!(layout.len, h.distinct_values(), "{low} {high} {sigfig}");
            assert_eq!((layout.low, layout.high, layout.sigfig), (h.low(), h.high(), h.sigfig()));
            for index in 0..layout.len {
                let lowest = layout.value_for(index);
                assert_eq!(layout.index_for(lowest), index, "{index} of {high}");
                assert_eq!(layout.highest_equivalent(index), h.highest_equivalent(lowest));
            }
        }
    }

    #[test]
    fn varint_is_leb128_with_a_whole_ninth_byte() {
        for (x, bytes) in [
            (0, vec![0]),
            (127, vec![127]),
            (128, vec![0x80, 1]),
            ((1 << 56) - 1, vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
            (1 << 56, vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1]),
            (u64::MAX, vec![0xff; 9]),
        ] {
            let mut out = Vec::new();
            varint(x, &mut out);
            assert_eq!(out, bytes, "{x}");
        }
    }
}
