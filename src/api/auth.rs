//! The key check of every route that needs one: `Authorization: Bearer <API_SERVER_KEY>`
//! (and, for the dashboard routes under `/api/cron/`, the same key in
//! `X-Hermes-Session-Token`). A refusal is logged with the client's address, method and
//! path, never with what it sent, and is answered after the address's slow-down
//! ([`super::throttle`]); nothing here ever echoes a header back.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::listener::Connection;
use super::settings::ApiKey;
use super::throttle::WrongKeys;
use crate::logged::logged;

/// The key, and the wrong keys seen by address.
pub struct KeyCheck {
    pub key: ApiKey,
    pub wrong: WrongKeys,
}

impl KeyCheck {
    pub fn new(key: ApiKey) -> KeyCheck {
        KeyCheck {
            key,
            wrong: WrongKeys::default(),
        }
    }

    /// Runs the request when one of `given` is the key; otherwise logs the refusal and
    /// waits out the address's slow-down before `refusal` is sent.
    async fn admit(
        &self,
        given: [Option<&str>; 2],
        request: Request,
        next: Next,
        refusal: impl FnOnce() -> Response,
    ) -> Response {
        let client = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        if given.iter().flatten().any(|given| self.key.matches(given)) {
            if let Some(ip) = client {
                self.wrong.forgive(ip);
            }
            return next.run(request).await;
        }
        log_refusal(&request);
        if let Some(ip) = client {
            let connection = request.extensions().get::<Arc<Connection>>().cloned();
            self.wrong.slow_down(ip, connection.as_ref()).await;
        }
        refusal()
    }
}

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
        path = %logged(request.uri().path()),
        "API refused a request without a valid API key"
    );
}

/// The Hermes API's key check; a refusal is Python Hermes' 401 body.
pub async fn require_key(
    State(check): State<Arc<KeyCheck>>,
    request: Request,
    next: Next,
) -> Response {
    let given = bearer(request.headers()).map(str::to_string);
    check
        .admit([given.as_deref(), None], request, next, || {
            let body = json!({"error": {
                "message": "Invalid API key",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }});
            (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
        })
        .await
}

/// The dashboard routes' key check: the key as a bearer token or in the dashboard's
/// session header; a refusal is the dashboard's 401 body.
pub async fn require_dashboard_key(
    State(check): State<Arc<KeyCheck>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let bearer = bearer(headers).map(str::to_string);
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    check
        .admit(
            [bearer.as_deref(), session.as_deref()],
            request,
            next,
            || {
                (
                    StatusCode::UNAUTHORIZED,
                    axum::Json(json!({"detail": "Unauthorized"})),
                )
                    .into_response()
            },
        )
        .await
}
