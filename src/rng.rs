//! The one random-number generator of the simulator, and the seed tree that gives every
//! replication, agent and draw site its own stream.
//!
//! `ChaCha8Rng` is portable and its stream is stable across platforms and versions, unlike
//! `StdRng`/`SmallRng`. Seeds are derived by a fixed mixer (SplitMix64 finaliser) from a path
//! such as `[experiment_seed, replication, agent, site]`, so adding an agent or a draw site
//! leaves every other stream unchanged, and every strategy or sweep point of one replication
//! sees the same numbers (common random numbers).

/// The simulator's generator: rand's `ChaCha8Rng`.
pub use rand::rngs::ChaCha8Rng;
pub use rand::{RngExt, SeedableRng};

/// SplitMix64's finaliser: a bijective, well-mixing function on `u64`.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A generator for the stream at `path` below `root`.
pub fn stream(root: u64, path: &[u64]) -> ChaCha8Rng {
    Node::new(root, &[]).stream(path)
}

/// A node of the seed tree: where the seed derived from a root and a path stands after a path's first indices, so that
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
        ChaCha8Rng::seed_from_u64(rest.iter().fold(self.0, descend))
    }

    /// Make `rng` the generator for the stream at `rest` below this node, in place (the
    /// agents' generators are rekeyed every run).
    pub fn reseed(self, rest: &[u64], rng: &mut ChaCha8Rng) {
        *rng = self.stream(rest);
    }
}

/// One step down the seed tree, to child `i`.
fn descend(acc: u64, &i: &u64) -> u64 {
    mix64(acc ^ mix64(i.wrapping_add(0x5851_F42D_4C95_7F2D)))
}

/// Named draw sites, so that a stream's purpose is visible where it is created.
pub mod site {
    pub const LATENCY: u64 = 2;
    pub const RATE_LIMIT: u64 = 3;
    pub const WORKLOAD: u64 = 4;
    /// Isolated cache misses (`cache.miss_probability`): one draw per request attempt.
    pub const MISS: u64 = 6;
    /// 529 `overloaded_error` (`[overload]`): one draw per attempt, one per backoff.
    pub const OVERLOAD: u64 = 7;
    /// Gemini implicit caching's hit draw (`gemini.implicit_hit_probability`): one draw per
    /// request attempt, only under `cache.policy = "gemini"` in implicit mode.
    pub const IMPLICIT_HIT: u64 = 8;
    /// OpenAI's overflow draws (`openai.overflow_probability`,
    /// `openai.overflow_warm_probability`): two draws per request attempt, only under
    /// `cache.policy = "openai"`.
    pub const OVERFLOW: u64 = 9;
}
