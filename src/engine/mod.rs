//! The discrete-event kernel: a clock in integer microseconds and a min-heap of events keyed by
//! `(time, seq)`, so that events at the same instant run in the order they were scheduled (FIFO).
//!
//! It knows nothing of caches, agents or requests: it is generic over the event type `E`, and the
//! model drives it with `schedule_at` / `schedule_in` and `next`. Every run is bounded by a
//! maximum number of events and a horizon (TigerBeetle's "a limit on everything"). Time never goes
//! backwards (asserted). Once warmed, the heap's capacity is reused: `reset` keeps it, so a run
//! allocates nothing per event.

use crate::time::{SimDuration, SimTime};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Bounds on one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// At most this many events are delivered.
    pub max_events: u64,
    /// No event later than this instant is delivered.
    pub horizon: SimTime,
}

impl Bounds {
    /// No practical bound (tests, benches).
    pub const UNBOUNDED: Bounds = Bounds { max_events: u64::MAX, horizon: SimTime::MAX };
}

/// Why a run stopped before its queue emptied. The queue still holds the undelivered events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("event limit reached: {max_events} events delivered by t = {} us and more are pending (raise limits.max_events)", .now_us.as_us())]
    EventLimit { max_events: u64, now_us: SimTime },
    #[error("horizon reached: the next event is at {} us, past the horizon of {} us (raise limits.horizon)", .next_us.as_us(), .horizon_us.as_us())]
    Horizon { horizon_us: SimTime, next_us: SimTime },
}

/// One queued event; ordered by `(time, seq)` only, reversed for the max-heap. The pair is
/// packed in one `u128` (time in the high word, seq in the low one), so that ordering two
/// entries is one wide comparison rather than two branches: the order is the same.
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn new(time: SimTime, seq: u64, event: E) -> Self {
        Entry { key: (u128::from(time.as_us()) << 64) | u128::from(seq), event }
    }

    fn time(&self) -> SimTime {
        SimTime::from_us((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }

    // The heap compares with `<=`: one wide comparison, no `Ordering` in between.
    fn lt(&self, other: &Self) -> bool {
        other.key < self.key
    }

    fn le(&self, other: &Self) -> bool {
        other.key <= self.key
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest `(time, seq)` first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A simulated clock and its event queue.
pub struct Engine<E> {
    heap: BinaryHeap<Entry<E>>,
    now: SimTime,
    seq: u64,
    delivered: u64,
    bounds: Bounds,
}

impl<E> Engine<E> {
    /// An empty engine at t = 0.
    pub fn new(bounds: Bounds) -> Self {
        Self::with_capacity(bounds, 0)
    }

    /// An empty engine whose queue can hold `capacity` events without reallocating.
    pub fn with_capacity(bounds: Bounds, capacity: usize) -> Self {
        let now = SimTime::ZERO;
        Engine { heap: BinaryHeap::with_capacity(capacity), now, seq: 0, delivered: 0, bounds }
    }

    /// Empty the queue and rewind the clock to `start`, keeping the queue's capacity.
    pub fn reset(&mut self, bounds: Bounds, start: SimTime) {
        self.heap.clear();
        self.now = start;
        self.seq = 0;
        self.delivered = 0;
        self.bounds = bounds;
    }

    /// The current simulated time: the time of the event last delivered (or the start).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Events still queued.
    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// Schedule `event` at the absolute time `at`, which must not be in the past.
    pub fn schedule_at(&mut self, at: SimTime, event: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past: at {} us < now {} us",
            at.as_us(),
            self.now.as_us()
        );
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry::new(at, seq, event));
    }

    /// Schedule `event` `delay` after now (saturating at the end of time).
    pub fn schedule_in(&mut self, delay: SimDuration, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Deliver the next event and advance the clock to it; `Ok(None)` when the queue is empty.
    /// Stops with an error, leaving the event queued, at the event limit or past the horizon.
    pub fn pop(&mut self) -> Result<Option<(SimTime, E)>, EngineError> {
        let Some(head) = self.heap.peek() else { return Ok(None) };
        let next = head.time();
        if next > self.bounds.horizon {
            return Err(EngineError::Horizon { horizon_us: self.bounds.horizon, next_us: next });
        }
        if self.delivered >= self.bounds.max_events {
            return Err(EngineError::EventLimit {
                max_events: self.bounds.max_events,
                now_us: self.now,
            });
        }
        let entry = self.heap.pop().expect("peeked entry is present");
        assert!(next >= self.now, "time went backwards: {:?} < {:?}", next, self.now);
        self.now = next;
        self.delivered += 1;
        Ok(Some((next, entry.event)))
    }

    /// Run until the queue is empty, handing each event to `handle`, which may schedule more.
    pub fn run(
        &mut self,
        mut handle: impl FnMut(&mut Self, SimTime, E),
    ) -> Result<u64, EngineError> {
        while let Some((t, e)) = self.pop()? {
            handle(self, t, e);
        }
        Ok(self.delivered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_run_in_scheduling_order() {
        let mut e = Engine::new(Bounds::UNBOUNDED);
        for i in 0..5u32 {
            e.schedule_at(SimTime::from_us(10), i);
        }
        e.schedule_at(SimTime::from_us(5), 99);
        let mut seen = Vec::new();
        e.run(|_, t, x| seen.push((t.as_us(), x))).unwrap();
        assert_eq!(seen, vec![(5, 99), (10, 0), (10, 1), (10, 2), (10, 3), (10, 4)]);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn refuses_the_past() {
        let mut e = Engine::new(Bounds::UNBOUNDED);
        e.schedule_at(SimTime::from_us(10), ());
        e.pop().unwrap();
        e.schedule_at(SimTime::from_us(9), ());
    }
}
