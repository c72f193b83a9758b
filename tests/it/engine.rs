//! Tests: the discrete-event kernel. FIFO ties, bounds, monotonic time, capacity reuse.

use prefixsim::engine::{Bounds, Engine, EngineError};
use prefixsim::time::{SimDuration, SimTime};

fn t(us: u64) -> SimTime {
    SimTime::from_us(us)
}

fn d(us: u64) -> SimDuration {
    SimDuration::from_us(us)
}

#[test]
fn events_come_out_in_time_then_scheduling_order() {
    let mut e = Engine::with_capacity(Bounds::UNBOUNDED, 0);
    let times = [30u64, 10, 20, 10, 30, 0, 10];
    for (i, &at) in times.iter().enumerate() {
        e.schedule_at(t(at), i);
    }
    let mut out = Vec::new();
    while let Some((at, i)) = e.pop().unwrap() {
        out.push((at.as_us(), i));
    }
    // Sorted by time; equal times keep their scheduling order (indices 1, 3, 6 at t = 10).
    assert_eq!(out, vec![(0, 5), (10, 1), (10, 3), (10, 6), (20, 2), (30, 0), (30, 4)]);
    assert_eq!(e.delivered(), 7);
}

#[test]
fn handlers_schedule_more_and_time_never_goes_backwards() {
    // A chain: each event at t schedules one at t + 3 and, at the same instant, a tie.
    let mut e = Engine::with_capacity(Bounds::UNBOUNDED, 0);
    e.schedule_at(SimTime::ZERO, 0u32);
    let mut last = SimTime::ZERO;
    let mut seen = Vec::new();
    while let Some((at, n)) = e.pop().unwrap() {
        assert!(at >= last);
        last = at;
        seen.push((at.as_us(), n));
        if n < 6 {
            e.schedule_in(d(if n % 2 == 0 { 3 } else { 0 }), n + 1);
        }
    }
    assert_eq!(seen, vec![(0, 0), (3, 1), (3, 2), (6, 3), (6, 4), (9, 5), (9, 6)]);
}

#[test]
fn the_event_limit_stops_a_run() {
    let mut e = Engine::with_capacity(Bounds { max_events: 5, horizon: SimTime::MAX }, 0);
    e.schedule_at(SimTime::ZERO, ());
    let err = loop {
        match e.pop() {
            Ok(_) => e.schedule_in(d(1), ()),
            Err(err) => break err,
        }
    };
    assert_eq!(err, EngineError::EventLimit { max_events: 5, now_us: t(4) });
    // The undelivered event is still queued.
    assert_eq!(e.pop(), Err(err));
}

#[test]
fn the_horizon_stops_a_run() {
    let mut e = Engine::with_capacity(Bounds { max_events: u64::MAX, horizon: t(100) }, 0);
    e.schedule_at(t(100), 1);
    e.schedule_at(t(101), 2);
    assert_eq!(e.pop().unwrap(), Some((t(100), 1)));
    let err = e.pop().unwrap_err();
    assert_eq!(err, EngineError::Horizon { horizon_us: t(100), next_us: t(101) });
    assert_eq!(
        err.to_string(),
        "horizon reached: the next event is at 0.000101s, past the horizon of 0.0001s \
         (raise limits.horizon)"
    );
}

#[test]
#[should_panic(expected = "scheduled in the past")]
fn scheduling_in_the_past_is_a_bug() {
    let mut e = Engine::with_capacity(Bounds::UNBOUNDED, 0);
    e.schedule_at(t(50), ());
    e.pop().unwrap();
    e.schedule_at(t(49), ());
}

#[test]
fn reset_rewinds_the_clock_and_keeps_working() {
    let mut e = Engine::with_capacity(Bounds::UNBOUNDED, 64);
    for round in 0..3u64 {
        let start = t(round * 1000);
        e.reset(Bounds::UNBOUNDED, start);
        for k in 0..50 {
            e.schedule_in(d(k % 7), k);
        }
        let mut n = 0;
        let mut last = SimTime::ZERO;
        while let Some((at, _)) = e.pop().unwrap() {
            assert!(at >= last && at >= start);
            last = at;
            n += 1;
        }
        assert_eq!(n, 50);
    }
}
