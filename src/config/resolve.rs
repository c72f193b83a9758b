//! Raw TOML table -> `Experiment`: every key checked, defaulted and converted to base units.
//! Defaults are the README's experiment-file reference; an unknown key is an error naming it.

use std::path::Path;

use super::call::did_you_mean;
use super::dist_syntax::{dist_label, parse_dist_in, DistError};
use super::experiment::*;
use super::latency_file::LatencyFile;
use super::names::{parse_kind, parse_strategy, strategy_label};
use super::server::{self, Router, ServerParams, Sharing};
use super::HostedParams;
use super::{presets, ConfigError};
use crate::cache::{CacheParams, LongContext, ModelParams, Policy, ThinkingHistory, Ttl};
use crate::config::latency_presets::{self, LatencyPreset};
use crate::dist::{Dist, Quantity};
use crate::limits::{
    dist_param_max, MAX_MULTIPLIER, MAX_PRICE_USD_PER_MTOK, MAX_TOKENS, WORK_LIMIT_KEYS,
};
use crate::time::{parse_duration_us, US_PER_H, US_PER_MIN};

mod hosted;
mod report;
pub use report::lookup;

/// The strategies run when the file names none (the README's experiment-file reference).
pub const DEFAULT_STRATEGIES: [&str; 5] =
    ["eager", "wait_first(max_wait=5s)", "stagger(interval=1s)", "sequential", "prewarm"];

/// Top-level keys besides the sections; `sweep` is accepted and left to the sweep code.
const TOP_KEYS: [&str; 19] = [
    "name",
    "question",
    "model",
    "seed",
    "replications",
    "strategies",
    "model_params",
    "cache",
    "workload",
    "latency",
    "rate_limits",
    "overload",
    "limits",
    "sweep",
    "plot",
    "report",
    "server",
    "openai",
    "gemini",
];

/// Resolve a raw table. `origin` names the file in errors; `empirical(file=...)` paths are
/// relative to its directory.
pub fn resolve(table: &toml::Table, origin: &str) -> Result<Experiment, ConfigError> {
    for key in table.keys() {
        if !TOP_KEYS.contains(&key.as_str()) {
            return Err(unknown(origin, key, "", &TOP_KEYS));
        }
    }
    let base = Path::new(origin).parent();
    let mut top = Section::new(origin, "", table, base);
    let default_name = Path::new(origin).file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = top.string("name", default_name.as_deref().unwrap_or("experiment"))?;
    let question = top.string("question", "")?;
    let default_model = hosted::default_model(table).unwrap_or("claude-sonnet-4.5");
    let model_name = top.string("model", default_model)?;
    let seed = top.u64("seed", 42)?;
    let replications = top.u32_min("replications", 100, 1)?;
    let strategies = top.strategies()?;
    let model = resolve_model(&mut top, &model_name)?;
    let mut cache = resolve_cache(&mut top.section("cache")?, &model)?;
    cache.hosted = hosted::resolve_hosted(&mut top, cache.policy, &model)?;
    let openai = cache.policy == Policy::OpenAi;
    let workload = resolve_workload(&mut top.section("workload")?)?;
    let other_model = match &workload.kind {
        AgentKind::ForkOtherModel { model } => Some(model.clone()),
        _ => None,
    };
    let (latency, latency_other) =
        resolve_latency(&mut top.section("latency")?, &model.name, other_model.as_deref())?;
    let mut exp = Experiment {
        name,
        question,
        seed,
        replications,
        strategies,
        model,
        cache,
        workload,
        latency,
        latency_other,
        rate_limits: match table.contains_key("rate_limits") {
            true => Some(resolve_rate_limits(&mut top.section("rate_limits")?, openai)?),
            false => None,
        },
        overload: match table.contains_key("overload") {
            true => Some(resolve_overload(&mut top.section("overload")?)?),
            false => None,
        },
        limits: resolve_limits(&mut top.section("limits")?)?,
        plot_baseline: resolve_plot(&mut top.section("plot")?)?,
        report: ReportSpec::default(),
        server: None,
    };
    exp.report = report::resolve_report(&mut top.section("report")?, table, &exp.strategies)?;
    let server = resolve_server(&mut top.section("server")?, exp.cache.policy)?;
    if exp.cache.policy.is_server() {
        check_server_experiment(&top, &exp, &exp.workload)?;
        exp.server = Some(server);
    }
    let other = match &exp.workload.kind {
        AgentKind::ForkOtherModel { model } => match presets::preset(model) {
            Some(m) => Some(m),
            None => {
                let value = format!("\"{}\"", super::kind_label(&exp.workload.kind));
                return Err(top.bad_at("workload.kind", value, &unknown_model(model)));
            }
        },
        _ => None,
    };
    check_thinking(&top, &exp, &exp.workload, other.as_ref())?;
    check_first_request_fits(&top, &exp, &exp.workload, other.as_ref())?;
    Ok(exp)
}

/// Whether `resolve` of `table` succeeds, where `table` is a table that resolved as `base`
/// with the dotted keys `changed` set (in full, as `sweep::table::canonical_key` writes them).
/// The same answer and the same error as `resolve(table, origin)`, for less: when every changed
/// key is a plain key of `[workload]` other than `kind`, only `[workload]` and the checks that
/// read it run again, because the other sections read nothing of `[workload]` (the latency of
/// a `fork_other_model` depends on `kind` only) and resolved as in `base`. Any other key
/// resolves the whole table.
pub fn check_changed(
    base: &Experiment,
    table: &toml::Table,
    origin: &str,
    changed: &[&str],
) -> Result<(), ConfigError> {
    let workload_only =
        |k: &&str| k.strip_prefix("workload.").is_some_and(|k| k != "kind" && !k.contains('.'));
    if changed.is_empty() || !changed.iter().all(workload_only) {
        return resolve(table, origin).map(drop);
    }
    let mut top = Section::new(origin, "", table, Path::new(origin).parent());
    let w = resolve_workload(&mut top.section("workload")?)?;
    if base.cache.policy.is_server() {
        check_server_experiment(&top, base, &w)?;
    }
    let other = match &w.kind {
        AgentKind::ForkOtherModel { model } => presets::preset(model),
        _ => None,
    };
    check_thinking(&top, base, &w, other.as_ref())?;
    check_first_request_fits(&top, base, &w, other.as_ref())
}

/// Thinking on needs a model with extended thinking (the agents' and the parent's).
fn check_thinking(
    top: &Section<'_>,
    exp: &Experiment,
    w: &Workload,
    other: Option<&ModelParams>,
) -> Result<(), ConfigError> {
    let agents_model = other.unwrap_or(&exp.model);
    let checks = [
        ("workload.thinking", w.thinking, agents_model),
        ("workload.parent_thinking", w.parent_thinks(), &exp.model),
    ];
    for (key, on, model) in checks {
        if on && model.thinking == ThinkingHistory::None {
            let reason = format!("{} has no extended thinking", model.name);
            return Err(top.bad_at(key, "true".into(), &reason));
        }
    }
    Ok(())
}

/// The first request of an agent (its shared prefix and its task) must fit the window of the
/// model it is sent to; the key named is the prefix size that made it too long. Later requests
/// grow with turns and parent exchanges: the model checks each one when it is sent.
fn check_first_request_fits(
    top: &Section<'_>,
    exp: &Experiment,
    w: &Workload,
    other: Option<&ModelParams>,
) -> Result<(), ConfigError> {
    let model = other.unwrap_or(&exp.model);
    let (key, prefix) = match w.kind {
        AgentKind::Subagent => ("workload.subagent_tokens", w.subagent_tokens),
        _ => ("workload.parent_tokens", w.parent_tokens),
    };
    let brief = if w.kind == AgentKind::Btw { 0 } else { w.brief_tokens };
    let first = prefix.saturating_add(brief).saturating_add(w.task_tokens);
    let window = model.window_tokens();
    if first <= window {
        return Ok(());
    }
    let reason = format!(
        "an agent's first request holds {first} tokens (with brief_tokens = {brief} and \
         task_tokens = {}), more than {}'s context window of {window} tokens",
        w.task_tokens, model.name
    );
    Err(top.bad_at(key, prefix.to_string(), &reason))
}

fn unknown_model(name: &str) -> String {
    let hint = did_you_mean(name, presets::preset_names())
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    let names = presets::preset_names();
    format!("unknown model preset `{name}` (known: {}){hint}", names.join(", "))
}

fn resolve_model(top: &mut Section<'_>, name: &str) -> Result<ModelParams, ConfigError> {
    let mut s = top.section("model_params")?;
    let base = presets::preset(name);
    let keys = [
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "read_multiplier",
        "write_5m_multiplier",
        "write_1h_multiplier",
        "min_cacheable_tokens",
    ];
    let all_given = keys.iter().all(|k| s.table.contains_key(*k));
    let base = match base {
        Some(b) => b,
        // A model that is not a preset is fine when every price parameter is given; the rest
        // defaults to a 200k window, no long-context offer, thinking kept, its own buckets.
        None if all_given => ModelParams {
            name: name.to_string(),
            input_usd_per_mtok: 0.0,
            output_usd_per_mtok: 0.0,
            read_multiplier: 0.0,
            write_5m_multiplier: 0.0,
            write_1h_multiplier: 0.0,
            storage_usd_per_mtok_hour: 0.0,
            min_cacheable_tokens: 0,
            context_window_tokens: 200_000,
            long_context: None,
            use_long_context: false,
            thinking: ThinkingHistory::Kept,
            rate_limit_class: name.to_string(),
        },
        None => return Err(top.bad("model", format!("\"{name}\""), &unknown_model(name))),
    };
    // Bounded so that a run's cost stays finite and exact enough (docs/limits.md).
    let (price, mult) = (MAX_PRICE_USD_PER_MTOK, MAX_MULTIPLIER);
    let mut m = ModelParams {
        name: base.name.clone(),
        input_usd_per_mtok: s.f64_at_most(keys[0], base.input_usd_per_mtok, price)?,
        output_usd_per_mtok: s.f64_at_most(keys[1], base.output_usd_per_mtok, price)?,
        read_multiplier: s.f64_at_most(keys[2], base.read_multiplier, mult)?,
        write_5m_multiplier: s.f64_at_most(keys[3], base.write_5m_multiplier, mult)?,
        write_1h_multiplier: s.f64_at_most(keys[4], base.write_1h_multiplier, mult)?,
        storage_usd_per_mtok_hour: s.f64_at_most(
            "storage_usd_per_mtok_hour",
            base.storage_usd_per_mtok_hour,
            price,
        )?,
        min_cacheable_tokens: s.tokens(keys[5], base.min_cacheable_tokens)?,
        context_window_tokens: s.tokens("context_window_tokens", base.context_window_tokens)?,
        long_context: None,
        use_long_context: false,
        thinking: base.thinking,
        rate_limit_class: s.string("rate_limit_class", &base.rate_limit_class)?,
    };
    if m.context_window_tokens == 0 {
        return Err(s.bad("context_window_tokens", "0".into(), "a window holds at least 1 token"));
    }
    let thinking = s.string("thinking_history", base.thinking.name())?;
    m.thinking = match thinking.as_str() {
        "kept" => ThinkingHistory::Kept,
        "stripped" => ThinkingHistory::Stripped,
        "none" => ThinkingHistory::None,
        other => {
            return Err(s.bad_str(
                "thinking_history",
                other,
                "use \"kept\", \"stripped\" or \"none\"",
            ))
        }
    };
    resolve_long_context(&mut s, &mut m, base.long_context.as_ref())?;
    s.finish()?;
    Ok(m)
}

/// `long_context_window_tokens` (an offer, absent on every preset) and its prices, and
/// `long_context = true` (use it: an error when the model offers none).
fn resolve_long_context(
    s: &mut Section<'_>,
    m: &mut ModelParams,
    base: Option<&LongContext>,
) -> Result<(), ConfigError> {
    let window = s.opt_u64("long_context_window_tokens", 1)?.or(base.map(|l| l.window_tokens));
    let threshold = s.opt_u64("long_context_threshold_tokens", 0)?;
    let input = s.f64("long_context_input_multiplier", base.map_or(2.0, |l| l.input_multiplier))?;
    let output =
        s.f64("long_context_output_multiplier", base.map_or(1.5, |l| l.output_multiplier))?;
    m.long_context = window.map(|window_tokens| LongContext {
        window_tokens,
        threshold_tokens: threshold
            .or(base.map(|l| l.threshold_tokens))
            .unwrap_or(m.context_window_tokens),
        input_multiplier: input,
        output_multiplier: output,
    });
    m.use_long_context = s.bool("long_context", false)?;
    if m.use_long_context && m.long_context.is_none() {
        let reason = format!(
            "{} offers no larger context window (set model_params.long_context_window_tokens to \
             declare one)",
            m.name
        );
        return Err(s.bad("long_context", "true".into(), &reason));
    }
    Ok(())
}

fn resolve_cache(s: &mut Section<'_>, model: &ModelParams) -> Result<CacheParams, ConfigError> {
    let policy = hosted::resolve_policy(s, model)?;
    let ttl = s.ttl("ttl", policy)?.unwrap_or(Ttl::FiveMin);
    let capacity_tokens = s.opt_u64("capacity_tokens", 1)?;
    if let Some(c) = capacity_tokens.filter(|&c| c > 1 << 53) {
        return Err(s.bad("capacity_tokens", c.to_string(), "at most 2^53 tokens"));
    }
    let parent_ttl = s.ttl("parent_ttl", policy)?;
    let ttl_by_kind = resolve_ttl_by_kind(&mut s.section("ttl_by_kind")?, policy)?;
    let miss_probability = s.share("miss_probability", 0.0)?;
    s.finish()?;
    let hosted = HostedParams::default();
    Ok(CacheParams {
        policy,
        ttl,
        capacity_tokens,
        parent_ttl,
        ttl_by_kind,
        miss_probability,
        hosted,
    })
}

fn resolve_ttl_by_kind(
    s: &mut Section<'_>,
    policy: Policy,
) -> Result<Vec<(String, Ttl)>, ConfigError> {
    let mut out = Vec::new();
    for kind in super::names::KIND_NAMES {
        if let Some(ttl) = s.ttl(kind, policy)? {
            out.push((kind.to_string(), ttl));
        }
    }
    s.finish()?;
    Ok(out)
}

fn resolve_workload(s: &mut Section<'_>) -> Result<Workload, ConfigError> {
    let kind_text = s.string("kind", "fork")?;
    let kind = parse_kind(&kind_text).map_err(|e| s.bad_str("kind", &kind_text, &e.to_string()))?;
    let (d, n) = (Quantity::Duration, Quantity::Number);
    let w = Workload {
        kind,
        agents: s.u32_min("agents", 10, 1)?,
        arrival_every_us: s.duration_us("arrival_every", 0)?,
        concurrency: s.u32_min("concurrency", 16, 1)?,
        parent_tokens: s.tokens("parent_tokens", 50_000)?,
        parent_warm: s.bool("parent_warm", false)?,
        parent_idle_us: s.duration_us("parent_idle", 0)?,
        parent_turn_every_us: s.duration_us("parent_turn_every", 0)?,
        parent_turn_tokens: s.token_dist("parent_turn_tokens", "const(2000)")?,
        brief_tokens: s.tokens("brief_tokens", 0)?,
        task_tokens: s.tokens("task_tokens", 100)?,
        subagent_tokens: s.tokens("subagent_tokens", 15_000)?,
        turns: s.dist("turns", n, "const(1)")?,
        output_tokens: s.token_dist("output_tokens", "const(100)")?,
        output_max_tokens: s.opt_u64("output_max_tokens", 1)?.unwrap_or(u64::MAX),
        tool_latency_us: s.dist("tool_latency", d, "const(2s)")?,
        tool_result_tokens: s.token_dist("tool_result_tokens", "const(500)")?,
        tool_result_max_tokens: s.opt_u64("tool_result_max_tokens", 1)?.unwrap_or(u64::MAX),
        denied_call_share: s.share("denied_call_share", 0.1)?,
        turn_blocks: s.blocks("turn_blocks")?,
        parent_exchange_blocks: s.blocks("parent_exchange_blocks")?,
        thinking: s.bool("thinking", false)?,
        parent_thinking: match s.get("parent_thinking") {
            None => None,
            Some(_) => Some(s.bool("parent_thinking", false)?),
        },
    };
    s.finish()?;
    Ok(w)
}

/// `[latency]`: a preset (`calibrated` per model, or `launch-2024`), optionally replaced by a
/// calibration file's table for the model (`from`), then any key given explicitly. The
/// `fork_other_model` model gets its own parameters the same way, overridable under
/// `[latency.other_model]`.
fn resolve_latency(
    s: &mut Section<'_>,
    model: &str,
    other_model: Option<&str>,
) -> Result<(LatencyParams, Option<LatencyParams>), ConfigError> {
    let preset_text = s.string("preset", "calibrated")?;
    let preset = LatencyPreset::parse(&preset_text).ok_or_else(|| {
        s.bad_str(
            "preset",
            &preset_text,
            &format!("use one of {}", LatencyPreset::NAMES.join(", ")),
        )
    })?;
    let from = match s.get("from") {
        None => None,
        Some(toml::Value::String(f)) => Some(s.base.unwrap_or(Path::new("")).join(f)),
        Some(v) => return Err(s.bad("from", v.to_string(), "expected a file name")),
    };
    let file = match &from {
        Some(path) => {
            Some(LatencyFile::read(path).map_err(|e| s.bad("from", quoted(path), &e.to_string()))?)
        }
        None => None,
    };
    let draw = s.opt_u64("draw", 0)?.map(|k| k as usize);
    if let (Some(k), LatencyPreset::Calibrated) = (draw, preset) {
        let draws = latency_presets::fit_for(model).map_or(0, |(f, _)| f.draws.len());
        if k >= draws {
            let why =
                format!("the calibration of {model} has {draws} draws (0 to {})", draws.max(1) - 1);
            return Err(s.bad("draw", k.to_string(), &why));
        }
    } else if draw.is_some() {
        let why =
            "a calibration draw needs preset = \"calibrated\" (launch-2024 has no uncertainty)";
        return Err(s.bad("draw", format!("{}", draw.unwrap_or(0)), why));
    }
    let base_for = |m: &str| -> Result<LatencyParams, ConfigError> {
        let base = latency_presets::params_draw(m, preset, draw).unwrap_or_default();
        match (&file, &from) {
            (Some(f), Some(path)) => {
                f.params_for(m, base).map_err(|e| s.bad("from", quoted(path), &e.to_string()))
            }
            _ => Ok(base),
        }
    };
    let base = base_for(model)?;
    let other_base = other_model.map(base_for).transpose()?;
    let latency = latency_keys(s, &base)?;
    let mut other = s.section("other_model")?;
    let latency_other = match other_base {
        Some(b) => {
            let l = latency_keys(&mut other, &b)?;
            other.finish()?;
            Some(l)
        }
        None => {
            other.finish()?;
            None
        }
    };
    s.finish()?;
    Ok((latency, latency_other))
}

fn quoted(path: &Path) -> String {
    format!("\"{}\"", path.display())
}

/// The six latency keys of a section, each defaulting to `base`'s value.
fn latency_keys(s: &mut Section<'_>, base: &LatencyParams) -> Result<LatencyParams, ConfigError> {
    let (d, n) = (Quantity::Duration, Quantity::Rate);
    let l = LatencyParams {
        overhead_us: s.dist("overhead", d, &dist_label(&base.overhead_us, d))?,
        prefill_rate: s.dist("prefill_rate", n, &dist_label(&base.prefill_rate, n))?,
        cached_rate: s.dist("cached_rate", n, &dist_label(&base.cached_rate, n))?,
        decode_rate: s.dist("decode_rate", n, &dist_label(&base.decode_rate, n))?,
        ready_delay_us: s.dist("ready_delay", d, &dist_label(&base.ready_delay_us, d))?,
        attention_rate: s.dist("attention_rate", n, &dist_label(&base.attention_rate, n))?,
    };
    let rates = [
        ("prefill_rate", &l.prefill_rate),
        ("cached_rate", &l.cached_rate),
        ("decode_rate", &l.decode_rate),
        ("attention_rate", &l.attention_rate),
    ];
    for (key, dist) in rates {
        if matches!(dist, Dist::Const(x) if *x <= 0.0) {
            return Err(s.bad(key, "\"const(0)\"".into(), "a rate must be positive"));
        }
    }
    Ok(l)
}

/// `cached_count`: whether cache reads count toward ITPM unless the file says (OpenAI counts
/// cached tokens toward TPM).
fn resolve_rate_limits(s: &mut Section<'_>, cached_count: bool) -> Result<RateLimits, ConfigError> {
    let r = RateLimits {
        rpm: s.u64("rpm", 4_000)?,
        itpm: s.u64("itpm", 2_000_000)?,
        otpm: s.u64("otpm", 400_000)?,
        cache_reads_count: s.bool("cache_reads_count", cached_count)?,
        retry_jitter_us: s.dist("retry_jitter", Quantity::Duration, "uniform(0s, 1s)")?,
        parent_counts: s.bool("parent_counts", false)?,
        interval_us: s.duration_us("interval", US_PER_MIN)?,
    };
    if r.interval_us == 0 || r.interval_us > US_PER_MIN {
        let value = format!("\"{}\"", crate::time::exact_duration(r.interval_us));
        return Err(s.bad("interval", value, "enforce a per-minute limit over at most 1min (> 0)"));
    }
    s.finish()?;
    Ok(r)
}

fn resolve_overload(s: &mut Section<'_>) -> Result<Overload, ConfigError> {
    let o = Overload {
        probability: s.share("probability", 0.0)?,
        max_retries: s.u32_min("max_retries", 2, 0)?,
        initial_backoff_us: s.duration_us("initial_backoff", 500_000)?,
        max_backoff_us: s.duration_us("max_backoff", 8 * crate::time::US_PER_S)?,
    };
    s.finish()?;
    Ok(o)
}

fn resolve_limits(s: &mut Section<'_>) -> Result<RunLimits, ConfigError> {
    let l = RunLimits {
        max_events: s.u64("max_events", 100_000_000)?,
        horizon_us: s.duration_us("horizon", 24 * US_PER_H)?,
    };
    // The work limits of a command (`crate::limits::WorkLimits`): checked here, read by the
    // CLI; they change no result, so they are not part of the experiment.
    for key in WORK_LIMIT_KEYS {
        s.opt_u64(key, 1)?;
    }
    s.finish()?;
    Ok(l)
}

/// One table of the file being read: typed getters that record which keys were read, so that
/// `finish` can name any key nobody asked for.
/// `[plot] baseline = { "cache.ttl" = "5m" }`: the slice figures show by default. Each value
/// is a scalar as the `[sweep]` lists write it; `plot` checks it is one of the swept values.
fn resolve_plot(s: &mut Section<'_>) -> Result<Vec<(String, toml::Value)>, ConfigError> {
    let out = match s.get("baseline") {
        None => Vec::new(),
        Some(toml::Value::Table(t)) => {
            for (k, v) in t {
                let scalar = matches!(
                    v,
                    toml::Value::String(_)
                        | toml::Value::Integer(_)
                        | toml::Value::Float(_)
                        | toml::Value::Boolean(_)
                );
                if !scalar || k.is_empty() {
                    let reason = "expected one swept value (a string, number or boolean)";
                    return Err(s.bad(&format!("baseline.\"{k}\""), v.to_string(), reason));
                }
            }
            t.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        Some(v) => {
            let reason =
                "expected a table of swept keys and values, e.g. { \"cache.ttl\" = \"5m\" }";
            return Err(s.bad("baseline", v.to_string(), reason));
        }
    };
    s.finish()?;
    Ok(out)
}

struct Section<'t> {
    origin: &'t str,
    prefix: String,
    table: &'t toml::Table,
    base: Option<&'t Path>,
    used: Vec<&'static str>,
}

static EMPTY: std::sync::OnceLock<toml::Table> = std::sync::OnceLock::new();

thread_local! {
    /// Distributions already parsed on this thread, by quantity and text: a sweep resolves its
    /// experiment once per axis value, with the same distribution texts each time.
    static PARSED: std::cell::RefCell<Vec<(Quantity, String, Dist)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Most distributions `PARSED` keeps (an experiment has about a dozen).
const PARSED_MAX: usize = 64;

/// `parse_dist_in`, remembered: a text that reads no file always parses to the same value, so
/// a text seen before is not parsed again. `empirical` is always parsed (a positional argument
/// that is not a list is a file name, relative to `base`), and errors are not kept.
fn parse_dist_cached(text: &str, q: Quantity, base: Option<&Path>) -> Result<Dist, DistError> {
    if text.contains("empirical") {
        return parse_dist_in(text, q, base);
    }
    let seen = PARSED.with_borrow(|p| {
        p.iter().find(|(pq, t, _)| *pq == q && t == text).map(|(_, _, d)| d.clone())
    });
    if let Some(d) = seen {
        return Ok(d);
    }
    let d = parse_dist_in(text, q, base)?;
    PARSED.with_borrow_mut(|p| {
        if p.len() >= PARSED_MAX {
            p.clear();
        }
        p.push((q, text.to_string(), d.clone()));
    });
    Ok(d)
}

impl<'t> Section<'t> {
    fn new(origin: &'t str, prefix: &str, table: &'t toml::Table, base: Option<&'t Path>) -> Self {
        Section { origin, prefix: prefix.to_string(), table, base, used: Vec::new() }
    }

    /// A sub-table (absent = empty, so every key takes its default).
    fn section(&mut self, key: &'static str) -> Result<Section<'t>, ConfigError> {
        let table = match self.get(key) {
            None => EMPTY.get_or_init(toml::Table::new),
            Some(toml::Value::Table(t)) => t,
            Some(v) => return Err(self.bad(key, v.to_string(), "expected a table")),
        };
        Ok(Section::new(self.origin, &format!("{}{key}.", self.prefix), table, self.base))
    }

    fn get(&mut self, key: &'static str) -> Option<&'t toml::Value> {
        self.used.push(key);
        self.table.get(key)
    }

    fn finish(&self) -> Result<(), ConfigError> {
        match self.table.keys().find(|k| !self.used.contains(&k.as_str())) {
            Some(k) => Err(unknown(self.origin, k, &self.prefix, &self.used)),
            None => Ok(()),
        }
    }

    fn bad(&self, key: &str, value: String, reason: &str) -> ConfigError {
        self.bad_at(&format!("{}{key}", self.prefix), value, reason)
    }

    fn bad_at(&self, full_key: &str, value: String, reason: &str) -> ConfigError {
        ConfigError::BadValue {
            origin: self.origin.to_string(),
            key: full_key.to_string(),
            value,
            reason: reason.to_string(),
        }
    }

    fn bad_str(&self, key: &str, value: &str, reason: &str) -> ConfigError {
        self.bad(key, format!("\"{value}\""), reason)
    }

    fn string(&mut self, key: &'static str, default: &str) -> Result<String, ConfigError> {
        match self.get(key) {
            None => Ok(default.to_string()),
            Some(toml::Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.bad(key, v.to_string(), "expected a string")),
        }
    }

    fn bool(&mut self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => Err(self.bad(key, v.to_string(), "expected true or false")),
        }
    }

    fn opt_u64(&mut self, key: &'static str, min: u64) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if *i >= 0 && *i as u64 >= min => Ok(Some(*i as u64)),
            Some(v) => Err(self.bad(key, v.to_string(), &format!("expected an integer >= {min}"))),
        }
    }

    fn u64(&mut self, key: &'static str, default: u64) -> Result<u64, ConfigError> {
        Ok(self.opt_u64(key, 0)?.unwrap_or(default))
    }

    fn u32_min(&mut self, key: &'static str, default: u32, min: u32) -> Result<u32, ConfigError> {
        let v = self.opt_u64(key, u64::from(min))?.unwrap_or(u64::from(default));
        u32::try_from(v).map_err(|_| self.bad(key, v.to_string(), "too large"))
    }

    fn f64(&mut self, key: &'static str, default: f64) -> Result<f64, ConfigError> {
        let x = match self.get(key) {
            None => return Ok(default),
            Some(toml::Value::Float(x)) => *x,
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(v) => return Err(self.bad(key, v.to_string(), "expected a number")),
        };
        if !x.is_finite() || x < 0.0 {
            return Err(self.bad(key, x.to_string(), "expected a finite number >= 0"));
        }
        Ok(x)
    }

    fn f64_at_most(
        &mut self,
        key: &'static str,
        default: f64,
        max: f64,
    ) -> Result<f64, ConfigError> {
        let x = self.f64(key, default)?;
        if x > max {
            let shown = if x < 1e16 { x.to_string() } else { format!("{x:e}") };
            return Err(self.bad(key, shown, &format!("at most {max:e} (docs/limits.md)")));
        }
        Ok(x)
    }

    /// A share in [0, 1].
    fn share(&mut self, key: &'static str, default: f64) -> Result<f64, ConfigError> {
        let x = self.f64(key, default)?;
        if x > 1.0 {
            return Err(self.bad(key, x.to_string(), "a share or probability is at most 1"));
        }
        Ok(x)
    }

    /// A token count: at most `MAX_TOKENS`, so that sums over a run stay exact.
    fn tokens(&mut self, key: &'static str, default: u64) -> Result<u64, ConfigError> {
        let v = self.u64(key, default)?;
        if v > MAX_TOKENS {
            let why = format!("at most {MAX_TOKENS} tokens (docs/limits.md)");
            return Err(self.bad(key, v.to_string(), &why));
        }
        Ok(v)
    }

    /// A distribution of token counts: its parameters at most `MAX_TOKENS`.
    fn token_dist(&mut self, key: &'static str, default: &str) -> Result<Dist, ConfigError> {
        let d = self.dist(key, Quantity::Number, default)?;
        if dist_param_max(&d) > MAX_TOKENS as f64 {
            let text = dist_label(&d, Quantity::Number);
            let why = format!("parameters of at most {MAX_TOKENS} tokens (docs/limits.md)");
            return Err(self.bad_str(key, &text, &why));
        }
        Ok(d)
    }

    /// A TTL: `"5m"` (or any spelling of 5 minutes), `"1h"`, `"none"`, or another positive
    /// duration where `policy` allows one; absent = `None`.
    fn ttl(&mut self, key: &'static str, policy: Policy) -> Result<Option<Ttl>, ConfigError> {
        if !self.table.contains_key(key) {
            self.used.push(key);
            return Ok(None);
        }
        let text = self.string(key, "")?;
        let ttl = match text.as_str() {
            "none" => Ttl::None,
            t => match parse_duration_us(t) {
                Ok(us) if us == 5 * US_PER_MIN => Ttl::FiveMin,
                Ok(us) if us == US_PER_H => Ttl::OneHour,
                Ok(0) => {
                    let reason = "a zero TTL caches nothing (\"none\" is the TTL that never ends)";
                    return Err(self.bad_str(key, t, reason));
                }
                Ok(us) => match other_ttl_refused(policy) {
                    Some(reason) => return Err(self.bad_str(key, t, reason)),
                    None => Ttl::Other(us),
                },
                Err(e) => return Err(self.bad_str(key, t, &e.to_string())),
            },
        };
        Ok(Some(ttl))
    }

    /// A turn shape: block kinds in the order user, thinking, text, tool_use, tool_result
    /// (each at most once), at least one of text and tool_use, tool_result only after tool_use.
    fn blocks(&mut self, key: &'static str) -> Result<Vec<BlockKind>, ConfigError> {
        let Some(v) = self.get(key) else { return Ok(DEFAULT_TURN_BLOCKS.to_vec()) };
        let bad = |why: &str| self.bad(key, v.to_string(), why);
        let items = v.as_array().ok_or_else(|| bad("expected a list of block kinds"))?;
        let mut out: Vec<BlockKind> = Vec::with_capacity(items.len());
        for item in items {
            let name = item.as_str().ok_or_else(|| bad("expected strings"))?;
            let kind = BlockKind::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
                bad(&format!(
                    "unknown block kind `{name}` (use user, thinking, text, tool_use, tool_result)"
                ))
            })?;
            if out.last().is_some_and(|&last| last >= kind) {
                return Err(bad("list each kind at most once, in the order user, thinking, text, tool_use, tool_result"));
            }
            out.push(kind);
        }
        if !out.iter().any(|k| matches!(k, BlockKind::Text | BlockKind::ToolUse)) {
            return Err(bad("a turn needs assistant text or tool_use"));
        }
        if out.contains(&BlockKind::ToolResult) && !out.contains(&BlockKind::ToolUse) {
            return Err(bad("a tool_result answers a tool_use"));
        }
        Ok(out)
    }

    fn duration_us(&mut self, key: &'static str, default_us: u64) -> Result<u64, ConfigError> {
        match self.get(key) {
            None => Ok(default_us),
            Some(toml::Value::String(s)) => {
                parse_duration_us(s).map_err(|e| self.bad_str(key, s, &e.to_string()))
            }
            Some(v) => {
                Err(self.bad(key, v.to_string(), "a duration is a string with a unit, e.g. \"5s\""))
            }
        }
    }

    fn dist(&mut self, key: &'static str, q: Quantity, default: &str) -> Result<Dist, ConfigError> {
        let text = match self.get(key) {
            None => default.to_string(),
            Some(toml::Value::String(s)) => s.clone(),
            Some(toml::Value::Integer(i)) if q == Quantity::Number => i.to_string(),
            Some(toml::Value::Float(x)) if q == Quantity::Number => x.to_string(),
            Some(v) if q == Quantity::Duration => {
                return Err(self.bad(
                    key,
                    v.to_string(),
                    "a duration needs a unit, e.g. \"2s\" or \"const(2s)\"",
                ))
            }
            Some(v) => return Err(self.bad(key, v.to_string(), "expected a distribution string")),
        };
        parse_dist_cached(&text, q, self.base).map_err(|e| self.bad_str(key, &text, &e.to_string()))
    }

    fn strategies(&mut self) -> Result<Vec<Strategy>, ConfigError> {
        let Some(v) = self.get("strategies") else {
            return Ok(DEFAULT_STRATEGIES
                .iter()
                .map(|s| parse_strategy(s).expect("valid"))
                .collect());
        };
        let items = v
            .as_array()
            .ok_or_else(|| self.bad("strategies", v.to_string(), "expected a list of strings"))?;
        if items.is_empty() {
            return Err(self.bad("strategies", v.to_string(), "name at least one strategy"));
        }
        let mut out: Vec<Strategy> = Vec::with_capacity(items.len());
        for item in items {
            let text = item
                .as_str()
                .ok_or_else(|| self.bad("strategies", item.to_string(), "expected a string"))?;
            let s = parse_strategy(text)
                .map_err(|e| self.bad_str("strategies", text, &e.to_string()))?;
            if out.iter().any(|o| strategy_label(o) == strategy_label(&s)) {
                return Err(self.bad_str("strategies", text, "listed twice"));
            }
            out.push(s);
        }
        Ok(out)
    }
}

// ---- [server]: the self-hosted `vllm` and `sglang` policies (config/server.rs) ----

/// `[server]`, from the `server.model` preset; read (and checked) whatever the policy.
fn resolve_server(s: &mut Section<'_>, policy: Policy) -> Result<ServerParams, ConfigError> {
    let name = s.string("model", "llama-3.1-8b")?;
    let Some(base) = server::server_preset(&name, policy) else {
        let hint = did_you_mean(&name, server::server_model_names())
            .map(|m| format!(" (did you mean `{m}`?)"))
            .unwrap_or_default();
        let names: Vec<&str> = server::server_model_names().collect();
        let why = format!("no server preset of that name{hint}; presets: {}", names.join(", "));
        return Err(s.bad_str("model", &name, &why));
    };
    let router = match s.string("router", base.router.name())?.as_str() {
        "round-robin" => Router::RoundRobin,
        "prefix-aware" => Router::PrefixAware,
        other => return Err(s.bad_str("router", other, "use \"round-robin\" or \"prefix-aware\"")),
    };
    let prefill_sharing = match s.string("prefill_sharing", base.prefill_sharing.name())?.as_str() {
        "fcfs-chunked" => Sharing::FcfsChunked,
        "processor-sharing" => Sharing::ProcessorSharing,
        other => {
            let why = "use \"fcfs-chunked\" or \"processor-sharing\"";
            return Err(s.bad_str("prefill_sharing", other, why));
        }
    };
    let prefill_tokens_per_s = s.f64("prefill_tokens_per_s", base.prefill_tokens_per_s)?;
    if prefill_tokens_per_s < 1.0 {
        let why = "at least 1 token per second";
        return Err(s.bad("prefill_tokens_per_s", prefill_tokens_per_s.to_string(), why));
    }
    let gpu_usd_per_hour = s.f64("gpu_usd_per_hour", base.gpu_usd_per_hour)?;
    let p = ServerParams {
        replicas: server_count(s, "replicas", base.replicas)?,
        gpus_per_replica: server_count(s, "gpus_per_replica", base.gpus_per_replica)?,
        router,
        prefill_sharing,
        prefill_tokens_per_s,
        step_token_budget: s.tokens("step_token_budget", base.step_token_budget)?,
        step_overhead_us: s.duration_us("step_overhead", base.step_overhead_us)?,
        decode_step_us: s.duration_us("decode_step", base.decode_step_us)?,
        decode_per_running_us: s.duration_us("decode_per_running", base.decode_per_running_us)?,
        decode_per_ktok_us: s.duration_us("decode_per_ktok", base.decode_per_ktok_us)?,
        kv_capacity_tokens: s.tokens("kv_capacity_tokens", base.kv_capacity_tokens)?,
        block_tokens: s.tokens("block_tokens", base.block_tokens)?,
        gpu_usd_per_hour,
        same_step_reads: base.same_step_reads,
        model: name,
    };
    s.finish()?;
    for (key, v) in [
        ("step_token_budget", p.step_token_budget),
        ("block_tokens", p.block_tokens),
        ("kv_capacity_tokens", p.kv_capacity_tokens),
    ] {
        if v == 0 {
            return Err(s.bad(key, "0".into(), "must be at least 1"));
        }
    }
    Ok(p)
}

/// A count of replicas or GPUs: 1 to 4,096.
fn server_count(s: &mut Section<'_>, key: &'static str, default: u32) -> Result<u32, ConfigError> {
    let v = s.u32_min(key, default, 1)?;
    if v > 4096 {
        return Err(s.bad(key, v.to_string(), "at most 4096"));
    }
    Ok(v)
}

/// What the server model does not cover: one model, no API rate limits or 529s, no isolated
/// misses, a frozen parent.
/// `w` is the workload to check (`exp.workload`, or one a sweep value changed).
fn check_server_experiment(
    top: &Section<'_>,
    exp: &Experiment,
    w: &Workload,
) -> Result<(), ConfigError> {
    let why = "not modelled with cache.policy = \"vllm\" or \"sglang\" (a self-hosted server has no API limits, one model, and a frozen parent)";
    if exp.rate_limits.is_some() {
        return Err(top.bad_at("rate_limits", "[rate_limits]".into(), why));
    }
    if exp.overload.is_some() {
        return Err(top.bad_at("overload", "[overload]".into(), why));
    }
    if exp.cache.miss_probability > 0.0 {
        let v = exp.cache.miss_probability.to_string();
        return Err(top.bad_at("cache.miss_probability", v, why));
    }
    if let AgentKind::ForkOtherModel { .. } = &w.kind {
        let value = format!("\"{}\"", super::kind_label(&w.kind));
        return Err(top.bad_at("workload.kind", value, why));
    }
    if w.parent_turn_every_us > 0 {
        let v = format!("\"{}\"", crate::time::exact_duration(w.parent_turn_every_us));
        return Err(top.bad_at("workload.parent_turn_every", v, why));
    }
    Ok(())
}

// ---- end of [server] ----

/// Why `policy` refuses a TTL other than 5 minutes, 1 hour or none (`None`: it takes any).
fn other_ttl_refused(policy: Policy) -> Option<&'static str> {
    match policy {
        Policy::Anthropic => Some(
            "the Anthropic API offers \"5m\" and \"1h\" only (cache_control.ttl, \
             https://platform.claude.com/docs/en/build-with-claude/prompt-caching); another TTL \
             needs cache.policy = \"every-block\"",
        ),
        Policy::OpenAi => Some(
            "under cache.policy = \"openai\" the lifetime is [openai] retention (\"in_memory\" \
             or \"24h\"; \"30m\" or \"12h\" with breakpoints; docs/providers.md)",
        ),
        Policy::Gemini => Some(
            "under cache.policy = \"gemini\" the lifetime is [gemini] explicit_ttl (any \
             duration) or implicit_ttl (docs/providers.md)",
        ),
        Policy::EveryBlock | Policy::Vllm | Policy::Sglang => None,
    }
}

fn unknown(origin: &str, key: &str, prefix: &str, known: &[&str]) -> ConfigError {
    let hint = did_you_mean(key, known.iter().copied())
        .map(|s| format!(" (did you mean `{prefix}{s}`?)"))
        .unwrap_or_default();
    ConfigError::UnknownKey { origin: origin.to_string(), key: format!("{prefix}{key}"), hint }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_table, render, DEFAULT_EXPERIMENT};
    use super::*;

    /// Remembered distributions are the ones that read no file: a values file is read again at
    /// every resolve, named as `file=` or as a bare positional argument.
    #[test]
    fn a_values_file_is_read_at_every_resolve() {
        let dir = std::env::temp_dir().join(format!("prefixsim-dist-memo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let origin = dir.join("x.toml").display().to_string();
        for spelling in ["empirical(file=v.txt)", "empirical(v.txt)"] {
            let text = format!("[workload]\nturns = \"{spelling}\"\n");
            let t = parse_table(&text, &origin).unwrap();
            std::fs::write(dir.join("v.txt"), "1\n2\n").unwrap();
            assert_eq!(
                resolve(&t, &origin).unwrap().workload.turns,
                Dist::Empirical(vec![1.0, 2.0])
            );
            std::fs::write(dir.join("v.txt"), "3\n").unwrap();
            assert_eq!(resolve(&t, &origin).unwrap().workload.turns, Dist::Empirical(vec![3.0]));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn check_err(text: &str, key: &str, value_part: &str) {
        let t = parse_table(text, "x.toml").unwrap();
        let e = resolve(&t, "x.toml").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("x.toml"), "{msg}");
        assert!(msg.contains(key), "{msg} lacks {key}");
        assert!(msg.contains(value_part), "{msg} lacks {value_part}");
    }

    #[test]
    fn other_ttls_where_the_policy_allows_them() {
        for policy in ["every-block", "vllm", "sglang"] {
            let text =
                format!("[cache]\npolicy = \"{policy}\"\nttl = \"30m\"\nparent_ttl = \"6h\"\n");
            let e = resolve(&parse_table(&text, "x.toml").unwrap(), "x.toml").unwrap();
            assert_eq!(e.cache.ttl, Ttl::Other(30 * US_PER_MIN), "{policy}");
            assert_eq!(e.cache.parent_ttl, Some(Ttl::Other(6 * US_PER_H)), "{policy}");
            let again = parse_table(&render(&e), "r.toml").unwrap();
            assert_eq!(resolve(&again, "r.toml").unwrap(), e, "{policy}: the TTL round-trips");
        }
        let text = "[cache]\npolicy = \"every-block\"\n[cache.ttl_by_kind]\nfork = \"90s\"\n";
        let e = resolve(&parse_table(text, "x.toml").unwrap(), "x.toml").unwrap();
        assert_eq!(e.cache.ttl_by_kind, [("fork".to_string(), Ttl::Other(90_000_000))]);
    }

    #[test]
    fn empty_file_takes_spec_defaults() {
        let e = resolve(&toml::Table::new(), "dir/fanout.toml").unwrap();
        assert_eq!(e.name, "fanout");
        assert_eq!(e.seed, 42);
        assert_eq!(e.replications, 100);
        assert_eq!(e.strategies.len(), 5);
        assert_eq!(e.model.input_usd_per_mtok, 3.0);
        assert_eq!(e.cache.ttl, Ttl::FiveMin);
        assert_eq!(e.workload.agents, 10);
        assert_eq!(e.workload.concurrency, 16);
        assert_eq!(e.workload.tool_latency_us, Dist::Const(2e6));
        // Latency: Sonnet 4.5's calibrated preset (its median fixed part is 1.8 s).
        let calibrated = latency_presets::params("claude-sonnet-4.5", LatencyPreset::Calibrated);
        assert_eq!(Some(e.latency.clone()), calibrated);
        assert_eq!(e.latency_other, None);
        assert_eq!(e.rate_limits, None);
        assert_eq!(e.workload.parent_turn_every_us, 0);
        assert_eq!(e.workload.parent_turn_tokens, Dist::Const(2000.0));
        assert_eq!(e.workload.arrival_every_us, 0);
    }

    #[test]
    fn arrivals_resolve_render_and_reject_bad_values() {
        let e = resolve(
            &parse_table(
                "[workload]
arrival_every = \"1min\"\n",
                "a",
            )
            .unwrap(),
            "a",
        )
        .unwrap();
        assert_eq!(e.workload.arrival_every_us, 60_000_000);
        let text = render(&e);
        assert!(text.contains("arrival_every = \"1min\""), "{text}");
        assert_eq!(resolve(&parse_table(&text, "a").unwrap(), "a").unwrap(), e);
        check_err("[workload]\narrival_every = \"-2s\"\n", "workload.arrival_every", "-2s");
        check_err("[workload]\narrival_every = 60\n", "workload.arrival_every", "60");
    }

    #[test]
    fn parent_turns_resolve_render_and_reject_bad_values() {
        let src = "[workload]\nparent_turn_every = \"90s\"\n\
                   parent_turn_tokens = \"lognormal(median=2000, p90=8000)\"\n";
        let e = resolve(&parse_table(src, "p").unwrap(), "p").unwrap();
        assert_eq!(e.workload.parent_turn_every_us, 90_000_000);
        assert_eq!(e.workload.parent_turn_tokens, Dist::LogNormal { median: 2000.0, p90: 8000.0 });
        let text = render(&e);
        assert!(text.contains("parent_turn_every = \"90s\""), "{text}");
        let again = resolve(&parse_table(&text, "p").unwrap(), "p").unwrap();
        assert_eq!(again, e);
        check_err("[workload]\nparent_turn_every = 60\n", "workload.parent_turn_every", "60");
        check_err(
            "[workload]\nparent_turn_every = \"-1min\"\n",
            "workload.parent_turn_every",
            "-1min",
        );
        check_err(
            "[workload]\nparent_turn_tokens = \"uniform(5\"\n",
            "workload.parent_turn_tokens",
            "uniform(5",
        );
        check_err(
            "[workload]\nparent_turns_every = \"1min\"\n",
            "workload.parent_turns_every",
            "did you mean",
        );
    }

    #[test]
    fn default_experiment_resolves_and_renders_round_trip() {
        let t = parse_table(DEFAULT_EXPERIMENT, "<default>").unwrap();
        let e = resolve(&t, "<default>").unwrap();
        assert!(!e.question.is_empty());
        let text = render(&e);
        let again = resolve(&parse_table(&text, "r").unwrap(), "r").unwrap();
        assert_eq!(again, e);
        assert_eq!(render(&again), text);
    }

    #[test]
    fn rate_limits_and_overrides_render_round_trip() {
        let src = "model = \"claude-haiku-3.5\"\n[rate_limits]\nrpm = 50\ncache_reads_count = true\n\
                   [model_params]\nread_multiplier = 0.05\n[cache]\nttl = \"1h\"\ncapacity_tokens = 9000\n\
                   [workload]\nkind = \"fork_other_model(model=claude-opus-4.5)\"\n";
        let e = resolve(&parse_table(src, "r").unwrap(), "r").unwrap();
        assert_eq!(e.rate_limits.as_ref().map(|r| r.rpm), Some(50));
        assert_eq!(e.model.read_multiplier, 0.05);
        let again = resolve(&parse_table(&render(&e), "r").unwrap(), "r").unwrap();
        assert_eq!(again, e);
    }

    #[test]
    fn latency_comes_from_a_preset_a_file_or_keys_in_that_order() {
        let launch =
            resolve(&parse_table("[latency]\npreset = \"launch-2024\"\n", "r").unwrap(), "r");
        assert_eq!(launch.unwrap().latency, LatencyParams::default());
        // The API's model id names the preset; its calibrated latency follows.
        let haiku =
            "model = \"claude-haiku-4-5-20251001\"\n[latency]\nprefill_rate = \"const(7)\"\n";
        let e = resolve(&parse_table(haiku, "r").unwrap(), "r").unwrap();
        assert_eq!(e.model.name, "claude-haiku-4.5");
        let base = latency_presets::params("claude-haiku-4.5", LatencyPreset::Calibrated).unwrap();
        assert_eq!(e.latency, LatencyParams { prefill_rate: Dist::Const(7.0), ..base });
        // A calibration file: its table for the model, by API id; absent keys keep the preset.
        let dir = std::env::temp_dir().join(format!("prefixsim-latfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("latency.toml"),
            "[latency.\"claude-sonnet-4-5-20250929\"]\noverhead = \"const(1.5s)\"\n             prefill_rate = \"const(40000)\"\n",
        )
        .unwrap();
        let origin = dir.join("exp.toml").display().to_string();
        let text = "[latency]\nfrom = \"latency.toml\"\ndecode_rate = \"const(80)\"\n";
        let e = resolve(&parse_table(text, &origin).unwrap(), &origin).unwrap();
        let base = latency_presets::params("claude-sonnet-4.5", LatencyPreset::Calibrated).unwrap();
        assert_eq!(e.latency.overhead_us, Dist::Const(1.5e6));
        assert_eq!(e.latency.prefill_rate, Dist::Const(40_000.0));
        assert_eq!(e.latency.cached_rate, base.cached_rate);
        assert_eq!(e.latency.decode_rate, Dist::Const(80.0));
        // The file has no table for Opus 4.5: the error names the key and the file's models.
        let opus = format!("model = \"claude-opus-4.5\"\n{text}");
        let err = resolve(&parse_table(&opus, &origin).unwrap(), &origin).unwrap_err().to_string();
        assert!(
            err.contains("latency.from") && err.contains("no table for model `claude-opus-4.5`"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        check_err("[latency]\npreset = \"2023\"\n", "latency.preset", "calibrated, launch-2024");
        check_err("[latency]\nfrom = \"nope.toml\"\n", "latency.from", "cannot read it");
    }

    #[test]
    fn a_fork_to_another_model_runs_at_that_models_latency() {
        let src = "[workload]\nkind = \"fork_other_model(model=claude-haiku-4.5)\"\n                   [latency.other_model]\ndecode_rate = \"const(99)\"\n";
        let e = resolve(&parse_table(src, "r").unwrap(), "r").unwrap();
        let haiku = latency_presets::params("claude-haiku-4.5", LatencyPreset::Calibrated).unwrap();
        assert_eq!(
            e.latency_other,
            Some(LatencyParams { decode_rate: Dist::Const(99.0), ..haiku })
        );
        let again = resolve(&parse_table(&render(&e), "r").unwrap(), "r").unwrap();
        assert_eq!(again, e, "the other model's latency is rendered and read back");
        check_err(
            "[latency.other_model]\nprefill_rate = \"const(5)\"\n",
            "latency.other_model.prefill_rate",
            "unknown key",
        );
    }

    #[test]
    fn calibrated_defaults_render_round_trip() {
        for model in super::presets::preset_names() {
            let src = format!("model = \"{model}\"\n");
            let e = resolve(&parse_table(&src, "r").unwrap(), "r").unwrap();
            let again = resolve(&parse_table(&render(&e), "r").unwrap(), "r").unwrap();
            assert_eq!(again.latency, e.latency, "{model}");
        }
    }

    #[test]
    fn errors_name_key_and_value() {
        check_err("[workload]\nagnets = 3\n", "workload.agnets", "did you mean `workload.agents`");
        check_err("bogus = 1\n", "bogus", "bogus");
        check_err("[workload]\nparent_idle = \"-5s\"\n", "workload.parent_idle", "-5s");
        check_err(
            "[workload]\ntool_latency = \"const(2 parsecs)\"\n",
            "workload.tool_latency",
            "parsecs",
        );
        check_err("[workload]\ntool_latency = \"2\"\n", "workload.tool_latency", "\"2\"");
        check_err("[workload]\nturns = \"uniform(3\"\n", "workload.turns", "uniform(3");
        check_err("strategies = [\"eagre\"]\n", "strategies", "eagre");
        check_err("[workload]\nkind = \"spoon\"\n", "workload.kind", "spoon");
        check_err("model = \"gpt-9\"\n", "model", "gpt-9");
        check_err(
            "[workload]\nkind = \"fork_other_model(model=gpt-9)\"\n",
            "workload.kind",
            "gpt-9",
        );
        check_err("[cache]\nttl = \"7m\"\n", "cache.ttl", "7m");
        check_err("[cache]\nttl = \"7m\"\n", "cache.ttl", "prompt-caching");
        check_err("[cache]\nttl = \"0s\"\n", "cache.ttl", "zero");
        check_err("[cache]\npolicy = \"openai\"\nttl = \"30m\"\n", "cache.ttl", "retention");
        check_err("replications = 0\n", "replications", "0");
        check_err("strategies = [\"eager\", \"eager\"]\n", "strategies", "twice");
    }

    #[test]
    fn sweep_table_is_left_alone() {
        let t = parse_table("[sweep]\n\"workload.agents\" = [1, 2]\n", "s").unwrap();
        assert!(resolve(&t, "s").is_ok());
        assert!(super::super::sweep_table(&t).is_some());
    }
}
