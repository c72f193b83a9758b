//! The `requests` trace format and its replay through the cache core (real content, real
//! breakpoints, the chosen policy).
//!
//! Format: JSONL, one request per line, sorted by time:
//! `{"timestamp_ms": 1500, "body": {..Messages API request body..}, "output_tokens": 120,
//!   "conversation": "session-7"}`. `timestamp_ms` (send time, ms from any origin, non-
//! decreasing) and `body` (with `model`, `messages`, optional `tools`, `system`,
//! `cache_control`) are required; `output_tokens` (default 0: cost and decode time of the
//! response) and `conversation` (default none: totals only) are optional; other keys are
//! ignored. Blocks and tokens are the cache core's (`body::parse_body`: canonical bytes with
//! object keys in the order sent, never sorted, `ceil(chars / 4)` tokens). A body that extends the previous body of its conversation
//! extends its digest chain (only new blocks are hashed). One line in memory at a time, plus
//! the last body of each conversation.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use hdrhistogram::Histogram;
use serde::Deserialize;

use super::body::{parse_body, ParsedBody};
use super::prices::{self, Pricing};
use super::run::{ready_time, ChoiceStats, Measured, ReadySource};
use super::settings::{CacheChoice, ReplaySettings};
use super::trace::{RecordError, TraceError, TraceMeta, NO_CONVERSATION};
use super::Replay;
use crate::cache::{Breakpoint, Cache, Key, Prompt, State, Ttl, Usage};
use crate::time::SimTime;

#[derive(Deserialize)]
struct Line {
    timestamp_ms: f64,
    /// Read with its keys in the order sent: the API caches bytes, and the same content with
    /// another key order is other bytes.
    body: serde_json::Value,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    conversation: Option<String>,
}

struct Lane {
    cache: Cache,
    choice: CacheChoice,
    stats: ChoiceStats,
}

/// Replays request bodies through one `Cache` per choice.
struct Replayer<'s> {
    settings: &'s ReplaySettings,
    lanes: Vec<Lane>,
    last_seen_us: HashMap<Key, u64>,
    reuse_gap_us: Histogram<u64>,
    distinct_tokens: u64,
    /// The last body and prompt of each conversation (to extend its chain).
    last_body: BTreeMap<u32, (ParsedBody, Prompt)>,
    breakpoints: Vec<Breakpoint>,
    pricing: Pricing,
}

/// Replay a `requests` trace through every choice (one pass).
pub fn replay(
    path: &Path,
    settings: &ReplaySettings,
    choices: &[CacheChoice],
) -> Result<Replay, TraceError> {
    let mut r = Replayer::new(settings, choices);
    let mut meta = TraceMeta::default();
    let mut last_time_us = 0u64;
    super::trace::for_each_line(path, settings.lenient, &mut meta, |buf, meta| {
        let (t, line) = parse_line(buf, last_time_us)?;
        let conv = line.conversation.as_deref().map_or(NO_CONVERSATION, |c| meta.conversation(c));
        let parsed = parse_body(&line.body)?;
        let input = parsed.blocks.iter().map(|b| b.tokens).sum();
        super::window::check(&parsed.model, input, line.output_tokens)?;
        r.request(t, conv, parsed, line.output_tokens, meta.requests)?;
        last_time_us = t;
        meta.requests += 1;
        Ok::<(), RecordError>(())
    })?;
    if meta.requests == 0 {
        return Err(TraceError::file(path, "the trace has no requests"));
    }
    super::unknown_model(path, &r.pricing)?;
    let distinct = r.last_seen_us.len() as u64;
    Ok(Replay {
        format: settings.format,
        conversations: meta.conversations,
        warnings: meta.warnings,
        requests: meta.requests,
        distinct_blocks: distinct,
        distinct_tokens: r.distinct_tokens,
        reuse_gap_us: r.reuse_gap_us,
        choices: r.lanes.into_iter().map(|l| (l.choice, l.stats)).collect(),
        recorded: None,
    })
}

fn parse_line(buf: &[u8], last_time_us: u64) -> Result<(u64, Line), RecordError> {
    let line: Line = serde_json::from_slice(buf).map_err(|e| super::trace::json_error(&e))?;
    let ms = line.timestamp_ms;
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(RecordError::RequestsTime(ms));
    }
    let t = (ms * 1000.0).round() as u64;
    if t < last_time_us {
        let previous_ms = last_time_us as f64 / 1000.0;
        return Err(RecordError::RequestsUnsorted { ms, previous_ms });
    }
    Ok((t, line))
}

/// The TTL a choice gives every breakpoint (`None`: keep the body's).
fn ttl_override(choice: &CacheChoice) -> Option<Ttl> {
    if choice.ttl_as_sent {
        None
    } else if choice.ttl_us.is_none() {
        Some(Ttl::None)
    } else if choice.bills_1h() {
        Some(Ttl::OneHour)
    } else {
        Some(Ttl::FiveMin)
    }
}

impl<'s> Replayer<'s> {
    fn new(settings: &'s ReplaySettings, choices: &[CacheChoice]) -> Self {
        let lanes = choices
            .iter()
            .map(|c| Lane {
                cache: Cache::new(c.policy, &settings.model, c.capacity_tokens)
                    .with_default_ttl(ttl_override(c).unwrap_or(Ttl::FiveMin)),
                choice: c.clone(),
                stats: ChoiceStats::default(),
            })
            .collect();
        Replayer {
            settings,
            lanes,
            last_seen_us: HashMap::new(),
            reuse_gap_us: crate::metrics::new_histogram(),
            distinct_tokens: 0,
            last_body: BTreeMap::new(),
            breakpoints: Vec::new(),
            pricing: Pricing::new(&settings.model, settings.per_request_prices),
        }
    }

    /// The request's prompt, extending its conversation's previous chain when it can.
    fn prompt(&mut self, conversation: u32, parsed: ParsedBody) -> Prompt {
        let extended = self
            .last_body
            .get(&conversation)
            .and_then(|(body, prompt)| parsed.extend_prompt(body, prompt));
        let prompt = extended.unwrap_or_else(|| parsed.prompt("default"));
        if conversation != NO_CONVERSATION {
            self.last_body.insert(conversation, (parsed, prompt.clone()));
        }
        prompt
    }

    fn request(
        &mut self,
        time_us: u64,
        conv: u32,
        parsed: ParsedBody,
        output: u64,
        index: u64,
    ) -> Result<(), RecordError> {
        let body_breakpoints = parsed.breakpoints.clone();
        let price_index = self.pricing.index(&parsed.model);
        let prompt = self.prompt(conv, parsed);
        self.record_gaps(&prompt, time_us);
        let now = SimTime::from_us(time_us);
        let price = &self.pricing.models[price_index];
        let latency = self.settings.latency_for(&price.name);
        for lane in &mut self.lanes {
            self.breakpoints.clear();
            let ttl = ttl_override(&lane.choice);
            self.breakpoints.extend(
                body_breakpoints
                    .iter()
                    .map(|b| Breakpoint { index: b.index, ttl: ttl.unwrap_or(b.ttl) }),
            );
            let peek = lane.cache.peek(&prompt, &self.breakpoints, now)?;
            let miss = miss_causes(&lane.cache, &prompt, &peek, now);
            let settings = self.settings;
            let mut source = ReadySource::Model;
            // Request bodies record no timing: the model draws from the request's own stream
            // (common random numbers across choices).
            let ready_at = |u: &Usage| {
                let mut rng = crate::rng::stream(settings.seed, &[index]);
                let a = prices::account(u, output);
                let (t, from) =
                    ready_time(settings, latency, &a, Measured::default(), now, &mut rng);
                source = from;
                t
            };
            let usage = lane.cache.serve(&prompt, &self.breakpoints, now, ready_at)?;
            let account = prices::account(&usage, output);
            lane.stats.record(conv, &account, &miss, usage.redundant_writes, price);
            lane.stats.ready_tokens[source as usize] += account.cache_write();
        }
        Ok(())
    }

    fn record_gaps(&mut self, prompt: &Prompt, now: u64) {
        for i in 0..prompt.len() {
            match self.last_seen_us.insert(prompt.prefix_key(i), now) {
                Some(last) => self.reuse_gap_us.saturating_record(now.saturating_sub(last)),
                None => self.distinct_tokens += prompt.block_tokens(i),
            }
        }
    }
}

/// Written tokens by cause: walking down from the last written boundary to the hit, each
/// block takes the state of the nearest entry at or after it that the cache remembers
/// (expired, evicted, pending); blocks past every remembered entry were never seen.
fn miss_causes(cache: &Cache, prompt: &Prompt, peek: &Usage, now: SimTime) -> [u64; 4] {
    let mut miss = [0u64; 4];
    let written = peek.cache_write();
    if written == 0 {
        return miss;
    }
    let boundary = |tokens: u64| (0..prompt.len()).find(|&i| prompt.prefix_tokens(i) == tokens);
    let Some(last) = boundary(peek.cache_read + written) else { return miss };
    let first =
        if peek.cache_read == 0 { 0 } else { boundary(peek.cache_read).map_or(0, |h| h + 1) };
    let mut cause = 3; // never seen
    for i in (first..=last).rev() {
        cause = match cache.store().probe(prompt.prefix_key(i), now) {
            State::Absent | State::Ready => cause,
            state => super::blocks::cause(state),
        };
        miss[cause] += prompt.block_tokens(i);
    }
    miss
}
