//! Model presets the config resolver accepts: the cache core's table (`cache::preset`, prices
//! and minimum cacheable lengths from the prompt-caching and pricing docs (platform.claude.com/docs/en/build-with-claude/prompt-caching, /about-claude/pricing)). Every field is overridable
//! under `[model_params]`.

use super::experiment::ModelParams;

/// The preset called `name`, if there is one.
pub fn preset(name: &str) -> Option<ModelParams> {
    crate::cache::preset(name)
}

/// Every preset name (for error messages).
pub fn preset_names() -> impl Iterator<Item = &'static str> {
    crate::cache::preset_names().into_iter()
}
