//! The page's routes: the page itself, the controls' starting values, a run with its figures,
//! the export, and the counters. Refusals are plain-text messages with the status that fits.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::figures::{self, SWEEP_METRICS};
use super::settings::{self, Refusal, Settings, SET_KEYS};
use super::{App, Stats};
use crate::config;

/// The page, its script or its style sheet.
pub async fn asset(content_type: &'static str, body: &'static str) -> Response {
    text(content_type, body.to_string())
}

pub async fn not_found() -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        "no such page; the server has /, /api/run, /api/sweep, /api/export",
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

/// The key of the shared prefix's size for the experiment's kind of agent.
pub fn prefix_key(exp: &config::ExperimentSpec) -> &'static str {
    match exp.workload.kind {
        config::AgentKind::Subagent => "workload.subagent_tokens",
        _ => "workload.parent_tokens",
    }
}

/// The starting experiment's controls: each key's value and its choices, the calibration
/// files, the budget, and the `[sweep]` axis of the file when the page can sweep it.
pub async fn controls(State(app): State<Arc<App>>) -> Response {
    let c = &app.config;
    let e = c.base.config();
    let key = prefix_key(e);
    let prefix = if key == "workload.subagent_tokens" {
        e.workload.subagent_tokens
    } else {
        e.workload.parent_tokens
    };
    let raw_latency = c.base.table().get("latency").and_then(toml::Value::as_table);
    let preset = raw_latency.and_then(|t| t.get("preset")).and_then(toml::Value::as_str);
    let from = raw_latency.and_then(|t| t.get("from")).and_then(toml::Value::as_str);
    let policies = [
        config::Policy::Anthropic,
        config::Policy::EveryBlock,
        config::Policy::OpenAi,
        config::Policy::Gemini,
        config::Policy::Vllm,
        config::Policy::Sglang,
    ];
    let strategies: Vec<String> = e.strategies.iter().map(config::strategy_label).collect();
    json(serde_json::json!({
        "origin": c.base.origin(),
        "name": e.name,
        "question": e.question,
        "kind": config::kind_label(&e.workload.kind),
        "prefix_key": key,
        "values": {
            key: prefix,
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
        "choices": {
            "model": config::presets::preset_names(),
            "cache.policy": policies.map(|p| p.name()),
            "cache.ttl": ["5m", "1h", "none"],
            "latency.preset": config::latency_presets::LatencyPreset::NAMES,
            "strategy": config::names::STRATEGY_NAMES,
        },
        "calibrations": c.calibrations.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "budget": c.budget,
        "max_sweep_points": settings::MAX_SWEEP_POINTS,
        "sweep_keys": SET_KEYS.iter().filter(|k| **k != "strategies").collect::<Vec<_>>(),
        "sweep_metrics": SWEEP_METRICS.map(|m| serde_json::json!({"name": m.0, "title": m.1})),
        "sweep_default": sweep_default(c.base.table()),
    }))
}

/// The first axis of the file's `[sweep]`, when it is a key the page sets.
fn sweep_default(table: &toml::Table) -> Option<serde_json::Value> {
    let sweep = config::sweep_table(table)?;
    config::flatten_keys(sweep).into_iter().find_map(|(k, v)| {
        let values = v.as_array()?;
        let text: Vec<String> = values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect();
        SET_KEYS.contains(&k.as_str()).then(|| serde_json::json!({"key": k, "values": text}))
    })
}

/// The settings applied to the starting experiment and checked against the budget.
fn prepare(app: &App, query: Option<&str>) -> Result<(Settings, crate::Experiment, f64), Refusal> {
    let s = Settings::parse(query)?;
    let exp = s.apply(&app.config.base, &app.config.calibrations)?;
    let work = settings::check_budget(&exp, app.config.budget)?;
    Ok((s, exp, work))
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
    let (s, exp, work) = prepare(app, query)?;
    let toml = settings::export_toml(&exp, app.config.base.origin(), &s);
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
    let (_, exp, _) = prepare(app, query)?;
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
        .and_then(|s| Ok((s.apply(&app.config.base, &app.config.calibrations)?, s)));
    match prepared {
        Ok((exp, s)) => {
            let body = settings::export_toml(&exp, app.config.base.origin(), &s);
            let headers = [
                (header::CONTENT_TYPE, "application/toml; charset=utf-8"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"experiment.toml\""),
            ];
            (headers, body).into_response()
        }
        Err(r) => refused(&app, &r),
    }
}
