//! The resolved experiment: every value parsed, defaulted, validated and in base units
//! (microseconds, tokens, USD). The model runs from this and nothing else.

use crate::cache::{CacheParams, ModelParams};
use crate::dist::Dist;

/// One experiment, ready to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentSpec {
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
    /// The user-defined models the experiment runs (`[models]`, `--models`), as written: the
    /// rendered experiment carries them.
    pub defined_models: Vec<DefinedModel>,
}

/// A model the experiment defines (its `[models]`, or the `--models` file): its name and its
/// table as written (`config::models::ModelDef`'s schema, checked), which the rendered
/// experiment writes back.
#[derive(Debug, Clone, PartialEq)]
pub struct DefinedModel {
    pub name: String,
    pub table: toml::Table,
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
    pub fn name(self) -> &'static str {
        match self {
            Answer::HoldCap => "hold_cap",
            Answer::Cost => "cost",
        }
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
