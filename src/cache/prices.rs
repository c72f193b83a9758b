//! The price formula of a request on a model (the presets themselves are config's,
//! `config::presets`). Every rule and its public source: docs/anthropic.md.

use super::ModelParams;
use super::Usage;

/// docs/cache.md: `input * (uncached + w5m * write_5m + w1h * write_1h + r * read) + output *
/// output_tokens`, prices per million tokens, plus explicit cache storage (Gemini:
/// `storage_usd_per_mtok_hour` x the token-hours the request bought). With a long context window in use
/// (`use_long_context`), a request whose input (read + written + uncached) exceeds the
/// threshold pays the long-context prices on all its tokens.
pub fn cost_usd(model: &ModelParams, usage: &Usage, output_tokens: u64) -> f64 {
    Prices::of(model).bill(usage, output_tokens).cost_usd
}

fn storage(usd_per_mtok_hour: f64, usage: &Usage) -> f64 {
    match usage.storage_token_s {
        0 => 0.0,
        s => usd_per_mtok_hour * s as f64 / 3600.0 / 1e6,
    }
}

/// What the same request would cost with no caching at all (every input token at base price).
pub fn uncached_cost_usd(model: &ModelParams, usage: &Usage, output_tokens: u64) -> f64 {
    Prices::of(model).bill(usage, output_tokens).uncached_usd
}

/// A model's prices with what no request changes worked out once (a run bills all its
/// requests to a model at the same prices): the long-context prices multiplied out, and a
/// threshold no request exceeds when the long window is not in use. The bill is bit for bit
/// the formula's: the same operations on the same values in the same order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// Input and output $/MTok up to the threshold, and above it.
    base: (f64, f64),
    long: (f64, f64),
    /// Requests of more input tokens than this pay `long` (`u64::MAX`: none do).
    threshold_tokens: u64,
    write_5m: f64,
    write_1h: f64,
    read: f64,
    storage_usd_per_mtok_hour: f64,
}

/// What one request costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bill {
    pub cost_usd: f64,
    /// What it would cost with no caching at all.
    pub uncached_usd: f64,
    /// Whether it paid the long-context prices.
    pub long_context: bool,
}

impl Prices {
    pub fn of(model: &ModelParams) -> Self {
        let base = (model.input_usd_per_mtok, model.output_usd_per_mtok);
        let (long, threshold_tokens) = match &model.long_context {
            Some(l) if model.use_long_context => {
                ((base.0 * l.input_multiplier, base.1 * l.output_multiplier), l.threshold_tokens)
            }
            _ => (base, u64::MAX),
        };
        Prices {
            base,
            long,
            threshold_tokens,
            write_5m: model.write_5m_multiplier,
            write_1h: model.write_1h_multiplier,
            read: model.read_multiplier,
            storage_usd_per_mtok_hour: model.storage_usd_per_mtok_hour,
        }
    }

    fn is_long(&self, input_tokens: u64) -> bool {
        input_tokens > self.threshold_tokens
    }

    /// The bill of a request of `usage` and `output_tokens` (`cost_usd`, `uncached_cost_usd`
    /// and the long-context flag at once: the output's price is worked out once for both costs).
    /// Token counts below 2^63 (all, in practice) convert to floats through the signed
    /// conversion, one instruction where an unsigned one is five: the same integer, so the
    /// same float. Inlined into its callers: out of line, the bill came back through memory
    /// and the caller read its two costs as one 16-byte load of the two 8-byte stores just
    /// made (a store-forwarding stall a request); the huge counts stay out of line.
    #[inline(always)]
    pub fn bill(&self, usage: &Usage, output_tokens: u64) -> Bill {
        let total = usage.total();
        let counts = [usage.cache_write_5m, usage.cache_write_1h, usage.cache_read];
        let all = usage.uncached | counts[0] | counts[1] | counts[2] | total | output_tokens;
        match all >> 63 {
            0 => self.bill_as(usage, total, output_tokens, |n| n as i64 as f64),
            _ => self.bill_huge(usage, total, output_tokens),
        }
    }

    /// `bill` with a count of 2^63 or more (never in practice).
    #[cold]
    #[inline(never)]
    fn bill_huge(&self, usage: &Usage, total: u64, output_tokens: u64) -> Bill {
        self.bill_as(usage, total, output_tokens, |n| n as f64)
    }

    /// `bill`, its counts converted by `float` (exact: `n as f64`).
    #[inline(always)]
    fn bill_as(
        &self,
        usage: &Usage,
        total: u64,
        output_tokens: u64,
        float: impl Fn(u64) -> f64,
    ) -> Bill {
        let long_context = self.is_long(total);
        let (input, output) = if long_context { self.long } else { self.base };
        let input_units = float(usage.uncached)
            + self.write_5m * float(usage.cache_write_5m)
            + self.write_1h * float(usage.cache_write_1h)
            + self.read * float(usage.cache_read);
        let output_usd = output * float(output_tokens);
        Bill {
            cost_usd: (input * input_units + output_usd) / 1e6
                + storage(self.storage_usd_per_mtok_hour, usage),
            uncached_usd: (input * float(total) + output_usd) / 1e6,
            long_context,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula as docs/cache.md writes it, term by term, for the bill to match bit for bit.
    fn formula(model: &ModelParams, u: &Usage, out: u64) -> (f64, f64) {
        let (input, output) = match &model.long_context {
            Some(l) if model.use_long_context && u.total() > l.threshold_tokens => (
                model.input_usd_per_mtok * l.input_multiplier,
                model.output_usd_per_mtok * l.output_multiplier,
            ),
            _ => (model.input_usd_per_mtok, model.output_usd_per_mtok),
        };
        let units = u.uncached as f64
            + model.write_5m_multiplier * u.cache_write_5m as f64
            + model.write_1h_multiplier * u.cache_write_1h as f64
            + model.read_multiplier * u.cache_read as f64;
        let cost = (input * units + output * out as f64) / 1e6
            + storage(model.storage_usd_per_mtok_hour, u);
        (cost, (input * u.total() as f64 + output * out as f64) / 1e6)
    }

    /// Claude Sonnet 4.5's prices, with its 1M-token long-context offer (`config::presets`).
    fn sonnet_4_5() -> ModelParams {
        ModelParams {
            name: "claude-sonnet-4.5".into(),
            input_usd_per_mtok: 3.0,
            output_usd_per_mtok: 15.0,
            read_multiplier: 0.1,
            write_5m_multiplier: 1.25,
            write_1h_multiplier: 2.0,
            storage_usd_per_mtok_hour: 0.0,
            min_cacheable_tokens: 1024,
            context_window_tokens: 200_000,
            long_context: Some(crate::cache::LongContext {
                window_tokens: 1_000_000,
                threshold_tokens: 200_000,
                input_multiplier: 2.0,
                output_multiplier: 1.5,
            }),
            use_long_context: false,
            thinking: crate::cache::ThinkingHistory::Stripped,
            rate_limit_class: "sonnet-4.x".into(),
            itpm_counts_cache_reads: false,
        }
    }

    /// Counts of 2^63 and more (where the signed conversion would be wrong) bill as the
    /// formula too.
    #[test]
    fn a_bill_of_huge_counts_is_the_formula_bit_for_bit() {
        let model = sonnet_4_5();
        let u = Usage { cache_read: (1 << 63) + 4097, uncached: 3, ..Usage::default() };
        for out in [5, (1 << 63) + 1025, u64::MAX] {
            let bill = Prices::of(&model).bill(&u, out);
            let (cost, uncached) = formula(&model, &u, out);
            assert_eq!(bill.cost_usd.to_bits(), cost.to_bits(), "cost of {out} output");
            assert_eq!(bill.uncached_usd.to_bits(), uncached.to_bits(), "uncached of {out}");
        }
    }

    #[test]
    fn a_bill_is_the_formula_bit_for_bit_on_either_side_of_the_long_threshold() {
        let mut model = sonnet_4_5();
        model.use_long_context = true;
        let threshold = model.long_context.as_ref().expect("a long window").threshold_tokens;
        for (i, total) in
            [0, 1, 777, threshold, threshold + 1, 3 * threshold].into_iter().enumerate()
        {
            let read = total / 3;
            let u = Usage {
                cache_read: read,
                cache_write_5m: (total - read) / 2,
                cache_write_1h: (total - read) / 7,
                uncached: total - read - (total - read) / 2 - (total - read) / 7,
                storage_token_s: 3600 * i as u64,
                ..Usage::default()
            };
            let bill = Prices::of(&model).bill(&u, 1234 + i as u64);
            let (cost, uncached) = formula(&model, &u, 1234 + i as u64);
            assert_eq!(bill.cost_usd.to_bits(), cost.to_bits(), "cost at {total} tokens");
            assert_eq!(bill.uncached_usd.to_bits(), uncached.to_bits(), "uncached at {total}");
            assert_eq!(bill.long_context, total > threshold);
        }
        model.use_long_context = false;
        assert!(
            !Prices::of(&model)
                .bill(&Usage { uncached: u64::MAX, ..Usage::default() }, 0)
                .long_context
        );
    }
}
