//! The token account of a replay (or of one conversation) and its cost under one model:
//! `metrics::Tokens` priced with the cache core's `cost_usd` (the cost formula of docs/cache.md;
//! preset prices from https://platform.claude.com/docs/en/about-claude/pricing). Knows nothing of
//! traces.

use crate::cache::Usage;
use crate::config::ModelParams;
use crate::metrics::Tokens;

/// Token counts of a replay: read, written (5m / 1h), uncached, output.
pub type Account = Tokens;

/// `total += part`.
pub fn add(total: &mut Account, part: &Account) {
    total.cache_read += part.cache_read;
    total.cache_write_5m += part.cache_write_5m;
    total.cache_write_1h += part.cache_write_1h;
    total.uncached += part.uncached;
    total.output += part.output;
}

/// The account of a request the cache core billed `u`, with `output` tokens.
pub fn account(u: &Usage, output: u64) -> Account {
    Account {
        cache_read: u.cache_read,
        cache_write_5m: u.cache_write_5m,
        cache_write_1h: u.cache_write_1h,
        uncached: u.uncached,
        output,
    }
}

fn usage(a: &Account) -> Usage {
    Usage {
        cache_read: a.cache_read,
        cache_write_5m: a.cache_write_5m,
        cache_write_1h: a.cache_write_1h,
        uncached: a.uncached,
        redundant_writes: 0,
        storage_token_s: 0,
    }
}

/// Cost in USD: `input * (uncached + 1.25 w5m + 2 w1h + 0.1 read) + output_price * output`.
pub fn cost_usd(a: &Account, model: &ModelParams) -> f64 {
    crate::cache::cost_usd(model, &usage(a), a.output)
}

/// What the same tokens cost with no caching at all.
pub fn cost_uncached_usd(a: &Account, model: &ModelParams) -> f64 {
    crate::cache::uncached_cost_usd(model, &usage(a), a.output)
}

/// The preset of a model name as traces and request bodies spell it (`config::preset_for`).
pub use crate::config::preset_for;

/// Which prices each request pays: one model for all, or each request's own model.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// Index 0: the chosen model; then the presets of the trace's models, by first use.
    pub models: Vec<ModelParams>,
    per_request: bool,
    index: std::collections::BTreeMap<String, usize>,
    /// The first trace model with no preset (priced at the chosen model meanwhile).
    pub unknown: Option<String>,
}

impl Pricing {
    pub fn new(chosen: &ModelParams, per_request: bool) -> Self {
        Pricing {
            models: vec![chosen.clone()],
            per_request,
            index: Default::default(),
            unknown: None,
        }
    }

    /// Index into `models` of the prices a request to `model` pays.
    pub fn index(&mut self, model: &str) -> usize {
        if !self.per_request {
            return 0;
        }
        if let Some(&i) = self.index.get(model) {
            return i;
        }
        let i = match preset_for(model) {
            Some(p) => {
                self.models.push(p);
                self.models.len() - 1
            }
            None => {
                self.unknown.get_or_insert_with(|| model.to_string());
                0
            }
        };
        self.index.insert(model.to_string(), i);
        i
    }
}
