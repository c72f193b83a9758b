//! The advancing parent (`workload.parent_turn_every` > 0): the parent conversation goes on
//! while the fan-out runs, one exchange per turn, and each agent forks its history as of its
//! first request's send. See docs/model.md, "An advancing parent".

use super::admission::{counts_parent, draw_implicit_miss, draw_miss, Admit, Ask};
use super::agent::Requester;
use super::recorder::Served;
use super::sim::{serve_timed, Ev, Run};
use super::workload::{self, Chain};
use super::SimError;
use crate::cache::{Breakpoint, Prompt};
use crate::config::{BlockKind, Experiment, ModelParams, ThinkingHistory};
use crate::rng::{self, site, ChaCha8Rng};
use crate::time::{SimDuration, SimTime};

/// The parent conversation while the fan-out runs: its own chain, and the line of history
/// the agents fork.
pub(super) struct Parent {
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
    /// 429 jitter (only when the parent draws on the buckets, `rate_limits.parent_counts`).
    pub jitter: Option<ChaCha8Rng>,
    /// The output tokens of its latest turn, and whether that turn is still to be sent (a
    /// 429 delayed it).
    pub out: u64,
    pub pending: bool,
}

impl Parent {
    /// The advancing parent, when `parent_turn_every` > 0: its prompt as of t0 (the warm
    /// parent's last request) and, for kinds that do not keep its prefix, the agents' line.
    /// `models`: the experiment's model, then the agents' when it differs.
    pub(super) fn new(exp: &Experiment, models: &[ModelParams], replication: u32) -> Option<Self> {
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
        let agents_drop =
            models.last().expect("a model").thinking == ThinkingHistory::Stripped || !w.thinking;
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
            jitter: counts_parent(exp).then(|| stream(site::RATE_LIMIT)),
            out: 0,
            pending: false,
        })
    }

    /// The history an agent whose first request is sent at `now` forks.
    pub(super) fn line_at(&self, now: SimTime) -> &Prompt {
        match &self.line_bare {
            _ if self.changed_us == now => &self.before,
            Some(bare) => bare,
            None => &self.line,
        }
    }

    /// The parent's next turn at `now`: one exchange appended to its own chain and to the
    /// agents' line, and its output drawn.
    pub(super) fn advance(&mut self, exp: &Experiment, now: SimTime) {
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
}

impl Run<'_> {
    /// Schedule the parent's next turn at `at`, unless it is past the horizon (the parent's
    /// turns stop there; the agents' own events still meet the engine's bound).
    pub(super) fn schedule_parent_turn(&mut self, at: SimTime) {
        let horizon = SimDuration::from_us(self.exp.limits.horizon_us);
        if self.parent.is_some() && at <= self.t0.saturating_add(horizon) {
            self.engine.schedule_at(at, Ev::ParentTurn);
        }
    }

    /// The parent's next turn: one exchange appended to its history (and to the agents'
    /// line), its request served by the cache like any other (breakpoints: end of system, last
    /// message; no rate limiter), counted apart from the fan-out. Stops once every agent is done.
    pub(super) fn parent_turn(&mut self) -> Result<(), SimError> {
        if self.completed == self.n {
            return Ok(());
        }
        let now = self.engine.now();
        let p = self.parent.as_mut().expect("parent turns are scheduled only with a parent");
        p.advance(self.exp, now);
        // The clock goes on whether or not this turn is sent now; a turn still waiting on a
        // 429 is sent with this one's exchange appended (the conversation went on).
        let pending = p.pending;
        let every = SimDuration::from_us(self.exp.workload.parent_turn_every_us);
        self.schedule_parent_turn(now.saturating_add(every));
        if pending {
            return Ok(());
        }
        self.parent_send()
    }

    /// Send the parent's latest turn (or retry it after a 429): its breakpoints (end of
    /// system, last message, the parent's TTL), the window check, the buckets when the parent
    /// draws on them, the cache; counted apart from the fan-out.
    pub(super) fn parent_send(&mut self) -> Result<(), SimError> {
        let (now, exp) = (self.engine.now(), self.exp);
        let p = self.parent.as_mut().expect("parent sends only with a parent");
        let (out, ttl) = (p.out, self.parent_ttl);
        let mut bps = [Breakpoint { index: 0, ttl }; 3];
        let last = p.own.prompt.len() - 1;
        let nbps = workload::breakpoints(1, last, last, ttl, &mut bps);
        let bps = &bps[..nbps];
        let (who, request) = (Requester::Parent.shown(self.n), (p.turn - 1) as u32);
        let (tokens, window) = (p.own.prompt.tokens() + out, self.models[0].window_tokens());
        if tokens > window {
            let (model, key) = (self.models[0].name.clone(), "workload.parent_turn_every");
            let agent = who;
            return Err(SimError::ContextWindow { agent, request, tokens, window, model, key });
        }
        let miss = draw_miss(exp.cache.miss_probability, p.miss.as_mut())
            | draw_implicit_miss(exp, p.implicit.as_mut());
        let ask = Ask { prompt: &p.own.prompt, bps, out, miss, now, who, request };
        // The parent's requests skip the buckets unless they count: as if charged already.
        let admit = match counts_parent(exp) {
            true => self.limiters.ask(exp, 0, &self.caches[0], &ask)?,
            false => Admit::Charged,
        };
        if let Admit::Retry(wait) = admit {
            let jitter = p.jitter.as_mut().expect("a stream when the parent counts");
            let r = exp.rate_limits.as_ref().expect("parent_counts needs [rate_limits]");
            p.pending = true;
            let jitter = SimDuration::from_us(r.retry_jitter_us.sample_u64(jitter));
            self.engine.schedule_in(wait.saturating_add(jitter), Ev::ParentSend);
            return Ok(());
        }
        p.pending = false;
        let rates = self.latency[0].sample(&mut p.lat);
        let (usage, timing) =
            serve_timed(&mut self.caches[0], (&p.own.prompt, bps, miss), now, rates, out)
                .map_err(|source| SimError::Cache { agent: who, request, source })?;
        self.limiters.settle(exp, (0, admit), now, &usage, out);
        let cost_usd = self.caches[0].prices().bill(&usage, out).cost_usd;
        let who = Requester::Parent;
        let served = Served { who, request, send_us: now, usage, timing, out, model: 0, cost_usd };
        self.rec.parent_request(&served, &p.own.prompt, bps);
        Ok(())
    }
}
