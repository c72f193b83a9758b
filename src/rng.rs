//! The one random-number generator of the simulator, and the seed tree that gives every
//! replication, agent and draw site its own stream.
//!
//! `ChaCha8Rng` is portable and its stream is stable across platforms and versions, unlike
//! `StdRng`/`SmallRng`. Seeds are derived by a fixed mixer (SplitMix64 finaliser) from a path
//! such as `[experiment_seed, replication, agent, site]`, so adding an agent or a draw site
//! leaves every other stream unchanged, and every strategy or sweep point of one replication
//! sees the same numbers (common random numbers).

mod chacha;

/// The simulator's generator: rand's `ChaCha8Rng` stream, one block at a time (`chacha`).
pub use chacha::ChaCha8 as ChaCha8Rng;
pub use rand::RngExt;

/// SplitMix64's finaliser: a bijective, well-mixing function on `u64`.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derive a child seed from a parent seed and a path of indices.
pub fn derive_seed(root: u64, path: &[u64]) -> u64 {
    Node::new(root, path).0
}

/// A generator for the stream at `path` below `root`.
pub fn stream(root: u64, path: &[u64]) -> ChaCha8Rng {
    Node::new(root, &[]).stream(path)
}

/// A node of the seed tree: where `derive_seed` stands after a path's first indices, so that
/// the many streams below one replication start from it instead of re-mixing the root and
/// the replication for each (`Node::new(r, &[a]).stream(&[b, c])` is `stream(r, &[a, b, c])`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node(u64);

impl Node {
    pub fn new(root: u64, path: &[u64]) -> Node {
        Node(path.iter().fold(mix64(root), descend))
    }

    /// Child `i` of this node: `node.child(i).stream(rest)` is `node.stream(&[i, rest..])`, so
    /// the streams of one requester share the step to it.
    pub fn child(self, i: u64) -> Node {
        Node(descend(self.0, &i))
    }

    /// The generator for the stream at `rest` below this node.
    pub fn stream(self, rest: &[u64]) -> ChaCha8Rng {
        ChaCha8Rng::from_key(self.key(rest))
    }

    /// Make `rng` the generator for the stream at `rest` below this node, in place (as
    /// `*rng = self.stream(rest)`, without building a generator to copy over it).
    pub fn reseed(self, rest: &[u64], rng: &mut ChaCha8Rng) {
        rng.rekey(self.key(rest));
    }

    fn key(self, rest: &[u64]) -> [u32; 8] {
        chacha_key(rest.iter().fold(self.0, descend))
    }
}

/// PCG32's multiplier and increment, as rand_core's `seed_from_u64` uses them.
const PCG_MUL: u64 = 0x5851_F42D_4C95_7F2D;
const PCG_INC: u64 = 0xA176_54E4_6FBE_17F3;

/// `(a, c)` such that PCG32's state after `k + 1` steps from `s` is `a * s + c` (wrapping:
/// arithmetic mod 2^64 is a ring, so composing the steps is exact).
const PCG_STEPS: [(u64, u64); 8] = {
    let (mut steps, mut a, mut c, mut k) = ([(0, 0); 8], 1u64, 0u64, 0);
    while k < 8 {
        a = a.wrapping_mul(PCG_MUL);
        c = c.wrapping_mul(PCG_MUL).wrapping_add(PCG_INC);
        steps[k] = (a, c);
        k += 1;
    }
    steps
};

/// The key `ChaCha8Rng::seed_from_u64(seed)` uses, as eight words: eight PCG32 outputs (XSH
/// RR), which it writes little-endian and reads back as the key's words. Each state comes
/// from the seed by its own multiply (`PCG_STEPS`), not from the state before it: eight
/// independent multiplies instead of a chain of eight, which AVX2 (detected once, then a load
/// and a branch) computes four at a time (`wide`). A run derives two keys per agent.
fn chacha_key(seed: u64) -> [u32; 8] {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (just detected).
        return unsafe { wide::chacha_key(seed) };
    }
    chacha_key_scalar(seed)
}

/// `chacha_key` one output at a time.
fn chacha_key_scalar(seed: u64) -> [u32; 8] {
    PCG_STEPS.map(|(a, c)| {
        let state = seed.wrapping_mul(a).wrapping_add(c);
        let xorshifted = (((state >> 18) ^ state) >> 27) as u32;
        xorshifted.rotate_right((state >> 59) as u32)
    })
}

/// `chacha_key` on AVX2: four PCG32 states in the 64-bit lanes of a register, each output in
/// the low half of its lane. AVX2 multiplies 32-bit halves only: `seed * a` modulo 2^64 is
/// `lo(seed) lo(a) + ((lo(seed) hi(a) + hi(seed) lo(a)) << 32)`, the same wrapping product.
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::PCG_STEPS;
    use std::arch::x86_64::*;

    /// Outputs `k..k + 4` of `chacha_key(seed)`, each in the low half of its lane; `seed` in
    /// every lane, `seed_hi` its high half.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn four(seed: __m256i, seed_hi: __m256i, k: usize) -> __m256i {
        let [a, c] = [0, 1].map(|j| {
            let word = |i: usize| [PCG_STEPS[k + i].0, PCG_STEPS[k + i].1][j] as i64;
            _mm256_setr_epi64x(word(0), word(1), word(2), word(3))
        });
        let cross = _mm256_add_epi64(
            _mm256_mul_epu32(seed, _mm256_srli_epi64::<32>(a)),
            _mm256_mul_epu32(seed_hi, a),
        );
        let product = _mm256_add_epi64(_mm256_mul_epu32(seed, a), _mm256_slli_epi64::<32>(cross));
        let state = _mm256_add_epi64(product, c);
        let low = _mm256_set1_epi64x(u32::MAX as i64);
        let xorshifted =
            _mm256_srli_epi64::<27>(_mm256_xor_si256(_mm256_srli_epi64::<18>(state), state));
        let x = _mm256_and_si256(xorshifted, low);
        // A right rotation of the low 32 bits by 0..=31: what moves past bit 0 comes back at
        // bit 32 - r, and bits from 32 up are dropped.
        let r = _mm256_srli_epi64::<59>(state);
        let back = _mm256_sllv_epi64(x, _mm256_sub_epi64(_mm256_set1_epi64x(32), r));
        _mm256_and_si256(_mm256_or_si256(_mm256_srlv_epi64(x, r), back), low)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn chacha_key(seed: u64) -> [u32; 8] {
        let s = _mm256_set1_epi64x(seed as i64);
        let s_hi = _mm256_srli_epi64::<32>(s);
        // The low half of each lane, in lane order: four words from each register.
        let evens = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        let first = _mm256_permutevar8x32_epi32(four(s, s_hi, 0), evens);
        let second = _mm256_permutevar8x32_epi32(four(s, s_hi, 4), evens);
        let words = _mm256_blend_epi32::<0b1111_0000>(first, second);
        let mut key = [0u32; 8];
        // SAFETY: an unaligned store of 32 bytes into an array of 32 bytes.
        unsafe { _mm256_storeu_si256(key.as_mut_ptr().cast(), words) };
        key
    }
}

/// One step down the seed tree, to child `i`.
fn descend(acc: u64, &i: &u64) -> u64 {
    mix64(acc ^ mix64(i.wrapping_add(0x5851_F42D_4C95_7F2D)))
}

/// Named draw sites, so that a stream's purpose is visible where it is created.
pub mod site {
    pub const AGENT: u64 = 1;
    pub const LATENCY: u64 = 2;
    pub const RATE_LIMIT: u64 = 3;
    pub const WORKLOAD: u64 = 4;
    pub const REPLAY: u64 = 5;
    /// Isolated cache misses (`cache.miss_probability`): one draw per request attempt.
    pub const MISS: u64 = 6;
    /// 529 `overloaded_error` (`[overload]`): one draw per attempt, one per backoff.
    pub const OVERLOAD: u64 = 7;
    /// Gemini implicit caching's hit draw (`gemini.implicit_hit_probability`): one draw per
    /// request attempt, only under `cache.policy = "gemini"` in implicit mode.
    pub const IMPLICIT_HIT: u64 = 8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = stream(42, &[0, 1]).random();
        let b: u64 = stream(42, &[0, 1]).random();
        let c: u64 = stream(42, &[0, 2]).random();
        let d: u64 = stream(42, &[1, 1]).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert_ne!(derive_seed(1, &[2, 3]), derive_seed(1, &[3, 2]));
    }

    use rand::rngs::ChaCha8Rng as Reference;
    use rand::SeedableRng;

    #[test]
    fn the_direct_key_is_seed_from_u64s() {
        let mut seeds = vec![0, 1, 2, 42, u64::MAX, 1 << 63, PCG_MUL, PCG_INC.wrapping_neg()];
        seeds.extend((0..10_000).map(|i| mix64(i) ^ (i << 40)));
        for seed in seeds {
            let key: Vec<u8> = chacha_key(seed).iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(key, Reference::seed_from_u64(seed).get_seed(), "{seed}");
            assert_eq!(chacha_key_scalar(seed), chacha_key(seed), "{seed}");
        }
        let (mut a, mut b) =
            (stream(7, &[1, 2]), Reference::seed_from_u64(derive_seed(7, &[1, 2])));
        for _ in 0..1000 {
            assert_eq!(a.random::<u64>(), b.random::<u64>());
        }
    }

    #[test]
    fn a_node_continues_the_path_it_stands_on() {
        for (root, path) in
            [(42, vec![0, 1, 2]), (7, vec![9]), (0, vec![]), (u64::MAX, vec![3, 5, 8, 13])]
        {
            for split in 0..=path.len() {
                let (head, rest) = path.split_at(split);
                let (mut a, mut b) = (Node::new(root, head).stream(rest), stream(root, &path));
                for _ in 0..100 {
                    assert_eq!(a.random::<u64>(), b.random::<u64>(), "{root} {path:?} at {split}");
                }
                let mut reseeded = stream(u64::MAX, &[]);
                reseeded.random::<u64>();
                Node::new(root, head).reseed(rest, &mut reseeded);
                let mut b = stream(root, &path);
                for _ in 0..100 {
                    assert_eq!(reseeded.random::<u64>(), b.random::<u64>(), "{path:?} at {split}");
                }
                if let Some((&i, below)) = rest.split_first() {
                    let node = Node::new(root, head);
                    let (mut a, mut b) = (node.child(i).stream(below), node.stream(rest));
                    assert_eq!(a.random::<u64>(), b.random::<u64>(), "{path:?} at {split}");
                }
            }
        }
        // The path as first written: a fold of the root's mix over the indices.
        let by_hand = mix64(
            mix64(mix64(42) ^ mix64(5u64.wrapping_add(0x5851_F42D_4C95_7F2D)))
                ^ mix64(6u64.wrapping_add(0x5851_F42D_4C95_7F2D)),
        );
        assert_eq!(derive_seed(42, &[5, 6]), by_hand);
    }
}
