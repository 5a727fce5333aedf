//! `hermes cron next`: parse a schedule without storing it and show its next fires.

use chrono_tz::Tz;
use serde_json::json;

use schedules::{format_instant, parse_schedule, parse_user_timestamp};

use super::error::CliError;
use super::Session;
use crate::cli::NextArgs;

pub fn next(session: &Session, args: NextArgs) -> Result<(), CliError> {
    let zone = match &args.timezone {
        Some(name) => name.trim().parse::<Tz>().map_err(|_| {
            CliError::user(format!(
                "Unknown time zone '{name}': use an IANA name such as Europe/Berlin"
            ))
        })?,
        None => session.zone(),
    };
    let from = match &args.from {
        Some(text) => parse_user_timestamp(text, zone)?.with_timezone(&chrono::Utc),
        None => session.ctx.now,
    };
    let schedule = parse_schedule(&args.schedule, from, zone, None)?;
    let mut fires = Vec::new();
    let mut last = None;
    while fires.len() < args.count {
        let Some(next) = schedule.next_run(from, last, zone) else {
            break;
        };
        if next <= from {
            break;
        }
        fires.push(format_instant(next, zone));
        if !schedule.is_recurring() {
            break;
        }
        last = Some(next);
    }
    if args.json {
        let out = json!({"schedule": schedule.to_json(), "timezone": zone.name(), "next": fires});
        say!("{out}");
    } else {
        for fire in &fires {
            say!("{fire}");
        }
    }
    Ok(())
}
