//! Rendering a replay: tables for people, JSON for programs, and `replay.json` (with the
//! reuse-gap histogram and the hit-rate curves) for the plot module. Pure: strings and
//! `serde_json::Value`s, no I/O. Floats are rounded to 6 decimals; keys sorted (BTreeMap).

use std::fmt::Write as _;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

use super::blocks::CAUSES;
use super::run::{ChoiceStats, READY_SOURCES};
use super::{Curves, Replay, ReplaySettings};
use crate::numfmt::pct;
use crate::time::{secs, Human};

/// Percentiles shown for the reuse gaps.
pub const PERCENTILES: [(f64, &str); 5] =
    [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p999"), (1.0, "max")];

fn r6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The index of the cheapest choice among those with an API TTL (5m or 1h), else overall.
pub fn winner(replay: &Replay) -> Option<usize> {
    let cost = |i: &usize| replay.choices[*i].1.cost_usd;
    let api: Vec<usize> =
        (0..replay.choices.len()).filter(|&i| replay.choices[i].0.is_api_ttl()).collect();
    let pool = if api.is_empty() { (0..replay.choices.len()).collect() } else { api };
    pool.into_iter().min_by(|a, b| cost(a).total_cmp(&cost(b)))
}

/// The JSON object of one choice (the `--json` contract's keys and more).
pub fn choice_json(replay: &Replay, index: usize) -> Value {
    let (choice, s) = &replay.choices[index];
    let a = &s.account;
    let (cost, uncached_cost) = (s.cost_usd, s.cost_uncached_usd);
    let shares = s.miss_shares();
    let ready_shares = s.ready_shares();
    // Counts and shares by cause (`CAUSES`) or readiness source (`READY_SOURCES`).
    let named = |names: [&str; 4], values: [Value; 4]| -> Value {
        names.into_iter().map(String::from).zip(values).collect()
    };
    let conversations: Vec<Value> = s
        .conversations
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = &p.account;
            json!({"name": replay.conversations[i], "requests": p.requests, "input_tokens": c.input(),
                   "cache_read": c.cache_read, "hit_rate": r6(c.hit_rate()),
                   "cost_usd": r6(p.cost_usd), "cost_uncached_usd": r6(p.cost_uncached_usd)})
        })
        .collect();
    json!({
        "label": choice.label, "policy": choice.policy.name(), "ttl": choice.ttl_text(),
        "capacity_tokens": choice.capacity_tokens, "requests": s.requests,
        "requests_with_hit": s.requests_with_hit, "input_tokens": a.input(),
        "cache_read": a.cache_read, "cache_write": a.cache_write(),
        "cache_write_5m": a.cache_write_5m, "cache_write_1h": a.cache_write_1h, "uncached": a.uncached,
        "output_tokens": a.output, "hit_rate": r6(a.hit_rate()), "cost_usd": r6(cost),
        "cost_uncached_usd": r6(uncached_cost), "saving_usd": r6(uncached_cost - cost),
        "redundant_writes": s.redundant_writes,
        "miss_tokens": named(CAUSES, s.miss_tokens.map(|t| json!(t))),
        "miss_share": named(CAUSES, shares.map(|x| json!(r6(x)))),
        "ready_from_tokens": named(READY_SOURCES, s.ready_tokens.map(|t| json!(t))),
        "ready_from_share": named(READY_SOURCES, ready_shares.map(|x| json!(r6(x)))),
        "conversations": conversations,
    })
}

/// Reuse-gap percentiles in seconds.
pub fn gap_json(h: &Histogram<u64>) -> Value {
    let quantiles =
        PERCENTILES.map(|(q, name)| (format!("{name}_s"), json!(r6(secs(h.value_at_quantile(q))))));
    std::iter::once(("count".to_string(), json!(h.len()))).chain(quantiles).collect()
}

/// `--json`: one object (plus trace facts) for one choice, an array for `--what-if`.
pub fn stdout_json(replay: &Replay, settings: &ReplaySettings, what_if: bool) -> Value {
    let win = winner(replay);
    let objects: Vec<Value> = (0..replay.choices.len())
        .map(|i| {
            let mut v = choice_json(replay, i);
            v["format"] = json!(replay.format.name());
            v["model"] = json!(price_label(settings));
            v["reuse_gap"] = gap_json(&replay.reuse_gap_us);
            if what_if {
                v["wins_on_cost"] = json!(win == Some(i));
            }
            if let Some(r) = &replay.recorded {
                v["recorded"] = recorded_json(r);
            }
            v
        })
        .collect();
    match what_if {
        true => Value::Array(objects),
        false => objects.into_iter().next().unwrap_or(Value::Null),
    }
}

/// `v` pretty-printed with every object's keys sorted (as every JSON output has them), and a
/// final newline.
pub fn sorted_json(mut v: Value) -> String {
    v.sort_all_objects();
    serde_json::to_string_pretty(&v).expect("JSON values serialize") + "\n"
}

/// The histogram as HdrHistogram V2 + deflate, base64.
pub fn histogram_base64(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serializing to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `replay.json` for the plot module: results, reuse gaps, curves. No absolute paths.
pub fn replay_file_json(
    replay: &Replay,
    settings: &ReplaySettings,
    trace_name: &str,
    curves: &Curves,
) -> Value {
    let results: Vec<Value> = (0..replay.choices.len()).map(|i| choice_json(replay, i)).collect();
    let ttl: Vec<Value> = curves
        .ttl
        .iter()
        .map(|(t, h)| json!({"ttl_s": t.map(|t| r6(secs(t))), "ttl": t.map_or("none".to_string(), |t| Human(t).to_string()), "hit_rate": r6(*h)}))
        .collect();
    let cap = |points: &[(u64, f64, f64)]| -> Vec<Value> {
        points
            .iter()
            .map(|(c, f, h)| json!({"capacity_tokens": c, "fraction_of_distinct": f, "hit_rate": r6(*h)}))
            .collect()
    };
    let mut gap = gap_json(&replay.reuse_gap_us);
    gap["unit"] = json!("s");
    gap["hdr_v2_deflate_base64_us"] = json!(histogram_base64(&replay.reuse_gap_us));
    let mut v = json!({
        "prefixsim_version": env!("CARGO_PKG_VERSION"), "kind": "replay", "trace": trace_name,
        "format": replay.format.name(), "model": price_label(settings), "requests": replay.requests,
        "distinct_blocks": replay.distinct_blocks, "distinct_tokens": replay.distinct_tokens,
        "instant_ready": settings.instant_ready,
        "winner": winner(replay).map(|i| replay.choices[i].0.label.clone()),
        "results": results, "reuse_gap": gap,
        "curves": {"hit_rate_vs_ttl": ttl, "hit_rate_vs_capacity": cap(&curves.capacity),
                   "hit_rate_vs_capacity_no_ttl": cap(&curves.capacity_no_ttl)},
    });
    if let Some(r) = &replay.recorded {
        v["recorded"] = recorded_json(r);
    }
    v
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars: cents for large sums, 4 decimals under $1.
fn money(x: f64) -> String {
    match x.abs() >= 1.0 {
        true => format!("{x:.2}"),
        false => format!("{x:.4}"),
    }
}

/// A table: the first column left-aligned, the others right-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            let _ = match i {
                0 => write!(out, "{cell:<w$}"),
                _ => write!(out, "  {cell:>w$}"),
            };
        }
        out.push('\n');
    };
    line(&mut header.iter().copied(), &mut out);
    for row in rows {
        line(&mut row.iter().map(|s| s.as_str()), &mut out);
    }
    out
}

/// Whether the table shows where readiness came from: only traces that record timing.
fn shows_ready_sources(replay: &Replay, settings: &ReplaySettings) -> bool {
    replay.format.records_models() && !settings.instant_ready
}

/// The recorded split of a log as JSON: what the provider billed, with no cache choice.
fn recorded_json(s: &ChoiceStats) -> Value {
    let a = &s.account;
    json!({
        "requests": s.requests, "requests_with_hit": s.requests_with_hit,
        "input_tokens": a.input(), "cache_read": a.cache_read, "cache_write": a.cache_write(),
        "uncached": a.uncached, "output_tokens": a.output, "hit_rate": r6(a.hit_rate()),
        "cost_usd": r6(s.cost_usd), "cost_uncached_usd": r6(s.cost_uncached_usd),
        "saving_usd": r6(s.cost_uncached_usd - s.cost_usd),
    })
}

/// The row of the provider's recorded split, beside the simulated choices.
fn recorded_row(s: &ChoiceStats, ready: bool) -> Vec<String> {
    let (cost, uncached) = (s.cost_usd, s.cost_uncached_usd);
    let mut row = vec![
        "recorded (provider)".to_string(),
        "-".into(),
        "-".into(),
        "-".into(),
        pct(s.account.hit_rate()),
        thousands(s.account.cache_read),
        thousands(s.account.cache_write()),
        money(cost),
        saving(cost, uncached),
    ];
    row.extend(std::iter::repeat_n("-".to_string(), if ready { 7 } else { 4 }));
    row
}

/// What a log replay assumes, under the table.
fn log_assumption(settings: &ReplaySettings) -> String {
    format!(
        "
recorded (provider): the split the log records (writes at the 5m price); the other \
         rows are simulated, assuming one growing prompt per conversation and model, the \
         cacheable prefix the provider's read + write (the whole prompt where the log counts no \
         writes), cut to {}-token blocks (--set block_size=N); docs/replay.md\n",
        settings.block_size
    )
}

/// The trace header lines.
fn header(replay: &Replay, settings: &ReplaySettings, trace_name: &str) -> String {
    let ready = if settings.instant_ready {
        "entries readable at once (--instant-ready)"
    } else if shows_ready_sources(replay, settings) {
        "entries readable at the writer's measured ttft (by its api_time at the latest), \
         else the latency model's"
    } else {
        "entries readable at the writer's first token (latency model)"
    };
    format!(
        "replay {trace_name} ({}): {} requests, {} distinct blocks ({} tokens)\n\
         prices of {}; {ready}\n",
        replay.format.name(),
        thousands(replay.requests),
        thousands(replay.distinct_blocks),
        thousands(replay.distinct_tokens),
        if settings.per_request_prices { "each request's model" } else { &settings.model.name },
    )
}

/// One row of the choices table (with the readiness sources' shares if `ready`).
fn choice_row(replay: &Replay, i: usize, ready: bool) -> Vec<String> {
    let (c, s) = &replay.choices[i];
    let (cost, uncached) = (s.cost_usd, s.cost_uncached_usd);
    let shares = s.miss_shares();
    let mut row = vec![
        c.label.clone(),
        c.policy.name().to_string(),
        c.ttl_text(),
        c.capacity_tokens.map_or("-".into(), thousands),
        pct(s.account.hit_rate()),
        thousands(s.account.cache_read),
        thousands(s.account.cache_write()),
        money(cost),
        saving(cost, uncached),
    ];
    row.extend(shares.iter().map(|&x| pct(x)));
    if ready {
        row.extend(s.ready_shares()[..3].iter().map(|&x| pct(x)));
    }
    row
}

/// Whose prices: the chosen model, or `per-request`.
fn price_label(settings: &ReplaySettings) -> &str {
    match settings.per_request_prices {
        true => "per-request",
        false => &settings.model.name,
    }
}

/// The human-readable report.
pub fn text(replay: &Replay, settings: &ReplaySettings, trace_name: &str) -> String {
    let mut out = header(replay, settings, trace_name);
    out.push('\n');
    let ready = shows_ready_sources(replay, settings);
    let mut head = vec![
        "choice",
        "policy",
        "ttl",
        "capacity",
        "hit rate",
        "cache read",
        "cache write",
        "cost $",
        "saving $ (vs none)",
        "miss: expired",
        "capacity",
        "pending",
        "never seen",
    ];
    if ready {
        head.extend(["ready: ttft", "api_time", "model"]);
    }
    let mut rows: Vec<Vec<String>> =
        replay.recorded.iter().map(|r| recorded_row(r, ready)).collect();
    rows.extend((0..replay.choices.len()).map(|i| choice_row(replay, i, ready)));
    out += &table(&head, &rows);
    if replay.recorded.is_some() {
        out += &log_assumption(settings);
    }
    if replay.choices.len() > 1 {
        if let Some(w) = winner(replay) {
            let (c, s) = &replay.choices[w];
            let _ = writeln!(out, "\ncheapest: {} at ${}", c.label, money(s.cost_usd));
            out +=
                "(ttl=none is a bound: no API offers it; its writes are billed at the 5m price)\n";
        }
    }
    out += if replay.format.is_hash_ids() {
        "\nmiss shares are of written tokens; tokens after the last full block are never cached\n"
    } else {
        "\nmiss shares are of written tokens; tokens after the last breakpoint are uncached\n"
    };
    if ready {
        out += "ready shares are of written tokens: from the writer's measured ttft, its \
                api_time (earlier than the model's), or the latency model\n";
    }
    out += &gap_text(&replay.reuse_gap_us);
    out += &conversation_text(replay);
    for w in replay.warnings.iter().take(1) {
        let _ = writeln!(out, "\nwarning: {} line(s) skipped, first: {w}", replay.warnings.len());
    }
    out
}

fn gap_text(h: &Histogram<u64>) -> String {
    let mut out =
        format!("\nreuse gap between uses of a prefix block ({} reuses):", thousands(h.len()));
    for (q, name) in PERCENTILES {
        let _ = write!(out, " {name} {}", Human(h.value_at_quantile(q)));
    }
    out.push('\n');
    out
}

/// Conversations shown in the table (all are in the JSON).
const MAX_CONVERSATION_ROWS: usize = 50;

/// Per-conversation hit rates under the first choice.
fn conversation_text(replay: &Replay) -> String {
    let Some((choice, s)) = replay.choices.first() else { return String::new() };
    if s.conversations.is_empty() {
        return "\n(no conversation ids in this trace: totals only)\n".to_string();
    }
    let rows: Vec<Vec<String>> = s
        .conversations
        .iter()
        .enumerate()
        .take(MAX_CONVERSATION_ROWS)
        .map(|(i, p)| {
            vec![
                replay.conversations[i].clone(),
                thousands(p.requests),
                thousands(p.account.input()),
                pct(p.account.hit_rate()),
                money(p.cost_usd),
            ]
        })
        .collect();
    let mut out = format!("\nper conversation ({}):\n", choice.label);
    out += &table(&["conversation", "requests", "input tokens", "hit rate", "cost $"], &rows);
    if s.conversations.len() > MAX_CONVERSATION_ROWS {
        let more = s.conversations.len() - MAX_CONVERSATION_ROWS;
        let _ = writeln!(out, "... and {more} more (all of them in --json)");
    }
    out
}

/// The saving cell: dollars saved against sending everything uncached, and its share.
fn saving(cost: f64, uncached: f64) -> String {
    let share = if uncached > 0.0 { 1.0 - cost / uncached } else { 0.0 };
    format!("{} ({})", money(uncached - cost), pct(share))
}
