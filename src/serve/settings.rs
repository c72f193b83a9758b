//! The page's settings: a query string (the page's shareable URL and every API call carry the
//! same one), checked against the keys the page may change and applied to the experiment the
//! server started from, with the work budget checked before anything runs.

use std::path::PathBuf;

use crate::api::{Error as ApiError, Experiment};

/// The experiment keys the page may set, in `--set` syntax. Nothing else is accepted: a key
/// such as `latency.from` or a values file would let a request read any file on the server.
pub const SET_KEYS: [&str; 11] = [
    "workload.parent_tokens",
    "workload.subagent_tokens",
    "workload.agents",
    "workload.concurrency",
    "model",
    "cache.policy",
    "cache.ttl",
    "latency.preset",
    "strategies",
    "replications",
    "seed",
];

/// Settings that are not experiment keys: a calibration file given to `serve --latency`
/// (by index), the strategy whose timeline is drawn, and a sweep's axis, values and metric.
pub const PAGE_KEYS: [&str; 5] =
    ["latency_file", "timeline", "sweep_key", "sweep_values", "sweep_metric"];

/// The longest query string accepted (bytes); a page's settings take a few hundred.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// Most settings in one query.
pub const MAX_PAIRS: usize = 64;
/// Most values in one sweep.
pub const MAX_SWEEP_POINTS: usize = 32;

/// Most strategies one request may compare: the answer (a table row and a series in each
/// figure per strategy) stays about a megabyte.
pub const MAX_STRATEGIES: usize = 32;

/// Why a request is refused, with the HTTP status that fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The settings are malformed or name something that does not exist: 400.
    BadInput(String),
    /// The query string is longer than `MAX_QUERY_BYTES`: 414.
    TooLong(String),
    /// The settings are well formed but the work is above the budget or the experiment's own
    /// `[limits]`, or the run stopped at its own limits: 422.
    TooMuchWork(String),
    /// A bug or an I/O failure on the server: 500.
    Internal(String),
    /// The budget is taken and the queue is full: 503, with `Retry-After`.
    Busy(String),
}

impl Refusal {
    /// The message the page shows.
    pub fn message(&self) -> &str {
        match self {
            Refusal::BadInput(m)
            | Refusal::TooLong(m)
            | Refusal::TooMuchWork(m)
            | Refusal::Internal(m)
            | Refusal::Busy(m) => m,
        }
    }

    /// A library error, by whose fault it is.
    pub fn from_api(e: ApiError) -> Refusal {
        let text = e.to_string();
        match &e {
            ApiError::Limits(_) => Refusal::TooMuchWork(text),
            ApiError::Run(r) if r.is_input() => Refusal::TooMuchWork(text),
            _ if e.is_input() => Refusal::BadInput(text),
            _ => Refusal::Internal(text),
        }
    }
}

/// One request's settings, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `key=value` assignments of `SET_KEYS`, in the order given.
    pub sets: Vec<String>,
    /// An index into the server's calibration files.
    pub latency_file: Option<usize>,
    /// The strategy label whose timeline is drawn (default: the first strategy).
    pub timeline: Option<String>,
    /// A sweep's key (one of `SET_KEYS`), its values (comma-separated, as `--set` values) and
    /// the metric drawn (`figures::SWEEP_METRICS`).
    pub sweep_key: Option<String>,
    pub sweep_values: Option<String>,
    pub sweep_metric: Option<String>,
}

impl Settings {
    /// Parse a raw query string (`workload.agents=16&cache.ttl=1h`).
    pub fn parse(query: Option<&str>) -> Result<Settings, Refusal> {
        let query = query.unwrap_or("");
        if query.len() > MAX_QUERY_BYTES {
            return Err(Refusal::TooLong(format!(
                "the settings are {} bytes; at most {MAX_QUERY_BYTES} are accepted",
                query.len()
            )));
        }
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if pairs.len() > MAX_PAIRS {
            return Err(Refusal::BadInput(format!(
                "{} settings; at most {MAX_PAIRS} are accepted",
                pairs.len()
            )));
        }
        let mut s = Settings::default();
        for (key, value) in pairs {
            s.add(&key, value.trim())?;
        }
        Ok(s)
    }

    fn add(&mut self, key: &str, value: &str) -> Result<(), Refusal> {
        if value.is_empty() {
            return Err(Refusal::BadInput(format!("setting `{key}`: the value is empty")));
        }
        let text = Some(value.to_string());
        match key {
            k if SET_KEYS.contains(&k) => self.sets.push(format!("{k}={value}")),
            "latency_file" => {
                let i = value.parse().map_err(|_| {
                    Refusal::BadInput(format!(
                        "latency_file = `{value}`: expected an index (0, 1, ...)"
                    ))
                })?;
                self.latency_file = Some(i);
            }
            "timeline" => self.timeline = text,
            "sweep_key" => self.sweep_key = text,
            "sweep_values" => self.sweep_values = text,
            "sweep_metric" => self.sweep_metric = text,
            other => {
                return Err(Refusal::BadInput(format!(
                    "unknown setting `{other}`; the page sets {} and {}",
                    SET_KEYS.join(", "),
                    PAGE_KEYS.join(", ")
                )))
            }
        }
        Ok(())
    }

    /// The experiment: `base` with the calibration file, then the assignments, applied.
    pub fn apply(&self, base: &Experiment, files: &[PathBuf]) -> Result<Experiment, Refusal> {
        let mut exp = base.clone();
        if let Some(i) = self.latency_file {
            let path = files.get(i).ok_or_else(|| {
                Refusal::BadInput(format!(
                    "latency_file = {i}: the server has {} calibration files (serve --latency FILE)",
                    files.len()
                ))
            })?;
            let value = toml::Value::String(path.display().to_string());
            exp = exp.set(&format!("latency.from={value}")).map_err(Refusal::from_api)?;
        }
        for a in &self.sets {
            exp = exp.set(a).map_err(Refusal::from_api)?;
        }
        let n = exp.config().strategies.len();
        if n > MAX_STRATEGIES {
            return Err(Refusal::BadInput(format!(
                "strategies: {n} are listed; the page compares at most {MAX_STRATEGIES}"
            )));
        }
        Ok(exp)
    }
}

/// The work of running `exp`: simulated requests, about agents x turns x replications x
/// strategies (`limits::run_size`, which adds the parent's turns).
pub fn work(exp: &Experiment) -> f64 {
    let c = exp.config();
    let runs = c.strategies.len() as f64 * f64::from(c.replications);
    crate::limits::run_size(c).requests * runs
}

/// `work` simulated requests, unless above `budget`: then `what` (its lead, saying how the
/// work was counted) refuses it.
pub fn within_budget(
    work: f64,
    budget: u64,
    what: impl FnOnce(String) -> String,
) -> Result<f64, Refusal> {
    if work <= budget as f64 {
        return Ok(work);
    }
    let lead = what(crate::limits::sci(work));
    Err(Refusal::TooMuchWork(format!(
        "{lead}; the server's budget is {budget} (prefixsim serve --budget N)"
    )))
}

/// Refuse `exp` when its work is above `budget` simulated requests.
pub fn check_budget(exp: &Experiment, budget: u64) -> Result<f64, Refusal> {
    let c = exp.config();
    within_budget(work(exp), budget, |w| {
        format!(
            "this run is about {w} simulated requests ({} agents x {:.1} turns x {} replications \
             x {} strategies)",
            c.workload.agents,
            c.workload.turns.mean(),
            c.replications,
            c.strategies.len()
        )
    })
}

/// Refuse the hold answer's search for `exp` when its work is above `budget` simulated
/// requests: the run's work for one strategy, times the search's runs (`sweep::hold`).
pub fn check_hold_budget(exp: &Experiment, budget: u64) -> Result<f64, Refusal> {
    let c = exp.config();
    let runs = f64::from(c.replications) * crate::limits::HOLD_SEARCH_RUNS;
    within_budget(crate::limits::run_size(c).requests * runs, budget, |w| {
        format!(
            "the hold cap's search is about {w} simulated requests (the grid {} and its \
             refinements at the point fit and at each refit of the latency calibration, {} \
             replications each)",
            crate::sweep::hold::HOLD_RANGE,
            c.replications
        )
    })
}

/// The settings as an experiment file that `prefixsim run` runs to the same numbers: the
/// resolved experiment rendered (every key written out, the latency parameters inline), under
/// a comment naming where it came from.
pub fn export_toml(exp: &Experiment, origin: &str, s: &Settings) -> String {
    let mut text = format!("# Exported by `prefixsim serve` from {origin}");
    if !s.sets.is_empty() {
        text.push_str(&format!(" with {}", s.sets.join(", ")));
    }
    text.push('\n');
    text.push_str(&crate::config::render(exp.config()));
    text
}
