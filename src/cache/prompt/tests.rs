//! The prefix chains: their keys agree with the reference digests, and keep apart the
//! prefixes that differ (the collision bounds of the module docs, checked on trees of blocks).

use super::*;

fn block(layer: Layer, tokens: u64, name: &[u8]) -> Block {
    Block { layer, tokens, digest: Digest::of(name) }
}

/// Number of leading blocks the two prompts share (equal prefix keys).
fn shared(a: &Prompt, b: &Prompt) -> usize {
    (0..a.len().min(b.len())).take_while(|&i| a.prefix_key(i) == b.prefix_key(i)).count()
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
    assert_eq!(chain(&base).prefix_key(3), p.prefix_key(3), "deterministic");
    // Another block at 2 (content, size or layer) keys 2 and everything after it apart.
    let mut other = base;
    other[2].tokens = 11;
    assert_eq!(shared(&p, &chain(&other)), 2);
    other = base;
    other[2].digest = Digest::of(b"c");
    assert_eq!(shared(&p, &chain(&other)), 2);
    other = base;
    other[1].layer = Layer::Messages;
    assert_eq!(shared(&p, &chain(&other)), 1);
    // The same blocks after different prefixes never meet again.
    other = base;
    other[0].tokens = 99;
    let q = chain(&other);
    assert!((0..4).all(|i| p.prefix_key(i) != q.prefix_key(i)));
    // Scope, model and the messages parameters are part of every key from their layer.
    let mut scoped = Prompt::synthetic("other", "m", 4);
    base.iter().for_each(|&b| scoped.push(b));
    assert_eq!(shared(&p, &scoped), 0);
    let mut thinking = Prompt::synthetic("ws", "m", 4);
    thinking.set_message_params(Digest::of(b"thinking"));
    base.iter().for_each(|&b| thinking.push(b));
    assert_eq!(shared(&p, &thinking), 2);
}

#[test]
fn a_block_knows_its_layer_and_its_own_tokens_from_its_neighbours() {
    let p = chain(&[
        block(Layer::Tools, 100, b"tools"),
        block(Layer::Tools, 20, b"more tools"),
        block(Layer::System, 50, b"system"),
        block(Layer::Messages, 10, b"a"),
        block(Layer::Messages, 7, b"b"),
    ]);
    let layers: Vec<Layer> = (0..p.len()).map(|i| p.layer(i)).collect();
    use Layer::{Messages, System, Tools};
    assert_eq!(layers, [Tools, Tools, System, Messages, Messages]);
    assert_eq!((0..p.len()).map(|i| p.block_tokens(i)).collect::<Vec<_>>(), [100, 20, 50, 10, 7]);
    // A layer skipped, or a prompt opening on a later layer.
    let p = chain(&[block(Layer::Tools, 1, b"t"), block(Layer::Messages, 2, b"m")]);
    assert_eq!((p.layer(0), p.layer(1), p.block_tokens(1)), (Tools, Messages, 2));
    let p = chain(&[block(Layer::System, 3, b"s"), block(Layer::Messages, 4, b"m")]);
    assert_eq!((p.layer(0), p.layer(1), p.block_tokens(0)), (System, Messages, 3));
}

/// Grown by copying, a prompt is what pushing the same blocks makes: same keys, tokens and
/// layers, and a push after it continues the same chain. Also when the messages layer
/// begins inside the copied blocks.
#[test]
fn extend_from_is_the_pushes_it_copies() {
    let head = [block(Layer::Tools, 100, b"t"), block(Layer::System, 50, b"s")];
    let turns: Vec<Block> =
        (0..6u8).map(|i| block(Layer::Messages, 10 + u64::from(i), &[i])).collect();
    let mut source = chain(&head);
    let start = source.clone();
    turns.iter().for_each(|&b| source.push(b));
    for (from, to) in [(0, 2), (0, 6), (2, 3), (3, 6), (6, 6)] {
        let (mut pushed, mut copied) = (start.clone(), start.clone());
        turns[..from].iter().for_each(|&b| pushed.push(b));
        copied.extend_from(&source, head.len() + from);
        turns[from..to].iter().for_each(|&b| pushed.push(b));
        copied.extend_from(&source, head.len() + to);
        let extra = block(Layer::Messages, 7, b"after");
        pushed.push(extra);
        copied.push(extra);
        assert_eq!(pushed.len(), copied.len(), "{from}..{to}");
        for i in 0..pushed.len() {
            let (p, c) = (&pushed, &copied);
            assert!(p.prefix_key(i) == c.prefix_key(i), "key {i} of {from}..{to}");
            assert_eq!((p.prefix_tokens(i), p.layer(i)), (c.prefix_tokens(i), c.layer(i)));
        }
    }
}

#[test]
#[should_panic(expected = "extend_from copies only messages of a synthetic chain")]
fn extend_from_refuses_to_copy_a_layer_start_it_cannot_place() {
    let source = chain(&[block(Layer::Tools, 1, b"t"), block(Layer::System, 1, b"s")]);
    chain(&[block(Layer::Tools, 1, b"t")]).extend_from(&source, 2);
}

#[test]
#[should_panic(expected = "block of layer System after layer Some(Messages)")]
fn a_block_of_an_earlier_layer_is_a_caller_bug() {
    chain(&[block(Layer::Messages, 1, b"m"), block(Layer::System, 1, b"s")]);
}

#[test]
fn clone_from_is_a_clone_into_the_memory_it_has() {
    let long = chain(&[block(Layer::System, 2, b"s"), block(Layer::Messages, 3, b"m")]);
    let short = chain(&[block(Layer::Tools, 1, b"t")]);
    let mut copy = long.clone();
    copy.clone_from(&short);
    assert_eq!((copy.len(), copy.tokens(), copy.layer(0)), (1, 1, Layer::Tools));
    // It continues as the source would: same keys, same layers.
    let (mut a, mut b) = (short.clone(), copy);
    a.push(block(Layer::Messages, 5, b"x"));
    b.push(block(Layer::Messages, 5, b"x"));
    assert_eq!(shared(&a, &b), 2);
    assert_eq!((b.layer(1), b.block_tokens(1)), (Layer::Messages, 5));
}

/// The inverse of `x <- x ^ (x >> k)`.
fn unshift(z: u64, k: u32) -> u64 {
    (0..64 / k).fold(z, |x, _| z ^ (x >> k))
}

/// The inverse of an odd multiplier modulo 2^64 (Newton's iteration).
fn inverse(c: u64) -> u64 {
    (0..5).fold(c, |x, _| x.wrapping_mul(2u64.wrapping_sub(c.wrapping_mul(x))))
}

fn unmix64(z: u64) -> u64 {
    let z = unshift(z, 31).wrapping_mul(inverse(0x94D0_49BB_1331_11EB));
    let z = unshift(z, 27).wrapping_mul(inverse(0xBF58_476D_1CE4_E5B9));
    unshift(z, 30).wrapping_sub(0x9E37_79B9_7F4A_7C15)
}

fn unpht(p: u64, q: u64) -> (u64, u64) {
    let y = q.wrapping_sub(p);
    (p.wrapping_sub(y), y)
}

/// `fold` run backwards: the state before, from the state after and the words folded.
fn unfold(s: [u64; 2], e: [u64; 2]) -> [u64; 2] {
    let (a, b) = unpht(unmix64(s[0]), unmix64(s[1]));
    [unmix64(a) ^ e[0], unmix64(b) ^ e[1]]
}

/// Pseudo-random words for the tests (not the simulator's streams).
fn words_at(i: u64) -> [u64; 2] {
    [1, 2].map(|k| mix64(i.wrapping_mul(2).wrapping_add(k)))
}

#[test]
fn for_a_fixed_block_the_fold_is_a_bijection_of_the_state() {
    // Every state comes back from its image: the fold loses nothing.
    for i in 0..10_000 {
        let (state, e) = (words_at(2 * i), words_at(2 * i + 1));
        let s = fold(state, e);
        assert_ne!(s, state);
        assert_eq!(unfold(s, e), state, "state {i}");
    }
    // Exhaustively on small sets of states (nearby states, the hardest to keep apart):
    // all 2^16 values of lane 1's low bits, then 2^8 x 2^8 of lanes 0 and 1, one block.
    let (e, base) = (words_at(7), words_at(9));
    let distinct_images = |flip: fn(&mut [u64; 2], u64)| {
        let mut out: Vec<[u64; 2]> = (0..1u64 << 16)
            .map(|v| {
                let mut s = base;
                flip(&mut s, v);
                fold(s, e)
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out.len()
    };
    assert_eq!(distinct_images(|s, v| s[1] ^= v), 1 << 16);
    assert_eq!(distinct_images(|s, v| (s[0], s[1]) = (s[0] ^ v & 0xff, s[1] ^ v >> 8)), 1 << 16);
}

/// `model::workload::identity`, which the synthetic chain is proved against: a tag's FNV-1a
/// hash, `a`, `b`, a zero word.
fn identity(tag: &str, a: u64, b: u64) -> Digest {
    let h = tag
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, c| (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3));
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(&h.to_le_bytes());
    out[8..16].copy_from_slice(&a.to_le_bytes());
    out[16..24].copy_from_slice(&b.to_le_bytes());
    Digest(out)
}

#[test]
fn one_prefix_keys_blocks_apart_where_the_lanes_alone_would_not() {
    let tagged = |tag: &str, a: u64, b: u64, tokens: u64| Block {
        layer: Layer::Messages,
        tokens,
        digest: identity(tag, a, b),
    };
    let key = |b: Block| chain(&[b]).prefix_key(0);
    // A turn's `(agent, request)` are the two halves of lane 1; another tag's `a` may
    // fill the lane (equal lane 1), and the tag in lane 0 keeps them apart.
    let turn = tagged("agent/result", 3, 2, 10);
    assert_ne!(key(turn), key(tagged("agent/result", 2, 3, 10)));
    assert_ne!(key(turn), key(tagged("parent/tools-without", 3 + (2 << 32), 0, 10)));
    // Lane 0 is the tag xor the size: the size that would cancel the tags' difference is
    // at least 2^48 tokens (the tags differ in their top 16 bits), a wide block folded
    // twice.
    let (t, u) = ("agent/text", "agent/tool_use");
    let [wt, wu] = [t, u].map(|tag| words(&identity(tag, 0, 0))[0]);
    let cancel = wt ^ wu ^ 10;
    assert!(cancel >= WIDE_TOKENS);
    assert_ne!(key(tagged(t, 3, 2, 10)), key(tagged(u, 3, 2, cancel)));
    // A wide block's size is part of its key too.
    let wide = tagged(t, 3, 2, WIDE_TOKENS);
    assert_ne!(key(wide), key(tagged(t, 3, 2, WIDE_TOKENS + 1)));
    assert_eq!(chain(&[wide, turn]).tokens(), WIDE_TOKENS + 10);
}

/// Every prefix of a tree of synthetic blocks `depth` deep where each prefix is followed
/// by `tags` x `sizes` children: blocks that differ in one word of their identity or in
/// their size by one token, after prefixes that differ as little.
fn tree_keys(depth: u32, tags: u64, sizes: u64) -> Vec<Key> {
    let root = chain(&[block(Layer::Tools, 100, b"tools"), block(Layer::System, 50, b"s")]);
    let mut keys = Vec::new();
    let mut level = vec![root];
    for d in 0..depth {
        let mut next = Vec::new();
        for p in &level {
            for (tag, tokens) in (0..tags).flat_map(|t| (1..=sizes).map(move |n| (t, n))) {
                let mut child = p.fork(1);
                let digest = identity("agent/result", tag, d.into());
                child.push(Block { layer: Layer::Messages, tokens, digest });
                keys.push(child.prefix_key(child.len() - 1));
                next.push(child);
            }
        }
        level = next;
    }
    keys
}

#[test]
fn no_two_prefixes_of_a_large_family_share_a_key_or_a_lane() {
    let keys = tree_keys(4, 4, 4);
    assert_eq!(keys.len(), 16 + 256 + 4096 + 65536);
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), keys.len(), "two prefixes share a key");
    // Stronger than the keys: no two share even one of the two 64-bit lanes (random
    // lanes collide here with probability about 2^-33), so every lane mixes every input.
    for lane in 0..2 {
        let mut lanes: Vec<u64> = keys.iter().map(|k| k.0[lane]).collect();
        lanes.sort_unstable();
        lanes.dedup();
        assert_eq!(lanes.len(), keys.len(), "two prefixes share lane {lane}");
    }
}

#[test]
fn entries_and_prompts_stay_small() {
    // What a fork copies per block, and what every move of an agent's prompt copies.
    assert_eq!(std::mem::size_of::<Entry>(), 24);
    assert!(std::mem::size_of::<Prompt>() <= 136, "{}", std::mem::size_of::<Prompt>());
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
        sha.prefix_key(1),
        reference_prefix_key("ws", "m", Digest::default(), Digest::default(), &blocks, 1)
    );
    assert_ne!(fast.prefix_key(1), sha.prefix_key(1));
}
