//! Python Hermes' jobs API (`gateway/platforms/api_server.py`): `GET/POST /api/jobs`,
//! `GET/PATCH/DELETE /api/jobs/{id}`, `POST /api/jobs/{id}/pause|resume|run`, with its
//! shapes (`{"jobs": [...]}`, `{"job": {...}}`, `{"ok": true}`), its checks in its order
//! (key, id format, body, existence) and its messages. The key is checked by the layer
//! around these routes ([`super::auth::require_key`]).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use jobs::{JobEdit, NewJob};

use super::ops::{Failure, Paging};
use super::{read_object, ApiState};
use crate::logged::logged;

/// The fields a PATCH may change; anything else is ignored, as in Python Hermes. The
/// dashboard's edit takes these and more.
pub const UPDATABLE: &[&str] = jobs::field_table::PATCH_KEYS;

pub fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/api/jobs", get(list).post(create))
        .route("/api/jobs/{id}", get(show).patch(update).delete(remove))
        .route("/api/jobs/{id}/pause", post(pause))
        .route("/api/jobs/{id}/resume", post(resume))
        .route("/api/jobs/{id}/run", post(run))
}

/// `{"error": "<message>"}` with the failure's status; internal messages are redacted.
fn error(state: &ApiState, failure: Failure) -> Response {
    if failure.status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return super::security::too_large();
    }
    let message = state.shown_error(&failure);
    (failure.status, Json(json!({ "error": message }))).into_response()
}

fn reply(state: &ApiState, result: Result<Value, Failure>) -> Response {
    match result {
        Ok(body) => Json(body).into_response(),
        Err(failure) => error(state, failure),
    }
}

/// Python Hermes' job id check: twelve lower-case hex digits.
pub fn check_id(id: &str) -> Result<(), Failure> {
    let valid = id.len() == 12 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if valid {
        Ok(())
    } else {
        tracing::warn!(path_id = %logged(&id.chars().take(64).collect::<String>()), "API refused an invalid job id");
        Err(Failure::bad_request("Invalid job ID format"))
    }
}

#[derive(Deserialize)]
struct ListQuery {
    #[serde(default)]
    include_disabled: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    offset: Option<String>,
    #[serde(default)]
    search: Option<String>,
}

async fn list(State(state): State<Arc<ApiState>>, Query(query): Query<ListQuery>) -> Response {
    let include = query
        .include_disabled
        .is_some_and(|v| matches!(v.to_lowercase().as_str(), "true" | "1"));
    let listed = async {
        let paging = Paging::read(
            query.limit.as_deref(),
            query.offset.as_deref(),
            query.search.as_deref(),
        )?;
        let start = b"{\"jobs\":[".to_vec();
        let (mut body, page) = state
            .write_job_list(include, &paging, Vec::new(), start)
            .await?;
        body.push(b']');
        if let Some(page) = page {
            body.extend_from_slice(page.members().as_bytes());
        }
        body.push(b'}');
        Ok(body)
    };
    match listed.await {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(failure) => error(&state, failure),
    }
}

fn text<'a>(body: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, Failure> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Failure::bad_request(format!("{key} must be a string"))),
    }
}

fn skills_of(value: Option<&Value>) -> Result<Option<Vec<String>>, Failure> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(Failure::bad_request("skills must be a list of skill names")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(Failure::bad_request("skills must be a list of skill names")),
    }
}

/// The new job a Hermes create body asks for: its shape checked here (what is required,
/// what type each field is), its values judged by the job service.
fn new_job(body: &Map<String, Value>) -> Result<NewJob, Failure> {
    let name = text(body, "name")?.unwrap_or("").trim().to_string();
    if name.is_empty() {
        return Err(Failure::bad_request("Name is required"));
    }
    let schedule = text(body, "schedule")?.unwrap_or("").trim().to_string();
    if schedule.is_empty() {
        return Err(Failure::bad_request("Schedule is required"));
    }
    let prompt = text(body, "prompt")?.unwrap_or("").to_string();
    let repeat = match body.get("repeat") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => Some(n.to_string()),
        Some(_) => return Err(Failure::bad_request("Repeat must be a positive integer")),
    };
    let (paused, paused_reason) = paused_of(body)?;
    // On a create, `null` is no chain.
    let after = match after_of(body)? {
        (Some(job), on) if job.is_empty() => (None, on),
        after => after,
    };
    Ok(NewJob {
        schedule,
        prompt,
        name: Some(name),
        deliver: Some(text(body, "deliver")?.unwrap_or("local").to_string()),
        repeat,
        skills: skills_of(body.get("skills"))?.unwrap_or_default(),
        paused,
        paused_reason,
        caps: caps_of(body)?,
        after: after.0,
        after_on: after.1,
        window: window_of(body, false)?,
        overlap: text(body, "overlap")?.map(str::to_string),
        sandbox: text(body, "sandbox")?.map(str::to_string),
        ..NewJob::default()
    })
}

/// `after` of a body: `{"job": ID, "on": "success"}` (`on` optional; alone on an update
/// it changes the outcome only), a job id or name, or `null` (on an update: remove the
/// chain). Judged by the job service; shared with the dashboard's and MCP's doors.
pub fn after_of(body: &Map<String, Value>) -> Result<(Option<String>, Option<String>), Failure> {
    jobs::chain::requested(body.get("after")).map_err(Failure::bad_request)
}

/// The spending caps of a body (`max_turns`, `max_runtime_seconds`, `max_tokens`,
/// `max_cost_usd`), judged by the job service. Shared with the dashboard's routes.
pub fn caps_of(body: &Map<String, Value>) -> Result<jobs::CapTexts, Failure> {
    jobs::CapTexts::from_json(|key| body.get(key)).map_err(Failure::bad_request)
}

/// `start_at`, `until` (ISO-8601 texts) and `jitter` (a span such as `"5m"`, or whole
/// seconds) of a body, judged by the job service. On an edit (`editing`) `null` or `""`
/// clears one; on a create `null` is "not given". Shared with the dashboard's routes.
pub fn window_of(body: &Map<String, Value>, editing: bool) -> Result<jobs::WindowTexts, Failure> {
    let field = |key: &str| -> Result<Option<String>, Failure> {
        match body.get(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(editing.then(String::new)),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) if key == "jitter" && n.as_u64().is_some() => {
                Ok(Some(format!("{n}s")))
            }
            Some(_) if key == "jitter" => Err(Failure::bad_request(
                "jitter must be a duration such as \"5m\" or a whole number of seconds",
            )),
            Some(_) => Err(Failure::bad_request(format!(
                "{key} must be an ISO-8601 date and time (a string)"
            ))),
        }
    };
    Ok(jobs::WindowTexts {
        start_at: field("start_at")?,
        until: field("until")?,
        jitter: field("jitter")?,
    })
}

/// `paused` and `paused_reason` of a create body, typed as Hermes 0.22 types them (the
/// job service refuses a reason without `paused`). Shared with the dashboard's create.
pub fn paused_of(body: &Map<String, Value>) -> Result<(bool, Option<String>), Failure> {
    let paused = match body.get("paused") {
        None => false,
        Some(Value::Bool(paused)) => *paused,
        Some(_) => return Err(Failure::bad_request("paused must be a boolean.")),
    };
    let reason = match body.get("paused_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(_) => return Err(Failure::bad_request("paused_reason must be a string.")),
    };
    Ok((paused, reason))
}

async fn create(State(state): State<Arc<ApiState>>, body: Body) -> Response {
    let body = match read_object(body).await {
        Ok(body) => body,
        Err(failure) => return error(&state, failure),
    };
    let result = async {
        let new = new_job(&body)?;
        Ok(json!({ "job": state.create_job(new).await? }))
    }
    .await;
    reply(&state, result)
}

async fn show(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        check_id(&id)?;
        Ok(json!({ "job": state.get_job(&id).await? }))
    }
    .await;
    reply(&state, result)
}

/// The edit a Hermes PATCH body asks for (allowed fields only), and `enabled`.
pub fn job_edit(body: &Map<String, Value>) -> Result<(JobEdit, Option<bool>), Failure> {
    let mut edit = JobEdit {
        name: text(body, "name")?.map(str::to_string),
        prompt: text(body, "prompt")?.map(str::to_string),
        schedule: text(body, "schedule")?.map(str::to_string),
        deliver: text(body, "deliver")?.map(str::to_string),
        ..JobEdit::default()
    };
    match (body.get("skills"), body.get("skill")) {
        (Some(skills), _) | (None, Some(skills)) => match skills_of(Some(skills))? {
            Some(skills) if !skills.is_empty() => edit.skills = Some(skills),
            _ => edit.clear_skills = true,
        },
        (None, None) => {}
    }
    // The create rule: a positive whole number; `null` runs it forever.
    edit.repeat = match body.get("repeat") {
        None => None,
        Some(Value::Null) => Some("forever".to_string()),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => Some(n.to_string()),
        Some(_) => return Err(Failure::bad_request("Repeat must be a positive integer")),
    };
    let enabled = match body.get("enabled") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(Failure::bad_request("enabled must be true or false")),
    };
    edit.caps = caps_of(body)?;
    (edit.after, edit.after_on) = after_of(body)?;
    edit.window = window_of(body, true)?;
    edit.overlap = text(body, "overlap")?.map(str::to_string);
    edit.sandbox = text(body, "sandbox")?.map(str::to_string);
    Ok((edit, enabled))
}

async fn update(
    State(state): State<Arc<ApiState>>,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    if let Err(failure) = check_id(&id) {
        return error(&state, failure);
    }
    let body = match read_object(body).await {
        Ok(body) => body,
        Err(failure) => return error(&state, failure),
    };
    let result = async {
        let allowed: Map<String, Value> = body
            .into_iter()
            .filter(|(k, _)| UPDATABLE.contains(&k.as_str()))
            .collect();
        if allowed.is_empty() {
            return Err(Failure::bad_request("No valid fields to update"));
        }
        let (edit, enabled) = job_edit(&allowed)?;
        Ok(json!({ "job": state.update_job(&id, edit, enabled).await? }))
    }
    .await;
    reply(&state, result)
}

async fn remove(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        check_id(&id)?;
        let waiting = state.remove_job(&id).await?;
        Ok(crate::api::ops::removed_reply(&id, &waiting))
    }
    .await;
    reply(&state, result)
}

async fn pause(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        check_id(&id)?;
        Ok(json!({ "job": state.pause_job(&id).await? }))
    }
    .await;
    reply(&state, result)
}

async fn resume(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        check_id(&id)?;
        Ok(json!({ "job": state.resume_job(&id).await? }))
    }
    .await;
    reply(&state, result)
}

/// Starts the job now (Python Hermes only marks it due for its next tick). An optional
/// `{"prompt": …}` is appended to this run's prompt only, judged by the job service as a
/// stored prompt is;
/// a body that is not a JSON object is ignored, as Hermes 0.22 ignores it.
async fn run(State(state): State<Arc<ApiState>>, Path(id): Path<String>, body: Body) -> Response {
    let result = async {
        check_id(&id)?;
        let body = match read_object(body).await {
            Ok(body) => body,
            Err(f) if f.status == axum::http::StatusCode::PAYLOAD_TOO_LARGE => return Err(f),
            Err(_) => Map::new(),
        };
        let run_context = match body.get("prompt") {
            None | Some(Value::Null) => None,
            Some(Value::String(prompt)) => Some(prompt.as_str()),
            Some(_) => return Err(Failure::bad_request("prompt must be a string")),
        };
        Ok(json!({ "job": state.run_job(&id, run_context).await? }))
    }
    .await;
    reply(&state, result)
}
