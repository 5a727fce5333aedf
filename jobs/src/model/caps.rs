//! A job's own spending caps — `max_turns`, `max_runtime_seconds`, `max_tokens` and
//! `max_cost_usd` (docs/AGENT.md, "Budgets"): how users write them, how a record stores
//! them and how a stored value is read back. Pure: it never touches a store, a clock or
//! a price list (prices are the binary's), and a stored value it cannot read is no cap,
//! never an error: a record written by another program still lists and runs.

use serde_json::{json, Value};

use crate::model::job::Job;

/// The record keys of the caps, in the order they are shown.
pub const KEYS: [&str; 4] = [
    "max_turns",
    "max_runtime_seconds",
    "max_tokens",
    "max_cost_usd",
];

/// The caps a job carries; `None`: that cap is not set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    /// Model requests per run.
    pub max_turns: Option<u64>,
    /// Wall-clock seconds per run, script and agent together.
    pub max_runtime_seconds: Option<u64>,
    /// Prompt plus completion tokens per run, as the provider reports them.
    pub max_tokens: Option<u64>,
    /// US dollars per run, priced by the run's model.
    pub max_cost_usd: Option<f64>,
}

/// A stored whole-number cap: a positive number, or its digits as text.
fn stored_count(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
    .filter(|n| *n > 0)
}

/// A stored dollar cap: a positive finite number, or its digits as text.
fn stored_usd(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
    .filter(|usd| usd.is_finite() && *usd > 0.0)
}

impl Caps {
    /// The caps of a record whose values `get` looks up by key.
    pub fn read<'a>(get: impl Fn(&str) -> Option<&'a Value>) -> Caps {
        Caps {
            max_turns: stored_count(get("max_turns")),
            max_runtime_seconds: stored_count(get("max_runtime_seconds")),
            max_tokens: stored_count(get("max_tokens")),
            max_cost_usd: stored_usd(get("max_cost_usd")),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Caps::default()
    }

    /// Each set cap as a user reads it: `max_turns 5`, `max_runtime 10m`,
    /// `max_tokens 20000`, `max_cost $0.50`.
    pub fn shown(&self) -> Vec<String> {
        let mut shown = Vec::new();
        if let Some(turns) = self.max_turns {
            shown.push(format!("max_turns {turns}"));
        }
        if let Some(seconds) = self.max_runtime_seconds {
            shown.push(format!("max_runtime {}", duration_text(seconds)));
        }
        if let Some(tokens) = self.max_tokens {
            shown.push(format!("max_tokens {tokens}"));
        }
        if let Some(usd) = self.max_cost_usd {
            shown.push(format!("max_cost {}", usd_text(usd)));
        }
        shown
    }
}

impl Job {
    /// The job's own caps.
    pub fn caps(&self) -> Caps {
        Caps::read(|key| self.get(key))
    }
}

/// Dollars as users read them: cents from a dollar up (`$1.50`), and below a dollar
/// the digits it has, up to a millionth (`$0.50`, `$0.012`, `$0.0046`), so a sum never
/// reads as a round figure it is not.
pub fn usd_text(usd: f64) -> String {
    if usd.abs() >= 1.0 {
        return format!("${usd:.2}");
    }
    let digits = format!("{usd:.6}");
    let trimmed = digits.trim_end_matches('0');
    let decimals = trimmed.split_once('.').map_or(0, |(_, d)| d.len());
    if decimals < 2 {
        format!("${usd:.2}")
    } else {
        format!("${trimmed}")
    }
}

/// Seconds as the shortest duration text that reads back the same: `90s`, `10m`,
/// `1h30m`, `2d`.
pub fn duration_text(seconds: u64) -> String {
    let mut out = String::new();
    let mut left = seconds;
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if left >= size {
            out.push_str(&format!("{}{unit}", left / size));
            left %= size;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// A duration as users write it: `90` (seconds), `90s`, `10m`, `2h`, `1d`, or units in
/// a row (`1h30m`). `None` when it is not one.
pub fn parse_duration_seconds(text: &str) -> Option<u64> {
    let text = text.trim().to_ascii_lowercase();
    if text.is_empty() {
        return None;
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(seconds);
    }
    let mut total: u64 = 0;
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let number: u64 = rest[..digits].parse().ok()?;
        rest = rest[digits..].trim_start();
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let size = match &rest[..letters] {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
            "d" | "day" | "days" => 86_400,
            _ => return None,
        };
        total = total.checked_add(number.checked_mul(size)?)?;
        rest = rest[letters..].trim_start();
    }
    Some(total)
}

/// The caps a create or an edit gives, as the user wrote them (a door turns a JSON
/// number into its digits). `None`: not given; on an edit `""` or `0` clears a cap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CapTexts {
    pub max_turns: Option<String>,
    /// `max_runtime_seconds`: a duration (`90s`, `10m`) or bare seconds.
    pub max_runtime: Option<String>,
    pub max_tokens: Option<String>,
    pub max_cost_usd: Option<String>,
}

/// What a change does to one cap: `None` leaves it, `Some(None)` clears it.
type Change<T> = Option<Option<T>>;

/// The caps a create or an edit sets or clears, checked.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CapChange {
    max_turns: Change<u64>,
    max_runtime_seconds: Change<u64>,
    max_tokens: Change<u64>,
    max_cost_usd: Change<f64>,
}

/// A value shown in a refusal: short, on one line, control characters escaped.
fn shown(text: &str) -> String {
    let cut: String = text.trim().chars().take(40).collect();
    let more = if text.trim().chars().nth(40).is_some() {
        "…"
    } else {
        ""
    };
    format!("{}{more}", cut.escape_debug())
}

/// `""` and `0` (any spelling of zero) clear a cap.
fn clears(text: &str) -> bool {
    let text = text.trim().trim_start_matches('$');
    text.is_empty() || text.parse::<f64>().is_ok_and(|n| n == 0.0)
}

fn count(text: &Option<String>, key: &str, what: &str) -> Result<Change<u64>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    if clears(text) {
        return Ok(Some(None));
    }
    match text.trim().parse::<u64>() {
        Ok(n) => Ok(Some(Some(n))),
        Err(_) => Err(format!(
            "Invalid {key} '{}': give a whole number of {what}, e.g. 20 (0 or \"\" clears it)",
            shown(text)
        )),
    }
}

impl CapTexts {
    pub fn is_empty(&self) -> bool {
        *self == CapTexts::default()
    }

    /// The caps of a JSON request (the REST routes, the MCP tool), each under its record
    /// key: a number stands for its digits (seconds for `max_runtime_seconds`), a text is
    /// read as the command line reads it, and null clears.
    pub fn from_json<'a>(get: impl Fn(&str) -> Option<&'a Value>) -> Result<CapTexts, String> {
        let text = |key: &str| match get(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(String::new())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(format!("{key} must be a number (0 or null clears it)")),
        };
        Ok(CapTexts {
            max_turns: text("max_turns")?,
            max_runtime: text("max_runtime_seconds")?,
            max_tokens: text("max_tokens")?,
            max_cost_usd: text("max_cost_usd")?,
        })
    }

    /// Checks every given value; the first bad one is refused with what to write.
    pub fn parse(&self) -> Result<CapChange, String> {
        let max_runtime_seconds = match &self.max_runtime {
            None => None,
            Some(text) if clears(text) => Some(None),
            Some(text) => match parse_duration_seconds(text) {
                Some(seconds) if seconds > 0 => Some(Some(seconds)),
                _ => {
                    return Err(format!(
                        "Invalid max_runtime '{}': give a duration such as 90s, 10m or 2h (0 or \"\" clears it)",
                        shown(text)
                    ))
                }
            },
        };
        let max_cost_usd = match &self.max_cost_usd {
            None => None,
            Some(text) if clears(text) => Some(None),
            Some(text) => match text.trim().trim_start_matches('$').parse::<f64>() {
                Ok(usd) if usd.is_finite() && usd > 0.0 => Some(Some(usd)),
                _ => {
                    return Err(format!(
                        "Invalid max_cost_usd '{}': give US dollars per run, e.g. 0.50 (0 or \"\" clears it)",
                        shown(text)
                    ))
                }
            },
        };
        Ok(CapChange {
            max_turns: count(&self.max_turns, "max_turns", "model requests")?,
            max_runtime_seconds,
            max_tokens: count(&self.max_tokens, "max_tokens", "tokens")?,
            max_cost_usd,
        })
    }
}

impl CapChange {
    /// Writes the change into the job: a set cap is stored as a JSON number; a cleared
    /// one becomes null (never 0) when the record has it, and stays absent otherwise.
    pub fn apply(&self, job: &mut Job) {
        let counts = [
            ("max_turns", self.max_turns),
            ("max_runtime_seconds", self.max_runtime_seconds),
            ("max_tokens", self.max_tokens),
        ];
        let values = counts
            .into_iter()
            .map(|(key, change)| (key, change.map(|set| set.map(|n| json!(n)))))
            .chain([(
                "max_cost_usd",
                self.max_cost_usd.map(|set| set.map(|usd| json!(usd))),
            )]);
        for (key, change) in values {
            match change {
                Some(Some(value)) => job.set(key, value),
                Some(None) if job.get(key).is_some() => job.set(key, Value::Null),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(record: Value) -> Job {
        let Value::Object(record) = record else {
            unreachable!()
        };
        Job::from_record(record)
    }

    #[test]
    fn durations_read_units_in_a_row_and_bare_seconds() {
        for (text, seconds) in [
            ("90", 90),
            ("90s", 90),
            ("10m", 600),
            ("2h", 7200),
            ("1d", 86_400),
            ("1h30m", 5400),
            ("1 h 30 min", 5400),
            ("10 Minutes", 600),
        ] {
            assert_eq!(parse_duration_seconds(text), Some(seconds), "{text}");
        }
        for bad in [
            "soon",
            "10x",
            "m",
            "1.5h",
            "-5m",
            "",
            "99999999999999999999d",
        ] {
            assert_eq!(parse_duration_seconds(bad), None, "{bad}");
        }
        assert_eq!(duration_text(5400), "1h30m");
        assert_eq!(duration_text(90), "1m30s");
        assert_eq!(duration_text(600), "10m");
    }

    #[test]
    fn a_bad_value_is_refused_with_what_to_write_and_zero_or_blank_clears() {
        let refused = |texts: CapTexts| texts.parse().unwrap_err();
        assert_eq!(
            refused(CapTexts {
                max_runtime: Some("soon".into()),
                ..CapTexts::default()
            }),
            "Invalid max_runtime 'soon': give a duration such as 90s, 10m or 2h (0 or \"\" clears it)"
        );
        assert!(refused(CapTexts {
            max_turns: Some("2.5".into()),
            ..CapTexts::default()
        })
        .starts_with("Invalid max_turns '2.5': give a whole number of model requests"));
        assert!(refused(CapTexts {
            max_cost_usd: Some("-1".into()),
            ..CapTexts::default()
        })
        .starts_with("Invalid max_cost_usd '-1'"));
        let long = refused(CapTexts {
            max_tokens: Some(format!("\u{1b}[31m{}", "9x".repeat(100))),
            ..CapTexts::default()
        });
        assert!(long.contains("\\u{1b}") && long.contains('…'), "{long}");
        let mut capped = job(json!({"id": "a", "max_turns": 3, "max_cost_usd": 0.5}));
        CapTexts {
            max_turns: Some("0".into()),
            max_tokens: Some("".into()),
            max_cost_usd: Some("$0.25".into()),
            max_runtime: Some("10m".into()),
        }
        .parse()
        .unwrap()
        .apply(&mut capped);
        assert_eq!(capped.get("max_turns"), Some(&Value::Null));
        assert_eq!(capped.get("max_tokens"), None, "a cleared cap is not added");
        assert_eq!(capped.get("max_cost_usd"), Some(&json!(0.25)));
        assert_eq!(capped.get("max_runtime_seconds"), Some(&json!(600)));
        assert_eq!(capped.caps().shown(), ["max_runtime 10m", "max_cost $0.25"]);
    }

    #[test]
    fn stored_caps_read_numbers_and_digits_and_nothing_else() {
        let caps = job(json!({
            "max_turns": "4", "max_runtime_seconds": 0, "max_tokens": -3,
            "max_cost_usd": "0.1",
        }))
        .caps();
        assert_eq!(
            caps,
            Caps {
                max_turns: Some(4),
                max_cost_usd: Some(0.1),
                ..Caps::default()
            }
        );
        assert!(job(json!({"max_turns": [1], "max_cost_usd": "free"}))
            .caps()
            .is_empty());
        assert_eq!(usd_text(0.0046), "$0.0046");
        assert_eq!(usd_text(1.5), "$1.50");
        assert_eq!(usd_text(0.012), "$0.012");
        assert_eq!(usd_text(0.5), "$0.50");
        assert_eq!(usd_text(0.0), "$0.00");
    }
}
