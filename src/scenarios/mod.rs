//! The seed chapter's table and its three exercises, computed by the real cache core from real
//! request bodies: `prefixsim scenarios`.
//!
//! A main session (a workload: tools, system prompt, 30 turns) is warmed turn by turn; then each
//! scenario sends its request (a fork, a fork that breaks the prefix, a fresh sub-agent, /btw in
//! three designs, ...) against that warm cache, and the row is what the cache billed. Nothing
//! here asserts a hit rate: change a workload's content and the table moves.
//!
//! - `workload.rs`: the embedded workloads (`workloads/*.json`), parsed and checked;
//! - `bodies.rs`: a workload's content as Messages-API JSON with Claude-Code-like breakpoints;
//! - `permission.rs`: the call-time permission check (`fork_deny_edit`);
//! - `compute.rs`: warm-up, timeline, the scenarios that need more than one request;
//! - `render.rs`: the table for people and the JSON for programs.
//!
//! It knows no clock and does no I/O (the CLI prints what `render` returns).

pub mod bodies;
pub mod compute;
pub mod permission;
pub mod render;
pub mod workload;

pub use workload::{Workload, WorkloadError, WorkloadName};

use crate::cache::{CacheError, Policy, Usage};
use crate::config::preset;
use crate::replay::body::BodyError;
use crate::time::SimTime;
use bodies::{user_text, Request};
use compute::{btw_design, fork_deny, fork_thinking, layer_tokens, main_next, Warm};
use serde_json::json;

/// The scenario ids, in table order, with the line saying what each row shows.
pub const SCENARIOS: [(&str, &str); 12] = [
    ("warmup", "main session, last turn sent to a cold cache: nothing to read yet"),
    ("fork", "same tools, system and history + the fork's task: reads the parent's cache"),
    ("fork_drop_bash", "Bash removed from the tools: the first block differs, nothing hits"),
    ("fork_edit_system", "a read-only note appended to the system prompt: only tools can hit"),
    ("fresh_subagent", "own tools and system, empty history: shares nothing with the parent"),
    ("btw", "/btw: same prefix + the question (tools and tool_choice kept)"),
    ("fork_reorder_tools", "exercise 1: the same tools in reverse order: nothing hits"),
    ("fork_deny_edit", "exercise 2: identical prefix, Edit denied at call time instead"),
    ("btw_keep_tools", "exercise 3a: /btw with the tools kept (calls never executed)"),
    ("btw_drop_tools", "exercise 3b: /btw with the tools removed from the side request"),
    ("btw_tool_choice_none", "exercise 3c: /btw, tools kept, tool_choice none: messages miss"),
    (
        "fork_thinking",
        "thinking on, main session mid tool loop: the fork's task strips the loop's thinking",
    ),
];

/// The line saying what scenario `id` shows.
pub fn explanation(id: &str) -> &'static str {
    SCENARIOS.iter().find(|s| s.0 == id).map_or("", |s| s.1)
}

/// Why the scenarios could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("workload `{workload}`: unknown model preset `{model}`")]
    UnknownModel { workload: String, model: String },
    #[error(transparent)]
    Body(#[from] BodyError),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// The main session's next turn after a /btw side request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextTurn {
    /// The side answer shown apart and not kept (the documented /btw).
    pub answer_discarded: Usage,
    /// The side question and answer written into the main conversation's messages.
    pub answer_written: Usage,
}

/// One row: what the cache billed for the scenario's request.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioResult {
    pub id: &'static str,
    pub usage: Usage,
    /// /btw designs: the main conversation's next turn.
    pub next_turn: Option<NextTurn>,
    /// `fork_deny_edit`: whether the permission check refused the fork's call.
    pub tool_call_refused: Option<bool>,
    pub note: Option<String>,
}

impl ScenarioResult {
    pub fn new(id: &'static str, usage: Usage) -> Self {
        ScenarioResult { id, usage, next_turn: None, tool_call_refused: None, note: None }
    }
}

/// The whole table for one workload and policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub workload: WorkloadName,
    pub about: String,
    pub policy: Policy,
    pub model: String,
    pub min_cacheable_tokens: u64,
    /// The model preset's prices (for the input-cost column).
    pub model_params: crate::config::ModelParams,
    pub main_turns: usize,
    pub tools_tokens: u64,
    pub system_tokens: u64,
    /// The main session's next turn when no side request came in between.
    pub baseline_next_turn: Usage,
    pub scenarios: Vec<ScenarioResult>,
}

impl Report {
    /// The row with this id (for tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, id: &str) -> Option<&ScenarioResult> {
        self.scenarios.iter().find(|s| s.id == id)
    }
}

/// Compute every scenario of `workload` under `policy`.
pub fn run(workload: WorkloadName, policy: Policy) -> Result<Report, ScenarioError> {
    let w = workload.load()?;
    // `openai` and `gemini` bill the same bodies at their provider's default model's prices
    // and minimum (gpt-5.4, gemini-2.5-flash; docs/providers.md).
    let name = crate::config::presets_hosted::default_model(policy).unwrap_or(&w.model);
    let model = preset(name).ok_or_else(|| ScenarioError::UnknownModel {
        workload: w.name.clone(),
        model: name.to_string(),
    })?;
    let warm = Warm::new(&w, policy, &model)?;
    let (tools_tokens, system_tokens) = layer_tokens(&w)?;
    let mut cold = compute::new_cache(policy, &model);
    let warmup = compute::serve(&mut cold, &Request::main_turn(&w, w.turns()), SimTime::ZERO)?;
    let mut rows = vec![ScenarioResult::new("warmup", warmup)];
    for (id, req) in single_requests(&w) {
        rows.push(ScenarioResult::new(id, warm.one(&req)?));
    }
    rows.push(fork_deny(&warm)?);
    let btw = Request::after_history(&w, &[user_text(&w.btw_question)]);
    rows.push(btw_design(&warm, "btw_keep_tools", btw.clone())?);
    let mut dropped = btw.clone();
    dropped.tools.clear();
    rows.push(btw_design(&warm, "btw_drop_tools", dropped)?);
    let mut none = btw;
    none.tool_choice = Some(json!({"type": "none"}));
    rows.push(btw_design(&warm, "btw_tool_choice_none", none)?);
    rows.push(fork_thinking(&w, policy, &model)?);
    debug_assert!(rows.iter().map(|r| r.id).eq(SCENARIOS.iter().map(|s| s.0)));
    Ok(Report {
        workload,
        about: w.about.clone(),
        policy,
        model: model.name.clone(),
        min_cacheable_tokens: model.min_cacheable_tokens,
        model_params: model.clone(),
        main_turns: w.turns(),
        tools_tokens,
        system_tokens,
        baseline_next_turn: warm.one(&main_next(&w, &[]))?,
        scenarios: rows,
    })
}

/// The scenarios that are one request against the warm cache, in table order.
fn single_requests(w: &Workload) -> Vec<(&'static str, Request)> {
    let fork = Request::after_history(w, &[user_text(&w.fork_task)]);
    let mut edited = fork.clone();
    edited.system.push_str(&w.read_only_note);
    let fresh = Request {
        model: w.model.clone(),
        tools: w.subagent.tools.clone(),
        system: w.subagent.system.clone(),
        messages: vec![user_text(&w.subagent.task)],
        tool_choice: None,
        thinking: None,
        shared_end: None,
    };
    let mut reordered = fork.clone();
    reordered.tools.reverse();
    vec![
        ("fork", fork.clone()),
        ("fork_drop_bash", fork.without_tool(&w.drop_tool)),
        ("fork_edit_system", edited),
        ("fresh_subagent", fresh),
        ("btw", Request::after_history(w, &[user_text(&w.btw_question)])),
        ("fork_reorder_tools", reordered),
    ]
}
