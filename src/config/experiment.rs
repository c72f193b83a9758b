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
    /// 529 `overloaded_error` responses and the client's retries; `None`: the API never
    /// answers 529.
    pub overload: Option<Overload>,
    pub limits: RunLimits,
    /// `[plot] baseline`: the swept values figures hold the other axes at by default, as
    /// (dotted key, value) in key order; empty when the file declares none. No effect on a run.
    pub plot_baseline: Vec<(String, toml::Value)>,
    /// `[report]`: how the design-review report answers the question. No effect on a run.
    pub report: ReportSpec,
    /// The self-hosted server (`Some` exactly when the policy is `vllm` or `sglang`).
    pub server: Option<super::server::ServerParams>,
}

/// `[report]`: which metric answers the experiment's question, and how the report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSpec {
    /// `None`: the report lists the usual headline comparisons, answering nothing in particular.
    pub answer: Option<Answer>,
    /// `hold_cap`: the cap to use is the smallest whose mean cost is within this share of the
    /// cheapest strategy's (0.05: within 5%).
    pub tolerance: f64,
    /// `cost`: the swept key whose values are the options compared; the other axes are slices.
    /// `None`: the strategies are the options.
    pub compare: Option<String>,
    /// The one strategy the answer reads (`cost`); `None`: every strategy.
    pub strategy: Option<String>,
    /// Dotted keys this file sets by assumption, shown in the report's assumptions table
    /// beside the simulator's own named assumptions.
    pub assumptions: Vec<String>,
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec {
            answer: None,
            tolerance: ReportSpec::DEFAULT_TOLERANCE,
            compare: None,
            strategy: None,
            assumptions: Vec::new(),
        }
    }
}

impl ReportSpec {
    pub const DEFAULT_TOLERANCE: f64 = 0.05;
}

/// What answers an experiment's question (`[report] answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The hold cap to use per swept value, its price in latency, and how often it saves nothing.
    HoldCap,
    /// The cheaper option per slice, and by how much.
    Cost,
}

impl Answer {
    pub const NAMES: [&'static str; 2] = ["hold_cap", "cost"];

    pub fn parse(s: &str) -> Option<Answer> {
        match s {
            "hold_cap" => Some(Answer::HoldCap),
            "cost" => Some(Answer::Cost),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Answer::HoldCap => "hold_cap",
            Answer::Cost => "cost",
        }
    }
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
    /// Explicit cache storage (Gemini), USD per million tokens per hour; 0 elsewhere.
    pub storage_usd_per_mtok_hour: f64,
    /// Prefixes shorter than this are neither read nor written.
    pub min_cacheable_tokens: u64,
    /// Input + output tokens one request may hold (the model's standard window).
    pub context_window_tokens: u64,
    /// A larger window the model offers on request, priced higher above a threshold;
    /// `None`: no such offer (no preset has one today, see docs/anthropic.md).
    pub long_context: Option<LongContext>,
    /// The experiment uses `long_context` (its window, and its prices above the threshold).
    pub use_long_context: bool,
    /// What the model does with earlier turns' thinking blocks.
    pub thinking: ThinkingHistory,
    /// Models of one class share one set of rate-limit buckets (the rate-limits page's
    /// combined tables, e.g. "Sonnet 4.x").
    pub rate_limit_class: String,
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
    pub hosted: super::hosted::HostedParams,
}

impl CacheParams {
    /// The TTL of the parent conversation's requests.
    pub fn parent_ttl(&self) -> Ttl {
        self.parent_ttl.unwrap_or(self.ttl)
    }

    /// The TTL of the requests of agents of `kind` (and of the prewarm request).
    pub fn agent_ttl(&self, kind: &AgentKind) -> Ttl {
        let name = kind.name();
        self.ttl_by_kind.iter().find(|(k, _)| k == name).map_or(self.ttl, |(_, t)| *t)
    }
}

/// Agent kinds (docs/model.md).
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

impl AgentKind {
    /// The kind's name without parameters (`fork_drop_tool`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            AgentKind::Fork => "fork",
            AgentKind::Subagent => "subagent",
            AgentKind::Btw => "btw",
            AgentKind::ForkDropTool { .. } => "fork_drop_tool",
            AgentKind::ForkEditSystem => "fork_edit_system",
            AgentKind::ForkOtherModel { .. } => "fork_other_model",
            AgentKind::ForkDenyAtCall { .. } => "fork_deny_at_call",
        }
    }
}

/// Launch strategies (docs/model.md); they gate each agent's first request only.
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

/// The fan-out workload (docs/model.md). Durations in microseconds, sizes in tokens.
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
    /// At most this many output tokens per response (a client's `max_tokens`); `u64::MAX` =
    /// no cap.
    pub output_max_tokens: u64,
    pub tool_latency_us: Dist,
    pub tool_result_tokens: Dist,
    /// At most this many tokens per tool result (a client truncating tool output); `u64::MAX`
    /// = no cap.
    pub tool_result_max_tokens: u64,
    /// Share of tool calls that go to the denied tool (kind `fork_deny_at_call`).
    pub denied_call_share: f64,
    /// The content blocks one agent turn appends, in order, each its own lookback position.
    pub turn_blocks: Vec<BlockKind>,
    /// The content blocks one parent exchange appends (`parent_turn_every` > 0).
    pub parent_exchange_blocks: Vec<BlockKind>,
    /// The agents' requests have extended thinking on.
    pub thinking: bool,
    /// The parent's requests have extended thinking on; `None` = as `thinking`.
    pub parent_thinking: Option<bool>,
}

impl Workload {
    /// Whether the parent conversation's requests have thinking on.
    pub fn parent_thinks(&self) -> bool {
        self.parent_thinking.unwrap_or(self.thinking)
    }
}

/// One content block of a synthetic turn: a lookback position (a run of tool_use, or of
/// tool_result, blocks counts as one, so one of each per turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BlockKind {
    /// A user message that is not a tool result (a new instruction).
    User,
    /// An assistant thinking block (sent only when thinking is on).
    Thinking,
    /// Assistant text.
    Text,
    /// The assistant's tool_use blocks.
    ToolUse,
    /// The user's tool_result blocks.
    ToolResult,
}

impl BlockKind {
    pub const ALL: [BlockKind; 5] = [
        BlockKind::User,
        BlockKind::Thinking,
        BlockKind::Text,
        BlockKind::ToolUse,
        BlockKind::ToolResult,
    ];

    /// The name in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::User => "user",
            BlockKind::Thinking => "thinking",
            BlockKind::Text => "text",
            BlockKind::ToolUse => "tool_use",
            BlockKind::ToolResult => "tool_result",
        }
    }

    /// Whether the assistant writes it (its tokens are the response's output).
    pub fn is_assistant(self) -> bool {
        matches!(self, BlockKind::Thinking | BlockKind::Text | BlockKind::ToolUse)
    }
}

/// The default turn shape: assistant thinking (when on), text and tool_use; the user's
/// tool_result.
pub const DEFAULT_TURN_BLOCKS: [BlockKind; 4] =
    [BlockKind::Thinking, BlockKind::Text, BlockKind::ToolUse, BlockKind::ToolResult];

/// Latency model (docs/model.md).
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
    /// Tokens² per second of the prefilled tokens' attention over the whole context
    /// (`prefill x context / attention_rate`); `inf`, the default: no such term.
    pub attention_rate: Dist,
}

/// Per-model token buckets (docs/model.md).
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimits {
    pub rpm: u64,
    pub itpm: u64,
    pub otpm: u64,
    /// Whether `cache_read` tokens count toward ITPM (false for most models).
    pub cache_reads_count: bool,
    /// Random extra wait added to each retry-after.
    pub retry_jitter_us: Dist,
    /// The parent conversation's own requests draw on the buckets of its model's class too
    /// (default: they do not; `[rate_limits]` is the fan-out's share).
    pub parent_counts: bool,
    /// The interval over which a per-minute limit is enforced: each bucket holds
    /// `limit * interval / 1 min` (refilled at `limit` per minute, as before). 1 min = today.
    pub interval_us: u64,
}

/// 529 `overloaded_error`: each request attempt is refused with this probability, before it
/// is processed; the client retries as the SDK does.
#[derive(Debug, Clone, PartialEq)]
pub struct Overload {
    pub probability: f64,
    /// Retries after a 529 (the SDK's `max_retries`, 2); then the agent gives up.
    pub max_retries: u32,
    /// The SDK's backoff: `min(initial * 2^n, max) * (1 - 0.25 * U)` before retry n + 1.
    pub initial_backoff_us: u64,
    pub max_backoff_us: u64,
}

/// Bounds on one run: a limit on everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    pub max_events: u64,
    pub horizon_us: u64,
}
