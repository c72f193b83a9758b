//! Serving one request under the hosted providers' policies (docs/providers.md):
//!
//! - `openai`, classic contract: every block boundary at or past the model's minimum (1,024)
//!   is cached on the machine the router picks (`router.rs`: the route is the prefix hash and
//!   the request's `prompt_cache_key`, each (route, machine) its own entries; an overflow
//!   machine also shows the home's entries when the request's warm draw says so); the hit is
//!   the longest ready
//!   prefix on that machine, read in `min + k x increment_tokens` steps (1,024 + 128 k);
//!   the rest of the cacheable length is written (billed at `write_5m_multiplier`, 1.0 on
//!   classic presets: no write fee), the tail past the last step is uncached.
//! - `openai`, breakpoint contract (GPT-5.6 on): the `anthropic` rule with the lookback limited
//!   to the request's own breakpoints, on the routed machine; the whole breakpoint prefix is
//!   read; writes in the 5m slot (retention `30m`, 1.25x) or the 1h slot (`12h`, 2.5x).
//! - `gemini` implicit: the classic rule with no machines and 1-token granularity; the caller
//!   draws the hit probability (a miss arrives as `miss = true`).
//! - `gemini` explicit: one cache object, the prefix up to the request's second breakpoint
//!   (the model's shared prefix; its only one when it has one), with a TTL fixed at creation
//!   (reads do not refresh it). A request that finds none creates it (the model sends one
//!   create call first: `model::sim`): the tokens bill at `write_5m_multiplier` (1.0: the
//!   input price) plus `tokens x explicit_ttl` of storage (`Usage::storage_token_s`). A
//!   request that finds it pending neither reads nor creates it (no second object while the
//!   first is live): the prefix is uncached.
//!
//! Entries are written with the policy's retention as their TTL, readable at `ready_at`; every
//! entry is refreshed by a hit except explicit cache objects.

use super::super::router::{machine_key, route_with_key};
use super::super::WriteOutcome;
use super::{validate_breakpoints, Cache, Hit, Lookup, Plan};
use crate::cache::{
    Breakpoint, CacheError, GeminiMode, Key, OpenAiContract, OpenAiRetention, Policy, Prompt, Usage,
};
use crate::time::{SimTime, US_PER_S};

/// Which rule a hosted policy applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Longest ready prefix at every boundary past the minimum, read in steps.
    Longest { step: u64 },
    /// The request's own breakpoints only.
    Breakpoints,
    /// One explicit cache object.
    Explicit,
}

impl Cache {
    fn rule(&self) -> Rule {
        let h = &self.hosted;
        match (self.policy, h.openai.contract, h.gemini.mode) {
            (Policy::OpenAi, OpenAiContract::Classic, _) => {
                Rule::Longest { step: h.openai.increment_tokens.max(1) }
            }
            (Policy::OpenAi, OpenAiContract::Breakpoints, _) => Rule::Breakpoints,
            (_, _, GeminiMode::Implicit) => Rule::Longest { step: 1 },
            (_, _, GeminiMode::Explicit) => Rule::Explicit,
        }
    }

    /// The TTL of the entries this policy writes.
    fn hosted_ttl_us(&self) -> u64 {
        match (self.policy, self.hosted.gemini.mode) {
            (Policy::OpenAi, _) => self.hosted.openai.ttl_us(),
            (_, GeminiMode::Implicit) => self.hosted.gemini.implicit_ttl_us,
            (_, GeminiMode::Explicit) => self.hosted.gemini.explicit_ttl_us,
        }
    }

    /// The request's breakpoints, where the rule reads them.
    pub(super) fn hosted_check(&self, ask: &Lookup) -> Result<(), CacheError> {
        match self.rule() {
            Rule::Breakpoints | Rule::Explicit => {
                validate_breakpoints(ask.breakpoints, ask.prompt.len())
            }
            Rule::Longest { .. } => Ok(()),
        }
    }

    /// Look the request up (no side effect): its machine and its hit.
    pub(super) fn hosted_plan(&self, ask: &Lookup) -> (Plan, Usage) {
        let Lookup { prompt, breakpoints, now, miss, route: r } = *ask;
        let rule = self.rule();
        let o = &self.hosted.openai;
        let key = match self.policy {
            Policy::OpenAi => o.key_of(r.agent),
            _ => None,
        };
        let route = match self.policy {
            Policy::OpenAi => route_key(prompt, o.route_tokens).map(|p| route_with_key(p, key)),
            _ => None,
        };
        let overflows = r.overflow_draw < o.overflow_probability;
        let machine = route.map_or(0, |route| self.router.pick(route, now, overflows));
        // An overflow machine holds what the home holds when the warm draw says so.
        let warm = machine != 0 && r.warm_draw < o.overflow_warm_probability;
        let min = self.model.min_cacheable_tokens;
        let ready = |index: usize| {
            if prompt.prefix_tokens(index) < min {
                return None;
            }
            let at = |m| self.store.ready_slot(machine_key(prompt.prefix_key(index), m, key), now);
            let slot = at(machine).or_else(|| warm.then(|| at(0)).flatten())?;
            Some(Hit { index, slot })
        };
        let object = explicit_object(breakpoints);
        let pending = rule == Rule::Explicit
            && object.is_some_and(|i| {
                let k = prompt.prefix_key(i);
                self.store.probe(k, now) == crate::cache::State::Pending
            });
        let hit = match (miss, rule) {
            (true, _) => None,
            (false, Rule::Longest { .. }) => (0..prompt.len())
                .rev()
                .take_while(|&i| prompt.prefix_tokens(i) >= min)
                .find_map(ready),
            (false, Rule::Breakpoints) => breakpoints.iter().rev().find_map(|bp| ready(bp.index)),
            (false, Rule::Explicit) => object.and_then(ready),
        };
        let plan = Plan { route, machine, key, hit, pending };
        let usage = self.hosted_usage(prompt, breakpoints, (rule, pending), Hit::index(hit));
        (plan, usage)
    }

    fn hosted_usage(
        &self,
        prompt: &Prompt,
        breakpoints: &[Breakpoint],
        (rule, pending): (Rule, bool),
        hit: Option<usize>,
    ) -> Usage {
        let min = self.model.min_cacheable_tokens;
        let total = prompt.tokens();
        let hit_tokens = hit.map_or(0, |h| prompt.prefix_tokens(h));
        let (read, cached) = match rule {
            Rule::Longest { step } => (stepped(hit_tokens, min, step), stepped(total, min, step)),
            Rule::Breakpoints => {
                // The last breakpoint holds the longest prefix: written when past the hit.
                let last = breakpoints.last().map_or(0, |bp| prompt.prefix_tokens(bp.index));
                let c = if last >= min && last > hit_tokens { last } else { hit_tokens };
                (hit_tokens, c)
            }
            // A pending object is neither read nor created again: the prefix is uncached.
            Rule::Explicit if pending => (0, 0),
            Rule::Explicit => {
                let object = explicit_object(breakpoints).map(|i| prompt.prefix_tokens(i));
                (hit_tokens, object.filter(|&t| t >= min).unwrap_or(0).max(hit_tokens))
            }
        };
        let written = cached - read;
        let mut usage = Usage { cache_read: read, uncached: total - cached, ..Usage::default() };
        match self.policy == Policy::OpenAi
            && self.hosted.openai.retention == OpenAiRetention::HalfDay
        {
            true => usage.cache_write_1h = written,
            false => usage.cache_write_5m = written,
        }
        if rule == Rule::Explicit && written > 0 {
            let token_us = u128::from(written) * u128::from(self.hosted.gemini.explicit_ttl_us);
            usage.storage_token_s =
                u64::try_from(token_us / u128::from(US_PER_S)).unwrap_or(u64::MAX);
        }
        usage
    }

    /// `serve_with` under a hosted policy after `hosted_plan`: refresh the hit, count the
    /// route, write; the redundant writes.
    pub(super) fn commit_hosted(&mut self, ask: &Lookup, plan: Plan, ready: SimTime) -> u64 {
        let Lookup { prompt, breakpoints, now, .. } = *ask;
        let rule = self.rule();
        let (m, key) = (plan.machine, plan.key);
        if let Some(h) = plan.hit.filter(|_| rule != Rule::Explicit) {
            self.store.touch_slot(h.slot, now);
            if rule == Rule::Breakpoints {
                for bp in breakpoints.iter().filter(|bp| bp.index < h.index) {
                    self.store.touch(machine_key(prompt.prefix_key(bp.index), m, key), now);
                }
            }
        }
        if let Some(route) = plan.route {
            self.router.record(route, m, now);
        }
        let ttl = Some(crate::time::SimDuration::from_us(self.hosted_ttl_us()));
        let min = self.model.min_cacheable_tokens;
        let hit = Hit::index(plan.hit);
        let first = hit.map_or(0, |h| h + 1);
        let mut previous = hit.map_or(0, |h| prompt.prefix_tokens(h));
        let mut redundant = 0;
        let write = |store: &mut super::EntryStore<Key>, i: usize, tokens: u64| {
            let k = machine_key(prompt.prefix_key(i), m, key);
            let outcome = store.write_ttl(k, tokens, now, ready, ttl);
            u64::from(outcome == WriteOutcome::Redundant)
        };
        match rule {
            Rule::Longest { .. } => {
                for i in (first..prompt.len()).filter(|&i| prompt.prefix_tokens(i) >= min) {
                    let t = prompt.prefix_tokens(i);
                    redundant += write(&mut self.store, i, t - previous);
                    previous = t;
                }
            }
            Rule::Breakpoints => {
                for bp in breakpoints.iter().filter(|bp| bp.index >= first) {
                    let t = prompt.prefix_tokens(bp.index);
                    if t >= min {
                        redundant += write(&mut self.store, bp.index, t);
                    }
                }
            }
            Rule::Explicit => {
                let creates = hit.is_none() && !plan.pending;
                if let Some(i) = explicit_object(breakpoints).filter(|_| creates) {
                    let t = prompt.prefix_tokens(i);
                    if t >= min {
                        redundant += write(&mut self.store, i, t);
                    }
                }
            }
        }
        redundant
    }
}

/// `tokens` rounded down to `min + k x step`; 0 below `min`.
pub fn stepped(tokens: u64, min: u64, step: u64) -> u64 {
    match tokens.checked_sub(min) {
        None => 0,
        Some(over) => min + over / step * step,
    }
}

/// The route key: the prefix key of the first block that reaches `route_tokens` (the
/// whole prompt when shorter). Blocks are compared whole, so two prompts whose first
/// `route_tokens` tokens fall in equal blocks share a route, and any differing block that
/// starts before `route_tokens` separates them.
fn route_key(prompt: &Prompt, route_tokens: u64) -> Option<Key> {
    let last = prompt.len().checked_sub(1)?;
    let i = (0..=last).find(|&i| prompt.prefix_tokens(i) >= route_tokens).unwrap_or(last);
    Some(prompt.prefix_key(i))
}

/// The block ending the explicit cache object: the second breakpoint, or the only one.
fn explicit_object(breakpoints: &[Breakpoint]) -> Option<usize> {
    breakpoints.get(1).or(breakpoints.first()).map(|bp| bp.index)
}
