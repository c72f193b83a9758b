//! Tests: the discrete-event kernel. FIFO ties, bounds, monotonic time, capacity reuse.

use prefixsim::engine::{Bounds, Engine, EngineError};

#[test]
fn events_come_out_in_time_then_scheduling_order() {
    let mut e = Engine::new(Bounds::UNBOUNDED);
    let times = [30u64, 10, 20, 10, 30, 0, 10];
    for (i, &t) in times.iter().enumerate() {
        e.schedule_at(t, i);
    }
    let mut out = Vec::new();
    while let Some((t, i)) = e.pop().unwrap() {
        out.push((t, i));
    }
    // Sorted by time; equal times keep their scheduling order (indices 1, 3, 6 at t = 10).
    assert_eq!(out, vec![(0, 5), (10, 1), (10, 3), (10, 6), (20, 2), (30, 0), (30, 4)]);
    assert_eq!(e.delivered(), 7);
}

#[test]
fn handlers_schedule_more_and_time_never_goes_backwards() {
    // A chain: each event at t schedules one at t + 3 and, at the same instant, a tie.
    let mut e = Engine::new(Bounds::UNBOUNDED);
    e.schedule_at(0, 0u32);
    let mut last = 0;
    let mut seen = Vec::new();
    e.run(|eng, t, n| {
        assert!(t >= last);
        last = t;
        seen.push((t, n));
        if n < 6 {
            eng.schedule_in(if n % 2 == 0 { 3 } else { 0 }, n + 1);
        }
    })
    .unwrap();
    assert_eq!(seen, vec![(0, 0), (3, 1), (3, 2), (6, 3), (6, 4), (9, 5), (9, 6)]);
}

#[test]
fn the_event_limit_stops_a_run() {
    let mut e = Engine::new(Bounds { max_events: 5, horizon_us: u64::MAX });
    e.schedule_at(0, ());
    let err = e.run(|eng, _, ()| eng.schedule_in(1, ())).unwrap_err();
    assert_eq!(err, EngineError::EventLimit { max_events: 5, now_us: 4 });
    assert_eq!(e.pending(), 1);
}

#[test]
fn the_horizon_stops_a_run() {
    let mut e = Engine::new(Bounds { max_events: u64::MAX, horizon_us: 100 });
    e.schedule_at(100, 1);
    e.schedule_at(101, 2);
    assert_eq!(e.pop().unwrap(), Some((100, 1)));
    assert_eq!(e.pop().unwrap_err(), EngineError::Horizon { horizon_us: 100, next_us: 101 });
}

#[test]
#[should_panic(expected = "scheduled in the past")]
fn scheduling_in_the_past_is_a_bug() {
    let mut e = Engine::new(Bounds::UNBOUNDED);
    e.schedule_at(50, ());
    e.pop().unwrap();
    e.schedule_at(49, ());
}

#[test]
fn reset_rewinds_the_clock_and_keeps_working() {
    let mut e = Engine::with_capacity(Bounds::UNBOUNDED, 64);
    for round in 0..3u64 {
        e.reset(Bounds::UNBOUNDED, round * 1000);
        for k in 0..50 {
            e.schedule_in(k % 7, k);
        }
        let mut n = 0;
        let mut last = 0;
        while let Some((t, _)) = e.pop().unwrap() {
            assert!(t >= last && t >= round * 1000);
            last = t;
            n += 1;
        }
        assert_eq!(n, 50);
    }
}
