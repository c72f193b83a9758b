//! `[report] answer = "cost"`: per slice of the results (the points that differ only in the
//! compared axis, per strategy; or the strategies), the cheaper option and by how much, the
//! saving as the mean of the per-replication differences with its 95% CI.

use super::answer::{cost, dashes, Answered};
use super::doc::Block;
use super::words::{count, pct, usd, usd_ci};
use crate::config::ReportSpec;
use crate::results::{t_975, Results, SummaryRow};

/// `[report] answer = "cost"`: per slice, the cheaper option and by how much.
pub fn cost_answer(r: &Results, spec: &ReportSpec) -> Answered {
    let axis = spec.compare.as_ref().and_then(|k| r.axis_keys.iter().position(|a| a == k));
    let mut blocks = Vec::new();
    if let (Some(k), None) = (&spec.compare, axis) {
        blocks.push(Block::Para(format!(
            "`[report] compare` = `{k}` is not a swept key of these results: the strategies \
             are compared instead."
        )));
    }
    let strategies: Vec<String> = match &spec.strategy {
        Some(s) => vec![s.clone()],
        None => r.strategies(),
    };
    // The slices compare rows across points: held whole (a report of a sweep small enough
    // to be answered point by point in a table).
    let rows: Vec<SummaryRow> = r.summary.iter().collect();
    let options: Vec<String> = match axis {
        Some(a) => distinct(rows.iter().map(|s| s.axis_values[a].clone())),
        None => strategies.clone(),
    };
    let slices = slices(&rows, axis, &strategies, &options);
    let (mut rows, mut ties) = (Vec::new(), 0);
    let mut wins: Vec<(String, Vec<Win>)> =
        options.iter().map(|o| (o.clone(), Vec::new())).collect();
    for slice in &slices {
        let (cells, cheapest) = slice_row(r, slice, &options);
        match cheapest {
            Cheapest::One(i, win) => wins[i].1.push(win),
            Cheapest::Tie => ties += 1,
            Cheapest::Unknown => {}
        }
        rows.push(cells);
    }
    let mut head = vec![slice_head(r, axis, strategies.len())];
    head.extend(options.iter().map(|o| format!("`{o}` (USD)")));
    head.extend(["cheapest".to_string(), "saving vs the next cheapest (95% CI)".to_string()]);
    blocks.push(Block::Para(
        "Mean cost per run ± the 95% confidence half-width; the saving is the mean of the \
         per-replication differences (the options share their random numbers)."
            .into(),
    ));
    blocks.push(Block::Table(head, rows));
    let mut findings = cost_findings(&wins, slices.len());
    if ties > 0 {
        findings.push(format!(
            "In {ties} of {} the options cost exactly the same.",
            count(slices.len(), "slice", "slices")
        ));
    }
    Answered { findings, blocks }
}

/// Which option of a slice is the cheapest.
enum Cheapest {
    /// The option at this index, by this much.
    One(usize, Win),
    /// Two or more cost exactly the same.
    Tie,
    /// Fewer than two options have rows.
    Unknown,
}

/// A slice's row of the cost table: each option's cost, the cheapest and its saving over the
/// next cheapest.
fn slice_row(r: &Results, slice: &Slice<'_>, options: &[String]) -> (Vec<String>, Cheapest) {
    let mut cells = vec![slice.values.clone()];
    for row in &slice.rows {
        cells.push(match row {
            Some(s) => usd_ci(cost(s).unwrap_or(0.0), s.get("cost_usd_ci95").unwrap_or(0.0)),
            None => "–".into(),
        });
    }
    let mut ranked: Vec<(usize, &SummaryRow)> =
        slice.rows.iter().enumerate().filter_map(|(i, s)| Some((i, (*s)?))).collect();
    ranked.sort_by(|a, b| cost(a.1).unwrap_or(0.0).total_cmp(&cost(b.1).unwrap_or(0.0)));
    match ranked.as_slice() {
        [(_, best), (_, next), ..] if cost(best) == cost(next) => {
            let tied: Vec<String> = ranked
                .iter()
                .filter(|(_, s)| cost(s) == cost(best))
                .map(|(i, _)| format!("`{}`", options[*i]))
                .collect();
            cells.push(format!("tie: {}", tied.join(", ")));
            cells.push("$0 (the same cost)".into());
            (cells, Cheapest::Tie)
        }
        [(i, best), (_, next), ..] => {
            let (d, ci) = paired_saving(r, best, next);
            let share = d / cost(next).unwrap_or(1.0).max(f64::MIN_POSITIVE);
            cells.push(format!("`{}`", options[*i]));
            cells.push(format!(
                "{} ({}) less than `{}`",
                usd_ci(d, ci),
                pct(share),
                options[slice.option_of(next)]
            ));
            (cells, Cheapest::One(*i, Win { saving: d, share, ci, clear: d - ci > 0.0 }))
        }
        _ => {
            cells.extend(dashes(2));
            (cells, Cheapest::Unknown)
        }
    }
}

/// One slice an option is the cheapest in: its saving over the next cheapest (USD, share, 95%
/// CI half-width) and whether that CI excludes zero.
struct Win {
    saving: f64,
    share: f64,
    ci: f64,
    clear: bool,
}

fn cost_findings(wins: &[(String, Vec<Win>)], slices: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (option, w) in wins.iter().filter(|w| !w.1.is_empty()) {
        let lo = w.iter().map(|x| x.saving).fold(f64::INFINITY, f64::min);
        let hi = w.iter().map(|x| x.saving).fold(0.0, f64::max);
        let plo = w.iter().map(|x| x.share).fold(f64::INFINITY, f64::min);
        let phi = w.iter().map(|x| x.share).fold(0.0, f64::max);
        let clear = w.iter().filter(|x| x.clear).count();
        let by = match w.as_slice() {
            [one] => format!("by {} ({})", usd_ci(one.saving, one.ci), pct(one.share)),
            _ => format!("by {} to {} ({} to {})", usd(lo), usd(hi), pct(plo), pct(phi)),
        };
        out.push(format!(
            "`{option}` is the cheapest in {} of {}, {by} less than the next cheapest; the 95% \
             CI of that saving excludes zero in {clear} of them.",
            w.len(),
            count(slices, "slice", "slices"),
        ));
    }
    out
}

/// One row of the cost table: the summary rows of each option (in option order).
struct Slice<'a> {
    /// The values of the other axes (and the strategy), as the table's first cell.
    values: String,
    rows: Vec<Option<&'a SummaryRow>>,
    axis: Option<usize>,
    options: Vec<String>,
}

impl Slice<'_> {
    fn option_of(&self, row: &SummaryRow) -> usize {
        let key = match self.axis {
            Some(a) => row.axis_values[a].as_str(),
            None => row.strategy.as_str(),
        };
        self.options.iter().position(|o| o.as_str() == key).unwrap_or(0)
    }
}

fn distinct<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for v in it {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn slice_head(r: &Results, axis: Option<usize>, strategies: usize) -> String {
    let mut keys: Vec<String> = (0..r.axis_keys.len())
        .filter(|&a| Some(a) != axis)
        .map(|a| format!("`{}`", r.axis_keys[a]))
        .collect();
    if axis.is_some() && strategies > 1 {
        keys.push("strategy".into());
    }
    if keys.is_empty() {
        "slice".into()
    } else {
        keys.join(", ")
    }
}

/// The slices in point order: the points that differ only in the compared axis, per strategy.
fn slices<'a>(
    summary: &'a [SummaryRow],
    axis: Option<usize>,
    strategies: &[String],
    options: &[String],
) -> Vec<Slice<'a>> {
    let key = |s: &SummaryRow| -> Vec<String> {
        (0..s.axis_values.len())
            .filter(|&a| Some(a) != axis)
            .map(|a| s.axis_values[a].clone())
            .collect()
    };
    let mut out: Vec<Slice<'a>> = Vec::new();
    for g in distinct(summary.iter().map(key)) {
        let members: Vec<&SummaryRow> = summary.iter().filter(|s| key(s) == g).collect();
        let base = g.join(", ");
        let per_strategy: Vec<Option<&String>> = match axis {
            Some(_) => strategies.iter().map(Some).collect(),
            None => vec![None],
        };
        for s in per_strategy {
            let rows = options
                .iter()
                .map(|o| {
                    members.iter().copied().find(|m| match (axis, s) {
                        (Some(a), Some(s)) => &m.axis_values[a] == o && &m.strategy == s,
                        _ => &m.strategy == o,
                    })
                })
                .collect();
            let mut name = base.clone();
            if let (Some(s), true) = (s, strategies.len() > 1) {
                name = if name.is_empty() { format!("`{s}`") } else { format!("{name}, `{s}`") };
            }
            if name.is_empty() {
                name = "all".into();
            }
            out.push(Slice { values: name, rows, axis, options: options.to_vec() });
        }
    }
    out
}

/// `next` minus `best` in cost: the mean of the per-replication differences and its 95% CI
/// half-width (runs.csv); from the two means and CIs when runs.csv lacks the replications.
fn paired_saving(r: &Results, best: &SummaryRow, next: &SummaryRow) -> (f64, f64) {
    let costs = |s: &SummaryRow| -> Vec<(u32, f64)> {
        r.runs_of(s.point, &s.strategy)
            .filter_map(|u| Some((u.replication, u.get("cost_usd")?)))
            .collect()
    };
    let (a, b) = (costs(best), costs(next));
    let diffs: Vec<f64> =
        b.iter().filter_map(|(rep, nb)| a.iter().find(|x| x.0 == *rep).map(|x| nb - x.1)).collect();
    if diffs.len() >= 2 {
        let n = diffs.len() as f64;
        let mean = diffs.iter().sum::<f64>() / n;
        let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
        return (mean, t_975(diffs.len() as u64 - 1) * (var / n).sqrt());
    }
    let ci = |s: &SummaryRow| s.get("cost_usd_ci95").unwrap_or(0.0);
    let d = cost(next).unwrap_or(0.0) - cost(best).unwrap_or(0.0);
    (d, (ci(best).powi(2) + ci(next).powi(2)).sqrt())
}
