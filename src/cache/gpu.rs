//! The KV cache of one self-hosted replica (`vllm`, `sglang`): GPU memory in tokens, no TTL,
//! LRU among the blocks no running request holds (docs/providers.md sections 3-4).
//!
//! A node per prompt block, keyed by the prompt's prefix digest at that block (so two prompts
//! share a node exactly when they share the prefix through it): `computed` tokens of the
//! block have KV in memory, from its start. A prefix is readable up to the first node not
//! fully computed, in whole KV blocks (`block_tokens`: vLLM 16, SGLang 1) and never the
//! prompt's last token (the server recomputes it for the first output token, as vLLM does).
//! Nodes are readable as soon as a prefill step computes them ([`GpuCache::computed`]): the
//! server model calls it at every step's end, not at the writer's first token.
//!
//! Holding: a request holds every node of its prompt from its arrival (`refs`) until it is
//! released: at its prefill's end with its decode's end as `held_until` when that is known then
//! (`sglang`: a release time instead of a second event), or at its decode's end, held until
//! then (`vllm`, whose decodes run in the step loop). Eviction takes tokens from the end of the
//! least recently used node that nobody holds; a request touches its nodes last-block first,
//! so a prefix's deepest node is evicted before its root, as vLLM frees a request's blocks in
//! reverse order. When nothing is evictable the tokens are stored anyway and counted as
//! over-committed (vLLM would preempt a request and recompute it later; not modelled).
//!
//! Nodes are never removed (an evicted node keeps its place with 0 computed tokens, as the
//! router's view of where a prefix was sent), so memory grows with the distinct prompt blocks
//! of a run, like [`super::EntryStore`]'s keys. Nothing allocates per request once every
//! block has its node.

use super::lru::{Link, Linked, Lru};
use super::store::KeyHasher;
use super::{Key, Prompt};
use crate::time::SimTime;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

#[derive(Debug, Clone)]
struct Node {
    /// Tokens of the prompt block.
    tokens: u64,
    /// Tokens of the block with KV in memory, from its start.
    computed: u64,
    /// Requests holding the node until their prefill ends.
    refs: u32,
    /// Running decodes hold it until then.
    held_until: SimTime,
    linked: bool,
    link: Link,
}

impl Linked for Node {
    fn link(&self) -> &Link {
        &self.link
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

/// The KV cache of one replica.
#[derive(Debug, Clone, Default)]
pub struct GpuCache {
    nodes: Vec<Node>,
    index: HashMap<Key, u32, BuildHasherDefault<KeyHasher>>,
    lru: Lru,
    block_tokens: u64,
    capacity_tokens: u64,
    used_tokens: u64,
    /// Tokens evicted so far (once any is, lookups walk from the root).
    evicted_tokens: u64,
    /// The most tokens stored beyond the capacity at any time.
    overcommit_peak: u64,
}

impl GpuCache {
    /// Empty it (memory kept).
    pub fn reset(&mut self, block_tokens: u64, capacity_tokens: u64) {
        assert!(block_tokens > 0, "a KV block holds at least one token");
        self.nodes.clear();
        self.index.clear();
        self.lru = Lru::new();
        self.block_tokens = block_tokens;
        self.capacity_tokens = capacity_tokens;
        self.used_tokens = 0;
        self.evicted_tokens = 0;
        self.overcommit_peak = 0;
    }

    pub fn evicted_tokens(&self) -> u64 {
        self.evicted_tokens
    }

    pub fn overcommit_peak(&self) -> u64 {
        self.overcommit_peak
    }

    fn node(&self, prompt: &Prompt, i: usize) -> Option<&Node> {
        self.index.get(&prompt.prefix_key(i)).map(|&n| &self.nodes[n as usize])
    }

    /// Tokens of `prompt` a request admitted now reads: the computed prefix, in whole KV
    /// blocks, short of the last token.
    pub fn hit(&self, prompt: &Prompt) -> u64 {
        let raw = self.computed_prefix(prompt);
        raw.min(prompt.tokens().saturating_sub(1)) / self.block_tokens * self.block_tokens
    }

    /// Tokens of `prompt` with KV in memory from its start, to the token.
    fn computed_prefix(&self, prompt: &Prompt) -> u64 {
        let partial = |i: usize| self.node(prompt, i).map_or(0, |n| n.computed);
        if self.evicted_tokens == 0 {
            // Without evictions a full node's ancestors are full: search from the end (O(1)
            // for a conversation that appends to a cached prefix).
            for i in (0..prompt.len()).rev() {
                if self.node(prompt, i).is_some_and(|n| n.tokens > 0 && n.computed == n.tokens) {
                    let next = if i + 1 < prompt.len() { partial(i + 1) } else { 0 };
                    return prompt.prefix_tokens(i) + next;
                }
            }
            return if prompt.is_empty() { 0 } else { partial(0) };
        }
        let mut read = 0;
        for i in 0..prompt.len() {
            let Some(n) = self.node(prompt, i) else { break };
            read += n.computed;
            if n.computed < n.tokens {
                break;
            }
        }
        read
    }

    /// Tokens of the longest prefix of `prompt` ever sent to this replica (computed or not):
    /// what a prefix-aware router matches on.
    pub fn routed_prefix(&self, prompt: &Prompt) -> u64 {
        (0..prompt.len())
            .rev()
            .find(|&i| self.index.contains_key(&prompt.prefix_key(i)))
            .map_or(0, |i| prompt.prefix_tokens(i))
    }

    /// A request for `prompt` arrives: it holds every node of its prompt (created empty if
    /// new) and makes them the most recently used, the root last.
    pub fn hold(&mut self, prompt: &Prompt) {
        for i in (0..prompt.len()).rev() {
            let n = self.node_index(prompt, i);
            let node = &mut self.nodes[n as usize];
            node.refs += 1;
            if node.linked {
                self.lru.touch(&mut self.nodes, n);
            } else {
                node.linked = true;
                self.lru.push_newest(&mut self.nodes, n);
            }
        }
    }

    fn node_index(&mut self, prompt: &Prompt, i: usize) -> u32 {
        let next = self.nodes.len() as u32;
        let n = *self.index.entry(prompt.prefix_key(i)).or_insert(next);
        if n == next {
            self.nodes.push(Node {
                tokens: prompt.block_tokens(i),
                computed: 0,
                refs: 0,
                held_until: SimTime::ZERO,
                linked: false,
                link: Link::UNLINKED,
            });
        }
        n
    }

    /// The prefill of a request holding `prompt` ended; its decode holds the nodes until
    /// `until`.
    pub fn release(&mut self, prompt: &Prompt, until: SimTime) {
        for i in 0..prompt.len() {
            let n = self.index[&prompt.prefix_key(i)];
            let node = &mut self.nodes[n as usize];
            debug_assert!(node.refs > 0, "released a node nobody holds");
            node.refs -= 1;
            node.held_until = node.held_until.max(until);
        }
    }

    /// A prefill step computed tokens `from..to` of `prompt` (held by its request): they are
    /// readable from `now` on, after evicting what they need room for.
    pub fn computed(&mut self, prompt: &Prompt, from: u64, to: u64, now: SimTime) {
        // The first block ending after `from`.
        let mut i = block_at(prompt, from);
        while i < prompt.len() {
            let start = prompt.prefix_tokens(i) - prompt.block_tokens(i);
            if start >= to {
                break;
            }
            let n = self.index[&prompt.prefix_key(i)];
            let want = to.min(prompt.prefix_tokens(i)) - start;
            let have = self.nodes[n as usize].computed;
            if want > have {
                self.make_room(want - have, now);
                self.nodes[n as usize].computed = want;
                self.used_tokens += want - have;
            }
            i += 1;
        }
        let over = self.used_tokens.saturating_sub(self.capacity_tokens);
        self.overcommit_peak = self.overcommit_peak.max(over);
    }

    /// Evict least recently used tokens nobody holds until `need` more fit, over-commit
    /// included (or nothing more can go).
    fn make_room(&mut self, need: u64, now: SimTime) {
        let mut short = (self.used_tokens + need).saturating_sub(self.capacity_tokens);
        let mut at = self.lru.oldest();
        while short > 0 {
            let Some(n) = at else { return };
            at = self.lru.newer(&self.nodes, n);
            let node = &mut self.nodes[n as usize];
            if node.refs > 0 || node.held_until > now {
                continue;
            }
            let take = node.computed.min(short);
            node.computed -= take;
            self.used_tokens -= take;
            self.evicted_tokens += take;
            short -= take;
            if node.computed == 0 {
                node.linked = false;
                self.lru.unlink(&mut self.nodes, n);
            }
        }
    }
}

/// The index of the block holding token `pos` (the last block if `pos` is past the end).
fn block_at(prompt: &Prompt, pos: u64) -> usize {
    let (mut lo, mut hi) = (0, prompt.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if prompt.prefix_tokens(mid) <= pos {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo.min(prompt.len().saturating_sub(1))
}
