//! The token account of a replay (or of one conversation) and its cost under one model:
//! `metrics::Tokens` priced with the cache core's `cost_usd` (SPEC.md section 3.4; presets from
//! FACTS.md section 3). Knows nothing of traces.

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

fn usage(a: &Account) -> Usage {
    Usage {
        cache_read: a.cache_read,
        cache_write_5m: a.cache_write_5m,
        cache_write_1h: a.cache_write_1h,
        uncached: a.uncached,
        redundant_writes: 0,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_the_spec_formula() {
        let m = crate::cache::preset("claude-sonnet-4.5").unwrap();
        let mut a = Account {
            cache_read: 1_000_000,
            cache_write_5m: 1_000_000,
            cache_write_1h: 0,
            uncached: 1_000_000,
            output: 1_000_000,
        };
        // 3 * (1 + 1.25 + 0.1) + 15 = 22.05; with 1h writes 3 * (1 + 2 + 0.1) + 15 = 24.3;
        // no caching: 3 * 3 + 15 = 24.
        assert!((cost_usd(&a, &m) - 22.05).abs() < 1e-9);
        assert!((cost_uncached_usd(&a, &m) - 24.0).abs() < 1e-9);
        std::mem::swap(&mut a.cache_write_5m, &mut a.cache_write_1h);
        assert!((cost_usd(&a, &m) - 24.3).abs() < 1e-9);
    }
}
