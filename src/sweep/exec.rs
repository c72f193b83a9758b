//! The sweep pipeline on the one executor (`crate::exec::ordered`): at most `jobs` workers
//! each simulate one whole point at a time, and this thread appends their records to the
//! journal strictly in point order. Ctrl-C (or SIGTERM, or SIGHUP) stops handing out points;
//! running points finish and are written before the pipeline returns.
//!
//! Reads no clock for results: timing only feeds the progress bar.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::journal::{JournalError, PointSeq, Writer};
use super::point::PointRecord;
use crate::exec::ordered;
use crate::limits::RunError;

/// How a pipeline run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every point of the sequence is in the journal.
    Complete,
    /// Stopped by Ctrl-C, SIGTERM or SIGHUP: the first `done` points of the sequence are in the
    /// journal.
    Interrupted { done: u64 },
}

/// Why a pipeline run failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// A point failed: its values stopped it, or a bug (`RunError` says which).
    #[error("point {point}: {source}")]
    Point { point: u64, source: RunError },
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("the sweep pipeline failed: {0}")]
    Runtime(String),
}

/// Options of one pipeline run.
#[derive(Debug, Clone, Copy)]
pub struct ExecOptions {
    /// Points simulated at once (at least 1); never changes a result.
    pub jobs: usize,
    /// Draw a progress bar on stderr (the caller checks that stderr is a terminal).
    pub progress: bool,
    /// Listen for Ctrl-C, SIGTERM and SIGHUP.
    pub ctrl_c: bool,
    /// Test seam: wall-clock milliseconds each worker sleeps before a point (0 in normal use),
    /// so tests can interrupt a sweep part-way however fast the machine. Results unchanged.
    pub throttle_ms: u64,
}

/// Run points `seq.nth(first..)` through `work`, appending records to `journal` in order.
pub fn execute<W>(
    seq: PointSeq,
    first: u64,
    work: &W,
    mut journal: Writer,
    opts: ExecOptions,
) -> Result<Outcome, ExecError>
where
    W: Fn(u64) -> Result<PointRecord, RunError> + Sync,
{
    let jobs = opts.jobs.max(1);
    let bar = progress_bar(seq.len(), first, opts.progress);
    let throttle = std::time::Duration::from_millis(opts.throttle_ms);
    let stop = Arc::new(AtomicBool::new(false));
    let listener = match opts.ctrl_c {
        true => Some(Listener::start(stop.clone())?),
        false => None,
    };
    let total =
        usize::try_from(seq.len() - first).map_err(|e| ExecError::Runtime(e.to_string()))?;
    let mut written = first;
    let run_point = |_: &mut (), k: usize| {
        let point = seq.nth(first + k as u64);
        if !throttle.is_zero() {
            std::thread::sleep(throttle);
        }
        // A panicking point becomes that point's error, not a lost record.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(point)))
            .unwrap_or_else(|p| Err(RunError::Internal(panic_text(p.as_ref()))))
            .map_err(|source| ExecError::Point { point, source })
    };
    let append = |_: usize, rec: PointRecord| {
        journal.append(&rec)?;
        written += 1;
        bar.inc(1);
        Ok(())
    };
    let result = ordered(total, jobs, &stop, || (), run_point, append);
    let interrupted = stop.load(Ordering::SeqCst) || crate::exec::watch::stop_requested();
    drop(listener);
    bar.finish_and_clear();
    let synced = journal.sync();
    result.map_err(|(_, e)| e)?;
    synced?;
    if written < seq.len() {
        if !interrupted {
            return Err(ExecError::Runtime(format!("{written} of {} points written", seq.len())));
        }
        return Ok(Outcome::Interrupted { done: written });
    }
    Ok(Outcome::Complete)
}

fn progress_bar(total: u64, done: u64, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template("{bar:40} {pos}/{len} points  {rate}  ETA {eta}  {msg}")
            .expect("static progress template")
            .with_key("rate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&crate::numfmt::per_sec(state.per_sec()));
            });
    bar.set_style(style);
    bar.set_position(done);
    bar.reset_eta();
    bar
}

/// A thread that sets `stop` on the first Ctrl-C, SIGTERM or SIGHUP, and exits the process
/// on the second (the journal is valid at every byte, so --resume works). Dropping it ends
/// the thread.
struct Listener {
    done: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// Returns once the signal handlers are installed, so no signal is missed.
    fn start(stop: Arc<AtomicBool>) -> Result<Listener, ExecError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ExecError::Runtime(e.to_string()))?;
        let (done, mut done_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready, ready_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                let mut signals = Signals::install();
                let _ = ready.send(());
                tokio::select! {
                    _ = &mut done_rx => return,
                    _ = signals.next() => {}
                }
                stop.store(true, Ordering::SeqCst);
                eprintln!(
                    "interrupted: finishing the points in progress (signal again to stop now)"
                );
                tokio::select! {
                    _ = &mut done_rx => {}
                    _ = signals.next() => std::process::exit(130),
                }
            })
        });
        let _ = ready_rx.recv();
        Ok(Listener { done: Some(done), thread: Some(thread) })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP: all three ask the sweep to stop cleanly.
struct Signals {
    #[cfg(unix)]
    unix: Option<[tokio::signal::unix::Signal; 3]>,
}

impl Signals {
    fn install() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let all = [SignalKind::interrupt(), SignalKind::terminate(), SignalKind::hangup()]
                .map(signal);
            let unix = match all {
                [Ok(i), Ok(t), Ok(h)] => Some([i, t, h]),
                _ => None,
            };
            Signals { unix }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some([i, t, h]) = &mut self.unix {
            tokio::select! {
                _ = i.recv() => {}
                _ = t.recv() => {}
                _ = h.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("the simulation panicked: {msg}")
}
