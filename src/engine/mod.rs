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

/// One queued event; ordered by `(time, seq)` only, reversed for the max-heap.
struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest `(time, seq)` first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
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
        self.heap.push(Entry { time: at, seq, event });
    }

    /// Schedule `event` `delay` after now (saturating at the end of time).
    pub fn schedule_in(&mut self, delay: SimDuration, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Deliver the next event and advance the clock to it; `Ok(None)` when the queue is empty.
    /// Stops with an error, leaving the event queued, at the event limit or past the horizon.
    pub fn pop(&mut self) -> Result<Option<(SimTime, E)>, EngineError> {
        let Some(head) = self.heap.peek() else { return Ok(None) };
        if head.time > self.bounds.horizon {
            return Err(EngineError::Horizon {
                horizon_us: self.bounds.horizon,
                next_us: head.time,
            });
        }
        if self.delivered >= self.bounds.max_events {
            return Err(EngineError::EventLimit {
                max_events: self.bounds.max_events,
                now_us: self.now,
            });
        }
        let entry = self.heap.pop().expect("peeked entry is present");
        assert!(entry.time >= self.now, "time went backwards: {:?} < {:?}", entry.time, self.now);
        self.now = entry.time;
        self.delivered += 1;
        Ok(Some((entry.time, entry.event)))
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
