//! The hosted providers' part of resolving an experiment: `cache.policy` against the model's
//! provider, and the `[openai]` and `[gemini]` sections (docs/providers.md).
//!
//! The policy and the model default to each other: a file naming neither runs `anthropic` on
//! Claude Sonnet 4.5; naming only a preset runs that preset's provider's policy; naming only
//! `cache.policy = "openai"` (or `"gemini"`) runs that provider's default preset (`gpt-5.4`,
//! `gemini-2.5-flash`). A preset of one provider under another provider's policy is an error
//! (exit 2); `every-block` (a what-if) runs on any model, and a model given by its prices only
//! (no preset) runs under any policy.

use super::{ConfigError, Section};
use crate::config::presets_hosted::{
    contract_of, default_model as preset_for_policy, natural_policy,
};
use crate::config::{
    GeminiMode, GeminiParams, HostedParams, ModelParams, OpenAiContract, OpenAiParams,
    OpenAiRetention, Policy,
};
use crate::time::US_PER_H;

/// Every policy name `cache.policy` accepts.
const POLICIES: [&str; 6] = ["anthropic", "every-block", "openai", "gemini", "vllm", "sglang"];

fn parse_policy(text: &str) -> Option<Policy> {
    match text {
        "anthropic" => Some(Policy::Anthropic),
        "every-block" | "every_block" => Some(Policy::EveryBlock),
        "openai" => Some(Policy::OpenAi),
        "gemini" => Some(Policy::Gemini),
        "vllm" => Some(Policy::Vllm),
        "sglang" => Some(Policy::Sglang),
        _ => None,
    }
}

/// The model a file that names none runs: its policy's provider's default preset.
pub(super) fn default_model(table: &toml::Table) -> Option<&'static str> {
    let cache = table.get("cache")?.as_table()?;
    let policy = parse_policy(cache.get("policy")?.as_str()?)?;
    preset_for_policy(policy)
}

/// `cache.policy`: given, checked against the model's provider; absent, the model's own.
pub(super) fn resolve_policy(
    s: &mut Section<'_>,
    model: &ModelParams,
) -> Result<Policy, ConfigError> {
    let natural = natural_policy(&model.name);
    let Some(text) = s.get("policy").map(|_| s.string("policy", "")).transpose()? else {
        return Ok(natural.unwrap_or(Policy::Anthropic));
    };
    let Some(policy) = parse_policy(&text) else {
        let reason = format!("use one of {}", quoted_list(&POLICIES));
        return Err(s.bad_str("policy", &text, &reason));
    };
    match natural {
        // Every-block (a what-if) and self-hosted servers run any model's tokens.
        Some(n) if n != policy && !policy_runs_any_model(policy) => {
            let fix = match preset_for_policy(policy) {
                Some(m) => format!(" (e.g. --set model={m})"),
                None => " (e.g. --set model=claude-sonnet-4.5)".to_string(),
            };
            let reason = format!(
                "model {} is served under the `{}` policy; name a model of that provider{fix}",
                model.name,
                n.name()
            );
            Err(s.bad_str("policy", &text, &reason))
        }
        _ => Ok(policy),
    }
}

/// `every-block` and the self-hosted servers are not tied to a provider's models.
fn policy_runs_any_model(policy: Policy) -> bool {
    matches!(policy, Policy::EveryBlock | Policy::Vllm | Policy::Sglang)
}

fn quoted_list(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

/// `[openai]` and `[gemini]`: always checked (so that a sweep over policies may carry them),
/// read only by their policy.
pub(super) fn resolve_hosted(
    top: &mut Section<'_>,
    policy: Policy,
    model: &ModelParams,
) -> Result<HostedParams, ConfigError> {
    let openai = resolve_openai(&mut top.section("openai")?, policy, model)?;
    let gemini = resolve_gemini(&mut top.section("gemini")?)?;
    Ok(HostedParams { openai, gemini })
}

fn resolve_openai(
    s: &mut Section<'_>,
    policy: Policy,
    model: &ModelParams,
) -> Result<OpenAiParams, ConfigError> {
    let preset = contract_of(&model.name);
    let contract = match s.string("contract", preset.name())?.as_str() {
        "classic" => OpenAiContract::Classic,
        "breakpoints" => OpenAiContract::Breakpoints,
        other => return Err(s.bad_str("contract", other, "use \"classic\" or \"breakpoints\"")),
    };
    let d = OpenAiParams::defaults(contract);
    let text = s.string("retention", d.retention.name())?;
    let retention = OpenAiRetention::parse(&text)
        .filter(|r| r.fits(contract) || policy != Policy::OpenAi)
        .ok_or_else(|| {
            let offered = match contract {
                OpenAiContract::Classic => "\"in_memory\" or \"24h\"",
                OpenAiContract::Breakpoints => "\"30m\" or \"12h\"",
            };
            let why = format!("the {} contract offers {offered}", contract.name());
            s.bad_str("retention", &text, &why)
        })?;
    let p = OpenAiParams {
        contract,
        retention,
        in_memory_idle_us: s.duration_us("in_memory_idle", d.in_memory_idle_us)?,
        increment_tokens: s.u64("increment_tokens", d.increment_tokens)?,
        route_tokens: s.u64("route_tokens", d.route_tokens)?,
        machines: s.u32_min("machines", d.machines, 1)?,
        overflow_per_minute: s.u32_min("overflow_per_minute", d.overflow_per_minute, 1)?,
        overflow_window_us: s.duration_us("overflow_window", d.overflow_window_us)?,
    };
    if p.in_memory_idle_us == 0 || p.in_memory_idle_us > US_PER_H {
        let value = format!("\"{}\"", crate::time::exact_duration(p.in_memory_idle_us));
        let why = "in-memory caches are always removed within 1h of their last use (> 0)";
        return Err(s.bad("in_memory_idle", value, why));
    }
    if p.increment_tokens == 0 {
        return Err(s.bad("increment_tokens", "0".into(), "a hit grows by at least 1 token"));
    }
    if p.machines > 1024 {
        return Err(s.bad("machines", p.machines.to_string(), "at most 1024 machines"));
    }
    if p.overflow_per_minute > 100_000 {
        let v = p.overflow_per_minute.to_string();
        return Err(s.bad("overflow_per_minute", v, "at most 100000 requests"));
    }
    if p.overflow_window_us == 0 {
        return Err(s.bad("overflow_window", "\"0s\"".into(), "a window lasts more than 0s"));
    }
    s.finish()?;
    Ok(p)
}

fn resolve_gemini(s: &mut Section<'_>) -> Result<GeminiParams, ConfigError> {
    let d = GeminiParams::default();
    let mode = match s.string("mode", d.mode.name())?.as_str() {
        "implicit" => GeminiMode::Implicit,
        "explicit" => GeminiMode::Explicit,
        other => return Err(s.bad_str("mode", other, "use \"implicit\" or \"explicit\"")),
    };
    let p = GeminiParams {
        mode,
        implicit_hit_probability: s
            .share("implicit_hit_probability", d.implicit_hit_probability)?,
        implicit_ttl_us: s.duration_us("implicit_ttl", d.implicit_ttl_us)?,
        explicit_ttl_us: s.duration_us("explicit_ttl", d.explicit_ttl_us)?,
    };
    for (key, us) in [("implicit_ttl", p.implicit_ttl_us), ("explicit_ttl", p.explicit_ttl_us)] {
        if us == 0 {
            return Err(s.bad(key, "\"0s\"".into(), "an entry lives more than 0s"));
        }
    }
    s.finish()?;
    Ok(p)
}
