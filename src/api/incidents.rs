//! The dashboard's incident routes under `/api/cron/incidents`: the store's failure
//! incidents listed as `hermes cron incidents --json` lists them, and acknowledged through
//! the job service, so the page and the CLI close an incident by the same rule and say the
//! same words. Errors are the dashboard's `{"detail": "<message>"}`; the key is checked by
//! the layer around these routes. Nothing here changes an incident but through the service.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use jobs::incident::IncidentState;

use super::dashboard::reply;
use super::ops::Failure;
use super::ApiState;

pub fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/api/cron/incidents", get(list))
        .route("/api/cron/incidents/{id}/ack", post(ack))
}

#[derive(Deserialize)]
struct ListQuery {
    state: Option<String>,
}

/// The state a `?state=` names (blank: every state).
fn state_of(text: Option<&str>) -> Result<Option<IncidentState>, Failure> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    IncidentState::parse(text).map(Some).ok_or_else(|| {
        let known: Vec<&str> = IncidentState::ALL.iter().map(|s| s.as_str()).collect();
        Failure::bad_request(format!(
            "Unknown incident state '{text}': use one of {}",
            known.join(", ")
        ))
    })
}

/// Every incident (or those in `?state=`), newest activity first.
async fn list(State(state): State<Arc<ApiState>>, Query(query): Query<ListQuery>) -> Response {
    let result = async {
        let wanted = state_of(query.state.as_deref())?;
        let incidents = state.jobs.store().incidents(wanted).await?;
        Ok(json!({ "incidents": incidents }))
    }
    .await;
    reply(&state, result)
}

/// Closes the incident (`hermes cron incidents ack <id>`); answers with the incident as
/// it now is and the CLI's message. An unknown id is a 404.
async fn ack(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        let (acked, incident) = state.jobs.ack_incident(&id).await?;
        Ok(json!({ "ok": true, "message": acked.message(&id), "incident": incident }))
    }
    .await;
    reply(&state, result)
}
