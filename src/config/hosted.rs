//! The parameters of the hosted providers' cache policies, `openai` and `gemini` (the
//! `[openai]` and `[gemini]` sections; rules, sources and defaults: docs/providers.md).
//! Every value the vendors do not document is a named assumption here, overridable.

use crate::time::{US_PER_H, US_PER_MIN, US_PER_S};

/// Which of OpenAI's two caching contracts a model uses (set by its preset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiContract {
    /// Before GPT-5.6: automatic longest prefix, 1,024 then 128-token steps, no write fee.
    Classic,
    /// GPT-5.6 and later: breakpoints, writes at 1.25x (2.5x for the 12-hour retention).
    Breakpoints,
}

impl OpenAiContract {
    pub fn name(self) -> &'static str {
        match self {
            OpenAiContract::Classic => "classic",
            OpenAiContract::Breakpoints => "breakpoints",
        }
    }
}

/// `prompt_cache_retention` (classic: `in_memory` or `24h`; breakpoints: `30m` or `12h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiRetention {
    /// Cleared after `in_memory_idle` of inactivity (documented: 5 to 10 minutes).
    InMemory,
    /// Offloaded to GPU-local storage, kept up to 24 hours.
    Day,
    /// The breakpoint contract's default: at least 30 minutes, refreshed on use (assumed).
    HalfHour,
    /// The breakpoint contract's extended lifetime; writes bill at the 1h-class multiplier.
    HalfDay,
}

impl OpenAiRetention {
    pub const NAMES: [&'static str; 4] = ["in_memory", "24h", "30m", "12h"];

    pub fn name(self) -> &'static str {
        match self {
            OpenAiRetention::InMemory => "in_memory",
            OpenAiRetention::Day => "24h",
            OpenAiRetention::HalfHour => "30m",
            OpenAiRetention::HalfDay => "12h",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "in_memory" => Some(OpenAiRetention::InMemory),
            "24h" => Some(OpenAiRetention::Day),
            "30m" => Some(OpenAiRetention::HalfHour),
            "12h" => Some(OpenAiRetention::HalfDay),
            _ => None,
        }
    }

    /// Whether the contract offers this retention.
    pub fn fits(self, contract: OpenAiContract) -> bool {
        match contract {
            OpenAiContract::Classic => matches!(self, Self::InMemory | Self::Day),
            OpenAiContract::Breakpoints => matches!(self, Self::HalfHour | Self::HalfDay),
        }
    }

    /// The documented default for an organization without zero data retention.
    pub fn default_for(contract: OpenAiContract) -> Self {
        match contract {
            OpenAiContract::Classic => OpenAiRetention::Day,
            OpenAiContract::Breakpoints => OpenAiRetention::HalfHour,
        }
    }
}

/// `[openai]`: the `openai` policy's contract, retention and the machines a prefix is served
/// from (docs/providers.md, section 1).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiParams {
    pub contract: OpenAiContract,
    pub retention: OpenAiRetention,
    /// The idle TTL of `in_memory` retention (assumption: the low end of 5-10 minutes).
    pub in_memory_idle_us: u64,
    /// Classic hits grow in steps of this many tokens past the model's minimum cacheable length
    /// (`model_params.min_cacheable_tokens`, 1,024 on every OpenAI preset) (documented: 128).
    pub increment_tokens: u64,
    /// The machine is chosen by a hash of this many first tokens (documented: "typically 256").
    pub route_tokens: u64,
    /// Machines a prefix can overflow to (assumption: 8).
    pub machines: u32,
    /// Requests per `overflow_window` one machine takes for one prefix+key before the next
    /// ones overflow (documented: "approximately 15 requests per minute").
    pub overflow_per_minute: u32,
    /// The sliding window the overflow rate is counted over (assumption: 60 s).
    pub overflow_window_us: u64,
}

impl OpenAiParams {
    /// The documented values and the assumptions' defaults, for `contract`.
    pub fn defaults(contract: OpenAiContract) -> Self {
        OpenAiParams {
            contract,
            retention: OpenAiRetention::default_for(contract),
            in_memory_idle_us: 5 * US_PER_MIN,
            increment_tokens: 128,
            route_tokens: 256,
            machines: 8,
            overflow_per_minute: 15,
            overflow_window_us: 60 * US_PER_S,
        }
    }

    /// The TTL of an entry written under the retention (sliding from its last use).
    pub fn ttl_us(&self) -> u64 {
        match self.retention {
            OpenAiRetention::InMemory => self.in_memory_idle_us,
            OpenAiRetention::Day => 24 * US_PER_H,
            OpenAiRetention::HalfHour => 30 * US_PER_MIN,
            OpenAiRetention::HalfDay => 12 * US_PER_H,
        }
    }
}

impl Default for OpenAiParams {
    fn default() -> Self {
        Self::defaults(OpenAiContract::Classic)
    }
}

/// Gemini's two ways of caching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeminiMode {
    /// Automatic, no guarantee: a ready prefix hits with `implicit_hit_probability`.
    Implicit,
    /// A `cachedContents` object of the shared prefix with a fixed TTL and a storage price.
    Explicit,
}

impl GeminiMode {
    pub fn name(self) -> &'static str {
        match self {
            GeminiMode::Implicit => "implicit",
            GeminiMode::Explicit => "explicit",
        }
    }
}

/// `[gemini]` (docs/providers.md, section 2).
#[derive(Debug, Clone, PartialEq)]
pub struct GeminiParams {
    pub mode: GeminiMode,
    /// Implicit: the chance that a lookup finding a ready prefix hits (assumption: 0.5).
    pub implicit_hit_probability: f64,
    /// Implicit: entries live this long after their last use (assumption: 5 minutes).
    pub implicit_ttl_us: u64,
    /// Explicit: the cache object's TTL from its creation (documented default: 1 hour).
    pub explicit_ttl_us: u64,
}

impl Default for GeminiParams {
    fn default() -> Self {
        GeminiParams {
            mode: GeminiMode::Implicit,
            implicit_hit_probability: 0.5,
            implicit_ttl_us: 5 * US_PER_MIN,
            explicit_ttl_us: US_PER_H,
        }
    }
}

/// The hosted providers' sections of `[cache]`'s experiment: read by the `openai` and
/// `gemini` policies only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostedParams {
    pub openai: OpenAiParams,
    pub gemini: GeminiParams,
}

impl super::Policy {
    /// The name in experiment files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            super::Policy::EveryBlock => "every-block",
            super::Policy::Anthropic => "anthropic",
            super::Policy::OpenAi => "openai",
            super::Policy::Gemini => "gemini",
            super::Policy::Vllm => "vllm",
            super::Policy::Sglang => "sglang",
        }
    }
}
