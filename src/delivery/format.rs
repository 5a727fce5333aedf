//! The text of a delivery: the response wrapper (docs/DELIVERY.md, "The response wrapper"), failure notices, `MEDIA:` lines, splitting
//! a long message into parts on paragraph/line boundaries without cutting a fenced code
//! block, and Markdown rendered as the HTML subset Telegram accepts. Pure functions of
//! their input: the same text always splits the same way, which is what lets the outbox
//! resume a half-sent message after its delivered parts.

use std::sync::OnceLock;

use regex::Regex;

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
    let mut notice = format!("⚠️ This run failed ({}): {first}", error_class(error));
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

/// A block of a message: a paragraph (lines without a blank one) or a fenced code block.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    text: String,
    code: bool,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut in_code = false;
    let flush = |current: &mut Vec<&str>, out: &mut Vec<Block>, code: bool| {
        if !current.is_empty() {
            out.push(Block {
                text: current.join("\n"),
                code,
            });
            current.clear();
        }
    };
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        if in_code {
            current.push(line);
            if fence {
                flush(&mut current, &mut out, true);
                in_code = false;
            }
        } else if fence {
            flush(&mut current, &mut out, false);
            current.push(line);
            in_code = true;
        } else if line.trim().is_empty() {
            flush(&mut current, &mut out, false);
        } else {
            current.push(line);
        }
    }
    // An unclosed fence runs to the end of the text, as Markdown renders it.
    flush(&mut current, &mut out, in_code);
    out
}

/// Cuts one block that is too big on its own: a paragraph at line (then character)
/// boundaries, a code block into several code blocks, each closed and reopened.
fn cut_block(block: &Block, fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    let (open, body, close) = if block.code {
        let mut lines: Vec<&str> = block.text.lines().collect();
        let open = lines.remove(0).to_string();
        let close = match lines.last() {
            Some(l) if l.trim_start().starts_with("```") => lines.pop().unwrap().to_string(),
            _ => "```".to_string(),
        };
        (open, lines, close)
    } else {
        (String::new(), block.text.lines().collect(), String::new())
    };
    let enclose = |lines: &[&str]| -> String {
        if block.code {
            format!("{open}\n{}\n{close}", lines.join("\n"))
        } else {
            lines.join("\n")
        }
    };
    let mut pieces = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut owned: Vec<String> = Vec::new();
    for line in body {
        let mut trial = current.clone();
        trial.push(line);
        if fits(&enclose(&trial)) {
            current = trial;
            continue;
        }
        if !current.is_empty() {
            pieces.push(enclose(&current));
            current.clear();
        }
        if fits(&enclose(&[line])) {
            current.push(line);
        } else {
            // A single line longer than a part: cut it by characters.
            let mut chunk = String::new();
            for c in line.chars() {
                chunk.push(c);
                if !fits(&enclose(&[chunk.as_str()])) {
                    chunk.pop();
                    owned.push(std::mem::take(&mut chunk));
                    chunk.push(c);
                }
            }
            owned.push(chunk);
            for piece in owned.drain(..) {
                pieces.push(enclose(&[piece.as_str()]));
            }
        }
    }
    if !current.is_empty() {
        pieces.push(enclose(&current));
    }
    pieces
}

/// The part marker appended to each part of a split message.
pub fn part_marker(index: usize, total: usize) -> String {
    format!("\n\n({index}/{total})")
}

/// Splits `text` into parts whose `measure` (after the part marker is added) stays
/// within `limit`, cutting between paragraphs, then lines, never inside a fenced code
/// block unless that block alone is too big. A text that fits is one part, unmarked.
pub fn split(text: &str, limit: usize, measure: &dyn Fn(&str) -> usize) -> Vec<String> {
    if measure(text) <= limit {
        return vec![text.to_string()];
    }
    // Room for a marker up to "(99/99)".
    let budget = limit.saturating_sub(measure(&part_marker(99, 99)));
    let fits = |s: &str| measure(s) <= budget;
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for block in blocks(text) {
        let pieces = if fits(&block.text) {
            vec![block.text.clone()]
        } else {
            cut_block(&block, &fits)
        };
        for piece in pieces {
            let joined = if current.is_empty() {
                piece.clone()
            } else {
                format!("{current}\n\n{piece}")
            };
            if fits(&joined) {
                current = joined;
            } else {
                if !current.is_empty() {
                    parts.push(std::mem::take(&mut current));
                }
                current = piece;
            }
        }
    }
    if !current.is_empty() {
        parts.push(current);
    }
    let total = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| format!("{part}{}", part_marker(i + 1, total)))
        .collect()
}

/// Length as Telegram counts it (UTF-16 code units).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn inline_patterns() -> &'static [(Regex, &'static str)] {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (
                r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)",
                r#"<a href="$2">$1</a>"#,
            ),
            (r"\*\*([^*\n]+?)\*\*", "<b>$1</b>"),
            (r"(^|[^\w])__([^_\n]+?)__([^\w]|$)", "$1<b>$2</b>$3"),
            (r"~~([^~\n]+?)~~", "<s>$1</s>"),
            (r"(^|[^\w*])\*([^*\s][^*\n]*?)\*([^\w*]|$)", "$1<i>$2</i>$3"),
            (r"(^|[^\w])_([^_\s][^_\n]*?)_([^\w]|$)", "$1<i>$2</i>$3"),
        ]
        .into_iter()
        .map(|(p, r)| (Regex::new(p).expect("valid markdown pattern"), r))
        .collect()
    })
}

/// Inline Markdown of one line (already outside code blocks) as Telegram HTML.
fn render_inline(line: &str) -> String {
    // Inline code first: its content is escaped and left alone by the other rules.
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let Some(len) = rest[start + 1..].find('`') else {
            break;
        };
        out.push_str(&render_styles(&rest[..start]));
        out.push_str("<code>");
        out.push_str(&escape_html(&rest[start + 1..start + 1 + len]));
        out.push_str("</code>");
        rest = &rest[start + 2 + len..];
    }
    out.push_str(&render_styles(rest));
    out
}

fn render_styles(text: &str) -> String {
    let mut out = escape_html(text);
    for (pattern, replacement) in inline_patterns() {
        out = pattern.replace_all(&out, *replacement).into_owned();
    }
    out
}

/// Markdown (what models write) as Telegram HTML: fenced code → `<pre><code>`, inline
/// code, bold, italic, strikethrough, links, `#` headings as bold lines, `-`/`*`
/// bullets as `•`. Everything else is escaped text. Telegram refuses malformed HTML
/// with "can't parse entities"; the sender then resends the part as plain text.
pub fn markdown_to_telegram_html(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut code: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut code, fence) {
            (Some((lang, body)), Some(_)) => {
                let class = if lang.is_empty() {
                    String::new()
                } else {
                    format!(" class=\"language-{}\"", escape_html(lang))
                };
                out.push(format!(
                    "<pre><code{class}>{}</code></pre>",
                    escape_html(&body.join("\n"))
                ));
                code = None;
            }
            (Some((_, body)), None) => body.push(line),
            (None, Some(lang)) => {
                let lang: String = lang
                    .trim()
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '_' | '#'))
                    .collect();
                code = Some((lang, Vec::new()));
            }
            (None, None) => {
                let trimmed = line.trim_start();
                let heading = trimmed.trim_start_matches('#');
                if trimmed.starts_with('#') && heading.starts_with(' ') {
                    out.push(format!("<b>{}</b>", render_inline(heading.trim())));
                } else if let Some(item) = trimmed
                    .strip_prefix("- ")
                    .or_else(|| trimmed.strip_prefix("* "))
                {
                    let indent = &line[..line.len() - trimmed.len()];
                    out.push(format!("{indent}• {}", render_inline(item)));
                } else {
                    out.push(render_inline(line));
                }
            }
        }
    }
    if let Some((_, body)) = code {
        out.push(format!(
            "<pre><code>{}</code></pre>",
            escape_html(&body.join("\n"))
        ));
    }
    out.join("\n")
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
    fn renders_markdown_as_telegram_html() {
        let html = markdown_to_telegram_html(
            "# Report\n**bold** and *it* and snake_case_name <tag> & `a<b`\n- item\n```rust\nlet x = a < b;\n```",
        );
        assert_eq!(
            html,
            "<b>Report</b>\n<b>bold</b> and <i>it</i> and snake_case_name &lt;tag&gt; &amp; <code>a&lt;b</code>\n• item\n<pre><code class=\"language-rust\">let x = a &lt; b;</code></pre>"
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
