//! The entry store's index: keys to slot numbers, an open-addressing table probed linearly
//! from a word of the key, emptied in O(1) between runs by a generation count.
//!
//! A cache key is already uniform (`Key`: a mixed chain's lane or a SHA-256 digest's first
//! word), so its low word places it with no hasher. The table is at most half full, so a
//! probe reads one or two buckets of 24 bytes; it doubles only when a run outgrows every
//! earlier run (a run's first writes), and `clear` keeps it: bucket `i` is empty unless its
//! generation is the table's, so a new run starts with the memory and none of the entries.

use super::Key;

/// Keys an [`super::EntryStore`] accepts: two words, compared whole, placed by `place`.
pub trait StoreKey: Copy + Eq {
    /// The key as two words (and back): the table holds them as scalars, which its writes
    /// store straight from registers (an array went through the stack and was read back as
    /// one 16-byte load of two 8-byte stores, a store-forwarding stall per new key).
    fn words(self) -> (u64, u64);
    fn from_words(words: (u64, u64)) -> Self;
    /// A word whose low bits are uniform over the keys a store holds.
    fn place(words: (u64, u64)) -> u64;
}

impl StoreKey for Key {
    #[inline(always)]
    fn words(self) -> (u64, u64) {
        (self.0[0], self.0[1])
    }

    fn from_words((low, high): (u64, u64)) -> Self {
        Key([low, high])
    }

    /// Both chains' keys are uniform: the low word as it is.
    #[inline(always)]
    fn place((low, _): (u64, u64)) -> u64 {
        low
    }
}

impl StoreKey for u64 {
    #[inline(always)]
    fn words(self) -> (u64, u64) {
        (self, 0)
    }

    fn from_words((id, _): (u64, u64)) -> Self {
        id
    }

    /// Trace block ids are counters, not hashes: a folded 128-bit multiply spreads them.
    #[inline(always)]
    fn place((id, _): (u64, u64)) -> u64 {
        let m = u128::from(id) * 0x9E37_79B9_7F4A_7C15_u128;
        (m as u64) ^ ((m >> 64) as u64)
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    low: u64,
    high: u64,
    slot: u32,
    /// The table's generation when written; any other value: empty.
    generation: u32,
}

/// The index; see the module doc.
#[derive(Debug, Clone)]
pub struct Index<K> {
    /// A power of two of buckets, `FIRST_BUCKETS` at least.
    buckets: Vec<Bucket>,
    generation: u32,
    len: usize,
    key: std::marker::PhantomData<K>,
}

/// Buckets of a table's first allocation, made with the table: a lookup then never meets a
/// table without buckets (no check of its length first).
const FIRST_BUCKETS: usize = 64;

/// A bucket of no generation a table has: empty.
const EMPTY: Bucket = Bucket { low: 0, high: 0, slot: 0, generation: 0 };

impl<K: StoreKey> Default for Index<K> {
    fn default() -> Self {
        let buckets = vec![EMPTY; FIRST_BUCKETS];
        Index { buckets, generation: 1, len: 0, key: std::marker::PhantomData }
    }
}

impl<K: StoreKey> Index<K> {
    /// Forget every key, keeping the memory: O(1) but once in 2^32 clears.
    pub fn clear(&mut self) {
        self.len = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.buckets.iter_mut().for_each(|b| b.generation = 0);
            self.generation = 1;
        }
    }

    /// The bucket holding `key`, or the empty one where it would go (`Err`).
    #[inline(always)]
    fn find(&self, (low, high): (u64, u64)) -> Result<usize, usize> {
        let mask = self.buckets.len() - 1;
        let mut i = K::place((low, high)) as usize & mask;
        loop {
            let b = &self.buckets[i];
            if b.generation != self.generation {
                return Err(i);
            }
            if (b.low, b.high) == (low, high) {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// The slot of `key`, if it was inserted since the last `clear`.
    #[inline(always)]
    pub fn get(&self, key: K) -> Option<u32> {
        self.find(key.words()).ok().map(|i| self.buckets[i].slot)
    }

    /// The slot of `key` if it is there, else `None` after inserting it with slot `slot`: one
    /// probe either way.
    #[inline(always)]
    pub fn get_or_insert(&mut self, key: K, slot: u32) -> Option<u32> {
        if 2 * (self.len + 1) > self.buckets.len() {
            self.grow();
        }
        let (low, high) = key.words();
        match self.find((low, high)) {
            Ok(i) => Some(self.buckets[i].slot),
            Err(i) => {
                self.buckets[i] = Bucket { low, high, slot, generation: self.generation };
                self.len += 1;
                None
            }
        }
    }

    /// Double the table and place the keys again. Out of line:
    /// a store stops growing once it has held its largest run.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let size = 2 * self.buckets.len();
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; size]);
        let live = self.generation;
        self.generation = 1;
        for b in old.into_iter().filter(|b| b.generation == live) {
            let Err(i) = self.find((b.low, b.high)) else { unreachable!("keys are distinct") };
            self.buckets[i] = Bucket { generation: 1, ..b };
        }
    }

    /// Every key and its slot, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, u32)> + '_ {
        let live = self.buckets.iter().filter(|b| b.generation == self.generation);
        live.map(|b| (K::from_words((b.low, b.high)), b.slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_across_growth_and_forgotten_by_clear() {
        let mut index: Index<u64> = Index::default();
        assert_eq!(index.get(7), None);
        for k in 0..1000u64 {
            assert_eq!(index.get_or_insert(k * 3, k as u32), None);
        }
        assert!((0..1000u64).all(|k| index.get(k * 3) == Some(k as u32)));
        assert_eq!(index.get_or_insert(30, 99), Some(10), "an existing key keeps its slot");
        assert_eq!(index.get(31), None);
        let size = index.buckets.len();
        index.clear();
        assert_eq!((index.get(30), index.iter().count()), (None, 0));
        assert_eq!(index.get_or_insert(30, 5), None);
        assert_eq!((index.get(30), index.buckets.len()), (Some(5), size), "memory kept");
    }

    #[test]
    fn a_wrapped_generation_empties_every_bucket() {
        let mut index: Index<u64> = Index::default();
        assert_eq!(index.get_or_insert(1, 1), None);
        index.generation = u32::MAX;
        assert_eq!(index.get_or_insert(2, 2), None);
        index.clear();
        // Generation 1 again: the key written under generation 1 must not come back.
        assert_eq!(index.get_or_insert(3, 3), None);
        assert_eq!((index.generation, index.get(1), index.get(2)), (1, None, None));
    }
}
