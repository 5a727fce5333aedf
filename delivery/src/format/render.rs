//! One Markdown reply, parsed once with pulldown-cmark, written in each platform's
//! markup: Telegram's HTML subset, Slack mrkdwn, HTML for Matrix and email, plain text
//! for SMS and Signal (Discord and Mattermost render Markdown themselves and get the
//! source). It never splits text and never escapes less than the markup needs: every
//! piece of the reply's own text is escaped for the target, raw HTML included.

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// The markup a platform reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rendering {
    /// Telegram's HTML subset (`b`, `i`, `s`, `a`, `code`, `pre`, `blockquote`).
    TelegramHtml,
    /// Slack's mrkdwn (`*bold*`, `_italic_`, `~strike~`, `<url|text>`).
    SlackMrkdwn,
    /// Markdown as written: Discord and Mattermost render it themselves.
    Markdown,
    /// HTML for Matrix's `formatted_body` and email; line breaks kept as `<br>`.
    Html,
    /// Plain text for platforms that show markup literally (SMS, Signal).
    Plain,
}

/// What kind of top-level block a piece of text is; it decides how a block that is too
/// big for one message is cut, and (in HTML) what separates two blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    /// A paragraph or an underlined (setext) heading: running text.
    Flow,
    /// A fenced or indented code block.
    Code,
    /// A list.
    List,
    /// Anything else: a heading, a quote, a table, a rule, an HTML block.
    Other,
}

/// One top-level block: its Markdown source (with any link definitions before it) and
/// its rendering.
#[derive(Debug, Clone)]
pub(super) struct Block {
    pub source: String,
    pub rendered: String,
    pub kind: Kind,
}

fn options() -> Options {
    Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES
}

/// The top-level blocks of `text`, each rendered for `rendering`. Parsed as one
/// document, so a reference link resolves wherever its definition is.
pub(super) fn blocks(text: &str, rendering: Rendering) -> Vec<Block> {
    let mut out = Vec::new();
    let mut writer = Writer::new(rendering, text);
    let (mut depth, mut gap_start, mut kind) = (0usize, 0usize, Kind::Other);
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match &event {
            Event::Start(tag) => {
                if depth == 0 {
                    kind = kind_of(tag, text.get(range.clone()).unwrap_or(""));
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ if depth == 0 => kind = Kind::Other,
            _ => {}
        }
        if rendering != Rendering::Markdown {
            writer.event(event, range.clone());
        }
        if depth > 0 {
            continue;
        }
        let source = trim_blank_lines(text.get(gap_start..range.end).unwrap_or(""));
        gap_start = range.end;
        let rendered = match rendering {
            Rendering::Markdown => source.to_string(),
            _ => writer.take(),
        };
        if rendered.trim().is_empty() {
            continue;
        }
        out.push(Block {
            source: source.to_string(),
            rendered,
            kind: kind.clone(),
        });
    }
    out
}

fn kind_of(tag: &Tag<'_>, source: &str) -> Kind {
    match tag {
        Tag::Paragraph => Kind::Flow,
        // An underlined heading is written as running text (see `start_heading`).
        Tag::Heading { .. } if !source.trim_start().starts_with('#') => Kind::Flow,
        Tag::CodeBlock(_) => Kind::Code,
        Tag::List(_) => Kind::List,
        _ => Kind::Other,
    }
}

/// `text` without blank lines at its start and whitespace at its end. Leading spaces
/// of the first real line stay: in an indented code block they are the syntax.
fn trim_blank_lines(text: &str) -> &str {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            break;
        }
        start += line.len();
    }
    text[start..].trim_end()
}

/// What separates two top-level blocks: a blank line, or in HTML a double line break
/// between running text (block elements such as lists and code break lines already).
pub(super) fn separator(rendering: Rendering, before: &Kind, after: &Kind) -> &'static str {
    match rendering {
        Rendering::Html if *before == Kind::Flow && *after == Kind::Flow => "<br><br>",
        Rendering::Html => "\n",
        _ => "\n\n",
    }
}

/// The whole of `text` in `rendering`.
pub fn render(text: &str, rendering: Rendering) -> String {
    if rendering == Rendering::Markdown {
        return text.to_string();
    }
    let mut out = String::new();
    let mut last: Option<Kind> = None;
    for block in blocks(text, rendering) {
        if let Some(before) = &last {
            out.push_str(separator(rendering, before, &block.kind));
        }
        out.push_str(&block.rendered);
        last = Some(block.kind);
    }
    out
}

/// `&`, `<` and `>` as entities (the three that Telegram and HTML need in text).
pub(super) fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

fn escape_attribute(text: &str) -> String {
    escape_html(text).replace('"', "&quot;")
}

/// Link schemes each markup may carry as a link; others are shown as `text (url)`
/// (Telegram refuses a message whose link it cannot open, and a `javascript:` link
/// has no place in a report).
fn linkable(rendering: Rendering, url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    let web = lower.starts_with("https://") || lower.starts_with("http://");
    match rendering {
        Rendering::TelegramHtml => web || lower.starts_with("tg://"),
        Rendering::SlackMrkdwn | Rendering::Html => web || lower.starts_with("mailto:"),
        Rendering::Markdown | Rendering::Plain => false,
    }
}

/// An open link: where it points, whether the markup carries it as a link, and where
/// its text starts in the output.
struct OpenLink {
    url: String,
    linked: bool,
    text_start: usize,
}

/// Writes the events of one document in one markup, handing out each top-level block.
struct Writer<'t> {
    rendering: Rendering,
    text: &'t str,
    out: String,
    /// Enclosing lists, innermost last: the next number of an ordered list.
    lists: Vec<Option<u64>>,
    links: Vec<OpenLink>,
    /// Output before each open block quote whose lines get a `> ` prefix on close.
    quotes: Vec<String>,
    /// Open Telegram/HTML block quotes (Telegram refuses one inside another).
    tag_quotes: usize,
    /// The language and text of the open code block.
    code: Option<(String, String)>,
    /// The underline of an open setext heading, written back as it was.
    underline: Option<String>,
    /// A block ended inside a container: the next content starts on a new line.
    pending_break: bool,
    /// Cells written in the current table row; whether the row is the header.
    cells: usize,
    table_head: bool,
}

impl<'t> Writer<'t> {
    fn new(rendering: Rendering, text: &'t str) -> Self {
        Writer {
            rendering,
            text,
            out: String::new(),
            lists: Vec::new(),
            links: Vec::new(),
            quotes: Vec::new(),
            tag_quotes: 0,
            code: None,
            underline: None,
            pending_break: false,
            cells: 0,
            table_head: false,
        }
    }

    fn take(&mut self) -> String {
        self.pending_break = false;
        std::mem::take(&mut self.out).trim_end().to_string()
    }

    fn html_like(&self) -> bool {
        matches!(self.rendering, Rendering::TelegramHtml | Rendering::Html)
    }

    fn escaped(&self, text: &str) -> String {
        match self.rendering {
            Rendering::TelegramHtml | Rendering::Html | Rendering::SlackMrkdwn => escape_html(text),
            Rendering::Markdown | Rendering::Plain => text.to_string(),
        }
    }

    /// Starts a new line when a block ended before this content.
    fn line_break(&mut self) {
        if std::mem::take(&mut self.pending_break) && !self.out.is_empty() {
            let newline = match self.rendering {
                Rendering::Html => "<br>",
                _ => "\n",
            };
            if !self.out.ends_with('\n') {
                self.out.push_str(newline);
            }
        }
    }

    fn newline_unless_at_start(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        if let Some((_, body)) = &mut self.code {
            match event {
                Event::Text(text) => body.push_str(&text),
                Event::End(TagEnd::CodeBlock) => self.end_code_block(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                self.line_break();
                let text = self.escaped(&text);
                self.out.push_str(&text);
            }
            Event::Code(code) => self.inline_code(&code),
            Event::Html(html) | Event::InlineHtml(html) => {
                self.line_break();
                let html = self.escaped(&html);
                self.out.push_str(&html);
            }
            Event::SoftBreak | Event::HardBreak => self.out.push_str(match self.rendering {
                Rendering::Html => "<br>",
                _ => "\n",
            }),
            Event::Rule => {
                self.line_break();
                self.out.push_str(match self.rendering {
                    Rendering::Html => "<hr>",
                    _ => "———",
                });
                self.pending_break = true;
            }
            Event::InlineMath(text) | Event::DisplayMath(text) | Event::FootnoteReference(text) => {
                let text = self.escaped(&text);
                self.out.push_str(&text);
            }
            Event::TaskListMarker(done) => self.out.push_str(if done { "☑ " } else { "☐ " }),
        }
    }

    fn inline_code(&mut self, code: &str) {
        self.line_break();
        let escaped = self.escaped(code);
        let in_link = !self.links.is_empty();
        let written = match self.rendering {
            // Telegram refuses an entity inside a link's text.
            Rendering::TelegramHtml if in_link => escaped,
            Rendering::TelegramHtml | Rendering::Html => format!("<code>{escaped}</code>"),
            Rendering::SlackMrkdwn => format!("`{escaped}`"),
            Rendering::Markdown | Rendering::Plain => escaped,
        };
        self.out.push_str(&written);
    }

    /// The opening and closing markup of an inline style in this rendering.
    fn style(&self, tag: &TagEnd) -> (&'static str, &'static str) {
        use Rendering::*;
        match (tag, self.rendering) {
            (TagEnd::Strong, TelegramHtml | Html) => ("<b>", "</b>"),
            (TagEnd::Emphasis, TelegramHtml | Html) => ("<i>", "</i>"),
            (TagEnd::Strikethrough, TelegramHtml) => ("<s>", "</s>"),
            (TagEnd::Strikethrough, Html) => ("<del>", "</del>"),
            (TagEnd::Strong, SlackMrkdwn) => ("*", "*"),
            (TagEnd::Emphasis, SlackMrkdwn) => ("_", "_"),
            (TagEnd::Strikethrough, SlackMrkdwn) => ("~", "~"),
            _ => ("", ""),
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        match tag {
            Tag::Paragraph => self.line_break(),
            Tag::Heading { level, .. } => self.start_heading(level as usize, range),
            Tag::CodeBlock(kind) => {
                self.line_break();
                self.newline_unless_at_start();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .filter(|c| c.is_ascii_alphanumeric() || "+-_#.".contains(*c))
                        .collect(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(first) => self.start_list(first),
            Tag::Item => self.start_item(),
            Tag::BlockQuote(_) => self.start_quote(),
            Tag::Emphasis | Tag::Strong | Tag::Strikethrough => {
                self.line_break();
                let (open, _) = self.style(&tag.to_end());
                self.out.push_str(open);
            }
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.line_break();
                self.start_link(&dest_url)
            }
            Tag::Table(_) => {
                self.line_break();
                self.newline_unless_at_start();
                if self.rendering == Rendering::Html {
                    self.out.push_str("<table>");
                }
            }
            Tag::TableHead | Tag::TableRow => self.start_row(matches!(tag, Tag::TableHead)),
            Tag::TableCell => self.start_cell(),
            Tag::HtmlBlock => self.line_break(),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.pending_break = true,
            TagEnd::Heading(level) => self.end_heading(level as usize),
            TagEnd::List(_) => self.end_list(),
            TagEnd::Item => {
                if self.rendering == Rendering::Html {
                    self.out.push_str("</li>");
                }
                self.pending_break = false;
            }
            TagEnd::BlockQuote(_) => self.end_quote(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                let (_, close) = self.style(&tag);
                self.out.push_str(close);
            }
            TagEnd::Link | TagEnd::Image => self.end_link(),
            TagEnd::Table => {
                if self.rendering == Rendering::Html {
                    self.out.push_str("</tbody></table>");
                } else {
                    let kept = self.out.trim_end_matches('\n').len();
                    self.out.truncate(kept);
                }
                self.pending_break = true;
            }
            TagEnd::TableHead | TagEnd::TableRow => self.end_row(),
            TagEnd::TableCell => {
                if self.rendering == Rendering::Html {
                    self.out
                        .push_str(if self.table_head { "</th>" } else { "</td>" });
                }
                self.cells += 1;
            }
            _ => {}
        }
    }

    /// An ATX heading (`## Totals`) is a bold line (a real heading in HTML); an
    /// underlined one is running text with its underline kept as written, because the
    /// response wrapper and many replies use a line of dashes as a divider.
    fn start_heading(&mut self, level: usize, range: Range<usize>) {
        self.line_break();
        let source = self.text.get(range).unwrap_or("");
        if !source.trim_start().starts_with('#') {
            let underline = source.trim_end().lines().last().unwrap_or("").trim();
            self.underline = Some(underline.to_string());
            return;
        }
        let open = match self.rendering {
            Rendering::TelegramHtml => "<b>".to_string(),
            Rendering::Html => format!("<h{level}>"),
            Rendering::SlackMrkdwn => "*".to_string(),
            Rendering::Markdown | Rendering::Plain => String::new(),
        };
        self.out.push_str(&open);
    }

    fn end_heading(&mut self, level: usize) {
        if let Some(underline) = self.underline.take() {
            let underline = self.escaped(&underline);
            let newline = if self.rendering == Rendering::Html {
                "<br>"
            } else {
                "\n"
            };
            self.out.push_str(newline);
            self.out.push_str(&underline);
        } else {
            let close = match self.rendering {
                Rendering::TelegramHtml => "</b>".to_string(),
                Rendering::Html => format!("</h{level}>"),
                Rendering::SlackMrkdwn => "*".to_string(),
                Rendering::Markdown | Rendering::Plain => String::new(),
            };
            self.out.push_str(&close);
        }
        self.pending_break = true;
    }

    fn end_code_block(&mut self) {
        let Some((lang, body)) = self.code.take() else {
            return;
        };
        let body = body.strip_suffix('\n').unwrap_or(&body);
        let body = self.escaped(body);
        let written = match self.rendering {
            Rendering::TelegramHtml | Rendering::Html if lang.is_empty() => {
                format!("<pre><code>{body}</code></pre>")
            }
            Rendering::TelegramHtml | Rendering::Html => {
                format!("<pre><code class=\"language-{lang}\">{body}</code></pre>")
            }
            Rendering::SlackMrkdwn => format!("```\n{body}\n```"),
            Rendering::Markdown | Rendering::Plain => body,
        };
        self.out.push_str(&written);
        self.pending_break = true;
    }

    fn start_list(&mut self, first: Option<u64>) {
        self.pending_break = false;
        match self.rendering {
            Rendering::Html => match first {
                None => self.out.push_str("<ul>"),
                Some(1) => self.out.push_str("<ol>"),
                Some(n) => self.out.push_str(&format!("<ol start=\"{n}\">")),
            },
            _ => self.newline_unless_at_start(),
        }
        self.lists.push(first);
    }

    fn end_list(&mut self) {
        if self.rendering == Rendering::Html {
            match self.lists.last() {
                Some(Some(_)) => self.out.push_str("</ol>"),
                _ => self.out.push_str("</ul>"),
            }
        }
        self.lists.pop();
        self.pending_break = true;
    }

    fn start_item(&mut self) {
        self.pending_break = false;
        if self.rendering == Rendering::Html {
            self.out.push_str("<li>");
            return;
        }
        self.newline_unless_at_start();
        let indent = "  ".repeat(self.lists.len().saturating_sub(1));
        let bullet = match self.lists.last_mut() {
            Some(Some(n)) => {
                let bullet = format!("{n}. ");
                *n += 1;
                bullet
            }
            _ if self.rendering == Rendering::Plain => "- ".to_string(),
            _ => "• ".to_string(),
        };
        self.out.push_str(&indent);
        self.out.push_str(&bullet);
    }

    fn start_quote(&mut self) {
        self.line_break();
        self.newline_unless_at_start();
        if self.html_like() {
            // Telegram takes no quote inside a quote: the inner one is plain text.
            if self.rendering == Rendering::Html || self.tag_quotes == 0 {
                self.out.push_str("<blockquote>");
            }
            self.tag_quotes += 1;
        } else {
            self.quotes.push(std::mem::take(&mut self.out));
        }
    }

    fn end_quote(&mut self) {
        if self.html_like() {
            self.tag_quotes = self.tag_quotes.saturating_sub(1);
            if self.rendering == Rendering::Html || self.tag_quotes == 0 {
                let kept = self.out.trim_end().len();
                self.out.truncate(kept);
                self.out.push_str("</blockquote>");
            }
        } else {
            let inner = std::mem::take(&mut self.out);
            let quoted: Vec<String> = inner
                .trim_end()
                .lines()
                .map(|line| format!("> {line}"))
                .collect();
            self.out = self.quotes.pop().unwrap_or_default();
            self.out.push_str(&quoted.join("\n"));
        }
        self.pending_break = true;
    }

    fn start_link(&mut self, url: &str) {
        let linked = linkable(self.rendering, url);
        match self.rendering {
            Rendering::TelegramHtml | Rendering::Html if linked => {
                let url = escape_attribute(url.trim());
                self.out.push_str(&format!("<a href=\"{url}\">"));
            }
            _ => {}
        }
        self.links.push(OpenLink {
            url: url.trim().to_string(),
            linked,
            text_start: self.out.len(),
        });
    }

    fn end_link(&mut self) {
        let Some(link) = self.links.pop() else {
            return;
        };
        let text = self.out.get(link.text_start..).unwrap_or("").to_string();
        match self.rendering {
            Rendering::TelegramHtml | Rendering::Html if link.linked => {
                self.out.push_str("</a>");
            }
            Rendering::SlackMrkdwn if link.linked => {
                self.out.truncate(link.text_start);
                let url = escape_html(&link.url);
                let written = match text == url || text.is_empty() {
                    true => format!("<{url}>"),
                    false => format!("<{url}|{text}>"),
                };
                self.out.push_str(&written);
            }
            _ if link.url.is_empty() || text == self.escaped(&link.url) => {}
            _ => {
                let url = self.escaped(&link.url);
                match text.is_empty() {
                    true => self.out.push_str(&url),
                    false => self.out.push_str(&format!(" ({url})")),
                }
            }
        }
    }

    fn start_row(&mut self, head: bool) {
        self.cells = 0;
        self.table_head = head;
        if self.rendering == Rendering::Html {
            self.out.push_str(if head { "<thead><tr>" } else { "<tr>" });
        }
    }

    fn end_row(&mut self) {
        if self.rendering == Rendering::Html {
            let head = self.table_head;
            self.out.push_str(if head {
                "</tr></thead><tbody>"
            } else {
                "</tr>"
            });
        } else {
            self.out.push('\n');
        }
        self.table_head = false;
    }

    fn start_cell(&mut self) {
        match self.rendering {
            Rendering::Html => self
                .out
                .push_str(if self.table_head { "<th>" } else { "<td>" }),
            _ if self.cells > 0 => self.out.push_str(" | "),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Rendering::*;

    const SAMPLE: &str = "# Report\n\n**bold _and italic_** and ~~gone~~, `a<b` & [docs](https://x.test/a?b=1&c=2)\n\n\
                          - one\n- two\n  1. nested\n\n```rust\nlet x = a < b;\n```";

    #[test]
    fn telegram_html_uses_its_subset_and_escapes_text() {
        assert_eq!(
            render(SAMPLE, TelegramHtml),
            "<b>Report</b>\n\n<b>bold <i>and italic</i></b> and <s>gone</s>, <code>a&lt;b</code> &amp; \
             <a href=\"https://x.test/a?b=1&amp;c=2\">docs</a>\n\n• one\n• two\n  1. nested\n\n\
             <pre><code class=\"language-rust\">let x = a &lt; b;</code></pre>"
        );
    }

    #[test]
    fn slack_mrkdwn_has_its_own_markers_and_links() {
        assert_eq!(
            render(SAMPLE, SlackMrkdwn),
            "*Report*\n\n*bold _and italic_* and ~gone~, `a&lt;b` &amp; \
             <https://x.test/a?b=1&amp;c=2|docs>\n\n• one\n• two\n  1. nested\n\n\
             ```\nlet x = a &lt; b;\n```"
        );
        assert_eq!(render("<https://x.test>", SlackMrkdwn), "<https://x.test>");
    }

    #[test]
    fn html_has_real_elements_and_keeps_line_breaks() {
        assert_eq!(
            render(SAMPLE, Html),
            "<h1>Report</h1>\n<b>bold <i>and italic</i></b> and <del>gone</del>, <code>a&lt;b</code> &amp; \
             <a href=\"https://x.test/a?b=1&amp;c=2\">docs</a>\n<ul><li>one</li><li>two<ol><li>nested</li></ol></li></ul>\n\
             <pre><code class=\"language-rust\">let x = a &lt; b;</code></pre>"
        );
        assert_eq!(render("a\nb\n\nc", Html), "a<br>b<br><br>c");
    }

    #[test]
    fn plain_text_drops_the_markup() {
        assert_eq!(
            render(SAMPLE, Plain),
            "Report\n\nbold and italic and gone, a<b & docs (https://x.test/a?b=1&c=2)\n\n\
             - one\n- two\n  1. nested\n\nlet x = a < b;"
        );
        assert_eq!(
            render("snake_case and 2 * 3 * 4", Plain),
            "snake_case and 2 * 3 * 4"
        );
    }

    #[test]
    fn markdown_is_passed_through_as_written() {
        assert_eq!(render(SAMPLE, Markdown), SAMPLE);
    }

    #[test]
    fn raw_html_in_a_reply_is_text_never_markup() {
        let reply = "<script>alert(1)</script>\n\nhi <b>there</b> & <x>";
        assert_eq!(
            render(reply, TelegramHtml),
            "&lt;script&gt;alert(1)&lt;/script&gt;\n\nhi &lt;b&gt;there&lt;/b&gt; &amp; &lt;x&gt;"
        );
        assert!(!render(reply, Html).contains("<script>"));
        assert!(!render(reply, SlackMrkdwn).contains('<'));
    }

    #[test]
    fn telegram_links_only_open_what_telegram_accepts_and_hold_no_code() {
        assert_eq!(
            render(
                "[run](javascript:alert) and [`cmd`](https://x.test)",
                TelegramHtml
            ),
            "run (javascript:alert) and <a href=\"https://x.test\">cmd</a>"
        );
        assert_eq!(
            render("[a \"q\"](https://x.test/\"x)", TelegramHtml),
            "<a href=\"https://x.test/&quot;x\">a \"q\"</a>"
        );
    }

    #[test]
    fn telegram_takes_no_quote_inside_a_quote() {
        assert_eq!(
            render("> outer\n>\n> > inner", TelegramHtml),
            "<blockquote>outer\ninner</blockquote>"
        );
        assert_eq!(render("> a\n> b", SlackMrkdwn), "> a\n> b");
    }

    #[test]
    fn an_underlined_heading_stays_as_written() {
        let wrapper = "Cronjob Response: x\n(job_id: 1)\n-------------\n\nbody";
        assert_eq!(render(wrapper, TelegramHtml), wrapper);
        assert_eq!(render(wrapper, Plain), wrapper);
        assert_eq!(
            render(wrapper, Html),
            "Cronjob Response: x<br>(job_id: 1)<br>-------------<br><br>body"
        );
    }

    #[test]
    fn tables_are_rows_of_cells_or_an_html_table() {
        let table = "| a | b |\n|---|---|\n| 1 | **2** |";
        assert_eq!(render(table, Plain), "a | b\n1 | 2");
        assert_eq!(render(table, TelegramHtml), "a | b\n1 | <b>2</b>");
        assert_eq!(
            render(table, Html),
            "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><b>2</b></td></tr></tbody></table>"
        );
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end() {
        assert_eq!(
            render("text\n\n```\ncode <1>", TelegramHtml),
            "text\n\n<pre><code>code &lt;1&gt;</code></pre>"
        );
    }
}
