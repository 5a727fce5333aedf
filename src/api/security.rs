//! The listener's outer guard, applied to every request before any route: the `Host`
//! header must name this server (DNS rebinding), a browser `Origin` must be allowed
//! (CORS, never a wildcard), a body larger than [`MAX_BODY`] is refused before it is
//! read, and every response carries the security headers. It never looks at the key
//! (that is [`super::auth`]) and never logs a header's value other than the Host.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::settings::ApiSettings;
use crate::logged::logged;

/// The largest request body accepted (1 MiB).
pub const MAX_BODY: usize = 1024 * 1024;

/// Headers every response gets unless its route set its own (Python Hermes' set; a
/// dashboard page sets its own Content-Security-Policy).
const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; frame-ancestors 'none'",
    ),
    (
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
];

/// What the guard checks requests against.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The bind address as configured (`127.0.0.1`, `0.0.0.0`, `my.host`).
    bind_host: String,
    /// `API_SERVER_ALLOWED_HOSTS`, lower-cased.
    allowed_hosts: Vec<String>,
    /// `API_SERVER_CORS_ORIGINS`.
    cors_origins: Vec<String>,
}

impl Guard {
    pub fn new(settings: &ApiSettings) -> Guard {
        Guard {
            bind_host: settings.host.trim().to_lowercase(),
            allowed_hosts: settings.allowed_hosts.clone(),
            cors_origins: settings.cors_origins.clone(),
        }
    }

    /// True when a request may carry this `Host`: the bind address, a loopback name or
    /// address, a configured name; on a wildcard bind, any IP address too. A DNS
    /// rebinding attack needs a name of the attacker's; an address literal cannot be
    /// rebound.
    fn host_allowed(&self, host_header: &str) -> bool {
        let Some(host) = host_only(host_header) else {
            return false;
        };
        let ip = host.parse::<IpAddr>().ok();
        host == self.bind_host
            || host == "localhost"
            || ip.is_some_and(|ip| ip.is_loopback())
            || self.allowed_hosts.contains(&host)
            || (ip.is_some() && matches!(self.bind_host.as_str(), "0.0.0.0" | "::" | "[::]"))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        self.cors_origins.iter().any(|o| o == origin)
    }
}

/// The host part of a `Host` header, lower-cased, without port or IPv6 brackets.
fn host_only(header: &str) -> Option<String> {
    let h = header.trim();
    let host = if let Some(rest) = h.strip_prefix('[') {
        rest.split(']').next()?
    } else {
        h.rsplit_once(':').map_or(h, |(host, _)| host)
    };
    (!host.is_empty()).then(|| host.to_lowercase())
}

fn cors_headers(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Authorization, Content-Type, X-Hermes-Session-Token"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
}

fn with_security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers
            .entry(HeaderName::from_static(name))
            .or_insert_with(|| HeaderValue::from_static(value));
    }
    response
}

/// The body of a refused oversized request (Python Hermes' shape).
pub fn too_large() -> Response {
    let body = json!({"error": {
        "message": "Request body too large.",
        "type": "invalid_request_error",
        "code": "body_too_large",
    }});
    (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

/// A declared body length over the limit; `Err` for a length that is not a number.
fn declared_too_large(headers: &HeaderMap) -> Result<bool, ()> {
    match headers.get(header::CONTENT_LENGTH) {
        None => Ok(false),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|n| n > MAX_BODY as u64)
            .ok_or(()),
    }
}

/// The middleware: Host, Origin, preflight, body size, then the route; CORS and
/// security headers on the way out.
pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !guard.host_allowed(host) {
        tracing::warn!(
            host = %logged(&host.chars().take(100).collect::<String>()),
            path = %logged(request.uri().path()),
            "API refused a request for a host it does not serve"
        );
        let body = json!({"error": "Invalid Host header: use the address the server is bound to, localhost, or a name listed in API_SERVER_ALLOWED_HOSTS"});
        return with_security_headers((StatusCode::BAD_REQUEST, axum::Json(body)).into_response());
    }
    let origin = request.headers().get(header::ORIGIN).cloned();
    // The dashboard's own calls: the page's origin is this very server (its Host
    // passed the check above), so it needs no listing and gets no CORS headers.
    let same_origin = origin
        .as_ref()
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| o.strip_prefix("http://") == Some(host));
    let origin = origin.filter(|_| !same_origin);
    if let Some(origin) = &origin {
        if !origin.to_str().is_ok_and(|o| guard.origin_allowed(o)) {
            return with_security_headers(StatusCode::FORBIDDEN.into_response());
        }
    }
    if request.method() == Method::OPTIONS {
        let Some(origin) = &origin else {
            return with_security_headers(StatusCode::FORBIDDEN.into_response());
        };
        let mut response = StatusCode::OK.into_response();
        cors_headers(response.headers_mut(), origin);
        return with_security_headers(response);
    }
    match declared_too_large(request.headers()) {
        Ok(false) => {}
        Ok(true) => return with_security_headers(too_large()),
        Err(()) => {
            let body = json!({"error": "Invalid Content-Length header"});
            return with_security_headers(
                (StatusCode::BAD_REQUEST, axum::Json(body)).into_response(),
            );
        }
    }
    let mut response = next.run(request).await;
    if let Some(origin) = &origin {
        cors_headers(response.headers_mut(), origin);
    }
    with_security_headers(response)
}

/// How long a request's body may take to arrive once its head has.
pub const BODY_READ: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a body was not read.
pub enum BodyError {
    TooLarge,
    /// Not all there within [`BODY_READ`]: a slow sender holds a request in flight,
    /// which the listener never closes to make room.
    TooSlow,
}

/// Reads a request body of at most [`MAX_BODY`] bytes within [`BODY_READ`] (a chunked
/// body has no declared length: it is cut off as soon as it grows past the limit).
pub async fn read_body(body: Body) -> Result<axum::body::Bytes, BodyError> {
    match tokio::time::timeout(BODY_READ, axum::body::to_bytes(body, MAX_BODY)).await {
        Err(_) => Err(BodyError::TooSlow),
        Ok(read) => read.map_err(|_| BodyError::TooLarge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bind: &str, names: &[&str]) -> Guard {
        Guard {
            bind_host: bind.into(),
            allowed_hosts: names.iter().map(|n| n.to_string()).collect(),
            cors_origins: vec!["https://dash.example".into()],
        }
    }

    #[test]
    fn only_this_servers_names_pass_the_host_check() {
        let local = guard("127.0.0.1", &["cron.internal"]);
        for ok in [
            "127.0.0.1:8642",
            "localhost:8642",
            "LOCALHOST",
            "[::1]:8642",
            "cron.internal:80",
        ] {
            assert!(local.host_allowed(ok), "{ok}");
        }
        for refused in ["evil.example:8642", "", "10.0.0.5:8642", "[", ":8642"] {
            assert!(!local.host_allowed(refused), "{refused}");
        }
        let wildcard = guard("0.0.0.0", &[]);
        assert!(wildcard.host_allowed("192.168.1.20:8642"));
        assert!(!wildcard.host_allowed("evil.example"));
    }
}
