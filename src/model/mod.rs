//! The fan-out model: workload, agents, launch strategies, latency, rate limits. The only
//! module that knows both the engine and the cache.
//!
//! `Simulator::run_into` runs one replication of one strategy into its `RunMetrics`, reusing
//! its buffers (event heap, launch buffers, caches) across runs; `simulate_detailed` also
//! returns the timeline segments (hold, rate_limit, prefill, decode, tool, entry_ready) and
//! per-request records (send time, usage, cost). See docs/model.md for the assumptions.
//!
//! - `workload.rs`: the synthetic prompts of each agent kind, their breakpoints.
//! - `simulator.rs`: `Simulator`, which keeps a run's buffers for the next.
//! - `sim.rs`: one run on the engine: the one place that handles the events, the agents' way.
//! - `world.rs`: what every request meets (events, clock, caches, limits, latency, recorder).
//! - `agent.rs`: who sends a request, one agent's state and phase.
//! - `launch.rs`: the launch strategies as one state machine (which held agents go when).
//! - `admission.rs`: rate limits, the cache peek a refused request needs, isolated misses.
//! - `parent.rs`: the parent conversation: warm before t0, advancing during the run.
//! - `server.rs`: the self-hosted server's replicas (`vllm`, `sglang`).
//! - `tape.rs`: a replication's workload draws, shared by its strategies.
//! - `recorder.rs`: the run's metrics and its optional trace.
//! - `rate.rs`: RPM/ITPM/OTPM token buckets.
//! - `latency.rs`: the latency model (prefill, cached reads, decode, tool time).

mod admission;
mod agent;
pub mod latency;
mod launch;
mod parent;
pub mod rate;
mod recorder;
mod server;
mod sim;
mod simulator;
mod tape;
pub mod workload;
mod world;

pub use simulator::Simulator;

use crate::cache::Usage;
use crate::config::{ExperimentSpec, Strategy};
use crate::engine::EngineError;
use crate::metrics::RunMetrics;

/// What a timeline segment shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SegmentKind {
    /// An agent with a slot, held by its launch strategy before its first request.
    Hold,
    /// Waiting on a 429's retry-after (plus jitter).
    RateLimit,
    /// Send to first token.
    Prefill,
    /// First token to the end of the response.
    Decode,
    /// A tool call, between a response and the next request.
    Tool,
    /// First token to the request's written entries becoming readable (the ready delay; a
    /// zero-length segment when there is none). Only for requests that wrote.
    EntryReady,
}

impl SegmentKind {
    /// The name used in `trace.csv`.
    pub fn name(self) -> &'static str {
        match self {
            SegmentKind::Hold => "hold",
            SegmentKind::RateLimit => "rate_limit",
            SegmentKind::Prefill => "prefill",
            SegmentKind::Decode => "decode",
            SegmentKind::Tool => "tool",
            SegmentKind::EntryReady => "entry_ready",
        }
    }
}

/// How the cache served the request a segment belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Read from the cache and wrote nothing.
    Hit,
    /// Read a prefix and wrote the rest.
    Partial,
    /// Read nothing.
    Miss,
    /// Wrote an entry that an earlier request was still writing (pending): the waste.
    RedundantWrite,
    /// Not a request (hold, rate limit, tool).
    None,
}

impl Outcome {
    /// The name used in `trace.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Hit => "hit",
            Outcome::Partial => "partial",
            Outcome::Miss => "miss",
            Outcome::RedundantWrite => "redundant_write",
            Outcome::None => "",
        }
    }

    /// The outcome of a request billed `usage`.
    pub fn of(usage: &Usage) -> Outcome {
        if usage.redundant_writes > 0 {
            Outcome::RedundantWrite
        } else if usage.cache_read == 0 {
            Outcome::Miss
        } else if usage.cache_write() == 0 {
            Outcome::Hit
        } else {
            Outcome::Partial
        }
    }
}

/// One bar of the timeline plot. Times are relative to the fan-out's start (t = 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The agent; the prewarm request is shown as agent `N` (one past the last agent).
    pub agent: u32,
    /// The agent's request number (0 = its first), the one the segment precedes or belongs to.
    pub request: u32,
    pub kind: SegmentKind,
    pub start_us: u64,
    pub end_us: u64,
    pub outcome: Outcome,
}

/// One request the API accepted, as the model served it. Times relative to the fan-out start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestRecord {
    /// The agent (`N` for the prewarm request).
    pub agent: u32,
    /// The agent's request number (0 = its first).
    pub request: u32,
    /// When the API accepted it (after any 429s).
    pub send_us: u64,
    pub ttft_us: u64,
    pub decode_us: u64,
    /// When the entries it wrote become readable: send + ttft + ready delay.
    pub ready_us: u64,
    /// All input tokens of the prompt (read + written + uncached).
    pub prompt_tokens: u64,
    pub usage: Usage,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// 0 = the experiment's model, 1 = the `fork_other_model` model.
    pub model: usize,
    /// The cache keys the request used: for checking the cache's lifecycle from outside.
    pub keys: RequestKeys,
}

/// The cache keys of one request (traced runs only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestKeys {
    /// The prefix digest at the boundary the request read (`None`: no read).
    pub hit: Option<crate::cache::Digest>,
    /// The prefix digest and prefix tokens at each breakpoint, in order.
    pub breakpoints: [(crate::cache::Digest, u64); 3],
    pub n_breakpoints: usize,
}

/// Everything one traced run produced. The product reads the segments; the metrics and the
/// request records are what the tests and the reference model check a run by.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub struct Detailed {
    pub metrics: RunMetrics,
    pub segments: Vec<Segment>,
    pub requests: Vec<RequestRecord>,
}

/// Why a run failed. The run's partial results are discarded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SimError {
    #[error("run stopped early: {0}")]
    Bounded(#[from] EngineError),
    #[error("the cache refused a request of agent {agent} (request {request}): {source}")]
    Cache { agent: u32, request: u32, source: crate::cache::CacheError },
    #[error("unknown model `{0}` in workload.kind = fork_other_model (no preset of that name)")]
    UnknownModel(String),
    #[error("a request of agent {agent} needs {amount} {limit} but the limit is {capacity} per minute: it can never be admitted (raise rate_limits.{limit})")]
    NeverAdmitted { agent: u32, limit: &'static str, amount: u64, capacity: u64 },
    #[error("invalid experiment: {0}")]
    Invalid(String),
    /// The machine's memory, not the input: exit 1 (docs/limits.md).
    #[error("memory ran out: {} for a run of {agents} agents; lower workload.agents (or drop --force to have it estimated first)", crate::limits::bytes(*bytes))]
    OutOfMemory { bytes: f64, agents: u32 },
    #[error("a request of agent {agent} (request {request}) holds {tokens} tokens (input + output), more than {model}'s context window of {window}: `{key}` made it too long (shorten it, or use a model with a larger window)")]
    ContextWindow {
        agent: u32,
        request: u32,
        tokens: u64,
        window: u64,
        model: String,
        key: &'static str,
    },
}

impl SimError {
    /// Whether the experiment's input caused it (the CLI exits with code 2): a request that
    /// outgrows its model's context window.
    pub fn is_input(&self) -> bool {
        matches!(self, SimError::ContextWindow { .. })
    }
}

impl From<SimError> for crate::limits::RunError {
    /// Whose fault a failed run is: a refused cache request is a bug, memory running out the
    /// machine's; the rest is the input's.
    fn from(e: SimError) -> Self {
        use crate::limits::RunError;
        match e {
            SimError::Cache { .. } | SimError::OutOfMemory { .. } => {
                RunError::Internal(e.to_string())
            }
            _ => RunError::Input(e.to_string()),
        }
    }
}

/// What a run of `exp` says beside its numbers: the documented rules that changed what a
/// strategy or kind can do (printed under the table, `notes` in `--json`).
pub fn notes(exp: &ExperimentSpec) -> Vec<String> {
    let w = &exp.workload;
    let mut notes = Vec::new();
    if w.thinking && exp.strategies.contains(&Strategy::Prewarm) {
        notes.push(
            "prewarm: `max_tokens: 0` is refused with extended thinking, so the warming request \
             is sent without thinking: it warms the tools and system prompt only (the thinking \
             agents' messages layer differs)"
                .to_string(),
        );
    }
    let agents_model = match &w.kind {
        crate::config::AgentKind::ForkOtherModel { model } => crate::config::preset(model),
        _ => Some(exp.model.clone()),
    };
    let strips = agents_model.filter(|m| m.thinking == crate::config::ThinkingHistory::Stripped);
    if w.parent_thinks() && w.parent_turn_every_us > 0 && (strips.is_some() || !w.thinking) {
        let why = match strips {
            Some(m) => format!("{} strips earlier turns' thinking", m.name),
            None => "the agents' requests have thinking off".to_string(),
        };
        notes.push(format!(
            "thinking: {why}, so each agent's first request (its task is a user message) drops \
             the parent's thinking blocks and shares the parent's history only up to the first \
             of them"
        ));
    }
    notes
}

/// Run replication `replication` of `strategy` on `exp` with its timeline segments (ordered
/// by agent, then time) and one record per accepted request, in acceptance order.
#[cfg_attr(not(feature = "internals"), allow(dead_code))] // the tests' entry
pub fn simulate_detailed(
    exp: &ExperimentSpec,
    strategy: &Strategy,
    replication: u32,
) -> Result<Detailed, SimError> {
    Simulator::new().run_detailed(exp, strategy, replication)
}

/// `simulate_detailed` with only agents `0..lanes` traced (and the prewarm request and the
/// parent; `None`: every agent), recorded as the run goes (`Simulator::run_sampled`).
#[cfg_attr(not(feature = "internals"), allow(dead_code))] // the tests' entry
pub fn simulate_sampled(
    exp: &ExperimentSpec,
    strategy: &Strategy,
    replication: u32,
    lanes: Option<u32>,
) -> Result<Detailed, SimError> {
    Simulator::new().run_sampled(exp, strategy, replication, lanes)
}
