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
//! simulator's own blocks, whose identities are already uniform 256-bit names
//! (`model::workload::identity`) and need no cryptographic strength: it folds the same
//! fields as words into four 64-bit lanes with SplitMix64's finaliser, about thirty times
//! cheaper per block. For a fixed block the fold is a bijection of the 256-bit state, so two
//! different prefixes followed by the same block never meet; keys are only compared for
//! equality and never shown, so which chain a run uses changes nothing it outputs.

use super::{Block, Digest, Layer};
use crate::rng::mix64;
use sha2::{Digest as _, Sha256};
use std::cell::RefCell;
use std::fmt;

/// Domain separation of the chain's bytes (bump if the folding ever changes).
const CHAIN_TAG: &[u8] = b"prefixsim-prompt-v1\0";

#[derive(Clone, Copy)]
struct Entry {
    layer: Layer,
    block_tokens: u64,
    prefix_tokens: u64,
    prefix: Digest,
}

/// The running state of a prefix chain.
#[derive(Clone)]
enum ChainState {
    /// SHA-256 over the chain's bytes (real content).
    Sha256(Sha256),
    /// Four 64-bit lanes folded word by word (synthetic blocks).
    Mixed([u64; 4]),
}

/// Word tags of the mixed chain's folds (a layer start, a block).
const MIXED_LAYER: u64 = 0x4c41_5945_5200_0000;
const MIXED_BLOCK: u64 = 0x424c_4f43_4b00_0000;

/// Fold four words and a tag into the lanes. Each pass is a bijection of the lanes for fixed
/// input (lane k is a bijective mix of old lane k xored with what precedes it), and after the
/// two passes every lane depends on every input word and every old lane.
#[inline]
fn fold(s: &mut [u64; 4], w: [u64; 4], tag: u64) {
    let a = mix64(s[0] ^ w[0] ^ tag);
    let b = mix64(s[1] ^ w[1] ^ a);
    let c = mix64(s[2] ^ w[2] ^ b);
    let d = mix64(s[3] ^ w[3] ^ c);
    s[0] = mix64(a ^ d);
    s[1] = mix64(b ^ s[0]);
    s[2] = mix64(c ^ s[1]);
    s[3] = mix64(d ^ s[2]);
}

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
                let w = if layer == Layer::Tools { [0; 4] } else { words(params) };
                fold(s, w, MIXED_LAYER | layer as u64);
            }
        }
    }

    fn fold_block(&mut self, block: &Block) {
        match self {
            ChainState::Sha256(state) => block_bytes(block, &mut |b| state.update(b)),
            ChainState::Mixed(s) => {
                // A block's size is part of its key: mixed into one identity word, so two
                // blocks meet only if their uniform identities agree on the other 192 bits.
                let [w0, w1, w2, w3] = words(&block.digest);
                fold(s, [w0, w1 ^ mix64(block.tokens), w2, w3], MIXED_BLOCK);
            }
        }
    }

    fn digest(&self) -> Digest {
        let mut out = Digest::default();
        match self {
            ChainState::Sha256(state) => out.0.copy_from_slice(&state.clone().finalize()),
            ChainState::Mixed(s) => {
                for (chunk, w) in out.0.chunks_exact_mut(8).zip(s) {
                    chunk.copy_from_slice(&w.to_le_bytes());
                }
            }
        }
        out
    }
}

/// The block memory of a prompt done with (`Prompt::take_memory`), reused by
/// `Prompt::fork_into`.
pub struct PromptMemory(Vec<Entry>);

/// A request rendered as blocks with running prefix digests; `clone` + `push` builds a fork.
#[derive(Clone)]
pub struct Prompt {
    state: ChainState,
    /// The layer entered last (`None` before the first block).
    layer: Option<Layer>,
    system_params: Digest,
    message_params: Digest,
    entries: Vec<Entry>,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("blocks", &self.entries.len())
            .field("tokens", &self.tokens())
            .field("last", &self.entries.last().map(|e| e.prefix))
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
type Seed = (Box<str>, Box<str>, [u64; 4]);

thread_local! {
    /// The mixed chain's seeds last computed on this thread: every run builds its prompts
    /// afresh, and hashing the seed bytes with SHA-256 each time cost more than the run's
    /// other setup (a run uses one or two models, a process one scope).
    static SEEDS: RefCell<Vec<Seed>> = const { RefCell::new(Vec::new()) };
}

/// The starting lanes of a mixed chain: the SHA-256 of `seed_bytes(scope, model)`, as words.
fn synthetic_seed(scope: &str, model: &str) -> [u64; 4] {
    SEEDS.with_borrow_mut(|seeds| {
        if let Some((_, _, lanes)) = seeds.iter().find(|(s, m, _)| **s == *scope && **m == *model) {
            return *lanes;
        }
        let mut seed = Vec::with_capacity(64);
        seed_bytes(scope, model, &mut |b| seed.extend_from_slice(b));
        let lanes = words(&Digest::of(&seed));
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
        Self::from_state(ChainState::Sha256(state))
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

    /// Fold the start of every layer from the current one (exclusive) up to `layer`.
    fn enter(&mut self, layer: Layer) {
        if self.layer == Some(layer) {
            return;
        }
        let first = self.layer.map_or(0, |l| l as u8 + 1);
        for l in [Layer::Tools, Layer::System, Layer::Messages] {
            if (l as u8) >= first && l <= layer {
                let params = self.params(l);
                self.state.fold_layer(l, &params);
            }
        }
        self.layer = Some(layer);
    }

    /// Append one block, hashing only it. Blocks must come in layer order (tools, system,
    /// messages); a block of an earlier layer than the last one panics (a caller bug).
    pub fn push(&mut self, block: Block) {
        assert!(
            self.layer.is_none_or(|l| l <= block.layer),
            "block of layer {:?} after layer {:?}",
            block.layer,
            self.layer
        );
        self.enter(block.layer);
        self.state.fold_block(&block);
        let prefix = self.state.digest();
        let prefix_tokens = self.tokens() + block.tokens;
        self.entries.push(Entry {
            layer: block.layer,
            block_tokens: block.tokens,
            prefix_tokens,
            prefix,
        });
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

    /// The running digest over blocks `0..=i` (the cache key at boundary `i`).
    pub fn prefix_digest(&self, i: usize) -> Digest {
        self.entries[i].prefix
    }

    /// Tokens of blocks `0..=i`.
    pub fn prefix_tokens(&self, i: usize) -> u64 {
        self.entries[i].prefix_tokens
    }

    /// Tokens of block `i` alone.
    pub fn block_tokens(&self, i: usize) -> u64 {
        self.entries[i].block_tokens
    }

    /// Layer of block `i`.
    pub fn layer(&self, i: usize) -> Layer {
        self.entries[i].layer
    }

    /// Number of leading blocks the two prompts share (equal prefix digests).
    pub fn common_prefix_len(&self, other: &Prompt) -> usize {
        // Equal digests at i imply equal digests before i, so a binary search is exact.
        let n = self.len().min(other.len());
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.entries[mid].prefix == other.entries[mid].prefix {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The digest at boundary `i` computed from scratch: all the chain's bytes concatenated and
/// hashed once. For tests: it must equal `Prompt::prefix_digest(i)` of the incremental chain.
pub fn reference_prefix_digest(
    scope: &str,
    model: &str,
    system_params: Digest,
    message_params: Digest,
    blocks: &[Block],
    i: usize,
) -> Digest {
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
    Digest::of(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(layer: Layer, tokens: u64, name: &[u8]) -> Block {
        Block { layer, tokens, digest: Digest::of(name) }
    }

    fn chain(blocks: &[Block]) -> Prompt {
        let mut p = Prompt::synthetic("ws", "m", blocks.len());
        blocks.iter().for_each(|&b| p.push(b));
        p
    }

    #[test]
    fn the_synthetic_chain_keys_a_prefix_by_everything_in_it() {
        let base = [
            block(Layer::Tools, 100, b"tools"),
            block(Layer::System, 50, b"system"),
            block(Layer::Messages, 10, b"a"),
            block(Layer::Messages, 20, b"b"),
        ];
        let p = chain(&base);
        assert_eq!(chain(&base).prefix_digest(3), p.prefix_digest(3), "deterministic");
        // Another block at 2 (content, size or layer) keys 2 and everything after it apart.
        let mut other = base;
        other[2].tokens = 11;
        assert_eq!(p.common_prefix_len(&chain(&other)), 2);
        other = base;
        other[2].digest = Digest::of(b"c");
        assert_eq!(p.common_prefix_len(&chain(&other)), 2);
        other = base;
        other[1].layer = Layer::Messages;
        assert_eq!(p.common_prefix_len(&chain(&other)), 1);
        // The same blocks after different prefixes never meet again.
        other = base;
        other[0].tokens = 99;
        let q = chain(&other);
        assert!((0..4).all(|i| p.prefix_digest(i) != q.prefix_digest(i)));
        // Scope, model and the messages parameters are part of every key from their layer.
        let mut scoped = Prompt::synthetic("other", "m", 4);
        base.iter().for_each(|&b| scoped.push(b));
        assert_eq!(p.common_prefix_len(&scoped), 0);
        let mut thinking = Prompt::synthetic("ws", "m", 4);
        thinking.set_message_params(Digest::of(b"thinking"));
        base.iter().for_each(|&b| thinking.push(b));
        assert_eq!(p.common_prefix_len(&thinking), 2);
    }

    #[test]
    fn both_chains_count_the_same_tokens_and_differ_in_keys() {
        let blocks = [block(Layer::Tools, 7, b"t"), block(Layer::Messages, 5, b"m")];
        let fast = chain(&blocks);
        let mut sha = Prompt::new("ws", "m");
        blocks.iter().for_each(|&b| sha.push(b));
        assert_eq!((fast.tokens(), fast.prefix_tokens(0)), (12, 7));
        assert_eq!((sha.tokens(), sha.prefix_tokens(0)), (12, 7));
        assert_eq!(
            sha.prefix_digest(1),
            reference_prefix_digest("ws", "m", Digest::default(), Digest::default(), &blocks, 1)
        );
        assert_ne!(fast.prefix_digest(1), sha.prefix_digest(1));
    }
}
