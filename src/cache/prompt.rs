//! A prompt as a digest chain: per block, the running SHA-256 over everything up to and
//! including it, and the cumulative token count.
//!
//! The chain is seeded with the scope and the model (another model or workspace never shares a
//! key). Layer parameters are folded in where their layer starts: system parameters (web search,
//! citations, speed) before the first system block, `tool_choice`/thinking before the first
//! message block; so changing them invalidates that layer and the later ones only. The tool
//! definitions are blocks of the first layer, so changing them invalidates everything.
//!
//! `push` hashes only the new block into a cloned SHA-256 state: extending a prompt by one block
//! costs the same at any length. It knows nothing of entries or time.

use super::{Block, Digest, Layer};
use sha2::{Digest as _, Sha256};
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

/// A request rendered as blocks with running prefix digests; `clone` + `push` builds a fork.
#[derive(Clone)]
pub struct Prompt {
    state: Sha256,
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
    /// An empty prompt for `model` in cache `scope` (workspace, organization...).
    pub fn new(scope: &str, model: &str) -> Self {
        let mut state = Sha256::new();
        seed_bytes(scope, model, &mut |b| state.update(b));
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
                let state = &mut self.state;
                layer_bytes(l, &params, &mut |b| state.update(b));
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
        let state = &mut self.state;
        block_bytes(&block, &mut |b| state.update(b));
        let mut prefix = Digest::default();
        prefix.0.copy_from_slice(&self.state.clone().finalize());
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
