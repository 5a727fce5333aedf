//! The dashboard's cron routes under `/api/cron/` (Python Hermes'
//! `hermes_cli/web_server.py`): jobs as bare objects and lists, `PUT` with
//! `{"updates": {...}}`, pause/resume/trigger, a job's runs and the delivery targets,
//! errors as `{"detail": "<message>"}`. One profile: the home this daemon serves
//! (`profile` is always `default`). The key is checked by the layer around these routes.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use jobs::store::{ExtraField, ListedJob};
use jobs::{JobEdit, NewJob};

use super::hermes_jobs::{caps_of, job_edit, paused_of, window_of, UPDATABLE};
use super::ops::{Failure, Paging, Record};
use super::{read_object, ApiState};
use crate::environment::Environment;

pub fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/api/cron/jobs", get(list).post(create))
        .route("/api/cron/jobs/{id}", get(show).put(update).delete(remove))
        .route("/api/cron/jobs/{id}/runs", get(runs))
        .route("/api/cron/jobs/{id}/pause", post(pause))
        .route("/api/cron/jobs/{id}/resume", post(resume))
        .route("/api/cron/jobs/{id}/trigger", post(trigger))
        .route("/api/cron/delivery-targets", get(delivery_targets))
        .merge(super::incidents::routes())
}

pub(super) fn reply(state: &ApiState, result: Result<Value, Failure>) -> Response {
    match result {
        Ok(body) => Json(body).into_response(),
        Err(failure) => {
            let message = state.shown_error(&failure);
            (failure.status, Json(json!({ "detail": message }))).into_response()
        }
    }
}

/// The dashboard's profile fields on a job: their keys and JSON values.
fn profile_fields(state: &ApiState) -> [(&'static str, Value); 4] {
    [
        ("profile", json!("default")),
        ("profile_name", json!("default")),
        ("hermes_home", json!(state.home.display().to_string())),
        ("is_default_profile", json!(true)),
    ]
}

fn annotated(state: &ApiState, mut job: Record) -> Value {
    for (key, value) in profile_fields(state) {
        job.insert(key.into(), value);
    }
    Value::Object(job)
}

/// Every job with its latest run and the profile fields, written straight from the
/// store's listing.
#[derive(Deserialize)]
struct ListQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    offset: Option<String>,
    #[serde(default)]
    search: Option<String>,
}

/// Every job, as a bare list (Hermes' dashboard); with `?limit=` (and `offset`, `search`)
/// one page of them as `{"jobs": [...], "total", "offset", "limit", "next_offset"}`. A
/// store too large to list whole answers its first page as a bare list, the total in
/// `X-Total-Count`.
async fn list(State(state): State<Arc<ApiState>>, Query(query): Query<ListQuery>) -> Response {
    let listed = async {
        let paging = Paging::read(
            query.limit.as_deref(),
            query.offset.as_deref(),
            query.search.as_deref(),
        )?;
        let fields: Vec<ExtraField> = profile_fields(&state)
            .into_iter()
            .map(|(key, value)| {
                let text = value.to_string();
                ExtraField {
                    key,
                    write: Arc::new(move |_: &ListedJob<'_>, out: &mut Vec<u8>| {
                        out.extend_from_slice(text.as_bytes())
                    }),
                }
            })
            .collect();
        let start = if paging.asked() {
            &b"{\"jobs\":["[..]
        } else {
            b"["
        };
        let (mut body, page) = state
            .write_job_list(true, &paging, fields, start.to_vec())
            .await?;
        body.push(b']');
        if let (true, Some(page)) = (paging.asked(), page) {
            body.extend_from_slice(page.members().as_bytes());
            body.push(b'}');
        }
        Ok((body, page))
    };
    match listed.await {
        Ok((body, page)) => {
            let total = page.map_or_else(String::new, |p| p.total.to_string());
            let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            if let Ok(value) = header::HeaderValue::from_str(&total) {
                if !total.is_empty() {
                    response.headers_mut().insert("x-total-count", value);
                }
            }
            response
        }
        Err(failure) => reply(&state, Err(failure)),
    }
}

async fn show(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async { Ok(annotated(&state, state.get_job(&id).await?)) }.await;
    reply(&state, result)
}

#[derive(Deserialize)]
struct RunsQuery {
    limit: Option<String>,
}

async fn runs(
    State(state): State<Arc<ApiState>>,
    Path(id): Path<String>,
    Query(query): Query<RunsQuery>,
) -> Response {
    let limit = query
        .limit
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let result = async {
        let rows = state
            .scheduler
            .store()
            .recent_runs(Some(&id), limit)
            .await?;
        Ok(json!({ "runs": rows, "limit": limit }))
    }
    .await;
    reply(&state, result)
}

fn text(body: &Map<String, Value>, key: &str) -> Result<Option<String>, Failure> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(_) => Err(Failure::bad_request(format!("{key} must be a string"))),
    }
}

/// A list given as a JSON list or as comma- or newline-separated text.
fn names(value: Option<&Value>) -> Vec<String> {
    let items: Vec<String> = match value {
        Some(Value::String(s)) => s.split([',', '\n']).map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn new_job(body: &Map<String, Value>) -> Result<NewJob, Failure> {
    let Some(schedule) = text(body, "schedule")? else {
        return Err(Failure::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "schedule is required",
        ));
    };
    let (paused, paused_reason) = paused_of(body)?;
    let after = match super::hermes_jobs::after_of(body)? {
        (Some(job), on) if job.is_empty() => (None, on),
        after => after,
    };
    Ok(NewJob {
        paused,
        paused_reason,
        repeat: repeat_of(body.get("repeat"))?,
        schedule,
        prompt: text(body, "prompt")?.unwrap_or_default(),
        name: text(body, "name")?,
        deliver: Some(text(body, "deliver")?.unwrap_or_else(|| "local".into())),
        skills: names(body.get("skills")),
        script: text(body, "script")?,
        no_agent: body
            .get("no_agent")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        workdir: text(body, "workdir")?,
        model: text(body, "model")?,
        provider: text(body, "provider")?,
        caps: caps_of(body)?,
        after: after.0,
        after_on: after.1,
        window: window_of(body, false)?,
        overlap: text(body, "overlap")?,
        sandbox: text(body, "sandbox")?,
        context_from: body
            .get("context_from")
            .map(jobs::reach::refs_json)
            .transpose()?
            .unwrap_or_default(),
        enabled_toolsets: body
            .get("enabled_toolsets")
            .map(jobs::reach::toolsets_json)
            .transpose()?
            .flatten(),
        ..NewJob::default()
    })
}

async fn create(State(state): State<Arc<ApiState>>, body: Body) -> Response {
    let body = match read_object(body).await {
        Ok(body) => body,
        Err(failure) => return reply(&state, Err(failure)),
    };
    let result = async { Ok(annotated(&state, state.create_job(new_job(&body)?).await?)) }.await;
    reply(&state, result)
}

/// A create's `repeat` as Hermes 0.22's dashboard takes it: a count, a word the CLI
/// takes (`"once"`, `"forever"`, `"3"`), or null for the schedule's default; the job
/// service judges the value.
fn repeat_of(value: Option<&Value>) -> Result<Option<String>, Failure> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Failure::bad_request(
            "repeat must be a whole number, 'once' or 'forever'",
        )),
    }
}

/// The fields the dashboard's edit form sends beyond Hermes' PATCH set.
fn dashboard_edit(updates: &Map<String, Value>) -> Result<(JobEdit, Option<bool>), Failure> {
    const BEYOND_PATCH: &[&str] = jobs::field_table::DASHBOARD_KEYS;
    let known = |key: &str| UPDATABLE.contains(&key) || BEYOND_PATCH.contains(&key);
    if let Some(unknown) = updates.keys().find(|k| !known(k)) {
        return Err(Failure::bad_request(format!(
            "Cron job field '{unknown}' cannot be updated here"
        )));
    }
    let (mut edit, enabled) = job_edit(updates)?;
    let cleared = |key: &str| -> Result<Option<String>, Failure> {
        Ok(updates
            .contains_key(key)
            .then(|| text(updates, key))
            .transpose()?
            .map(Option::unwrap_or_default))
    };
    edit.script = cleared("script")?;
    edit.workdir = cleared("workdir")?;
    edit.model = cleared("model")?;
    edit.provider = cleared("provider")?;
    edit.timezone = cleared("timezone")?;
    // `''` clears the override: failures follow `deliver` again (Hermes 0.22).
    edit.failure_deliver = cleared("failure_deliver")?;
    edit.no_agent = updates.get("no_agent").and_then(Value::as_bool);
    edit.context_from = updates
        .get("context_from")
        .map(jobs::reach::refs_json)
        .transpose()?;
    edit.enabled_toolsets = updates
        .get("enabled_toolsets")
        .map(jobs::reach::toolsets_json)
        .transpose()?;
    Ok((edit, enabled))
}

async fn update(
    State(state): State<Arc<ApiState>>,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    let body = match read_object(body).await {
        Ok(body) => body,
        Err(failure) => return reply(&state, Err(failure)),
    };
    let result = async {
        let Some(Value::Object(updates)) = body.get("updates") else {
            return Err(Failure::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "updates must be an object",
            ));
        };
        state.get_job(&id).await?;
        let (edit, enabled) = dashboard_edit(updates)?;
        Ok(annotated(
            &state,
            state.update_job(&id, edit, enabled).await?,
        ))
    }
    .await;
    reply(&state, result)
}

async fn remove(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async {
        let waiting = state.remove_job(&id).await?;
        Ok(crate::api::ops::removed_reply(&id, &waiting))
    }
    .await;
    reply(&state, result)
}

async fn pause(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async { Ok(annotated(&state, state.pause_job(&id).await?)) }.await;
    reply(&state, result)
}

async fn resume(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async { Ok(annotated(&state, state.resume_job(&id).await?)) }.await;
    reply(&state, result)
}

/// Starts the job now, like `POST /api/jobs/{id}/run`.
async fn trigger(State(state): State<Arc<ApiState>>, Path(id): Path<String>) -> Response {
    let result = async { Ok(annotated(&state, state.run_job(&id, None).await?)) }.await;
    reply(&state, result)
}

/// `local`, then every platform whose sender has its credentials in the environment,
/// with whether its home channel is set (cron jobs delivering to the platform need it).
async fn delivery_targets(State(state): State<Arc<ApiState>>) -> Response {
    let env = Environment::load(&state.home);
    let mut targets = vec![json!({
        "id": "local",
        "name": "Local (save only)",
        "home_target_set": true,
        "home_env_var": null,
    })];
    for platform in crate::delivery::platforms::ALL.iter().map(|d| d.platform) {
        let configured = crate::delivery::platforms::required_vars(platform)
            .iter()
            .all(|var| crate::delivery::sender::setting(&env, var).is_some());
        if !configured {
            continue;
        }
        let home_var = crate::delivery::target::home_var(platform);
        targets.push(json!({
            "id": platform.as_str(),
            "name": title(platform.as_str()),
            "home_target_set": crate::delivery::target::home_channel(platform, &env).is_some(),
            "home_env_var": home_var,
        }));
    }
    Json(json!({ "targets": targets })).into_response()
}

/// `whatsapp_cloud` → `Whatsapp Cloud`, as Python Hermes titles platform names.
fn title(name: &str) -> String {
    name.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}
