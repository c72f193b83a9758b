//! What `prefixsim sweep` prints when a sweep completes: the grid it ran and the first rows of
//! the summary.csv it wrote (read back from the file), then where the files are.

use std::path::Path;

use crate::results::split_fields;
use crate::sweep::{spec, Plan};

/// The grid, the head of DIR/summary.csv, the files written and what to run next.
pub fn done_text(plan: &Plan, dir: &Path, points: u64, resumed_from: u64) -> String {
    let d = &plan.desc;
    let resumed = match resumed_from {
        0 => String::new(),
        n => format!(" ({n} resumed from the journal)"),
    };
    let mut out = format!(
        "sweep {}: {points} points x {} strategies x {} replications{resumed}\n",
        d.name,
        d.strategies.len(),
        d.replications,
    );
    for a in &plan.grid.axes {
        let vals: Vec<String> = a.values.iter().map(spec::value_text).collect();
        let shown = if vals.len() > 8 {
            format!("{} ... {} ({} values)", vals[..3].join(", "), vals[vals.len() - 1], vals.len())
        } else {
            vals.join(", ")
        };
        out.push_str(&format!("  axis {:<32} {shown}\n", a.key));
    }
    if let Ok(table) = summary_table(dir, plan.grid.axes.len(), 20) {
        out.push_str(&table);
    }
    out.push_str(&answer_text(plan, dir));
    let hold = if dir.join("hold.csv").exists() { ", hold.csv" } else { "" };
    let d = dir.display();
    out.push_str(&format!(
        "wrote {d}/{{summary.csv, runs.csv, histograms/, manifest.json{hold}}}\n"
    ));
    out.push_str(&format!("next: prefixsim plot {d}   prefixsim report {d}\n"));
    out
}

/// The models whose latency is borrowed (`config::latency_origin`), and the hold answer's
/// ranges over the assumption axes (`report::ranges`), read back from DIR as the report
/// reads it; empty when there are neither.
fn answer_text(plan: &Plan, dir: &Path) -> String {
    let Ok(exp) = crate::config::resolve(&plan.base, &plan.desc.name) else {
        return String::new();
    };
    let Ok(r) = crate::results::Results::load(dir) else { return String::new() };
    let mut out = String::new();
    for b in super::assumptions::borrowed_models(&r, &exp) {
        out.push_str(&format!("  latency of {}: {}\n", b.model, b.phrase()));
    }
    let Some(ranges) = super::ranges::of(&r, &exp) else { return out };
    let keys: Vec<&str> = ranges.keys.iter().map(String::as_str).collect();
    out.push_str(&format!(
        "the hold answer over the assumptions {} (least - greatest, the driving values in \
         brackets; `prefixsim report` has the table):\n",
        keys.join(", ")
    ));
    for s in ranges.sentences() {
        out.push_str(&format!("  {}\n", s.replace('`', "")));
    }
    out
}

/// The first `max_rows` rows of DIR/summary.csv as a table for people.
fn summary_table(dir: &Path, axes: usize, max_rows: usize) -> std::io::Result<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(dir.join("summary.csv"))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let header = split_fields(&lines.next().transpose()?.unwrap_or_default());
    let wanted = ["cost_usd_mean", "hit_rate_mean", "launch_wait_pooled_p99_s", "makespan_s_mean"];
    let idx: Vec<usize> =
        wanted.iter().filter_map(|w| header.iter().position(|h| h == w)).collect();
    // Up to the strategy: the axes and the seconds columns of duration axes.
    let strategy = header.iter().position(|h| h == "strategy").unwrap_or(axes + 1);
    let keep: Vec<usize> = (0..=strategy).chain(idx).collect();
    let mut rows: Vec<Vec<String>> =
        vec![keep.iter().map(|&i| header.get(i).cloned().unwrap_or_default()).collect()];
    let mut more = 0usize;
    for line in lines {
        let cells = split_fields(&line?);
        if rows.len() > max_rows {
            more += 1;
            continue;
        }
        rows.push(keep.iter().map(|&i| cells.get(i).cloned().unwrap_or_default()).collect());
    }
    let widths: Vec<usize> =
        (0..keep.len()).map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> =
            r.iter().zip(&widths).map(|(cell, w)| format!("{cell:>w$}")).collect();
        out.push_str(&format!("  {}\n", cells.join("  ")));
    }
    if more > 0 {
        out.push_str(&format!("  ... {more} more rows in summary.csv\n"));
    }
    Ok(out)
}
