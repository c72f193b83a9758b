//! The price formula of a request on a model (the presets themselves are config's,
//! `config::presets`). Every rule and its public source: docs/anthropic.md.

use super::Usage;
use crate::config::ModelParams;

/// docs/cache.md: `input * (uncached + w5m * write_5m + w1h * write_1h + r * read) + output *
/// output_tokens`, prices per million tokens, plus explicit cache storage (Gemini:
/// `storage_usd_per_mtok_hour` x the token-hours the request bought). With a long context window in use
/// (`use_long_context`), a request whose input (read + written + uncached) exceeds the
/// threshold pays the long-context prices on all its tokens.
pub fn cost_usd(model: &ModelParams, usage: &Usage, output_tokens: u64) -> f64 {
    let input_units = usage.uncached as f64
        + model.write_5m_multiplier * usage.cache_write_5m as f64
        + model.write_1h_multiplier * usage.cache_write_1h as f64
        + model.read_multiplier * usage.cache_read as f64;
    let (input, output) = prices(model, usage.total());
    (input * input_units + output * output_tokens as f64) / 1e6 + storage_usd(model, usage)
}

/// The explicit cache storage a request bought (0 unless it created a Gemini cache object).
pub fn storage_usd(model: &ModelParams, usage: &Usage) -> f64 {
    match usage.storage_token_s {
        0 => 0.0,
        s => model.storage_usd_per_mtok_hour * s as f64 / 3600.0 / 1e6,
    }
}

/// What the same request would cost with no caching at all (every input token at base price).
pub fn uncached_cost_usd(model: &ModelParams, usage: &Usage, output_tokens: u64) -> f64 {
    let (input, output) = prices(model, usage.total());
    (input * usage.total() as f64 + output * output_tokens as f64) / 1e6
}

/// The input and output prices ($/MTok) of a request with `input_tokens` of input.
fn prices(model: &ModelParams, input_tokens: u64) -> (f64, f64) {
    match &model.long_context {
        Some(l) if model.use_long_context && input_tokens > l.threshold_tokens => (
            model.input_usd_per_mtok * l.input_multiplier,
            model.output_usd_per_mtok * l.output_multiplier,
        ),
        _ => (model.input_usd_per_mtok, model.output_usd_per_mtok),
    }
}

/// Whether a request of `input_tokens` pays the long-context prices.
pub fn is_long_context(model: &ModelParams, input_tokens: u64) -> bool {
    model.use_long_context
        && model.long_context.as_ref().is_some_and(|l| input_tokens > l.threshold_tokens)
}
