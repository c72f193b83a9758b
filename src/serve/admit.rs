//! Admission: the server's budget is shared, so the simulations running at once add up to at
//! most one budget's worth of simulated requests (a run of the whole budget runs alone; small
//! runs run side by side), on at most one core each. A request that must wait joins a queue
//! of at most `queue` requests, served in order of arrival; beyond it the request is refused
//! at once (503, `Refusal::Busy`). Memory is thus bounded by one budget's simulation, however
//! many users ask at once.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Semaphore, SemaphorePermit};

use super::settings::Refusal;

/// The budget in permits: a run holds its share of them while it runs.
const UNITS: u32 = 1 << 20;

/// Seconds a refused request is told to wait (`Retry-After`).
pub const RETRY_AFTER_S: u32 = 5;

/// The shared budget, the cores and the wait queue.
#[derive(Debug)]
pub struct Admission {
    budget: Semaphore,
    cores: Semaphore,
    queue: u64,
    /// Requests waiting for their share (`/api/stats`).
    pub waiting: AtomicU64,
    /// Simulations running (`/api/stats`).
    pub running: AtomicU64,
    budget_requests: u64,
}

/// A running simulation's share of the budget and its core, given back when dropped.
pub struct Ticket<'a> {
    _budget: SemaphorePermit<'a>,
    _core: SemaphorePermit<'a>,
    running: &'a AtomicU64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts a waiting request for as long as it waits (its future may be dropped: the client
/// went away).
struct Waiting<'a>(&'a AtomicU64);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Admission {
    /// A budget of `budget_requests` simulated requests, `cores` simulations at most, and at
    /// most `queue` requests waiting.
    pub fn new(budget_requests: u64, cores: usize, queue: usize) -> Admission {
        Admission {
            budget: Semaphore::new(UNITS as usize),
            cores: Semaphore::new(cores.max(1)),
            queue: queue as u64,
            waiting: AtomicU64::new(0),
            running: AtomicU64::new(0),
            budget_requests,
        }
    }

    /// The permits of `work` simulated requests: its share of the budget, at least one.
    fn units(&self, work: f64) -> u32 {
        let share = work / self.budget_requests.max(1) as f64;
        ((share * f64::from(UNITS)).ceil() as u32).clamp(1, UNITS)
    }

    /// Wait for `work` simulated requests' share of the budget and a core, or refuse at once
    /// when `queue` requests are waiting already.
    pub async fn admit(&self, work: f64) -> Result<Ticket<'_>, Refusal> {
        let units = self.units(work);
        let now = (self.budget.try_acquire_many(units), self.cores.try_acquire());
        let (budget, core) = match now {
            (Ok(budget), Ok(core)) => (budget, core),
            _ => {
                drop(now); // what was taken goes back: the budget is taken first, in turn
                let _waiting = self.join_queue()?;
                let budget = self.budget.acquire_many(units).await.map_err(closed)?;
                (budget, self.cores.acquire().await.map_err(closed)?)
            }
        };
        self.running.fetch_add(1, Ordering::Relaxed);
        Ok(Ticket { _budget: budget, _core: core, running: &self.running })
    }

    /// A place in the queue, or the refusal when it is full.
    fn join_queue(&self) -> Result<Waiting<'_>, Refusal> {
        let ahead = self.waiting.fetch_add(1, Ordering::Relaxed);
        let place = Waiting(&self.waiting);
        if ahead >= self.queue {
            return Err(Refusal::Busy(format!(
                "the server is busy: simulations are running and {ahead} requests are waiting \
                 (the queue holds {}, prefixsim serve --queue N); try again in {RETRY_AFTER_S} s",
                self.queue
            )));
        }
        Ok(place)
    }
}

fn closed(e: tokio::sync::AcquireError) -> Refusal {
    Refusal::Internal(e.to_string())
}
