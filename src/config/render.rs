//! `ExperimentSpec` -> canonical TOML text: the experiment as an `ExperimentFile` with every key
//! written out, serialized with its keys sorted, so that `resolve(parse_table(render(e)))` == `e`
//! and equal experiments give equal bytes (the results manifest hashes this text). Keys added
//! later (context windows, thinking, block shapes, TTL buckets, isolated misses, enforcement
//! interval, overload) are written only when they differ from their default, so an experiment
//! that does not use them renders (and hashes) as before.

use super::experiment::*;
use super::fields::*;
use super::file::*;
use super::server::ServerParams;
use crate::cache::{CacheParams, ModelParams, Policy};
use crate::time::US_PER_MIN;

/// The resolved experiment as TOML text.
pub fn render(exp: &ExperimentSpec) -> String {
    assert!(i64::try_from(exp.seed).is_ok(), "seeds are at most i64::MAX (checked on input)");
    let (openai, gemini) = hosted_sections(&exp.cache);
    let file = ExperimentFile {
        name: Some(exp.name.clone()),
        question: Some(exp.question.clone()),
        model: Some(exp.model.name.clone()),
        models: (!exp.defined_models.is_empty()).then(|| {
            exp.defined_models.iter().map(|d| (d.name.clone(), d.table.clone())).collect()
        }),
        models_file: None,
        seed: Some(Int(exp.seed)),
        replications: Some(Count(exp.replications)),
        strategies: Some(Strategies(exp.strategies.clone())),
        model_params: Some(model_section(&exp.model)),
        cache: Some(cache_section(&exp.cache)),
        workload: Some(workload_section(&exp.workload)),
        latency: Some(LatencySection::of(
            latency_keys(&exp.latency),
            exp.latency_other.as_ref().map(latency_keys),
        )),
        rate_limits: exp.rate_limits.as_ref().map(rate_limits_section),
        overload: exp.overload.as_ref().map(|o| OverloadSection {
            probability: Some(Share(o.probability)),
            max_retries: Some(Count(o.max_retries)),
            initial_backoff: Some(Duration(o.initial_backoff_us)),
            max_backoff: Some(Duration(o.max_backoff_us)),
        }),
        limits: Some(LimitsSection {
            max_events: Some(Int(exp.limits.max_events)),
            horizon: Some(Duration(exp.limits.horizon_us)),
            ..LimitsSection::default()
        }),
        _sweep: None,
        plot: (!exp.plot_baseline.is_empty()).then(|| PlotSection {
            baseline: Some(toml::Value::Table(exp.plot_baseline.iter().cloned().collect())),
        }),
        report: (exp.report != ReportSpec::default()).then(|| report_section(&exp.report)),
        server: exp.server.as_ref().map(server_section),
        openai,
        gemini,
    };
    let table = toml::Table::try_from(&file).expect("an experiment file always serialises");
    toml::to_string(&table).expect("a table of plain values always serialises")
}

/// `[report]`, only the keys that differ from their default.
fn report_section(r: &ReportSpec) -> ReportSection {
    ReportSection {
        answer: r.answer.map(Name),
        tolerance: (r.tolerance != ReportSpec::DEFAULT_TOLERANCE).then_some(Share(r.tolerance)),
        compare: r.compare.clone().map(toml::Value::String),
        strategy: r.strategy.clone().map(toml::Value::String),
        assumptions: (!r.assumptions.is_empty()).then(|| r.assumptions.clone().into()),
    }
}

/// The preset's context window, thinking and rate-limit class are written only where the
/// experiment's differ; the long-context offer only where there is one.
fn model_section(m: &ModelParams) -> ModelSection {
    let base = super::presets::preset(&m.name);
    let differs = |f: &dyn Fn(&ModelParams) -> bool| base.as_ref().is_none_or(|b| !f(b));
    let long = m.long_context.as_ref();
    ModelSection {
        input_usd_per_mtok: Some(AtMost(m.input_usd_per_mtok)),
        output_usd_per_mtok: Some(AtMost(m.output_usd_per_mtok)),
        read_multiplier: Some(AtMost(m.read_multiplier)),
        write_5m_multiplier: Some(AtMost(m.write_5m_multiplier)),
        write_1h_multiplier: Some(AtMost(m.write_1h_multiplier)),
        storage_usd_per_mtok_hour: (m.storage_usd_per_mtok_hour > 0.0)
            .then_some(AtMost(m.storage_usd_per_mtok_hour)),
        min_cacheable_tokens: Some(Tokens(m.min_cacheable_tokens)),
        context_window_tokens: differs(&|b| b.context_window_tokens == m.context_window_tokens)
            .then_some(Tokens(m.context_window_tokens)),
        rate_limit_class: differs(&|b| b.rate_limit_class == m.rate_limit_class)
            .then(|| m.rate_limit_class.clone()),
        thinking_history: differs(&|b| b.thinking == m.thinking).then_some(Name(m.thinking)),
        long_context_window_tokens: long.map(|l| Int(l.window_tokens)),
        long_context_threshold_tokens: long.map(|l| Int(l.threshold_tokens)),
        long_context_input_multiplier: long.map(|l| AtMost(l.input_multiplier)),
        long_context_output_multiplier: long.map(|l| AtMost(l.output_multiplier)),
        long_context: m.use_long_context.then_some(true),
        itpm_counts_cache_reads: match &base {
            Some(b) => (b.itpm_counts_cache_reads != m.itpm_counts_cache_reads)
                .then_some(m.itpm_counts_cache_reads),
            None => m.itpm_counts_cache_reads.then_some(true),
        },
    }
}

fn cache_section(c: &CacheParams) -> CacheSection {
    CacheSection {
        policy: Some(Name(c.policy)),
        ttl: Some(TtlText::of(c.ttl)),
        capacity_tokens: c.capacity_tokens.map(Int),
        parent_ttl: c.parent_ttl.map(TtlText::of),
        ttl_by_kind: (!c.ttl_by_kind.is_empty())
            .then(|| c.ttl_by_kind.iter().map(|(k, t)| (k.clone(), TtlText::of(*t))).collect()),
        miss_probability: (c.miss_probability > 0.0).then_some(Share(c.miss_probability)),
    }
}

/// Every key written out, except those added later, at their default.
fn workload_section(w: &Workload) -> WorkloadSection {
    let shape =
        |blocks: &[BlockKind]| (blocks != DEFAULT_TURN_BLOCKS).then(|| Blocks(blocks.to_vec()));
    let cap = |x: u64| (x != u64::MAX).then_some(Int(x));
    WorkloadSection {
        kind: Some(Kind(w.kind.clone())),
        agents: Some(Count(w.agents)),
        arrival_every: Some(Duration(w.arrival_every_us)),
        concurrency: Some(Count(w.concurrency)),
        parent_tokens: Some(Tokens(w.parent_tokens)),
        parent_warm: Some(w.parent_warm),
        parent_idle: Some(Duration(w.parent_idle_us)),
        parent_turn_every: Some(Duration(w.parent_turn_every_us)),
        parent_turn_tokens: Some(TokenDist(w.parent_turn_tokens.clone())),
        brief_tokens: Some(Tokens(w.brief_tokens)),
        task_tokens: Some(Tokens(w.task_tokens)),
        subagent_tokens: Some(Tokens(w.subagent_tokens)),
        turns: Some(DistOf(w.turns.clone())),
        output_tokens: Some(TokenDist(w.output_tokens.clone())),
        output_max_tokens: cap(w.output_max_tokens),
        tool_latency: Some(DistOf(w.tool_latency_us.clone())),
        tool_result_tokens: Some(TokenDist(w.tool_result_tokens.clone())),
        tool_result_max_tokens: cap(w.tool_result_max_tokens),
        denied_call_share: Some(Share(w.denied_call_share)),
        turn_blocks: shape(&w.turn_blocks),
        parent_exchange_blocks: shape(&w.parent_exchange_blocks),
        thinking: w.thinking.then_some(true),
        parent_thinking: w.parent_thinking,
    }
}

fn latency_keys(l: &LatencyParams) -> LatencyKeys {
    LatencyKeys {
        overhead: Some(DistOf(l.overhead_us.clone())),
        prefill_rate: Some(DistOf(l.prefill_rate.clone())),
        cached_rate: Some(DistOf(l.cached_rate.clone())),
        decode_rate: Some(DistOf(l.decode_rate.clone())),
        ready_delay: Some(DistOf(l.ready_delay_us.clone())),
        attention_rate: Some(DistOf(l.attention_rate.clone())),
    }
}

fn rate_limits_section(r: &RateLimits) -> RateLimitsSection {
    RateLimitsSection {
        rpm: Some(Int(r.rpm)),
        itpm: Some(Int(r.itpm)),
        otpm: Some(Int(r.otpm)),
        cache_reads_count: Some(r.cache_reads_count),
        retry_jitter: Some(DistOf(r.retry_jitter_us.clone())),
        parent_counts: r.parent_counts.then_some(true),
        interval: (r.interval_us != US_PER_MIN).then_some(Duration(r.interval_us)),
    }
}

/// `[server]`, every key written out (only for the `vllm` and `sglang` policies).
fn server_section(s: &ServerParams) -> ServerSection {
    ServerSection {
        model: Some(s.model.clone()),
        replicas: Some(Count(s.replicas)),
        gpus_per_replica: Some(Count(s.gpus_per_replica)),
        router: Some(Name(s.router)),
        prefill_sharing: Some(Name(s.prefill_sharing)),
        prefill_tokens_per_s: Some(Num(s.prefill_tokens_per_s)),
        step_token_budget: Some(Tokens(s.step_token_budget)),
        step_overhead: Some(Duration(s.step_overhead_us)),
        decode_step: Some(Duration(s.decode_step_us)),
        decode_per_running: Some(Duration(s.decode_per_running_us)),
        decode_per_ktok: Some(Duration(s.decode_per_ktok_us)),
        kv_capacity_tokens: Some(Tokens(s.kv_capacity_tokens)),
        block_tokens: Some(Tokens(s.block_tokens)),
        gpu_usd_per_hour: Some(AtMost(s.gpu_usd_per_hour)),
    }
}

/// `[openai]` or `[gemini]`, written only under that policy (the others never read them, and
/// an experiment without them renders as before).
fn hosted_sections(c: &CacheParams) -> (Option<OpenAiSection>, Option<GeminiSection>) {
    let (o, g) = (&c.hosted.openai, &c.hosted.gemini);
    match c.policy {
        Policy::OpenAi => {
            let openai = OpenAiSection {
                contract: Some(Name(o.contract)),
                retention: Some(o.retention.name().to_string()),
                in_memory_idle: Some(Duration(o.in_memory_idle_us)),
                increment_tokens: Some(Int(o.increment_tokens)),
                route_tokens: Some(Int(o.route_tokens)),
                machines: Some(Count(o.machines)),
                overflow_per_minute: Some(Count(o.overflow_per_minute)),
                overflow_window: Some(Duration(o.overflow_window_us)),
                overflow_probability: Some(Share(o.overflow_probability)),
                overflow_warm_probability: Some(Share(o.overflow_warm_probability)),
                cache_key: Some(Name(o.cache_key)),
                cache_key_shards: Some(Count(o.cache_key_shards)),
            };
            (Some(openai), None)
        }
        Policy::Gemini => {
            let gemini = GeminiSection {
                mode: Some(Name(g.mode)),
                implicit_hit_probability: Some(Share(g.implicit_hit_probability)),
                implicit_ttl: Some(Duration(g.implicit_ttl_us)),
                explicit_ttl: Some(Duration(g.explicit_ttl_us)),
            };
            (None, Some(gemini))
        }
        Policy::Anthropic | Policy::EveryBlock | Policy::Vllm | Policy::Sglang => (None, None),
    }
}

/// The dotted keys of `exp` as it is rendered, sorted (the sections it lacks, such as
/// `[rate_limits]` of a default experiment, are not among them): where an unknown key's hint
/// looks outside its own section.
pub fn dotted_keys(exp: &ExperimentSpec) -> Vec<String> {
    fn walk(t: &toml::Table, prefix: &str, out: &mut Vec<String>) {
        for (k, v) in t {
            match v {
                toml::Value::Table(sub) => walk(sub, &format!("{prefix}{k}."), out),
                _ => out.push(format!("{prefix}{k}")),
            }
        }
    }
    let mut out = Vec::new();
    if let Ok(table) = render(exp).parse::<toml::Table>() {
        walk(&table, "", &mut out);
    }
    out.sort();
    out
}
