//! Values from outside the daemon (a request's path, a model's tool name, a server's
//! answer) as they go into the log: control characters and line separators escaped, so
//! a newline in one cannot start a line that reads like the daemon's own. Every such
//! value is logged through [`logged`]; it never shortens or redacts (callers do).

use std::fmt;

/// `text` for the log, its control characters escaped (`\n`, `\u{1b}`).
pub fn logged(text: &str) -> Logged<'_> {
    Logged(text)
}

/// See [`logged`].
pub struct Logged<'a>(&'a str);

impl fmt::Display for Logged<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(breaks_a_line) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            write!(f, "{}", c.escape_default())?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// A character that could end a log line or rewrite the terminal showing it.
fn breaks_a_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_line_separators_are_escaped_and_the_rest_kept() {
        assert_eq!(
            logged("a\nb\r\u{1b}[2J\tc\u{2028}d é").to_string(),
            r"a\nb\r\u{1b}[2J\tc\u{2028}d é"
        );
        assert_eq!(logged("/api/jobs").to_string(), "/api/jobs");
    }
}
