//! The rows of `summary.csv` read again from the file, by the index of `Summary`
//! (`summary.rs`): all of them as a stream past the figures and tables (`Summary::iter`,
//! `by_point`), or a point's (`rows_at`). A row read again is checked for what is read of it
//! (its width, point, strategy and the numbers kept); one that no longer reads so (the file
//! changed under the index) ends the stream and is kept for `Summary::check`.

use super::error::{point_range, ResultsError};
use super::schema::{AxisValues, SummaryRow};
use super::summary::{Stretch, Summary};
use super::table::CsvLines;

impl Summary {
    /// Every row, by point (file order within a point), read again from the file as it
    /// streams past; a failure is kept for `check` and ends the stream.
    pub fn iter(&self) -> Rows<'_> {
        self.rows_of(0..self.stretches.len())
    }

    /// The rows of the stretches `range`, streamed.
    fn rows_of(&self, range: std::ops::Range<usize>) -> Rows<'_> {
        let (next, end) = (range.start, range.end);
        Rows { summary: self, next, end, lines: None, current: None, failed: false }
    }

    /// Every point's rows, in point order: the stream grouped by point.
    pub fn by_point(&self) -> impl Iterator<Item = (u32, Vec<SummaryRow>)> + '_ {
        let mut rows = self.iter().peekable();
        std::iter::from_fn(move || {
            let first = rows.next()?;
            let point = first.point;
            let mut here = vec![first];
            while let Some(r) = rows.next_if(|r| r.point == point) {
                here.push(r);
            }
            Some((point, here))
        })
    }

    /// The rows of `point`, in file order: found by a search of the index, read again.
    pub fn rows_at(&self, point: u32) -> Vec<SummaryRow> {
        self.rows_of(point_range(&self.stretches, point, |s| s.point)).collect()
    }
}

/// The stretch being read: its rows left, their axis values, its pattern.
struct Current {
    stretch: Stretch,
    axes: AxisValues,
    read: usize,
    left: usize,
}

/// The rows of a summary streamed from its file (`Summary::iter`).
pub struct Rows<'a> {
    summary: &'a Summary,
    /// The next stretch to start, and the end of those to read.
    next: usize,
    end: usize,
    lines: Option<CsvLines>,
    current: Option<Current>,
    failed: bool,
}

impl Rows<'_> {
    /// The stretch of the row last read: its place in `Summary::axes`.
    pub fn stretch(&self) -> usize {
        self.next.saturating_sub(1)
    }

    /// The next row, or the error of a file that no longer reads as it was indexed.
    fn read_row(&mut self) -> Result<Option<SummaryRow>, ResultsError> {
        let s = self.summary;
        if self.current.as_ref().is_none_or(|c| c.left == 0) {
            let Some(&stretch) = s.stretches[..self.end].get(self.next) else { return Ok(None) };
            self.next += 1;
            self.start(stretch)?;
        }
        let (Some(c), Some(lines)) = (self.current.as_mut(), self.lines.as_mut()) else {
            return Ok(None);
        };
        let csv = s.csv.as_ref().expect("a stretch is of a file");
        let changed = |line: usize, what: &str| {
            ResultsError::malformed(
                &csv.path,
                line,
                format!("{what} was not there when the file was read"),
            )
        };
        let at = c.stretch.line as usize + 1;
        let Some(line) = lines.next_row()? else {
            return Err(changed(at, "the end of the file"));
        };
        let f = lines.row();
        let (point, replications, values) = s.row_of(lines, (line, f), false)?;
        let id = s.patterns[c.stretch.pattern as usize][c.read];
        let label = &f[s.layout.strategy];
        if point != c.stretch.point || *label != s.written[id as usize] {
            return Err(changed(line, &format!("row of point {point}, strategy `{label}`,")));
        }
        c.read += 1;
        c.left -= 1;
        let strategy = s.labels[id as usize].clone();
        Ok(Some(SummaryRow { point, axis_values: c.axes.clone(), strategy, replications, values }))
    }

    /// Begin `stretch`: go on reading where the last one ended if it starts there, else
    /// open the file again at its offset.
    fn start(&mut self, stretch: Stretch) -> Result<(), ResultsError> {
        let s = self.summary;
        let Some(csv) = &s.csv else { return Ok(()) };
        let here = self.lines.as_ref().map(|l| l.position().0);
        if !s.in_file_order || here != Some(stretch.offset) {
            self.lines = Some(CsvLines::reopen(csv, stretch.offset, stretch.line as usize)?);
        }
        let axes: AxisValues = s.axes_of(&stretch).into_iter().map(String::from).collect();
        let left = s.patterns[stretch.pattern as usize].len();
        self.current = Some(Current { stretch, axes, read: 0, left });
        Ok(())
    }
}

impl Iterator for Rows<'_> {
    type Item = SummaryRow;

    fn next(&mut self) -> Option<SummaryRow> {
        if self.failed {
            return None;
        }
        match self.read_row() {
            Ok(row) => row,
            Err(e) => {
                self.failed = true;
                let s = self.summary;
                let path = s.csv.as_ref().map(|c| c.path.clone()).unwrap_or_default();
                let line = self.current.as_ref().map_or(1, |c| c.stretch.line as usize + 1);
                s.failed.record_error(e, path, line);
                None
            }
        }
    }
}
