//! One run of the fan-out on the engine: the one place that handles the events (`Run::handle`;
//! the events are `world::Ev`), and an agent's way through slot, requests, tool calls and
//! completion, over the run's `World`.
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

mod server_steps;

use super::admission::{admits_all, Admit};
use super::agent::{self, Agent, Phase, Requester};
use super::latency::Timing;
use super::launch::{Launch, OnSlot, Released};
use super::parent::{self, Parent};
use super::recorder::{Served, Trace};
use super::server::{Reply, Server};
use super::tape::{Tape, TurnDraws};
use super::workload::SharedMemo;
use super::world::{serve_terms, Ev, World};
use super::{Outcome, SegmentKind, SimError};
use crate::cache::{Breakpoint, Cache, PromptMemory};
use crate::config::{ExperimentSpec, ModelParams, Overload, ServerParams, Strategy, Ttl};
use crate::engine::Engine;
use crate::metrics::RunMetrics;
use crate::time::{SimDuration, SimTime};

/// The buffers a run lives in, kept across runs: the event heap, the launch strategy's
/// buffers, the caches, the agents and their prompts' memory keep their capacity.
#[derive(Default)]
pub(super) struct Buffers {
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
    /// The models of a `fork_other_model` run; other runs borrow the experiment's model
    /// instead of cloning it.
    models: Vec<ModelParams>,
}

impl Buffers {
    /// Room for every buffer sized by the experiment's agents (and server replicas),
    /// reserved without aborting before a run touches any, largest first: a run larger than
    /// the machine's memory fails with `SimError::OutOfMemory` (exit 1, docs/limits.md), not
    /// an allocation abort. Reserved, the run's own `resize` and `reserve` allocate nothing.
    fn reserve(&mut self, exp: &ExperimentSpec) -> Result<(), SimError> {
        let agents = exp.workload.agents;
        let n = agents as usize + 1;
        let oom = |bytes: usize| SimError::OutOfMemory { bytes: bytes as f64, agents };
        let more = n.saturating_sub(self.agents.len());
        let bytes = n.saturating_mul(std::mem::size_of::<Agent>());
        self.agents.try_reserve_exact(more).map_err(|_| oom(bytes))?;
        self.tape.try_reserve(n).map_err(oom)?;
        self.launch.try_reserve(n).map_err(oom)?;
        match &exp.server {
            Some(p) => self.server.try_reserve(p).map_err(oom),
            None => Ok(()),
        }
    }
}

/// One run in progress: the agents and their launch strategy over the run's world.
pub(super) struct Run<'a> {
    world: World<'a>,
    strategy: &'a Strategy,
    launch: &'a mut Launch,
    /// The agents in index order, then the prewarm request (at `n`) under `prewarm`. Slices,
    /// not `Buffers`' vectors: one pointer less to follow per request.
    agents: &'a mut [Agent],
    /// The agents' per-turn distributions, ready to draw from.
    turn_draws: TurnDraws<'a>,
    /// The replication's draws (and prompts, when `copies`) for the agents' turns.
    tape: &'a mut Tape,
    /// The agents copy their turns' blocks from the tape (`agent::build_into`).
    copies: bool,
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
    completed: u32,
    /// The advancing parent (`None`: the parent is frozen, `parent_turn_every = 0`).
    parent: Option<Parent<'a>>,
    /// TTL of the agents' (and the prewarm's) breakpoints.
    agent_ttl: Ttl,
    /// The self-hosted server and its replicas (`None`: the API serves, `exp.server` unset).
    server: Option<(&'a ServerParams, &'a mut Server)>,
}

impl<'a> Run<'a> {
    /// Replication `replication` of `strategy` on `exp` in `buffers`, counting into `metrics`
    /// (and `trace`, for a traced run). Inlined into its caller: a run is a large value, built
    /// in its frame.
    #[inline(always)]
    pub(super) fn new(
        exp: &'a ExperimentSpec,
        strategy: &'a Strategy,
        replication: u32,
        buffers: &'a mut Buffers,
        counts: (&'a mut RunMetrics, Option<&'a mut Trace>),
    ) -> Result<Self, SimError> {
        let w = &exp.workload;
        if w.agents == 0 || w.concurrency == 0 {
            return Err(SimError::Invalid(format!(
                "workload.agents = {} and workload.concurrency = {} must both be at least 1",
                w.agents, w.concurrency
            )));
        }
        buffers.reserve(exp)?;
        let t0 = SimTime::from_us(if w.parent_warm { w.parent_idle_us } else { 0 });
        let Buffers { engine, launch, caches, server, agents, spare, shared, tape, models } =
            buffers;
        let world = World::new(exp, t0, (engine, caches, models), counts)?;
        launch.reset(strategy, t0, w.agents);
        let prewarm = *strategy == Strategy::Prewarm || super::world::creates_object(exp);
        let strips = agent::strips_own(exp, world.agents_model());
        let copies =
            agent::build_into((agents, spare, shared, tape), exp, replication, prewarm, strips);
        let mut run = Run {
            strategy,
            launch,
            agents: &mut agents[..],
            admits_all: admits_all(exp),
            parent: Parent::new(exp, world.models, replication),
            turn_draws: TurnDraws::new(w),
            tape,
            copies,
            next_queued: 0,
            arrived: 0,
            free_slots: w.concurrency,
            completed: 0,
            agent_ttl: exp.cache.agent_ttl(w.kind.name()),
            server: exp.server.as_ref().map(|p| {
                server.reset(p);
                (p, server)
            }),
            world,
        };
        parent::warm(&mut run.world, run.server.as_mut().map(|(_, s)| &mut **s))?;
        Ok(run)
    }

    fn agent_mut(&mut self, who: Requester) -> &mut Agent {
        &mut self.agents[index_of(who, self.world.n)]
    }

    /// Start the fan-out at t0 and run the engine to the end; then the tape keeps the agents'
    /// prompts that reach further than its own, or, when the run failed, is drawn again.
    pub(super) fn go(&mut self) -> Result<(), SimError> {
        let result = self.run_to_end();
        match &result {
            Ok(()) if self.copies => {
                for a in 0..self.world.n {
                    self.tape.adopt(a, &mut self.agents[a as usize].chain.prompt);
                }
            }
            Ok(()) => {}
            Err(_) => self.tape.invalidate(),
        }
        result
    }

    fn run_to_end(&mut self) -> Result<(), SimError> {
        let t0 = self.world.t0;
        // Starting the agents as the first event puts the clock at t0 for them.
        self.world.engine.schedule_at(t0, Ev::Start);
        if self.parent.is_some() {
            let every = SimDuration::from_us(self.world.exp.workload.parent_turn_every_us);
            Parent::schedule_turn(&mut self.world, t0.saturating_add(every));
        }
        while let Some((_, ev)) = self.world.engine.pop()? {
            self.handle(ev)?;
        }
        if let Some((p, server)) = &self.server {
            server.costs(p, self.world.rec.metrics);
        }
        self.world.rec.metrics.events = self.world.engine.delivered();
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
            Ev::PrewarmReady => self.prewarm_ready(),
            Ev::ParentTurn | Ev::ParentSend => self.parent_event(ev),
            Ev::Arrive => {
                self.arrived += 1;
                self.schedule_arrival();
                self.fill_slots()
            }
            Ev::Step(r) => self.server_step(r as usize),
        }
    }

    /// The parent's next turn, or its retry after a 429; its turns stop once every agent is
    /// done.
    fn parent_event(&mut self, ev: Ev) -> Result<(), SimError> {
        let p = self.parent.as_mut().expect("parent events are scheduled only with a parent");
        match ev {
            Ev::ParentTurn if self.completed == self.world.n => Ok(()),
            Ev::ParentTurn => p.turn(&mut self.world),
            _ => p.send(&mut self.world),
        }
    }

    fn start(&mut self) -> Result<(), SimError> {
        // Gemini explicit caching: the prewarm request is the client's create call.
        let creates = super::world::creates_object(self.world.exp);
        if *self.strategy == Strategy::Prewarm || creates {
            self.launch.start_create(creates);
            self.agent_mut(Requester::Prewarm).enter(Phase::Running);
            self.send(Requester::Prewarm)?;
        }
        if self.world.exp.workload.arrival_every_us == 0 {
            self.arrived = self.world.n;
        } else {
            self.arrived = 1;
            self.schedule_arrival();
        }
        self.fill_slots()
    }

    /// Agent `a` arrives at t0 + a * arrival_every.
    fn arrival(&self, a: u32) -> SimTime {
        let every = SimDuration::from_us(self.world.exp.workload.arrival_every_us);
        self.world.t0.saturating_add(every.saturating_mul(u64::from(a)))
    }

    /// Schedule the next agent's arrival, if one is still to come.
    fn schedule_arrival(&mut self) {
        if self.arrived < self.world.n {
            let at = self.arrival(self.arrived);
            self.world.engine.schedule_at(at, Ev::Arrive);
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
        debug_assert!(a < self.world.n);
        self.next_queued += 1;
        let now = self.world.engine.now();
        self.agents[a as usize].slot = now;
        self.gate(a, now)
    }

    /// The strategy's gate on agent `a`'s first request at `now` (held while a create call is
    /// in flight).
    fn gate(&mut self, a: u32, now: SimTime) -> Result<(), SimError> {
        let on_slot = self.launch.on_slot(a, now);
        if let OnSlot::Wait | OnSlot::GateAt(_) = on_slot {
            self.agents[a as usize].hold();
        }
        match on_slot {
            OnSlot::Send => self.send_first(a),
            OnSlot::Wait => Ok(()),
            OnSlot::GateAt(at) => {
                self.world.engine.schedule_at(at, Ev::Gate(a));
                Ok(())
            }
            OnSlot::OpenHold { cap } => {
                self.world.engine.schedule_in(cap, Ev::HoldCap);
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

    /// The prewarm request is readable or gave up: release who `prewarm` held, gate who waited.
    fn prewarm_ready(&mut self) -> Result<(), SimError> {
        let released = self.launch.on_prewarm_ready();
        self.send_released(released)?;
        let now = self.world.engine.now();
        self.launch.take_awaiting().into_iter().try_for_each(|a| self.gate(a, now))
    }

    /// `wait_first`'s cap is reached (now): record whether the first writer's response had
    /// begun by then (`RunMetrics::hold_capped`).
    fn note_cap(&mut self) {
        let Strategy::WaitFirst { max_wait_us, .. } = *self.strategy else { return };
        let mx = &mut *self.world.rec.metrics;
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
        let now = self.world.engine.now();
        let ag = &mut self.agents[a as usize];
        ag.enter(Phase::Running);
        let slot = ag.slot;
        if now > slot {
            let hold = (Requester::Agent(a), 0);
            self.world.rec.segment(hold, SegmentKind::Hold, (slot, now), Outcome::None);
        }
        if let Some(p) = &self.parent {
            let strips = agent::strips_own(self.world.exp, self.world.agents_model());
            p.fork(self.world.exp, (ag, a), self.world.engine.now(), strips);
        }
        self.send(Requester::Agent(a))
    }
}

impl<'a> Run<'a> {
    /// Send `who`'s current request at `now`: the window, a 529, admission, the cache, the
    /// latency, the bookkeeping, then what follows the response.
    fn send(&mut self, who: Requester) -> Result<(), SimError> {
        let (now, ttl, shown) = (self.world.engine.now(), self.agent_ttl, who.shown(self.world.n));
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let i = index_of(who, self.world.n);
        let ag = &self.agents[i];
        debug_assert_eq!(ag.phase(), Phase::Running, "{who:?} sends only while running");
        let bps = ag.breakpoints(ttl, &mut bps);
        let (m, out, request) = (ag.model, ag.output_tokens, ag.turn);
        ag.check_window(self.world.exp, (&self.world.models[m], self.world.windows[m]), shown)?;
        if self.server.is_some() {
            self.server_send(who, request, out);
            return Ok(());
        }
        if let Some(o) = self.agents[i].overloaded(self.world.exp) {
            return self.backoff(who, o);
        }
        let (miss, admit) = match self.admits_all {
            true => (false, Admit::ChargeAfter),
            false => {
                let ag = &mut self.agents[i];
                self.world.admit(ag, m, (bps, out, now), (shown, request))?
            }
        };
        if let Admit::Retry(wait) = admit {
            self.world.throttle(&mut self.agents[i], (who, request), wait);
            return Ok(());
        }
        let ag = &mut self.agents[i];
        ag.overload_retries = 0;
        let terms = match who {
            Requester::Agent(a) => {
                #[cfg(debug_assertions)]
                debug_assert_eq!(out, self.tape.output(a, request), "agent {a}'s {request}");
                self.tape.terms(&self.world.latency[m], a, request)
            }
            _ => self.world.latency[m].sample(&mut ag.lat).terms(out),
        };
        let route = super::world::route_of(who, ag.overflow.as_deref_mut());
        let prompt = &ag.chain.prompt;
        let (usage, timing) =
            serve_terms(&mut self.world.caches[m], (prompt, bps, miss), (now, route), terms)
                .map_err(|source| SimError::Cache { agent: shown, request, source })?;
        self.world.limiters.settle(self.world.exp, (m, admit), now, &usage, out);
        // Billed after the settle (a call): a bill made before it would be kept in memory
        // across the call and its costs read back as one 16-byte load of two 8-byte stores.
        let bill = self.world.caches[m].prices().bill(&usage, out);
        self.world.rec.metrics.long_context_requests += u64::from(bill.long_context);
        let (cost_usd, uncached_usd) = (bill.cost_usd, bill.uncached_usd);
        let wait = matches!((who, request), (Requester::Agent(_), 0)).then(|| now - ag.slot);
        let served = Served { who, request, send_us: now, usage, timing, out, model: m, cost_usd };
        self.world.rec.request(&served, (uncached_usd, wait), &ag.chain.prompt, bps);
        let Requester::Agent(a) = who else {
            self.prewarm_served(now, timing);
            return Ok(());
        };
        self.served(a, request, now, timing, Reply::Whole)
    }

    /// The prewarm request was served at `now`: its entries are readable after its first
    /// token and ready delay; it counts toward the makespan. Once a run: out of line.
    #[cold]
    #[inline(never)]
    fn prewarm_served(&mut self, now: SimTime, t: Timing) {
        self.agent_mut(Requester::Prewarm).enter(Phase::Done);
        self.world.engine.schedule_at(now + t.ttft + t.ready_delay, Ev::PrewarmReady);
        let mx = &mut *self.world.rec.metrics;
        mx.makespan_us = mx.makespan_us.max((now + t.ttft - self.world.t0).as_us());
    }

    /// `part` of agent `a`'s request `request` served at `now`: what follows (first token, end).
    fn served(
        &mut self,
        a: u32,
        request: u32,
        now: SimTime,
        t: Timing,
        part: Reply,
    ) -> Result<(), SimError> {
        let first_token = part != Reply::End;
        if first_token && a == 0 && request == 0 {
            self.note_first_writer(now + t.ttft);
        }
        if first_token && self.launch.listens_to_first_token(a, request) {
            self.world.engine.schedule_at(now + t.ttft, Ev::FirstToken(a));
        }
        if part == Reply::FirstToken {
            return Ok(());
        }
        // Saturating: a response of years (a key at its extreme) ends past any horizon.
        let end = (now + t.ttft).saturating_add(t.decode);
        let last = request + 1 >= self.agents[a as usize].turns;
        if last || self.launch.listens_to_end(a) {
            // Someone observes this response's end: the slot, the completion, the next agent.
            self.world.engine.schedule_at(end, Ev::ResponseEnd(a));
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
            self.world.rec.metrics.hold_first_token_us = Some(since_slot.as_us());
        }
    }

    /// A 529 under `o`: the client retries after its backoff, or gives up.
    #[cold]
    #[inline(never)]
    fn backoff(&mut self, who: Requester, o: &Overload) -> Result<(), SimError> {
        self.world.rec.metrics.overloaded += 1;
        match self.agent_mut(who).backoff(o) {
            None => self.give_up(who),
            Some(delay) => {
                self.world.engine.schedule_in(delay, Ev::Send(who));
                Ok(())
            }
        }
    }

    /// `who` gave up after its last 529: its remaining turns are not sent, its slot is freed,
    /// and whoever waited for it goes on (the prewarm's agents are released uncached; under
    /// `sequential` the next agent starts).
    #[cold]
    #[inline(never)]
    fn give_up(&mut self, who: Requester) -> Result<(), SimError> {
        self.agent_mut(who).enter(Phase::Failed);
        let Requester::Agent(a) = who else { return self.prewarm_ready() };
        self.world.rec.metrics.failed_agents += 1;
        let released = self.launch.on_response_end(a);
        self.send_released(released)?;
        self.completed += 1;
        self.free_slots += 1;
        self.fill_slots()
    }

    /// The agent's current response ended: next turn (after a tool call) or done.
    fn response_end(&mut self, a: u32) -> Result<(), SimError> {
        let now = self.world.engine.now();
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
        let mx = &mut *self.world.rec.metrics;
        mx.completion_us.record((now - arrival).as_us());
        mx.makespan_us = mx.makespan_us.max((now - self.world.t0).as_us());
        self.free_slots += 1;
        self.fill_slots()
    }

    /// After response `request` ends at `end`: the tool call, then the next request.
    fn tool_call(&mut self, a: u32, request: u32, end: SimTime) {
        let ag = &mut self.agents[a as usize];
        let tape = (&mut *self.tape, &self.turn_draws, self.copies);
        let tool_time = ag.next_turn(self.world.exp, tape, a, request);
        ag.turn += 1;
        let tool = (Requester::Agent(a), request + 1);
        let next = end.saturating_add(tool_time);
        self.world.rec.segment(tool, SegmentKind::Tool, (end, next), Outcome::None);
        self.world.engine.schedule_at(next, Ev::Send(Requester::Agent(a)));
    }
}

/// Where `who` is in the run's agents (`n` agents, then the prewarm request): the parent is
/// not an agent.
fn index_of(who: Requester, n: u32) -> usize {
    match who {
        Requester::Agent(a) => a as usize,
        Requester::Prewarm => n as usize,
        Requester::Parent => unreachable!("the parent has no agent state"),
    }
}
