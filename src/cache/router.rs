//! OpenAI's routing of requests to cache machines (docs/providers.md, section 1): a request
//! goes to a machine by a hash of its first tokens (plus `prompt_cache_key`); above about 15
//! requests a minute for one prefix and key, requests overflow to further machines.
//!
//! The rule (assumptions, named in `[openai]`): each route key (prefix hash and
//! `prompt_cache_key`) has `machines` machines, machine 0 the hash's home. A request whose
//! home's sliding `window` holds fewer than `per_window` requests sent for that key goes home;
//! otherwise it overflows with probability `overflow_probability` (the caller's draw, from the
//! requester's own stream, so seeds reproduce) to the lowest-numbered other machine whose
//! window has room, and stays home when it does not overflow or every machine is full. Each
//! (key, machine) keeps the
//! send times of its last `per_window` requests in a ring: the window is full exactly when the
//! oldest of them is less than `window` old. Allocates only for a key never seen.

use super::{Key, KeyHasher};
use crate::time::SimTime;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Who sends a request and its draws, as the `openai` router reads them (docs/providers.md,
/// section 1): the agent (whose `prompt_cache_key` is `OpenAiParams::key_of(agent)`) and two
/// draws in [0, 1) from the requester's own stream. The default (`Cache::serve`, `peek`):
/// the parent's key and both draws 0, so a full home overflows whenever
/// `overflow_probability` > 0 and the overflow machine is warm whenever
/// `overflow_warm_probability` > 0.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Route {
    /// The agent; `None`: the parent conversation or the prewarm (create) request.
    pub agent: Option<u32>,
    /// The request overflows from a full home when this is below `overflow_probability`.
    pub overflow_draw: f64,
    /// The overflow machine holds the home's prefix when this is below
    /// `overflow_warm_probability`.
    pub warm_draw: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Router {
    machines: u32,
    per_window: u32,
    window_us: u64,
    /// Route key -> its first (key, machine) ring.
    index: HashMap<Key, u32, BuildHasherDefault<KeyHasher>>,
    /// `per_window` send times per (key, machine).
    times: Vec<SimTime>,
    /// Requests recorded per (key, machine), at most `per_window`.
    fill: Vec<u32>,
    /// Per (key, machine): the ring slot written next (the oldest once full).
    head: Vec<u32>,
}

impl Router {
    /// Forget every request, keeping the memory; `machines` and `per_window` are at least 1.
    pub fn reset(&mut self, machines: u32, per_window: u32, window_us: u64) {
        self.machines = machines.max(1);
        self.per_window = per_window.max(1);
        self.window_us = window_us;
        self.index.clear();
        self.times.clear();
        self.fill.clear();
        self.head.clear();
    }

    /// The machine a request for `route` sent at `now` goes to (nothing recorded), when it
    /// overflows from a full home (`overflows`: the caller's draw fell under
    /// `overflow_probability`).
    pub fn pick(&self, route: Key, now: SimTime, overflows: bool) -> u32 {
        let Some(&first) = self.index.get(&route) else { return 0 };
        if !self.full(first, now) || !overflows {
            return 0;
        }
        (1..self.machines).find(|&m| !self.full(first + m, now)).unwrap_or(0)
    }

    /// Record a request for `route` sent at `now` on `machine` (as `pick` chose it).
    pub fn record(&mut self, route: Key, machine: u32, now: SimTime) {
        let first = match self.index.get(&route) {
            Some(&first) => first,
            None => {
                let first = self.fill.len() as u32;
                let rings = self.machines as usize;
                self.fill.resize(self.fill.len() + rings, 0);
                self.head.resize(self.head.len() + rings, 0);
                self.times
                    .resize(self.times.len() + rings * self.per_window as usize, SimTime::ZERO);
                self.index.insert(route, first);
                first
            }
        };
        let ring = (first + machine.min(self.machines - 1)) as usize;
        let slot = ring * self.per_window as usize + self.head[ring] as usize;
        self.times[slot] = now;
        self.head[ring] = (self.head[ring] + 1) % self.per_window;
        self.fill[ring] = (self.fill[ring] + 1).min(self.per_window);
    }

    /// Whether ring `ring`'s window at `now` already holds `per_window` requests.
    fn full(&self, ring: u32, now: SimTime) -> bool {
        let ring = ring as usize;
        if self.fill[ring] < self.per_window {
            return false;
        }
        let oldest = self.times[ring * self.per_window as usize + self.head[ring] as usize];
        now.saturating_since(oldest).as_us() < self.window_us
    }
}

/// The store key of prefix `key` on `machine` of the route of `prompt_cache_key` `cache_key`
/// (`None`: no key): machine 0 without a key keeps the key itself; any other folds the
/// machine and key numbers into the key's hashed word (and a tag into the other), so each
/// machine caches its own copy of a prefix, and two keys never share a machine (the pool is
/// taken to be large: docs/providers.md).
#[inline]
pub fn machine_key(key: Key, machine: u32, cache_key: Option<u32>) -> Key {
    let id = match cache_key {
        None if machine == 0 => return key,
        None => u64::from(machine),
        Some(k) => (u64::from(k) + 1) << 32 | u64::from(machine),
    };
    let [low, high] = key.0;
    let tag = u64::from(0x80 | (id as u8 & 0x7f)) << 56;
    Key([low ^ crate::rng::mix64(id), high ^ tag])
}

/// The route key of prefix hash `prefix` with `prompt_cache_key` `cache_key`: the key is
/// "combined with the prefix hash" (docs/providers.md, section 1).
#[inline]
pub fn route_with_key(prefix: Key, cache_key: Option<u32>) -> Key {
    match cache_key {
        None => prefix,
        Some(k) => machine_key(prefix, 0, Some(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Digest;

    fn t(us: u64) -> SimTime {
        SimTime::from_us(us)
    }

    #[test]
    fn the_sixteenth_request_in_a_minute_overflows_and_the_window_slides() {
        let key = Key::of_digest(&Digest::of(b"route"));
        let mut r = Router::default();
        r.reset(8, 15, 60_000_000);
        for i in 0..15 {
            assert_eq!(r.pick(key, t(i), true), 0);
            r.record(key, 0, t(i));
        }
        assert_eq!(r.pick(key, t(20), true), 1, "the 16th goes to machine 1");
        assert_eq!(r.pick(key, t(20), false), 0, "unless its draw says it stays home");
        r.record(key, 1, t(20));
        assert_eq!(r.pick(key, t(60_000_000 - 1), true), 1, "still 15 in machine 0's last minute");
        assert_eq!(
            r.pick(key, t(60_000_000), true),
            0,
            "request 0 (sent at 0) has left the window"
        );
        assert_eq!(
            r.pick(Key::of_digest(&Digest::of(b"other")), t(20), true),
            0,
            "another prefix has its own machines"
        );
    }

    #[test]
    fn all_machines_full_falls_back_to_machine_zero() {
        let key = Key::of_digest(&Digest::of(b"k"));
        let mut r = Router::default();
        r.reset(2, 1, 1_000);
        r.record(key, 0, t(0));
        assert_eq!(r.pick(key, t(1), true), 1);
        r.record(key, 1, t(1));
        assert_eq!(r.pick(key, t(2), true), 0);
        assert_ne!(machine_key(key, 1, None), key);
        assert_ne!(machine_key(key, 1, None), machine_key(key, 2, None));
        assert_eq!(machine_key(key, 0, None), key);
        let keyed = [Some(0), Some(1)].map(|k| machine_key(key, 0, k));
        assert!(keyed[0] != key && keyed[1] != key && keyed[0] != keyed[1], "keys, machines");
        assert_ne!(machine_key(key, 1, Some(0)), machine_key(key, 1, None));
    }
}
