//! The one readiness judge: whether a job can run as configured, and why not. Preflight
//! (the pre-run check, [`crate::preflight`]), `add`'s and `edit`'s warnings and `doctor`
//! all ask [`judge`], so the same broken job gets the same reason from each; each
//! [`Finding`] says whether it blocks a run (preflight refuses the run before any model
//! call) or only warns (the run goes on and reports its own error). It reads config, the
//! environment and the skills, and never writes anything.
//!
//! What it judges, in this order:
//!
//! * **the provider** (agent jobs): an unknown provider blocks (the agent cannot start,
//!   whatever the fallbacks); a registry provider without its key blocks, unless the
//!   job follows the configuration and `fallback_providers` may take over, or the
//!   provider runs without a key of its own in Hermes 0.22 (OpenRouter, whose missing
//!   key is an ordinary failure there, OpenAI-compatible and local servers) — those, and
//!   a custom provider's unset `key_env`, warn; any other reason the agent cannot start
//!   (no model configured, …) and a spending cap the run's budget check will refuse warn,
//!   the run failing with the same words;
//! * **the skills**: an attached skill whose declared prerequisites (variables,
//!   credential files) are missing blocks; a skill missing altogether warns (the run
//!   says it is missing, as Hermes 0.22's does);
//! * **delivery**, of `deliver` and of `failure_deliver`: a platform this build does not
//!   know, or one without its credentials, blocks; a bare platform without its home
//!   channel, or a target that does not resolve, warns (the run's output is kept and
//!   its delivery failure recorded);
//! * **files**: a missing script or workdir warns.
//!
//! Where preflight and `doctor` disagreed before this judge, the stricter correct rule
//! was kept: an unknown provider blocks even with fallbacks configured (the run could
//! not start either way); a platform's credentials count when set under any name its
//! sender accepts (an alias included: preflight used to miss those, `doctor` did not);
//! `failure_deliver` is judged as `deliver` is (`doctor` used to skip it); missing skill
//! prerequisites are reported by `doctor` and `add` too (only preflight saw them); and
//! the reasons are preflight's (Hermes 0.22's) words everywhere.

use std::path::Path;

use serde_yaml_ng::Value;

use jobs::target::Platform;
use jobs::Job;

use crate::agent::budget::Spend;
use crate::agent::inference::{self, Backend, InferenceError, Vars};
use crate::agent::provider_registry;
use crate::agent::skills;
use crate::config::Config;
use crate::delivery::platforms;
use crate::delivery::sender::setting;
use crate::delivery::target::{unready, Unready};
use crate::environment::Environment;

/// Registry providers Hermes 0.22 runs without a key of their own: OpenRouter (its
/// missing key is an ordinary failure there), OpenAI-compatible servers and local ones.
const KEY_OPTIONAL: &[&str] = &["openrouter", "openai", "custom", "lmstudio"];

/// One thing that stands in a job's way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What is wrong and what to do, the same words from every caller.
    pub reason: String,
    /// The run cannot succeed: preflight refuses it before any model call.
    pub blocks: bool,
}

impl Finding {
    fn blocks(reason: String) -> Finding {
        Finding {
            reason,
            blocks: true,
        }
    }

    fn warns(reason: String) -> Finding {
        Finding {
            reason,
            blocks: false,
        }
    }
}

/// What a job is judged against: the home, its config.yaml and its environment.
pub struct Surroundings<'a> {
    pub home: &'a Path,
    pub config: &'a Config,
    /// The delivery variables (`.env` and the process environment).
    pub env: &'a Environment,
    /// The agent's variables (keys, models).
    pub vars: &'a Vars,
}

/// Everything that stands in the job's way, in the order above.
pub fn judge(job: &Job, around: &Surroundings<'_>) -> Vec<Finding> {
    let mut found = Vec::new();
    if job.kind().runs_agent() {
        provider(job, around, &mut found);
        skills_ready(job, around, &mut found);
    }
    delivery(job, around, &mut found);
    files(job, around.home, &mut found);
    found
}

/// The first reason the job cannot run at all (what preflight refuses it for).
pub fn blocked(job: &Job, around: &Surroundings<'_>) -> Option<String> {
    judge(job, around)
        .into_iter()
        .find(|f| f.blocks)
        .map(|f| f.reason)
}

/// Only the files (script, workdir): what still matters for a job that will not run
/// again by its schedule.
pub fn files_only(job: &Job, home: &Path) -> Vec<Finding> {
    let mut found = Vec::new();
    files(job, home, &mut found);
    found
}

/// The run's provider and model: see the module's doc for what blocks.
fn provider(job: &Job, around: &Surroundings<'_>, found: &mut Vec<Finding>) {
    let pinned = ["provider", "model", "base_url"]
        .iter()
        .any(|key| job.text_field(key).is_some());
    let may_fall_back = !pinned && !around.config.fallback_providers.is_empty();
    let agent = match inference::resolve(job, around.config, around.vars, around.home) {
        Ok(agent) => agent,
        Err(
            e
            @ (InferenceError::UnknownProvider { .. } | InferenceError::NotACustomProvider { .. }),
        ) => {
            found.push(Finding::blocks(format!("provider credential missing: {e}")));
            return;
        }
        Err(e) => {
            found.push(Finding::warns(format!("the agent cannot start: {e}")));
            return;
        }
    };
    if agent.backend != Backend::BuiltIn {
        return;
    }
    if let Err(refused) = Spend::for_run(job, around.config, &agent.endpoints) {
        found.push(Finding::warns(format!(
            "refused before any model request: {refused}"
        )));
    }
    let Some(primary) = agent.endpoints.first() else {
        return;
    };
    let Some(vars) = &primary.missing_key else {
        return;
    };
    let known = provider_registry::find(&primary.provider);
    let reason = format!(
        "provider credential missing: no usable credentials found for provider '{}'; set {vars} in {} (or the environment), or pin a working provider with 'hermes cron edit {} --provider <p>'",
        known.map_or(primary.provider.as_str(), |k| k.id),
        around.home.join(".env").display(),
        job.id()
    );
    let key_optional = known.is_none_or(|k| KEY_OPTIONAL.contains(&k.id));
    found.push(match may_fall_back || key_optional {
        true => Finding::warns(reason),
        false => Finding::blocks(reason),
    });
}

/// A skill's front matter declares what it needs set up (Hermes 0.22's readiness
/// fields): variables that must be set, and files that must exist in the home.
fn skills_ready(job: &Job, around: &Surroundings<'_>, found: &mut Vec<Finding>) {
    let home = around.home;
    let (_, missing_skills) = skills::load_skills(home, &job.skills());
    for (name, front) in skills::front_matters(home, &job.skills()) {
        let mut missing: Vec<String> = required_variables(&front)
            .into_iter()
            .filter(|var| around.vars.get(var).is_none())
            .map(|var| format!("env ${var}"))
            .collect();
        missing.extend(
            credential_files(&front)
                .into_iter()
                .filter(|file| !credential_file_exists(home, file))
                .map(|file| format!("credential file {file}")),
        );
        if !missing.is_empty() {
            found.push(Finding::blocks(format!(
                "attached skill '{name}' is not ready: missing {}. Provide the missing prerequisites or detach the skill from this job.",
                missing.join(", ")
            )));
        }
    }
    if !missing_skills.is_empty() {
        found.push(Finding::warns(format!(
            "missing skill(s): {}",
            missing_skills.join(", ")
        )));
    }
}

/// The non-optional variables a skill declares, in order, each once:
/// `required_environment_variables` (names or `{name, optional}`),
/// `setup.collect_secrets[].env_var` and `prerequisites.env_vars`.
fn required_variables(front: &Value) -> Vec<String> {
    let listed = |value: Option<&Value>| -> Vec<Value> {
        match value {
            Some(Value::Sequence(items)) => items.clone(),
            Some(item @ (Value::Mapping(_) | Value::String(_))) => vec![item.clone()],
            _ => Vec::new(),
        }
    };
    let mut entries: Vec<(Option<String>, bool)> = Vec::new();
    for item in listed(front.get("required_environment_variables")) {
        let name = item
            .as_str()
            .or_else(|| item.get("name").and_then(Value::as_str))
            .map(str::to_string);
        let optional = item
            .get("optional")
            .is_some_and(|o| o.as_bool().unwrap_or(!o.is_null()));
        entries.push((name, optional));
    }
    for item in listed(front.get("setup").and_then(|s| s.get("collect_secrets"))) {
        let name = item
            .get("env_var")
            .and_then(Value::as_str)
            .map(str::to_string);
        entries.push((name, false));
    }
    for item in listed(front.get("prerequisites").and_then(|p| p.get("env_vars"))) {
        entries.push((item.as_str().map(str::to_string), false));
    }
    let mut seen = std::collections::HashSet::new();
    entries
        .into_iter()
        .filter_map(|(name, optional)| Some((name?.trim().to_string(), optional)))
        .filter(|(name, _)| is_variable_name(name) && seen.insert(name.clone()))
        .filter(|(_, optional)| !optional)
        .map(|(name, _)| name)
        .collect()
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `required_credential_files`: paths in the home, as text or `{path}`/`{name}`.
fn credential_files(front: &Value) -> Vec<String> {
    let Some(Value::Sequence(items)) = front.get("required_credential_files") else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            item.as_str()
                .or_else(|| item.get("path").and_then(Value::as_str))
                .or_else(|| item.get("name").and_then(Value::as_str))
        })
        .map(str::trim)
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect()
}

/// A credential file counts when it is a file inside the home (an absolute path or one
/// that leads out never does).
fn credential_file_exists(home: &Path, relative: &str) -> bool {
    if Path::new(relative).is_absolute() {
        return false;
    }
    let (Ok(root), Ok(file)) = (home.canonicalize(), home.join(relative).canonicalize()) else {
        return false;
    };
    file.starts_with(root) && file.is_file()
}

/// Each platform of `deliver` and, when it differs, of `failure_deliver`: known to this
/// build, and with the variables its sender needs (blocks); then what else keeps the
/// `deliver` targets from resolving now (warns). `local`, `origin`, `all` and webhooks
/// are not judged by the first part.
fn delivery(job: &Job, around: &Surroundings<'_>, found: &mut Vec<Finding>) {
    let env = around.env;
    let dotenv = around.home.join(".env");
    let deliver = job.deliver();
    let mut lanes = vec![deliver.clone()];
    if let Some(failure) = job.failure_deliver().filter(|f| f.trim() != deliver) {
        lanes.push(failure.trim().to_string());
    }
    let mut judged: Vec<String> = Vec::new();
    for lane in &lanes {
        for part in lane.split(',').map(str::trim) {
            let lower = part.to_ascii_lowercase();
            if part.is_empty()
                || ["local", "origin", "all"].contains(&lower.as_str())
                || lower.starts_with("webhook:")
            {
                continue;
            }
            let name = part.split(':').next().unwrap_or("").trim();
            if judged.iter().any(|seen| seen.eq_ignore_ascii_case(name)) {
                continue;
            }
            judged.push(name.to_string());
            let Some(platform) = Platform::parse(name) else {
                found.push(Finding::blocks(format!(
                    "delivery platform '{name}' is not a known cron delivery target. Fix the job's `deliver` value or configure the platform's credentials."
                )));
                continue;
            };
            let unset: Vec<&str> = platforms::required_vars(platform)
                .iter()
                .copied()
                .filter(|var| setting(env, var).is_none())
                .collect();
            if !unset.is_empty() {
                found.push(Finding::blocks(format!(
                    "delivery platform '{name}' has no credentials configured ({} not set). Set them in {}, or change the job's `deliver` target.",
                    unset.join(", "),
                    dotenv.display()
                )));
            }
        }
    }
    let blocked = found
        .iter()
        .any(|f| f.blocks && f.reason.starts_with("delivery platform"));
    for unready in unready(job, env) {
        match unready {
            // A platform's credentials: judged above.
            Unready::Unset { platform, var }
                if platforms::required_vars(platform).contains(&var.as_str()) => {}
            Unready::Unset { platform, var } => found.push(Finding::warns(format!(
                "delivery to {platform} has no home channel: {var} is not set; add it to the environment or {}",
                dotenv.display()
            ))),
            // An unknown platform blocked above says it already.
            Unready::Target(_) if blocked => {}
            Unready::Target(error) => found.push(Finding::warns(error)),
        }
    }
}

/// The script and the workdir exist.
fn files(job: &Job, home: &Path, found: &mut Vec<Finding>) {
    let scripts_dir = home.join("scripts");
    if let Some(script) = job.script() {
        if crate::script::resolve_script(&scripts_dir, script).is_err() {
            found.push(Finding::warns(format!(
                "script '{script}' is missing from {}",
                scripts_dir.display()
            )));
        }
    }
    if let Some(workdir) = job.workdir() {
        if !Path::new(workdir).is_dir() {
            found.push(Finding::warns(format!("workdir does not exist: {workdir}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn a_skill_declares_its_variables_in_any_of_hermes_forms() {
        let front = yaml(
            "required_environment_variables:\n  - API_TOKEN\n  - {name: OPTIONAL_ONE, optional: true}\n  - {name: 'bad name'}\nsetup:\n  collect_secrets:\n    - {env_var: SECRET_TWO}\nprerequisites:\n  env_vars: [API_TOKEN, THIRD]\n",
        );
        assert_eq!(
            required_variables(&front),
            ["API_TOKEN", "SECRET_TWO", "THIRD"]
        );
        assert!(required_variables(&yaml("name: x")).is_empty());
    }
}
