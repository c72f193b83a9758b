//! The resolved experiment: every value parsed, defaulted, validated and in base units
//! (microseconds, tokens, USD). The model runs from this and nothing else.

use crate::dist::Dist;

/// One experiment, ready to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub name: String,
    /// The question the experiment answers (the file's `question` key or leading comment).
    pub question: String,
    pub seed: u64,
    pub replications: u32,
    pub strategies: Vec<Strategy>,
    pub model: ModelParams,
    pub cache: CacheParams,
    pub workload: Workload,
    pub latency: LatencyParams,
    /// The `fork_other_model` model's latency (`None` for every other kind).
    pub latency_other: Option<LatencyParams>,
    /// `None`: unlimited.
    pub rate_limits: Option<RateLimits>,
    pub limits: RunLimits,
}

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
    /// Prefixes shorter than this are neither read nor written.
    pub min_cacheable_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Every block boundary is a cache point (the seed demo).
    EveryBlock,
    /// Breakpoints, 20-position lookback, minimum length (the Anthropic API).
    Anthropic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    FiveMin,
    OneHour,
    /// Entries never expire (replay what-ifs, vLLM-like caches).
    None,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CacheParams {
    pub policy: Policy,
    pub ttl: Ttl,
    /// Capacity in tokens with LRU eviction; `None` = unbounded.
    pub capacity_tokens: Option<u64>,
}

/// Agent kinds (SPEC.md section 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    Fork,
    Subagent,
    Btw,
    /// A fork whose tool list lacks `tool` (the prefix breaks at the tools block).
    ForkDropTool {
        tool: String,
    },
    /// A fork whose system prompt was edited (tools still hit).
    ForkEditSystem,
    /// A fork sent to another model (no entry is shared).
    ForkOtherModel {
        model: String,
    },
    /// A fork with the identical prefix; calls to `tool` are refused at call time.
    ForkDenyAtCall {
        tool: String,
    },
}

/// Launch strategies (SPEC.md section 6); they gate each agent's first request only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    Eager,
    WaitFirst { max_wait_us: u64, release: Release },
    Stagger { interval_us: u64 },
    Sequential,
    Prewarm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Release the held agents when the first agent's response begins, or at the cap.
    OnReady,
    /// Always hold exactly `max_wait`.
    Timer,
}

/// The fan-out workload (SPEC.md section 5). Durations in microseconds, sizes in tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub kind: AgentKind,
    pub agents: u32,
    /// Agent i arrives (asks for a slot) at t0 + i * arrival_every; 0 = every agent at t0.
    /// An arrival process, apart from the launch strategy: forks spread over an hour.
    pub arrival_every_us: u64,
    pub concurrency: u32,
    pub parent_tokens: u64,
    pub parent_warm: bool,
    pub parent_idle_us: u64,
    /// While the fan-out runs, the parent sends one request this often (from t0), each
    /// appending one exchange to its history; 0 = the parent is frozen (assumption).
    pub parent_turn_every_us: u64,
    /// Tokens one parent exchange appends (user message + assistant reply + tool results).
    pub parent_turn_tokens: Dist,
    pub brief_tokens: u64,
    pub task_tokens: u64,
    pub subagent_tokens: u64,
    pub turns: Dist,
    pub output_tokens: Dist,
    pub tool_latency_us: Dist,
    pub tool_result_tokens: Dist,
    /// Share of tool calls that go to the denied tool (kind `fork_deny_at_call`).
    pub denied_call_share: f64,
}

/// Latency model (SPEC.md section 4).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyParams {
    pub overhead_us: Dist,
    /// Uncached and written tokens per second.
    pub prefill_rate: Dist,
    /// Cache-read tokens per second.
    pub cached_rate: Dist,
    /// Output tokens per second.
    pub decode_rate: Dist,
    /// From first token to entry readable.
    pub ready_delay_us: Dist,
}

/// Per-model token buckets (SPEC.md section 7).
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimits {
    pub rpm: u64,
    pub itpm: u64,
    pub otpm: u64,
    /// Whether `cache_read` tokens count toward ITPM (false for most models).
    pub cache_reads_count: bool,
    /// Random extra wait added to each retry-after.
    pub retry_jitter_us: Dist,
}

/// Bounds on one run: a limit on everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    pub max_events: u64,
    pub horizon_us: u64,
}
