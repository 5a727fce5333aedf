//! The time zones of a home (docs/SCHEDULES.md, "Time zones"): the system's and the
//! configured one. A run's world holds both; the binary reads them for its commands.

use chrono_tz::Tz;

use crate::config::Config;

/// The system's IANA zone: `TZ` when it names one, else the OS setting, else UTC.
pub fn system_zone() -> Tz {
    std::env::var("TZ")
        .ok()
        .and_then(|tz| tz.trim_start_matches(':').parse::<Tz>().ok())
        .or_else(|| {
            iana_time_zone::get_timezone()
                .ok()
                .and_then(|name| name.parse().ok())
        })
        .unwrap_or(Tz::UTC)
}

/// The configured zone (docs/SCHEDULES.md, "Time zones"): HERMES_TIMEZONE → config `timezone:` → system → UTC.
/// An invalid name is a warning on stderr, then the next source is tried.
pub fn configured_zone(config: &Config) -> Tz {
    let from_env = std::env::var("HERMES_TIMEZONE").ok();
    let from_config = config.timezone.clone();
    for (source, name) in [
        ("HERMES_TIMEZONE", from_env),
        ("config.yaml timezone", from_config),
    ] {
        let Some(name) = name.filter(|n| !n.trim().is_empty()) else {
            continue;
        };
        match name.trim().parse::<Tz>() {
            Ok(zone) => return zone,
            Err(_) => eprintln!(
                "warning: {source} '{name}' is not an IANA time zone (e.g. Europe/Berlin); ignoring it"
            ),
        }
    }
    system_zone()
}
