//! The prefix cache of docs/cache.md, as a pure library: no clock (`now` is a parameter),
//! no I/O, no randomness.
//!
//! - [`Prompt`]: a request as a chain of [`Block`]s with running prefix digests (SHA-256 for
//!   real content, a cheaper mix for synthetic blocks: `prompt.rs`); extended one block at a
//!   time, never re-hashing the shared part.
//! - [`lifecycle::state`]: the one rule from an entry's times to its [`State`] (pending ->
//!   ready -> expired, sliding TTL from the send time of the last request that used it), shared
//!   with the trace replay's block cache (`lifecycle.rs`); [`lru::Lru`]: the intrusive recency
//!   list both caches evict from (`lru.rs`).
//! - [`EntryStore`]: entries keyed by any hashable key (`Key`, `u64`), following that
//!   lifecycle, optional LRU capacity (`store.rs`).
//! - [`Cache`]: an `EntryStore<Key>` plus a [`Policy`] and a model; [`Cache::serve`] looks a
//!   request up, bills it ([`Usage`]) and writes its entries (`serve.rs`).
//! - [`GpuCache`]: a self-hosted replica's KV memory (`vllm`, `sglang`): full blocks readable as
//!   they are computed, LRU among blocks no running request holds (`gpu.rs`).
//! - [`params`]: what the cache is told: the model's prices and limits, the policy, TTLs, the
//!   hosted providers' rules (`config` builds them from experiment files and owns the presets).
//! - The price formula (`prices.rs`). Request bodies become prompts in `replay::body`.
//!
//! It does not know agents, latency, events or experiment files: the caller says when a request
//! is sent and when its written entries become ready.

pub mod gpu;
pub mod lifecycle;
pub mod lru;
pub mod params;
mod prices;
mod prompt;
pub mod router;
mod serve;
mod store;

pub use gpu::GpuCache;
pub use lifecycle::State;
pub use params::{
    CacheKeyMode, CacheParams, GeminiMode, GeminiParams, HostedParams, LongContext, ModelParams,
    OpenAiContract, OpenAiParams, OpenAiRetention, Policy, ThinkingHistory, Ttl,
};
pub use prices::{cost_usd, uncached_cost_usd, Prices};
#[cfg(any(test, feature = "internals"))]
pub use prompt::reference_prefix_key;
pub use prompt::{Prompt, PromptMemory};
pub use router::Route;
pub use serve::{Cache, MAX_BREAKPOINTS};
pub use store::{EntryStore, KeyHasher, WriteOutcome};

use crate::time::SimDuration;
use sha2::Digest as _;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A 256-bit key: the SHA-256 of a real block's canonical bytes or of a real prefix chain;
/// for the simulator's synthetic blocks, their identity words or the mixed chain's lanes
/// (`cache::prompt`). Keys are only compared, never shown.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut out = [0u8; 32];
        out.copy_from_slice(&sha2::Sha256::digest(bytes));
        Digest(out)
    }

    /// Lower-case hex, 64 characters.
    pub fn hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 15) as usize] as char);
        }
        s
    }
}

impl Hash for Digest {
    /// The digest is already uniform: its first 8 bytes are the hash.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.0[..8]);
        state.write_u64(u64::from_le_bytes(first));
    }
}

/// A cache key: 128 bits, as two little-endian words. The key of a real prefix is the first
/// 128 bits of its SHA-256 chain digest; of a synthetic one, the mixed chain's two lanes
/// (`cache::prompt`, which bounds the collisions of both). Keys are only compared, never shown.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Key(pub [u64; 2]);

impl Key {
    /// The first 128 bits of a digest.
    pub fn of_digest(d: &Digest) -> Key {
        let word = |i: usize| u64::from_le_bytes(d.0[8 * i..8 * i + 8].try_into().expect("8"));
        Key([word(0), word(1)])
    }

    /// The key as a digest: its 16 bytes, then 16 zero bytes (equal digests exactly when the
    /// keys are equal), for code that keeps keys as digests.
    pub fn digest(self) -> Digest {
        let mut d = Digest::default();
        d.0[..8].copy_from_slice(&self.0[0].to_le_bytes());
        d.0[8..16].copy_from_slice(&self.0[1].to_le_bytes());
        d
    }
}

impl Hash for Key {
    /// Both chains' keys are already uniform: the low word is the hash.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0[0]);
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:016x}..)", self.0[0])
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({}..)", &self.hex()[..12])
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// The three layers of a prompt, in render order (tools -> system -> messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Tools = 0,
    System = 1,
    Messages = 2,
}

/// One block of a rendered prompt: its layer, its token count and the digest of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub layer: Layer,
    pub tokens: u64,
    pub digest: Digest,
}

impl Block {
    /// A block of canonical bytes with a given token count.
    pub fn from_bytes(layer: Layer, bytes: &[u8], tokens: u64) -> Self {
        Block { layer, tokens, digest: Digest::of(bytes) }
    }

    /// A synthetic block standing for content the simulator does not render: its identity is
    /// `id` (equal ids = equal content). No allocation, and no hashing: the content digest is
    /// the identity itself, `'#' id tokens` zero-padded to 32 bytes (a SHA-256 digest ends in
    /// 15 zero bytes with probability 2^-120, so it never equals a real block's). The prefix
    /// chain still hashes it with SHA-256 like any block. For tests and benchmarks.
    #[cfg(any(test, feature = "internals"))]
    pub fn synthetic(layer: Layer, tokens: u64, id: u64) -> Self {
        let mut digest = Digest::default();
        digest.0[0] = b'#';
        digest.0[1..9].copy_from_slice(&id.to_le_bytes());
        digest.0[9..17].copy_from_slice(&tokens.to_le_bytes());
        Block { layer, tokens, digest }
    }
}

/// Tokens of a text by the seed's estimate: `ceil(chars / 4)` (Unicode scalar values).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// A cache breakpoint: the block (index into the prompt) carrying `cache_control`, and its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakpoint {
    pub index: usize,
    pub ttl: Ttl,
}

/// How long an entry lives after its last use, `None` for entries that never expire.
pub fn ttl_duration(ttl: Ttl) -> Option<SimDuration> {
    match ttl {
        Ttl::FiveMin => Some(SimDuration::from_us(5 * crate::time::US_PER_MIN)),
        Ttl::OneHour => Some(SimDuration::from_us(crate::time::US_PER_H)),
        Ttl::None => None,
        Ttl::Other(us) => Some(SimDuration::from_us(us)),
    }
}

/// What one request was billed, as the API's `usage` reports it, plus the redundant writes.
/// Invariant: `cache_read + cache_write_5m + cache_write_1h + uncached` = the prompt's tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `cache_read_input_tokens`: tokens of the hit prefix.
    pub cache_read: u64,
    /// `ephemeral_5m_input_tokens` (also entries with no TTL: they bill as the standard write).
    pub cache_write_5m: u64,
    /// `ephemeral_1h_input_tokens`.
    pub cache_write_1h: u64,
    /// `input_tokens`: neither read nor written.
    pub uncached: u64,
    /// Entries this request wrote while an equal entry was still pending (docs/cache.md).
    /// A `u64` as the other fields: with a `u32` the struct had 4 bytes of padding, and its
    /// copies read the count and the padding as one 8-byte load of two 4-byte stores (a
    /// store-forwarding stall a request, where `serve` returns it).
    pub redundant_writes: u64,
    /// Token-seconds of explicit cache storage this request bought (a Gemini cache object's
    /// tokens x its TTL); billed by `cost_usd`, 0 under every other policy.
    pub storage_token_s: u64,
}

impl Usage {
    /// `cache_creation_input_tokens`: both write classes.
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    /// All input tokens of the request.
    pub fn total(&self) -> u64 {
        self.cache_read + self.cache_write() + self.uncached
    }

    /// Share of the input read from the cache: `cache_read / total` (0 for an empty prompt).
    /// Under `every-block` this is the seed's `cache_read / (cache_read + uncached)`, because
    /// there every token not read is written.
    pub fn hit_rate(&self) -> f64 {
        match self.total() {
            0 => 0.0,
            t => self.cache_read as f64 / t as f64,
        }
    }
}

/// A request the cache refuses (the API's 400s). Indices are block indices in the prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("{count} cache breakpoints, at most {MAX_BREAKPOINTS} per request: the 5th is on block {index}")]
    TooManyBreakpoints { count: usize, index: usize },
    #[error("breakpoint on block {index}, but the prompt has only {len} blocks")]
    OutOfRange { index: usize, len: usize },
    #[error(
        "breakpoints must be in increasing block order: block {index} comes after block {previous}"
    )]
    NotIncreasing { index: usize, previous: usize },
    #[error("1h breakpoint on block {index} after a 5m breakpoint on block {previous}: 1h breakpoints must come first")]
    TtlOrder { index: usize, previous: usize },
}
