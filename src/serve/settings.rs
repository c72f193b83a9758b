//! The page's settings: a query string (the page's shareable URL and every API call carry the
//! same one), checked against the keys the page may change and applied to the experiment the
//! server started from, with the work budget checked before anything runs.

use std::path::PathBuf;

use super::{question, schema};
use crate::api::{Error as ApiError, Experiment};

/// Settings that are not experiment keys: the shared prefix's size in tokens (its line and the
/// brief together, as the question names it; `question::shared_prefix_tokens`), a calibration
/// file given to `serve --latency` (by index), the strategy whose timeline is drawn, and a
/// sweep's axis, values and metric. Every other setting is an experiment key
/// (`schema::keys`), set as `--set` sets it.
pub const PAGE_KEYS: [&str; 6] =
    ["prefix_tokens", "latency_file", "timeline", "sweep_key", "sweep_values", "sweep_metric"];

/// The longest query string accepted (bytes); a page's settings take a few hundred.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// Most settings in one query: every key of the experiment at once fits.
pub const MAX_PAIRS: usize = 256;
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
    /// `key=value` assignments of experiment keys, in the order given.
    pub sets: Vec<String>,
    /// The shared prefix's size in tokens (`prefix_tokens`).
    pub prefix_tokens: Option<u64>,
    /// An index into the server's calibration files.
    pub latency_file: Option<usize>,
    /// The strategy label whose timeline is drawn (default: the first strategy).
    pub timeline: Option<String>,
    /// A sweep's key (an experiment key), its values (comma-separated, as `--set` values) and
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
            "prefix_tokens" => self.prefix_tokens = Some(parse_index(key, value)?),
            "latency_file" => self.latency_file = Some(parse_index(key, value)? as usize),
            "timeline" => self.timeline = text,
            "sweep_key" => self.sweep_key = text,
            "sweep_values" => self.sweep_values = text,
            "sweep_metric" => self.sweep_metric = text,
            key => {
                check_assignment(key, value)?;
                self.sets.push(format!("{key}={value}"));
            }
        }
        Ok(())
    }

    /// The experiment: `base` with the calibration file, the assignments, the shared
    /// prefix's size and the question that follows them (`question::follow`), all applied at
    /// once as `--set` applies them. With it, the assignments applied.
    pub fn apply(
        &self,
        base: &Experiment,
        files: &[PathBuf],
    ) -> Result<(Experiment, Vec<String>), Refusal> {
        let mut sets = Vec::with_capacity(self.sets.len() + 3);
        if let Some(i) = self.latency_file {
            let path = files.get(i).ok_or_else(|| {
                Refusal::BadInput(format!(
                    "latency_file = {i}: the server has {} calibration files (serve --latency FILE)",
                    files.len()
                ))
            })?;
            sets.push(format!("latency.from={}", toml::Value::String(path.display().to_string())));
        }
        sets.extend(self.sets.iter().cloned());
        let resolve = |sets: &[String]| base.clone().set_all(sets).map_err(Refusal::from_api);
        let mut exp = resolve(&sets)?;
        if let Some(total) = self.prefix_tokens {
            sets.push(line_assignment(exp.config(), total)?);
            exp = resolve(&sets)?;
        }
        let asked =
            self.sets.iter().any(|a| a.split('=').next().map(str::trim) == Some("question"));
        let follows = question::follow(&base.config().question, base.config(), exp.config());
        if !asked && follows != exp.config().question {
            sets.push(format!("question={}", toml::Value::String(follows)));
            exp = resolve(&sets)?;
        }
        let n = exp.config().strategies.len();
        if n > MAX_STRATEGIES {
            return Err(Refusal::BadInput(format!(
                "strategies: {n} are listed; the page compares at most {MAX_STRATEGIES}"
            )));
        }
        Ok((exp, sets))
    }
}

/// A whole number >= 0 of a page setting.
fn parse_index(key: &str, value: &str) -> Result<u64, Refusal> {
    value.parse().map_err(|_| {
        Refusal::BadInput(format!("{key} = `{}`: expected a whole number >= 0", capped(value)))
    })
}

/// `value` capped for a message.
fn capped(value: &str) -> String {
    crate::config::capped(value).into_owned()
}

/// Refuse an assignment the page may not make: a key the experiment does not have, one that
/// names a file (`schema::NOT_SETTABLE`), or a distribution that reads its values from a
/// file (`empirical(file=...)`): a request never reads a file on the server.
pub fn check_assignment(key: &str, value: &str) -> Result<(), Refusal> {
    check_key(key)?;
    if reads_a_file(value) {
        return Err(Refusal::BadInput(format!(
            "`{}` = `{}`: the page reads no file; give empirical its values as a list, \
             empirical([1, 2, 3])",
            capped(key),
            capped(value)
        )));
    }
    Ok(())
}

/// Refuse a key the experiment does not have or the page may not set.
pub fn check_key(key: &str) -> Result<(), Refusal> {
    let Some(leaf) = schema::leaf_of(key) else {
        return Err(Refusal::BadInput(format!(
            "unknown setting `{}`; the page sets the experiment's keys (GET /api/controls lists \
             them) and {}",
            capped(key),
            PAGE_KEYS.join(", ")
        )));
    };
    if let Some(why) = schema::refusal(leaf) {
        return Err(Refusal::BadInput(format!("`{leaf}` cannot be set from the page: {why}")));
    }
    Ok(())
}

/// Whether a value holds an `empirical` distribution that is not given its values as a list
/// (`empirical([...])`, `empirical(values=[...])`): any other form names a file. The value is
/// read as `--set` reads it (TOML, else a bare string), so an escape cannot hide the name.
fn reads_a_file(value: &str) -> bool {
    let mut texts = Vec::new();
    match format!("v = {value}").parse::<toml::Table>() {
        Ok(t) => t.values().for_each(|v| strings(v, &mut texts)),
        Err(_) => texts.push(value.to_string()),
    }
    texts.iter().any(|text| {
        let flat: String =
            text.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        flat.match_indices("empirical").any(|(i, w)| {
            let rest = &flat[i + w.len()..];
            !(rest.starts_with("([") || rest.starts_with("(values=["))
        })
    })
}

/// Every string in `v` (a table's keys too), into `out`.
fn strings(v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::String(s) => out.push(s.clone()),
        toml::Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        toml::Value::Table(t) => t.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings(v, out)
        }),
        _ => {}
    }
}

/// The assignment of the agents' line that makes the shared prefix `total` tokens: the
/// brief keeps its size, the line takes the rest.
fn line_assignment(exp: &crate::config::ExperimentSpec, total: u64) -> Result<String, Refusal> {
    let (key, brief) = (question::line_key(exp), question::brief_tokens(exp));
    let line = total.checked_sub(brief).ok_or_else(|| {
        Refusal::BadInput(format!(
            "prefix_tokens = {total}: the shared prefix is {key} and the brief \
             (workload.brief_tokens = {brief}); it cannot be smaller than the brief"
        ))
    })?;
    Ok(format!("{key}={line}"))
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
/// resolved experiment rendered (every key written out, the latency parameters inline, the
/// question as the settings make it), under a comment naming where it came from and the
/// assignments (`sets`, as `Settings::apply` made them; a calibration file's path left out).
pub fn export_toml(exp: &Experiment, origin: &str, sets: &[String]) -> String {
    let mut text = format!("# Exported by `prefixsim serve` from {origin}");
    let shown: Vec<&str> = sets
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("latency.from=") && !a.starts_with("question="))
        .collect();
    // A value's line breaks would end the comment: shown as spaces.
    let shown = shown.join(", ").replace(|c: char| c.is_control(), " ");
    if !shown.is_empty() {
        text.push_str(&format!(" with {shown}"));
    }
    text.push('\n');
    text.push_str(&crate::config::render(exp.config()));
    text
}
