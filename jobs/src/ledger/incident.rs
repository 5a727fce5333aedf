//! Failure incidents (docs/STORE.md, "Incidents"): the failed runs of a job grouped by
//! what went wrong, so one error alerts once instead of on every run. The rules live here
//! once — the signature, the states, when a repeat stays quiet — and every store applies
//! them the same way ([`upserted`], [`moved`]); [`IncidentBook`] is the SQLite table
//! `cron_incidents` of `cron/executions.db`, the one Python Hermes 0.22 keeps.
//! Nothing here reads the clock or sends anything.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use regex::Regex;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};

use schedules::format_instant;

use crate::ledger::{in_file, open_table, LedgerError};

/// Where an incident is in its life. `Closed` (acknowledged) is the only end: a repeat
/// of a `Resolved` error opens it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncidentState {
    /// Seen, no notice has reached anyone yet.
    Detected,
    /// A failure notice left for it (`alerted_at`).
    Alerted,
    /// The job ran fine afterwards.
    Resolved,
    /// Acknowledged: this error stays quiet until its text changes.
    Closed,
}

impl IncidentState {
    pub const ALL: [IncidentState; 4] = [
        IncidentState::Detected,
        IncidentState::Alerted,
        IncidentState::Resolved,
        IncidentState::Closed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IncidentState::Detected => "detected",
            IncidentState::Alerted => "alerted",
            IncidentState::Resolved => "resolved",
            IncidentState::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Option<IncidentState> {
        IncidentState::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// One row of `cron_incidents`, as Python Hermes 0.22 writes it (times are ISO-8601
/// text with an offset; `state` is kept as written).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Incident {
    pub id: String,
    pub job_id: String,
    pub error_sig: String,
    pub state: String,
    pub failure_type: String,
    pub first_seen_at: String,
    pub last_seen_at: String,
    pub acked_at: Option<String>,
    pub alerted_at: Option<String>,
    pub closed_at: Option<String>,
    pub error: String,
    pub output_file: Option<String>,
}

impl Incident {
    pub fn state(&self) -> Option<IncidentState> {
        IncidentState::parse(&self.state)
    }

    /// Whether a failure notice for this incident stays quiet: it is acknowledged, or a
    /// notice left less than `repeat_after` ago (`None`: every failure alerts). An
    /// `alerted_at` that cannot be read lets the notice go rather than swallow it.
    pub fn withholds_notice(
        &self,
        repeat_after: Option<chrono::Duration>,
        now: DateTime<Utc>,
    ) -> bool {
        match self.state() {
            Some(IncidentState::Closed) => true,
            Some(IncidentState::Alerted) => {
                let last = self
                    .alerted_at
                    .as_deref()
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
                match (repeat_after, last) {
                    (Some(window), Some(last)) => now - last.with_timezone(&Utc) < window,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// A failed run, to be grouped into its incident.
#[derive(Debug, Clone, PartialEq)]
pub struct NewIncident {
    pub id: String,
    pub job_id: String,
    pub error_sig: String,
    pub failure_type: String,
    /// The error as kept: at most [`MAX_ERROR_CHARS`].
    pub error: String,
    pub output_file: Option<String>,
    /// When it was seen.
    pub at: DateTime<Utc>,
    /// The zone `at` is written in (the configured one): incident times are stored as
    /// zoned ISO text, as Python Hermes 0.22 writes them.
    pub zone: Tz,
}

/// The longest error text an incident keeps.
pub const MAX_ERROR_CHARS: usize = 500;
/// How much of the normalized error the signature reads.
const SIGNATURE_CHARS: usize = 200;

/// Measured durations ("idle for 603s", "retry in 12.5 seconds") differ from run to run
/// for the same failure, so the signature masks them; other numbers (status codes) count.
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b\d+(?:\.\d+)?\s*(?:ms|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b")
        .unwrap_or_else(|e| panic!("the duration pattern does not compile: {e}"))
});
static SPACES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s+").unwrap_or_else(|e| panic!("the whitespace pattern does not compile: {e}"))
});

/// What failure types are told by, in order: the first that matches names it. A pattern
/// in `\b…\b` is a word match, any other a substring of the normalized error.
const FAILURE_TYPES: &[(&str, &[&str])] = &[
    (
        "rate_limit",
        &[r"\b429\b", "rate limit", "usage limit", "quota"],
    ),
    ("timeout", &["timeout", "timed out"]),
    (
        "auth",
        &[r"\b401\b", "unauthorized", "authentication", "auth"],
    ),
    ("delivery", &["delivery", "deliver", "delivering"]),
    ("config", &["config", "configuration", "validation"]),
    ("script", &["script", "no_agent"]),
    ("agent", &["agent", "model", "provider", "inference"]),
];

/// Whitespace runs made one space, trimmed, lower-cased.
fn normalized(error: &str) -> String {
    SPACES.replace_all(error, " ").trim().to_lowercase()
}

/// `sha256(job_id + normalized error)[:12]`, the error's durations masked to `#s` and
/// cut at 200 characters: the same job failing the same way gets the same signature.
pub fn signature(job_id: &str, error: &str) -> String {
    let masked = DURATION.replace_all(&normalized(error), "#s").into_owned();
    let cut: String = masked.chars().take(SIGNATURE_CHARS).collect();
    let digest = Sha256::new()
        .chain_update(job_id.as_bytes())
        .chain_update(cut.as_bytes())
        .finalize();
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The incident of a job's signature: the job id's first six characters, `_`, the
/// signature.
pub fn incident_id(job_id: &str, signature: &str) -> String {
    let prefix: String = job_id.chars().take(6).collect();
    format!("{prefix}_{signature}")
}

/// How a failed model call's error starts (`ModelCallFailed` in the agent). What follows
/// quotes the server's answer, whose words ("description", "config") say nothing about
/// the run's script or configuration.
const MODEL_CALL_FAILED: &str = "model call failed";
/// The kinds a model's own answer can be read as; any other model failure is `agent`.
const MODEL_ANSWER_TYPES: &[&str] = &["rate_limit", "timeout", "auth"];

/// The kind of failure an error reads as (`unknown` when nothing matches).
pub fn failure_type(error: &str) -> &'static str {
    let text = normalized(error);
    let model_call = text.starts_with(MODEL_CALL_FAILED);
    for (kind, patterns) in FAILURE_TYPES {
        if model_call && !MODEL_ANSWER_TYPES.contains(kind) {
            continue;
        }
        let hit = patterns
            .iter()
            .any(|pattern| match pattern.strip_prefix(r"\b") {
                Some(word) => {
                    let word = word.trim_end_matches(r"\b");
                    text.match_indices(word).any(|(at, _)| {
                        let before = text[..at].chars().next_back();
                        let after = text[at + word.len()..].chars().next();
                        !before.is_some_and(is_word) && !after.is_some_and(is_word)
                    })
                }
                None => text.contains(pattern),
            });
        if hit {
            return kind;
        }
    }
    if model_call {
        return "agent";
    }
    "unknown"
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A run refused before its agent started for a configuration the user must fix: it
/// alerts once by its own rule and opens no incident.
pub fn is_blocked_config(error: &str) -> bool {
    error.contains("[blocked_config")
}

impl NewIncident {
    /// The incident a failure of `job_id` with `error` belongs to, seen `at` (written in
    /// `zone`).
    pub fn of(
        job_id: &str,
        error: &str,
        output_file: Option<&str>,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> NewIncident {
        let error_sig = signature(job_id, error);
        NewIncident {
            id: incident_id(job_id, &error_sig),
            job_id: job_id.to_string(),
            error_sig,
            failure_type: failure_type(error).to_string(),
            error: error.chars().take(MAX_ERROR_CHARS).collect(),
            output_file: output_file.map(str::to_string),
            at,
            zone,
        }
    }
}

/// The incident after another failure of its signature: a new one is `detected`; a
/// known one is seen again (its error and output refreshed) in its state, except that a
/// `resolved` one opens again as `detected`, its alert and close forgotten.
pub fn upserted(existing: Option<&Incident>, new: &NewIncident) -> Incident {
    let seen = format_instant(new.at, new.zone);
    let Some(existing) = existing else {
        return Incident {
            id: new.id.clone(),
            job_id: new.job_id.clone(),
            error_sig: new.error_sig.clone(),
            state: IncidentState::Detected.as_str().to_string(),
            failure_type: new.failure_type.clone(),
            first_seen_at: seen.clone(),
            last_seen_at: seen,
            acked_at: None,
            alerted_at: None,
            closed_at: None,
            error: new.error.clone(),
            output_file: new.output_file.clone(),
        };
    };
    let mut incident = existing.clone();
    incident.last_seen_at = seen;
    incident.error = new.error.clone();
    incident.output_file = new.output_file.clone();
    if existing.state() == Some(IncidentState::Resolved) {
        incident.state = IncidentState::Detected.as_str().to_string();
        incident.alerted_at = None;
        incident.closed_at = None;
    }
    incident
}

/// What happens to an incident besides another failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// A failure notice for it left (every notice stamps `alerted_at` anew).
    Alerted,
    /// The user acknowledged it (`hermes cron incidents ack`): closed for good.
    Acked,
    /// Its job ran fine: an open (detected or alerted) incident is resolved.
    Recovered,
}

/// The incident after `transition` at `at` (written in `zone`), or `None` when it does not
/// apply (a closed incident never changes; only open ones recover).
pub fn moved(
    current: &Incident,
    transition: Transition,
    at: DateTime<Utc>,
    zone: Tz,
) -> Option<Incident> {
    let state = current.state();
    if state == Some(IncidentState::Closed) {
        return None;
    }
    let at = format_instant(at, zone);
    let mut incident = current.clone();
    let set = |incident: &mut Incident, to: IncidentState| incident.state = to.as_str().to_string();
    match transition {
        Transition::Alerted => {
            set(&mut incident, IncidentState::Alerted);
            incident.alerted_at = Some(at);
        }
        Transition::Acked => {
            set(&mut incident, IncidentState::Closed);
            incident.closed_at = Some(at.clone());
            incident.acked_at = Some(at);
        }
        Transition::Recovered => {
            if !matches!(
                state,
                Some(IncidentState::Detected | IncidentState::Alerted)
            ) {
                return None;
            }
            set(&mut incident, IncidentState::Resolved);
            incident.closed_at = Some(at);
        }
    }
    Some(incident)
}

/// Newest activity first (by instant: the offsets of the stored times may differ), then
/// by text and id, as Python Hermes lists them.
pub fn sort_newest_first(incidents: &mut [Incident]) {
    let instant = |i: &Incident| DateTime::parse_from_rfc3339(&i.last_seen_at).ok();
    incidents.sort_by(|a, b| {
        (instant(b), &b.last_seen_at, &b.id).cmp(&(instant(a), &a.last_seen_at, &a.id))
    });
}

/// Python Hermes 0.22's table, with its index names: either side reads the other's rows.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cron_incidents (
     id            TEXT PRIMARY KEY,
     job_id        TEXT NOT NULL,
     error_sig     TEXT NOT NULL,
     state         TEXT NOT NULL,
     failure_type  TEXT NOT NULL DEFAULT 'unknown',
     first_seen_at TEXT NOT NULL,
     last_seen_at  TEXT NOT NULL,
     acked_at      TEXT,
     alerted_at    TEXT,
     closed_at     TEXT,
     error         TEXT NOT NULL,
     output_file   TEXT
);
CREATE INDEX IF NOT EXISTS idx_cron_incidents_job ON cron_incidents(job_id);
CREATE INDEX IF NOT EXISTS idx_cron_incidents_state ON cron_incidents(state);
";

const COLUMNS: &str = "id, job_id, error_sig, state, failure_type, first_seen_at, last_seen_at, \
    acked_at, alerted_at, closed_at, error, output_file";

fn incident_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Incident> {
    Ok(Incident {
        id: r.get(0)?,
        job_id: r.get(1)?,
        error_sig: r.get(2)?,
        state: r.get(3)?,
        failure_type: r.get(4)?,
        first_seen_at: r.get(5)?,
        last_seen_at: r.get(6)?,
        acked_at: r.get(7)?,
        alerted_at: r.get(8)?,
        closed_at: r.get(9)?,
        error: r.get(10)?,
        output_file: r.get(11)?,
    })
}

/// `cron_incidents` in `cron/executions.db`. Each change reads and writes its rows in
/// one immediate transaction, so two processes never interleave on one incident.
pub struct IncidentBook {
    conn: Connection,
    path: PathBuf,
}

impl IncidentBook {
    pub fn open(path: &Path) -> Result<IncidentBook, LedgerError> {
        // Tables of Python builds from before the alert-once rule lack `alerted_at`.
        let conn = open_table(path, SCHEMA, "cron_incidents", &[("alerted_at", "TEXT")])?;
        // Python Hermes writes this table with synchronous=FULL: an incident is a promise
        // about alerts, kept as durably as it keeps it.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(in_file(path))?;
        Ok(IncidentBook {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Applies `change` to the rows `select` (with `param`) gives, in one transaction,
    /// writing back the ones it returns.
    fn change(
        &mut self,
        select: &str,
        param: &str,
        change: &mut dyn FnMut(Vec<Incident>) -> Vec<Incident>,
    ) -> Result<Vec<Incident>, LedgerError> {
        let wrap = in_file(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&wrap)?;
        let rows = {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM cron_incidents WHERE {select}"
                ))
                .map_err(&wrap)?;
            let rows = stmt
                .query_map([param], incident_row)
                .map_err(&wrap)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(&wrap)?;
            rows
        };
        let changed = change(rows);
        for i in &changed {
            tx.execute(
                &format!(
                    "INSERT INTO cron_incidents ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                     ON CONFLICT(id) DO UPDATE SET state = excluded.state,
                         last_seen_at = excluded.last_seen_at, acked_at = excluded.acked_at,
                         alerted_at = excluded.alerted_at, closed_at = excluded.closed_at,
                         error = excluded.error, output_file = excluded.output_file"
                ),
                params![
                    i.id,
                    i.job_id,
                    i.error_sig,
                    i.state,
                    i.failure_type,
                    i.first_seen_at,
                    i.last_seen_at,
                    i.acked_at,
                    i.alerted_at,
                    i.closed_at,
                    i.error,
                    i.output_file
                ],
            )
            .map_err(&wrap)?;
        }
        tx.commit().map_err(&wrap)?;
        Ok(changed)
    }

    /// See [`crate::store::Notes::record_incident`].
    pub fn record(&mut self, new: &NewIncident) -> Result<Incident, LedgerError> {
        let changed = self.change("id = ?1", &new.id, &mut |rows| {
            vec![upserted(rows.first(), new)]
        })?;
        changed
            .into_iter()
            .next()
            .ok_or_else(|| in_file(&self.path)(rusqlite::Error::QueryReturnedNoRows))
    }

    /// See [`crate::store::Notes::move_incident`].
    pub fn move_one(
        &mut self,
        id: &str,
        to: Transition,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<bool, LedgerError> {
        let changed = self.change("id = ?1", id, &mut |rows| {
            rows.iter().filter_map(|i| moved(i, to, at, zone)).collect()
        })?;
        Ok(!changed.is_empty())
    }

    /// See [`crate::store::Notes::resolve_incidents`]. A job with nothing open (the
    /// common case, on every good run) costs one read and no write.
    pub fn resolve_job(
        &mut self,
        job_id: &str,
        at: DateTime<Utc>,
        zone: Tz,
    ) -> Result<usize, LedgerError> {
        let open: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM cron_incidents
                     WHERE job_id = ?1 AND state IN ('detected', 'alerted'))",
                [job_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(in_file(&self.path))?
            .unwrap_or(false);
        if !open {
            return Ok(0);
        }
        let changed = self.change("job_id = ?1", job_id, &mut |rows| {
            rows.iter()
                .filter_map(|i| moved(i, Transition::Recovered, at, zone))
                .collect()
        })?;
        Ok(changed.len())
    }

    /// See [`crate::store::Notes::incidents`].
    pub fn list(&self, state: Option<IncidentState>) -> Result<Vec<Incident>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM cron_incidents WHERE (?1 IS NULL OR state = ?1)"
            ))
            .map_err(in_file(&self.path))?;
        let mut rows = stmt
            .query_map([state.map(IncidentState::as_str)], incident_row)
            .map_err(in_file(&self.path))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(in_file(&self.path))?;
        sort_newest_first(&mut rows);
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_python_hermes_own() {
        // The values Python Hermes 0.22's incidents._error_signature gives.
        let a = signature(
            "abcdef123456",
            "Provider  error: HTTP 500\nafter 12.5 seconds",
        );
        let b = signature("abcdef123456", "provider error: http 500 after 3s");
        assert_eq!(a, b);
        assert_eq!(a, "f045d6f7685b");
        assert_eq!(signature("x", "Ünïcode  ÉRROR 10ms"), "a908f6f3a9d0");
        assert_ne!(
            a,
            signature("abcdef123456", "provider error: http 502 after 3s")
        );
        assert_eq!(incident_id("abcdef123456", &a), format!("abcdef_{a}"));
    }

    #[test]
    fn failure_types_are_told_by_their_first_matching_keyword() {
        assert_eq!(failure_type("HTTP 429 Too Many Requests"), "rate_limit");
        assert_eq!(failure_type("request timed out"), "timeout");
        assert_eq!(failure_type("HTTP 401"), "auth");
        assert_eq!(failure_type("error 4010"), "unknown");
        assert_eq!(failure_type("script exited with status 3"), "script");
        assert_eq!(failure_type("the model said no"), "agent");
        // A model's answer quoted in the error is not the run's script or configuration.
        assert_eq!(
            failure_type("model call failed: invalid_response (custom m at http://h/v1): invalid_response: HTTP 400: a tool description is missing from the config"),
            "agent"
        );
        assert_eq!(
            failure_type("model call failed: rate_limit (custom m at http://h/v1): rate_limit: HTTP 429: slow down"),
            "rate_limit"
        );
        assert_eq!(failure_type(""), "unknown");
    }

    fn instant(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    fn new(at: &str) -> NewIncident {
        NewIncident::of("abcdef123456", "boom", None, instant(at), chrono_tz::UTC)
    }

    /// Incident times are written as zoned ISO text in the zone given, as Python Hermes
    /// 0.22 writes them (whole seconds, the zone's offset).
    #[test]
    fn incident_times_are_written_in_the_zone_given() {
        let zone: Tz = "America/Sao_Paulo".parse().unwrap();
        let new = NewIncident::of(
            "abcdef123456",
            "boom",
            None,
            instant("2026-03-01T13:00:00.750Z"),
            zone,
        );
        let first = upserted(None, &new);
        assert_eq!(first.first_seen_at, "2026-03-01T10:00:00-03:00");
        let acked = moved(
            &first,
            Transition::Acked,
            instant("2026-03-01T14:30:00Z"),
            zone,
        )
        .unwrap();
        assert_eq!(acked.acked_at.as_deref(), Some("2026-03-01T11:30:00-03:00"));
    }

    #[test]
    fn an_incident_goes_detected_alerted_resolved_and_reopens_until_closed() {
        let first = upserted(None, &new("2026-03-01T10:00:00+00:00"));
        assert_eq!(first.state(), Some(IncidentState::Detected));
        let alerted = moved(
            &first,
            Transition::Alerted,
            instant("2026-03-01T10:00:01+00:00"),
            chrono_tz::UTC,
        )
        .unwrap();
        let now = DateTime::parse_from_rfc3339("2026-03-01T11:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert!(alerted.withholds_notice(Some(chrono::Duration::hours(6)), now));
        assert!(!alerted.withholds_notice(Some(chrono::Duration::minutes(30)), now));
        assert!(!alerted.withholds_notice(None, now));
        let again = upserted(Some(&alerted), &new("2026-03-01T10:05:00+00:00"));
        assert_eq!(again.state(), Some(IncidentState::Alerted));
        assert_eq!(again.first_seen_at, "2026-03-01T10:00:00+00:00");
        let resolved = moved(
            &again,
            Transition::Recovered,
            instant("2026-03-01T10:06:00+00:00"),
            chrono_tz::UTC,
        )
        .unwrap();
        assert_eq!(resolved.state(), Some(IncidentState::Resolved));
        assert_eq!(
            moved(
                &resolved,
                Transition::Recovered,
                instant("2026-03-01T10:10:00+00:00"),
                chrono_tz::UTC
            ),
            None
        );
        let reopened = upserted(Some(&resolved), &new("2026-03-01T10:07:00+00:00"));
        assert_eq!(reopened.state(), Some(IncidentState::Detected));
        assert_eq!(reopened.alerted_at, None);
        let closed = moved(
            &reopened,
            Transition::Acked,
            instant("2026-03-01T10:08:00+00:00"),
            chrono_tz::UTC,
        )
        .unwrap();
        assert!(closed.withholds_notice(None, now));
        assert_eq!(
            moved(
                &closed,
                Transition::Alerted,
                instant("2026-03-01T10:10:00+00:00"),
                chrono_tz::UTC
            ),
            None
        );
        let seen = upserted(Some(&closed), &new("2026-03-01T10:09:00+00:00"));
        assert_eq!(seen.state(), Some(IncidentState::Closed));
    }
}
