//! The advancing parent (`workload.parent_turn_every` > 0): the parent conversation goes on
//! while the fan-out runs, one exchange per turn, and each agent forks its history as of its
//! first request's send. See docs/model.md, "An advancing parent".

use super::admission::{draw_implicit_miss, draw_miss, Admit, Ask};
use super::agent::{Agent, Requester};
use super::recorder::Served;
use super::server::Server;
use super::workload::{self, Chain};
use super::world::{serve_terms, Ev, World};
use super::SimError;
use crate::cache::{Breakpoint, Prompt};
use crate::config::{AgentKind, BlockKind, ExperimentSpec, ModelParams, ThinkingHistory, Ttl};
use crate::dist::Dist;
use crate::rng::{self, site, ChaCha8Rng};
use crate::time::{SimDuration, SimTime};

/// The parent conversation while the fan-out runs: its own chain, and the line of history
/// the agents fork.
pub(super) struct Parent<'a> {
    /// Its own requests: tools, system, history, then its exchanges, as the API processes them.
    pub own: Chain,
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
    pub turn: u64,
    work: ChaCha8Rng,
    pub lat: ChaCha8Rng,
    pub miss: Option<ChaCha8Rng>,
    /// Gemini implicit hit draws (only under the `gemini` policy in implicit mode).
    pub implicit: Option<ChaCha8Rng>,
    /// OpenAI overflow draws (`cache.policy = "openai"`).
    pub overflow: Option<ChaCha8Rng>,
    /// The 429 retry jitter and its stream, when the parent draws on the buckets
    /// (`rate_limits.parent_counts`).
    counts: Option<(&'a Dist, ChaCha8Rng)>,
    /// The TTL of its breakpoints.
    ttl: Ttl,
    /// The output tokens of its latest turn, and whether that turn is still to be sent (a
    /// 429 delayed it).
    pub out: u64,
    pub pending: bool,
}

impl<'a> Parent<'a> {
    /// The advancing parent, when `parent_turn_every` > 0: its prompt as of t0 (the warm
    /// parent's last request) and, for kinds that do not keep its prefix, the agents' line.
    /// `models`: the experiment's model, then the agents' when it differs.
    pub(super) fn new(
        exp: &'a ExperimentSpec,
        models: &[ModelParams],
        replication: u32,
    ) -> Option<Self> {
        let w = &exp.workload;
        if w.parent_turn_every_us == 0 {
            return None;
        }
        let stream = |s: u64| rng::stream(exp.seed, &[replication as u64, workload::PARENT_ID, s]);
        let (mut prompt, _) = workload::parent_request(exp);
        prompt.reserve(64);
        let strips_own = w.parent_thinks()
            && models[0].thinking == ThinkingHistory::Stripped
            && w.parent_exchange_blocks.contains(&BlockKind::User);
        let line = workload::line(exp, 64, w.thinking);
        let agents_model = &models[models.len() - 1];
        let agents_drop = agents_model.thinking == ThinkingHistory::Stripped || !w.thinking;
        let line_bare = (w.parent_thinks() && agents_drop).then(|| line.clone());
        let before = line_bare.as_ref().unwrap_or(&line).clone();
        Some(Parent {
            own: Chain::new(prompt, strips_own),
            line,
            line_bare,
            before,
            changed_us: SimTime::MAX,
            turn: 0,
            work: stream(site::WORKLOAD),
            lat: stream(site::LATENCY),
            miss: (exp.cache.miss_probability > 0.0).then(|| stream(site::MISS)),
            implicit: super::admission::draws_implicit(exp).then(|| stream(site::IMPLICIT_HIT)),
            overflow: super::agent::draws_overflow(exp).then(|| stream(site::OVERFLOW)),
            counts: exp
                .rate_limits
                .as_ref()
                .filter(|r| r.parent_counts)
                .map(|r| (&r.retry_jitter_us, stream(site::RATE_LIMIT))),
            ttl: exp.cache.parent_ttl(),
            out: 0,
            pending: false,
        })
    }

    /// The history an agent whose first request is sent at `now` forks.
    fn line_at(&self, now: SimTime) -> &Prompt {
        match &self.line_bare {
            _ if self.changed_us == now => &self.before,
            Some(bare) => bare,
            None => &self.line,
        }
    }

    /// The parent's next turn at `now`: one exchange appended to its own chain and to the
    /// agents' line, and its output drawn.
    fn advance(&mut self, exp: &ExperimentSpec, now: SimTime) {
        let w = &exp.workload;
        self.turn += 1;
        let tokens = w.parent_turn_tokens.sample_u64(&mut self.work);
        self.out = w.output_tokens.sample_u64(&mut self.work).min(w.output_max_tokens);
        self.before.clone_from(self.line_bare.as_ref().unwrap_or(&self.line));
        self.changed_us = now;
        for (kind, block) in workload::exchange(exp, self.turn, tokens).into_iter().flatten() {
            self.own.push(kind, block);
            self.line.push(block);
            if let (Some(bare), false) = (self.line_bare.as_mut(), kind == BlockKind::Thinking) {
                bare.push(block);
            }
        }
    }

    /// Agent `a`'s (`ag`'s) prompt forks the history as of `now`: its line (the parent's own
    /// prompt, or the same history behind its kind's tools, system or model), then the brief
    /// and its task; `strips`: its chain keeps a bare history. Subagents carry no history. A
    /// 429 retry resends this same body.
    pub(super) fn fork(
        &self,
        exp: &ExperimentSpec,
        (ag, a): (&mut Agent, u32),
        now: SimTime,
        strips: bool,
    ) {
        if exp.workload.kind == AgentKind::Subagent {
            return;
        }
        let mut prompt = self.line_at(now).fork(3 + workload::turn_room(exp, ag.turns));
        workload::push_brief(&mut prompt, exp);
        ag.shared_end = prompt.len() - 1;
        workload::push_task(&mut prompt, a as u64, exp.workload.task_tokens);
        ag.chain.reset(prompt, strips);
    }

    /// Schedule the parent's next turn at `at`, unless it is past the horizon (the parent's
    /// turns stop there; the agents' own events still meet the engine's bound).
    pub(super) fn schedule_turn(w: &mut World<'_>, at: SimTime) {
        let horizon = SimDuration::from_us(w.exp.limits.horizon_us);
        if at <= w.t0.saturating_add(horizon) {
            w.engine.schedule_at(at, Ev::ParentTurn);
        }
    }

    /// The parent's next turn: one exchange appended to its history (and to the agents'
    /// line), its request served by the cache like any other, counted apart from the fan-out.
    pub(super) fn turn(&mut self, w: &mut World<'_>) -> Result<(), SimError> {
        let now = w.engine.now();
        self.advance(w.exp, now);
        // The clock goes on whether or not this turn is sent now; a turn still waiting on a
        // 429 is sent with this one's exchange appended (the conversation went on).
        let every = SimDuration::from_us(w.exp.workload.parent_turn_every_us);
        Self::schedule_turn(w, now.saturating_add(every));
        if self.pending {
            return Ok(());
        }
        self.send(w)
    }

    /// Send the parent's latest turn (or retry it after a 429): its breakpoints (end of
    /// system, last message, the parent's TTL), the window check, the buckets when the parent
    /// draws on them, the cache; counted apart from the fan-out.
    pub(super) fn send(&mut self, w: &mut World<'_>) -> Result<(), SimError> {
        let (now, exp) = (w.engine.now(), w.exp);
        let (out, ttl) = (self.out, self.ttl);
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let last = self.own.prompt.len() - 1;
        let nbps = workload::breakpoints(1, last, last, ttl, &mut bps);
        let bps = &bps[..nbps];
        let (who, request) = (Requester::Parent.shown(w.n), (self.turn - 1) as u32);
        let (tokens, window) = (self.own.prompt.tokens() + out, w.windows[0]);
        if tokens > window {
            let (model, key) = (w.models[0].name.clone(), "workload.parent_turn_every");
            let agent = who;
            return Err(SimError::ContextWindow { agent, request, tokens, window, model, key });
        }
        let miss = draw_miss(exp.cache.miss_probability, self.miss.as_mut())
            | draw_implicit_miss(exp, self.implicit.as_mut());
        let ask = Ask { prompt: &self.own.prompt, bps, out, miss, now, who, request };
        // The parent's requests skip the buckets unless they count: as if charged already.
        let admit = match self.counts.as_mut() {
            Some((jitter, rng)) => match w.limiters.ask(exp, 0, &w.caches[0], &ask)? {
                Admit::Retry(wait) => {
                    self.pending = true;
                    let jitter = SimDuration::from_us(jitter.sample_u64(rng));
                    w.engine.schedule_in(wait.saturating_add(jitter), Ev::ParentSend);
                    return Ok(());
                }
                admit => admit,
            },
            None => Admit::Charged,
        };
        self.pending = false;
        let terms = w.latency[0].sample(&mut self.lat).terms(out);
        let route = super::world::route_of(Requester::Parent, self.overflow.as_mut());
        let (usage, timing) =
            serve_terms(&mut w.caches[0], (&self.own.prompt, bps, miss), (now, route), terms)
                .map_err(|source| SimError::Cache { agent: who, request, source })?;
        w.limiters.settle(exp, (0, admit), now, &usage, out);
        let cost_usd = w.caches[0].prices().bill(&usage, out).cost_usd;
        let who = Requester::Parent;
        let served = Served { who, request, send_us: now, usage, timing, out, model: 0, cost_usd };
        w.rec.parent_request(&served, &self.own.prompt, bps);
        Ok(())
    }
}

/// A warm parent: its last request wrote its entries at time 0, readable at once (on the
/// self-hosted `server` when there is one). A parent of no tokens has nothing to cache: warm
/// or cold, the same (nothing is written).
pub(super) fn warm(w: &mut World<'_>, server: Option<&mut Server>) -> Result<(), SimError> {
    let exp = w.exp;
    if !exp.workload.parent_warm || exp.workload.parent_tokens == 0 {
        return Ok(());
    }
    let (prompt, bps) = workload::parent_request(exp);
    if let Some(server) = server {
        server.warm(&prompt);
        return Ok(());
    }
    let agent = Requester::Parent.shown(w.n);
    w.caches[0]
        .serve(&prompt, &bps, SimTime::ZERO, |_| SimTime::ZERO)
        .map_err(|source| SimError::Cache { agent, request: 0, source })?;
    Ok(())
}
