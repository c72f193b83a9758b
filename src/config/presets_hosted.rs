//! Model presets of the hosted providers other than Anthropic (OpenAI, Gemini): prices,
//! cache multipliers, minimum cacheable length, the window the standard prices cover, and the
//! cache policy each model is served under. Every number and its source: docs/providers.md.
//!
//! Write multipliers: 1.0 where a write costs the input price (classic OpenAI; Gemini, whose
//! explicit cache creation bills the standard input price), 1.25 on the GPT-5.6 breakpoint
//! contract, whose 12-hour retention bills 2.5x (carried as the 1h-class multiplier, the slot
//! the `openai` policy bills that retention's writes in). Context windows: the input length
//! below which the listed (standard) prices apply; there is no long-context offer here.

use crate::cache::{ModelParams, OpenAiContract, Policy, ThinkingHistory};

/// A preset: name; input, output ($/MTok), read multiplier, write multiplier, storage
/// ($/MTok-hour); minimum cacheable tokens; context window; the policy it is served under; the
/// model whose calibrated latency it borrows (no measurements of these models).
type Row = (&'static str, (f64, f64, f64, f64, f64), u64, u64, Policy, &'static str);

const M1: u64 = 1_048_576;
const HAIKU: &str = "claude-haiku-4.5";
const SONNET: &str = "claude-sonnet-4.5";
use Policy::{Gemini, OpenAi};

/// Sorted by name.
const PRESETS: [Row; 6] = [
    ("gemini-2.5-flash", (0.30, 2.50, 0.1, 1.0, 1.00), 2048, M1, Gemini, HAIKU),
    // The pricing page's standard rates, below 200k input tokens (2x above).
    ("gemini-3.1-pro-preview", (2.00, 12.00, 0.1, 1.0, 4.50), 4096, 200_000, Gemini, SONNET),
    // The list prices from 2027-01-01 (introductory prices until then are half).
    ("gemini-3.8-flash", (1.50, 7.50, 0.1, 1.0, 1.00), 4096, M1, Gemini, HAIKU),
    // Standard tier below 270k input tokens.
    ("gpt-5.4", (2.50, 15.00, 0.1, 1.0, 0.0), 1024, 270_000, OpenAi, SONNET),
    // Standard tier below 272k input tokens (the price cut of 2026-07-30).
    ("gpt-5.6-luna", (0.20, 1.20, 0.1, 1.25, 0.0), 1024, 272_000, OpenAi, HAIKU),
    ("gpt-5.6-terra", (2.00, 12.00, 0.1, 1.25, 0.0), 1024, 272_000, OpenAi, SONNET),
];

/// The 12-hour retention's write multiplier on the breakpoint contract.
const EXTENDED_WRITE_MULTIPLIER: f64 = 2.5;

/// The preset called exactly `name`, or `None`.
pub fn preset(name: &str) -> Option<ModelParams> {
    let &(name, prices, min_cacheable_tokens, context_window_tokens, policy, _) =
        PRESETS.iter().find(|p| p.0 == name)?;
    let (input, output, read, write, storage) = prices;
    let extended = match contract_of(name) {
        OpenAiContract::Breakpoints if policy == OpenAi => EXTENDED_WRITE_MULTIPLIER,
        _ => write,
    };
    Some(ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: input,
        output_usd_per_mtok: output,
        read_multiplier: read,
        write_5m_multiplier: write,
        write_1h_multiplier: extended,
        storage_usd_per_mtok_hour: storage,
        min_cacheable_tokens,
        context_window_tokens,
        long_context: None,
        use_long_context: false,
        thinking: ThinkingHistory::None,
        rate_limit_class: name.to_string(),
    })
}

/// Every preset name here, sorted.
pub fn names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|p| p.0)
}

/// The policy the preset called exactly `name` is served under, if it is one of these.
pub fn policy(name: &str) -> Option<Policy> {
    PRESETS.iter().find(|p| p.0 == name).map(|p| p.4)
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

/// The calibrated model a hosted preset borrows its latency from.
pub fn latency_sibling(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|p| p.0 == name).map(|p| p.5)
}
