//! The two listings of jobs straight from their text in jobs.json: a job's `list --json`
//! form ([`Job::normalized`]) and the [`JobSummary`] the text listing shows, for the jobs
//! the healing would leave as they are: nearly all of them. A job this reader does not
//! read as plainly (anything healing would change, escapes
//! where it must read the text, duplicate keys) is [`NotPlain`], and the caller builds
//! it the long way; tests compare both ways on every shape a record comes in.
//!
//! [`Job::normalized`]: crate::Job::normalized

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use schedules::parse_stored_instant;
use serde_json::Value;

use crate::jsonjobs::scan::{
    array_items, object_entries, plain_string, write_compact, Entry, KeyIndex,
};
use crate::ledger::RunStatus;
use crate::model::caps::Caps;
use crate::model::job::{effective_state, JobState, Repeat, NORMALIZED_KEYS};
use crate::store::{ExtraField, Listed};
use crate::{Context, Job};

/// One job as a listing's [`ExtraField`]s are written from: its id and its schedule as
/// stored, read only when a field asks for it.
pub struct ListedJob<'a> {
    pub id: &'a str,
    schedule: Stored<'a>,
    /// The job's own `timezone`, when it names a zone.
    own_zone: Option<Tz>,
    ctx: &'a Context,
}

/// A stored `schedule`: its JSON text straight from the file, or the value.
enum Stored<'a> {
    Text(Option<&'a str>),
    Value(Option<&'a Value>),
}

impl<'a> ListedJob<'a> {
    /// A job the long way: the stored `schedule` value and `timezone` text.
    pub fn stored(
        id: &'a str,
        schedule: Option<&'a Value>,
        timezone: Option<&str>,
        ctx: &'a Context,
    ) -> ListedJob<'a> {
        ListedJob {
            id,
            schedule: Stored::Value(schedule),
            own_zone: own_zone(timezone),
            ctx,
        }
    }

    /// The schedule in English, in the job's zone, naming the zone when the job has its
    /// own ([`Schedule::describe`]); `None` when the stored schedule cannot be read.
    pub fn schedule_description(&self) -> Option<String> {
        match self.schedule {
            Stored::Value(value) => describe_stored(value?, self.own_zone, self.ctx),
            Stored::Text(text) => {
                let text = text?;
                if let Some(expr) = plain_cron_expr(text) {
                    let zone = self.own_zone.unwrap_or(self.ctx.zone);
                    if let Some(described) =
                        schedules::describe_cron_in(expr, zone, self.own_zone.is_some())
                    {
                        return Some(described);
                    }
                }
                let value: Value = serde_json::from_str(text).ok()?;
                describe_stored(&value, self.own_zone, self.ctx)
            }
        }
    }

    /// [`Self::schedule_description`], remembered in `memo` for the jobs after this one
    /// that store the same schedule in the same zone.
    pub fn schedule_description_in(&self, memo: &DescriptionMemo) -> Option<String> {
        let text = match self.schedule {
            Stored::Text(text) => text.map(Cow::Borrowed),
            Stored::Value(value) => value.map(|v| Cow::Owned(v.to_string())),
        };
        let Some(text) = text else {
            return self.schedule_description();
        };
        let mut known = memo
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let in_zone = known.entry(self.own_zone).or_default();
        if let Some(description) = in_zone.get(text.as_ref()) {
            return description.clone();
        }
        let description = self.schedule_description();
        in_zone.insert(text.into_owned(), description.clone());
        description
    }
}

/// The descriptions one listing has written, by the job's own zone and the stored
/// schedule's text. A store's jobs share a handful of schedules, and reading a cron
/// expression takes about 13 µs: at 10,000 jobs, remembering is what keeps `list` within
/// its budget.
#[derive(Default)]
pub struct DescriptionMemo(Mutex<HashMap<Option<Tz>, Described>>);

/// Descriptions by the stored schedule's text (`None`: it cannot be read).
type Described = HashMap<String, Option<String>>;

/// The `expr` of a stored `{"kind": "cron", "expr": …}` object whose two texts need no
/// decoding, read without building the object.
fn plain_cron_expr(text: &str) -> Option<&str> {
    let mut entries = Vec::new();
    object_entries(text, &mut entries)?;
    let value = |key: &str| entries.iter().find(|e| e.key == key).map(|e| e.value);
    (plain_string(value("kind")?)?.trim() == "cron").then_some(())?;
    Some(plain_string(value("expr")?)?.trim())
}

/// The zone a job's `timezone` text names, if it names one.
fn own_zone(timezone: Option<&str>) -> Option<Tz> {
    timezone.and_then(|name| name.trim().parse::<Tz>().ok())
}

/// [`ListedJob::schedule_description`] of a stored `schedule` value.
fn describe_stored(schedule: &Value, own_zone: Option<Tz>, ctx: &Context) -> Option<String> {
    let zone = own_zone.unwrap_or(ctx.zone);
    schedules::describe_stored(schedule, ctx.now, zone, ctx.legacy_zone, own_zone.is_some())
}

/// This job must be built and normalized the long way.
#[derive(Debug)]
pub(crate) struct NotPlain;

/// Buffers reused from job to job.
#[derive(Default)]
pub(crate) struct Scratch<'a> {
    descriptions: DescriptionMemo,
    extras: Vec<(&'a str, &'a str)>,
    nested: Vec<Entry<'a>>,
    items: Vec<&'a str>,
    skills: Vec<&'a str>,
}

/// The fields a job's normalized form computes rather than copies (see [`computed`]).
struct Computed<'a> {
    id: &'a str,
    name: &'a str,
    prompt: Option<&'a str>,
    no_agent: bool,
    display: &'a str,
    times: Option<u64>,
    completed: u64,
    enabled: bool,
    state: JobState,
    failure_streak: Option<&'a str>,
    deliver: &'a str,
    origin: Option<&'a str>,
}

/// What the text listing shows of a job, as [`Job`]'s readers read the stored record
/// (unhealed): built from the job ([`JobSummary::of`]) or straight from its text.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary<'a> {
    pub id: Cow<'a, str>,
    pub name: Cow<'a, str>,
    pub state: JobState,
    /// The schedule as users see it, or why it cannot be read.
    pub schedule: Result<Cow<'a, str>, String>,
    /// The schedule in English ([`ListedJob::schedule_description`]).
    pub schedule_description: Option<String>,
    pub repeat: Repeat,
    /// The zone the job's instants are shown in.
    pub zone: Tz,
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    pub last_status: Option<RunStatus>,
    pub deliver: Cow<'a, str>,
    pub skills: Vec<Cow<'a, str>>,
    pub script: Option<Cow<'a, str>>,
    pub no_agent: bool,
    pub workdir: Option<Cow<'a, str>>,
    pub last_error: Option<Cow<'a, str>>,
    pub last_delivery_error: Option<Cow<'a, str>>,
    pub paused_reason: Option<Cow<'a, str>>,
    /// The job's own spending caps.
    pub caps: Caps,
    /// `start_at`, `until` and `jitter` (seconds, 0: none).
    pub start_at: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub jitter_secs: u64,
    /// The job's own sandbox level, as stored (`None`: `cron.sandbox` decides).
    pub sandbox: Option<Cow<'a, str>>,
}

impl JobSummary<'_> {
    /// Every key a summary reads: a reader builds jobs reduced to these (the
    /// [`crate::model::field_table::LISTING`] fields).
    pub const KEYS: &'static [&'static str] = crate::model::field_table::LISTING_KEYS;

    pub fn of(job: &Job, ctx: &Context) -> JobSummary<'static> {
        let text = |key| job.text_field(key).map(|t| Cow::Owned(t.to_string()));
        JobSummary {
            id: Cow::Owned(job.id().to_string()),
            name: Cow::Owned(job.name().to_string()),
            state: job.state(),
            schedule: job
                .schedule_display(ctx)
                .map(Cow::Owned)
                .map_err(|e| e.to_string()),
            schedule_description: job.schedule(ctx).ok().map(|schedule| {
                let own_zone = own_zone(job.text_field("timezone"));
                schedule.describe(job.zone(ctx), own_zone.is_some())
            }),
            repeat: job.repeat(),
            zone: job.zone(ctx),
            next_run_at: job.next_run_at(ctx),
            last_run_at: job.last_run_at(ctx),
            last_status: job.last_status(),
            deliver: Cow::Owned(job.deliver()),
            skills: job.skills().into_iter().map(Cow::Owned).collect(),
            script: text("script"),
            no_agent: job.no_agent(),
            workdir: text("workdir"),
            last_error: text("last_error"),
            last_delivery_error: text("last_delivery_error"),
            paused_reason: text("paused_reason"),
            caps: job.caps(),
            start_at: job.instant("start_at", ctx),
            until: job.instant("until", ctx),
            jitter_secs: job.jitter_secs(),
            sandbox: text("sandbox"),
        }
    }
}

/// The summary of the job with these `entries`.
pub(crate) fn plain_summary<'a>(
    entries: &[Entry<'a>],
    ctx: &Context,
    scratch: &mut Scratch<'a>,
) -> Result<JobSummary<'a>, NotPlain> {
    let slots = slots(entries, scratch)?;
    let (job, stored) = computed(&slots, scratch)?;
    let own_zone = own_zone(text_field(slot!(slots, "timezone"))?.as_deref());
    let zone = own_zone.unwrap_or(ctx.zone);
    let schedule_description = ListedJob {
        id: job.id,
        schedule: Stored::Text(slot!(slots, "schedule")),
        own_zone,
        ctx,
    }
    .schedule_description_in(&scratch.descriptions);
    let instant = |value: Option<&str>| -> Result<Option<DateTime<Utc>>, NotPlain> {
        Ok(text_field(value)?.and_then(|t| parse_stored_instant(&t, ctx.legacy_zone)))
    };
    Ok(JobSummary {
        id: Cow::Borrowed(job.id),
        name: Cow::Borrowed(job.name),
        state: stored.state,
        schedule: Ok(Cow::Borrowed(job.display)),
        schedule_description,
        repeat: Repeat {
            times: job.times,
            completed: job.completed,
        },
        zone,
        next_run_at: instant(slot!(slots, "next_run_at"))?,
        last_run_at: instant(slot!(slots, "last_run_at"))?,
        last_status: text_field(slot!(slots, "last_status"))?.map(|t| RunStatus::parse(&t)),
        deliver: Cow::Borrowed(job.deliver),
        skills: scratch.skills.iter().map(|s| Cow::Borrowed(*s)).collect(),
        script: text_field(slot!(slots, "script"))?,
        no_agent: job.no_agent,
        workdir: text_field(slot!(slots, "workdir"))?,
        last_error: text_field(slot!(slots, "last_error"))?,
        last_delivery_error: text_field(slot!(slots, "last_delivery_error"))?,
        paused_reason: text_field(slot!(slots, "paused_reason"))?,
        caps: extra_caps(&scratch.extras),
        start_at: extra_instant(&scratch.extras, "start_at", ctx),
        until: extra_instant(&scratch.extras, "until", ctx),
        jitter_secs: extra_value(&scratch.extras, "jitter")
            .and_then(|v| v.as_u64())
            .unwrap_or(0),
        sandbox: match scratch.extras.iter().find(|(key, _)| *key == "sandbox") {
            Some((_, value)) => text_field(Some(value))?,
            None => None,
        },
    })
}

/// A key outside [`NORMALIZED_KEYS`], read as JSON.
fn extra_value(extras: &[(&str, &str)], key: &str) -> Option<serde_json::Value> {
    let (_, text) = extras.iter().find(|(k, _)| *k == key)?;
    serde_json::from_str(text).ok()
}

/// An instant among a job's keys outside [`NORMALIZED_KEYS`], read as [`Job::instant`]
/// reads it.
fn extra_instant(extras: &[(&str, &str)], key: &str, ctx: &Context) -> Option<DateTime<Utc>> {
    let value = extra_value(extras, key)?;
    crate::model::job::instant_of(Some(&value), ctx)
}

/// The caps among a job's keys outside [`NORMALIZED_KEYS`], read as [`Job::caps`] reads
/// them.
fn extra_caps(extras: &[(&str, &str)]) -> Caps {
    let values: Vec<(&str, serde_json::Value)> = extras
        .iter()
        .filter(|(key, _)| crate::model::caps::KEYS.contains(key))
        .filter_map(|(key, text)| Some((*key, serde_json::from_str(text).ok()?)))
        .collect();
    Caps::read(|key| values.iter().find(|(k, _)| *k == key).map(|(_, v)| v))
}

/// A string value as [`Job::text_field`] reads it: non-blank text, escapes decoded.
fn text_field(value: Option<&str>) -> Result<Option<Cow<'_, str>>, NotPlain> {
    let text = match value {
        Some(value) if value.starts_with('"') => match plain_string(value) {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(serde_json::from_str::<String>(value).map_err(|_| NotPlain)?),
        },
        _ => return Ok(None),
    };
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

/// The values of the job's keys of [`NORMALIZED_KEYS`] by position; the others go to
/// `scratch.extras` in order.
fn slots<'a>(entries: &[Entry<'a>], scratch: &mut Scratch<'a>) -> Result<Slots<'a>, NotPlain> {
    let mut slots: Slots<'a> = [None; NORMALIZED_KEYS.len()];
    scratch.extras.clear();
    for entry in entries {
        if !entry.key_is_plain() {
            return Err(NotPlain);
        }
        match index_of(entry.key) {
            Some(i) if slots[i].replace(entry.value).is_some() => return Err(NotPlain),
            Some(_) => {}
            None if scratch.extras.iter().any(|(k, _)| *k == entry.key) => return Err(NotPlain),
            None => scratch.extras.push((entry.key, entry.value)),
        }
    }
    Ok(slots)
}

/// Appends the normalized form of the job with these `entries` to `out` (after a comma
/// unless it comes `first`) when `keep` accepts it; `Ok(false)` when it does not.
pub(crate) fn write_plain_job<'a>(
    entries: &[Entry<'a>],
    ctx: &Context,
    keep: &dyn Fn(Listed) -> bool,
    extras: &[ExtraField],
    first: bool,
    scratch: &mut Scratch<'a>,
    out: &mut Vec<u8>,
) -> Result<bool, NotPlain> {
    let slots = slots(entries, scratch)?;
    let (computed, stored) = computed(&slots, scratch)?;
    // Kept or not on the job as stored, as the long way decides before healing.
    if !keep(stored) {
        return Ok(false);
    }
    // A record that has an extra key already keeps it in its place: the long way.
    let has = |key: &str| scratch.extras.iter().any(|(own, _)| *own == key);
    if extras.iter().any(|extra| has(extra.key)) {
        return Err(NotPlain);
    }
    let listed = ListedJob {
        id: computed.id,
        schedule: Stored::Text(slot!(slots, "schedule")),
        own_zone: own_zone(text_field(slot!(slots, "timezone"))?.as_deref()),
        ctx,
    };
    let mark = out.len();
    if !first {
        out.push(b',');
    }
    write_fields(&computed, &slots, scratch, out).inspect_err(|_| out.truncate(mark))?;
    if !extras.is_empty() {
        out.pop();
        for extra in extras {
            out.push(b',');
            write_key(extra.key, out);
            (extra.write)(&listed, out);
        }
        out.push(b'}');
    }
    Ok(true)
}

fn write_fields(
    job: &Computed<'_>,
    slots: &[Option<&str>],
    scratch: &Scratch<'_>,
    out: &mut Vec<u8>,
) -> Result<(), NotPlain> {
    out.push(b'{');
    for (i, key) in NORMALIZED_KEYS.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_key(key, out);
        match *key {
            "id" => write_text(job.id, out),
            "name" => write_text(job.name, out),
            "prompt" => match job.prompt {
                Some(text) => compact(text, out)?,
                None => out.extend_from_slice(b"\"\""),
            },
            "skill" => match scratch.skills.first() {
                Some(first) => write_text(first, out),
                None => out.extend_from_slice(b"null"),
            },
            "skills" => {
                out.push(b'[');
                for (n, skill) in scratch.skills.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    write_text(skill, out);
                }
                out.push(b']');
            }
            "no_agent" => write_flag(job.no_agent, out),
            "schedule_display" => write_text(job.display, out),
            "repeat" => {
                out.extend_from_slice(b"{\"times\":");
                match job.times {
                    Some(times) => write_number(times, out),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"completed\":");
                write_number(job.completed, out);
                out.push(b'}');
            }
            "enabled" => write_flag(job.enabled, out),
            "state" => write_text(job.state.as_str(), out),
            "failure_streak" => out.extend_from_slice(job.failure_streak.unwrap_or("0").as_bytes()),
            "deliver" => write_text(job.deliver, out),
            "origin" => match job.origin {
                Some(origin) => compact(origin, out)?,
                None => out.extend_from_slice(b"null"),
            },
            _ => match slots[i] {
                Some(value) => compact(value, out)?,
                None => out.extend_from_slice(b"null"),
            },
        }
    }
    for (key, value) in &scratch.extras {
        out.push(b',');
        write_key(key, out);
        compact(value, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// The computed fields of a job as healing and [`Job`]'s readers make them, for a job
/// whose text healing would not change; the skills go to `scratch.skills`.
///
/// [`Job`]: crate::Job
fn computed<'a>(
    slots: &Slots<'a>,
    scratch: &mut Scratch<'a>,
) -> Result<(Computed<'a>, Listed), NotPlain> {
    let id = text(slot!(slots, "id"))?
        .filter(|id| !id.trim().is_empty())
        .ok_or(NotPlain)?;
    let name = text(slot!(slots, "name"))?
        .filter(|name| !name.trim().is_empty())
        .unwrap_or("cron job");
    let (display, one_shot) = schedule(slot!(slots, "schedule").ok_or(NotPlain)?, scratch)?;
    let (times, completed) = repeat(slot!(slots, "repeat"), one_shot, scratch)?;
    skills(slot!(slots, "skills"), slot!(slots, "skill"), scratch)?;
    let instants = [
        slot!(slots, "created_at"),
        slot!(slots, "next_run_at"),
        slot!(slots, "last_run_at"),
        slot!(slots, "paused_at"),
    ];
    for value in instants {
        if text(value)?.is_some_and(|t| {
            !t.trim().is_empty() && !ends_with_offset(t) && !schedules::has_explicit_offset(t)
        }) {
            return Err(NotPlain);
        }
    }
    let enabled = match slot!(slots, "enabled") {
        None | Some("null") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(NotPlain),
    };
    let stored_state = text(slot!(slots, "state"))?;
    let paused_at_set = text(slot!(slots, "paused_at"))?.is_some_and(|t| !t.trim().is_empty());
    let next_run_set = text(slot!(slots, "next_run_at"))?.is_some_and(|t| !t.trim().is_empty());
    let unhealed_state = effective_state(stored_state, enabled, paused_at_set);
    // Healing gives a runnable job without a next run one: that takes the long way.
    if unhealed_state == JobState::Scheduled && !next_run_set {
        return Err(NotPlain);
    }
    // Healing lets a pause marker win over `enabled: true`.
    let paused = stored_state == Some("paused") || paused_at_set;
    let stored_enabled = enabled;
    let (enabled, state_text) = match enabled {
        Some(true) if paused => (Some(false), Some("paused")),
        _ => (enabled, stored_state),
    };
    let origin = slot!(slots, "origin").filter(|v| v.starts_with('{'));
    let deliver = match slot!(slots, "deliver") {
        Some(value) if value.starts_with('"') => {
            Some(plain_string(value).ok_or(NotPlain)?.trim()).filter(|d| !d.is_empty())
        }
        Some(value) if value.starts_with('[') => return Err(NotPlain),
        _ => None,
    };
    let computed = Computed {
        id,
        name,
        prompt: slot!(slots, "prompt").filter(|v| v.starts_with('"')),
        no_agent: match slot!(slots, "no_agent") {
            None | Some("null" | "false") => false,
            Some("true") => true,
            Some(_) => return Err(NotPlain),
        },
        display,
        times,
        completed,
        enabled: enabled.unwrap_or(true),
        state: effective_state(state_text, enabled, paused_at_set),
        failure_streak: match slot!(slots, "failure_streak") {
            None | Some("null") => None,
            Some(digits) if small_whole(digits).flatten().is_some() => Some(digits),
            Some(_) => return Err(NotPlain),
        },
        deliver: deliver.unwrap_or(if origin.is_some() { "origin" } else { "local" }),
        origin,
    };
    let stored = Listed {
        state: unhealed_state,
        enabled: stored_enabled.unwrap_or(true),
    };
    Ok((computed, stored))
}

/// A job's values of [`NORMALIZED_KEYS`], by position.
type Slots<'a> = [Option<&'a str>; NORMALIZED_KEYS.len()];

/// The value of one of [`NORMALIZED_KEYS`], its position found at compile time.
macro_rules! slot {
    ($slots:expr, $key:literal) => {
        $slots[const { position($key) }]
    };
}
use slot;

/// The position of `key` in [`NORMALIZED_KEYS`]; a key not there fails the build.
const fn position(key: &str) -> usize {
    let mut i = 0;
    while i < NORMALIZED_KEYS.len() {
        let (known, key) = (NORMALIZED_KEYS[i].as_bytes(), key.as_bytes());
        if known.len() == key.len() {
            let mut j = 0;
            while j < key.len() && known[j] == key[j] {
                j += 1;
            }
            if j == key.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not one of the normalized keys")
}

/// Finds a key among [`NORMALIZED_KEYS`].
const KEYS: KeyIndex<'static> = KeyIndex::new(&NORMALIZED_KEYS);

fn index_of(key: &str) -> Option<usize> {
    KEYS.find(key)
}

/// The schedule's display and whether it is a one-shot, for a schedule object healing
/// leaves alone (a `kind` and a non-blank `display`).
fn schedule<'a>(value: &'a str, scratch: &mut Scratch<'a>) -> Result<(&'a str, bool), NotPlain> {
    let entries = nested_object(value, scratch)?;
    let field = |key: &str| entries.iter().find(|e| e.key == key).map(|e| e.value);
    let kind = field("kind").ok_or(NotPlain)?;
    let display = text(field("display"))?
        .filter(|d| !d.trim().is_empty())
        .ok_or(NotPlain)?;
    Ok((display, text(Some(kind))? == Some("once")))
}

/// `repeat` as [`crate::Job::repeat`] reads it, for the shapes it takes as they are.
fn repeat<'a>(
    value: Option<&'a str>,
    one_shot: bool,
    scratch: &mut Scratch<'a>,
) -> Result<(Option<u64>, u64), NotPlain> {
    let default_times = one_shot.then_some(1);
    let value = match value {
        None | Some("null") => return Ok((default_times, 0)),
        Some(value) => value,
    };
    let entries = nested_object(value, scratch)?;
    let field = |key: &str| entries.iter().find(|e| e.key == key).map(|e| e.value);
    let times = match field("times") {
        None => default_times,
        Some("null") => None,
        // A count of zero or less means forever.
        Some(count) => small_whole(count).ok_or(NotPlain)?.filter(|n| *n > 0),
    };
    let completed = match field("completed") {
        None => 0,
        Some(count) => small_whole(count).flatten().ok_or(NotPlain)?,
    };
    Ok((times, completed))
}

/// `skills` as [`crate::Job::skills`] reads them (trimmed, non-blank, each once; the
/// lone `skill` when the list is empty), into `scratch.skills`.
fn skills<'a>(
    skills: Option<&'a str>,
    skill: Option<&'a str>,
    scratch: &mut Scratch<'a>,
) -> Result<(), NotPlain> {
    scratch.skills.clear();
    match skills {
        Some(list) if list.starts_with('[') => {
            array_items(list, &mut scratch.items).ok_or(NotPlain)?;
            for item in &scratch.items {
                if let Some(name) = text(Some(item))? {
                    scratch.skills.push(name.trim());
                }
            }
        }
        Some(one) => scratch.skills.extend(text(Some(one))?.map(str::trim)),
        None => {}
    }
    scratch.skills.retain(|s| !s.is_empty());
    if scratch.skills.is_empty() {
        scratch.skills.extend(text(skill)?.map(str::trim));
        scratch.skills.retain(|s| !s.is_empty());
    }
    let mut n = 0;
    while n < scratch.skills.len() {
        if scratch.skills[..n].contains(&scratch.skills[n]) {
            scratch.skills.remove(n);
        } else {
            n += 1;
        }
    }
    Ok(())
}

/// The entries of a nested object without duplicate keys (a duplicate is read the long way).
fn nested_object<'a, 's>(
    value: &'a str,
    scratch: &'s mut Scratch<'a>,
) -> Result<&'s [Entry<'a>], NotPlain> {
    object_entries(value, &mut scratch.nested).ok_or(NotPlain)?;
    let entries = &scratch.nested;
    for (n, entry) in entries.iter().enumerate() {
        if !entry.key_is_plain() || entries[..n].iter().any(|e| e.key == entry.key) {
            return Err(NotPlain);
        }
    }
    Ok(entries)
}

/// Does `text` end in a UTC offset (`+05:30`, `-03:00`, `Z`)? Such a text is either read
/// with its offset or not read at all, so healing never rewrites it — known without
/// parsing it.
fn ends_with_offset(text: &str) -> bool {
    let tail = text.trim_end().as_bytes();
    if tail.ends_with(b"Z") {
        return true;
    }
    match tail
        .len()
        .checked_sub(6)
        .and_then(|start| tail.get(start..))
    {
        Some([sign, h1, h2, b':', m1, m2]) => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
        }
        _ => false,
    }
}

/// A string value read as [`crate::Job`]'s text readers read it: `Ok(None)` for no
/// value or one that is not a string, the text for a string without escapes.
fn text(value: Option<&str>) -> Result<Option<&str>, NotPlain> {
    match value {
        Some(value) if value.starts_with('"') => plain_string(value).map(Some).ok_or(NotPlain),
        _ => Ok(None),
    }
}

/// A whole number as serde_json keeps it: `Some(Some(n))` for one that fits a `u64`,
/// `Some(None)` for a negative one, `None` for any other value.
fn small_whole(value: &str) -> Option<Option<u64>> {
    let (negative, digits) = match value.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, value),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    match negative {
        true => Some(None),
        false => digits.parse().ok().map(Some),
    }
}

fn compact(value: &str, out: &mut Vec<u8>) -> Result<(), NotPlain> {
    write_compact(value, out).map_err(|_| NotPlain)
}

fn write_key(key: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// A text that needs no escapes (read from the file without any, or one of ours).
fn write_text(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// A number as JSON, with no string in between.
fn write_number(number: impl std::fmt::Display, out: &mut Vec<u8>) {
    use std::io::Write;
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{number}");
}

fn write_flag(flag: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(if flag { b"true" } else { b"false" });
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::{json, Value};

    use super::*;
    use crate::jsonjobs::scan::object_entries;

    fn ctx() -> Context {
        Context {
            now: chrono::Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap(),
            zone: chrono_tz::Tz::UTC,
            legacy_zone: chrono_tz::Europe::Berlin,
        }
    }

    /// The record shapes stores hold: Python Hermes 0.19's, one with every extra a newer
    /// version may add, and the bare one of old versions.
    fn bases() -> Vec<Value> {
        let newer = include_str!("../../../tests/fixtures/newer_full_store.json");
        let newer: Value = serde_json::from_str(newer).unwrap();
        let mut bases: Vec<Value> = newer["jobs"].as_array().unwrap().clone();
        bases.push(json!({
            "id": "b00000000000", "name": "bench job 0", "prompt": "", "skills": [],
            "skill": null, "model": null, "provider": null, "provider_snapshot": null,
            "model_snapshot": null, "base_url": null, "script": "silent.sh", "no_agent": true,
            "context_from": null,
            "schedule": {"kind": "cron", "expr": "47 8 * * *", "display": "47 8 * * *"},
            "schedule_display": "47 8 * * *", "repeat": {"times": null, "completed": 0},
            "enabled": true, "state": "scheduled", "paused_at": null, "paused_reason": null,
            "created_at": "2026-11-21T16:29:31.448172+00:00",
            "next_run_at": "2026-11-23T18:24:09.448172+00:00", "last_run_at": null,
            "last_status": null, "last_error": null, "last_delivery_error": null,
            "deliver": "local", "origin": null, "enabled_toolsets": null, "workdir": null
        }));
        bases.push(json!({
            "id": "0d0d0d0d0d0d", "name": "Christmas call", "prompt": "Remind me",
            "schedule": {"kind": "once", "run_at": "2026-12-25T08:00:00+00:00", "display": "once"},
            "deliver": "local", "enabled": true, "created_at": "2026-02-01T08:00:00+00:00",
            "next_run_at": "2026-12-25T08:00:00+00:00"
        }));
        bases
    }

    /// Values each field is tried with: every kind, blanks, escapes, naive instants.
    fn odd_values() -> Vec<Option<&'static str>> {
        vec![
            None,
            Some("null"),
            Some("true"),
            Some("false"),
            Some("0"),
            Some("-1"),
            Some("3"),
            Some("1.5"),
            Some("1e2"),
            Some("\"\""),
            Some("\" \""),
            Some("\"x\""),
            Some("\" x \""),
            Some("\"\\u0078\""),
            Some("\"yes\""),
            Some("\"paused\""),
            Some("\"completed\""),
            Some("\"error\""),
            Some("\"scheduled\""),
            Some("\"local,telegram\""),
            Some("\"2026-11-22T09:00:00\""),
            Some("\"2026-11-22T10:00:00+00:00\""),
            Some("\"2026-11-21T10:00:00+01:00\""),
            Some("\"2026-11-21T10:00:00Z\""),
            Some("\"2026-11-21 10:00:00.5 -05:30 \""),
            Some("\"soon+05:00\""),
            Some("[]"),
            Some("[\"a\", \" a \", \"a\", 3, \"b\"]"),
            Some("[\"\\u0062\"]"),
            Some("[\"local\", \"origin\"]"),
            Some("{}"),
            Some("{\"times\": 2, \"completed\": 1}"),
            Some("{\"times\": 0, \"completed\": 5, \"x\": [1, 2]}"),
            Some("{\"times\": \"3\"}"),
            Some("{\"completed\": -1}"),
            Some("{\"kind\": \"once\", \"run_at\": \"2026-12-25T08:00:00+00:00\", \"display\": \"once at 8\"}"),
            Some("{\"kind\": \"cron\", \"expr\": \"0 9 * * *\", \"display\": \"\"}"),
            Some("{\"kind\": \"interval\", \"minutes\": 30, \"display\": \"every 30m\"}"),
            Some("{\"expr\": \"0 9 * * *\", \"display\": \"x\"}"),
            Some("{\"platform\": \"telegram\", \"chat_id\": \"42\"}"),
            Some("{\"a\": 1, \"a\": 2}"),
            Some("\"an old run\""),
            Some("\"every 2h\""),
            Some("\"line one\\nline \\\"two\\\"\""),
            Some("\"America/New_York\""),
            Some("\" Europe/Berlin \""),
            Some("\"Mars/Base\""),
        ]
    }

    /// A record's text with `key` set to `value` (or removed), other keys in place.
    fn with(base: &Value, key: &str, value: Option<&str>) -> String {
        let mut fields: Vec<String> = Vec::new();
        let mut placed = false;
        for (k, v) in base.as_object().unwrap() {
            if k == key {
                placed = true;
                if let Some(value) = value {
                    fields.push(format!("{}: {value}", json!(k)));
                }
            } else {
                fields.push(format!("{}: {}", json!(k), v));
            }
        }
        if let (false, Some(value)) = (placed, value) {
            fields.push(format!("{}: {value}", json!(key)));
        }
        format!("{{ {} }}", fields.join(",\n  "))
    }

    /// Reads `text`'s summary both ways; `true` when the short way read it.
    fn summaries_agree(text: &str) -> bool {
        let ctx = ctx();
        let Ok(record) = crate::jsonjobs::record_keeping(text, Some(JobSummary::KEYS)) else {
            return false;
        };
        let long = JobSummary::of(&Job::from_record(record), &ctx);
        let mut entries = Vec::new();
        object_entries(text, &mut entries).expect("the walk reads what serde_json reads");
        match plain_summary(&entries, &ctx, &mut Scratch::default()) {
            Ok(short) => {
                assert_eq!(short, long, "for {text}");
                true
            }
            Err(NotPlain) => false,
        }
    }

    /// Writes `text` both ways; `true` when the short way wrote it (and the summaries
    /// agree too).
    fn agrees(text: &str) -> bool {
        let summarized = summaries_agree(text);
        let ctx = ctx();
        let record = match crate::jsonjobs::record_keeping(text, None) {
            Ok(record) => record,
            Err(_) => return false,
        };
        let job = Job::from_record(record);
        let stored = Listed::of(&job);
        let long = serde_json::to_string(&job.clone().normalized(&ctx)).unwrap();
        let write = |job: &ListedJob<'_>, out: &mut Vec<u8>| {
            let id = job.id;
            out.extend_from_slice(
                serde_json::to_string(&format!("run of {id}"))
                    .unwrap()
                    .as_bytes(),
            )
        };
        let profile = |_: &ListedJob<'_>, out: &mut Vec<u8>| out.extend_from_slice(b"\"default\"");
        let extras = [
            ExtraField {
                key: "latest_execution",
                write: std::sync::Arc::new(write),
            },
            ExtraField {
                key: "profile",
                write: std::sync::Arc::new(profile),
            },
            ExtraField::schedule_description(),
        ];
        let mut long_extra = Vec::new();
        ExtraField::set_all(&extras, job.normalized(&ctx), &ctx, &mut long_extra).unwrap();
        let mut entries = Vec::new();
        object_entries(text, &mut entries).expect("the walk reads what serde_json reads");
        let mut scratch = Scratch::default();
        let kept = std::cell::Cell::new(None);
        let keep = |listed: Listed| {
            kept.set(Some(listed));
            true
        };
        let mut out = Vec::new();
        match write_plain_job(&entries, &ctx, &keep, &[], true, &mut scratch, &mut out) {
            Ok(written) => {
                assert!(written);
                assert_eq!(String::from_utf8(out).unwrap(), long, "for {text}");
                assert_eq!(kept.get(), Some(stored), "state of {text}");
                assert!(
                    summarized,
                    "the summary of {text} is read the short way too"
                );
                let mut out = Vec::new();
                if write_plain_job(&entries, &ctx, &keep, &extras, true, &mut scratch, &mut out)
                    .is_ok()
                {
                    assert_eq!(out, long_extra, "with the extra fields, for {text}");
                }
                true
            }
            Err(NotPlain) => {
                assert!(out.is_empty());
                false
            }
        }
    }

    #[test]
    fn the_short_way_writes_what_the_long_way_writes_for_every_shape() {
        let keys: Vec<&str> = NORMALIZED_KEYS
            .iter()
            .copied()
            .chain([
                "x_extra",
                "provider_snapshot",
                "latest_execution",
                "profile",
            ])
            .collect();
        let (mut short, mut total) = (0, 0);
        for base in bases() {
            assert!(
                agrees(&with(&base, "", None)),
                "the base record is plain: {base}"
            );
            for key in &keys {
                for value in odd_values() {
                    total += 1;
                    short += usize::from(agrees(&with(&base, key, value)));
                }
            }
        }
        // Most odd values are plain enough to be written the short way.
        assert!(short * 2 > total, "{short} of {total}");
    }

    #[test]
    fn the_state_fields_agree_in_every_combination() {
        let flags = [None, Some("true"), Some("false"), Some("\"no\"")];
        let states = [
            None,
            Some("\"scheduled\""),
            Some("\"paused\""),
            Some("\"completed\""),
            Some("\"error\""),
        ];
        let instants = [
            None,
            Some("null"),
            Some("\"\""),
            Some("\"2026-11-22T10:00:00+00:00\""),
        ];
        for base in bases() {
            for enabled in flags {
                for state in states {
                    for paused_at in instants {
                        for next_run_at in instants {
                            let text = with(&base, "enabled", enabled);
                            let record: Value = serde_json::from_str(&text).unwrap();
                            let text = with(&record, "state", state);
                            let record: Value = serde_json::from_str(&text).unwrap();
                            let text = with(&record, "paused_at", paused_at);
                            let record: Value = serde_json::from_str(&text).unwrap();
                            agrees(&with(&record, "next_run_at", next_run_at));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn duplicate_and_escaped_keys_take_the_long_way() {
        assert!(!agrees("{\"id\": \"a\", \"id\": \"b\", \"schedule\": {\"kind\": \"cron\", \"display\": \"d\"}, \"next_run_at\": \"2026-11-22T10:00:00+00:00\"}"));
        assert!(!agrees("{\"\\u0069d\": \"a\", \"schedule\": {\"kind\": \"cron\", \"display\": \"d\"}, \"next_run_at\": \"2026-11-22T10:00:00+00:00\"}"));
        assert!(!agrees("{\"id\": \"a\", \"x\": 1, \"x\": 2, \"schedule\": {\"kind\": \"cron\", \"display\": \"d\"}, \"next_run_at\": \"2026-11-22T10:00:00+00:00\"}"));
    }

    #[test]
    fn keys_are_found_by_length() {
        for (i, key) in NORMALIZED_KEYS.iter().enumerate() {
            assert_eq!(index_of(key), Some(i));
        }
        assert_eq!(index_of("x_extra"), None);
        assert_eq!(index_of(""), None);
        assert_eq!(index_of(&"k".repeat(40)), None);
    }
}
