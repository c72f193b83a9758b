//! A prompt as a digest chain: per block, the running digest over everything up to and
//! including it, and the cumulative token count.
//!
//! The chain is seeded with the scope and the model (another model or workspace never shares a
//! key). Layer parameters are folded in where their layer starts: system parameters (web search,
//! citations, speed) before the first system block, `tool_choice`/thinking before the first
//! message block; so changing them invalidates that layer and the later ones only. The tool
//! definitions are blocks of the first layer, so changing them invalidates everything.
//!
//! `push` hashes only the new block into a cloned chain state: extending a prompt by one block
//! costs the same at any length. It knows nothing of entries or time.
//!
//! Two chains. `Prompt::new` is SHA-256 over the bytes: the chain of real request content
//! (replayed bodies), where a key must be a content hash. `Prompt::synthetic` is for the
//! simulator's own blocks, whose identities are names, not content
//! (`model::workload::identity`), and need no cryptographic strength: the mixed chain below.
//! Keys are only compared for equality and never shown, so which chain a run uses changes
//! nothing it outputs.
//!
//! A key ([`Key`]) is 128 bits. On the SHA-256 chain it is the first 128 bits of the running
//! digest (the chain itself stays SHA-256 over every byte): two of a run's `K` prefixes share
//! a key with probability below `K^2 2^-129` (the birthday bound on a uniform 128-bit value).
//!
//! # The mixed chain
//!
//! The state is two 64-bit lanes `s`, started from the first 128 bits of the SHA-256 of the
//! seed bytes (scope and model). A block `B` is folded as `s <- P(s ^ E(B))`, and the key
//! after it is the state. `P = M . X . M`: `M` puts both lanes through SplitMix64's finaliser
//! (`rng::mix64`, a bijection of `u64`), the two independently, so `P` is two multiply chains
//! deep, not four as a lane-after-lane fold; `X` is the pseudo-Hadamard transform
//! `x <- A x (mod 2^64)`, `A = [[1, 1], [1, 2]]`: `det A = 1`, so `X` is a bijection of the
//! 128-bit state, and each output lane is a sum of both inputs. A layer start with parameters
//! `p` (four words) is two folds, `(p0 ^ LAYER_TAG ^ layer, p1)` then `(p2, p3)`.
//!
//! `E` packs the block's identity words `w0..w3` and its size `n` (tokens) into two lanes:
//! `E(B) = (w0 ^ n, w1 ^ rotl(w2, 32) ^ w3)`, for blocks of `n < 2^48` tokens. A block of
//! `2^48` tokens or more takes a second fold: `(w0 ^ WIDE_TAG, w1 ^ rotl(w2, 32) ^ w3)`,
//! then `(n, 0)` (never in practice: 2^48 tokens are 10^8 times any context window sold).
//!
//! `E` is injective on the simulator's identities, exactly. Their words are
//! `(t, a, b, 0)` (`workload::identity`): `t` the FNV-1a hash of a tag from the fixed set of
//! names the workload uses, `a` and `b` numbers. Two facts, checked by tests:
//! (i) the tags' hashes differ in their top 16 bits (19 tags; `workload` tests), and
//! (ii) per tag, either `b = 0` always (the task, exchanges, the fixed blocks, the tool list
//! without a tool, whose `a` is a 64-bit hash), or `a < 2^32` and `b < 2^32` always (a turn's
//! blocks: `a` the agent, a `u32` index, `b` the request, a `u32`).
//! Then let `E(B) = E(B')`, both under `2^48` tokens. Lane 0: `t ^ t' = n ^ n' < 2^48`, so
//! `t` and `t'` agree in their top 16 bits, so `t = t'` by (i), then `n = n'`. Lane 1 with
//! `w3 = 0`: `v(a, b) = a ^ rotl(b, 32)` equals `v(a', b')`; under one tag, by (ii), either
//! `b = b' = 0` and `a = a'`, or `a, a', b, b' < 2^32`, where `v = a + 2^32 b` is the two
//! halves of a word, so `a = a'` and `b = b'`. So `B = B'`. (Four 64-bit words cannot go into
//! two injectively in general: this uses what the words hold.)
//!
//! What keys must never do, and why they do not (exactly, no probability):
//! - Two different prefixes followed by the same block never meet: for a fixed block the fold
//!   is `P` after a fixed xor (twice for a wide block), a composition of bijections of the
//!   state, so equal keys after the block mean equal states before it. By induction, two
//!   chains that diverge never meet again while they receive the same blocks.
//! - One prefix followed by two different blocks (of one layer, under `2^48` tokens) never
//!   meets either: `P` is a bijection, so equal keys need `E(B) = E(B')`, and `E` is injective
//!   on the simulator's identities (above). For uniform identities (content digests),
//!   `E(B) = E(B')` for `B != B'` needs 128 equal bits: probability 2^-128.
//!
//! Otherwise (different states and different blocks, blocks of different layers, a wide
//! block), two keys meet only if the states `s`, `s'` before the two last folds differ by
//! `D`, the xor of the lanes those folds take in (fixed), where `s` and `s'` are outputs of
//! `P` (or the SHA-256 seeds) on different inputs (equal inputs: the same question one fold
//! earlier). Model `mix64` as a random permutation of `u64` (a heuristic: it is not one, but
//! it passes avalanche tests; the inputs here are names, never chosen against it). The
//! first `M` gives the lanes where the inputs differ uniform, independent, nonzero additive
//! differences `u`. `X` outputs the differences `(u0 + u1, u0 + 2 u1)`: with only lane 0
//! differing both are `u0 != 0`; with only lane 1,
//! the second is 0 iff `u1 = 2^63` (probability `1/(2^64 - 1)`); with both, the first is 0 for
//! one value of `u1` and the second for at most two, so both lanes differ except with
//! probability at most `3/(2^64 - 1) < 2^-62`. The second `M` then makes each differing lane's
//! xor difference uniform over the `2^64 - 1` nonzero values, so
//! `Pr[s ^ s' = D] <= (2^64 - 1)^-2 + 2^-62 (2^64 - 1)^-1`, about `1.25 x 2^-126`: n = 125
//! bits for any one pair, and a run of `K` keys (`K^2 / 2` pairs) has a collision with
//! probability below `K^2 2^-126`. (The four-lane chain this replaced had `K^2 2^-251`; for a
//! run of `K = 10^9` keys the bound is now `2^-66`.)
//!
//! The cost per block is four `mix64`, two by two in parallel, and a few adds and xors.

use super::{Block, Digest, Key, Layer};
use crate::rng::mix64;
use sha2::{Digest as _, Sha256};
use std::cell::RefCell;
use std::fmt;

/// Domain separation of the chain's bytes (bump if the folding ever changes).
const CHAIN_TAG: &[u8] = b"prefixsim-prompt-v1\0";

/// One block: its key and the tokens up to it (24 bytes; a block's own tokens and its layer
/// are found from its neighbour and the prompt's layer starts, so forks copy less). The key
/// as two scalar words, not an array: `push` writes the lanes it folded straight from
/// registers, where an array went through the stack and was read back as one 16-byte load
/// of two 8-byte stores (a store-forwarding stall per block, a quarter of a turn's time).
#[derive(Clone, Copy)]
struct Entry {
    key_low: u64,
    key_high: u64,
    prefix_tokens: u64,
}

impl Entry {
    #[inline(always)]
    fn key(&self) -> Key {
        Key([self.key_low, self.key_high])
    }
}

/// The running state of a prefix chain.
#[derive(Clone)]
enum ChainState {
    /// SHA-256 over the chain's bytes (real content). Boxed: its 112 bytes made every prompt,
    /// and every agent's move and fork, copy them for the synthetic chains' 16.
    Sha256(Box<Sha256>),
    /// Two 64-bit lanes folded block by block (synthetic blocks).
    Mixed([u64; 2]),
}

/// Tag of a layer start in the mixed chain, xored into lane 0 with the layer (module docs).
const LAYER_TAG: u64 = 0x4c41_5945_5200_0000;
/// Tag of a wide block's first fold (module docs).
const WIDE_TAG: u64 = 0x5749_4445_0000_0000;
/// Blocks of this many tokens or more take a second fold (module docs).
const WIDE_TOKENS: u64 = 1 << 48;

/// The lanes after folding the input words `e` into `s`: `P(s ^ e)`, `P = M . X . M`, `M`
/// both lanes through `mix64`, `X` the pseudo-Hadamard transform `(x, y) -> (x + y, x + 2y)`
/// (determinant 1: a bijection). Module docs.
#[inline(always)]
fn fold(s: [u64; 2], e: [u64; 2]) -> [u64; 2] {
    let (x, y) = (mix64(s[0] ^ e[0]), mix64(s[1] ^ e[1]));
    let (x, y) = (x.wrapping_add(y), x.wrapping_add(y.wrapping_mul(2)));
    [mix64(x), mix64(y)]
}

/// Lane 1 of `E`: the identity's words after the first, `w1 ^ rotl(w2, 32) ^ w3` (module
/// docs: injective on the simulator's `(a, b)`).
#[inline(always)]
fn identity_lane([_, w1, w2, w3]: [u64; 4]) -> u64 {
    w1 ^ w2.rotate_left(32) ^ w3
}

/// The state after block `b`: one fold of `E(b)` (module docs), two for a wide block.
#[inline(always)]
fn fold_block(s: [u64; 2], b: &Block) -> [u64; 2] {
    let w = words(&b.digest);
    if b.tokens >= WIDE_TOKENS {
        return fold_wide(s, w, b.tokens);
    }
    fold(s, [w[0] ^ b.tokens, identity_lane(w)])
}

/// `fold_block` of a block of `WIDE_TOKENS` or more: its identity, then its size.
#[cold]
#[inline(never)]
fn fold_wide(s: [u64; 2], w: [u64; 4], tokens: u64) -> [u64; 2] {
    fold(fold(s, [w[0] ^ WIDE_TAG, identity_lane(w)]), [tokens, 0])
}

/// The four little-endian words of a digest.
fn words(d: &Digest) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (w, chunk) in w.iter_mut().zip(d.0.chunks_exact(8)) {
        *w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    }
    w
}

impl ChainState {
    fn fold_layer(&mut self, layer: Layer, params: &Digest) {
        match self {
            ChainState::Sha256(state) => layer_bytes(layer, params, &mut |b| state.update(b)),
            ChainState::Mixed(s) => {
                let [p0, p1, p2, p3] = if layer == Layer::Tools { [0; 4] } else { words(params) };
                *s = fold(fold(*s, [p0 ^ LAYER_TAG ^ layer as u64, p1]), [p2, p3]);
            }
        }
    }
}

/// Fold one block's bytes into a SHA-256 chain; the key after it (the digest's first 128
/// bits).
fn sha256_block(state: &mut Sha256, block: &Block) -> Key {
    block_bytes(block, &mut |b| state.update(b));
    let mut out = Digest::default();
    out.0.copy_from_slice(&state.clone().finalize());
    Key::of_digest(&out)
}

/// The block memory of a prompt done with (`Prompt::take_memory`), reused by
/// `Prompt::fork_into`.
pub struct PromptMemory(Vec<Entry>);

/// A request rendered as blocks with running prefix digests; `clone` + `push` builds a fork.
pub struct Prompt {
    state: ChainState,
    /// The layer entered last (`None` before the first block).
    layer: Option<Layer>,
    /// Index of the first system block and of the first message block (`usize::MAX` while
    /// the layer has not started): layers come in order, so these place every block's layer.
    starts: [usize; 2],
    system_params: Digest,
    message_params: Digest,
    entries: Vec<Entry>,
}

impl Clone for Prompt {
    fn clone(&self) -> Self {
        Prompt { entries: self.entries.clone(), ..self.clone_head() }
    }

    /// Into this prompt's block memory: a chain that strips thinking resets its prompt from
    /// the bare history at every user block, without allocating.
    fn clone_from(&mut self, source: &Self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.clone_from(&source.entries);
        *self = Prompt { entries, ..source.clone_head() };
    }
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("blocks", &self.entries.len())
            .field("tokens", &self.tokens())
            .field("last", &self.entries.last().map(Entry::key))
            .finish()
    }
}

/// The bytes that seed a chain.
fn seed_bytes(scope: &str, model: &str, out: &mut impl FnMut(&[u8])) {
    out(CHAIN_TAG);
    out(&(scope.len() as u64).to_le_bytes());
    out(scope.as_bytes());
    out(&(model.len() as u64).to_le_bytes());
    out(model.as_bytes());
}

/// How many (scope, model) seeds of the mixed chain a thread remembers.
const SEED_MEMO: usize = 4;

/// A remembered seed: scope, model, and the lanes they start.
type Seed = (Box<str>, Box<str>, [u64; 2]);

thread_local! {
    /// The mixed chain's seeds last computed on this thread: every run builds its prompts
    /// afresh, and hashing the seed bytes with SHA-256 each time cost more than the run's
    /// other setup (a run uses one or two models, a process one scope).
    static SEEDS: RefCell<Vec<Seed>> = const { RefCell::new(Vec::new()) };
}

/// The starting lanes of a mixed chain: the first 128 bits of the SHA-256 of
/// `seed_bytes(scope, model)`.
fn synthetic_seed(scope: &str, model: &str) -> [u64; 2] {
    SEEDS.with_borrow_mut(|seeds| {
        if let Some((_, _, lanes)) = seeds.iter().find(|(s, m, _)| **s == *scope && **m == *model) {
            return *lanes;
        }
        let mut seed = Vec::with_capacity(64);
        seed_bytes(scope, model, &mut |b| seed.extend_from_slice(b));
        let lanes = Key::of_digest(&Digest::of(&seed)).0;
        if seeds.len() == SEED_MEMO {
            seeds.remove(0);
        }
        seeds.push((scope.into(), model.into(), lanes));
        lanes
    })
}

/// The bytes folded when a layer starts.
fn layer_bytes(layer: Layer, params: &Digest, out: &mut impl FnMut(&[u8])) {
    out(&[b'L', layer as u8]);
    if layer != Layer::Tools {
        out(&params.0);
    }
}

/// The bytes folded for one block.
fn block_bytes(block: &Block, out: &mut impl FnMut(&[u8])) {
    out(b"B");
    out(&block.digest.0);
    out(&block.tokens.to_le_bytes());
}

impl Prompt {
    /// An empty prompt for `model` in cache `scope` (workspace, organization...), chained
    /// by SHA-256: for real content.
    pub fn new(scope: &str, model: &str) -> Self {
        let mut state = Sha256::new();
        seed_bytes(scope, model, &mut |b| state.update(b));
        Self::from_state(ChainState::Sha256(Box::new(state)))
    }

    /// An empty prompt of synthetic blocks (uniform identities, not content) with room for
    /// `blocks` blocks, on the cheaper mixed chain (module docs). Its lanes start from the
    /// SHA-256 of the same seed bytes as `new`'s, so scope and model still separate keys.
    pub fn synthetic(scope: &str, model: &str, blocks: usize) -> Self {
        let mut p = Self::from_state(ChainState::Mixed(synthetic_seed(scope, model)));
        p.entries.reserve(blocks);
        p
    }

    fn from_state(state: ChainState) -> Self {
        Prompt {
            state,
            layer: None,
            starts: [usize::MAX; 2],
            system_params: Digest::default(),
            message_params: Digest::default(),
            entries: Vec::new(),
        }
    }

    /// With room for `blocks` blocks (avoids reallocating while a conversation grows).
    pub fn with_capacity(scope: &str, model: &str, blocks: usize) -> Self {
        let mut p = Self::new(scope, model);
        p.entries.reserve(blocks);
        p
    }

    /// Room for `additional` more blocks (a clone has none to spare: reserve before `push` on a
    /// hot path).
    pub fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
    }

    /// A copy with room for `additional` more blocks, in one allocation (`clone` then
    /// `reserve` would copy the blocks twice): how a fork starts its own conversation.
    pub fn fork(&self, additional: usize) -> Prompt {
        let mut entries = Vec::with_capacity(self.entries.len() + additional);
        entries.extend_from_slice(&self.entries);
        Prompt { entries, ..self.clone_head() }
    }

    /// `fork` into `memory` (a finished prompt's, `take_memory`; none: `fork`): a run's
    /// agents start from the memory of the last run's, not from fresh allocations.
    pub fn fork_into(&self, additional: usize, memory: Option<PromptMemory>) -> Prompt {
        let Some(PromptMemory(mut entries)) = memory else { return self.fork(additional) };
        entries.clear();
        entries.reserve(self.entries.len() + additional);
        entries.extend_from_slice(&self.entries);
        Prompt { entries, ..self.clone_head() }
    }

    /// The memory of the blocks, for a later `fork_into`; this prompt is left without blocks
    /// (a prompt done with).
    pub fn take_memory(&mut self) -> PromptMemory {
        PromptMemory(std::mem::take(&mut self.entries))
    }

    /// Everything but the blocks.
    fn clone_head(&self) -> Prompt {
        Prompt {
            state: self.state.clone(),
            layer: self.layer,
            starts: self.starts,
            system_params: self.system_params,
            message_params: self.message_params,
            entries: Vec::new(),
        }
    }

    /// Set the digest of the parameters that invalidate the messages layer (`tool_choice`,
    /// thinking). Panics if a message block was already pushed (a caller bug).
    pub fn set_message_params(&mut self, params: Digest) {
        assert!(self.layer < Some(Layer::Messages), "message params set after a message block");
        self.message_params = params;
    }

    /// Set the digest of the parameters that invalidate the system layer and the messages (web
    /// search, citations, speed). Panics if a system or message block was already pushed.
    pub fn set_system_params(&mut self, params: Digest) {
        assert!(self.layer < Some(Layer::System), "system params set after a system block");
        self.system_params = params;
    }

    fn params(&self, layer: Layer) -> Digest {
        match layer {
            Layer::Tools => Digest::default(),
            Layer::System => self.system_params,
            Layer::Messages => self.message_params,
        }
    }

    /// Fold the start of every layer from the current one (exclusive) up to `layer`, and
    /// record where they start. Out of line: a prompt enters each layer once, and its pushes
    /// stay in the messages layer.
    #[inline(never)]
    fn enter(&mut self, layer: Layer) {
        assert!(
            self.layer.is_none_or(|l| l <= layer),
            "block of layer {layer:?} after layer {:?}",
            self.layer
        );
        let first = self.layer.map_or(0, |l| l as u8 + 1);
        for l in [Layer::Tools, Layer::System, Layer::Messages] {
            if (l as u8) >= first && l <= layer {
                let params = self.params(l);
                self.state.fold_layer(l, &params);
                if l != Layer::Tools {
                    self.starts[l as usize - 1] = self.entries.len();
                }
            }
        }
        self.layer = Some(layer);
    }

    /// Append one block, hashing only it. Blocks must come in layer order (tools, system,
    /// messages); a block of an earlier layer than the last one panics (a caller bug).
    /// Inlined: an agent's turn pushes its blocks from one call site, and through a call
    /// each block went to the stack and back.
    #[inline(always)]
    pub fn push(&mut self, block: Block) {
        if self.layer != Some(block.layer) {
            self.enter(block.layer);
        }
        let ChainState::Mixed(lanes) = self.state else { return self.push_sha256(&block) };
        let [low, high] = fold_block(lanes, &block);
        // The entry first, from the lanes in registers, then the state: the other way round
        // the entry's copy was read back from the state as 16-byte loads of 8-byte stores
        // (a store-forwarding stall per block).
        self.append(low, high, block.tokens);
        self.state = ChainState::Mixed([low, high]);
    }

    /// `push` on a SHA-256 chain (out of line: replayed content only).
    #[inline(never)]
    fn push_sha256(&mut self, block: &Block) {
        let ChainState::Sha256(state) = &mut self.state else { unreachable!("a SHA-256 chain") };
        let Key([low, high]) = sha256_block(state, block);
        self.append(low, high, block.tokens);
    }

    #[inline(always)]
    fn append(&mut self, key_low: u64, key_high: u64, block_tokens: u64) {
        let prefix_tokens = self.tokens() + block_tokens;
        self.entries.push(Entry { key_low, key_high, prefix_tokens });
    }

    /// Whether the chain is synthetic (mixed lanes), not SHA-256 over real content.
    pub fn is_synthetic(&self) -> bool {
        matches!(self.state, ChainState::Mixed(_))
    }

    /// Grow this prompt to the first `len` blocks of `source` by copying their entries, not
    /// hashing the blocks again: the prompt pushing them would have made. For a prompt that
    /// is `source` cut short (a fork of `source`, or of a prompt `source` grew from, forked
    /// with the same parameters), where `source` is a synthetic chain in its messages layer,
    /// which it entered before block `len`: every block copied is a message. Then each copied
    /// entry is the key the push would have computed, and the push would have left the lanes
    /// at the last one (`push`), the layer at messages and the layer starts at `source`'s.
    /// Panics if `source` is SHA-256 or not in messages by then, or `len` is out of range;
    /// checks in debug builds that the two prompts agree on their common blocks.
    pub fn extend_from(&mut self, source: &Prompt, len: usize) {
        let from = self.entries.len();
        if len == from {
            return;
        }
        assert!(from < len && len <= source.len(), "extend {from} blocks to {len} of {source:?}");
        assert!(
            source.is_synthetic()
                && source.layer == Some(Layer::Messages)
                && source.starts[1] < len,
            "extend_from copies only messages of a synthetic chain"
        );
        debug_assert!(from == 0 || self.entries[from - 1].key() == source.entries[from - 1].key());
        debug_assert!(self.message_params == source.message_params);
        self.entries.extend_from_slice(&source.entries[from..len]);
        let last = source.entries[len - 1];
        self.state = ChainState::Mixed([last.key_low, last.key_high]);
        (self.layer, self.starts) = (Some(Layer::Messages), source.starts);
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All tokens of the prompt.
    pub fn tokens(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.prefix_tokens)
    }

    /// The cache key at boundary `i`: of the chain over blocks `0..=i`.
    #[inline(always)]
    pub fn prefix_key(&self, i: usize) -> Key {
        self.entries[i].key()
    }

    /// `prefix_key(i)` as a digest ([`Key::digest`]), for code that keeps keys as digests.
    pub fn prefix_digest(&self, i: usize) -> Digest {
        self.entries[i].key().digest()
    }

    /// Tokens of blocks `0..=i`.
    pub fn prefix_tokens(&self, i: usize) -> u64 {
        self.entries[i].prefix_tokens
    }

    /// Tokens of block `i` alone.
    pub fn block_tokens(&self, i: usize) -> u64 {
        self.prefix_tokens(i) - i.checked_sub(1).map_or(0, |j| self.prefix_tokens(j))
    }

    /// Layer of block `i`.
    pub fn layer(&self, i: usize) -> Layer {
        assert!(i < self.len(), "block {i} of a prompt of {} blocks", self.len());
        match self.starts {
            [_, messages] if i >= messages => Layer::Messages,
            [system, _] if i >= system => Layer::System,
            _ => Layer::Tools,
        }
    }
}

/// The key at boundary `i` of a SHA-256 chain computed from scratch: all the chain's bytes
/// concatenated and hashed once. For tests: it must equal `Prompt::prefix_key(i)` of the
/// incremental chain (`Prompt::new`).
#[cfg(any(test, feature = "internals"))]
pub fn reference_prefix_key(
    scope: &str,
    model: &str,
    system_params: Digest,
    message_params: Digest,
    blocks: &[Block],
    i: usize,
) -> Key {
    let mut bytes = Vec::new();
    seed_bytes(scope, model, &mut |b| bytes.extend_from_slice(b));
    let mut entered: Option<Layer> = None;
    for block in &blocks[..=i] {
        for l in [Layer::Tools, Layer::System, Layer::Messages] {
            if entered < Some(l) && l <= block.layer {
                let params = match l {
                    Layer::Tools => Digest::default(),
                    Layer::System => system_params,
                    Layer::Messages => message_params,
                };
                layer_bytes(l, &params, &mut |b| bytes.extend_from_slice(b));
            }
        }
        entered = Some(block.layer);
        block_bytes(block, &mut |b| bytes.extend_from_slice(b));
    }
    Key::of_digest(&Digest::of(&bytes))
}

#[cfg(test)]
mod tests;
