//! Admission of a request before the cache serves it: the rate limiters of the run (one per
//! rate-limit class), the exact usage a refused request would have had (`Cache::peek`), and
//! the isolated-miss draw.

use super::rate::{Admission, Limit, RateLimiter};
use super::SimError;
use crate::cache::{Breakpoint, Cache, Prompt, Usage};
use crate::config::{ExperimentSpec, GeminiMode, ModelParams, Policy};
use crate::rng::{ChaCha8Rng, RngExt};
use crate::time::{SimDuration, SimTime};

/// One request asking a rate limiter. `who` and `request` name it in errors.
pub(super) struct Ask<'p> {
    pub prompt: &'p Prompt,
    pub bps: &'p [Breakpoint],
    pub out: u64,
    pub miss: bool,
    pub now: SimTime,
    pub who: u32,
    pub request: u32,
}

/// What the rate limiter said about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    /// Admitted and charged with the exact usage (found by `Cache::peek`).
    Charged,
    /// Even the worst case fits: charge with the actual usage once served (`settle`).
    ChargeAfter,
    /// A 429 with this retry-after.
    Retry(SimDuration),
}

/// The run's rate limiters: one per rate-limit class; `of_model[m]` is model `m`'s (models of
/// one class share buckets). No limiter at all without `[rate_limits]`.
pub(super) struct Limiters {
    /// At most two classes (a run has at most two models): an array, not a `Vec` allocated
    /// every run.
    by_class: [Option<RateLimiter>; 2],
    of_model: [usize; 2],
    /// Whether model `m`'s own cache reads count toward ITPM (`itpm_counts_cache_reads`:
    /// Haiku 3.5's do), whatever `rate_limits.cache_reads_count` says for every model.
    reads_count: [bool; 2],
    /// `[rate_limits]` is set: fixed per run, so a run without limits asks nothing per request.
    on: bool,
}

impl Limiters {
    pub(super) fn new(exp: &ExperimentSpec, models: &[ModelParams]) -> Self {
        let same_class =
            models.len() == 2 && models[0].rate_limit_class == models[1].rate_limit_class;
        let of_model = if same_class { [0, 0] } else { [0, 1] };
        let limiter = || {
            exp.rate_limits
                .as_ref()
                .map(|r| RateLimiter::with_interval(r.rpm, r.itpm, r.otpm, r.interval_us))
        };
        let classes = models.len() - usize::from(same_class);
        let by_class = [limiter(), if classes == 2 { limiter() } else { None }];
        let reads = |m: usize| models.get(m).is_some_and(|p| p.itpm_counts_cache_reads);
        let reads_count = [reads(0), reads(1)];
        Limiters { by_class, of_model, reads_count, on: exp.rate_limits.is_some() }
    }

    /// Ask model `m`'s limiter about a request. When even the worst case (every input token
    /// counted) fits, it is charged later with the actual usage (`ChargeAfter`); otherwise its
    /// exact usage is found by `Cache::peek_with`, so that a refused request leaves the cache
    /// untouched.
    #[inline]
    pub(super) fn ask(
        &mut self,
        exp: &ExperimentSpec,
        m: usize,
        cache: &Cache,
        ask: &Ask<'_>,
    ) -> Result<Admit, SimError> {
        match self.on {
            true => self.ask_limited(exp, m, cache, ask),
            false => Ok(Admit::ChargeAfter),
        }
    }

    #[inline(never)]
    fn ask_limited(
        &mut self,
        exp: &ExperimentSpec,
        m: usize,
        cache: &Cache,
        ask: &Ask<'_>,
    ) -> Result<Admit, SimError> {
        let Some(limiter) = self.by_class[self.of_model[m]].as_mut() else {
            return Ok(Admit::ChargeAfter);
        };
        if limiter.would_admit(ask.now, ask.prompt.tokens(), ask.out) {
            return Ok(Admit::ChargeAfter);
        }
        let (agent, request) = (ask.who, ask.request);
        let usage = cache
            .peek_with(ask.prompt, ask.bps, ask.now, ask.miss)
            .map_err(|source| SimError::Cache { agent, request, source })?;
        match limiter.admit(ask.now, counted_input(exp, self.reads_count[m], &usage), ask.out) {
            Admission::Admitted => Ok(Admit::Charged),
            Admission::RetryAfter(wait) => Ok(Admit::Retry(wait)),
            Admission::Never(limit, amount, capacity) => {
                let limit = match limit {
                    Limit::Rpm => "rpm",
                    Limit::Itpm => "itpm",
                    Limit::Otpm => "otpm",
                };
                Err(SimError::NeverAdmitted { agent, limit, amount, capacity })
            }
        }
    }

    /// A request admitted as `ChargeAfter` was served with `usage`: charge model `m`'s
    /// limiter with it now.
    #[inline]
    pub(super) fn settle(
        &mut self,
        exp: &ExperimentSpec,
        (m, admit): (usize, Admit),
        now: SimTime,
        usage: &Usage,
        out: u64,
    ) {
        if !self.on {
            return;
        }
        let reads = self.reads_count[m];
        if let (Admit::ChargeAfter, Some(limiter)) =
            (admit, self.by_class[self.of_model[m]].as_mut())
        {
            let charged = limiter.admit(now, counted_input(exp, reads, usage), out);
            assert_eq!(charged, Admission::Admitted, "the worst case fitted, the actual must");
        }
    }
}

/// Whether every request of a run is admitted as it comes, with no draw: no `[rate_limits]`,
/// no isolated misses, no Gemini implicit draws. A run decides this once.
pub(super) fn admits_all(exp: &ExperimentSpec) -> bool {
    let draws_miss = exp.cache.miss_probability > 0.0;
    exp.rate_limits.is_none() && !draws_miss && !draws_implicit(exp)
}

/// Input tokens that count toward ITPM: uncached and written, and read when the file's
/// `rate_limits.cache_reads_count` or the model's `itpm_counts_cache_reads` (`model_reads`)
/// says so.
fn counted_input(exp: &ExperimentSpec, model_reads: bool, u: &Usage) -> u64 {
    let reads = model_reads || exp.rate_limits.as_ref().is_some_and(|r| r.cache_reads_count);
    u.uncached + u.cache_write() + if reads { u.cache_read } else { 0 }
}

/// One isolated-miss draw (`cache.miss_probability`), from the requester's own stream; no
/// draw at all when the probability is 0.
pub(super) fn draw_miss(probability: f64, rng: Option<&mut ChaCha8Rng>) -> bool {
    match rng {
        Some(rng) if probability > 0.0 => rng.random::<f64>() < probability,
        _ => false,
    }
}

/// Whether the run draws Gemini implicit hits (`gemini` policy, implicit mode).
pub(super) fn draws_implicit(exp: &ExperimentSpec) -> bool {
    exp.cache.policy == Policy::Gemini && exp.cache.hosted.gemini.mode == GeminiMode::Implicit
}

/// Gemini implicit caching gives no guarantee: a lookup misses unless a draw from the
/// requester's own stream falls under `gemini.implicit_hit_probability` (so 0 never hits and
/// 1 always does). No stream, no draw, no miss.
pub(super) fn draw_implicit_miss(exp: &ExperimentSpec, rng: Option<&mut ChaCha8Rng>) -> bool {
    let p = exp.cache.hosted.gemini.implicit_hit_probability;
    rng.is_some_and(|rng| rng.random::<f64>() >= p)
}

/// An isolated miss: whether the request would have read an entry had its lookup not missed
/// (`RunMetrics::isolated_misses`), found without touching the cache.
pub(super) fn would_have_read(cache: &Cache, ask: &Ask<'_>) -> Result<bool, SimError> {
    let (agent, request) = (ask.who, ask.request);
    let would = cache.peek(ask.prompt, ask.bps, ask.now);
    Ok(would.map_err(|source| SimError::Cache { agent, request, source })?.cache_read > 0)
}
