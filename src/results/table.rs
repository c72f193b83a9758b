//! The CSV of the result files (docs/results.md), read and written by the `csv` crate:
//! fields separated by `,`, lines ended by `\n`, a cell quoted with `"` (quotes doubled) when it
//! holds a comma, a quote or a line break; cells are trimmed on reading, blank lines skipped.
//! A strict reader of one row at a time (`CsvLines`, which can start again at a row it passed),
//! the checks of a result file's numbers, and the long form of a summary (`summary_long`). It
//! knows nothing of what the columns mean.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use csv::{Position, ReaderBuilder, StringRecord, Terminator, Trim, WriterBuilder};

use super::error::{open_opt, ResultsError};
use super::schema::{Columns, Values, STRATEGY_COLUMNS};
use crate::input::LineCapped;

/// One CSV line (without its `\n`) of `cells`, each quoted where the dialect needs it.
pub fn csv_line<T: AsRef<[u8]>>(cells: impl IntoIterator<Item = T>) -> String {
    let mut w = writer(Vec::with_capacity(256));
    w.write_record(cells).expect("writing to memory succeeds");
    let mut bytes = w.into_inner().expect("writing to memory succeeds");
    bytes.pop(); // the `\n`
    String::from_utf8(bytes).expect("cells of text make text")
}

/// A CSV writer of the dialect into `out`.
fn writer<W: Write>(out: W) -> csv::Writer<W> {
    WriterBuilder::new()
        .terminator(Terminator::Any(b'\n'))
        .buffer_capacity(1 << 12)
        .from_writer(out)
}

/// The fields of one CSV line, unquoted (not trimmed).
pub fn split_fields(line: &str) -> Vec<String> {
    let mut reader =
        ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line.as_bytes());
    let mut record = StringRecord::new();
    match reader.read_record(&mut record) {
        Ok(true) => record.iter().map(String::from).collect(),
        _ => vec![String::new()],
    }
}

/// A CSV result file's header and where the file is: what names the errors of its rows.
#[derive(Debug, Clone)]
pub struct Csv {
    pub path: PathBuf,
    pub header: Vec<String>,
}

impl Csv {
    /// The index of column `name`, or an error naming the file and the column.
    pub fn column(&self, name: &str) -> Result<usize, ResultsError> {
        let msg = || format!("missing column `{name}` in the header");
        let at = self.header.iter().position(|h| h == name);
        at.ok_or_else(|| ResultsError::malformed(&self.path, 1, msg()))
    }

    /// Parse field `col` of the row on `line` as a number of a result file: finite, at most
    /// `MAX_RESULT_ABS` in magnitude, and not negative in a spread column (`*_sd`, `*_ci95`).
    /// Anything else is not what prefixsim writes: an error naming file, line, column, value.
    pub fn parse_number(
        &self,
        line: usize,
        row: &StringRecord,
        col: usize,
    ) -> Result<f64, ResultsError> {
        let x: f64 = self.parse_field(line, row, col)?;
        let name = &self.header[col];
        check_number(name, x).map_or(Ok(x), |why| {
            let msg = format!("column `{name}`: `{}` {why}", &row[col]);
            Err(ResultsError::malformed(&self.path, line, msg))
        })
    }

    /// Parse field `col` of the row on `line` as `T`, naming file, line, column and value.
    pub fn parse_field<T: std::str::FromStr>(
        &self,
        line: usize,
        row: &StringRecord,
        col: usize,
    ) -> Result<T, ResultsError> {
        let text = &row[col];
        let msg = || format!("column `{}`: `{text}` is not a valid number", self.header[col]);
        text.parse().map_err(|_| ResultsError::malformed(&self.path, line, msg()))
    }
}

/// A CSV result file read one row at a time, so that reading a sweep's `runs.csv` (1.1 GB at
/// 100,000 points) holds one row, not the file.
pub struct CsvLines {
    /// The header: `column`, `parse_number` and `parse_field` name this file.
    pub csv: Csv,
    reader: csv::Reader<LineCapped<File>>,
    /// The row `next_row` read last, trimmed.
    row: StringRecord,
}

impl CsvLines {
    /// Open `path` and read its header; `None` if there is no such file. A directory in its
    /// place, bytes that are not UTF-8 and an empty file are malformed input.
    pub fn open(path: &Path) -> Result<Option<CsvLines>, ResultsError> {
        let Some(file) = open_opt(path)? else { return Ok(None) };
        let csv = Csv { path: path.to_path_buf(), header: Vec::new() };
        let mut lines = CsvLines { csv, reader: reader(1 << 16, file), row: StringRecord::new() };
        if lines.next_record()?.is_none() {
            let msg = "the file is empty (expected a header row)";
            return Err(ResultsError::malformed(path, 1, msg));
        }
        lines.csv.header = lines.row.iter().map(String::from).collect();
        Ok(Some(lines))
    }

    /// The file `csv.path` (whose header `csv` is) read again from byte `offset`, the start of
    /// the 0-based line `line`: the rows from there on, as the first read found them.
    pub fn reopen(csv: &Csv, offset: u64, line: usize) -> Result<CsvLines, ResultsError> {
        let file = open_opt(&csv.path)?.ok_or_else(|| {
            let gone = std::io::Error::new(std::io::ErrorKind::NotFound, "gone since it was read");
            ResultsError::io(&csv.path, gone)
        })?;
        // A point's rows are ~10 KB in a sweep's runs.csv: less than a whole read's buffer.
        let mut reader = reader(1 << 14, file);
        let mut at = Position::new();
        at.set_byte(offset).set_line(line as u64 + 1);
        reader.seek(at).map_err(|e| malformed_or_io(&csv.path, e))?;
        Ok(CsvLines { csv: csv.clone(), reader, row: StringRecord::new() })
    }

    /// Where the next row starts: (byte offset, 0-based line), for `reopen`.
    pub fn position(&self) -> (u64, usize) {
        let p = self.reader.position();
        (p.byte(), p.line() as usize - 1)
    }

    /// Fields `first..` of the row on `line` as numbers, by the column names `names`: those
    /// `keep` marks are kept, and checked; with `every`, all are checked (a row read again,
    /// checked whole when it was first read, need not be).
    pub fn values(
        &self,
        line: usize,
        first: usize,
        (names, keep): &(Columns, Vec<bool>),
        every: bool,
    ) -> Result<Values, ResultsError> {
        // Sized up front: a collect grows by doubling, and the spare capacity was 40% of a
        // sweep's summary in memory.
        let mut numbers = Vec::with_capacity(keep.iter().filter(|&&k| k).count());
        for (c, &k) in (first..self.row.len()).zip(keep) {
            if k || every {
                let x = self.csv.parse_number(line, &self.row, c)?;
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
        let Some(line) = self.next_record()? else { return Ok(None) };
        if self.row.len() != self.csv.header.len() {
            let msg = format!(
                "{} fields, but the header has {} columns: `{}`",
                self.row.len(),
                self.csv.header.len(),
                csv_line(&self.row)
            );
            return Err(ResultsError::malformed(&self.csv.path, line, msg));
        }
        Ok(Some(line))
    }

    /// The next record that is not blank, and its 1-based line.
    fn next_record(&mut self) -> Result<Option<usize>, ResultsError> {
        loop {
            let more = self.reader.read_record(&mut self.row);
            if !more.map_err(|e| malformed_or_io(&self.csv.path, e))? {
                return Ok(None);
            }
            let blank = self.row.len() == 1 && self.row[0].is_empty();
            if !blank {
                // The line the row ends on (its position is where the blank lines before it
                // start); the last row of a file may end without a line break.
                let start = self.row.position().map_or(1, |p| p.line());
                let end = self.reader.position().line() - 1;
                return Ok(Some(end.max(start) as usize));
            }
        }
    }

    /// The row `next_row` read last.
    pub fn row(&self) -> &StringRecord {
        &self.row
    }
}

/// A reader of the dialect, with a buffer of `capacity` bytes.
fn reader(capacity: usize, file: LineCapped<File>) -> csv::Reader<LineCapped<File>> {
    ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(Trim::All)
        .buffer_capacity(capacity)
        .from_reader(file)
}

/// The error of a read of the file at `path`: text that is not UTF-8 names its line.
fn malformed_or_io(path: &Path, e: csv::Error) -> ResultsError {
    let path = path.to_path_buf();
    match e.into_kind() {
        csv::ErrorKind::Io(source) => ResultsError::io(&path, source),
        csv::ErrorKind::Utf8 { pos, err } => ResultsError::Malformed {
            path,
            line: pos.map_or(1, |p| p.line() as usize),
            msg: format!("not UTF-8 text (field {}, byte {})", err.field() + 1, err.valid_up_to()),
        },
        other => ResultsError::Malformed { path, line: 1, msg: format!("{other:?}") },
    }
}

/// How many of `STRATEGY_COLUMNS` the header has at `at` (all or none: files written before
/// them have none). They restate the strategy label, so the reader skips them.
pub(super) fn strategy_columns_at(csv: &Csv, at: usize) -> usize {
    let n = STRATEGY_COLUMNS.len();
    let here = csv.header.get(at..at + n);
    if here.is_some_and(|h| h.iter().zip(STRATEGY_COLUMNS).all(|(a, b)| a == b)) {
        n
    } else {
        0
    }
}

/// Why `x`, the value of a field called `name`, cannot be in a result file (`None`: it can).
pub fn check_number(name: &str, x: f64) -> Option<String> {
    use crate::limits::MAX_RESULT_ABS;
    if !x.is_finite() {
        Some("is not a finite number".into())
    } else if x.abs() > MAX_RESULT_ABS {
        Some(format!("is beyond {MAX_RESULT_ABS:e} in magnitude (not a value prefixsim writes)"))
    } else if x < 0.0 && (name.ends_with("_sd") || name.ends_with("ci95")) {
        Some("is negative (a spread or confidence interval cannot be)".into())
    } else {
        None
    }
}

/// Why `summary_long` stopped: the summary did not read, or the output did not take it.
#[derive(Debug, thiserror::Error)]
pub enum LongError {
    #[error(transparent)]
    Read(#[from] ResultsError),
    #[error("{0}")]
    Write(#[from] std::io::Error),
}

/// `summary.csv` in long form, for pandas, R and spreadsheets: one row per (point, strategy,
/// metric), columns `point,<axis columns>,strategy,<STRATEGY_COLUMNS>,metric,value`. The
/// metrics are `replications` and every value column, in the file's order; every cell is
/// copied as written (no number is reformatted), so each value cell of the wide file is one
/// row of the long one. Written to `out` as `summary` (its header read) streams past, a row of
/// the wide file at a time (a sweep's summary is ~70 rows of the long file a row); returns
/// the rows written.
pub fn summary_long(summary: &mut CsvLines, out: &mut impl Write) -> Result<usize, LongError> {
    let header = summary.csv.header.clone();
    let reps = summary.csv.column("replications")?;
    let n = strategy_columns_at(&summary.csv, reps + 1);
    let id_cols: Vec<usize> = (0..reps).chain(reps + 1..reps + 1 + n).collect();
    let metric_cols: Vec<usize> = (reps..header.len()).filter(|c| !id_cols.contains(c)).collect();
    let mut w = writer(out);
    let id = |row: &dyn Fn(usize) -> String| id_cols.iter().map(|&c| row(c)).collect::<Vec<_>>();
    w.write_record(
        id(&|c| header[c].clone()).iter().chain(["metric", "value"].map(String::from).iter()),
    )
    .map_err(std::io::Error::from)?;
    let mut rows = 0;
    while summary.next_row()?.is_some() {
        let f = summary.row();
        let ids = id(&|c| f[c].to_string());
        for &c in &metric_cols {
            w.write_record(ids.iter().map(String::as_str).chain([header[c].as_str(), &f[c]]))
                .map_err(std::io::Error::from)?;
            rows += 1;
        }
    }
    w.flush()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_where_they_would_not_split_back() {
        let cells = ["eager", "wait_first(max_wait=5s)", "a,b", "say \"hi\"", "x(", ""];
        let line = csv_line(cells);
        assert_eq!(line, "eager,wait_first(max_wait=5s),\"a,b\",\"say \"\"hi\"\"\",x(,");
        assert_eq!(split_fields(&line), cells);
        // A comma inside parentheses splits unless quoted (files of early versions did not
        // quote `wait_first(max_wait=5s,release=timer)`; these now must).
        assert_eq!(split_fields("1,f(a,b),2"), ["1", "f(a", "b)", "2"]);
    }

    #[test]
    fn rows_are_trimmed_blank_lines_skipped_and_a_short_row_names_its_line() {
        let path = crate::results::test_csv("table", "short", "a, b\n\n 1 ,\" 2\"\n   \n3\n");
        let mut lines = CsvLines::open(&path).unwrap().unwrap();
        assert_eq!(lines.csv.header, ["a", "b"]);
        assert_eq!(lines.next_row().unwrap(), Some(3));
        assert_eq!(lines.row(), &StringRecord::from(vec!["1", "2"]));
        let e = lines.next_row().unwrap_err();
        assert!(e.to_string().contains("short.csv:5: 1 fields, but the header has 2"), "{e}");
    }

    #[test]
    fn a_reopened_file_reads_on_from_where_it_was() {
        let path = crate::results::test_csv("table", "again", "a,b\n1,2\n3,4\n5,6\n");
        let mut lines = CsvLines::open(&path).unwrap().unwrap();
        lines.next_row().unwrap();
        let at = lines.position();
        assert_eq!(at.1, 2);
        let mut again = CsvLines::reopen(&lines.csv, at.0, at.1).unwrap();
        assert_eq!(again.next_row().unwrap(), Some(3));
        assert_eq!(&again.row()[0], "3");
    }
}
