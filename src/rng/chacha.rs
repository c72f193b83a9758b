//! ChaCha with 8 rounds as a random-number generator: the word stream of rand's `ChaCha8Rng`
//! (key from the seed, 64-bit block counter from 0, stream 0), computed two blocks at a time
//! when the last ones are used up instead of four.
//!
//! The block function is the public ChaCha definition (D. J. Bernstein, "ChaCha, a variant
//! of Salsa20", 2008; the quarter round and state layout of RFC 8439 section 2), with 8
//! rounds instead of 20 and the original 64-bit counter (words 12-13) and 64-bit nonce
//! (words 14-15). A simulator stream reads from a handful of words to a few dozen: two
//! 16-word blocks (which AVX2 computes side by side, as fast as one) waste less than four,
//! and the generator is about half the size of one that keeps four blocks (it lives inside
//! every agent). One block at a time was measured too: more instructions on the fan-out.
//!
//! The output is the keystream's 32-bit words in order: `next_u32` takes one word,
//! `next_u64` two (the first the low half, also across a block boundary) and `fill_bytes`
//! whole words, little-endian, the last one cut short (its other bytes are dropped), which
//! is how rand's block generator reads its buffer.

use rand::{SeedableRng, TryRng};
use std::convert::Infallible;

/// "expand 32-byte k", the ChaCha constant (state words 0-3).
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Words in one block.
const WORDS: usize = 16;

/// Words computed at a time: two blocks, which AVX2 computes as fast as SSE2 computes one.
const BUFFER: usize = 2 * WORDS;

/// A ChaCha8 keystream read as random numbers (see the module's docs).
#[derive(Clone)]
pub struct ChaCha8 {
    /// The blocks last computed; words before `index` are used.
    block: [u32; BUFFER],
    /// The next word of `block` to hand out; `BUFFER` when it is used up (or not computed).
    index: usize,
    /// The 256-bit key, as eight little-endian words (state words 4-11).
    key: [u32; 8],
    /// The counter of the next block to compute (state words 12-13).
    counter: u64,
}

impl ChaCha8 {
    /// The generator of `key` (eight little-endian words), before its first block.
    #[inline]
    pub fn from_key(key: [u32; 8]) -> ChaCha8 {
        ChaCha8 { block: [0; BUFFER], index: BUFFER, key, counter: 0 }
    }

    /// Start over as the generator of `key`, in place: the words left in the buffer are never
    /// read (the buffer is marked used up), so they need not be cleared.
    #[inline]
    pub fn rekey(&mut self, key: [u32; 8]) {
        (self.key, self.counter, self.index) = (key, 0, BUFFER);
    }

    /// The next word of the keystream.
    #[inline]
    pub fn word(&mut self) -> u32 {
        if self.index >= BUFFER {
            self.refill();
        }
        let w = self.block[self.index];
        self.index += 1;
        w
    }

    /// The next two words, the first as the low half.
    #[inline]
    pub fn pair(&mut self) -> u64 {
        if self.index + 2 <= BUFFER {
            let (lo, hi) = (self.block[self.index], self.block[self.index + 1]);
            self.index += 2;
            return u64::from(hi) << 32 | u64::from(lo);
        }
        let lo = self.word();
        u64::from(self.word()) << 32 | u64::from(lo)
    }

    /// Compute the next two blocks into `block`. Out of line: most reads find a word ready.
    #[inline(never)]
    fn refill(&mut self) {
        two_blocks(&self.key, self.counter, &mut self.block);
        self.counter = self.counter.wrapping_add(2);
        self.index = 0;
    }
}

/// Block `counter` of `key`'s keystream (stream 0): the state laid out as four rows of four
/// words (constant, key, key, counter and nonce), four double rounds, then the input added
/// back. A double round is a column round (the quarter round on the four columns, one lane
/// of each row per column), then a diagonal round: the same column round after turning rows
/// 1, 2 and 3 left by 1, 2 and 3 lanes (which lines the diagonals up as columns), and the
/// rows turned back.
#[inline]
fn input(key: &[u32; 8], counter: u64) -> [[u32; 4]; 4] {
    [
        SIGMA,
        [key[0], key[1], key[2], key[3]],
        [key[4], key[5], key[6], key[7]],
        [counter as u32, (counter >> 32) as u32, 0, 0],
    ]
}

/// Blocks `counter` and `counter + 1`: with AVX2 (detected once, then a load and a branch)
/// both at once, one in each half of every register, else one after the other with SSE2.
#[inline]
fn two_blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUFFER]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (just detected).
        return unsafe { wide::two_blocks(key, counter, out) };
    }
    out[..WORDS].copy_from_slice(&rows::block(input(key, counter)));
    out[WORDS..].copy_from_slice(&rows::block(input(key, counter.wrapping_add(1))));
}

/// Two blocks at once on AVX2: row `r` of both in one 256-bit register, the first block in
/// the low half. Every step of the rounds works within 128-bit halves, so each half is the
/// SSE2 computation of its own block.
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::BUFFER;
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    #[inline]
    fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_slli_epi32::<L>(x), _mm256_srli_epi32::<R>(x))
    }

    /// A rotation of every word by a whole number of bytes: a byte shuffle.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rotl_bytes(x: __m256i, order: __m256i) -> __m256i {
        _mm256_shuffle_epi8(x, order)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn columns(s: &mut [__m256i; 4], by16: __m256i, by8: __m256i) {
        let [mut a, mut b, mut c, mut d] = *s;
        a = _mm256_add_epi32(a, b);
        d = rotl_bytes(_mm256_xor_si256(d, a), by16);
        c = _mm256_add_epi32(c, d);
        b = rotl::<12, 20>(_mm256_xor_si256(b, c));
        a = _mm256_add_epi32(a, b);
        d = rotl_bytes(_mm256_xor_si256(d, a), by8);
        c = _mm256_add_epi32(c, d);
        b = rotl::<7, 25>(_mm256_xor_si256(b, c));
        *s = [a, b, c, d];
    }

    /// Byte `i` of each word of the result is byte `(i - n) mod 4` of the word: a rotation
    /// left by `n` bytes, as `_mm256_shuffle_epi8` indices (within each 128-bit half).
    const fn byte_rotation(n: usize) -> [u8; 32] {
        let mut order = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            order[i] = ((i & !3) + (i + 4 - n) % 4) as u8 % 16;
            i += 1;
        }
        order
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn two_blocks(key: &[u32; 8], counter: u64, words: &mut [u32; BUFFER]) {
        // SAFETY: unaligned loads of 16 bytes from arrays of 16 (or more) bytes.
        let half = |r: &[u32]| unsafe { _mm_loadu_si128(r.as_ptr().cast()) };
        let both = |r: &[u32]| _mm256_broadcastsi128_si256(half(r));
        let next = counter.wrapping_add(1);
        let start = [
            both(&super::SIGMA),
            both(&key[..4]),
            both(&key[4..]),
            _mm256_set_epi64x(0, next as i64, 0, counter as i64),
        ];
        // SAFETY: unaligned loads of 32 bytes from arrays of 32 bytes.
        let load = |b: &[u8; 32]| unsafe { _mm256_loadu_si256(b.as_ptr().cast()) };
        let (by16, by8) = (load(&byte_rotation(2)), load(&byte_rotation(1)));
        let mut s = start;
        for _ in 0..4 {
            columns(&mut s, by16, by8);
            s[1] = _mm256_shuffle_epi32::<0b00_11_10_01>(s[1]);
            s[2] = _mm256_shuffle_epi32::<0b01_00_11_10>(s[2]);
            s[3] = _mm256_shuffle_epi32::<0b10_01_00_11>(s[3]);
            columns(&mut s, by16, by8);
            s[1] = _mm256_shuffle_epi32::<0b10_01_00_11>(s[1]);
            s[2] = _mm256_shuffle_epi32::<0b01_00_11_10>(s[2]);
            s[3] = _mm256_shuffle_epi32::<0b00_11_10_01>(s[3]);
        }
        let [a, b, c, d] = [0, 1, 2, 3].map(|r| _mm256_add_epi32(s[r], start[r]));
        // Rows 0-1 and 2-3 of the first block (low halves), then of the second (high halves).
        let out = [
            _mm256_permute2x128_si256::<0x20>(a, b),
            _mm256_permute2x128_si256::<0x20>(c, d),
            _mm256_permute2x128_si256::<0x31>(a, b),
            _mm256_permute2x128_si256::<0x31>(c, d),
        ];
        for (i, v) in out.into_iter().enumerate() {
            // SAFETY: words[8 * i..8 * i + 8] is 32 bytes inside `words`.
            unsafe { _mm256_storeu_si256(words[8 * i..].as_mut_ptr().cast(), v) };
        }
    }
}

/// The rounds on x86-64's SSE2, which every x86-64 processor has: one row per register.
#[cfg(target_arch = "x86_64")]
mod rows {
    use super::WORDS;
    use std::arch::x86_64::*;

    #[target_feature(enable = "sse2")]
    #[inline]
    fn rotl<const L: i32, const R: i32>(x: __m128i) -> __m128i {
        _mm_or_si128(_mm_slli_epi32::<L>(x), _mm_srli_epi32::<R>(x))
    }

    /// The quarter round on the four columns at once.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn columns(a: &mut __m128i, b: &mut __m128i, c: &mut __m128i, d: &mut __m128i) {
        *a = _mm_add_epi32(*a, *b);
        let x = _mm_xor_si128(*d, *a);
        // A rotation by 16 swaps the halves of each word: two shuffles of 16-bit lanes.
        *d = _mm_shufflehi_epi16::<0b10_11_00_01>(_mm_shufflelo_epi16::<0b10_11_00_01>(x));
        *c = _mm_add_epi32(*c, *d);
        *b = rotl::<12, 20>(_mm_xor_si128(*b, *c));
        *a = _mm_add_epi32(*a, *b);
        *d = rotl::<8, 24>(_mm_xor_si128(*d, *a));
        *c = _mm_add_epi32(*c, *d);
        *b = rotl::<7, 25>(_mm_xor_si128(*b, *c));
    }

    #[inline]
    pub(super) fn block(input: [[u32; 4]; 4]) -> [u32; WORDS] {
        // SAFETY: SSE2 is part of x86-64 itself: every x86-64 processor has it.
        unsafe { sse2_block(input) }
    }

    #[target_feature(enable = "sse2")]
    fn sse2_block(input: [[u32; 4]; 4]) -> [u32; WORDS] {
        // SAFETY: unaligned loads of 16 bytes from arrays of 16 bytes.
        let start = input.each_ref().map(|r| unsafe { _mm_loadu_si128(r.as_ptr().cast()) });
        let [mut a, mut b, mut c, mut d] = start;
        for _ in 0..4 {
            columns(&mut a, &mut b, &mut c, &mut d);
            // Lane i of a row takes lane i + n: turned left by n.
            b = _mm_shuffle_epi32::<0b00_11_10_01>(b);
            c = _mm_shuffle_epi32::<0b01_00_11_10>(c);
            d = _mm_shuffle_epi32::<0b10_01_00_11>(d);
            columns(&mut a, &mut b, &mut c, &mut d);
            b = _mm_shuffle_epi32::<0b10_01_00_11>(b);
            c = _mm_shuffle_epi32::<0b01_00_11_10>(c);
            d = _mm_shuffle_epi32::<0b00_11_10_01>(d);
        }
        let mut out = [0u32; WORDS];
        for (i, (row, s)) in [a, b, c, d].into_iter().zip(start).enumerate() {
            // SAFETY: out[4 * i..4 * i + 4] is 16 bytes inside `out`.
            unsafe { _mm_storeu_si128(out[4 * i..].as_mut_ptr().cast(), _mm_add_epi32(row, s)) };
        }
        out
    }
}

/// The rounds on four-word arrays, for other processors (and the test of the SSE2 ones).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod portable {
    use super::WORDS;

    type Row = [u32; 4];

    #[inline(always)]
    fn add(a: Row, b: Row) -> Row {
        [0, 1, 2, 3].map(|i| a[i].wrapping_add(b[i]))
    }

    #[inline(always)]
    fn xor_rotl(a: Row, b: Row, n: u32) -> Row {
        [0, 1, 2, 3].map(|i| (a[i] ^ b[i]).rotate_left(n))
    }

    /// Lane `i` of the result is lane `i + n` (mod 4) of `r`.
    #[inline(always)]
    fn turn(r: Row, n: usize) -> Row {
        [0, 1, 2, 3].map(|i| r[(i + n) % 4])
    }

    /// The quarter round on the four columns at once (lane `i` of each row is column `i`).
    #[inline(always)]
    fn columns([mut a, mut b, mut c, mut d]: [Row; 4]) -> [Row; 4] {
        a = add(a, b);
        d = xor_rotl(d, a, 16);
        c = add(c, d);
        b = xor_rotl(b, c, 12);
        a = add(a, b);
        d = xor_rotl(d, a, 8);
        c = add(c, d);
        b = xor_rotl(b, c, 7);
        [a, b, c, d]
    }

    pub(super) fn block(input: [Row; 4]) -> [u32; WORDS] {
        let mut s = input;
        for _ in 0..4 {
            let [a, b, c, d] = columns(s);
            let [a, b, c, d] = columns([a, turn(b, 1), turn(c, 2), turn(d, 3)]);
            s = [a, turn(b, 3), turn(c, 2), turn(d, 1)];
        }
        let mut out = [0; WORDS];
        for (i, (row, start)) in s.iter().zip(&input).enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&add(*row, *start));
        }
        out
    }
}

#[cfg(not(target_arch = "x86_64"))]
use portable as rows;

impl TryRng for ChaCha8 {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.word())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.pair())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(4) {
            let bytes = self.word().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

impl SeedableRng for ChaCha8 {
    type Seed = [u8; 32];

    /// The key's bytes, as rand's `ChaCha8Rng::from_seed` reads them.
    fn from_seed(seed: [u8; 32]) -> ChaCha8 {
        let mut key = [0; 8];
        for (k, bytes) in key.iter_mut().zip(seed.chunks_exact(4)) {
            *k = u32::from_le_bytes(bytes.try_into().expect("four bytes"));
        }
        ChaCha8::from_key(key)
    }
}

impl std::fmt::Debug for ChaCha8 {
    /// The position only: the key is the stream's identity, not something to print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.counter.saturating_sub(1) * WORDS as u64 + self.index as u64;
        let words = if self.counter == 0 { 0 } else { used };
        f.debug_struct("ChaCha8").field("words_read", &words).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::ChaCha8Rng as Reference;
    use rand::{Rng, RngExt};

    /// This generator and the reference (rand's `ChaCha8Rng`), from one seed.
    fn pair(seed: u64) -> (ChaCha8, Reference) {
        (ChaCha8::seed_from_u64(seed), Reference::seed_from_u64(seed))
    }

    fn seeds() -> impl Iterator<Item = u64> {
        [0, 1, u64::MAX, 1 << 63].into_iter().chain((0..3_000).map(crate::rng::mix64))
    }

    #[test]
    fn the_first_words_are_rands_for_thousands_of_seeds() {
        for seed in seeds() {
            let (mut a, mut b) = pair(seed);
            for i in 0..40 {
                assert_eq!(a.next_u32(), b.next_u32(), "seed {seed}, word {i}");
            }
        }
    }

    #[test]
    fn long_runs_are_rands_past_many_blocks() {
        for seed in [0, 42, u64::MAX] {
            let (mut a, mut b) = pair(seed);
            for i in 0..20_000 {
                assert_eq!(a.next_u64(), b.next_u64(), "seed {seed}, draw {i}");
            }
        }
    }

    /// Every way the simulator reads a stream, interleaved at every offset within a block
    /// (a `u64` that straddles two blocks, bytes that end inside a word).
    #[test]
    fn mixed_reads_are_rands() {
        for seed in seeds().take(300) {
            let (mut a, mut b) = pair(seed);
            let mut pick = ChaCha8::seed_from_u64(seed ^ 0x5eed);
            for i in 0..400 {
                let step = pick.next_u32() % 7;
                let what = format!("seed {seed}, read {i}, kind {step}");
                match step {
                    0 => assert_eq!(a.next_u32(), b.next_u32(), "{what}"),
                    1 => assert_eq!(a.next_u64(), b.next_u64(), "{what}"),
                    2 => {
                        let n = (pick.next_u32() % 23) as usize;
                        let (mut x, mut y) = (vec![0u8; n], vec![0u8; n]);
                        a.fill_bytes(&mut x);
                        b.fill_bytes(&mut y);
                        assert_eq!(x, y, "{what}");
                    }
                    3 => {
                        let (x, y): (f64, f64) = (a.random(), b.random());
                        assert_eq!(x.to_bits(), y.to_bits(), "{what}");
                    }
                    4 => assert_eq!(a.random_range(0..17usize), b.random_range(0..17usize)),
                    5 => {
                        let (x, y) = (a.random_range(1.5..9.0f64), b.random_range(1.5..9.0f64));
                        assert_eq!(x.to_bits(), y.to_bits(), "{what}");
                    }
                    _ => {
                        let normal = rand_distr::StandardNormal;
                        let (x, y): (f64, f64) = (a.sample(normal), b.sample(normal));
                        assert_eq!(x.to_bits(), y.to_bits(), "{what}");
                    }
                }
            }
        }
    }

    /// The ways of computing blocks agree (those this machine has): the portable rounds and
    /// SSE2's on any state, AVX2's two blocks and SSE2's on any key and counter.
    #[test]
    fn the_portable_rounds_are_the_sse2_and_avx2_ones() {
        let mut words = ChaCha8::seed_from_u64(9);
        for _ in 0..1000 {
            let any = [(); 4].map(|_| [(); 4].map(|_| words.next_u32()));
            assert_eq!(portable::block(any), rows::block(any), "{any:?}");
            // Through `two_blocks` (AVX2 when the processor has it), counters of every size.
            let key = [(); 8].map(|_| words.next_u32());
            let counter = words.next_u64() >> (words.next_u32() % 64);
            let mut both = [0; BUFFER];
            two_blocks(&key, counter, &mut both);
            let next = counter.wrapping_add(1);
            assert_eq!(both[..WORDS], rows::block(input(&key, counter)), "{key:?} {counter}");
            assert_eq!(both[WORDS..], rows::block(input(&key, next)), "{key:?} {next}");
        }
        let mut both = [0; BUFFER];
        two_blocks(&[7; 8], u64::MAX, &mut both);
        assert_eq!(both[WORDS..], rows::block(input(&[7; 8], 0)), "the counter wraps");
    }

    #[test]
    fn from_seed_reads_the_key_as_rand_does() {
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0xa5;
        }
        let (mut a, mut b) = (ChaCha8::from_seed(seed), Reference::from_seed(seed));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
