//! Natural day/time phrases ("every monday 9am", "weekdays at 9am") → 5-field cron.
//!
//! A phrase either fits completely or is not a phrase: anything left over (no time,
//! a word we do not know) returns `None` so the next grammar rule can try.

/// Weekday number (Sunday = 0) for every spelling we accept.
fn weekday_number(word: &str) -> Option<u8> {
    match word {
        "sun" | "sunday" | "sundays" => Some(0),
        "mon" | "monday" | "mondays" => Some(1),
        "tue" | "tues" | "tuesday" | "tuesdays" => Some(2),
        "wed" | "weds" | "wednesday" | "wednesdays" => Some(3),
        "thu" | "thur" | "thurs" | "thursday" | "thursdays" => Some(4),
        "fri" | "friday" | "fridays" => Some(5),
        "sat" | "saturday" | "saturdays" => Some(6),
        _ => None,
    }
}

/// The day-of-week field for a day spec, or `None` when the words are not one.
fn day_field(words: &[&str]) -> Option<String> {
    match words {
        ["day" | "daily" | "everyday"] => return Some("*".to_string()),
        ["weekday" | "weekdays"] => return Some("1-5".to_string()),
        ["weekend" | "weekends"] => return Some("0,6".to_string()),
        _ => {}
    }
    let mut days: Vec<u8> = Vec::new();
    for word in words.iter().filter(|w| **w != "and") {
        days.push(weekday_number(word)?);
    }
    if days.is_empty() {
        return None;
    }
    days.sort_unstable();
    days.dedup();
    let listed: Vec<String> = days.iter().map(u8::to_string).collect();
    Some(listed.join(","))
}

/// Parses a time of day: `9am`, `9:05am`, `9 am` (two words), `14:30`, `7`, `noon`,
/// `midday`, `midnight`. `12am` is 0:00 and `12pm` is 12:00.
fn time_of_day(words: &[&str]) -> Option<(u32, u32)> {
    let joined = words.concat();
    match joined.as_str() {
        "noon" | "midday" => return Some((12, 0)),
        "midnight" => return Some((0, 0)),
        _ => {}
    }
    let (clock, meridiem) = if let Some(rest) = joined.strip_suffix("am") {
        (rest, Some(false))
    } else if let Some(rest) = joined.strip_suffix("pm") {
        (rest, Some(true))
    } else {
        (joined.as_str(), None)
    };
    let (hour_text, minute_text) = clock.split_once(':').unwrap_or((clock, "0"));
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(hour_text) || !digits(minute_text) || (clock.contains(':') && minute_text.len() != 2)
    {
        return None;
    }
    let hour: u32 = hour_text.parse().ok()?;
    let minute: u32 = minute_text.parse().ok()?;
    if minute > 59 {
        return None;
    }
    let hour = match meridiem {
        None if hour <= 23 => hour,
        Some(pm) if (1..=12).contains(&hour) => (hour % 12) + if pm { 12 } else { 0 },
        _ => return None,
    };
    Some((hour, minute))
}

/// True when `input` (e.g. `monday`, `weekdays`, `mon wed`) names days but no time, so
/// the helpful answer is to ask for a time rather than a duration.
pub(crate) fn names_days_only(input: &str) -> bool {
    let lower = input.trim().to_ascii_lowercase().replace(',', " ");
    let words: Vec<&str> = lower.split_whitespace().collect();
    day_field(&words).is_some()
}

/// The cron expression a phrase stands for, e.g. `every monday 9am` → `0 9 * * 1`.
pub fn phrase_to_cron(input: &str) -> Option<String> {
    let lower = input.trim().to_ascii_lowercase().replace(',', " ");
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    if words.first() == Some(&"every") {
        words.remove(0);
    }
    // The time is the last one or two words ("9am" or "9 am"); try the longer first.
    for time_len in [2, 1] {
        if words.len() <= time_len {
            continue;
        }
        let (head, time_words) = words.split_at(words.len() - time_len);
        let Some((hour, minute)) = time_of_day(time_words) else {
            continue;
        };
        let day_words = head.strip_suffix(&["at"]).unwrap_or(head);
        if let Some(dow) = day_field(day_words) {
            return Some(format!("{minute} {hour} * * {dow}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_examples() {
        for (input, expr) in [
            ("every monday 9am", "0 9 * * 1"),
            ("weekdays at 9am", "0 9 * * 1-5"),
            ("Monday, Wednesday at 9am", "0 9 * * 1,3"),
            ("every weekend at 10am", "0 10 * * 0,6"),
            ("every day at 9:05am", "5 9 * * *"),
            ("daily 14:30", "30 14 * * *"),
            ("everyday at 7", "0 7 * * *"),
            ("every day at noon", "0 12 * * *"),
            ("every day at midnight", "0 0 * * *"),
            ("daily at 12am", "0 0 * * *"),
            ("daily at 12pm", "0 12 * * *"),
            ("tue and thu at 6 pm", "0 18 * * 2,4"),
            ("EVERY FRIDAY AT 5PM", "0 17 * * 5"),
            ("sunday midday", "0 12 * * 0"),
            ("friday monday friday 8am", "0 8 * * 1,5"),
        ] {
            assert_eq!(phrase_to_cron(input).as_deref(), Some(expr), "{input}");
        }
    }

    #[test]
    fn partial_phrases_fall_through() {
        for input in [
            "every monday",
            "every 2h",
            "9am",
            "at 9am",
            "every day at 25:00",
            "daily at 13pm",
            "every day at 9:5",
            "every funday at 9am",
            "weekdays at 9am please",
            "0 9 * * *",
        ] {
            assert_eq!(phrase_to_cron(input), None, "{input}");
        }
    }
}
