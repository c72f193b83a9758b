//! The experiment file as types: one struct per section, every key optional (absent: the
//! default its section's `validate` gives it), every unknown key refused. Fields are in the
//! order the "did you mean" hints try them. `resolve` reads a table into `ExperimentFile`;
//! `render` writes a resolved experiment back as one. The keys, their defaults and meaning: the
//! experiment-file reference, docs/experiments.md.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::experiment::Answer;
use super::fields::*;
use super::latency_presets::LatencyPreset;
use super::server::{Router, Sharing};
use crate::cache::{CacheKeyMode, GeminiMode, OpenAiContract, Policy, ThinkingHistory};

/// A price in USD per million tokens.
pub type Price = AtMost<MAX_PRICE_USD_PER_MTOK>;
/// A price multiplier (cache reads and writes, long-context input and output).
pub type Multiplier = AtMost<MAX_MULTIPLIER>;
/// A GPU's price in USD per hour.
pub type GpuPrice = AtMost<MAX_GPU_USD_PER_HOUR>;

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub name: Option<String>,
    pub question: Option<String>,
    pub model: Option<String>,
    /// User-defined models, `[models."name"]` (docs/models.md).
    #[cfg_attr(
        feature = "cli",
        schemars(with = "Option<BTreeMap<String, serde_json::Map<String, serde_json::Value>>>")
    )]
    pub models: Option<BTreeMap<String, toml::Table>>,
    /// A file of `[models."name"]` tables (`--models FILE`), relative to this file's directory.
    pub models_file: Option<String>,
    pub seed: Option<Int<0>>,
    pub replications: Option<Count<1>>,
    pub strategies: Option<Strategies>,
    pub model_params: Option<ModelSection>,
    pub cache: Option<CacheSection>,
    pub workload: Option<WorkloadSection>,
    pub latency: Option<LatencySection>,
    pub rate_limits: Option<RateLimitsSection>,
    pub overload: Option<OverloadSection>,
    pub limits: Option<LimitsSection>,
    /// The grid, read by the sweep code (`sweep_table`).
    #[serde(rename = "sweep", skip_serializing)]
    #[cfg_attr(
        feature = "cli",
        schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")
    )]
    pub _sweep: Option<serde::de::IgnoredAny>,
    pub plot: Option<PlotSection>,
    pub report: Option<ReportSection>,
    pub server: Option<ServerSection>,
    pub openai: Option<OpenAiSection>,
    pub gemini: Option<GeminiSection>,
}

/// `[model_params]`: each key overrides the model preset's value.
#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub input_usd_per_mtok: Option<Price>,
    pub output_usd_per_mtok: Option<Price>,
    pub read_multiplier: Option<Multiplier>,
    pub write_5m_multiplier: Option<Multiplier>,
    pub write_1h_multiplier: Option<Multiplier>,
    pub storage_usd_per_mtok_hour: Option<Price>,
    pub min_cacheable_tokens: Option<Tokens>,
    pub context_window_tokens: Option<Tokens>,
    pub rate_limit_class: Option<String>,
    pub thinking_history: Option<Name<ThinkingHistory>>,
    pub long_context_window_tokens: Option<Int<1>>,
    pub long_context_threshold_tokens: Option<Int<0>>,
    pub long_context_input_multiplier: Option<Multiplier>,
    pub long_context_output_multiplier: Option<Multiplier>,
    pub long_context: Option<bool>,
    pub itpm_counts_cache_reads: Option<bool>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    pub policy: Option<Name<Policy>>,
    pub ttl: Option<TtlText>,
    pub capacity_tokens: Option<Int<1>>,
    pub parent_ttl: Option<TtlText>,
    /// By agent kind name (`names::KIND_NAMES`).
    pub ttl_by_kind: Option<BTreeMap<String, TtlText>>,
    pub miss_probability: Option<Share>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    pub kind: Option<Kind>,
    pub agents: Option<Count<1>>,
    pub arrival_every: Option<Duration>,
    pub concurrency: Option<Count<1>>,
    pub parent_tokens: Option<Tokens>,
    pub parent_warm: Option<bool>,
    pub parent_idle: Option<Duration>,
    pub parent_turn_every: Option<Duration>,
    pub parent_turn_tokens: Option<TokenDist>,
    pub brief_tokens: Option<Tokens>,
    pub task_tokens: Option<Tokens>,
    pub subagent_tokens: Option<Tokens>,
    pub turns: Option<DistOf<NUMBER>>,
    pub output_tokens: Option<TokenDist>,
    pub output_max_tokens: Option<Int<1>>,
    pub tool_latency: Option<DistOf<DURATION>>,
    pub tool_result_tokens: Option<TokenDist>,
    pub tool_result_max_tokens: Option<Int<1>>,
    pub denied_call_share: Option<Share>,
    pub turn_blocks: Option<Blocks>,
    pub parent_exchange_blocks: Option<Blocks>,
    pub thinking: Option<bool>,
    pub parent_thinking: Option<bool>,
}

/// `[latency]` and the latency keys of one model (`[latency]`'s own, `[latency.other_model]`),
/// from one list of the keys.
macro_rules! latency_sections {
    ($($key:ident: $t:ty,)*) => {
        /// `[latency]`: a preset, a calibration file's table (`from`), then these keys.
        #[derive(Debug, Default, Deserialize, Serialize)]
        #[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub struct LatencySection {
            pub preset: Option<Name<LatencyPreset>>,
            #[cfg_attr(feature = "cli", schemars(with = "Option<serde_json::Value>"))]
            pub from: Option<toml::Value>,
            pub draw: Option<Int<0>>,
            $(pub $key: Option<$t>,)*
            /// The `fork_other_model` model's.
            pub other_model: Option<LatencyKeys>,
        }

        /// The latency keys of one model (`[latency]`'s own, `[latency.other_model]`).
        #[derive(Debug, Default, Deserialize, Serialize)]
        #[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub struct LatencyKeys {
            $(pub $key: Option<$t>,)*
        }

        impl LatencySection {
            /// `[latency]`'s own latency keys.
            pub fn keys(&mut self) -> LatencyKeys {
                LatencyKeys { $($key: self.$key.take(),)* }
            }

            /// A section of these keys, and `other_model`'s.
            pub fn of(keys: LatencyKeys, other_model: Option<LatencyKeys>) -> Self {
                LatencySection { $($key: keys.$key,)* other_model, ..Default::default() }
            }
        }
    };
}

latency_sections! {
    overhead: DistOf<DURATION>,
    prefill_rate: DistOf<RATE>,
    cached_rate: DistOf<RATE>,
    decode_rate: DistOf<RATE>,
    ready_delay: DistOf<DURATION>,
    attention_rate: DistOf<RATE>,
}

impl LatencyKeys {
    /// The first key given, in key order.
    pub fn first_given(&self) -> Option<String> {
        toml::Table::try_from(self).ok()?.keys().next().cloned()
    }
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RateLimitsSection {
    pub rpm: Option<Int<0>>,
    pub itpm: Option<Int<0>>,
    pub otpm: Option<Int<0>>,
    pub cache_reads_count: Option<bool>,
    pub retry_jitter: Option<DistOf<DURATION>>,
    pub parent_counts: Option<bool>,
    pub interval: Option<Duration>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OverloadSection {
    pub probability: Option<Share>,
    pub max_retries: Option<Count<0>>,
    pub initial_backoff: Option<Duration>,
    pub max_backoff: Option<Duration>,
}

/// `[limits]`: a run's bounds, and a command's work limits (`WorkLimits`: they change no
/// result, so they are never rendered).
#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    pub max_events: Option<Int<0>>,
    pub horizon: Option<Duration>,
    pub max_requests: Option<Int<1>>,
    pub max_memory_mb: Option<Int<1>>,
    pub max_output_mb: Option<Int<1>>,
    pub max_points: Option<Int<1>>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PlotSection {
    /// Swept keys and values (checked by `validate`).
    #[cfg_attr(feature = "cli", schemars(with = "Option<serde_json::Value>"))]
    pub baseline: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReportSection {
    pub answer: Option<Name<Answer>>,
    pub tolerance: Option<Share>,
    #[cfg_attr(feature = "cli", schemars(with = "Option<serde_json::Value>"))]
    pub compare: Option<toml::Value>,
    /// `compare`, `strategy` and `assumptions` are checked by `validate`.
    #[cfg_attr(feature = "cli", schemars(with = "Option<serde_json::Value>"))]
    pub strategy: Option<toml::Value>,
    #[cfg_attr(feature = "cli", schemars(with = "Option<serde_json::Value>"))]
    pub assumptions: Option<toml::Value>,
}

/// `[server]`: each key overrides the `server.model` preset's value.
#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub model: Option<String>,
    pub router: Option<Name<Router>>,
    pub prefill_sharing: Option<Name<Sharing>>,
    pub prefill_tokens_per_s: Option<Num>,
    pub gpu_usd_per_hour: Option<GpuPrice>,
    pub replicas: Option<Count<1>>,
    pub gpus_per_replica: Option<Count<1>>,
    pub step_token_budget: Option<Tokens>,
    pub step_overhead: Option<Duration>,
    pub decode_step: Option<Duration>,
    pub decode_per_running: Option<Duration>,
    pub decode_per_ktok: Option<Duration>,
    pub kv_capacity_tokens: Option<Tokens>,
    pub block_tokens: Option<Tokens>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OpenAiSection {
    pub contract: Option<Name<OpenAiContract>>,
    /// Checked against the contract by `validate`.
    pub retention: Option<String>,
    pub in_memory_idle: Option<Duration>,
    pub increment_tokens: Option<Int<0>>,
    pub route_tokens: Option<Int<0>>,
    pub machines: Option<Count<1>>,
    pub overflow_per_minute: Option<Count<1>>,
    pub overflow_window: Option<Duration>,
    pub overflow_probability: Option<Share>,
    pub overflow_warm_probability: Option<Share>,
    pub cache_key: Option<Name<CacheKeyMode>>,
    pub cache_key_shards: Option<Count<1>>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GeminiSection {
    pub mode: Option<Name<GeminiMode>>,
    pub implicit_hit_probability: Option<Share>,
    pub implicit_ttl: Option<Duration>,
    pub explicit_ttl: Option<Duration>,
}
