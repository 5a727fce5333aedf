//! The pre-run configuration check (docs/AGENT.md, "The pre-run check"), as Hermes 0.22
//! makes it before an agent job's agent starts (`cron.preflight: false` turns it off): a
//! job that cannot succeed is refused before it spends a model call — its provider
//! unknown, or a provider that needs a key without one; an attached skill whose declared
//! prerequisites are missing; a `deliver` or `failure_deliver` platform this build does
//! not know or has no credentials for. Only a clear verdict blocks: anything the check
//! cannot judge lets the run go on, and the run reports its own error. It reads config,
//! the environment and the skills, and never writes anything.

use std::path::Path;

use serde_yaml_ng::Value;

use jobs::target::Platform;
use jobs::Job;

use crate::agent::inference::{self, Backend, InferenceError, Vars};
use crate::agent::provider_registry;
use crate::agent::skills;
use crate::delivery::platforms;
use crate::environment::Environment;
use crate::runner::{GateNote, Preflight, RunOutcome, RunSignals};

/// Registry providers Hermes 0.22 runs without a key of their own: OpenRouter (its
/// missing key is an ordinary failure there), OpenAI-compatible servers and local ones.
const KEY_OPTIONAL: &[&str] = &["openrouter", "openai", "custom", "lmstudio"];

/// Why the job cannot run as configured; `Ok` when nothing clearly stands in its way.
pub fn check(job: &Job, env: &crate::runner::RunEnv) -> Result<(), String> {
    provider(job, env)?;
    skills_ready(job, &env.home, &env.world.vars)?;
    delivery(job, &env.world.environment)
}

/// The outcome of a blocked run: no model call, the reason as its error, and the
/// document Hermes 0.22 writes for it.
pub fn blocked(job: &Job, prompt: String, reason: String) -> RunOutcome {
    let detail = format!(
        "The pre-run configuration check found a problem, so the agent did not run (nothing was charged).\n\n**Reason:** {reason}\n\nThe job runs again at its next scheduled time; the first run that passes the check clears this state, and this alert is not repeated. Set `cron.preflight: false` in config.yaml to turn the check off."
    );
    RunOutcome {
        signals: RunSignals {
            gate: Some(GateNote {
                mode: None,
                status: "BLOCKED (configuration)".to_string(),
                detail: Some(detail),
            }),
            notice: Some(notice(job.name(), &reason)),
            preflight: Some(Preflight::Blocked(reason.clone())),
            ..RunSignals::default()
        },
        ..RunOutcome::failed(prompt, reason)
    }
}

/// The one alert a blocked job sends.
fn notice(name: &str, reason: &str) -> String {
    let reason = reason.trim_end();
    let stop = match reason.chars().last() {
        Some('.' | '!' | '?') => "",
        _ => ".",
    };
    format!(
        "⛔ Cron '{name}' did not run: {reason}{stop} Nothing was charged. It will try again at its next scheduled time and will not repeat this alert."
    )
}

/// The run's provider: unknown, or known and needing a key that is not set. A job that
/// follows the configuration may fall back (`fallback_providers`), so it is not judged;
/// a job with its own provider, model or endpoint never falls back.
fn provider(job: &Job, env: &crate::runner::RunEnv) -> Result<(), String> {
    let pinned = ["provider", "model", "base_url"]
        .iter()
        .any(|key| job.text_field(key).is_some());
    if !pinned && !env.world.config.fallback_providers.is_empty() {
        return Ok(());
    }
    let settings = match inference::resolve(job, &env.world.config, &env.world.vars, &env.home) {
        Ok(settings) => settings,
        Err(
            e
            @ (InferenceError::UnknownProvider { .. } | InferenceError::NotACustomProvider { .. }),
        ) => return Err(format!("provider credential missing: {e}")),
        Err(_) => return Ok(()),
    };
    if settings.backend != Backend::BuiltIn {
        return Ok(());
    }
    let Some(primary) = settings.endpoints.first() else {
        return Ok(());
    };
    let Some(known) = provider_registry::find(&primary.provider) else {
        return Ok(());
    };
    if primary.api_key.is_some() || KEY_OPTIONAL.contains(&known.id) || known.key_vars.is_empty() {
        return Ok(());
    }
    Err(format!(
        "provider credential missing: no usable credentials found for provider '{}'; set {} in {} (or the environment), or pin a working provider with 'hermes cron edit {} --provider <p>'",
        known.id,
        known.key_vars.join(" or "),
        env.home.join(".env").display(),
        job.id()
    ))
}

/// A skill's front matter declares what it needs set up (Hermes 0.22's readiness
/// fields): variables that must be set, and files that must exist in the home. A skill
/// that is missing altogether is not a block (the run says it is missing).
fn skills_ready(job: &Job, home: &Path, vars: &Vars) -> Result<(), String> {
    for (name, front) in skills::front_matters(home, &job.skills()) {
        let mut missing: Vec<String> = required_variables(&front)
            .into_iter()
            .filter(|var| vars.get(var).is_none())
            .map(|var| format!("env ${var}"))
            .collect();
        missing.extend(
            credential_files(&front)
                .into_iter()
                .filter(|file| !credential_file_exists(home, file))
                .map(|file| format!("credential file {file}")),
        );
        if !missing.is_empty() {
            return Err(format!(
                "attached skill '{name}' is not ready: missing {}. Provide the missing prerequisites or detach the skill from this job.",
                missing.join(", ")
            ));
        }
    }
    Ok(())
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
/// build, and with the variables its sender needs. `local`, `origin`, `all` and
/// webhooks are not judged.
fn delivery(job: &Job, env: &Environment) -> Result<(), String> {
    let deliver = job.deliver();
    let mut lanes = vec![deliver.clone()];
    if let Some(failure) = job.failure_deliver().filter(|f| f.trim() != deliver) {
        lanes.push(failure.trim().to_string());
    }
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
            let Some(platform) = Platform::parse(name) else {
                return Err(format!(
                    "delivery platform '{name}' is not a known cron delivery target. Fix the job's `deliver` value or configure the platform's credentials."
                ));
            };
            let unset: Vec<&str> = platforms::required_vars(platform)
                .iter()
                .copied()
                .filter(|var| env.get(var).is_none())
                .collect();
            if !unset.is_empty() {
                return Err(format!(
                    "delivery platform '{name}' has no credentials configured ({} not set). Set them in {}, or change the job's `deliver` target.",
                    unset.join(", "),
                    env.home()
                        .map(|h| h.join(".env").display().to_string())
                        .unwrap_or_else(|| ".env".to_string())
                ));
            }
        }
    }
    Ok(())
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

    #[test]
    fn the_notice_ends_its_reason_with_a_stop() {
        assert!(notice("n", "no key").contains("did not run: no key. Nothing was charged."));
        assert!(notice("n", "no key.").contains("did not run: no key. Nothing was charged."));
    }
}
