//! A CSV result file read one line at a time, so that reading a sweep's `runs.csv` (1.1 GB at
//! 100,000 points) holds one row's text, not the file's. Same dialect and same errors as
//! `Csv::parse` (`csv.rs`), whose field parsers it lends through a header-only `Csv`.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::csv::{split_trimmed_into, Csv};
use super::error::{open_opt, ResultsError};
use super::schema::{Columns, Values};

pub struct CsvLines {
    /// The header, and no rows: `column`, `parse_number` and `parse_field` name this file.
    pub csv: Csv,
    source: Source,
    /// The fields of the row `next_row` read last, trimmed; their strings are reused.
    fields: Vec<String>,
}

/// The file's lines, one at a time into one buffer.
struct Source {
    reader: BufReader<std::fs::File>,
    buf: Vec<u8>,
    /// 0-based index of the next line, and its byte offset.
    line: usize,
    offset: usize,
}

impl CsvLines {
    /// Open `path` and read its header; `None` if there is no such file. A directory in its
    /// place, bytes that are not UTF-8 and an empty file are malformed input.
    pub fn open(path: &Path) -> Result<Option<CsvLines>, ResultsError> {
        let Some(file) = open_opt(path)? else { return Ok(None) };
        let malformed =
            |line, msg: String| ResultsError::Malformed { path: path.to_path_buf(), line, msg };
        let csv = Csv { path: path.to_path_buf(), header: Vec::new(), rows: Vec::new() };
        let reader = BufReader::with_capacity(1 << 16, file);
        let mut source = Source { reader, buf: Vec::new(), line: 0, offset: 0 };
        let Some((_, head)) = source.next_line(path)? else {
            return Err(malformed(1, "the file is empty (expected a header row)".into()));
        };
        let mut header = Vec::new();
        split_trimmed_into(head, &mut header);
        Ok(Some(CsvLines { csv: Csv { header, ..csv }, source, fields: Vec::new() }))
    }

    /// The file `csv.path` (whose header `csv` is) read again from byte `offset`, the start of
    /// the 0-based line `line`: the rows from there on, as the first read found them.
    pub fn reopen(csv: &Csv, offset: u64, line: usize) -> Result<CsvLines, ResultsError> {
        use std::io::{Seek, SeekFrom};
        let io = |e| ResultsError::Io { path: csv.path.clone(), source: e };
        let mut file = std::fs::File::open(&csv.path).map_err(io)?;
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let csv = Csv { path: csv.path.clone(), header: csv.header.clone(), rows: Vec::new() };
        // A point's rows are ~10 KB in a sweep's runs.csv; the first read's 64 KB is more than
        // one look-up needs.
        let reader = BufReader::with_capacity(1 << 14, file);
        let source = Source { reader, buf: Vec::new(), line, offset: offset as usize };
        Ok(CsvLines { csv, source, fields: Vec::new() })
    }

    /// Where the next line starts: (byte offset, 0-based line), for `reopen`.
    pub fn position(&self) -> (u64, usize) {
        (self.source.offset as u64, self.source.line)
    }

    /// Fields `first..` of the row `fields` on `line` as numbers, by the column names `names`:
    /// those `keep` marks are kept, and checked; with `every`, all are checked (a row read
    /// again, checked whole when it was first read, need not be).
    pub fn values(
        &self,
        (line, fields): (usize, &[String]),
        first: usize,
        (names, keep): &(Columns, Vec<bool>),
        every: bool,
    ) -> Result<Values, ResultsError> {
        // Sized up front: a collect grows by doubling, and the spare capacity was 40% of a
        // sweep's summary in memory.
        let mut numbers = Vec::with_capacity(keep.iter().filter(|&&k| k).count());
        for (c, &k) in (first..fields.len()).zip(keep) {
            if k || every {
                let x = self.csv.parse_number(line, fields, c)?;
                if k {
                    numbers.push(x);
                }
            }
        }
        Ok(Values::new(names.clone(), numbers))
    }

    /// Read the next row: its 1-based line number, its fields (trimmed) then in `row()`; a row
    /// whose width is not the header's is an error naming the line. `None` at the end.
    pub fn next_row(&mut self) -> Result<Option<usize>, ResultsError> {
        let path = &self.csv.path;
        let Some((line, text)) = self.source.next_line(path)? else { return Ok(None) };
        split_trimmed_into(text.trim_end_matches('\r'), &mut self.fields);
        if self.fields.len() != self.csv.header.len() {
            let msg = format!(
                "{} fields, but the header has {} columns: `{text}`",
                self.fields.len(),
                self.csv.header.len()
            );
            return Err(ResultsError::Malformed { path: path.clone(), line, msg });
        }
        Ok(Some(line))
    }

    /// The fields of the row `next_row` read last.
    pub fn row(&self) -> &[String] {
        &self.fields
    }
}

impl Source {
    /// The next non-blank line of the file at `path` (1-based line number, text without its
    /// line break).
    fn next_line(&mut self, path: &Path) -> Result<Option<(usize, &str)>, ResultsError> {
        let (at, len) = loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| ResultsError::Io { path: path.to_path_buf(), source: e })?;
            if n == 0 {
                return Ok(None);
            }
            let (at, start) = (self.line + 1, self.offset);
            self.line += 1;
            self.offset += n;
            let text = std::str::from_utf8(&self.buf).map_err(|e| {
                let bad = self.buf[e.valid_up_to()];
                let msg = format!(
                    "not UTF-8 text (byte 0x{bad:02x} at offset {})",
                    start + e.valid_up_to()
                );
                ResultsError::Malformed { path: path.to_path_buf(), line: at, msg }
            })?;
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if !text.trim().is_empty() {
                break (at, text.len());
            }
        };
        // A loop cannot return a borrow it takes again on its next turn, so the text is
        // taken again here. SAFETY: the buffer was checked to be UTF-8 above, and `len` ends
        // it before the line break stripped (ASCII), so the prefix is UTF-8 too.
        let text = unsafe { std::str::from_utf8_unchecked(&self.buf[..len]) };
        Ok(Some((at, text)))
    }
}
