//! `skill_view` (Hermes' `tools/skills_tool.py`, same schema and result shape): one
//! skill's `SKILL.md` with its linked files, or one linked file. Reading only: a name or
//! file path that would leave the skills folder is refused, and nothing is created,
//! installed or counted.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{files_below, ready, Schema, Tool, ToolContext, ToolFuture};
use crate::skills::{front_matter, index};

pub struct SkillView;

impl Tool for SkillView {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        ready(view(args, &ctx.home))
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("skill_view", "skills", DESCRIPTION, parameters())
    }
}

fn failure(fields: Value) -> String {
    let mut out = Map::new();
    out.insert("success".into(), Value::Bool(false));
    if let Value::Object(rest) = fields {
        out.extend(rest);
    }
    Value::Object(out).to_string()
}

/// A relative path without `..`, `/` at the start or a drive.
fn stays_inside(path: &str) -> bool {
    let p = Path::new(path.trim());
    !p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The `SKILL.md` files `name` may mean: `skills/<name>/SKILL.md`, a skill folder of
/// that name, or a skill whose front matter has that name.
fn candidates(home: &Path, name: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut add = |path: PathBuf| {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !found
            .iter()
            .any(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()) == key)
        {
            found.push(path);
        }
    };
    let direct = home.join("skills").join(name).join("SKILL.md");
    if direct.is_file() {
        add(direct);
    }
    for entry in index(home) {
        let folder = entry.path.parent().and_then(Path::file_name);
        if folder.is_some_and(|f| f == name) || entry.name == name {
            add(entry.path);
        }
    }
    found
}

/// `skill_view`: the whole `SKILL.md` with its linked files, or one linked file.
fn view(args: &Value, home: &Path) -> String {
    let name = args
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    if name.is_empty() || !stays_inside(name) {
        return failure(json!({
            "error": if name.is_empty() { "Skill name is required." } else { "Skill name must be a relative path within the skills directory, without '..'." },
            "hint": "Use a skill name or relative path within the skills directory.",
        }));
    }
    let root = home.join("skills");
    if !root.is_dir() {
        return failure(
            json!({"error": "Skills directory does not exist yet. It will be created on first install."}),
        );
    }
    let found = candidates(home, name);
    if found.len() > 1 {
        return failure(json!({
            "error": format!("Ambiguous skill name '{name}': {} skills match across your local skills dir and external_dirs. Refusing to guess — load one explicitly by its categorized path.", found.len()),
            "matches": found.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "hint": "Pass the full relative path instead of the bare name (e.g., 'category/skill-name'), or rename one of the colliding skills so each name is unique.",
        }));
    }
    let Some(skill_md) = found.into_iter().next() else {
        let available: Vec<String> = index(home).into_iter().take(20).map(|e| e.name).collect();
        return failure(json!({
            "error": format!("Skill '{name}' not found."),
            "available_skills": available,
            "hint": "Use skills_list to see all available skills",
        }));
    };
    let Some(skill_dir) = skill_md.parent().map(Path::to_path_buf) else {
        return failure(json!({"error": format!("Skill '{name}' not found.")}));
    };
    match args
        .get("file_path")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
    {
        Some(file) => view_file(name, file, &skill_dir),
        None => view_skill(name, &skill_md, &skill_dir, &root),
    }
}

fn view_skill(name: &str, skill_md: &Path, skill_dir: &Path, root: &Path) -> String {
    let content = match std::fs::read_to_string(skill_md) {
        Ok(c) => c,
        Err(e) => return failure(json!({"error": format!("Failed to read skill '{name}': {e}")})),
    };
    let meta = front_matter(&content);
    let get = |key: &str| meta.as_ref().and_then(|m| m.get(key));
    let tags = |key: &str| -> Vec<String> {
        match get(key) {
            Some(serde_yaml_ng::Value::Sequence(items)) => items
                .iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect(),
            Some(serde_yaml_ng::Value::String(s)) => s
                .trim_matches(['[', ']'])
                .split(',')
                .map(|t| t.trim().trim_matches(['"', '\'']).to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            _ => Vec::new(),
        }
    };
    let skill_name = get("name")
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .or_else(|| {
            skill_dir
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| name.to_string());
    let linked = linked_files(skill_dir);
    json!({
        "success": true,
        "name": skill_name,
        "description": get("description").and_then(|d| d.as_str()).unwrap_or(""),
        "tags": tags("tags"),
        "related_skills": tags("related_skills"),
        "content": content,
        "path": skill_md.strip_prefix(root).unwrap_or(skill_md).display().to_string(),
        "skill_dir": skill_dir.display().to_string(),
        "linked_files": if linked.is_empty() { Value::Null } else { Value::Object(linked.clone()) },
        "usage_hint": if linked.is_empty() { Value::Null } else { json!("To view linked files, call skill_view(name, file_path) where file_path is e.g. 'references/api.md' or 'assets/config.yaml'") },
        "readiness_status": "available",
    })
    .to_string()
}

/// Every file under `dir`, relative to `base`, sorted (so results are stable).
fn files_under(dir: &Path, base: &Path) -> Vec<String> {
    let (files, _) = files_below(dir, |_| false, usize::MAX);
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|path| path.strip_prefix(base).ok())
        .map(|rel| rel.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn has_ext(path: &str, exts: &[&str]) -> bool {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.contains(&e))
}

/// Hermes' `linked_files`: references (`*.md`), templates, assets and scripts.
fn linked_files(skill_dir: &Path) -> Map<String, Value> {
    let top_level = |f: &String, folder: &str| Path::new(f).parent() == Some(Path::new(folder));
    let groups: [(&str, Vec<String>); 4] = [
        (
            "references",
            files_under(&skill_dir.join("references"), skill_dir)
                .into_iter()
                .filter(|f| top_level(f, "references") && has_ext(f, &["md"]))
                .collect(),
        ),
        (
            "templates",
            files_under(&skill_dir.join("templates"), skill_dir)
                .into_iter()
                .filter(|f| has_ext(f, &["md", "py", "yaml", "yml", "json", "tex", "sh"]))
                .collect(),
        ),
        ("assets", files_under(&skill_dir.join("assets"), skill_dir)),
        (
            "scripts",
            files_under(&skill_dir.join("scripts"), skill_dir)
                .into_iter()
                .filter(|f| {
                    top_level(f, "scripts") && has_ext(f, &["py", "sh", "bash", "js", "ts", "rb"])
                })
                .collect(),
        ),
    ];
    groups
        .into_iter()
        .filter(|(_, files)| !files.is_empty())
        .map(|(k, files)| (k.to_string(), json!(files)))
        .collect()
}

fn view_file(name: &str, file: &str, skill_dir: &Path) -> String {
    if !stays_inside(file) {
        return failure(
            json!({"error": "Path traversal ('..') is not allowed.", "hint": "Use a relative path within the skill directory"}),
        );
    }
    let target = skill_dir.join(file);
    let inside = match (
        std::fs::canonicalize(&target),
        std::fs::canonicalize(skill_dir),
    ) {
        (Ok(t), Ok(d)) => Some(t.starts_with(d)),
        _ => None,
    };
    match inside {
        Some(true) => {}
        Some(false) => {
            return failure(
                json!({"error": format!("'{file}' resolves outside the skill directory."), "hint": "Use a relative path within the skill directory"}),
            )
        }
        None => {
            let mut available = Map::new();
            for f in files_under(skill_dir, skill_dir)
                .into_iter()
                .filter(|f| f != "SKILL.md")
            {
                let group = ["references", "templates", "assets", "scripts"]
                    .into_iter()
                    .find(|g| f.starts_with(&format!("{g}/")))
                    .or_else(|| {
                        has_ext(&f, &["md", "py", "yaml", "yml", "json", "tex", "sh"])
                            .then_some("other")
                    });
                if let Some(Value::Array(list)) =
                    group.map(|g| available.entry(g).or_insert_with(|| json!([])))
                {
                    list.push(json!(f));
                }
            }
            return failure(json!({
                "error": format!("File '{file}' not found in skill '{name}'."),
                "available_files": available,
                "hint": "Use one of the available file paths listed above",
            }));
        }
    }
    match std::fs::read(&target) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(content) => json!({
                "success": true, "name": name, "file": file, "content": content,
                "file_type": target.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default(),
            })
            .to_string(),
            Err(e) => json!({
                "success": true, "name": name, "file": file,
                "content": format!("[Binary file: {}, size: {} bytes]", target.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(), e.as_bytes().len()),
                "is_binary": true,
            })
            .to_string(),
        },
        Err(e) => failure(json!({"error": format!("Failed to read '{file}' of skill '{name}': {e}")})),
    }
}

/// What the model reads about `skill_view` (Hermes' words).
const DESCRIPTION: &str = "Skills allow for loading information about specific tasks and workflows, as well as scripts and templates. Load a skill's full content or access its linked files (references, templates, scripts). First call returns SKILL.md content plus a 'linked_files' dict showing available references/templates/scripts. To access those, call again with file_path parameter.";

/// The JSON schema of `skill_view`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "description": "The skill name (use skills_list to see available skills). For plugin-provided skills, use the qualified form 'plugin:skill' (e.g. 'superpowers:writing-plans')."},
        "file_path": {"type": "string", "description": "OPTIONAL: Path to a linked file within the skill (e.g., 'references/api.md', 'templates/config.yaml', 'scripts/validate.py'). Omit to get the main SKILL.md content."}
    }, "required": ["name"]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::skill;

    fn call(f: fn(&Value, &Path) -> String, home: &Path, args: Value) -> Value {
        serde_json::from_str(&f(&args, home)).unwrap()
    }

    #[test]
    fn skill_view_finds_by_name_folder_or_path_and_refuses_escapes() {
        let home = tempfile::tempdir().unwrap();
        skill(
            home.path(),
            "ops/release",
            "---\nname: release-notes\ndescription: d\ntags: [a, b]\n---\nbody\n",
        );
        std::fs::create_dir_all(home.path().join("skills/ops/release/references")).unwrap();
        std::fs::write(
            home.path().join("skills/ops/release/references/api.md"),
            "API",
        )
        .unwrap();
        for name in ["release-notes", "release", "ops/release"] {
            let v = call(view, home.path(), json!({"name": name}));
            assert_eq!(v["success"], true, "{name}: {v}");
            assert_eq!(v["name"], "release-notes");
            assert_eq!(v["tags"], json!(["a", "b"]));
            assert_eq!(v["path"], "ops/release/SKILL.md");
            assert_eq!(
                v["linked_files"],
                json!({"references": ["references/api.md"]})
            );
            assert!(v["content"]
                .as_str()
                .unwrap_or_default()
                .ends_with("body\n"));
        }
        let v = call(
            view,
            home.path(),
            json!({"name": "release", "file_path": "references/api.md"}),
        );
        assert_eq!(
            (v["content"].as_str(), v["file_type"].as_str()),
            (Some("API"), Some(".md"))
        );
        let v = call(
            view,
            home.path(),
            json!({"name": "release", "file_path": "nope.md"}),
        );
        assert_eq!(v["error"], "File 'nope.md' not found in skill 'release'.");
        assert_eq!(
            v["available_files"],
            json!({"references": ["references/api.md"]})
        );
        let v = call(
            view,
            home.path(),
            json!({"name": "release", "file_path": "../../../config.yaml"}),
        );
        assert_eq!(v["error"], "Path traversal ('..') is not allowed.");
        let v = call(view, home.path(), json!({"name": "../skills/ops/release"}));
        assert_eq!(v["success"], false);
        let v = call(view, home.path(), json!({"name": "missing"}));
        assert_eq!(v["error"], "Skill 'missing' not found.");
        assert_eq!(v["available_skills"], json!(["release-notes"]));
        skill(home.path(), "dup/release", "x");
        let v = call(view, home.path(), json!({"name": "release"}));
        assert!(
            v["error"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Ambiguous skill name 'release': 2 skills"),
            "{v}"
        );
    }
}
