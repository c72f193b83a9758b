//! Model presets (prices, cache multipliers, minimum cacheable length, context window, how
//! the model treats earlier turns' thinking blocks, its rate-limit class): the values an
//! experiment's `model = "..."` starts from. Every rule and its public source: docs/anthropic.md.
//!
//! Prices: the prompt-caching and pricing pages' tables. Minimum cacheable lengths: the NEWER
//! prompt-caching page ("these minimums apply on every platform"); the older version differs
//! for Sonnet 4.6 (2,048 instead of 1,024, and a user report agrees with 2,048): we carry the
//! newer 1,024 and the user overrides `model_params.min_cacheable_tokens`. Context windows:
//! the context-windows page (1M on the 4.6 generation and later, 200k on the others). Earlier
//! turns' thinking: the extended-thinking page (kept from Opus 4.5 and Sonnet 4.6 on, stripped
//! on earlier models and Haiku; Fable and Mythos are taken to keep them, an inference).
//! Rate-limit classes: the rate-limits page's combined tables ("Opus 4.x", "Sonnet 4.x",
//! "Fable 5.x"). Every field is overridable by the experiment file.

use super::model_ids::name_for_api_id;
use super::presets_hosted;
use crate::cache::Policy;
use crate::cache::{LongContext, ModelParams, ThinkingHistory};

/// A preset: name, (input $/MTok, output $/MTok, read multiplier), minimum cacheable tokens,
/// context window, earlier turns' thinking, rate-limit class.
type Row = (&'static str, (f64, f64, f64), u64, u64, ThinkingHistory, &'static str);

const K200: u64 = 200_000;
const M1: u64 = 1_000_000;
use ThinkingHistory::{Kept, None as NoThinking, Stripped};

/// The presets, sorted by name.
const PRESETS: [Row; 17] = [
    ("claude-fable-5", (10.0, 50.0, 0.1), 512, M1, Kept, "fable-5.x"),
    ("claude-fable-5.1", (10.0, 50.0, 0.025), 512, M1, Kept, "fable-5.x"),
    ("claude-haiku-3.5", (0.80, 4.0, 0.1), 2048, K200, NoThinking, "haiku-3.5"),
    ("claude-haiku-4.5", (1.0, 5.0, 0.1), 4096, K200, Stripped, "haiku-4.5"),
    ("claude-mythos-5", (10.0, 50.0, 0.1), 512, M1, Kept, "mythos-5"),
    ("claude-mythos-5.1", (10.0, 50.0, 0.025), 512, M1, Kept, "mythos-5.1"),
    ("claude-opus-4", (15.0, 75.0, 0.1), 1024, K200, Stripped, "opus-4.x"),
    ("claude-opus-4.1", (15.0, 75.0, 0.1), 1024, K200, Stripped, "opus-4.x"),
    ("claude-opus-4.5", (5.0, 25.0, 0.1), 4096, K200, Kept, "opus-4.x"),
    ("claude-opus-4.6", (5.0, 25.0, 0.1), 4096, M1, Kept, "opus-4.x"),
    ("claude-opus-4.7", (5.0, 25.0, 0.1), 2048, M1, Kept, "opus-4.x"),
    ("claude-opus-4.8", (5.0, 25.0, 0.1), 1024, M1, Kept, "opus-4.x"),
    ("claude-opus-5", (5.0, 25.0, 0.1), 512, M1, Kept, "opus-5"),
    ("claude-sonnet-4", (3.0, 15.0, 0.1), 1024, K200, Stripped, "sonnet-4.x"),
    ("claude-sonnet-4.5", (3.0, 15.0, 0.1), 1024, K200, Stripped, "sonnet-4.x"),
    ("claude-sonnet-4.6", (3.0, 15.0, 0.1), 1024, M1, Kept, "sonnet-4.x"),
    ("claude-sonnet-5", (2.0, 10.0, 0.1), 1024, M1, Kept, "sonnet-5"),
];

/// 5-minute and 1-hour write multipliers, the same on every model (the prompt-caching page).
const WRITE_5M_MULTIPLIER: f64 = 1.25;
const WRITE_1H_MULTIPLIER: f64 = 2.0;

/// The preset called `name` (or named by an API id such as `claude-sonnet-4-5-20250929`; see
/// `model_ids`), or `None`.
pub fn preset(name: &str) -> Option<ModelParams> {
    let name = preset_for_api_id(name)?;
    let Some(&(name, (input, output, read), min, window, thinking, class)) =
        PRESETS.iter().find(|p| p.0 == name)
    else {
        return presets_hosted::preset(name);
    };
    Some(ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: input,
        output_usd_per_mtok: output,
        read_multiplier: read,
        write_5m_multiplier: WRITE_5M_MULTIPLIER,
        write_1h_multiplier: WRITE_1H_MULTIPLIER,
        storage_usd_per_mtok_hour: 0.0,
        min_cacheable_tokens: min,
        context_window_tokens: window,
        long_context: long_context_offer(name),
        use_long_context: false,
        thinking,
        rate_limit_class: class.to_string(),
    })
}

/// A model that is no preset, before its `[model_params]`: no prices, a 200k window, no
/// long-context offer, thinking kept, its own rate-limit buckets.
pub fn unlisted(name: &str) -> ModelParams {
    ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: 0.0,
        output_usd_per_mtok: 0.0,
        read_multiplier: 0.0,
        write_5m_multiplier: 0.0,
        write_1h_multiplier: 0.0,
        storage_usd_per_mtok_hour: 0.0,
        min_cacheable_tokens: 0,
        context_window_tokens: K200,
        long_context: None,
        use_long_context: false,
        thinking: ThinkingHistory::Kept,
        rate_limit_class: name.to_string(),
    }
}

/// The larger window a model offers on request: Sonnet 4 and Sonnet 4.5 served 1M tokens in
/// beta (the `context-1m-2025-08-07` header), input above 200k priced at 2x and output at
/// 1.5x (the pricing page's "Long context pricing": $6 / $22.50 per MTok against $3 / $15).
/// The bundled traces hold Sonnet 4.5 requests of up to 252k tokens that the API served. An
/// experiment uses it only when it opts in (`model_params.long_context = true`); a replay of
/// recorded traffic accepts requests up to it, since the API did.
fn long_context_offer(name: &str) -> Option<LongContext> {
    matches!(name, "claude-sonnet-4" | "claude-sonnet-4.5").then_some(LongContext {
        window_tokens: 1_000_000,
        threshold_tokens: 200_000,
        input_multiplier: 2.0,
        output_multiplier: 1.5,
    })
}

/// Every preset name (Anthropic's, then the other providers' of `presets_hosted`), sorted.
pub fn preset_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = PRESETS.iter().map(|p| p.0).collect();
    names.extend(presets_hosted::names());
    names.sort_unstable();
    names
}

/// The preset named by `id`: the preset name itself, or an API model id (`model_ids`).
pub fn preset_for_api_id(id: &str) -> Option<&'static str> {
    name_for_api_id(id, &preset_names())
}

/// The policy a preset's model is served under: `openai` for GPT presets, `gemini` for
/// Gemini presets, `anthropic` for every other preset; `None` for a name that is no preset
/// (a model described by its prices only, under any policy).
pub fn natural_policy(preset_name: &str) -> Option<Policy> {
    presets_hosted::policy(preset_name).or_else(|| preset(preset_name).map(|_| Policy::Anthropic))
}

/// The preset of a model name as traces and request bodies spell it: the same as `preset`,
/// which accepts every API id (`model_ids`); kept as the readers' name for it.
pub fn preset_for(name: &str) -> Option<ModelParams> {
    preset(name)
}
