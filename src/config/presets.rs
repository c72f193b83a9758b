//! Model presets: the values an experiment's `model = "..."` starts from (prices, cache
//! multipliers, minimum cacheable length, context window and price tier, how the model treats
//! earlier turns' thinking, its rate-limit class, the policy it is served under). They are the
//! rows of `presets.toml`, one `[models."name"]` table each in the schema of a user-defined
//! model (`models::ModelDef`), each with its source URL and the day it was checked; read once.
//! The rules behind them: docs/anthropic.md, docs/providers.md; every row: docs/models.md.
//! Every field is overridable by the experiment file (`[model_params]`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::error::At;
use super::model_ids::name_for_api_id;
use super::models::{self, ModelDef};
use crate::cache::Policy;
use crate::cache::{ModelParams, ThinkingHistory};

/// One row of the table: its name, its definition as written (source and date included) and
/// the parameters it gives.
#[derive(Debug)]
pub struct Preset {
    pub name: String,
    pub def: ModelDef,
    pub params: ModelParams,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    models: BTreeMap<String, ModelDef>,
}

/// Every preset, sorted by name (`presets.toml`, embedded and read once).
pub fn table() -> &'static [Preset] {
    static TABLE: OnceLock<Vec<Preset>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let table: Table = match toml::from_str(include_str!("presets.toml")) {
            Ok(t) => t,
            Err(e) => unreachable!("the embedded presets.toml reads: {e}"),
        };
        let origin = "presets.toml";
        let rows = table.models.into_iter().map(|(name, def)| {
            let prefix = format!("models.{name}.");
            let params = models::params(&name, &def, At { origin, prefix: &prefix });
            match params {
                Ok(params) => Preset { name, def, params },
                Err(e) => unreachable!("every embedded preset is valid: {e}"),
            }
        });
        rows.collect()
    })
}

/// The row called exactly `name`.
pub fn row(name: &str) -> Option<&'static Preset> {
    table().iter().find(|p| p.name == name)
}

/// The preset called `name` (or named by an API id such as `claude-sonnet-4-5-20250929`; see
/// `model_ids`), or `None`.
pub fn preset(name: &str) -> Option<ModelParams> {
    let name = preset_for_api_id(name)?;
    row(name).map(|p| p.params.clone())
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
        context_window_tokens: 200_000,
        long_context: None,
        use_long_context: false,
        thinking: ThinkingHistory::Kept,
        rate_limit_class: name.to_string(),
        itpm_counts_cache_reads: false,
    }
}

/// Every preset name (every provider's), sorted.
pub fn preset_names() -> Vec<&'static str> {
    table().iter().map(|p| p.name.as_str()).collect()
}

/// The preset named by `id`: the preset name itself, or an API model id (`model_ids`).
pub fn preset_for_api_id(id: &str) -> Option<&'static str> {
    name_for_api_id(id, &preset_names())
}

/// The policy a preset's model is served under (the row's `policy`); `None` for a name that
/// is no preset (a model described by its prices only, under any policy).
pub fn natural_policy(preset_name: &str) -> Option<Policy> {
    row(preset_for_api_id(preset_name)?).map(|p| models::policy(&p.def))
}

/// The preset of a model name as traces and request bodies spell it: the same as `preset`,
/// which accepts every API id (`model_ids`); kept as the readers' name for it.
pub fn preset_for(name: &str) -> Option<ModelParams> {
    preset(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row states where it comes from and when it was read.
    #[test]
    fn every_row_has_a_source_and_a_date() {
        for p in table() {
            let source = p.def.source.as_deref().unwrap_or_default();
            assert!(source.starts_with("https://"), "{}: {source}", p.name);
            let checked = p.def.checked.as_deref().unwrap_or_default();
            let date = checked.split('-').map(|n| n.parse::<u32>().ok()).collect::<Vec<_>>();
            assert!(date.len() == 3 && date.iter().all(Option::is_some), "{}", p.name);
            assert!(p.def.read.is_some(), "{}", p.name);
        }
    }

    /// A price tier is a tier: the window stays the model's, the tier applies above its
    /// threshold without opting in.
    #[test]
    fn tiers_are_tiers_and_windows_are_windows() {
        for (name, window, threshold) in [
            ("gpt-5.4", 1_050_000, 272_000),
            ("gemini-3.1-pro-preview", 1_048_576, 200_000),
            ("claude-haiku-5.5", 1_000_000, 100_000),
        ] {
            let m = preset(name).unwrap();
            assert_eq!(m.window_tokens(), window, "{name}");
            let tier = m.long_context.as_ref().unwrap();
            assert!(m.use_long_context && tier.threshold_tokens == threshold, "{name}");
        }
        let sonnet = preset("claude-sonnet-4.5").unwrap();
        assert!(!sonnet.use_long_context && sonnet.window_tokens() == 200_000);
    }
}
