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
//! t0 (its own chain, one exchange block per turn, counted in `RunMetrics::parent_*`), until the
//! last agent completes; an agent's first request forks the history as of its send (every
//! exchange sent strictly before it). See docs/model.md, "An advancing parent".

use super::latency::{self, Work};
use super::rate::{Admission, Limit, RateLimiter};
use super::workload::{self, Shared, WORKFLOW_ID};
use super::{Detailed, Outcome, RequestKeys, RequestRecord, Segment, SegmentKind, SimError};
use crate::cache::{self, Breakpoint, Cache, Prompt, Usage};
use crate::config::{AgentKind, Experiment, ModelParams, Release, Strategy};
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
    /// The next agent arrives and asks for a slot (`workload.arrival_every` > 0).
    Arrive,
}

/// One agent (or the prewarm request) and where it is.
struct Agent {
    prompt: Prompt,
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
    work: ChaCha8Rng,
    lat: ChaCha8Rng,
    jitter: ChaCha8Rng,
}

/// The parent conversation while the fan-out runs, when it advances
/// (`workload.parent_turn_every` > 0): its own chain, and the line of history the agents fork.
struct Parent {
    /// Its own prompt: tools, system, history, then one block per exchange so far.
    prompt: Prompt,
    /// The agents' line when their kind does not keep the parent's prefix (the same history
    /// behind other tools, system or model); `None`: the agents' line is `prompt`.
    line: Option<Prompt>,
    /// The agents' line before the latest exchange, and when that exchange was sent: an agent
    /// sent at that very instant carries the history without it (it left first).
    before: Prompt,
    changed_us: SimTime,
    /// Exchanges so far.
    turn: u64,
    work: ChaCha8Rng,
    lat: ChaCha8Rng,
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
    limiters: Vec<Option<RateLimiter>>,
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
        let limiters = models
            .iter()
            .map(|_| exp.rate_limits.as_ref().map(|r| RateLimiter::new(r.rpm, r.itpm, r.otpm)))
            .collect();
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
            next_queued: 0,
            arrived: 0,
            free_slots: w.concurrency,
            hold_open: false,
            prewarm_ready: false,
            completed: 0,
            parent: None,
        };
        run.warm_parent()?;
        run.make_agents(replication);
        run.make_parent(replication);
        Ok(run)
    }

    /// A warm parent: its last request wrote its entries at time 0, readable at once.
    fn warm_parent(&mut self) -> Result<(), SimError> {
        if !self.exp.workload.parent_warm {
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
        let shared: Shared = workload::shared(exp, turns_hint);
        let shared_end = shared.prompt.len() - 1;
        let stream = |id: u64, s: u64| rng::stream(exp.seed, &[replication as u64, id, s]);
        for a in 0..self.n {
            let id = a as u64;
            let mut work = stream(id, site::WORKLOAD);
            let turns = if w.kind == AgentKind::Btw {
                1
            } else {
                (w.turns.sample_u64(&mut work).max(1)).min(u32::MAX as u64) as u32
            };
            let output_tokens = w.output_tokens.sample_u64(&mut work);
            let mut prompt = shared.prompt.clone();
            workload::push_task(&mut prompt, id, w.task_tokens);
            self.agents.push(Agent {
                prompt,
                shared_end,
                model: shared.model,
                turns,
                turn: 0,
                output_tokens,
                slot_us: 0,
                first_done: false,
                waiting_prev: false,
                work,
                lat: stream(id, site::LATENCY),
                jitter: stream(id, site::RATE_LIMIT),
            });
        }
        if *self.strategy == Strategy::Prewarm {
            // The warming request: the shared prefix, max_tokens = 0, on the workflow's streams.
            self.agents.push(Agent {
                prompt: shared.prompt,
                shared_end,
                model: shared.model,
                turns: 1,
                turn: 0,
                output_tokens: 0,
                slot_us: 0,
                first_done: false,
                waiting_prev: false,
                work: stream(WORKFLOW_ID, site::WORKLOAD),
                lat: stream(WORKFLOW_ID, site::LATENCY),
                jitter: stream(WORKFLOW_ID, site::RATE_LIMIT),
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
        let stream = |s: u64| rng::stream(exp.seed, &[replication as u64, workload::PARENT_ID, s]);
        let (mut prompt, _) = workload::parent_request(exp);
        prompt.reserve(64);
        let line =
            (!workload::keeps_parent_prefix(&exp.workload.kind)).then(|| workload::line(exp, 64));
        let before = line.as_ref().unwrap_or(&prompt).clone();
        self.parent = Some(Parent {
            prompt,
            line,
            before,
            changed_us: SimTime::MAX,
            turn: 0,
            work: stream(site::WORKLOAD),
            lat: stream(site::LATENCY),
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
        let line = match &p.line {
            _ if p.changed_us == now => &p.before,
            Some(line) => line,
            None => &p.prompt,
        };
        let ag = &mut self.agents[a as usize];
        let mut prompt = line.clone();
        prompt.reserve(3 + 2 * ag.turns as usize);
        workload::push_brief(&mut prompt, exp);
        ag.shared_end = prompt.len() - 1;
        workload::push_task(&mut prompt, a as u64, exp.workload.task_tokens);
        ag.prompt = prompt;
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
        let out = w.output_tokens.sample_u64(&mut p.work);
        p.before.clone_from(p.line.as_ref().unwrap_or(&p.prompt));
        p.changed_us = now;
        workload::push_exchange(&mut p.prompt, p.turn, tokens);
        if let Some(line) = p.line.as_mut() {
            workload::push_exchange(line, p.turn, tokens);
        }
        let ttl = exp.cache.ttl;
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let last = p.prompt.len() - 1;
        let nbps = workload::breakpoints(1, last, last, ttl, &mut bps);
        let (agent, request) = (self.n + 1, (p.turn - 1) as u32);
        let (usage, timing) = serve_timed(
            &mut self.caches[0],
            &p.prompt,
            &bps[..nbps],
            now,
            &exp.latency,
            out,
            &mut p.lat,
        )
        .map_err(|source| SimError::Cache { agent, request, source })?;
        let cost_usd = cache::cost_usd(&self.models[0], &usage, out);
        let mx = &mut *self.metrics;
        mx.parent_requests += 1;
        add_tokens(&mut mx.parent_tokens, &usage, out);
        mx.parent_cost_usd += cost_usd;
        if self.trace.is_some() {
            let served =
                Served { agent, request, send_us: now, usage, timing, out, model: 0, cost_usd };
            let traced = (p.prompt.tokens(), keys(&p.prompt, &bps[..nbps], &usage));
            self.trace_request(&served, traced);
        }
        self.schedule_parent_turn(now.saturating_add(w.parent_turn_every_us));
        Ok(())
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
        let ttl = self.exp.cache.ttl;
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let ag = &mut self.agents[a as usize];
        let nbps = workload::breakpoints(1, ag.shared_end, ag.prompt.len() - 1, ttl, &mut bps);
        let (m, out, request) = (ag.model, ag.output_tokens, ag.turn);
        let admit = self.admit(a, &bps[..nbps])?;
        if let Admit::Retry(wait_us) = admit {
            return self.throttle(a, request, wait_us);
        }
        let ag = &mut self.agents[a as usize];
        // The `fork_other_model` model (m = 1) runs at its own model's speed.
        let params = match m {
            0 => &self.exp.latency,
            _ => self.exp.latency_other.as_ref().unwrap_or(&self.exp.latency),
        };
        let (usage, t) = serve_timed(
            &mut self.caches[m],
            &ag.prompt,
            &bps[..nbps],
            now,
            params,
            out,
            &mut ag.lat,
        )
        .map_err(|source| SimError::Cache { agent: a, request, source })?;
        let counted = self.counted_input(&usage);
        if let (Admit::ChargeAfter, Some(limiter)) = (admit, self.limiters[m].as_mut()) {
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

    /// Input tokens that count toward ITPM.
    fn counted_input(&self, u: &Usage) -> u64 {
        let reads = self.exp.rate_limits.as_ref().is_some_and(|r| r.cache_reads_count);
        u.uncached + u.cache_write() + if reads { u.cache_read } else { 0 }
    }

    /// Ask agent `a`'s model's rate limiter. When even the worst case (every input token
    /// counted) does not fit, the exact usage is found by `Cache::peek`, so that a refused
    /// request leaves the cache untouched.
    fn admit(&mut self, a: u32, bps: &[Breakpoint]) -> Result<Admit, SimError> {
        let now = self.engine.now();
        let ag = &self.agents[a as usize];
        let (m, out, request) = (ag.model, ag.output_tokens, ag.turn);
        let Some(limiter) = self.limiters[m].as_mut() else { return Ok(Admit::ChargeAfter) };
        if limiter.would_admit(now, ag.prompt.tokens(), out) {
            return Ok(Admit::ChargeAfter);
        }
        let usage = self.caches[m]
            .peek(&ag.prompt, bps, now)
            .map_err(|source| SimError::Cache { agent: a, request, source })?;
        let counted = self.counted_input(&usage);
        let limiter = self.limiters[m].as_mut().expect("checked above");
        match limiter.admit(now, counted, out) {
            Admission::Admitted => Ok(Admit::Charged),
            Admission::RetryAfter(wait_us) => Ok(Admit::Retry(wait_us)),
            Admission::Never(limit, amount) => {
                let r = self.exp.rate_limits.as_ref().expect("a limiter has limits");
                let (name, capacity) = match limit {
                    Limit::Rpm => ("rpm", r.rpm),
                    Limit::Itpm => ("itpm", r.itpm),
                    Limit::Otpm => ("otpm", r.otpm),
                };
                Err(SimError::NeverAdmitted { agent: a, limit: name, amount, capacity })
            }
        }
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
            let prompt = &self.agents[a as usize].prompt;
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
        let mut result_tokens = w.tool_result_tokens.sample_u64(&mut ag.work);
        if denied {
            // Refused at call time: an immediate, short error result.
            tool_us = 0;
            result_tokens = workload::DENIED_RESULT_TOKENS;
        }
        let response = ag.output_tokens;
        workload::push_turn(&mut ag.prompt, a as u64, request as u64, response, result_tokens);
        ag.output_tokens = w.output_tokens.sample_u64(&mut ag.work);
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
    prompt: &Prompt,
    bps: &[Breakpoint],
    now: SimTime,
    params: &crate::config::LatencyParams,
    out: u64,
    rng: &mut ChaCha8Rng,
) -> Result<(Usage, latency::Timing), cache::CacheError> {
    let mut timing = None;
    let usage = cache.serve(prompt, bps, now, |u| {
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
