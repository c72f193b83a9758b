//! The discrete-event kernel: a clock in integer microseconds and a queue of events ordered by
//! time, events at the same instant in the order they were scheduled (FIFO).
//!
//! It knows nothing of caches, agents or requests: it is generic over the event type `E`, and the
//! model drives it with `schedule_at` / `schedule_in` and `pop`. Every run is bounded by a
//! maximum number of events and a horizon (TigerBeetle's "a limit on everything"). Time never goes
//! backwards (asserted). Once warmed, the queue's capacity is reused: `reset` keeps it, so a run
//! allocates nothing per event.
//!
//! The queue (`Queue`): a model keeps a few events in flight (one per agent, mostly), and a
//! short sorted run serves them best: a pop advances its front, a push walks in from the back
//! (a new event usually lands near it), shifting the later entries by one. An entry of the run
//! is a time and an event, 16 bytes for the model's events: a new event goes after every entry
//! at its time, so its place keeps ties FIFO without a sequence number. Past `SORTED_MAX`
//! pending events the run moves into a binary heap keyed by `(time, seq)`, `seq` numbering the
//! heap's entries in scheduling order, until that empties.
//!
//! For so few events the walk costs less than a monotone radix heap (whose pops spread a
//! bucket of a few entries over the buckets below, more work than the walk's few shifts) or
//! a binary search with one `Vec::insert` (the search and the `memmove` call cost what the
//! walk does), in instructions and in time on the peer fan-out (16 agents).

use crate::numfmt::clock;
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
    #[error("event limit reached: {max_events} events delivered by t = {} and more are pending (raise limits.max_events)", clock(.now_us.as_us()))]
    EventLimit { max_events: u64, now_us: SimTime },
    #[error("horizon reached: the next event is at {}, past the horizon of {} (raise limits.horizon)", clock(.next_us.as_us()), clock(.horizon_us.as_us()))]
    Horizon { horizon_us: SimTime, next_us: SimTime },
}

/// One event in the sorted run: 16 bytes for an 8-byte event. Its place in the run orders it
/// among events at the same time, so it needs no sequence number.
#[derive(Clone, Copy)]
struct Pending<E> {
    time: SimTime,
    event: E,
}

/// One event in the heap, ordered by `(time, seq)` only, `seq` numbering the heap's entries
/// in scheduling order. Two words of key and the event: 24 bytes for an 8-byte event (a `u128`
/// key would align the entry to 32).
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
    delivered: u64,
    bounds: Bounds,
}

/// Unbounded, with room for the few hundred events a model keeps in flight.
impl<E: Copy> Default for Engine<E> {
    fn default() -> Self {
        Self::with_capacity(Bounds::UNBOUNDED, 256)
    }
}

impl<E: Copy> Engine<E> {
    /// An empty engine whose queue can hold `capacity` events without reallocating.
    pub fn with_capacity(bounds: Bounds, capacity: usize) -> Self {
        let now = SimTime::ZERO;
        let queue = Queue {
            sorted: Vec::with_capacity(2 * SORTED_MAX),
            front: 0,
            heap: BinaryHeap::with_capacity(capacity),
            seq: 0,
        };
        Engine { queue, now, delivered: 0, bounds }
    }

    /// Empty the queue and rewind the clock to `start`, keeping the queue's capacity.
    pub fn reset(&mut self, bounds: Bounds, start: SimTime) {
        self.queue.clear();
        self.now = start;
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

    /// Schedule `event` at the absolute time `at`, which must not be in the past.
    #[inline]
    pub fn schedule_at(&mut self, at: SimTime, event: E) {
        if at < self.now {
            past(at, self.now);
        }
        self.queue.push(Pending { time: at, event });
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
        let Some(Pending { time: next, event }) = self.queue.first() else { return Ok(None) };
        if next > self.bounds.horizon || self.delivered >= self.bounds.max_events {
            return Err(self.stop(next));
        }
        self.queue.remove_first();
        // A queue never yields an earlier key than the last one: kept as a check of the queue.
        assert!(next >= self.now, "time went backwards: {:?} < {:?}", next, self.now);
        self.now = next;
        self.delivered += 1;
        Ok(Some((next, event)))
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
    sorted: Vec<Pending<E>>,
    front: usize,
    /// Non-empty only past `SORTED_MAX` pending events, until it empties again.
    heap: BinaryHeap<Entry<E>>,
    /// The next heap entry's `seq`.
    seq: u64,
}

impl<E: Copy> Queue<E> {
    fn clear(&mut self) {
        self.sorted.clear();
        self.front = 0;
        self.heap.clear();
        self.seq = 0;
    }

    /// Whether the pending events are in the heap (there are some there) or the sorted run.
    #[inline(always)]
    fn heaped(&self) -> bool {
        !self.heap.is_empty()
    }

    /// The earliest entry.
    #[inline]
    fn first(&self) -> Option<Pending<E>> {
        match self.heaped() {
            false => self.sorted.get(self.front).copied(),
            true => self.heap.peek().map(|e| Pending { time: e.time, event: e.event }),
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
    fn push(&mut self, entry: Pending<E>) {
        if !self.heaped() {
            if self.sorted.len() - self.front < SORTED_MAX {
                self.sorted_push(entry);
                return;
            }
            self.make_heap();
        }
        self.heap_push(entry);
    }

    /// Number `entry` after every entry already in the heap, and push it.
    fn heap_push(&mut self, entry: Pending<E>) {
        self.heap.push(Entry { time: entry.time, seq: self.seq, event: entry.event });
        self.seq += 1;
    }

    /// Insert into the sorted run: later entries move up by one from the back, then `entry`
    /// is written once. The run starts over at index 0 when its front has moved far enough:
    /// its buffer stays within `2 * SORTED_MAX` entries and never grows per event. `entry` is
    /// the latest scheduled yet, so it goes after every entry at its time or earlier: the
    /// walk compares times, and ties stay in scheduling order.
    #[inline]
    fn sorted_push(&mut self, entry: Pending<E>) {
        if self.front >= SORTED_MAX || self.front == self.sorted.len() {
            self.compact();
        }
        self.sorted.push(entry);
        let run = &mut self.sorted[self.front..];
        let mut hole = run.len() - 1;
        while hole > 0 && run[hole - 1].time > entry.time {
            run[hole] = run[hole - 1];
            hole -= 1;
        }
        run[hole] = entry;
    }

    /// Move the pending run to the start of its buffer.
    fn compact(&mut self) {
        self.sorted.drain(..self.front);
        self.front = 0;
    }

    /// The sorted run moves into the heap, numbered in its order: the run's ties are in
    /// scheduling order, and every later push is numbered after them.
    #[cold]
    #[inline(never)]
    fn make_heap(&mut self) {
        let run = &self.sorted[self.front..];
        let numbered = (0..).zip(run).map(|(seq, p)| Entry { time: p.time, seq, event: p.event });
        self.heap.clear();
        self.heap.extend(numbered);
        self.seq = run.len() as u64;
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
    use std::collections::BTreeMap;

    /// The engine beside a `BTreeMap` keyed by `(time, scheduling number)`, the reference
    /// order: every pop must agree with the map's first entry.
    struct Checked {
        engine: Engine<u32>,
        map: BTreeMap<(u64, u64), u32>,
        scheduled: u64,
    }

    impl Checked {
        fn new() -> Self {
            let engine = Engine::with_capacity(Bounds::UNBOUNDED, 0);
            Checked { engine, map: BTreeMap::new(), scheduled: 0 }
        }

        /// Schedule `burst` events, the k-th `(k / 2) * delay` after now (saturating): pairs
        /// of ties, and all ties when `delay` is 0.
        fn schedule(&mut self, delay: u64, burst: u64) {
            let now = self.engine.now().as_us();
            for k in 0..burst {
                let at = now.saturating_add(delay.saturating_mul(k / 2));
                let event = self.scheduled as u32;
                self.engine.schedule_at(SimTime::from_us(at), event);
                self.map.insert((at, self.scheduled), event);
                self.scheduled += 1;
            }
        }

        fn pop(&mut self) {
            let want = self.map.pop_first().map(|((at, _), ev)| (SimTime::from_us(at), ev));
            assert_eq!(self.engine.pop().unwrap(), want);
        }

        fn drain(&mut self) {
            while !self.map.is_empty() {
                self.pop();
            }
            assert_eq!(self.engine.pop().unwrap(), None);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Any schedule of pops and bursts (ties, near and far times, the end of time, past
        /// `SORTED_MAX` pending and back) delivers the reference order.
        #[test]
        fn delivers_the_reference_order(
            steps in proptest::collection::vec(
                (
                    0_u8..3,
                    proptest::prop_oneof![
                        proptest::strategy::Just(0_u64),
                        0_u64..4,
                        0_u64..10_000_000,
                        proptest::prelude::any::<u64>()
                    ],
                    1_u64..48,
                ),
                0..300,
            ),
        ) {
            let mut c = Checked::new();
            for (kind, delay, burst) in steps {
                match kind {
                    0 => c.pop(),
                    1 => c.schedule(delay, 1),
                    _ => c.schedule(delay, burst),
                }
            }
            c.drain();
        }
    }

    /// A long run, as a model makes one: mostly one new event per delivered one with about 16
    /// in flight, now and then a burst into the heap and back; then a `reset` and again.
    #[test]
    fn long_runs_deliver_the_reference_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut c = Checked::new();
        for round in 0..2 {
            c.schedule(7, 16);
            for _ in 0..300_000 {
                let r = next();
                match r % 1000 {
                    0 => c.schedule(r % 50, 40 + r % 60),
                    1..=300 if c.map.len() > 16 => {}
                    _ => c.schedule(r % 3 * (r >> 12) % 5_000_000, 1),
                }
                c.pop();
            }
            c.drain();
            c.engine.reset(Bounds::UNBOUNDED, SimTime::from_us(round * 1000));
        }
    }
}
