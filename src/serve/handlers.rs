//! The page's routes: the page itself, the controls' starting values, a run with its figures,
//! the export, and the counters. Refusals are plain-text messages with the status that fits.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::figures::{self, SWEEP_METRICS};
use super::settings::{self, Refusal, Settings};
use super::{question, schema, App, Stats};
use crate::config;

/// The page, its script or its style sheet.
pub async fn asset(content_type: &'static str, body: &'static str) -> Response {
    text(content_type, body.to_string())
}

pub async fn not_found() -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        "no such page; the server has /, /api/controls, /api/run, /api/sweep, /api/export, \
         /api/hold, /api/metrics, /api/stats",
    )
}

pub async fn stats(State(app): State<Arc<App>>) -> Response {
    json(app.stats_json())
}

fn text(content_type: &'static str, body: String) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-store")], body)
        .into_response()
}

fn json(mut v: serde_json::Value) -> Response {
    v.sort_all_objects(); // keys sorted, as ever
    text("application/json", v.to_string())
}

fn refusal(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{message}\n"))
        .into_response()
}

/// A refusal as a response, counted.
pub fn refused(app: &App, r: &Refusal) -> Response {
    Stats::bump(&app.stats.refused);
    let status = match r {
        Refusal::BadInput(_) => StatusCode::BAD_REQUEST,
        Refusal::TooLong(_) => StatusCode::URI_TOO_LONG,
        Refusal::TooMuchWork(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Refusal::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        Refusal::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut response = refusal(status, r.message());
    if let Refusal::Busy(_) = r {
        response.headers_mut().insert(header::RETRY_AFTER, super::admit::RETRY_AFTER_S.into());
    }
    response
}

/// `/api/metrics`: the metrics a sweep draws (`sweep_metric`), each with its title: the one
/// list the API accepts and docs/serve.md names.
pub async fn metrics() -> Response {
    json(serde_json::json!({ "metrics": metrics_json() }))
}

fn metrics_json() -> Vec<serde_json::Value> {
    SWEEP_METRICS.iter().map(|m| serde_json::json!({"name": m.0, "title": m.1})).collect()
}

/// The starting experiment's controls: every settable key with its section and starting
/// value (`schema`), the common controls' values and choices, the shared prefix, the
/// calibration files, the budget, and the `[sweep]` axis of the file when the page can sweep it.
pub async fn controls(State(app): State<Arc<App>>) -> Response {
    let c = &app.config;
    let e = c.base.config();
    let raw_latency = c.base.table().get("latency").and_then(toml::Value::as_table);
    let preset = raw_latency.and_then(|t| t.get("preset")).and_then(toml::Value::as_str);
    let from = raw_latency.and_then(|t| t.get("from")).and_then(toml::Value::as_str);
    let rendered: toml::Table = config::render(e).parse().unwrap_or_default();
    let strategies: Vec<String> = e.strategies.iter().map(config::strategy_label).collect();
    json(serde_json::json!({
        "origin": c.base.origin(),
        "name": e.name,
        "question": e.question,
        "kind": config::kind_label(&e.workload.kind),
        "prefix": {
            "tokens": question::shared_prefix_tokens(e),
            "line_key": question::line_key(e),
            "brief_tokens": question::brief_tokens(e),
        },
        "keys": schema::starting_values(c.base.table(), &rendered),
        "values": {
            "workload.agents": e.workload.agents,
            "workload.concurrency": e.workload.concurrency,
            "model": e.model.name,
            "cache.policy": e.cache.policy.name(),
            "cache.ttl": e.cache.ttl.api_name(),
            "latency.preset": preset.unwrap_or("calibrated"),
            "strategies": strategies,
            "replications": e.replications,
            "seed": e.seed,
        },
        "latency_from": from,
        "choices": choices(),
        "calibrations": c.calibrations.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "budget": c.budget,
        "max_sweep_points": settings::MAX_SWEEP_POINTS,
        "sweep_metrics": metrics_json(),
        "sweep_default": sweep_default(c.base.table()),
    }))
}

/// The choices of the keys that take one of a few names (any other key is typed).
fn choices() -> serde_json::Value {
    let policies = [
        config::Policy::Anthropic,
        config::Policy::EveryBlock,
        config::Policy::OpenAi,
        config::Policy::Gemini,
        config::Policy::Vllm,
        config::Policy::Sglang,
    ];
    serde_json::json!({
        "model": config::presets::preset_names(),
        "cache.policy": policies.map(|p| p.name()),
        "cache.ttl": ["5m", "1h", "none"],
        "latency.preset": config::latency_presets::LatencyPreset::NAMES,
        "strategy": config::names::STRATEGY_NAMES,
    })
}

/// The first axis of the file's `[sweep]`, when it is a key the page sets.
fn sweep_default(table: &toml::Table) -> Option<serde_json::Value> {
    let sweep = config::sweep_table(table)?;
    config::flatten_keys(sweep).into_iter().find_map(|(k, v)| {
        let values = v.as_array()?;
        let text: Vec<String> = values.iter().map(schema::set_text).collect();
        let settable = schema::leaf_of(&k).is_some_and(|l| schema::refusal(l).is_none());
        (settable && k != "strategies").then(|| serde_json::json!({"key": k, "values": text}))
    })
}

/// The settings applied to the starting experiment and checked against the budget.
type Prepared = (Settings, crate::Experiment, Vec<String>, f64);

fn prepare(app: &App, query: Option<&str>) -> Result<Prepared, Refusal> {
    let s = Settings::parse(query)?;
    let (exp, sets) = s.apply(&app.config.base, &app.config.calibrations)?;
    let work = settings::check_budget(&exp, app.config.budget)?;
    Ok((s, exp, sets, work))
}

/// `/api/run?SETTINGS`: the run's summary (the `run --json` document), the page's figures and
/// the settings as an experiment file.
pub async fn run(State(app): State<Arc<App>>, RawQuery(query): RawQuery) -> Response {
    match run_json(&app, query.as_deref()).await {
        Ok(v) => json(v),
        Err(r) => refused(&app, &r),
    }
}

async fn run_json(app: &Arc<App>, query: Option<&str>) -> Result<serde_json::Value, Refusal> {
    let (s, exp, sets, work) = prepare(app, query)?;
    let toml = settings::export_toml(&exp, app.config.base.origin(), &sets);
    let (question, prefix) =
        (exp.config().question.clone(), question::shared_prefix_tokens(exp.config()));
    let _ticket = app.admission.admit(work).await?;
    let timeline = s.timeline.clone();
    let (summary, drawn) =
        tokio::task::spawn_blocking(move || figures::run_with_figures(&exp, timeline.as_deref()))
            .await
            .map_err(|e| Refusal::Internal(format!("the run failed: {e}")))??;
    Stats::bump(&app.stats.runs);
    Ok(serde_json::json!({
        "query": query.unwrap_or(""),
        "work": work,
        "question": question,
        "prefix_tokens": prefix,
        "summary": summary,
        "toml": toml,
        "figures": drawn,
    }))
}

/// `/api/hold?SETTINGS`: the hold answer (`sweep::hold`), `{"hold": null}` when the experiment
/// does not ask for one; refused above the budget like a run (its work is its search's).
pub async fn hold(State(app): State<Arc<App>>, RawQuery(query): RawQuery) -> Response {
    match hold_json(&app, query.as_deref()).await {
        Ok(v) => json(v),
        Err(r) => refused(&app, &r),
    }
}

async fn hold_json(app: &Arc<App>, query: Option<&str>) -> Result<serde_json::Value, Refusal> {
    let (_, exp, _, _) = prepare(app, query)?;
    let work = settings::check_hold_budget(&exp, app.config.budget)?;
    let _ticket = app.admission.admit(work).await?;
    let answer = tokio::task::spawn_blocking(move || {
        let answer = exp.hold_answer(Some(1));
        crate::exec::model::release_buffers(); // this thread ran it (`jobs: 1`)
        answer
    })
    .await
    .map_err(|e| Refusal::Internal(format!("the hold answer failed: {e}")))?
    .map_err(Refusal::from_api)?;
    Ok(serde_json::json!({ "query": query.unwrap_or(""), "work": work, "hold": answer }))
}

/// `/api/export?SETTINGS`: the experiment file, as a download.
pub async fn export(State(app): State<Arc<App>>, RawQuery(query): RawQuery) -> Response {
    let prepared = Settings::parse(query.as_deref())
        .and_then(|s| s.apply(&app.config.base, &app.config.calibrations));
    match prepared {
        Ok((exp, sets)) => {
            let body = settings::export_toml(&exp, app.config.base.origin(), &sets);
            let headers = [
                (header::CONTENT_TYPE, "application/toml; charset=utf-8"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"experiment.toml\""),
            ];
            (headers, body).into_response()
        }
        Err(r) => refused(&app, &r),
    }
}
