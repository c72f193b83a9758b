//! HdrHistogram's V2 + deflate encoding with one compressor kept per thread: the bytes of
//! `hdrhistogram`'s `V2DeflateSerializer`, without its new zlib compressor per histogram.
//!
//! The encoding (HdrHistogram's "compressed histogram" format): a big-endian cookie
//! (`0x1c849314`), the big-endian length of what follows, then the histogram's V2 encoding
//! as a zlib stream at the default level (6). `V2DeflateSerializer` builds a `ZlibEncoder`
//! for every histogram, and a compressor's state is hundreds of kilobytes to allocate and
//! zero: at 18 histograms a point it was about a fifth of a sweep point's instructions. A
//! `flate2::Compress` that is `reset` starts from the same state as a new one, so the stream
//! is the same bytes (a test compares them with `V2DeflateSerializer`'s).
//!
//! Even a reset is hundreds of kilobytes zeroed, where the stream of a sweep point's histogram
//! is a few hundred bytes, and many of a sweep's histograms are the same bytes point after point
//! (a strategy that launches every agent at once has a launch wait of 0 for all). So the packed
//! bytes of the latest payloads are kept: the same payload is the same stream, compressed once.
//! The V2 payload of prefixsim's own histograms (`v2::Counts`) comes from `v2::encode`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;

use flate2::{Compress, Compression, FlushCompress, Status};
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::{Counter, Histogram};

use super::v2::{self, Counts, Layout};

/// HdrHistogram's cookie for a V2 encoding compressed with deflate (`V2_COMPRESSED_COOKIE`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// How many payloads `ReusedDeflate` keeps the packed bytes of (all are dropped when full: a
/// sweep's repeated payloads come back every point, so they are soon kept again). A point
/// writes 18 histograms of a few hundred bytes each.
const KEPT_PAYLOADS: usize = 256;

/// The largest payload kept, in bytes: the payloads that repeat are those of histograms of a
/// few values (a launch wait of 0), and kept ones then take at most about 1.5 MB.
const KEPT_PAYLOAD_BYTES: usize = 4096;

/// A V2 + deflate serializer whose compressor and buffers are reused from one histogram to
/// the next.
pub struct ReusedDeflate {
    v2: V2Serializer,
    plain: Vec<u8>,
    packed: Vec<u8>,
    zlib: Compress,
    /// V2 payload -> its cookie, length and zlib stream.
    kept: HashMap<Box<[u8]>, Box<[u8]>>,
}

impl ReusedDeflate {
    pub fn new() -> Self {
        ReusedDeflate {
            v2: V2Serializer::new(),
            plain: Vec::new(),
            packed: Vec::new(),
            zlib: Compress::new(Compression::default(), true),
            kept: HashMap::new(),
        }
    }

    /// The V2 + deflate bytes of `h`, its payload by `V2Serializer`.
    pub fn bytes(&mut self, h: &Histogram<u64>) -> io::Result<&[u8]> {
        self.plain_v2(h)?;
        self.pack()
    }

    /// The V2 + deflate bytes of the histogram of `counts` (of layout `layout`), its payload
    /// written from the counted buckets by `v2::encode`.
    pub fn bytes_of_counts(&mut self, layout: &Layout, counts: &Counts) -> io::Result<&[u8]> {
        self.plain.clear();
        v2::encode(layout, counts, &mut self.plain).map_err(|_| {
            io::Error::other("a bucket's count is above i64::MAX: V2 cannot hold it")
        })?;
        self.pack()
    }

    /// `self.plain` = the V2 payload of `h`, by `V2Serializer`.
    fn plain_v2<T: Counter>(&mut self, h: &Histogram<T>) -> io::Result<()> {
        self.plain.clear();
        self.v2.serialize(h, &mut self.plain).map_err(|e| io::Error::other(format!("{e:?}")))?;
        Ok(())
    }

    /// The cookie, length and zlib stream of `self.plain`, compressed unless kept.
    fn pack(&mut self) -> io::Result<&[u8]> {
        let keep = self.plain.len() <= KEPT_PAYLOAD_BYTES;
        if keep && self.kept.contains_key(self.plain.as_slice()) {
            return Ok(&self.kept[self.plain.as_slice()]);
        }
        self.packed.clear();
        self.packed.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.packed.extend_from_slice(&[0; 4]);
        self.compress()?;
        let body = u32::try_from(self.packed.len() - 8).map_err(io::Error::other)?;
        self.packed[4..8].copy_from_slice(&body.to_be_bytes());
        if keep {
            if self.kept.len() >= KEPT_PAYLOADS {
                self.kept.clear();
            }
            self.kept.insert(self.plain.as_slice().into(), self.packed.as_slice().into());
        }
        Ok(&self.packed)
    }

    /// Run `f` with this thread's serializer.
    pub fn with<R>(f: impl FnOnce(&mut ReusedDeflate) -> R) -> R {
        thread_local! {
            static KEPT: RefCell<ReusedDeflate> = RefCell::new(ReusedDeflate::new());
        }
        KEPT.with_borrow_mut(f)
    }

    /// Compress `self.plain` after the 8 header bytes of `self.packed`.
    fn compress(&mut self) -> io::Result<()> {
        self.zlib.reset();
        self.packed.reserve(self.plain.len() / 2 + 64);
        loop {
            let read = self.zlib.total_in() as usize;
            let status = self
                .zlib
                .compress_vec(&self.plain[read..], &mut self.packed, FlushCompress::Finish)
                .map_err(io::Error::other)?;
            match status {
                Status::StreamEnd => return Ok(()),
                Status::Ok | Status::BufError => self.packed.reserve(self.packed.capacity()),
            }
        }
    }
}

impl Default for ReusedDeflate {
    fn default() -> Self {
        Self::new()
    }
}

impl Serializer for ReusedDeflate {
    type SerializeError = io::Error;

    fn serialize<T: Counter, W: io::Write>(
        &mut self,
        h: &Histogram<T>,
        writer: &mut W,
    ) -> io::Result<usize> {
        self.plain_v2(h)?;
        let packed = self.pack()?;
        writer.write_all(packed)?;
        Ok(packed.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::V2DeflateSerializer;

    fn histogram(seed: u64, n: u64) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        let mut x = seed;
        for _ in 0..n {
            x = crate::rng::mix64(x);
            h.record(1 + x % 120_000_000).unwrap();
        }
        h
    }

    /// One serializer used for many histograms, large and small, empty and full, writes
    /// what a new `V2DeflateSerializer` writes for each: a compressor left in some state by
    /// the histogram before would show here.
    #[test]
    fn reused_compressor_writes_the_bytes_of_a_new_one() {
        let mut kept = ReusedDeflate::new();
        for (seed, n) in [(1, 0), (2, 1), (3, 10_000), (4, 3), (5, 200_000), (6, 0), (7, 50)] {
            let h = histogram(seed, n);
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            kept.serialize(&h, &mut ours).unwrap();
            V2DeflateSerializer::new().serialize(&h, &mut theirs).unwrap();
            assert_eq!(ours, theirs, "histogram {seed} of {n} values");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The bytes of a new `V2DeflateSerializer`, whether the payload is written from the
        /// counts or from the histogram, compressed or kept from before (each histogram is
        /// written twice each way, after whatever the thread's serializer wrote before).
        #[test]
        fn bytes_are_those_of_v2_deflate_serializer(
            (bounds, values) in crate::results::v2::tests::recordings()
        ) {
            let (h, layout, counts) = crate::results::v2::tests::recorded(bounds, &values);
            let mut theirs = Vec::new();
            V2DeflateSerializer::new().serialize(&h, &mut theirs).unwrap();
            ReusedDeflate::with(|kept| {
                for of_counts in [true, false, true, false] {
                    let ours = match of_counts {
                        true => kept.bytes_of_counts(&layout, &counts).unwrap(),
                        false => kept.bytes(&h).unwrap(),
                    };
                    proptest::prop_assert_eq!(ours, &theirs[..]);
                }
                Ok(())
            })?;
        }
    }

    /// Past `KEPT_PAYLOADS` payloads the kept ones are dropped, and each is compressed anew to
    /// the same bytes.
    #[test]
    fn payloads_kept_or_dropped_pack_alike() {
        let hists: Vec<_> = (0..KEPT_PAYLOADS as u64 + 40).map(|n| histogram(n, n % 7)).collect();
        let mut kept = ReusedDeflate::new();
        let first: Vec<Vec<u8>> = hists.iter().map(|h| kept.bytes(h).unwrap().to_vec()).collect();
        assert!(kept.kept.len() < KEPT_PAYLOADS, "dropped when full");
        for (h, bytes) in hists.iter().zip(&first).rev() {
            let mut theirs = Vec::new();
            V2DeflateSerializer::new().serialize(h, &mut theirs).unwrap();
            assert_eq!((kept.bytes(h).unwrap(), bytes), (&theirs[..], &theirs));
        }
        // A payload above `KEPT_PAYLOAD_BYTES` is compressed every time, not kept.
        let before = kept.kept.len();
        let dense = histogram(9, 200_000);
        let mut theirs = Vec::new();
        V2DeflateSerializer::new().serialize(&dense, &mut theirs).unwrap();
        for _ in 0..2 {
            assert_eq!(kept.bytes(&dense).unwrap(), theirs);
            assert!(kept.plain.len() > KEPT_PAYLOAD_BYTES && kept.kept.len() == before);
        }
    }
}
