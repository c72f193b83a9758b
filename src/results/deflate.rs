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

use std::cell::RefCell;
use std::io;

use flate2::{Compress, Compression, FlushCompress, Status};
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::{Counter, Histogram};

/// HdrHistogram's cookie for a V2 encoding compressed with deflate (`V2_COMPRESSED_COOKIE`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// A V2 + deflate serializer whose compressor and buffers are reused from one histogram to
/// the next.
pub struct ReusedDeflate {
    v2: V2Serializer,
    plain: Vec<u8>,
    packed: Vec<u8>,
    zlib: Compress,
}

impl ReusedDeflate {
    pub fn new() -> Self {
        ReusedDeflate {
            v2: V2Serializer::new(),
            plain: Vec::new(),
            packed: Vec::new(),
            zlib: Compress::new(Compression::default(), true),
        }
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
        self.plain.clear();
        self.v2.serialize(h, &mut self.plain).map_err(|e| io::Error::other(format!("{e:?}")))?;
        self.packed.clear();
        self.packed.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.packed.extend_from_slice(&[0; 4]);
        self.compress()?;
        let body = u32::try_from(self.packed.len() - 8).map_err(io::Error::other)?;
        self.packed[4..8].copy_from_slice(&body.to_be_bytes());
        writer.write_all(&self.packed)?;
        Ok(self.packed.len())
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
}
