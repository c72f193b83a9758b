//! Prices for the replay: the model presets (FACTS.md section 3) and the cost of a token
//! account under one model (SPEC.md section 3.4). Knows nothing of traces.
//!
//! `cost = input * (uncached + w * written + r * read) + output_price * output`, where `w` is the
//! write multiplier of the choice's TTL (1.25 for 5m, 2 for 1h) and `r` the read multiplier.

use crate::config::ModelParams;

/// FACTS.md section 3 (prices $/MTok, read multipliers) and section 1 (minimum cacheable length):
/// `(name, input, output, read multiplier, minimum cacheable tokens)`.
const PRESETS: [(&str, f64, f64, f64, u64); 7] = [
    ("claude-sonnet-4.5", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-4.6", 3.0, 15.0, 0.1, 1024),
    ("claude-sonnet-4", 3.0, 15.0, 0.1, 1024),
    ("claude-opus-4.5", 5.0, 25.0, 0.1, 4096),
    ("claude-opus-4.6", 5.0, 25.0, 0.1, 4096),
    ("claude-opus-4.1", 15.0, 75.0, 0.1, 1024),
    ("claude-haiku-4.5", 1.0, 5.0, 0.1, 4096),
];

/// The preset of a model name, if known (the cache core's presets when they exist).
pub fn preset(name: &str) -> Option<ModelParams> {
    let (name, input, output, read, min) = PRESETS.iter().find(|p| p.0 == name)?;
    Some(ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: *input,
        output_usd_per_mtok: *output,
        read_multiplier: *read,
        write_5m_multiplier: 1.25,
        write_1h_multiplier: 2.0,
        min_cacheable_tokens: *min,
    })
}

/// Names of the known presets, for error messages.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}

/// Token counts of a replay (or a part of it), priced as one account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Account {
    pub cache_read: u64,
    pub cache_write: u64,
    pub uncached: u64,
    pub output: u64,
}

impl Account {
    pub fn input(&self) -> u64 {
        self.cache_read + self.cache_write + self.uncached
    }
    /// Token-weighted hit rate `read / input`; 0 with no input.
    pub fn hit_rate(&self) -> f64 {
        let input = self.input();
        if input == 0 {
            0.0
        } else {
            self.cache_read as f64 / input as f64
        }
    }
    pub fn add(&mut self, other: &Account) {
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.uncached += other.uncached;
        self.output += other.output;
    }
    /// Cost in USD with writes billed at the 1h (`true`) or 5m price.
    pub fn cost_usd(&self, model: &ModelParams, bills_1h: bool) -> f64 {
        let w = if bills_1h { model.write_1h_multiplier } else { model.write_5m_multiplier };
        let input_units = self.uncached as f64
            + w * self.cache_write as f64
            + model.read_multiplier * self.cache_read as f64;
        (model.input_usd_per_mtok * input_units + model.output_usd_per_mtok * self.output as f64)
            / 1e6
    }
    /// What the same tokens cost with no caching at all.
    pub fn cost_uncached_usd(&self, model: &ModelParams) -> f64 {
        (model.input_usd_per_mtok * self.input() as f64
            + model.output_usd_per_mtok * self.output as f64)
            / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_the_spec_formula() {
        let m = preset("claude-sonnet-4.5").unwrap();
        let a = Account { cache_read: 1_000_000, cache_write: 1_000_000, uncached: 1_000_000, output: 1_000_000 };
        // 3 * (1 + 1.25 + 0.1) + 15 = 22.05 ; with 1h writes 3 * (1 + 2 + 0.1) + 15 = 24.3
        assert!((a.cost_usd(&m, false) - 22.05).abs() < 1e-9);
        assert!((a.cost_usd(&m, true) - 24.3).abs() < 1e-9);
        assert!((a.cost_uncached_usd(&m) - 24.0).abs() < 1e-9);
    }
}
