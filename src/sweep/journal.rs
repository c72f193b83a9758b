//! The sweep journal (`DIR/sweep.journal`): a header line, then one line per completed point,
//! in point order. Every line is `<16 hex digits of SHA-256(json)> <json>\n`, so a line is
//! self-validating: a torn or corrupt line (a crash, `kill -9` mid-write) and everything after
//! it is discarded on reading, and `--resume` continues from the last valid record.
//!
//! The header carries the experiment's content hash, the grid size and the shard, and the
//! manifest text (shard null) that a merge writes; a resume refuses a different experiment.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::point::PointRecord;
use crate::input::{LineCapped, LineError, MAX_LINE_BYTES};

pub const JOURNAL_FILE: &str = "sweep.journal";
/// Version 3: a record's histograms are interval-log lines (version 2 held one file each).
pub const FORMAT: &str = "prefixsim-sweep-journal/3";

pub use crate::results::Shard;

/// The first line of a journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub content_hash: String,
    pub points: u64,
    pub shard: Option<Shard>,
    pub axis_keys: Vec<String>,
    /// manifest.json of the whole (unsharded) sweep, exactly as written.
    pub manifest: String,
    /// Whether its records carry their points' hold answers (`PointRecord::hold`): false in
    /// journals written before hold.csv, so a resume or a merge refuses to mix the two (the
    /// older points would lack their rows) while the older journals still read.
    #[serde(default)]
    pub hold: bool,
}

impl Header {
    /// The point indices this journal covers, in order.
    pub fn point_seq(&self) -> PointSeq {
        PointSeq::of(self.points, self.shard)
    }
}

/// An arithmetic sequence of point indices `start, start + stride, ... < end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointSeq {
    pub start: u64,
    pub stride: u64,
    pub end: u64,
}

impl PointSeq {
    /// The points of a grid of `points` that `shard` runs (all of them without one).
    pub fn of(points: u64, shard: Option<Shard>) -> PointSeq {
        match shard {
            None => PointSeq { start: 0, stride: 1, end: points },
            Some(s) => PointSeq { start: s.index, stride: s.count, end: points },
        }
    }

    /// The point indices in order.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        (0..self.len()).map(move |i| self.nth(i))
    }

    pub fn len(&self) -> u64 {
        if self.start >= self.end {
            0
        } else {
            (self.end - self.start).div_ceil(self.stride)
        }
    }
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // clippy: a `len` wants one
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn nth(&self, i: u64) -> u64 {
        self.start + i * self.stride
    }
}

/// Errors reading or writing a journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The first line is complete but is not a journal header: not ours, or damaged.
    #[error("{path}:1: not a prefixsim sweep journal ({why}); remove it to start over")]
    BadHeader { path: PathBuf, why: &'static str },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io { path: path.to_path_buf(), source }
}

fn checksum(json: &str) -> String {
    let d = Sha256::digest(json.as_bytes());
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn encode_line(json: &str) -> String {
    format!("{} {json}\n", checksum(json))
}

/// The JSON of a line, if the line is complete and its checksum matches.
fn decode_line(line: &str) -> Option<&str> {
    let body = line.strip_suffix('\n')?;
    let (sum, json) = body.split_once(' ')?;
    (sum == checksum(json)).then_some(json)
}

/// What a scan of an existing journal found.
#[derive(Debug)]
pub struct Scan {
    pub header: Header,
    /// Valid records (a prefix of `header.point_seq()`).
    pub records: u64,
    /// Bytes of the valid prefix; anything after it is torn and will be cut.
    pub valid_len: u64,
}

/// Read a journal's valid prefix. `Ok(None)` when the file is missing or has no valid header.
pub fn scan(path: &Path) -> Result<Option<Scan>, JournalError> {
    let Some(mut reader) = Reader::open(path)? else { return Ok(None) };
    let mut records = 0;
    while reader.next_record()?.is_some() {
        records += 1;
    }
    Ok(Some(Scan { header: reader.header.clone(), records, valid_len: reader.valid_len }))
}

/// A streaming reader of a journal's valid records, in order.
pub struct Reader {
    pub header: Header,
    lines: BufReader<LineCapped<File>>,
    path: PathBuf,
    seq: PointSeq,
    next: u64,
    valid_len: u64,
    buf: String,
}

impl Reader {
    /// `Ok(None)` when the file is missing or its header line is torn (a crash before the
    /// first newline: nothing was journaled); `BadHeader` when a whole first line is not one.
    pub fn open(path: &Path) -> Result<Option<Reader>, JournalError> {
        let bad = |why| JournalError::BadHeader { path: path.to_path_buf(), why };
        // Checked before opening: a FIFO would block the open, `/dev/zero` has no end.
        let file = match crate::input::open_regular(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if crate::input::is_refused(&e) => return Err(bad("not a regular file")),
            Err(e) => return Err(io_err(path)(e)),
        };
        // A line of a journal is a point's record: well under the cap, which keeps a file of
        // zeros from being read into one line.
        let mut lines = BufReader::new(LineCapped::new(file, MAX_LINE_BYTES));
        let mut raw = Vec::new();
        let n = match crate::input::read_line(&mut lines, &mut raw, MAX_LINE_BYTES) {
            Ok(n) => n,
            Err(LineError::TooLong) => return Err(bad("its first line is too long")),
            Err(LineError::Io(e)) if crate::input::is_refused(&e) => {
                return Err(bad("its first line is too long"))
            }
            Err(LineError::Io(e)) => return Err(io_err(path)(e)),
        };
        if raw.last() != Some(&b'\n') {
            return Ok(None);
        }
        let buf = String::from_utf8(raw).map_err(|_| bad("its first line is not UTF-8"))?;
        let json = decode_line(&buf).ok_or_else(|| bad("its first line fails its checksum"))?;
        let header: Header =
            serde_json::from_str(json).map_err(|_| bad("its first line is not a header"))?;
        if header.format != FORMAT
            || header.shard.is_some_and(|s| s.count == 0 || s.index >= s.count)
        {
            return Err(bad("an unknown journal format"));
        }
        let seq = header.point_seq();
        Ok(Some(Reader {
            header,
            lines,
            path: path.to_path_buf(),
            seq,
            next: 0,
            valid_len: n as u64,
            buf,
        }))
    }

    /// The next valid record, or `None` at the end of the valid prefix.
    pub fn next_record(&mut self) -> Result<Option<PointRecord>, JournalError> {
        if self.next >= self.seq.len() {
            return Ok(None);
        }
        self.buf.clear();
        // Invalid UTF-8 in a torn line reads as an error, and so does a line longer than any
        // record (a file of zeros): treat either as the end of the valid prefix.
        let n = match self.lines.read_line(&mut self.buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Ok(None),
            Err(e) if crate::input::is_refused(&e) => return Ok(None),
            Err(e) => return Err(io_err(&self.path)(e)),
        };
        let rec: Option<PointRecord> =
            decode_line(&self.buf).and_then(|j| serde_json::from_str(j).ok());
        match rec {
            Some(r) if r.point == self.seq.nth(self.next) => {
                self.next += 1;
                self.valid_len += n as u64;
                Ok(Some(r))
            }
            _ => Ok(None),
        }
    }
}

/// Appends records to a journal; each record is one `write` of one whole line.
pub struct Writer {
    out: BufWriter<File>,
    path: PathBuf,
}

impl Writer {
    /// Start a new journal with `header` (truncating any old file).
    pub fn create(path: &Path, header: &Header) -> Result<Writer, JournalError> {
        let file = File::create(path).map_err(io_err(path))?;
        let mut w = Writer { out: BufWriter::new(file), path: path.to_path_buf() };
        let json = serde_json::to_string(header).expect("a header serializes");
        w.write_line(&json)?;
        Ok(w)
    }

    /// Continue a journal after its valid prefix of `valid_len` bytes (cutting a torn tail).
    pub fn resume(path: &Path, valid_len: u64) -> Result<Writer, JournalError> {
        let file = OpenOptions::new().write(true).open(path).map_err(io_err(path))?;
        file.set_len(valid_len).map_err(io_err(path))?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(valid_len))
            .map_err(io_err(path))?;
        Ok(Writer { out: BufWriter::new(file), path: path.to_path_buf() })
    }

    pub fn append(&mut self, rec: &PointRecord) -> Result<(), JournalError> {
        let json = serde_json::to_string(rec).expect("a record serializes");
        self.write_line(&json)
    }

    fn write_line(&mut self, json: &str) -> Result<(), JournalError> {
        let line = encode_line(json);
        self.out.write_all(line.as_bytes()).map_err(io_err(&self.path))?;
        self.out.flush().map_err(io_err(&self.path))
    }

    /// Flush and fsync: after this the records survive a machine crash.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.out.flush().map_err(io_err(&self.path))?;
        self.out.get_ref().sync_data().map_err(io_err(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header of a journal of `points` points.
    fn header(points: u64) -> Header {
        let (content_hash, manifest, axis_keys) = ("abc".into(), "{}".into(), vec!["k".into()]);
        Header {
            format: FORMAT.into(),
            content_hash,
            points,
            shard: None,
            axis_keys,
            manifest,
            hold: true,
        }
    }

    fn rec(point: u64) -> PointRecord {
        PointRecord {
            point,
            runs: format!("{point},a\n"),
            summary: format!("{point},s\n"),
            hists: format!("Tag=p{point:05}_x_ttft,0.000,0.000,0.000,QUJD\n"),
            hold: format!("{point},h\n"),
        }
    }

    #[test]
    fn torn_tail_is_cut_at_every_byte() {
        let dir = std::env::temp_dir().join(format!("prefixsim-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(JOURNAL_FILE);
        let h = header(3);
        let mut w = Writer::create(&path, &h).unwrap();
        for p in 0..3 {
            w.append(&rec(p)).unwrap();
        }
        drop(w);
        let full = std::fs::read(&path).unwrap();
        let header_len = full.iter().position(|&b| b == b'\n').unwrap() + 1;
        for cut in 0..=full.len() {
            std::fs::write(&path, &full[..cut]).unwrap();
            let s = scan(&path).unwrap();
            if cut < header_len {
                assert!(s.is_none(), "cut {cut}");
                continue;
            }
            let s = s.unwrap();
            let lines_done = full[..cut].iter().filter(|&&b| b == b'\n').count() as u64 - 1;
            assert_eq!(s.records, lines_done, "cut {cut}");
            let mut w = Writer::resume(&path, s.valid_len).unwrap();
            for p in s.records..3 {
                w.append(&rec(p)).unwrap();
            }
            drop(w);
            assert_eq!(std::fs::read(&path).unwrap(), full, "cut {cut}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A journal written before hold.csv (no `hold` in its header or records) still reads:
    /// its header says so (so a resume or merge with newer ones is refused) and its records
    /// have no hold row.
    #[test]
    fn a_journal_from_before_hold_answers_reads() {
        let dir =
            std::env::temp_dir().join(format!("prefixsim-journal-old-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(JOURNAL_FILE);
        let h = header(1);
        let strip = |json: String, field: &str| {
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            let mut m = v.as_object().unwrap().clone();
            assert!(m.remove(field).is_some(), "{field}");
            serde_json::to_string(&m).unwrap()
        };
        let head = strip(serde_json::to_string(&h).unwrap(), "hold");
        let old = strip(serde_json::to_string(&rec(0)).unwrap(), "hold");
        std::fs::write(&path, encode_line(&head) + &encode_line(&old)).unwrap();
        let mut r = Reader::open(&path).unwrap().unwrap();
        assert!(!r.header.hold && h.hold);
        assert_eq!(r.header, Header { hold: false, ..h });
        let got = r.next_record().unwrap().unwrap();
        assert_eq!(got, PointRecord { hold: String::new(), ..rec(0) });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
