//! The unified diff of a monitor's previous and current output, line for line what
//! Python's `difflib.unified_diff(a.splitlines(), b.splitlines(), "previous", "current",
//! lineterm="")` prints, which is what Hermes 0.22 shows the agent: the same matcher
//! (`SequenceMatcher` with its "popular line" rule for long inputs), the same grouping
//! with three lines of context, the same hunk headers. Pure text in, text out.

use std::collections::HashMap;

/// Lines of context around each change, as `difflib` uses by default.
const CONTEXT: usize = 3;

/// The diff of `old` against `new` as one text (empty when their lines are equal).
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str) -> String {
    let a = split_lines(old);
    let b = split_lines(new);
    let mut out: Vec<String> = Vec::new();
    for group in grouped_opcodes(&a, &b, CONTEXT) {
        if out.is_empty() {
            out.push(format!("--- {from}"));
            out.push(format!("+++ {to}"));
        }
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push(format!(
            "@@ -{} +{} @@",
            range(first.i1, last.i2),
            range(first.j1, last.j2)
        ));
        for op in &group {
            if op.tag == Tag::Equal {
                out.extend(a[op.i1..op.i2].iter().map(|l| format!(" {l}")));
                continue;
            }
            if matches!(op.tag, Tag::Replace | Tag::Delete) {
                out.extend(a[op.i1..op.i2].iter().map(|l| format!("-{l}")));
            }
            if matches!(op.tag, Tag::Replace | Tag::Insert) {
                out.extend(b[op.j1..op.j2].iter().map(|l| format!("+{l}")));
            }
        }
    }
    out.join("\n")
}

/// Python's `str.splitlines()`: every line boundary it knows, terminators dropped.
pub fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&text[start..at]);
        let mut end = at + c.len_utf8();
        if c == '\r' {
            if let Some((_, '\n')) = chars.peek() {
                chars.next();
                end += 1;
            }
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// `_format_range_unified`: `start` alone for one line, `start,length` otherwise (an
/// empty range names the line before it).
fn range(start: usize, stop: usize) -> String {
    let length = stop - start;
    match length {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{length}", start + 1),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Opcode {
    tag: Tag,
    i1: usize,
    i2: usize,
    j1: usize,
    j2: usize,
}

/// `SequenceMatcher(None, a, b)` state: where each line of `b` occurs, lines that occur
/// too often in a long `b` left out (`autojunk`).
struct Matcher<'a> {
    a: &'a [&'a str],
    b: &'a [&'a str],
    b2j: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Matcher<'a> {
    fn new(a: &'a [&'a str], b: &'a [&'a str]) -> Matcher<'a> {
        let mut b2j: HashMap<&str, Vec<usize>> = HashMap::new();
        for (j, line) in b.iter().enumerate() {
            b2j.entry(line).or_default().push(j);
        }
        if b.len() >= 200 {
            let limit = b.len() / 100 + 1;
            b2j.retain(|_, places| places.len() <= limit);
        }
        Matcher { a, b, b2j }
    }

    /// `find_longest_match`: the longest block of equal lines within the ranges, the
    /// earliest in `a` then in `b` among equals, extended over popular lines.
    fn longest_match(
        &self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut best) = (alo, blo, 0);
        let mut lengths: HashMap<usize, usize> = HashMap::new();
        for i in alo..ahi {
            let mut next: HashMap<usize, usize> = HashMap::new();
            for &j in self.b2j.get(self.a[i]).map(Vec::as_slice).unwrap_or(&[]) {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j
                    .checked_sub(1)
                    .and_then(|before| lengths.get(&before))
                    .copied()
                    .unwrap_or(0)
                    + 1;
                next.insert(j, k);
                if k > best {
                    (besti, bestj, best) = (i + 1 - k, j + 1 - k, k);
                }
            }
            lengths = next;
        }
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            (besti, bestj, best) = (besti - 1, bestj - 1, best + 1);
        }
        while besti + best < ahi
            && bestj + best < bhi
            && self.a[besti + best] == self.b[bestj + best]
        {
            best += 1;
        }
        (besti, bestj, best)
    }

    /// `get_matching_blocks`, adjacent blocks merged, ending with `(len a, len b, 0)`.
    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let mut queue = vec![(0, self.a.len(), 0, self.b.len())];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.longest_match(alo, ahi, blo, bhi);
            if k == 0 {
                continue;
            }
            blocks.push((i, j, k));
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
        blocks.sort_unstable();
        let mut merged = Vec::new();
        let (mut i1, mut j1, mut k1) = (0, 0, 0);
        for (i2, j2, k2) in blocks {
            if i1 + k1 == i2 && j1 + k1 == j2 {
                k1 += k2;
            } else {
                if k1 > 0 {
                    merged.push((i1, j1, k1));
                }
                (i1, j1, k1) = (i2, j2, k2);
            }
        }
        if k1 > 0 {
            merged.push((i1, j1, k1));
        }
        merged.push((self.a.len(), self.b.len(), 0));
        merged
    }

    /// `get_opcodes`.
    fn opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut codes = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = match (i < ai, j < bj) {
                (true, true) => Some(Tag::Replace),
                (true, false) => Some(Tag::Delete),
                (false, true) => Some(Tag::Insert),
                (false, false) => None,
            };
            if let Some(tag) = tag {
                codes.push(Opcode {
                    tag,
                    i1: i,
                    i2: ai,
                    j1: j,
                    j2: bj,
                });
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                codes.push(Opcode {
                    tag: Tag::Equal,
                    i1: ai,
                    i2: i,
                    j1: bj,
                    j2: j,
                });
            }
        }
        codes
    }
}

/// `get_grouped_opcodes(n)`: the changes in hunks, each with up to `n` lines of
/// context, split where more than `2n` equal lines separate two changes.
fn grouped_opcodes(a: &[&str], b: &[&str], n: usize) -> Vec<Vec<Opcode>> {
    let mut codes = Matcher::new(a, b).opcodes();
    if codes.is_empty() {
        codes.push(Opcode {
            tag: Tag::Equal,
            i1: 0,
            i2: 1,
            j1: 0,
            j2: 1,
        });
    }
    if let Some(first) = codes.first_mut().filter(|c| c.tag == Tag::Equal) {
        first.i1 = first.i1.max(first.i2.saturating_sub(n));
        first.j1 = first.j1.max(first.j2.saturating_sub(n));
    }
    if let Some(last) = codes.last_mut().filter(|c| c.tag == Tag::Equal) {
        last.i2 = last.i2.min(last.i1 + n);
        last.j2 = last.j2.min(last.j1 + n);
    }
    let mut groups = Vec::new();
    let mut group = Vec::new();
    for mut code in codes {
        if code.tag == Tag::Equal && code.i2 - code.i1 > 2 * n {
            group.push(Opcode {
                i2: code.i2.min(code.i1 + n),
                j2: code.j2.min(code.j1 + n),
                ..code
            });
            groups.push(std::mem::take(&mut group));
            code.i1 = code.i1.max(code.i2.saturating_sub(n));
            code.j1 = code.j1.max(code.j2.saturating_sub(n));
        }
        group.push(code);
    }
    let only_context = matches!(group.as_slice(), [single] if single.tag == Tag::Equal);
    if !group.is_empty() && !only_context {
        groups.push(group);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(old: &str, new: &str) -> String {
        unified_diff(old, new, "previous", "current")
    }

    // Each expected text is what Python 3.11's difflib prints for the same inputs.
    #[test]
    fn a_small_change_reads_as_difflib_prints_it() {
        assert_eq!(
            diff("v1", "v2\nline2"),
            "--- previous\n+++ current\n@@ -1 +1,2 @@\n-v1\n+v2\n+line2"
        );
        assert_eq!(
            diff("", "first"),
            "--- previous\n+++ current\n@@ -0,0 +1 @@\n+first"
        );
        assert_eq!(diff("same\r\nlines", "same\nlines"), "");
    }

    #[test]
    fn distant_changes_make_separate_hunks_with_three_lines_of_context() {
        let old: Vec<String> = (1..=20).map(|n| format!("line {n}")).collect();
        let mut new = old.clone();
        new[1] = "changed 2".into();
        new[15] = "changed 16".into();
        new.push("line 21".into());
        assert_eq!(
            diff(&old.join("\n"), &new.join("\n")),
            "--- previous\n+++ current\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+changed 2\n line 3\n line 4\n line 5\n@@ -13,8 +13,9 @@\n line 13\n line 14\n line 15\n-line 16\n+changed 16\n line 17\n line 18\n line 19\n line 20\n+line 21"
        );
    }

    #[test]
    fn lines_split_where_python_splits_them() {
        assert_eq!(
            split_lines("a\r\nb\rc\u{2028}d\n\ne\n"),
            ["a", "b", "c", "d", "", "e"]
        );
        assert!(split_lines("").is_empty());
    }

    #[test]
    fn a_long_output_drops_its_popular_lines_from_the_matcher_as_difflib_does() {
        // 300 lines, each of the blank ones more than 1 % of them: difflib's autojunk
        // leaves them out of the index, which changes where the hunks fall.
        let old: Vec<String> = (0..300)
            .map(|n| {
                if n % 3 == 0 {
                    String::new()
                } else {
                    format!("row {n}")
                }
            })
            .collect();
        let mut new = old.clone();
        new[151] = "row changed".into();
        new.insert(10, "inserted".into());
        let got = diff(&old.join("\n"), &new.join("\n"));
        assert_eq!(
            got,
            "--- previous\n+++ current\n@@ -8,6 +8,7 @@\n row 7\n row 8\n \n+inserted\n row 10\n row 11\n \n@@ -149,7 +150,7 @@\n row 148\n row 149\n \n-row 151\n+row changed\n row 152\n \n row 154"
        );
    }
}
