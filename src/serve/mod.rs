//! `prefixsim serve`: a local web server with one page for design reviews. The page's controls
//! are the experiment's parameters; each change runs the experiment again (`/api/run`), a sweep
//! over one control streams its points as server-sent events (`/api/sweep`), and the settings
//! export as an experiment file (`/api/export`), and an experiment that asks for the hold
//! cap gets the cap to use with its interval (`/api/hold`, `sweep::hold`: what `run`, `tune`
//! and `report` print). docs/serve.md is the user's page.
//!
//! Every request gets its own simulation: nothing is shared between requests but the
//! read-only starting experiment, the budget (`admit`: the simulations running at once add up
//! to one budget's worth at most, one core each, with a bounded queue), and counters. Work
//! above the budget is refused before it starts. Requests must name the server's address and
//! come from its own page or from outside a browser (`guard`); connections are capped and
//! timed out (`listen`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::routing::get;
use axum::Router;

use crate::api::Experiment;

pub mod admit;
pub mod figures;
pub mod guard;
mod handlers;
pub mod listen;
pub mod question;
pub mod schema;
pub mod settings;
mod sweep;

/// The page, its script and its style sheet: plain HTML, JS and CSS, no library, nothing
/// fetched from elsewhere (the page works offline).
pub const PAGE_HTML: &str = include_str!("page.html");
pub const PAGE_JS: &str = include_str!("page.js");
pub const PAGE_CSS: &str = include_str!("page.css");

/// The default work budget: simulated requests per request to the server (about a
/// microsecond of one core each), shared by the requests running at once.
pub const DEFAULT_BUDGET: u64 = 5_000_000;

/// The default number of requests that may wait for the budget (`serve --queue`).
pub const DEFAULT_QUEUE: usize = 16;

/// What the server was started with; read-only while it runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The starting experiment (the file given, or the embedded default): its origin names
    /// it on the page and in exported files, its raw table holds the controls' starting
    /// values that the resolved experiment no longer holds (the latency preset's name, the
    /// `[sweep]` axis).
    pub base: Experiment,
    /// Calibration files (`serve --latency FILE`), absolute; the page picks one by index.
    pub calibrations: Vec<PathBuf>,
    /// Most simulated requests one request may ask for (a sweep: all its points together),
    /// and most that run at once, all requests together.
    pub budget: u64,
    /// Simulations allowed at once within the budget (default: one per core).
    pub workers: usize,
    /// Most requests waiting for the budget; beyond them a request is refused (503).
    pub queue: usize,
}

/// Counters of what the server did (`/api/stats`; the tests read them).
#[derive(Debug, Default)]
pub struct Stats {
    pub runs: AtomicU64,
    pub sweep_points: AtomicU64,
    pub sweeps_done: AtomicU64,
    pub sweeps_cancelled: AtomicU64,
    pub refused: AtomicU64,
}

impl Stats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn to_json(&self) -> serde_json::Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "runs": get(&self.runs),
            "sweep_points": get(&self.sweep_points),
            "sweeps_done": get(&self.sweeps_done),
            "sweeps_cancelled": get(&self.sweeps_cancelled),
            "refused": get(&self.refused),
        })
    }
}

/// The server's shared state.
#[derive(Debug)]
pub struct App {
    pub config: Config,
    admission: admit::Admission,
    pub stats: Stats,
}

impl App {
    pub fn new(config: Config) -> Arc<App> {
        let admission = admit::Admission::new(config.budget, config.workers, config.queue);
        Arc::new(App { config, admission, stats: Stats::default() })
    }

    /// The counters, and the simulations running and waiting now.
    fn stats_json(&self) -> serde_json::Value {
        let mut v = self.stats.to_json();
        let now = |c: &AtomicU64| serde_json::Value::from(c.load(Ordering::Relaxed));
        v["running"] = now(&self.admission.running);
        v["waiting"] = now(&self.admission.waiting);
        v
    }
}

/// Every route of the server listening on `bound`, behind the `Host` and origin checks.
pub fn router(app: Arc<App>, bound: guard::Bound) -> Router {
    Router::new()
        .route("/", get(|| handlers::asset("text/html; charset=utf-8", PAGE_HTML)))
        .route("/page.js", get(|| handlers::asset("text/javascript; charset=utf-8", PAGE_JS)))
        .route("/page.css", get(|| handlers::asset("text/css; charset=utf-8", PAGE_CSS)))
        .route("/api/controls", get(handlers::controls))
        .route("/api/run", get(handlers::run))
        .route("/api/export", get(handlers::export))
        .route("/api/hold", get(handlers::hold))
        .route("/api/sweep", get(sweep::stream))
        .route("/api/metrics", get(handlers::metrics))
        .route("/api/stats", get(handlers::stats))
        .fallback(handlers::not_found)
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(bound, guard::check))
}

/// Serve on `listener` until Ctrl-C.
pub async fn serve(listener: tokio::net::TcpListener, app: Arc<App>) -> std::io::Result<()> {
    let bound = guard::Bound(listener.local_addr()?);
    let server = listen::accept(listener, router(app, bound));
    tokio::select! {
        r = server => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
