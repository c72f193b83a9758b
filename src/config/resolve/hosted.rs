//! The hosted providers' part of resolving an experiment: `cache.policy` against the model's
//! provider, and the `[openai]` and `[gemini]` sections (docs/providers.md).
//!
//! The policy and the model default to each other: a file naming neither runs `anthropic` on
//! Claude Sonnet 4.5; naming only a preset runs that preset's provider's policy; naming only
//! `cache.policy = "openai"` (or `"gemini"`) runs that provider's default preset (`gpt-5.4`,
//! `gemini-2.5-flash`). A preset of one provider under another provider's policy is an error
//! (exit 2); `every-block` (a what-if) runs on any model, and a model given by its prices only
//! (no preset) runs under any policy.

use crate::cache::{
    GeminiParams, ModelParams, OpenAiContract, OpenAiParams, OpenAiRetention, Policy,
};
use crate::config::error::{At, ConfigError};
use crate::config::fields::GetOr;
use crate::config::file::{GeminiSection, OpenAiSection};
use crate::config::presets::natural_policy;
use crate::config::presets_hosted::{contract_of, default_model};
use crate::time::US_PER_H;

/// `cache.policy`: given, checked against the model's provider; absent, the model's own.
pub(super) fn policy(
    given: Option<Policy>,
    model: &ModelParams,
    s: At,
) -> Result<Policy, ConfigError> {
    let natural = natural_policy(&model.name);
    let Some(policy) = given else { return Ok(natural.unwrap_or(Policy::Anthropic)) };
    match natural {
        // Every-block (a what-if) and self-hosted servers run any model's tokens.
        Some(n) if n != policy && !matches!(policy, Policy::EveryBlock) && !policy.is_server() => {
            let fix = default_model(policy).unwrap_or("claude-sonnet-4.5");
            let reason = format!(
                "model {} is served under the `{}` policy; name a model of that provider (e.g. \
                 --set model={fix})",
                model.name,
                n.name()
            );
            Err(s.bad_str("policy", policy.name(), reason))
        }
        _ => Ok(policy),
    }
}

impl OpenAiSection {
    /// `[openai]`: always checked (so that a sweep over policies may carry it), read only by its
    /// policy.
    pub(super) fn validate(
        self,
        policy: Policy,
        model: &ModelParams,
        s: At,
    ) -> Result<OpenAiParams, ConfigError> {
        let contract = self.contract.map_or(contract_of(&model.name), |c| c.0);
        let d = OpenAiParams::defaults(contract);
        let text = self.retention.get_or(d.retention.name().to_string());
        let retention = OpenAiRetention::parse(&text)
            .filter(|r| r.fits(contract) || policy != Policy::OpenAi)
            .ok_or_else(|| {
                let offered = match contract {
                    OpenAiContract::Classic => "\"in_memory\" or \"24h\"",
                    OpenAiContract::Breakpoints => "\"30m\" or \"12h\"",
                };
                let why = format!("the {} contract offers {offered}", contract.name());
                s.bad_str("retention", &text, why)
            })?;
        let p = OpenAiParams {
            contract,
            retention,
            in_memory_idle_us: self.in_memory_idle.get_or(d.in_memory_idle_us),
            increment_tokens: self.increment_tokens.get_or(d.increment_tokens),
            route_tokens: self.route_tokens.get_or(d.route_tokens),
            machines: self.machines.get_or(d.machines),
            overflow_per_minute: self.overflow_per_minute.get_or(d.overflow_per_minute),
            overflow_window_us: self.overflow_window.get_or(d.overflow_window_us),
            overflow_probability: self.overflow_probability.get_or(d.overflow_probability),
            overflow_warm_probability: self
                .overflow_warm_probability
                .get_or(d.overflow_warm_probability),
            cache_key: self.cache_key.map_or(d.cache_key, |k| k.0),
            cache_key_shards: self.cache_key_shards.get_or(d.cache_key_shards),
        };
        if p.in_memory_idle_us == 0 || p.in_memory_idle_us > US_PER_H {
            let value = format!("\"{}\"", crate::time::exact_duration(p.in_memory_idle_us));
            let why = "in-memory caches are always removed within 1h of their last use (> 0)";
            return Err(s.bad("in_memory_idle", value, why));
        }
        if p.increment_tokens == 0 {
            return Err(s.bad("increment_tokens", 0, "a hit grows by at least 1 token"));
        }
        if p.machines > 1024 {
            return Err(s.bad("machines", p.machines, "at most 1024 machines"));
        }
        if p.overflow_per_minute > 100_000 {
            return Err(s.bad(
                "overflow_per_minute",
                p.overflow_per_minute,
                "at most 100000 requests",
            ));
        }
        if p.cache_key_shards > 100_000 {
            return Err(s.bad("cache_key_shards", p.cache_key_shards, "at most 100000 keys"));
        }
        if p.overflow_window_us == 0 {
            return Err(s.bad("overflow_window", "\"0s\"", "a window lasts more than 0s"));
        }
        Ok(p)
    }
}

impl GeminiSection {
    /// `[gemini]`: always checked, read only by its policy.
    pub(super) fn validate(self, s: At) -> Result<GeminiParams, ConfigError> {
        let d = GeminiParams::default();
        let p = GeminiParams {
            mode: self.mode.map_or(d.mode, |m| m.0),
            implicit_hit_probability: self
                .implicit_hit_probability
                .get_or(d.implicit_hit_probability),
            implicit_ttl_us: self.implicit_ttl.get_or(d.implicit_ttl_us),
            explicit_ttl_us: self.explicit_ttl.get_or(d.explicit_ttl_us),
        };
        for (key, us) in [("implicit_ttl", p.implicit_ttl_us), ("explicit_ttl", p.explicit_ttl_us)]
        {
            if us == 0 {
                return Err(s.bad(key, "\"0s\"", "an entry lives more than 0s"));
            }
        }
        Ok(p)
    }
}
