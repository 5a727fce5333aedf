//! A strict walk over a job store's JSON text that builds no values: each job's keys and
//! the text of their values, in file order, the whole document checked as JSON on the
//! way. Readers of a few fields of 10,000 jobs pick what they need from the text.
//!
//! It accepts only what serde_json accepts and only the canonical shape (an object whose
//! `jobs` is a list of objects, no BOM); for anything else — or any doubt — it answers
//! `None`, and the caller takes the whole-document reader, which repairs or refuses it.

/// One key of a job and its value, both as they stand in the file.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The key's text between its quotes, escapes not decoded (see [`Entry::key_is_plain`]).
    pub key: &'a str,
    /// The value's JSON text.
    pub value: &'a str,
    key_escaped: bool,
}

impl<'a> Entry<'a> {
    /// A key without escapes reads as it stands.
    pub fn key_is_plain(&self) -> bool {
        !self.key_escaped
    }

    /// The key with its escapes decoded (`None` for one that decodes to no text, such
    /// as a lone surrogate half, which the walk refuses anyway).
    pub fn key_text(&self) -> Option<std::borrow::Cow<'a, str>> {
        match self.key_escaped {
            false => Some(std::borrow::Cow::Borrowed(self.key)),
            true => serde_json::from_str::<String>(&format!("\"{}\"", self.key))
                .ok()
                .map(std::borrow::Cow::Owned),
        }
    }
}

/// What a job's visitor wants next.
pub enum Walk {
    Continue,
    Stop,
}

/// serde_json refuses nesting deeper than 128; stopping earlier leaves those to it.
const MAX_DEPTH: usize = 100;

thread_local! {
    /// Set on this thread while [`the_long_way`] runs.
    static LONG_WAY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every walk on this thread answering `None`, so every reader of the
/// store takes its whole-document path: what a differential test compares the walk with.
#[doc(hidden)]
pub fn the_long_way<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            LONG_WAY.set(self.0);
        }
    }
    let _restore = Restore(LONG_WAY.replace(true));
    f()
}

/// Calls `each` with every job of a canonical store: its text and its entries. `None`
/// when the text is not a canonical store (or `each` stopped): nothing it was given
/// can be trusted then, since the rest of the file was not checked.
pub fn walk_jobs<'a>(
    bytes: &'a [u8],
    each: &mut dyn FnMut(&'a str, &[Entry<'a>]) -> Walk,
) -> Option<()> {
    walk_document(bytes, &mut |_, _| {}, each)
}

/// [`walk_jobs`] that also hands `top` every other top-level key (`updated_at`
/// included) and its value's text, in file order.
pub fn walk_document<'a>(
    bytes: &'a [u8],
    top: &mut dyn FnMut(&'a str, &'a str),
    each: &mut dyn FnMut(&'a str, &[Entry<'a>]) -> Walk,
) -> Option<()> {
    if LONG_WAY.get() {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut cursor = Cursor::new(text);
    let mut entries = Vec::with_capacity(48);
    let mut seen_jobs = false;
    cursor.ws();
    cursor.object(0, |cursor, key| {
        // An escaped key may read as `jobs` once decoded: the whole-document reader decides.
        if cursor.escaped {
            return None;
        }
        if key != "jobs" {
            return cursor.value(1).map(|value| top(key, value));
        }
        // A second `jobs` would replace the first: the whole-document reader decides.
        if std::mem::replace(&mut seen_jobs, true) {
            return None;
        }
        cursor.array(1, |cursor| {
            let start = cursor.at;
            entries.clear();
            cursor.entries(2, &mut entries)?;
            match each(&text[start..cursor.at], &entries) {
                Walk::Continue => Some(()),
                Walk::Stop => None,
            }
        })
    })?;
    cursor.ws();
    (seen_jobs && cursor.at == bytes.len()).then_some(())
}

/// [`walk_jobs`] with `each` on a second thread, fed the jobs in order in batches while
/// this one reads on: reading and what `each` does with a job take about as long, so a
/// listing of 10,000 jobs takes the longer of the two rather than both. Sequential when
/// no thread can be started.
pub fn walk_jobs_in_parallel<'a>(
    bytes: &'a [u8],
    each: &mut (dyn FnMut(&'a str, &[Entry<'a>]) -> Walk + Send),
) -> Option<()> {
    /// Jobs per hand-over: large enough that handing over costs nothing next to reading.
    const BATCH: usize = 256;
    struct Batch<'a> {
        jobs: Vec<(&'a str, std::ops::Range<usize>)>,
        entries: Vec<Entry<'a>>,
    }
    let new_batch = || Batch {
        jobs: Vec::with_capacity(BATCH),
        entries: Vec::with_capacity(BATCH * 40),
    };
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let stop = || stopped.store(true, std::sync::atomic::Ordering::Relaxed);
    let is_stopped = || stopped.load(std::sync::atomic::Ordering::Relaxed);
    let parallel = std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Batch<'a>>(4);
        let worker = std::thread::Builder::new().spawn_scoped(scope, || {
            for batch in receiver {
                for (text, range) in batch.jobs {
                    let Some(entries) = batch.entries.get(range) else {
                        return stop();
                    };
                    if let Walk::Stop = each(text, entries) {
                        return stop();
                    }
                }
            }
        });
        let Ok(worker) = worker else {
            return None;
        };
        let mut batch = new_batch();
        let walked = walk_jobs(bytes, &mut |text, entries| {
            if is_stopped() {
                return Walk::Stop;
            }
            let start = batch.entries.len();
            batch.entries.extend_from_slice(entries);
            batch.jobs.push((text, start..batch.entries.len()));
            if batch.jobs.len() == BATCH
                && sender
                    .send(std::mem::replace(&mut batch, new_batch()))
                    .is_err()
            {
                return Walk::Stop;
            }
            Walk::Continue
        });
        if walked.is_some() && sender.send(batch).is_err() {
            stop();
        }
        drop(sender);
        // A worker that panicked has not seen every job.
        if worker.join().is_err() {
            stop();
        }
        Some(walked.filter(|()| !is_stopped()))
    });
    match parallel {
        Some(walked) => walked,
        None => walk_jobs(bytes, each),
    }
}

/// The entries of one JSON object's text (a value an [`Entry`] holds), checked as JSON;
/// `None` when the text is not one object.
pub fn object_entries<'a>(text: &'a str, entries: &mut Vec<Entry<'a>>) -> Option<()> {
    entries.clear();
    let mut cursor = Cursor::new(text);
    cursor.entries(0, entries)?;
    (cursor.at == text.len()).then_some(())
}

/// The items of one JSON array's text, checked as JSON; `None` when the text is not one
/// array.
pub fn array_items<'a>(text: &'a str, items: &mut Vec<&'a str>) -> Option<()> {
    items.clear();
    let mut cursor = Cursor::new(text);
    cursor.array(0, |cursor| {
        items.push(cursor.value(0)?);
        Some(())
    })?;
    (cursor.at == text.len()).then_some(())
}

/// A string value's text without its quotes when it has no escapes (it then reads as it
/// stands); `None` for any other value.
pub fn plain_string(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// Appends `value` (checked JSON text) as serde_json writes the same value: no
/// whitespace, strings with only the escapes it needs, numbers in their shortest form,
/// the last of duplicate keys in the place of the first. Text that is already in that
/// form is copied; anything else goes through a `serde_json::Value`.
pub fn write_compact(value: &str, out: &mut Vec<u8>) -> serde_json::Result<()> {
    if let "null" | "true" | "false" = value {
        out.extend_from_slice(value.as_bytes());
        return Ok(());
    }
    if let Some(text) = plain_string(value) {
        if text.bytes().all(|b| b >= 0x20) {
            out.extend_from_slice(value.as_bytes());
            return Ok(());
        }
    }
    let mark = out.len();
    let mut cursor = Cursor::new(value);
    if cursor.copy_compact(0, out).is_some() && cursor.at == value.len() {
        return Ok(());
    }
    out.truncate(mark);
    let parsed: serde_json::Value = serde_json::from_str(value)?;
    serde_json::to_writer(out, &parsed)
}

/// How many bytes at the start of `bytes` can stand in a string as they are (no quote,
/// backslash or control character), eight at a time: strings are most of a store.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `x` that is zero (exact for the lowest such byte).
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut run = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(word);
        let special = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if special != 0 {
            return run + (special.trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    run + bytes[run..]
        .iter()
        .take_while(|&&b| b != b'"' && b != b'\\' && b >= 0x20)
        .count()
}

/// Finds which of a few keys a key is, comparing it only with those of its length.
pub struct KeyIndex<'k> {
    keys: &'k [&'k str],
    /// Bit `i` of `by_length[n]`: `keys[i]` is `n` bytes long (longer keys share the last).
    by_length: [u64; 33],
}

impl<'k> KeyIndex<'k> {
    pub const fn new(keys: &'k [&'k str]) -> KeyIndex<'k> {
        let mut by_length = [0u64; 33];
        let mut i = 0;
        while i < keys.len() && i < 64 {
            let n = if keys[i].len() < 32 {
                keys[i].len()
            } else {
                32
            };
            by_length[n] |= 1 << i;
            i += 1;
        }
        KeyIndex { keys, by_length }
    }

    /// The position of `key` among the keys.
    pub fn find(&self, key: &str) -> Option<usize> {
        if self.keys.len() > 64 {
            return self.keys.iter().position(|k| *k == key);
        }
        let mut candidates = self.by_length[key.len().min(32)];
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            // Keys of one length mostly differ in their first byte: checked before the rest.
            if self
                .keys
                .get(i)
                .is_some_and(|k| k.as_bytes().first() == key.as_bytes().first() && *k == key)
            {
                return Some(i);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// Each key's value text among `entries` into `values` (one slot per key, left as
    /// they are for keys absent); a later duplicate wins, as in a map. `None` when a key
    /// cannot be read.
    pub fn pick<'a>(&self, entries: &[Entry<'a>], values: &mut [Option<&'a str>]) -> Option<()> {
        for entry in entries {
            if let Some(slot) = self
                .find(&entry.key_text()?)
                .and_then(|i| values.get_mut(i))
            {
                *slot = Some(entry.value);
            }
        }
        Some(())
    }
}

struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    /// The last string read had an escape.
    escaped: bool,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            text,
            bytes: text.as_bytes(),
            at: 0,
            escaped: false,
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// One value at the cursor (no leading whitespace): its text.
    fn value(&mut self, depth: usize) -> Option<&'a str> {
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' => self.object(depth + 1, |cursor, _| cursor.value(depth + 1).map(drop))?,
            b'[' => self.array(depth + 1, |cursor| cursor.value(depth + 1).map(drop))?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(&self.text[start..self.at])
    }

    /// An object at the cursor; `member` reads each value (the cursor at its start) and
    /// leaves the cursor after it. The cursor ends after the closing brace.
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            if !self.more(b'}')? {
                return Some(());
            }
        }
    }

    /// An object at the cursor, its members appended to `entries`.
    fn entries(&mut self, depth: usize, entries: &mut Vec<Entry<'a>>) -> Option<()> {
        self.object(depth, |cursor, key| {
            let key_escaped = cursor.escaped;
            let value = cursor.value(depth)?;
            entries.push(Entry {
                key,
                value,
                key_escaped,
            });
            Some(())
        })
    }

    /// After a member or element: `true` past a comma (another follows), `false` past
    /// `close` (the container ended).
    fn more(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let next = self.peek()?;
        self.at += 1;
        match next {
            b',' => {
                self.ws();
                Some(true)
            }
            _ if next == close => Some(false),
            _ => None,
        }
    }

    fn array(
        &mut self,
        depth: usize,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            element(self)?;
            if !self.more(b']')? {
                return Some(());
            }
        }
    }

    /// A string at the cursor: its text between the quotes.
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        self.escaped = false;
        let start = self.at;
        loop {
            self.at += plain_run(self.bytes.get(self.at..)?);
            match *self.bytes.get(self.at)? {
                b'"' => {
                    let inner = &self.text[start..self.at];
                    self.at += 1;
                    return Some(inner);
                }
                b'\\' => {
                    self.at += 1;
                    self.escaped = true;
                    self.escape()?;
                }
                0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// The escape after a backslash. Stricter than serde_json's skipping (a lone
    /// surrogate half is refused), never looser.
    fn escape(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.at += 1;
                Some(())
            }
            b'u' => {
                self.at += 1;
                let unit = self.hex4()?;
                match unit {
                    0xDC00..=0xDFFF => None,
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                            return None;
                        }
                        self.at += 2;
                        (0xDC00..=0xDFFF).contains(&self.hex4()?).then_some(())
                    }
                    _ => Some(()),
                }
            }
            _ => None,
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let digits = self.text.get(self.at..self.at + 4)?;
        self.at += 4;
        u16::from_str_radix(digits, 16).ok()
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.bytes.get(self.at..self.at + word.len())? == word).then(|| self.at += word.len())
    }

    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// Copies the value at the cursor in serde_json's compact form; `None` when the
    /// text is not already in that form (an escape, a number serde_json rewrites, a
    /// duplicate key), which the caller then writes through a parsed value.
    fn copy_compact(&mut self, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
                let text = &self.bytes[start..self.at];
                if text.contains(&b'\\') {
                    return None;
                }
                out.extend_from_slice(text);
            }
            b'{' => {
                let mut keys: Vec<&str> = Vec::new();
                out.push(b'{');
                self.object(depth + 1, |cursor, key| {
                    if key.contains('\\') || keys.contains(&key) {
                        return None;
                    }
                    if !keys.is_empty() {
                        out.push(b',');
                    }
                    keys.push(key);
                    out.push(b'"');
                    out.extend_from_slice(key.as_bytes());
                    out.extend_from_slice(b"\":");
                    cursor.copy_compact(depth + 1, out)
                })?;
                out.push(b'}');
            }
            b'[' => {
                let mut first = true;
                out.push(b'[');
                self.array(depth + 1, |cursor| {
                    if !std::mem::take(&mut first) {
                        out.push(b',');
                    }
                    cursor.copy_compact(depth + 1, out)
                })?;
                out.push(b']');
            }
            _ => {
                self.value(depth)?;
                let text = &self.bytes[start..self.at];
                // Integers serde_json keeps exactly; anything else it may rewrite.
                let digits = text.strip_prefix(b"-").unwrap_or(text);
                let number_kept = digits.len() <= 18
                    && digits.iter().all(u8::is_ascii_digit)
                    && !text.starts_with(b"-0");
                if matches!(text[0], b'-' | b'0'..=b'9') && !number_kept {
                    return None;
                }
                out.extend_from_slice(text);
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs_of(text: &str) -> Option<Vec<Vec<(String, String)>>> {
        let mut jobs = Vec::new();
        walk_jobs(text.as_bytes(), &mut |_, entries| {
            jobs.push(
                entries
                    .iter()
                    .map(|e| (e.key.to_string(), e.value.to_string()))
                    .collect(),
            );
            Walk::Continue
        })?;
        Some(jobs)
    }

    #[test]
    fn a_store_too_deep_for_the_whole_document_reader_is_not_read_job_by_job() {
        let path = std::path::Path::new("jobs.json");
        for depth in 120..135 {
            let deep = "[".repeat(depth) + &"]".repeat(depth);
            let stores = [
                format!("{{\"jobs\": [{{\"id\": \"a\"}}], \"x\": {deep}}}"),
                format!("{{\"jobs\": [{{\"id\": \"a\", \"x\": {deep}}}]}}"),
                format!("{{\"jobs\": [], \"x\": \"[[[{deep}\"}}"),
            ];
            for store in stores {
                let whole = crate::jsonjobs::parse_document(store.as_bytes(), path).is_ok();
                if !whole {
                    let text = crate::jsonjobs::JobsText::new(store.as_bytes(), path);
                    assert!(text.job_texts().is_none(), "depth {depth}: {store}");
                }
            }
        }
    }

    #[test]
    fn the_long_way_turns_every_walk_away_on_its_thread_only_while_it_runs() {
        let store = "{\"jobs\": [{\"id\": \"a\"}]}";
        assert!(the_long_way(|| jobs_of(store)).is_none());
        the_long_way(|| {
            the_long_way(|| ());
            assert!(
                jobs_of(store).is_none(),
                "an inner call leaves the outer one on"
            );
        });
        assert_eq!(jobs_of(store).map(|jobs| jobs.len()), Some(1));
        let other_thread =
            the_long_way(|| std::thread::scope(|s| s.spawn(|| jobs_of(store)).join()));
        assert!(matches!(other_thread, Ok(Some(_))));
    }

    #[test]
    fn a_canonical_store_gives_each_job_its_entries_as_text() {
        let jobs = jobs_of(
            "{\"updated_at\": null, \"jobs\": [ {\"id\": \"a\", \"repeat\": {\"times\": 2},\n \"x\": [1, -2.5e3, true]}, {} ], \"other\": {}}",
        );
        assert_eq!(
            jobs,
            Some(vec![
                vec![
                    ("id".into(), "\"a\"".into()),
                    ("repeat".into(), "{\"times\": 2}".into()),
                    ("x".into(), "[1, -2.5e3, true]".into()),
                ],
                vec![],
            ])
        );
    }

    /// A key with an escape may be `jobs` in disguise, and the last `jobs` wins: the walk
    /// leaves such a store to the whole-document reader.
    #[test]
    fn an_escaped_top_level_key_is_left_to_the_whole_document_reader() {
        assert_eq!(
            jobs_of("{\"jobs\": [{\"id\": \"a\"}], \"\\u006aobs\": [{\"id\": \"b\"}]}"),
            None
        );
        assert_eq!(jobs_of("{\"upd\\u0061ted_at\": null, \"jobs\": []}"), None);
        assert_eq!(
            jobs_of("{\"updated_at\": null, \"jobs\": []}"),
            Some(vec![])
        );
    }

    /// Every text serde_json refuses is refused here too (the other way round is allowed:
    /// the whole-document reader then decides).
    #[test]
    fn what_serde_json_refuses_is_refused() {
        let bad = [
            "",
            "[]",
            "{\"jobs\": {}}",
            "{\"jobs\": [1]}",
            "{\"jobs\": [{}],}",
            "{\"jobs\": [{},]}",
            "{\"jobs\": [{\"a\": 01}]}",
            "{\"jobs\": [{\"a\": 1.}]}",
            "{\"jobs\": [{\"a\": .5}]}",
            "{\"jobs\": [{\"a\": 1e}]}",
            "{\"jobs\": [{\"a\": +1}]}",
            "{\"jobs\": [{\"a\": \"\\x\"}]}",
            "{\"jobs\": [{\"a\": \"\\u12\"}]}",
            "{\"jobs\": [{\"a\": \"tab\there\"}]}",
            "{\"jobs\": [{\"a\": tru}]}",
            "{\"jobs\": [{\"a\" 1}]}",
            "{\"jobs\": [{\"a\": 1 \"b\": 2}]}",
            "{\"jobs\": []} x",
            "\u{feff}{\"jobs\": []}",
            "{\"jobs\": [], \"jobs\": []}",
            "{\"updated_at\": 1}",
        ];
        for text in bad {
            assert!(jobs_of(text).is_none(), "accepted {text:?}");
        }
        let deep = format!(
            "{{\"jobs\": [{{\"a\": {}1{}}}]}}",
            "[".repeat(150),
            "]".repeat(150)
        );
        assert!(jobs_of(&deep).is_none());
        assert!(jobs_of("{\"jobs\": [{\"a\": \"\\ud83d\\ude00 \\u00e9\\/\"}]}\n").is_some());
    }

    #[test]
    fn the_parallel_walk_gives_every_job_in_order_or_nothing() {
        let jobs: Vec<String> = (0..1000)
            .map(|i| format!("{{\"id\": \"j{i}\", \"n\": [{i}]}}"))
            .collect();
        let text = format!("{{\"jobs\": [{}], \"x\": 1}}", jobs.join(",\n"));
        let mut seen = Vec::new();
        let walked = walk_jobs_in_parallel(text.as_bytes(), &mut |job, entries| {
            seen.push((job.to_string(), entries.len()));
            Walk::Continue
        });
        assert_eq!(walked, Some(()));
        let want: Vec<(String, usize)> = jobs.iter().map(|j| (j.clone(), 2)).collect();
        assert_eq!(seen, want);

        let mut calls = 0;
        let stopped = walk_jobs_in_parallel(text.as_bytes(), &mut |_, _| {
            calls += 1;
            match calls {
                700 => Walk::Stop,
                _ => Walk::Continue,
            }
        });
        assert_eq!((stopped, calls), (None, 700));

        let broken = format!("{{\"jobs\": [{}], \"x\": }}", jobs.join(","));
        assert_eq!(
            walk_jobs_in_parallel(broken.as_bytes(), &mut |_, _| Walk::Continue),
            None
        );
    }

    #[test]
    fn a_plain_run_ends_at_the_first_quote_backslash_or_control_character() {
        for text in ["", "abc", "0123456789abcdef", "héllo wörld, ünïcode ✓✓✓"] {
            for end in ["\"", "\\", "\n", "\u{1f}"] {
                let whole = format!("{text}{end}tail\"");
                assert_eq!(plain_run(whole.as_bytes()), text.len(), "{whole:?}");
            }
            assert_eq!(plain_run(text.as_bytes()), text.len());
        }
        assert_eq!(plain_run(b"\x7f\x20 ~"), 4);
    }

    #[test]
    fn a_key_index_finds_each_key_and_nothing_else() {
        let keys = ["id", "name", "next_run_at", "last_run_at", &"k".repeat(40)];
        let index = KeyIndex::new(&keys);
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(index.find(key), Some(i));
        }
        for other in [
            "",
            "i",
            "nam",
            "next_run_as",
            &"k".repeat(39),
            &"k".repeat(41),
        ] {
            assert_eq!(index.find(other), None, "{other}");
        }
    }

    #[test]
    fn compact_text_is_what_serde_json_writes() {
        let values = [
            "\"plain\"",
            "\"esc\\u00e9\\/\\n\"",
            "{ \"a\" : [ 1 , -2, 3.0, 1e2, -0, 123456789012345678901 ] , \"b\": {\"c\": null}}",
            "{\"a\": 1, \"b\": 2, \"a\": 3}",
            "[]",
            "{}",
            "true",
            "-7",
        ];
        for text in values {
            let mut out = Vec::new();
            write_compact(text, &mut out).unwrap();
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), value.to_string(), "{text}");
        }
    }
}
