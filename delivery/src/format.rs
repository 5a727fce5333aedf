//! The text of a delivery: the response wrapper (docs/DELIVERY.md, "The response
//! wrapper"), failure notices, `MEDIA:` lines, and the reply's Markdown parsed once and
//! rendered in each platform's markup ([`Rendering`]), split into parts on its blocks.
//! Pure functions of their input: the same text always splits the same way, which is
//! what lets the outbox resume a half-sent message after its delivered parts.

// Paths spelled out so the delivery bench can compile this module from its file too.
#[path = "format/render.rs"]
mod render;
#[path = "format/split.rs"]
mod split;

pub use render::{render, Rendering};
pub use split::{split_parts, split_rendered, Part};

/// The text's Markdown as an HTML fragment, by CommonMark rules (tables and
/// strikethrough too), with any raw HTML in it shown as text rather than obeyed: a reply
/// is model output and must not smuggle markup or scripts into a mail client or a page.
pub fn markdown_html(text: &str) -> String {
    use pulldown_cmark::{html, Event, Options, Parser};
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut body = String::new();
    html::push_html(&mut body, events);
    body
}

/// The response wrapper (docs/DELIVERY.md, "The response wrapper") around a reply.
pub fn wrap(name: &str, job_id: &str, content: &str) -> String {
    format!(
        "Cronjob Response: {name}\n(job_id: {job_id})\n-------------\n\n{content}\n\n\
         To stop or manage this job, send me a new message (e.g. \"stop reminder {name}\")."
    )
}

/// How many failures in a row earn a nudge to look at the job.
pub const NUDGE_AFTER: u64 = 3;

/// The class of a run error, in the words of the error classes (docs/AGENT.md, "Retries and fallback") where the error names one.
pub fn error_class(error: &str) -> &'static str {
    let lower = error.to_ascii_lowercase();
    let classes: &[(&str, &[&str])] = &[
        (
            "rate_limit",
            &["rate_limit", "rate limit", "429", "too many requests"],
        ),
        (
            "context_length",
            &["context_length", "context length", "too long", "413"],
        ),
        (
            "auth",
            &["auth", "401", "403", "api key", "forbidden", "unauthorized"],
        ),
        ("timeout", &["timeout", "timed out", "without activity"]),
        ("server", &["server", " 500", " 502", " 503", " 504", "5xx"]),
        ("network", &["network", "connection", "dns", "unreachable"]),
        (
            "invalid_response",
            &["invalid_response", "invalid response", "empty response"],
        ),
        ("script", &["script"]),
        ("blocked", &["blocked:"]),
        ("config", &["config", "no model"]),
    ];
    classes
        .iter()
        .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map_or("error", |(class, _)| class)
}

/// The notice a failed run delivers: one line naming the class and the first line of
/// the error, and a nudge once it has failed [`NUDGE_AFTER`] times in a row.
pub fn failure_notice(job_id: &str, error: &str, streak: u64) -> String {
    let first = error
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("unknown error");
    let first: String = if first.chars().count() > 300 {
        first.chars().take(299).chain(['…']).collect()
    } else {
        first.to_string()
    };
    let notice = format!("⚠️ This run failed ({}): {first}", error_class(error));
    with_nudge(notice, job_id, streak)
}

/// The notice of a run whose agent declared it failed (`[CRON_FAILURE]`): the agent's
/// evidence as it wrote it, every line, never classified (its own words already say
/// what went wrong), and the same nudge.
pub fn declared_failure_notice(job_id: &str, evidence: &str, streak: u64) -> String {
    with_nudge(
        format!("⚠️ This run failed, as the agent reported:\n\n{evidence}"),
        job_id,
        streak,
    )
}

fn with_nudge(mut notice: String, job_id: &str, streak: u64) -> String {
    if streak >= NUDGE_AFTER {
        notice.push_str(&format!(
            "\n\nIt has failed {streak} times in a row. See `hermes cron runs {job_id}`, \
             fix it, or pause it with `hermes cron pause {job_id}`."
        ));
    }
    notice
}

/// Splits `MEDIA:/path` lines out of a reply: the text without them, and the paths.
pub fn extract_media(text: &str) -> (String, Vec<String>) {
    let mut media = Vec::new();
    let mut kept = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        let path = line.trim().strip_prefix("MEDIA:").map(str::trim);
        match path {
            Some(path) if !in_code && path.starts_with('/') => media.push(path.to_string()),
            _ => kept.push(line),
        }
    }
    let text = kept.join("\n");
    (text.trim_matches('\n').to_string(), media)
}

/// Length as Telegram counts it (UTF-16 code units).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Splits Markdown `text` into parts whose `measure` stays within `limit`, as
/// [`split_rendered`] with [`Rendering::Markdown`]: for platforms that take Markdown as
/// it is written, or text already converted by the caller.
pub fn split(text: &str, limit: usize, measure: &dyn Fn(&str) -> usize) -> Vec<String> {
    split_rendered(text, Rendering::Markdown, limit, measure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_is_exact() {
        assert_eq!(
            wrap("daily", "abc", "hi"),
            "Cronjob Response: daily\n(job_id: abc)\n-------------\n\nhi\n\n\
             To stop or manage this job, send me a new message (e.g. \"stop reminder daily\")."
        );
    }

    #[test]
    fn splits_between_paragraphs_and_keeps_code_blocks_whole() {
        let para = "word ".repeat(60).trim_end().to_string();
        let code = format!("```\n{}\n```", "code line\n".repeat(30).trim_end());
        let text = format!("{para}\n\n{para}\n\n{code}\n\n{para}");
        let parts = split(&text, 700, &|s| s.chars().count());
        assert!(parts.len() > 1);
        for (i, part) in parts.iter().enumerate() {
            assert!(part.chars().count() <= 700);
            assert!(part.ends_with(&format!("({}/{})", i + 1, parts.len())));
            assert_eq!(part.matches("```").count() % 2, 0, "{part}");
        }
        assert!(parts.iter().any(|p| p.contains(&code)));
    }

    #[test]
    fn a_huge_code_block_is_cut_into_closed_blocks() {
        let code = format!("```py\n{}\n```", "print(1)\n".repeat(200).trim_end());
        for part in split(&code, 500, &|s| s.chars().count()) {
            assert!(part.chars().count() <= 500);
            assert!(part.starts_with("```py\n"), "{part}");
            assert_eq!(part.matches("```").count(), 2);
        }
    }

    #[test]
    fn media_lines_are_taken_out() {
        let (text, media) = extract_media("Chart:\nMEDIA:/tmp/a.png\ndone\n```\nMEDIA:/x\n```");
        assert_eq!(media, vec!["/tmp/a.png"]);
        assert_eq!(text, "Chart:\ndone\n```\nMEDIA:/x\n```");
    }

    #[test]
    fn failure_notices_name_the_class_and_nudge() {
        let n = failure_notice("abc", "script exited with status 1\nmore", 1);
        assert_eq!(
            n,
            "⚠️ This run failed (script): script exited with status 1"
        );
        assert!(failure_notice("abc", "HTTP 429 rate_limit", 3).contains("3 times in a row"));
    }
}
