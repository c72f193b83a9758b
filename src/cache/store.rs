//! Cache entries by key: pending -> ready -> expired, sliding TTL, optional LRU capacity.
//!
//! The lifecycle (which times make an entry pending, ready or expired) is
//! [`super::lifecycle::state`]. With a capacity (in tokens), a write that would overflow it
//! first reclaims expired entries and then evicts the least recently used live ones from the
//! old end of an intrusive recency list threaded through a slab ([`super::lru`]; O(1), no
//! allocation per lookup). Without a capacity nothing is ever evicted, so no recency list is
//! kept (a hit then costs one index lookup and one store). The index is a `HashMap` with
//! [`KeyHasher`], its memory kept across runs. Keys are remembered after eviction
//! or expiry, so [`EntryStore::probe`] can say why a key misses (an evicted entry probes
//! `Evicted` until it would have expired, as in the replay's block cache). With one TTL and
//! monotonic time, LRU order is `last_use` order, so expired entries are always at the old end.
//!
//! Generic key: `Key` (the API cache), `u64` hash ids (trace replay). Knows no prompts.

use super::lifecycle::{held_state, state, State};
use super::lru::{Link, Linked, Lru};
use super::{ttl_duration, Ttl};
use crate::time::{SimDuration, SimTime};
use std::collections::hash_map::{Entry, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A fast hasher for keys that are already (nearly) uniform, for the maps keyed by them (the
/// router, the GPU cache): a folded 128-bit multiply per 8-byte word. `Key` and `Digest`
/// hash as their first 8 bytes; `u64` ids (trace block ids, counters) spread by the multiply.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let m = u128::from(self.0 ^ x) * 0x9E37_79B9_7F4A_7C15_u128;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
}

/// Whether a slot's entry is still held; the times decide the rest of its [`State`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Residency {
    /// In the LRU list and counted in `used_tokens` (may be expired, lazily).
    Live,
    /// Removed by capacity pressure while alive.
    Evicted,
    /// Removed by capacity pressure after it had expired.
    Reclaimed,
}

/// An entry's times and size. Its key lives only in the index (the lookups compare keys
/// there), which keeps the slots small.
#[derive(Debug, Clone)]
struct Slot {
    tokens: u64,
    ready_at: SimTime,
    last_use: SimTime,
    ttl: Option<SimDuration>,
    residency: Residency,
    link: Link,
}

impl Slot {
    /// The lifecycle state of a `Live` slot.
    fn state(&self, now: SimTime) -> State {
        state(self.ready_at, self.last_use, self.ttl, now)
    }

    fn expired(&self, now: SimTime) -> bool {
        self.state(now) == State::Expired
    }
}

impl Linked for Slot {
    fn link(&self) -> &Link {
        &self.link
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

/// An entry's place in its store, as a lookup found it ([`EntryStore::ready_slot`]), so that
/// refreshing the hit needs no second hash lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotId(u32);

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// A new entry for a never-seen key.
    New,
    /// The key's entry was still pending: a redundant write (it keeps the earlier `ready_at`).
    Redundant,
    /// The key's entry was already ready and alive: refreshed, nothing written.
    Refreshed,
    /// The key had expired or been evicted: written again.
    Rewritten,
    /// Larger than the whole capacity: not stored (counted as an eviction).
    TooLarge,
}

/// Entries by key; see the module doc for the lifecycle.
#[derive(Debug, Clone)]
pub struct EntryStore<K> {
    index: HashMap<K, u32, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    /// `Live` slots by recency.
    lru: Lru,
    capacity_tokens: Option<u64>,
    used_tokens: u64,
}

impl<K: Copy + Eq + Hash> EntryStore<K> {
    /// An empty store; `capacity_tokens: None` = unbounded.
    pub fn new(capacity_tokens: Option<u64>) -> Self {
        EntryStore {
            index: HashMap::default(),
            slots: Vec::new(),
            lru: Lru::new(),
            capacity_tokens,
            used_tokens: 0,
        }
    }

    /// Forget every entry and counter, keeping the memory (for the next replication).
    pub fn clear(&mut self, capacity_tokens: Option<u64>) {
        self.index.clear();
        self.slots.clear();
        self.lru = Lru::new();
        self.capacity_tokens = capacity_tokens;
        self.used_tokens = 0;
    }

    /// Classify `key` at `now` without changing anything.
    pub fn probe(&self, key: K, now: SimTime) -> State {
        let Some(i) = self.index.get(&key).copied() else { return State::Absent };
        let s = &self.slots[i as usize];
        match s.residency {
            Residency::Reclaimed => State::Expired,
            r => held_state(r == Residency::Evicted, s.ready_at, s.last_use, s.ttl, now),
        }
    }

    /// The slot of `key` if it is ready and alive at `now` (a hit), for [`Self::touch_slot`].
    /// Inlined: a prefix search calls it once per position, mostly on absent keys.
    #[inline(always)]
    pub fn ready_slot(&self, key: K, now: SimTime) -> Option<SlotId> {
        let i = self.index.get(&key).copied()?;
        let s = &self.slots[i as usize];
        (s.residency == Residency::Live && s.state(now) == State::Ready).then_some(SlotId(i))
    }

    /// A hit: refresh `key`'s TTL from `now` and make it the most recently used. Returns false
    /// (and does nothing) if the key is not ready and alive.
    pub fn touch(&mut self, key: K, now: SimTime) -> bool {
        let Some(slot) = self.slot_of(key) else { return false };
        self.touch_slot_if_ready(slot, now)
    }

    /// The slot of `key` whatever its state (`None`: never written), for
    /// [`Self::touch_slot_if_ready`]. A key keeps its slot until [`Self::clear`].
    #[inline]
    pub fn slot_of(&self, key: K) -> Option<SlotId> {
        self.index.get(&key).copied().map(SlotId)
    }

    /// [`Self::touch`] on the slot `slot_of(key)` gave: the same effect, no hash lookup.
    #[inline(always)]
    pub fn touch_slot_if_ready(&mut self, slot: SlotId, now: SimTime) -> bool {
        let s = &self.slots[slot.0 as usize];
        if s.residency != Residency::Live || s.state(now) != State::Ready {
            return false;
        }
        self.use_slot(slot.0, now);
        true
    }

    /// [`Self::touch`] on the slot `ready_slot(key, now)` found, the store unchanged since.
    pub fn touch_slot(&mut self, slot: SlotId, now: SimTime) {
        debug_assert_eq!(self.slots[slot.0 as usize].state(now), State::Ready);
        self.use_slot(slot.0, now);
    }

    #[inline(always)]
    fn use_slot(&mut self, i: u32, now: SimTime) {
        let s = &mut self.slots[i as usize];
        s.last_use = s.last_use.max(now);
        if self.capacity_tokens.is_some() {
            self.lru.touch(&mut self.slots, i);
        }
    }

    /// Write `key` (a miss) at `now`, readable from `ready_at`, with `ttl`.
    #[inline]
    pub fn write(
        &mut self,
        key: K,
        tokens: u64,
        now: SimTime,
        ready_at: SimTime,
        ttl: Ttl,
    ) -> WriteOutcome {
        self.write_ttl(key, tokens, now, ready_at, ttl_duration(ttl))
    }

    /// `write` with a TTL of any length (`None`: never expires), for the policies whose
    /// retentions are not Anthropic's 5 minutes or 1 hour. Inlined: a request writes its
    /// breakpoints from one loop, and through a call the six arguments went through memory.
    #[inline(always)]
    pub fn write_ttl(
        &mut self,
        key: K,
        tokens: u64,
        now: SimTime,
        ready_at: SimTime,
        ttl: Option<SimDuration>,
    ) -> WriteOutcome {
        let ready_at = ready_at.max(now);
        // One probe whether the key is new or not (a new key is the common case).
        let next = self.slots.len() as u32;
        let i = match self.index.entry(key) {
            Entry::Occupied(seen) => *seen.get(),
            Entry::Vacant(new) => {
                new.insert(next);
                let link = Link::UNLINKED;
                if self.capacity_tokens.is_none() {
                    // Nothing to make room for: stored as it is pushed, in one write.
                    let residency = Residency::Live;
                    self.slots.push(Slot { tokens, ready_at, last_use: now, ttl, residency, link });
                    self.used_tokens += tokens;
                    return WriteOutcome::New;
                }
                let (last_use, residency) = (now, Residency::Evicted);
                self.slots.push(Slot { tokens, ready_at, last_use, ttl, residency, link });
                return self.store(next, tokens, now, ready_at, ttl, WriteOutcome::New);
            }
        };
        let s = &mut self.slots[i as usize];
        if s.residency == Residency::Live && !s.expired(now) {
            // Keep the longer TTL (`None` = never expires is the longest).
            s.ttl = match (s.ttl, ttl) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
            let pending = now < s.ready_at;
            s.ready_at = s.ready_at.min(ready_at);
            self.use_slot(i, now);
            return if pending { WriteOutcome::Redundant } else { WriteOutcome::Refreshed };
        }
        if s.residency == Residency::Live {
            self.remove(i, Residency::Reclaimed);
        }
        self.store(i, tokens, now, ready_at, ttl, WriteOutcome::Rewritten)
    }

    /// Make slot `i` (not in the list) a live entry, making room first.
    fn store(
        &mut self,
        i: u32,
        tokens: u64,
        now: SimTime,
        ready_at: SimTime,
        ttl: Option<SimDuration>,
        outcome: WriteOutcome,
    ) -> WriteOutcome {
        let s = &mut self.slots[i as usize];
        s.tokens = tokens;
        s.ready_at = ready_at;
        s.last_use = now;
        s.ttl = ttl;
        if let Some(cap) = self.capacity_tokens {
            if tokens > cap {
                return self.too_large(i);
            }
            if self.used_tokens + tokens > cap {
                self.make_room(cap - tokens, now);
            }
            self.lru.push_newest(&mut self.slots, i);
        }
        self.slots[i as usize].residency = Residency::Live;
        self.used_tokens += tokens;
        outcome
    }

    /// Slot `i` does not fit in the whole capacity: not stored, counted as an eviction.
    #[cold]
    fn too_large(&mut self, i: u32) -> WriteOutcome {
        self.slots[i as usize].residency = Residency::Evicted;
        WriteOutcome::TooLarge
    }

    /// Bring `used_tokens` down to `target` from the LRU tail: expired entries are reclaimed,
    /// live ones evicted.
    #[cold]
    fn make_room(&mut self, target: u64, now: SimTime) {
        while self.used_tokens > target {
            let t = self.lru.oldest().expect("used tokens are held by listed entries");
            let state = if self.slots[t as usize].expired(now) {
                Residency::Reclaimed
            } else {
                Residency::Evicted
            };
            self.remove(t, state);
        }
    }

    /// Take live slot `i` out of the list, as `residency`.
    fn remove(&mut self, i: u32, residency: Residency) {
        if self.capacity_tokens.is_some() {
            self.lru.unlink(&mut self.slots, i);
        }
        let s = &mut self.slots[i as usize];
        s.residency = residency;
        self.used_tokens -= s.tokens;
    }
}
