//! Rate limits (SPEC.md section 7): per-model RPM, ITPM and OTPM token buckets, refilled
//! continuously (capacity = the per-minute limit, refill = limit / 60 s), as the API documents.
//!
//! Knows nothing of agents or caches: the model asks `admit(now, input_tokens, output_tokens)`
//! and gets either admission (the buckets are charged) or a retry-after. Levels are kept in
//! integer "token-microseconds" (tokens x 60e6), so refill is exact integer arithmetic.
//! Named assumption: OTPM is charged at admission with the response's actual output tokens
//! (the docs changed between "estimated from max_tokens" and "counted as produced").

use crate::time::{SimTime, US_PER_MIN};

/// One continuously refilled bucket.
#[derive(Debug, Clone)]
struct Bucket {
    limit_per_min: u64,
    /// Current level in tokens x `US_PER_MIN`.
    level: u128,
    last_us: SimTime,
}

impl Bucket {
    fn new(limit_per_min: u64) -> Self {
        Bucket { limit_per_min, level: Self::scaled(limit_per_min), last_us: 0 }
    }

    fn scaled(tokens: u64) -> u128 {
        tokens as u128 * US_PER_MIN as u128
    }

    fn refill(&mut self, now: SimTime) {
        let elapsed = now.saturating_sub(self.last_us) as u128;
        let cap = Self::scaled(self.limit_per_min);
        self.level = (self.level + elapsed * self.limit_per_min as u128).min(cap);
        self.last_us = self.last_us.max(now);
    }

    /// Microseconds until `amount` fits (0 if it fits now); `None` if it never can.
    fn wait_us(&self, amount: u64) -> Option<u64> {
        if amount > self.limit_per_min {
            return None;
        }
        let need = Self::scaled(amount);
        if need <= self.level {
            return Some(0);
        }
        let per_us = self.limit_per_min as u128;
        Some(((need - self.level).div_ceil(per_us)) as u64)
    }

    fn take(&mut self, amount: u64) {
        self.level -= Self::scaled(amount);
    }
}

/// Which limit a request can never satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Rpm,
    Itpm,
    Otpm,
}

/// The answer to one admission attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Admitted: the buckets have been charged.
    Admitted,
    /// A 429: retry after this many microseconds (the time until every bucket fits).
    RetryAfter(u64),
    /// The request exceeds a bucket's capacity and can never be admitted.
    Never(Limit, u64),
}

/// The three buckets of one model.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    rpm: Bucket,
    itpm: Bucket,
    otpm: Bucket,
}

impl RateLimiter {
    /// Full buckets at t = 0.
    pub fn new(rpm: u64, itpm: u64, otpm: u64) -> Self {
        RateLimiter { rpm: Bucket::new(rpm), itpm: Bucket::new(itpm), otpm: Bucket::new(otpm) }
    }

    /// Try to admit one request at `now` that counts `input_tokens` toward ITPM and
    /// `output_tokens` toward OTPM. Charges all three buckets only when all three fit.
    pub fn admit(&mut self, now: SimTime, input_tokens: u64, output_tokens: u64) -> Admission {
        self.rpm.refill(now);
        self.itpm.refill(now);
        self.otpm.refill(now);
        let mut wait = 0;
        for (bucket, amount, limit) in [
            (&self.rpm, 1, Limit::Rpm),
            (&self.itpm, input_tokens, Limit::Itpm),
            (&self.otpm, output_tokens, Limit::Otpm),
        ] {
            match bucket.wait_us(amount) {
                None => return Admission::Never(limit, amount),
                Some(w) => wait = wait.max(w),
            }
        }
        if wait > 0 {
            return Admission::RetryAfter(wait);
        }
        self.rpm.take(1);
        self.itpm.take(input_tokens);
        self.otpm.take(output_tokens);
        Admission::Admitted
    }

    /// Whether a request of at most `input_tokens` / `output_tokens` would be admitted now,
    /// without charging anything (used to skip the exact check when even the worst case fits).
    pub fn would_admit(&mut self, now: SimTime, input_tokens: u64, output_tokens: u64) -> bool {
        self.rpm.refill(now);
        self.itpm.refill(now);
        self.otpm.refill(now);
        self.rpm.wait_us(1) == Some(0)
            && self.itpm.wait_us(input_tokens) == Some(0)
            && self.otpm.wait_us(output_tokens) == Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::US_PER_S;

    #[test]
    fn bucket_refills_continuously() {
        // 60 RPM = one request per second once the burst of 60 is spent.
        let mut r = RateLimiter::new(60, 1_000_000, 1_000_000);
        for _ in 0..60 {
            assert_eq!(r.admit(0, 0, 0), Admission::Admitted);
        }
        assert_eq!(r.admit(0, 0, 0), Admission::RetryAfter(US_PER_S));
        assert_eq!(r.admit(US_PER_S, 0, 0), Admission::Admitted);
    }

    #[test]
    fn itpm_wait_is_the_deficit_over_the_rate() {
        // 600k ITPM = 10k tokens/s. After 600k, 5k more need 0.5 s.
        let mut r = RateLimiter::new(1000, 600_000, 1_000_000);
        assert_eq!(r.admit(0, 600_000, 0), Admission::Admitted);
        assert_eq!(r.admit(0, 5_000, 0), Admission::RetryAfter(500_000));
        assert_eq!(r.admit(0, 700_000, 0), Admission::Never(Limit::Itpm, 700_000));
    }
}
