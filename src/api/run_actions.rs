//! Acting on runs over HTTP: `POST /api/jobs/{id}/cancel` stops the job's running run
//! (wherever it runs; 409 when nothing runs) and `POST /api/runs/{id}/replay` starts a
//! run again with the prompt and model it used. Both go through the job service, as
//! `hermes cron cancel` / `replay` and the MCP tool do; the dashboard's Cancel and
//! Replay buttons call them.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::hermes_jobs::check_id;
use super::ops::Failure;
use super::ApiState;

pub fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/api/jobs/{id}/cancel", post(cancel))
        .route("/api/runs/{id}/replay", post(replay))
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

/// `{"ok": true, "job_id", "runs": [ids asked to stop], "message"}`; the runs stop
/// within 5 seconds and are recorded `cancelled`.
async fn cancel(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        check_id(&id)?;
        state.jobs.get(&id).await?;
        let requested = state.jobs.cancel(&id).await?;
        Ok(json!({
            "ok": true,
            "job_id": requested.job_id,
            "runs": requested.runs,
            "message": requested.message(),
        }))
    }
    .await;
    reply(&state, result)
}

/// `{"ok": true, "run": new run id, "replay_of": id, "job_id", "note"}`: the replay is
/// claimed and runs in the daemon (follow it in `/api/runs`).
async fn replay(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        let Ok(run) = id.trim().parse::<i64>() else {
            return Err(Failure::bad_request(
                "Invalid run id: use a number from /api/runs",
            ));
        };
        let (replay, new_run) = state.jobs.start_replay(&state.scheduler, run).await?;
        Ok(json!({
            "ok": true,
            "run": new_run,
            "replay_of": run,
            "job_id": replay.job.id(),
            "note": replay.note(),
        }))
    }
    .await;
    reply(&state, result)
}
