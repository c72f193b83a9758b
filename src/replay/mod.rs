//! Trace replay: what a cache would have done with a real log of requests, and what other
//! cache choices (TTL, capacity, policy) would have saved.
//!
//! Readers (`mooncake`, `claude_code`, `requests`) stream a trace as `TraceRequest`s in
//! send-time order; `logs` turns usage logs (`usage_log`) and OTLP spans (`otlp`), which carry
//! token counts but no content, into such requests under a stated prefix-identity assumption,
//! keeping the provider's recorded split beside the simulated ones; `run` replays hash-id traces through a block-level prefix cache
//! (`blocks`), every cache choice side by side in one pass; `prices` bills the tokens;
//! `output` renders tables, JSON and `replay.json`. This module reads files (it is the edge)
//! but never the wall clock: the same trace and settings give the same bytes.

pub mod blocks;
pub mod body;
pub mod claude_code;
pub mod logs;
pub mod mooncake;
pub mod otlp;
pub mod output;
pub mod prices;
pub mod requests;
pub mod run;
pub mod settings;
pub mod trace;
pub mod usage_log;
pub mod window;

use std::path::Path;

use hdrhistogram::Histogram;

pub use run::ChoiceStats;
pub use settings::{CacheChoice, ReplaySettings, SetError, SettingError, TraceFormat};
pub use trace::{TraceError, TraceMeta, TraceRequest};

use crate::time::{US_PER_H, US_PER_MIN, US_PER_S};

/// The result of replaying one trace through one or more cache choices.
#[derive(Debug)]
pub struct Replay {
    pub format: TraceFormat,
    /// Conversation names, in first-seen order (empty for Mooncake traces).
    pub conversations: Vec<String>,
    /// Lines or files skipped with `--lenient`.
    pub warnings: Vec<String>,
    pub requests: u64,
    pub distinct_blocks: u64,
    /// Tokens of distinct full blocks: what an unbounded cache would hold.
    pub distinct_tokens: u64,
    /// Time between consecutive uses of a prefix block, microseconds.
    pub reuse_gap_us: Histogram<u64>,
    /// One per choice, in the order given.
    pub choices: Vec<(CacheChoice, ChoiceStats)>,
    /// Usage logs and OTLP spans: the provider's split as recorded (writes at the 5-minute
    /// price), beside the simulated choices.
    pub recorded: Option<ChoiceStats>,
}

/// Stream a hash-id trace (`mooncake`, `claude-code`) to `sink`.
pub fn read_trace(
    path: &Path,
    settings: &ReplaySettings,
    meta: &mut TraceMeta,
    sink: &mut dyn FnMut(&TraceRequest),
) -> Result<(), TraceError> {
    match settings.format {
        TraceFormat::Mooncake => mooncake::read(
            path,
            settings.block_size,
            &settings.model.name,
            settings.lenient,
            meta,
            sink,
        ),
        TraceFormat::ClaudeCode => claude_code::read(path, settings.lenient, meta, sink),
        TraceFormat::Requests | TraceFormat::UsageLog | TraceFormat::Otlp => Err(TraceError::file(
            path,
            "request bodies and logs are replayed by `requests::replay` and `logs::replay`, not \
             streamed as hash ids",
        )),
    }
}

/// Replay `path` through every choice in `choices` (one pass over the trace).
pub fn replay(
    path: &Path,
    settings: &ReplaySettings,
    choices: &[CacheChoice],
) -> Result<Replay, TraceError> {
    match settings.format {
        TraceFormat::Requests => return requests::replay(path, settings, choices),
        TraceFormat::UsageLog | TraceFormat::Otlp => return logs::replay(path, settings, choices),
        TraceFormat::Mooncake | TraceFormat::ClaudeCode => {}
    }
    let mut meta = TraceMeta::default();
    let mut replayer = run::Replayer::new(settings, choices);
    read_trace(path, settings, &mut meta, &mut |r| replayer.request(r))?;
    if meta.requests == 0 {
        return Err(TraceError::file(path, "the trace has no requests"));
    }
    finish(path, settings.format, meta, replayer, choices, None)
}

/// The replay of a trace read whole: each choice's statistics, the trace's shared ones, and
/// (for usage logs and OTLP spans) the provider's split as recorded.
fn finish(
    path: &Path,
    format: TraceFormat,
    meta: TraceMeta,
    replayer: run::Replayer,
    choices: &[CacheChoice],
    recorded: Option<ChoiceStats>,
) -> Result<Replay, TraceError> {
    let (stats, shared, pricing) = replayer.finish();
    unknown_model(path, &pricing)?;
    Ok(Replay {
        format,
        conversations: meta.conversations,
        warnings: meta.warnings,
        requests: meta.requests,
        distinct_blocks: shared.distinct_blocks() as u64,
        distinct_tokens: shared.distinct_tokens,
        reuse_gap_us: shared.reuse_gap_us,
        choices: choices.iter().cloned().zip(stats).collect(),
        recorded,
    })
}

/// `model=per-request` (claude-code's default) needs a preset for every model of the trace.
pub(crate) fn unknown_model(path: &Path, pricing: &prices::Pricing) -> Result<(), TraceError> {
    match &pricing.unknown {
        None => Ok(()),
        Some(m) => Err(TraceError::file(
            path,
            format!(
                "model=per-request (claude-code's default): no preset for the trace's model `{m}` \
                 (known: {}); price and time every request as one model with --set model=NAME",
                crate::config::preset_names().join(", ")
            ),
        )),
    }
}

/// The TTL ladder of the hit-rate-vs-TTL curve (`None`: no expiry).
pub const TTL_LADDER_US: [Option<u64>; 11] = [
    Some(30 * US_PER_S),
    Some(US_PER_MIN),
    Some(2 * US_PER_MIN),
    Some(5 * US_PER_MIN),
    Some(10 * US_PER_MIN),
    Some(20 * US_PER_MIN),
    Some(30 * US_PER_MIN),
    Some(US_PER_H),
    Some(2 * US_PER_H),
    Some(6 * US_PER_H),
    None,
];

/// The capacity ladder, as fractions of the trace's distinct block tokens.
pub const CAPACITY_LADDER: [f64; 9] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0];

/// Hit rate against TTL (at the base choice's capacity) and against capacity (at its TTL, and
/// with no TTL: a vLLM-like cache).
#[derive(Debug, Clone, PartialEq)]
pub struct Curves {
    /// `(ttl_us or None, hit rate)`.
    pub ttl: Vec<(Option<u64>, f64)>,
    /// `(capacity tokens, fraction of distinct tokens, hit rate)` at the base TTL.
    pub capacity: Vec<(u64, f64, f64)>,
    /// The same with no TTL.
    pub capacity_no_ttl: Vec<(u64, f64, f64)>,
}

/// Replay the ladders (one more pass over the trace: the capacities depend on the first).
pub fn curves(
    path: &Path,
    settings: &ReplaySettings,
    distinct_tokens: u64,
) -> Result<Curves, TraceError> {
    let base = &settings.cache;
    let with = |ttl_us: Option<u64>, capacity_tokens: Option<u64>, as_sent: bool| CacheChoice {
        ttl_us,
        capacity_tokens,
        ttl_as_sent: as_sent,
        label: String::new(),
        policy: base.policy,
    };
    let capacities: Vec<u64> = CAPACITY_LADDER
        .iter()
        .map(|f| ((distinct_tokens as f64 * f).round() as u64).max(1))
        .collect();
    let mut all: Vec<CacheChoice> =
        TTL_LADDER_US.iter().map(|&t| with(t, base.capacity_tokens, false)).collect();
    all.extend(capacities.iter().map(|&c| with(base.ttl_us, Some(c), base.ttl_as_sent)));
    all.extend(capacities.iter().map(|&c| with(None, Some(c), false)));
    let r = replay(path, settings, &all)?;
    let hit = |i: usize| r.choices[i].1.account.hit_rate();
    let n = TTL_LADDER_US.len();
    let ladder = |offset: usize| -> Vec<(u64, f64, f64)> {
        (0..CAPACITY_LADDER.len())
            .map(|k| (capacities[k], CAPACITY_LADDER[k], hit(offset + k)))
            .collect()
    };
    Ok(Curves {
        ttl: TTL_LADDER_US.iter().enumerate().map(|(k, &t)| (t, hit(k))).collect(),
        capacity: ladder(n),
        capacity_no_ttl: ladder(n + CAPACITY_LADDER.len()),
    })
}
