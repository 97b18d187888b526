//! Quoting subject texts the way agentpolicy's reasons quote them.
//!
//! agentpolicy quotes a subject's text with Go's `strconv.Quote` in the reason
//! of a blocked compound command (`denied by bash(rm:*) on "rm -rf /"`). The
//! corpus compares reasons byte for byte, so toolgate reproduces that quoting.
//! Depends on nothing else in the crate.

use std::fmt::Write;

/// Quotes `s` as Go's `strconv.Quote` does: double quotes around, `\"` and
/// `\\` escaped, the C escapes for `\a \b \f \n \r \t \v`, `\xNN` for other
/// control bytes, `\uNNNN` / `\UNNNNNNNN` for characters that are not
/// printable, and printable Unicode kept as is.
///
/// Go decides printability from the Unicode tables; toolgate carries the
/// categories that matter for display deception (controls, format characters
/// such as the bidirectional overrides and zero-width characters, spaces other
/// than U+0020, private use and noncharacters) and prints unassigned code
/// points as they are, where Go would escape them.
///
/// ```
/// use toolgate_core::quote::go_quote;
/// assert_eq!(go_quote("rm -rf /"), r#""rm -rf /""#);
/// assert_eq!(go_quote("a\tb\"\u{a0}é"), r#""a\tb\"\u00a0é""#);
/// ```
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Whether Go's `unicode.IsPrint` would print `c` as it is (see [`go_quote`]
/// for where toolgate's tables are smaller than Go's).
pub fn is_printable(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    if c.is_control() {
        return false;
    }
    if c.is_whitespace() {
        return false;
    }
    !is_format(u) && !is_private_use(u) && !is_noncharacter(u)
}

/// Whether `c` is invisible or reorders text: a format character (zero-width,
/// bidirectional controls, tags), a control, or a space other than U+0020.
/// The shell splitter and the reasons use it to flag text that would display
/// differently from what runs.
pub fn is_invisible_or_bidi(c: char) -> bool {
    let u = c as u32;
    c.is_control() || (c.is_whitespace() && c != ' ') || is_format(u)
}

fn is_format(u: u32) -> bool {
    matches!(u,
        0x00AD
        | 0x0600..=0x0605
        | 0x061C
        | 0x06DD
        | 0x070F
        | 0x0890..=0x0891
        | 0x08E2
        | 0x180E
        | 0x200B..=0x200F
        | 0x202A..=0x202E
        | 0x2060..=0x2064
        | 0x2066..=0x206F
        | 0xFEFF
        | 0xFFF9..=0xFFFB
        | 0x110BD
        | 0x110CD
        | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A
        | 0xE0001
        | 0xE0020..=0xE007F)
}

fn is_private_use(u: u32) -> bool {
    matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD)
}

fn is_noncharacter(u: u32) -> bool {
    (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn quotes_like_go() {
        // Expected values are what Go's strconv.Quote prints.
        let cases = [
            ("", r#""""#),
            ("git status", r#""git status""#),
            ("> /etc/motd", r#""> /etc/motd""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\u{7}\u{8}\u{c}\n\r\t\u{b}", r#""\a\b\f\n\r\t\v""#),
            ("\u{0}\u{1f}\u{7f}", r#""\x00\x1f\x7f""#),
            ("\u{85}", r#""\u0085""#),
            ("\u{a0}", r#""\u00a0""#),
            ("\u{ad}", r#""\u00ad""#),
            ("é日本", r#""é日本""#),
            ("\u{200b}\u{202e}\u{2066}", r#""\u200b\u202e\u2066""#),
            ("\u{feff}", r#""\ufeff""#),
            ("\u{e0041}", r#""\U000e0041""#),
            ("\u{1F600}", "\"\u{1F600}\""),
            ("\u{3000}", r#""\u3000""#),
            ("\u{10FFFF}", r#""\U0010ffff""#),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want, "input {input:?}");
        }
    }
}
