//! Model presets (prices, cache multipliers, minimum cacheable length) and the price formula.
//!
//! Prices: FACTS.md section 3 (the [PC] pricing table, newer version). Minimum cacheable
//! lengths: FACTS.md section 1, the NEWER doc version ("these minimums apply on every platform").
//! The older version differs for Sonnet 4.6 (2,048 instead of 1,024, and a user report agrees
//! with 2,048): we carry the newer 1,024 and the user overrides `model.min_cacheable_tokens`.
//! Every field is overridable by the experiment file; rate limits live in the config's presets.

use super::Usage;
use crate::config::ModelParams;

/// (name, input $/MTok, output $/MTok, read multiplier, minimum cacheable tokens), sorted by name.
const PRESETS: [(&str, f64, f64, f64, u64); 17] = [
    ("claude-fable-5", 10.0, 50.0, 0.1, 512),
    ("claude-fable-5.1", 10.0, 50.0, 0.025, 512),
    ("claude-haiku-3.5", 0.80, 4.0, 0.1, 2048),
    ("claude-haiku-4.5", 1.0, 5.0, 0.1, 4096),
    ("claude-mythos-5", 10.0, 50.0, 0.1, 512),
    ("claude-mythos-5.1", 10.0, 50.0, 0.025, 512),
    ("claude-opus-4", 15.0, 75.0, 0.1, 1024),
    ("claude-opus-4.1", 15.0, 75.0, 0.1, 1024),
    ("claude-opus-4.5", 5.0, 25.0, 0.1, 4096),
    ("claude-opus-4.6", 5.0, 25.0, 0.1, 4096),
    ("claude-opus-4.7", 5.0, 25.0, 0.1, 2048),
    ("claude-opus-4.8", 5.0, 25.0, 0.1, 1024),
    ("claude-opus-5", 5.0, 25.0, 0.1, 512),
    ("claude-sonnet-4", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-4.5", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-4.6", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-5", 2.0, 10.0, 0.1, 1024),
];

/// 5-minute and 1-hour write multipliers, the same on every model (FACTS.md section 3).
const WRITE_5M_MULTIPLIER: f64 = 1.25;
const WRITE_1H_MULTIPLIER: f64 = 2.0;

/// The preset called `name` (or named by an API id such as `claude-sonnet-4-5-20250929`; see
/// `model_ids`), or `None`.
pub fn preset(name: &str) -> Option<ModelParams> {
    let name = super::model_ids::preset_for_api_id(name)?;
    PRESETS.iter().find(|p| p.0 == name).map(|&(name, input, output, read, min)| ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: input,
        output_usd_per_mtok: output,
        read_multiplier: read,
        write_5m_multiplier: WRITE_5M_MULTIPLIER,
        write_1h_multiplier: WRITE_1H_MULTIPLIER,
        min_cacheable_tokens: min,
    })
}

/// Every preset name, sorted.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}

/// SPEC.md 3.4: `input * (uncached + w5m * write_5m + w1h * write_1h + r * read) + output *
/// output_tokens`, prices per million tokens.
pub fn cost_usd(model: &ModelParams, usage: &Usage, output_tokens: u64) -> f64 {
    let input_units = usage.uncached as f64
        + model.write_5m_multiplier * usage.cache_write_5m as f64
        + model.write_1h_multiplier * usage.cache_write_1h as f64
        + model.read_multiplier * usage.cache_read as f64;
    (model.input_usd_per_mtok * input_units + model.output_usd_per_mtok * output_tokens as f64)
        / 1e6
}

/// What the same request would cost with no caching at all (every input token at base price).
pub fn uncached_cost_usd(model: &ModelParams, usage: &Usage, output_tokens: u64) -> f64 {
    (model.input_usd_per_mtok * usage.total() as f64
        + model.output_usd_per_mtok * output_tokens as f64)
        / 1e6
}
