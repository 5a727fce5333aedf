//! The pre-run configuration check (docs/AGENT.md, "The pre-run check"), as Hermes 0.22
//! makes it before an agent job's agent starts (`cron.preflight: false` turns it off): a
//! job that cannot succeed is refused before it spends a model call, for the first
//! reason the one readiness judge ([`crate::readiness`]) says blocks it — the same
//! words `add`'s warnings and `doctor` give. Only a clear verdict blocks: anything the
//! judge only warns about lets the run go on, and the run reports its own error.

use jobs::Job;

use crate::readiness::{self, Surroundings};
use crate::runner::{GateNote, Preflight, RunOutcome, RunSignals};

/// Why the job cannot run as configured ([`crate::readiness`]'s first blocking
/// reason); `Ok` when nothing clearly stands in its way.
pub fn check(job: &Job, env: &crate::runner::RunEnv) -> Result<(), String> {
    let around = Surroundings {
        home: &env.home,
        config: &env.world.config,
        env: &env.world.environment,
        vars: &env.world.vars,
    };
    match readiness::blocked(job, &around) {
        Some(reason) => Err(reason),
        None => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_ends_its_reason_with_a_stop() {
        assert!(notice("n", "no key").contains("did not run: no key. Nothing was charged."));
        assert!(notice("n", "no key.").contains("did not run: no key. Nothing was charged."));
    }
}
