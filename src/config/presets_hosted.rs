//! What the hosted providers other than Anthropic (OpenAI, Gemini) add to their presets: the
//! default preset of each policy, OpenAI's caching contract by model family, and the
//! calibrated model each preset borrows its latency from. The rows themselves (prices,
//! windows, tiers, sources) are `presets.toml`'s; every rule: docs/providers.md.

use super::presets::{row, table};
use crate::cache::{OpenAiContract, Policy};

/// Every preset served under another policy than `anthropic`, sorted.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn names() -> impl Iterator<Item = &'static str> {
    let hosted = |p: &&super::presets::Preset| policy(&p.name).is_some();
    table().iter().filter(hosted).map(|p| p.name.as_str())
}

/// The policy the preset called exactly `name` is served under, if it is OpenAI's or Gemini's.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn policy(name: &str) -> Option<Policy> {
    let p = row(name)?;
    Some(super::models::policy(&p.def)).filter(|p| matches!(p, Policy::OpenAi | Policy::Gemini))
}

/// The preset a policy runs when the experiment names no model.
pub fn default_model(policy: Policy) -> Option<&'static str> {
    match policy {
        Policy::OpenAi => Some("gpt-5.4"),
        Policy::Gemini => Some("gemini-2.5-flash"),
        Policy::Anthropic | Policy::EveryBlock | Policy::Vllm | Policy::Sglang => None,
    }
}

/// OpenAI's contract for a model: the breakpoint contract from the GPT-5.6 family on.
pub fn contract_of(model: &str) -> OpenAiContract {
    let later = ["gpt-5.6", "gpt-5.7", "gpt-5.8", "gpt-5.9", "gpt-6"];
    match later.iter().any(|p| model.starts_with(p)) {
        true => OpenAiContract::Breakpoints,
        false => OpenAiContract::Classic,
    }
}

/// The calibrated model a hosted preset borrows its latency from (its row's `latency_from`,
/// as `latency_presets::borrowed` lists for every preset).
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn latency_sibling(name: &str) -> Option<&'static str> {
    policy(name)?;
    row(name)?.def.latency_from.as_deref()
}
