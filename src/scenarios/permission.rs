//! Call-time permission rules: the way to restrict a fork without touching its prefix.
//!
//! The tool stays in the request's `tools` (so the prefix, and the cache, are the parent's); when
//! the model calls a denied tool, the harness does not run it and returns an error
//! `tool_result` instead. This module is that check and the simulated execution: it runs no
//! tool, it only decides and writes the result the harness would send back.

use super::workload::ToolCall;
use serde_json::{json, Value};

/// Deny rules by tool name (argument patterns such as `Bash(rm *)` are out of scope).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    pub deny: Vec<String>,
}

/// What the harness did with one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// Allowed: the call would run (the simulator does not run it).
    Allowed,
    /// Refused by the deny rule naming `rule`; `message` is the error the model sees.
    Refused { rule: String, message: String },
}

impl Permissions {
    /// Deny the named tools.
    pub fn deny(tools: &[&str]) -> Self {
        Permissions { deny: tools.iter().map(|t| t.to_string()).collect() }
    }

    /// Check a call at call time, as a harness does before running a tool.
    pub fn check(&self, call: &ToolCall) -> CallOutcome {
        match self.deny.iter().find(|rule| **rule == call.name) {
            Some(rule) => CallOutcome::Refused {
                rule: rule.clone(),
                message: format!(
                    "Permission to use {} has been denied by the rule `deny: {rule}`. \
                     The call was not executed.",
                    call.name
                ),
            },
            None => CallOutcome::Allowed,
        }
    }
}

/// The `tool_result` content block the harness sends back for `outcome`.
pub fn tool_result(tool_use_id: &str, outcome: &CallOutcome) -> Value {
    match outcome {
        CallOutcome::Refused { message, .. } => json!({
            "type": "tool_result", "tool_use_id": tool_use_id, "content": message, "is_error": true
        }),
        CallOutcome::Allowed => json!({
            "type": "tool_result", "tool_use_id": tool_use_id,
            "content": "(simulated: prefixsim does not run tools)"
        }),
    }
}
