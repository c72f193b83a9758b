//! Replay of usage logs (`usage_log`) and OTLP spans (`otlp`): API calls with token counts and
//! no content, replayed as block ids under a stated assumption, with the provider's own split
//! kept beside the simulated ones (`Replay::recorded`).
//!
//! A record says how many tokens the provider read from its cache, wrote to it and left
//! uncached, never which tokens. The replay needs prefix identity, so it assumes it:
//!
//! - **One growing prompt per conversation and model.** The calls of one conversation
//!   (`session`; spans: `gen_ai.conversation.id`, else the trace id; log lines without a
//!   session form one conversation, `(no session)`) to one model send one prompt that grows:
//!   the first k tokens of two such calls are the same whenever both have k tokens. Block `i`
//!   of a call is id `i` in the (conversation, model) namespace. Calls of different
//!   conversations share nothing, a shared system prompt included.
//! - **The cacheable prefix** of a call is what the provider cached: `cache_read +
//!   cache_write` where the record counts writes (Anthropic's `cache_creation_input_tokens`,
//!   OpenAI's `cache_write_tokens`, the spans' `cache_creation` attribute; the rest sits after
//!   the last breakpoint), else the whole prompt (automatic caching: OpenAI, Gemini).
//! - **Blocks** of `block_size` tokens (default `LOG_BLOCK_TOKENS`, 128): a cacheable prefix
//!   is cut to whole blocks, the rest billed uncached.
//! - **Send times**: the record's (`timestamp_ms`, `created`; spans: `startTimeUnixNano`), from
//!   the earliest; a call without one is sent when the previous call of its conversation
//!   ended (its send + `duration_ms`, else + `ttft_ms`), the first at the start. Calls are
//!   replayed in send-time order (file order among equal times).
//!
//! Under the provider's own TTL the simulated split matches the recorded one when the
//! assumption holds; the what-if rows then say what another TTL or capacity would have done.

use std::collections::BTreeMap;
use std::path::Path;

use super::prices::Account;
use super::run::{ChoiceStats, Replayer};
use super::settings::{CacheChoice, ReplaySettings, TraceFormat};
use super::trace::{TraceError, TraceMeta, TraceRequest};
use super::usage_log::Split;
use super::Replay;

/// The conversation of usage-log lines without a `session`.
pub const NO_SESSION: &str = "(no session)";

/// One call as read, before it is placed on the replay's clock.
struct Call {
    /// Send time as recorded, microseconds from the record's own epoch.
    time_us: Option<u64>,
    conversation: String,
    model: String,
    split: Split,
    ttft_us: Option<u64>,
    api_time_us: Option<u64>,
}

/// Replay a usage log or an OTLP span file through every choice, with the recorded split.
pub fn replay(
    path: &Path,
    settings: &ReplaySettings,
    choices: &[CacheChoice],
) -> Result<Replay, TraceError> {
    if settings.lenient {
        let msg = "--lenient applies to mooncake, claude-code and requests traces; a bad line \
                   of a usage log or span file is an error";
        return Err(TraceError::file(path, msg));
    }
    let placed = place(read(path, settings.format)?);
    let mut meta = TraceMeta::default();
    let mut replayer = Replayer::new(settings, choices);
    let mut recorded = ChoiceStats::default();
    let mut ids: Vec<u64> = Vec::new();
    for (time_us, c) in &placed {
        let conversation = meta.conversation(&c.conversation);
        let namespace = meta.namespace(conversation + 1, &c.model);
        let blocks = cacheable_tokens(&c.split) / settings.block_size;
        ids.extend(ids.len() as u64..blocks);
        let r = TraceRequest {
            time_us: *time_us,
            conversation,
            namespace,
            model: &c.model,
            input_tokens: c.split.input(),
            output_tokens: c.split.output,
            block_tokens: settings.block_size,
            block_ids: &ids[..blocks as usize],
            ttft_us: c.ttft_us,
            api_time_us: c.api_time_us,
        };
        meta.requests += 1;
        replayer.request(&r);
        replayer.record_recorded(&r, &recorded_account(&c.split), &mut recorded);
    }
    super::finish(path, settings.format, meta, replayer, choices, Some(recorded))
}

/// The tokens of a call's prompt that a cache may hold: the provider's cached extent where
/// the record counts writes, else the whole prompt.
pub fn cacheable_tokens(s: &Split) -> u64 {
    match s.writes_recorded {
        true => s.cache_read + s.cache_write,
        false => s.input(),
    }
}

/// The provider's split as an account; written tokens at the 5-minute price (a record does
/// not say which TTL a write had).
fn recorded_account(s: &Split) -> Account {
    Account {
        cache_read: s.cache_read,
        cache_write_5m: s.cache_write,
        cache_write_1h: 0,
        uncached: s.uncached,
        output: s.output,
    }
}

/// Every call of `path`, in file order.
fn read(path: &Path, format: TraceFormat) -> Result<Vec<Call>, TraceError> {
    let us = |ms: f64| (ms * 1e3).round() as u64;
    let mut calls = Vec::new();
    if format == TraceFormat::UsageLog {
        super::usage_log::read(path, &mut |_, c| {
            calls.push(Call {
                time_us: c.time_ms.map(us),
                conversation: c.session.unwrap_or_else(|| NO_SESSION.to_string()),
                model: c.model,
                split: c.split,
                ttft_us: c.ttft_ms.map(us),
                api_time_us: c.duration_ms.map(us),
            });
            Ok(())
        })?;
        return Ok(calls);
    }
    let (spans, _note) = super::otlp::read(path)?;
    for c in spans {
        calls.push(Call {
            time_us: c.start_ns.map(|ns| ns / 1_000),
            conversation: c.conversation,
            model: c.model,
            split: c.split,
            ttft_us: c.ttft_s.map(|s| us(s * 1e3)),
            api_time_us: c.duration_s.map(|s| us(s * 1e3)),
        });
    }
    Ok(calls)
}

/// The calls on the replay's clock (microseconds from the earliest recorded send), sorted by
/// send time, file order among equals.
fn place(calls: Vec<Call>) -> Vec<(u64, Call)> {
    let epoch_us = calls.iter().filter_map(|c| c.time_us).min().unwrap_or(0);
    // Per conversation: when its latest call (in file order) ended.
    let mut ends_us: BTreeMap<String, u64> = BTreeMap::new();
    let mut placed: Vec<(u64, Call)> = calls
        .into_iter()
        .map(|c| {
            let t = match c.time_us {
                Some(t) => t - epoch_us,
                None => ends_us.get(&c.conversation).copied().unwrap_or(0),
            };
            let took_us = c.api_time_us.or(c.ttft_us).unwrap_or(0);
            ends_us.insert(c.conversation.clone(), t.saturating_add(took_us));
            (t, c)
        })
        .collect();
    placed.sort_by_key(|p| p.0);
    placed
}
