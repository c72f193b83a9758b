//! The rows of `summary.csv` as `plot` and `report` read them: an index of where each point's
//! rows are in the file, with each point's axis values and strategies, and the rows themselves
//! read again (every number checked, `SUMMARY_COLUMNS_READ` kept) as a stream past the
//! figures and tables, or a point at a time.
//!
//! A sweep of 100,000 points x 6 strategies has 600,000 rows (0.46 GB). Held as rows, even of
//! 15 numbers, they were ~1.1 KB a point; the index keeps ~40 bytes a point: where its rows
//! start (a `Stretch`), the index of each axis value in a pool of the axis's distinct values,
//! and the strategies of its rows as one of the few patterns a sweep has. What only needs
//! the axes (the groups, combinations and slices of the figures) reads the index; what needs
//! the numbers streams the file (`iter`, `by_point`) or reads a point again (`rows_at`).
//! Every row is checked when the index is built, so a malformed file is an error naming its
//! line before anything is drawn; the rows read again are `summary_rows.rs`'s.

use std::collections::{BTreeMap, HashMap};

use csv::StringRecord;

use super::error::{FirstFailure, ResultsError};
use super::schema::{is_seconds_column, kept_column_index, Columns, Label, SUMMARY_COLUMNS_READ};
use super::table::{strategy_columns_at, Csv, CsvLines};

/// Where a row's fields are in `summary.csv`.
#[derive(Debug, Default)]
pub(super) struct Layout {
    point: usize,
    pub(super) strategy: usize,
    replications: usize,
    /// The axis columns (not the seconds columns restating a duration axis).
    axes: Vec<usize>,
    first_value: usize,
    /// The value columns by name, and which of them a row keeps.
    names: (Columns, Vec<bool>),
}

/// Consecutive rows of one point with the same axis values: where the first starts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stretch {
    pub(super) point: u32,
    /// 0-based line and byte offset of its first row.
    pub(super) line: u32,
    pub(super) offset: u64,
    /// Its rows' strategies (`Summary::patterns`).
    pub(super) pattern: u32,
    /// Its axis values: `Summary::axis_ids[at..at + axes]`.
    at: u32,
}

/// The distinct texts of one axis, in first-seen order, in one string.
#[derive(Debug, Default)]
struct Pool {
    text: String,
    ends: Vec<u32>,
}

impl Pool {
    fn get(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// The summary of a results directory, indexed by point (file order within a point).
#[derive(Debug, Default)]
pub struct Summary {
    /// The header of summary.csv and its path (no rows): how to read and name its rows again.
    pub(super) csv: Option<Csv>,
    pub(super) layout: Layout,
    /// Axis keys (the columns between `point` and `strategy`).
    keys: Vec<String>,
    /// Strategy labels as written, and as shown (renamed by `relabel`).
    pub(super) written: Vec<String>,
    pub(super) labels: Vec<Label>,
    lookup: HashMap<String, u32>,
    /// The label ids of a stretch's rows, in file order; most sweeps have one pattern.
    pub(super) patterns: Vec<Box<[u32]>>,
    pools: Vec<Pool>,
    axis_ids: Vec<u32>,
    /// Sorted by point, stably.
    pub(super) stretches: Vec<Stretch>,
    /// True when the stretches are in file order (one read streams them all).
    pub(super) in_file_order: bool,
    pub(super) failed: FirstFailure,
}

/// While indexing: the look-ups that make the compact index, dropped when it is done.
#[derive(Default)]
struct Interning {
    patterns: HashMap<Vec<u32>, u32>,
    values: Vec<HashMap<String, u32>>,
    pattern: Vec<u32>,
}

impl Summary {
    /// Index the rows of `lines` (summary.csv, its header read), checking every number.
    pub(super) fn read(lines: &mut CsvLines) -> Result<Summary, ResultsError> {
        let mut s = Summary::new(&lines.csv)?;
        let mut interning =
            Interning { values: vec![HashMap::new(); s.keys.len()], ..Interning::default() };
        let mut ids = Vec::with_capacity(s.keys.len());
        loop {
            let at = lines.position();
            let Some(line) = lines.next_row()? else { break };
            let f = lines.row();
            let (point, _, _) = s.row_of(lines, (line, f), true)?;
            s.index(&mut interning, &mut ids, point, f, at);
        }
        s.close_stretch(&mut interning);
        s.finish();
        Ok(s)
    }

    fn new(csv: &Csv) -> Result<Summary, ResultsError> {
        let point = csv.column("point")?;
        let strategy = csv.column("strategy")?;
        let replications = csv.column("replications")?;
        if point != 0 || strategy < point || replications != strategy + 1 {
            let msg = "the header must start `point,<axis keys...>,strategy,replications,`";
            return Err(ResultsError::malformed(&csv.path, 1, msg));
        }
        let axes: Vec<usize> = (1..strategy)
            .filter(|&c| !(c > 1 && is_seconds_column(&csv.header[..strategy], c)))
            .collect();
        let keys = axes.iter().map(|&c| csv.header[c].clone()).collect();
        let first_value = replications + 1 + strategy_columns_at(csv, replications + 1);
        let names = kept_column_index(&csv.header[first_value..], &SUMMARY_COLUMNS_READ);
        let layout = Layout { point, strategy, replications, axes, first_value, names };
        let pools = (0..layout.axes.len()).map(|_| Pool::default()).collect();
        Ok(Summary {
            csv: Some(csv.clone()),
            layout,
            keys,
            pools,
            in_file_order: true,
            ..Summary::default()
        })
    }

    /// Index the checked row `f`, which starts at `(offset, line)`: a new stretch when its
    /// point or axis values differ from the row before.
    fn index(
        &mut self,
        i: &mut Interning,
        ids: &mut Vec<u32>,
        point: u32,
        f: &StringRecord,
        at: (u64, usize),
    ) {
        ids.clear();
        for (a, &c) in self.layout.axes.iter().enumerate() {
            let pool = &mut self.pools[a];
            let id = *i.values[a].entry(f[c].to_string()).or_insert_with(|| {
                pool.text.push_str(&f[c]);
                pool.ends.push(pool.text.len() as u32);
                pool.ends.len() as u32 - 1
            });
            ids.push(id);
        }
        let same = self.stretches.last().is_some_and(|s| {
            let n = ids.len();
            s.point == point && self.axis_ids[s.at as usize..s.at as usize + n] == ids[..]
        });
        if !same {
            self.close_stretch(i);
            let (offset, line) = (at.0, at.1 as u32);
            let at = self.axis_ids.len() as u32;
            self.axis_ids.extend_from_slice(ids);
            self.stretches.push(Stretch { point, line, offset, pattern: 0, at });
        }
        let label = &f[self.layout.strategy];
        let id = match self.lookup.get(label) {
            Some(&id) => id,
            None => {
                let id = self.written.len() as u32;
                self.lookup.insert(label.to_string(), id);
                self.written.push(label.to_string());
                self.labels.push(Label::from(label));
                id
            }
        };
        i.pattern.push(id);
    }

    /// The last stretch's rows are all read: give it its pattern of strategies.
    fn close_stretch(&mut self, i: &mut Interning) {
        let Some(last) = self.stretches.last_mut() else { return };
        let n = i.patterns.len() as u32;
        let pattern = std::mem::take(&mut i.pattern);
        last.pattern = *i.patterns.entry(pattern.clone()).or_insert_with(|| {
            self.patterns.push(pattern.into_boxed_slice());
            n
        });
    }

    /// Done indexing: order the stretches by point, stably, and give back spare capacity.
    fn finish(&mut self) {
        if !self.stretches.is_sorted_by_key(|s| s.point) {
            self.stretches.sort_by_key(|s| s.point);
            self.in_file_order = false;
        }
        self.stretches.shrink_to_fit();
        self.axis_ids.shrink_to_fit();
        for p in &mut self.pools {
            p.text.shrink_to_fit();
            p.ends.shrink_to_fit();
        }
    }

    /// The row `f` on `line`: its point, replications and the numbers kept, with every number
    /// checked (`every`, when indexing) or those kept (reading it again).
    pub(super) fn row_of(
        &self,
        lines: &CsvLines,
        (line, f): (usize, &StringRecord),
        every: bool,
    ) -> Result<(u32, u32, super::schema::Values), ResultsError> {
        let l = &self.layout;
        let values = lines.values(line, l.first_value, &l.names, every)?;
        let point = lines.csv.parse_field(line, f, l.point)?;
        Ok((point, lines.csv.parse_field(line, f, l.replications)?, values))
    }

    /// Axis keys (summary.csv columns between `point` and `strategy`).
    pub fn axis_keys(&self) -> &[String] {
        &self.keys
    }

    pub fn is_empty(&self) -> bool {
        self.stretches.is_empty()
    }

    /// The distinct points, ascending.
    pub fn points(&self) -> Vec<u32> {
        let mut p: Vec<u32> = self.stretches.iter().map(|s| s.point).collect();
        p.dedup();
        p
    }

    /// The axis values of each stretch of rows (a point, in point order), as its rows hold
    /// them, without reading the file.
    pub fn axes(&self) -> impl Iterator<Item = (u32, Vec<&str>)> + '_ {
        self.stretches.iter().map(|s| (s.point, self.axes_of(s)))
    }

    /// The 1-based line of each stretch's first row and its axis values (what
    /// `Results::check_axes` holds to the manifest).
    pub(super) fn stretch_axes(&self) -> impl Iterator<Item = (usize, Vec<&str>)> + '_ {
        self.stretches.iter().map(|s| (s.line as usize + 1, self.axes_of(s)))
    }

    pub(super) fn axes_of(&self, s: &Stretch) -> Vec<&str> {
        let ids = &self.axis_ids[s.at as usize..s.at as usize + self.pools.len()];
        ids.iter().zip(&self.pools).map(|(&i, p)| p.get(i)).collect()
    }

    /// The distinct combinations of the values of the axes `group` (indices into the axis
    /// keys), in first-seen order over the points, from the index: 8 bytes a point, where the
    /// combinations as texts took ~90.
    pub fn combos(&self, group: &[usize]) -> Combos<'_> {
        let mut c =
            Combos { summary: self, group: group.to_vec(), first: Vec::new(), at: Vec::new() };
        c.at.reserve_exact(self.stretches.len());
        if let [a] = *group {
            // One axis: its values' ids number its pool, so a table finds them.
            let mut of = vec![u32::MAX; self.pools[a].len()];
            for (k, s) in self.stretches.iter().enumerate() {
                let id = self.axis_ids[s.at as usize + a] as usize;
                if of[id] == u32::MAX {
                    of[id] = c.first.len() as u32;
                    c.first.push(k as u32);
                }
                c.at.push(of[id]);
            }
        } else {
            let mut of: HashMap<Vec<u32>, u32> = HashMap::new();
            for (k, s) in self.stretches.iter().enumerate() {
                let key = group.iter().map(|&a| self.axis_ids[s.at as usize + a]).collect();
                let n = c.first.len() as u32;
                let i = *of.entry(key).or_insert(n);
                if i == n {
                    c.first.push(k as u32);
                }
                c.at.push(i);
            }
        }
        c.first.shrink_to_fit();
        c
    }

    /// The strategies of each row, by point: (point, label as shown), without reading.
    pub fn labels(&self) -> impl Iterator<Item = (u32, &Label)> + '_ {
        self.labels_of(&self.labels)
    }

    /// As `labels`, with each label as written in the file (before `relabel`).
    pub(super) fn written_labels(&self) -> impl Iterator<Item = (u32, &String)> + '_ {
        self.labels_of(&self.written)
    }

    fn labels_of<'a, T>(&'a self, names: &'a [T]) -> impl Iterator<Item = (u32, &'a T)> + 'a {
        self.stretches.iter().flat_map(move |s| {
            self.patterns[s.pattern as usize].iter().map(move |&i| (s.point, &names[i as usize]))
        })
    }

    /// The axis values of the first row in point order.
    pub fn first_axes(&self) -> Option<Vec<&str>> {
        self.stretches.first().map(|s| self.axes_of(s))
    }

    /// The first read again that failed (the file changed since it was indexed), as the
    /// error naming its file and line.
    pub fn check(&self) -> Result<(), ResultsError> {
        self.failed.check()
    }

    /// Give the labels `rename` maps a new name (see `Results::unify_swept_strategies`).
    pub(super) fn relabel(&mut self, rename: impl Fn(&str) -> Option<String>) {
        let mut shared: BTreeMap<String, Label> = BTreeMap::new();
        for (l, w) in self.labels.iter_mut().zip(&self.written) {
            if let Some(new) = rename(w) {
                *l = shared.entry(new.clone()).or_insert_with(|| Label::from(new)).clone();
            }
        }
    }
}

/// The combinations of a group of axes (`Summary::combos`): each as the first stretch that
/// has it, and which combination each stretch has.
pub struct Combos<'a> {
    summary: &'a Summary,
    group: Vec<usize>,
    first: Vec<u32>,
    at: Vec<u32>,
}

impl<'a> Combos<'a> {
    #[allow(clippy::len_without_is_empty)] // the figures count combinations, none asks for none
    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// Combination `i`: the group's values, in the group's axis order.
    pub fn get(&self, i: usize) -> Vec<&'a str> {
        let s = self.summary;
        let st = &s.stretches[self.first[i] as usize];
        self.group.iter().map(|&a| s.pools[a].get(s.axis_ids[st.at as usize + a])).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = Vec<&'a str>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Every combination as texts.
    pub fn to_strings(&self) -> Vec<Vec<String>> {
        self.iter().map(|c| c.into_iter().map(String::from).collect()).collect()
    }

    /// The combination of the `k`th stretch (`Summary::axes`, `Rows::stretch`).
    pub fn of_stretch(&self, k: usize) -> usize {
        self.at[k] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::SummaryRow;
    use std::path::Path;

    const HEADER: &str = "point,agents,strategy,replications,cost_usd_mean,cost_usd_sd\n";

    /// The summary of `text`, written to a file of the test's own, indexed as `Results::load`
    /// does.
    fn summary_of_file(name: &str, text: &str) -> Summary {
        index(&crate::results::test_csv("summary", name, text)).unwrap()
    }

    fn index(path: &Path) -> Result<Summary, ResultsError> {
        Summary::read(&mut CsvLines::open(path)?.unwrap())
    }

    fn cost(r: &SummaryRow) -> Option<f64> {
        r.get("cost_usd_mean")
    }

    #[test]
    fn the_index_answers_the_axes_and_strategies_without_reading_the_rows() {
        let text = format!("{HEADER}0,4,eager,2,1.5,0.1\n0,4,hold,2,1.0,0.1\n1,8,eager,2,3,0\n");
        let s = summary_of_file("axes", &text);
        assert_eq!(s.points(), [0, 1]);
        assert_eq!(s.axis_keys(), ["agents"]);
        let axes: Vec<(u32, Vec<&str>)> = s.axes().collect();
        assert_eq!(axes, [(0, vec!["4"]), (1, vec!["8"])]);
        let labels: Vec<(u32, &str)> = s.labels().map(|(p, l)| (p, l.as_str())).collect();
        assert_eq!(labels, [(0, "eager"), (0, "hold"), (1, "eager")]);
    }

    #[test]
    fn rows_stream_with_their_numbers_and_are_found_by_point_as_streamed() {
        let text = format!("{HEADER}0,4,eager,2,1.5,0.1\n0,4,hold,2,1.0,0.1\n\n1,8,eager,3,3,0\n");
        let s = summary_of_file("stream", &text);
        let rows: Vec<SummaryRow> = s.iter().collect();
        let got: Vec<(u32, &str, u32, Option<f64>)> =
            rows.iter().map(|r| (r.point, r.strategy.as_str(), r.replications, cost(r))).collect();
        assert_eq!(
            got,
            [(0, "eager", 2, Some(1.5)), (0, "hold", 2, Some(1.0)), (1, "eager", 3, Some(3.0))]
        );
        assert_eq!(rows[2].axis_values, vec!["8".to_string()]);
        for p in s.points() {
            let scanned: Vec<&SummaryRow> = rows.iter().filter(|r| r.point == p).collect();
            let found = s.rows_at(p);
            assert_eq!(found.iter().collect::<Vec<_>>(), scanned, "point {p}");
        }
        let grouped: Vec<(u32, usize)> = s.by_point().map(|(p, r)| (p, r.len())).collect();
        assert_eq!(grouped, [(0, 2), (1, 1)]);
        assert!(s.rows_at(7).is_empty());
        s.check().unwrap();
    }

    #[test]
    fn rows_out_of_point_order_are_streamed_in_point_order_stably() {
        let text =
            format!("{HEADER}2,8,a,1,1,0\n1,4,b,1,2,0\n2,8,b,1,3,0\n1,4,a,1,4,0\n0,2,a,1,5,0\n");
        let s = summary_of_file("order", &text);
        let got: Vec<(u32, String, Option<f64>)> =
            s.iter().map(|r| (r.point, r.strategy.to_string(), cost(&r))).collect();
        let want = [(0, "a", 5.0), (1, "b", 2.0), (1, "a", 4.0), (2, "a", 1.0), (2, "b", 3.0)];
        assert_eq!(got, want.map(|(p, l, c)| (p, l.to_string(), Some(c))));
        assert_eq!(s.rows_at(1).len(), 2);
        assert_eq!(s.axes().map(|(p, _)| p).collect::<Vec<_>>(), [0, 1, 1, 2, 2]);
    }

    #[test]
    fn a_malformed_row_is_an_error_naming_its_line_when_indexed() {
        let text = format!("{HEADER}0,4,a,1,1,0\n1,4,a,1,1,-2\n");
        let e = index(&crate::results::test_csv("summary", "bad", &text)).unwrap_err();
        assert!(e.to_string().contains("bad.csv:3"), "{e}");
    }

    #[test]
    fn a_file_changed_after_indexing_is_reported_by_check() {
        let s = summary_of_file("changed", &format!("{HEADER}0,4,a,1,1,0\n1,8,a,1,2,0\n"));
        let path = s.csv.as_ref().unwrap().path.clone();
        std::fs::write(&path, format!("{HEADER}0,4,a,1,1,0\n1,8,a,1,oops,0\n")).unwrap();
        assert_eq!(s.iter().count(), 1, "the stream ends at the row that no longer reads");
        let e = s.check().unwrap_err();
        assert!(e.to_string().contains("changed.csv:3"), "{e}");
        let other = summary_of_file("moved", &format!("{HEADER}0,4,a,1,1,0\n1,8,a,1,2,0\n"));
        let path = other.csv.as_ref().unwrap().path.clone();
        std::fs::write(&path, format!("{HEADER}0,4,a,1,1,0\n1,8,b,1,2,0\n")).unwrap();
        assert!(other.rows_at(1).is_empty());
        let e = other.check().unwrap_err();
        assert!(e.to_string().contains("moved.csv:3") && e.to_string().contains("`b`"), "{e}");
    }

    #[test]
    fn relabelled_strategies_are_streamed_under_their_new_label() {
        let mut s =
            summary_of_file("relabel", &format!("{HEADER}0,4,w(x=1),1,1,0\n1,4,w(x=2),1,1,0\n"));
        s.relabel(|l| l.starts_with("w(").then(|| "w(x=x)".to_string()));
        let labels: Vec<String> = s.iter().map(|r| r.strategy.to_string()).collect();
        assert_eq!(labels, ["w(x=x)", "w(x=x)"]);
        let written: Vec<&str> = s.written_labels().map(|(_, l)| l.as_str()).collect();
        assert_eq!(written, ["w(x=1)", "w(x=2)"]);
    }
}
