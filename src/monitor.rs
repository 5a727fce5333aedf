//! Monitor jobs (docs/AGENT.md, "Monitor jobs"): before any agent machinery, run the
//! job's monitor source (`monitor_script`, run like `script`, or a bounded GET of
//! `monitor_url`), hash its output and compare with the hash of the last change. The
//! same output wakes nothing; a first or changed output is reported to the scheduler,
//! which records it (hash in the job, text as the job's monitor snapshot) *before* the
//! agent runs, and handed to it as the baseline or change block Hermes 0.22 writes. A
//! failed source changes nothing stored. It never calls a model, never delivers and
//! never touches the store.

mod unified_diff;

use std::time::Duration;

use sha2::{Digest, Sha256};

use jobs::fields::MonitorSource;
use jobs::Job;

use crate::runner::{MonitorChange, RunEnv};
use crate::script::{run_for_job, ScriptResult};

/// The diff shown to the agent is cut at this many characters.
const MAX_DIFF_CHARS: usize = 4000;
/// The current output shown to the agent is cut at this many characters.
const MAX_OUTPUT_CHARS: usize = 8000;
/// A monitor URL must answer within this.
const URL_TIMEOUT: Duration = Duration::from_secs(30);
/// At most this much of a monitor URL's body is read (256 KiB).
const MAX_URL_BYTES: usize = 262_144;

/// What a monitor source's output means for this run.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The source failed with this error: the run fails, nothing is stored.
    Failed(String),
    /// The output is the one seen last: no agent, no delivery.
    Unchanged,
    /// A first or changed output, recorded already: the agent runs with this block as
    /// its run context.
    Wake(String),
}

/// Runs the job's monitor source and decides whether its agent runs.
pub async fn check(job: &Job, source: MonitorSource<'_>, env: &RunEnv) -> Verdict {
    let output = match source {
        MonitorSource::Script(script) => match run_for_job(job, script, env).await {
            ScriptResult::Output(out) => python_strip(&out).to_string(),
            ScriptResult::Failed(error) => return Verdict::Failed(error),
        },
        MonitorSource::Url(url) => match fetch(url, &env.world.config.delivery).await {
            Ok(body) => body,
            Err(error) => return Verdict::Failed(error),
        },
    };
    let hash = hex::encode(Sha256::digest(output.as_bytes()));
    let last = job.monitor_state().map(|state| state.last_output_hash);
    if last.as_deref() == Some(hash.as_str()) {
        return Verdict::Unchanged;
    }
    let block = match last {
        None => baseline_block(&output),
        Some(_) => {
            let previous = env.store.monitor_snapshot(job.id()).await;
            let previous = previous.unwrap_or_else(|e| {
                tracing::warn!(job = job.id(), "cannot read the monitor snapshot: {e}");
                None
            });
            change_block(&previous.unwrap_or_default(), &output)
        }
    };
    env.reports
        .monitor_changed(job, MonitorChange { hash, output })
        .await;
    Verdict::Wake(block)
}

/// What Python's `str.strip()` removes, which Hermes 0.22's script runner applies to a
/// script's output before it is hashed: Unicode whitespace and the four separator
/// controls Python also counts as space.
fn python_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// A bounded GET of the monitor URL: http(s) only, to public addresses only (the
/// outbound-address policy of deliveries, `delivery.allow_private_targets` and its
/// allow-list included, checked after resolving and pinned), 30 s, the first 256 KiB of
/// the body decoded as UTF-8 (undecodable bytes replaced). An error status is a failure,
/// and so is a redirect: it is not followed (its target was never checked), and its empty
/// body would otherwise pass for the page.
async fn fetch(url: &str, delivery: &crate::config::DeliverySection) -> Result<String, String> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!("monitor_url must be http(s): '{url}'"));
    }
    let failed = |e: &dyn std::fmt::Display| {
        crate::outbound::redact_url_secrets(url, &format!("monitor_url fetch failed: {e}"))
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| failed(&e))?;
    let policy =
        crate::outbound::AddressPolicy::for_delivery(delivery, crate::outbound::Door::MonitorUrl);
    let addresses = policy.addresses(&parsed).await.map_err(|e| failed(&e))?;
    let builder = reqwest::Client::builder()
        .timeout(URL_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("hermes-cron-monitor");
    let client = crate::outbound::pinned(builder, &parsed, &addresses)
        .build()
        .map_err(|e| failed(&e))?;
    let mut response = client
        .get(parsed.clone())
        .send()
        .await
        .map_err(|e| failed(&e))?;
    let status = response.status();
    if status.is_redirection() {
        let target = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .map(|location| {
                parsed
                    .join(location)
                    .map_or(location.to_string(), String::from)
            });
        return Err(failed(&match target {
            Some(target) => format!(
                "the URL redirected (HTTP {}) to {target}; redirects are not followed: set the monitor URL to where it points",
                status.as_u16()
            ),
            None => format!(
                "the URL answered HTTP {} {} instead of a page; give a URL that answers with the page itself",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            ),
        }));
    }
    if status.is_client_error() || status.is_server_error() {
        return Err(failed(&format!(
            "HTTP Error {}: {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )));
    }
    let mut body = Vec::new();
    while body.len() <= MAX_URL_BYTES {
        match response.chunk().await.map_err(|e| failed(&e))? {
            Some(chunk) => body.extend_from_slice(&chunk),
            None => break,
        }
    }
    body.truncate(MAX_URL_BYTES);
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The notice a failed monitor source delivers, as Hermes 0.22 words its alert.
pub fn failure_notice(job: &Job, error: &str, env: &RunEnv) -> String {
    let time = env
        .ctx
        .now
        .with_timezone(&job.zone(&env.ctx))
        .format("%Y-%m-%d %H:%M:%S");
    format!(
        "⚠ Cron monitor '{}' source failed\n\n{error}\n\nTime: {time}",
        job.name()
    )
}

/// The first `limit` characters of `text`, then `marker` when it was longer.
fn capped(text: &str, limit: usize, marker: &str) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}{marker}", &text[..at]),
        None => text.to_string(),
    }
}

fn current_output(output: &str) -> String {
    let shown = capped(output, MAX_OUTPUT_CHARS, "\n... [output truncated]");
    format!("### Current output\n\n```\n{shown}\n```")
}

/// The block of a monitor's first observation, as Hermes 0.22 writes it.
fn baseline_block(output: &str) -> String {
    format!(
        "## Monitor Baseline (first run)\n\nThis is the first observation of the monitored source — there is no previous output to diff against.\n\n{}",
        current_output(output)
    )
}

/// The block of a changed output, with the diff from the previous one, as Hermes 0.22
/// writes it.
fn change_block(previous: &str, output: &str) -> String {
    let diff = unified_diff::unified_diff(previous, output, "previous", "current");
    let diff = capped(&diff, MAX_DIFF_CHARS, "\n... [diff truncated]");
    format!(
        "## MONITOR CHANGE DETECTED\n\nThe monitored source's output changed since the last run.\n\n### Diff (previous → current)\n\n```diff\n{diff}\n```\n\n{}",
        current_output(output)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocks_read_as_hermes_0_22_writes_them() {
        assert_eq!(
            baseline_block("v1"),
            "## Monitor Baseline (first run)\n\nThis is the first observation of the monitored source — there is no previous output to diff against.\n\n### Current output\n\n```\nv1\n```"
        );
        assert_eq!(
            change_block("v1", "v2\nline2"),
            "## MONITOR CHANGE DETECTED\n\nThe monitored source's output changed since the last run.\n\n### Diff (previous → current)\n\n```diff\n--- previous\n+++ current\n@@ -1 +1,2 @@\n-v1\n+v2\n+line2\n```\n\n### Current output\n\n```\nv2\nline2\n```"
        );
    }

    #[test]
    fn long_diffs_and_outputs_are_cut_by_characters() {
        let old = "é\n".repeat(3000);
        let new = "ü\n".repeat(9000);
        let block = change_block(&old, &new);
        assert!(block.contains("\n... [diff truncated]\n```"));
        assert!(block.ends_with("\n... [output truncated]\n```"));
        let shown = block
            .split("### Current output\n\n```\n")
            .nth(1)
            .and_then(|rest| rest.split("\n... [output truncated]").next())
            .unwrap_or("");
        assert_eq!(shown.chars().count(), 8000);
    }

    #[test]
    fn the_hash_is_of_the_output_stripped_as_python_strips_it() {
        assert_eq!(python_strip(" \u{1f}v1\n\n"), "v1");
        // A script printing `v2` and `line2`, as Hermes 0.22 stored its hash.
        assert_eq!(
            hex::encode(Sha256::digest(python_strip("v2\nline2\n").as_bytes())),
            "8767e25ee17234a5fd692c510ed92dd52c3b1aad1ed32fb82f852fdedd1e8e81"
        );
    }
}
