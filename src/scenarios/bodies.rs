//! Request bodies: a workload's content rendered as Messages-API JSON, with Claude-Code-like
//! `cache_control` breakpoints (end of the system prompt, end of the history shared with the
//! parent, last message: at most 3 of the API's 4).
//!
//! Bodies are the same under both policies (`every-block` ignores the markers). Every message's
//! content is a list of content blocks, so that marking a block (which the cache core strips
//! from the canonical bytes) never changes a message's bytes from one request to the next.

use super::workload::{tool_name, Workload};
use serde_json::{json, Value};

/// Output budget written into every body (does not affect the cache).
const MAX_TOKENS: u64 = 4096;

/// One request before it becomes JSON.
#[derive(Debug, Clone)]
pub struct Request {
    pub model: String,
    /// Tool definitions; empty = no `tools` key.
    pub tools: Vec<Value>,
    pub system: String,
    /// Messages, content already in list form.
    pub messages: Vec<Value>,
    /// `tool_choice`; `None` = absent (the API's default, `auto`).
    pub tool_choice: Option<Value>,
    /// `thinking`; `None` = absent.
    pub thinking: Option<Value>,
    /// Index of the last message shared with the parent, marked as a breakpoint.
    pub shared_end: Option<usize>,
}

impl Request {
    /// The main session's request at turn `k` (1-based): the history before turn k's reply.
    pub fn main_turn(w: &Workload, k: usize) -> Request {
        assert!(k >= 1 && k <= w.turns(), "turn {k} of {}", w.turns());
        Request {
            model: w.model.clone(),
            tools: w.tools.clone(),
            system: w.system.clone(),
            messages: w.conversation[..2 * k - 1].iter().map(normalize).collect(),
            tool_choice: None,
            thinking: None,
            shared_end: None,
        }
    }

    /// The main session's whole history (all turns with their replies) + `appended` messages,
    /// the history's end marked as the shared part.
    pub fn after_history(w: &Workload, appended: &[Value]) -> Request {
        let mut messages: Vec<Value> = w.conversation.iter().map(normalize).collect();
        let shared_end = messages.len() - 1;
        messages.extend(appended.iter().map(normalize));
        Request {
            model: w.model.clone(),
            tools: w.tools.clone(),
            system: w.system.clone(),
            messages,
            tool_choice: None,
            thinking: None,
            shared_end: Some(shared_end),
        }
    }

    /// The same request without the tool called `name`.
    pub fn without_tool(mut self, name: &str) -> Request {
        self.tools.retain(|t| tool_name(t) != Some(name));
        self
    }

    /// The Messages-API body, with breakpoints on the system prompt, the shared end and the
    /// last message.
    pub fn body(&self) -> Value {
        let mut messages = self.messages.clone();
        let last = messages.len().checked_sub(1);
        for i in [self.shared_end, last].into_iter().flatten() {
            mark_last_block(&mut messages[i]);
        }
        let mut body = json!({
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": [{"type": "text", "text": self.system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        });
        if !self.tools.is_empty() {
            body["tools"] = Value::Array(self.tools.clone());
        }
        if let Some(choice) = &self.tool_choice {
            body["tool_choice"] = choice.clone();
        }
        if let Some(thinking) = &self.thinking {
            body["thinking"] = thinking.clone();
        }
        body
    }
}

/// A user message with one text block.
pub fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

/// An assistant message with one text block.
pub fn assistant_text(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
}

/// A message with its content in list form (a string becomes one text block).
pub fn normalize(message: &Value) -> Value {
    let mut m = message.clone();
    if let Some(text) = m.get("content").and_then(Value::as_str) {
        m["content"] = json!([{"type": "text", "text": text}]);
    }
    m
}

/// Put `cache_control` on the message's last content block.
fn mark_last_block(message: &mut Value) {
    if let Some(block) =
        message.get_mut("content").and_then(Value::as_array_mut).and_then(|c| c.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}
