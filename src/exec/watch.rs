//! Watching work from another thread: a `Watch` installed on the thread that calls into the
//! executor (`Watch::scope`) stops, and counts the tasks of, the outermost `ordered` call on
//! that thread (a run's replications, a sweep's points, a tune round's candidates); calls
//! inside a task (a sweep point's run) finish what they started. The Python package's Ctrl-C
//! and progress bar; the command line installs none.
//!
//! A stop is seen where the executor looks for its own: no new task starts, the tasks in
//! flight finish, and the caller returns `RunError::Interrupted` (or a sweep its journal of
//! the points done). It changes no result: it only ends the work sooner.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A handle on the work of one calling thread: clone it, install it with `scope`, and stop or
/// read it from any thread. A stop ends the work with `Error::Run` ("interrupted"), or a
/// sweep with `SweepSummary::complete` false; it changes no number.
#[derive(Debug, Clone, Default)]
pub struct Watch(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    stop: AtomicBool,
    done: AtomicU64,
    total: AtomicU64,
}

thread_local! {
    static CURRENT: RefCell<Option<Watch>> = const { RefCell::new(None) };
    /// How many `ordered` calls are running on this thread (only the outermost counts).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

impl Watch {
    /// A watch of nothing yet: not stopped, no tasks.
    pub fn new() -> Watch {
        Watch::default()
    }

    /// Ask the work to stop: no task starts after this.
    pub fn stop(&self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }

    /// Whether `stop` was called.
    pub fn stopped(&self) -> bool {
        self.0.stop.load(Ordering::SeqCst)
    }

    /// (tasks done, tasks) of the outermost `ordered` call running or last run under it.
    pub fn progress(&self) -> (u64, u64) {
        (self.0.done.load(Ordering::Relaxed), self.0.total.load(Ordering::Relaxed))
    }

    /// Run `f` with this watch installed on the current thread (the previous one restored
    /// after).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|c| c.replace(Some(self.clone())));
        let _restore = Restore(previous);
        f()
    }
}

struct Restore(Option<Watch>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Whether the watch installed on this thread, if any, was asked to stop (its outermost
/// `ordered` call then stopped early).
#[cfg_attr(not(feature = "sweep"), allow(dead_code))]
pub fn stop_requested() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(Watch::stopped))
}

/// An `ordered` call's view of the installed watch: the watch when the call is the outermost
/// on the thread, none inside a task. Dropped when the call returns.
pub(super) struct Entered {
    watch: Option<Watch>,
}

impl Entered {
    /// Entering an `ordered` call of `total` tasks on this thread.
    pub fn new(total: usize) -> Entered {
        let depth = DEPTH.with(|d| d.replace(d.get() + 1));
        let watch = CURRENT.with(|c| c.borrow().clone()).filter(|_| depth == 0);
        if let Some(w) = &watch {
            w.0.done.store(0, Ordering::Relaxed);
            w.0.total.store(total as u64, Ordering::Relaxed);
        }
        Entered { watch }
    }

    /// The watch to hand to the workers (for its stop).
    pub fn watch(&self) -> Option<Watch> {
        self.watch.clone()
    }

    /// Whether `stop` was called.
    pub fn stopped(&self) -> bool {
        self.watch.as_ref().is_some_and(Watch::stopped)
    }

    /// One more task folded.
    pub fn tick(&self) {
        if let Some(w) = &self.watch {
            w.0.done.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_installing_thread_and_its_outermost_call_see_it() {
        let w = Watch::new();
        assert!(!stop_requested());
        w.scope(|| {
            let outer = Entered::new(3);
            let inner = Entered::new(100);
            inner.tick();
            outer.tick();
            assert_eq!(w.progress(), (1, 3), "the inner call counts nothing");
            w.stop();
            assert!(outer.stopped() && stop_requested());
            assert!(!inner.stopped(), "a task's own calls finish");
            std::thread::spawn(|| assert!(!stop_requested())).join().unwrap();
        });
        assert!(!stop_requested(), "uninstalled when the scope ends");
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
