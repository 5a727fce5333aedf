//! Every field of a job record, declared once: [`FIELDS`].
//!
//! Each row says what a new record writes for the field, whether users set it (and by
//! which `add`/`edit` flag and which REST door), and which fast readers read it. The
//! key lists those readers use ([`SCHEDULING_KEYS`], [`LISTING_KEYS`], [`REFERENCE_KEYS`],
//! [`PATCH_KEYS`], [`DASHBOARD_KEYS`], [`HERMES_022_RUNTIME_KEYS`]) are computed from the
//! table at compile time, and [`crate::model::job::Job::create`] writes a new record in
//! the table's order. A new field is one row here plus its behaviour; the tests below,
//! the CLI's (every settable field has its flag) and the docs check (docs/STORE.md names
//! every field) say what else it needs.

use crate::model::fields::Layout;

/// One field of a job record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The key in jobs.json (and in every PostgreSQL record).
    pub key: &'static str,
    /// Whether, and in which layout, a new record has the key.
    pub written: Written,
    /// The value a new record writes when the job was made of nothing but a schedule and
    /// a prompt.
    pub start: Start,
    /// How users set it.
    pub set: Set,
    /// The readers and doors that go by the field ([`SCHEDULING`], [`LISTING`], …).
    pub uses: u16,
}

/// Whether a new record has the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Always.
    Always,
    /// Only when its value is not null.
    WhenSet,
    /// Only in a record of this layout (docs/STORE.md, "Record layouts").
    Layout(Layout),
    /// Always in a record of this layout; in the other one only when its value is not null.
    LayoutElseWhenSet(Layout),
    /// Never: edits, runs or Python Hermes write it later.
    Later,
}

/// The value a new record writes for a job made of a schedule and a prompt alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// What the job was made of or what creating it decides (its id, name, schedule,
    /// next run…), or null when it was made without it.
    Given,
    /// `null`.
    Null,
    /// `0`.
    Zero,
}

/// How users set a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// Nobody sets it by name: hermes-cron or Hermes write it.
    Internal,
    /// The flag of `add` and `edit` that sets it (`--FLAG`).
    Flag(&'static str),
    /// The flag of `add` that sets it; later verbs change it their own way (given here).
    AddFlag(&'static str, &'static str),
    /// Users set it, through no flag of its own, on purpose (the reason).
    NoFlag(&'static str),
}

/// The due scan, the earliest next run and completed-job pruning read it.
pub const SCHEDULING: u16 = 1;
/// The text listing (`list`) reads it.
pub const LISTING: u16 = 1 << 1;
/// Finding a job by id or name, and describing an ambiguous name (MCP), reads it.
pub const REFERENCE: u16 = 1 << 2;
/// Hermes' PATCH `/api/jobs/{id}` sets it (the `updates` key is the field's key).
pub const PATCH: u16 = 1 << 3;
/// The dashboard's edit form sets it beyond Hermes' PATCH set.
pub const DASHBOARD: u16 = 1 << 4;
/// Hermes 0.22's scheduler may leave it in a record between runs.
pub const HERMES_022_RUNTIME: u16 = 1 << 5;
/// `list --json` shows it with its default filled in (docs/STORE.md, "Job record fields").
pub const NORMALIZED: u16 = 1 << 6;

const fn field(key: &'static str, written: Written, start: Start, set: Set, uses: u16) -> Field {
    Field {
        key,
        written,
        start,
        set,
        uses,
    }
}

use Set::{AddFlag, Flag, Internal, NoFlag};
use Start::{Given, Null, Zero};
use Written::{Always, Later, LayoutElseWhenSet, WhenSet};

const V019: Written = Written::Layout(Layout::Hermes019);
const V022: Written = Written::Layout(Layout::Hermes022);

/// Every field of a job record, in the order a new record writes them (those written
/// later come after, in no particular order).
#[rustfmt::skip]
pub const FIELDS: &[Field] = &[
    field("id", Always, Given, Internal, SCHEDULING | LISTING | REFERENCE | NORMALIZED),
    field("name", Always, Given, Flag("name"), SCHEDULING | LISTING | REFERENCE | PATCH | NORMALIZED),
    field("prompt", Always, Given, Flag("prompt"), PATCH | NORMALIZED),
    field("skills", Always, Given, Flag("skill"), LISTING | PATCH | NORMALIZED),
    field("skill", Always, Given, NoFlag("the mirror of skills[0]: --skill sets both"), LISTING | PATCH | NORMALIZED),
    field("model", Always, Given, Flag("model"), DASHBOARD | NORMALIZED),
    field("provider", Always, Given, Flag("provider"), DASHBOARD | NORMALIZED),
    field("provider_snapshot", V019, Given, Internal, 0),
    field("model_snapshot", V019, Given, Internal, 0),
    field("base_url", Always, Null, Internal, NORMALIZED),
    field("script", Always, Given, Flag("script"), LISTING | DASHBOARD | NORMALIZED),
    field("no_agent", Always, Given, Flag("no-agent"), LISTING | DASHBOARD | NORMALIZED),
    field("monitor_script", LayoutElseWhenSet(Layout::Hermes022), Given, Flag("monitor-script"), 0),
    field("monitor_url", LayoutElseWhenSet(Layout::Hermes022), Given, Flag("monitor-url"), 0),
    field("monitor_state", V022, Null, Internal, 0),
    field("context_from", Always, Given, Flag("context-from"), DASHBOARD | NORMALIZED),
    field("schedule", Always, Given, Flag("schedule"), SCHEDULING | LISTING | REFERENCE | PATCH | NORMALIZED),
    field("schedule_display", Always, Given, Internal, SCHEDULING | LISTING | REFERENCE | NORMALIZED),
    field("repeat", Always, Given, Flag("repeat"), SCHEDULING | LISTING | PATCH | NORMALIZED),
    field("enabled", Always, Given, NoFlag("pause and resume set it"), SCHEDULING | LISTING | PATCH | NORMALIZED),
    field("state", Always, Given, Internal, SCHEDULING | LISTING | NORMALIZED),
    field("paused_at", Always, Given, AddFlag("paused", "pause and resume set it"), SCHEDULING | LISTING | NORMALIZED),
    field("paused_reason", Always, Given, AddFlag("paused-reason", "pause --reason sets it"), LISTING | NORMALIZED),
    field("created_at", Always, Given, Internal, SCHEDULING | NORMALIZED),
    field("next_run_at", Always, Given, Internal, SCHEDULING | LISTING | REFERENCE | NORMALIZED),
    field("last_run_at", Always, Null, Internal, SCHEDULING | LISTING | NORMALIZED),
    field("last_status", Always, Null, Internal, LISTING | NORMALIZED),
    field("last_error", Always, Null, Internal, LISTING | NORMALIZED),
    field("last_delivery_error", Always, Null, Internal, LISTING | NORMALIZED),
    field("last_delivery_unverified", V022, Null, Internal, HERMES_022_RUNTIME),
    field("last_failure", V022, Null, Internal, 0),
    field("failure_streak", Always, Zero, Internal, NORMALIZED),
    field("deliver", Always, Given, Flag("deliver"), LISTING | PATCH | NORMALIZED),
    field("origin", Always, Given, AddFlag("origin", "it is where the job was made"), LISTING | NORMALIZED),
    field("enabled_toolsets", Always, Null, Flag("toolsets"), DASHBOARD | NORMALIZED),
    field("workdir", Always, Given, Flag("workdir"), LISTING | DASHBOARD | NORMALIZED),
    field("reasoning_effort", WhenSet, Given, Flag("reasoning-effort"), 0),
    field("failure_deliver", WhenSet, Given, Flag("failure-deliver"), DASHBOARD),
    field("interpreter", WhenSet, Given, Flag("interpreter"), 0),
    field("timezone", WhenSet, Given, Flag("tz"), SCHEDULING | LISTING | REFERENCE | DASHBOARD | NORMALIZED),
    // Written by the job's setters when given, by edits, runs or Python Hermes.
    field("after", Later, Null, Flag("after"), PATCH),
    field("after_since", Later, Null, Internal, 0),
    field("overlap", Later, Null, Flag("overlap"), PATCH),
    field("max_turns", Later, Null, Flag("max-turns"), LISTING | PATCH),
    field("max_runtime_seconds", Later, Null, Flag("max-runtime"), LISTING | PATCH),
    field("max_tokens", Later, Null, Flag("max-tokens"), LISTING | PATCH),
    field("max_cost_usd", Later, Null, Flag("max-cost"), LISTING | PATCH),
    field("start_at", Later, Null, Flag("start-at"), SCHEDULING | LISTING | PATCH),
    field("until", Later, Null, Flag("until"), SCHEDULING | LISTING | PATCH),
    field("jitter", Later, Null, Flag("jitter"), SCHEDULING | LISTING | PATCH),
    field("sandbox", Later, Null, Flag("sandbox"), LISTING | PATCH),
    field("catch_up", Later, Null, Internal, SCHEDULING),
    field("run_claim", Later, Null, Internal, SCHEDULING),
    field("fire_claim", Later, Null, Internal, HERMES_022_RUNTIME),
    field("pending_slot", Later, Null, Internal, HERMES_022_RUNTIME),
    field("manual_run_at", Later, Null, Internal, HERMES_022_RUNTIME),
    field("manual_run_prompt", Later, Null, Internal, HERMES_022_RUNTIME),
    field("last_dispatch", Later, Null, Internal, HERMES_022_RUNTIME),
    field("last_fire_error", Later, Null, Internal, HERMES_022_RUNTIME),
    field("last_delivery_queued", Later, Null, Internal, HERMES_022_RUNTIME),
    field("preflight_alerted", Later, Null, Internal, HERMES_022_RUNTIME),
    field("unreachable_retry", Later, Null, Internal, SCHEDULING | HERMES_022_RUNTIME),
    field("quota_hold_until", Later, Null, Internal, HERMES_022_RUNTIME),
    field("quota_hold_cron_expr", Later, Null, Internal, HERMES_022_RUNTIME),
];

/// How many fields of [`FIELDS`] have every bit of `uses`.
pub const fn count(uses: u16) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < FIELDS.len() {
        if FIELDS[i].uses & uses == uses {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The keys of the fields with every bit of `uses`, in table order (`N` is their
/// [`count`]; any other `N` fails the build).
pub const fn keys<const N: usize>(uses: u16) -> [&'static str; N] {
    let mut out = [""; N];
    let mut n = 0;
    let mut i = 0;
    while i < FIELDS.len() {
        if FIELDS[i].uses & uses == uses {
            out[n] = FIELDS[i].key;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "N must be the count of the fields");
    out
}

/// Every key the due scan ([`crate::model::due::plan_pass`]),
/// [`crate::model::due::earliest_next_run`] and completed-job pruning read. A job reduced
/// to these decides exactly as the whole record does (tested against the fixture
/// stores); mark a field [`SCHEDULING`] when one of them starts reading it.
pub const SCHEDULING_KEYS: &[&str] = &keys::<{ count(SCHEDULING) }>(SCHEDULING);

/// Every key the text listing reads ([`crate::jsonjobs::JobSummary::KEYS`]).
pub const LISTING_KEYS: &[&str] = &keys::<{ count(LISTING) }>(LISTING);

/// The keys read to find a job by id or name and describe an ambiguous name.
pub const REFERENCE_KEYS: &[&str] = &keys::<{ count(REFERENCE) }>(REFERENCE);

/// The `updates` keys Hermes' PATCH `/api/jobs/{id}` takes.
pub const PATCH_KEYS: &[&str] = &keys::<{ count(PATCH) }>(PATCH);

/// The fields the dashboard's edit form sets beyond [`PATCH_KEYS`].
pub const DASHBOARD_KEYS: &[&str] = &keys::<{ count(DASHBOARD) }>(DASHBOARD);

/// The fields Hermes 0.22's scheduler may leave in a record between runs. hermes-cron
/// keeps each of them as it is through every list, edit and run (docs/STORE.md,
/// "Hermes 0.22 fields").
pub const HERMES_022_RUNTIME_KEYS: &[&str] =
    &keys::<{ count(HERMES_022_RUNTIME) }>(HERMES_022_RUNTIME);

#[cfg(test)]
mod tests;
