//! The histogram log of a run or sweep (`HISTOGRAM_LOG`): an HdrHistogram interval log (Java's
//! `HistogramLogWriter` format, read by `HistogramLogProcessor` and Python's `hdrh`), one
//! interval per (point, strategy, latency), tagged `histogram_tag`; its writer and the decoder
//! of one interval's histogram.
//!
//! A histogram is written as HdrHistogram's "compressed histogram": a big-endian cookie, the
//! length of what follows, then the V2 payload (`counts::encode`) as a zlib stream at the
//! default level, by `flate2`: the bytes of `hdrhistogram`'s `V2DeflateSerializer`. One
//! compressor is kept per thread and reset between histograms (a new one is hundreds of
//! kilobytes to allocate and zero, for a stream of a few hundred bytes), and the streams of the
//! latest small payloads are kept: many repeat point after point (a strategy that launches
//! every agent at once has a launch wait of 0 each time).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use base64::Engine as _;
use flate2::{Compress, Compression, FlushCompress, Status};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::aggregate::Aggregate;
use super::counts::{self, Counts, Layout};
use super::schema::slug;
use super::write::{at, AtomicFile, WriteError};
use crate::metrics::LATENCY_NAMES;

/// The one histogram file of a run or sweep, however many points: an HdrHistogram interval
/// log holding one interval per (point, strategy, latency), tagged `histogram_tag`.
pub const HISTOGRAM_LOG: &str = "histograms/latency.hlog";

/// `p<point:05>_<strategy slug>_<latency name>`: the tag of one interval of `HISTOGRAM_LOG`.
pub fn histogram_tag(point: u32, strategy: &str, latency: &str) -> String {
    format!("p{point:05}_{}_{latency}", slug(strategy))
}

/// The point, strategy slug and index in `LATENCY_NAMES` of a tag of `histogram_tag`'s form.
pub fn split_histogram_tag(tag: &str) -> Option<(u32, &str, usize)> {
    let (point, rest) = tag.strip_prefix('p')?.split_once('_')?;
    let point: u32 = point.parse().ok()?;
    let latency = LATENCY_NAMES
        .iter()
        .position(|l| rest.strip_suffix(l).is_some_and(|s| s.ends_with('_')))?;
    Some((point, &rest[..rest.len() - LATENCY_NAMES[latency].len() - 1], latency))
}

/// Why the text of a histogram could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    #[error("not base64: {0}")]
    NotBase64(String),
    #[error("not a V2 HdrHistogram: {0}")]
    NotV2(String),
}

/// A histogram of the log: base64 (standard alphabet, padded) of HdrHistogram V2 + deflate
/// (surrounding whitespace ignored).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| HistogramError::NotBase64(e.to_string()))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError::NotV2(format!("{e:?}")))
}

/// The comment lines that open `HISTOGRAM_LOG` (each ending in `\n`).
pub fn histogram_log_header() -> String {
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(
            "[prefixsim latency histograms: values in microseconds; one interval per point, \
             strategy and latency, tagged p<point:05>_<strategy slug>_<latency>]",
        )
        .begin_log_with(&mut out, &mut serializer)
        .expect("writing to memory succeeds");
    String::from_utf8(out).expect("an interval log is ASCII")
}

/// The intervals of `HISTOGRAM_LOG` for one strategy at one point: one line per latency of
/// `LATENCY_NAMES`, each what hdrhistogram's `IntervalLogWriter::write_histogram` writes
/// (`Tag=`, start and length in seconds and the max value, `{:.3}`, then the base64 bytes; a
/// test compares). Simulated time has no epoch: every interval starts at 0.000 and lasts 0.000
/// s (the whole run). Each line ends in `\n`.
pub fn aggregate_intervals(point: u32, strategy: &str, agg: &Aggregate) -> String {
    let (layout, counts) = agg.counts();
    let mut out = String::new();
    Packer::with(|packer| {
        for (c, name) in counts.iter().zip(LATENCY_NAMES) {
            let tag = histogram_tag(point, strategy, name);
            assert!(Tag::new(&tag).is_some(), "a slug holds no comma, space or newline: {tag}");
            let max = c.max(layout) as f64;
            write!(out, "Tag={tag},0.000,0.000,{max:.3},").expect("writing to a String succeeds");
            let bytes = packer.pack(layout, c).expect("a count fits V2 (below 2^63)");
            base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut out);
            out.push('\n');
        }
    });
    out
}

/// HdrHistogram's cookie for a V2 encoding compressed with deflate (`V2_COMPRESSED_COOKIE`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// How many payloads a `Packer` keeps the streams of (all are dropped when full: a sweep's
/// repeated payloads come back every point), and the largest kept, in bytes: those that
/// repeat are histograms of a few values, so the kept ones take at most about 1.5 MB.
const KEPT_PAYLOADS: usize = 256;
const KEPT_PAYLOAD_BYTES: usize = 4096;

/// A thread's compressor and buffers, and its kept streams (V2 payload -> packed bytes).
struct Packer {
    plain: Vec<u8>,
    packed: Vec<u8>,
    zlib: Compress,
    kept: HashMap<Box<[u8]>, Box<[u8]>>,
}

impl Packer {
    fn new() -> Packer {
        let zlib = Compress::new(Compression::default(), true);
        Packer { plain: Vec::new(), packed: Vec::new(), zlib, kept: HashMap::new() }
    }

    fn with<R>(f: impl FnOnce(&mut Packer) -> R) -> R {
        thread_local! {
            static PACKER: RefCell<Packer> = RefCell::new(Packer::new());
        }
        PACKER.with_borrow_mut(f)
    }

    /// The cookie, length and zlib stream of the V2 payload of `counts`.
    fn pack(&mut self, layout: &Layout, counts: &Counts) -> io::Result<&[u8]> {
        self.plain.clear();
        counts::encode(layout, counts, &mut self.plain).map_err(|_| io::ErrorKind::InvalidData)?;
        let keep = self.plain.len() <= KEPT_PAYLOAD_BYTES;
        if keep && self.kept.contains_key(self.plain.as_slice()) {
            return Ok(&self.kept[self.plain.as_slice()]);
        }
        self.packed.clear();
        self.packed.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.packed.extend_from_slice(&[0; 4]);
        self.zlib.reset();
        while self
            .zlib
            .compress_vec(
                &self.plain[self.zlib.total_in() as usize..],
                &mut self.packed,
                FlushCompress::Finish,
            )
            .map_err(io::Error::other)?
            != Status::StreamEnd
        {
            self.packed.reserve(self.packed.capacity().max(64));
        }
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
}

/// `HISTOGRAM_LOG` of a run or sweep, written interval by interval to its `.tmp` file and
/// renamed by `commit` (memory: one point's intervals at a time). Dropped without `commit`,
/// it leaves only the `.tmp` file.
pub struct HistogramLog {
    out: AtomicFile,
}

impl HistogramLog {
    /// Start `dir/histograms/latency.hlog`, removing what an earlier run or version left in
    /// `histograms/` (one `p*.hdr` or `p*.hlog` file per histogram, `.tmp` files), so that the
    /// directory holds one layout only.
    pub fn create(dir: &Path) -> Result<HistogramLog, WriteError> {
        let path = dir.join(HISTOGRAM_LOG);
        let hdir = path.parent().expect("the log lives in a directory");
        fs::create_dir_all(hdir).map_err(at(hdir))?;
        for entry in fs::read_dir(hdir).map_err(at(hdir))? {
            let stale = entry.map_err(at(hdir))?.path();
            let name = stale.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let ours = [".hdr", ".hdr.tmp", ".hlog", ".hlog.tmp"].iter().any(|e| name.ends_with(e));
            if name.starts_with('p') && ours {
                fs::remove_file(&stale).map_err(at(&stale))?;
            }
        }
        let mut out = AtomicFile::create(&path)?;
        out.write(&histogram_log_header())?;
        Ok(HistogramLog { out })
    }

    /// Append intervals made by `aggregate_intervals`.
    pub fn write(&mut self, intervals: &str) -> Result<(), WriteError> {
        self.out.write(intervals)
    }

    /// Append the merged histograms of `strategy` at `point`.
    pub fn add(&mut self, point: u32, strategy: &str, agg: &Aggregate) -> Result<(), WriteError> {
        self.write(&aggregate_intervals(point, strategy, agg))
    }

    pub fn commit(self) -> Result<(), WriteError> {
        self.out.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RunMetrics;
    use crate::results::counts::tests::{recorded, recordings};
    use hdrhistogram::serialization::Serializer;
    use std::time::Duration;

    /// The intervals as hdrhistogram's `IntervalLogWriter` writes them.
    fn theirs(point: u32, strategy: &str, hists: &[Histogram<u64>; 3]) -> String {
        let mut out = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let mut log =
            IntervalLogWriterBuilder::new().begin_log_with(&mut out, &mut serializer).unwrap();
        for (name, h) in LATENCY_NAMES.iter().zip(hists) {
            let tag = histogram_tag(point, strategy, name);
            log.write_histogram(h, Duration::ZERO, Duration::ZERO, Tag::new(&tag)).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    fn deflated(h: &Histogram<u64>) -> Vec<u8> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut bytes).unwrap();
        bytes
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The lines of `IntervalLogWriter`, from an aggregate's counts.
        #[test]
        fn intervals_are_those_of_the_interval_log_writer(
            samples in proptest::collection::vec(
                proptest::collection::vec(proptest::prop_oneof![0_u64..100_000, proptest::prelude::any::<u64>()], 0..50),
                3,
            ),
            point in 0_u32..200_000,
        ) {
            let mut run = RunMetrics::new();
            let latencies = [&mut run.launch_wait_us, &mut run.ttft_us, &mut run.completion_us];
            for (latency, values) in latencies.into_iter().zip(&samples) {
                values.iter().for_each(|&v| latency.record(v));
            }
            let mut agg = Aggregate::new();
            agg.add(&run);
            let want = theirs(point, "wait_first(max_wait=2s)", &agg.histograms());
            proptest::prop_assert_eq!(&aggregate_intervals(point, "wait_first(max_wait=2s)", &agg), &want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The bytes of a new `V2DeflateSerializer`, compressed or kept from before (each
        /// histogram packed twice, after whatever the thread's packer packed before).
        #[test]
        fn packed_bytes_are_those_of_v2_deflate_serializer((bounds, values) in recordings()) {
            let (h, layout, counts) = recorded(bounds, &values);
            let theirs = deflated(&h);
            Packer::with(|packer| {
                for _ in 0..2 {
                    proptest::prop_assert_eq!(packer.pack(&layout, &counts).unwrap(), &theirs[..]);
                }
                Ok(())
            })?;
        }
    }

    /// Past `KEPT_PAYLOADS` payloads the kept ones are dropped, and each is compressed anew to
    /// the same bytes; a payload above `KEPT_PAYLOAD_BYTES` is compressed every time.
    #[test]
    fn payloads_kept_or_dropped_pack_alike() {
        let sets: Vec<Vec<(u64, u64)>> = (0..KEPT_PAYLOADS as u64 + 40)
            .map(|n| (0..n % 7).map(|v| (v * n, 1)).collect())
            .collect();
        let dense: Vec<(u64, u64)> = (0..200_000).map(|v| (v * 613, 1)).collect();
        let mut packer = Packer::new();
        for values in sets.iter().chain(sets.iter().rev()).chain([&dense, &dense]) {
            let (h, layout, counts) = recorded(0, values);
            let before = packer.kept.len();
            assert_eq!(packer.pack(&layout, &counts).unwrap(), deflated(&h));
            if values.len() > 1000 {
                assert!(packer.plain.len() > KEPT_PAYLOAD_BYTES && packer.kept.len() == before);
            }
            assert!(packer.kept.len() <= KEPT_PAYLOADS);
        }
    }

    #[test]
    fn tags_name_point_strategy_and_latency() {
        assert_eq!(histogram_tag(3, "eager", "launch_wait"), "p00003_eager_launch_wait");
        let tag = histogram_tag(123456, "wait_first(max_wait=5s)", "ttft");
        assert_eq!(split_histogram_tag(&tag), Some((123456, "wait_first_max_wait_5s_", 1)));
        assert_eq!(split_histogram_tag("p00001_stagger_latency"), None);
    }
}
