//! The one executor: tasks `0..total` on `jobs` threads, each worker with its own state (a
//! reusable model simulator, merged histograms), and every result folded on the calling
//! thread strictly in index order. Whatever the number of threads, the fold sees the same
//! sequence, so outputs never depend on `--jobs`.
//!
//! Runs, sweep points and tune candidates all go through `ordered`; a sweep stops early by
//! setting `stop` (Ctrl-C), and any call by a stopped `watch::Watch` installed on the calling
//! thread: the tasks in flight finish and are folded, nothing after a gap is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Condvar, Mutex};

use super::watch::{Entered, Watch};

struct Queue {
    next: usize,
    folded: usize,
    stop: bool,
}

/// Run `work(state, k)` for k in 0..total on `jobs` threads, each with its own `init()` state,
/// and call `fold(k, value)` in index order on this thread. Workers stay within a window of
/// `4 * jobs` tasks past the last folded one, which bounds memory. Once `stop` is set (or the
/// watch installed on this thread is stopped) no new task starts. Returns the workers' final
/// states, or the lowest failing index and its error (a failing `fold` stops the run as a
/// failing task does).
pub fn ordered<S: Send, T: Send, E: Send>(
    total: usize,
    jobs: usize,
    stop: &AtomicBool,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
    mut fold: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<Vec<S>, (usize, E)> {
    let entered = Entered::new(total);
    let mut fold = |k: usize, value: T| {
        entered.tick();
        fold(k, value)
    };
    if jobs <= 1 || total <= 1 {
        let mut state = init();
        for k in 0..total {
            if stop.load(Ordering::SeqCst) || entered.stopped() {
                break;
            }
            let value = work(&mut state, k).map_err(|e| (k, e))?;
            fold(k, value).map_err(|e| (k, e))?;
        }
        return Ok(vec![state]);
    }
    let watch = entered.watch();
    let window = 4 * jobs;
    let queue = Mutex::new(Queue { next: 0, folded: 0, stop: false });
    let cv = Condvar::new();
    let (tx, rx) = channel::<(usize, Result<T, E>)>();
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for _ in 0..jobs.min(total) {
            let tx = tx.clone();
            let (queue, cv, work, init, watch) = (&queue, &cv, &work, &init, &watch);
            handles.push(scope.spawn(move || {
                let mut state = init();
                while let Some(k) = take(queue, cv, (stop, watch.as_ref()), total, window) {
                    if tx.send((k, work(&mut state, k))).is_err() {
                        break;
                    }
                }
                state
            }));
        }
        drop(tx);
        let result = fold_in_order(rx, &queue, &cv, &mut fold);
        queue.lock().expect("queue lock").stop = true;
        cv.notify_all();
        let states: Vec<S> =
            handles.into_iter().map(|h| h.join().expect("a worker panicked")).collect();
        result.map(|()| states)
    })
}

fn fold_in_order<T, E>(
    rx: Receiver<(usize, Result<T, E>)>,
    queue: &Mutex<Queue>,
    cv: &Condvar,
    fold: &mut impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), (usize, E)> {
    let mut pending = BTreeMap::new();
    let mut expect = 0;
    for (k, r) in rx {
        pending.insert(k, r);
        while let Some(r) = pending.remove(&expect) {
            let at = expect;
            r.and_then(|value| fold(at, value)).map_err(|e| (at, e))?;
            expect += 1;
            queue.lock().expect("queue lock").folded = expect;
            cv.notify_all();
        }
    }
    Ok(())
}

fn take(
    queue: &Mutex<Queue>,
    cv: &Condvar,
    (stop, watch): (&AtomicBool, Option<&Watch>),
    total: usize,
    window: usize,
) -> Option<usize> {
    let mut q = queue.lock().expect("queue lock");
    loop {
        let stopped = stop.load(Ordering::SeqCst) || watch.is_some_and(Watch::stopped);
        if q.stop || stopped || q.next >= total {
            return None;
        }
        if q.next < q.folded + window {
            q.next += 1;
            return Some(q.next - 1);
        }
        // Timed, so that a `stop` set from outside (a signal) is seen by a waiting worker.
        q = cv.wait_timeout(q, std::time::Duration::from_millis(50)).expect("queue lock").0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_in_index_order_whatever_the_threads() {
        for jobs in [1, 2, 5] {
            let never = AtomicBool::new(false);
            let mut seen = Vec::new();
            let states = ordered(
                100,
                jobs,
                &never,
                || 0u32,
                |n: &mut u32, k| {
                    *n += 1;
                    Ok::<_, ()>(k * k)
                },
                |k, v| {
                    assert_eq!(v, k * k);
                    seen.push(k);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..100).collect::<Vec<_>>());
            assert_eq!(states.iter().sum::<u32>(), 100, "every task ran once");
        }
    }

    #[test]
    fn the_lowest_failing_index_is_the_error_and_earlier_ones_are_folded() {
        for jobs in [1, 3] {
            let never = AtomicBool::new(false);
            let mut folded = 0;
            let e = ordered(
                50,
                jobs,
                &never,
                || (),
                |_, k| if k >= 7 { Err(k) } else { Ok(k) },
                |_, _| {
                    folded += 1;
                    Ok(())
                },
            )
            .unwrap_err();
            assert_eq!((e, folded), ((7, 7), 7));
        }
    }

    #[test]
    fn a_stop_folds_a_prefix() {
        let stop = AtomicBool::new(false);
        let mut folded = Vec::new();
        ordered(
            1000,
            2,
            &stop,
            || (),
            |_, k| Ok::<_, ()>(k),
            |k, _| {
                folded.push(k);
                if k == 10 {
                    stop.store(true, Ordering::SeqCst);
                }
                Ok(())
            },
        )
        .unwrap();
        assert!(folded.len() < 1000 && folded.len() >= 11);
        assert_eq!(folded, (0..folded.len()).collect::<Vec<_>>());
    }
}
