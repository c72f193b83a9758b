//! A block-level prefix cache for hash-id traces (vLLM-like): every full block is a cache
//! point, a lookup takes the longest ready prefix, and a request writes every block it missed.
//! Entries follow the API cache's lifecycle ([`crate::cache::lifecycle::state`]: pending until
//! the writer's first token, a sliding TTL from the start of the last request that used them)
//! and optionally share a capacity in tokens with LRU eviction (a request's deepest block is
//! evicted first, as vLLM frees blocks).
//!
//! Blocks are dense indices from `Interner` (shared by every cache choice of one replay), so a
//! cache is a `Vec` of entries and an intrusive recency list ([`crate::cache::lru`]): no
//! allocation, no hashing per lookup. A request's blocks are looked up together and committed
//! together (`lookup`, then `commit`).
//! Entries are never removed, only unlinked, so a miss can be classified (never seen, expired,
//! evicted, pending): memory grows with distinct blocks, not with requests.

use crate::cache::lifecycle::{held_state, State};
use crate::cache::lru::{Link, Linked, Lru};
use crate::time::{SimDuration, SimTime};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Maps `(namespace, block id)` to a dense index. Trace ids are small remapped integers, so
/// ids below `DIRECT_IDS` are looked up in a per-namespace table indexed by id (one array
/// access); larger ids go to a hash map keyed by a SplitMix64 mix (the ids are trusted
/// integers, so a fast non-cryptographic hash is safe). Memory: 4 bytes per id up to the
/// largest small id seen, plus the map.
#[derive(Default)]
pub struct Interner {
    direct: Vec<Vec<u32>>,
    map: HashMap<(u32, u64), u32, BuildHasherDefault<MixHasher>>,
    len: u32,
}

/// Ids below this are indexed directly (16 MiB of table at most per namespace).
pub const DIRECT_IDS: u64 = 1 << 22;
const UNSEEN: u32 = u32::MAX;

impl Interner {
    /// The index of a block, assigned on first sight.
    pub fn index(&mut self, namespace: u32, id: u64) -> u32 {
        if id >= DIRECT_IDS {
            let next = self.len;
            let i = *self.map.entry((namespace, id)).or_insert(next);
            self.len += u32::from(i == next);
            return i;
        }
        let ns = namespace as usize;
        if ns >= self.direct.len() {
            self.direct.resize_with(ns + 1, Vec::new);
        }
        let table = &mut self.direct[ns];
        if id as usize >= table.len() {
            let want = (id as usize + 1).max(table.len() * 2).min(DIRECT_IDS as usize);
            table.resize(want, UNSEEN);
        }
        let slot = &mut table[id as usize];
        if *slot == UNSEEN {
            *slot = self.len;
            self.len += 1;
        }
        *slot
    }
    /// Distinct blocks seen so far.
    pub fn distinct(&self) -> usize {
        self.len as usize
    }
}

/// SplitMix64 finaliser as a `Hasher` for integer keys.
#[derive(Default)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        crate::rng::mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = crate::rng::mix64(self.0 ^ u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = crate::rng::mix64(self.0 ^ n);
    }
}

/// Miss causes, in the fixed order of every output: expiry, capacity, pending, never seen.
pub const CAUSES: [&str; 4] = ["expired", "capacity", "pending", "never_seen"];

/// Index into `CAUSES` of a miss in `state` (`Ready` has no cause of its own: `never_seen`).
pub fn cause(state: State) -> usize {
    match state {
        State::Expired => 0,
        State::Evicted => 1,
        State::Pending => 2,
        State::Absent | State::Ready => 3,
    }
}

const SEEN: u8 = 1;
const LINKED: u8 = 2;
const EVICTED: u8 = 4;

#[derive(Debug, Clone, Copy)]
struct Entry {
    last_use: SimTime,
    ready_at: SimTime,
    link: Link,
    tokens: u32,
    flags: u8,
}

const EMPTY: Entry = Entry {
    last_use: SimTime::ZERO,
    ready_at: SimTime::ZERO,
    link: Link::UNLINKED,
    tokens: 0,
    flags: 0,
};

impl Linked for Entry {
    fn link(&self) -> &Link {
        &self.link
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

/// The outcome of looking up one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lookup {
    /// Leading blocks that hit.
    pub hit_blocks: usize,
    pub read_tokens: u64,
    /// Missed full blocks' tokens: written by this request.
    pub write_tokens: u64,
    /// Written tokens by cause (`CAUSES` order).
    pub miss_tokens: [u64; 4],
    /// Blocks written while an equal entry was pending.
    pub redundant_writes: u64,
}

/// One cache choice's state.
pub struct BlockCache {
    entries: Vec<Entry>,
    /// `LINKED` entries by recency (only with a capacity).
    lru: Lru,
    used_tokens: u64,
    ttl: Option<SimDuration>,
    capacity_tokens: Option<u64>,
}

impl BlockCache {
    pub fn new(ttl: Option<SimDuration>, capacity_tokens: Option<u64>) -> Self {
        BlockCache { entries: Vec::new(), lru: Lru::new(), used_tokens: 0, ttl, capacity_tokens }
    }

    /// The state of one block at `now`. Expiry is checked before eviction: a block that
    /// would have expired anyway is not a capacity miss.
    pub fn probe(&self, block: u32, now: SimTime) -> State {
        let e = match self.entries.get(block as usize) {
            Some(e) if e.flags & SEEN != 0 => e,
            _ => return State::Absent,
        };
        let evicted = e.flags & EVICTED != 0;
        held_state(evicted, e.ready_at, e.last_use, self.ttl, now)
    }

    /// Look up a request's full blocks: the longest ready prefix hits; every later block is
    /// written, its miss charged to its own state, or to the break's when it is itself ready.
    pub fn lookup(&mut self, blocks: &[u32], block_tokens: u64, now: SimTime) -> Lookup {
        if let Some(&max) = blocks.iter().max() {
            if max as usize >= self.entries.len() {
                self.entries.resize(max as usize + 1, EMPTY);
            }
        }
        let hit = blocks.iter().take_while(|&&b| self.probe(b, now) == State::Ready).count();
        let mut out =
            Lookup { hit_blocks: hit, read_tokens: hit as u64 * block_tokens, ..Lookup::default() };
        let Some(&first_miss) = blocks.get(hit) else { return out };
        let break_cause = cause(self.probe(first_miss, now));
        for &b in &blocks[hit..] {
            let probe = self.probe(b, now);
            let miss_cause = if probe == State::Ready { break_cause } else { cause(probe) };
            out.miss_tokens[miss_cause] += block_tokens;
            out.redundant_writes += u64::from(probe == State::Pending);
        }
        out.write_tokens = (blocks.len() - hit) as u64 * block_tokens;
        out
    }

    /// Record the request: every block is used at `now`, missed blocks are written and
    /// become readable at `ready_at` (a pending or ready entry keeps its earlier time).
    /// Must follow `lookup` of the same blocks at the same time.
    pub fn commit(&mut self, blocks: &[u32], block_tokens: u64, now: SimTime, ready_at: SimTime) {
        if self.capacity_tokens.is_none() {
            // Unbounded: no LRU order to keep.
            for &b in blocks {
                self.use_block(b, block_tokens, now, ready_at);
            }
            return;
        }
        for &b in blocks {
            self.unlink(b);
        }
        let fit = self.make_room(blocks.len(), block_tokens);
        for (j, &b) in blocks.iter().enumerate().rev() {
            self.use_block(b, block_tokens, now, ready_at);
            if j < fit {
                self.link_mru(b);
            } else {
                self.entries[b as usize].flags |= EVICTED;
            }
        }
    }

    /// Mark one block used at `now` (and written, if it was not readable).
    fn use_block(&mut self, b: u32, block_tokens: u64, now: SimTime, ready_at: SimTime) {
        let valid = matches!(self.probe(b, now), State::Ready | State::Pending);
        let e = &mut self.entries[b as usize];
        e.ready_at = if valid { e.ready_at.min(ready_at) } else { ready_at };
        e.last_use = now;
        e.tokens = block_tokens as u32;
        e.flags = SEEN | (e.flags & LINKED);
    }

    /// Evict from the LRU end until `n` blocks fit; returns how many leading blocks fit.
    fn make_room(&mut self, n: usize, block_tokens: u64) -> usize {
        let Some(cap) = self.capacity_tokens else { return n };
        let need = n as u64 * block_tokens;
        while self.used_tokens + need > cap {
            let Some(oldest) = self.lru.oldest() else { break };
            self.unlink(oldest);
            self.entries[oldest as usize].flags |= EVICTED;
        }
        let room = cap.saturating_sub(self.used_tokens);
        n.min((room / block_tokens.max(1)) as usize)
    }

    fn unlink(&mut self, b: u32) {
        let e = &mut self.entries[b as usize];
        if e.flags & LINKED == 0 {
            return;
        }
        e.flags &= !LINKED;
        self.used_tokens -= u64::from(e.tokens);
        self.lru.unlink(&mut self.entries, b);
    }

    fn link_mru(&mut self, b: u32) {
        self.unlink(b); // an id repeated within one request stays linked once
        let e = &mut self.entries[b as usize];
        e.flags |= LINKED;
        self.used_tokens += u64::from(e.tokens);
        self.lru.push_newest(&mut self.entries, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> SimTime {
        SimTime::from_us(us)
    }

    #[test]
    fn interner_is_dense_and_scoped() {
        let mut i = Interner::default();
        assert_eq!((i.index(0, 7), i.index(0, 3), i.index(0, 7)), (0, 1, 0));
        assert_eq!(i.index(1, 7), 2, "another namespace is another block");
        assert_eq!(i.index(0, DIRECT_IDS + 5), 3, "large ids go through the map");
        assert_eq!(i.index(0, DIRECT_IDS + 5), 3);
        assert_eq!(i.distinct(), 4);
    }

    #[test]
    fn probe_follows_the_lifecycle() {
        // Written at 10 with ready_at 15 and TTL 100: pending on [10, 15), ready on [15, 110),
        // expired from 110 (= last use + TTL).
        let mut c = BlockCache::new(Some(SimDuration::from_us(100)), None);
        let look = c.lookup(&[0], 4, t(10));
        assert_eq!(look.miss_tokens, [0, 0, 0, 4]);
        c.commit(&[0], 4, t(10), t(15));
        assert_eq!(c.probe(0, t(14)), State::Pending);
        assert_eq!(c.probe(0, t(15)), State::Ready);
        assert_eq!(c.probe(0, t(109)), State::Ready);
        assert_eq!(c.probe(0, t(110)), State::Expired);
        assert_eq!(c.probe(1, t(0)), State::Absent);
    }

    #[test]
    fn a_ready_block_after_the_break_is_written_and_charged_to_the_break() {
        // [1] alone cached, then request [0, 1]: block 0 (never seen) breaks the prefix, block
        // 1 (ready) is written again and charged to "never seen", as the break is.
        let mut c = BlockCache::new(None, None);
        c.lookup(&[1], 4, t(0));
        c.commit(&[1], 4, t(0), t(0));
        let look = c.lookup(&[0, 1], 4, t(1));
        assert_eq!((look.hit_blocks, look.write_tokens), (0, 8));
        assert_eq!(look.miss_tokens, [0, 0, 0, 8]);
    }

    #[test]
    fn repeated_ids_in_one_request_keep_the_list_sound() {
        // Capacity 12 = 3 blocks. [0, 0, 1] links 0 and 1 once each (8 tokens); [2] fits;
        // [3] evicts the least recent: block 1 (the deepest of the first request).
        let mut c = BlockCache::new(None, Some(12));
        for (now, blocks) in [(t(0), &[0u32, 0, 1][..]), (t(1), &[2]), (t(2), &[3])] {
            c.lookup(blocks, 4, now);
            c.commit(blocks, 4, now, now);
        }
        assert_eq!(c.probe(0, t(3)), State::Ready);
        assert_eq!(c.probe(1, t(3)), State::Evicted);
        assert_eq!(c.probe(2, t(3)), State::Ready);
    }
}
