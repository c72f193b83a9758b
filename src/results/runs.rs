//! The rows of `runs.csv` as `plot` and `report` read them: per run its point, replication and
//! strategy, and the few columns a figure or an answer reads (`RUN_COLUMNS`), in column arrays.
//!
//! A sweep of 100,000 points x 10 replications x 6 strategies has 6,000,000 runs. Kept as rows
//! (a label, the axis values as text and 18 numbers each) they took ~400 bytes a run, 24 KB a
//! point; here a run takes 36 bytes: three u32 and the three numbers the consumers use.

use std::collections::BTreeMap;
use std::ops::Range;

/// The columns of `runs.csv` that `plot` and `report` read; `Runs` keeps these and no other.
/// `cost_usd`: the paired saving of one strategy over another (`report::answer`);
/// `makespan_s`: the Pareto figure's p99 over replications; `redundant_writes`: the share
/// of replications in which a hold saved nothing.
pub const RUN_COLUMNS: [&str; 3] = ["cost_usd", "makespan_s", "redundant_writes"];

/// The runs of a results directory, sorted by point (file order within a point).
#[derive(Debug, Clone, Default)]
pub struct Runs {
    /// Strategy labels; a run holds an index into them.
    labels: Vec<String>,
    point: Vec<u32>,
    replication: Vec<u32>,
    strategy: Vec<u32>,
    /// The values of `RUN_COLUMNS[i]`, one per run; `None` if the file has no such column.
    columns: [Option<Vec<f64>>; RUN_COLUMNS.len()],
    /// Where each of `RUN_COLUMNS` is in a row's numbers (while reading).
    at: [Option<usize>; RUN_COLUMNS.len()],
    /// Label -> index (while reading; emptied by `finish`).
    lookup: BTreeMap<String, u32>,
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

impl Runs {
    /// No runs yet, of a file whose numbers are the columns `names` (in row order).
    pub fn new(names: &[String]) -> Runs {
        // Of a name given twice, the last (as `Values` reads it).
        let at = RUN_COLUMNS.map(|c| names.iter().rposition(|n| n == c));
        Runs { columns: at.map(|a| a.map(|_| Vec::new())), at, ..Runs::default() }
    }

    /// Add the run of `label` at (`point`, `replication`) whose numbers are `numbers` (every
    /// number column of its row, in file order).
    pub fn push(&mut self, point: u32, replication: u32, label: &str, numbers: &[f64]) {
        let s = match self.lookup.get(label) {
            Some(&s) => s,
            None => {
                let s = self.labels.len() as u32;
                self.labels.push(label.to_string());
                self.lookup.insert(label.to_string(), s);
                s
            }
        };
        self.point.push(point);
        self.replication.push(replication);
        self.strategy.push(s);
        for (column, at) in self.columns.iter_mut().zip(self.at) {
            if let (Some(column), Some(at)) = (column, at) {
                column.push(numbers[at]);
            }
        }
    }

    /// Done reading: order the runs by point, stably (writers order them so already; a file
    /// that does not is read as if it did), and give back the spare capacity.
    pub fn finish(&mut self) {
        self.lookup = BTreeMap::new();
        if !self.point.is_sorted() {
            let mut order: Vec<usize> = (0..self.point.len()).collect();
            order.sort_by_key(|&i| self.point[i]);
            let permute = |v: &mut Vec<u32>| *v = order.iter().map(|&i| v[i]).collect();
            permute(&mut self.point);
            permute(&mut self.replication);
            permute(&mut self.strategy);
            for column in self.columns.iter_mut().flatten() {
                *column = order.iter().map(|&i| column[i]).collect();
            }
        }
        self.point.shrink_to_fit();
        self.replication.shrink_to_fit();
        self.strategy.shrink_to_fit();
        self.columns.iter_mut().flatten().for_each(|c| c.shrink_to_fit());
    }

    pub fn len(&self) -> usize {
        self.point.len()
    }

    pub fn is_empty(&self) -> bool {
        self.point.is_empty()
    }

    fn run(&self, i: usize) -> Run<'_> {
        Run {
            point: self.point[i],
            replication: self.replication[i],
            strategy: &self.labels[self.strategy[i] as usize],
            values: std::array::from_fn(|c| self.columns[c].as_ref().map(|v| v[i])),
        }
    }

    /// Every run, by point.
    pub fn iter(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        (0..self.len()).map(|i| self.run(i))
    }

    /// The runs of (`point`, `strategy`), in file order (a binary search for the point:
    /// figures and answers ask per point, and a scan of every run each time was quadratic in
    /// a sweep's points).
    pub fn of<'a>(&'a self, point: u32, strategy: &'a str) -> impl Iterator<Item = Run<'a>> {
        let Range { start, end } = super::read::point_range(&self.point, point, |&p| p);
        (start..end).map(|i| self.run(i)).filter(move |r| r.strategy == strategy)
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

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_run_keeps_its_place_and_the_columns_read() {
        let mut runs = Runs::new(&names(&["cost_usd", "hit_rate", "redundant_writes"]));
        runs.push(3, 1, "eager", &[0.5, 0.9, 2.0]);
        runs.finish();
        let run = runs.iter().next().unwrap();
        assert_eq!((run.point, run.replication, run.strategy), (3, 1, "eager"));
        assert_eq!(run.get("cost_usd"), Some(0.5));
        assert_eq!(run.get("redundant_writes"), Some(2.0));
        assert_eq!(run.get("makespan_s"), None, "a column the file lacks");
    }

    #[test]
    fn runs_out_of_point_order_are_sorted_stably() {
        let mut runs = Runs::new(&names(&["cost_usd"]));
        for (p, r, s, c) in [(2, 0, "a", 1.0), (1, 0, "b", 2.0), (2, 1, "a", 3.0), (1, 1, "a", 4.0)]
        {
            runs.push(p, r, s, &[c]);
        }
        runs.finish();
        let got: Vec<(u32, u32, &str, Option<f64>)> =
            runs.iter().map(|u| (u.point, u.replication, u.strategy, u.get("cost_usd"))).collect();
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
    #[should_panic(expected = "not kept")]
    fn asking_for_a_column_not_kept_is_a_bug() {
        let mut runs = Runs::new(&names(&["hit_rate"]));
        runs.push(0, 0, "eager", &[1.0]);
        runs.iter().next().unwrap().get("hit_rate");
    }
}
