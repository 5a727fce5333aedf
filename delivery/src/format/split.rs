//! A reply too long for one message, cut into parts on its parsed blocks: parts hold
//! whole blocks where they can; a block too big alone is cut (a list between items, a
//! code block into several closed code blocks, text between lines, then words).
//! Pure: the same text, rendering and limit always give the same parts, which is what
//! lets the outbox resume a half-sent message after its delivered parts.

use pulldown_cmark::{Event, Parser, Tag};

use super::render::{blocks, separator, Block, Kind, Rendering};

/// One part of a message: the Markdown it came from (with its part marker) and that
/// Markdown rendered, which is what the platform gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub source: String,
    pub rendered: String,
}

/// The part marker appended to each part of a split message.
pub fn part_marker(index: usize, total: usize) -> String {
    format!("\n\n({index}/{total})")
}

fn rendered_marker(rendering: Rendering, index: usize, total: usize) -> String {
    match rendering {
        Rendering::Html => format!("<br><br>({index}/{total})"),
        _ => part_marker(index, total),
    }
}

/// Splits `text` into parts whose rendering, part marker included, `measure`s at most
/// `limit`. A text that fits is one unmarked part. `measure` is the platform's length
/// (characters, UTF-16 units…) and must grow with the text.
pub fn split_parts(
    text: &str,
    rendering: Rendering,
    limit: usize,
    measure: &dyn Fn(&str) -> usize,
) -> Vec<Part> {
    let blocks = blocks(text, rendering);
    let whole = join(
        rendering,
        blocks.iter().map(|b| (&b.kind, b.rendered.as_str())),
    );
    if measure(&whole) <= limit {
        return vec![Part {
            source: text.to_string(),
            rendered: whole,
        }];
    }
    // Room for the longest marker a message of this size can need.
    let marker = rendered_marker(rendering, 999, 999);
    let fits = |candidate: &str| measure(&format!("{candidate}{marker}")) <= limit;
    let mut pieces = Vec::new();
    for block in blocks {
        if fits(&block.rendered) {
            pieces.push(block);
        } else {
            pieces.extend(cut(&block, rendering, &fits));
        }
    }
    let groups = pack(pieces, rendering, &fits);
    let total = groups.len();
    groups
        .into_iter()
        .enumerate()
        .map(|(i, group)| Part {
            source: format!(
                "{}{}",
                group
                    .iter()
                    .map(|b| b.source.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
                part_marker(i + 1, total)
            ),
            rendered: format!(
                "{}{}",
                join(
                    rendering,
                    group.iter().map(|b| (&b.kind, b.rendered.as_str()))
                ),
                rendered_marker(rendering, i + 1, total)
            ),
        })
        .collect()
}

/// The rendered parts of [`split_parts`].
pub fn split_rendered(
    text: &str,
    rendering: Rendering,
    limit: usize,
    measure: &dyn Fn(&str) -> usize,
) -> Vec<String> {
    split_parts(text, rendering, limit, measure)
        .into_iter()
        .map(|part| part.rendered)
        .collect()
}

fn join<'a>(rendering: Rendering, pieces: impl Iterator<Item = (&'a Kind, &'a str)>) -> String {
    let mut out = String::new();
    let mut last: Option<&Kind> = None;
    for (kind, rendered) in pieces {
        if let Some(before) = last {
            out.push_str(separator(rendering, before, kind));
        }
        out.push_str(rendered);
        last = Some(kind);
    }
    out
}

/// Fills parts greedily with pieces in order; a piece that fits nowhere still gets a
/// part of its own (nothing is dropped).
fn pack(pieces: Vec<Block>, rendering: Rendering, fits: &dyn Fn(&str) -> bool) -> Vec<Vec<Block>> {
    let mut groups: Vec<Vec<Block>> = Vec::new();
    let mut current: Vec<Block> = Vec::new();
    let mut current_text = String::new();
    for piece in pieces {
        let candidate = match current.last() {
            Some(last) => format!(
                "{current_text}{}{}",
                separator(rendering, &last.kind, &piece.kind),
                piece.rendered
            ),
            None => piece.rendered.clone(),
        };
        if current.is_empty() || fits(&candidate) {
            current_text = candidate;
            current.push(piece);
        } else {
            groups.push(std::mem::take(&mut current));
            current_text = piece.rendered.clone();
            current.push(piece);
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// Renders a piece of Markdown on its own, as one piece.
fn piece(source: String, rendering: Rendering, kind: Kind) -> Block {
    let rendered = super::render(&source, rendering);
    Block {
        source,
        rendered,
        kind,
    }
}

/// Cuts a block that does not fit in a part on its own.
fn cut(block: &Block, rendering: Rendering, fits: &dyn Fn(&str) -> bool) -> Vec<Block> {
    match block.kind {
        Kind::Code => cut_code(block, rendering, fits),
        Kind::List => {
            let items = list_items(&block.source);
            if items.len() < 2 {
                return cut_lines(
                    &block.source,
                    &|l| l.join("\n"),
                    rendering,
                    fits,
                    Kind::Flow,
                );
            }
            items
                .into_iter()
                .flat_map(|item| {
                    let item = piece(item, rendering, Kind::List);
                    match fits(&item.rendered) {
                        true => vec![item],
                        false => {
                            cut_lines(&item.source, &|l| l.join("\n"), rendering, fits, Kind::Flow)
                        }
                    }
                })
                .collect()
        }
        _ => cut_lines(
            &block.source,
            &|l| l.join("\n"),
            rendering,
            fits,
            Kind::Flow,
        ),
    }
}

/// The Markdown source of each item of a list.
fn list_items(source: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    for (event, range) in Parser::new(source).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 1 && matches!(tag, Tag::Item) {
                    items.push(source.get(range).unwrap_or("").trim_end().to_string());
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    items
}

/// A code block cut into several code blocks, each opened and closed with the original
/// fence (an indented block keeps its indentation instead).
fn cut_code(block: &Block, rendering: Rendering, fits: &dyn Fn(&str) -> bool) -> Vec<Block> {
    let lines: Vec<&str> = block.source.lines().collect();
    let first = lines.first().map(|l| l.trim_start()).unwrap_or("");
    let fence: String = first
        .chars()
        .take_while(|c| *c == '`' || *c == '~')
        .collect();
    if fence.len() < 3 {
        return cut_lines(
            &block.source,
            &|l| l.join("\n"),
            rendering,
            fits,
            Kind::Code,
        );
    }
    let open = first.to_string();
    let fence_char = fence.chars().next().unwrap_or('`');
    let closed = lines.len() > 1
        && lines.last().is_some_and(|l| {
            let l = l.trim();
            l.starts_with(&fence) && l.chars().all(|c| c == fence_char)
        });
    let body = &lines[1..lines.len() - usize::from(closed)];
    let wrap = |chunk: &[&str]| format!("{open}\n{}\n{fence}", chunk.join("\n"));
    cut_lines(&body.join("\n"), &wrap, rendering, fits, Kind::Code)
}

/// Cuts `source` between lines into pieces that fit, each made Markdown by `wrap`; a
/// line too long alone is cut between words, and a word too long between characters.
fn cut_lines(
    source: &str,
    wrap: &dyn Fn(&[&str]) -> String,
    rendering: Rendering,
    fits: &dyn Fn(&str) -> bool,
    kind: Kind,
) -> Vec<Block> {
    let make = |lines: &[&str]| piece(wrap(lines), rendering, kind.clone());
    let mut pieces = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in source.lines() {
        current.push(line);
        if fits(&make(&current).rendered) {
            continue;
        }
        current.pop();
        if !current.is_empty() {
            pieces.push(make(&current));
            current.clear();
        }
        if fits(&make(&[line]).rendered) {
            current.push(line);
            continue;
        }
        let mut rest = line;
        while !rest.is_empty() {
            let taken = longest_fitting(rest, &|s: &str| fits(&make(&[s]).rendered));
            pieces.push(make(&[&rest[..taken]]));
            rest = &rest[taken..];
        }
    }
    if !current.is_empty() {
        pieces.push(make(&current));
    }
    pieces
}

/// How many bytes of `line` to take: the longest prefix that fits, moved back to the
/// last space when there is one in its second half; at least one character, so the
/// cut always moves on.
fn longest_fitting(line: &str, fits: &dyn Fn(&str) -> bool) -> usize {
    let bounds: Vec<usize> = line
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain([line.len()])
        .collect();
    // Binary search for the last prefix end that fits.
    let (mut low, mut high) = (0usize, bounds.len());
    while low < high {
        let mid = (low + high) / 2;
        if fits(&line[..bounds[mid]]) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    let end = bounds[low.saturating_sub(1).min(bounds.len() - 1)];
    if end == line.len() {
        return end;
    }
    match line[..end].rfind(' ') {
        Some(space) if space + 1 > end / 2 => space + 1,
        _ => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> usize {
        s.chars().count()
    }

    #[test]
    fn parts_are_measured_rendered_and_keep_their_source() {
        let text = (0..40)
            .map(|n| format!("**Item {n}** is `x<{n}>` fine."))
            .collect::<Vec<_>>()
            .join("\n\n");
        let parts = split_parts(&text, Rendering::TelegramHtml, 300, &chars);
        assert!(parts.len() > 3);
        for (i, part) in parts.iter().enumerate() {
            assert!(chars(&part.rendered) <= 300, "{}", part.rendered);
            let marker = format!("({}/{})", i + 1, parts.len());
            assert!(part.rendered.ends_with(&marker) && part.source.ends_with(&marker));
            assert_eq!(
                part.rendered.trim_end_matches(&marker).trim_end(),
                super::super::render(
                    part.source.trim_end_matches(&marker).trim_end(),
                    Rendering::TelegramHtml
                )
            );
        }
        assert!(parts[0]
            .rendered
            .starts_with("<b>Item 0</b> is <code>x&lt;0&gt;</code>"));
        assert_eq!(
            parts,
            split_parts(&text, Rendering::TelegramHtml, 300, &chars)
        );
    }

    #[test]
    fn a_long_list_is_cut_between_items() {
        let list = (1..=30)
            .map(|n| format!("{n}. step number {n} of the plan"))
            .collect::<Vec<_>>()
            .join("\n");
        let parts = split_rendered(&list, Rendering::Plain, 200, &chars);
        assert!(parts.len() > 2);
        let joined = parts.join("\n");
        for n in 1..=30 {
            assert_eq!(
                joined.matches(&format!("{n}. step number {n} of")).count(),
                1
            );
        }
        assert!(
            parts[1].starts_with(|c: char| c.is_ascii_digit()),
            "{}",
            parts[1]
        );
    }

    #[test]
    fn a_huge_line_is_cut_between_words_and_a_huge_word_anywhere() {
        let line = "word ".repeat(200);
        let parts = split_rendered(&line, Rendering::Plain, 100, &chars);
        for part in &parts {
            assert!(chars(part) <= 100);
            assert!(
                !part.contains("wor\n") && !part.starts_with("ord"),
                "{part}"
            );
        }
        let word = "x".repeat(1000);
        let parts = split_rendered(&word, Rendering::SlackMrkdwn, 100, &chars);
        assert_eq!(
            parts.iter().map(|p| p.matches('x').count()).sum::<usize>(),
            1000
        );
    }

    #[test]
    fn a_code_block_over_the_limit_becomes_several_closed_code_blocks() {
        let code = format!("```py\n{}\n```", "print('<a>')\n".repeat(100).trim_end());
        let parts = split_rendered(&code, Rendering::TelegramHtml, 400, &chars);
        assert!(parts.len() > 3);
        for part in &parts {
            assert!(chars(part) <= 400);
            assert!(part.starts_with("<pre><code class=\"language-py\">print('&lt;a&gt;')"));
            assert_eq!(part.matches("</code></pre>").count(), 1, "{part}");
        }
        let lines: usize = parts.iter().map(|p| p.matches("print(").count()).sum();
        assert_eq!(lines, 100);
    }
}
