//! The report's answer to the experiment's question, as `[report] answer` declares it:
//! `hold_cap` (here: the cap to use per swept value, its price in latency, how often it saves
//! nothing) or `cost` (`cost_answer.rs`: the cheaper option per slice, by how much, with 95%
//! CIs).
//!
//! "The cap to use" is only ever the hold answer (`sweep::hold`): hold.json of a run, hold.csv
//! of a sweep (a row per point), with its interval over the latency calibration's refits and
//! the probability that the first token comes after it. Beside it, read off summary.csv and
//! runs.csv, the smallest of the caps the experiment lists whose cost is within tolerance,
//! labelled as such; a hold "saves nothing" in a replication that made a redundant write
//! (`redundant_writes > 0` in runs.csv): the first writer's first token came after the cap,
//! as `tune`'s `p_cap_before_first_token` counts it.

use super::doc::Block;
use super::words::{count, pct, secs, secs_delta, usd, usd_ci};
use crate::config::ReportSpec;
use crate::results::HoldRow;
use crate::results::{strategy_cells, Results, SummaryRow};
use crate::sweep::hold::{HOLD_RANGE, KNIFE_EDGE_SHARE};

/// Sentences for the findings and the blocks of the "Answer" section.
#[derive(Debug, Default)]
pub struct Answered {
    pub findings: Vec<String>,
    pub blocks: Vec<Block>,
}

/// A hold the report can recommend: no hold (`eager`, cap 0) or `wait_first` released on ready.
struct Cap {
    label: String,
    cap_s: f64,
}

impl Cap {
    fn text(&self) -> String {
        if self.cap_s == 0.0 {
            "no hold (`eager`)".into()
        } else {
            format!("{} s", crate::numfmt::num(self.cap_s))
        }
    }
}

fn caps(r: &Results) -> Vec<Cap> {
    let mut out: Vec<Cap> = r
        .strategies()
        .into_iter()
        .filter_map(|label| {
            let [family, max_wait, release, _] = strategy_cells(&label);
            let cap_s = match family.as_str() {
                "eager" => 0.0,
                "wait_first" if release == "on_ready" => max_wait.parse().ok()?,
                _ => return None,
            };
            Some(Cap { label, cap_s })
        })
        .collect();
    out.sort_by(|a, b| a.cap_s.total_cmp(&b.cap_s));
    out
}

/// Share of the replications of (`point`, `strategy`) in which the hold saved nothing: it made
/// as many redundant writes as `eager` in the same replication (the strategies share their
/// random numbers), which is what a cap that fires before the first writer's first token
/// does; without `eager`, any redundant write. `None` without runs.csv rows for it.
pub fn share_saving_nothing(r: &Results, point: u32, strategy: &str) -> Option<f64> {
    let writes = |s: &str| -> Vec<(u32, f64)> {
        r.runs_of(point, s)
            .filter_map(|u| Some((u.replication, u.get("redundant_writes")?)))
            .collect()
    };
    let (held, eager) = (writes(strategy), writes("eager"));
    if held.is_empty() {
        return None;
    }
    let nothing = |(rep, w): &(u32, f64)| match eager.iter().find(|e| e.0 == *rep) {
        Some((_, e)) => w >= e,
        None => *w > 0.0,
    };
    Some(held.iter().filter(|x| nothing(x)).count() as f64 / held.len() as f64)
}

/// A row's mean cost per run, USD.
pub(super) fn cost(row: &SummaryRow) -> Option<f64> {
    row.get("cost_usd_mean")
}

/// The row of the lowest mean cost among `here`.
pub(super) fn cheapest(here: &[SummaryRow]) -> Option<&SummaryRow> {
    let cost = |row: &&SummaryRow| cost(row).unwrap_or(0.0);
    here.iter()
        .filter(|row| row.get("cost_usd_mean").is_some())
        .min_by(|a, b| cost(a).total_cmp(&cost(b)))
}

/// `[report] answer = "hold_cap"`: the rule, the pivot of the cap to use per point, and how
/// often each cap saves nothing.
/// `ranges`: the answer's ranges over the experiment's swept assumptions
/// (`ranges::Ranges::answered`: its sentences and blocks), which then lead.
pub fn hold_cap(r: &Results, spec: &ReportSpec, ranges: Option<Answered>) -> Answered {
    let caps = caps(r);
    if caps.iter().all(|c| c.cap_s == 0.0) {
        let why = "`[report] answer = \"hold_cap\"`, but no `wait_first` strategy was run.";
        return Answered { findings: Vec::new(), blocks: vec![Block::Para(why.into())] };
    }
    let tol = spec.tolerance;
    let pivot = Pivot::of(r, &caps, tol);
    let rule = rule(r, tol);
    let mut findings = hold_findings(r, &caps, &pivot, &rule);
    let mut blocks = vec![Block::Para(rule_para(&rule, tol, !r.hold_rows.is_empty()))];
    if let Some(ranges) = ranges {
        // Per point, the sentences would list every combination of the assumptions: the
        // ranges say it per row, and the pivot below still has every point.
        findings = ranges.findings;
        blocks.splice(0..0, ranges.blocks);
    } else if !r.hold_rows.is_empty() {
        let lead = swept_hold_findings(r);
        blocks.insert(0, Block::Para(lead.join(" ")));
        findings.splice(0..0, lead);
    }
    if let Some(h) =
        r.hold.as_ref().and_then(|h| serde_json::from_value::<HoldJson>(h.clone()).ok())
    {
        let lead = format!(
            "{} (`hold.json`: the search `prefixsim tune --param max_wait --range '{}'` makes, \
             at the point fit and at each refit of the latency calibration).",
            crate::numfmt::capitalised(&h.sentence),
            h.range
        );
        findings.insert(0, lead.clone());
        blocks.insert(0, Block::Para(lead));
    }
    blocks.push(pivot_table(r, pivot.rows));
    blocks.extend(nothing_table(r, &caps, pivot.nothing_rows));
    Answered { findings, blocks }
}

/// A cap in seconds as the hold answer found it (to the millisecond, no trailing zeros); a cap
/// of 0 is no hold.
pub(super) fn cap_text(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    match s {
        "0" => "0 s (no hold)".to_string(),
        s => format!("{s} s"),
    }
}

/// A point's cap to use with its interval over the refits, when there is one.
fn cap_with_range(h: &HoldRow) -> String {
    match h.cap_range_s {
        // No hold at the point fit and at every refit: nothing to give a range of.
        Some([_, hi]) if h.cap_s == 0.0 && hi == 0.0 => {
            format!("{}, at every refit", cap_text(0.0))
        }
        Some([lo, hi]) => format!(
            "{} ({}-{} over {} refits)",
            cap_text(h.cap_s),
            cap_text(lo).trim_end_matches(" (no hold)").trim_end_matches(" s"),
            cap_text(hi),
            h.draws
        ),
        None => cap_text(h.cap_s),
    }
}

/// The lead of a sweep's answer (hold.csv): the cap to use per point with its interval, how
/// often the first token comes after it, and the points on a knife edge.
fn swept_hold_findings(r: &Results) -> Vec<String> {
    let picks: Vec<(u32, String)> =
        r.hold_rows.iter().map(|h| (h.point, cap_with_range(h))).collect();
    // The report is the command line's, which has the sweep: the grid the hold answer searches.
    let search = format!("`prefixsim tune --param max_wait --range '{HOLD_RANGE}'`");
    let mut out = vec![format!(
        "The cap to use (`hold.csv`: the search {search} makes at each point, as `run` and \
         `tune` make it, at the point fit and at each refit of the latency calibration): {}.",
        grouped(r, &picks)
    )];
    // A point whose answer is no hold has no cap for the first token to come after.
    let held = || r.hold_rows.iter().filter(|h| h.cap_s > 0.0);
    let worst = held().map(|h| h.p_after_cap).fold(0.0, f64::max);
    let pooled: Vec<f64> = held().filter_map(|h| h.p_after_cap_draws).collect();
    let over_refits = match pooled.iter().copied().reduce(f64::max) {
        Some(p) => format!(", and in up to {} of the refits' replications", pct(p)),
        None => "; there are no calibration refits to widen it (the latency is not the \
                 calibrated preset's, or its calibration has no refits)"
            .to_string(),
    };
    let at_fit = match worst {
        0.0 => "in none of the replications".to_string(),
        w => format!("in up to {} of the replications", pct(w)),
    };
    out.push(format!(
        "The first writer's first token comes after that cap {at_fit} at the point \
         fit{over_refits}."
    ));
    let edge: Vec<(u32, String)> =
        r.hold_rows.iter().filter(|h| h.knife_edge).map(|h| (h.point, cap_text(h.cap_s))).collect();
    if !edge.is_empty() {
        out.push(format!(
            "On a knife edge (the first token comes after the cap in more than {} of \
             replications, at the point fit or over the refits, and the hold then saves \
             nothing): {}.",
            pct(KNIFE_EDGE_SHARE),
            grouped(r, &edge)
        ));
    }
    if r.hold_rows.len() < r.points().len() {
        out.push(format!(
            "{} of {} have no hold answer (their experiment runs no `wait_first`).",
            r.points().len() - r.hold_rows.len(),
            count(r.points().len(), "point", "points")
        ));
    }
    out
}

/// The cells of `point`'s hold answer in the pivot: the cap to use with its interval, and
/// how often the first token comes after it (point fit; pooled over the refits).
fn hold_cells(r: &Results, point: u32) -> [String; 2] {
    let Some(h) = r.hold_at(point) else { return ["–".into(), "–".into()] };
    let mut cap = cap_with_range(h);
    if h.knife_edge {
        cap.push_str(", knife edge");
    }
    let after = match h.p_after_cap_draws {
        _ if h.cap_s == 0.0 => "– (no hold)".to_string(),
        Some(p) => format!("{} ({} over the refits)", pct(h.p_after_cap), pct(p)),
        None => pct(h.p_after_cap),
    };
    [cap, after]
}

/// What the report reads of hold.json: the answer's sentence as `run` prints it.
#[derive(serde::Deserialize)]
struct HoldJson {
    sentence: String,
    range: String,
}

/// What the hold-cap answer collects point by point: the pivot's rows, the probability
/// table's rows, and the numbers its findings summarise.
#[derive(Default)]
struct Pivot {
    /// (point, the cap to use as words).
    picks: Vec<(u32, String)>,
    rows: Vec<Vec<String>>,
    nothing_rows: Vec<Vec<String>>,
    /// The picked caps' pooled p99 launch waits, seconds.
    p99s: Vec<f64>,
    /// The picked caps' pooled p99 completion minus `eager`'s, seconds.
    done_deltas: Vec<f64>,
    /// The picked (non-zero) caps' shares of replications that saved nothing.
    nothing: Vec<f64>,
}

impl Pivot {
    fn of(r: &Results, caps: &[Cap], tol: f64) -> Pivot {
        let mut p = Pivot::default();
        // One walk over the summary, a point's rows at a time (a scan per point was
        // quadratic, and a row looked up was read again).
        for (point, here) in r.summary.by_point() {
            let Some(cheapest) = cheapest(&here) else { continue };
            let best = cost(cheapest).unwrap_or(0.0);
            let mut cells = cheapest.axis_values.to_vec();
            if !r.hold_rows.is_empty() {
                cells.extend(hold_cells(r, point));
            }
            cells.extend(p.pick(r, caps, (point, &here), best, tol));
            cells.push(format!("`{}` ({})", cheapest.strategy, usd(best)));
            p.rows.push(cells);
            let mut shares = cheapest.axis_values.to_vec();
            for c in caps.iter().filter(|c| c.cap_s > 0.0) {
                shares.push(share_saving_nothing(r, point, &c.label).map_or("–".into(), pct));
            }
            p.nothing_rows.push(shares);
        }
        p
    }

    /// The pivot cells of `point`'s cap to use (the smallest whose cost is within `tol` of
    /// `best`), recording it and its price; without one, the cheapest cap's cells, so marked.
    fn pick(
        &mut self,
        r: &Results,
        caps: &[Cap],
        (point, here): (u32, &[SummaryRow]),
        best: f64,
        tol: f64,
    ) -> Vec<String> {
        let eager = row_of(here, "eager");
        let pick = caps.iter().find(|c| {
            row_of(here, &c.label).and_then(cost).is_some_and(|x| x <= best * (1.0 + tol))
        });
        let Some((c, row)) = pick.and_then(|c| Some((c, row_of(here, &c.label)?))) else {
            return self.no_pick(r, caps, (point, here), tol);
        };
        self.picks.push((point, c.text()));
        if let Some(x) = row.get("launch_wait_pooled_p99_s") {
            self.p99s.push(x);
        }
        let done = |s: &SummaryRow| s.get("completion_pooled_p99_s");
        if let (Some(a), Some(b)) = (done(row), eager.and_then(done)) {
            self.done_deltas.push(a - b);
        }
        if c.cap_s > 0.0 {
            self.nothing.extend(share_saving_nothing(r, point, &c.label));
        }
        pick_cells(r, point, c, row, eager)
    }

    /// No cap is close enough: say so, and show the cheapest cap for its price.
    fn no_pick(
        &mut self,
        r: &Results,
        caps: &[Cap],
        (point, here): (u32, &[SummaryRow]),
        tol: f64,
    ) -> Vec<String> {
        let nearest = caps
            .iter()
            .filter_map(|c| Some((c, row_of(here, &c.label)?)))
            .min_by(|a, b| cost(a.1).unwrap_or(0.0).total_cmp(&cost(b.1).unwrap_or(0.0)));
        let Some((c, row)) = nearest else {
            self.picks.push((point, "none".into()));
            return ["none".to_string()].into_iter().chain(dashes(5)).collect();
        };
        self.picks.push((point, format!("none (the cheapest cap is {})", c.text())));
        let mut cells = pick_cells(r, point, c, row, row_of(here, "eager"));
        cells[0] = format!("none within {}; cheapest cap {}", pct(tol), c.text());
        cells
    }
}

/// The first of a point's rows of `strategy`.
fn row_of<'a>(here: &'a [SummaryRow], strategy: &str) -> Option<&'a SummaryRow> {
    here.iter().find(|s| s.strategy == strategy)
}

/// The rule that picks the cap to use, as words.
fn rule(r: &Results, tol: f64) -> String {
    let at = if r.points().len() > 1 { " at that point" } else { "" };
    format!(
        "the smallest cap whose mean cost is within {} of the cheapest strategy's{at}",
        pct(tol)
    )
}

/// The findings: the cap to use per point, its price, how often it saves nothing, and what
/// the documented default cap costs.
fn hold_findings(r: &Results, caps: &[Cap], p: &Pivot, rule: &str) -> Vec<String> {
    let mut findings = vec![format!("Among the caps run, {rule}: {}.", grouped(r, &p.picks))];
    if let Some(s) = price_sentence(&p.p99s, &p.done_deltas) {
        findings.push(s);
    }
    if !p.nothing.is_empty() {
        let worst = p.nothing.iter().copied().fold(0.0, f64::max);
        findings.push(if worst == 0.0 {
            "That cap outlasted the first writer's time to first token in every replication: \
             it never saved nothing."
                .to_string()
        } else {
            format!(
                "That cap saves nothing (the first writer's first token came after it, so the \
                 held agents wrote the prefix again) in up to {} of the replications.",
                pct(worst)
            )
        });
    }
    findings.extend(default_cap_sentence(r, caps));
    findings
}

fn rule_para(rule: &str, tol: f64, searched: bool) -> String {
    let lead = match searched {
        true => "The table shows, per point, the cap to use (`hold.csv`) with its range over \
                 the calibration's refits and how often the first token comes after it (at the \
                 point fit, and pooled over the refits); then, beside it and only among the caps \
                 the experiment lists, "
            .to_string(),
        false => "Among the caps run, the table shows ".to_string(),
    };
    format!(
        "{lead}{rule} (`[report] tolerance` = {}); no hold (`eager`) counts as a cap of 0 s. \
         Its price: the launch wait pooled over every agent of every replication (p50 / p99), \
         and the pooled p99 agent completion time against `eager`'s.",
        crate::numfmt::num(tol)
    )
}

/// The pivot: per point, the cap to use, its cost and price, and the cheapest strategy.
fn pivot_table(r: &Results, rows: Vec<Vec<String>>) -> Block {
    let mut head: Vec<String> = r.axis_keys.iter().map(|k| format!("`{k}`")).collect();
    if !r.hold_rows.is_empty() {
        head.extend(["the cap to use (`hold.csv`)", "first token after it"].map(String::from));
    }
    head.extend(
        [
            "cap run, within tolerance",
            "mean cost (USD, 95% CI)",
            "vs `eager`",
            "launch wait p50 / p99 (pooled)",
            "completion p99 (pooled), vs `eager`",
            "replications where it saved nothing",
            "cheapest strategy",
        ]
        .map(String::from),
    );
    Block::Table(head, rows)
}

/// The probability table (with the paragraph saying what it counts): per point, the share of
/// replications in which each cap saved nothing.
fn nothing_table(r: &Results, caps: &[Cap], rows: Vec<Vec<String>>) -> [Block; 2] {
    let para = Block::Para(
        "How often each cap saves nothing: the share of replications in which the hold wrote as \
         many redundant cache entries as `eager` (the first writer's first token came after the cap, \
         or the policy gives the held agents nothing to read)."
            .into(),
    );
    let mut head: Vec<String> = r.axis_keys.iter().map(|k| format!("`{k}`")).collect();
    head.extend(caps.iter().filter(|c| c.cap_s > 0.0).map(|c| format!("`{}`", c.label)));
    [para, Block::Table(head, rows)]
}

/// `n` empty cells.
pub(super) fn dashes(n: usize) -> impl Iterator<Item = String> {
    std::iter::repeat_n("–".to_string(), n)
}

/// The cells of the chosen cap: cap, cost, vs eager, launch wait, completion, saved nothing.
fn pick_cells(
    r: &Results,
    point: u32,
    c: &Cap,
    row: &SummaryRow,
    eager: Option<&SummaryRow>,
) -> Vec<String> {
    let get = |s: &SummaryRow, k: &str| s.get(k).unwrap_or(0.0);
    let base = eager.and_then(cost).filter(|b| *b > 0.0);
    let vs = match base {
        Some(b) if c.cap_s > 0.0 => format!("{:+.1}%", (get(row, "cost_usd_mean") - b) / b * 100.0),
        _ => "–".into(),
    };
    let done = get(row, "completion_pooled_p99_s");
    let done_vs = match eager {
        Some(e) if c.cap_s > 0.0 => {
            format!("{} ({})", secs(done), secs_delta(done - get(e, "completion_pooled_p99_s")))
        }
        _ => secs(done),
    };
    let nothing = match c.cap_s > 0.0 {
        true => share_saving_nothing(r, point, &c.label).map_or("–".into(), pct),
        false => "–".into(),
    };
    vec![
        c.text(),
        usd_ci(get(row, "cost_usd_mean"), get(row, "cost_usd_ci95")),
        vs,
        format!(
            "{} / {}",
            secs(get(row, "launch_wait_pooled_p50_s")),
            secs(get(row, "launch_wait_pooled_p99_s"))
        ),
        done_vs,
        nothing,
    ]
}

/// `5 s for `key` = 5000 to 100000, 10 s for 150000 and 30 s for 500000`: each pick with the
/// run of consecutive points that share it, in point order. With one axis the key is named
/// once; a run (no axis) gives the pick alone.
fn grouped(r: &Results, picks: &[(u32, String)]) -> String {
    let one_axis = r.axis_keys.len() == 1;
    // Each point's axis values, from the summary's index (its first rows').
    let mut axes: std::collections::BTreeMap<u32, Vec<&str>> = std::collections::BTreeMap::new();
    for (point, values) in r.summary.axes() {
        axes.entry(point).or_insert(values);
    }
    let name = |point: u32| match axes.get(&point) {
        Some(values) if one_axis => values[0].to_string(),
        Some(values) if !r.axis_keys.is_empty() => format!("({})", values.join(", ")),
        _ => String::new(),
    };
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (point, pick) in picks {
        match groups.last_mut() {
            Some((p, names)) if p == pick => names.push(name(*point)),
            _ => groups.push((pick.clone(), vec![name(*point)])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, (pick, names))| {
            let keys: Vec<String> = r.axis_keys.iter().map(|k| format!("`{k}`")).collect();
            let lead = match (i, one_axis) {
                (0, true) => format!("{} = ", keys[0]),
                (0, false) => format!("({}) = ", keys.join(", ")),
                _ => String::new(),
            };
            match names.as_slice() {
                [one] if one.is_empty() => pick.clone(),
                [one] => format!("{pick} for {lead}{one}"),
                [first, second] if one_axis => format!("{pick} for {lead}{first} and {second}"),
                [first, .., last] if one_axis => format!("{pick} for {lead}{first} to {last}"),
                many => format!("{pick} for {lead}{}", super::words::and_list(many)),
            }
        })
        .collect();
    match one_axis || r.axis_keys.is_empty() {
        true => super::words::and_list(&parts),
        false => parts.join("; "),
    }
}

fn price_sentence(p99s: &[f64], done_deltas: &[f64]) -> Option<String> {
    let lo = p99s.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = p99s.iter().copied().fold(0.0, f64::max);
    if p99s.is_empty() {
        return None;
    }
    let wait = if (hi - lo).abs() < 1e-9 {
        format!("a pooled p99 launch wait of {}", secs(hi))
    } else {
        format!("a pooled p99 launch wait of {} to {}", secs(lo), secs(hi))
    };
    let done = done_deltas.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let done = match done_deltas.is_empty() {
        true => String::new(),
        false if done <= 0.0 => {
            ", and a pooled p99 agent completion time no longer than `eager`'s".into()
        }
        false => format!(
            ", and a pooled p99 agent completion time up to {} longer than `eager`'s",
            secs(done)
        ),
    };
    Some(format!("Its price in latency: {wait}{done}."))
}

/// Claude Code's documented default cap (5 s), when run: how often it saves nothing, by point.
fn default_cap_sentence(r: &Results, caps: &[Cap]) -> Option<String> {
    let c = caps.iter().find(|c| c.cap_s == 5.0)?;
    let share = |p: u32| Some((p, pct(share_saving_nothing(r, p, &c.label)?)));
    let shares: Vec<(u32, String)> = r.points().into_iter().map(share).collect::<Option<_>>()?;
    Some(format!(
        "The documented default cap, 5 s, saves nothing in this share of the replications: {}.",
        grouped(r, &shares)
    ))
}
