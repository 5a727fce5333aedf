//! The key check of every route that needs one: `Authorization: Bearer <API_SERVER_KEY>`
//! (and, for the dashboard routes under `/api/cron/`, the same key in
//! `X-Hermes-Session-Token`). A refusal is logged with the client's address, method and
//! path, never with what it sent; nothing here ever echoes a header back.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::settings::ApiKey;

/// The dashboard's own header for its token (Python Hermes' `web_server.py`).
const SESSION_HEADER: &str = "x-hermes-session-token";

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn log_refusal(request: &Request) {
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    tracing::warn!(
        client = %client,
        method = %request.method(),
        path = %request.uri().path(),
        "API refused a request without a valid API key"
    );
}

/// The Hermes API's key check; a refusal is Python Hermes' 401 body.
pub async fn require_key(State(key): State<Arc<ApiKey>>, request: Request, next: Next) -> Response {
    if bearer(request.headers()).is_some_and(|given| key.matches(given)) {
        return next.run(request).await;
    }
    log_refusal(&request);
    let body = json!({"error": {
        "message": "Invalid API key",
        "type": "invalid_request_error",
        "code": "invalid_api_key",
    }});
    (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
}

/// The dashboard routes' key check: the key as a bearer token or in the dashboard's
/// session header; a refusal is the dashboard's 401 body.
pub async fn require_dashboard_key(
    State(key): State<Arc<ApiKey>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    let matches = |given: Option<&str>| given.is_some_and(|given| key.matches(given));
    if matches(bearer(headers)) || matches(session) {
        return next.run(request).await;
    }
    log_refusal(&request);
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"detail": "Unauthorized"})),
    )
        .into_response()
}
