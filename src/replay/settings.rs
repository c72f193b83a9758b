//! Replay settings: the trace format, the model whose prices are charged, the latency model
//! that decides when a written entry becomes readable, and the cache choice (policy, TTL,
//! capacity). `--set key=value` assignments and `--what-if` choices are parsed here.
//!
//! The keys are the replay's own small set (not an experiment file): `cache.ttl`,
//! `cache.capacity_tokens`, `cache.policy`, `model`, `block_size`, `seed`, `latency.*`.
//! The syntax is the experiment file's `--set` syntax: `key=value`, the value a TOML literal or
//! a bare word. It knows nothing of traces or caches.

use crate::config::latency_file::LatencyFile;
use crate::config::latency_presets::{self, LatencyPreset};
use crate::config::{LatencyParams, ModelParams, Policy};
use crate::dist::{Dist, Quantity};
use crate::time::{Human, US_PER_H, US_PER_MIN};

/// The trace formats `replay` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Mooncake JSONL: `{timestamp, input_length, output_length, hash_ids}`, `ceil` blocks.
    Mooncake,
    /// Claude Code session traces (kv-cache-tester): one JSON object per conversation.
    ClaudeCode,
    /// JSONL of `{"timestamp_ms", "body"}` with Messages-API request bodies.
    Requests,
    /// JSONL of API responses' usage (Anthropic, OpenAI, Gemini), as `calibrate` reads them.
    UsageLog,
    /// OTLP JSON spans with the GenAI semantic conventions, as `calibrate` reads them.
    Otlp,
}

impl TraceFormat {
    /// The names `replay --format` takes, in the order its help lists them.
    pub const NAMES: [&'static str; 5] =
        ["mooncake", "claude-code", "requests", "usage-log", "otlp"];
    const ALL: [TraceFormat; 5] = [
        TraceFormat::Mooncake,
        TraceFormat::ClaudeCode,
        TraceFormat::Requests,
        TraceFormat::UsageLog,
        TraceFormat::Otlp,
    ];
    /// The format named `name` (one of `NAMES`).
    pub fn parse(name: &str) -> Option<TraceFormat> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::ClaudeCode => "claude-code",
            TraceFormat::Requests => "requests",
            TraceFormat::UsageLog => "usage-log",
            TraceFormat::Otlp => "otlp",
        }
    }
    /// True for the formats replayed as block ids rather than content (logs: ids made from
    /// the conversation and the token position, `logs`).
    pub fn is_hash_ids(self) -> bool {
        !matches!(self, TraceFormat::Requests)
    }
    /// Usage logs and OTLP spans: token counts per call, no content.
    pub fn is_log(self) -> bool {
        matches!(self, TraceFormat::UsageLog | TraceFormat::Otlp)
    }
    /// Formats that record each request's model (priced and timed as its own by default).
    pub fn records_models(self) -> bool {
        matches!(self, TraceFormat::ClaudeCode | TraceFormat::UsageLog | TraceFormat::Otlp)
    }
}

/// The default block of the prefix-identity model of logs: 128 tokens, the step in which
/// OpenAI's automatic prompt caching grows a cached prefix
/// (https://platform.openai.com/docs/guides/prompt-caching).
pub const LOG_BLOCK_TOKENS: u64 = 128;

/// One cache configuration to replay the trace through.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheChoice {
    /// How the choice is shown: the assignments that made it (e.g. `cache.ttl=1h`).
    pub label: String,
    pub policy: Policy,
    /// Sliding lifetime from the start of the last request that used an entry; `None` = never.
    pub ttl_us: Option<u64>,
    /// Capacity in tokens with LRU eviction; `None` = unbounded.
    pub capacity_tokens: Option<u64>,
    /// `requests` format: keep each breakpoint's TTL as the body sent it (until `cache.ttl`
    /// is set, which rewrites every breakpoint's TTL).
    pub ttl_as_sent: bool,
}

impl CacheChoice {
    /// Whether writes are billed at the 1-hour price (TTL longer than 5 minutes). A cache with
    /// no TTL is billed at the 5-minute price: an assumption, no API offers it (a bound).
    pub fn bills_1h(&self) -> bool {
        self.ttl_us.is_some_and(|t| t > 5 * US_PER_MIN)
    }
    /// True when the TTL is one the Anthropic API offers (5m or 1h).
    pub fn is_api_ttl(&self) -> bool {
        self.ttl_as_sent || matches!(self.ttl_us, Some(t) if t == 5 * US_PER_MIN || t == US_PER_H)
    }
    /// `5m`, `1h`, `none` or another duration.
    pub fn ttl_text(&self) -> String {
        if self.ttl_as_sent {
            return "as sent".to_string();
        }
        match self.ttl_us {
            None => "none".to_string(),
            Some(t) if t == 5 * US_PER_MIN => "5m".to_string(),
            Some(t) => Human(t).to_string(),
        }
    }
}

/// Everything a replay needs besides the trace itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySettings {
    pub format: TraceFormat,
    /// Prices (and the name shown); with `per_request_prices`, the fallback and (for
    /// `requests`) the minimum cacheable length.
    pub model: ModelParams,
    /// `model=per-request` (the default for claude-code traces): each request is priced and
    /// timed as its own model's preset.
    pub per_request_prices: bool,
    /// Tokens per hash block for `mooncake` (claude-code files carry their own), and the
    /// block of the prefix-identity model of usage logs and OTLP spans.
    pub block_size: u64,
    /// The latency of `model` (shown, and compared by what-ifs): `latency_for(model)`.
    pub latency: LatencyParams,
    /// `latency.preset`: per-model calibrated latency (default) or the 2024 launch figures.
    pub latency_preset: LatencyPreset,
    /// `latency.from=FILE`: a calibration file's tables over the preset.
    latency_file: Option<std::sync::Arc<LatencyFile>>,
    /// `latency.<key>=DIST` assignments, in order, applied over every model's latency.
    latency_overrides: Vec<(String, Dist)>,
    /// Every model preset's latency under the settings above, by preset name.
    latencies: Vec<(&'static str, LatencyParams)>,
    /// Entries readable as soon as they are written (no latency model).
    pub instant_ready: bool,
    /// Seed of the latency draws (only used by non-constant latency distributions).
    pub seed: u64,
    /// Skip malformed lines with a warning instead of failing.
    pub lenient: bool,
    pub cache: CacheChoice,
    /// Whether the user set `cache.policy` (hash-id formats accept only `every-block`).
    policy_set: bool,
}

/// A `--set` assignment that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{assignment}`: {reason}")]
pub struct SetError {
    pub assignment: String,
    pub reason: SettingError,
}

/// Why a setting (or a combination of settings) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("expected key=value, e.g. cache.ttl=1h")]
    NotAnAssignment,
    #[error("unknown key `{0}` (replay keys: {keys})", keys = KEYS)]
    UnknownKey(String),
    #[error("cache.ttl must be a positive duration (5m, 1h, 90s, ...) or none, not `{0}`")]
    Ttl(String),
    #[error(
        "cache.ttl={0}: the Anthropic API offers 5m and 1h only (cache_control.ttl, \
         https://platform.claude.com/docs/en/build-with-claude/prompt-caching); another TTL \
         needs cache.policy=every-block"
    )]
    TtlNotOffered(String),
    #[error("expected a positive whole number, not `{0}`")]
    NotPositive(String),
    #[error("cache.policy must be anthropic or every-block, not `{0}`")]
    Policy(String),
    #[error("unknown model `{0}` (known: {known})", known = crate::config::preset_names().join(", "))]
    UnknownModel(String),
    #[error(
        "block_size applies to mooncake traces, usage logs and otlp spans only ({0} traces \
         carry their own blocks)"
    )]
    BlockSizeNotMooncake(&'static str),
    #[error("`{0}` is not a seed")]
    Seed(String),
    #[error("latency.preset must be one of {names}", names = LatencyPreset::NAMES.join(", "))]
    LatencyPreset,
    #[error("latency.from={value}: {message}")]
    LatencyFrom { value: String, message: String },
    /// A latency distribution the experiment file's syntax refuses (its message).
    #[error("{0}")]
    Dist(String),
    #[error(
        "cache.policy=anthropic needs request bodies (format `requests`); a {0} trace has only \
         block hash ids, replayed as a block-level prefix cache (every-block)"
    )]
    PolicyNeedsBodies(&'static str),
    #[error("a choice may change only cache.* keys")]
    WhatIfNotCache,
}

/// The default model whose prices a replay charges.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4.5";

impl ReplaySettings {
    /// Defaults for a format: TTL 5m (request bodies: each breakpoint's TTL as sent),
    /// unbounded capacity, `claude-sonnet-4.5` prices (claude-code traces: each request's own
    /// model, which they record), the latency model on, 512-token blocks (Mooncake's), policy
    /// `every-block` for hash-id traces and `anthropic` for request bodies.
    pub fn new(format: TraceFormat) -> Self {
        let policy = if format.is_hash_ids() { Policy::EveryBlock } else { Policy::Anthropic };
        let mut settings = ReplaySettings {
            format,
            model: crate::config::preset(DEFAULT_MODEL).expect("the default model is a preset"),
            per_request_prices: format.records_models(),
            block_size: if format.is_log() { LOG_BLOCK_TOKENS } else { 512 },
            latency: LatencyParams::default(),
            latency_preset: LatencyPreset::Calibrated,
            latency_file: None,
            latency_overrides: Vec::new(),
            latencies: Vec::new(),
            instant_ready: false,
            seed: 42,
            lenient: false,
            cache: CacheChoice {
                label: "cache.ttl=5m".to_string(),
                policy,
                ttl_us: Some(5 * US_PER_MIN),
                capacity_tokens: None,
                ttl_as_sent: !format.is_hash_ids(),
            },
            policy_set: false,
        };
        settings.rebuild_latencies();
        settings
    }

    /// The latency model of requests sent to the preset `preset`: the one route of every
    /// latency lookup. Each model has its own (`latency.preset`, `latency.from`), with the
    /// `latency.*` assignments over it; a name that is no preset gets `model`'s.
    pub fn latency_for(&self, preset: &str) -> &LatencyParams {
        self.latencies.iter().find(|(name, _)| *name == preset).map_or(&self.latency, |(_, l)| l)
    }

    /// Recompute every model's latency after a latency or model assignment.
    fn rebuild_latencies(&mut self) {
        let mut all = Vec::new();
        for name in crate::config::preset_names() {
            let mut l = latency_presets::params(name, self.latency_preset).unwrap_or_default();
            if let Some(file) = &self.latency_file {
                // A file without a table for this model leaves it at the preset.
                if let Ok(from_file) = file.params_for(name, l.clone()) {
                    l = from_file;
                }
            }
            for (key, dist) in &self.latency_overrides {
                *crate::config::latency_file::slot(&mut l, key) = dist.clone();
            }
            all.push((name, l));
        }
        self.latencies = all;
        self.latency = self.latency_for(&self.model.name).clone();
    }

    /// Apply one `key=value` assignment.
    pub fn apply_set(&mut self, assignment: &str) -> Result<(), SetError> {
        let err = |reason| SetError { assignment: assignment.to_string(), reason };
        let (key, value) =
            assignment.split_once('=').ok_or_else(|| err(SettingError::NotAnAssignment))?;
        let key = key.trim();
        let value = unquote(value.trim());
        self.apply_key(key, value).map_err(err)
    }

    fn apply_key(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        match key {
            "cache.ttl" => {
                self.cache.ttl_us = parse_ttl(value)?;
                self.cache.ttl_as_sent = false;
            }
            "cache.capacity_tokens" => self.cache.capacity_tokens = parse_capacity(value)?,
            "cache.policy" => {
                self.cache.policy = parse_policy(value)?;
                self.policy_set = true;
            }
            "model" if value == "per-request" => self.per_request_prices = true,
            "model" => {
                self.per_request_prices = false;
                self.model = crate::config::preset(value)
                    .ok_or_else(|| SettingError::UnknownModel(value.to_string()))?;
                self.latency = self.latency_for(&self.model.name).clone();
            }
            "block_size" if !(self.format == TraceFormat::Mooncake || self.format.is_log()) => {
                return Err(SettingError::BlockSizeNotMooncake(self.format.name()))
            }
            "block_size" => self.block_size = parse_positive(value)?,
            "seed" => {
                self.seed = value.parse().map_err(|_| SettingError::Seed(value.to_string()))?
            }
            _ => match key.strip_prefix("latency.") {
                Some(name) => self.apply_latency(name, value)?,
                None => return Err(SettingError::UnknownKey(key.to_string())),
            },
        }
        Ok(())
    }

    fn apply_latency(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
        match name {
            "preset" => {
                self.latency_preset =
                    LatencyPreset::parse(value).ok_or(SettingError::LatencyPreset)?
            }
            "from" => {
                let file = LatencyFile::read(std::path::Path::new(value)).map_err(|e| {
                    SettingError::LatencyFrom { value: value.to_string(), message: e.to_string() }
                })?;
                self.latency_file = Some(std::sync::Arc::new(file));
            }
            "overhead" | "ready_delay" => {
                self.latency_overrides.push((name.to_string(), parse_dist(value, true)?))
            }
            "prefill_rate" | "cached_rate" | "decode_rate" | "attention_rate" => {
                self.latency_overrides.push((name.to_string(), parse_dist(value, false)?))
            }
            _ => return Err(SettingError::UnknownKey(format!("latency.{name}"))),
        }
        self.rebuild_latencies();
        Ok(())
    }

    /// Check the combination once every assignment is applied.
    pub fn validate(&self) -> Result<(), SettingError> {
        if self.format.is_hash_ids() && self.policy_set && self.cache.policy != Policy::EveryBlock {
            return Err(SettingError::PolicyNeedsBodies(self.format.name()));
        }
        let api_ttl = self.cache.is_api_ttl() || self.cache.ttl_us.is_none();
        if self.cache.policy == Policy::Anthropic && !api_ttl {
            return Err(SettingError::TtlNotOffered(self.cache.ttl_text()));
        }
        Ok(())
    }
}

/// The keys `--set` accepts, for error messages.
pub const KEYS: &str = "cache.ttl, cache.capacity_tokens, cache.policy, model, block_size, seed, \
latency.preset, latency.from, latency.overhead, latency.prefill_rate, latency.cached_rate, \
latency.decode_rate, latency.ready_delay";

fn unquote(v: &str) -> &str {
    let q = |c: char| v.len() >= 2 && v.starts_with(c) && v.ends_with(c);
    if q('"') || q('\'') {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// A positive duration (`5m`, `1h`, `90s`) or `none` (a cache that never expires). Whether
/// the policy offers it is `ReplaySettings::validate`'s question.
pub fn parse_ttl(value: &str) -> Result<Option<u64>, SettingError> {
    match value {
        "none" => Ok(None),
        _ => match crate::time::parse_duration_us(value) {
            Ok(us) if us > 0 => Ok(Some(us)),
            _ => Err(SettingError::Ttl(value.to_string())),
        },
    }
}

fn parse_capacity(value: &str) -> Result<Option<u64>, SettingError> {
    if value == "none" || value == "unlimited" {
        return Ok(None);
    }
    parse_positive(value).map(Some)
}

fn parse_positive(value: &str) -> Result<u64, SettingError> {
    match value.replace('_', "").parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(SettingError::NotPositive(value.to_string())),
    }
}

fn parse_policy(value: &str) -> Result<Policy, SettingError> {
    match value {
        "anthropic" => Ok(Policy::Anthropic),
        "every-block" | "every_block" => Ok(Policy::EveryBlock),
        _ => Err(SettingError::Policy(value.to_string())),
    }
}

/// A latency distribution in the experiment file's syntax (`const(500ms)`, `uniform(..)`,
/// `lognormal(median=.., p90=..)`, ..); durations carry a unit.
fn parse_dist(value: &str, duration: bool) -> Result<Dist, SettingError> {
    let q = if duration { Quantity::Duration } else { Quantity::Rate };
    crate::config::parse_dist(value, q).map_err(|e| SettingError::Dist(e.to_string()))
}
