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

    /// The first numbers of two streams, as the simulator's results were computed with them:
    /// a generator whose stream changes (rand's, or how a seed becomes its key) fails here.
    #[test]
    fn the_streams_are_pinned() {
        let mut a = stream(42, &[0, 1]);
        let first: [u64; 3] = std::array::from_fn(|_| a.random());
        assert_eq!(first, [0x88cd_8e18_118b_354f, 0x51d5_7f41_7e93_6227, 0x85c7_c2ca_6812_6cbc]);
        // Past the first blocks (80 words), and a float.
        let mut b = stream(7, &[1, 2]);
        (0..40).for_each(|_| _ = b.random::<u64>());
        let later: [u64; 3] = std::array::from_fn(|_| b.random());
        assert_eq!(later, [0x2006_f2ab_ae15_567a, 0xb351_43a4_ec88_6079, 0xe880_9871_ca9e_fcc4]);
        assert_eq!(b.random::<f64>().to_bits(), 4_607_005_568_526_344_535);
        assert_eq!(stream(7, &[1, 2]), ChaCha8Rng::seed_from_u64(derive_seed(7, &[1, 2])));
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
