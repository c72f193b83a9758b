//! The scenario workloads: a main session's tools, system prompt and 30-turn conversation, and
//! what the scenarios append or change (a fork's task, a /btw question, a sub-agent's own
//! prompt). Shipped as JSON in `workloads/` and embedded in the binary; parsed and checked here.
//!
//! It knows content, not caching: turning a workload into request bodies is `bodies.rs`.

use serde::Deserialize;
use serde_json::Value;

/// The embedded workloads, by name.
const SEED_JSON: &str = include_str!("workloads/seed.json");
const CLAUDE_CODE_JSON: &str = include_str!("workloads/claude-code.json");

/// Which embedded workload to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkloadName {
    /// The seed chapter's demo proportions (about 9,100 tokens, an 80-token tools block).
    Seed,
    /// Realistic Claude Code proportions (about 13,700 tokens of tools + system).
    ClaudeCode,
}

impl WorkloadName {
    /// The name on the command line and in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadName::Seed => "seed",
            WorkloadName::ClaudeCode => "claude-code",
        }
    }

    /// The embedded JSON text.
    pub fn json(self) -> &'static str {
        match self {
            WorkloadName::Seed => SEED_JSON,
            WorkloadName::ClaudeCode => CLAUDE_CODE_JSON,
        }
    }

    /// The parsed, checked workload.
    pub fn load(self) -> Result<Workload, WorkloadError> {
        Workload::parse(self.json(), &format!("workloads/{}.json", self.as_str()))
    }
}

/// A workload file that does not parse or breaks a rule; `origin` names the file.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{origin}: {source}")]
    Json { origin: String, source: serde_json::Error },
    #[error("{origin}: `{key}`: {message}")]
    Invalid { origin: String, key: String, message: String },
}

/// A tool call the fork's model makes (`fork_deny_edit` runs it through the permission check).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    pub input: Value,
}

/// A sub-agent started fresh: its own tools and system prompt, and its task as the only message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubAgent {
    pub tools: Vec<Value>,
    pub system: String,
    pub task: String,
}

/// One workload, as in its JSON file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    /// One sentence on the proportions it stands for.
    pub about: String,
    /// Model preset name (the cache is per model; the preset gives the minimum length).
    pub model: String,
    /// The main session's tool definitions (Messages-API `tools`).
    pub tools: Vec<Value>,
    pub system: String,
    /// The main session's history: user, assistant, user, ... (one turn = one pair). Turn k's
    /// request carries the messages before its assistant reply.
    pub conversation: Vec<Value>,
    /// The user's next message in the main session (after a /btw).
    pub next_user_message: String,
    /// What a fork appends to the parent's history.
    pub fork_task: String,
    /// The fork's first tool call (to a tool that `deny_tool` refuses).
    pub fork_tool_call: ToolCall,
    /// The tool `fork_drop_bash` removes from the tools.
    pub drop_tool: String,
    /// The tool a call-time permission rule refuses in `fork_deny_edit`.
    pub deny_tool: String,
    /// What `fork_edit_system` appends to the system prompt.
    pub read_only_note: String,
    pub btw_question: String,
    pub btw_answer: String,
    pub subagent: SubAgent,
}

impl Workload {
    /// Parse and check a workload's JSON text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Workload, WorkloadError> {
        let w: Workload = serde_json::from_str(text)
            .map_err(|source| WorkloadError::Json { origin: origin.to_string(), source })?;
        w.check(origin)?;
        Ok(w)
    }

    /// Number of turns of the main session (user/assistant pairs).
    pub fn turns(&self) -> usize {
        self.conversation.len() / 2
    }

    /// Names of the main session's tools, in order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().filter_map(tool_name).collect()
    }

    fn check(&self, origin: &str) -> Result<(), WorkloadError> {
        let bad = |key: &str, message: String| WorkloadError::Invalid {
            origin: origin.to_string(),
            key: key.to_string(),
            message,
        };
        if self.conversation.is_empty() || !self.conversation.len().is_multiple_of(2) {
            let n = self.conversation.len();
            return Err(bad("conversation", format!("{n} messages: need user/assistant pairs")));
        }
        for (i, m) in self.conversation.iter().enumerate() {
            let want = if i % 2 == 0 { "user" } else { "assistant" };
            if m.get("role").and_then(Value::as_str) != Some(want) {
                return Err(bad(&format!("conversation[{i}].role"), format!("expected {want}")));
            }
        }
        if self.tools.len() < 2 || self.tools.iter().any(|t| tool_name(t).is_none()) {
            return Err(bad("tools", "need at least two tools, each with a name".into()));
        }
        let names = self.tool_names();
        for (key, tool) in [("drop_tool", &self.drop_tool), ("deny_tool", &self.deny_tool)] {
            if !names.contains(&tool.as_str()) {
                return Err(bad(key, format!("`{tool}` is not one of the tools {names:?}")));
            }
        }
        if self.fork_tool_call.name != self.deny_tool {
            let msg = format!("calls `{}`, not the denied tool", self.fork_tool_call.name);
            return Err(bad("fork_tool_call.name", msg));
        }
        Ok(())
    }
}

/// A tool definition's `name`.
pub fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}
