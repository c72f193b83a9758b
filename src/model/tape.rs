//! A replication's workload, drawn once for every strategy that runs it.
//!
//! Common random numbers: every strategy of a replication sees the same agents, each with the
//! same turn count, output tokens, tool latencies and tool results, drawn from the agent's own
//! workload stream (`[replication, agent, WORKLOAD]` below the experiment seed), and the same
//! latency terms for each of its requests (its `LATENCY` stream: a request's terms are drawn
//! before they meet its tokens, `latency::Rates`). None of it depends on timing, so a
//! simulator that runs a replication's strategies back to back (as `exec` and the sweep do)
//! draws it once: the `Tape` keeps each agent's draws, and, where the prompts are as fixed as
//! the draws, the longest prompt a run gave the agent, whose blocks later runs copy instead of
//! hashing them again (`Prompt::extend_from`).
//!
//! The tape is drawn lazily, turn by turn, as runs ask: a run cut short (an agent that gave
//! up) draws no more than it reads, and the first run of a replication extends the tape
//! exactly where it would have drawn. Each agent's draws come from its own stream in the
//! order a run without a tape made them (turns, the first output; then per tool call: the
//! denial, the tool latency, the result, the next output), so a run reads the very numbers it
//! would draw itself. A run that pushes turns past the tape's prompt gives its prompt to the tape
//! when it ends (`adopt`); a run that fails leaves a tape that is drawn again.
//!
//! What it is drawn for is its key: the experiment seed, the replication, the workload (every
//! distribution and size that shapes a draw or a block), the latency terms' distributions,
//! the model (the shared prefix is keyed to it) and whether it keeps prompts. Anything else a
//! run varies (the strategy, the cache, rate limits, the server) reads the tape unchanged.

use super::latency::{Latency, Terms};
use super::workload;
use crate::cache::Prompt;
use crate::config::{AgentKind, ExperimentSpec, LatencyParams, Workload};
use crate::dist::Sampler;
use crate::rng::{self, site, ChaCha8Rng, RngExt, SeedableRng};
use crate::time::SimDuration;

/// The draws (and prompts) of one replication's agents; see the module's docs.
#[derive(Default)]
pub(super) struct Tape {
    /// What the tape holds draws for; `None` before the first run and after a failed one.
    key: Option<Key>,
    /// Each agent's, in agent order; the first `workload.agents` are the key's (the rest are
    /// an earlier replication's, kept for their memory).
    agents: Vec<AgentTape>,
}

/// Everything a tape's contents are drawn or built from (module docs).
struct Key {
    /// The experiment seed and the replication; `None` while they are being drawn.
    replication: Option<(u64, u32)>,
    model: String,
    prompts: bool,
    workload: Workload,
    /// The latency terms' distributions (the agents' model's, then `fork_other_model`'s).
    latency: (LatencyParams, Option<LatencyParams>),
}

/// One agent's draws so far, and its streams positioned after them.
struct AgentTape {
    work: ChaCha8Rng,
    /// Its latency stream, and the terms drawn from it for each request served so far, with
    /// the request's decode time at its output tokens (request k's at k: a request is served
    /// once, however often it is retried, and always with its own output tokens).
    lat: ChaCha8Rng,
    terms: Vec<Terms>,
    turns: u32,
    /// Output tokens of each request drawn so far (request k's at k): one more than `calls`.
    outputs: Vec<u64>,
    /// The tool call after each request drawn so far: its latency and its result's tokens.
    calls: Vec<(SimDuration, u64)>,
    /// With prompts kept: the longest prompt a run of this replication gave the agent, of
    /// which the first `readable` blocks are this replication's (none before its first run
    /// ends: the rest is an earlier one's, kept for its memory), and the number of blocks of
    /// the prompt after each tool call a run pushed (request k + 1's at k).
    prompt: Prompt,
    readable: usize,
    ends: Vec<usize>,
}

/// One tool call read from the tape: the tool's latency, its result's tokens, and the output
/// tokens of the request after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    pub tool: SimDuration,
    pub result_tokens: u64,
    pub next_output: u64,
}

impl Tape {
    /// Make the tape the one of `replication` of `exp` (`prompts`: keep the agents' prompts),
    /// unless it already is.
    pub(super) fn prepare(&mut self, exp: &ExperimentSpec, replication: u32, prompts: bool) {
        let drawn_for = |k: &Key| {
            k.prompts == prompts
                && k.model == exp.model.name
                && k.workload == exp.workload
                && k.latency.0 == exp.latency
                && k.latency.1 == exp.latency_other
        };
        let replication_key = Some((exp.seed, replication));
        match &self.key {
            Some(k) if k.replication == replication_key && drawn_for(k) => {}
            // Another replication (or seed) of the same workload: the key is kept (not cloned
            // again), out of the tape while it is drawn.
            Some(k) if drawn_for(k) => {
                let key = self.key.take();
                self.draw_starts(exp, replication);
                self.key = key.map(|k| Key { replication: replication_key, ..k });
            }
            _ => {
                self.key = None;
                self.draw_starts(exp, replication);
                self.key = Some(Key {
                    replication: replication_key,
                    model: exp.model.name.clone(),
                    prompts,
                    workload: exp.workload.clone(),
                    latency: (exp.latency.clone(), exp.latency_other.clone()),
                });
            }
        }
    }

    /// Room for `n` agents' tapes, reserved without aborting (`Buffers::reserve`); on failure
    /// the bytes asked for.
    pub(super) fn try_reserve(&mut self, n: usize) -> Result<(), usize> {
        let more = n.saturating_sub(self.agents.len());
        let bytes = n.saturating_mul(std::mem::size_of::<AgentTape>());
        self.agents.try_reserve_exact(more).map_err(|_| bytes)
    }

    /// Forget the draws: the next run draws them again (a run failed: its agents' prompts may
    /// not have reached the tape).
    pub(super) fn invalidate(&mut self) {
        self.key = None;
    }

    /// Every agent's turn count and first output from its workload stream (rekeyed in place),
    /// and no calls or prompt yet.
    fn draw_starts(&mut self, exp: &ExperimentSpec, replication: u32) {
        let w = &exp.workload;
        let node = rng::Node::new(exp.seed, &[replication as u64]);
        let (turns_draw, output_draw) = (Sampler::new(&w.turns), Sampler::new(&w.output_tokens));
        for a in 0..w.agents as usize {
            if a == self.agents.len() {
                self.agents.push(AgentTape::blank());
            }
            let t = &mut self.agents[a];
            let agent = node.child(a as u64);
            agent.reseed(&[site::WORKLOAD], &mut t.work);
            agent.reseed(&[site::LATENCY], &mut t.lat);
            t.terms.clear();
            t.turns = match w.kind {
                AgentKind::Btw => 1,
                _ => turns_draw.sample_u64(&mut t.work).clamp(1, u32::MAX as u64) as u32,
            };
            t.outputs.clear();
            t.outputs.push(output_draw.sample_u64(&mut t.work).min(w.output_max_tokens));
            t.calls.clear();
            t.ends.clear();
            t.readable = 0;
        }
    }

    /// Agent `a`'s turn count and first request's output tokens.
    pub(super) fn start(&self, a: u32) -> (u32, u64) {
        let t = &self.agents[a as usize];
        (t.turns, t.outputs[0])
    }

    /// The tool call after agent `a`'s request `request`, drawn now if no run drew it yet.
    #[inline]
    pub(super) fn call(
        &mut self,
        exp: &ExperimentSpec,
        draws: &TurnDraws,
        a: u32,
        request: u32,
    ) -> Call {
        let t = &mut self.agents[a as usize];
        let k = request as usize;
        while t.calls.len() <= k {
            t.draw_call(exp, draws);
        }
        let (tool, result_tokens) = t.calls[k];
        Call { tool, result_tokens, next_output: t.outputs[k + 1] }
    }

    /// The latency terms of agent `a`'s request `request`, with its decode time at its output
    /// tokens (drawn from `latency`, its model's, if no run drew them yet).
    #[inline]
    pub(super) fn terms(&mut self, latency: &Latency, a: u32, request: u32) -> Terms {
        let t = &mut self.agents[a as usize];
        let k = request as usize;
        while t.terms.len() <= k {
            t.draw_terms(latency);
        }
        t.terms[k]
    }

    /// The output tokens of agent `a`'s request `request` (drawn already: the request is sent).
    #[cfg(debug_assertions)]
    pub(super) fn output(&self, a: u32, request: u32) -> u64 {
        self.agents[a as usize].outputs[request as usize]
    }

    /// Grow `prompt`, agent `a`'s prompt of request `request` (its first, grown by this
    /// function or `pushed` turn by turn), to that of request `request + 1` by copying the
    /// turn's blocks from the tape's prompt: `false` when the tape's prompt does not reach so
    /// far (the caller pushes the turn, then says so with `pushed`).
    #[inline]
    pub(super) fn copy_turn(&self, prompt: &mut Prompt, a: u32, request: u32) -> bool {
        let t = &self.agents[a as usize];
        match t.ends.get(request as usize) {
            Some(&end) if end <= t.readable => {
                prompt.extend_from(&t.prompt, end);
                true
            }
            _ => false,
        }
    }

    /// Agent `a`'s prompt after the tool call of request `request` has `len` blocks (pushed
    /// by the caller where `copy_turn` could not copy them).
    #[inline]
    pub(super) fn pushed(&mut self, a: u32, request: u32, len: usize) {
        let ends = &mut self.agents[a as usize].ends;
        if ends.len() == request as usize {
            ends.push(len);
        }
        debug_assert_eq!(ends[request as usize], len, "agent {a}'s turn {request}");
    }

    /// Keep `prompt`, agent `a`'s prompt at the end of a successful run, when it reaches
    /// further than the tape's: swapped in (the tape's goes back to the agent, to be given
    /// back as memory), not copied.
    pub(super) fn adopt(&mut self, a: u32, prompt: &mut Prompt) {
        let t = &mut self.agents[a as usize];
        if prompt.len() > t.readable {
            std::mem::swap(&mut t.prompt, prompt);
            t.readable = t.prompt.len();
        }
    }
}

/// The workload's per-turn distributions, ready to draw from (built once per run).
#[derive(Debug, Clone, Copy)]
pub(super) struct TurnDraws<'e> {
    output_tokens: Sampler<'e>,
    tool_latency_us: Sampler<'e>,
    tool_result_tokens: Sampler<'e>,
}

impl<'e> TurnDraws<'e> {
    pub(super) fn new(w: &'e Workload) -> Self {
        TurnDraws {
            output_tokens: Sampler::new(&w.output_tokens),
            tool_latency_us: Sampler::new(&w.tool_latency_us),
            tool_result_tokens: Sampler::new(&w.tool_result_tokens),
        }
    }
}

impl AgentTape {
    fn blank() -> AgentTape {
        AgentTape {
            work: ChaCha8Rng::from_seed([0; 32]),
            lat: ChaCha8Rng::from_seed([0; 32]),
            terms: Vec::new(),
            turns: 0,
            outputs: Vec::new(),
            calls: Vec::new(),
            prompt: Prompt::synthetic("", "", 0),
            readable: 0,
            ends: Vec::new(),
        }
    }

    /// Draw the latency terms of the next request and time its decode at its output tokens
    /// (drawn before it is sent: the first in `draw_starts`, the others with the tool call
    /// before them). Out of line, as `draw_call`.
    #[inline(never)]
    fn draw_terms(&mut self, latency: &Latency) {
        let output = self.outputs[self.terms.len()];
        let terms = latency.sample(&mut self.lat).terms(output);
        self.terms.push(terms);
    }

    /// Draw the next tool call (after the last request drawn) and the output of the request
    /// after it. Out of line: a replication's first run draws, the others read.
    #[inline(never)]
    fn draw_call(&mut self, exp: &ExperimentSpec, draws: &TurnDraws) {
        let w = &exp.workload;
        let denied = match w.kind {
            AgentKind::ForkDenyAtCall { .. } => self.work.random::<f64>() < w.denied_call_share,
            _ => false,
        };
        let mut tool = SimDuration::from_us(draws.tool_latency_us.sample_u64(&mut self.work));
        let mut result =
            draws.tool_result_tokens.sample_u64(&mut self.work).min(w.tool_result_max_tokens);
        if denied {
            // Refused at call time: an immediate, short error result.
            tool = SimDuration::ZERO;
            result = workload::DENIED_RESULT_TOKENS;
        }
        self.calls.push((tool, result));
        let next = draws.output_tokens.sample_u64(&mut self.work).min(w.output_max_tokens);
        self.outputs.push(next);
    }
}
