//! HdrHistogram's V2 encoding written from the buckets a histogram was told about, not from a
//! walk of all its counts: the bytes of `hdrhistogram`'s `V2Serializer`, at a fraction of the
//! work for the sparse latency histograms of a sweep point.
//!
//! `V2Serializer` zeroes nine bytes per bucket up to the largest value's and reads every count
//! on the way (about 18,000 for a latency of a minute), though a point's histogram has a few
//! hundred non-zero buckets. `hdrhistogram` keeps its counts private, so whoever records into a
//! histogram also marks each value's bucket in a `Touched` set (`Aggregate` does), and `encode`
//! reads the counts of those buckets only. It proves the set covers every count (their sum is
//! the histogram's total) and reports a set that does not, so a histogram changed behind the
//! set's back is written by `V2Serializer` instead, never wrongly.
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
/// significant digits (computed as `Histogram::new_with_bounds` computes them).
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
}

impl Layout {
    pub fn of(h: &Histogram<u64>) -> Layout {
        let largest = 2 * 10_u32.pow(u32::from(h.sigfig()));
        let unit_magnitude = (h.low() as f64).log2().floor() as u32;
        let count_magnitude = f64::from(largest).log2().ceil() as u32;
        let mut layout = Layout {
            unit_magnitude,
            half_count_magnitude: count_magnitude - 1,
            half_count: 1 << (count_magnitude - 1),
            sub_bucket_mask: ((1_u64 << count_magnitude) - 1) << unit_magnitude,
            leading_zero_count_base: 64 - unit_magnitude - count_magnitude,
            len: h.distinct_values(),
            high_index: 0,
        };
        layout.high_index = layout.index_for(h.high());
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
        let bucket = (index >> self.half_count_magnitude) as u32;
        let sub_bucket = (index & (self.half_count - 1)) + self.half_count;
        let (bucket, sub_bucket) = match bucket.checked_sub(1) {
            Some(b) => (b, sub_bucket),
            None => (0, sub_bucket - self.half_count),
        };
        (sub_bucket as u64) << (bucket + self.unit_magnitude)
    }
}

/// A set of bucket indices of one histogram: a superset of its non-empty buckets for `encode`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    words: Vec<u64>,
}

impl Touched {
    /// An empty set for the buckets of `layout`.
    pub fn new(layout: &Layout) -> Touched {
        Touched { words: vec![0; layout.len.div_ceil(64)] }
    }

    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    #[inline]
    pub fn insert(&mut self, index: usize) {
        self.words[index / 64] |= 1 << (index % 64);
    }

    /// Add the indices of `other` (a set of the same layout).
    pub fn union(&mut self, other: &Touched) {
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine |= theirs;
        }
    }

    /// The non-zero counts of `h` (of layout `layout`) in these buckets, ascending: (bucket,
    /// count).
    pub fn counts<'a>(
        &'a self,
        h: &'a Histogram<u64>,
        layout: &'a Layout,
    ) -> impl Iterator<Item = (usize, u64)> + 'a {
        let counts = self.iter().map(|index| (index, h.count_at(layout.value_for(index))));
        counts.filter(|&(_, count)| count != 0)
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

/// Why `encode` wrote nothing: the caller then uses `V2Serializer`, which walks every count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotEncoded {
    /// The touched buckets' counts do not add up to the histogram's total (a count was
    /// recorded without marking its bucket), or the total saturated.
    Uncovered,
    /// A count above `i64::MAX` (which V2 cannot write; `V2Serializer` reports it).
    CountTooLarge,
}

/// Append the V2 encoding of `h` to `out`, reading the counts of the buckets in `touched` only
/// (`layout` is `Layout::of(h)`). On an error `out` is left as it was.
pub fn encode(
    h: &Histogram<u64>,
    layout: &Layout,
    touched: &Touched,
    out: &mut Vec<u8>,
) -> Result<(), NotEncoded> {
    let start = out.len();
    let written = encode_counts(h, layout, touched, out);
    if written.is_err() {
        out.truncate(start);
    }
    written
}

fn encode_counts(
    h: &Histogram<u64>,
    layout: &Layout,
    touched: &Touched,
    out: &mut Vec<u8>,
) -> Result<(), NotEncoded> {
    let start = out.len();
    out.extend_from_slice(&V2_COOKIE.to_be_bytes());
    out.extend_from_slice(&[0; 8]); // the length (set below), the normalizing offset
    out.extend_from_slice(&u32::from(h.sigfig()).to_be_bytes());
    out.extend_from_slice(&h.low().to_be_bytes());
    out.extend_from_slice(&h.high().to_be_bytes());
    out.extend_from_slice(&1.0_f64.to_be_bytes());
    // `V2Serializer` writes up to the bucket of `max()` (0 when empty), whatever follows.
    let last = layout.index_for(h.max());
    let (mut sum, mut next) = (0_u64, 0);
    for (index, count) in touched.counts(h, layout) {
        sum = sum.checked_add(count).ok_or(NotEncoded::Uncovered)?;
        if index > last {
            return Err(NotEncoded::Uncovered);
        }
        skip(index - next, out);
        varint(zig_zag(i64::try_from(count).map_err(|_| NotEncoded::CountTooLarge)?), out);
        next = index + 1;
    }
    // Equal sums of non-negative counts: every bucket outside `touched` is empty.
    if sum != h.len() || sum == u64::MAX {
        return Err(NotEncoded::Uncovered);
    }
    skip(last + 1 - next, out);
    let counts_len = out.len() - start - V2_HEADER_SIZE;
    let counts_len = u32::try_from(counts_len).map_err(|_| NotEncoded::Uncovered)?;
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
    /// deflate test's, a coarse one with a unit above 1, a fine one and one to `u64::MAX`.
    pub(crate) const BOUNDS: [(u64, u64, u8); 5] = [
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

    /// A histogram of `BOUNDS[bounds]` with `values` recorded (saturating, as `Samples` does)
    /// and the set of their buckets.
    pub(crate) fn recorded(
        bounds: usize,
        values: &[(u64, u64)],
    ) -> (Histogram<u64>, Layout, Touched) {
        let (low, high, sigfig) = BOUNDS[bounds];
        let mut h = Histogram::new_with_bounds(low, high, sigfig).unwrap();
        let layout = Layout::of(&h);
        let mut touched = Touched::new(&layout);
        for &(v, n) in values {
            h.saturating_record_n(v, n);
            touched.insert(layout.index_of(v));
        }
        (h, layout, touched)
    }

    fn theirs(h: &Histogram<u64>) -> Vec<u8> {
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(h, &mut bytes).unwrap();
        bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The bytes of `V2Serializer`, after whatever `out` held.
        #[test]
        fn encode_writes_the_bytes_of_v2_serializer((bounds, values) in recordings()) {
            let (h, layout, touched) = recorded(bounds, &values);
            let mut ours = b"before".to_vec();
            prop_assert_eq!(encode(&h, &layout, &touched, &mut ours), Ok(()));
            prop_assert_eq!(&ours[..6], b"before");
            prop_assert_eq!(&ours[6..], &theirs(&h)[..]);
        }

        /// A set missing a non-empty bucket is refused, and `out` is left as it was.
        #[test]
        fn a_set_without_a_counted_bucket_is_refused(
            (bounds, values) in recordings(),
            drop in any::<prop::sample::Index>(),
        ) {
            let (h, layout, mut touched) = recorded(bounds, &values);
            let buckets: Vec<usize> = touched.iter().collect();
            prop_assume!(!buckets.is_empty());
            let gone = buckets[drop.index(buckets.len())];
            touched.words[gone / 64] &= !(1 << (gone % 64));
            let mut out = b"kept".to_vec();
            prop_assert_eq!(encode(&h, &layout, &touched, &mut out), Err(NotEncoded::Uncovered));
            prop_assert_eq!(out, b"kept");
        }
    }

    #[test]
    fn the_empty_histogram_is_its_header_and_one_zero() {
        let (h, layout, touched) = recorded(0, &[]);
        let mut ours = Vec::new();
        encode(&h, &layout, &touched, &mut ours).unwrap();
        assert_eq!(ours, theirs(&h));
        assert_eq!((ours.len(), ours[V2_HEADER_SIZE]), (V2_HEADER_SIZE + 1, 0));
    }

    /// A count V2 cannot hold is refused, as `V2Serializer` refuses it.
    #[test]
    fn a_count_beyond_i64_is_refused() {
        let (h, layout, touched) = recorded(0, &[(5, 1 << 63)]);
        assert_eq!(encode(&h, &layout, &touched, &mut Vec::new()), Err(NotEncoded::CountTooLarge));
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
