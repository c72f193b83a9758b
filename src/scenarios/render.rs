//! The scenarios' report as a table for people and as JSON for programs (pure: returns text).
//!
//! Under `every-block` the cache core bills every token it does not read as written; the table
//! shows those as the seed's "uncached" (not read: computed, and written for free), while the
//! JSON keeps the core's `cache_write` and `uncached` apart.

use super::{explanation, Report, ScenarioResult, SCENARIOS};
use crate::cache::{cost_usd, uncached_cost_usd, Policy, Usage};
use crate::config::ModelParams;
use crate::numfmt::pct;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// A hit rate rounded to 6 decimals (stable JSON).
fn rate6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Input cost of a request relative to the same request with no caching (docs/cache.md prices:
/// reads 0.1x, 5m writes 1.25x, 1h writes 2x).
pub fn input_cost_ratio(model: &ModelParams, u: &Usage) -> f64 {
    match uncached_cost_usd(model, u, 0) {
        0.0 => 0.0,
        base => cost_usd(model, u, 0) / base,
    }
}

/// The table for people.
pub fn table(r: &Report) -> String {
    let mut out = String::new();
    let policy = r.policy.name();
    let _ = writeln!(
        out,
        "Prefix-cache scenarios: workload `{}`, policy `{policy}`, model {}",
        r.workload.as_str(),
        r.model
    );
    let _ = writeln!(out, "{}", r.about);
    let _ = writeln!(
        out,
        "The main session is warmed turn by turn for {} turns (tools {} tokens, system {} tokens);\n\
         each scenario's request is then sent against that warm cache. hit rate = cache_read / all input.\n",
        r.main_turns, r.tools_tokens, r.system_tokens
    );
    scenario_rows(r, &mut out);
    btw_rows(r, &mut out);
    for s in r.scenarios.iter().filter(|s| s.note.is_some()) {
        let _ = writeln!(out, "{}: {}", s.id, s.note.as_deref().unwrap_or(""));
    }
    out.push('\n');
    for line in policy_notes(r) {
        let _ = writeln!(out, "{line}");
    }
    out
}

fn scenario_rows(r: &Report, out: &mut String) {
    let id_w = SCENARIOS.iter().map(|s| s.0.len()).max().unwrap_or(8);
    // A GPU cache or the seed demo's: every token not read is computed, and no price.
    let gpu = matches!(r.policy, Policy::EveryBlock | Policy::Vllm | Policy::Sglang);
    let _ = if gpu {
        writeln!(
            out,
            "{:id_w$}  {:>10}  {:>9}  {:>8}  what it shows",
            "scenario", "cache_read", "uncached", "hit rate"
        )
    } else {
        writeln!(
            out,
            "{:id_w$}  {:>10}  {:>11}  {:>9}  {:>8}  {:>6}  what it shows",
            "scenario", "cache_read", "cache_write", "uncached", "hit rate", "cost"
        )
    };
    for s in &r.scenarios {
        let u = &s.usage;
        let rate = pct(u.hit_rate());
        let shows = explanation(s.id);
        let _ = if gpu {
            let not_read = u.cache_write() + u.uncached;
            writeln!(out, "{:id_w$}  {:>10}  {not_read:>9}  {rate:>8}  {shows}", s.id, u.cache_read)
        } else {
            writeln!(
                out,
                "{:id_w$}  {:>10}  {:>11}  {:>9}  {rate:>8}  {:>6}  {shows}",
                s.id,
                u.cache_read,
                u.cache_write(),
                u.uncached,
                format!("{:.2}x", input_cost_ratio(&r.model_params, u))
            )
        };
    }
    out.push('\n');
}

fn btw_rows(r: &Report, out: &mut String) {
    let designs: Vec<&ScenarioResult> =
        r.scenarios.iter().filter(|s| s.next_turn.is_some()).collect();
    if designs.is_empty() {
        return;
    }
    let _ = writeln!(out, "/btw designs and the main conversation's next turn (hit rates):");
    let _ = writeln!(
        out,
        "{:22}  {:>12}  {:>20}  {:>20}",
        "design", "side request", "next, answer shown", "next, answer kept"
    );
    for (s, n) in designs.iter().filter_map(|s| Some((s, s.next_turn.as_ref()?))) {
        let _ = writeln!(
            out,
            "{:22}  {:>12}  {:>20}  {:>20}",
            s.id,
            pct(s.usage.hit_rate()),
            pct(n.answer_discarded.hit_rate()),
            pct(n.answer_written.hit_rate())
        );
    }
    let _ = writeln!(
        out,
        "(answer shown = displayed apart and not written into the messages, the documented /btw;\n\
         answer kept = question and answer appended to the main conversation.)\n\
         Without any /btw the main conversation's next turn reads {}.\n",
        pct(r.baseline_next_turn.hit_rate())
    );
}

/// What the policy simplifies, said after the table.
fn policy_notes(r: &Report) -> Vec<String> {
    match r.policy {
        Policy::EveryBlock => vec![
            "every-block is the seed demo's cache: every block boundary is written, with no".into(),
            "minimum length, no lookback limit and no expiry; \"uncached\" = tokens not read (computed,".into(),
            "then written).".into(),
            "Run with --policy anthropic for the API's rules.".into(),
        ],
        Policy::Vllm | Policy::Sglang => vec![
            format!("{}: a GPU prefix cache with no expiry and no server clock: the longest", r.policy.name()),
            "prefix at a block boundary, read in whole KV blocks (vllm 16 tokens, sglang 1);".into(),
            "\"uncached\" = tokens computed. Prefill timing and GPU cost need `run` ([server]).".into(),
        ],
        Policy::Anthropic => vec![
            "anthropic: Claude-Code-like breakpoints (end of the system prompt, end of the shared history,".into(),
            "last message). cost = input cost relative to the same request without caching.".into(),
            "Where the demo's simplification and the real API differ:".into(),
            format!(
                "- minimum cacheable length: prefixes under {} tokens ({}) are neither read nor written;",
                r.min_cacheable_tokens, r.model
            ),
            "- writes only at breakpoints: a prefix is readable later only if a request marked its end;".into(),
            "- 20-block lookback: a breakpoint finds an earlier write only within 20 positions of it;".into(),
            "- write price: written tokens cost 1.25x input (5m TTL; 1h: 2x), read tokens 0.1x; the demo's".into(),
            "  hit rate does not see that a miss is also billed as a write (cost above 1x);".into(),
            "- no breakpoint ends at the tools alone, so an edited system prompt (fork_edit_system) loses".into(),
            "  the tools' entry too; the demo's every-boundary cache keeps it.".into(),
        ],
        Policy::OpenAi | Policy::Gemini => vec![format!(
            "{}: the rules of docs/providers.md on {}; cost = input cost relative to the same \
             request without caching.",
            r.policy.name(),
            r.model
        )],
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "cache_read": u.cache_read,
        "cache_write": u.cache_write(),
        "uncached": u.uncached,
        "hit_rate": rate6(u.hit_rate()),
    })
}

/// The JSON for programs: `{"workload", "policy", "scenarios": [{"id", "cache_read",
/// "cache_write", "uncached", "hit_rate", ...}]}` plus context fields.
pub fn to_json(r: &Report) -> Value {
    let scenarios: Vec<Value> = r.scenarios.iter().map(|s| scenario_json(r, s)).collect();
    let notes: Vec<Value> = policy_notes(r).into_iter().map(Value::String).collect();
    json!({
        "workload": r.workload.as_str(),
        "policy": r.policy.name(),
        "model": r.model,
        "min_cacheable_tokens": r.min_cacheable_tokens,
        "main_turns": r.main_turns,
        "tools_tokens": r.tools_tokens,
        "system_tokens": r.system_tokens,
        "baseline_next_turn_hit_rate": rate6(r.baseline_next_turn.hit_rate()),
        "scenarios": scenarios,
        "notes": notes,
    })
}

fn scenario_json(r: &Report, s: &ScenarioResult) -> Value {
    let mut v = usage_json(&s.usage);
    v["input_cost_ratio"] = json!(rate6(input_cost_ratio(&r.model_params, &s.usage)));
    v["id"] = json!(s.id);
    v["explanation"] = json!(explanation(s.id));
    if let Some(n) = &s.next_turn {
        v["next_turn_hit_rate"] = json!(rate6(n.answer_discarded.hit_rate()));
        v["next_turn_answer_written_hit_rate"] = json!(rate6(n.answer_written.hit_rate()));
        v["next_turn"] = json!({
            "answer_discarded": usage_json(&n.answer_discarded),
            "answer_written": usage_json(&n.answer_written),
        });
    }
    if let Some(refused) = s.tool_call_refused {
        v["tool_call_refused"] = json!(refused);
    }
    if let Some(note) = &s.note {
        v["note"] = json!(note);
    }
    v
}
