//! Model presets the config resolver accepts (prices and minimum cacheable length from
//! FACTS.md sections 1 and 3). A local copy until the cache core's `cache::preset` is merged;
//! the names and numbers are the same.

use super::experiment::ModelParams;

/// `(name, input $/MTok, output $/MTok, read multiplier, minimum cacheable tokens)`.
/// Writes are 1.25x (5 min) and 2x (1 h) on every model (FACTS.md section 3).
const PRESETS: [(&str, f64, f64, f64, u64); 17] = [
    ("claude-fable-5.1", 10.0, 50.0, 0.025, 512),
    ("claude-mythos-5.1", 10.0, 50.0, 0.025, 512),
    ("claude-fable-5", 10.0, 50.0, 0.1, 512),
    ("claude-mythos-5", 10.0, 50.0, 0.1, 512),
    ("claude-opus-5", 5.0, 25.0, 0.1, 512),
    ("claude-opus-4.8", 5.0, 25.0, 0.1, 1024),
    ("claude-opus-4.7", 5.0, 25.0, 0.1, 2048),
    ("claude-opus-4.6", 5.0, 25.0, 0.1, 4096),
    ("claude-opus-4.5", 5.0, 25.0, 0.1, 4096),
    ("claude-opus-4.1", 15.0, 75.0, 0.1, 1024),
    ("claude-opus-4", 15.0, 75.0, 0.1, 1024),
    ("claude-sonnet-5", 2.0, 10.0, 0.1, 1024),
    ("claude-sonnet-4.6", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-4.5", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-4", 3.0, 15.0, 0.1, 1024),
    ("claude-haiku-4.5", 1.0, 5.0, 0.1, 4096),
    ("claude-haiku-3.5", 0.8, 4.0, 0.1, 2048),
];

/// The preset called `name`, if there is one.
pub fn preset(name: &str) -> Option<ModelParams> {
    PRESETS.iter().find(|p| p.0 == name).map(|&(name, input, output, read, min)| ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: input,
        output_usd_per_mtok: output,
        read_multiplier: read,
        write_5m_multiplier: 1.25,
        write_1h_multiplier: 2.0,
        min_cacheable_tokens: min,
    })
}

/// Every preset name, in table order (for error messages).
pub fn preset_names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|p| p.0)
}
