//! The design-review report's content, computed from a results directory: the question, the
//! findings that answer it (as the experiment's `[report] answer` declares), the assumptions
//! behind the numbers, the setup and resolved configuration, the comparison table, the
//! recommendation (tune.json, or read off the table and labelled as such), and the figures
//! with their captions.
//!
//! Pure: it returns a `Doc`; the CLI writes it. No timestamps, no paths from the host.

use super::answer::{self, cheapest, cost, Answered};
use super::doc::{Block, Doc};
use super::words::{and_list, count, is_are, json_text, pct, secs, sig, usd, usd_ci};
use crate::config::{Answer, ExperimentSpec};
use crate::plot::style::num;
use crate::plot::{Figure, Spec};
use crate::results::{Results, SummaryRow};

/// Rows of the comparison table before it is cut (a report, not a data dump).
pub const MAX_TABLE_ROWS: usize = 120;

/// The whole report.
pub fn build(r: &Results, figures: &[Figure]) -> Doc {
    let mut b = vec![Block::Heading(2, "Question".into()), question(r)];
    let resolved = resolved(r);
    let answered = resolved.as_ref().and_then(|(e, _)| answer(r, e));
    let mut findings = match &answered {
        Some((_, a)) => a.findings.clone(),
        None => caption_findings(figures),
    };
    if let Some((exp, _)) = &resolved {
        findings.splice(0..0, borrowed_finding(r, exp));
    }
    findings.extend(pareto_sentence(figures));
    findings.extend(tune_finding(figures));
    if !findings.is_empty() {
        b.push(Block::Heading(2, "Findings".into()));
        b.push(Block::List(findings));
    }
    if let Some((what, Answered { blocks, .. })) = answered {
        b.push(Block::Heading(2, format!("Answer: {what}")));
        b.extend(blocks);
    }
    if let Some((exp, table)) = &resolved {
        b.push(Block::Heading(2, "Assumptions".into()));
        b.extend(super::assumptions::section(r, exp, table));
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
    if r.tune.is_some() || !r.summary.is_empty() {
        b.push(Block::Heading(2, "Recommendation".into()));
        b.extend(recommendation(r));
    }
    if let Some(replay) = &r.replay {
        b.push(Block::Heading(2, "Replay".into()));
        b.extend(replay_blocks(replay));
    }
    b.extend(figure_blocks(figures));
    Doc { title: format!("{}: design review", r.name()), blocks: b }
}

/// The question the results state (manifest.json, else tune.json), quoted.
fn question(r: &Results) -> Block {
    let tune_question = r.tune.as_ref().and_then(|t| t.get("question")?.as_str());
    let question = r.manifest.as_ref().map(|m| m.question.as_str()).or(tune_question);
    match question.map(str::trim).filter(|q| !q.is_empty()) {
        Some(q) => Block::Quote(q.to_string()),
        None => Block::Para(
            "The results do not state a question (no `question` in manifest.json or tune.json)."
                .into(),
        ),
    }
}

/// The answer `[report] answer` asks for, and what it is of.
fn answer(r: &Results, exp: &ExperimentSpec) -> Option<(&'static str, Answered)> {
    let spec = &exp.report;
    match spec.answer {
        Some(Answer::HoldCap) if !r.summary.is_empty() => {
            let ranges = super::ranges::of(r, exp).map(|g| g.answered());
            Some(("the hold cap to use", answer::hold_cap(r, spec, ranges)))
        }
        Some(Answer::Cost) if !r.summary.is_empty() => {
            Some(("the cheaper option", super::cost_answer::cost_answer(r, spec)))
        }
        _ => None,
    }
}

/// The headline of results whose latency is a fit made on another model: which, so the
/// times to first token (and a hold cap waiting for one) are not measured there.
fn borrowed_finding(r: &Results, exp: &ExperimentSpec) -> Option<String> {
    let lines: Vec<String> = super::assumptions::borrowed_models(r, exp)
        .iter()
        .map(|b| format!("{} runs at {}", b.model, b.phrase()))
        .collect();
    (!lines.is_empty()).then(|| {
        format!(
            "Latency borrowed: {}. Their times to first token, and so any hold cap, are not \
             measured on those models.",
            lines.join("; ")
        )
    })
}

/// The figures, each under its title.
fn figure_blocks(figures: &[Figure]) -> Vec<Block> {
    if figures.is_empty() {
        return Vec::new();
    }
    let mut b = vec![Block::Heading(2, "Figures".into())];
    for f in figures {
        b.push(Block::Heading(3, f.title.clone()));
        b.push(Block::Figure {
            name: f.name.clone(),
            title: f.title.clone(),
            caption: f.caption.clone(),
        });
    }
    b
}

/// The experiment the manifest records, resolved again from its canonical TOML, and rendered
/// again as a table (every key written out, whatever the manifest's text left to defaults);
/// `None` without a manifest, or when this version no longer reads it.
fn resolved(r: &Results) -> Option<(ExperimentSpec, toml::Table)> {
    let text = r.manifest.as_ref()?.experiment.as_ref()?;
    let table = crate::config::parse_table(text, "manifest.json").ok()?;
    let exp = crate::config::resolve(&table, "manifest.json").ok()?;
    let full = crate::config::parse_table(&crate::config::render(&exp), "manifest.json").ok()?;
    Some((exp, full))
}

/// replay.json: what was replayed, the what-if results as a table, the winner.
fn replay_blocks(v: &serde_json::Value) -> Vec<Block> {
    let text = |k: &str| v.get(k).map(json_text).unwrap_or_else(|| "?".into());
    let mut out = vec![Block::Para(format!(
        "Replayed `{}` ({} format, {} requests, {} distinct tokens) against `{}`.",
        text("trace"),
        text("format"),
        text("requests"),
        text("distinct_tokens"),
        text("model")
    ))];
    let results = v.get("results").and_then(|r| r.as_array()).cloned().unwrap_or_default();
    let f = |r: &serde_json::Value, k: &str| r.get(k).and_then(|x| x.as_f64());
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let pct = |k: &str| f(r, k).map_or("–".into(), |x| format!("{:.1}", x * 100.0));
            let usd = |k: &str| f(r, k).map_or("–".into(), |x| sig(x, 3));
            vec![
                format!("`{}`", r.get("label").map(json_text).unwrap_or_default()),
                pct("hit_rate"),
                usd("cost_usd"),
                usd("saving_usd"),
                f(r, "redundant_writes").map_or("–".into(), count_text),
            ]
        })
        .collect();
    if !rows.is_empty() {
        let head = [
            "cache choice",
            "hit rate (%)",
            "cost (USD)",
            "saving vs uncached (USD)",
            "redundant entries written",
        ];
        out.push(Block::Table(head.map(String::from).into(), rows));
    }
    if let Some(w) = v.get("winner").map(json_text) {
        out.push(Block::Para(format!(
            "`replay` names `{w}` the winner among the real cache choices."
        )));
    }
    if results.is_empty() {
        out.push(Block::Code { lang: "json".into(), text: pretty(v) });
    }
    out
}

/// Without a declared answer, the headline comparisons the figures' captions make: cost and
/// the per-replication p99 launch wait (the first figure of each kind).
fn caption_findings(figures: &[Figure]) -> Vec<String> {
    let stems = ["cost_vs_", "launch_wait_p99_vs_"];
    stems
        .iter()
        .filter_map(|stem| figures.iter().find(|f| f.name.starts_with(stem)))
        .filter(|f| !f.caption.is_empty())
        .map(|f| sentence(&f.caption))
        .collect()
}

fn sentence(caption: &str) -> String {
    let c = caption.trim_end_matches("; bands are 95% confidence intervals of the mean.");
    if c.ends_with('.') {
        c.to_string()
    } else {
        format!("{c}.")
    }
}

/// tune's objective figure, when there is one.
fn tune_finding(figures: &[Figure]) -> Option<String> {
    let f = figures.iter().find(|f| f.name.starts_with("tune_objective"))?;
    (!f.caption.is_empty()).then(|| sentence(&f.caption))
}

/// The Pareto frontier of cost against p99 makespan, in words: how many points are on it,
/// which, and which strategies never are.
fn pareto_sentence(figures: &[Figure]) -> Option<String> {
    let f = figures.iter().find(|f| f.name == "pareto_cost_makespan")?;
    let Spec::Pareto(s) = &f.spec else { return None };
    if s.points.len() < 2 {
        return None; // one point is trivially the cheapest and the fastest
    }
    let front = s.front();
    let name = |p: &crate::plot::pareto::ParetoPoint| match p.at.is_empty() {
        true => format!("`{}`", p.strategy),
        false => format!("`{}` at {}", p.strategy, p.at),
    };
    let what = |p: &crate::plot::pareto::ParetoPoint| {
        format!("{} ({} p99 makespan, {})", name(p), secs(p.x_s), usd(p.cost_usd))
    };
    let slice = f
        .title
        .rsplit_once(" (")
        .and_then(|(_, t)| t.strip_suffix(')'))
        .map_or(String::new(), |t| format!("At {t}, "));
    let n = front.len();
    let mut text = format!(
        "{slice}{} of {} {} on the cost against p99 makespan Pareto frontier",
        n,
        count(s.points.len(), "point", "points"),
        is_are(n)
    );
    match front.as_slice() {
        [] => return None,
        [one] => text.push_str(&format!(": {} is both the fastest and the cheapest.", what(one))),
        many => {
            let shown: Vec<String> = many.iter().take(4).map(|p| what(p)).collect();
            let more = if n > 4 { format!(" and {} more", n - 4) } else { String::new() };
            text.push_str(&format!(", fastest first: {}{more}.", shown.join("; ")));
        }
    }
    let off: Vec<String> = s.never_on().iter().map(|st| format!("`{st}`")).collect();
    if !off.is_empty() {
        let verb = if off.len() == 1 { "is" } else { "are" };
        text.push_str(&format!(
            " {} {verb} off it: another point is as cheap or cheaper and faster.",
            and_list(&off)
        ));
    }
    Some(text)
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
    } else if !r.strategies().is_empty() {
        let labels: Vec<String> = r.strategies().iter().map(|s| format!("`{s}`")).collect();
        add("strategies", labels.join(", "));
    }
    if let Some(t) = r.tune.as_ref().filter(|_| r.manifest.is_none()) {
        let fields = [
            ("param", "tuned parameter"),
            ("strategy", "strategy"),
            ("objective", "objective"),
            ("replications", "replications per candidate"),
        ];
        for (key, name) in fields {
            if let Some(v) = t.get(key) {
                add(name, format!("`{}`", json_text(v)));
            }
        }
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

/// A count: an integer as is, a mean to 3 significant digits.
fn count_text(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        sig(x, 3)
    }
}

/// The strategy every other one is compared to: `eager` when present, else the first.
pub fn reference(r: &Results) -> Option<String> {
    let s = r.strategies();
    s.iter().find(|x| *x == "eager").or(s.first()).cloned()
}

/// A mean and its CI in the comparison table, written by `fmt` (`–` without a mean).
fn mean_ci(row: &SummaryRow, m: &str, fmt: fn(f64, f64) -> String) -> String {
    let ci = row.get(&format!("{m}_ci95")).unwrap_or(0.0);
    row.get(&format!("{m}_mean")).map_or("–".into(), |mean| fmt(mean, ci))
}

/// A mean to 3 significant digits, its CI to 2.
fn sig_ci(mean: f64, ci: f64) -> String {
    format!("{} ± {}", sig(mean, 3), sig(ci, 2))
}

fn comparison(r: &Results) -> Vec<Block> {
    let refs = reference(r).unwrap_or_default();
    let mut head: Vec<String> = r.axis_keys.iter().map(|k| format!("`{k}`")).collect();
    head.extend(
        [
            "strategy",
            "cost (USD)",
            &format!("cost vs `{refs}`"),
            "hit rate (%)",
            "makespan (s)",
            "mean per-replication p99 launch wait (s)",
            "redundant entries written",
        ]
        .map(String::from),
    );
    // Rows past the cut are counted off the summary's index, not read: a sweep may have
    // millions. The points before it are read again, a point's rows at a time.
    let (mut rows, mut total) = (Vec::new(), 0);
    let strategies = r.strategies();
    let mut labels = r.summary.labels().peekable();
    while let Some((point, first)) = labels.next() {
        let mut here = vec![first];
        while let Some((_, l)) = labels.next_if(|(p, _)| *p == point) {
            here.push(l);
        }
        total += strategies.iter().filter(|s| here.iter().any(|l| *l == *s)).count();
        if rows.len() < MAX_TABLE_ROWS {
            comparison_rows(&r.rows_at(point), &strategies, &refs, &mut rows);
        }
    }
    let mut out =
        vec![Block::Para("Means over replications ± the 95% confidence half-width.".into())];
    out.push(Block::Table(head, rows));
    if total > MAX_TABLE_ROWS {
        out.push(Block::Para(format!("({} more rows in summary.csv.)", total - MAX_TABLE_ROWS)));
    }
    out
}

/// The table rows of one point's summary rows `here`, a row per strategy, until `rows` holds
/// `MAX_TABLE_ROWS`.
fn comparison_rows(
    here: &[SummaryRow],
    strategies: &[String],
    refs: &str,
    rows: &mut Vec<Vec<String>>,
) {
    let row_of = |s: &str| here.iter().find(|x| x.strategy == s);
    for s in strategies {
        let Some(row) = row_of(s) else { continue };
        if rows.len() == MAX_TABLE_ROWS {
            return;
        }
        let base = row_of(refs).and_then(|b| b.get("cost_usd_mean"));
        let vs = match (row.get("cost_usd_mean"), base) {
            _ if *s == refs => "–".to_string(),
            (Some(c), Some(b)) if b > 0.0 => format!("{:+.1}%", (c - b) / b * 100.0),
            _ => "–".into(),
        };
        let mut cells = row.axis_values.to_vec();
        cells.extend([
            format!("`{s}`"),
            mean_ci(row, "cost_usd", usd_ci),
            vs,
            mean_ci(row, "hit_rate", |m, ci| format!("{:.1} ± {:.1}", m * 100.0, ci * 100.0)),
            mean_ci(row, "makespan_s", sig_ci),
            mean_ci(row, "launch_wait_p99_s", sig_ci),
            mean_ci(row, "redundant_writes", sig_ci),
        ]);
        rows.push(cells);
    }
}

/// From tune.json when present; otherwise read off the table, and said to be so.
fn recommendation(r: &Results) -> Vec<Block> {
    if let Some(t) = &r.tune {
        let mut out = Vec::new();
        match tune_sentence(t) {
            Some(s) => out.push(Block::Para(s)),
            None => out.push(Block::Para("tune.json (fields not recognised, shown as is):".into())),
        }
        let notes = t.get("notes").and_then(|n| n.as_array()).cloned().unwrap_or_default();
        for n in notes.iter().filter_map(|n| n.as_str()) {
            out.push(Block::Para(format!("Note from `tune`: {n}")));
        }
        match tune_candidates(t) {
            Some(table) => out.push(table),
            None => out.push(Block::Code { lang: "json".into(), text: pretty(t) }),
        }
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
        text.push_str(&single_point(r, &r.rows_at(points[0])));
    } else {
        let mut wins: Vec<(String, usize)> = r.strategies().into_iter().map(|s| (s, 0)).collect();
        for (_, here) in r.summary.by_point() {
            if let Some(best) = cheapest(&here) {
                if let Some(w) = wins.iter_mut().find(|w| w.0 == *best.strategy) {
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
            and_list(&parts)
        ));
    }
    vec![Block::Para(text)]
}

/// The sentence of a summary of one point, whose rows are `here`.
fn single_point(r: &Results, here: &[SummaryRow]) -> String {
    let Some(best) = cheapest(here) else { return String::new() };
    let c = cost(best).unwrap_or(0.0);
    let mut s = format!("Lowest mean cost: `{}` ({}", best.strategy, usd(c));
    if let Some(base) = reference(r)
        .filter(|x| **x != *best.strategy)
        .and_then(|x| here.iter().find(|s| s.strategy == x))
    {
        let b = cost(base).unwrap_or(0.0);
        if b > 0.0 {
            s.push_str(&format!(", {} less than `{}`", pct((b - c) / b), base.strategy));
        }
        let ci = |row: &SummaryRow| row.get("cost_usd_ci95").unwrap_or(0.0);
        let apart = c + ci(best) < b - ci(base);
        s.push_str(if apart { "; the 95% CIs do not overlap" } else { "; the 95% CIs overlap" });
    }
    s.push_str(").");
    let fastest = here.iter().min_by(|a, b| {
        a.get("makespan_s_mean").unwrap_or(0.0).total_cmp(&b.get("makespan_s_mean").unwrap_or(0.0))
    });
    if let Some(f) = fastest {
        s.push_str(&format!(
            " Shortest mean makespan: `{}` ({}).",
            f.strategy,
            secs(f.get("makespan_s_mean").unwrap_or(0.0))
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
    let best = pick(&["recommended_label", "best", "best_value", "recommended", "value"])?;
    let mut s = format!("`tune` recommends `{param}` = {best}");
    if let Some(strategy) = pick(&["strategy"]) {
        s.push_str(&format!(" for `{strategy}`"));
    }
    if let Some(obj) = pick(&["objective"]) {
        s.push_str(&format!(", minimising `{obj}`"));
        let value = t.get("recommended_objective").and_then(|v| v.as_f64());
        let ci = t.get("recommended_ci95").and_then(|v| v.as_f64());
        if let (Some(v), Some(ci)) = (value, ci) {
            s.push_str(&format!(" ({} ± {}, 95% CI)", num(v), num(ci)));
        }
    }
    if let Some(n) = t.get("replications").and_then(|v| v.as_u64()) {
        s.push_str(&format!("; {n} replications per candidate"));
    }
    if t.get("flat").and_then(|v| v.as_bool()) == Some(true) {
        s.push_str("; the objective is flat across the candidates");
    }
    s.push('.');
    Some(s)
}

/// The candidates of tune.json as a table, when they carry the fields `tune --out` writes.
fn tune_candidates(t: &serde_json::Value) -> Option<Block> {
    let cands = t.get("candidates")?.as_array()?;
    let f = |c: &serde_json::Value, k: &str| {
        c.get(k).and_then(|v| v.as_f64()).map(num).unwrap_or_else(|| "–".into())
    };
    let mut rows: Vec<Vec<String>> = cands
        .iter()
        .map(|c| {
            let label = c.get("label").map(json_text).unwrap_or_else(|| f(c, "value"));
            let feasible = match c.get("feasible").and_then(|v| v.as_bool()) {
                Some(true) => "yes",
                Some(false) => "no",
                None => "–",
            };
            vec![
                label,
                format!("{} ± {}", f(c, "objective"), f(c, "objective_ci95")),
                format!("{} ± {}", f(c, "cost_usd"), f(c, "cost_ci95")),
                f(c, "launch_wait_pooled_p99_s"),
                f(c, "makespan_p95_s"),
                feasible.into(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let param = t.get("param").map(json_text).unwrap_or_else(|| "value".into());
    let mut head: Vec<String> = [
        param.as_str(),
        "objective",
        "cost (USD)",
        "pooled p99 launch wait (s)",
        "makespan p95 (s)",
        "feasible",
    ]
    .map(String::from)
    .into();
    // A wait_first candidate's share of runs whose cap fired before the first token.
    let capped = "p_cap_before_first_token";
    if cands.iter().any(|c| c.get(capped).is_some_and(|v| v.is_number())) {
        head.push("cap before first token (share of runs)".into());
        for (row, c) in rows.iter_mut().zip(cands) {
            row.push(f(c, capped));
        }
    }
    Some(Block::Table(head, rows))
}
