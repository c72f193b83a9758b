//! The sweep pipeline on tokio: a dispatcher hands points out in order to at most `jobs`
//! blocking workers; each worker simulates one whole point and sends its record through a
//! channel to ONE writer task, which appends records to the journal strictly in point order
//! (arrivals out of order wait in a buffer of at most `jobs` records). Ctrl-C (or SIGTERM, or
//! SIGHUP) stops the dispatcher; running points finish and are written before the pipeline
//! returns.
//!
//! Reads no clock for results: timing only feeds the progress bar.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::{mpsc, Semaphore};

use super::journal::{JournalError, PointSeq, Writer};
use super::point::PointRecord;
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
    /// A point failed; `input`: the experiment's values stopped it (exit 2).
    #[error("point {point}: {msg}")]
    Point { point: u64, msg: String, input: bool },
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("the sweep pipeline failed: {0}")]
    Runtime(String),
}

/// Options of one pipeline run.
#[derive(Debug, Clone, Copy)]
pub struct ExecOptions {
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
    work: Arc<W>,
    journal: Writer,
    opts: ExecOptions,
) -> Result<Outcome, ExecError>
where
    W: Fn(u64) -> Result<PointRecord, RunError> + Send + Sync + 'static,
{
    let jobs = opts.jobs.max(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(jobs + 1)
        .enable_all()
        .build()
        .map_err(|e| ExecError::Runtime(e.to_string()))?;
    let bar = progress_bar(seq.len(), first, opts.progress);
    let throttle = std::time::Duration::from_millis(opts.throttle_ms);
    let work = Arc::new(move |point: u64| {
        if !throttle.is_zero() {
            std::thread::sleep(throttle);
        }
        work(point)
    });
    let result = rt.block_on(pipeline(seq, first, work, journal, jobs, bar.clone(), opts.ctrl_c));
    bar.finish_and_clear();
    result
}

fn progress_bar(total: u64, done: u64, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template("{bar:40} {pos}/{len} points  {per_sec}  ETA {eta}  {msg}")
            .expect("static progress template");
    bar.set_style(style);
    bar.set_position(done);
    bar.reset_eta();
    bar
}

async fn pipeline<W>(
    seq: PointSeq,
    first: u64,
    work: Arc<W>,
    journal: Writer,
    jobs: usize,
    bar: ProgressBar,
    ctrl_c: bool,
) -> Result<Outcome, ExecError>
where
    W: Fn(u64) -> Result<PointRecord, RunError> + Send + Sync + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<(u64, Result<PointRecord, RunError>)>(jobs * 2);
    let writer = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || write_in_order(rx, journal, seq, first, stop, bar)
    });
    let sem = Arc::new(Semaphore::new(jobs));
    let signal = async {
        if ctrl_c {
            stop_signal().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::pin!(signal);
    let mut interrupted = false;
    for i in first..seq.len() {
        let permit = tokio::select! {
            biased;
            _ = &mut signal => { interrupted = true; break }
            p = sem.clone().acquire_owned() => p.expect("the semaphore is never closed"),
        };
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let (tx, work) = (tx.clone(), work.clone());
        tokio::task::spawn_blocking(move || {
            let point = seq.nth(i);
            // A panicking point becomes that point's error, not a lost record.
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(point)))
                .unwrap_or_else(|p| Err(RunError::Internal(panic_text(p.as_ref()))));
            let _ = tx.blocking_send((i, res));
            drop(permit);
        });
    }
    drop(tx);
    if interrupted {
        eprintln!("interrupted: finishing the points in progress (signal again to stop now)");
        // A second signal exits at once: the journal is valid at every byte, so --resume works.
        tokio::spawn(async {
            stop_signal().await;
            std::process::exit(130);
        });
    }
    let (written, err) = writer.await.map_err(|e| ExecError::Runtime(e.to_string()))?;
    if let Some(e) = err {
        return Err(e);
    }
    if written < seq.len() {
        if !interrupted {
            return Err(ExecError::Runtime(format!("{written} of {} points written", seq.len())));
        }
        return Ok(Outcome::Interrupted { done: written });
    }
    Ok(Outcome::Complete)
}

/// The first of Ctrl-C (SIGINT), SIGTERM and SIGHUP: all three ask the sweep to stop cleanly.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (term, hup) = (signal(SignalKind::terminate()), signal(SignalKind::hangup()));
        if let (Ok(mut term), Ok(mut hup)) = (term, hup) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("the simulation panicked: {msg}")
}

/// The writer task: append records in sequence order; returns how many the journal now holds.
fn write_in_order(
    mut rx: mpsc::Receiver<(u64, Result<PointRecord, RunError>)>,
    mut journal: Writer,
    seq: PointSeq,
    first: u64,
    stop: Arc<AtomicBool>,
    bar: ProgressBar,
) -> (u64, Option<ExecError>) {
    let mut next = first;
    let mut waiting: BTreeMap<u64, PointRecord> = BTreeMap::new();
    let mut error: Option<ExecError> = None;
    while let Some((i, res)) = rx.blocking_recv() {
        match res {
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                // Keep the error of the earliest point, whatever the arrival order.
                let point = seq.nth(i);
                let input = e.is_input();
                let msg = e.to_string();
                match &error {
                    Some(ExecError::Point { point: p, .. }) if *p < point => {}
                    _ => error = Some(ExecError::Point { point, msg, input }),
                }
            }
            Ok(rec) => {
                waiting.insert(i, rec);
            }
        }
        // Records before a failed point are still good: write them; stop at the failure.
        let failed_at = match &error {
            Some(ExecError::Point { point, .. }) => Some(*point),
            Some(_) => Some(0),
            None => None,
        };
        while failed_at.is_none_or(|f| seq.nth(next) < f) {
            let Some(rec) = waiting.remove(&next) else { break };
            if let Err(e) = journal.append(&rec) {
                stop.store(true, Ordering::SeqCst);
                error = Some(e.into());
                break;
            }
            next += 1;
            bar.inc(1);
        }
    }
    if let Err(e) = journal.sync() {
        error.get_or_insert(e.into());
    }
    (next, error)
}
