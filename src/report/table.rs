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

/// Seconds for people: `850ms`, `12.34s`, `3.5min`.
pub fn fmt_secs(s: f64) -> String {
    if s < 0.01 {
        format!("{:.1}ms", s * 1e3)
    } else if s < 1.0 {
        format!("{:.0}ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.2}s")
    } else {
        format!("{:.1}min", s / 60.0)
    }
}

fn fmt_usd(x: f64) -> String {
    if x < 10.0 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

/// The comparison table. Costs relative to `eager` when it is one of the rows.
pub fn comparison_table(rows: &[Row<'_>]) -> String {
    let eager_cost =
        rows.iter().find(|r| r.label == "eager").map(|r| r.aggregate.stat("cost_usd").mean);
    let header = [
        "strategy",
        "cost",
        "vs eager",
        "hit rate",
        "redundant",
        "wait p50",
        "wait p99",
        "done p50",
        "done p99",
        "makespan",
        "agents/min",
        "429s",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in rows {
        let a = r.aggregate;
        let cost = a.stat("cost_usd");
        let rel = match eager_cost {
            Some(e) if e > 0.0 => format!("{:.1}%", 100.0 * cost.mean / e),
            _ => "-".to_string(),
        };
        let wait = a.ladder_of("launch_wait");
        let done = a.ladder_of("completion");
        cells.push(vec![
            r.label.to_string(),
            format!("{} ±{:.4}", fmt_usd(cost.mean), cost.ci95),
            rel,
            format!("{:.1}%", 100.0 * a.stat("hit_rate").mean),
            format!("{:.2}", a.stat("redundant_writes").mean),
            fmt_secs(wait[0]),
            fmt_secs(wait[2]),
            fmt_secs(done[0]),
            fmt_secs(done[2]),
            fmt_secs(a.stat("makespan_s").mean),
            format!("{:.1}", a.stat("throughput_agents_per_min").mean),
            format!("{:.1}", a.stat("rate_limited").mean),
        ]);
    }
    align(&cells)
}

/// Left-align the first column, right-align the others, two spaces apart, a rule under the header.
fn align(cells: &[Vec<String>]) -> String {
    let cols = cells[0].len();
    let width: Vec<usize> =
        (0..cols).map(|c| cells.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = " ".repeat(width[c] - cell.chars().count());
            if c == 0 {
                line.push_str(&format!("{cell}{pad}"));
            } else {
                line.push_str(&format!("  {pad}{cell}"));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * (cols - 1)));
            out.push('\n');
        }
    }
    out
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
/// column across strategies so they compare at a glance.
pub fn ladders(rows: &[Row<'_>]) -> String {
    let max_of =
        |name: &str| rows.iter().map(|r| r.aggregate.ladder_of(name)[4]).fold(0.0, f64::max);
    let (wait_max, done_max) = (max_of("launch_wait"), max_of("completion"));
    let mut out = String::new();
    for r in rows {
        let wait = r.aggregate.ladder_of("launch_wait");
        let done = r.aggregate.ladder_of("completion");
        let head =
            format!("  {:<6}{:>9} {:<w$}  {:>9}", "", "launch", "wait", "done", w = BAR_WIDTH);
        out.push_str(&format!("{}\n{}\n", r.label, head.trim_end()));
        for (i, name) in LADDER_NAMES.iter().enumerate() {
            let line = format!(
                "  {name:<6}{:>9} {:<w$}  {:>9} {}",
                fmt_secs(wait[i]),
                bar(wait[i], wait_max),
                fmt_secs(done[i]),
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
    fn bars_scale_in_eighths() {
        assert_eq!(bar(1.0, 1.0).chars().count(), BAR_WIDTH);
        assert_eq!(bar(0.5, 1.0), "█".repeat(BAR_WIDTH / 2));
        assert_eq!(bar(1.0 / (BAR_WIDTH as f64 * 8.0), 1.0), "▏");
        assert_eq!(bar(0.0, 1.0), "");
    }

    #[test]
    fn seconds_read_naturally() {
        assert_eq!(fmt_secs(0.25), "250ms");
        assert_eq!(fmt_secs(0.0012), "1.2ms");
        assert_eq!(fmt_secs(5.0), "5.00s");
        assert_eq!(fmt_secs(300.0), "5.0min");
    }
}
