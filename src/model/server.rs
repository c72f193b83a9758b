//! The self-hosted server behind `cache.policy = "vllm" | "sglang"` (docs/providers.md
//! section 5): replicas that run prefill steps over a shared token budget, a router across
//! them, a KV cache per replica ([`GpuCache`]), decode slowing with the running batch, and
//! the GPU time the run kept busy.
//!
//! A request arrives at the replica its router picks and holds its prompt's blocks there. A
//! replica runs one step at a time while any prefill is pending (`vllm`: or a sequence
//! decodes), at most `step_token_budget` tokens, the prefills' share
//!
//! - `fcfs-chunked`: in arrival order, a prefill larger than the budget taking all of it; a
//!   request is admitted (looks the cache up) when it first gets budget, so the requests
//!   queued behind a cold prefix read it whole;
//! - `processor-sharing`: equally among every pending prefill, all admitted at the step's
//!   start (the remainder of the division to the earliest; a share a prefill does not need
//!   is left unused that step).
//!
//! Blocks a step computes are readable by the requests the same step admits after it under
//! `vllm` (a full block joins the cache when allocated), from the step's end under `sglang`
//! (a chunk joins the radix tree once computed). A request's prefill ends with its first
//! token (TTFT = the end of its last step - its send); then it decodes `out` tokens, one a
//! decode step of `decode_step + decode_per_running x running + decode_per_ktok x context
//! ktok of the running sequences`.
//!
//! - `vllm` (`decode_in_steps`): one step loop, as the V1 scheduler runs it. A step first
//!   gives every running decode one token of `step_token_budget`, then shares what is left
//!   among the prefills; it lasts `[prefill tokens > 0] (step_overhead + tokens /
//!   prefill_tokens_per_s) + [decodes > 0] decode step` (each part what it costs alone: an
//!   assumption; the upper bound, one forward pass reading the weights once for both). A
//!   decode ends with the step that gives it its `out`-th token, so the prefills it shares
//!   steps with slow it, and it slows them; the run gets its first token
//!   ([`Reply::FirstToken`]) when its prefill ends and its end ([`Reply::End`]) when its
//!   decode does. Steps of decodes alone are all alike until one of them ends, so they run as
//!   one stretch, cut at the step boundary after a request arrives ([`cut`]): the same times
//!   as one event a step, without the events.
//! - `sglang`: decoding runs beside the prefill steps of `step_overhead + tokens /
//!   prefill_tokens_per_s` (they do not slow each other: a simplification), its duration
//!   fixed at the first token by the batch as it stands then; the run gets the whole
//!   response ([`Reply::Whole`]) at its first token.
//!
//! GPU time: a replica is busy while a step runs or a sequence decodes (the union of those
//! intervals). Nothing allocates per event once the buffers have grown.

use super::agent::Requester;
use super::latency::Timing;
use super::recorder::Served;
use crate::cache::{GpuCache, Prompt, Usage};
use crate::config::{Router, ServerParams, Sharing};
use crate::metrics::{RunMetrics, ServerMetrics};
use crate::time::{SimDuration, SimTime, US_PER_S};

/// One request on a replica, from arrival to the end of its prefill.
#[derive(Debug, Clone, Copy)]
struct Job {
    who: Requester,
    request: u32,
    send_us: SimTime,
    /// Prompt tokens.
    total: u64,
    /// Tokens read from the cache (`None`: not admitted yet).
    hit: Option<u64>,
    /// Tokens with KV (read or computed).
    done: u64,
    /// Tokens the step in flight computes for it.
    take: u64,
    out: u64,
}

/// One request decoding in the step loop (`vllm`), from its first token to its last.
#[derive(Debug, Clone, Copy)]
struct Decode {
    who: Requester,
    request: u32,
    send_us: SimTime,
    first_us: SimTime,
    usage: Usage,
    out: u64,
    /// Decode steps still to run.
    left: u64,
    /// Context tokens its decode reads each step (prompt + output).
    context: u64,
    /// Its tokens in the step (or stretch) in flight.
    steps: u64,
}

/// Steps of decodes alone, all running decodes in each, run as one (`vllm`): every such step
/// lasts `step_us` until the first of them ends, so `steps` of them end together unless a
/// request arrives meanwhile ([`cut`]).
#[derive(Debug, Clone, Copy)]
struct Stretch {
    start: SimTime,
    step_us: u64,
    steps: u64,
    /// The replica's busy time before the stretch, to count it again when it is cut.
    busy_before: (u64, SimTime),
}

/// What part of a request's response a [`Served`] the server hands over stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reply {
    /// All of it, at the first token (the decode's end known then: `sglang`, and the API).
    Whole,
    /// Its first token; the rest follows as `End` (`vllm`: its decode runs in the steps).
    FirstToken,
    /// Its end, its first token handed over before: now it is recorded.
    End,
}

/// One replica: its cache, its requests in prefill, its decodes.
#[derive(Debug, Default)]
struct Replica {
    cache: GpuCache,
    jobs: Vec<Job>,
    /// Sequences decoding in the step loop (`vllm`), in the order they began.
    running: Vec<Decode>,
    /// When the step in flight ends (`None`: the replica is idle); an `Ev::Step` at another
    /// time is a stretch's end that [`cut`] moved.
    step_end: Option<SimTime>,
    /// The step in flight is a stretch of decode steps.
    stretch: Option<Stretch>,
    /// (end, context tokens) of the sequences decoding beside the steps (`sglang`; pruned as
    /// time passes).
    decoding: Vec<(SimTime, u64)>,
    busy_until: SimTime,
    busy_us: u64,
}

impl Replica {
    /// Count `[from, to)` into the busy time (intervals come in nondecreasing `from`).
    fn busy(&mut self, from: SimTime, to: SimTime) {
        let start = from.max(self.busy_until);
        self.busy_us += to.saturating_since(start).as_us();
        self.busy_until = self.busy_until.max(to);
    }

    /// Requests in prefill or decoding at `now`.
    fn load(&mut self, now: SimTime) -> usize {
        self.decoding.retain(|&(end, _)| end > now);
        self.jobs.len() + self.decoding.len() + self.running.len()
    }
}

/// The replicas of a run (buffers kept across runs).
#[derive(Debug, Default)]
pub(super) struct Server {
    replicas: Vec<Replica>,
    next_rr: usize,
    /// What the last step served, for the caller to take in order: whole responses at their
    /// first token (`sglang`), or first tokens and, later, ends (`vllm`).
    pub done: Vec<(Served, Reply)>,
}

impl Server {
    /// Room for `p`'s replicas, reserved without aborting (`Buffers::reserve`); on failure
    /// the bytes asked for.
    pub(super) fn try_reserve(&mut self, p: &ServerParams) -> Result<(), usize> {
        let n = p.replicas as usize;
        let bytes = n.saturating_mul(std::mem::size_of::<Replica>());
        self.replicas.try_reserve_exact(n.saturating_sub(self.replicas.len())).map_err(|_| bytes)
    }

    /// Empty replicas for `p` (memory kept).
    pub(super) fn reset(&mut self, p: &ServerParams) {
        let n = p.replicas as usize;
        self.replicas.truncate(n);
        self.replicas.resize_with(n, Replica::default);
        for r in &mut self.replicas {
            r.cache.reset(p.block_tokens, p.kv_capacity_tokens);
            r.jobs.clear();
            r.running.clear();
            r.decoding.clear();
            (r.step_end, r.stretch) = (None, None);
            (r.busy_until, r.busy_us) = (SimTime::ZERO, 0);
        }
        self.next_rr = 0;
        self.done.clear();
    }

    /// A prompt computed before the run (the warm parent): cached on replica 0, held by
    /// nobody.
    pub(super) fn warm(&mut self, prompt: &Prompt) {
        let cache = &mut self.replicas[0].cache;
        cache.hold(prompt);
        cache.computed(prompt, 0, prompt.tokens(), SimTime::ZERO);
        cache.release(prompt, SimTime::ZERO);
    }

    /// The replica `prompt` goes to under `p.router`.
    pub(super) fn route(&mut self, p: &ServerParams, prompt: &Prompt, now: SimTime) -> usize {
        match p.router {
            Router::RoundRobin => {
                let r = self.next_rr;
                self.next_rr = (r + 1) % self.replicas.len();
                r
            }
            Router::PrefixAware => {
                let mut best = (0, 0, usize::MAX);
                for (i, r) in self.replicas.iter_mut().enumerate() {
                    let (matched, load) = (r.cache.routed_prefix(prompt), r.load(now));
                    if matched > best.1 || (matched == best.1 && load < best.2) {
                        best = (i, matched, load);
                    }
                }
                best.0
            }
        }
    }

    /// Request `request` of `who` (prompt `prompt`, `out` output tokens) arrives at replica
    /// `r` at `now`. An idle replica starts a step at `now` (returned: the caller schedules
    /// `Ev::Step` then), after every request arriving at the same instant has joined.
    pub(super) fn arrive(
        &mut self,
        r: usize,
        (who, request, out): (Requester, u32, u64),
        prompt: &Prompt,
        now: SimTime,
    ) -> Option<SimTime> {
        let rep = &mut self.replicas[r];
        rep.cache.hold(prompt);
        let total = prompt.tokens();
        let job = Job { who, request, send_us: now, total, hit: None, done: 0, take: 0, out };
        rep.jobs.push(job);
        if rep.step_end.is_some() {
            return cut(rep, now);
        }
        rep.step_end = Some(now);
        Some(now)
    }

    /// The step in flight on replica `r` ends at `now` (or an idle replica wakes up): its
    /// blocks become readable, the prefills it finished go to `done`, and the next step
    /// starts; returns when it ends.
    pub(super) fn step<'p>(
        &mut self,
        p: &ServerParams,
        r: usize,
        now: SimTime,
        prompts: &dyn Fn(Requester) -> &'p Prompt,
    ) -> Option<SimTime> {
        let rep = &mut self.replicas[r];
        if rep.step_end != Some(now) {
            return None;
        }
        (rep.step_end, rep.stretch) = (None, None);
        if p.decode_in_steps {
            end_decodes(rep, now, prompts, &mut self.done);
        }
        let mut i = 0;
        while i < rep.jobs.len() {
            let job = &mut rep.jobs[i];
            if job.take == 0 {
                i += 1;
                continue;
            }
            let prompt = prompts(job.who);
            let from = job.done;
            job.done += std::mem::take(&mut job.take);
            let (done, total) = (job.done, job.total);
            rep.cache.computed(prompt, from, done, now);
            if done < total {
                i += 1;
                continue;
            }
            let job = rep.jobs.remove(i);
            if p.decode_in_steps {
                start_decode(p, rep, &job, prompt, now, &mut self.done);
            } else {
                let finished = finish(p, rep, &job, prompt, now);
                self.done.push((finished, Reply::Whole));
            }
        }
        start_step(p, &mut self.replicas[r], now, prompts)
    }

    /// The run is over: its cost in `mx` is the GPU time it kept busy; without caching, the
    /// reads would have been prefilled too (`cost_uncached_usd`).
    pub(super) fn costs(&self, p: &ServerParams, mx: &mut RunMetrics) {
        // GPU-microseconds the replicas were busy (times the GPUs of one replica).
        let busy_us: u64 = self.replicas.iter().map(|r| r.busy_us).sum();
        let busy = busy_us.saturating_mul(u64::from(p.gpus_per_replica));
        let gpus = u64::from(p.replicas) * u64::from(p.gpus_per_replica);
        let read_us = prefill_us(mx.tokens.cache_read, p.prefill_tokens_per_s)
            .saturating_mul(u64::from(p.gpus_per_replica));
        let busy_usd = gpu_usd(busy, p.gpu_usd_per_hour);
        mx.cost_usd += busy_usd;
        mx.cost_uncached_usd += busy_usd + gpu_usd(read_us, p.gpu_usd_per_hour);
        let provisioned = mx.makespan_us.saturating_mul(gpus);
        let replicas = &self.replicas;
        mx.server = ServerMetrics {
            gpu_busy_us: busy,
            gpu_provisioned_us: provisioned,
            provisioned_usd: gpu_usd(provisioned, p.gpu_usd_per_hour),
            evicted_tokens: replicas.iter().map(|r| r.cache.evicted_tokens()).sum(),
            overcommit_peak_tokens: replicas
                .iter()
                .map(|r| r.cache.overcommit_peak())
                .max()
                .unwrap_or(0),
        };
    }
}

/// Start the next step on `rep` at `now` if a prefill is pending or (`vllm`) a sequence
/// decodes: the running decodes take one token each of the budget, the prefills share the
/// rest; returns the step's end.
fn start_step<'p>(
    p: &ServerParams,
    rep: &mut Replica,
    now: SimTime,
    prompts: &dyn Fn(Requester) -> &'p Prompt,
) -> Option<SimTime> {
    if rep.jobs.is_empty() && rep.running.is_empty() {
        return None;
    }
    if rep.jobs.is_empty() && rep.running.len() as u64 <= p.step_token_budget {
        return Some(start_stretch(p, rep, now));
    }
    let (mut budget, mut decodes, mut context) = (p.step_token_budget, 0u64, 0u64);
    for d in rep.running.iter_mut() {
        if budget == 0 {
            break;
        }
        d.steps = 1;
        (budget, decodes, context) = (budget - 1, decodes + 1, context.saturating_add(d.context));
    }
    let tokens = share_prefill(p, rep, budget, now, prompts);
    let prefill = match tokens {
        0 => 0,
        _ => p.step_overhead_us.saturating_add(prefill_us(tokens, p.prefill_tokens_per_s)),
    };
    let decode = match decodes {
        0 => 0,
        _ => decode_step_us(p, decodes, context),
    };
    let end = now.saturating_add(SimDuration::from_us(prefill.saturating_add(decode)));
    rep.step_end = Some(end);
    rep.busy(now, end);
    Some(end)
}

/// Start a stretch on `rep` at `now` (no prefill pending, every running decode in each step):
/// the steps until the first decode ends, each as long as the first; returns its end.
fn start_stretch(p: &ServerParams, rep: &mut Replica, now: SimTime) -> SimTime {
    let context = rep.running.iter().fold(0u64, |c, d| c.saturating_add(d.context));
    let step_us = decode_step_us(p, rep.running.len() as u64, context);
    let steps = rep.running.iter().map(|d| d.left).min().unwrap_or(1);
    for d in rep.running.iter_mut() {
        d.steps = steps;
    }
    let busy_before = (rep.busy_us, rep.busy_until);
    rep.stretch = Some(Stretch { start: now, step_us, steps, busy_before });
    let end = now.saturating_add(SimDuration::from_us(step_us.saturating_mul(steps)));
    rep.step_end = Some(end);
    rep.busy(now, end);
    end
}

/// A request arrives at `now` while a stretch runs: it ends at the first step boundary after
/// `now` (at `now` if one falls there; the step in flight is not interrupted), where the
/// request joins the next step, as it would between single steps. Returns the stretch's new
/// end when it moves.
fn cut(rep: &mut Replica, now: SimTime) -> Option<SimTime> {
    let s = rep.stretch?;
    let since = now.saturating_since(s.start).as_us();
    if s.step_us == 0 {
        return None;
    }
    let steps = since.div_ceil(s.step_us).max(1);
    if steps >= s.steps {
        return None;
    }
    for d in rep.running.iter_mut() {
        d.steps = steps;
    }
    let end = s.start.saturating_add(SimDuration::from_us(s.step_us * steps));
    (rep.busy_us, rep.busy_until) = s.busy_before;
    rep.busy(s.start, end);
    rep.stretch = Some(Stretch { steps, ..s });
    rep.step_end = Some(end);
    Some(end)
}

/// Share `budget` tokens among `rep`'s pending prefills (admitting those that get some) under
/// `p.prefill_sharing`; returns the tokens given.
fn share_prefill<'p>(
    p: &ServerParams,
    rep: &mut Replica,
    budget: u64,
    now: SimTime,
    prompts: &dyn Fn(Requester) -> &'p Prompt,
) -> u64 {
    let mut left = budget;
    let mut tokens = 0;
    let (n, mut k) = (rep.jobs.len() as u64, 0u64);
    for job in rep.jobs.iter_mut() {
        let share = match p.prefill_sharing {
            Sharing::FcfsChunked => left,
            Sharing::ProcessorSharing => budget / n + u64::from(k < budget % n),
        };
        k += 1;
        if share == 0 {
            if p.prefill_sharing == Sharing::FcfsChunked {
                break;
            }
            continue;
        }
        if job.hit.is_none() {
            let hit = rep.cache.hit(prompts(job.who));
            (job.hit, job.done) = (Some(hit), hit);
        }
        job.take = (job.total - job.done).min(share);
        left -= job.take;
        tokens += job.take;
        if p.same_step_reads {
            rep.cache.computed(prompts(job.who), job.done, job.done + job.take, now);
        }
    }
    tokens
}

/// The running decodes of the step that ended at `now` have one more token; those with their
/// last release their blocks and end in `done`.
fn end_decodes<'p>(
    rep: &mut Replica,
    now: SimTime,
    prompts: &dyn Fn(Requester) -> &'p Prompt,
    done: &mut Vec<(Served, Reply)>,
) {
    let mut i = 0;
    while i < rep.running.len() {
        let d = &mut rep.running[i];
        let steps = std::mem::take(&mut d.steps);
        if steps == 0 {
            i += 1;
            continue;
        }
        d.left -= steps;
        if d.left > 0 {
            i += 1;
            continue;
        }
        let d = rep.running.remove(i);
        rep.cache.release(prompts(d.who), now);
        done.push((response(&d, now), Reply::End));
    }
}

/// The prefill of `job` ended at `now` (`vllm`): its first token goes to `done`, and its
/// decode joins the step loop (holding its blocks until it ends); with no output its response
/// ends now.
fn start_decode(
    p: &ServerParams,
    rep: &mut Replica,
    job: &Job,
    prompt: &Prompt,
    now: SimTime,
    done: &mut Vec<(Served, Reply)>,
) {
    let (who, request, send_us, out) = (job.who, job.request, job.send_us, job.out);
    let (usage, context) = (usage_of(p, job), job.total + job.out);
    let d =
        Decode { who, request, send_us, first_us: now, usage, out, left: out, context, steps: 0 };
    done.push((response(&d, now), Reply::FirstToken));
    if out == 0 {
        rep.cache.release(prompt, now);
        done.push((response(&d, now), Reply::End));
    } else {
        rep.running.push(d);
    }
}

/// The response of `d`, ended at `now`.
fn response(d: &Decode, now: SimTime) -> Served {
    let decode = now - d.first_us;
    let timing = Timing { ttft: d.first_us - d.send_us, decode, ready_delay: SimDuration::ZERO };
    let (who, request, send_us, usage, out) = (d.who, d.request, d.send_us, d.usage, d.out);
    Served { who, request, send_us, usage, timing, out, model: 0, cost_usd: 0.0 }
}

/// A server's usage of a finished prefill: the hit read, the rest of the full blocks written,
/// the partial last block uncached.
fn usage_of(p: &ServerParams, job: &Job) -> Usage {
    let hit = job.hit.expect("a finished prefill was admitted");
    let full = job.total / p.block_tokens * p.block_tokens;
    Usage {
        cache_read: hit,
        cache_write_5m: full.saturating_sub(hit),
        cache_write_1h: 0,
        uncached: job.total - full.max(hit),
        redundant_writes: 0,
        storage_token_s: 0,
    }
}

/// One decode step with `running` sequences of `context` tokens in all (saturating: a step
/// of years, a key at its extreme, ends at the last instant, past any horizon, and the run
/// stops there with an error naming it).
fn decode_step_us(p: &ServerParams, running: u64, context: u64) -> u64 {
    let per_ktok = (p.decode_per_ktok_us as u128 * context as u128 / 1000).min(u64::MAX as u128);
    p.decode_step_us
        .saturating_add(p.decode_per_running_us.saturating_mul(running))
        .saturating_add(per_ktok as u64)
}

/// The prefill of `job` ended at `now` (`sglang`): its usage, its decode beside the steps
/// (which holds its blocks), its timing. It costs nothing per token (the GPU time is added
/// at the end of the run).
fn finish(p: &ServerParams, rep: &mut Replica, job: &Job, prompt: &Prompt, now: SimTime) -> Served {
    let usage = usage_of(p, job);
    rep.decoding.retain(|&(end, _)| end > now);
    let running = rep.decoding.len() as u64 + 1;
    let context: u64 = rep.decoding.iter().map(|d| d.1).sum::<u64>() + job.total + job.out;
    let step_us = decode_step_us(p, running, context);
    let decode = SimDuration::from_us(step_us.saturating_mul(job.out));
    let end = now.saturating_add(decode);
    if job.out > 0 {
        rep.decoding.push((end, job.total + job.out));
        rep.busy(now, end);
    }
    rep.cache.release(prompt, end);
    let timing = Timing { ttft: now - job.send_us, decode, ready_delay: SimDuration::ZERO };
    let (who, request, send_us, out) = (job.who, job.request, job.send_us, job.out);
    Served { who, request, send_us, usage, timing, out, model: 0, cost_usd: 0.0 }
}

/// Microseconds to prefill `tokens` at `rate` tokens per second (rounded).
pub(super) fn prefill_us(tokens: u64, rate: f64) -> u64 {
    (tokens as f64 * US_PER_S as f64 / rate).round() as u64
}

/// USD of `gpu_us` GPU-microseconds at `usd_per_hour` a GPU.
pub(super) fn gpu_usd(gpu_us: u64, usd_per_hour: f64) -> f64 {
    gpu_us as f64 / crate::time::US_PER_H as f64 * usd_per_hour
}

#[cfg(test)]
mod tests;
