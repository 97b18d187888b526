//! Program names built by brace expansion or `$IFS`, expanded as bash
//! expands them: `{rm,-rf,~}` is the three words `rm -rf ~`, and
//! `rm${IFS}-rf${IFS}~` is the same three words when `IFS` has its default
//! value.
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
}
