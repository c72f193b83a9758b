//! The reader of usage logs (`calibrate` and `replay` both read them): JSON Lines, one API
//! call a line, as a program that logs its SDK responses has them, in the usage form of any
//! of three APIs:
//!
//! ```json
//! {"model": "claude-sonnet-4-5-20250929",
//!  "usage": {"input_tokens": 120, "cache_creation_input_tokens": 1800,
//!            "cache_read_input_tokens": 42000, "output_tokens": 310},
//!  "ttft_ms": 2140, "duration_ms": 9870, "session": "run-7"}
//! {"model": "gpt-5.4", "usage": {"prompt_tokens": 2006, "completion_tokens": 300,
//!  "prompt_tokens_details": {"cached_tokens": 1920}}, "ttft_ms": 610, "session": 7}
//! {"modelVersion": "gemini-2.5-flash", "usageMetadata": {"promptTokenCount": 10000,
//!  "cachedContentTokenCount": 8000, "candidatesTokenCount": 90, "thoughtsTokenCount": 40},
//!  "ttft_ms": 480}
//! ```
//!
//! The token accounting differs (docs/calibrate.md has the sources). Anthropic's Messages API
//! `input_tokens` are the tokens neither read from nor written to the cache, so `prefill =
//! input_tokens + cache_creation_input_tokens` and `cached = cache_read_input_tokens`.
//! OpenAI's counts INCLUDE the cached tokens: Chat Completions `prompt_tokens` (cached:
//! `prompt_tokens_details.cached_tokens`) and the Responses API's `input_tokens` (cached:
//! `input_tokens_details.cached_tokens`), so `prefill = prompt - cached`; `cache_write_tokens`
//! (GPT-5.6 and later) is part of the prefill and only checked. Gemini's `promptTokenCount`
//! includes `cachedContentTokenCount` the same way; its output is `candidatesTokenCount +
//! thoughtsTokenCount` (thoughts are decoded but counted apart). Missing or null cache fields
//! are 0. `ttft_ms` and `duration_ms` are the logging program's measurements (no API response
//! carries timing; `calibrate` needs one of them); `session` (string or number) names the
//! conversation; `timestamp_ms` (ms since any epoch), else `created` or `created_at` (Unix
//! seconds, as OpenAI responses carry them) is the send time (`replay` orders by it). Other
//! keys are ignored. A bad line is an error naming file and line.

use std::path::Path;

use serde::Deserialize;

use super::TraceError;
use crate::input::{self, LineError, MAX_LINE_BYTES};

#[derive(Deserialize)]
struct Line {
    /// Gemini's responses name the model `modelVersion`.
    #[serde(alias = "modelVersion")]
    model: String,
    usage: Option<Usage>,
    #[serde(rename = "usageMetadata")]
    usage_metadata: Option<GeminiUsage>,
    ttft_ms: Option<f64>,
    duration_ms: Option<f64>,
    session: Option<serde_json::Value>,
    timestamp_ms: Option<serde_json::Value>,
    #[serde(alias = "created_at")]
    created: Option<serde_json::Value>,
}

/// The `usage` object of Anthropic's Messages API, OpenAI's Chat Completions or OpenAI's
/// Responses API (told apart by their keys: `split`).
#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<Details>,
    input_tokens_details: Option<Details>,
}

/// OpenAI's `prompt_tokens_details` / `input_tokens_details`.
#[derive(Deserialize, Default)]
struct Details {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

/// Gemini's `usageMetadata` (zero counts may be left out, as proto3 JSON does).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiUsage {
    prompt_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

/// One call's input as the provider recorded it: `uncached + cache_write + cache_read` is
/// the whole prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Split {
    /// Tokens neither read from nor written to the cache.
    pub uncached: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    pub output: u64,
    /// The record counts cache writes (Anthropic's `cache_creation_input_tokens`, OpenAI's
    /// `cache_write_tokens`, the spans' `cache_creation` attribute); without it a provider
    /// caches automatically and says nothing of what it wrote.
    pub writes_recorded: bool,
}

impl Split {
    /// Prefilled tokens: uncached + written.
    pub fn prefill(&self) -> u64 {
        self.uncached + self.cache_write
    }
    /// The whole prompt.
    pub fn input(&self) -> u64 {
        self.uncached + self.cache_write + self.cache_read
    }
}

/// One line of a usage log, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall {
    pub model: String,
    /// `session` as text (a number as written), `None` when absent or null.
    pub session: Option<String>,
    pub split: Split,
    pub ttft_ms: Option<f64>,
    pub duration_ms: Option<f64>,
    /// Send time, ms (`timestamp_ms`, else `created` / `created_at` x 1000).
    pub time_ms: Option<f64>,
}

/// Read a usage log (optionally gzipped; at most `input::MAX_FILE_BYTES` decompressed),
/// calling `each` with every call and its line number; an error of `each` stops the read.
/// A log without a call is an error.
pub fn read(
    path: &Path,
    each: &mut dyn FnMut(u64, LoggedCall) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let what = "a usage log (decompressed)";
    let mut reader = input::open_capped(path, input::MAX_FILE_BYTES, what)
        .map_err(|e| TraceError::io(path, e))?;
    let (mut buf, mut line_no, mut calls) = (Vec::new(), 0u64, 0u64);
    loop {
        line_no += 1;
        match input::read_line(&mut *reader, &mut buf, MAX_LINE_BYTES) {
            Ok(0) => break,
            Ok(_) => {}
            Err(LineError::Io(e)) => return Err(TraceError::io(path, e)),
            Err(LineError::TooLong) => {
                let msg = format!("line longer than {} MiB", MAX_LINE_BYTES >> 20);
                return Err(TraceError::line(path, line_no, msg));
            }
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let call = parse(&buf).map_err(|e| TraceError::line(path, line_no, e))?;
        calls += 1;
        each(line_no, call)?;
    }
    if calls == 0 {
        return Err(TraceError::file(path, "no API call in this usage log"));
    }
    Ok(())
}

/// One line, parsed and checked (the message names the key and value).
fn parse(bytes: &[u8]) -> Result<LoggedCall, String> {
    let line: Line =
        serde_json::from_slice(bytes).map_err(|e| super::trace::json_error(&e).to_string())?;
    let split = check(&line).and_then(|()| split(&line)).map_err(|e| e.to_string())?;
    let session = match &line.session {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(v) if !v.is_null() => Some(v.to_string()),
        _ => None,
    };
    let stamp = |v: &Option<serde_json::Value>, key: &'static str, scale: f64| match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x * scale)),
            _ => Err(RecordError::NotTime {
                key,
                value: crate::config::capped(&v.to_string()).into_owned(),
            }),
        },
    };
    let time_ms = match stamp(&line.timestamp_ms, "timestamp_ms", 1.0).map_err(|e| e.to_string())? {
        Some(t) => Some(t),
        None => stamp(&line.created, "created", 1e3).map_err(|e| e.to_string())?,
    };
    Ok(LoggedCall {
        model: line.model,
        session,
        split,
        ttft_ms: line.ttft_ms,
        duration_ms: line.duration_ms,
        time_ms,
    })
}

/// What is wrong with one line of a usage log (the reader adds the file and line).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum RecordError {
    #[error("`model` is empty")]
    EmptyModel,
    #[error("`{key}` = {value} is not a non-negative number of milliseconds")]
    NotMilliseconds { key: &'static str, value: f64 },
    #[error("`{key}` = {value} is not a non-negative number (a send time)")]
    NotTime { key: &'static str, value: String },
    #[error("needs `usage` (Anthropic, OpenAI) or `usageMetadata` (Gemini)")]
    NoUsage,
    #[error("has both `usage` and `usageMetadata`: one API call has one")]
    BothUsages,
    #[error("`{0}` is missing")]
    Missing(&'static str),
    #[error("`{0}` and `{1}` come from different APIs: one API call has one usage form")]
    Mixed(&'static str, &'static str),
    #[error(
        "`{part}` = {cached}{plus} is more than `{total_key}` = {total} (this API's count \
         includes the cached tokens)"
    )]
    PartAboveTotal {
        part: &'static str,
        cached: u64,
        plus: String,
        total_key: &'static str,
        total: u64,
    },
    #[error(
        "`ttft_ms` = {ttft_ms} is later than `duration_ms` = {duration_ms} (the response cannot \
         end before it begins)"
    )]
    TtftAfterDuration { ttft_ms: f64, duration_ms: f64 },
}

/// The checks serde cannot make: a model named, durations non-negative, ttft <= duration.
fn check(line: &Line) -> Result<(), RecordError> {
    if line.model.trim().is_empty() {
        return Err(RecordError::EmptyModel);
    }
    let ms = |v: Option<f64>, key: &'static str| match v {
        Some(value) if !(value.is_finite() && value >= 0.0) => {
            Err(RecordError::NotMilliseconds { key, value })
        }
        _ => Ok(()),
    };
    ms(line.ttft_ms, "ttft_ms")?;
    ms(line.duration_ms, "duration_ms")?;
    match (line.ttft_ms, line.duration_ms) {
        (Some(ttft_ms), Some(duration_ms)) if ttft_ms > duration_ms => {
            Err(RecordError::TtftAfterDuration { ttft_ms, duration_ms })
        }
        _ => Ok(()),
    }
}

/// The token split of `line`'s usage, by the accounting of the API it comes from.
fn split(line: &Line) -> Result<Split, RecordError> {
    match (&line.usage, &line.usage_metadata) {
        (Some(_), Some(_)) => Err(RecordError::BothUsages),
        (None, None) => Err(RecordError::NoUsage),
        (None, Some(g)) => {
            let total = "usageMetadata.promptTokenCount";
            let prompt = g.prompt_token_count.ok_or(RecordError::Missing(total))?;
            let cached = g.cached_content_token_count.unwrap_or(0);
            let part = "usageMetadata.cachedContentTokenCount";
            let prefill = included(prompt, (total, part), cached, 0)?;
            let output =
                g.candidates_token_count.unwrap_or(0) + g.thoughts_token_count.unwrap_or(0);
            Ok(openai_like(prefill, 0, cached, output, false))
        }
        (Some(u), None) => usage_split(u),
    }
}

/// The split of a `usage` object: OpenAI Chat Completions (`prompt_tokens`), the Responses
/// API (`input_tokens_details`), else Anthropic's Messages API. A plain `input_tokens` and
/// `output_tokens` reads the same in the last two.
fn usage_split(u: &Usage) -> Result<Split, RecordError> {
    let chat = u.prompt_tokens.is_some() || u.completion_tokens.is_some();
    let anthropic = u.cache_creation_input_tokens.is_some() || u.cache_read_input_tokens.is_some();
    let need = |v: Option<u64>, key| v.ok_or(RecordError::Missing(key));
    if chat || u.prompt_tokens_details.is_some() {
        let other = [
            (u.input_tokens.is_some(), "usage.input_tokens"),
            (u.output_tokens.is_some(), "usage.output_tokens"),
            (u.input_tokens_details.is_some(), "usage.input_tokens_details"),
            (anthropic, "usage.cache_read_input_tokens"),
        ];
        if let Some(&(_, key)) = other.iter().find(|o| o.0) {
            return Err(RecordError::Mixed("usage.prompt_tokens", key));
        }
        let total = "usage.prompt_tokens";
        let prompt = need(u.prompt_tokens, total)?;
        let output = need(u.completion_tokens, "usage.completion_tokens")?;
        let d = u.prompt_tokens_details.as_ref();
        let (cached, write) =
            d.map_or((0, 0), |d| (d.cached_tokens.unwrap_or(0), d.cache_write_tokens.unwrap_or(0)));
        let part = "usage.prompt_tokens_details.cached_tokens";
        let prefill = included(prompt, (total, part), cached, write)?;
        let written = d.is_some_and(|d| d.cache_write_tokens.is_some());
        return Ok(openai_like(prefill, write, cached, output, written));
    }
    let input = need(u.input_tokens, "usage.input_tokens")?;
    let output = need(u.output_tokens, "usage.output_tokens")?;
    if let Some(d) = &u.input_tokens_details {
        if anthropic {
            return Err(RecordError::Mixed(
                "usage.input_tokens_details",
                "usage.cache_read_input_tokens",
            ));
        }
        let (cached, write) = (d.cached_tokens.unwrap_or(0), d.cache_write_tokens.unwrap_or(0));
        let keys = ("usage.input_tokens", "usage.input_tokens_details.cached_tokens");
        let prefill = included(input, keys, cached, write)?;
        let written = d.cache_write_tokens.is_some();
        return Ok(openai_like(prefill, write, cached, output, written));
    }
    Ok(Split {
        uncached: input,
        cache_write: u.cache_creation_input_tokens.unwrap_or(0),
        cache_read: u.cache_read_input_tokens.unwrap_or(0),
        output,
        writes_recorded: anthropic,
    })
}

/// The split of a count that includes the cached tokens: `prefill` (its total less the read
/// ones) holds the `write` written ones.
fn openai_like(prefill: u64, write: u64, cached: u64, output: u64, written: bool) -> Split {
    Split {
        uncached: prefill - write,
        cache_write: write,
        cache_read: cached,
        output,
        writes_recorded: written,
    }
}

/// The prefilled tokens of a count `total` that includes `cached` read and `write` written
/// tokens (OpenAI, Gemini): `total - cached`; both parts must fit in the total.
fn included(
    total: u64,
    (total_key, part): (&'static str, &'static str),
    cached: u64,
    write: u64,
) -> Result<u64, RecordError> {
    if cached.saturating_add(write) > total {
        let plus = if write > 0 { format!(" + {write} cache_write_tokens") } else { String::new() };
        return Err(RecordError::PartAboveTotal { part, cached, plus, total_key, total });
    }
    Ok(total - cached)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(prefill, cache read, output)` of one line's usage.
    fn split_of(json: &str) -> Result<(u64, u64, u64), String> {
        let line: Line = serde_json::from_str(json).map_err(|e| e.to_string())?;
        split(&line).map(|s| (s.prefill(), s.cache_read, s.output)).map_err(|e| e.to_string())
    }

    fn ok(prefill: u64, cached: u64, output: u64) -> Result<(u64, u64, u64), String> {
        Ok((prefill, cached, output))
    }

    #[test]
    fn each_api_s_accounting_gives_the_same_split() {
        // One call: 86 tokens prefilled, 1,920 read, 300 out, in each API's words.
        let anthropic = r#"{"model": "m", "usage": {"input_tokens": 86,
            "cache_read_input_tokens": 1920, "output_tokens": 300}}"#;
        let chat = r#"{"model": "m", "usage": {"prompt_tokens": 2006, "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1920}}}"#;
        let responses = r#"{"model": "m", "usage": {"input_tokens": 2006, "output_tokens": 300,
            "input_tokens_details": {"cached_tokens": 1920}}}"#;
        let gemini = r#"{"modelVersion": "m", "usageMetadata": {"promptTokenCount": 2006,
            "cachedContentTokenCount": 1920, "candidatesTokenCount": 200,
            "thoughtsTokenCount": 100}}"#;
        for json in [anthropic, chat, responses, gemini] {
            assert_eq!(split_of(json), ok(86, 1920, 300), "{json}");
        }
    }

    #[test]
    fn writes_are_prefilled_and_zero_fields_may_be_missing() {
        // Anthropic: written tokens are outside input_tokens; OpenAI GPT-5.6: inside.
        let anthropic = r#"{"model": "m", "usage": {"input_tokens": 6,
            "cache_creation_input_tokens": 1024, "output_tokens": 1}}"#;
        assert_eq!(split_of(anthropic), ok(1030, 0, 1));
        let responses = r#"{"model": "m", "usage": {"input_tokens": 1030, "output_tokens": 1,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1024}}}"#;
        assert_eq!(split_of(responses), ok(1030, 0, 1));
        let gemini = r#"{"model": "m", "usageMetadata": {"promptTokenCount": 5}}"#;
        assert_eq!(split_of(gemini), ok(5, 0, 0));
        let chat = r#"{"model": "m", "usage": {"prompt_tokens": 5, "completion_tokens": 2,
            "prompt_tokens_details": null}}"#;
        assert_eq!(split_of(chat), ok(5, 0, 2));
    }

    #[test]
    fn inconsistent_usage_is_refused_naming_the_keys() {
        let cases = [
            (
                r#"{"model": "m", "usage": {"prompt_tokens": 100, "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 128}}}"#,
                "`usage.prompt_tokens_details.cached_tokens` = 128 is more than \
                 `usage.prompt_tokens` = 100",
            ),
            (
                r#"{"model": "m", "usage": {"input_tokens": 100, "output_tokens": 1,
                "input_tokens_details": {"cached_tokens": 50, "cache_write_tokens": 60}}}"#,
                "= 50 + 60 cache_write_tokens is more than `usage.input_tokens` = 100",
            ),
            (
                r#"{"model": "m", "usageMetadata": {"promptTokenCount": 10,
                "cachedContentTokenCount": 11}}"#,
                "`usageMetadata.cachedContentTokenCount` = 11 is more than",
            ),
            (
                r#"{"model": "m", "usage": {"prompt_tokens": 1, "output_tokens": 1}}"#,
                "`usage.prompt_tokens` and `usage.output_tokens` come from different APIs",
            ),
            (r#"{"model": "m", "usage": {"prompt_tokens": 1}}"#, "`usage.completion_tokens`"),
            (r#"{"model": "m", "usageMetadata": {}}"#, "`usageMetadata.promptTokenCount`"),
            (r#"{"model": "m"}"#, "needs `usage`"),
            (
                r#"{"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1},
                "usageMetadata": {"promptTokenCount": 1}}"#,
                "both `usage` and `usageMetadata`",
            ),
        ];
        for (json, want) in cases {
            let got = split_of(json).unwrap_err();
            assert!(got.contains(want), "{json}: {got}");
        }
    }
}
