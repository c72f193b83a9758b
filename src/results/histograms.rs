//! The latency histograms of a results directory, indexed when it is read and decoded only
//! when a figure or a report asks for one.
//!
//! A sweep of 100,000 points holds 1,800,000 histograms (0.58 GB of `latency.hlog`); decoded,
//! each is 216 KB (1 us..10 h at 3 digits), so reading them all is out of the question. The
//! log's writers put a point's intervals together, so the index keeps, per point, where its
//! first interval is (byte offset and line) and one bit per (strategy, latency) it holds:
//! ~50 bytes a point, where an entry per histogram took 40 bytes each (720 a point). Asking for
//! a histogram reads its point's lines again from there. The `.hdr` files of the earlier
//! layout (one histogram a file) are indexed one entry a file. Every interval's structure, tag
//! and base64 are checked when the index is built; a histogram that does not decode when
//! asked for is remembered and reported by `check`. The files are read again on demand, so
//! they must stay in place while the index is in use.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use base64::Engine as _;
use hdrhistogram::Histogram;

use super::error::{
    open_opt, point_range, read_opt, FirstFailure, ResultsError, MAX_RESULT_JSON_BYTES,
};
use super::hlog::HISTOGRAM_LOG;
use super::hlog::{decode_histogram, histogram_tag, split_histogram_tag, HistogramError};
use super::schema::slug;
use crate::metrics::LATENCY_NAMES;

/// A histogram's place: (point, strategy label, latency name).
pub type HistogramKey = (u32, String, String);

/// (point, index into the labels as the files name them, index into `LATENCY_NAMES`).
type Slot = (u32, u16, u8);

const LATENCIES: usize = LATENCY_NAMES.len();

/// A histogram decoded on first use; `None` if it did not decode (the error is in
/// `Histograms::failed`).
type Decoded = OnceLock<Option<Box<Histogram<u64>>>>;

/// Consecutive intervals of the log at one point: where the first is, and which (strategy,
/// latency) pairs they hold (bits `first_bit + strategy * LATENCIES + latency` of `present`).
#[derive(Debug)]
struct Stretch {
    point: u32,
    /// 1-based line and byte offset of its first interval.
    line: u32,
    offset: u64,
    first_bit: u32,
    /// Its histograms once one is asked for, by bit (strategy * LATENCIES + latency).
    decoded: OnceLock<Box<[Decoded]>>,
}

/// Merged latency histograms by their place, in microseconds, decoded on first use.
#[derive(Default)]
pub struct Histograms {
    log: PathBuf,
    /// Strategy labels as the files name them; an index's strategy numbers are into these.
    raw_labels: Vec<String>,
    /// The labels as they are asked for (`relabel`), and which of them each raw label is.
    labels: Vec<String>,
    to: Vec<u16>,
    /// The log's points, sorted by point (stably) once read (`finish`).
    stretches: Vec<Stretch>,
    present: Vec<u64>,
    /// Point -> its stretches, while reading a log whose points came out of order (writers
    /// keep them in order, one stretch a point).
    seen: Option<BTreeMap<u32, Vec<u32>>>,
    /// `.hdr` files of the earlier layout (one histogram each), sorted by slot.
    legacy: Vec<(Slot, PathBuf, Decoded)>,
    decodes: AtomicUsize,
    /// The first histogram that did not decode.
    failed: FirstFailure,
}

impl std::fmt::Debug for Histograms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histograms")
            .field("log", &self.log)
            .field("points", &self.stretches.len())
            .field("decoded", &self.decodes())
            .finish()
    }
}

/// Where a histogram is.
enum Source<'a> {
    Log(&'a Stretch, usize),
    Legacy(&'a (Slot, PathBuf, Decoded)),
}

impl Histograms {
    /// An empty index over the strategy `labels`, whose log (if any) is `log`.
    pub(super) fn new(log: PathBuf, labels: &[String]) -> Histograms {
        let to = (0..labels.len() as u16).collect();
        Histograms {
            log,
            raw_labels: labels.to_vec(),
            labels: labels.to_vec(),
            to,
            ..Histograms::default()
        }
    }

    fn bits(&self) -> usize {
        self.raw_labels.len() * LATENCIES
    }

    fn has_bit(&self, stretch: &Stretch, bit: usize) -> bool {
        let b = stretch.first_bit as usize + bit;
        self.present[b / 64] & (1 << (b % 64)) != 0
    }

    /// Index the interval starting at `offset` on `line` of the log. `Err` names the tag if
    /// the place already has a histogram.
    pub(super) fn add_interval(
        &mut self,
        (point, s, l): (u32, usize, usize),
        offset: u64,
        line: usize,
    ) -> Result<(), String> {
        let bit = s * LATENCIES + l;
        let slot = (point, s as u16, l as u8);
        let twice = self.legacy.binary_search_by_key(&slot, |e| e.0).is_ok()
            || self.indexed_while_reading(point, bit);
        if twice {
            let tag = histogram_tag(point, &self.raw_labels[s], LATENCY_NAMES[l]);
            return Err(format!("histogram `{tag}` appears twice"));
        }
        if self.stretches.last().is_none_or(|st| st.point != point) {
            self.open_stretch(point, offset, line);
        }
        let Some(last) = self.stretches.last() else { unreachable!("a stretch was opened") };
        let b = last.first_bit as usize + bit;
        self.present[b / 64] |= 1 << (b % 64);
        Ok(())
    }

    fn open_stretch(&mut self, point: u32, offset: u64, line: usize) {
        let in_order = self.stretches.last().is_none_or(|st| st.point < point);
        if !in_order && self.seen.is_none() {
            let mut seen: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for (i, st) in self.stretches.iter().enumerate() {
                seen.entry(st.point).or_default().push(i as u32);
            }
            self.seen = Some(seen);
        }
        let i = self.stretches.len() as u32;
        if let Some(seen) = &mut self.seen {
            seen.entry(point).or_default().push(i);
        }
        let first_bit = (self.stretches.len() * self.bits()) as u32;
        self.present.resize((first_bit as usize + self.bits()).div_ceil(64), 0);
        let (line, decoded) = (line as u32, OnceLock::new());
        self.stretches.push(Stretch { point, line, offset, first_bit, decoded });
    }

    /// Whether (`point`, `bit`) is indexed already (before `finish`).
    fn indexed_while_reading(&self, point: u32, bit: usize) -> bool {
        match &self.seen {
            Some(seen) => seen.get(&point).is_some_and(|st| {
                st.iter().any(|&i| self.has_bit(&self.stretches[i as usize], bit))
            }),
            None => {
                self.stretches.last().is_some_and(|st| st.point == point && self.has_bit(st, bit))
            }
        }
    }

    /// Index the `.hdr` file `path` of the earlier layout (before the log, which `add_interval`
    /// checks against them once `finish` has sorted them).
    pub(super) fn add_legacy(&mut self, (point, s, l): (u32, usize, usize), path: PathBuf) {
        // `.hdr` names are unique in a directory, and legacy files are indexed first.
        self.legacy.push(((point, s as u16, l as u8), path, OnceLock::new()));
    }

    /// Done indexing: sort the stretches by point and the legacy files by slot (if the files
    /// did not), and give back the spare capacity.
    pub(super) fn finish(&mut self) {
        if self.seen.take().is_some() {
            self.stretches.sort_by_key(|st| st.point);
        }
        self.legacy.sort_by_key(|e| e.0);
        self.stretches.shrink_to_fit();
        self.present.shrink_to_fit();
    }

    /// Where the histogram at (point, label number as asked for, latency) is. Of raw labels
    /// that `relabel` made one, the last that has it (as a map built from them keeps).
    fn source(&self, point: u32, s: usize, l: usize) -> Option<Source<'_>> {
        let range = point_range(&self.stretches, point, |st| st.point);
        (0..self.raw_labels.len()).rev().filter(|&raw| self.to[raw] as usize == s).find_map(|raw| {
            let bit = raw * LATENCIES + l;
            let slot = (point, raw as u16, l as u8);
            if let Ok(i) = self.legacy.binary_search_by_key(&slot, |e| e.0) {
                return Some(Source::Legacy(&self.legacy[i]));
            }
            let st = self.stretches[range.clone()].iter().find(|st| self.has_bit(st, bit))?;
            Some(Source::Log(st, bit))
        })
    }

    fn place(&self, (point, strategy, latency): &HistogramKey) -> Option<(u32, usize, usize)> {
        let s = self.labels.iter().position(|l| l == strategy)?;
        let l = LATENCY_NAMES.iter().position(|n| n == latency)?;
        Some((*point, s, l))
    }

    /// Whether the directory has a histogram at `key` (decodes nothing).
    pub fn contains_key(&self, key: &HistogramKey) -> bool {
        self.place(key).is_some_and(|(p, s, l)| self.source(p, s, l).is_some())
    }

    /// The histogram at `key`, decoded on the first call; `None` if there is none or it does
    /// not decode (then `check` says why).
    pub fn get(&self, key: &HistogramKey) -> Option<&Histogram<u64>> {
        let (p, s, l) = self.place(key)?;
        let cell = match self.source(p, s, l)? {
            Source::Legacy(e) => &e.2,
            Source::Log(st, bit) => {
                let cells =
                    st.decoded.get_or_init(|| (0..self.bits()).map(|_| OnceLock::new()).collect());
                &cells[bit]
            }
        };
        cell.get_or_init(|| self.decode(key, p, s, l)).as_deref()
    }

    fn decode(
        &self,
        key: &HistogramKey,
        p: u32,
        s: usize,
        l: usize,
    ) -> Option<Box<Histogram<u64>>> {
        self.decodes.fetch_add(1, Ordering::Relaxed);
        let tag = histogram_tag(key.0, &key.1, &key.2);
        let (path, first_line, text) = match self.source(p, s, l) {
            Some(Source::Legacy(e)) => {
                let what = "a histogram file";
                let text = crate::input::read_capped_text(&e.1, MAX_RESULT_JSON_BYTES, what);
                (e.1.clone(), 1, text.map(|t| (1, t)))
            }
            Some(Source::Log(st, bit)) => {
                (self.log.clone(), st.line as usize, self.interval_text(st, bit))
            }
            None => unreachable!("decoded only where the index has it"),
        };
        let decoded = match text {
            Ok((line, text)) => {
                decode_histogram(&text).map_err(|e| (line, format!("tag `{tag}`: {e}")))
            }
            Err(e) => Err((first_line, format!("tag `{tag}`: reading it again: {e}"))),
        };
        match decoded {
            Ok(h) => Some(Box::new(h)),
            Err((line, msg)) => {
                self.failed.record(path, line, msg);
                None
            }
        }
    }

    /// (line, base64 text) of the interval of `stretch` at `bit`: its lines read again from
    /// the stretch's start until the tag is found or the point ends.
    fn interval_text(&self, stretch: &Stretch, bit: usize) -> std::io::Result<(usize, String)> {
        let (raw, l) = (bit / LATENCIES, bit % LATENCIES);
        let want = slug(&self.raw_labels[raw]);
        let file = crate::input::open_regular(&self.log)?;
        let mut file = crate::input::LineCapped::new(file, crate::input::MAX_LINE_BYTES);
        file.seek(SeekFrom::Start(stretch.offset))?;
        let mut lines = BufReader::with_capacity(1 << 14, file);
        let (mut text, mut line) = (String::new(), stretch.line as usize);
        loop {
            text.clear();
            if lines.read_line(&mut text)? == 0 {
                break;
            }
            let tag = text.strip_prefix("Tag=").and_then(|t| t.split(',').next());
            if let Some((point, slug, latency)) = tag.and_then(split_histogram_tag) {
                if point != stretch.point {
                    break;
                }
                if slug == want && latency == l {
                    let encoded = text.trim_end_matches(['\n', '\r']).rsplit(',').next();
                    return Ok((line, encoded.unwrap_or("").to_string()));
                }
            }
            line += 1;
        }
        let e = "the interval is no longer where it was indexed";
        Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, e))
    }

    /// The first histogram asked for that did not decode, as the error naming its file and line.
    pub fn check(&self) -> Result<(), ResultsError> {
        self.failed.check()
    }

    /// How many histograms have been decoded so far (each at most once): what reading the
    /// directory has cost beyond its index.
    pub fn decodes(&self) -> usize {
        self.decodes.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.stretches.is_empty() && self.legacy.is_empty()
    }

    /// The smallest point with a histogram (decodes nothing).
    pub fn first_point(&self) -> Option<u32> {
        let log = self.stretches.first().map(|st| st.point);
        let legacy = self.legacy.first().map(|e| e.0 .0);
        log.into_iter().chain(legacy).min()
    }

    /// Give the strategies new labels (`rename(old)`, or the old one where it is `None`);
    /// labels that become equal are one strategy. Decoded histograms are kept.
    pub(super) fn relabel(&mut self, rename: impl Fn(&str) -> Option<String>) {
        let mut labels: Vec<String> = Vec::new();
        for t in &mut self.to {
            let old = &self.labels[*t as usize];
            let new = rename(old).unwrap_or_else(|| old.clone());
            let i = labels.iter().position(|l| *l == new).unwrap_or_else(|| {
                labels.push(new);
                labels.len() - 1
            });
            *t = i as u16;
        }
        self.labels = labels;
    }
}

/// Index `histograms/latency.hlog` and the `.hdr` files of the earlier layout (one file per
/// histogram). An interval or file of an unknown strategy, or a histogram named twice, is an
/// error; no histogram is decoded here.
pub(super) fn load_histograms(
    dir: &Path,
    strategies: &[String],
) -> Result<Histograms, ResultsError> {
    let log = dir.join(HISTOGRAM_LOG);
    let mut out = Histograms::new(log.clone(), strategies);
    let slugs: Vec<String> = strategies.iter().map(|s| slug(s)).collect();
    index_legacy_histograms(&dir.join("histograms"), &slugs, &mut out)?;
    out.finish();
    index_histogram_log(&log, &slugs, &mut out)?;
    out.finish();
    Ok(out)
}

/// Index the intervals of an interval log into `out`, one line in memory at a time.
fn index_histogram_log(
    path: &Path,
    slugs: &[String],
    out: &mut Histograms,
) -> Result<(), ResultsError> {
    let Some(file) = open_opt(path)? else { return Ok(()) };
    let io = |e| ResultsError::io(path, e);
    let malformed = |line, msg: String| ResultsError::malformed(path, line, msg);
    let mut lines = BufReader::new(file);
    let (mut buf, mut scratch, mut line, mut offset) = (Vec::new(), Vec::new(), 0, 0u64);
    loop {
        buf.clear();
        let n = lines.read_until(b'\n', &mut buf).map_err(io)?;
        if n == 0 {
            return Ok(());
        }
        let at = offset;
        offset += n as u64;
        line += 1;
        let text = std::str::from_utf8(&buf)
            .map_err(|e| malformed(line, format!("not UTF-8 text (at byte {})", e.valid_up_to())))?
            .trim_end_matches(['\n', '\r']);
        // Comments (`#[...]`) and the legend line (`"StartTimestamp",...`) of other writers.
        if text.is_empty() || text.starts_with('#') || text.starts_with('"') {
            continue;
        }
        let key = check_interval(text, slugs, &mut scratch).map_err(|m| malformed(line, m))?;
        out.add_interval(key, at, line).map_err(|m| malformed(line, m))?;
    }
}

/// Check one interval line, `Tag=<tag>,<start s>,<length s>,<max>,<base64 V2 histogram>`,
/// and return its place (point, strategy index, latency index). The histogram is left encoded
/// (its base64 is checked, decoded into `scratch`).
fn check_interval(
    line: &str,
    slugs: &[String],
    scratch: &mut Vec<u8>,
) -> Result<(u32, usize, usize), String> {
    let fields: Vec<&str> = line.split(',').collect();
    let [tag, start, length, max, encoded] = fields[..] else {
        return Err(format!(
            "expected Tag=<tag>,<start>,<length>,<max>,<base64 histogram> (5 fields), found {}",
            fields.len()
        ));
    };
    let tag = tag.strip_prefix("Tag=").ok_or_else(|| {
        "an interval without `Tag=`: prefixsim tags every interval \
         p<point:05>_<strategy slug>_<latency>"
            .to_string()
    })?;
    for (name, v) in [("start", start), ("length", length), ("max", max)] {
        if !v.parse::<f64>().is_ok_and(|x| x.is_finite() && x >= 0.0) {
            return Err(format!("tag `{tag}`: {name} `{v}` is not a number >= 0"));
        }
    }
    let key = tag_place(tag, slugs).ok_or_else(|| {
        format!(
            "tag `{tag}`: expected p<point:05>_<strategy slug>_<latency name>, with a strategy \
             of the manifest or summary.csv"
        )
    })?;
    scratch.clear();
    base64::engine::general_purpose::STANDARD
        .decode_vec(encoded.trim(), scratch)
        .map_err(|e| format!("tag `{tag}`: {}", HistogramError::NotBase64(e.to_string())))?;
    Ok(key)
}

/// (point, strategy index, latency index) of a tag whose strategy slug is one of `slugs`.
fn tag_place(tag: &str, slugs: &[String]) -> Option<(u32, usize, usize)> {
    let (point, slug, latency) = split_histogram_tag(tag)?;
    Some((point, slugs.iter().position(|s| s == slug)?, latency))
}

/// Index `histograms/p<point>_<slug>_<latency>.hdr` (one base64 histogram per file, as
/// written before `latency.hlog`); files of unknown strategies are an error.
fn index_legacy_histograms(
    dir: &Path,
    slugs: &[String],
    out: &mut Histograms,
) -> Result<(), ResultsError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ResultsError::Io { path: dir.to_path_buf(), source: e }),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".hdr"))
        .collect();
    names.sort();
    let mut scratch = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let stem = name.strip_suffix(".hdr").unwrap_or(&name);
        let malformed = |msg: String| ResultsError::malformed(&path, 1, msg);
        let key = tag_place(stem, slugs).ok_or_else(|| {
            malformed("expected p<point:05>_<strategy slug>_<latency name>.hdr, with a strategy of the manifest or summary.csv".into())
        })?;
        let text = read_opt(&path)?.unwrap_or_default();
        scratch.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(text.trim(), &mut scratch)
            .map_err(|e| malformed(HistogramError::NotBase64(e.to_string()).to_string()))?;
        out.add_legacy(key, path);
    }
    Ok(())
}
