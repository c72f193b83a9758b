//! Running a simulation from Python: on a thread of its own, with the GIL released, so other
//! Python threads run and Ctrl-C is seen. The calling thread wakes every 100 ms to look for a
//! signal (`Python::check_signals`) and to report progress. The first Ctrl-C stops the work
//! through its `exec::Watch` (no task starts after it, the tasks running finish: a sweep keeps
//! every finished point in its journal); a second one returns at once, leaving the thread to
//! finish those tasks alone.

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::exec::Watch;

/// What came back: the work's value, and the error that interrupted it (Ctrl-C's
/// `KeyboardInterrupt`, or the progress callback's), if any.
pub(crate) struct Waited<T> {
    pub value: T,
    pub interrupted: Option<PyErr>,
}

impl<T> Waited<T> {
    /// The value, or the interruption when there was one.
    pub fn or_interrupted(self) -> PyResult<T> {
        match self.interrupted {
            Some(e) => Err(e),
            None => Ok(self.value),
        }
    }
}

/// Run `work` on its own thread under a `Watch`, calling `progress(done, total)` on this thread
/// when the count of tasks of its outermost executor call changes.
pub(crate) fn blocking<T: Send + 'static>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<Waited<T>> {
    let watch = Watch::new();
    let (tx, rx) = channel();
    let inner = watch.clone();
    let thread = std::thread::Builder::new()
        .name("prefixsim".into())
        .spawn(move || {
            let _ = tx.send(inner.scope(work));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    // In a lock only to be shared with the closure that waits with the GIL released.
    let rx = Mutex::new(rx);
    let mut interrupted: Option<PyErr> = None;
    let mut shown = (u64::MAX, u64::MAX);
    loop {
        let got = py.detach(|| {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv_timeout(Duration::from_millis(100))
        });
        match got {
            Ok(value) => {
                let _ = thread.join();
                if interrupted.is_none() {
                    report(progress, &watch, &mut shown)?;
                }
                return Ok(Waited { value, interrupted });
            }
            Err(RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
                return Err(PyRuntimeError::new_err("the simulation thread panicked: a bug"));
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let step = py.check_signals().and_then(|()| match interrupted {
            None => report(progress, &watch, &mut shown),
            Some(_) => Ok(()),
        });
        if let Err(e) = step {
            if interrupted.is_some() {
                // A second Ctrl-C: return now; the thread ends after its running tasks.
                return Err(e);
            }
            watch.stop();
            interrupted = Some(e);
        }
    }
}

/// Call `progress(done, total)` when the count moved since it was last `shown`.
fn report(
    progress: Option<&Bound<'_, PyAny>>,
    watch: &Watch,
    shown: &mut (u64, u64),
) -> PyResult<()> {
    let Some(callback) = progress else { return Ok(()) };
    let now = watch.progress();
    if now != *shown && now.1 > 0 {
        *shown = now;
        callback.call1(now)?;
    }
    Ok(())
}
