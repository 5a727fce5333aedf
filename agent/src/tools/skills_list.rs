//! `skills_list` (Hermes' `tools/skills_tool.py`, same schema and result shape): name,
//! description and category of every skill under `<home>/skills/` that `agent::skills`
//! finds. Reading only.

use std::path::{Component, Path};

use serde_json::{json, Value};

use super::{ready, Schema, Tool, ToolContext, ToolFuture};
use crate::skills::{index, IndexEntry};

pub struct SkillsList;

impl Tool for SkillsList {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        ready(list(args, &ctx.home))
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("skills_list", "skills", DESCRIPTION, parameters())
    }
}

/// Hermes' category: the first folder under `skills/` when the skill sits below one.
fn category(root: &Path, skill_md: &Path) -> Option<String> {
    let rel = skill_md.strip_prefix(root).ok()?;
    let parts: Vec<_> = rel.components().collect();
    match parts.first() {
        Some(Component::Normal(first)) if parts.len() >= 3 => {
            Some(first.to_string_lossy().into_owned())
        }
        _ => None,
    }
}

/// The description, else the body's first line that is not a heading, cut at 1,024.
fn description(entry: &IndexEntry) -> String {
    let mut text = entry.description.clone();
    if text.is_empty() {
        let body = std::fs::read_to_string(&entry.path).unwrap_or_default();
        let body = match body
            .strip_prefix("---")
            .and_then(|r| r.find("\n---").map(|e| &r[e + 4..]))
        {
            Some(after) => after.to_string(),
            None => body,
        };
        text = body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && *l != "---")
            .unwrap_or_default()
            .to_string();
    }
    if text.chars().count() > 1024 {
        text = text.chars().take(1021).collect::<String>() + "...";
    }
    text
}

/// `skills_list`: name, description and category of every skill, sorted as Hermes sorts.
fn list(args: &Value, home: &Path) -> String {
    let root = home.join("skills");
    let mut skills: Vec<(Option<String>, String, String)> = index(home)
        .iter()
        .map(|e| (category(&root, &e.path), e.name.clone(), description(e)))
        .collect();
    if skills.is_empty() {
        return json!({"success": true, "skills": [], "categories": [], "message": "No skills found in skills/ directory."}).to_string();
    }
    if let Some(wanted) = args
        .get("category")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        skills.retain(|(c, _, _)| c.as_deref() == Some(wanted));
    }
    // One entry per name, the first found, as Hermes lists them.
    let mut seen = std::collections::HashSet::new();
    skills.retain(|(_, name, _)| seen.insert(name.clone()));
    skills.sort_by(|a, b| {
        (a.0.as_deref().unwrap_or(""), &a.1).cmp(&(b.0.as_deref().unwrap_or(""), &b.1))
    });
    let mut categories: Vec<&str> = skills.iter().filter_map(|s| s.0.as_deref()).collect();
    categories.sort_unstable();
    categories.dedup();
    let listed: Vec<Value> = skills
        .iter()
        .map(|(c, n, d)| json!({"name": n, "description": d, "category": c}))
        .collect();
    json!({
        "success": true,
        "skills": listed,
        "categories": categories,
        "count": listed.len(),
        "hint": "Use skill_view(name) to see full content, tags, and linked files",
    })
    .to_string()
}

/// What the model reads about `skills_list` (Hermes' words).
const DESCRIPTION: &str =
    "List available skills (name + description). Use skill_view(name) to load full content.";

/// The JSON schema of `skills_list`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "category": {"type": "string", "description": "Optional category filter to narrow results"}
    }, "required": []})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::skill;

    fn call(f: fn(&Value, &Path) -> String, home: &Path, args: Value) -> Value {
        serde_json::from_str(&f(&args, home)).unwrap()
    }

    #[test]
    fn skills_list_gives_name_description_and_category() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(
            call(list, home.path(), json!({}))["message"],
            "No skills found in skills/ directory."
        );
        skill(
            home.path(),
            "ops/release",
            "---\nname: release-notes\ndescription: Write notes\n---\nbody\n",
        );
        skill(home.path(), "plain", "# Title\n\nJust do it.\n");
        let v = call(list, home.path(), json!({}));
        assert_eq!(
            v["skills"],
            json!([{"name": "plain", "description": "Just do it.", "category": null},
                   {"name": "release-notes", "description": "Write notes", "category": "ops"}])
        );
        assert_eq!(v["categories"], json!(["ops"]));
        assert_eq!(v["count"], 2);
        let v = call(list, home.path(), json!({"category": "ops"}));
        assert_eq!(v["count"], 1);
    }
}
