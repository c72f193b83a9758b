//! Rate limits (docs/model.md): per-model RPM, ITPM and OTPM token buckets, refilled
//! continuously (capacity = the per-minute limit, refill = limit / 60 s), as the API documents.
//!
//! Knows nothing of agents or caches: the model asks `admit(now, input_tokens, output_tokens)`
//! and gets either admission (the buckets are charged) or a retry-after. Levels are kept in
//! integer "token-microseconds" (tokens x 60e6), so refill is exact integer arithmetic.
//! Named assumption: OTPM is charged at admission with the response's actual output tokens
//! (the docs changed between "estimated from max_tokens" and "counted as produced").
//!
//! Enforcement interval (`rate_limits.interval`): the docs say a per-minute limit "might be
//! enforced" over shorter intervals (60 RPM as 1 request per second). Over an interval I a
//! bucket holds `limit * I / 1 min` (refilled at the same `limit` per minute), so a burst
//! larger than that is refused even when the minute's budget is not spent. A request larger
//! than the bucket but within the per-minute limit is admitted from a full bucket and leaves
//! it in debt (named assumption: the API admits requests up to its per-minute limit). With
//! I = 1 min this is a plain per-minute bucket, exactly.

use crate::time::{SimDuration, SimTime, US_PER_MIN};

/// One continuously refilled bucket.
#[derive(Debug, Clone)]
struct Bucket {
    limit_per_min: u64,
    /// Capacity in tokens x `US_PER_MIN`: `limit * interval_us`.
    cap: i128,
    /// Current level in tokens x `US_PER_MIN` (negative: in debt after an oversized request).
    level: i128,
    last: SimTime,
}

impl Bucket {
    fn new(limit_per_min: u64, interval_us: u64) -> Self {
        let cap = limit_per_min as i128 * interval_us.clamp(1, US_PER_MIN) as i128;
        Bucket { limit_per_min, cap, level: cap, last: SimTime::ZERO }
    }

    fn scaled(tokens: u64) -> i128 {
        tokens as i128 * US_PER_MIN as i128
    }

    fn refill(&mut self, now: SimTime) {
        let elapsed = now.saturating_since(self.last).as_us() as i128;
        self.level = (self.level + elapsed * self.limit_per_min as i128).min(self.cap);
        self.last = self.last.max(now);
    }

    /// Microseconds until `amount` fits (0 if it fits now); `None` if it never can (more than
    /// the per-minute limit). An amount above the bucket's capacity fits a full bucket.
    fn wait_us(&self, amount: u64) -> Option<u64> {
        if amount > self.limit_per_min {
            return None;
        }
        let need = Self::scaled(amount).min(self.cap);
        if need <= self.level {
            return Some(0);
        }
        let per_us = self.limit_per_min as i128;
        Some(((need - self.level) as u128).div_ceil(per_us as u128) as u64)
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
    /// A 429: retry after this long (the time until every bucket fits).
    RetryAfter(SimDuration),
    /// The request's amount exceeds the limit's per-minute capacity (the third number): it can
    /// never be admitted.
    Never(Limit, u64, u64),
}

/// The three buckets of one model.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    rpm: Bucket,
    itpm: Bucket,
    otpm: Bucket,
}

impl RateLimiter {
    /// Full buckets at t = 0, each limit enforced over `interval_us` (at most a minute).
    pub fn with_interval(rpm: u64, itpm: u64, otpm: u64, interval_us: u64) -> Self {
        RateLimiter {
            rpm: Bucket::new(rpm, interval_us),
            itpm: Bucket::new(itpm, interval_us),
            otpm: Bucket::new(otpm, interval_us),
        }
    }

    /// Try to admit one request at `now` that counts `input_tokens` toward ITPM and
    /// `output_tokens` toward OTPM. Charges all three buckets only when all three fit.
    pub fn admit(&mut self, now: SimTime, input_tokens: u64, output_tokens: u64) -> Admission {
        self.refill(now);
        let mut wait = 0;
        for (bucket, amount, limit) in [
            (&self.rpm, 1, Limit::Rpm),
            (&self.itpm, input_tokens, Limit::Itpm),
            (&self.otpm, output_tokens, Limit::Otpm),
        ] {
            match bucket.wait_us(amount) {
                None => return Admission::Never(limit, amount, bucket.limit_per_min),
                Some(w) => wait = wait.max(w),
            }
        }
        if wait > 0 {
            return Admission::RetryAfter(SimDuration::from_us(wait));
        }
        self.rpm.take(1);
        self.itpm.take(input_tokens);
        self.otpm.take(output_tokens);
        Admission::Admitted
    }

    /// Whether a request of at most `input_tokens` / `output_tokens` would be admitted now,
    /// without charging anything (used to skip the exact check when even the worst case fits).
    pub fn would_admit(&mut self, now: SimTime, input_tokens: u64, output_tokens: u64) -> bool {
        self.refill(now);
        let asks = [(&self.rpm, 1), (&self.itpm, input_tokens), (&self.otpm, output_tokens)];
        asks.iter().all(|(bucket, amount)| bucket.wait_us(*amount) == Some(0))
    }

    fn refill(&mut self, now: SimTime) {
        for bucket in [&mut self.rpm, &mut self.itpm, &mut self.otpm] {
            bucket.refill(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::US_PER_S;

    const T0: SimTime = SimTime::ZERO;

    fn after(us: u64) -> Admission {
        Admission::RetryAfter(SimDuration::from_us(us))
    }

    #[test]
    fn bucket_refills_continuously() {
        // 60 RPM = one request per second once the burst of 60 is spent.
        let mut r = RateLimiter::with_interval(60, 1_000_000, 1_000_000, US_PER_MIN);
        for _ in 0..60 {
            assert_eq!(r.admit(T0, 0, 0), Admission::Admitted);
        }
        assert_eq!(r.admit(T0, 0, 0), after(US_PER_S));
        assert_eq!(r.admit(SimTime::from_us(US_PER_S), 0, 0), Admission::Admitted);
    }

    #[test]
    fn a_one_second_interval_refuses_the_burst_a_minute_allows() {
        // 60 RPM over 1 s: the bucket holds 60 * 1 / 60 = 1 request. Two at t = 0: the second
        // waits 1 s (the refill of one request at 1/s). Over a minute both pass at once.
        let mut r = RateLimiter::with_interval(60, 1_000_000, 1_000_000, US_PER_S);
        assert_eq!(r.admit(T0, 0, 0), Admission::Admitted);
        assert_eq!(r.admit(T0, 0, 0), after(US_PER_S));
        let mut m = RateLimiter::with_interval(60, 1_000_000, 1_000_000, US_PER_MIN);
        assert_eq!(m.admit(T0, 0, 0), Admission::Admitted);
        assert_eq!(m.admit(T0, 0, 0), Admission::Admitted);
        // ITPM 600k over 1 s holds 10k tokens; a 30k request (under the minute's 600k) fits a
        // full bucket and leaves it 20k in debt: the next 1-token request waits for 20k + 1
        // tokens at 10k/s = 2.0001 s. A request over the minute's limit never fits.
        let mut t = RateLimiter::with_interval(1_000, 600_000, 1_000_000, US_PER_S);
        assert_eq!(t.admit(T0, 30_000, 0), Admission::Admitted);
        assert_eq!(t.admit(T0, 1, 0), after(2_000_100));
        assert_eq!(t.admit(T0, 600_001, 0), Admission::Never(Limit::Itpm, 600_001, 600_000));
    }

    #[test]
    fn itpm_wait_is_the_deficit_over_the_rate() {
        // 600k ITPM = 10k tokens/s. After 600k, 5k more need 0.5 s.
        let mut r = RateLimiter::with_interval(1000, 600_000, 1_000_000, US_PER_MIN);
        assert_eq!(r.admit(T0, 600_000, 0), Admission::Admitted);
        assert_eq!(r.admit(T0, 5_000, 0), after(500_000));
        assert_eq!(r.admit(T0, 700_000, 0), Admission::Never(Limit::Itpm, 700_000, 600_000));
    }
}
