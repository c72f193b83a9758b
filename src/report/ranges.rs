//! The hold answer as ranges over a sweep's assumption axes: the swept keys the experiment
//! lists in `[report] assumptions` (values nobody documents, e.g.
//! `gemini.implicit_hit_probability`). The points are grouped by the other axes (a row each,
//! e.g. policy x model); per row, each part of the answer is given as its least and greatest
//! value over the assumption values, with the values at which each end occurs, and each
//! assumption key is said to drive the row or not.
//!
//! Nothing here computes an answer: the cap to use and how often the first token comes after
//! it are hold.csv's (`sweep::hold`, per point), the held strategy's mean cost, its saving
//! against `eager` and how often it saved nothing are summary.csv's and runs.csv's, as the
//! pivot shows them per point. A key drives a row when two of the row's points that differ
//! only in that key give different answers; points of the same seed that a key does not
//! reach are identical, so "does not change it" is exact, not a tolerance. A key that takes
//! one value on a row (a zip that sweeps it on other rows only) is named with that value.

use std::collections::BTreeMap;

use super::answer::{cap_text, share_saving_nothing, Answered};
use super::doc::Block;
use super::words::{pct, usd};
use crate::config::latency_origin;
use crate::config::ExperimentSpec;
use crate::results::Results;

/// The parts of the answer a row ranges over, in table order.
const PARTS: [&str; 5] = [
    "the cap to use (`hold.csv`)",
    "first token after it",
    "mean cost",
    "saving vs `eager`",
    "replications where it saved nothing",
];

/// One point's answer: `PARTS` in order (`None`: the results have no such value).
type Answer = [Option<f64>; 5];

/// The least or greatest value of a part over a row's points, and the point's assumption
/// values.
#[derive(Debug, Clone)]
struct End {
    x: f64,
    at: Vec<String>,
}

/// One row: the values of the other axes, its points' assumption values and answers.
#[derive(Debug)]
pub struct Row {
    pub label: Vec<String>,
    points: Vec<(Vec<String>, Answer)>,
    /// Per assumption key (in `Ranges::keys` order), what it does to the row's answer.
    drives: Vec<Drive>,
    /// The row's latency, when it is a fit made on another model (`config::latency_origin`).
    pub borrowed: Option<String>,
}

/// A sweep's answer as ranges: the row axes, the assumption axes and the rows.
#[derive(Debug)]
pub struct Ranges {
    pub row_keys: Vec<String>,
    pub keys: Vec<String>,
    /// The held strategy (the hold answer's `wait_first`) whose cost the rows give.
    pub strategy: String,
    pub rows: Vec<Row>,
}

/// The ranges of `r`'s hold answer over the axes `exp` lists in `[report] assumptions`;
/// `None` when it lists none of the swept axes or the results have no hold answer.
pub fn of(r: &Results, exp: &ExperimentSpec) -> Option<Ranges> {
    let listed = &exp.report.assumptions;
    let is_assumption: Vec<bool> = r.axis_keys.iter().map(|k| listed.contains(k)).collect();
    if !is_assumption.contains(&true) || r.hold_rows.is_empty() {
        return None;
    }
    let pick = |values: &[String], want: bool| -> Vec<String> {
        values
            .iter()
            .zip(&is_assumption)
            .filter(|(_, a)| **a == want)
            .map(|v| v.0.clone())
            .collect()
    };
    let strategy = r.hold_rows[0].strategy.to_string();
    let mut rows: Vec<Row> = Vec::new();
    let mut index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for (point, here) in r.summary.by_point() {
        let Some(first) = here.first() else { continue };
        let values = first.axis_values.to_vec();
        let (label, at) = (pick(&values, false), pick(&values, true));
        let answer = answer_at(r, point, &here);
        let i = *index.entry(label.clone()).or_insert_with(|| {
            rows.push(Row { label, points: Vec::new(), drives: Vec::new(), borrowed: None });
            rows.len() - 1
        });
        rows[i].points.push((at, answer));
    }
    let row_keys = pick(&r.axis_keys, false);
    let keys = pick(&r.axis_keys, true);
    let model_at = row_keys.iter().position(|k| k == "model");
    for row in &mut rows {
        row.drives = (0..keys.len()).map(|k| drive(&row.points, k)).collect();
        let model = model_at.map_or(exp.model.name.as_str(), |i| row.label[i].as_str());
        row.borrowed = latency_origin::borrowed_for(exp, model).map(|b| b.phrase());
    }
    Some(Ranges { row_keys, keys, strategy, rows })
}

/// The answer at `point` (`here`: its summary rows).
fn answer_at(r: &Results, point: u32, here: &[crate::results::SummaryRow]) -> Answer {
    let hold = r.hold_at(point);
    let strategy = hold.map(|h| h.strategy.to_string());
    let cost_of =
        |s: &str| here.iter().find(|x| x.strategy == s).and_then(|x| x.get("cost_usd_mean"));
    let held = strategy.as_deref().and_then(cost_of);
    let saving = match (held, cost_of("eager")) {
        (Some(h), Some(e)) => Some(e - h),
        _ => None,
    };
    let nothing = strategy.as_deref().and_then(|s| share_saving_nothing(r, point, s));
    // No hold (a cap of 0) has no cap for the first token to come after, as the pivot says.
    let after = hold.filter(|h| h.cap_s > 0.0).map(|h| h.p_after_cap);
    [hold.map(|h| h.cap_s), after, held, saving, nothing]
}

/// What assumption `k` does to a row's answer.
#[derive(Debug, Clone, PartialEq)]
enum Drive {
    /// Two points that differ only in it give different answers (bit for bit).
    Moves,
    /// It takes several values on the row and every such pair of points is identical.
    Same,
    /// It takes one value on the row (a zip sweeps it on other rows only): this value.
    Held(String),
}

fn drive(points: &[(Vec<String>, Answer)], k: usize) -> Drive {
    let first = points.first().map(|(at, _)| &at[k]);
    match (first, points.iter().all(|(at, _)| Some(&at[k]) == first)) {
        (Some(v), true) => Drive::Held(trim(v)),
        _ if drives(points, k) => Drive::Moves,
        _ => Drive::Same,
    }
}

/// Whether assumption `k` moves the answer: two points whose other assumption values are
/// equal give different answers (bit for bit).
fn drives(points: &[(Vec<String>, Answer)], k: usize) -> bool {
    // The first answer of each combination of the other assumptions' values.
    let mut first: BTreeMap<Vec<&String>, [Option<u64>; 5]> = BTreeMap::new();
    points.iter().any(|(at, x)| {
        let others: Vec<&String> =
            at.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, v)| v).collect();
        let bits = x.map(|v| v.map(f64::to_bits));
        *first.entry(others).or_insert(bits) != bits
    })
}

impl Row {
    /// The least and greatest of part `p` over the row's points (the first point of each in
    /// point order), with the values of the driving keys there.
    fn span(&self, p: usize) -> Option<(End, End)> {
        let mut lo: Option<End> = None;
        let mut hi: Option<End> = None;
        for (at, a) in &self.points {
            let Some(x) = a[p] else { continue };
            let shown: Vec<String> = at
                .iter()
                .zip(&self.drives)
                .filter(|(_, d)| **d == Drive::Moves)
                .map(|(v, _)| trim(v))
                .collect();
            if lo.as_ref().is_none_or(|e| x < e.x) {
                lo = Some(End { x, at: shown.clone() });
            }
            if hi.as_ref().is_none_or(|e| x > e.x) {
                hi = Some(End { x, at: shown });
            }
        }
        Some((lo?, hi?))
    }

    /// Part `p` as a cell: one value when every point gives it, else `lo (at) – hi (at)`.
    fn cell(&self, p: usize) -> String {
        let Some((lo, hi)) = self.span(p) else { return "–".into() };
        let text = |x: f64| part_text(p, x);
        if lo.x == hi.x {
            return text(lo.x);
        }
        let at = |e: &End| match e.at.as_slice() {
            [one] => format!(" ({one})"),
            [] => String::new(),
            many => format!(" ({})", many.join(", ")),
        };
        format!("{}{} – {}{}", text(lo.x), at(&lo), text(hi.x), at(&hi))
    }
}

/// A value of part `p` as words.
fn part_text(p: usize, x: f64) -> String {
    match p {
        0 => cap_text(x),
        1 | 4 => pct(x),
        _ => usd(x),
    }
}

/// An axis cell as written for people: `0.250000` as `0.25`.
fn trim(v: &str) -> String {
    match v.contains('.') && v.parse::<f64>().is_ok() {
        true => v.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => v.to_string(),
    }
}

impl Ranges {
    /// The row's label: `(openai, gpt-5.4)`, or the one value.
    pub fn row_name(&self, row: &Row) -> String {
        match row.label.as_slice() {
            [one] => one.clone(),
            many => format!("({})", many.join(", ")),
        }
    }

    /// The keys that drive `row`, as code spans.
    fn driving(&self, row: &Row) -> Vec<String> {
        self.keys
            .iter()
            .zip(&row.drives)
            .filter(|(_, d)| **d == Drive::Moves)
            .map(|(k, _)| format!("`{k}`"))
            .collect()
    }

    /// Which assumption drives `row`, in words.
    pub fn drive_words(&self, row: &Row) -> String {
        let keys = self.keys.iter().zip(&row.drives);
        let same: Vec<String> = keys
            .clone()
            .filter(|(_, d)| **d == Drive::Same)
            .map(|(k, _)| format!("`{k}`"))
            .collect();
        let held: Vec<String> = keys
            .filter_map(|(k, d)| match d {
                Drive::Held(v) => Some(format!("`{k}` = {v}")),
                _ => None,
            })
            .collect();
        let mut words = match self.driving(row).as_slice() {
            [] => "no assumption moves it".to_string(),
            [one] => format!("driven by {one}"),
            many => format!("driven by {}", super::words::and_list(many)),
        };
        match same.as_slice() {
            [] => {}
            [one] => {
                words += &format!(
                    "; {one} does not change it (its points are identical: same seed, exact)"
                )
            }
            many => {
                words += &format!(
                    "; {} do not change it (their points are identical: same seed, exact)",
                    super::words::and_list(many)
                )
            }
        }
        if !held.is_empty() {
            words += &format!("; not swept on this row: {}", super::words::and_list(&held));
        }
        words
    }

    /// The report's hold answer leads with these: a sentence per row, and the paragraph and
    /// table of the ranges.
    pub fn answered(&self) -> Answered {
        Answered { findings: self.sentences(), blocks: self.blocks() }
    }

    /// The paragraph and table of the answer's ranges over the assumption axes.
    fn blocks(&self) -> Vec<Block> {
        let keys: Vec<String> = self.keys.iter().map(|k| format!("`{k}`")).collect();
        let lead = format!(
            "Over the assumptions {} (`[report] assumptions`: values no provider documents, \
             swept), per {}: each part of the answer from its least to its greatest value, with \
             the value \
             of the driving assumptions at each end in brackets (in the order of the \"driven by\" \
             column). An assumption drives a row when two of its points that differ only in that \
             key give different answers; one that does not gives identical points (same seed), \
             exactly; a row that holds a key at one value names it. The cap to use and the first token after it are `hold.csv`'s; the cost, the \
             saving and how often the hold saved nothing are those of `{}` as run.",
            super::words::and_list(&keys),
            match self.row_keys.as_slice() {
                [] => "experiment".to_string(),
                ks => ks.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" x "),
            },
            self.strategy
        );
        let (head, rows) = self.table();
        vec![Block::Para(lead), Block::Table(head, rows)]
    }

    /// One sentence per row: the range of each part, and what drives it.
    pub fn sentences(&self) -> Vec<String> {
        self.rows.iter().map(|row| self.sentence(row)).collect()
    }

    fn sentence(&self, row: &Row) -> String {
        let keys = self.driving(row);
        let at = match keys.as_slice() {
            [] => String::new(),
            [one] => format!(" (in brackets: {one})"),
            many => format!(" (in brackets: {})", many.join(", ")),
        };
        let after = match row.cell(1).as_str() {
            "–" => "no hold: no cap for the first token to come after".to_string(),
            a => format!("the first token comes after it in {a} of replications"),
        };
        let mut s = format!(
            "{}: the cap to use (`hold.csv`) {}; {after}; `{}` costs {}, saving {} against \
             `eager`, and saves nothing in {} of replications{at}: {}.",
            self.row_name(row),
            row.cell(0),
            self.strategy,
            row.cell(2),
            row.cell(3),
            row.cell(4),
            self.drive_words(row)
        );
        if let Some(b) = &row.borrowed {
            s.push_str(&format!(" Its latency: {b}."));
        }
        crate::numfmt::capitalised(&s)
    }

    /// The table: a row per group, the range of each part, what drives it, and the latency
    /// when some row's is borrowed.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let borrowed = self.rows.iter().any(|r| r.borrowed.is_some());
        let mut head: Vec<String> = self.row_keys.iter().map(|k| format!("`{k}`")).collect();
        head.push("driven by".into());
        head.extend(PARTS.iter().map(|p| match *p {
            "mean cost" => format!("`{}` mean cost", self.strategy),
            p => p.to_string(),
        }));
        if borrowed {
            head.push("latency".into());
        }
        let rows = self
            .rows
            .iter()
            .map(|row| {
                let mut cells = row.label.clone();
                let on = self.driving(row);
                cells.push(if on.is_empty() { "none".into() } else { on.join(", ") });
                cells.extend((0..PARTS.len()).map(|p| row.cell(p)));
                if borrowed {
                    cells.push(row.borrowed.clone().unwrap_or_else(|| "not borrowed".into()));
                }
                cells
            })
            .collect();
        (head, rows)
    }
}
