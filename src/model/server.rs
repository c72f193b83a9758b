//! The self-hosted server behind `cache.policy = "vllm" | "sglang"` (docs/providers.md
//! section 5): replicas that run prefill steps over a shared token budget, a router across
//! them, a KV cache per replica ([`GpuCache`]), decode slowing with the running batch, and
//! the GPU time the run kept busy.
//!
//! A request arrives at the replica its router picks and holds its prompt's blocks there. A
//! replica runs one prefill step at a time while any prefill is pending: `step_overhead +
//! tokens / prefill_tokens_per_s`, at most `step_token_budget` tokens, shared
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
//! token (TTFT = the end of its last step - its send); then it decodes `out` tokens at one
//! decode step each, `decode_step + decode_per_running x running + decode_per_ktok x context
//! ktok of the running sequences`, the batch as it stands at its first token. Decoding is
//! not interleaved with the prefill steps (they do not slow each other): a simplification.
//!
//! GPU time: a replica is busy while a prefill step runs or a sequence decodes (the union of
//! those intervals). Nothing allocates per event once the buffers have grown.

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

/// One replica: its cache, its requests in prefill, its decodes.
#[derive(Debug, Default)]
struct Replica {
    cache: GpuCache,
    jobs: Vec<Job>,
    /// A step is in flight (its `Ev::Step` is scheduled).
    stepping: bool,
    /// (end, context tokens) of the sequences decoding (pruned as time passes).
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
        self.jobs.len() + self.decoding.len()
    }
}

/// The replicas of a run (buffers kept across runs).
#[derive(Debug, Default)]
pub(super) struct Server {
    replicas: Vec<Replica>,
    next_rr: usize,
    /// Requests whose prefill ended at the last step, for the caller to take.
    pub done: Vec<Served>,
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
            r.decoding.clear();
            r.stepping = false;
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
        if rep.stepping {
            return None;
        }
        rep.stepping = true;
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
        rep.stepping = false;
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
            let finished = finish(p, rep, &job, prompt, now);
            self.done.push(finished);
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

/// Start the next step on `rep` at `now` if a prefill is pending: admit, share the budget,
/// return the step's end.
fn start_step<'p>(
    p: &ServerParams,
    rep: &mut Replica,
    now: SimTime,
    prompts: &dyn Fn(Requester) -> &'p Prompt,
) -> Option<SimTime> {
    if rep.jobs.is_empty() {
        return None;
    }
    let mut left = p.step_token_budget;
    let mut tokens = 0;
    let (n, mut k) = (rep.jobs.len() as u64, 0u64);
    for job in rep.jobs.iter_mut() {
        let share = match p.prefill_sharing {
            Sharing::FcfsChunked => left,
            Sharing::ProcessorSharing => {
                let (q, rem) = (p.step_token_budget / n, p.step_token_budget % n);
                q + u64::from(k < rem)
            }
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
    let end =
        now + SimDuration::from_us(p.step_overhead_us + prefill_us(tokens, p.prefill_tokens_per_s));
    rep.stepping = true;
    rep.busy(now, end);
    Some(end)
}

/// The prefill of `job` ended at `now`: its usage, its decode (which holds its blocks), its
/// timing. It costs nothing per token (the GPU time is added at the end of the run).
fn finish(p: &ServerParams, rep: &mut Replica, job: &Job, prompt: &Prompt, now: SimTime) -> Served {
    let hit = job.hit.expect("a finished prefill was admitted");
    let full = job.total / p.block_tokens * p.block_tokens;
    let usage = Usage {
        cache_read: hit,
        cache_write_5m: full.saturating_sub(hit),
        cache_write_1h: 0,
        uncached: job.total - full.max(hit),
        redundant_writes: 0,
        storage_token_s: 0,
    };
    rep.decoding.retain(|&(end, _)| end > now);
    let running = rep.decoding.len() as u64 + 1;
    let context: u64 = rep.decoding.iter().map(|d| d.1).sum::<u64>() + job.total + job.out;
    // Saturating: a step of years (a key at its extreme) ends at the last instant, past any
    // horizon, and the run stops there with an error naming it.
    let per_ktok = (p.decode_per_ktok_us as u128 * context as u128 / 1000).min(u64::MAX as u128);
    let step_us = p
        .decode_step_us
        .saturating_add(p.decode_per_running_us.saturating_mul(running))
        .saturating_add(per_ktok as u64);
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
