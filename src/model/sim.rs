//! One run of the fan-out on the engine: the events (`Ev`), the one place that handles them
//! (`Run::handle`), and an agent's way through slot, requests, tool calls and completion.
//!
//! One run: at t0 the fan-out starts (t0 = `parent_idle` when the parent is warm: the parent's
//! entries are written at simulated time 0, so an idle time past the TTL means they expired).
//! Agents take concurrency slots in index order; a strategy gates each agent's first request
//! only (`launch.rs`); each request is admitted by the rate limiter (or gets a 429 and retries,
//! `admission.rs`), served by the model's cache, timed by the latency model, and followed by a
//! tool call and the next turn; `recorder.rs` counts it. Every output time is relative to t0.
//! Draws come from per-agent streams (common random numbers), in a fixed order per agent:
//! turns, output_0, then per later turn [denied], tool latency, tool result, output_k; latency
//! and 429 jitter have their own streams.
//!
//! With `workload.parent_turn_every` > 0 the parent advances (`parent.rs`): one request every
//! that often from t0 (its own chain, one exchange per turn shaped by `parent_exchange_blocks`,
//! counted in `RunMetrics::parent_*`), until the last agent completes; an agent's first request
//! forks the history as of its send (every exchange sent strictly before it). Thinking, context
//! windows and TTL buckets follow docs/anthropic.md.

use super::admission::{
    admits_all, draw_implicit_miss, draw_miss, would_have_read, Admit, Ask, Limiters,
};
use super::agent::{self, Agent, Phase, Requester};
use super::latency::{self, Latency, Rates, Terms};
use super::launch::{Launch, OnSlot, Released};
use super::parent::Parent;
use super::recorder::{Recorder, Served};
use super::server::Server;
use super::tape::{Tape, TurnDraws};
use super::workload::{self, SharedMemo};
use super::{Detailed, Outcome, SegmentKind, SimError};
use crate::cache::{self, Breakpoint, Cache, Prompt, PromptMemory, Usage};
use crate::config::{
    AgentKind, BlockKind, Experiment, ModelParams, Strategy, ThinkingHistory, Ttl,
};
use crate::engine::{Bounds, Engine};
use crate::metrics::RunMetrics;
use crate::rng::RngExt;
use crate::time::{SimDuration, SimTime};

/// The events of the model.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ev {
    /// The fan-out starts (t0): the first wave takes its slots.
    Start,
    /// A stagger gate opens for the agent's first request.
    Gate(u32),
    /// Send (or retry after a 429 or a 529) the requester's current request.
    Send(Requester),
    /// The agent's current response begins (scheduled only when a strategy listens).
    FirstToken(u32),
    /// The agent's current response ends (scheduled only when someone observes it).
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
    /// A prefill step of server replica `r` ends (`vllm`, `sglang`; `server.rs`).
    Step(u32),
}

// An event is a heap entry's payload: one word, so that an entry is three.
const _: () = assert!(std::mem::size_of::<Ev>() <= 8);

/// Reusable simulation buffers: the event heap, the launch strategy's buffers and the caches
/// keep their capacity across runs.
pub struct Simulator {
    engine: Engine<Ev>,
    launch: Launch,
    /// One cache per model, emptied (memory kept) at the start of every run.
    caches: Vec<Cache>,
    /// The self-hosted server's replicas (`vllm`, `sglang` only).
    server: Server,
    /// The last run's agents, and prompts done with: their memory serves the next run's.
    agents: Vec<Agent>,
    spare: Vec<PromptMemory>,
    /// The agents' shared prefix, built once for the runs of one experiment.
    shared: SharedMemo,
    /// The replication's workload, drawn once for all of its strategies.
    tape: Tape,
    /// The models of a `fork_other_model` run (`run_models`); other runs borrow the
    /// experiment's model instead of cloning it.
    models: Vec<ModelParams>,
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
            launch: Launch::default(),
            caches: Vec::new(),
            server: Server::default(),
            agents: Vec::new(),
            spare: Vec::new(),
            shared: SharedMemo::default(),
            tape: Tape::default(),
            models: Vec::new(),
        }
    }

    /// Run one replication into `metrics` (reset first: its sample buffers are reused).
    pub fn run_into(
        &mut self,
        exp: &Experiment,
        strategy: &Strategy,
        replication: u32,
        metrics: &mut RunMetrics,
    ) -> Result<(), SimError> {
        metrics.reset();
        let mut run = Run::new(exp, strategy, replication, self, (metrics, false))?;
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
        let mut run = Run::new(exp, strategy, replication, self, (&mut metrics, true))?;
        run.go()?;
        let (mut segments, requests) = run.rec.take_trace().expect("traced run keeps a trace");
        segments.sort_by_key(|s| (s.agent, s.start_us, s.kind, s.request));
        Ok(Detailed { metrics, segments, requests })
    }
}

/// One run in progress.
pub(super) struct Run<'a> {
    pub exp: &'a Experiment,
    strategy: &'a Strategy,
    pub engine: &'a mut Engine<Ev>,
    launch: &'a mut Launch,
    pub rec: Recorder<'a>,
    pub t0: SimTime,
    /// Number of agents.
    pub n: u32,
    /// The agents in index order, then the prewarm request (at `n`) under `prewarm`. Slices,
    /// not the `Simulator`'s vectors: one pointer less to follow per request.
    pub(super) agents: &'a mut [Agent],
    pub caches: &'a mut [Cache],
    /// The experiment's model, then `fork_other_model`'s.
    pub models: &'a [ModelParams],
    /// Each model's `window_tokens` (a request checks it every time).
    windows: [u64; 2],
    /// Each model's latency parameters, ready to draw from (`fork_other_model` runs at its
    /// own model's speed when `latency_other` is given).
    pub latency: [Latency<'a>; 2],
    /// The agents' per-turn distributions, ready to draw from.
    turn_draws: TurnDraws<'a>,
    /// The replication's draws (and prompts, when `copies`) for the agents' turns.
    tape: &'a mut Tape,
    /// The agents copy their turns' blocks from the tape (`agent::build_into`).
    copies: bool,
    pub limiters: Limiters,
    /// No rate limits and no miss draws (`admission::admits_all`): fixed per run, so such a
    /// run's requests skip admission altogether.
    admits_all: bool,
    next_queued: u32,
    /// Agents that have arrived (asked for a slot); all of them at t0 unless
    /// `workload.arrival_every` spreads them.
    arrived: u32,
    /// Concurrency slots not taken.
    free_slots: u32,
    /// Agents that completed their last response (or gave up).
    pub completed: u32,
    /// The advancing parent (`None`: the parent is frozen, `parent_turn_every = 0`).
    pub parent: Option<Parent>,
    /// TTL of the agents' (and the prewarm's) breakpoints, and of the parent's.
    pub(super) agent_ttl: Ttl,
    pub parent_ttl: Ttl,
    /// The self-hosted server (used only when `exp.server` is set).
    pub(super) server: &'a mut Server,
}

impl<'a> Run<'a> {
    /// A run of `strategy` on `sim`'s buffers, counting into `metrics` (traced or not).
    /// Inlined into its two callers: a run is a large value, returned into their frames.
    #[inline(always)]
    fn new(
        exp: &'a Experiment,
        strategy: &'a Strategy,
        replication: u32,
        sim: &'a mut Simulator,
        (metrics, traced): (&'a mut RunMetrics, bool),
    ) -> Result<Self, SimError> {
        let w = &exp.workload;
        if w.agents == 0 || w.concurrency == 0 {
            return Err(SimError::Invalid(format!(
                "workload.agents = {} and workload.concurrency = {} must both be at least 1",
                w.agents, w.concurrency
            )));
        }
        let t0 = SimTime::from_us(if w.parent_warm { w.parent_idle_us } else { 0 });
        let bounds = Bounds {
            max_events: exp.limits.max_events,
            horizon: t0.saturating_add(SimDuration::from_us(exp.limits.horizon_us)),
        };
        let Simulator { engine, launch, caches, server, agents, spare, shared, tape, models } = sim;
        engine.reset(bounds, SimTime::ZERO);
        launch.reset(strategy, t0, w.agents);
        let models = run_models(exp, models)?;
        reset_caches(caches, exp, models);
        if let Some(p) = &exp.server {
            server.reset(p);
        }
        metrics.agents = w.agents as u64;
        let prewarm = *strategy == Strategy::Prewarm;
        let copies = agent::build_into(
            (agents, spare, shared, tape),
            exp,
            replication,
            prewarm,
            agents_strip_own(exp, models),
        );
        let mut run = Run {
            exp,
            strategy,
            engine,
            launch,
            rec: Recorder::new(metrics, traced, t0, w.agents),
            t0,
            n: w.agents,
            agents: &mut agents[..],
            caches: &mut caches[..],
            limiters: Limiters::new(exp, models),
            admits_all: admits_all(exp),
            parent: Parent::new(exp, models, replication),
            windows: [0, models.len() - 1].map(|m| models[m].window_tokens()),
            models,
            latency: [
                Latency::new(&exp.latency),
                Latency::new(exp.latency_other.as_ref().unwrap_or(&exp.latency)),
            ],
            turn_draws: TurnDraws::new(w),
            tape,
            copies,
            next_queued: 0,
            arrived: 0,
            free_slots: w.concurrency,
            completed: 0,
            agent_ttl: exp.cache.agent_ttl(w.kind.name()),
            parent_ttl: exp.cache.parent_ttl(),
            server,
        };
        run.warm_parent()?;
        Ok(run)
    }

    /// A warm parent: its last request wrote its entries at time 0, readable at once. A
    /// parent of no tokens has nothing to cache: warm or cold, the same (nothing is written).
    fn warm_parent(&mut self) -> Result<(), SimError> {
        if !self.exp.workload.parent_warm || self.exp.workload.parent_tokens == 0 {
            return Ok(());
        }
        let (prompt, bps) = workload::parent_request(self.exp);
        if self.exp.server.is_some() {
            self.server.warm(&prompt);
            return Ok(());
        }
        let agent = Requester::Parent.shown(self.n);
        self.caches[0]
            .serve(&prompt, &bps, SimTime::ZERO, |_| SimTime::ZERO)
            .map_err(|source| SimError::Cache { agent, request: 0, source })?;
        Ok(())
    }

    fn agent_mut(&mut self, who: Requester) -> &mut Agent {
        let i = self.index(who);
        &mut self.agents[i]
    }

    /// Where `who` is in `agents`: the parent is not an agent.
    pub(super) fn index(&self, who: Requester) -> usize {
        match who {
            Requester::Agent(a) => a as usize,
            Requester::Prewarm => self.n as usize,
            Requester::Parent => unreachable!("the parent has no agent state"),
        }
    }

    /// Start the fan-out at t0 and run the engine to the end; then the tape keeps the agents'
    /// prompts that reach further than its own, or, when the run failed, is drawn again.
    fn go(&mut self) -> Result<(), SimError> {
        let result = self.run_to_end();
        match &result {
            Ok(()) if self.copies => {
                for a in 0..self.n {
                    self.tape.adopt(a, &mut self.agents[a as usize].chain.prompt);
                }
            }
            Ok(()) => {}
            Err(_) => self.tape.invalidate(),
        }
        result
    }

    fn run_to_end(&mut self) -> Result<(), SimError> {
        let t0 = self.t0;
        // Starting the agents as the first event puts the clock at t0 for them.
        self.engine.schedule_at(t0, Ev::Start);
        let every = SimDuration::from_us(self.exp.workload.parent_turn_every_us);
        self.schedule_parent_turn(t0.saturating_add(every));
        while let Some((_, ev)) = self.engine.pop()? {
            self.handle(ev)?;
        }
        if self.exp.server.is_some() {
            self.server_costs();
        }
        self.rec.metrics.events = self.engine.delivered();
        Ok(())
    }

    /// The one place where events meet the model's parts.
    fn handle(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::Start => self.start(),
            Ev::Gate(a) => self.send_first(a),
            Ev::Send(who) => self.send(who),
            Ev::FirstToken(a) => {
                let released = self.launch.on_first_token(a);
                self.send_released(released)
            }
            Ev::ResponseEnd(a) => self.response_end(a),
            Ev::HoldCap => match self.launch.on_hold_cap() {
                Some(released) => {
                    self.note_cap();
                    self.send_released(released)
                }
                None => Ok(()),
            },
            Ev::PrewarmReady => {
                let released = self.launch.on_prewarm_ready();
                self.send_released(released)
            }
            Ev::ParentTurn => self.parent_turn(),
            Ev::ParentSend => self.parent_send(),
            Ev::Arrive => {
                self.arrived += 1;
                self.schedule_arrival();
                self.fill_slots()
            }
            Ev::Step(r) => self.server_step(r as usize),
        }
    }

    fn start(&mut self) -> Result<(), SimError> {
        if *self.strategy == Strategy::Prewarm {
            self.agent_mut(Requester::Prewarm).enter(Phase::Running);
            self.send(Requester::Prewarm)?;
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
    fn arrival(&self, a: u32) -> SimTime {
        let every = SimDuration::from_us(self.exp.workload.arrival_every_us);
        self.t0.saturating_add(every.saturating_mul(u64::from(a)))
    }

    /// Schedule the next agent's arrival, if one is still to come.
    fn schedule_arrival(&mut self) {
        if self.arrived < self.n {
            let at = self.arrival(self.arrived);
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

    /// Give the next queued agent a slot and apply the strategy's gate to its first request.
    fn take_slot(&mut self) -> Result<(), SimError> {
        let a = self.next_queued;
        debug_assert!(a < self.n);
        self.next_queued += 1;
        let now = self.engine.now();
        self.agents[a as usize].slot = now;
        match self.launch.on_slot(a, now) {
            OnSlot::Send => self.send_first(a),
            OnSlot::Wait => {
                self.agents[a as usize].enter(Phase::Held);
                Ok(())
            }
            OnSlot::GateAt(at) => {
                self.agents[a as usize].enter(Phase::Held);
                self.engine.schedule_at(at, Ev::Gate(a));
                Ok(())
            }
            OnSlot::OpenHold { cap } => {
                self.engine.schedule_in(cap, Ev::HoldCap);
                // With release = on_ready, agent 0's first token (scheduled when its request
                // is served) releases the hold earlier than the cap.
                self.send_first(a)
            }
            OnSlot::SendAtCap => {
                self.send_first(a)?;
                self.note_cap();
                Ok(())
            }
        }
    }

    /// `wait_first`'s cap is reached (now): record whether the first writer's response had
    /// begun by then (`RunMetrics::hold_capped`).
    fn note_cap(&mut self) {
        let Strategy::WaitFirst { max_wait_us, .. } = *self.strategy else { return };
        let mx = &mut *self.rec.metrics;
        let began = mx.hold_first_token_us.is_some_and(|t| t <= max_wait_us);
        mx.hold_capped = !began;
    }

    /// Send the first request of every agent the launch strategy released, in order.
    fn send_released(&mut self, released: Released) -> Result<(), SimError> {
        let mut i = 0;
        while let Some(a) = self.launch.released(released, i) {
            self.send_first(a)?;
            i += 1;
        }
        self.launch.done(released);
        Ok(())
    }

    /// The gate is open: the agent's first request goes now.
    fn send_first(&mut self, a: u32) -> Result<(), SimError> {
        let now = self.engine.now();
        let ag = &mut self.agents[a as usize];
        ag.enter(Phase::Running);
        let slot = ag.slot;
        if now > slot {
            let hold = (Requester::Agent(a), 0);
            self.rec.segment(hold, SegmentKind::Hold, (slot, now), Outcome::None);
        }
        self.fork_history(a);
        self.send(Requester::Agent(a))
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
        let line = p.line_at(self.engine.now());
        let strips = agents_strip_own(exp, self.models);
        let ag = &mut self.agents[a as usize];
        let mut prompt = line.fork(3 + workload::turn_room(exp, ag.turns));
        workload::push_brief(&mut prompt, exp);
        ag.shared_end = prompt.len() - 1;
        workload::push_task(&mut prompt, a as u64, exp.workload.task_tokens);
        ag.chain.reset(prompt, strips);
    }
}

impl Run<'_> {
    /// Send `who`'s current request at `now`: the window, a 529, admission, the cache, the
    /// latency, the bookkeeping, then what follows the response.
    fn send(&mut self, who: Requester) -> Result<(), SimError> {
        let (now, ttl, shown) = (self.engine.now(), self.agent_ttl, who.shown(self.n));
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let i = self.index(who);
        let ag = &self.agents[i];
        debug_assert_eq!(ag.phase(), Phase::Running, "{who:?} sends only while running");
        let last = ag.chain.prompt.len() - 1;
        let nbps = workload::breakpoints(1, ag.shared_end, last, ttl, &mut bps);
        let bps = &bps[..nbps];
        let (m, out, request) = (ag.model, ag.output_tokens, ag.turn);
        ag.check_window(self.exp, (&self.models[m], self.windows[m]), shown)?;
        if self.exp.server.is_some() {
            self.server_send(who, request, out);
            return Ok(());
        }
        if self.overloaded(who) {
            return self.backoff(who);
        }
        let (miss, admit) = match self.admits_all {
            true => (false, Admit::ChargeAfter),
            false => self.admit(i, m, (bps, out, now), (shown, request))?,
        };
        if let Admit::Retry(wait) = admit {
            return self.throttle(who, request, wait);
        }
        let ag = &mut self.agents[i];
        ag.overload_retries = 0;
        let terms = match who {
            Requester::Agent(a) => {
                #[cfg(debug_assertions)]
                debug_assert_eq!(out, self.tape.output(a, request), "agent {a}'s {request}");
                self.tape.terms(&self.latency[m], a, request)
            }
            _ => self.latency[m].sample(&mut ag.lat).terms(out),
        };
        let (usage, timing) =
            serve_terms(&mut self.caches[m], (&ag.chain.prompt, bps, miss), now, terms)
                .map_err(|source| SimError::Cache { agent: shown, request, source })?;
        self.limiters.settle(self.exp, (m, admit), now, &usage, out);
        // Billed after the settle, a call: before it, the bill was kept in memory across the
        // call and its costs read back as one 16-byte load of two 8-byte stores.
        let bill = self.caches[m].prices().bill(&usage, out);
        self.rec.metrics.long_context_requests += u64::from(bill.long_context);
        let (cost_usd, uncached_usd) = (bill.cost_usd, bill.uncached_usd);
        let wait = matches!((who, request), (Requester::Agent(_), 0)).then(|| now - ag.slot);
        let served = Served { who, request, send_us: now, usage, timing, out, model: m, cost_usd };
        self.rec.request(&served, (uncached_usd, wait), &ag.chain.prompt, bps);
        let Requester::Agent(a) = who else {
            self.prewarm_served(now, timing);
            return Ok(());
        };
        self.served(a, request, now, timing)
    }

    /// Agent slot `i`'s miss draws and model `m`'s limiter, for a run that has any of them:
    /// whether the lookup misses, and what the limiter said (an isolated miss is counted
    /// only for a request admitted).
    #[inline(never)]
    fn admit(
        &mut self,
        i: usize,
        m: usize,
        (bps, out, now): (&[Breakpoint], u64, SimTime),
        (who, request): (u32, u32),
    ) -> Result<(bool, Admit), SimError> {
        let ag = &mut self.agents[i];
        let miss = draw_miss(self.exp.cache.miss_probability, ag.miss.as_deref_mut())
            | draw_implicit_miss(self.exp, ag.implicit.as_deref_mut());
        let ask = Ask { prompt: &ag.chain.prompt, bps, out, miss, now, who, request };
        let admit = self.limiters.ask(self.exp, m, &self.caches[m], &ask)?;
        if miss && !matches!(admit, Admit::Retry(_)) {
            self.rec.metrics.isolated_misses += isolated_miss(&self.caches[m], &ask)?;
        }
        Ok((miss, admit))
    }

    /// The prewarm request was served at `now`: its entries are readable after its first
    /// token and ready delay; it counts toward the makespan. Once a run: out of line.
    #[cold]
    #[inline(never)]
    pub(super) fn prewarm_served(&mut self, now: SimTime, t: latency::Timing) {
        self.agent_mut(Requester::Prewarm).enter(Phase::Done);
        self.engine.schedule_at(now + t.ttft + t.ready_delay, Ev::PrewarmReady);
        let mx = &mut *self.rec.metrics;
        mx.makespan_us = mx.makespan_us.max((now + t.ttft - self.t0).as_us());
    }

    /// Agent `a`'s request `request` was served at `now`: the events that follow it (its
    /// first token when a strategy listens, its response's end or its next request).
    pub(super) fn served(
        &mut self,
        a: u32,
        request: u32,
        now: SimTime,
        t: latency::Timing,
    ) -> Result<(), SimError> {
        if a == 0 && request == 0 {
            self.note_first_writer(now + t.ttft);
        }
        if self.launch.listens_to_first_token(a, request) {
            self.engine.schedule_at(now + t.ttft, Ev::FirstToken(a));
        }
        let end = now + t.ttft + t.decode;
        let last = request + 1 >= self.agents[a as usize].turns;
        if last || self.launch.listens_to_end(a) {
            // Someone observes this response's end: the slot, the completion, the next agent.
            self.engine.schedule_at(end, Ev::ResponseEnd(a));
        } else {
            // Nobody does: schedule the next request directly (one event per request).
            self.tool_call(a, request, end);
        }
        Ok(())
    }

    /// Under `wait_first`, when the first writer's response began, from its slot (once a run).
    #[cold]
    #[inline(never)]
    fn note_first_writer(&mut self, first_token: SimTime) {
        if matches!(self.strategy, Strategy::WaitFirst { .. }) {
            let since_slot = first_token - self.agents[0].slot;
            self.rec.metrics.hold_first_token_us = Some(since_slot.as_us());
        }
    }

    /// Whether the API answers `who`'s attempt with a 529 (one draw per attempt, from its
    /// overload stream; never without `[overload]`).
    fn overloaded(&mut self, who: Requester) -> bool {
        let Some(o) = &self.exp.overload else { return false };
        let i = self.index(who);
        let rng = self.agents[i].overload.as_deref_mut().expect("a stream with [overload]");
        rng.random::<f64>() < o.probability
    }

    /// A 529: the client retries after the SDK's backoff, `min(initial * 2^n, max) * (1 -
    /// 0.25 U)` before retry n + 1; after `max_retries` retries the requester gives up.
    #[cold]
    #[inline(never)]
    fn backoff(&mut self, who: Requester) -> Result<(), SimError> {
        let o = self.exp.overload.as_ref().expect("a 529 needs [overload]");
        self.rec.metrics.overloaded += 1;
        let ag = self.agent_mut(who);
        if ag.overload_retries >= o.max_retries {
            return self.give_up(who);
        }
        let n = ag.overload_retries.min(62);
        ag.overload_retries += 1;
        let base_us = o.initial_backoff_us.saturating_mul(1 << n).min(o.max_backoff_us);
        let rng = ag.overload.as_deref_mut().expect("a stream with [overload]");
        let jitter = 1.0 - 0.25 * rng.random::<f64>();
        let delay = SimDuration::from_us((base_us as f64 * jitter).round() as u64);
        self.engine.schedule_in(delay, Ev::Send(who));
        Ok(())
    }

    /// `who` gave up after its last 529: its remaining turns are not sent, its slot is freed,
    /// and whoever waited for it goes on (the prewarm's agents are released uncached; under
    /// `sequential` the next agent starts).
    #[cold]
    #[inline(never)]
    fn give_up(&mut self, who: Requester) -> Result<(), SimError> {
        self.agent_mut(who).enter(Phase::Failed);
        let Requester::Agent(a) = who else {
            let released = self.launch.on_prewarm_ready();
            return self.send_released(released);
        };
        self.rec.metrics.failed_agents += 1;
        let released = self.launch.on_response_end(a);
        self.send_released(released)?;
        self.completed += 1;
        self.free_slots += 1;
        self.fill_slots()
    }

    /// A 429: retry after `wait` plus jitter from the requester's own stream.
    #[cold]
    #[inline(never)]
    fn throttle(
        &mut self,
        who: Requester,
        request: u32,
        wait: SimDuration,
    ) -> Result<(), SimError> {
        let now = self.engine.now();
        let exp = self.exp;
        let ag = self.agent_mut(who);
        let jitter = match (&exp.rate_limits, ag.jitter.as_deref_mut()) {
            (Some(r), Some(rng)) => SimDuration::from_us(r.retry_jitter_us.sample_u64(rng)),
            _ => SimDuration::ZERO,
        };
        let retry = wait.saturating_add(jitter);
        self.rec.metrics.rate_limited += 1;
        self.rec.metrics.throttled_us += retry.as_us();
        let span = (now, now + retry);
        self.rec.segment((who, request), SegmentKind::RateLimit, span, Outcome::None);
        self.engine.schedule_in(retry, Ev::Send(who));
        Ok(())
    }

    /// The agent's current response ended: next turn (after a tool call) or done.
    fn response_end(&mut self, a: u32) -> Result<(), SimError> {
        let now = self.engine.now();
        let released = self.launch.on_response_end(a);
        self.send_released(released)?;
        let ag = &mut self.agents[a as usize];
        let request = ag.turn;
        if ag.turn + 1 < ag.turns {
            self.tool_call(a, request, now);
            return Ok(());
        }
        ag.enter(Phase::Done);
        // Completion counts from the agent's arrival (t0 unless arrivals are spread); the
        // makespan from t0.
        self.completed += 1;
        let arrival = self.arrival(a);
        let mx = &mut *self.rec.metrics;
        mx.completion_us.record((now - arrival).as_us());
        mx.makespan_us = mx.makespan_us.max((now - self.t0).as_us());
        self.free_slots += 1;
        self.fill_slots()
    }

    /// After response `request` ends at `end`: the tool call, then the next request.
    fn tool_call(&mut self, a: u32, request: u32, end: SimTime) {
        let ag = &mut self.agents[a as usize];
        let tape = (&mut *self.tape, &self.turn_draws, self.copies);
        let tool_time = ag.next_turn(self.exp, tape, a, request);
        ag.turn += 1;
        let tool = (Requester::Agent(a), request + 1);
        self.rec.segment(tool, SegmentKind::Tool, (end, end + tool_time), Outcome::None);
        self.engine.schedule_at(end + tool_time, Ev::Send(Requester::Agent(a)));
    }
}

/// An isolated miss: 1 if the request would have read an entry (`RunMetrics::isolated_misses`).
#[cold]
#[inline(never)]
fn isolated_miss(cache: &Cache, ask: &Ask<'_>) -> Result<u64, SimError> {
    Ok(u64::from(would_have_read(cache, ask)?))
}

/// The models of a run: the experiment's, then `fork_other_model`'s (built into `both`; a
/// run of one model borrows the experiment's, no clone of its name and prices every run).
fn run_models<'a>(
    exp: &'a Experiment,
    both: &'a mut Vec<ModelParams>,
) -> Result<&'a [ModelParams], SimError> {
    let AgentKind::ForkOtherModel { model } = &exp.workload.kind else {
        return Ok(std::slice::from_ref(&exp.model));
    };
    let other =
        crate::config::preset(model).ok_or_else(|| SimError::UnknownModel(model.clone()))?;
    both.clear();
    both.extend([exp.model.clone(), other]);
    Ok(both)
}

/// One empty cache per model, reusing the ones of earlier runs.
fn reset_caches(caches: &mut Vec<Cache>, exp: &Experiment, models: &[ModelParams]) {
    caches.truncate(models.len());
    for (i, m) in models.iter().enumerate() {
        match caches.get_mut(i) {
            Some(cache) => cache.reset(&exp.cache, m),
            None => caches.push(Cache::from_params(&exp.cache, m)),
        }
    }
}

/// Whether an agent's own chain must keep a bare history: its turns carry user blocks that
/// drop its earlier thinking (thinking on, a model that strips).
fn agents_strip_own(exp: &Experiment, models: &[ModelParams]) -> bool {
    let w = &exp.workload;
    w.thinking
        && models.last().expect("a model").thinking == ThinkingHistory::Stripped
        && w.turn_blocks.contains(&BlockKind::User)
}

/// Serve `prompt` at `now` and time it at its drawn latency terms `rates` and `out` output
/// tokens: `serve_terms` at `rates.terms(out)`.
#[inline(always)]
pub(super) fn serve_timed(
    cache: &mut Cache,
    request: (&Prompt, &[Breakpoint], bool),
    now: SimTime,
    rates: Rates,
    out: u64,
) -> Result<(Usage, latency::Timing), cache::CacheError> {
    serve_terms(cache, request, now, rates.terms(out))
}

/// Serve `prompt` at `now` and time it at its drawn latency terms `terms`: the entries it
/// writes become ready at send + TTFT + ready delay. The timing is computed inside `serve`
/// when it writes (it needs the usage first), else right after. Inlined into its callers:
/// its arguments and its result then stay in registers, where a call would pass them through
/// memory and stall the reads that follow the writes.
#[inline(always)]
fn serve_terms(
    cache: &mut Cache,
    (prompt, bps, miss): (&Prompt, &[Breakpoint], bool),
    now: SimTime,
    terms: Terms,
) -> Result<(Usage, latency::Timing), cache::CacheError> {
    // The timing computed inside, field by field: copied whole, the fields were read back as
    // one 16-byte load of the two 8-byte stores `timing` had just made (a store-forwarding
    // stall a request).
    let (mut timed, mut ttft, mut decode, mut ready_delay) =
        (false, SimDuration::ZERO, SimDuration::ZERO, SimDuration::ZERO);
    let usage = cache.serve_with(prompt, bps, now, miss, |u| {
        let t = terms.timing(prefill_tokens(u), u.cache_read);
        (timed, ttft, decode, ready_delay) = (true, t.ttft, t.decode, t.ready_delay);
        now + t.ttft + t.ready_delay
    })?;
    let t = if timed {
        latency::Timing { ttft, decode, ready_delay }
    } else {
        terms.timing(prefill_tokens(&usage), usage.cache_read)
    };
    Ok((usage, t))
}

/// The tokens of `u` that must be prefilled: uncached and written.
fn prefill_tokens(u: &Usage) -> u64 {
    u.uncached + u.cache_write()
}
