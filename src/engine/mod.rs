//! The discrete-event kernel: a clock in integer microseconds and a queue of events keyed by
//! `(time, seq)`, so that events at the same instant run in the order they were scheduled (FIFO).
//!
//! It knows nothing of caches, agents or requests: it is generic over the event type `E`, and the
//! model drives it with `schedule_at` / `schedule_in` and `next`. Every run is bounded by a
//! maximum number of events and a horizon (TigerBeetle's "a limit on everything"). Time never goes
//! backwards (asserted). Once warmed, the queue's capacity is reused: `reset` keeps it, so a run
//! allocates nothing per event.
//!
//! The queue (`Queue`): a model keeps a few events in flight (one per agent, mostly), and a
//! short sorted run serves them best: a pop advances its front, a push walks in from the back
//! (a new event usually lands near it), shifting the later entries by one. Past `SORTED_MAX`
//! pending events it moves into a binary heap until that empties. Keys `(time, seq)` are
//! unique, so any correct priority queue pops the same sequence.

use crate::time::{SimDuration, SimTime};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Pending events the sorted run holds before the queue becomes a heap: an insertion shifts
/// at most this many.
const SORTED_MAX: usize = 32;

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

/// One queued event, ordered by `(time, seq)` only. Two words of key and the event: 24 bytes
/// for an 8-byte event (a `u128` key would align the entry to 32).
#[derive(Clone, Copy)]
struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// `(time, seq)` as one number: ordering two entries is one wide comparison.
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.time.as_us()) << 64) | u128::from(self.seq)
    }
}

// Ordered by key only, reversed: `BinaryHeap` (a max-heap) pops the earliest first.
impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }

    // The heap compares with `<=`: one wide comparison, no `Ordering` in between.
    fn le(&self, other: &Self) -> bool {
        other.key() <= self.key()
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// A simulated clock and its event queue. Events are small plain values (`Copy`): the queue
/// moves them by value.
pub struct Engine<E> {
    queue: Queue<E>,
    now: SimTime,
    seq: u64,
    delivered: u64,
    bounds: Bounds,
}

impl<E: Copy> Engine<E> {
    /// An empty engine at t = 0.
    pub fn new(bounds: Bounds) -> Self {
        Self::with_capacity(bounds, 0)
    }

    /// An empty engine whose queue can hold `capacity` events without reallocating.
    pub fn with_capacity(bounds: Bounds, capacity: usize) -> Self {
        let now = SimTime::ZERO;
        let queue = Queue {
            sorted: Vec::with_capacity(2 * SORTED_MAX),
            front: 0,
            heap: BinaryHeap::with_capacity(capacity),
        };
        Engine { queue, now, seq: 0, delivered: 0, bounds }
    }

    /// Empty the queue and rewind the clock to `start`, keeping the queue's capacity.
    pub fn reset(&mut self, bounds: Bounds, start: SimTime) {
        self.queue.clear();
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
        self.queue.len()
    }

    /// Schedule `event` at the absolute time `at`, which must not be in the past.
    #[inline]
    pub fn schedule_at(&mut self, at: SimTime, event: E) {
        if at < self.now {
            past(at, self.now);
        }
        let entry = Entry { time: at, seq: self.seq, event };
        self.seq += 1;
        self.queue.push(entry);
    }

    /// Schedule `event` `delay` after now (saturating at the end of time).
    #[inline]
    pub fn schedule_in(&mut self, delay: SimDuration, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Deliver the next event and advance the clock to it; `Ok(None)` when the queue is empty.
    /// Stops with an error, leaving the event queued, at the event limit or past the horizon.
    #[inline]
    pub fn pop(&mut self) -> Result<Option<(SimTime, E)>, EngineError> {
        let Some(head) = self.queue.first() else { return Ok(None) };
        let next = head.time;
        if next > self.bounds.horizon || self.delivered >= self.bounds.max_events {
            return Err(self.stop(next));
        }
        let event = head.event;
        self.queue.remove_first();
        // A queue never yields an earlier key than the last one: kept as a check of the queue.
        assert!(next >= self.now, "time went backwards: {:?} < {:?}", next, self.now);
        self.now = next;
        self.delivered += 1;
        Ok(Some((next, event)))
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

    /// Why the run stops before delivering the event at `next`: the horizon, else the limit.
    #[cold]
    #[inline(never)]
    fn stop(&self, next: SimTime) -> EngineError {
        if next > self.bounds.horizon {
            return EngineError::Horizon { horizon_us: self.bounds.horizon, next_us: next };
        }
        EngineError::EventLimit { max_events: self.bounds.max_events, now_us: self.now }
    }
}

/// The pending events: a sorted run while short, a heap beyond `SORTED_MAX`.
struct Queue<E> {
    /// `sorted[front..]`, earliest first, are pending; empty while the heap holds any. The delivered ones
    /// before `front` are dropped when the run moves back to the start (`compact`).
    sorted: Vec<Entry<E>>,
    front: usize,
    /// Non-empty only past `SORTED_MAX` pending events, until it empties again.
    heap: BinaryHeap<Entry<E>>,
}

impl<E: Copy> Queue<E> {
    fn clear(&mut self) {
        self.sorted.clear();
        self.front = 0;
        self.heap.clear();
    }

    fn len(&self) -> usize {
        self.sorted.len() - self.front + self.heap.len()
    }

    /// Whether the pending events are in the heap (there are some there) or the sorted run.
    #[inline(always)]
    fn heaped(&self) -> bool {
        !self.heap.is_empty()
    }

    /// The earliest entry.
    #[inline]
    fn first(&self) -> Option<&Entry<E>> {
        match self.heaped() {
            false => self.sorted.get(self.front),
            true => self.heap.peek(),
        }
    }

    /// Drop the earliest entry (there is one). An emptied heap is a sorted run again.
    #[inline]
    fn remove_first(&mut self) {
        if !self.heaped() {
            self.front += 1;
            return;
        }
        self.heap.pop();
    }

    #[inline]
    fn push(&mut self, entry: Entry<E>) {
        if !self.heaped() {
            if self.sorted.len() - self.front < SORTED_MAX {
                self.sorted_push(entry);
                return;
            }
            self.make_heap();
        }
        self.heap.push(entry);
    }

    /// Insert into the sorted run: later entries move up by one from the back, then `entry`
    /// is written once. The run starts over at index 0 when its front has moved far enough:
    /// its buffer stays within `2 * SORTED_MAX` entries and never grows per event. `entry`
    /// has the largest `seq` yet (the engine numbers events as they are scheduled), so an
    /// entry orders before it exactly when its time is not later: the walk compares times,
    /// not whole keys.
    #[inline]
    fn sorted_push(&mut self, entry: Entry<E>) {
        if self.front >= SORTED_MAX || self.front == self.sorted.len() {
            self.compact();
        }
        debug_assert!(self.sorted[self.front..].iter().all(|e| e.seq < entry.seq));
        let mut hole = self.sorted.len();
        self.sorted.push(entry);
        while hole > self.front {
            let before = self.sorted[hole - 1];
            if before.time <= entry.time {
                break;
            }
            self.sorted[hole] = before;
            hole -= 1;
        }
        self.sorted[hole] = entry;
    }

    /// Move the pending run to the start of its buffer.
    fn compact(&mut self) {
        self.sorted.drain(..self.front);
        self.front = 0;
    }

    /// The sorted run moves into the heap.
    #[cold]
    #[inline(never)]
    fn make_heap(&mut self) {
        self.heap.clear();
        self.heap.extend(self.sorted[self.front..].iter().copied());
        self.sorted.clear();
        self.front = 0;
    }
}

/// An event scheduled before now: a bug in the model.
#[cold]
#[inline(never)]
fn past(at: SimTime, now: SimTime) -> ! {
    panic!("event scheduled in the past: at {} us < now {} us", at.as_us(), now.as_us())
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

    /// The heap against a plain list searched for its minimum `(time, seq)`: over pushes and
    /// pops interleaved at random (many ties), both deliver the same events in the same order.
    #[test]
    fn delivers_in_time_then_scheduling_order() {
        let mut e = Engine::new(Bounds::UNBOUNDED);
        let mut list: Vec<(u64, u64, u32)> = Vec::new();
        let (mut x, mut seq) = (12345u64, 0u64);
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 33
        };
        for i in 0..5_000u32 {
            let r = next();
            if r % 3 != 0 || list.is_empty() {
                let at = e.now().as_us() + r % 8;
                e.schedule_at(SimTime::from_us(at), i);
                list.push((at, seq, i));
                seq += 1;
                continue;
            }
            let min = (0..list.len()).min_by_key(|&j| (list[j].0, list[j].1)).unwrap();
            let (at, _, ev) = list.swap_remove(min);
            assert_eq!(e.pop().unwrap(), Some((SimTime::from_us(at), ev)));
            assert_eq!(e.pending(), list.len());
        }
        list.sort();
        let rest: Vec<_> = list.iter().map(|&(at, _, ev)| (at, ev)).collect();
        let mut seen = Vec::new();
        e.run(|_, t, ev| seen.push((t.as_us(), ev))).unwrap();
        assert_eq!(seen, rest);
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
