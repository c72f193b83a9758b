//! The cache's parameters: the model's prices and limits, the policy, TTLs and the hosted
//! providers' rules (`[openai]`, `[gemini]`; sources and defaults: docs/providers.md). `config`
//! builds them from experiment files; the cache knows nothing of files.

use crate::time::{US_PER_H, US_PER_MIN, US_PER_S};

/// Prices and limits of the model the agents call (a preset, every field overridable).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelParams {
    /// Preset name, e.g. `claude-sonnet-4.5`.
    pub name: String,
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
    /// Cache read price as a multiple of the input price (0.1 on most models).
    pub read_multiplier: f64,
    pub write_5m_multiplier: f64,
    pub write_1h_multiplier: f64,
    /// Explicit cache storage (Gemini), USD per million tokens per hour; 0 elsewhere.
    pub storage_usd_per_mtok_hour: f64,
    /// Prefixes shorter than this are neither read nor written.
    pub min_cacheable_tokens: u64,
    /// Input + output tokens one request may hold (the model's standard window).
    pub context_window_tokens: u64,
    /// A larger window the model offers on request, priced higher above a threshold;
    /// `None`: no such offer. A price tier (a model whose higher rates apply above a threshold
    /// of its own window) is an offer of the standard window that is always in use.
    pub long_context: Option<LongContext>,
    /// The experiment uses `long_context` (its window, and its prices above the threshold).
    pub use_long_context: bool,
    /// What the model does with earlier turns' thinking blocks.
    pub thinking: ThinkingHistory,
    /// Models of one class share one set of rate-limit buckets (the rate-limits page's
    /// combined tables, e.g. "Sonnet 4.x").
    pub rate_limit_class: String,
    /// Cache reads count toward the input-tokens-per-minute limit (the rate-limits page marks
    /// the models where they do, Haiku 3.5; elsewhere they do not).
    pub itpm_counts_cache_reads: bool,
}

impl ModelParams {
    /// The window a request must fit: the long one when the experiment uses it.
    pub fn window_tokens(&self) -> u64 {
        match &self.long_context {
            Some(l) if self.use_long_context => l.window_tokens,
            _ => self.context_window_tokens,
        }
    }
}

/// A larger context window a model offers on request, and its prices.
#[derive(Debug, Clone, PartialEq)]
pub struct LongContext {
    pub window_tokens: u64,
    /// A request whose input (read + written + uncached) exceeds this pays the long prices
    /// on all its tokens.
    pub threshold_tokens: u64,
    pub input_multiplier: f64,
    pub output_multiplier: f64,
}

/// What a model does with thinking blocks of earlier assistant turns (the extended-thinking
/// page, "Differences in thinking across model versions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingHistory {
    /// Kept in context (Opus 4.5 and later, Sonnet 4.6 and later).
    Kept,
    /// Stripped when a user message that is not a tool result arrives: the request is
    /// processed as if they had never been sent (earlier models and Haiku).
    Stripped,
    /// The model has no extended thinking.
    None,
}

impl ThinkingHistory {
    /// The name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            ThinkingHistory::Kept => "kept",
            ThinkingHistory::Stripped => "stripped",
            ThinkingHistory::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Every block boundary is a cache point (the seed demo).
    EveryBlock,
    /// Breakpoints, 20-position lookback, minimum length (the Anthropic API).
    Anthropic,
    /// A self-hosted vLLM server: 16-token blocks in GPU memory, no TTL (`[server]`).
    Vllm,
    /// A self-hosted SGLang server: a radix tree of single tokens in GPU memory (`[server]`).
    Sglang,
    /// OpenAI's prompt caching: `[openai]` (contract, retention, machines; docs/providers.md).
    OpenAi,
    /// Gemini's implicit or explicit caching: `[gemini]` (docs/providers.md).
    Gemini,
}

impl Policy {
    /// The name in experiment files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Policy::EveryBlock => "every-block",
            Policy::Anthropic => "anthropic",
            Policy::OpenAi => "openai",
            Policy::Gemini => "gemini",
            Policy::Vllm => "vllm",
            Policy::Sglang => "sglang",
        }
    }

    /// Whether a self-hosted server serves it (`vllm`, `sglang`: the experiment's `[server]`).
    pub fn is_server(self) -> bool {
        matches!(self, Policy::Vllm | Policy::Sglang)
    }

    /// The KV block of a self-hosted server: vLLM caches 16-token blocks, SGLang's radix tree
    /// single tokens.
    pub fn default_block_tokens(self) -> u64 {
        match self {
            Policy::Sglang => 1,
            _ => 16,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    FiveMin,
    OneHour,
    /// Entries never expire (replay what-ifs, vLLM-like caches).
    None,
    /// Any other lifetime, in microseconds (> 0): policies without the API's two TTLs
    /// (`every-block`; `vllm` and `sglang` keep their GPU cache's own rule).
    Other(u64),
}

/// A TTL's names, one per place it is written (each output keeps its spelling).
impl Ttl {
    /// As the API's `cache_control.ttl` spells its two TTLs: `5m`, `1h`; `none`; any other
    /// lifetime exactly (`90s`). Experiment files accept it.
    pub fn api_name(self) -> String {
        match self {
            Ttl::FiveMin => "5m".into(),
            Ttl::OneHour => "1h".into(),
            _ => self.duration_name(),
        }
    }

    /// The lifetime as an exact duration: `5min`, `1h`, `90s`; `none`. Experiment files
    /// accept it.
    pub fn duration_name(self) -> String {
        match self {
            Ttl::FiveMin => "5min".into(),
            Ttl::OneHour => "1h".into(),
            Ttl::None => "none".into(),
            Ttl::Other(us) => crate::time::exact_duration(us),
        }
    }

    /// In words, for prose: `5 minutes`, `1 hour`, `none (entries never expire)`; any other
    /// lifetime exactly (`90s`).
    pub fn words(self) -> String {
        match self {
            Ttl::FiveMin => "5 minutes".into(),
            Ttl::OneHour => "1 hour".into(),
            Ttl::None => "none (entries never expire)".into(),
            Ttl::Other(_) => self.duration_name(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CacheParams {
    pub policy: Policy,
    /// The default TTL of every request's breakpoints.
    pub ttl: Ttl,
    /// Capacity in tokens with LRU eviction; `None` = unbounded.
    pub capacity_tokens: Option<u64>,
    /// The parent conversation's TTL (its warm-up request and its turns); `None` = `ttl`.
    /// Claude Code gives its main conversation its own TTL bucket.
    pub parent_ttl: Option<Ttl>,
    /// TTL by agent kind name (`fork`, `subagent`, ...); a kind not listed uses `ttl`.
    pub ttl_by_kind: Vec<(String, Ttl)>,
    /// Probability that one lookup misses although an entry is readable (an isolated miss);
    /// 0 = never.
    pub miss_probability: f64,
    /// `[openai]` and `[gemini]`: read only by those policies.
    pub hosted: HostedParams,
}

impl CacheParams {
    /// The TTL of the parent conversation's requests.
    pub fn parent_ttl(&self) -> Ttl {
        self.parent_ttl.unwrap_or(self.ttl)
    }

    /// The TTL of the requests of agents of the kind named `kind` (`fork`, ...; and of the
    /// prewarm request).
    pub fn agent_ttl(&self, kind: &str) -> Ttl {
        self.ttl_by_kind.iter().find(|(k, _)| k == kind).map_or(self.ttl, |(_, t)| *t)
    }
}

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
    pub fn name(self) -> &'static str {
        match self {
            OpenAiRetention::InMemory => "in_memory",
            OpenAiRetention::Day => "24h",
            OpenAiRetention::HalfHour => "30m",
            OpenAiRetention::HalfDay => "12h",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let all = [Self::InMemory, Self::Day, Self::HalfHour, Self::HalfDay];
        all.into_iter().find(|r| r.name() == text)
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
    /// The chance that a request finding its home machine's window full goes to another
    /// machine (assumption: 0.5, the midpoint of "some may overflow"; 0 = never, 1 = always).
    pub overflow_probability: f64,
    /// The chance that the machine an overflowing request goes to holds what the home machine
    /// holds although no request of its route went there before (assumption: 0).
    pub overflow_warm_probability: f64,
    /// The `prompt_cache_key` the client sends (`none`, one `shared` key, `per-agent`,
    /// `sharded` over `cache_key_shards` keys).
    pub cache_key: CacheKeyMode,
    /// Keys of `cache_key = "sharded"`: agent `i` sends key `i mod cache_key_shards`.
    pub cache_key_shards: u32,
}

/// The `prompt_cache_key` a client sends with each request (docs/providers.md, section 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKeyMode {
    /// No key: the route is the prefix hash alone.
    None,
    /// One key on every request.
    Shared,
    /// Agent `i` sends key `i`.
    PerAgent,
    /// Agent `i` sends key `i mod cache_key_shards`.
    Sharded,
}

impl CacheKeyMode {
    pub fn name(self) -> &'static str {
        match self {
            CacheKeyMode::None => "none",
            CacheKeyMode::Shared => "shared",
            CacheKeyMode::PerAgent => "per-agent",
            CacheKeyMode::Sharded => "sharded",
        }
    }
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
            overflow_probability: 0.5,
            overflow_warm_probability: 0.0,
            cache_key: CacheKeyMode::None,
            cache_key_shards: 4,
        }
    }

    /// The key (a number; `None`: no key) agent `agent` sends; the parent conversation and
    /// the prewarm request (`agent = None`) send agent 0's.
    pub fn key_of(&self, agent: Option<u32>) -> Option<u32> {
        let a = agent.unwrap_or(0);
        match self.cache_key {
            CacheKeyMode::None => None,
            CacheKeyMode::Shared => Some(0),
            CacheKeyMode::PerAgent => Some(a),
            CacheKeyMode::Sharded => Some(a % self.cache_key_shards.max(1)),
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
