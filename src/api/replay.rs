//! `TraceReplay`: a real request log through the cache, one pass for every cache choice
//! compared (the base settings, then each what-if), with typed totals per choice.
//! `prefixsim replay` is this and a print (its `--what-if` adds the TTL ladder).

use std::path::PathBuf;

use super::error::Error;
use crate::replay::{self, CacheChoice, Replay, ReplaySettings};

/// A trace replay: a trace file, its settings (the `replay --set` keys) and the cache choices
/// to compare (the base, then each `what_if`).
#[derive(Debug, Clone)]
pub struct TraceReplay {
    path: PathBuf,
    settings: ReplaySettings,
    /// The `cache.*` assignments given to `set`: the base choice's label.
    cache_sets: Vec<String>,
    what_if: Vec<String>,
    /// `prefixsim replay --what-if`: TTL 5m, 1h and none, then each `what_if`, in place of the
    /// base choice (kept first only when its TTLs are the trace's own).
    ladder: bool,
}

/// One cache choice's totals over the whole trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceResult {
    /// The assignments that made the choice (`cache.ttl=1h`).
    pub label: String,
    /// Requests replayed.
    pub requests: u64,
    /// Requests that read at least one token from the cache.
    pub requests_with_hit: u64,
    /// Share of input tokens read from the cache.
    pub hit_rate: f64,
    /// What the trace's requests cost with this cache choice, USD.
    pub cost_usd: f64,
    /// The same requests with no caching.
    pub cost_uncached_usd: f64,
    /// Blocks written while an equal entry was still pending (docs/cache.md).
    pub redundant_writes: u64,
}

/// A replay's results: one `ChoiceResult` per choice, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySummary {
    /// Requests in the trace.
    pub requests: u64,
    /// Distinct prefix blocks over the whole trace.
    pub distinct_blocks: u64,
    /// One per cache choice: the base, then each `what_if`, in order.
    pub choices: Vec<ChoiceResult>,
    /// Lines skipped with `lenient`.
    pub warnings: Vec<String>,
}

impl TraceReplay {
    /// Replay `path`, a trace in `format`.
    pub fn new(path: impl Into<PathBuf>, format: replay::TraceFormat) -> TraceReplay {
        TraceReplay {
            path: path.into(),
            settings: ReplaySettings::new(format),
            cache_sets: Vec::new(),
            what_if: Vec::new(),
            ladder: false,
        }
    }

    /// Apply one setting, as `replay --set` does: `set("block_size=16")`.
    pub fn set(mut self, assignment: &str) -> Result<TraceReplay, Error> {
        self.settings
            .apply_set(assignment)
            .map_err(|source| Error::Set { via: "--set", source })?;
        if assignment.trim().starts_with("cache.") {
            self.cache_sets.push(assignment.trim().to_string());
        }
        Ok(self)
    }

    /// Also replay the base choice with `spec` applied (`cache.ttl=1h`, or several joined by
    /// commas); only `cache.*` keys may differ.
    pub fn what_if(mut self, spec: &str) -> TraceReplay {
        self.what_if.push(spec.to_string());
        self
    }

    /// Skip malformed lines with a warning (`ReplaySummary::warnings`) instead of failing.
    pub fn lenient(mut self, on: bool) -> TraceReplay {
        self.settings.lenient = on;
        self
    }

    /// Entries readable as soon as they are written (no measured timing, no latency model).
    pub fn instant_ready(mut self, on: bool) -> TraceReplay {
        self.settings.instant_ready = on;
        self
    }

    /// `prefixsim replay --what-if`: compare TTL 5m, 1h and none, then each `what_if`.
    pub(crate) fn with_ttl_ladder(mut self) -> TraceReplay {
        self.ladder = true;
        self
    }

    /// The settings, the base choice labelled (the table and JSON print them).
    pub(crate) fn settings(&self) -> ReplaySettings {
        let mut s = self.settings.clone();
        s.cache = self.base();
        s
    }

    /// The base choice, labelled by its `cache.*` assignments, else by its TTL.
    fn base(&self) -> CacheChoice {
        let mut base = self.settings.cache.clone();
        base.label = match (self.cache_sets.is_empty(), base.ttl_as_sent) {
            (true, true) => "as sent".to_string(),
            (true, false) => "cache.ttl=5m".to_string(),
            (false, _) => self.cache_sets.join(","),
        };
        base
    }

    /// The base with `spec` (comma-separated `cache.*` assignments) applied, labelled `spec`.
    fn what_if_choice(&self, spec: &str) -> Result<CacheChoice, Error> {
        let base = &self.settings;
        let mut s = base.clone();
        for a in spec.split(',') {
            s.apply_set(a).map_err(|source| Error::Set { via: "--what-if", source })?;
        }
        if s.model != base.model
            || s.per_request_prices != base.per_request_prices
            || s.latency != base.latency
            || s.block_size != base.block_size
            || s.seed != base.seed
        {
            return Err(Error::Usage(format!(
                "--what-if `{spec}`: a choice may change only cache.* keys (use --set for the rest)"
            )));
        }
        s.validate().map_err(|source| Error::Setting { choice: Some(spec.to_string()), source })?;
        s.cache.label = spec.trim().to_string();
        Ok(s.cache)
    }

    /// The base choice, then each `what_if`; with the ladder, TTL 5m, 1h and none and each
    /// `what_if` (the base first only when its TTLs are as sent; duplicates by label dropped).
    fn choices(&self) -> Result<Vec<CacheChoice>, Error> {
        let base = self.base();
        if !self.ladder {
            let what_if = self.what_if.iter().map(|spec| self.what_if_choice(spec));
            return std::iter::once(Ok(base)).chain(what_if).collect();
        }
        let ladder = ["cache.ttl=5m", "cache.ttl=1h", "cache.ttl=none"].map(String::from);
        let given = self.what_if.iter().filter(|w| !w.trim().is_empty()).cloned();
        // Request bodies carry their own TTLs: the choice "as sent" comes first.
        let mut out: Vec<CacheChoice> = Vec::new();
        if base.ttl_as_sent {
            out.push(base);
        }
        for spec in ladder.into_iter().chain(given) {
            let c = self.what_if_choice(&spec)?;
            if !out.iter().any(|o| o.label == c.label) {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Replay the trace once through every choice, keeping everything it measured.
    pub(crate) fn replay(&self) -> Result<Replay, Error> {
        self.settings.validate().map_err(|source| Error::Setting { choice: None, source })?;
        let choices = self.choices()?;
        Ok(replay::replay(&self.path, &self.settings, &choices)?)
    }

    /// The hit-rate curves over TTL and capacity (replay.json), `distinct_tokens` from the
    /// replay.
    pub(crate) fn curves(&self, distinct_tokens: u64) -> Result<replay::Curves, Error> {
        Ok(replay::curves(&self.path, &self.settings(), distinct_tokens)?)
    }

    /// Replay the trace once through every choice.
    pub fn run(&self) -> Result<ReplaySummary, Error> {
        let r = self.replay()?;
        let choices = r
            .choices
            .iter()
            .map(|(c, s)| ChoiceResult {
                label: c.label.clone(),
                requests: s.requests,
                requests_with_hit: s.requests_with_hit,
                hit_rate: s.account.hit_rate(),
                cost_usd: s.cost_usd,
                cost_uncached_usd: s.cost_uncached_usd,
                redundant_writes: s.redundant_writes,
            })
            .collect();
        Ok(ReplaySummary {
            requests: r.requests,
            distinct_blocks: r.distinct_blocks,
            choices,
            warnings: r.warnings,
        })
    }
}
