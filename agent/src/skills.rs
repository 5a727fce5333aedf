//! Skills (docs/AGENT.md, "Skills"): a folder with a `SKILL.md` (YAML front matter `name`,
//! `description`, then the instructions) anywhere under `<home>/skills/`. A job's skills
//! are found by front-matter name, else folder name, and loaded in the job's order.
//! Reading only: a missing skill is reported to the caller, never an error here.

use std::path::{Path, PathBuf};

/// A skill found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub body: String,
}

/// Every `SKILL.md` under `root`, depth-first, in name order (so lookups are stable).
fn skill_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries.into_iter().rev() {
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "SKILL.md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Splits `---\nyaml\n---\nbody` into the front matter's `name` and the body.
fn split_front_matter(text: &str) -> (Option<String>, String) {
    let text = text.trim_start_matches('\u{feff}');
    let Some(rest) = text.strip_prefix("---") else {
        return (None, text.trim().to_string());
    };
    let Some(end) = rest.find("\n---") else {
        return (None, text.trim().to_string());
    };
    let yaml = &rest[..end];
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map_or("", |(_, b)| b);
    let name = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml)
        .ok()
        .and_then(|v| {
            v.get("name")
                .and_then(|n| n.as_str())
                .map(|n| n.trim().to_string())
        })
        .filter(|n| !n.is_empty());
    (name, body.trim().to_string())
}

/// One line of the skills index in the system message.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// The front-matter name, else the folder's.
    pub name: String,
    /// The front-matter `description` (may be empty).
    pub description: String,
    /// The folders between `skills/` and the skill's own folder (`general` when none),
    /// as Hermes groups its index.
    pub category: String,
    /// Where the `SKILL.md` is, so the model can read it.
    pub path: PathBuf,
}

/// Every skill under `<home>/skills/`, sorted by category then name, so the index
/// (and the system message that carries it) is the same bytes from run to run.
pub fn index(home: &Path) -> Vec<IndexEntry> {
    let root = home.join("skills");
    let mut entries: Vec<IndexEntry> = skill_files(&root)
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let (name, _) = split_front_matter(&text);
            let folder = path.parent()?;
            let category = folder
                .parent()
                .and_then(|parent| parent.strip_prefix(&root).ok())
                .map(|rel| rel.to_string_lossy().replace('\\', "/"))
                .filter(|rel| !rel.is_empty())
                .unwrap_or_else(|| "general".to_string());
            Some(IndexEntry {
                name: name.unwrap_or_else(|| {
                    folder
                        .file_name()
                        .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
                }),
                description: front_matter_text(&text, "description").unwrap_or_default(),
                category,
                path,
            })
        })
        .collect();
    entries.sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));
    entries.dedup_by(|a, b| a.category == b.category && a.name == b.name);
    entries
}

/// The YAML front matter of a `SKILL.md`, when it has one that parses.
pub fn front_matter(text: &str) -> Option<serde_yaml_ng::Value> {
    let rest = text.trim_start_matches('\u{feff}').strip_prefix("---")?;
    let yaml = &rest[..rest.find("\n---")?];
    serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml).ok()
}

/// A text field of the front matter, on one line.
pub fn front_matter_text(text: &str, key: &str) -> Option<String> {
    let value = front_matter(text)?;
    let field = value.get(key)?.as_str()?;
    Some(field.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Every skill on disk as (front-matter name, folder name, path).
type Catalogue = Vec<(Option<String>, String, PathBuf)>;

fn catalogue(home: &Path) -> Catalogue {
    skill_files(&home.join("skills"))
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let (name, _) = split_front_matter(&text);
            let folder = path.parent()?.file_name()?.to_string_lossy().into_owned();
            Some((name, folder, path))
        })
        .collect()
}

/// The text of the skill `want` names: by front-matter name, else by folder.
fn lookup(catalogue: &Catalogue, want: &str) -> Option<String> {
    let by_name = catalogue.iter().find(|(name, _, _)| {
        name.as_deref()
            .is_some_and(|n| n.eq_ignore_ascii_case(want))
    });
    let hit = by_name.or_else(|| catalogue.iter().find(|(_, folder, _)| folder == want))?;
    std::fs::read_to_string(&hit.2).ok()
}

/// Loads `wanted` in order from `<home>/skills/`. Returns the skills found and the
/// names that were not.
pub fn load_skills(home: &Path, wanted: &[String]) -> (Vec<Skill>, Vec<String>) {
    if wanted.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let catalogue = catalogue(home);
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for want in wanted {
        match lookup(&catalogue, want) {
            Some(text) => found.push(Skill {
                name: want.clone(),
                body: split_front_matter(&text).1,
            }),
            None => missing.push(want.clone()),
        }
    }
    (found, missing)
}

/// The front matter of each of `wanted` that is found and has one, in order, with the
/// name it was asked by.
pub fn front_matters(home: &Path, wanted: &[String]) -> Vec<(String, serde_yaml_ng::Value)> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let catalogue = catalogue(home);
    wanted
        .iter()
        .filter_map(|want| Some((want.clone(), front_matter(&lookup(&catalogue, want)?)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_found_by_front_matter_name_or_folder() {
        let home = tempfile::tempdir().unwrap();
        let a = home.path().join("skills/research/deep-dive");
        let b = home.path().join("skills/plain");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(
            a.join("SKILL.md"),
            "---\nname: arxiv\ndescription: papers\n---\nSearch arXiv.\n",
        )
        .unwrap();
        std::fs::write(b.join("SKILL.md"), "Just do it.").unwrap();
        let (found, missing) = load_skills(
            home.path(),
            &["plain".into(), "arxiv".into(), "nope".into()],
        );
        assert_eq!(found[0].body, "Just do it.");
        assert_eq!(found[1].name, "arxiv");
        assert_eq!(found[1].body, "Search arXiv.");
        assert_eq!(missing, vec!["nope"]);
    }
}
