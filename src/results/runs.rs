//! The rows of `runs.csv` as `plot` and `report` read them: an index of where each point's
//! rows are in the file, and the rows of one point read again when a figure or an answer asks
//! for them, with its run's place and the few columns they read (`RUN_COLUMNS`).
//!
//! A sweep of 100,000 points x 10 replications x 6 strategies has 6,000,000 runs (1.1 GB of
//! `runs.csv`). Kept in memory, even as column arrays of 36 bytes a run, they were 2 KB a point;
//! the consumers ask for the runs of a few (point, strategy) pairs (a paired saving, the
//! Pareto figure's slice, the hold-cap answer's points), so the index keeps 16 bytes a point
//! (its first line and byte offset) and a look-up reads that point's ~60 rows again. Every row
//! is checked when the index is built, so a malformed file is an error naming its line before
//! anything is drawn; a file that changes under the index is reported by `check`.

use std::collections::BTreeMap;

use csv::StringRecord;

use super::error::{point_range, FirstFailure, ResultsError};
use super::table::{strategy_columns_at, Csv, CsvLines};

/// The columns of `runs.csv` that `plot` and `report` read; a `Run` holds these and no other.
/// `cost_usd`: the paired saving of one strategy over another (`report::answer`);
/// `makespan_s`: the Pareto figure's p99 over replications; `redundant_writes`: the share
/// of replications in which a hold saved nothing.
pub const RUN_COLUMNS: [&str; 3] = ["cost_usd", "makespan_s", "redundant_writes"];

/// Where a run's fields are in a row of `runs.csv`.
#[derive(Debug, Clone, Copy, Default)]
struct Layout {
    point: usize,
    replication: usize,
    strategy: usize,
    /// The first number column (after the strategy and its restating columns).
    first_value: usize,
}

/// Consecutive rows of one point: where the first starts.
#[derive(Debug, Clone, Copy)]
struct Stretch {
    point: u32,
    /// 0-based line and byte offset of its first row.
    line: u32,
    offset: u64,
}

/// The runs of a results directory, indexed by point (file order within a point).
#[derive(Debug, Default)]
pub struct Runs {
    /// The header of runs.csv and its path (no rows): how to read and name its rows again.
    csv: Option<Csv>,
    layout: Layout,
    /// Where each of `RUN_COLUMNS` is among a row's numbers.
    at: [Option<usize>; RUN_COLUMNS.len()],
    /// Strategy labels (renamed by `relabel`); `lookup` maps a label as written to its index.
    labels: Vec<String>,
    lookup: BTreeMap<String, u32>,
    /// Sorted by point, stably: one per point when the file is in point order, as writers
    /// leave it.
    stretches: Vec<Stretch>,
    /// The first read again that failed.
    failed: FirstFailure,
}

/// One run: its place and the values of `RUN_COLUMNS`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run<'a> {
    pub point: u32,
    pub replication: u32,
    pub strategy: &'a str,
    values: [Option<f64>; RUN_COLUMNS.len()],
}

impl Run<'_> {
    /// The value of `column`, one of `RUN_COLUMNS` (`None` if the file lacks it). Asking for
    /// another column is a bug of the caller: `Runs` does not keep it.
    pub fn get(&self, column: &str) -> Option<f64> {
        let Some(i) = RUN_COLUMNS.iter().position(|c| *c == column) else {
            panic!("runs.csv column `{column}` is not kept: add it to RUN_COLUMNS")
        };
        self.values[i]
    }
}

/// A row of runs.csv, checked: (point, replication, label as written, `RUN_COLUMNS` values).
type Row<'f> = (u32, u32, &'f str, [Option<f64>; RUN_COLUMNS.len()]);

impl Runs {
    /// Index the rows of `lines` (runs.csv, its header read), checking every number of each.
    pub(super) fn read(lines: &mut CsvLines) -> Result<Runs, ResultsError> {
        let csv = &lines.csv;
        let (point, replication, strategy) =
            (csv.column("point")?, csv.column("replication")?, csv.column("strategy")?);
        let first_value = strategy + 1 + strategy_columns_at(csv, strategy + 1);
        let mut runs = Runs::new(csv, Layout { point, replication, strategy, first_value });
        loop {
            let at = lines.position();
            let Some(line) = lines.next_row()? else { break };
            runs.index(line, lines.row(), at)?;
        }
        runs.finish();
        Ok(runs)
    }

    /// No runs yet, of the file whose header is `csv` and whose rows are laid out so.
    fn new(csv: &Csv, layout: Layout) -> Runs {
        // Of a name given twice, the last (as `Values` reads it).
        let names = &csv.header[layout.first_value..];
        let at = RUN_COLUMNS.map(|c| names.iter().rposition(|n| n == c));
        Runs { csv: Some(csv.clone()), layout, at, ..Runs::default() }
    }

    /// Check the row `fields` on `line` (1-based), which starts at `position` (as
    /// `CsvLines::position` gives it before the row is read), and index it.
    fn index(
        &mut self,
        line: usize,
        fields: &StringRecord,
        (offset, line_index): (u64, usize),
    ) -> Result<(), ResultsError> {
        let (point, _, label, _) = self.parse(line, fields)?;
        if !self.lookup.contains_key(label) {
            self.lookup.insert(label.to_string(), self.labels.len() as u32);
            self.labels.push(label.to_string());
        }
        if self.stretches.last().is_none_or(|s| s.point != point) {
            self.stretches.push(Stretch { point, line: line_index as u32, offset });
        }
        Ok(())
    }

    /// Every number of the row is checked; its place and `RUN_COLUMNS` are returned.
    fn parse<'f>(&self, line: usize, fields: &'f StringRecord) -> Result<Row<'f>, ResultsError> {
        let Some(csv) = &self.csv else { unreachable!("rows are parsed only of a file") };
        let l = self.layout;
        let mut values = [None; RUN_COLUMNS.len()];
        for c in l.first_value..fields.len() {
            let x = csv.parse_number(line, fields, c)?;
            for (v, at) in values.iter_mut().zip(self.at) {
                if at == Some(c - l.first_value) {
                    *v = Some(x);
                }
            }
        }
        let point = csv.parse_field(line, fields, l.point)?;
        let replication = csv.parse_field(line, fields, l.replication)?;
        Ok((point, replication, &fields[l.strategy], values))
    }

    /// Done indexing: order the stretches by point, stably (a file out of point order is read
    /// as if it were in order), and give back the spare capacity.
    fn finish(&mut self) {
        self.stretches.sort_by_key(|s| s.point);
        self.stretches.shrink_to_fit();
    }

    pub fn is_empty(&self) -> bool {
        self.stretches.is_empty()
    }

    /// The runs of `point`, in file order, read again from the file; a failure is kept for
    /// `check` and ends the read.
    fn read_point(&self, point: u32) -> Vec<Run<'_>> {
        let mut out = Vec::new();
        let range = point_range(&self.stretches, point, |s| s.point);
        for s in &self.stretches[range] {
            if let Err(e) = self.read_stretch(s, &mut out) {
                let path = self.csv.as_ref().map(|c| c.path.clone()).unwrap_or_default();
                self.failed.record_error(e, path, s.line as usize + 1);
                break;
            }
        }
        out
    }

    fn read_stretch<'a>(&'a self, s: &Stretch, out: &mut Vec<Run<'a>>) -> Result<(), ResultsError> {
        let Some(csv) = &self.csv else { return Ok(()) };
        let mut lines = CsvLines::reopen(csv, s.offset, s.line as usize)?;
        while let Some(line) = lines.next_row()? {
            let (point, replication, label, values) = self.parse(line, lines.row())?;
            if point != s.point {
                break;
            }
            let Some(&i) = self.lookup.get(label) else {
                let msg = format!("strategy `{label}` was not there when the file was read");
                return Err(ResultsError::malformed(&csv.path, line, msg));
            };
            let strategy = self.labels[i as usize].as_str();
            out.push(Run { point, replication, strategy, values });
        }
        Ok(())
    }

    /// The first read again that failed (the file changed since it was indexed), as the
    /// error naming its file and line.
    pub fn check(&self) -> Result<(), ResultsError> {
        self.failed.check()
    }

    /// The runs of (`point`, `strategy`), in file order: the rows of the point, found by a
    /// search of the index, read again.
    pub fn of<'a>(&'a self, point: u32, strategy: &'a str) -> impl Iterator<Item = Run<'a>> {
        self.read_point(point).into_iter().filter(move |r| r.strategy == strategy)
    }

    /// Give the labels `rename` maps a new name (see `Results::unify_swept_strategies`).
    pub(super) fn relabel(&mut self, rename: impl Fn(&str) -> Option<String>) {
        for l in &mut self.labels {
            if let Some(new) = rename(l) {
                *l = new;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The runs of `text`, written to a file of the test's own, indexed as `Results::load`
    /// does.
    fn runs_of_file(name: &str, text: &str) -> Runs {
        index(&crate::results::test_csv("runs", name, text)).unwrap()
    }

    fn index(path: &Path) -> Result<Runs, ResultsError> {
        Runs::read(&mut CsvLines::open(path)?.unwrap())
    }

    #[test]
    fn a_run_keeps_its_place_and_the_columns_read() {
        let runs = runs_of_file(
            "place",
            "point,replication,strategy,cost_usd,hit_rate,redundant_writes\n3,1,eager,0.5,0.9,2\n",
        );
        let run = runs.read_point(3)[0];
        assert_eq!((run.point, run.replication, run.strategy), (3, 1, "eager"));
        assert_eq!(run.get("cost_usd"), Some(0.5));
        assert_eq!(run.get("redundant_writes"), Some(2.0));
        assert_eq!(run.get("makespan_s"), None, "a column the file lacks");
        runs.check().unwrap();
    }

    #[test]
    fn runs_out_of_point_order_are_read_in_point_order_stably() {
        let runs = runs_of_file(
            "order",
            "point,replication,strategy,cost_usd\n2,0,a,1\n1,0,b,2\n\n2,1,a,3\n1,1,a,4\n",
        );
        let got: Vec<(u32, u32, &str, Option<f64>)> = [1, 2]
            .into_iter()
            .flat_map(|p| runs.read_point(p))
            .map(|u| (u.point, u.replication, u.strategy, u.get("cost_usd")))
            .collect();
        assert_eq!(
            got,
            [
                (1, 0, "b", Some(2.0)),
                (1, 1, "a", Some(4.0)),
                (2, 0, "a", Some(1.0)),
                (2, 1, "a", Some(3.0))
            ]
        );
        let of: Vec<u32> = runs.of(2, "a").map(|u| u.replication).collect();
        assert_eq!(of, [0, 1]);
        assert_eq!(runs.of(1, "c").count(), 0);
        assert_eq!(runs.of(7, "a").count(), 0);
    }

    #[test]
    fn a_malformed_row_is_an_error_naming_its_line_when_indexed() {
        let text = "point,replication,strategy,cost_usd\n0,0,a,1\n0,1,a,inf\n";
        let e = index(&crate::results::test_csv("runs", "bad", text)).unwrap_err();
        assert!(e.to_string().contains("bad.csv:3"), "{e}");
    }

    #[test]
    fn a_file_changed_after_indexing_is_reported_by_check() {
        let text = "point,replication,strategy,cost_usd\n0,0,a,1\n1,0,a,2\n";
        let runs = runs_of_file("changed", text);
        let path = runs.csv.as_ref().unwrap().path.clone();
        std::fs::write(&path, "point,replication,strategy,cost_usd\n0,0,a,1\n1,0,a,oops\n")
            .unwrap();
        assert_eq!(runs.of(1, "a").count(), 0);
        let e = runs.check().unwrap_err();
        assert!(e.to_string().contains("changed.csv:3"), "{e}");
    }

    #[test]
    #[should_panic(expected = "not kept")]
    fn asking_for_a_column_not_kept_is_a_bug() {
        let runs = runs_of_file("kept", "point,replication,strategy,hit_rate\n0,0,eager,1\n");
        runs.read_point(0)[0].get("hit_rate");
    }
}
