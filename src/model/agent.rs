//! Who sends a request (`Requester`), one agent's state (`Agent`, its `Phase`), and how a run
//! builds its agents and the prewarm request from the workload.

use super::tape::{Tape, TurnDraws};
use super::workload::{self, Chain, Shared, SharedMemo, TurnTokens, WORKFLOW_ID};
use super::SimError;
use crate::cache::{Breakpoint, Prompt, PromptMemory};
use crate::config::{
    AgentKind, BlockKind, ExperimentSpec, ModelParams, Overload, ThinkingHistory, Ttl,
};
use crate::rng::{self, site, ChaCha8Rng, RngExt, SeedableRng};
use crate::time::{SimDuration, SimTime};

/// Who sends a request: one of the fan-out's agents, the prewarm request, or the advancing
/// parent conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Requester {
    Agent(u32),
    Prewarm,
    Parent,
}

impl Requester {
    /// The number shown in traces and errors for a run of `n` agents: the agent's index, `n`
    /// for the prewarm request, `n + 1` for the parent (`Segment::agent`).
    pub(super) fn shown(self, n: u32) -> u32 {
        match self {
            Requester::Agent(a) => a,
            Requester::Prewarm => n,
            Requester::Parent => n + 1,
        }
    }
}

/// Where an agent (or the prewarm request) is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for a concurrency slot (or, for the prewarm request, for t0).
    Queued,
    /// It has a slot; its launch strategy holds its first request.
    Held,
    /// Its requests are being sent, served, or retried, with tool calls between them.
    Running,
    /// Its last response ended.
    Done,
    /// It gave up after the client's last retry of a 529.
    Failed,
}

impl Phase {
    /// Whether an agent may go from `self` to `to`: forward only, holding at most once.
    pub(super) fn may_become(self, to: Phase) -> bool {
        use Phase::*;
        matches!(
            (self, to),
            (Queued, Held) | (Queued | Held, Running) | (Running, Done) | (Running, Failed)
        )
    }
}

/// A stream only some runs draw from. Boxed: a stream is a few hundred bytes, and an agent
/// carrying four unused ones inline would be copied whole as it is built and stored.
pub(super) type OptionalStream = Option<Box<ChaCha8Rng>>;

/// One agent (or the prewarm request) and where it is.
pub(super) struct Agent {
    /// Its prompt as the API processes it.
    pub chain: Chain,
    pub shared_end: usize,
    pub model: usize,
    pub turns: u32,
    pub turn: u32,
    pub output_tokens: u64,
    pub slot: SimTime,
    phase: Phase,
    /// Tokens its own turns appended so far: responses and tool results (to say which key
    /// made a request outgrow the context window).
    pub grown: [u64; 2],
    /// The prewarm request's latency stream (an agent's requests are timed from the tape's:
    /// `model::tape`).
    pub lat: ChaCha8Rng,
    /// 429 retry jitter (only with `[rate_limits]`).
    pub jitter: OptionalStream,
    /// Isolated-miss draws (only with `cache.miss_probability` > 0).
    pub miss: OptionalStream,
    /// Gemini implicit hit draws (only under the `gemini` policy in implicit mode).
    pub implicit: OptionalStream,
    /// 529 draws and backoff jitter (only with `[overload]`).
    pub overload: OptionalStream,
    /// OpenAI overflow draws (only under the `openai` policy).
    pub overflow: OptionalStream,
    /// 529s received for the current request so far.
    pub overload_retries: u32,
}

/// The per-requester random streams of one replication.
struct Streams {
    /// The replication's node of the seed tree (`[replication]` below the experiment seed).
    replication: rng::Node,
    /// Which optional streams the run draws from, decided once per run: 429 jitter, isolated
    /// misses, Gemini implicit hits, 529s, OpenAI overflows.
    optional: [bool; 5],
}

impl Streams {
    fn new(exp: &ExperimentSpec, replication: u32) -> Self {
        let optional = [
            exp.rate_limits.is_some(),
            exp.cache.miss_probability > 0.0,
            super::admission::draws_implicit(exp),
            exp.overload.is_some(),
            draws_overflow(exp),
        ];
        Streams { replication: rng::Node::new(exp.seed, &[replication as u64]), optional }
    }

    /// Requester `id`'s node of the seed tree: its streams are the node's children, one per
    /// draw site (`[replication, id, site]` below the experiment seed), stepped to once.
    fn of(&self, id: u64) -> rng::Node {
        self.replication.child(id)
    }

    /// Stream `s` below a requester's `node` into `slot` when `on` (reseeded in place when
    /// the slot already holds one: no allocation), else none.
    #[inline]
    fn optional(slot: &mut OptionalStream, on: bool, node: rng::Node, s: u64) {
        match (on, slot) {
            (false, slot) => *slot = None,
            (true, Some(rng)) => node.reseed(&[s], rng),
            (true, slot) => *slot = Some(Box::new(node.stream(&[s]))),
        }
    }

    /// Everything of requester `node`'s agent but its chain and work stream (set by the
    /// caller), written into `ag` in place: an agent is large (two streams and two prompts),
    /// and one built aside would be copied into its place. Streams for the optional draws
    /// exist only when their feature is on, each at its own site: the other streams draw the
    /// same numbers whichever are on.
    fn fill(
        &self,
        ag: &mut Agent,
        (node, turns, output_tokens): (rng::Node, u32, u64),
        shared: &Shared,
    ) {
        (ag.shared_end, ag.model) = (shared.prompt.len() - 1, shared.model);
        (ag.turns, ag.turn, ag.output_tokens) = (turns, 0, output_tokens);
        (ag.slot, ag.phase, ag.grown, ag.overload_retries) =
            (SimTime::ZERO, Phase::Queued, [0; 2], 0);
        let [jitter, miss, implicit, overload, overflow] = self.optional;
        Self::optional(&mut ag.jitter, jitter, node, site::RATE_LIMIT);
        Self::optional(&mut ag.miss, miss, node, site::MISS);
        Self::optional(&mut ag.implicit, implicit, node, site::IMPLICIT_HIT);
        Self::optional(&mut ag.overload, overload, node, site::OVERLOAD);
        Self::optional(&mut ag.overflow, overflow, node, site::OVERFLOW);
    }
}

/// Whether the run draws OpenAI overflows (`cache.policy = "openai"`): every requester then
/// has an overflow stream (`rng::site::OVERFLOW`).
pub(super) fn draws_overflow(exp: &ExperimentSpec) -> bool {
    exp.cache.policy == crate::cache::Policy::OpenAi
}

/// Agent `i` of `agents` to build in place: the last run's, or a blank one added.
fn slot(agents: &mut Vec<Agent>, i: usize) -> &mut Agent {
    if i == agents.len() {
        agents.push(Agent::blank());
    }
    &mut agents[i]
}

/// Into `agents`, the run's agents in index order, then the prewarm request when `prewarm`
/// (at index `n`), from `tape` (made the replication's first: `Tape::prepare`). `strips`: the
/// agents' chains keep a bare history (`Chain::reset`). The agents already in `agents` (the
/// last run's) are built over in place, their prompts' memory kept in `spare` for the new
/// agents' prompts. Returns whether the agents copy their prompts from the tape (`Tape`):
/// their blocks are fixed (no advancing parent to fork from), synthetic, and kept whole.
pub(super) fn build_into(
    (agents, spare, memo, tape): (
        &mut Vec<Agent>,
        &mut Vec<PromptMemory>,
        &mut SharedMemo,
        &mut Tape,
    ),
    exp: &ExperimentSpec,
    replication: u32,
    prewarm: bool,
    strips: bool,
) -> bool {
    let w = &exp.workload;
    agents.iter_mut().for_each(|ag| ag.chain.give_memory(spare));
    agents.truncate(w.agents as usize + usize::from(prewarm));
    // The agents below take one memory each; the prewarm request's and the bare histories'
    // come back too but are never taken, so keep no more than will be: a reused `Simulator`
    // must not grow run after run (unbounded, a 100,000-point sweep would hold 2.6 GB of them).
    spare.truncate(w.agents as usize);
    // Each agent forks the shared prefix with room for its own turns: it needs none.
    let shared: &Shared = memo.get(exp, w.thinking);
    let copies = w.parent_turn_every_us == 0 && !strips && shared.prompt.is_synthetic();
    tape.prepare(exp, replication, copies);
    let streams = Streams::new(exp, replication);
    agents.reserve(w.agents as usize + 1);
    for a in 0..w.agents {
        let id = a as u64;
        let node = streams.of(id);
        let ag = slot(agents, a as usize);
        let (turns, output_tokens) = tape.start(a);
        let room = 1 + workload::turn_room(exp, turns - 1);
        let mut prompt = shared.prompt.fork_into(room, spare.pop());
        workload::push_task(&mut prompt, id, w.task_tokens);
        ag.chain.reset(prompt, strips);
        streams.fill(ag, (node, turns, output_tokens), shared);
    }
    if prewarm {
        // The warming request: the shared prefix, max_tokens = 0, on the workflow's streams.
        // `max_tokens: 0` is refused with extended thinking: for thinking agents it is sent
        // without thinking, so its messages layer is not theirs (it warms tools and system).
        let prompt = match w.thinking {
            true => workload::shared(exp, 0, false).prompt,
            false => shared.prompt.clone(),
        };
        let node = streams.of(WORKFLOW_ID);
        let ag = slot(agents, w.agents as usize);
        // One request of no output, timed from its own latency stream (the agents' requests
        // are timed from the tape's).
        node.reseed(&[site::LATENCY], &mut ag.lat);
        ag.chain.reset(prompt, false);
        streams.fill(ag, (node, 1, 0), shared);
    }
    copies
}

/// Whether an agent's own chain must keep a bare history: its turns carry user blocks that
/// drop its earlier thinking (thinking on, a model that strips), `model` being the agents'.
pub(super) fn strips_own(exp: &ExperimentSpec, model: &ModelParams) -> bool {
    let w = &exp.workload;
    w.thinking
        && model.thinking == ThinkingHistory::Stripped
        && w.turn_blocks.contains(&BlockKind::User)
}

impl Agent {
    /// An agent to build over (`build_into`): no prompt blocks, streams of key 0.
    fn blank() -> Agent {
        Agent {
            chain: Chain::new(Prompt::synthetic("", "", 0), false),
            shared_end: 0,
            model: 0,
            turns: 0,
            turn: 0,
            output_tokens: 0,
            slot: SimTime::ZERO,
            phase: Phase::Queued,
            grown: [0; 2],
            lat: ChaCha8Rng::from_seed([0; 32]),
            jitter: None,
            miss: None,
            implicit: None,
            overload: None,
            overflow: None,
            overload_retries: 0,
        }
    }

    pub(super) fn phase(&self) -> Phase {
        self.phase
    }

    /// Move to phase `to`. A transition `Phase::may_become` refuses is a bug in the model:
    /// it panics (in release builds too) rather than let a run count an agent twice.
    /// Held by its strategy or by a create call in flight (once, whichever comes first).
    pub(super) fn hold(&mut self) {
        if self.phase != Phase::Held {
            self.enter(Phase::Held);
        }
    }

    pub(super) fn enter(&mut self, to: Phase) {
        assert!(self.phase.may_become(to), "agent phase {:?} -> {to:?}", self.phase);
        self.phase = to;
    }

    /// Its current request's breakpoints at `ttl`, written into `bps`: end of system, end of
    /// the shared part, last block (`workload::breakpoints`).
    #[inline]
    pub(super) fn breakpoints<'b>(
        &self,
        ttl: Ttl,
        bps: &'b mut [Breakpoint; 3],
    ) -> &'b [Breakpoint] {
        let last = self.chain.prompt.len() - 1;
        let n = workload::breakpoints(1, self.shared_end, last, ttl, bps);
        &bps[..n]
    }

    /// Whether the API answers this attempt with a 529 (`Some`: the `[overload]` that did),
    /// one draw from its overload stream; no draw and no 529 without `[overload]`.
    #[inline]
    pub(super) fn overloaded<'e>(&mut self, exp: &'e ExperimentSpec) -> Option<&'e Overload> {
        let o = exp.overload.as_ref()?;
        let rng = self.overload.as_deref_mut()?;
        (rng.random::<f64>() < o.probability).then_some(o)
    }

    /// After a 529 under `o`: the client's backoff before its next retry, `min(initial *
    /// 2^n, max) * (1 - 0.25 U)` before retry n + 1 (U from its overload stream); `None` once
    /// `max_retries` retries are spent (it gives up).
    pub(super) fn backoff(&mut self, o: &Overload) -> Option<SimDuration> {
        if self.overload_retries >= o.max_retries {
            return None;
        }
        let n = self.overload_retries.min(62);
        self.overload_retries += 1;
        let base_us = o.initial_backoff_us.saturating_mul(1 << n).min(o.max_backoff_us);
        let rng = self.overload.as_deref_mut().expect("the 529 was drawn from this stream");
        let jitter = 1.0 - 0.25 * rng.random::<f64>();
        Some(SimDuration::from_us((base_us as f64 * jitter).round() as u64))
    }

    /// The tool call after request `request`, read from `tape`: extend the prompt with the
    /// response and the tool result (copied from the tape's prompt when `copies` and it
    /// reaches so far, else pushed), take the next output. Returns the tool's latency.
    #[inline]
    pub(super) fn next_turn(
        &mut self,
        exp: &ExperimentSpec,
        (tape, draws, copies): (&mut Tape, &TurnDraws<'_>, bool),
        a: u32,
        request: u32,
    ) -> SimDuration {
        let call = tape.call(exp, draws, a, request);
        let t = TurnTokens {
            output: self.output_tokens,
            result: call.result_tokens,
            user: exp.workload.task_tokens,
        };
        self.grown[0] += t.output;
        self.grown[1] += t.result;
        if !(copies && tape.copy_turn(&mut self.chain.prompt, a, request)) {
            workload::push_turn(&mut self.chain, exp, a as u64, request as u64, t);
            if copies {
                tape.pushed(a, request, self.chain.prompt.len());
            }
        }
        self.output_tokens = call.next_output;
        call.tool
    }

    /// Its current request (input and output) must fit its model's window (`window`, that
    /// model's `window_tokens`, looked up once per run). The key named: the parent's advancing
    /// history when it pushed the shared part past the window, else its own turns. `shown`:
    /// its number in the error.
    pub(super) fn check_window(
        &self,
        exp: &ExperimentSpec,
        (model, window): (&ModelParams, u64),
        shown: u32,
    ) -> Result<(), SimError> {
        let tokens = self.chain.prompt.tokens() + self.output_tokens;
        if tokens <= window {
            return Ok(());
        }
        self.window_error(exp, model, shown, (tokens, window))
    }

    /// The error of a request outgrowing its window: out of the hot path (`#[cold]`).
    #[cold]
    #[inline(never)]
    fn window_error(
        &self,
        exp: &ExperimentSpec,
        model: &ModelParams,
        shown: u32,
        (tokens, window): (u64, u64),
    ) -> Result<(), SimError> {
        let w = &exp.workload;
        let prefix = match w.kind {
            AgentKind::Subagent => w.subagent_tokens,
            _ => w.parent_tokens,
        };
        let shared = self.chain.prompt.prefix_tokens(self.shared_end);
        let grew = shared > prefix + w.brief_tokens && shared + w.task_tokens > window;
        let key = match self.grown {
            _ if grew => "workload.parent_turn_every",
            [outputs, results] if results > outputs => "workload.tool_result_tokens",
            _ => "workload.output_tokens",
        };
        let (request, model) = (self.turn, model.name.clone());
        Err(SimError::ContextWindow { agent: shown, request, tokens, window, model, key })
    }
}

#[cfg(test)]
mod tests {
    use super::Phase::*;
    use super::*;

    /// Agent 0 of the default experiment.
    fn agent() -> Agent {
        let exp = crate::Experiment::default_experiment().config().clone();
        let mut agents = Vec::new();
        build_into(
            (&mut agents, &mut Vec::new(), &mut SharedMemo::default(), &mut Tape::default()),
            &exp,
            0,
            false,
            false,
        );
        agents.swap_remove(0)
    }

    /// Run after run, the spare prompt memories stay bounded by the agents that take them,
    /// with a prewarm request and bare histories (which give memory back but take none).
    #[test]
    fn reused_agents_keep_no_more_spare_memory_than_they_take() {
        let exp = crate::Experiment::default_experiment().config().clone();
        let (mut agents, mut spare, mut memo) = (Vec::new(), Vec::new(), SharedMemo::default());
        let mut tape = Tape::default();
        for r in 0..50 {
            build_into((&mut agents, &mut spare, &mut memo, &mut tape), &exp, r, true, true);
        }
        // Each run gives back 2n + 1 memories (n chains, n bare histories, the prewarm's) and
        // takes n: without the bound the spare grows by n + 1 a run (196 after 50 runs of 3).
        let n = exp.workload.agents as usize;
        assert!(spare.len() <= n, "{} spare memories for {n} agents", spare.len());
    }

    #[test]
    #[should_panic(expected = "agent phase Done -> Running")]
    fn an_agent_goes_from_its_slot_to_its_end_and_no_further() {
        let mut a = agent();
        assert_eq!(a.phase(), Queued);
        for to in [Held, Running, Done] {
            a.enter(to);
            assert_eq!(a.phase(), to);
        }
        a.enter(Running);
    }

    #[test]
    fn phases_only_go_forward() {
        assert!(Queued.may_become(Held) && Queued.may_become(Running));
        assert!(Held.may_become(Running));
        assert!(Running.may_become(Done) && Running.may_become(Failed));
        for (from, to) in [(Held, Held), (Running, Held), (Done, Running), (Failed, Done)] {
            assert!(!from.may_become(to), "{from:?} -> {to:?}");
        }
        assert!(!Queued.may_become(Done), "a queued agent cannot complete");
    }
}
