//! `TraceReplay`: a real request log through the cache, one pass for every cache choice
//! compared (the base settings, then each what-if), with typed totals per choice.

use std::path::PathBuf;

use super::error::Error;
use crate::replay::{self, CacheChoice, ReplaySettings, SettingError};

/// A trace replay: a trace file, its settings (the `replay --set` keys) and the cache choices
/// to compare (the base, then each `what_if`).
#[derive(Debug, Clone)]
pub struct TraceReplay {
    path: PathBuf,
    settings: ReplaySettings,
    /// The `cache.*` assignments given to `set`: the base choice's label.
    cache_sets: Vec<String>,
    what_if: Vec<String>,
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
    pub fn new(path: impl Into<PathBuf>, format: replay::Format) -> TraceReplay {
        TraceReplay {
            path: path.into(),
            settings: ReplaySettings::new(format),
            cache_sets: Vec::new(),
            what_if: Vec::new(),
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

    /// The base choice (labelled as `prefixsim replay` labels it), then each `what_if`.
    fn choices(&self) -> Result<Vec<CacheChoice>, Error> {
        let base = &self.settings;
        let mut first = base.cache.clone();
        first.label = match (self.cache_sets.is_empty(), base.cache.ttl_as_sent) {
            (true, true) => "as sent".to_string(),
            (true, false) => "cache.ttl=5m".to_string(),
            (false, _) => self.cache_sets.join(","),
        };
        let mut out = vec![first];
        for spec in &self.what_if {
            let mut s = base.clone();
            for a in spec.split(',') {
                s.apply_set(a).map_err(|source| Error::Set { via: "what-if", source })?;
            }
            if s.model != base.model || s.latency != base.latency || s.block_size != base.block_size
            {
                let choice = Some(spec.clone());
                return Err(Error::Setting { choice, source: SettingError::WhatIfNotCache });
            }
            s.validate().map_err(|source| Error::Setting { choice: Some(spec.clone()), source })?;
            s.cache.label = spec.trim().to_string();
            out.push(s.cache);
        }
        Ok(out)
    }

    /// Replay the trace once through every choice.
    pub fn run(&self) -> Result<ReplaySummary, Error> {
        self.settings.validate().map_err(|source| Error::Setting { choice: None, source })?;
        let r = replay::replay(&self.path, &self.settings, &self.choices()?)?;
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
