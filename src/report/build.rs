//! The design-review report's content, computed from a results directory: the question, the
//! setup and resolved configuration, the comparison table, the recommendation (tune.json, or
//! read off the table and labelled as such), and the figures with their captions.
//!
//! Pure: it returns a `Doc`; the CLI writes it. No timestamps, no paths from the host.

use super::doc::{Block, Doc};
use super::results::{Results, SummaryRow};
use crate::plot::style::num;
use crate::plot::Figure;

/// Rows of the comparison table before it is cut (a report, not a data dump).
pub const MAX_TABLE_ROWS: usize = 120;

/// The whole report.
pub fn build(r: &Results, figures: &[Figure]) -> Doc {
    let mut b = Vec::new();
    b.push(Block::Heading(2, "Question".into()));
    match r.manifest.as_ref().map(|m| m.question.trim()).filter(|q| !q.is_empty()) {
        Some(q) => b.push(Block::Quote(q.to_string())),
        None => b.push(Block::Para(
            "The results do not state a question (no `question` in manifest.json).".into(),
        )),
    }
    b.push(Block::Heading(2, "Setup".into()));
    b.push(setup_table(r));
    if let Some(toml) = r.manifest.as_ref().and_then(|m| m.experiment.as_ref()) {
        b.push(Block::Heading(2, "Resolved configuration".into()));
        b.push(Block::Code { lang: "toml".into(), text: toml.clone() });
    }
    if !r.summary.is_empty() {
        b.push(Block::Heading(2, "Comparison".into()));
        b.extend(comparison(r));
    }
    b.push(Block::Heading(2, "Recommendation".into()));
    b.extend(recommendation(r));
    if !figures.is_empty() {
        b.push(Block::Heading(2, "Figures".into()));
        for f in figures {
            b.push(Block::Heading(3, f.title.clone()));
            b.push(Block::Figure {
                name: f.name.clone(),
                title: f.title.clone(),
                caption: f.caption.clone(),
            });
        }
    }
    if let Some(replay) = &r.replay {
        b.push(Block::Heading(2, "Replay".into()));
        b.push(Block::Para("What `replay --out` measured (replay.json):".into()));
        b.push(Block::Code { lang: "json".into(), text: pretty(replay) });
    }
    Doc { title: format!("{}: design review", r.name()), blocks: b }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn setup_table(r: &Results) -> Block {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut add = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    if let Some(m) = &r.manifest {
        add("kind", m.kind.clone());
        add(
            "strategies",
            m.strategies.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
        );
        for a in &m.axes {
            let vals: Vec<String> = a.values.iter().map(json_text).collect();
            add("swept", format!("`{}` = {}", a.key, vals.join(", ")));
        }
        if let Some(p) = m.points {
            add("points", p.to_string());
        }
        if let Some(n) = m.replications {
            add("replications per point and strategy", n.to_string());
        }
        if let Some(s) = m.seed {
            add("seed", s.to_string());
        }
        if let Some(h) = &m.content_hash {
            add("experiment hash (SHA-256)", format!("`{}`", &h[..h.len().min(16)]));
        }
        add("prefixsim", m.prefixsim_version.clone());
    } else {
        add(
            "strategies",
            r.strategies().iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
        );
    }
    let files: Vec<&str> = [
        ("summary.csv", !r.summary.is_empty()),
        ("runs.csv", !r.runs.is_empty()),
        ("histograms/", !r.histograms.is_empty()),
        ("trace.csv", !r.trace.is_empty()),
        ("tune.json", r.tune.is_some()),
        ("replay.json", r.replay.is_some()),
    ]
    .into_iter()
    .filter(|f| f.1)
    .map(|f| f.0)
    .collect();
    add("result files", files.join(", "));
    Block::Table(vec!["setting".into(), "value".into()], rows)
}

/// A JSON scalar as plain text (strings unquoted).
pub fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The strategy every other one is compared to: `eager` when present, else the first.
pub fn reference(r: &Results) -> Option<String> {
    let s = r.strategies();
    s.iter().find(|x| *x == "eager").or(s.first()).cloned()
}

fn mean_ci(row: &SummaryRow, m: &str, scale: f64) -> String {
    match (row.get(&format!("{m}_mean")), row.get(&format!("{m}_ci95"))) {
        (Some(mean), Some(ci)) => format!("{} ± {}", num(mean * scale), num(ci * scale)),
        (Some(mean), None) => num(mean * scale),
        _ => "–".into(),
    }
}

fn comparison(r: &Results) -> Vec<Block> {
    let refs = reference(r).unwrap_or_default();
    let mut head: Vec<String> = r.axis_keys.iter().map(|k| format!("`{k}`")).collect();
    head.extend(
        [
            "strategy",
            "cost (USD)",
            &format!("cost vs {refs}"),
            "hit rate (%)",
            "makespan (s)",
            "launch wait p99 (s)",
            "redundant writes",
        ]
        .map(String::from),
    );
    let mut rows = Vec::new();
    for point in r.points() {
        for s in r.strategies() {
            let Some(row) = r.row(point, &s) else { continue };
            let base = r.row(point, &refs).and_then(|b| b.get("cost_usd_mean"));
            let vs = match (row.get("cost_usd_mean"), base) {
                _ if s == refs => "–".to_string(),
                (Some(c), Some(b)) if b > 0.0 => format!("{:+}%", num((c - b) / b * 100.0)),
                _ => "–".into(),
            };
            let mut cells = row.axis_values.clone();
            cells.extend([
                format!("`{s}`"),
                mean_ci(row, "cost_usd", 1.0),
                vs,
                mean_ci(row, "hit_rate", 100.0),
                mean_ci(row, "makespan_s", 1.0),
                mean_ci(row, "launch_wait_p99_s", 1.0),
                mean_ci(row, "redundant_writes", 1.0),
            ]);
            rows.push(cells);
        }
    }
    let total = rows.len();
    rows.truncate(MAX_TABLE_ROWS);
    let mut out =
        vec![Block::Para("Means over replications ± the 95% confidence half-width.".into())];
    out.push(Block::Table(head, rows));
    if total > MAX_TABLE_ROWS {
        out.push(Block::Para(format!("({} more rows in summary.csv.)", total - MAX_TABLE_ROWS)));
    }
    out
}

/// From tune.json when present; otherwise read off the table, and said to be so.
fn recommendation(r: &Results) -> Vec<Block> {
    if let Some(t) = &r.tune {
        let mut out = Vec::new();
        if let Some(s) = tune_sentence(t) {
            out.push(Block::Para(s));
        }
        out.push(Block::Para("From `tune` (tune.json):".into()));
        out.push(Block::Code { lang: "json".into(), text: pretty(t) });
        return out;
    }
    let mut text =
        String::from("No tune.json here: this is read off the comparison table, not tuned. ");
    let points = r.points();
    if points.is_empty() {
        text.push_str("There is no summary.csv to compare strategies with.");
        return vec![Block::Para(text)];
    }
    if points.len() == 1 {
        text.push_str(&single_point(r, points[0]));
    } else {
        let mut wins: Vec<(String, usize)> = r.strategies().into_iter().map(|s| (s, 0)).collect();
        for &p in &points {
            if let Some(best) = cheapest(r, p) {
                if let Some(w) = wins.iter_mut().find(|w| w.0 == best.strategy) {
                    w.1 += 1;
                }
            }
        }
        wins.retain(|w| w.1 > 0);
        wins.sort_by_key(|w| std::cmp::Reverse(w.1));
        let parts: Vec<String> = wins.iter().map(|(s, n)| format!("`{s}` at {n}")).collect();
        text.push_str(&format!(
            "Lowest mean cost, by number of points (of {}): {}.",
            points.len(),
            parts.join(", ")
        ));
    }
    vec![Block::Para(text)]
}

fn cheapest(r: &Results, point: u32) -> Option<&SummaryRow> {
    r.summary.iter().filter(|row| row.point == point && row.get("cost_usd_mean").is_some()).min_by(
        |a, b| {
            a.get("cost_usd_mean").unwrap_or(0.0).total_cmp(&b.get("cost_usd_mean").unwrap_or(0.0))
        },
    )
}

fn single_point(r: &Results, point: u32) -> String {
    let Some(best) = cheapest(r, point) else { return String::new() };
    let c = best.get("cost_usd_mean").unwrap_or(0.0);
    let mut s = format!("Lowest mean cost: `{}` ({} USD", best.strategy, num(c));
    if let Some(base) = reference(r).filter(|x| *x != best.strategy).and_then(|x| r.row(point, &x))
    {
        let b = base.get("cost_usd_mean").unwrap_or(0.0);
        if b > 0.0 {
            s.push_str(&format!(", {}% less than `{}`", num((b - c) / b * 100.0), base.strategy));
        }
        let ci = |row: &SummaryRow| row.get("cost_usd_ci95").unwrap_or(0.0);
        let apart = c + ci(best) < b - ci(base);
        s.push_str(if apart { "; the 95% CIs do not overlap" } else { "; the 95% CIs overlap" });
    }
    s.push_str(").");
    let fastest = r.summary.iter().filter(|row| row.point == point).min_by(|a, b| {
        a.get("makespan_s_mean").unwrap_or(0.0).total_cmp(&b.get("makespan_s_mean").unwrap_or(0.0))
    });
    if let Some(f) = fastest {
        s.push_str(&format!(
            " Shortest mean makespan: `{}` ({} s).",
            f.strategy,
            num(f.get("makespan_s_mean").unwrap_or(0.0))
        ));
    }
    s
}

/// "tune recommends `KEY` = VALUE" from the usual field names, when they are there.
fn tune_sentence(t: &serde_json::Value) -> Option<String> {
    let pick = |names: &[&str]| names.iter().find_map(|n| t.get(*n)).map(json_text);
    if let Some(s) = t.get("recommendation").and_then(|v| v.as_str()) {
        return Some(s.to_string());
    }
    let param = pick(&["param", "key", "parameter"])?;
    let best = pick(&["best", "best_value", "recommended", "value"])?;
    let mut s = format!("`tune` recommends `{param}` = {best}");
    if let Some(obj) = pick(&["objective"]) {
        s.push_str(&format!(" (objective: {obj})"));
    }
    s.push('.');
    Some(s)
}
