//! What every request of a run meets, whoever sends it (an agent, the prewarm request, the
//! advancing parent): the events (`Ev`) and the clock, the caches of the run's models, their
//! rate limiters, the latency model and the recorder. `sim.rs` drives the agents over it;
//! `parent.rs` sends the parent's turns through it. It knows no agent and no strategy.

use super::admission::{draw_implicit_miss, draw_miss, would_have_read, Admit, Ask, Limiters};
use super::agent::{Agent, Requester};
use super::latency::{Latency, Terms, Timing};
use super::recorder::{Recorder, Trace};
use super::{Outcome, SegmentKind, SimError};
use crate::cache::{self, Breakpoint, Cache, Prompt, Route, Usage};
use crate::config::{AgentKind, ExperimentSpec, ModelParams};
use crate::engine::{Bounds, Engine};
use crate::metrics::RunMetrics;
use crate::rng::{ChaCha8Rng, RngExt};
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

/// The parts of a run every request meets.
pub(super) struct World<'a> {
    pub exp: &'a ExperimentSpec,
    pub engine: &'a mut Engine<Ev>,
    pub rec: Recorder<'a>,
    pub t0: SimTime,
    /// Number of agents.
    pub n: u32,
    /// One cache per model.
    pub caches: &'a mut [Cache],
    /// The experiment's model, then `fork_other_model`'s.
    pub models: &'a [ModelParams],
    /// Each model's `window_tokens` (a request checks it every time).
    pub windows: [u64; 2],
    /// Each model's latency parameters, ready to draw from (`fork_other_model` runs at its
    /// own model's speed when `latency_other` is given).
    pub latency: [Latency<'a>; 2],
    pub limiters: Limiters,
}

impl<'a> World<'a> {
    /// The world of a run of `exp` from `t0` in the buffers of earlier runs (emptied, memory
    /// kept; `models` holds a `fork_other_model` run's two), counting into `metrics` (and
    /// `trace`). Inlined into `Run::new`.
    #[inline(always)]
    pub(super) fn new(
        exp: &'a ExperimentSpec,
        t0: SimTime,
        (engine, caches, models): (
            &'a mut Engine<Ev>,
            &'a mut Vec<Cache>,
            &'a mut Vec<ModelParams>,
        ),
        (metrics, trace): (&'a mut RunMetrics, Option<&'a mut Trace>),
    ) -> Result<Self, SimError> {
        let bounds = Bounds {
            max_events: exp.limits.max_events,
            horizon: t0.saturating_add(SimDuration::from_us(exp.limits.horizon_us)),
        };
        engine.reset(bounds, SimTime::ZERO);
        let models = run_models(exp, models)?;
        reset_caches(caches, exp, models);
        let n = exp.workload.agents;
        metrics.agents = n as u64;
        Ok(World {
            exp,
            engine,
            rec: Recorder { metrics, trace, t0, n },
            t0,
            n,
            caches: &mut caches[..],
            limiters: Limiters::new(exp, models),
            windows: [0, models.len() - 1].map(|m| models[m].window_tokens()),
            models,
            latency: [
                Latency::new(&exp.latency),
                Latency::new(exp.latency_other.as_ref().unwrap_or(&exp.latency)),
            ],
        })
    }

    /// The agents' model: the experiment's, or `fork_other_model`'s.
    pub(super) fn agents_model(&self) -> &'a ModelParams {
        &self.models[self.models.len() - 1]
    }

    /// Agent (or prewarm) `ag`'s miss draws and model `m`'s limiter, for a run that has any
    /// of them: whether the lookup misses, and what the limiter said (an isolated miss is
    /// counted only for a request admitted). `who` and `request` name it in errors.
    #[inline(never)]
    pub(super) fn admit(
        &mut self,
        ag: &mut Agent,
        m: usize,
        (bps, out, now): (&[Breakpoint], u64, SimTime),
        (who, request): (u32, u32),
    ) -> Result<(bool, Admit), SimError> {
        let miss = draw_miss(self.exp.cache.miss_probability, ag.miss.as_deref_mut())
            | draw_implicit_miss(self.exp, ag.implicit.as_deref_mut());
        let ask = Ask { prompt: &ag.chain.prompt, bps, out, miss, now, who, request };
        let admit = self.limiters.ask(self.exp, m, &self.caches[m], &ask)?;
        if miss && !matches!(admit, Admit::Retry(_)) {
            self.rec.metrics.isolated_misses += isolated_miss(&self.caches[m], &ask)?;
        }
        Ok((miss, admit))
    }

    /// A 429 for `ag`'s request (`who`'s `request`): retry after `wait` plus jitter from its
    /// own stream.
    #[cold]
    #[inline(never)]
    pub(super) fn throttle(
        &mut self,
        ag: &mut Agent,
        (who, request): (Requester, u32),
        wait: SimDuration,
    ) {
        let now = self.engine.now();
        let jitter = match (&self.exp.rate_limits, ag.jitter.as_deref_mut()) {
            (Some(r), Some(rng)) => SimDuration::from_us(r.retry_jitter_us.sample_u64(rng)),
            _ => SimDuration::ZERO,
        };
        let retry = wait.saturating_add(jitter);
        self.rec.metrics.rate_limited += 1;
        self.rec.metrics.throttled_us += retry.as_us();
        let span = (now, now + retry);
        self.rec.segment((who, request), SegmentKind::RateLimit, span, Outcome::None);
        self.engine.schedule_in(retry, Ev::Send(who));
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
    exp: &'a ExperimentSpec,
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
fn reset_caches(caches: &mut Vec<Cache>, exp: &ExperimentSpec, models: &[ModelParams]) {
    caches.truncate(models.len());
    for (i, m) in models.iter().enumerate() {
        match caches.get_mut(i) {
            Some(cache) => cache.reset(&exp.cache, m),
            None => caches.push(Cache::from_params(&exp.cache, m)),
        }
    }
}

/// Whether a run's client creates a Gemini explicit cache object before its agents send
/// (`gemini.mode = "explicit"`, served by the API): the prewarm request is its create call.
pub(super) fn creates_object(exp: &ExperimentSpec) -> bool {
    exp.cache.policy == cache::Policy::Gemini
        && exp.cache.hosted.gemini.mode == cache::GeminiMode::Explicit
        && exp.server.is_none()
}

/// The route of a request of `who` (the parent and the prewarm request send agent 0's key):
/// two draws from the requester's overflow stream, always both (so the stream's position
/// does not depend on the outcome); no stream, no draw (both 0).
#[inline]
pub(super) fn route_of(who: Requester, rng: Option<&mut ChaCha8Rng>) -> Route {
    let agent = match who {
        Requester::Agent(a) => Some(a),
        Requester::Prewarm | Requester::Parent => None,
    };
    match rng {
        Some(rng) => {
            let overflow_draw = rng.random::<f64>();
            Route { agent, overflow_draw, warm_draw: rng.random::<f64>() }
        }
        None => Route { agent, ..Route::default() },
    }
}

/// Serve `prompt` at `now` and time it at its drawn latency terms `terms`: the entries it
/// writes become ready at send + TTFT + ready delay. The timing is computed inside `serve`
/// when it writes (it needs the usage first), else right after. Inlined into its callers:
/// its arguments and its result then stay in registers, where a call would pass them through
/// memory and stall the reads that follow the writes.
#[inline(always)]
pub(super) fn serve_terms(
    cache: &mut Cache,
    (prompt, bps, miss): (&Prompt, &[Breakpoint], bool),
    (now, route): (SimTime, Route),
    terms: Terms,
) -> Result<(Usage, Timing), cache::CacheError> {
    // The timing computed inside is kept field by field: a `Timing` copied whole would be
    // read back as one 16-byte load of the two 8-byte stores just made (a store-forwarding
    // stall a request).
    let (mut timed, mut ttft, mut decode, mut ready_delay) =
        (false, SimDuration::ZERO, SimDuration::ZERO, SimDuration::ZERO);
    let usage = cache.serve_routed(prompt, bps, (now, miss, route), |u| {
        let t = terms.timing(prefill_tokens(u), u.cache_read);
        (timed, ttft, decode, ready_delay) = (true, t.ttft, t.decode, t.ready_delay);
        now + t.ttft + t.ready_delay
    })?;
    let t = if timed {
        Timing { ttft, decode, ready_delay }
    } else {
        terms.timing(prefill_tokens(&usage), usage.cache_read)
    };
    Ok((usage, t))
}

/// The tokens of `u` that must be prefilled: uncached and written.
fn prefill_tokens(u: &Usage) -> u64 {
    u.uncached + u.cache_write()
}
