//! Messages-API-shaped JSON bodies to prompts: blocks with canonical bytes, breakpoints from
//! `cache_control`.
//!
//! Granularity (docs/cache.md): the whole `tools` list is one block, the system prompt one
//! block, each message one block. Canonical bytes: compact JSON with object keys **in the order
//! they were sent** (the API caches the bytes it is sent: a `tool_use` input whose keys come
//! back in another order misses, see docs/anthropic.md), and the `cache_control` markers removed
//! (a marker says where to cache, it is not content; automatic caching moves it every turn). A
//! string `system` is its raw text. Tokens: `ceil(chars / 4)` of the canonical bytes (the seed's
//! estimate over its JSON-serialized blocks). A body is a `serde_json::Value`, whose objects keep
//! their keys in the order of the text (serde_json's `preserve_order`), or as a `json!` wrote
//! them; of a key given twice, the last value at the first one's place.
//!
//! Earlier turns' thinking (the extended-thinking page): on a model that strips it (its preset
//! says so, `config::preset_for` on the body's model name), or with `thinking: {"type":
//! "disabled"}`, the thinking blocks of assistant messages before the last user message that
//! is not only tool results are dropped: the request is processed (cached and billed) as if
//! they had never been sent. A model that is not a preset keeps them.
//!
//! Layer parameters: `tool_choice`, `thinking` and `output_config` are folded before the first
//! message (they invalidate the messages only); `speed` before the system prompt (system and
//! messages). Parameters are settings the API parses, not content it renders: their digests
//! use sorted keys (named assumption). Breakpoints: every `cache_control` on a tool, a system block or a content block
//! marks the block holding it; a top-level `cache_control` is automatic caching, on the last
//! block. Several markers in one block (possible only inside a list) give one breakpoint with the
//! TTL of the last marker. Rules as the API's 400s: at most 4 markers (automatic caching takes a
//! slot; it is a no-op on an explicit marker of the same TTL and an error on another TTL), 1h
//! markers before 5m ones, no marker on thinking blocks or empty text. Errors name the path,
//! e.g. `messages[3].content[1].cache_control`.

use crate::cache::{
    estimate_tokens, Block, Breakpoint, Digest, Layer, Prompt, ThinkingHistory, Ttl,
    MAX_BREAKPOINTS,
};
use crate::config::preset_for;
use serde_json::{Map, Value};

/// An object's entries.
type Obj = Map<String, Value>;

/// A body the parser refuses: the JSON path and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("request body, `{path}`: {message}")]
pub struct BodyError {
    pub path: String,
    pub message: String,
}

fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, BodyError> {
    Err(BodyError { path: path.into(), message: message.into() })
}

/// A parsed body: its blocks, where each came from, its parameters and breakpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedBody {
    pub model: String,
    pub blocks: Vec<Block>,
    pub system_params: Digest,
    pub message_params: Digest,
    pub breakpoints: Vec<Breakpoint>,
}

impl ParsedBody {
    /// The prompt from scratch, in cache `scope`.
    pub fn prompt(&self, scope: &str) -> Prompt {
        let mut p = Prompt::with_capacity(scope, &self.model, self.blocks.len());
        p.set_system_params(self.system_params);
        p.set_message_params(self.message_params);
        for b in &self.blocks {
            p.push(*b);
        }
        p
    }

    /// The prompt built by extending `parent_prompt` (the prompt of `parent`, in the same scope)
    /// when this body extends the parent body: same model and parameters, the parent's blocks a
    /// prefix of ours. Only the new blocks are hashed. `None` when it does not extend it.
    pub fn extend_prompt(&self, parent: &ParsedBody, parent_prompt: &Prompt) -> Option<Prompt> {
        let extends = self.model == parent.model
            && self.system_params == parent.system_params
            && self.message_params == parent.message_params
            && parent_prompt.len() == parent.blocks.len()
            && self.blocks.starts_with(&parent.blocks);
        if !extends {
            return None;
        }
        let mut p = parent_prompt.clone();
        for b in &self.blocks[parent.blocks.len()..] {
            p.push(*b);
        }
        Some(p)
    }
}

/// Parse a body into a prompt (scope `default`) and its breakpoints.
pub fn request_from_json(body: &Value) -> Result<(Prompt, Vec<Breakpoint>), BodyError> {
    let parsed = parse_body(body)?;
    Ok((parsed.prompt("default"), parsed.breakpoints))
}

/// A `cache_control` marker found in the body, in document order.
struct Marker {
    block: usize,
    ttl: Ttl,
    path: String,
}

#[derive(Default)]
struct Builder {
    blocks: Vec<Block>,
    markers: Vec<Marker>,
}

impl Builder {
    fn push(&mut self, layer: Layer, canonical: &str) {
        let tokens = estimate_tokens(canonical);
        self.blocks.push(Block::from_bytes(layer, canonical.as_bytes(), tokens));
    }

    fn push_list(&mut self, layer: Layer, list: &[Value]) {
        let mut s = String::new();
        canonical_list(list, &mut s);
        self.push(layer, &s);
    }
}

/// Parse and validate a body, one block for the tools, one for the system prompt and one per
/// message.
pub fn parse_body(body: &Value) -> Result<ParsedBody, BodyError> {
    let Some(obj) = body.as_object() else { return err("$", "the body must be a JSON object") };
    let model = match body.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(_) => return err("model", "must be a non-empty string"),
        None => return err("model", "missing (the model name is part of the cache key)"),
    };
    let mut b = Builder::default();
    if let Some(tools) = body.get("tools") {
        parse_tools(tools, &mut b)?;
    }
    if let Some(system) = body.get("system") {
        parse_system(system, &mut b)?;
    }
    match body.get("messages") {
        Some(Value::Array(messages)) => {
            let strip_before = strips_thinking(body, &model).then(|| last_instruction(messages));
            for (i, m) in messages.iter().enumerate() {
                let strip = strip_before.flatten().is_some_and(|k| i < k)
                    && m.get("role").and_then(Value::as_str) == Some("assistant");
                match strip {
                    true => parse_message(&without_thinking(m), i, &mut b)?,
                    false => parse_message(m, i, &mut b)?,
                }
            }
        }
        Some(_) => return err("messages", "must be an array of messages"),
        None => return err("messages", "missing"),
    }
    if let Some(cc) = body.get("cache_control") {
        automatic_marker(cc, &mut b)?;
    }
    let breakpoints = breakpoints_of(&b.markers)?;
    Ok(ParsedBody {
        model,
        blocks: b.blocks,
        system_params: params_digest(obj, &["speed"]),
        message_params: params_digest(obj, &["output_config", "thinking", "tool_choice"]),
        breakpoints,
    })
}

/// Whether earlier turns' thinking is dropped: the model strips it, or thinking is disabled.
fn strips_thinking(body: &Value, model: &str) -> bool {
    let disabled = body.get("thinking").and_then(|t| t.get("type")).and_then(Value::as_str)
        == Some("disabled");
    let model_strips = preset_for(model).is_some_and(|m| m.thinking == ThinkingHistory::Stripped);
    disabled || model_strips
}

/// The index of the last user message that is not only tool results (a new instruction).
fn last_instruction(messages: &[Value]) -> Option<usize> {
    let is_instruction = |m: &Value| {
        m.get("role").and_then(Value::as_str) == Some("user")
            && match m.get("content") {
                Some(Value::Array(items)) => items
                    .iter()
                    .any(|c| c.get("type").and_then(Value::as_str) != Some("tool_result")),
                _ => true,
            }
    };
    messages.iter().rposition(is_instruction)
}

/// The message with its thinking and redacted_thinking content blocks removed.
fn without_thinking(m: &Value) -> Value {
    let thinking = |c: &Value| {
        matches!(c.get("type").and_then(Value::as_str), Some("thinking" | "redacted_thinking"))
    };
    let mut m = m.clone();
    if let Some(Value::Array(items)) = m.get_mut("content") {
        items.retain(|c| !thinking(c));
    }
    m
}

/// Digest of the named top-level keys (absent = null), keys sorted: settings, not content.
fn params_digest(obj: &Obj, keys: &[&str]) -> Digest {
    let mut s = String::new();
    for k in keys {
        s.push_str(k);
        s.push('=');
        sorted_compact(obj.get(*k).unwrap_or(&Value::Null), &mut s);
        s.push('\n');
    }
    Digest::of(s.as_bytes())
}

fn parse_tools(tools: &Value, b: &mut Builder) -> Result<(), BodyError> {
    let Value::Array(list) = tools else {
        return err("tools", "must be an array of tool definitions");
    };
    if list.is_empty() {
        return Ok(());
    }
    let first = b.blocks.len();
    for (i, t) in list.iter().enumerate() {
        let path = format!("tools[{i}]");
        let Value::Object(o) = t else { return err(path, "a tool definition must be an object") };
        if !matches!(t.get("name"), Some(Value::String(_))) {
            return err(format!("{path}.name"), "missing or not a string");
        }
        marker_of(o, first, &path, b)?;
    }
    b.push_list(Layer::Tools, list);
    Ok(())
}

fn parse_system(system: &Value, b: &mut Builder) -> Result<(), BodyError> {
    let first = b.blocks.len();
    match system {
        Value::String(text) => {
            b.push(Layer::System, text);
            Ok(())
        }
        Value::Array(list) => {
            for (i, item) in list.iter().enumerate() {
                let path = format!("system[{i}]");
                check_content_block(item, first, &path, b)?;
            }
            if !list.is_empty() {
                b.push_list(Layer::System, list);
            }
            Ok(())
        }
        _ => err("system", "must be a string or an array of text blocks"),
    }
}

fn parse_message(m: &Value, i: usize, b: &mut Builder) -> Result<(), BodyError> {
    let path = format!("messages[{i}]");
    if m.as_object().is_none() {
        return err(path, "a message must be an object");
    }
    let Some(Value::String(_)) = m.get("role") else {
        return err(format!("{path}.role"), "missing or not a string");
    };
    if m.get("cache_control").is_some() {
        return err(
            format!("{path}.cache_control"),
            "cache_control goes on a content block, not on the message",
        );
    }
    match m.get("content") {
        Some(Value::String(_)) => {}
        Some(Value::Array(list)) => {
            let block = b.blocks.len();
            for (k, item) in list.iter().enumerate() {
                check_content_block(item, block, &format!("{path}.content[{k}]"), b)?;
            }
        }
        Some(_) => {
            return err(format!("{path}.content"), "must be a string or an array of content blocks")
        }
        None => return err(format!("{path}.content"), "missing"),
    }
    let mut s = String::new();
    canonical(m, true, &mut s);
    b.push(Layer::Messages, &s);
    Ok(())
}

/// A content block (system or message): an object with a string `type`; its marker, if any.
fn check_content_block(
    item: &Value,
    block: usize,
    path: &str,
    b: &mut Builder,
) -> Result<(), BodyError> {
    let Value::Object(o) = item else { return err(path, "a content block must be an object") };
    let Some(Value::String(kind)) = item.get("type") else {
        return err(format!("{path}.type"), "missing or not a string");
    };
    if item.get("cache_control").is_some() {
        if kind == "thinking" || kind == "redacted_thinking" {
            return err(
                format!("{path}.cache_control"),
                "thinking blocks cannot carry cache_control",
            );
        }
        if kind == "text" && item.get("text").and_then(Value::as_str).is_some_and(str::is_empty) {
            return err(format!("{path}.cache_control"), "empty text blocks cannot be cached");
        }
    }
    marker_of(o, block, path, b)
}

/// Record the object's `cache_control` marker (if any) on block `block`.
fn marker_of(o: &Obj, block: usize, path: &str, b: &mut Builder) -> Result<(), BodyError> {
    if let Some(cc) = o.get("cache_control") {
        let path = format!("{path}.cache_control");
        let ttl = parse_cache_control(cc, &path)?;
        b.markers.push(Marker { block, ttl, path });
    }
    Ok(())
}

fn parse_cache_control(cc: &Value, path: &str) -> Result<Ttl, BodyError> {
    if cc.as_object().is_none() {
        return err(path, r#"must be an object like {"type": "ephemeral"}"#);
    }
    let text = |v: &Value| v.to_string();
    match cc.get("type") {
        Some(Value::String(t)) if t == "ephemeral" => {}
        Some(v) => {
            return err(
                format!("{path}.type"),
                format!("`{}`: the only cache type is \"ephemeral\"", text(v)),
            )
        }
        None => return err(format!("{path}.type"), "missing (use \"ephemeral\")"),
    }
    match cc.get("ttl") {
        None => Ok(Ttl::FiveMin),
        Some(Value::String(t)) if t == "5m" => Ok(Ttl::FiveMin),
        Some(Value::String(t)) if t == "1h" => Ok(Ttl::OneHour),
        Some(v) => err(format!("{path}.ttl"), format!("`{}`: use \"5m\" or \"1h\"", text(v))),
    }
}

/// Top-level `cache_control`: a breakpoint on the last block.
fn automatic_marker(cc: &Value, b: &mut Builder) -> Result<(), BodyError> {
    let ttl = parse_cache_control(cc, "cache_control")?;
    let Some(last) = b.blocks.len().checked_sub(1) else {
        return err("cache_control", "automatic caching needs at least one block to cache");
    };
    if let Some(m) = b.markers.iter().rev().find(|m| m.block == last) {
        if m.ttl == ttl {
            return Ok(());
        }
        let other = m.path.clone();
        return err("cache_control", format!("automatic caching's TTL differs from the explicit marker `{other}` on the last block"));
    }
    if b.markers.len() >= MAX_BREAKPOINTS {
        return err("cache_control", format!("automatic caching needs a breakpoint slot, but {MAX_BREAKPOINTS} explicit ones exist"));
    }
    b.markers.push(Marker { block: last, ttl, path: "cache_control".into() });
    Ok(())
}

/// At most 4 markers, 1h before 5m; one breakpoint per block (the last marker's TTL).
fn breakpoints_of(markers: &[Marker]) -> Result<Vec<Breakpoint>, BodyError> {
    if let Some(fifth) = markers.get(MAX_BREAKPOINTS) {
        return err(
            fifth.path.clone(),
            format!(
                "a 5th cache breakpoint ({} in all): at most {MAX_BREAKPOINTS} per request",
                markers.len()
            ),
        );
    }
    let mut out: Vec<Breakpoint> = Vec::new();
    let mut first_5m: Option<&str> = None;
    for m in markers {
        match m.ttl {
            Ttl::OneHour => {
                if let Some(p) = first_5m {
                    return err(m.path.clone(), format!("a 1h breakpoint after the 5m one at `{p}`: 1h breakpoints must come first"));
                }
            }
            _ => first_5m = first_5m.or(Some(&m.path)),
        }
        match out.last_mut() {
            Some(last) if last.index == m.block => last.ttl = m.ttl,
            _ => out.push(Breakpoint { index: m.block, ttl: m.ttl }),
        }
    }
    Ok(out)
}

/// A list whose items are objects that may carry `cache_control` (stripped).
fn canonical_list(list: &[Value], out: &mut String) {
    out.push('[');
    for (i, v) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        canonical(v, true, out);
    }
    out.push(']');
}

/// Compact JSON, keys in the order sent. With `strip`, this object's `cache_control` key is
/// dropped, and so is that of the items of its `content` list (a message's content blocks).
fn canonical(v: &Value, strip: bool, out: &mut String) {
    let Value::Object(entries) = v else { return out.push_str(&v.to_string()) };
    out.push('{');
    let kept = entries.iter().filter(|(k, _)| !(strip && *k == "cache_control"));
    for (i, (k, value)) in kept.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(k, out);
        out.push(':');
        match (value, strip && k == "content") {
            (Value::Array(items), true) => canonical_list(items, out),
            (value, _) => out.push_str(&value.to_string()),
        }
    }
    out.push('}');
}

/// Compact JSON with every object's keys sorted.
fn sorted_compact(v: &Value, out: &mut String) {
    let mut sorted = v.clone();
    sorted.sort_all_objects();
    out.push_str(&sorted.to_string());
}

/// A JSON string literal, escaped as `serde_json` escapes it.
fn write_string(s: &str, out: &mut String) {
    out.push_str(&Value::from(s).to_string());
}
