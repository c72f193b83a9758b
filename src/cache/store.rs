//! Cache entries by key: pending -> ready -> expired, sliding TTL, optional LRU capacity.
//!
//! An entry written at `now` with `ready_at` is **pending** on `[now, ready_at)` and **ready**
//! from `ready_at` on (a lookup at exactly `ready_at` hits). It is **alive** on
//! `[last_use, last_use + ttl)`: at exactly `last_use + ttl` it has expired. `last_use` is the
//! send time of the last request that read or wrote it (docs/cache.md).
//!
//! With a capacity (in tokens), a write that would overflow it first reclaims expired entries
//! and then evicts the least recently used live ones from the tail of an intrusive doubly linked
//! list threaded through a slab (O(1), no allocation per lookup). Keys are remembered after
//! eviction or expiry, so [`EntryStore::probe`] can say why a key misses. With one TTL and
//! monotonic time, LRU order is `last_use` order, so expired entries are always at the tail.
//!
//! Generic key: `Digest` (the API cache), `u64` hash ids (trace replay). Knows no prompts.

use super::{ttl_us, Ttl};
use crate::time::SimTime;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// Keys the store accepts.
pub trait StoreKey: Copy + Eq + Hash {}
impl<T: Copy + Eq + Hash> StoreKey for T {}

/// A fast hasher for keys that are already (nearly) uniform: a folded 128-bit multiply per
/// 8-byte word. `Digest` hashes as its first 8 bytes; `u64` ids as themselves.
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

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// In the LRU list and counted in `used_tokens` (may be expired, lazily).
    Live,
    /// Removed by capacity pressure while alive.
    Evicted,
    /// Removed by capacity pressure after it had expired.
    Reclaimed,
}

#[derive(Debug, Clone)]
struct Slot<K> {
    key: K,
    tokens: u64,
    ready_at: SimTime,
    last_use: SimTime,
    ttl_us: Option<u64>,
    state: SlotState,
    prev: u32,
    next: u32,
}

impl<K> Slot<K> {
    fn expired(&self, now: SimTime) -> bool {
        self.ttl_us.is_some_and(|t| now >= self.last_use.saturating_add(t))
    }
}

/// What a lookup of one key finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Readable: a hit.
    Ready { tokens: u64 },
    /// Written, but the writer's first response has not begun.
    Pending { ready_at: SimTime },
    /// Existed, but its TTL ran out (at `last_use + ttl`).
    Expired,
    /// Existed, but was evicted for capacity while alive.
    Evicted,
    /// Never written.
    Absent,
}

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

/// Counters over the store's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Entries stored (New + Rewritten).
    pub writes: u64,
    pub redundant_writes: u64,
    /// Live entries evicted for capacity (not expired), and their tokens.
    pub evictions: u64,
    pub evicted_tokens: u64,
    /// Expired entries removed to make room.
    pub reclaimed: u64,
}

/// Entries by key; see the module doc for the lifecycle.
#[derive(Debug, Clone)]
pub struct EntryStore<K> {
    index: HashMap<K, u32, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot<K>>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    capacity_tokens: Option<u64>,
    used_tokens: u64,
    stats: StoreStats,
}

impl<K: StoreKey> EntryStore<K> {
    /// An empty store; `capacity_tokens: None` = unbounded.
    pub fn new(capacity_tokens: Option<u64>) -> Self {
        EntryStore {
            index: HashMap::default(),
            slots: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity_tokens,
            used_tokens: 0,
            stats: StoreStats::default(),
        }
    }

    /// Forget every entry and counter, keeping the memory (for the next replication).
    pub fn clear(&mut self, capacity_tokens: Option<u64>) {
        self.index.clear();
        self.slots.clear();
        self.head = NIL;
        self.tail = NIL;
        self.capacity_tokens = capacity_tokens;
        self.used_tokens = 0;
        self.stats = StoreStats::default();
    }

    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// Tokens held by live (possibly expired, not yet reclaimed) entries.
    pub fn used_tokens(&self) -> u64 {
        self.used_tokens
    }

    pub fn capacity_tokens(&self) -> Option<u64> {
        self.capacity_tokens
    }

    /// Keys ever written (including expired and evicted ones).
    pub fn keys_seen(&self) -> usize {
        self.slots.len()
    }

    /// Classify `key` at `now` without changing anything.
    pub fn probe(&self, key: K, now: SimTime) -> Probe {
        let Some(&i) = self.index.get(&key) else { return Probe::Absent };
        let s = &self.slots[i as usize];
        match s.state {
            SlotState::Evicted => Probe::Evicted,
            SlotState::Reclaimed => Probe::Expired,
            SlotState::Live if s.expired(now) => Probe::Expired,
            SlotState::Live if now < s.ready_at => Probe::Pending { ready_at: s.ready_at },
            SlotState::Live => Probe::Ready { tokens: s.tokens },
        }
    }

    /// Whether `key` is ready and alive at `now` (a hit).
    pub fn is_ready(&self, key: K, now: SimTime) -> bool {
        matches!(self.probe(key, now), Probe::Ready { .. })
    }

    /// A hit: refresh `key`'s TTL from `now` and make it the most recently used. Returns false
    /// (and does nothing) if the key is not ready and alive.
    pub fn touch(&mut self, key: K, now: SimTime) -> bool {
        let Some(&i) = self.index.get(&key) else { return false };
        let s = &self.slots[i as usize];
        if s.state != SlotState::Live || s.expired(now) || now < s.ready_at {
            return false;
        }
        self.use_slot(i, now);
        true
    }

    fn use_slot(&mut self, i: u32, now: SimTime) {
        let s = &mut self.slots[i as usize];
        s.last_use = s.last_use.max(now);
        self.unlink(i);
        self.link_front(i);
    }

    /// Write `key` (a miss) at `now`, readable from `ready_at`, with `ttl`.
    pub fn write(
        &mut self,
        key: K,
        tokens: u64,
        now: SimTime,
        ready_at: SimTime,
        ttl: Ttl,
    ) -> WriteOutcome {
        let ttl_us = ttl_us(ttl);
        let ready_at = ready_at.max(now);
        if let Some(&i) = self.index.get(&key) {
            let s = &mut self.slots[i as usize];
            if s.state == SlotState::Live && !s.expired(now) {
                // Keep the longer TTL (`None` = never expires is the longest).
                s.ttl_us = match (s.ttl_us, ttl_us) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                let pending = now < s.ready_at;
                s.ready_at = s.ready_at.min(ready_at);
                self.use_slot(i, now);
                if pending {
                    self.stats.redundant_writes += 1;
                    return WriteOutcome::Redundant;
                }
                return WriteOutcome::Refreshed;
            }
            if s.state == SlotState::Live {
                self.remove(i, SlotState::Reclaimed);
            }
            return self.store(i, tokens, now, ready_at, ttl_us, WriteOutcome::Rewritten);
        }
        let i = self.slots.len() as u32;
        self.slots.push(Slot {
            key,
            tokens,
            ready_at,
            last_use: now,
            ttl_us,
            state: SlotState::Evicted,
            prev: NIL,
            next: NIL,
        });
        self.index.insert(key, i);
        self.store(i, tokens, now, ready_at, ttl_us, WriteOutcome::New)
    }

    /// Make slot `i` (not in the list) a live entry, making room first.
    fn store(
        &mut self,
        i: u32,
        tokens: u64,
        now: SimTime,
        ready_at: SimTime,
        ttl_us: Option<u64>,
        outcome: WriteOutcome,
    ) -> WriteOutcome {
        let s = &mut self.slots[i as usize];
        s.tokens = tokens;
        s.ready_at = ready_at;
        s.last_use = now;
        s.ttl_us = ttl_us;
        if let Some(cap) = self.capacity_tokens {
            if tokens > cap {
                s.state = SlotState::Evicted;
                self.stats.evictions += 1;
                self.stats.evicted_tokens += tokens;
                return WriteOutcome::TooLarge;
            }
            while self.used_tokens + tokens > cap {
                let t = self.tail;
                let state = if self.slots[t as usize].expired(now) {
                    SlotState::Reclaimed
                } else {
                    SlotState::Evicted
                };
                self.remove(t, state);
            }
        }
        self.slots[i as usize].state = SlotState::Live;
        self.used_tokens += tokens;
        self.link_front(i);
        self.stats.writes += 1;
        outcome
    }

    /// Take live slot `i` out of the list, as `state`.
    fn remove(&mut self, i: u32, state: SlotState) {
        self.unlink(i);
        let s = &mut self.slots[i as usize];
        s.state = state;
        self.used_tokens -= s.tokens;
        match state {
            SlotState::Evicted => {
                self.stats.evictions += 1;
                self.stats.evicted_tokens += s.tokens;
            }
            SlotState::Reclaimed => self.stats.reclaimed += 1,
            SlotState::Live => {}
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = {
            let s = &self.slots[i as usize];
            (s.prev, s.next)
        };
        if prev == NIL {
            if self.head == i {
                self.head = next;
            }
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            if self.tail == i {
                self.tail = prev;
            }
        } else {
            self.slots[next as usize].prev = prev;
        }
        let s = &mut self.slots[i as usize];
        s.prev = NIL;
        s.next = NIL;
    }

    fn link_front(&mut self, i: u32) {
        let old = self.head;
        {
            let s = &mut self.slots[i as usize];
            s.prev = NIL;
            s.next = old;
        }
        if old != NIL {
            self.slots[old as usize].prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
    }

    /// Live keys from most to least recently used (for tests and diagnostics; O(n)).
    pub fn lru_order(&self) -> Vec<K> {
        let mut out = Vec::new();
        let mut i = self.head;
        while i != NIL {
            out.push(self.slots[i as usize].key);
            i = self.slots[i as usize].next;
        }
        out
    }
}
