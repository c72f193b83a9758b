//! Terminal rendering of a run: the comparison table (one row per strategy) and, under it, a
//! percentile ladder per strategy (launch wait and agent completion, p50/p90/p99/p99.9/max with
//! bars). Pure text from aggregates; knows nothing of how they were simulated.

use crate::results::Aggregate;

/// One strategy's aggregate, labelled.
pub struct Row<'a> {
    pub label: &'a str,
    pub aggregate: &'a Aggregate,
}

const LADDER_NAMES: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];
const BAR_WIDTH: usize = 24;

/// The unit of a column of durations, chosen from its largest value so that every cell of
/// the column is in one unit with one precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Ms,
    S,
    Min,
}

impl TimeUnit {
    pub fn for_max(max_s: f64) -> TimeUnit {
        if max_s < 1.0 {
            TimeUnit::Ms
        } else if max_s < 120.0 {
            TimeUnit::S
        } else {
            TimeUnit::Min
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
            TimeUnit::Min => "min",
        }
    }

    /// `s` seconds in this unit: ms with 1 decimal, s and min with 2.
    pub fn fmt(self, s: f64) -> String {
        match self {
            TimeUnit::Ms => format!("{:.1}", s * 1e3),
            TimeUnit::S => format!("{s:.2}"),
            TimeUnit::Min => format!("{:.2}", s / 60.0),
        }
    }
}

/// One column of the comparison table: a heading over a sub-heading (the group heading is
/// written once over a run of columns that share it), and a cell per row.
struct Column {
    group: String,
    name: String,
    cells: Vec<String>,
}

/// Columns of durations (seconds per row) that a reader compares, under one group heading
/// that states their one unit, the unit their largest value calls for: `launch_wait_pooled
/// (s)` over `p50` and `p99`, never `p50 (ms)` beside `p99 (s)`.
fn time_group(group: &str, columns: &[(&str, Vec<f64>)]) -> Vec<Column> {
    let max = columns.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0, f64::max);
    let unit = TimeUnit::for_max(max);
    let group = format!("{group} ({})", unit.name());
    let column = |(name, values): &(&str, Vec<f64>)| Column {
        group: group.clone(),
        name: name.to_string(),
        cells: values.iter().map(|&v| unit.fmt(v)).collect(),
    };
    columns.iter().map(column).collect()
}

fn column(group: &str, name: &str, cells: Vec<String>) -> Column {
    Column { group: group.to_string(), name: name.to_string(), cells }
}

/// The comparison table. Costs relative to `eager` when it is one of the rows. Latency
/// headings are those of summary.csv (`launch_wait_pooled_p99_s`, ...): percentiles pooled
/// over every agent of every replication, not means of per-replication percentiles.
pub fn comparison_table(rows: &[Row<'_>]) -> String {
    let eager_cost =
        rows.iter().find(|r| r.label == "eager").map(|r| r.aggregate.stat("cost_usd").mean);
    let each = |f: &dyn Fn(&Aggregate) -> String| rows.iter().map(|r| f(r.aggregate)).collect();
    let secs = |f: &dyn Fn(&Aggregate) -> f64| rows.iter().map(|r| f(r.aggregate)).collect();
    let mut columns = vec![
        column("", "strategy", rows.iter().map(|r| r.label.to_string()).collect()),
        column(
            "",
            "cost (USD)",
            each(&|a| {
                let cost = a.stat("cost_usd");
                format!("{:.4} ±{:.4}", cost.mean, cost.ci95)
            }),
        ),
        column(
            "",
            "vs eager",
            each(&|a| match eager_cost {
                Some(e) if e > 0.0 => format!("{:.1}%", 100.0 * a.stat("cost_usd").mean / e),
                _ => "-".to_string(),
            }),
        ),
        column("", "hit rate", each(&|a| format!("{:.1}%", 100.0 * a.stat("hit_rate").mean))),
        column(
            "redundant",
            "entries",
            each(&|a| format!("{:.2}", a.stat("redundant_writes").mean)),
        ),
    ];
    let ladder = |name: &str, at: usize| secs(&|a| a.ladder_of(name)[at]);
    for (group, name) in
        [("launch_wait_pooled", "launch_wait"), ("completion_pooled", "completion")]
    {
        columns.extend(time_group(group, &[("p50", ladder(name, 0)), ("p99", ladder(name, 2))]));
    }
    columns.extend(time_group("makespan", &[("mean", secs(&|a| a.stat("makespan_s").mean))]));
    columns.extend([
        column(
            "agents",
            "per min",
            each(&|a| format!("{:.2}", a.stat("throughput_agents_per_min").mean)),
        ),
        column("rate-limited", "per run", each(&|a| format!("{:.2}", a.stat("rate_limited").mean))),
    ]);
    align(&columns)
}

/// Left-align the first column, right-align the others, two spaces apart; the group headings
/// over their columns, a rule under the headings.
fn align(columns: &[Column]) -> String {
    let count = |t: &str| t.chars().count();
    let mut width: Vec<usize> = columns
        .iter()
        .map(|c| c.cells.iter().map(|x| count(x)).chain([count(&c.name)]).max().unwrap_or(0))
        .collect();
    let spans = group_spans(columns);
    for &(start, end) in &spans {
        let span = width[start..end].iter().sum::<usize>() + 2 * (end - start - 1);
        // A heading wider than its columns widens them alike, the remainder to the last.
        let extra = count(&columns[start].group).saturating_sub(span);
        let n = end - start;
        for w in &mut width[start..end] {
            *w += extra / n;
        }
        width[end - 1] += extra % n;
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(width[c].saturating_sub(count(cell)));
            match c {
                0 => out.push_str(&format!("{cell}{pad}")),
                _ => out.push_str(&format!("  {pad}{cell}")),
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = String::new();
    let mut groups = String::new();
    let mut c = 0;
    while c < columns.len() {
        let (start, end) = spans.iter().copied().find(|&(s, _)| s == c).unwrap_or((c, c + 1));
        let span = width[start..end].iter().sum::<usize>() + 2 * (end - start - 1);
        let sep = if start == 0 { "" } else { "  " };
        groups.push_str(&format!("{sep}{:>span$}", &columns[start].group));
        c = end;
    }
    if !groups.trim().is_empty() {
        out.push_str(groups.trim_end());
        out.push('\n');
    }
    out.push_str(&line(&columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>()));
    out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * (columns.len() - 1)));
    out.push('\n');
    for r in 0..columns[0].cells.len() {
        out.push_str(&line(&columns.iter().map(|c| c.cells[r].clone()).collect::<Vec<_>>()));
    }
    out
}

/// Runs of adjacent columns with the same non-empty group heading, as `[start, end)`.
fn group_spans(columns: &[Column]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        match spans.last_mut() {
            Some((_, end)) if *end == i && columns[i - 1].group == c.group => *end = i + 1,
            _ if !c.group.is_empty() => spans.push((i, i + 1)),
            _ => {}
        }
    }
    spans
}

/// A bar of `x / max` of `BAR_WIDTH` cells, in eighths.
pub fn bar(x: f64, max: f64) -> String {
    if max <= 0.0 || x <= 0.0 {
        return String::new();
    }
    let eighths = ((x / max).min(1.0) * (BAR_WIDTH * 8) as f64).round() as usize;
    let partial = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8];
    format!("{}{partial}", "█".repeat(eighths / 8))
}

/// Per strategy, launch wait and completion ladders side by side; bars share one scale per
/// column across strategies so they compare at a glance, and numbers one unit per column.
pub fn ladders(rows: &[Row<'_>]) -> String {
    let max_of =
        |name: &str| rows.iter().map(|r| r.aggregate.ladder_of(name)[4]).fold(0.0, f64::max);
    let (wait_max, done_max) = (max_of("launch_wait"), max_of("completion"));
    let (wait_unit, done_unit) = (TimeUnit::for_max(wait_max), TimeUnit::for_max(done_max));
    let heads = [("launch wait", wait_unit), ("done", done_unit)]
        .map(|(h, u)| format!("{h} ({})", u.name()));
    let mut out = String::new();
    for r in rows {
        let wait = r.aggregate.ladder_of("launch_wait");
        let done = r.aggregate.ladder_of("completion");
        // Each heading starts over its column of numbers and spans it and its bars.
        let head = format!("  {:<6}{:<w$}  {}", "", heads[0], heads[1], w = 10 + BAR_WIDTH);
        out.push_str(&format!("{}\n{}\n", r.label, head.trim_end()));
        for (i, name) in LADDER_NAMES.iter().enumerate() {
            let line = format!(
                "  {name:<6}{:>9} {:<w$}  {:>9} {}",
                wait_unit.fmt(wait[i]),
                bar(wait[i], wait_max),
                done_unit.fmt(done[i]),
                bar(done[i], done_max),
                w = BAR_WIDTH
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_of_durations_has_one_unit_stated_once() {
        let g = time_group("wait", &[("p50", vec![0.0012, 0.25]), ("p99", vec![0.0, 5.0])]);
        assert_eq!(g[0].group, "wait (s)");
        assert_eq!((g[0].name.as_str(), &g[0].cells), ("p50", &vec!["0.00".into(), "0.25".into()]));
        assert_eq!((g[1].name.as_str(), &g[1].cells), ("p99", &vec!["0.00".into(), "5.00".into()]));
        let g = time_group("wait", &[("p50", vec![0.0012, 0.25])]);
        assert_eq!(
            (g[0].group.as_str(), &g[0].cells),
            ("wait (ms)", &vec!["1.2".into(), "250.0".into()])
        );
        assert_eq!(TimeUnit::for_max(300.0).fmt(186.0), "3.10");
    }

    #[test]
    fn the_run_table_states_each_time_unit_once() {
        let text = comparison_table(&[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0].matches(" (ms)").count(), 3, "{text}");
        for unit in ["(ms)", "(s)", "(min)"] {
            assert!(!lines[1].contains(unit), "{text}");
        }
    }

    #[test]
    fn group_headings_sit_over_their_columns() {
        let columns = [
            column("", "strategy", vec!["eager".into()]),
            column("launch_wait_pooled", "p50 (s)", vec!["1.00".into()]),
            column("launch_wait_pooled", "p99 (s)", vec!["2.00".into()]),
        ];
        let text = align(&columns);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("{}launch_wait_pooled", " ".repeat(10)));
        // The heading is 2 wider than its columns: each widens by 1.
        assert_eq!(lines[1], "strategy   p50 (s)   p99 (s)");
        assert_eq!(lines[3], format!("eager{}1.00{}2.00", " ".repeat(9), " ".repeat(6)));
        assert!(lines[0].len() <= lines[1].len());
    }
}
