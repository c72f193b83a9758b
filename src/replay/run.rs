//! The replay driver for hash-id traces: reads the trace once and feeds every request to each
//! cache choice side by side (one `BlockCache` per choice over one shared `Interner`). A
//! request's writes become readable at its measured first token where the trace records one,
//! never after its measured response end, else at the latency model's TTFT (`ready_time`).
//! Also measures the trace's reuse gaps (independent of the cache choice).

use hdrhistogram::Histogram;

use super::blocks::{BlockCache, Interner};
use super::prices::{self, Account, Pricing};
use super::settings::{CacheChoice, ReplaySettings};
use super::trace::{TraceRequest, NO_CONVERSATION};
use crate::config::{LatencyParams, ModelParams};
use crate::model::latency::{draw, Work};
use crate::rng::ChaCha8Rng;
use crate::time::{SimDuration, SimTime};

/// What one cache choice measured over the whole trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChoiceStats {
    pub requests: u64,
    /// Requests with `cache_read > 0`.
    pub requests_with_hit: u64,
    pub account: Account,
    /// Summed per request at the prices it pays, in trace order.
    pub cost_usd: f64,
    /// The same requests with no caching.
    pub cost_uncached_usd: f64,
    /// Written (missed) tokens by cause, in `CAUSES` order.
    pub miss_tokens: [u64; 4],
    pub redundant_writes: u64,
    /// Written tokens by where their readiness came from, in `READY_SOURCES` order.
    pub ready_tokens: [u64; 4],
    /// Per conversation (index of `TraceMeta::conversations`).
    pub conversations: Vec<Part>,
}

/// One conversation's share of a choice's totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Part {
    pub requests: u64,
    pub account: Account,
    pub cost_usd: f64,
    pub cost_uncached_usd: f64,
}

impl ChoiceStats {
    /// Share of missed (written) tokens per cause, in `CAUSES` order; zeros with no miss.
    pub fn miss_shares(&self) -> [f64; 4] {
        shares(&self.miss_tokens)
    }
    /// Share of written tokens per readiness source, in `READY_SOURCES` order.
    pub fn ready_shares(&self) -> [f64; 4] {
        shares(&self.ready_tokens)
    }
}

/// Each count's share of their sum; zeros when the sum is.
fn shares(counts: &[u64; 4]) -> [f64; 4] {
    let total: u64 = counts.iter().sum();
    counts.map(|t| if total == 0 { 0.0 } else { t as f64 / total as f64 })
}

/// Where a written entry's readiness came from (index into `READY_SOURCES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadySource {
    /// The writer's measured time to first token (plus the ready delay).
    Ttft = 0,
    /// The writer's measured response end, earlier than the first token source's time.
    ApiTime = 1,
    /// The latency model's TTFT for the writer's tokens (plus the ready delay).
    Model = 2,
    /// `--instant-ready`: at the send.
    Instant = 3,
}

/// Readiness sources, in the fixed order of every output.
pub const READY_SOURCES: [&str; 4] = ["ttft", "api_time", "model", "instant"];

/// A writer's measured timing from the trace, microseconds after its send (none: the trace
/// does not record it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measured {
    pub ttft_us: Option<u64>,
    /// Send to the end of the response (`api_time`).
    pub api_time_us: Option<u64>,
}

/// One cache choice being replayed.
struct Lane {
    cache: BlockCache,
    /// Writes billed at the 1-hour price.
    bills_1h: bool,
    stats: ChoiceStats,
}

/// Trace-level measurements shared by every choice.
pub struct Shared {
    interner: Interner,
    /// Per block index: send time of the last request that contained it (`u64::MAX`: none).
    last_seen_us: Vec<u64>,
    /// Time between consecutive requests containing the same prefix block, microseconds.
    pub reuse_gap_us: Histogram<u64>,
    /// Tokens of distinct full blocks (the working set of an unbounded cache).
    pub distinct_tokens: u64,
    scratch: Vec<u32>,
}

/// Replays requests through several cache choices at once.
pub struct Replayer<'s> {
    settings: &'s ReplaySettings,
    lanes: Vec<Lane>,
    pub shared: Shared,
    pub pricing: Pricing,
    /// The generator used when every latency term is constant (it is never drawn from).
    rng: ChaCha8Rng,
    requests: u64,
}

impl<'s> Replayer<'s> {
    pub fn new(settings: &'s ReplaySettings, choices: &[CacheChoice]) -> Self {
        let lanes = choices
            .iter()
            .map(|c| Lane {
                cache: BlockCache::new(c.ttl_us.map(SimDuration::from_us), c.capacity_tokens),
                bills_1h: c.bills_1h(),
                stats: ChoiceStats::default(),
            })
            .collect();
        Replayer {
            settings,
            lanes,
            shared: Shared {
                interner: Interner::default(),
                last_seen_us: Vec::new(),
                reuse_gap_us: crate::metrics::new_histogram(),
                distinct_tokens: 0,
                scratch: Vec::new(),
            },
            pricing: Pricing::new(&settings.model, settings.per_request_prices),
            rng: crate::rng::stream(settings.seed, &[]),
            requests: 0,
        }
    }

    /// Replay one request through every choice.
    pub fn request(&mut self, r: &TraceRequest) {
        let blocks = self.shared.resolve(r);
        let price = self.pricing.index(r.model);
        let price = &self.pricing.models[price];
        // Timed as the model it is priced as: the request's own, or the one chosen.
        let latency = self.settings.latency_for(&price.name);
        let const_latency = latency_is_const(latency);
        let measured = Measured { ttft_us: r.ttft_us, api_time_us: r.api_time_us };
        let now = SimTime::from_us(r.time_us);
        // Each lane draws this request's latency from the same stream (the request's own,
        // `stream(seed, [request])`): common random numbers across choices. Constant latency
        // draws nothing, so one generator serves then.
        let index = self.requests;
        self.requests += 1;
        for lane in &mut self.lanes {
            let mut fresh;
            let rng = if const_latency {
                &mut self.rng
            } else {
                fresh = crate::rng::stream(self.settings.seed, &[index]);
                &mut fresh
            };
            let look = lane.cache.lookup(blocks, r.block_tokens, now);
            let (w5m, w1h) =
                if lane.bills_1h { (0, look.write_tokens) } else { (look.write_tokens, 0) };
            let account = Account {
                cache_read: look.read_tokens,
                cache_write_5m: w5m,
                cache_write_1h: w1h,
                uncached: r.tail_tokens(),
                output: r.output_tokens,
            };
            let (ready_at, source) =
                ready_time(self.settings, latency, &account, measured, now, rng);
            lane.cache.commit(blocks, r.block_tokens, now, ready_at);
            lane.stats.record(
                r.conversation,
                &account,
                &look.miss_tokens,
                look.redundant_writes,
                price,
            );
            lane.stats.ready_tokens[source as usize] += account.cache_write();
        }
    }

    /// Count `a`, the split the provider recorded for `r` (usage logs, OTLP spans), into
    /// `stats` at the prices `r` pays under the settings.
    pub fn record_recorded(&mut self, r: &TraceRequest, a: &Account, stats: &mut ChoiceStats) {
        let price = self.pricing.index(r.model);
        stats.record(r.conversation, a, &[0; 4], 0, &self.pricing.models[price]);
    }

    /// The statistics of each choice, in the order given.
    pub fn finish(self) -> (Vec<ChoiceStats>, Shared, Pricing) {
        (self.lanes.into_iter().map(|l| l.stats).collect(), self.shared, self.pricing)
    }
}

/// When a request's writes become readable, and from what: its first token plus the ready
/// delay, the first token being the measured one (`ttft`) where the trace records it, else
/// `latency`'s TTFT for the request's prefill, cached and output tokens; never later than the
/// measured response end (`api_time`), where recorded. At once with `--instant-ready`. The
/// model is drawn in every case, so that streams stay aligned whatever the trace records.
pub(crate) fn ready_time(
    s: &ReplaySettings,
    latency: &LatencyParams,
    a: &Account,
    measured: Measured,
    now: SimTime,
    rng: &mut ChaCha8Rng,
) -> (SimTime, ReadySource) {
    if s.instant_ready {
        return (now, ReadySource::Instant);
    }
    let work = Work {
        prefill_tokens: a.cache_write() + a.uncached,
        cached_tokens: a.cache_read,
        output_tokens: a.output,
    };
    let t = draw(latency, work, rng);
    let (first_token, source) = match measured.ttft_us {
        Some(ttft_us) => (SimDuration::from_us(ttft_us), ReadySource::Ttft),
        None => (t.ttft, ReadySource::Model),
    };
    let ready = first_token.saturating_add(t.ready_delay);
    match measured.api_time_us.map(SimDuration::from_us) {
        Some(end) if end < ready => (now.saturating_add(end), ReadySource::ApiTime),
        _ => (now.saturating_add(ready), source),
    }
}

fn latency_is_const(l: &LatencyParams) -> bool {
    let (o, p, c, d) = (&l.overhead_us, &l.prefill_rate, &l.cached_rate, &l.decode_rate);
    [o, p, c, d, &l.ready_delay_us, &l.attention_rate].iter().all(|d| d.is_const())
}

impl Shared {
    /// Dense indices of the request's blocks (into `scratch`), recording reuse gaps.
    fn resolve(&mut self, r: &TraceRequest) -> &[u32] {
        self.scratch.clear();
        for &id in r.block_ids {
            let b = self.interner.index(r.namespace, id);
            if b as usize >= self.last_seen_us.len() {
                self.last_seen_us.resize(b as usize + 1, u64::MAX);
                self.distinct_tokens += r.block_tokens;
            }
            let last = &mut self.last_seen_us[b as usize];
            if *last != u64::MAX {
                self.reuse_gap_us.saturating_record(r.time_us.saturating_sub(*last));
            }
            *last = r.time_us;
            self.scratch.push(b);
        }
        &self.scratch
    }

    /// Distinct full blocks seen.
    pub fn distinct_blocks(&self) -> usize {
        self.interner.distinct()
    }
}

impl ChoiceStats {
    /// Count one request's account and misses.
    pub(crate) fn record(
        &mut self,
        conversation: u32,
        a: &Account,
        miss: &[u64; 4],
        redundant: u64,
        price: &ModelParams,
    ) {
        let (cost, uncached) = (prices::cost_usd(a, price), prices::cost_uncached_usd(a, price));
        self.requests += 1;
        self.requests_with_hit += u64::from(a.cache_read > 0);
        prices::add(&mut self.account, a);
        self.cost_usd += cost;
        self.cost_uncached_usd += uncached;
        for (total, m) in self.miss_tokens.iter_mut().zip(miss) {
            *total += m;
        }
        self.redundant_writes += redundant;
        if conversation != NO_CONVERSATION {
            let c = conversation as usize;
            if c >= self.conversations.len() {
                self.conversations.resize(c + 1, Part::default());
            }
            let part = &mut self.conversations[c];
            part.requests += 1;
            prices::add(&mut part.account, a);
            part.cost_usd += cost;
            part.cost_uncached_usd += uncached;
        }
    }
}
