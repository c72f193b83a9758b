//! The scenarios, computed: the main session is warmed turn by turn through the real cache
//! core, then each scenario's request (a real Messages-API body) is served against a copy of
//! that warm cache, and its usage is what the core billed.
//!
//! Timeline (named assumptions; the results do not depend on them as long as each request is
//! sent after the previous one's entries are ready and within the 5-minute TTL): the main
//! session sends a turn every `TURN_GAP`; a request's entries are ready `READY_AFTER`
//! after it is sent (its time to first token).

use super::bodies::{assistant_text, user_text, Request};
use super::permission::{tool_result, CallOutcome, Permissions};
use super::workload::Workload;
use super::{NextTurn, ScenarioError, ScenarioResult};
use crate::cache::{Cache, Layer, Policy, Ttl, Usage};
use crate::config::ModelParams;
use crate::replay::body::request_from_json;
use crate::time::{SimDuration, SimTime};
use serde_json::{json, Value};

/// Time between two requests of the main session (assumption, see the module doc).
pub const TURN_GAP: SimDuration = SimDuration::from_secs(20);
/// Time from sending a request to its entries being readable (assumption).
pub const READY_AFTER: SimDuration = SimDuration::from_secs(2);

/// An empty cache for the scenarios. Under `every-block` entries never expire, as in the seed
/// demo's cache (a map with no TTL): the cache core refreshes only the longest hit prefix, so
/// with a TTL the main session's short prefixes (the tools block alone) would expire during a
/// long warm-up although every turn reads through them. Under `anthropic` the API's 5 minutes.
pub fn new_cache(policy: Policy, model: &ModelParams) -> Cache {
    let cache = Cache::new(policy, model, None);
    match policy {
        Policy::EveryBlock | Policy::Vllm | Policy::Sglang => cache.with_default_ttl(Ttl::None),
        Policy::Anthropic | Policy::OpenAi | Policy::Gemini => cache,
    }
}

/// Serve one request body at `now`; its entries are ready `READY_AFTER` later.
pub fn serve(cache: &mut Cache, req: &Request, now: SimTime) -> Result<Usage, ScenarioError> {
    let (prompt, breakpoints) = request_from_json(&req.body())?;
    Ok(cache.serve(&prompt, &breakpoints, now, |_| now + READY_AFTER)?)
}

/// The main session after its warm-up: the cache and the time of the next request.
pub struct Warm<'w> {
    pub workload: &'w Workload,
    pub cache: Cache,
    pub now: SimTime,
}

impl<'w> Warm<'w> {
    /// Send turns 1..=N of the main session, each after the previous one's entries are ready.
    pub fn new(
        w: &'w Workload,
        policy: Policy,
        model: &ModelParams,
    ) -> Result<Self, ScenarioError> {
        let mut cache = new_cache(policy, model);
        let mut now = SimTime::ZERO;
        for k in 1..=w.turns() {
            serve(&mut cache, &Request::main_turn(w, k), now)?;
            now += TURN_GAP;
        }
        Ok(Warm { workload: w, cache, now })
    }

    /// Serve `req` against a copy of the warm cache.
    pub fn one(&self, req: &Request) -> Result<Usage, ScenarioError> {
        serve(&mut self.cache.clone(), req, self.now)
    }

    /// Serve a side request, then (a turn later) the main session's next turn.
    pub fn then_next(
        &self,
        side: &Request,
        next: &Request,
    ) -> Result<(Usage, Usage), ScenarioError> {
        let mut cache = self.cache.clone();
        let side_usage = serve(&mut cache, side, self.now)?;
        let next_usage = serve(&mut cache, next, self.now + TURN_GAP)?;
        Ok((side_usage, next_usage))
    }
}

/// The main session's next turn: the history, `extra` messages, the user's next message.
/// Marked like every main turn (system and last message only).
pub fn main_next(w: &Workload, extra: &[Value]) -> Request {
    let mut appended = extra.to_vec();
    appended.push(user_text(&w.next_user_message));
    let mut req = Request::after_history(w, &appended);
    req.shared_end = None;
    req
}

/// Tokens of the main session's tools block and system block (from the last turn's prompt).
pub fn layer_tokens(w: &Workload) -> Result<(u64, u64), ScenarioError> {
    let (prompt, _) = request_from_json(&Request::main_turn(w, w.turns()).body())?;
    assert_eq!(prompt.layer(0), Layer::Tools, "the main session has tools");
    assert_eq!(prompt.layer(1), Layer::System, "the main session has a system prompt");
    Ok((prompt.block_tokens(0), prompt.block_tokens(1)))
}

/// `fork_deny_edit`: the plain fork's request; the fork's model then calls the denied tool, the
/// permission check refuses it, and the fork's next request carries the error result.
pub fn fork_deny(warm: &Warm) -> Result<ScenarioResult, ScenarioError> {
    let w = warm.workload;
    let fork = Request::after_history(w, &[user_text(&w.fork_task)]);
    let mut cache = warm.cache.clone();
    let usage = serve(&mut cache, &fork, warm.now)?;
    let outcome = Permissions::deny(&[w.deny_tool.as_str()]).check(&w.fork_tool_call);
    let id = "toolu_fork_01";
    let call = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": id, "name": w.fork_tool_call.name, "input": w.fork_tool_call.input}
    ]});
    let result = json!({"role": "user", "content": [tool_result(id, &outcome)]});
    let second = Request::after_history(w, &[user_text(&w.fork_task), call, result]);
    let second_usage = serve(&mut cache, &second, warm.now + TURN_GAP)?;
    let note = match &outcome {
        CallOutcome::Refused { rule, message } => format!(
            "the fork called {}: refused at call time by the rule `deny: {rule}` ({message:?}); \
             its next request, with the error result appended, reads {:.1}%",
            w.fork_tool_call.name,
            100.0 * second_usage.hit_rate()
        ),
        CallOutcome::Allowed => format!("the fork called {}: allowed", w.fork_tool_call.name),
    };
    let mut row = ScenarioResult::new("fork_deny_edit", usage);
    row.note = Some(note);
    row.tool_call_refused = Some(matches!(outcome, CallOutcome::Refused { .. }));
    Ok(row)
}

/// A /btw design: the side request, and the main's next turn with the answer discarded or
/// written into the messages.
pub fn btw_design(
    warm: &Warm,
    id: &'static str,
    side: Request,
) -> Result<ScenarioResult, ScenarioError> {
    let w = warm.workload;
    let (usage, discarded) = warm.then_next(&side, &main_next(w, &[]))?;
    let written_msgs = [user_text(&w.btw_question), assistant_text(&w.btw_answer)];
    let (_, written) = warm.then_next(&side, &main_next(w, &written_msgs))?;
    let mut row = ScenarioResult::new(id, usage);
    row.next_turn = Some(NextTurn { answer_discarded: discarded, answer_written: written });
    Ok(row)
}

/// The thinking text of the main session's tool-loop step in `fork_thinking` (synthetic: the
/// workloads carry no thinking; only its bytes and size matter).
const LOOP_THINKING: &str = "The user wants the change checked before it is made. I should \
    run the failing test first, read its output, and only then decide which file to edit.";

/// `fork_thinking`: thinking on (`{"type": "enabled", "budget_tokens": 4096}` in every body).
/// The main session answers its next user message with thinking and a tool call; its request
/// with the tool result (M) is served into a fresh cache and writes its breakpoints (system,
/// the history's end, its last message). A fork then sends M's messages, the main session's
/// reply (thinking, text) and its task as a user message. A model that strips earlier turns'
/// thinking drops both thinking blocks (they precede a user message that is not a tool
/// result): the fork's prefix leaves M's at the loop's assistant message and reads M's entry
/// at the history's end only. A model that keeps thinking reads M's whole prompt. The row is
/// the workload's model; the note gives a model that keeps thinking (the first such preset of
/// the workload's family: claude-sonnet-4.6 for Sonnet, else claude-opus-4.5).
pub fn fork_thinking(
    w: &Workload,
    policy: Policy,
    model: &ModelParams,
) -> Result<ScenarioResult, ScenarioError> {
    let keeper =
        if model.name.contains("sonnet") { "claude-sonnet-4.6" } else { "claude-opus-4.5" };
    let usage = thinking_fork_usage(w, policy, model, &model.name)?;
    let keeper_model = crate::config::preset(keeper).expect("a preset");
    let kept = thinking_fork_usage(w, policy, &keeper_model, keeper)?;
    let what = match model.thinking {
        crate::config::ThinkingHistory::Stripped => "strips",
        _ => "keeps",
    };
    let mut row = ScenarioResult::new("fork_thinking", usage);
    row.note = Some(format!(
        "{} {what} earlier turns' thinking: the fork reads {} tokens ({:.1}%); {keeper}, which \
         keeps it, reads {} ({:.1}%)",
        model.name,
        usage.cache_read,
        100.0 * usage.hit_rate(),
        kept.cache_read,
        100.0 * kept.hit_rate()
    ));
    Ok(row)
}

/// The fork's usage in `fork_thinking` with bodies sent to `name`, priced as `model`.
fn thinking_fork_usage(
    w: &Workload,
    policy: Policy,
    model: &ModelParams,
    name: &str,
) -> Result<Usage, ScenarioError> {
    let (main, fork) = thinking_fork_requests(w, name);
    let mut cache = new_cache(policy, model);
    serve(&mut cache, &main, SimTime::ZERO)?;
    serve(&mut cache, &fork, SimTime::ZERO + TURN_GAP)
}

/// `fork_thinking`'s two requests to model `name`: the main session's tool-loop request M
/// and the fork.
pub fn thinking_fork_requests(w: &Workload, name: &str) -> (Request, Request) {
    let thinking = json!({"type": "enabled", "budget_tokens": 4096});
    let block = json!({"type": "thinking", "thinking": LOOP_THINKING, "signature": "sig-1"});
    let call = json!({"role": "assistant", "content": [block,
        {"type": "tool_use", "id": "toolu_main_01", "name": w.fork_tool_call.name, "input": w.fork_tool_call.input}]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_main_01", "content": "1 test failed"}]});
    let mut main = Request::after_history(w, &[user_text(&w.next_user_message), call, result]);
    let reply = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": LOOP_THINKING, "signature": "sig-2"},
        {"type": "text", "text": w.btw_answer}]});
    main.model = name.to_string();
    main.thinking = Some(thinking);
    let mut fork = main.clone();
    fork.shared_end = Some(fork.messages.len() - 1);
    fork.messages.push(reply);
    fork.messages.push(user_text(&w.fork_task));
    (main, fork)
}
