//! The synthetic prompts of a fan-out (SPEC.md section 5): which blocks each agent kind sends,
//! their identities (digests) and sizes, and the default breakpoints of the anthropic policy.
//!
//! Knows nothing of time or strategies. Block identities are digests of stable names
//! ("parent/tools", ("agent/result", 3, 2), ...), computed without allocation; equal names are
//! equal content. Named assumptions (documented in docs/model.md):
//! the parent's `parent_tokens` split 30% tools, 10% system, 60% history; a subagent type's
//! `subagent_tokens` split 75% tools, 25% system; a denied call returns `DENIED_RESULT_TOKENS`.

use crate::cache::{Block, Breakpoint, Digest, Layer, Prompt};
use crate::config::{AgentKind, Experiment, Ttl};

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

/// The identity digest of a stable name `tag/a/b`: 256 bits derived from the name by the
/// SplitMix64 mixer (no allocation, a few ns). It stands for content the simulator does not
/// render, so it need not be cryptographic; the prefix chain over it is SHA-256 (`Prompt`).
pub fn identity(tag: &str, a: u64, b: u64) -> Digest {
    identity_of(name_hash(tag), a, b)
}

fn identity_of(tag_hash: u64, a: u64, b: u64) -> Digest {
    use crate::rng::mix64;
    let w0 = mix64(tag_hash ^ mix64(a));
    let w1 = mix64(w0 ^ b);
    let w2 = mix64(w1 ^ 0x2545_f491_4f6c_dd1d);
    let w3 = mix64(w2 ^ 0x9e37_79b9_7f4a_7c15);
    let mut out = [0u8; 32];
    for (chunk, w) in out.chunks_exact_mut(8).zip([w0, w1, w2, w3]) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    Digest(out)
}

const TASK: u64 = name_hash("agent/task");
const RESPONSE: u64 = name_hash("agent/response");
const RESULT: u64 = name_hash("agent/result");
const EXCHANGE: u64 = name_hash("parent/exchange");

fn block(layer: Layer, tokens: u64, tag: &str, a: u64, b: u64) -> Block {
    Block { layer, tokens, digest: identity(tag, a, b) }
}

/// The part every agent of the fan-out shares: built once per run, cloned per agent.
#[derive(Debug, Clone)]
pub struct Shared {
    /// Tools, system, [history], [brief]: the prefix the prewarm request sends.
    pub prompt: Prompt,
    /// Index of the last system block (the first default breakpoint).
    pub system_end: usize,
    /// Which model the agents call: 0 = the experiment's, 1 = `fork_other_model`'s.
    pub model: usize,
}

/// The parent's own last request (tools, system, history), used to warm its entries.
pub fn parent_request(exp: &Experiment) -> (Prompt, [Breakpoint; 2]) {
    let mut p = Prompt::with_capacity(SCOPE, &exp.model.name, 3);
    push_parent(&mut p, exp, "parent/tools", "parent/system");
    let ttl = exp.cache.ttl;
    let last = p.len() - 1;
    (p, [Breakpoint { index: 1, ttl }, Breakpoint { index: last, ttl }])
}

fn push_parent(p: &mut Prompt, exp: &Experiment, tools: &str, system: &str) {
    let w = &exp.workload;
    let tools_tokens = w.parent_tokens * PARENT_TOOLS_PERMILLE / 1000;
    let system_tokens = w.parent_tokens * PARENT_SYSTEM_PERMILLE / 1000;
    let history_tokens = w.parent_tokens - tools_tokens - system_tokens;
    p.push(block(Layer::Tools, tools_tokens, tools, 0, 0));
    p.push(block(Layer::System, system_tokens, system, 0, 0));
    if history_tokens > 0 {
        p.push(block(Layer::Messages, history_tokens, "parent/history", 0, 0));
    }
}

/// Which model the agents of `kind` call: its name and index (0 = the experiment's, 1 = the
/// `fork_other_model` model).
fn agents_model(exp: &Experiment) -> (&str, usize) {
    match &exp.workload.kind {
        AgentKind::ForkOtherModel { model } => (model.as_str(), 1),
        _ => (exp.model.name.as_str(), 0),
    }
}

/// Whether agents of `kind` send the parent's own tools, system and history (and so can read
/// the parent's entries): `fork`, `btw`, `fork_deny_at_call`.
pub fn keeps_parent_prefix(kind: &AgentKind) -> bool {
    matches!(kind, AgentKind::Fork | AgentKind::Btw | AgentKind::ForkDenyAtCall { .. })
}

/// The tools, system and (for every kind but `subagent`) the parent's history that an agent of
/// `exp.workload.kind` sends, before the brief, with room for `blocks` blocks. For the kinds that
/// keep the parent's prefix this is the parent's own prompt (`parent_request`).
pub fn line(exp: &Experiment, blocks: usize) -> Prompt {
    let w = &exp.workload;
    let mut p = Prompt::with_capacity(SCOPE, agents_model(exp).0, blocks);
    match &w.kind {
        AgentKind::Subagent => {
            let tools = w.subagent_tokens * SUBAGENT_TOOLS_PERMILLE / 1000;
            p.push(block(Layer::Tools, tools, "subagent/tools", 0, 0));
            p.push(block(Layer::System, w.subagent_tokens - tools, "subagent/system", 0, 0));
        }
        AgentKind::ForkDropTool { tool } => {
            // The tool list without `tool`: another identity (same size: assumption).
            let id = identity(tool, 0, 0);
            let tools_tokens = w.parent_tokens * PARENT_TOOLS_PERMILLE / 1000;
            let mut id64 = [0u8; 8];
            id64.copy_from_slice(&id.0[..8]);
            let without = u64::from_le_bytes(id64);
            p.push(block(Layer::Tools, tools_tokens, "parent/tools-without", without, 0));
            let system_tokens = w.parent_tokens * PARENT_SYSTEM_PERMILLE / 1000;
            p.push(block(Layer::System, system_tokens, "parent/system", 0, 0));
            let history = w.parent_tokens - tools_tokens - system_tokens;
            if history > 0 {
                p.push(block(Layer::Messages, history, "parent/history", 0, 0));
            }
        }
        AgentKind::ForkEditSystem => {
            push_parent(&mut p, exp, "parent/tools", "parent/system-edited")
        }
        _ => push_parent(&mut p, exp, "parent/tools", "parent/system"),
    }
    p
}

/// Append the shared brief (nothing if empty; a /btw question carries no brief: it is one
/// question on the parent).
pub fn push_brief(p: &mut Prompt, exp: &Experiment) {
    let w = &exp.workload;
    if w.brief_tokens > 0 && w.kind != AgentKind::Btw {
        p.push(block(Layer::Messages, w.brief_tokens, "brief", 0, 0));
    }
}

/// Append the parent's exchange `k` (1 = its first turn during the fan-out) of `tokens`
/// tokens; nothing if empty. The same block in every line: the same history behind
/// different tools, system or model.
pub fn push_exchange(p: &mut Prompt, k: u64, tokens: u64) {
    if tokens > 0 {
        p.push(Block { layer: Layer::Messages, tokens, digest: identity_of(EXCHANGE, k, 0) });
    }
}

/// The shared prefix of the agents of `exp.workload.kind`: its line, then the brief.
pub fn shared(exp: &Experiment, turns_hint: usize) -> Shared {
    let mut p = line(exp, 5 + 2 * turns_hint);
    push_brief(&mut p, exp);
    Shared { prompt: p, system_end: 1, model: agents_model(exp).1 }
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

/// Append turn `turn`'s response and its tool result.
pub fn push_turn(p: &mut Prompt, agent: u64, turn: u64, output_tokens: u64, result_tokens: u64) {
    // Empty blocks are not sent (the API refuses empty text blocks): the prompt is unchanged.
    if output_tokens > 0 {
        let digest = identity_of(RESPONSE, agent, turn);
        p.push(Block { layer: Layer::Messages, tokens: output_tokens, digest });
    }
    if result_tokens > 0 {
        let digest = identity_of(RESULT, agent, turn);
        p.push(Block { layer: Layer::Messages, tokens: result_tokens, digest });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn identities_are_stable_and_distinct() {
        assert_eq!(identity("agent/result", 3, 2), identity("agent/result", 3, 2));
        assert_ne!(identity("agent/result", 3, 2), identity("agent/result", 2, 3));
        assert_ne!(identity("agent/result", 3, 2), identity("agent/response", 3, 2));
        assert_eq!(identity("agent/task", 5, 0), identity_of(TASK, 5, 0));
    }
}
