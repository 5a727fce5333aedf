//! Routes beyond Python Hermes' API: the run ledger (`/api/runs`), a schedule preview,
//! the daemon's status, health checks (`/healthz`, Python Hermes' `/health` and the
//! readiness `/readyz`, all without a key) and `/metrics`, and delivering a finished
//! run again (`POST /api/runs/{id}/redeliver`). Nothing here changes a job.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{json, Value};

use jobs::JobState;
use schedules::{format_instant, parse_schedule};

use super::ops::Failure;
use super::ApiState;
use crate::redact::Redactor;

/// The most fires a preview lists.
const MAX_PREVIEW: usize = 100;

/// Routes that need the key.
pub fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/api/runs", get(runs))
        .route("/api/runs/{id}/output", get(run_output))
        .route("/api/runs/{id}/redeliver", post(redeliver))
        .route("/api/schedule/preview", get(preview))
        .route("/api/status", get(status))
        .route("/metrics", get(metrics))
}

/// Routes open without a key (they say only whether the server is up and working).
pub fn open_routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .route(
            "/health",
            get(|| async {
                Json(json!({
                    "status": "ok",
                    "platform": "hermes-agent",
                    "version": env!("CARGO_PKG_VERSION"),
                }))
            }),
        )
}

/// Ready while the scheduler's passes succeed: 503 with the reason (redacted) after
/// several failed in a row, or when none has ended for minutes. `/healthz` only says
/// the process answers.
async fn ready(State(state): State<Arc<ApiState>>) -> Response {
    match state.metrics.readiness() {
        Ok(()) => Json(json!({"status": "ready"})).into_response(),
        Err(reason) => {
            let reason = Redactor::for_home(&state.home).redact(&reason);
            let body = json!({"status": "unready", "reason": reason});
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    }
}

fn reply(state: &ApiState, result: Result<Value, Failure>) -> Response {
    match result {
        Ok(body) => Json(body).into_response(),
        Err(failure) => {
            let message = state.shown_error(&failure);
            (failure.status, Json(json!({ "error": message }))).into_response()
        }
    }
}

#[derive(Deserialize)]
struct RunsQuery {
    job: Option<String>,
    limit: Option<String>,
}

/// The newest runs, of one job (`?job=<id>`) or all, as `hermes cron runs --json`.
async fn runs(State(state): State<Arc<ApiState>>, Query(query): Query<RunsQuery>) -> Response {
    let limit = match query.limit.as_deref().map(str::parse::<usize>) {
        None => 50,
        Some(Ok(n)) => n.clamp(1, 500),
        Some(Err(_)) => {
            let failure = Failure::bad_request("limit must be a whole number from 1 to 500");
            return reply(&state, Err(failure));
        }
    };
    let result = async {
        let job = query
            .job
            .as_deref()
            .map(str::trim)
            .filter(|j| !j.is_empty());
        let rows = state.scheduler.store().recent_runs(job, limit).await?;
        Ok(json!({ "runs": rows }))
    }
    .await;
    reply(&state, result)
}

/// Delivers finished run `id` again (as `hermes cron redeliver`), with no model request:
/// to its job's targets, or to `{"to": TARGET}` (a body is optional). 200 with
/// `{"run", "job_id", "delivery", "error": null}` when it arrived; 502 with the same
/// fields and the error when it did not; 404 for an unknown run; 400 for a run that
/// cannot be sent again (still running, no output, job removed) or a bad target.
async fn redeliver(
    State(state): State<Arc<ApiState>>,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    let result = async {
        let Ok(run) = id.trim().parse::<i64>() else {
            return Err(Failure::bad_request(
                "Invalid run id: use a number from /api/runs",
            ));
        };
        let to = redeliver_target(body).await?;
        let report = state
            .jobs
            .redeliver(&state.scheduler, run, to.as_deref())
            .await?;
        let status = match report.error {
            None => StatusCode::OK,
            Some(_) => StatusCode::BAD_GATEWAY,
        };
        let body = json!({
            "run": run,
            "job_id": report.job_id,
            "delivery": report.delivery,
            "error": report.error,
        });
        Ok((status, body))
    }
    .await;
    match result {
        Ok((status, body)) => (status, Json(body)).into_response(),
        Err(failure) => reply(&state, Err(failure)),
    }
}

/// The `to` of a redeliver body: none for an empty body.
async fn redeliver_target(body: Body) -> Result<Option<String>, Failure> {
    let bytes = super::security::read_body(body).await.map_err(|_| {
        Failure::bad_request("Request body not read: send at most {\"to\": TARGET}")
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => match map.get("to") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(to)) => Ok(Some(to.clone())),
            Some(_) => Err(Failure::bad_request(
                "to must be a deliver value, e.g. \"telegram:CHAT\"",
            )),
        },
        _ => Err(Failure::bad_request(
            "Invalid JSON body: expected {\"to\": TARGET} or nothing",
        )),
    }
}

/// One run's output document, wherever the store keeps it (as `hermes cron output RUN`):
/// `{"run": id, "output": text or null, "html": its rendering or null}`; an unknown run
/// is a 404.
async fn run_output(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let Ok(run) = id.trim().parse::<i64>() else {
        let failure = Failure::bad_request("Invalid run id: use a number from /api/runs");
        return reply(&state, Err(failure));
    };
    let result = match state.scheduler.store().run_output(run).await {
        Ok(Some(output)) => {
            let html = output.as_deref().map(output_html);
            Ok(json!({ "run": run, "output": output, "html": html }))
        }
        Ok(None) => Err(Failure::new(StatusCode::NOT_FOUND, "Run not found")),
        Err(e) => Err(e.into()),
    };
    reply(&state, result)
}

/// An output document as the dashboard shows it: its Markdown rendered (raw HTML in it
/// shown as text), then cleaned here on the server by ammonia's allow-list, so nothing
/// a model wrote reaches the page as a script, an event handler or a style. Links open
/// with `rel="noopener noreferrer"`; images are dropped (they would load from anywhere).
pub fn output_html(text: &str) -> String {
    let mut cleaner = ammonia::Builder::default();
    cleaner
        .rm_tags(["img"])
        .link_rel(Some("noopener noreferrer"))
        .url_relative(ammonia::UrlRelative::Deny);
    cleaner
        .clean(&crate::delivery::format::markdown_html(text))
        .to_string()
}

#[derive(Deserialize)]
struct PreviewQuery {
    schedule: Option<String>,
    tz: Option<String>,
    n: Option<String>,
}

/// The next `n` fires of a schedule (not stored), in `tz` or the configured zone.
fn preview_of(state: &ApiState, query: &PreviewQuery) -> Result<Value, Failure> {
    let text = query.schedule.as_deref().map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Err(Failure::bad_request(
            "schedule is required, e.g. ?schedule=every%202h",
        ));
    }
    let count = match query.n.as_deref().map(str::parse::<usize>) {
        None => 5,
        Some(Ok(n)) => n.clamp(1, MAX_PREVIEW),
        Some(Err(_)) => {
            return Err(Failure::bad_request(
                "n must be a whole number from 1 to 100",
            ))
        }
    };
    let (ctx, _) = state.context()?;
    let zone = match query.tz.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(name) => name.parse::<Tz>().map_err(|_| {
            Failure::bad_request(format!(
                "Unknown time zone '{name}': use an IANA name such as Europe/Berlin"
            ))
        })?,
        None => ctx.zone,
    };
    let schedule = parse_schedule(text, ctx.now, zone, None)
        .map_err(|e| Failure::bad_request(e.to_string()))?;
    let mut fires = Vec::new();
    let mut last = None;
    while fires.len() < count {
        let Some(next) = schedule.next_run(ctx.now, last, zone) else {
            break;
        };
        if next <= ctx.now && last.is_some() {
            break;
        }
        fires.push(format_instant(next, zone));
        if !schedule.is_recurring() {
            break;
        }
        last = Some(next);
    }
    Ok(json!({
        "schedule": schedule.display(),
        "description": schedule.describe(zone, false),
        "timezone": zone.name(),
        "next": fires,
    }))
}

async fn preview(
    State(state): State<Arc<ApiState>>,
    Query(query): Query<PreviewQuery>,
) -> Response {
    let result = preview_of(&state, &query);
    reply(&state, result)
}

/// The daemon, the store and the jobs at a glance.
async fn status_of(state: &ApiState) -> Result<Value, Failure> {
    let (ctx, _) = state.context()?;
    let store = state.scheduler.store();
    let beat = store.heartbeat().await?;
    let jobs = store
        .load_view(
            &ctx,
            &["id", "state", "enabled", "paused_at", "next_run_at"],
        )
        .await?;
    let count = |s: JobState| jobs.iter().filter(|j| j.state() == s).count();
    let next = jobs
        .iter()
        .filter(|j| j.state() == JobState::Scheduled)
        .filter_map(|j| j.next_run_at(&ctx))
        .min();
    let info = store.describe().await?;
    let paused = state.jobs.global_pause().await?;
    Ok(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "now": format_instant(ctx.now, ctx.zone),
        "timezone": ctx.zone.name(),
        "scheduler": {
            "pid": std::process::id(),
            "last_heartbeat": beat.alive_at.map(|t| format_instant(t, ctx.zone)),
            "last_success": beat.last_success.map(|t| format_instant(t, ctx.zone)),
            "last_error": beat.last_error.map(|(at, why)| json!({"at": format_instant(at, ctx.zone), "error": why})),
            "hosts": beat.hosts.iter().map(|h| json!({"host": h.host, "pid": h.pid})).collect::<Vec<_>>(),
            "paused": paused,
        },
        "store": {"backend": info.backend},
        "jobs": {
            "total": jobs.len(),
            "scheduled": count(JobState::Scheduled),
            "paused": count(JobState::Paused),
            "completed": count(JobState::Completed),
            "error": count(JobState::Error),
        },
        "next_run_at": next.map(|t| format_instant(t, ctx.zone)),
        "outbox_depth": store.outbox_depth().await?,
    }))
}

async fn status(State(state): State<Arc<ApiState>>) -> Response {
    let result = status_of(&state).await;
    reply(&state, result)
}

async fn metrics(State(state): State<Arc<ApiState>>) -> Response {
    let result = async {
        let (ctx, _) = state.context()?;
        Ok(state.metrics.render(state.scheduler.store(), &ctx).await)
    }
    .await;
    match result {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(failure) => {
            let message = state.shown_error(&failure);
            (StatusCode::INTERNAL_SERVER_ERROR, message).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::output_html;

    #[test]
    fn markdown_renders_and_model_html_never_runs() {
        let html = output_html(
            "# Report\n\n- **one**\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n\
             ```sh\ndf -h\n```\n\n[docs](https://example.org/x) and \
             <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n\
             <a href=\"javascript:alert(3)\">click</a>",
        );
        assert!(html.contains("<h1>Report</h1>"), "{html}");
        assert!(html.contains("<li><strong>one</strong></li>"), "{html}");
        assert!(html.contains("<td>1</td>"), "{html}");
        assert!(html.contains("<pre><code>df -h\n</code></pre>"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.org/x\" rel=\"noopener noreferrer\">docs</a>"),
            "{html}"
        );
        // Shown as text, never as markup.
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<a href=\"javascript"), "{html}");
    }

    #[test]
    fn markup_that_gets_past_the_markdown_step_is_still_cleaned() {
        // A link whose target is a script, and an autolink: the cleaner decides.
        let html = output_html("[x](javascript:alert(1)) <https://example.org>");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("rel=\"noopener noreferrer\""), "{html}");
    }
}
