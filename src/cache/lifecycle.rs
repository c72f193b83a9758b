//! The entry lifecycle shared by the API cache ([`super::EntryStore`]) and the trace replay's
//! block cache: one rule from an entry's times to its state, one set of state names.
//!
//! An entry written at `now` with `ready_at` is **pending** on `[now, ready_at)` and **ready**
//! from `ready_at` on (a lookup at exactly `ready_at` hits). It is alive on
//! `[last_use, last_use + ttl)`: at exactly `last_use + ttl` it has **expired**, whatever its
//! readiness. `last_use` is the send time of the last request that read or wrote it
//! (docs/cache.md). Capacity adds two states the times cannot tell: an entry pushed out while
//! alive is **evicted** until it would have expired ([`held_state`]), and a key never written
//! is **absent**.

use crate::time::{SimDuration, SimTime};

/// What a lookup of one key finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Never written.
    Absent,
    /// Written, but the writer's first response has not begun: not readable yet.
    Pending,
    /// Readable: a hit.
    Ready,
    /// Its TTL ran out (at `last_use + ttl`).
    Expired,
    /// Pushed out by the capacity while alive.
    Evicted,
}

/// The state at `now` of an entry that is still held, from its times alone; `ttl: None`
/// never expires. Returns `Pending`, `Ready` or `Expired`.
#[inline]
pub fn state(
    ready_at: SimTime,
    last_use: SimTime,
    ttl: Option<SimDuration>,
    now: SimTime,
) -> State {
    if ttl.is_some_and(|t| now >= last_use.saturating_add(t)) {
        State::Expired
    } else if now < ready_at {
        State::Pending
    } else {
        State::Ready
    }
}

/// The state of an entry that capacity may have pushed out (`evicted`): expiry comes first, so
/// an entry that would have expired anyway is not a capacity miss.
#[inline]
pub fn held_state(
    evicted: bool,
    ready_at: SimTime,
    last_use: SimTime,
    ttl: Option<SimDuration>,
    now: SimTime,
) -> State {
    match state(ready_at, last_use, ttl, now) {
        State::Expired => State::Expired,
        _ if evicted => State::Evicted,
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> SimTime {
        SimTime::from_us(us)
    }

    fn ttl(us: u64) -> Option<SimDuration> {
        Some(SimDuration::from_us(us))
    }

    #[test]
    fn pending_then_ready_then_expired_at_the_boundaries() {
        // Written at 10, ready at 15, TTL 100 from the last use at 10.
        let at = |now| state(t(15), t(10), ttl(100), t(now));
        assert_eq!((at(10), at(14)), (State::Pending, State::Pending));
        assert_eq!((at(15), at(109)), (State::Ready, State::Ready));
        assert_eq!(at(110), State::Expired);
    }

    #[test]
    fn expiry_wins_over_pending_and_no_ttl_never_expires() {
        assert_eq!(state(t(500), t(10), ttl(100), t(110)), State::Expired);
        assert_eq!(state(t(0), t(0), None, SimTime::MAX), State::Ready);
        let end = t(u64::MAX - 1);
        assert_eq!(state(t(5), end, ttl(10), end), State::Ready, "no overflow");
    }

    #[test]
    fn an_evicted_entry_is_evicted_until_it_would_have_expired() {
        let held = |evicted, ttl, now| held_state(evicted, t(15), t(10), ttl, now);
        assert_eq!(held(true, ttl(100), t(12)), State::Evicted);
        assert_eq!(held(true, ttl(100), t(109)), State::Evicted);
        assert_eq!(held(true, ttl(100), t(110)), State::Expired);
        assert_eq!(held(true, None, SimTime::MAX), State::Evicted);
        assert_eq!(held(false, ttl(100), t(12)), State::Pending);
    }
}
