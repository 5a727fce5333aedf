//! What a job's runs may reach beyond their own prompt, as the doors set it: the tools
//! (`enabled_toolsets`) and other jobs' newest outputs (`context_from`). Hermes 0.22's
//! model tool and dashboard set both; `hermes cron add`/`edit`, our REST routes and the
//! MCP tool set them through here, so every door gives the same answer.

use serde_json::Value;

use crate::lifecycle::{find_job, JobError};
use crate::model::job::{Context, Job};
use crate::store::Store;

/// The most names a job's `enabled_toolsets` or `context_from` holds.
pub const MOST_NAMES: usize = 64;

/// `enabled_toolsets` as stored: names trimmed, blanks and repeats dropped, in order.
/// An empty list stays empty: it allows no tool at all (Hermes 0.22); `None` (null)
/// allows every tool. Names are not checked against the tools: an MCP server named in
/// config.yaml later is a valid name too (docs/AGENT.md, "Tools").
pub fn toolsets(names: &[String]) -> Result<Vec<String>, JobError> {
    let mut kept: Vec<String> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !kept.iter().any(|k| k == name) {
            kept.push(name.to_string());
        }
    }
    if kept.len() > MOST_NAMES {
        return Err(JobError::Invalid(format!(
            "enabled_toolsets names {} toolsets: give at most {MOST_NAMES}",
            kept.len()
        )));
    }
    Ok(kept)
}

/// The `--toolsets` text of the CLI: a comma list (`web,file`); `none` allows no tool;
/// `""` allows every tool again (null).
pub fn toolsets_text(text: &str) -> Result<Option<Vec<String>>, JobError> {
    match text.trim() {
        "" => Ok(None),
        t if t.eq_ignore_ascii_case("none") => Ok(Some(Vec::new())),
        t => {
            let names: Vec<String> = t.split(',').map(str::to_string).collect();
            toolsets(&names).map(Some)
        }
    }
}

/// `enabled_toolsets` as a JSON door sends it: a list of names (`[]`: none), or a comma
/// text; `null` and `""` allow every tool again.
pub fn toolsets_json(value: &Value) -> Result<Option<Vec<String>>, JobError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) if text.trim().is_empty() => Ok(None),
        Value::String(text) => {
            let names: Vec<String> = text.split(',').map(str::to_string).collect();
            toolsets(&names).map(Some)
        }
        Value::Array(_) => toolsets(&texts(value, "enabled_toolsets")?).map(Some),
        _ => Err(JobError::Invalid(
            "enabled_toolsets must be a list of toolset names, e.g. [\"web\", \"file\"], or [] for no tool".into(),
        )),
    }
}

/// `context_from` as a JSON door sends it: a list of job ids or names, one as a text,
/// or `null` (none).
pub fn refs_json(value: &Value) -> Result<Vec<String>, JobError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(one) => Ok(vec![one.clone()]),
        Value::Array(_) => texts(value, "context_from"),
        _ => Err(JobError::Invalid(
            "context_from must be a list of job ids, e.g. [\"a1b2c3d4e5f6\"]".into(),
        )),
    }
}

/// The texts of a JSON list; anything else in it is refused, naming `key`.
fn texts(list: &Value, key: &str) -> Result<Vec<String>, JobError> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|item| match item {
            Value::String(text) => Ok(text.clone()),
            other => Err(JobError::Invalid(format!(
                "{key} must hold texts only, not {other}"
            ))),
        })
        .collect()
}

/// `context_from` references as stored: each job, named by its id or exact name, as its
/// id. `self` (any case) and the job's own id (`own`, on an edit) are the job itself:
/// they stay `"self"`, which is continuity. A name that finds no job is refused, as
/// Hermes 0.22 refuses it.
pub async fn context_refs(
    store: &dyn Store,
    ctx: &Context,
    own: Option<&str>,
    refs: &[String],
) -> Result<Vec<String>, JobError> {
    let named: Vec<&str> = refs
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    if named.len() > MOST_NAMES {
        return Err(JobError::Invalid(format!(
            "context_from names {} jobs: give at most {MOST_NAMES}",
            named.len()
        )));
    }
    let others: Vec<&str> = named
        .iter()
        .copied()
        .filter(|r| !r.eq_ignore_ascii_case("self"))
        .collect();
    let jobs = if others.is_empty() {
        Vec::new()
    } else {
        store.load_view(ctx, &["id", "name"]).await?
    };
    let mut ids: Vec<String> = Vec::new();
    for reference in named {
        let id = if reference.eq_ignore_ascii_case("self") {
            "self".to_string()
        } else {
            let found = find_job(&jobs, reference).map_err(|e| match e {
                JobError::NotFound(reference) => JobError::Invalid(format!(
                    "context_from names no job: '{reference}'. Run 'hermes cron list --all' to see job IDs"
                )),
                other => other,
            })?;
            match own {
                Some(own) if own == found.id() => "self".to_string(),
                _ => found.id().to_string(),
            }
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// The job's `context_from` with its references to other jobs replaced by `refs` (ids,
/// as [`context_refs`] gives them); whether it has `self` (continuity) stays as it is
/// unless `refs` holds it.
pub fn set_context_refs(job: &mut Job, refs: &[String]) {
    let continuity = job.continuity() || refs.iter().any(|r| r == "self");
    let mut list: Vec<String> = refs.iter().filter(|r| *r != "self").cloned().collect();
    if continuity {
        list.push("self".to_string());
    }
    job.set_context_from(list);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn toolsets_are_cleaned_and_an_empty_list_stays_empty() {
        assert_eq!(
            toolsets(&names([" web", "file ", "", "web"].as_slice())).unwrap(),
            ["web", "file"]
        );
        assert!(toolsets(&[]).unwrap().is_empty());
        let many: Vec<String> = (0..65).map(|n| format!("t{n}")).collect();
        let refused = toolsets(&many).unwrap_err().to_string();
        assert!(refused.contains("at most 64"), "{refused}");
    }

    #[test]
    fn the_cli_text_says_none_for_no_tool_and_nothing_for_every_tool() {
        assert_eq!(
            toolsets_text("web, file").unwrap(),
            Some(names(&["web", "file"]))
        );
        assert_eq!(toolsets_text("None").unwrap(), Some(Vec::new()));
        assert_eq!(toolsets_text("  ").unwrap(), None);
    }

    #[test]
    fn json_doors_send_lists_texts_or_null() {
        use serde_json::json;
        assert_eq!(toolsets_json(&json!([])).unwrap(), Some(Vec::new()));
        assert_eq!(
            toolsets_json(&json!("web,file")).unwrap(),
            Some(names(&["web", "file"]))
        );
        assert_eq!(toolsets_json(&json!(null)).unwrap(), None);
        assert!(toolsets_json(&json!([1])).is_err());
        assert!(toolsets_json(&json!(true)).is_err());
        assert_eq!(refs_json(&json!("a1")).unwrap(), ["a1"]);
        assert_eq!(refs_json(&json!(["a1", "b2"])).unwrap(), ["a1", "b2"]);
        assert!(refs_json(&json!({"job": "a1"})).is_err());
    }
}
