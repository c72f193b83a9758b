//! `/api/sweep?SETTINGS&sweep_key=K&sweep_values=a,b,c[&sweep_metric=M]`: the settings run at
//! each value of one key, streamed as server-sent events as the points complete: `point` (the
//! point's values and the figure so far), then `done`, or `failure` with a message. When the
//! page changes a control it drops the connection; the sweep stops before its next point.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

use super::figures::{self, SWEEP_METRICS};
use super::handlers::refused;
use super::settings::{self, Refusal, Settings, MAX_SWEEP_POINTS};
use super::{App, Stats};
use crate::api::{Experiment, RunOptions};
use crate::report::run::RunSummary;

/// A checked sweep: the key, its values as given, the metric, and one experiment per value.
struct Plan {
    key: String,
    values: Vec<String>,
    metric: String,
    points: Vec<Experiment>,
}

fn plan(app: &App, query: Option<&str>) -> Result<Plan, Refusal> {
    let s = Settings::parse(query)?;
    let bad = |m: String| Refusal::BadInput(m);
    let key = s.sweep_key.clone().ok_or_else(|| bad("sweep_key is missing".into()))?;
    if key.trim() == "strategies" {
        return Err(bad("sweep_key = `strategies`: the page compares strategies in each point; \
                        sweep another key"
            .into()));
    }
    settings::check_key(&key).map_err(|r| bad(format!("sweep_key = `{key}`: {}", r.message())))?;
    let metric = s.sweep_metric.clone().unwrap_or_else(|| "cost_usd".into());
    if !SWEEP_METRICS.iter().any(|m| m.0 == metric) {
        let names: Vec<&str> = SWEEP_METRICS.iter().map(|m| m.0).collect();
        return Err(bad(format!("sweep_metric = `{metric}`: use one of {}", names.join(", "))));
    }
    let text = s.sweep_values.clone().unwrap_or_default();
    let values: Vec<String> =
        text.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    if values.is_empty() || values.len() > MAX_SWEEP_POINTS {
        return Err(bad(format!(
            "sweep_values = `{text}`: give 1 to {MAX_SWEEP_POINTS} values, comma-separated"
        )));
    }
    let (_, sets) = s.apply(&app.config.base, &app.config.calibrations)?;
    let mut points = Vec::with_capacity(values.len());
    for v in &values {
        settings::check_assignment(&key, v)
            .map_err(|r| bad(format!("sweep_key = `{key}`: {}", r.message())))?;
        let point = [sets.clone(), vec![format!("{key}={v}")]].concat();
        points.push(app.config.base.clone().set_all(&point).map_err(Refusal::from_api)?);
    }
    let work: f64 = points.iter().map(settings::work).sum();
    settings::within_budget(work, app.config.budget, |w| {
        format!("this sweep is about {w} simulated requests over {} points", values.len())
    })?;
    Ok(Plan { key, values, metric, points })
}

pub async fn stream(State(app): State<Arc<App>>, RawQuery(query): RawQuery) -> Response {
    let plan = match plan(&app, query.as_deref()) {
        Ok(p) => p,
        Err(r) => return refused(&app, &r),
    };
    // One event in flight: a point is computed only when the last one was taken, so a page
    // that went away stops the sweep within a point.
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(run(app, plan, tx));
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<Event, Infallible>(e), rx))
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}

/// Run the points in order, sending each as it completes.
async fn run(app: Arc<App>, plan: Plan, tx: mpsc::Sender<Event>) {
    let mut done: Vec<RunSummary> = Vec::new();
    let Plan { key, values, metric, points } = plan;
    for (i, exp) in points.into_iter().enumerate() {
        if tx.is_closed() {
            Stats::bump(&app.stats.sweeps_cancelled);
            return;
        }
        let event = match point(&app, exp, (&key, &values, &metric), &mut done).await {
            Ok(data) => Event::default().event("point").data(data_of(i, &values[i], data)),
            Err(r) => {
                let msg = format!("{} = {}: {}", key, values[i], r.message());
                let _ = tx.send(Event::default().event("failure").data(msg)).await;
                return;
            }
        };
        Stats::bump(&app.stats.sweep_points);
        if tx.send(event).await.is_err() {
            Stats::bump(&app.stats.sweeps_cancelled);
            return;
        }
    }
    let _ = tx.send(Event::default().event("done").data(values.len().to_string())).await;
    Stats::bump(&app.stats.sweeps_done);
}

/// One point's run and the sweep's figure with it, on a blocking thread under a permit.
async fn point(
    app: &App,
    exp: Experiment,
    (key, values, metric): (&str, &[String], &str),
    done: &mut Vec<RunSummary>,
) -> Result<(Vec<(String, f64, f64)>, String), Refusal> {
    let _ticket = app.admission.admit(settings::work(&exp)).await?;
    let (key, values, metric) = (key.to_string(), values.to_vec(), metric.to_string());
    let mut so_far = std::mem::take(done);
    let (so_far, out) = tokio::task::spawn_blocking(move || {
        let r = exp.run(&RunOptions { jobs: Some(1), ..Default::default() });
        crate::exec::model::release_buffers(); // this thread ran it (`jobs: 1`)
        let out = r.map_err(Refusal::from_api).and_then(|s| {
            let row: Vec<(String, f64, f64)> = s
                .results
                .iter()
                .map(|r| {
                    let (m, ci) = figures::metric_value(r, &metric);
                    (r.strategy.clone(), m, ci)
                })
                .collect();
            so_far.push(s);
            let svg = figures::svg(&figures::sweep_figure(&key, &values, &metric, &so_far))?.svg;
            Ok((row, svg))
        });
        (so_far, out)
    })
    .await
    .map_err(|e| Refusal::Internal(format!("the sweep point failed: {e}")))?;
    *done = so_far;
    out
}

fn data_of(i: usize, value: &str, (row, svg): (Vec<(String, f64, f64)>, String)) -> String {
    let results: Vec<serde_json::Value> = row
        .into_iter()
        .map(|(s, m, ci)| serde_json::json!({"strategy": s, "value": m, "ci95": ci}))
        .collect();
    let mut v = serde_json::json!({"index": i, "value": value, "results": results, "svg": svg});
    v.sort_all_objects(); // keys sorted, as ever
    v.to_string()
}
