//! Raw TOML table -> `ExperimentSpec`: the table is read into `ExperimentFile` (every value checked
//! by its type, every unknown key refused, each error placed at its dotted key), then each
//! section's `validate` fills in the defaults and checks what depends on other values.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::error::{At, Bad, ConfigError};
use super::experiment::*;
use super::fields::{with_base_dir, GetOr, Name};
use super::file::*;
use super::latency_file::LatencyFile;
use super::latency_presets::{self, LatencyPreset};
use super::names::key_elsewhere;
use super::{call::did_you_mean, presets};
use crate::cache::{CacheParams, HostedParams, ModelParams, Policy, ThinkingHistory, Ttl};
use crate::dist::Dist;
use crate::time::{US_PER_H, US_PER_MIN, US_PER_S};

mod hosted;
mod models;
mod report;
mod server;
pub use models::read_models_file;
pub use report::lookup;

/// The strategies run when the file names none (docs/experiments.md).
pub const DEFAULT_STRATEGIES: [&str; 5] =
    ["eager", "wait_first(max_wait=5s)", "stagger(interval=1s)", "sequential", "prewarm"];

/// Resolve a raw table. `origin` names the file in errors; `empirical(file=...)` and
/// `latency.from` paths are relative to its directory.
pub fn resolve(table: &toml::Table, origin: &str) -> Result<ExperimentSpec, ConfigError> {
    let file: ExperimentFile = read(table, toml::Value::Table(table.clone()), origin, "")?;
    file.validate(table, At { origin, prefix: "" })
}

/// `value` (the table's `prefix` section, or the whole table) read as a `T`.
fn read<T: DeserializeOwned>(
    table: &toml::Table,
    value: toml::Value,
    origin: &str,
    prefix: &str,
) -> Result<T, ConfigError> {
    let base = Path::new(origin).parent();
    with_base_dir(base, || serde_path_to_error::deserialize(value))
        .map_err(|e| placed(&e, table, At { origin, prefix }))
}

/// A read error at its dotted key: a refused value (`Bad`), an unknown key with the closest
/// known one, or a value of the wrong type.
fn placed(
    e: &serde_path_to_error::Error<toml::de::Error>,
    table: &toml::Table,
    at: At,
) -> ConfigError {
    let path: Vec<String> = e.path().iter().map(ToString::to_string).collect();
    let key = format!("{}{}", at.prefix, path.join("."));
    let message = e.inner().message();
    if let Some(Bad { value, reason }) = Bad::split(message) {
        return ConfigError::BadValue { origin: at.origin.into(), key, value, reason };
    }
    if message.starts_with("unknown field `") {
        // serde's "unknown field `k`, expected one of `a`, `b`": the key, then the known ones.
        let mut names = message.split('`').skip(1).step_by(2);
        let name = names.next().unwrap_or_default();
        let known: Vec<&str> = names.collect();
        let section = key.strip_suffix(name).unwrap_or_default();
        let mut e = at.section(section).unknown(name, known.iter().copied());
        if let ConfigError::UnknownKey { key, hint, .. } = &mut e {
            // None close in its section: the closest in another (`ttl` -> `cache.ttl`).
            let known = || resolve(&toml::Table::new(), "").map(|d| super::render::dotted_keys(&d));
            if let Some(k) = hint.is_empty().then(known).and_then(Result::ok) {
                let near = key_elsewhere(key, &k);
                hint.push_str(&near.map(|n| format!(" (did you mean `{n}`?)")).unwrap_or_default());
            }
        }
        if let (ConfigError::UnknownKey { hint, .. }, "report.") = (&mut e, section) {
            hint.push_str(&format!(" ([report] accepts {})", known.join(", ")));
        }
        return e;
    }
    // serde's own "invalid type: .., expected a string": a string, a flag or a section of
    // another type.
    let reason = match message.rsplit_once(", expected ") {
        Some((_, "a string")) => "expected a string",
        Some((_, "a boolean")) => "expected true or false",
        _ => "expected a table",
    };
    let value = lookup(table, &key).map_or_else(|| message.to_string(), ToString::to_string);
    at.section("").bad(&key, value, reason)
}

/// Whether `resolve` of `table` succeeds, where `table` is a table that resolved as `base`
/// with the dotted keys `changed` set (in full, as `sweep::table::canonical_key` writes them).
/// The same answer and the same error as `resolve(table, origin)`, for less: when every changed
/// key is a plain key of `[workload]` other than `kind`, only `[workload]` and the checks that
/// read it run again, because the other sections read nothing of `[workload]` (the latency of
/// a `fork_other_model` depends on `kind` only) and resolved as in `base`. Any other key
/// resolves the whole table.
pub fn check_changed(
    base: &ExperimentSpec,
    table: &toml::Table,
    origin: &str,
    changed: &[&str],
) -> Result<(), ConfigError> {
    let workload_only =
        |k: &&str| k.strip_prefix("workload.").is_some_and(|k| k != "kind" && !k.contains('.'));
    let Some(section) =
        table.get("workload").filter(|_| !changed.is_empty() && changed.iter().all(workload_only))
    else {
        return resolve(table, origin).map(drop);
    };
    let at = At { origin, prefix: "" };
    let file: WorkloadSection = read(table, section.clone(), origin, "workload.")?;
    let w = file.validate();
    let other = checked_other_model(&w, at, &base.defined_models)?;
    if base.cache.policy.is_server() {
        server::check_experiment(base, &w, at)?;
    }
    check_thinking(base, &w, other.as_ref(), at)?;
    check_first_request_fits(base, &w, other.as_ref(), at)
}

impl ExperimentFile {
    /// Every section, defaulted and checked, then the checks across sections.
    fn validate(mut self, table: &toml::Table, at: At) -> Result<ExperimentSpec, ConfigError> {
        let stem = Path::new(at.origin).file_stem().map(|s| s.to_string_lossy().into_owned());
        let (defined, model, cache) = self.model_and_cache(at)?;
        let workload = self.workload.unwrap_or_default().validate();
        let other_model = match &workload.kind {
            AgentKind::ForkOtherModel { model } => Some(model.as_str()),
            _ => None,
        };
        let (latency, latency_other) =
            self.latency.unwrap_or_default().validate(&model.name, other_model, at, &defined)?;
        let defined_models = models::used(defined, [Some(model.name.as_str()), other_model]);
        let strategies = self.strategies.map_or_else(default_strategies, Into::into);
        let openai_counts = cache.policy == Policy::OpenAi;
        let exp = ExperimentSpec {
            name: self.name.get_or(stem.unwrap_or_else(|| "experiment".into())),
            question: self.question.get_or(String::new()),
            seed: self.seed.get_or(42),
            replications: self.replications.get_or(100),
            report: self.report.unwrap_or_default().validate(table, &strategies, at)?,
            strategies,
            model,
            cache,
            workload,
            latency,
            latency_other,
            rate_limits: self.rate_limits.map(|r| r.validate(openai_counts, at)).transpose()?,
            overload: self.overload.map(OverloadSection::validate),
            limits: self.limits.unwrap_or_default().validate(),
            plot_baseline: self.plot.unwrap_or_default().validate(at)?,
            server: None,
            defined_models,
        };
        check_experiment(exp, self.server.unwrap_or_default(), at)
    }

    /// The experiment's model definitions, its model, and `[cache]` with `[openai]` and
    /// `[gemini]`: the model and the policy default to each other (`hosted`), a defined
    /// model's policy to its definition's (`models`).
    fn model_and_cache(
        &mut self,
        at: At,
    ) -> Result<(Vec<DefinedModel>, ModelParams, CacheParams), ConfigError> {
        let defined = models::defined(self.models.take(), self.models_file.take(), at)?;
        let mut cache = self.cache.take().unwrap_or_default();
        let policy = cache.policy.map(|p| p.0);
        let default_model =
            policy.and_then(super::presets_hosted::default_model).unwrap_or("claude-sonnet-4.5");
        let name = self.model.take().get_or(default_model.to_string());
        let model = self.model_params.take().unwrap_or_default().validate(&name, at, &defined)?;
        let s = at.section("cache.");
        cache.policy = models::check_policy(policy, &defined, &name, s)?.map(Name);
        let mut cache = cache.validate(&model, at)?;
        let (openai, gemini) = (self.openai.take(), self.gemini.take());
        cache.hosted = HostedParams {
            openai: openai.unwrap_or_default().validate(
                cache.policy,
                &model,
                at.section("openai."),
            )?,
            gemini: gemini.unwrap_or_default().validate(at.section("gemini."))?,
        };
        Ok((defined, model, cache))
    }
}

/// The checks across sections, and `[server]` (read and checked whatever the policy).
fn check_experiment(
    mut exp: ExperimentSpec,
    server: ServerSection,
    at: At,
) -> Result<ExperimentSpec, ConfigError> {
    let server = server.validate(exp.cache.policy, at.section("server."))?;
    if exp.cache.policy.is_server() {
        server::check_experiment(&exp, &exp.workload, at)?;
        exp.server = Some(server);
    }
    let other = checked_other_model(&exp.workload, at, &exp.defined_models)?;
    check_thinking(&exp, &exp.workload, other.as_ref(), at)?;
    check_first_request_fits(&exp, &exp.workload, other.as_ref(), at)?;
    Ok(exp)
}

fn default_strategies() -> Vec<Strategy> {
    let parse = |s: &&str| super::parse_strategy(s).expect("the default strategies parse");
    DEFAULT_STRATEGIES.iter().map(parse).collect()
}

/// The `fork_other_model` kind's model, which must be a preset or a model the experiment
/// defines.
fn checked_other_model(
    w: &Workload,
    at: At,
    defined: &[DefinedModel],
) -> Result<Option<ModelParams>, ConfigError> {
    let AgentKind::ForkOtherModel { model } = &w.kind else { return Ok(None) };
    if let Some(m) = models::find(defined, model, at) {
        return m.map(Some);
    }
    match presets::preset(model) {
        Some(m) => Ok(Some(m)),
        None => {
            let value = format!("\"{}\"", super::kind_label(&w.kind));
            Err(at.bad("workload.kind", value, unknown_model(model)))
        }
    }
}

/// Thinking on needs a model with extended thinking (the agents' and the parent's).
fn check_thinking(
    exp: &ExperimentSpec,
    w: &Workload,
    other: Option<&ModelParams>,
    at: At,
) -> Result<(), ConfigError> {
    let agents_model = other.unwrap_or(&exp.model);
    let checks = [
        ("workload.thinking", w.thinking, agents_model),
        ("workload.parent_thinking", w.parent_thinks(), &exp.model),
    ];
    for (key, on, model) in checks {
        if on && model.thinking == ThinkingHistory::None {
            return Err(at.bad(key, "true", format!("{} has no extended thinking", model.name)));
        }
    }
    Ok(())
}

/// The first request of an agent (its shared prefix and its task) must fit the window of the
/// model it is sent to; the key named is the prefix size that made it too long. Later requests
/// grow with turns and parent exchanges: the model checks each one when it is sent.
fn check_first_request_fits(
    exp: &ExperimentSpec,
    w: &Workload,
    other: Option<&ModelParams>,
    at: At,
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
    Err(at.bad(key, prefix, reason))
}

fn unknown_model(name: &str) -> String {
    let names = presets::preset_names();
    let hint = did_you_mean(name, names.iter().copied())
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    format!(
        "unknown model preset `{name}` (known: {}){hint}; a model of your own: [models.\"{name}\"] \
         or --models FILE (docs/models.md)",
        names.join(", ")
    )
}

impl ModelSection {
    /// `[model_params]` over the preset `name`. A model that is not a preset is fine when every
    /// price parameter is given; the rest defaults to a 200k window, no long-context offer,
    /// thinking kept, its own rate-limit buckets.
    fn validate(
        self,
        name: &str,
        at: At,
        defined: &[DefinedModel],
    ) -> Result<ModelParams, ConfigError> {
        let all_given = self.input_usd_per_mtok.is_some()
            && self.output_usd_per_mtok.is_some()
            && self.read_multiplier.is_some()
            && self.write_5m_multiplier.is_some()
            && self.write_1h_multiplier.is_some()
            && self.min_cacheable_tokens.is_some();
        let base = match models::find(defined, name, at).transpose()?.or(presets::preset(name)) {
            Some(b) => b,
            None if all_given => presets::unlisted(name),
            None => return Err(at.bad_str("model", name, unknown_model(name))),
        };
        let s = at.section("model_params.");
        let thinking = self.thinking_history.map_or(base.thinking, |t| t.0);
        let mut m = ModelParams {
            name: base.name.clone(),
            input_usd_per_mtok: self.input_usd_per_mtok.get_or(base.input_usd_per_mtok),
            output_usd_per_mtok: self.output_usd_per_mtok.get_or(base.output_usd_per_mtok),
            read_multiplier: self.read_multiplier.get_or(base.read_multiplier),
            write_5m_multiplier: self.write_5m_multiplier.get_or(base.write_5m_multiplier),
            write_1h_multiplier: self.write_1h_multiplier.get_or(base.write_1h_multiplier),
            storage_usd_per_mtok_hour: self
                .storage_usd_per_mtok_hour
                .get_or(base.storage_usd_per_mtok_hour),
            min_cacheable_tokens: self.min_cacheable_tokens.get_or(base.min_cacheable_tokens),
            context_window_tokens: self.context_window_tokens.get_or(base.context_window_tokens),
            long_context: None,
            use_long_context: self.long_context.get_or(base.use_long_context),
            thinking,
            rate_limit_class: self.rate_limit_class.get_or(base.rate_limit_class.clone()),
            itpm_counts_cache_reads: self
                .itpm_counts_cache_reads
                .get_or(base.itpm_counts_cache_reads),
        };
        if m.context_window_tokens == 0 {
            return Err(s.bad("context_window_tokens", 0, "a window holds at least 1 token"));
        }
        let keys = (
            self.long_context_window_tokens,
            self.long_context_threshold_tokens,
            self.long_context_input_multiplier,
            self.long_context_output_multiplier,
        );
        m.long_context = models::long_context(keys, &base, m.context_window_tokens);
        if m.use_long_context && m.long_context.is_none() {
            let reason = format!(
                "{} offers no larger context window (set model_params.long_context_window_tokens to \
                 declare one)",
                m.name
            );
            return Err(s.bad("long_context", "true", reason));
        }
        Ok(m)
    }
}

impl CacheSection {
    fn validate(self, model: &ModelParams, at: At) -> Result<CacheParams, ConfigError> {
        let s = at.section("cache.");
        let policy = hosted::policy(self.policy.map(|p| p.0), model, s)?;
        let by_kind = self.ttl_by_kind.unwrap_or_default();
        let kinds = super::names::KIND_NAMES;
        if let Some(k) = by_kind.keys().find(|k| !kinds.contains(&k.as_str())) {
            return Err(at.section("cache.ttl_by_kind.").unknown(k, kinds));
        }
        let by_kind: Vec<(String, Ttl)> = kinds
            .iter()
            .filter_map(|k| by_kind.get(*k).map(|t| (format!("ttl_by_kind.{k}"), t)))
            .map(|(key, t)| check_ttl(&key, t, policy, s).map(|ttl| (key[12..].to_string(), ttl)))
            .collect::<Result<_, _>>()?;
        let capacity_tokens = self.capacity_tokens.map(u64::from);
        if let Some(c) = capacity_tokens.filter(|&c| c > 1 << 53) {
            return Err(s.bad("capacity_tokens", c, "at most 2^53 tokens"));
        }
        let parent_ttl = self.parent_ttl.as_ref().map(|t| check_ttl("parent_ttl", t, policy, s));
        Ok(CacheParams {
            policy,
            ttl: self.ttl.as_ref().map_or(Ok(Ttl::FiveMin), |t| check_ttl("ttl", t, policy, s))?,
            capacity_tokens,
            parent_ttl: parent_ttl.transpose()?,
            ttl_by_kind: by_kind,
            miss_probability: self.miss_probability.get_or(0.0),
            hosted: HostedParams::default(),
        })
    }
}

/// A TTL other than 5 minutes, 1 hour or none, where `policy` takes one.
fn check_ttl(
    key: &str,
    t: &super::fields::TtlText,
    policy: Policy,
    s: At,
) -> Result<Ttl, ConfigError> {
    let why = match policy {
        Policy::Anthropic => {
            "the Anthropic API offers \"5m\" and \"1h\" only (cache_control.ttl, \
             https://platform.claude.com/docs/en/build-with-claude/prompt-caching); another TTL \
             needs cache.policy = \"every-block\""
        }
        Policy::OpenAi => {
            "under cache.policy = \"openai\" the lifetime is [openai] retention (\"in_memory\" \
             or \"24h\"; \"30m\" or \"12h\" with breakpoints; docs/providers.md)"
        }
        Policy::Gemini => {
            "under cache.policy = \"gemini\" the lifetime is [gemini] explicit_ttl (any \
             duration) or implicit_ttl (docs/providers.md)"
        }
        Policy::EveryBlock | Policy::Vllm | Policy::Sglang => return Ok(t.0),
    };
    match t.0 {
        Ttl::Other(_) => Err(s.bad_str(key, &t.1, why)),
        ttl => Ok(ttl),
    }
}

impl WorkloadSection {
    fn validate(self) -> Workload {
        Workload {
            kind: self.kind.get_or(AgentKind::Fork),
            agents: self.agents.get_or(10),
            arrival_every_us: self.arrival_every.get_or(0),
            concurrency: self.concurrency.get_or(16),
            parent_tokens: self.parent_tokens.get_or(50_000),
            parent_warm: self.parent_warm.get_or(false),
            parent_idle_us: self.parent_idle.get_or(0),
            parent_turn_every_us: self.parent_turn_every.get_or(0),
            parent_turn_tokens: self.parent_turn_tokens.get_or(Dist::Const(2000.0)),
            brief_tokens: self.brief_tokens.get_or(0),
            task_tokens: self.task_tokens.get_or(100),
            subagent_tokens: self.subagent_tokens.get_or(15_000),
            turns: self.turns.get_or(Dist::Const(1.0)),
            output_tokens: self.output_tokens.get_or(Dist::Const(100.0)),
            output_max_tokens: self.output_max_tokens.get_or(u64::MAX),
            tool_latency_us: self.tool_latency.get_or(Dist::Const(2e6)),
            tool_result_tokens: self.tool_result_tokens.get_or(Dist::Const(500.0)),
            tool_result_max_tokens: self.tool_result_max_tokens.get_or(u64::MAX),
            denied_call_share: self.denied_call_share.get_or(0.1),
            turn_blocks: self.turn_blocks.get_or(DEFAULT_TURN_BLOCKS.to_vec()),
            parent_exchange_blocks: self
                .parent_exchange_blocks
                .get_or(DEFAULT_TURN_BLOCKS.to_vec()),
            thinking: self.thinking.get_or(false),
            parent_thinking: self.parent_thinking,
        }
    }
}

impl LatencySection {
    /// A preset (`calibrated` per model, or `launch-2024`), optionally replaced by a
    /// calibration file's table for the model (`from`), then any key given explicitly. The
    /// `fork_other_model` model gets its own parameters the same way, overridable under
    /// `[latency.other_model]`.
    fn validate(
        mut self,
        model: &str,
        other_model: Option<&str>,
        at: At,
        defined: &[DefinedModel],
    ) -> Result<(LatencyParams, Option<LatencyParams>), ConfigError> {
        let s = at.section("latency.");
        let preset = self.preset.map_or(LatencyPreset::Calibrated, |p| p.0);
        let draw = self.draw.map(|k| u64::from(k) as usize);
        check_draw(draw, preset, &models::fit_name(defined, model), s)?;
        let from = match self.from.take() {
            None => None,
            Some(toml::Value::String(f)) => Some(Path::new(at.origin).with_file_name(f)),
            Some(v) => return Err(s.bad("from", v, "expected a file name")),
        };
        let quoted = |p: &Path| format!("\"{}\"", p.display());
        let file = match &from {
            Some(p) => {
                Some(LatencyFile::read(p).map_err(|e| s.bad("from", quoted(p), e.to_string()))?)
            }
            None => None,
        };
        let base_for = |m: &str| -> Result<LatencyParams, ConfigError> {
            let base = models::latency_base(defined, m, preset, draw, at)?;
            match (&file, &from) {
                (Some(f), Some(p)) => {
                    f.params_for(m, base).map_err(|e| s.bad("from", quoted(p), e.to_string()))
                }
                _ => Ok(base),
            }
        };
        let latency = latency_keys(self.keys(), base_for(model)?, s)?;
        let other = self.other_model.unwrap_or_default();
        let o = at.section("latency.other_model.");
        let latency_other = match other_model {
            Some(m) => Some(latency_keys(other, base_for(m)?, o)?),
            None => match other.first_given() {
                Some(k) => return Err(o.unknown(&k, [])),
                None => None,
            },
        };
        Ok((latency, latency_other))
    }
}

/// `latency.draw`: one of the calibration's bootstrap refits, under `preset = "calibrated"`.
fn check_draw(
    draw: Option<usize>,
    preset: LatencyPreset,
    model: &str,
    s: At,
) -> Result<(), ConfigError> {
    let Some(k) = draw else { return Ok(()) };
    if preset != LatencyPreset::Calibrated {
        let why =
            "a calibration draw needs preset = \"calibrated\" (launch-2024 has no uncertainty)";
        return Err(s.bad("draw", k, why));
    }
    let draws = latency_presets::fit_for(model).map_or(0, |(f, _)| f.draws.len());
    if k >= draws {
        let why =
            format!("the calibration of {model} has {draws} draws (0 to {})", draws.max(1) - 1);
        return Err(s.bad("draw", k, why));
    }
    Ok(())
}

/// The six latency keys of a section, each defaulting to `base`'s value.
fn latency_keys(k: LatencyKeys, base: LatencyParams, s: At) -> Result<LatencyParams, ConfigError> {
    let l = LatencyParams {
        overhead_us: k.overhead.get_or(base.overhead_us),
        prefill_rate: k.prefill_rate.get_or(base.prefill_rate),
        cached_rate: k.cached_rate.get_or(base.cached_rate),
        decode_rate: k.decode_rate.get_or(base.decode_rate),
        ready_delay_us: k.ready_delay.get_or(base.ready_delay_us),
        attention_rate: k.attention_rate.get_or(base.attention_rate),
    };
    let rates = [
        ("prefill_rate", &l.prefill_rate),
        ("cached_rate", &l.cached_rate),
        ("decode_rate", &l.decode_rate),
        ("attention_rate", &l.attention_rate),
    ];
    for (key, dist) in rates {
        if matches!(dist, Dist::Const(x) if *x <= 0.0) {
            return Err(s.bad(key, "\"const(0)\"", "a rate must be positive"));
        }
    }
    Ok(l)
}

impl RateLimitsSection {
    /// `cached_count`: whether cache reads count toward ITPM unless the file says (OpenAI
    /// counts cached tokens toward TPM).
    fn validate(self, cached_count: bool, at: At) -> Result<RateLimits, ConfigError> {
        let r = RateLimits {
            rpm: self.rpm.get_or(4_000),
            itpm: self.itpm.get_or(2_000_000),
            otpm: self.otpm.get_or(400_000),
            cache_reads_count: self.cache_reads_count.get_or(cached_count),
            retry_jitter_us: self.retry_jitter.get_or(Dist::Uniform { low: 0.0, high: 1e6 }),
            parent_counts: self.parent_counts.get_or(false),
            interval_us: self.interval.get_or(US_PER_MIN),
        };
        if r.interval_us == 0 || r.interval_us > US_PER_MIN {
            let value = format!("\"{}\"", crate::time::exact_duration(r.interval_us));
            let why = "enforce a per-minute limit over at most 1min (> 0)";
            return Err(at.bad("rate_limits.interval", value, why));
        }
        Ok(r)
    }
}

impl OverloadSection {
    fn validate(self) -> Overload {
        Overload {
            probability: self.probability.get_or(0.0),
            max_retries: self.max_retries.get_or(2),
            initial_backoff_us: self.initial_backoff.get_or(500_000),
            max_backoff_us: self.max_backoff.get_or(8 * US_PER_S),
        }
    }
}

impl LimitsSection {
    /// The run's bounds; the work limits are the CLI's (`WorkLimits::from_table`).
    fn validate(self) -> RunLimits {
        RunLimits {
            max_events: self.max_events.get_or(100_000_000),
            horizon_us: self.horizon.get_or(24 * US_PER_H),
        }
    }
}
