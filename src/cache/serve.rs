//! Serving one request: look up, bill, refresh the hit, write the missing entries.
//!
//! Policies (docs/cache.md):
//! - `every-block`: every block boundary is a cache point. The hit is the longest ready prefix
//!   (searched from the end, so appending one block to a warm conversation costs O(1)); every
//!   boundary after it is written with the cache's default TTL. No minimum length, breakpoints
//!   are ignored. Every token not read is written: `uncached` is 0 and the seed demo's
//!   "uncached" column is `cache_write`.
//! - `anthropic`: at most 4 breakpoints; per breakpoint (from the last), the boundary itself and
//!   up to 19 earlier ones (20 positions counting the breakpoint) are tried, the first ready
//!   entry is the hit (A). Prefixes below the model's minimum are neither read nor written.
//!   Entries are written only at breakpoints after A; billing by the docs' A/B/C rule:
//!   read A, 1h write B - A (B = the last 1h breakpoint after A, else A), 5m write C - B
//!   (C = the last breakpoint), uncached the rest.
//!
//! An isolated miss (`serve_with(.., miss = true, ..)`): the lookup finds nothing although an
//! entry may be readable (the caller draws it; the cache draws nothing), so the request writes
//! every breakpoint as a cold one would; existing entries are refreshed by the write.
//!
//! A hit refreshes (TTL and LRU recency) the hit entry and, under `anthropic`, the ready entries
//! of the request's breakpoints inside the hit prefix; shorter `every-block` prefixes under the
//! hit are not refreshed (keeps a request O(1); the longest-prefix search makes them redundant).
//! Entry sizes for the capacity: `every-block` counts each block once (its own tokens, as a
//! paged cache stores it); `anthropic` counts an entry's whole prefix.

use super::router::{Route, Router};
use super::store::SlotId;
use super::{Breakpoint, CacheError, Key, Policy, Prices, Prompt, Ttl, Usage};
use super::{CacheParams, HostedParams, ModelParams};
use super::{EntryStore, WriteOutcome};
use crate::time::SimTime;
use std::ops::{ControlFlow, Range};

mod hosted;

/// At most this many breakpoints per request (the prompt-caching docs (platform.claude.com/docs/en/build-with-claude/prompt-caching)).
pub const MAX_BREAKPOINTS: usize = 4;
/// Positions checked per breakpoint, counting the breakpoint itself (the prompt-caching docs (platform.claude.com/docs/en/build-with-claude/prompt-caching)).
pub const LOOKBACK_POSITIONS: usize = 20;

/// The prefix cache of one model: entries, policy and prices. One `Cache` per model: the
/// minimum length applied is this cache's model's (a prompt seeded with another model's name
/// never hits it anyway).
#[derive(Debug, Clone)]
pub struct Cache {
    store: EntryStore<Key>,
    policy: Policy,
    model: ModelParams,
    /// The model's prices, worked out once for every request's bill.
    prices: Prices,
    /// Which boundary positions (modulo 64) an entry was ever written at (`position_bit`): a
    /// key is one prefix's, and prefixes of different lengths never share a key (the chains'
    /// collision bounds, `cache::prompt`, which every lookup here already relies on), so a
    /// position nothing was written at (nor 64 positions apart) holds no entry and its lookup
    /// is skipped. In a fan-out these
    /// are the lookback window's boundaries between breakpoints: most of a request's probes.
    written: u64,
    /// The slot of the key last refreshed at each breakpoint position (modulo `BP_MEMO`):
    /// a request refreshes the breakpoints inside its hit, and those are the shared prefix's
    /// (system, brief), the same keys request after request. A key keeps its slot until the
    /// store is cleared (`reset` empties this too), so an equal key here is its slot, found
    /// without a hash lookup.
    refreshed: [Option<(Key, SlotId)>; BP_MEMO],
    default_ttl: Ttl,
    /// `[openai]` and `[gemini]` (read by those policies only), and OpenAI's machines.
    hosted: HostedParams,
    router: Router,
}

impl Cache {
    /// An empty cache; `every-block` writes with a 5-minute TTL unless [`Cache::with_default_ttl`].
    pub fn new(policy: Policy, model: &ModelParams, capacity_tokens: Option<u64>) -> Self {
        let mut cache = Cache {
            store: EntryStore::new(capacity_tokens),
            policy,
            model: model.clone(),
            prices: Prices::of(model),
            written: 0,
            refreshed: [None; BP_MEMO],
            default_ttl: Ttl::FiveMin,
            hosted: HostedParams::default(),
            router: Router::default(),
        };
        cache.reset_router();
        cache
    }

    /// An empty cache as an experiment's `[cache]` section describes it.
    pub fn from_params(params: &CacheParams, model: &ModelParams) -> Self {
        Self::new(params.policy, model, params.capacity_tokens)
            .with_default_ttl(default_ttl(params))
            .with_hosted(&params.hosted)
    }

    /// The `openai` and `gemini` policies' parameters (an empty router for them).
    pub fn with_hosted(mut self, hosted: &HostedParams) -> Self {
        self.hosted = hosted.clone();
        self.reset_router();
        self
    }

    fn reset_router(&mut self) {
        let o = &self.hosted.openai;
        self.router.reset(o.machines, o.overflow_per_minute, o.overflow_window_us);
    }

    /// Empty this cache and make it `from_params(params, model)` again, keeping its memory.
    pub fn reset(&mut self, params: &CacheParams, model: &ModelParams) {
        self.store.clear(params.capacity_tokens);
        self.written = 0;
        self.refreshed = [None; BP_MEMO];
        self.policy = params.policy;
        if self.model != *model {
            self.model = model.clone();
            self.prices = Prices::of(model);
        }
        self.default_ttl = default_ttl(params);
        if self.hosted != params.hosted {
            self.hosted = params.hosted.clone();
        }
        self.reset_router();
    }

    /// The TTL of `every-block` writes.
    pub fn with_default_ttl(mut self, ttl: Ttl) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// The model's prices (`Prices::of(&model)`, worked out once).
    pub fn prices(&self) -> &Prices {
        &self.prices
    }

    pub fn store(&self) -> &EntryStore<Key> {
        &self.store
    }

    /// Serve a request sent at `now`: look up, bill, refresh hits, and write the missing
    /// entries, pending until the time `ready_at(&usage)` returns (send + TTFT + ready delay).
    /// No allocation unless a new entry is stored.
    pub fn serve(
        &mut self,
        prompt: &Prompt,
        breakpoints: &[Breakpoint],
        now: SimTime,
        ready_at: impl FnOnce(&Usage) -> SimTime,
    ) -> Result<Usage, CacheError> {
        self.serve_with(prompt, breakpoints, now, false, ready_at)
    }

    /// `serve`, with `miss = true` for an isolated miss: the lookup finds nothing.
    #[inline(always)]
    pub fn serve_with(
        &mut self,
        prompt: &Prompt,
        breakpoints: &[Breakpoint],
        now: SimTime,
        miss: bool,
        ready_at: impl FnOnce(&Usage) -> SimTime,
    ) -> Result<Usage, CacheError> {
        self.serve_routed(prompt, breakpoints, (now, miss, Route::default()), ready_at)
    }

    /// `serve_with` for a request of `route` (its agent and draws, read by `openai` only).
    /// Inlined into its callers: out of line, the usage came back through memory and the
    /// caller read it at once with other widths than the stores had (a store-forwarding stall
    /// a request), and the timing the closure drew went through memory too.
    #[inline(always)]
    pub fn serve_routed(
        &mut self,
        prompt: &Prompt,
        breakpoints: &[Breakpoint],
        (now, miss, route): (SimTime, bool, Route),
        ready_at: impl FnOnce(&Usage) -> SimTime,
    ) -> Result<Usage, CacheError> {
        let ask = Lookup { prompt, breakpoints, now, miss, route };
        self.check(&ask)?;
        if let Policy::OpenAi | Policy::Gemini = self.policy {
            return Ok(self.serve_hosted(&ask, ready_at));
        }
        // The hit, the bill and the commit of one policy at a time, not a plan of any policy
        // built and then read: merged over the policies, the plan went to the stack and was
        // read back as 16-byte loads of 8-byte stores (a store-forwarding stall a request).
        let hit = self.local_hit(&ask);
        let mut usage = self.local_usage(&ask, Hit::index(hit));
        let ready = ready_at(&usage);
        usage.redundant_writes = match self.policy {
            Policy::Anthropic => self.commit_anthropic(&ask, hit, ready),
            _ => self.commit_every_block(&ask, hit, ready),
        };
        Ok(usage)
    }

    /// `serve_with` under a hosted policy (`openai`, `gemini`), out of line.
    #[inline(never)]
    fn serve_hosted(&mut self, ask: &Lookup, ready_at: impl FnOnce(&Usage) -> SimTime) -> Usage {
        let (plan, mut usage) = self.hosted_plan(ask);
        usage.redundant_writes = self.commit_hosted(ask, plan, ready_at(&usage));
        usage
    }

    /// What `serve` would bill at `now`, without touching the cache.
    pub fn peek(
        &self,
        prompt: &Prompt,
        breakpoints: &[Breakpoint],
        now: SimTime,
    ) -> Result<Usage, CacheError> {
        self.peek_with(prompt, breakpoints, now, false)
    }

    /// What `serve_with` would bill at `now`, without touching the cache.
    pub fn peek_with(
        &self,
        prompt: &Prompt,
        breakpoints: &[Breakpoint],
        now: SimTime,
        miss: bool,
    ) -> Result<Usage, CacheError> {
        let route = Route::default();
        let ask = Lookup { prompt, breakpoints, now, miss, route };
        self.check(&ask)?;
        Ok(match self.policy {
            Policy::OpenAi | Policy::Gemini => self.hosted_plan(&ask).1,
            _ => self.local_usage(&ask, Hit::index(self.local_hit(&ask))),
        })
    }

    /// The request's breakpoints, where the policy reads them: what the API refuses.
    #[inline(always)]
    fn check(&self, ask: &Lookup) -> Result<(), CacheError> {
        match self.policy {
            Policy::EveryBlock | Policy::Vllm | Policy::Sglang => Ok(()),
            Policy::Anthropic => validate_breakpoints(ask.breakpoints, ask.prompt.len()),
            Policy::OpenAi | Policy::Gemini => self.hosted_check(ask),
        }
    }

    /// The hit under a policy of one machine (`every-block`, `vllm`, `sglang`, `anthropic`),
    /// of a request `check` accepted; no side effect.
    #[inline(always)]
    fn local_hit(&self, ask: &Lookup) -> Option<Hit> {
        let Lookup { prompt, breakpoints, now, miss, .. } = *ask;
        match (miss, self.policy) {
            (true, _) => None,
            (false, Policy::Anthropic) => {
                let min = self.model.min_cacheable_tokens;
                anthropic_hit((&self.store, self.written), prompt, breakpoints, min, now)
            }
            (false, _) => self.every_block_hit(prompt, now),
        }
    }

    /// The bill under a policy of one machine, for hit boundary `hit`.
    #[inline(always)]
    fn local_usage(&self, ask: &Lookup, hit: Option<usize>) -> Usage {
        match self.policy {
            Policy::Anthropic => {
                let min = self.model.min_cacheable_tokens;
                anthropic_usage(ask.prompt, ask.breakpoints, min, hit)
            }
            _ => self.every_block_usage(ask.prompt, hit),
        }
    }

    /// Refresh the hit and write every boundary after it; the redundant writes.
    fn commit_every_block(&mut self, ask: &Lookup, hit: Option<Hit>, ready: SimTime) -> u64 {
        let (prompt, now) = (ask.prompt, ask.now);
        if let Some(h) = hit {
            self.store.touch_slot(h.slot, now);
        }
        let mut redundant = 0;
        for i in hit.map_or(0, |h| h.index + 1)..prompt.len() {
            let (key, tokens) = (prompt.prefix_key(i), prompt.block_tokens(i));
            self.written |= position_bit(i);
            let outcome = self.store.write(key, tokens, now, ready, self.default_ttl);
            redundant += u64::from(outcome == WriteOutcome::Redundant);
        }
        redundant
    }

    fn every_block_hit(&self, prompt: &Prompt, now: SimTime) -> Option<Hit> {
        (0..prompt.len()).rev().find_map(|index| {
            if self.written & position_bit(index) == 0 {
                return None;
            }
            let slot = self.store.ready_slot(prompt.prefix_key(index), now)?;
            Some(Hit { index, slot })
        })
    }

    fn every_block_usage(&self, prompt: &Prompt, hit: Option<usize>) -> Usage {
        let read = hit.map_or(0, |h| prompt.prefix_tokens(h));
        if let Some(block) = server_block_tokens(self.policy) {
            return server_usage(prompt.tokens(), read, block);
        }
        let written = prompt.tokens() - read;
        let mut usage = Usage { cache_read: read, ..Usage::default() };
        // Another TTL is billed at the price of the API's tier it reaches (an assumption: no
        // API sells it); `none` at the 5-minute price, as a bound.
        match self.default_ttl {
            Ttl::OneHour => usage.cache_write_1h = written,
            Ttl::Other(us) if us > 5 * crate::time::US_PER_MIN => usage.cache_write_1h = written,
            Ttl::FiveMin | Ttl::None | Ttl::Other(_) => usage.cache_write_5m = written,
        }
        usage
    }

    /// Refresh the hit and the breakpoints inside it, write the breakpoints after it (at or
    /// past the minimum); the redundant writes. One pass over the breakpoints: they increase,
    /// so every refresh still comes before every write (a write may evict). Inlined into
    /// `serve_with`, its one caller.
    #[inline(always)]
    fn commit_anthropic(&mut self, ask: &Lookup, hit: Option<Hit>, ready: SimTime) -> u64 {
        let Lookup { prompt, breakpoints, now, .. } = *ask;
        let min = self.model.min_cacheable_tokens;
        if let Some(h) = hit {
            self.store.touch_slot(h.slot, now);
        }
        // Boundaries up to `inside` are in the hit prefix (none without a hit).
        let inside = hit.map_or(-1, |h| h.index as isize);
        let mut redundant = 0;
        for bp in breakpoints {
            let index = bp.index as isize;
            if index < inside {
                // Not written at this position: nothing to refresh (`written`).
                if self.written & position_bit(bp.index) != 0 {
                    self.refresh(bp.index, prompt.prefix_key(bp.index), now);
                }
                continue;
            }
            let tokens = prompt.prefix_tokens(bp.index);
            if index == inside || tokens < min {
                continue;
            }
            self.written |= position_bit(bp.index);
            let outcome = self.store.write(prompt.prefix_key(bp.index), tokens, now, ready, bp.ttl);
            redundant += u64::from(outcome == WriteOutcome::Redundant);
        }
        redundant
    }
}

impl Cache {
    /// `store.touch(key, now)` for the key at breakpoint position `index`, through
    /// `refreshed`.
    #[inline(always)]
    fn refresh(&mut self, index: usize, key: Key, now: SimTime) {
        let memo = &mut self.refreshed[index % BP_MEMO];
        let slot = match *memo {
            Some((k, slot)) if k == key => slot,
            _ => {
                let Some(slot) = self.store.slot_of(key) else { return };
                *memo = Some((key, slot));
                slot
            }
        };
        self.store.touch_slot_if_ready(slot, now);
    }
}

/// Breakpoint positions `Cache::refreshed` remembers a slot for (a request has at most 4).
const BP_MEMO: usize = 8;

/// One request as `serve` and `peek` look it up.
#[derive(Clone, Copy)]
struct Lookup<'a> {
    prompt: &'a Prompt,
    breakpoints: &'a [Breakpoint],
    now: SimTime,
    /// An isolated miss: the lookup finds nothing.
    miss: bool,
    route: Route,
}

/// What a request finds under a hosted policy: the machine it is routed to (and its route
/// key, `openai` only), and its hit.
#[derive(Debug, Clone, Copy)]
struct Plan {
    route: Option<Key>,
    machine: u32,
    /// The request's `prompt_cache_key` (`openai`), part of its machines' store keys.
    key: Option<u32>,
    hit: Option<Hit>,
    /// `gemini` explicit: the cache object is being created (pending): nothing read, nothing
    /// written.
    pending: bool,
}

/// The hit boundary and its entry's slot: the commit refreshes the slot the lookup found.
#[derive(Debug, Clone, Copy)]
struct Hit {
    index: usize,
    slot: SlotId,
}

impl Hit {
    fn index(hit: Option<Hit>) -> Option<usize> {
        hit.map(|h| h.index)
    }
}

/// At most 4, in range, strictly increasing, 1h before 5m (and before no-TTL). Accepted in
/// one pass over neighbours (all in range: the last is; no 1h after a shorter TTL: no pair
/// of a shorter TTL followed by 1h); a refusal is the error `breakpoint_error` finds.
#[inline(always)]
fn validate_breakpoints(breakpoints: &[Breakpoint], len: usize) -> Result<(), CacheError> {
    let one_hour = |bp: &Breakpoint| matches!(bp.ttl, Ttl::OneHour);
    let ordered =
        |w: &[Breakpoint]| w[0].index < w[1].index && (one_hour(&w[0]) || !one_hour(&w[1]));
    match breakpoints.last() {
        None => Ok(()),
        Some(last)
            if breakpoints.len() <= MAX_BREAKPOINTS
                && last.index < len
                && breakpoints.windows(2).all(ordered) =>
        {
            Ok(())
        }
        Some(_) => breakpoint_error(breakpoints, len),
    }
}

/// `validate_breakpoints` checked breakpoint by breakpoint: the first refused.
#[cold]
#[inline(never)]
fn breakpoint_error(breakpoints: &[Breakpoint], len: usize) -> Result<(), CacheError> {
    if breakpoints.len() > MAX_BREAKPOINTS {
        return Err(CacheError::TooManyBreakpoints {
            count: breakpoints.len(),
            index: breakpoints[MAX_BREAKPOINTS].index,
        });
    }
    let mut last_short: Option<usize> = None;
    for (k, bp) in breakpoints.iter().enumerate() {
        if bp.index >= len {
            return Err(CacheError::OutOfRange { index: bp.index, len });
        }
        if k > 0 && bp.index <= breakpoints[k - 1].index {
            return Err(CacheError::NotIncreasing {
                index: bp.index,
                previous: breakpoints[k - 1].index,
            });
        }
        match (bp.ttl, last_short) {
            (Ttl::OneHour, Some(previous)) => {
                return Err(CacheError::TtlOrder { index: bp.index, previous })
            }
            (Ttl::OneHour, None) => {}
            (Ttl::FiveMin | Ttl::None | Ttl::Other(_), _) => {
                last_short = last_short.or(Some(bp.index))
            }
        }
    }
    Ok(())
}

/// The hit boundary: per breakpoint from the last, the first ready entry among the breakpoint
/// and the 19 boundaries before it; prefixes below `min` tokens are never read. Each position
/// is probed at most once (the windows of breakpoints closer than 20 blocks overlap), and the
/// search ends at the first prefix below `min`: every earlier one is shorter still. Inlined
/// into `plan` (its one hot caller): the hit comes back in registers.
#[inline(always)]
fn anthropic_hit(
    (store, written): (&EntryStore<Key>, u64),
    prompt: &Prompt,
    breakpoints: &[Breakpoint],
    min: u64,
    now: SimTime,
) -> Option<Hit> {
    // Positions from `probed` on are already known not to hit.
    let mut probed = prompt.len();
    for bp in breakpoints.iter().rev() {
        let lowest = bp.index.saturating_sub(LOOKBACK_POSITIONS - 1);
        let window = lowest..(bp.index + 1).min(probed);
        let found = window_hit((store, written), prompt, window, min, now);
        if let ControlFlow::Break(hit) = found {
            return hit;
        }
        probed = probed.min(lowest);
    }
    None
}

/// The positions of `window` (at most 20) from the highest down: `Break` with the first ready
/// one (a hit) or at the first below `min` (no hit at all), `Continue` if none is either.
/// Only the positions whose bit is set in `written` are visited (in a fan-out, 2 of 4 a
/// request): the window's bits, rotated down to bit 0, are distinct (fewer than 64 positions).
/// Skipping an unwritten position below `min` skips no answer: every position after it
/// (lower) is below `min` too, so the search ends at the next one visited (or finds nothing),
/// as it would have ended there.
#[inline(always)]
fn window_hit(
    (store, written): (&EntryStore<Key>, u64),
    prompt: &Prompt,
    window: Range<usize>,
    min: u64,
    now: SimTime,
) -> ControlFlow<Option<Hit>> {
    const { assert!(LOOKBACK_POSITIONS < 64) };
    let len = window.end.saturating_sub(window.start);
    let mut candidates = written.rotate_right((window.start % 64) as u32) & ((1 << len) - 1);
    while candidates != 0 {
        let offset = 63 - candidates.leading_zeros() as usize;
        candidates &= !(1 << offset);
        let index = window.start + offset;
        if prompt.prefix_tokens(index) < min {
            return ControlFlow::Break(None);
        }
        if let Some(slot) = store.ready_slot(prompt.prefix_key(index), now) {
            return ControlFlow::Break(Some(Hit { index, slot }));
        }
    }
    ControlFlow::Continue(())
}

/// Position `i`'s bit in `Cache::written`: bit `i % 64` (one shift), so any 64 consecutive
/// positions have distinct bits.
#[inline(always)]
fn position_bit(i: usize) -> u64 {
    1 << (i % 64)
}

/// The A/B/C bill of the prompt-caching docs (platform.claude.com/docs/en/build-with-claude/prompt-caching) for hit boundary `hit`.
/// Inlined: out of line, the usage went back through memory and the hit's tokens, which
/// the lookup had in hand, were loaded again.
#[inline(always)]
fn anthropic_usage(
    prompt: &Prompt,
    breakpoints: &[Breakpoint],
    min: u64,
    hit: Option<usize>,
) -> Usage {
    let a = hit.map_or(0, |h| prompt.prefix_tokens(h));
    // The breakpoints written (after the hit, at or past the minimum) are a suffix: indices
    // increase and so do prefix tokens. C is the suffix's last, B its last 1h one, and 1h
    // breakpoints come first: one pass from the end finds both.
    let (mut b, mut c) = (a, None);
    for bp in breakpoints.iter().rev() {
        let tokens = prompt.prefix_tokens(bp.index);
        if hit.is_some_and(|h| bp.index <= h) || tokens < min {
            break;
        }
        c = c.or(Some(tokens));
        if bp.ttl == Ttl::OneHour {
            b = tokens;
            break;
        }
    }
    let c = c.unwrap_or(a);
    Usage {
        cache_read: a,
        cache_write_1h: b - a,
        cache_write_5m: c - b,
        uncached: prompt.tokens() - c,
        redundant_writes: 0,
        storage_token_s: 0,
    }
}

/// The TTL of `every-block` writes; a GPU cache (`vllm`, `sglang`) has none.
fn default_ttl(params: &CacheParams) -> Ttl {
    match server_block_tokens(params.policy) {
        Some(_) => Ttl::None,
        None => params.ttl,
    }
}

/// The KV block of a self-hosted policy: `Some` for `vllm` (16) and `sglang` (1).
fn server_block_tokens(policy: Policy) -> Option<u64> {
    policy.is_server().then(|| policy.default_block_tokens())
}

/// Without a server's clock (`Cache::serve` on `vllm` and `sglang`, as the scenarios and
/// the rate limiter's peek use it): the longest ready prefix at a block boundary, read in
/// whole KV blocks; the rest is computed, the part in full blocks billed as written (it is
/// cached), the last partial block as uncached. The server model (`model::server`) has the
/// timed version: blocks readable as each prefill step computes them.
fn server_usage(total: u64, read: u64, block: u64) -> Usage {
    let cache_read = read.min(total.saturating_sub(1)) / block * block;
    let full = total / block * block;
    Usage {
        cache_read,
        cache_write_5m: full - cache_read,
        cache_write_1h: 0,
        uncached: total - full,
        redundant_writes: 0,
        storage_token_s: 0,
    }
}

#[cfg(test)]
mod tests;
