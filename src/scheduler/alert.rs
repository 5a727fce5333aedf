//! Alert once (docs/DELIVERY.md, "Failure notices and incidents"): a failed run joins
//! the incident of its job and error; its notice goes out only when that incident is
//! neither acknowledged nor alerted within `cron.failure_repeat_alert_hours`, and a
//! notice that reached its destination marks the incident alerted. A good run resolves
//! the job's open incidents. The store keeps the incidents; one that cannot be reached
//! never holds a notice back.

use jobs::incident::{is_blocked_config, NewIncident, Transition};
use jobs::{Context, Job};

use super::settings::CronSettings;
use super::Scheduler;
use crate::delivery::DeliveryReport;

/// The incident a failed run joined, and whether its notice stays quiet.
pub(super) struct Joined {
    id: String,
    /// Why the notice is withheld (for the ledger's delivery column), or `None`.
    withheld: Option<String>,
}

impl Joined {
    /// The report of a delivery that was withheld, when it is.
    pub(super) fn withheld(&self) -> Option<DeliveryReport> {
        self.withheld.as_ref().map(|why| DeliveryReport {
            summary: why.clone(),
            ..DeliveryReport::default()
        })
    }
}

impl Scheduler {
    /// Records the failure in its incident (none for a run blocked by configuration:
    /// that alerts once by its own rule).
    pub(super) async fn join_incident(
        &self,
        job: &Job,
        error: &str,
        output: Option<&str>,
        ctx: &Context,
        settings: &CronSettings,
    ) -> Option<Joined> {
        if is_blocked_config(error) {
            return None;
        }
        let new = NewIncident::of(job.id(), error, output, ctx.now, ctx.zone);
        let incident = match self.store().record_incident(&new).await {
            Ok(incident) => incident,
            Err(e) => {
                tracing::warn!(
                    job = job.id(),
                    "cannot record the failure's incident (its notice goes out): {e}"
                );
                return None;
            }
        };
        let withheld = incident
            .withholds_notice(settings.failure_repeat_alert, ctx.now)
            .then(|| format!("withheld: incident {} is {}", incident.id, incident.state));
        Some(Joined {
            id: incident.id,
            withheld,
        })
    }

    /// After the notice: if it reached a destination (nothing failed, something was
    /// sent), the incident is alerted and its quiet window starts again.
    pub(super) async fn note_alert(&self, joined: &Joined, report: &DeliveryReport, ctx: &Context) {
        let left = report.error.is_none() && report.summary.starts_with("sent");
        if joined.withheld.is_some() || !left {
            return;
        }
        let moved = self
            .store()
            .move_incident(&joined.id, Transition::Alerted, ctx.now, ctx.zone)
            .await;
        if let Err(e) = moved {
            tracing::warn!(incident = %joined.id, "cannot mark the incident alerted: {e}");
        }
    }

    /// A good run: the job's open incidents are resolved.
    pub(super) async fn resolve_incidents(&self, job: &Job, ctx: &Context) {
        let resolved = self
            .store()
            .resolve_incidents(job.id(), ctx.now, ctx.zone)
            .await;
        match resolved {
            Ok(0) => {}
            Ok(n) => tracing::info!(job = job.id(), "{n} incident(s) resolved by a good run"),
            Err(e) => tracing::warn!(job = job.id(), "cannot resolve the job's incidents: {e}"),
        }
    }
}
