//! The synthetic prompts of a fan-out (docs/model.md): which blocks each agent kind sends,
//! their identities (digests) and sizes, and the default breakpoints of the anthropic policy.
//!
//! Knows nothing of time or strategies. Block identities are stable names ("parent/tools",
//! ("agent/result", 3, 2), ...) written as 256-bit digests without allocation (`identity`);
//! equal names are equal content. Named assumptions (documented in docs/model.md):
//! the parent's `parent_tokens` split 30% tools, 10% system, 60% history; a subagent type's
//! `subagent_tokens` split 75% tools, 25% system; a denied call returns `DENIED_RESULT_TOKENS`;
//! a turn's response tokens are divided evenly among its assistant blocks, a parent exchange's
//! tokens among all its blocks (`turn_blocks`, `parent_exchange_blocks`: each block its own
//! lookback position, as the API counts content blocks, docs/anthropic.md).
//!
//! Thinking (docs/anthropic.md): a request with thinking on folds the thinking parameters into
//! the messages layer (`message_params`); on a model that strips earlier turns' thinking, a
//! user block that is not a tool result drops every thinking block before it from what the API
//! processes ([`Chain`]).

use crate::cache::{Block, Breakpoint, Digest, Layer, Prompt, PromptMemory};
use crate::config::{AgentKind, BlockKind, ExperimentSpec, Ttl};

/// Share of `parent_tokens` that is the tool list, in per mille (assumption).
pub const PARENT_TOOLS_PERMILLE: u64 = 300;
/// Share of `parent_tokens` that is the system prompt, in per mille (assumption).
pub const PARENT_SYSTEM_PERMILLE: u64 = 100;
/// Share of `subagent_tokens` that is the subagent type's tool list, in per mille (assumption).
pub const SUBAGENT_TOOLS_PERMILLE: u64 = 750;
/// Tokens of the error result a denied tool call returns (assumption: one short sentence).
pub const DENIED_RESULT_TOKENS: u64 = 20;
/// The cache scope every request of a run shares (one workspace).
pub const SCOPE: &str = "workspace";

/// Agent number standing for the workflow itself (the prewarm request), outside any agent's id.
pub const WORKFLOW_ID: u64 = 1 << 32;
/// Agent number of the parent conversation's own requests (`workload.parent_turn_every`): its
/// exchange sizes and outputs (site WORKLOAD) and latencies (site LATENCY) come from its streams.
pub const PARENT_ID: u64 = WORKFLOW_ID + 1;

/// FNV-1a of a name, at compile time for the fixed names below.
pub const fn name_hash(tag: &str) -> u64 {
    let bytes = tag.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h = (h ^ bytes[i] as u64).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

/// The identity digest of a stable name `tag/a/b`: its words as they are, the tag's FNV-1a
/// hash, `a` and `b` (little-endian), then a zero word. Not a hash: identities only feed the
/// synthetic prefix chain (`Prompt::synthetic`), which mixes them, and an injective identity
/// lets that chain prove that one prefix followed by two different blocks never meets
/// (module docs of `cache::prompt`). Two names share an identity only if their tags' FNV-1a
/// hashes agree. What that proof uses, and the tests below check: the hashes of the tags
/// used here differ in their top 16 bits, and each tag has `b = 0` always, or `a` and `b`
/// below 2^32 always (a turn's blocks: a `u32` agent index and a `u32` request).
pub fn identity(tag: &str, a: u64, b: u64) -> Digest {
    identity_of(name_hash(tag), a, b)
}

fn identity_of(tag_hash: u64, a: u64, b: u64) -> Digest {
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(&tag_hash.to_le_bytes());
    out[8..16].copy_from_slice(&a.to_le_bytes());
    out[16..24].copy_from_slice(&b.to_le_bytes());
    Digest(out)
}

const TASK: u64 = name_hash("agent/task");
/// Tags of an agent turn's blocks, by `BlockKind` (user, thinking, text, tool_use, result).
const AGENT_BLOCK: [u64; 5] = [
    name_hash("agent/user"),
    name_hash("agent/thinking"),
    name_hash("agent/text"),
    name_hash("agent/tool_use"),
    name_hash("agent/result"),
];
/// Tags of a parent exchange's blocks, by `BlockKind`.
const EXCHANGE_BLOCK: [u64; 5] = [
    name_hash("parent/exchange/user"),
    name_hash("parent/exchange/thinking"),
    name_hash("parent/exchange/text"),
    name_hash("parent/exchange/tool_use"),
    name_hash("parent/exchange/result"),
];

/// The messages-layer parameters of a request with thinking on or off (the thinking
/// parameters are folded into the messages layer: changing them misses the messages).
pub fn message_params(thinking: bool) -> Digest {
    if thinking {
        identity("params/thinking-enabled", 0, 0)
    } else {
        Digest::default()
    }
}

/// An empty prompt to `model` with thinking on or off, room for `blocks` blocks.
fn new_prompt(model: &str, thinking: bool, blocks: usize) -> Prompt {
    let mut p = Prompt::synthetic(SCOPE, model, blocks);
    p.set_message_params(message_params(thinking));
    p
}

/// A conversation as the API processes it. On a model that strips earlier turns' thinking,
/// `bare` is the same history without any thinking block, and a user block that is not a
/// tool result makes the processed prompt `bare` + that block: every thinking block before it
/// is dropped (the thinking blocks after it, in the tool loop it starts, are kept).
#[derive(Debug, Clone)]
pub struct Chain {
    pub prompt: Prompt,
    bare: Option<Prompt>,
}

impl Chain {
    /// A chain over `prompt`; `strips`: keep the bare history (only needed when the model
    /// strips thinking, thinking is on and the turns carry user blocks).
    pub fn new(prompt: Prompt, strips: bool) -> Self {
        Chain { bare: strips.then(|| prompt.clone()), prompt }
    }

    /// Start over from `prompt`, in place: `new` built a chain on the stack and copied it
    /// into the agent's (two copies of a prompt per agent a run).
    pub fn reset(&mut self, prompt: Prompt, strips: bool) {
        self.prompt = prompt;
        self.bare = strips.then(|| self.prompt.clone());
    }

    /// Give its prompts' memory to `spare` (the chain is done with).
    pub fn give_memory(&mut self, spare: &mut Vec<PromptMemory>) {
        spare.push(self.prompt.take_memory());
        if let Some(bare) = &mut self.bare {
            spare.push(bare.take_memory());
        }
    }

    /// Append a block of `kind` as the API processes it. Without a bare history (the common
    /// case) a plain push; the stripping out of line.
    #[inline(always)]
    pub fn push(&mut self, kind: BlockKind, block: Block) {
        match self.bare {
            None => self.prompt.push(block),
            Some(_) => self.push_stripping(kind, block),
        }
    }

    #[inline(never)]
    fn push_stripping(&mut self, kind: BlockKind, block: Block) {
        match (&mut self.bare, kind) {
            (_, BlockKind::Thinking) => self.prompt.push(block),
            (Some(bare), BlockKind::User) => {
                bare.push(block);
                self.prompt.clone_from(bare);
            }
            (Some(bare), _) => {
                bare.push(block);
                self.prompt.push(block);
            }
            (None, _) => self.prompt.push(block),
        }
    }
}

/// Tokens of the `i`-th of `n` parts of `total` (the remainder to the first parts).
fn part(total: u64, n: u64, i: u64) -> u64 {
    total / n + u64::from(i < total % n)
}

fn block(layer: Layer, tokens: u64, tag: &str, a: u64, b: u64) -> Block {
    Block { layer, tokens, digest: identity(tag, a, b) }
}

/// The part every agent of the fan-out shares: built once per run, cloned per agent.
#[derive(Debug, Clone)]
pub struct Shared {
    /// Tools, system, [history], [brief]: the prefix the prewarm request sends.
    pub prompt: Prompt,
    /// Which model the agents call: 0 = the experiment's, 1 = `fork_other_model`'s.
    pub model: usize,
}

/// The parent's own last request (tools, system, history; the parent's thinking setting and
/// TTL), used to warm its entries.
pub fn parent_request(exp: &ExperimentSpec) -> (Prompt, [Breakpoint; 2]) {
    let mut p = new_prompt(&exp.model.name, exp.workload.parent_thinks(), 3);
    push_parent(&mut p, exp, ("parent/tools", 0), "parent/system");
    let ttl = exp.cache.parent_ttl();
    let last = p.len() - 1;
    (p, [Breakpoint { index: 1, ttl }, Breakpoint { index: last, ttl }])
}

/// The parent's tools (the tag and `a` of their identity), system prompt and history.
fn push_parent(p: &mut Prompt, exp: &ExperimentSpec, (tools, a): (&str, u64), system: &str) {
    let w = &exp.workload;
    let tools_tokens = w.parent_tokens * PARENT_TOOLS_PERMILLE / 1000;
    let system_tokens = w.parent_tokens * PARENT_SYSTEM_PERMILLE / 1000;
    let history_tokens = w.parent_tokens - tools_tokens - system_tokens;
    p.push(block(Layer::Tools, tools_tokens, tools, a, 0));
    p.push(block(Layer::System, system_tokens, system, 0, 0));
    if history_tokens > 0 {
        p.push(block(Layer::Messages, history_tokens, "parent/history", 0, 0));
    }
}

/// Which model the agents of `kind` call: its name and index (0 = the experiment's, 1 = the
/// `fork_other_model` model).
fn agents_model(exp: &ExperimentSpec) -> (&str, usize) {
    match &exp.workload.kind {
        AgentKind::ForkOtherModel { model } => (model.as_str(), 1),
        _ => (exp.model.name.as_str(), 0),
    }
}

/// The tools, system and (for every kind but `subagent`) the parent's history that an agent of
/// `exp.workload.kind` sends, before the brief, with room for `blocks` blocks, its thinking on
/// or off. For the kinds that keep the parent's prefix, with the parent's thinking setting,
/// this is the parent's own prompt (`parent_request`).
pub fn line(exp: &ExperimentSpec, blocks: usize, thinking: bool) -> Prompt {
    let w = &exp.workload;
    let mut p = new_prompt(agents_model(exp).0, thinking, blocks);
    match &w.kind {
        AgentKind::Subagent => {
            let tools = w.subagent_tokens * SUBAGENT_TOOLS_PERMILLE / 1000;
            p.push(block(Layer::Tools, tools, "subagent/tools", 0, 0));
            p.push(block(Layer::System, w.subagent_tokens - tools, "subagent/system", 0, 0));
        }
        AgentKind::ForkDropTool { tool } => {
            // The tool list without `tool`: another identity (same size: assumption).
            let without = name_hash(tool);
            push_parent(&mut p, exp, ("parent/tools-without", without), "parent/system");
        }
        AgentKind::ForkEditSystem => {
            push_parent(&mut p, exp, ("parent/tools", 0), "parent/system-edited")
        }
        _ => push_parent(&mut p, exp, ("parent/tools", 0), "parent/system"),
    }
    p
}

/// Append the shared brief (nothing if empty; a /btw question carries no brief: it is one
/// question on the parent).
pub fn push_brief(p: &mut Prompt, exp: &ExperimentSpec) {
    let w = &exp.workload;
    if w.brief_tokens > 0 && w.kind != AgentKind::Btw {
        p.push(block(Layer::Messages, w.brief_tokens, "brief", 0, 0));
    }
}

/// The blocks of the parent's exchange `k` (1 = its first turn during the fan-out) of `tokens`
/// tokens, shaped by `parent_exchange_blocks` (thinking blocks when the parent thinks), the
/// tokens divided evenly among them. The same blocks in every line: the same history behind
/// different tools, system or model.
pub fn exchange(exp: &ExperimentSpec, k: u64, tokens: u64) -> [Option<(BlockKind, Block)>; 5] {
    let w = &exp.workload;
    let present = |kind: &&BlockKind| w.parent_thinks() || **kind != BlockKind::Thinking;
    let n = w.parent_exchange_blocks.iter().filter(present).count() as u64;
    let kinds = w.parent_exchange_blocks.iter().filter(present);
    let mut out = [None; 5];
    for (index, (slot, &kind)) in out.iter_mut().zip(kinds).enumerate() {
        let t = part(tokens, n, index as u64);
        if t > 0 {
            let digest = identity_of(EXCHANGE_BLOCK[kind as usize], k, 0);
            *slot = Some((kind, Block { layer: Layer::Messages, tokens: t, digest }));
        }
    }
    out
}

/// The shared prefix of the agents of `exp.workload.kind`, their thinking on or off: its line,
/// then the brief.
pub fn shared(exp: &ExperimentSpec, turns_hint: usize, thinking: bool) -> Shared {
    let blocks = 5 + (exp.workload.turn_blocks.len() + 1) * turns_hint;
    let mut p = line(exp, blocks, thinking);
    push_brief(&mut p, exp);
    Shared { prompt: p, model: agents_model(exp).1 }
}

/// The shared prefix last built (`shared` with no turns hint), with what it was built from: a
/// simulator's runs of one experiment (its replications and strategies) build it once, not
/// every run. The key holds every input `shared` reads (kind, model name, parent, subagent
/// and brief sizes, thinking; the turn shape only sizes its spare room, none at hint 0), so
/// a hit is the very prefix `shared` would build.
#[derive(Debug, Default)]
pub struct SharedMemo(Option<(SharedKey, Shared)>);

#[derive(Debug)]
struct SharedKey {
    kind: AgentKind,
    model: String,
    tokens: [u64; 3],
    thinking: bool,
}

impl SharedKey {
    fn of(exp: &ExperimentSpec, thinking: bool) -> Self {
        let (kind, model) = (exp.workload.kind.clone(), exp.model.name.clone());
        SharedKey { kind, model, tokens: Self::tokens(exp), thinking }
    }

    fn tokens(exp: &ExperimentSpec) -> [u64; 3] {
        let w = &exp.workload;
        [w.parent_tokens, w.subagent_tokens, w.brief_tokens]
    }

    fn is(&self, exp: &ExperimentSpec, thinking: bool) -> bool {
        self.thinking == thinking
            && self.tokens == Self::tokens(exp)
            && self.kind == exp.workload.kind
            && self.model == exp.model.name
    }
}

impl SharedMemo {
    /// `shared(exp, 0, thinking)`, built only when the inputs differ from the last call's.
    pub fn get(&mut self, exp: &ExperimentSpec, thinking: bool) -> &Shared {
        if !matches!(&self.0, Some((key, _)) if key.is(exp, thinking)) {
            self.0 = None;
        }
        &self.0.get_or_insert_with(|| (SharedKey::of(exp, thinking), shared(exp, 0, thinking))).1
    }
}

/// Room for the blocks `turns` agent turns append: reserved when a fork starts, so no block is
/// copied as its conversation grows (capped: a run of huge turn counts grows as it goes).
pub fn turn_room(exp: &ExperimentSpec, turns: u32) -> usize {
    (exp.workload.turn_blocks.len() + 1) * (turns as usize).min(256)
}

/// Breakpoints of the anthropic default: end of system, end of the shared part, last message
/// (deduplicated when they coincide). Returns how many of `out` are used.
pub fn breakpoints(
    system_end: usize,
    shared_end: usize,
    last: usize,
    ttl: Ttl,
    out: &mut [Breakpoint; 3],
) -> usize {
    let mut n = 0;
    for index in [system_end, shared_end, last] {
        if n == 0 || out[n - 1].index < index {
            out[n] = Breakpoint { index, ttl };
            n += 1;
        }
    }
    n
}

/// Append agent `agent`'s own task (the `/btw` question for kind `btw`); nothing if empty.
pub fn push_task(p: &mut Prompt, agent: u64, tokens: u64) {
    if tokens > 0 {
        p.push(Block { layer: Layer::Messages, tokens, digest: identity_of(TASK, agent, 0) });
    }
}

/// One agent turn's sizes: the response's output tokens (divided evenly among the assistant
/// blocks), the tool result's, and a user block's (`task_tokens`, when the shape has one).
#[derive(Debug, Clone, Copy)]
pub struct TurnTokens {
    pub output: u64,
    pub result: u64,
    pub user: u64,
}

/// Append agent `agent`'s turn `turn` (its response, then its tool result), shaped by
/// `exp.workload.turn_blocks`: the kinds present (thinking only when on), each block its own
/// position, the output tokens divided evenly among the assistant blocks (`part`); empty
/// blocks are not sent (the API refuses empty text blocks). Blocks go straight to the chain:
/// no array of them is built and copied per turn (the hot path).
pub fn push_turn(chain: &mut Chain, exp: &ExperimentSpec, agent: u64, turn: u64, t: TurnTokens) {
    // The kinds present (the first five: a valid shape has no more), in one plain pass: a
    // shape is a few kinds, and an iterator chain walked twice cost more than the pushes.
    let w = &exp.workload;
    let (mut kinds, mut n, mut n_assistant) = ([BlockKind::User; 5], 0, 0);
    for &kind in &w.turn_blocks {
        if w.thinking || kind != BlockKind::Thinking {
            if let Some(slot) = kinds.get_mut(n) {
                *slot = kind;
                n += 1;
            }
            n_assistant += u64::from(kind.is_assistant());
        }
    }
    // `part` for every assistant block, with one division a turn (a shape has one at least).
    let n_assistant = n_assistant.max(1);
    let (share, rest) = (t.output / n_assistant, t.output % n_assistant);
    let mut assistant_index = 0;
    for &kind in &kinds[..n] {
        let tokens = match kind {
            BlockKind::User => t.user,
            BlockKind::ToolResult => t.result,
            _ => {
                assistant_index += 1;
                share + u64::from(assistant_index <= rest)
            }
        };
        if tokens > 0 {
            let digest = identity_of(AGENT_BLOCK[kind as usize], agent, turn);
            chain.push(kind, Block { layer: Layer::Messages, tokens, digest });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a prompt's blocks are, as far as a cache can tell: sizes and every prefix key.
    fn keys(p: &Prompt) -> Vec<(u64, crate::cache::Key)> {
        (0..p.len()).map(|i| (p.prefix_tokens(i), p.prefix_key(i))).collect()
    }

    /// The memo hands out exactly what `shared` builds, whichever of its inputs changes
    /// between calls, and back again.
    #[test]
    fn the_shared_memo_follows_every_input() {
        let sets = [
            None,
            Some("workload.brief_tokens=0"),
            Some("workload.parent_tokens=9000"),
            Some("workload.subagent_tokens=700"),
            Some("workload.kind=\"fork\""),
            Some("workload.kind=\"fork_drop_tool(tool=Bash)\""),
            Some("model=\"claude-sonnet-4.5\""),
            None,
        ];
        let mut memo = SharedMemo::default();
        for set in sets {
            let base = crate::Experiment::default_experiment();
            let e = set.map_or(Ok(base.clone()), |s| base.set(s)).expect("the experiment loads");
            let exp = e.config();
            for thinking in [false, true, false] {
                let (got, want) = (memo.get(exp, thinking), shared(exp, 0, thinking));
                assert_eq!(keys(&got.prompt), keys(&want.prompt), "{set:?}, thinking {thinking}");
                assert_eq!(got.model, want.model);
            }
        }
    }

    #[test]
    fn breakpoints_deduplicate_and_stay_increasing() {
        let mut out = [Breakpoint { index: 0, ttl: Ttl::FiveMin }; 3];
        assert_eq!(breakpoints(1, 3, 4, Ttl::FiveMin, &mut out), 3);
        assert_eq!(out.map(|b| b.index), [1, 3, 4]);
        // No brief, no task: the shared end and the last message coincide.
        assert_eq!(breakpoints(1, 2, 2, Ttl::FiveMin, &mut out), 2);
        assert_eq!(&out[..2].iter().map(|b| b.index).collect::<Vec<_>>(), &[1, 2]);
        // A subagent without brief: the system end is the shared end.
        assert_eq!(breakpoints(1, 1, 2, Ttl::FiveMin, &mut out), 2);
    }

    #[test]
    fn a_turn_divides_its_output_among_its_assistant_blocks_and_drops_empty_ones() {
        let mut exp = crate::Experiment::default_experiment().config().clone();
        exp.workload.thinking = true;
        let mut chain = Chain::new(new_prompt("m", true, 8), false);
        let turn = |output, result| TurnTokens { output, result, user: 0 };
        push_turn(&mut chain, &exp, 3, 1, turn(101, 500));
        // Thinking, text, tool_use share 101 (the remainder to the first), then the result.
        let p = &chain.prompt;
        assert_eq!((0..p.len()).map(|i| p.block_tokens(i)).collect::<Vec<_>>(), [34, 34, 33, 500]);
        // Two output tokens fill two of the three assistant blocks; no result is no block.
        push_turn(&mut chain, &exp, 3, 2, turn(2, 0));
        let p = &chain.prompt;
        assert_eq!((4..p.len()).map(|i| p.block_tokens(i)).collect::<Vec<_>>(), [1, 1]);
        // Thinking off: text and tool_use share the output.
        exp.workload.thinking = false;
        push_turn(&mut chain, &exp, 3, 3, turn(5, 7));
        let p = &chain.prompt;
        assert_eq!((6..p.len()).map(|i| p.block_tokens(i)).collect::<Vec<_>>(), [3, 2, 7]);
    }

    /// Every tag a block's identity takes in this module.
    const BLOCK_TAGS: [&str; 19] = [
        "parent/tools",
        "parent/system",
        "parent/history",
        "parent/tools-without",
        "parent/system-edited",
        "subagent/tools",
        "subagent/system",
        "brief",
        "agent/task",
        "agent/user",
        "agent/thinking",
        "agent/text",
        "agent/tool_use",
        "agent/result",
        "parent/exchange/user",
        "parent/exchange/thinking",
        "parent/exchange/text",
        "parent/exchange/tool_use",
        "parent/exchange/result",
    ];

    #[test]
    fn the_tags_differ_in_their_top_16_bits() {
        // What the mixed chain's injectivity proof needs (module docs of `cache::prompt`).
        let mut tops: Vec<u64> = BLOCK_TAGS.iter().map(|t| name_hash(t) >> 48).collect();
        tops.sort_unstable();
        tops.dedup();
        assert_eq!(tops.len(), BLOCK_TAGS.len());
        // The constant tags are among them.
        let listed = |h: &u64| BLOCK_TAGS.iter().any(|t| name_hash(t) == *h);
        assert!([TASK].iter().chain(&AGENT_BLOCK).chain(&EXCHANGE_BLOCK).all(listed));
    }

    #[test]
    fn identities_are_stable_and_distinct() {
        assert_eq!(identity("agent/result", 3, 2), identity("agent/result", 3, 2));
        assert_ne!(identity("agent/result", 3, 2), identity("agent/result", 2, 3));
        assert_ne!(identity("agent/result", 3, 2), identity("agent/response", 3, 2));
        assert_eq!(identity("agent/task", 5, 0), identity_of(TASK, 5, 0));
    }
}
