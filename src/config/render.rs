//! `Experiment` -> canonical TOML text: every key written out, in a fixed order, with canonical
//! labels, so that `resolve(parse_table(render(e)))` == `e` and equal experiments give equal
//! bytes (the results manifest hashes this text). Keys added later (context windows, thinking,
//! block shapes, TTL buckets, isolated misses, enforcement interval, overload) are written only
//! when they differ from their default, so an experiment that does not use them renders (and
//! hashes) as before.

use super::dist_syntax::dist_label;
use super::experiment::*;
use super::names::{kind_label, strategy_label};
use super::server::ServerParams;
use crate::cache::{CacheParams, ModelParams, Policy};
use crate::dist::{Dist, Quantity};
use crate::time::exact_duration;
use toml::{Table, Value};

/// The resolved experiment as TOML text.
pub fn render(exp: &Experiment) -> String {
    let mut top = Table::new();
    top.insert("name".into(), exp.name.clone().into());
    top.insert("question".into(), exp.question.clone().into());
    top.insert("model".into(), exp.model.name.clone().into());
    let seed = i64::try_from(exp.seed).expect("seeds are at most i64::MAX (checked on input)");
    top.insert("seed".into(), seed.into());
    top.insert("replications".into(), i64::from(exp.replications).into());
    let labels: Vec<Value> = exp.strategies.iter().map(|s| strategy_label(s).into()).collect();
    top.insert("strategies".into(), Value::Array(labels));
    top.insert("model_params".into(), model_table(&exp.model).into());
    top.insert("cache".into(), cache_table(&exp.cache).into());
    if let Some((section, table)) = hosted_tables(&exp.cache) {
        top.insert(section.into(), table.into());
    }
    top.insert("workload".into(), workload_table(&exp.workload).into());
    let mut latency = latency_table(&exp.latency);
    if let Some(other) = &exp.latency_other {
        latency.insert("other_model".into(), latency_table(other).into());
    }
    top.insert("latency".into(), latency.into());
    if let Some(r) = &exp.rate_limits {
        top.insert("rate_limits".into(), rate_table(r).into());
    }
    if let Some(o) = &exp.overload {
        top.insert("overload".into(), overload_table(o).into());
    }
    if let Some(s) = &exp.server {
        top.insert("server".into(), server_table(s).into());
    }
    let mut limits = Table::new();
    limits.insert("max_events".into(), int(exp.limits.max_events));
    limits.insert("horizon".into(), exact_duration(exp.limits.horizon_us).into());
    top.insert("limits".into(), limits.into());
    if !exp.plot_baseline.is_empty() {
        let baseline: Table = exp.plot_baseline.iter().cloned().collect();
        let mut plot = Table::new();
        plot.insert("baseline".into(), baseline.into());
        top.insert("plot".into(), plot.into());
    }
    if exp.report != ReportSpec::default() {
        top.insert("report".into(), report_table(&exp.report).into());
    }
    toml::to_string(&top).expect("a table of plain values always serialises")
}

/// `[report]`, only the keys that differ from their default.
fn report_table(r: &ReportSpec) -> Table {
    let mut t = Table::new();
    if let Some(a) = r.answer {
        t.insert("answer".into(), a.name().into());
    }
    if r.tolerance != ReportSpec::DEFAULT_TOLERANCE {
        t.insert("tolerance".into(), r.tolerance.into());
    }
    if let Some(c) = &r.compare {
        t.insert("compare".into(), c.clone().into());
    }
    if let Some(s) = &r.strategy {
        t.insert("strategy".into(), s.clone().into());
    }
    if !r.assumptions.is_empty() {
        let keys: Vec<Value> = r.assumptions.iter().map(|k| k.clone().into()).collect();
        t.insert("assumptions".into(), Value::Array(keys));
    }
    t
}

fn int(x: u64) -> Value {
    Value::Integer(i64::try_from(x).unwrap_or(i64::MAX))
}

fn dist(d: &Dist, q: Quantity) -> Value {
    dist_label(d, q).into()
}

fn model_table(m: &ModelParams) -> Table {
    let mut t = Table::new();
    t.insert("input_usd_per_mtok".into(), m.input_usd_per_mtok.into());
    t.insert("output_usd_per_mtok".into(), m.output_usd_per_mtok.into());
    t.insert("read_multiplier".into(), m.read_multiplier.into());
    t.insert("write_5m_multiplier".into(), m.write_5m_multiplier.into());
    t.insert("write_1h_multiplier".into(), m.write_1h_multiplier.into());
    t.insert("min_cacheable_tokens".into(), int(m.min_cacheable_tokens));
    if m.storage_usd_per_mtok_hour > 0.0 {
        t.insert("storage_usd_per_mtok_hour".into(), m.storage_usd_per_mtok_hour.into());
    }
    let base = super::presets::preset(&m.name);
    let differs = |f: &dyn Fn(&ModelParams) -> bool| base.as_ref().is_none_or(|b| !f(b));
    if differs(&|b| b.context_window_tokens == m.context_window_tokens) {
        t.insert("context_window_tokens".into(), int(m.context_window_tokens));
    }
    if differs(&|b| b.thinking == m.thinking) {
        t.insert("thinking_history".into(), m.thinking.name().into());
    }
    if differs(&|b| b.rate_limit_class == m.rate_limit_class) {
        t.insert("rate_limit_class".into(), m.rate_limit_class.clone().into());
    }
    if let Some(l) = &m.long_context {
        t.insert("long_context_window_tokens".into(), int(l.window_tokens));
        t.insert("long_context_threshold_tokens".into(), int(l.threshold_tokens));
        t.insert("long_context_input_multiplier".into(), l.input_multiplier.into());
        t.insert("long_context_output_multiplier".into(), l.output_multiplier.into());
    }
    if m.use_long_context {
        t.insert("long_context".into(), true.into());
    }
    t
}

fn cache_table(c: &CacheParams) -> Table {
    let mut t = Table::new();
    t.insert("policy".into(), c.policy.name().into());
    t.insert("ttl".into(), c.ttl.duration_name().into());
    if let Some(cap) = c.capacity_tokens {
        t.insert("capacity_tokens".into(), int(cap));
    }
    if let Some(ttl) = c.parent_ttl {
        t.insert("parent_ttl".into(), ttl.duration_name().into());
    }
    if !c.ttl_by_kind.is_empty() {
        let kinds: Table =
            c.ttl_by_kind.iter().map(|(k, ttl)| (k.clone(), ttl.duration_name().into())).collect();
        t.insert("ttl_by_kind".into(), kinds.into());
    }
    if c.miss_probability > 0.0 {
        t.insert("miss_probability".into(), c.miss_probability.into());
    }
    t
}

fn workload_table(w: &Workload) -> Table {
    let (d, n) = (Quantity::Duration, Quantity::Number);
    let mut t = Table::new();
    t.insert("kind".into(), kind_label(&w.kind).into());
    t.insert("agents".into(), int(u64::from(w.agents)));
    t.insert("arrival_every".into(), exact_duration(w.arrival_every_us).into());
    t.insert("concurrency".into(), int(u64::from(w.concurrency)));
    t.insert("parent_tokens".into(), int(w.parent_tokens));
    t.insert("parent_warm".into(), w.parent_warm.into());
    t.insert("parent_idle".into(), exact_duration(w.parent_idle_us).into());
    t.insert("parent_turn_every".into(), exact_duration(w.parent_turn_every_us).into());
    t.insert("parent_turn_tokens".into(), dist(&w.parent_turn_tokens, n));
    t.insert("brief_tokens".into(), int(w.brief_tokens));
    t.insert("task_tokens".into(), int(w.task_tokens));
    t.insert("subagent_tokens".into(), int(w.subagent_tokens));
    t.insert("turns".into(), dist(&w.turns, n));
    t.insert("output_tokens".into(), dist(&w.output_tokens, n));
    t.insert("tool_latency".into(), dist(&w.tool_latency_us, d));
    t.insert("tool_result_tokens".into(), dist(&w.tool_result_tokens, n));
    t.insert("denied_call_share".into(), w.denied_call_share.into());
    let shape = |blocks: &[BlockKind]| -> Option<Value> {
        (blocks != DEFAULT_TURN_BLOCKS)
            .then(|| Value::Array(blocks.iter().map(|b| b.name().into()).collect()))
    };
    if let Some(v) = shape(&w.turn_blocks) {
        t.insert("turn_blocks".into(), v);
    }
    if let Some(v) = shape(&w.parent_exchange_blocks) {
        t.insert("parent_exchange_blocks".into(), v);
    }
    if w.thinking {
        t.insert("thinking".into(), true.into());
    }
    if w.output_max_tokens != u64::MAX {
        t.insert("output_max_tokens".into(), int(w.output_max_tokens));
    }
    if w.tool_result_max_tokens != u64::MAX {
        t.insert("tool_result_max_tokens".into(), int(w.tool_result_max_tokens));
    }
    if let Some(p) = w.parent_thinking {
        t.insert("parent_thinking".into(), p.into());
    }
    t
}

fn latency_table(l: &LatencyParams) -> Table {
    let (d, n) = (Quantity::Duration, Quantity::Number);
    let mut t = Table::new();
    t.insert("overhead".into(), dist(&l.overhead_us, d));
    t.insert("prefill_rate".into(), dist(&l.prefill_rate, n));
    t.insert("cached_rate".into(), dist(&l.cached_rate, n));
    t.insert("decode_rate".into(), dist(&l.decode_rate, n));
    t.insert("ready_delay".into(), dist(&l.ready_delay_us, d));
    t.insert("attention_rate".into(), dist(&l.attention_rate, Quantity::Rate));
    t
}

fn rate_table(r: &RateLimits) -> Table {
    let mut t = Table::new();
    t.insert("rpm".into(), int(r.rpm));
    t.insert("itpm".into(), int(r.itpm));
    t.insert("otpm".into(), int(r.otpm));
    t.insert("cache_reads_count".into(), r.cache_reads_count.into());
    t.insert("retry_jitter".into(), dist(&r.retry_jitter_us, Quantity::Duration));
    if r.parent_counts {
        t.insert("parent_counts".into(), true.into());
    }
    if r.interval_us != crate::time::US_PER_MIN {
        t.insert("interval".into(), exact_duration(r.interval_us).into());
    }
    t
}

fn overload_table(o: &Overload) -> Table {
    let mut t = Table::new();
    t.insert("probability".into(), o.probability.into());
    t.insert("max_retries".into(), i64::from(o.max_retries).into());
    t.insert("initial_backoff".into(), exact_duration(o.initial_backoff_us).into());
    t.insert("max_backoff".into(), exact_duration(o.max_backoff_us).into());
    t
}

/// `[server]`, every key written out (only for the `vllm` and `sglang` policies).
fn server_table(s: &ServerParams) -> Table {
    let mut t = Table::new();
    t.insert("model".into(), s.model.clone().into());
    t.insert("replicas".into(), i64::from(s.replicas).into());
    t.insert("gpus_per_replica".into(), i64::from(s.gpus_per_replica).into());
    t.insert("router".into(), s.router.name().into());
    t.insert("prefill_sharing".into(), s.prefill_sharing.name().into());
    t.insert("prefill_tokens_per_s".into(), s.prefill_tokens_per_s.into());
    t.insert("step_token_budget".into(), int(s.step_token_budget));
    t.insert("step_overhead".into(), exact_duration(s.step_overhead_us).into());
    t.insert("decode_step".into(), exact_duration(s.decode_step_us).into());
    t.insert("decode_per_running".into(), exact_duration(s.decode_per_running_us).into());
    t.insert("decode_per_ktok".into(), exact_duration(s.decode_per_ktok_us).into());
    t.insert("kv_capacity_tokens".into(), int(s.kv_capacity_tokens));
    t.insert("block_tokens".into(), int(s.block_tokens));
    t.insert("gpu_usd_per_hour".into(), s.gpu_usd_per_hour.into());
    t
}

/// `[openai]` or `[gemini]`, written only under that policy (the others never read them, and
/// an experiment without them renders as before).
fn hosted_tables(c: &CacheParams) -> Option<(&'static str, Table)> {
    let mut t = Table::new();
    match c.policy {
        Policy::OpenAi => {
            let o = &c.hosted.openai;
            t.insert("contract".into(), o.contract.name().into());
            t.insert("retention".into(), o.retention.name().into());
            t.insert("in_memory_idle".into(), exact_duration(o.in_memory_idle_us).into());
            t.insert("increment_tokens".into(), int(o.increment_tokens));
            t.insert("route_tokens".into(), int(o.route_tokens));
            t.insert("machines".into(), int(u64::from(o.machines)));
            t.insert("overflow_per_minute".into(), int(u64::from(o.overflow_per_minute)));
            t.insert("overflow_window".into(), exact_duration(o.overflow_window_us).into());
            Some(("openai", t))
        }
        Policy::Gemini => {
            let g = &c.hosted.gemini;
            t.insert("mode".into(), g.mode.name().into());
            t.insert("implicit_hit_probability".into(), g.implicit_hit_probability.into());
            t.insert("implicit_ttl".into(), exact_duration(g.implicit_ttl_us).into());
            t.insert("explicit_ttl".into(), exact_duration(g.explicit_ttl_us).into());
            Some(("gemini", t))
        }
        Policy::Anthropic | Policy::EveryBlock | Policy::Vllm | Policy::Sglang => None,
    }
}
