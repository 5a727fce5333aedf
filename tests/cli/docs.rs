//! The docs as a reader follows them: every link from one of our Markdown files to another
//! (or to a heading of its own) lands on a file that exists and a heading that is there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A document's lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// The anchors of a document's headings, repeated headings numbered as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..].replace('`', ""));
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.insert(match *count {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        });
        *count += 1;
    }
    anchors
}

/// The targets of a document's inline links (`[text](target)`), code spans left out.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose(text) {
        let outside_code: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = outside_code.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                found.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    found
}

fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let docs = std::fs::read_dir(root.join("docs")).unwrap();
    for entry in docs {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn every_link_between_our_docs_lands_on_a_file_and_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown_files(root);
    let texts: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|f| {
            (
                f.canonicalize().unwrap(),
                std::fs::read_to_string(f).unwrap(),
            )
        })
        .collect();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (file, text) in &texts {
        for target in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() {
                file.clone()
            } else {
                match file.parent().unwrap().join(path).canonicalize() {
                    Ok(linked) => linked,
                    Err(_) => {
                        broken.push(format!("{}: {target}: no such file", file.display()));
                        continue;
                    }
                }
            };
            checked += 1;
            if anchor.is_empty() {
                continue;
            }
            let Some(linked_text) = texts.get(&linked) else {
                continue; // a link into a file that is not one of our docs (source, examples)
            };
            if !anchors(linked_text).contains(anchor) {
                broken.push(format!("{}: {target}: no such heading", file.display()));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links found: the scan is broken"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_knows_githubs_anchors() {
    let text = "# The agent\n## Budgets\n```\n# not a heading\n```\n### `cron.budget` and caps\n## Budgets\n";
    let found = anchors(text);
    let expected: BTreeSet<String> = ["the-agent", "budgets", "cronbudget-and-caps", "budgets-1"]
        .map(String::from)
        .into();
    assert_eq!(found, expected);
    assert_eq!(
        links("see [a](A.md#x) and `[b](B.md)` and [c](#y)"),
        ["A.md#x", "#y"]
    );
}
