//! The HTTP API served beside the scheduler by `hermes cron daemon` when `API_SERVER_KEY`
//! holds a strong key (docs/API.md): Python Hermes' jobs API, the dashboard's `/api/cron/`
//! routes, our own read-only routes and `/metrics`, behind one security guard. Every
//! change goes through the `jobs` lifecycle functions and the one store, every run
//! through the scheduler's manual-run path; it never opens a file of the store itself.
//!
//! * [`settings`] — what the environment asks for, and whether to serve at all;
//! * [`security`] — Host, Origin/CORS, body size and security headers, for every route;
//! * [`listener`] — the accept loop: header-read and idle deadlines, and a connection
//!   cap below the file budget;
//! * [`auth`] — the key check, per route family, with [`throttle`]'s slow-down of
//!   wrong keys per address;
//! * [`ops`] — the job operations both jobs APIs share;
//! * [`hermes_jobs`], [`dashboard`], [`extras`], [`run_actions`] — the routes;
//! * [`metrics`] — the counters and the Prometheus text;
//! * [`page`] — the web dashboard at `/`, with its own Content-Security-Policy (the guard
//!   leaves it alone).

mod auth;
mod dashboard;
mod extras;
mod hermes_jobs;
mod incidents;
mod listener;
pub mod metrics;
mod ops;
mod page;
mod run_actions;
mod security;
pub mod settings;
pub mod spend_metrics;
mod throttle;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::StatusCode;
use axum::Router;
use serde_json::{Map, Value};

pub use metrics::Metrics;
use ops::Failure;
use settings::{ApiSettings, NotServed};

use crate::environment::Environment;
use crate::job_service::JobService;
use crate::redact::Redactor;
use crate::scheduler::Scheduler;

/// What every route reads: the scheduler (its store, clock and manual runs), the home
/// and the metrics. Shared by all requests; holds no lock of its own.
pub struct ApiState {
    /// Every change to a job goes through it.
    pub jobs: JobService,
    pub scheduler: Arc<Scheduler>,
    /// The Hermes home (config.yaml, `.env`, scripts), for settings read per request.
    pub home: PathBuf,
    pub metrics: Arc<Metrics>,
}

impl ApiState {
    /// The message a client is shown for a failure: internal ones pass through the
    /// secret redactor first (a store error could quote a connection string).
    fn shown_error(&self, failure: &Failure) -> String {
        if failure.status.is_server_error() {
            Redactor::for_home(&self.home).redact(&failure.message)
        } else {
            failure.message.clone()
        }
    }
}

/// A JSON object body, read up to the size limit.
async fn read_object(body: Body) -> Result<Map<String, Value>, Failure> {
    let bytes = security::read_body(body).await.map_err(|e| match e {
        security::BodyError::TooLarge => {
            Failure::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large.")
        }
        security::BodyError::TooSlow => Failure::new(
            StatusCode::REQUEST_TIMEOUT,
            "Request body not received within 30 s.",
        ),
    })?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Failure::bad_request(
            "Invalid JSON body: expected an object",
        )),
        Err(e) => Err(Failure::bad_request(format!("Invalid JSON body: {e}"))),
    }
}

/// Every route, each family behind its key check, all behind the security guard.
pub fn router(state: Arc<ApiState>, settings: &ApiSettings) -> Router {
    let key = Arc::new(auth::KeyCheck::new(settings.key.clone()));
    let hermes = hermes_jobs::routes()
        .merge(extras::routes())
        .merge(run_actions::routes())
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&key),
            auth::require_key,
        ));
    let dashboard = dashboard::routes().route_layer(axum::middleware::from_fn_with_state(
        key,
        auth::require_dashboard_key,
    ));
    let guard = Arc::new(security::Guard::new(settings));
    Router::new()
        .merge(hermes)
        .merge(dashboard)
        .merge(extras::open_routes())
        .merge(page::routes())
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(guard, security::guard))
}

/// Starts the API beside the scheduler when the environment asks for it, or logs why it
/// is not served (the scheduler runs either way). Returns the server's task.
pub async fn start(
    state: ApiState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Option<tokio::task::JoinHandle<()>> {
    let settings = match ApiSettings::from_env(&Environment::load(&state.home)) {
        Ok(settings) => settings,
        Err(NotServed::NoKey) => {
            tracing::info!("{}", NotServed::NoKey);
            return None;
        }
        Err(refused) => {
            tracing::error!("{refused}");
            return None;
        }
    };
    let address = format!("{}:{}", settings.host, settings.port);
    let listener = match tokio::net::TcpListener::bind(&address).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!("cannot serve the API on {address}: {e}; set API_SERVER_HOST / API_SERVER_PORT to a free address");
            return None;
        }
    };
    let bound = listener.local_addr().map_or(address, |a| a.to_string());
    if !settings.is_loopback() {
        tracing::warn!("the API is reachable from other machines on {bound}: keep API_SERVER_KEY secret and firewall the port to trusted networks");
    }
    let router = router(Arc::new(state), &settings);
    let limits = listener::Limits::for_process(settings.max_connections);
    tracing::info!(address = %bound, max_connections = limits.max_connections, "API listening on http://{bound}");
    Some(tokio::spawn(async move {
        if let Err(e) = listener::serve(listener, router, limits, shutdown).await {
            tracing::error!("the API server stopped: {e}");
        }
    }))
}
