//! The latency histograms of a results directory, indexed when it is read and decoded only
//! when a figure or a report asks for one.
//!
//! A sweep of 100,000 points holds 1,800,000 histograms (0.58 GB of `latency.hlog`); decoded,
//! each is 216 KB (1 us..10 h at 3 digits), so reading them all is out of the question. The
//! index keeps, per histogram, where its text is (the byte offset and line of its interval in
//! `HISTOGRAM_LOG`, or its `.hdr` file in the earlier layout): 40 bytes in a sorted vector,
//! an eighth of its text. Every interval's structure, tag and base64 are checked when the
//! index is built; a histogram that does not decode when asked for is remembered and reported
//! by `check`. The files are read again on demand, so they must stay in place while the index
//! is in use.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use hdrhistogram::Histogram;

use super::read::ResultsError;
use super::schema::histogram_tag;
use super::write::decode_histogram;
use crate::metrics::LATENCY_NAMES;

/// A histogram's place: (point, strategy label, latency name).
pub type HistogramKey = (u32, String, String);

/// (point, index into `labels`, index into `LATENCY_NAMES`): the index's own key.
type Slot = (u32, u16, u8);

/// Where a histogram's base64 text is.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The interval line starting at byte `offset` (1-based `line`) of the log.
    Log { offset: u64, line: u32 },
    /// The `.hdr` file `legacy[i]`.
    Legacy(u32),
}

#[derive(Debug)]
struct Entry {
    source: Source,
    /// Decoded on first use; `None` if it did not decode (the error is in `Histograms::failed`).
    decoded: OnceLock<Option<Box<Histogram<u64>>>>,
}

/// Merged latency histograms by their place, in microseconds, decoded on first use.
#[derive(Default)]
pub struct Histograms {
    log: PathBuf,
    legacy: Vec<PathBuf>,
    labels: Vec<String>,
    /// Sorted by slot once read (`finish`); a map took ~70 bytes a histogram.
    index: Vec<(Slot, Entry)>,
    /// The slots indexed, while reading a file whose histograms came out of slot order (the
    /// log's writers keep the order; `.hdr` files come in name order).
    seen: Option<BTreeSet<Slot>>,
    decodes: AtomicUsize,
    /// The first histogram that did not decode: (file, line, message).
    failed: Mutex<Option<(PathBuf, usize, String)>>,
}

impl std::fmt::Debug for Histograms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histograms")
            .field("log", &self.log)
            .field("indexed", &self.index.len())
            .field("decoded", &self.decodes())
            .finish()
    }
}

impl Histograms {
    /// An empty index over the strategy `labels`, whose log (if any) is `log`.
    pub(super) fn new(log: PathBuf, labels: &[String]) -> Histograms {
        Histograms { log, labels: labels.to_vec(), ..Histograms::default() }
    }

    /// Index the interval starting at `offset` on `line` of the log. `Err` names the tag if
    /// the place already has a histogram.
    pub(super) fn add_interval(
        &mut self,
        key: (u32, usize, usize),
        offset: u64,
        line: usize,
    ) -> Result<(), String> {
        let source = Source::Log { offset, line: line as u32 };
        self.add(key, source)
    }

    /// Index the `.hdr` file `path` of the earlier layout.
    pub(super) fn add_legacy(&mut self, key: (u32, usize, usize), path: PathBuf) {
        let source = Source::Legacy(self.legacy.len() as u32);
        self.legacy.push(path);
        // `.hdr` names are unique in a directory, and legacy files are indexed first.
        let _ = self.add(key, source);
    }

    fn add(&mut self, (point, s, l): (u32, usize, usize), source: Source) -> Result<(), String> {
        let slot = (point, s as u16, l as u8);
        let fresh = match &mut self.seen {
            Some(seen) => seen.insert(slot),
            None if self.index.last().is_none_or(|(last, _)| *last < slot) => true,
            None => {
                let seen = self.seen.insert(self.index.iter().map(|(s, _)| *s).collect());
                seen.insert(slot)
            }
        };
        if !fresh {
            let tag = histogram_tag(point, &self.labels[s], LATENCY_NAMES[l]);
            return Err(format!("histogram `{tag}` appears twice"));
        }
        self.index.push((slot, Entry { source, decoded: OnceLock::new() }));
        Ok(())
    }

    /// Done indexing: sort the index by slot (if the files did not) and give back the spare
    /// capacity.
    pub(super) fn finish(&mut self) {
        if self.seen.take().is_some() {
            self.index.sort_by_key(|(slot, _)| *slot);
        }
        self.index.shrink_to_fit();
    }

    fn entry(&self, slot: &Slot) -> Option<&Entry> {
        let i = self.index.binary_search_by_key(slot, |(s, _)| *s).ok()?;
        Some(&self.index[i].1)
    }

    fn slot(&self, (point, strategy, latency): &HistogramKey) -> Option<Slot> {
        let s = self.labels.iter().position(|l| l == strategy)?;
        let l = LATENCY_NAMES.iter().position(|n| n == latency)?;
        Some((*point, s as u16, l as u8))
    }

    fn key(&self, &(point, s, l): &Slot) -> HistogramKey {
        (point, self.labels[s as usize].clone(), LATENCY_NAMES[l as usize].to_string())
    }

    /// Whether the directory has a histogram at `key` (decodes nothing).
    pub fn contains_key(&self, key: &HistogramKey) -> bool {
        self.slot(key).is_some_and(|s| self.entry(&s).is_some())
    }

    /// The histogram at `key`, decoded on the first call; `None` if there is none or it does
    /// not decode (then `check` says why).
    pub fn get(&self, key: &HistogramKey) -> Option<&Histogram<u64>> {
        let entry = self.entry(&self.slot(key)?)?;
        entry.decoded.get_or_init(|| self.decode(key, entry.source)).as_deref()
    }

    fn decode(&self, key: &HistogramKey, source: Source) -> Option<Box<Histogram<u64>>> {
        self.decodes.fetch_add(1, Ordering::Relaxed);
        let (path, line) = match source {
            Source::Log { line, .. } => (self.log.clone(), line as usize),
            Source::Legacy(i) => (self.legacy[i as usize].clone(), 1),
        };
        let decoded = read_text(&path, source).and_then(|text| {
            let tag = histogram_tag(key.0, &key.1, &key.2);
            decode_histogram(&text).map_err(|e| format!("tag `{tag}`: {e}"))
        });
        match decoded {
            Ok(h) => Some(Box::new(h)),
            Err(msg) => {
                let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
                failed.get_or_insert((path, line, msg));
                None
            }
        }
    }

    /// The first histogram asked for that did not decode, as the error naming its file and line.
    pub fn check(&self) -> Result<(), ResultsError> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        match &*failed {
            Some((path, line, msg)) => {
                Err(ResultsError::Malformed { path: path.clone(), line: *line, msg: msg.clone() })
            }
            None => Ok(()),
        }
    }

    /// How many histograms have been decoded so far (each at most once): what reading the
    /// directory has cost beyond its index.
    pub fn decodes(&self) -> usize {
        self.decodes.load(Ordering::Relaxed)
    }

    /// How many histograms the directory holds.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The places of every histogram, ascending by point, strategy, latency (decodes nothing).
    pub fn keys(&self) -> impl Iterator<Item = HistogramKey> + '_ {
        self.index.iter().map(|(s, _)| self.key(s))
    }

    /// Give the strategies new labels (`rename(old)`, or the old one where it is `None`);
    /// labels that become equal are one strategy. Decoded histograms are kept.
    pub(super) fn relabel(&mut self, rename: impl Fn(&str) -> Option<String>) {
        let mut labels: Vec<String> = Vec::new();
        let mut to: Vec<u16> = Vec::new();
        for old in &self.labels {
            let new = rename(old).unwrap_or_else(|| old.clone());
            let i = labels.iter().position(|l| *l == new).unwrap_or_else(|| {
                labels.push(new);
                labels.len() - 1
            });
            to.push(i as u16);
        }
        let mut index = std::mem::take(&mut self.index);
        index.iter_mut().for_each(|((_, s, _), _)| *s = to[*s as usize]);
        index.sort_by_key(|(slot, _)| *slot);
        // Of histograms that come to one place, the last (as a map built from them keeps).
        for (slot, e) in index {
            match self.index.last_mut() {
                Some(last) if last.0 == slot => last.1 = e,
                _ => self.index.push((slot, e)),
            }
        }
        self.labels = labels;
    }
}

impl std::ops::Index<&HistogramKey> for Histograms {
    type Output = Histogram<u64>;

    /// The histogram at `key`; panics if there is none or it does not decode (tests).
    fn index(&self, key: &HistogramKey) -> &Histogram<u64> {
        self.get(key).unwrap_or_else(|| panic!("no decodable histogram at {key:?}"))
    }
}

/// The base64 text of the histogram at `source` in `path`: the fifth field of the interval
/// line, or the whole `.hdr` file.
fn read_text(path: &Path, source: Source) -> Result<String, String> {
    let io = |e: std::io::Error| format!("reading it again: {e}");
    match source {
        Source::Legacy(_) => std::fs::read_to_string(path).map_err(io),
        Source::Log { offset, .. } => {
            let mut file = std::fs::File::open(path).map_err(io)?;
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
            let mut line = String::new();
            BufReader::new(file).read_line(&mut line).map_err(io)?;
            let encoded = line.trim_end_matches(['\n', '\r']).rsplit(',').next().unwrap_or("");
            Ok(encoded.to_string())
        }
    }
}
