//! The agent state machine and the launch strategies, driven by the engine.
//!
//! One run: at t0 the fan-out starts (t0 = `parent_idle` when the parent is warm: the parent's
//! entries are written at simulated time 0, so an idle time past the TTL means they expired).
//! Agents take concurrency slots in index order; a strategy gates each agent's first request
//! only; each request is admitted by the rate limiter (or gets a 429 and retries), served by the
//! model's cache, timed by the latency model, and followed by a tool call and the next turn.
//! Every output time is relative to t0. Draws come from per-agent streams (common random
//! numbers), in a fixed order per agent: turns, output_0, then per later turn
//! [denied], tool latency, tool result, output_k; latency and 429 jitter have their own streams.
//!
//! With `workload.parent_turn_every` > 0 the parent advances: one request every that often from
//! t0 (its own chain, one exchange per turn shaped by `parent_exchange_blocks`, counted in
//! `RunMetrics::parent_*`), until the last agent completes; an agent's first request forks the
//! history as of its send (every exchange sent strictly before it). See docs/model.md, "An
//! advancing parent". Thinking, context windows and TTL buckets follow docs/anthropic.md.

use super::latency::{self, Work};
use super::rate::{Admission, Limit, RateLimiter};
use super::workload::{self, Chain, Shared, TurnTokens, WORKFLOW_ID};
use super::{Detailed, Outcome, RequestKeys, RequestRecord, Segment, SegmentKind, SimError};
use crate::cache::{self, Breakpoint, Cache, Prompt, Usage};
use crate::config::{
    AgentKind, BlockKind, Experiment, ModelParams, Release, Strategy, ThinkingHistory, Ttl,
};
use crate::engine::{Bounds, Engine};
use crate::metrics::RunMetrics;
use crate::rng::{self, site, ChaCha8Rng, RngExt};
use crate::time::SimTime;

/// The events of the model.
#[derive(Debug, Clone, Copy)]
enum Ev {
    /// The fan-out starts (t0): the first wave takes its slots.
    Start,
    /// A stagger gate opens for the agent's first request.
    Gate(u32),
    /// Send (or retry after a 429) the agent's current request.
    Send(u32),
    /// The agent's current response begins (scheduled only when a strategy listens).
    FirstToken(u32),
    /// The agent's current response ends.
    ResponseEnd(u32),
    /// The `wait_first` hold reaches its cap.
    HoldCap,
    /// The prewarm request's entries are readable.
    PrewarmReady,
    /// The parent conversation sends its next turn (`workload.parent_turn_every` > 0).
    ParentTurn,
    /// The parent retries its pending request after a 429 (`rate_limits.parent_counts`).
    ParentSend,
    /// The next agent arrives and asks for a slot (`workload.arrival_every` > 0).
    Arrive,
}

/// One agent (or the prewarm request) and where it is.
struct Agent {
    /// Its prompt as the API processes it.
    chain: Chain,
    shared_end: usize,
    model: usize,
    turns: u32,
    turn: u32,
    output_tokens: u64,
    slot_us: SimTime,
    /// Its first response has ended (tracked where observed: under `sequential`, and at the
    /// last response).
    first_done: bool,
    /// Sequential: waiting for the previous agent's first request to finish.
    waiting_prev: bool,
    /// Tokens its own turns appended so far: responses and tool results (to say which key
    /// made a request outgrow the context window).
    grown: [u64; 2],
    work: ChaCha8Rng,
    lat: ChaCha8Rng,
    jitter: ChaCha8Rng,
    /// Isolated-miss draws (only with `cache.miss_probability` > 0).
    miss: Option<ChaCha8Rng>,
    /// 529 draws and backoff jitter (only with `[overload]`).
    overload: Option<ChaCha8Rng>,
    /// 529s received for the current request so far.
    overload_retries: u32,
}

/// The parent conversation while the fan-out runs, when it advances
/// (`workload.parent_turn_every` > 0): its own chain, and the line of history the agents fork.
struct Parent {
    /// Its own requests: tools, system, history, then its exchanges, as the API processes them.
    own: Chain,
    /// The history the agents fork: the same exchanges behind their kind's tools, system and
    /// model, with the agents' thinking setting (for the kinds that keep the parent's prefix,
    /// with the same setting, the same digests as `own`).
    line: Prompt,
    /// The agents' line without thinking blocks, when their first request drops the parent's
    /// thinking (their model strips it, or their requests have thinking off); `None` otherwise.
    line_bare: Option<Prompt>,
    /// The agents' view before the latest exchange, and when that exchange was sent: an agent
    /// sent at that very instant carries the history without it (it left first).
    before: Prompt,
    changed_us: SimTime,
    /// Exchanges so far.
    turn: u64,
    work: ChaCha8Rng,
    lat: ChaCha8Rng,
    miss: Option<ChaCha8Rng>,
    /// 429 jitter (only when the parent draws on the buckets, `rate_limits.parent_counts`).
    jitter: Option<ChaCha8Rng>,
    /// The output tokens of its latest turn, and whether that turn is still to be sent (a
    /// 429 delayed it).
    out: u64,
    pending: bool,
}

/// Reusable simulation buffers: the event heap keeps its capacity across runs.
pub struct Simulator {
    engine: Engine<Ev>,
    held: Vec<u32>,
    /// One cache per model, emptied (memory kept) at the start of every run.
    caches: Vec<Cache>,
}

impl Default for Simulator {
    fn default() -> Self {
        Self::new()
    }
}

impl Simulator {
    pub fn new() -> Self {
        Simulator {
            engine: Engine::with_capacity(Bounds::UNBOUNDED, 256),
            held: Vec::new(),
            caches: Vec::new(),
        }
    }

    /// Run one replication into `metrics` (reset first; its histograms are reused).
    pub fn run_into(
        &mut self,
        exp: &Experiment,
        strategy: &Strategy,
        replication: u32,
        metrics: &mut RunMetrics,
    ) -> Result<(), SimError> {
        reset_metrics(metrics);
        let mut run = Run::new(exp, strategy, replication, self, metrics, false)?;
        run.go()?;
        Ok(())
    }

    /// Run one replication with the timeline and the per-request records.
    pub fn run_detailed(
        &mut self,
        exp: &Experiment,
        strategy: &Strategy,
        replication: u32,
    ) -> Result<Detailed, SimError> {
        let mut metrics = RunMetrics::new();
        let mut run = Run::new(exp, strategy, replication, self, &mut metrics, true)?;
        run.go()?;
        let (mut segments, requests) = run.trace.take().expect("traced run keeps a trace");
        segments.sort_by_key(|s| (s.agent, s.start_us, s.kind, s.request));
        Ok(Detailed { metrics, segments, requests })
    }
}

fn reset_metrics(m: &mut RunMetrics) {
    m.tokens = Default::default();
    m.requests = 0;
    m.requests_with_hit = 0;
    m.redundant_writes = 0;
    m.cost_usd = 0.0;
    m.cost_uncached_usd = 0.0;
    m.launch_wait_us.clear();
    m.ttft_us.clear();
    m.completion_us.clear();
    m.makespan_us = 0;
    m.agents = 0;
    m.rate_limited = 0;
    m.throttled_us = 0;
    m.events = 0;
    m.parent_requests = 0;
    m.parent_tokens = Default::default();
    m.parent_cost_usd = 0.0;
    m.overloaded = 0;
    m.failed_agents = 0;
    m.isolated_misses = 0;
    m.long_context_requests = 0;
    m.hold_first_token_us = None;
    m.hold_capped = false;
}

type Trace = (Vec<Segment>, Vec<RequestRecord>);

/// One run in progress.
struct Run<'a> {
    exp: &'a Experiment,
    strategy: &'a Strategy,
    engine: &'a mut Engine<Ev>,
    held: &'a mut Vec<u32>,
    metrics: &'a mut RunMetrics,
    trace: Option<Trace>,
    t0: SimTime,
    /// Number of agents (the prewarm request, if any, is `agents[n]`).
    n: u32,
    agents: Vec<Agent>,
    caches: &'a mut Vec<Cache>,
    models: Vec<ModelParams>,
    /// One limiter per rate-limit class; `limiter_of[m]` is model `m`'s (models of one class
    /// share buckets).
    limiters: Vec<Option<RateLimiter>>,
    limiter_of: [usize; 2],
    next_queued: u32,
    /// Agents that have arrived (asked for a slot); all of them at t0 unless
    /// `workload.arrival_every` spreads them.
    arrived: u32,
    /// Concurrency slots not taken.
    free_slots: u32,
    /// `wait_first`: held agents are waiting for the release.
    hold_open: bool,
    /// `prewarm`: the warming entry is readable.
    prewarm_ready: bool,
    /// Agents that completed their last response.
    completed: u32,
    /// The advancing parent (`None`: the parent is frozen, `parent_turn_every = 0`).
    parent: Option<Parent>,
    /// TTL of the agents' (and the prewarm's) breakpoints, and of the parent's.
    agent_ttl: Ttl,
    parent_ttl: Ttl,
}

impl<'a> Run<'a> {
    fn new(
        exp: &'a Experiment,
        strategy: &'a Strategy,
        replication: u32,
        sim: &'a mut Simulator,
        metrics: &'a mut RunMetrics,
        traced: bool,
    ) -> Result<Self, SimError> {
        let w = &exp.workload;
        if w.agents == 0 || w.concurrency == 0 {
            return Err(SimError::Invalid(format!(
                "workload.agents = {} and workload.concurrency = {} must both be at least 1",
                w.agents, w.concurrency
            )));
        }
        let t0 = if w.parent_warm { w.parent_idle_us } else { 0 };
        let bounds = Bounds {
            max_events: exp.limits.max_events,
            horizon_us: t0.saturating_add(exp.limits.horizon_us),
        };
        sim.engine.reset(bounds, 0);
        sim.held.clear();
        let mut models = vec![exp.model.clone()];
        if let AgentKind::ForkOtherModel { model } = &w.kind {
            models.push(cache::preset(model).ok_or_else(|| SimError::UnknownModel(model.clone()))?);
        }
        sim.caches.truncate(models.len());
        for (i, m) in models.iter().enumerate() {
            match sim.caches.get_mut(i) {
                Some(cache) => cache.reset(&exp.cache, m),
                None => sim.caches.push(Cache::from_params(&exp.cache, m)),
            }
        }
        let same_class =
            models.len() == 2 && models[0].rate_limit_class == models[1].rate_limit_class;
        let limiter_of = if same_class { [0, 0] } else { [0, 1] };
        let limiter = || {
            exp.rate_limits
                .as_ref()
                .map(|r| RateLimiter::with_interval(r.rpm, r.itpm, r.otpm, r.interval_us))
        };
        let limiters = (0..models.len() - usize::from(same_class)).map(|_| limiter()).collect();
        metrics.agents = w.agents as u64;
        let mut run = Run {
            exp,
            strategy,
            engine: &mut sim.engine,
            held: &mut sim.held,
            metrics,
            trace: traced.then(|| (Vec::new(), Vec::new())),
            t0,
            n: w.agents,
            agents: Vec::with_capacity(w.agents as usize + 1),
            caches: &mut sim.caches,
            models,
            limiters,
            limiter_of,
            next_queued: 0,
            arrived: 0,
            free_slots: w.concurrency,
            hold_open: false,
            prewarm_ready: false,
            completed: 0,
            parent: None,
            agent_ttl: exp.cache.agent_ttl(&w.kind),
            parent_ttl: exp.cache.parent_ttl(),
        };
        run.warm_parent()?;
        run.make_agents(replication);
        run.make_parent(replication);
        Ok(run)
    }

    /// A warm parent: its last request wrote its entries at time 0, readable at once. A
    /// parent of no tokens has nothing to cache: warm or cold, the same (nothing is written).
    fn warm_parent(&mut self) -> Result<(), SimError> {
        if !self.exp.workload.parent_warm || self.exp.workload.parent_tokens == 0 {
            return Ok(());
        }
        let (prompt, bps) = workload::parent_request(self.exp);
        self.caches[0].serve(&prompt, &bps, 0, |_| 0).map_err(|source| SimError::Cache {
            agent: u32::MAX,
            request: 0,
            source,
        })?;
        Ok(())
    }

    fn make_agents(&mut self, replication: u32) {
        let exp = self.exp;
        let w = &exp.workload;
        let turns_hint = w.turns.mean().ceil().clamp(1.0, 64.0) as usize;
        let shared: Shared = workload::shared(exp, turns_hint, w.thinking);
        let shared_end = shared.prompt.len() - 1;
        let strips = self.agents_strip_own();
        let stream = |id: u64, s: u64| rng::stream(exp.seed, &[replication as u64, id, s]);
        // Streams for the optional draws exist only when their feature is on: a run that
        // enables nothing draws exactly what it drew before.
        let (misses, overloads) = (exp.cache.miss_probability > 0.0, exp.overload.is_some());
        for a in 0..self.n {
            let id = a as u64;
            let mut work = stream(id, site::WORKLOAD);
            let turns = if w.kind == AgentKind::Btw {
                1
            } else {
                (w.turns.sample_u64(&mut work).max(1)).min(u32::MAX as u64) as u32
            };
            let output_tokens = w.output_tokens.sample_u64(&mut work).min(w.output_max_tokens);
            let mut prompt = shared.prompt.clone();
            workload::push_task(&mut prompt, id, w.task_tokens);
            self.agents.push(Agent {
                chain: Chain::new(prompt, strips),
                shared_end,
                model: shared.model,
                turns,
                turn: 0,
                output_tokens,
                slot_us: 0,
                first_done: false,
                waiting_prev: false,
                grown: [0; 2],
                work,
                lat: stream(id, site::LATENCY),
                jitter: stream(id, site::RATE_LIMIT),
                miss: misses.then(|| stream(id, site::MISS)),
                overload: overloads.then(|| stream(id, site::OVERLOAD)),
                overload_retries: 0,
            });
        }
        if *self.strategy == Strategy::Prewarm {
            // The warming request: the shared prefix, max_tokens = 0, on the workflow's streams.
            // `max_tokens: 0` is refused with extended thinking: for thinking agents it is sent
            // without thinking, so its messages layer is not theirs (it warms tools and system).
            let prompt = match w.thinking {
                true => workload::shared(exp, 0, false).prompt,
                false => shared.prompt,
            };
            self.agents.push(Agent {
                chain: Chain::new(prompt, false),
                shared_end,
                model: shared.model,
                turns: 1,
                turn: 0,
                output_tokens: 0,
                slot_us: 0,
                first_done: false,
                waiting_prev: false,
                grown: [0; 2],
                work: stream(WORKFLOW_ID, site::WORKLOAD),
                lat: stream(WORKFLOW_ID, site::LATENCY),
                jitter: stream(WORKFLOW_ID, site::RATE_LIMIT),
                miss: misses.then(|| stream(WORKFLOW_ID, site::MISS)),
                overload: overloads.then(|| stream(WORKFLOW_ID, site::OVERLOAD)),
                overload_retries: 0,
            });
        }
    }

    /// The advancing parent, when `parent_turn_every` > 0: its prompt as of t0 (the warm
    /// parent's last request) and, for kinds that do not keep its prefix, the agents' line.
    fn make_parent(&mut self, replication: u32) {
        let exp = self.exp;
        if exp.workload.parent_turn_every_us == 0 {
            return;
        }
        let w = &exp.workload;
        let stream = |s: u64| rng::stream(exp.seed, &[replication as u64, workload::PARENT_ID, s]);
        let (mut prompt, _) = workload::parent_request(exp);
        prompt.reserve(64);
        let strips_own = w.parent_thinks()
            && self.models[0].thinking == ThinkingHistory::Stripped
            && w.parent_exchange_blocks.contains(&BlockKind::User);
        let line = workload::line(exp, 64, w.thinking);
        let agents_drop = self.models.last().expect("a model").thinking
            == ThinkingHistory::Stripped
            || !w.thinking;
        let line_bare = (w.parent_thinks() && agents_drop).then(|| line.clone());
        let before = line_bare.as_ref().unwrap_or(&line).clone();
        self.parent = Some(Parent {
            own: Chain::new(prompt, strips_own),
            line,
            line_bare,
            before,
            changed_us: SimTime::MAX,
            turn: 0,
            work: stream(site::WORKLOAD),
            lat: stream(site::LATENCY),
            miss: (exp.cache.miss_probability > 0.0).then(|| stream(site::MISS)),
            jitter: counts_parent(exp).then(|| stream(site::RATE_LIMIT)),
            out: 0,
            pending: false,
        });
    }

    /// Schedule the parent's next turn at `at`, unless it is past the horizon (the parent's
    /// turns stop there; the agents' own events still meet the engine's bound).
    fn schedule_parent_turn(&mut self, at: SimTime) {
        if self.parent.is_some() && at <= self.t0.saturating_add(self.exp.limits.horizon_us) {
            self.engine.schedule_at(at, Ev::ParentTurn);
        }
    }

    /// Start the fan-out at t0 and run the engine to the end.
    fn go(&mut self) -> Result<(), SimError> {
        let t0 = self.t0;
        // Starting the agents as the first event puts the clock at t0 for them.
        self.engine.schedule_at(t0, Ev::Start);
        let every_us = self.exp.workload.parent_turn_every_us;
        self.schedule_parent_turn(t0.saturating_add(every_us));
        while let Some((_, ev)) = self.engine.pop()? {
            self.handle(ev)?;
        }
        self.metrics.events = self.engine.delivered();
        Ok(())
    }

    fn start(&mut self) -> Result<(), SimError> {
        if *self.strategy == Strategy::Prewarm {
            self.send(self.n)?;
        }
        if self.exp.workload.arrival_every_us == 0 {
            self.arrived = self.n;
        } else {
            self.arrived = 1;
            self.schedule_arrival();
        }
        self.fill_slots()
    }

    /// Agent `a` arrives at t0 + a * arrival_every.
    fn arrival_us(&self, a: u32) -> SimTime {
        let every = self.exp.workload.arrival_every_us;
        self.t0.saturating_add(every.saturating_mul(u64::from(a)))
    }

    /// Schedule the next agent's arrival, if one is still to come.
    fn schedule_arrival(&mut self) {
        if self.arrived < self.n {
            let at = self.arrival_us(self.arrived);
            self.engine.schedule_at(at, Ev::Arrive);
        }
    }

    /// Give free slots to arrived agents, in agent order.
    fn fill_slots(&mut self) -> Result<(), SimError> {
        while self.free_slots > 0 && self.next_queued < self.arrived {
            self.free_slots -= 1;
            self.take_slot()?;
        }
        Ok(())
    }

    fn handle(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::Start => self.start(),
            Ev::Gate(a) => self.send_first(a),
            Ev::Send(a) => self.send(a),
            Ev::FirstToken(a) => {
                // Scheduled only for agent 0's first request while the hold is open.
                if a == 0 && self.hold_open {
                    self.release()?;
                }
                Ok(())
            }
            Ev::ResponseEnd(a) => self.response_end(a),
            Ev::HoldCap => {
                if self.hold_open {
                    self.note_cap();
                    self.release()?;
                }
                Ok(())
            }
            Ev::PrewarmReady => {
                self.prewarm_ready = true;
                self.release()
            }
            Ev::ParentTurn => self.parent_turn(),
            Ev::ParentSend => self.parent_send(),
            Ev::Arrive => {
                self.arrived += 1;
                self.schedule_arrival();
                self.fill_slots()
            }
        }
    }

    /// Give the next queued agent a slot and apply the strategy's gate to its first request.
    fn take_slot(&mut self) -> Result<(), SimError> {
        let a = self.next_queued;
        debug_assert!(a < self.n);
        self.next_queued += 1;
        let now = self.engine.now();
        self.agents[a as usize].slot_us = now;
        match *self.strategy {
            Strategy::Eager => self.send_first(a),
            Strategy::WaitFirst { max_wait_us: 0, .. } => {
                self.send_first(a)?;
                if a == 0 {
                    self.note_cap();
                }
                Ok(())
            }
            Strategy::WaitFirst { max_wait_us, .. } => {
                if a == 0 {
                    self.hold_open = true;
                    self.engine.schedule_in(max_wait_us, Ev::HoldCap);
                    // With release = on_ready, agent 0's first token (scheduled when its
                    // request is served) releases the hold earlier than the cap.
                    self.send_first(0)
                } else if self.hold_open {
                    self.held.push(a);
                    Ok(())
                } else {
                    self.send_first(a)
                }
            }
            Strategy::Stagger { interval_us } => {
                let at = self.t0.saturating_add(interval_us.saturating_mul(a as u64));
                if at <= now {
                    self.send_first(a)
                } else {
                    self.engine.schedule_at(at, Ev::Gate(a));
                    Ok(())
                }
            }
            Strategy::Sequential => {
                if a == 0 || self.agents[a as usize - 1].first_done {
                    self.send_first(a)
                } else {
                    self.agents[a as usize].waiting_prev = true;
                    Ok(())
                }
            }
            Strategy::Prewarm => {
                if self.prewarm_ready {
                    self.send_first(a)
                } else {
                    self.held.push(a);
                    Ok(())
                }
            }
        }
    }

    /// `wait_first`'s cap is reached (now): record whether the first writer's response had
    /// begun by then (`RunMetrics::hold_capped`).
    fn note_cap(&mut self) {
        let Strategy::WaitFirst { max_wait_us, .. } = *self.strategy else { return };
        let began = self.metrics.hold_first_token_us.is_some_and(|t| t <= max_wait_us);
        self.metrics.hold_capped = !began;
    }

    /// Release every held agent together, in index order.
    fn release(&mut self) -> Result<(), SimError> {
        self.hold_open = false;
        let mut held = std::mem::take(self.held);
        for &a in &held {
            self.send_first(a)?;
        }
        held.clear();
        *self.held = held;
        Ok(())
    }

    /// The gate is open: the agent's first request goes now.
    fn send_first(&mut self, a: u32) -> Result<(), SimError> {
        let now = self.engine.now();
        let slot_us = self.agents[a as usize].slot_us;
        if now > slot_us {
            self.segment(a, 0, SegmentKind::Hold, slot_us, now, Outcome::None);
        }
        self.fork_history(a);
        self.send(a)
    }

    /// With an advancing parent, agent `a`'s prompt forks the history as of now: its line
    /// (the parent's own prompt, or the same history behind its kind's tools, system or
    /// model), then the brief and its task. Subagents carry no history. A 429 retry resends
    /// this same body.
    fn fork_history(&mut self, a: u32) {
        let Some(p) = self.parent.as_ref() else { return };
        let exp = self.exp;
        if exp.workload.kind == AgentKind::Subagent {
            return;
        }
        let now = self.engine.now();
        let line = match &p.line_bare {
            _ if p.changed_us == now => &p.before,
            Some(bare) => bare,
            None => &p.line,
        };
        let strips = self.agents_strip_own();
        let per_turn = exp.workload.turn_blocks.len() + 1;
        let ag = &mut self.agents[a as usize];
        let mut prompt = line.clone();
        prompt.reserve(3 + per_turn * ag.turns as usize);
        workload::push_brief(&mut prompt, exp);
        ag.shared_end = prompt.len() - 1;
        workload::push_task(&mut prompt, a as u64, exp.workload.task_tokens);
        ag.chain = Chain::new(prompt, strips);
    }

    /// Whether an agent's own chain must keep a bare history: its turns carry user blocks
    /// that drop its earlier thinking (thinking on, a model that strips).
    fn agents_strip_own(&self) -> bool {
        let w = &self.exp.workload;
        w.thinking
            && self.models.last().expect("a model").thinking == ThinkingHistory::Stripped
            && w.turn_blocks.contains(&BlockKind::User)
    }

    /// The parent's next turn: one exchange appended to its history (and to the agents'
    /// line), its request served by the cache like any other (breakpoints: end of system, last
    /// message; no rate limiter), counted apart from the fan-out. Stops once every agent is done.
    fn parent_turn(&mut self) -> Result<(), SimError> {
        if self.completed == self.n {
            return Ok(());
        }
        let now = self.engine.now();
        let exp = self.exp;
        let w = &exp.workload;
        let p = self.parent.as_mut().expect("parent turns are scheduled only with a parent");
        p.turn += 1;
        let tokens = w.parent_turn_tokens.sample_u64(&mut p.work);
        p.out = w.output_tokens.sample_u64(&mut p.work).min(w.output_max_tokens);
        p.before.clone_from(p.line_bare.as_ref().unwrap_or(&p.line));
        p.changed_us = now;
        for (kind, block) in workload::exchange(exp, p.turn, tokens).into_iter().flatten() {
            p.own.push(kind, block);
            p.line.push(block);
            if let (Some(bare), false) = (p.line_bare.as_mut(), kind == BlockKind::Thinking) {
                bare.push(block);
            }
        }
        // The clock goes on whether or not this turn is sent now; a turn still waiting on a
        // 429 is sent with this one's exchange appended (the conversation went on).
        let pending = p.pending;
        self.schedule_parent_turn(now.saturating_add(w.parent_turn_every_us));
        if pending {
            return Ok(());
        }
        self.parent_send()
    }

    /// Send the parent's latest turn (or retry it after a 429): its breakpoints (end of
    /// system, last message, the parent's TTL), the window check, the buckets when the parent
    /// draws on them, the cache; counted apart from the fan-out.
    fn parent_send(&mut self) -> Result<(), SimError> {
        let now = self.engine.now();
        let exp = self.exp;
        let p = self.parent.as_mut().expect("parent sends only with a parent");
        let out = p.out;
        let ttl = self.parent_ttl;
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let last = p.own.prompt.len() - 1;
        let nbps = workload::breakpoints(1, last, last, ttl, &mut bps);
        let (agent, request) = (self.n + 1, (p.turn - 1) as u32);
        let (tokens, window) = (p.own.prompt.tokens() + out, self.models[0].window_tokens());
        if tokens > window {
            let model = self.models[0].name.clone();
            let key = "workload.parent_turn_every";
            return Err(SimError::ContextWindow { agent, request, tokens, window, model, key });
        }
        let miss = draw_miss(exp.cache.miss_probability, p.miss.as_mut());
        let mut charge_after = false;
        if counts_parent(exp) {
            let ask = Ask { prompt: &p.own.prompt, bps: &bps[..nbps], out, miss, now };
            let l = self.limiter_of[0];
            match admission(exp, &mut self.limiters[l], &self.caches[0], &ask, agent, request)? {
                Admit::Retry(wait_us) => {
                    let jitter = p.jitter.as_mut().expect("a stream when the parent counts");
                    let r = exp.rate_limits.as_ref().expect("parent_counts needs [rate_limits]");
                    let retry_us = wait_us.saturating_add(r.retry_jitter_us.sample_u64(jitter));
                    p.pending = true;
                    self.engine.schedule_in(retry_us, Ev::ParentSend);
                    return Ok(());
                }
                Admit::Charged => {}
                Admit::ChargeAfter => charge_after = true,
            }
        }
        let p = self.parent.as_mut().expect("parent sends only with a parent");
        p.pending = false;
        let (usage, timing) = serve_timed(
            &mut self.caches[0],
            (&p.own.prompt, &bps[..nbps], miss),
            now,
            &exp.latency,
            out,
            &mut p.lat,
        )
        .map_err(|source| SimError::Cache { agent, request, source })?;
        if charge_after {
            let l = self.limiter_of[0];
            let limiter = self.limiters[l].as_mut().expect("a limiter when the parent counts");
            let charged = limiter.admit(now, counted_input(exp, &usage), out);
            assert_eq!(charged, Admission::Admitted, "the worst case fitted, the actual must");
        }
        let cost_usd = cache::cost_usd(&self.models[0], &usage, out);
        let mx = &mut *self.metrics;
        mx.parent_requests += 1;
        add_tokens(&mut mx.parent_tokens, &usage, out);
        mx.parent_cost_usd += cost_usd;
        if self.trace.is_some() {
            let served =
                Served { agent, request, send_us: now, usage, timing, out, model: 0, cost_usd };
            let traced = (p.own.prompt.tokens(), keys(&p.own.prompt, &bps[..nbps], &usage));
            self.trace_request(&served, traced);
        }
        Ok(())
    }
}

/// Whether the parent's own requests draw on the rate-limit buckets.
fn counts_parent(exp: &Experiment) -> bool {
    exp.rate_limits.as_ref().is_some_and(|r| r.parent_counts)
}

/// Input tokens that count toward ITPM: uncached and written (and read, when
/// `cache_reads_count`).
fn counted_input(exp: &Experiment, u: &Usage) -> u64 {
    let reads = exp.rate_limits.as_ref().is_some_and(|r| r.cache_reads_count);
    u.uncached + u.cache_write() + if reads { u.cache_read } else { 0 }
}

/// One request asking a rate limiter.
struct Ask<'p> {
    prompt: &'p Prompt,
    bps: &'p [Breakpoint],
    out: u64,
    miss: bool,
    now: SimTime,
}

/// Ask `limiter` about a request. When even the worst case (every input token counted) fits,
/// it is charged later with the actual usage (`ChargeAfter`); otherwise its exact usage is
/// found by `Cache::peek_with`, so that a refused request leaves the cache untouched.
fn admission(
    exp: &Experiment,
    limiter: &mut Option<RateLimiter>,
    cache: &Cache,
    ask: &Ask<'_>,
    agent: u32,
    request: u32,
) -> Result<Admit, SimError> {
    let Some(limiter) = limiter.as_mut() else { return Ok(Admit::ChargeAfter) };
    if limiter.would_admit(ask.now, ask.prompt.tokens(), ask.out) {
        return Ok(Admit::ChargeAfter);
    }
    let usage = cache
        .peek_with(ask.prompt, ask.bps, ask.now, ask.miss)
        .map_err(|source| SimError::Cache { agent, request, source })?;
    match limiter.admit(ask.now, counted_input(exp, &usage), ask.out) {
        Admission::Admitted => Ok(Admit::Charged),
        Admission::RetryAfter(wait_us) => Ok(Admit::Retry(wait_us)),
        Admission::Never(limit, amount) => {
            let r = exp.rate_limits.as_ref().expect("a limiter has limits");
            let (name, capacity) = match limit {
                Limit::Rpm => ("rpm", r.rpm),
                Limit::Itpm => ("itpm", r.itpm),
                Limit::Otpm => ("otpm", r.otpm),
            };
            Err(SimError::NeverAdmitted { agent, limit: name, amount, capacity })
        }
    }
}

/// What the rate limiter said about a request.
enum Admit {
    /// Admitted and charged with the exact usage (found by `Cache::peek`).
    Charged,
    /// Even the worst case fits: charge with the actual usage once served.
    ChargeAfter,
    /// A 429 with this retry-after.
    Retry(u64),
}

impl Run<'_> {
    /// Send agent `a`'s current request at `now`: admission, cache, latency, bookkeeping.
    fn send(&mut self, a: u32) -> Result<(), SimError> {
        let now = self.engine.now();
        let ttl = self.agent_ttl;
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let ag = &mut self.agents[a as usize];
        let last = ag.chain.prompt.len() - 1;
        let nbps = workload::breakpoints(1, ag.shared_end, last, ttl, &mut bps);
        let (m, out, request) = (ag.model, ag.output_tokens, ag.turn);
        self.check_window(a)?;
        if self.overloaded(a) {
            return self.backoff(a);
        }
        let ag = &mut self.agents[a as usize];
        let miss = draw_miss(self.exp.cache.miss_probability, ag.miss.as_mut());
        let admit = self.admit(a, &bps[..nbps], miss)?;
        if let Admit::Retry(wait_us) = admit {
            return self.throttle(a, request, wait_us);
        }
        if miss {
            let would =
                self.caches[m].peek(&self.agents[a as usize].chain.prompt, &bps[..nbps], now);
            let would_read =
                would.map_err(|source| SimError::Cache { agent: a, request, source })?;
            self.metrics.isolated_misses += u64::from(would_read.cache_read > 0);
        }
        let ag = &mut self.agents[a as usize];
        ag.overload_retries = 0;
        // The `fork_other_model` model (m = 1) runs at its own model's speed.
        let params = match m {
            0 => &self.exp.latency,
            _ => self.exp.latency_other.as_ref().unwrap_or(&self.exp.latency),
        };
        let (usage, t) = serve_timed(
            &mut self.caches[m],
            (&ag.chain.prompt, &bps[..nbps], miss),
            now,
            params,
            out,
            &mut ag.lat,
        )
        .map_err(|source| SimError::Cache { agent: a, request, source })?;
        self.metrics.long_context_requests +=
            u64::from(cache::is_long_context(&self.models[m], usage.total()));
        let counted = counted_input(self.exp, &usage);
        let l = self.limiter_of[m];
        if let (Admit::ChargeAfter, Some(limiter)) = (admit, self.limiters[l].as_mut()) {
            let charged = limiter.admit(now, counted, out);
            assert_eq!(charged, Admission::Admitted, "the worst case fitted, the actual must");
        }
        let cost_usd = cache::cost_usd(&self.models[m], &usage, out);
        let served =
            Served { agent: a, request, send_us: now, usage, timing: t, out, model: m, cost_usd };
        self.record(&served, &bps[..nbps]);
        if a == self.n {
            let ready = now + t.ttft_us + t.ready_delay_us;
            self.engine.schedule_at(ready, Ev::PrewarmReady);
            self.metrics.makespan_us = self.metrics.makespan_us.max(now + t.ttft_us - self.t0);
            return Ok(());
        }
        let listens =
            matches!(self.strategy, Strategy::WaitFirst { release: Release::OnReady, .. });
        if a == 0 && request == 0 && matches!(self.strategy, Strategy::WaitFirst { .. }) {
            let since_slot = now + t.ttft_us - self.agents[0].slot_us;
            self.metrics.hold_first_token_us = Some(since_slot);
        }
        if a == 0 && request == 0 && self.hold_open && listens {
            self.engine.schedule_at(now + t.ttft_us, Ev::FirstToken(0));
        }
        let end = now + t.ttft_us + t.decode_us;
        let ag = &self.agents[a as usize];
        let last = request + 1 >= ag.turns;
        if last || (!ag.first_done && *self.strategy == Strategy::Sequential) {
            // Someone observes this response's end: the slot, the completion, the next agent.
            self.engine.schedule_at(end, Ev::ResponseEnd(a));
        } else {
            // Nobody does: schedule the next request directly (one event per request).
            self.tool_call(a, request, end);
        }
        Ok(())
    }

    /// Agent `a`'s current request (input and output) must fit its model's window. The key
    /// named: the parent's advancing history when it pushed the shared part past the window,
    /// else the agent's own turns.
    fn check_window(&self, a: u32) -> Result<(), SimError> {
        let ag = &self.agents[a as usize];
        let model = &self.models[ag.model];
        let (tokens, window) = (ag.chain.prompt.tokens() + ag.output_tokens, model.window_tokens());
        if tokens <= window {
            return Ok(());
        }
        let w = &self.exp.workload;
        let prefix = match w.kind {
            AgentKind::Subagent => w.subagent_tokens,
            _ => w.parent_tokens,
        };
        let shared = ag.chain.prompt.prefix_tokens(ag.shared_end);
        let grew = shared > prefix + w.brief_tokens && shared + w.task_tokens > window;
        let key = match ag.grown {
            _ if grew => "workload.parent_turn_every",
            [outputs, results] if results > outputs => "workload.tool_result_tokens",
            _ => "workload.output_tokens",
        };
        let (request, model) = (ag.turn, model.name.clone());
        Err(SimError::ContextWindow { agent: a, request, tokens, window, model, key })
    }

    /// Ask agent `a`'s model's (class's) rate limiter about its current request.
    fn admit(&mut self, a: u32, bps: &[Breakpoint], miss: bool) -> Result<Admit, SimError> {
        let now = self.engine.now();
        let ag = &self.agents[a as usize];
        let (m, request) = (ag.model, ag.turn);
        let ask = Ask { prompt: &ag.chain.prompt, bps, out: ag.output_tokens, miss, now };
        let l = self.limiter_of[m];
        admission(self.exp, &mut self.limiters[l], &self.caches[m], &ask, a, request)
    }

    /// Whether the API answers agent `a`'s attempt with a 529 (one draw per attempt, from the
    /// agent's overload stream; never without `[overload]`).
    fn overloaded(&mut self, a: u32) -> bool {
        let Some(o) = &self.exp.overload else { return false };
        let rng = self.agents[a as usize].overload.as_mut().expect("a stream with [overload]");
        rng.random::<f64>() < o.probability
    }

    /// A 529: the client retries after the SDK's backoff, `min(initial * 2^n, max) * (1 -
    /// 0.25 U)` before retry n + 1; after `max_retries` retries the agent gives up.
    fn backoff(&mut self, a: u32) -> Result<(), SimError> {
        let o = self.exp.overload.as_ref().expect("a 529 needs [overload]");
        self.metrics.overloaded += 1;
        let ag = &mut self.agents[a as usize];
        if ag.overload_retries >= o.max_retries {
            return self.give_up(a);
        }
        let n = ag.overload_retries.min(62);
        ag.overload_retries += 1;
        let base_us = o.initial_backoff_us.saturating_mul(1 << n).min(o.max_backoff_us);
        let rng = ag.overload.as_mut().expect("a stream with [overload]");
        let jitter = 1.0 - 0.25 * rng.random::<f64>();
        self.engine.schedule_in((base_us as f64 * jitter).round() as u64, Ev::Send(a));
        Ok(())
    }

    /// Agent `a` (or the prewarm request) gave up after its last 529: its remaining turns are
    /// not sent, its slot is freed, and whoever waited for it goes on (the prewarm's agents
    /// are released uncached; under `sequential` the next agent starts).
    fn give_up(&mut self, a: u32) -> Result<(), SimError> {
        self.metrics.failed_agents += u64::from(a < self.n);
        if a == self.n {
            self.prewarm_ready = true;
            return self.release();
        }
        let ai = a as usize;
        let first_pending = !self.agents[ai].first_done;
        self.agents[ai].first_done = true;
        let next = ai + 1;
        if first_pending
            && *self.strategy == Strategy::Sequential
            && next < self.n as usize
            && self.agents[next].waiting_prev
        {
            self.agents[next].waiting_prev = false;
            self.send_first(next as u32)?;
        }
        self.completed += 1;
        self.free_slots += 1;
        self.fill_slots()
    }

    /// A 429: retry after `wait_us` plus jitter from the agent's own stream.
    fn throttle(&mut self, a: u32, request: u32, wait_us: u64) -> Result<(), SimError> {
        let now = self.engine.now();
        let ag = &mut self.agents[a as usize];
        let jitter_us = match &self.exp.rate_limits {
            Some(r) => r.retry_jitter_us.sample_u64(&mut ag.jitter),
            None => 0,
        };
        let retry_us = wait_us.saturating_add(jitter_us);
        self.metrics.rate_limited += 1;
        self.metrics.throttled_us += retry_us;
        self.segment(a, request, SegmentKind::RateLimit, now, now + retry_us, Outcome::None);
        self.engine.schedule_in(retry_us, Ev::Send(a));
        Ok(())
    }

    /// Count one served request of an agent (or the prewarm) into the metrics (and the trace).
    fn record(&mut self, s: &Served, bps: &[Breakpoint]) {
        let (a, u) = (s.agent, &s.usage);
        let mx = &mut *self.metrics;
        add_tokens(&mut mx.tokens, u, s.out);
        mx.requests += 1;
        mx.requests_with_hit += (u.cache_read > 0) as u64;
        mx.redundant_writes += u.redundant_writes as u64;
        mx.cost_usd += s.cost_usd;
        mx.cost_uncached_usd += cache::uncached_cost_usd(&self.models[s.model], u, s.out);
        mx.ttft_us.record(s.timing.ttft_us);
        if s.request == 0 && a < self.n {
            mx.launch_wait_us.record(s.send_us - self.agents[a as usize].slot_us);
        }
        if self.trace.is_some() {
            let prompt = &self.agents[a as usize].chain.prompt;
            let traced = (prompt.tokens(), keys(prompt, bps, u));
            self.trace_request(s, traced);
        }
    }

    /// The timeline segments and the record of one served request (traced runs), with the
    /// prompt's size and the cache keys it touched.
    fn trace_request(&mut self, s: &Served, (prompt_tokens, keys): (u64, RequestKeys)) {
        let Some((segments, requests)) = self.trace.as_mut() else { return };
        let (a, request, now, u, t, out) =
            (s.agent, s.request, s.send_us, &s.usage, s.timing, s.out);
        let t0 = self.t0;
        let outcome = Outcome::of(u);
        let first = now + t.ttft_us;
        let mut seg = |kind, start: SimTime, end: SimTime| {
            segments.push(Segment {
                agent: a,
                request,
                kind,
                start_us: start - t0,
                end_us: end - t0,
                outcome,
            })
        };
        seg(SegmentKind::Prefill, now, first);
        if t.decode_us > 0 {
            seg(SegmentKind::Decode, first, first + t.decode_us);
        }
        if u.cache_write() > 0 {
            // Zero-length when there is no ready delay: it still marks when the entry is ready.
            seg(SegmentKind::EntryReady, first, first + t.ready_delay_us);
        }
        requests.push(RequestRecord {
            agent: a,
            request,
            send_us: now - t0,
            ttft_us: t.ttft_us,
            decode_us: t.decode_us,
            ready_us: first + t.ready_delay_us - t0,
            prompt_tokens,
            usage: *u,
            output_tokens: out,
            cost_usd: s.cost_usd,
            model: s.model,
            keys,
        });
    }

    /// The agent's current response ended: next turn (after a tool call) or done.
    fn response_end(&mut self, a: u32) -> Result<(), SimError> {
        let now = self.engine.now();
        let ai = a as usize;
        if !self.agents[ai].first_done {
            self.agents[ai].first_done = true;
            let next = ai + 1;
            if *self.strategy == Strategy::Sequential
                && next < self.n as usize
                && self.agents[next].waiting_prev
            {
                self.agents[next].waiting_prev = false;
                self.send_first(next as u32)?;
            }
        }
        let ag = &self.agents[ai];
        let request = ag.turn;
        if ag.turn + 1 < ag.turns {
            self.tool_call(a, request, now);
            return Ok(());
        }
        // Completion counts from the agent's arrival (t0 unless arrivals are spread); the
        // makespan from t0.
        self.completed += 1;
        self.metrics.completion_us.record(now - self.arrival_us(a));
        self.metrics.makespan_us = self.metrics.makespan_us.max(now - self.t0);
        self.free_slots += 1;
        self.fill_slots()
    }

    /// After response `request` ends at `end`: the tool call, then the next request.
    fn tool_call(&mut self, a: u32, request: u32, end: SimTime) {
        let tool_us = self.next_turn(a, request);
        self.agents[a as usize].turn += 1;
        self.segment(a, request + 1, SegmentKind::Tool, end, end + tool_us, Outcome::None);
        self.engine.schedule_at(end + tool_us, Ev::Send(a));
    }

    /// Draw the tool call after request `request`, extend the prompt with the response and
    /// the tool result, draw the next output. Returns the tool's latency.
    fn next_turn(&mut self, a: u32, request: u32) -> u64 {
        let w = &self.exp.workload;
        let ag = &mut self.agents[a as usize];
        let denied = match w.kind {
            AgentKind::ForkDenyAtCall { .. } => ag.work.random::<f64>() < w.denied_call_share,
            _ => false,
        };
        let mut tool_us = w.tool_latency_us.sample_u64(&mut ag.work);
        let mut result_tokens =
            w.tool_result_tokens.sample_u64(&mut ag.work).min(w.tool_result_max_tokens);
        if denied {
            // Refused at call time: an immediate, short error result.
            tool_us = 0;
            result_tokens = workload::DENIED_RESULT_TOKENS;
        }
        let t = TurnTokens { output: ag.output_tokens, result: result_tokens, user: w.task_tokens };
        ag.grown[0] += t.output;
        ag.grown[1] += t.result;
        workload::push_turn(&mut ag.chain, self.exp, a as u64, request as u64, t);
        ag.output_tokens = w.output_tokens.sample_u64(&mut ag.work).min(w.output_max_tokens);
        tool_us
    }

    fn segment(
        &mut self,
        agent: u32,
        request: u32,
        kind: SegmentKind,
        start: SimTime,
        end: SimTime,
        outcome: Outcome,
    ) {
        if let Some((segments, _)) = self.trace.as_mut() {
            let t0 = self.t0;
            segments.push(Segment {
                agent,
                request,
                kind,
                start_us: start - t0,
                end_us: end - t0,
                outcome,
            });
        }
    }
}

/// Count one request's usage and output into `tokens`.
fn add_tokens(tokens: &mut crate::metrics::Tokens, u: &Usage, out: u64) {
    tokens.cache_read += u.cache_read;
    tokens.cache_write_5m += u.cache_write_5m;
    tokens.cache_write_1h += u.cache_write_1h;
    tokens.uncached += u.uncached;
    tokens.output += out;
}

/// One request as served: what the metrics and the trace record of it.
struct Served {
    agent: u32,
    request: u32,
    send_us: SimTime,
    usage: Usage,
    timing: latency::Timing,
    out: u64,
    model: usize,
    cost_usd: f64,
}

/// Serve `prompt` at `now` and draw its timing from `rng`: the entries it writes become ready
/// at send + TTFT + ready delay. The draw happens inside `serve` when it writes (it needs the
/// usage first), else right after: one draw per request either way.
fn serve_timed(
    cache: &mut Cache,
    (prompt, bps, miss): (&Prompt, &[Breakpoint], bool),
    now: SimTime,
    params: &crate::config::LatencyParams,
    out: u64,
    rng: &mut ChaCha8Rng,
) -> Result<(Usage, latency::Timing), cache::CacheError> {
    let mut timing = None;
    let usage = cache.serve_with(prompt, bps, now, miss, |u| {
        let t = latency::draw(params, work(u, out), rng);
        timing = Some(t);
        now + t.ttft_us + t.ready_delay_us
    })?;
    let t = match timing {
        Some(t) => t,
        None => latency::draw(params, work(&usage, out), rng),
    };
    Ok((usage, t))
}

/// One isolated-miss draw (`cache.miss_probability`), from the requester's own stream; no
/// draw at all when the probability is 0.
fn draw_miss(probability: f64, rng: Option<&mut ChaCha8Rng>) -> bool {
    match rng {
        Some(rng) if probability > 0.0 => rng.random::<f64>() < probability,
        _ => false,
    }
}

fn work(u: &Usage, output_tokens: u64) -> Work {
    Work {
        prefill_tokens: u.uncached + u.cache_write(),
        cached_tokens: u.cache_read,
        output_tokens,
    }
}

/// The keys a request used: its hit boundary (found from `cache_read`: prefix token counts
/// strictly increase, since empty blocks are never pushed) and its breakpoints.
fn keys(prompt: &Prompt, bps: &[Breakpoint], u: &Usage) -> RequestKeys {
    let hit = (u.cache_read > 0).then(|| {
        let i = (0..prompt.len())
            .find(|&i| prompt.prefix_tokens(i) == u.cache_read)
            .expect("the read prefix ends at a block boundary");
        prompt.prefix_digest(i)
    });
    let mut breakpoints = [(Default::default(), 0); 3];
    for (slot, bp) in breakpoints.iter_mut().zip(bps) {
        *slot = (prompt.prefix_digest(bp.index), prompt.prefix_tokens(bp.index));
    }
    RequestKeys { hit, breakpoints, n_breakpoints: bps.len() }
}
