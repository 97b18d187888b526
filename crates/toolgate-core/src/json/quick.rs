//! A one-pass reader for the JSON a call line is made of, without serde.
//!
//! Reading a call through serde costs more than deciding it: the line is
//! walked once to cut out the arguments as raw text and again to read their
//! members, and every step goes through the visitor machinery. This reader
//! walks the bytes once. It accepts a strict subset of JSON, and gives up
//! (`None`) on anything outside it, valid or not: the caller then reads the
//! text through the serde path, which owns every error message. So the
//! subset only has to be right where it says yes, and the one invariant is
//!
//! > when this reader returns `Some`, the serde path accepts the same text
//! > and reads the same values from it.
//!
//! Outside the subset, on purpose: keys holding a backslash, `\u0000`, lone
//! surrogates, numbers with an exponent or more than 17 digits in a part,
//! nesting past 64 levels, objects of more than 32 keys. The tests and the
//! `intake` fuzz target hold the invariant against the serde path.
//!
//! Depends on nothing in the crate but `json::Members`.

use super::Members;
use std::borrow::Cow;

/// Nesting past this gives up (serde's own limit is 128).
const MAX_DEPTH: usize = 64;
/// An object with more keys gives up, so the duplicate check stays a short
/// linear scan.
const MAX_KEYS: usize = 32;
/// Digits in a number's integer or fraction part past this give up, so every
/// number read is one serde reads as a finite value.
const MAX_DIGITS: usize = 17;

/// The bytes that end a run of plain string bytes: the quote, the
/// backslash, and the control characters JSON refuses unescaped.
// Built at compile time, where an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The length of the run of plain string bytes at the start of `bytes`
/// (all of it when nothing stops the run).
fn plain_run(bytes: &[u8]) -> usize {
    // Eight bytes at a time while none of them stops the run; the table
    // finds the exact byte in the word that does, and reads the tail.
    let mut at = 0;
    for word in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([b'"'; 8]));
        if may_stop(w) {
            break;
        }
        at += 8;
    }
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest
        .iter()
        .position(|&b| STOP.get(usize::from(b)).copied().unwrap_or(true))
        .unwrap_or(rest.len())
}

/// Whether a byte of `w` may be one of [`STOP`]: a `"`, a `\` or a byte
/// below 0x20. The test is exact for the lowest such byte and may flag
/// bytes above it (a borrow carries), so a `false` is certain and a
/// `true` is settled byte by byte.
fn may_stop(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero(w ^ (ONES * u64::from(b'"')));
    let backslash = zero(w ^ (ONES * u64::from(b'\\')));
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    quote | backslash | control != 0
}

/// A cursor over a JSON text. Every method returns `None` when the text
/// leaves the subset (or is invalid), and the caller stops there.
pub(crate) struct Reader<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Reader<'t> {
    pub(crate) fn new(text: &'t str) -> Reader<'t> {
        Reader { text, at: 0 }
    }

    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Skips JSON whitespace and returns the next byte, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while let Some(b) = self.byte() {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `want` after whitespace.
    pub(crate) fn eat(&mut self, want: u8) -> Option<()> {
        (self.peek()? == want).then(|| self.at += 1)
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// After `{`: each member's key, handed to `member`, which reads the
    /// value; to the closing `}`.
    // Inlined into each reader of objects: without it the call line's
    // intake cost about 50 instructions more (callgrind, JSONL bench).
    #[inline]
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Reader<'t>, &'t str) -> Option<()>,
    ) -> Option<()> {
        let mut more = self.first_member()?;
        while more {
            let k = self.key()?;
            member(self, k)?;
            more = self.next_member()?;
        }
        Some(())
    }

    /// After `{`: `true` when a member follows, `false` on the closing `}`.
    fn first_member(&mut self) -> Option<bool> {
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(false);
        }
        Some(true)
    }

    /// After a member's value: `true` on `,` (a member must follow), `false`
    /// on the closing `}`.
    fn next_member(&mut self) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b'}' => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A member's key and its `:`. Keys with escapes give up: they are rare,
    /// and comparing them for duplicates would need them decoded.
    fn key(&mut self) -> Option<&'t str> {
        self.eat(b'"')?;
        let start = self.at;
        self.at += plain_run(self.text.as_bytes().get(self.at..)?);
        if self.byte()? != b'"' {
            return None;
        }
        let key = self.text.get(start..self.at)?;
        self.at += 1;
        self.eat(b':')?;
        Some(key)
    }

    /// Whether the next value is a string (after whitespace).
    pub(crate) fn at_string(&mut self) -> Option<bool> {
        Some(self.peek()? == b'"')
    }

    /// Consumes `null` when it comes next.
    pub(crate) fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            return self.literal("null").map(|()| true);
        }
        Some(false)
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.text.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A string, decoded; borrowed when it holds no escape.
    pub(crate) fn string(&mut self) -> Option<Cow<'t, str>> {
        self.eat(b'"')?;
        let bytes = self.text.as_bytes();
        let mut run = self.at;
        let mut out: Option<String> = None;
        loop {
            self.at += plain_run(bytes.get(self.at..)?);
            let b = *bytes.get(self.at)?;
            if b == b'"' {
                let tail = self.text.get(run..self.at)?;
                self.at += 1;
                return Some(match out {
                    None => Cow::Borrowed(tail),
                    Some(mut s) => {
                        s.push_str(tail);
                        Cow::Owned(s)
                    }
                });
            }
            if b != b'\\' {
                return None;
            }
            let s = out.get_or_insert_with(String::new);
            s.push_str(self.text.get(run..self.at)?);
            s.push(self.escape()?);
            run = self.at;
        }
    }

    /// At a backslash: the character its escape stands for, the cursor left
    /// past it. `\u0000` and lone surrogates give up (the serde path refuses
    /// both, with its own words).
    fn escape(&mut self) -> Option<char> {
        let letter = *self.text.as_bytes().get(self.at + 1)?;
        self.at += 2;
        Some(match letter {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                let code = match high {
                    0xD800..=0xDBFF => {
                        self.literal("\\u")?;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF | 0 => return None,
                    _ => high,
                };
                char::from_u32(code)?
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at.checked_add(4)?)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number in the subset: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, each part at
    /// most [`MAX_DIGITS`] digits.
    fn number(&mut self) -> Option<()> {
        if self.byte() == Some(b'-') {
            self.at += 1;
        }
        if self.byte() == Some(b'0') {
            self.at += 1;
        } else {
            self.digits()?;
        }
        if self.byte() == Some(b'.') {
            self.at += 1;
            self.digits()?;
        }
        // An exponent, or a digit after a leading zero, gives up.
        match self.byte() {
            Some(b'e' | b'E' | b'0'..=b'9') => None,
            _ => Some(()),
        }
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.at;
        while matches!(self.byte(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        (1..=MAX_DIGITS).contains(&(self.at - start)).then_some(())
    }

    /// Any value, checked as the serde path checks it (duplicate keys at
    /// every level, no NUL in any string or key) and dropped.
    pub(crate) fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                self.at += 1;
                let mut keys: Vec<&str> = Vec::new();
                self.object(|r, k| {
                    if keys.len() >= MAX_KEYS || keys.contains(&k) {
                        return None;
                    }
                    keys.push(k);
                    r.skip(depth + 1)
                })
            }
            b'[' => {
                self.at += 1;
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A value read as arguments are: its raw text (as given, without the
    /// whitespace around it), and for an object its top-level members with
    /// their string values, as [`super::scan_members`] keeps them.
    pub(crate) fn members(&mut self, depth: usize) -> Option<(&'t str, Members)> {
        self.members_in(depth, None)
    }

    /// As [`Reader::members`], into `spare`'s buffers when one is given.
    pub(crate) fn members_in(
        &mut self,
        depth: usize,
        spare: Option<Members>,
    ) -> Option<(&'t str, Members)> {
        if self.peek()? != b'{' {
            let start = self.at;
            self.skip(depth)?;
            return Some((self.text.get(start..self.at)?, Members::default()));
        }
        let start = self.at;
        self.at += 1;
        // Names and values decoded are never longer than the text left,
        // and a call's arguments are mostly a few short members: room for
        // them up front, so the buffers do not grow member by member.
        let left = self.text.len().saturating_sub(self.at);
        let mut members = match spare {
            Some(mut m) => {
                m.clear();
                m
            }
            None => Members::with_capacity(4, left.min(4096)),
        };
        self.object(|r, k| {
            if members.len() >= MAX_KEYS || members.iter().any(|(n, _)| n == k) {
                return None;
            }
            if r.at_string()? {
                members.push(k, Some(&r.string()?));
            } else {
                r.skip(depth + 1)?;
                members.push(k, None);
            }
            Some(())
        })?;
        let raw = self.text.get(start..self.at)?;
        Some((raw, members))
    }
}

/// [`super::scan_members`] in one pass, for texts in the subset: `None`
/// means "ask the serde path", never "invalid".
pub(crate) fn scan_members(text: &str) -> Option<Members> {
    let mut r = Reader::new(text);
    let (_, members) = r.members(1)?;
    r.at_end().then_some(members)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;
    use crate::call::Call;
    use crate::json::scan_members_by_serde;

    /// What the serde path makes of a call line, in a form two readings
    /// can be compared by (the arguments' members included).
    fn call_by_serde(line: &str) -> String {
        format!(
            "{:?}",
            Call::from_json_by_serde(line).map_err(|e| e.to_string())
        )
    }

    fn call_by_either(line: &str) -> String {
        format!("{:?}", Call::from_json(line).map_err(|e| e.to_string()))
    }

    #[test]
    fn texts_in_the_subset_read_as_the_serde_path_reads_them() {
        let texts = [
            r#"{}"#,
            r#" { "command" : "git status" } "#,
            r#"{"command":"echo \"hi\" \\ \/ \b\f\n\r\t","n":-0,"f":12.5,"t":true,"x":null}"#,
            r#"{"path":"caf\u00e9 \u2603 \ud83d\ude00 é","deep":{"a":[1,[2,{"b":"c"}],{}],"c":[]}}"#,
            r#"{"":"empty key","k":"\u001b[0m","z":"\u007f"}"#,
            r#""just a string""#,
            r#"[1, "two", {"three": 3}]"#,
            r#"12345678901234567"#,
            "{\"tabs\":\t\"and\"\r\n,\"newlines\" :[ ]}",
        ];
        for t in texts {
            let quick = scan_members(t);
            assert!(quick.is_some(), "{t} is in the subset");
            assert_eq!(quick.map(Ok), Some(scan_members_by_serde(t)), "{t}");
        }
        let lines = [
            r#"{"tool":"bash","args":{"command":"ls"},"call_id":"c1","run_id":"r"}"#,
            r#"{"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t","extra":[1,{"a":2}]}"#,
            r#"{"tool":"bash","args":"not an object","confined":null}"#,
            r#"{"tool":"bash"}"#,
            r#"{"args":{},"tool":"mcp__x__y","scope":"s","cwd":"/w"}"#,
            r#"{"tool":"bash","args":{"command":"ls"},"unknown":1}"#,
            r#"{"tool":1,"args":{}}"#,
            r#"{"tool":"bash","toolName":"x","args":{}}"#,
            r#"{"tool":"bash\u0007","args":{}}"#,
        ];
        for l in lines {
            assert!(quick_call(l), "{l} is in the subset");
            assert_eq!(call_by_either(l), call_by_serde(l), "{l}");
        }
    }

    /// Whether the call reader takes `line` without the serde path.
    fn quick_call(line: &str) -> bool {
        crate::call::quick_members(line, &mut Default::default(), None).is_some()
    }

    #[test]
    fn texts_outside_the_subset_are_left_to_the_serde_path() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let wide = format!(
            "{{{}}}",
            (0..=MAX_KEYS)
                .map(|i| format!("\"k{i}\":1"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let texts = [
            r#"{"a":1,"a":2}"#,
            r#"{"o":{"a":1,"a":2}}"#,
            r#"{"o":[{"a":1,"a":2}]}"#,
            r#"{"a":1,}"#,
            r#"[1,]"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00\ud800"}"#,
            r#"{"a":"\ud800\u0041"}"#,
            r#"{"a":"x\u0000y"}"#,
            r#"{"a\u0041":1}"#,
            r#"{"a\"":1}"#,
            r#"{"a":1e5}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":123456789012345678}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":tru}"#,
            r#"{"a":1} x"#,
            r#"{"a":1}{}"#,
            "{\"a\":\"tab\there\"}",
            "{\"a\":\"unit\u{1f}separator\"}",
            "{\"a\u{1f}\":1}",
            "\u{feff}{}",
            r#"{"a" 1}"#,
            r#"{"a":1 "b":2}"#,
            r#"{"a":"unterminated}"#,
            &deep,
            &wide,
        ];
        for t in texts {
            assert_eq!(scan_members(t), None, "{t} is outside the subset");
            let line = format!(r#"{{"tool":"bash","args":{t}}}"#);
            assert_eq!(call_by_either(&line), call_by_serde(&line), "{line}");
        }
    }

    #[test]
    fn a_run_ends_at_its_first_stop_byte_wherever_it_falls_in_a_word() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        for len in 0..40 {
            for at in 0..=len {
                for stop in [b'"', b'\\', 0x00, 0x1f] {
                    // Plain bytes around the stop that sit next to the
                    // stops' values, and a multi-byte character.
                    let mut b: Vec<u8> = "!#[]\u{20}~é".bytes().cycle().take(len).collect();
                    if at < len {
                        b[at] = stop;
                    }
                    assert_eq!(plain_run(&b), naive(&b).unwrap_or(len), "{b:?}");
                }
            }
        }
    }

    /// A small deterministic generator (xorshift), so the differential
    /// below needs no dependency and reproduces from its seed.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len())]
        }

        /// Pieces biased toward the subset's edges: escapes, surrogates,
        /// repeated keys, numbers at the digit limit, whitespace.
        fn string(&mut self) -> String {
            let pieces = [
                "a",
                "git",
                " ",
                "é",
                "☃",
                "\\\"",
                "\\\\",
                "\\n",
                "\\u0041",
                "\\u00e9",
                "\\ud83d\\ude00",
                "\\ud800",
                "\\udc00",
                "\\u0000",
                "\\x",
                "\t",
                "/",
            ];
            let mut s = String::from("\"");
            for _ in 0..self.below(4) {
                s.push_str(self.pick(&pieces));
            }
            s.push('"');
            s
        }

        fn value(&mut self, depth: usize) -> String {
            let atoms = [
                "0",
                "-0",
                "1",
                "12.5",
                "-3.25",
                "1e5",
                "01",
                "12345678901234567",
                "123456789012345678",
                "true",
                "false",
                "null",
                "tru",
                "1.",
            ];
            match if depth > 3 {
                self.below(2)
            } else {
                self.below(5)
            } {
                0 => self.pick(&atoms).to_string(),
                1 => self.string(),
                2 => {
                    let items: Vec<String> =
                        (0..self.below(3)).map(|_| self.value(depth + 1)).collect();
                    format!("[{}]", items.join(self.pick(&[",", " , ", ",,"])))
                }
                _ => self.object(depth + 1),
            }
        }

        fn object(&mut self, depth: usize) -> String {
            let keys = [
                "\"command\"",
                "\"a\"",
                "\"b\"",
                "\"\"",
                "\"a\\u0041\"",
                "\"path\"",
            ];
            let members: Vec<String> = (0..self.below(4))
                .map(|_| {
                    let k = self.pick(&keys);
                    let v = self.value(depth);
                    format!("{k}{}{v}", self.pick(&[":", " : ", ":\n"]))
                })
                .collect();
            format!("{{{}}}", members.join(self.pick(&[",", ", ", ",,"])))
        }

        fn line(&mut self) -> String {
            let tools = [
                "\"bash\"",
                "\"Bash\"",
                "1",
                "null",
                "\"a\\u0000\"",
                "\"mcp__x\"",
            ];
            let others = [
                "\"call_id\"",
                "\"run_id\"",
                "\"confined\"",
                "\"scope\"",
                "\"tool\"",
                "\"extra\"",
            ];
            let mut members = vec![
                format!("\"tool\":{}", self.pick(&tools)),
                format!("\"args\":{}", self.value(1)),
            ];
            for _ in 0..self.below(3) {
                members.push(format!("{}:{}", self.pick(&others), self.value(2)));
            }
            if self.below(4) == 0 {
                members.swap(0, 1);
            }
            let mut line = format!("{{{}}}", members.join(","));
            // One byte cut or doubled now and then: the reader must give
            // up on what the generator did not mean to write.
            if self.below(8) == 0 && !line.is_empty() {
                let at = self.below(line.len());
                if line.is_char_boundary(at) {
                    line.truncate(at);
                }
            }
            line
        }
    }

    #[test]
    fn generated_texts_read_as_the_serde_path_reads_them() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let (mut quick, mut quick_lines, mut total) = (0, 0, 0);
        // Every line is also read into the buffers of the call before it.
        let mut spare: Option<Call> = None;
        for _ in 0..20_000 {
            let text = g.value(0);
            total += 1;
            if let Some(m) = scan_members(&text) {
                quick += 1;
                assert_eq!(Ok(m), scan_members_by_serde(&text), "{text}");
            }
            let line = g.line();
            quick_lines += usize::from(quick_call(&line));
            assert_eq!(call_by_either(&line), call_by_serde(&line), "{line}");
            let reused = Call::from_json_reusing(&line, spare.take());
            assert_eq!(
                format!("{:?}", reused.as_ref().map_err(|e| e.to_string())),
                call_by_serde(&line),
                "{line}"
            );
            spare = reused.ok();
        }
        // The generator is biased toward the subset's edges; still, a
        // quarter of its texts and an eighth of its lines (each line holds
        // several values) fall inside, so the comparisons are not vacuous.
        assert!(quick * 4 >= total, "{quick} of {total} in the subset");
        assert!(
            quick_lines * 8 >= total,
            "{quick_lines} of {total} lines in the subset"
        );
    }
}
