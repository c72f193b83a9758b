//! Observations from a usage log: JSON Lines, one API call a line, as a program that logs its
//! SDK responses has them, in the usage form of any of three APIs:
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
//! are 0. `ttft_ms` and/or `duration_ms` are required (no API response carries timing: the
//! logging program measures it); `session` (string or number) is the bootstrap group, else
//! each line is its own. Other keys are ignored. A bad line is an error naming file and line.

use std::path::Path;

use serde::Deserialize;

use super::{CalibrateError, Observation, Observations};
use crate::input::{self, LineError, MAX_LINE_BYTES};
use crate::replay::TraceError;

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

/// One call's tokens as the fit wants them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Split {
    prefill: u64,
    cached: u64,
    output: u64,
}

/// Read a usage log (optionally gzipped) into `out`: at most `input::MAX_FILE_BYTES`
/// decompressed, and at most `MAX_CALIBRATE_REQUESTS` API calls in all inputs together.
pub fn read(path: &Path, out: &mut Observations) -> Result<(), CalibrateError> {
    let what = "a usage log (decompressed)";
    let mut reader = input::open_capped(path, input::MAX_FILE_BYTES, what)
        .map_err(|e| TraceError::io(path, e))?;
    let mut buf = Vec::new();
    let (mut line_no, before) = (0u64, out.obs.len());
    loop {
        line_no += 1;
        match input::read_line(&mut *reader, &mut buf, MAX_LINE_BYTES) {
            Ok(0) => break,
            Ok(_) => {}
            Err(LineError::Io(e)) => return Err(TraceError::io(path, e).into()),
            Err(LineError::TooLong) => {
                let msg = format!("line longer than {} MiB", MAX_LINE_BYTES >> 20);
                return Err(TraceError::line(path, line_no, msg).into());
            }
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line: Line = serde_json::from_slice(&buf).map_err(|e| {
            TraceError::line(path, line_no, crate::replay::trace::json_error(&e).to_string())
        })?;
        let split = check(&line)
            .and_then(|()| split(&line))
            .map_err(|e| TraceError::line(path, line_no, e.to_string()))?;
        super::check_request_count(path, out.obs.len() + 1)?;
        add(out, line_no, &line, split);
    }
    if out.obs.len() == before {
        return Err(TraceError::file(path, "no API call in this usage log").into());
    }
    Ok(())
}

/// The observation of `line` (on line `line_no`, tokens `s`), added to `out`.
fn add(out: &mut Observations, line_no: u64, line: &Line, s: Split) {
    let group = match &line.session {
        Some(serde_json::Value::String(s)) => format!("session {s}"),
        Some(v) if !v.is_null() => format!("session {v}"),
        _ => format!("line {line_no}"),
    };
    let obs = Observation {
        model: out.model(&line.model),
        group: out.group(&group),
        prefill_tokens: s.prefill,
        cached_tokens: s.cached,
        output_tokens: s.output,
        ttft_s: line.ttft_ms.map(|ms| ms / 1e3),
        duration_s: line.duration_ms.map(|ms| ms / 1e3),
    };
    out.obs.push(obs);
}

/// What is wrong with one line of a usage log (the reader adds the file and line).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum RecordError {
    #[error("`model` is empty")]
    EmptyModel,
    #[error("`{key}` = {value} is not a non-negative number of milliseconds")]
    NotMilliseconds { key: &'static str, value: f64 },
    #[error("needs `ttft_ms` or `duration_ms` (or both)")]
    NoTiming,
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

/// The checks serde cannot make: a timing present, durations non-negative, ttft <= duration.
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
        (None, None) => Err(RecordError::NoTiming),
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
            Ok(Split { prefill, cached, output })
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
        return Ok(Split { prefill, cached, output });
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
        return Ok(Split { prefill, cached, output });
    }
    let prefill = input + u.cache_creation_input_tokens.unwrap_or(0);
    Ok(Split { prefill, cached: u.cache_read_input_tokens.unwrap_or(0), output })
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

    fn split_of(json: &str) -> Result<Split, String> {
        let line: Line = serde_json::from_str(json).map_err(|e| e.to_string())?;
        split(&line).map_err(|e| e.to_string())
    }

    fn ok(prefill: u64, cached: u64, output: u64) -> Result<Split, String> {
        Ok(Split { prefill, cached, output })
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
