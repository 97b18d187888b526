//! Words built by brace expansion or `$IFS`, expanded as bash expands
//! them: `{rm,-rf,~}` is the three words `rm -rf ~`, and
//! `rm${IFS}-rf${IFS}~` is the same three words when `IFS` has its default
//! value. An argument's braces and globs are read too, for where they can
//! reach: `cat {,/}etc/passwd` names `/etc/passwd`, and `cat .*/x` names
//! `../x` in a shell whose globs match `..` (bash before 5.2).
//!
//! A computed program name is an opaque piece whatever this module says, so
//! no allow rule covers it. The words found here only give deny and ask
//! rules a form to read (a constraint), so that `{rm,-rf,~}` meets
//! `Bash(rm:*)` and is denied rather than asked about. A wrong reading can
//! therefore only add a denial or a question, never an approval: a line
//! that changed `IFS` before, or a brace bash would read another way, costs
//! at most an ask where a deny was due.

/// The most words one program word may expand into; past it, nothing is
/// read (`{a,b}{a,b}…` doubles with every brace).
const MOST_WORDS: usize = 64;

/// The words `value` expands into, read as an unquoted word whose only
/// expansions are braces and `$IFS` (`${IFS}`): `None` when it holds
/// another expansion, or expands into nothing or too many words.
///
/// `value` is the word with quotes removed; the caller checks that no part
/// of it was quoted, since a quoted brace or `$` is literal.
pub(super) fn words(value: &str) -> Option<Vec<String>> {
    let separated = ifs(value)?;
    let mut out = Vec::new();
    for w in braces(&separated)? {
        out.extend(
            w.split('\u{0}')
                .filter(|p| !p.is_empty())
                .map(str::to_string),
        );
        if out.len() > MOST_WORDS {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The words an argument's unquoted braces expand into (`{,/}etc` is `etc`
/// and `/etc`), each with its `$` expansions kept as written, so that rules
/// still see them; empty words are dropped, as bash drops them. `None` past
/// [`MOST_WORDS`].
pub(super) fn alternatives(value: &str) -> Option<Vec<String>> {
    let mut out = braces(value)?;
    out.retain(|w| !w.is_empty());
    Some(out)
}

/// `value` with each path segment that a glob could expand to `..` written
/// as `..` (`.*/x` is `../x`, `a/.?` is `a/..`): bash before 5.2 matches
/// `..` with a pattern that starts with a literal dot, and so does a shell
/// with `globskipdots` off. A segment such a shell would not match to `..`
/// is kept. The caller has checked that the word holds an unquoted glob.
pub(super) fn parent_reach(value: &str) -> String {
    value
        .split('/')
        .map(|seg| if matches_dot_dot(seg) { ".." } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether the glob `seg` (one path segment) matches `..`: a literal dot,
/// then a pattern that matches `.`. A class is taken to match `.` unless it
/// plainly cannot (`[ab]`, `[!.]`), so a doubt reads as a match.
fn matches_dot_dot(seg: &str) -> bool {
    let Some(rest) = seg.strip_prefix('.') else {
        return false;
    };
    // Elements of `rest` other than `*`: whether each matches a `.`.
    let mut elements: Vec<bool> = Vec::new();
    let mut stars = 0usize;
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => stars += 1,
            '?' => elements.push(true),
            '\\' => elements.push(chars.next() == Some('.')),
            '[' => {
                let negated = chars.next_if(|&c| c == '!' || c == '^').is_some();
                let mut body = String::new();
                // A `]` first in the class is a member of it.
                if let Some(c) = chars.next_if(|&c| c == ']') {
                    body.push(c);
                }
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == ']' {
                        closed = true;
                        break;
                    }
                    body.push(c);
                }
                if !closed {
                    // No class: a literal `[`, then the rest as literals.
                    elements.push(false);
                    elements.extend(body.chars().map(|c| c == '.'));
                    continue;
                }
                let has_dot = body.contains('.');
                let named = body.contains("[:");
                elements.push(if negated { !has_dot } else { has_dot || named });
            }
            c => elements.push(c == '.'),
        }
    }
    match elements.as_slice() {
        [] => stars > 0,
        [one] => *one,
        _ => false,
    }
}

/// `value` with each `$IFS` and `${IFS}` made a NUL (a field separator);
/// `None` when another `$` expansion is in it.
fn ifs(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(rest.get(..i)?);
        let after = rest.get(i + 1..)?;
        if let Some(r) = after.strip_prefix("{IFS}") {
            rest = r;
        } else if let Some(r) = after.strip_prefix("IFS") {
            if r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            rest = r;
        } else {
            return None;
        }
        out.push('\u{0}');
    }
    out.push_str(rest);
    Some(out)
}

/// Brace expansion of one word: the first `{…}` holding a comma at its own
/// level is replaced by each of its parts, and the results are expanded in
/// turn. A brace without such a comma (`{}`, `{a}`, a sequence `{1..3}`)
/// is kept as written.
fn braces(word: &str) -> Option<Vec<String>> {
    let mut done = Vec::new();
    let mut todo = vec![word.to_string()];
    while let Some(w) = todo.pop() {
        match first_alternation(&w) {
            None => done.push(w),
            Some((open, close, commas)) => {
                let pre = w.get(..open)?;
                let post = w.get(close + 1..)?;
                let mut start = open + 1;
                let mut parts = Vec::new();
                for c in commas.into_iter().chain(std::iter::once(close)) {
                    parts.push(w.get(start..c)?);
                    start = c + 1;
                }
                // Pushed in reverse, so the words come out in bash's order.
                for p in parts.into_iter().rev() {
                    todo.push(format!("{pre}{p}{post}"));
                }
            }
        }
        if done.len() + todo.len() > MOST_WORDS {
            return None;
        }
    }
    Some(done)
}

/// The first brace pair with a comma at its own level: the byte offsets of
/// `{`, of its `}`, and of the commas between them.
fn first_alternation(w: &str) -> Option<(usize, usize, Vec<usize>)> {
    let bytes = w.as_bytes();
    for (open, &b) in bytes.iter().enumerate() {
        if b != b'{' {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        for (k, &c) in bytes.iter().enumerate().skip(open + 1) {
            match c {
                b'{' => depth += 1,
                b'}' if depth == 0 => {
                    if commas.is_empty() {
                        break;
                    }
                    return Some((open, k, commas));
                }
                b'}' => depth -= 1,
                b',' if depth == 0 => commas.push(k),
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::words;

    fn w(v: &str) -> Option<Vec<String>> {
        words(v)
    }

    fn s(ws: &[&str]) -> Option<Vec<String>> {
        Some(ws.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn braces_and_ifs_expand_as_bash_expands_them() {
        assert_eq!(w("{rm,-rf,~}"), s(&["rm", "-rf", "~"]));
        assert_eq!(w("r{m,}"), s(&["rm", "r"]));
        assert_eq!(w("{r,}m"), s(&["rm", "m"]));
        assert_eq!(w("{a,{b,c}}d"), s(&["ad", "bd", "cd"]));
        assert_eq!(w("rm${IFS}-rf${IFS}x"), s(&["rm", "-rf", "x"]));
        assert_eq!(w("rm$IFS-rf"), s(&["rm", "-rf"]));
        assert_eq!(w("{rm,$IFS}"), s(&["rm"]));
        // Kept as written: no comma at the brace's own level.
        assert_eq!(w("{rm}"), s(&["{rm}"]));
        assert_eq!(w("{1..3}"), s(&["{1..3}"]));
        // Another expansion, or nothing at all.
        assert_eq!(w("rm$X"), None);
        assert_eq!(w("$IFSX"), None);
        assert_eq!(w("$IFS"), None);
        // Too many words.
        assert_eq!(w(&"{a,b}".repeat(7)), None);
    }

    #[test]
    fn argument_braces_keep_their_expansions() {
        let a = |v: &str| super::alternatives(v);
        assert_eq!(a("{,/}etc/passwd"), s(&["etc/passwd", "/etc/passwd"]));
        assert_eq!(a(".{.,}/x"), s(&["../x", "./x"]));
        assert_eq!(a("{x,~/.ssh/id_rsa}"), s(&["x", "~/.ssh/id_rsa"]));
        assert_eq!(a("{a,$HOME}"), s(&["a", "$HOME"]));
        assert_eq!(a("{,}"), s(&[]));
        assert_eq!(a("{}"), s(&["{}"]));
        assert_eq!(a(&"{a,b}".repeat(7)), None);
    }

    #[test]
    fn globs_that_may_match_the_parent_are_read_as_it() {
        let r = super::parent_reach;
        assert_eq!(r(".*/x"), "../x");
        assert_eq!(r(".?/x"), "../x");
        assert_eq!(r(".[.]/x"), "../x");
        assert_eq!(r(".[!a]"), "..");
        assert_eq!(r("a/.**"), "a/..");
        assert_eq!(r(".*"), "..");
        // Patterns `..` cannot match.
        assert_eq!(r(".*rc"), ".*rc");
        assert_eq!(r("*/x"), "*/x");
        assert_eq!(r(".[!.]"), ".[!.]");
        assert_eq!(r(".[ab]"), ".[ab]");
        assert_eq!(r(".??"), ".??");
        assert_eq!(r("src/*.rs"), "src/*.rs");
    }
}
