//! The reference's own reading of the built-in Claude Code kinds
//! `claude-bash`, `path` and `domain` (`spec/claude-code.md` §3, §4 and §5),
//! written from the
//! specification and sharing no code with `kinds`: the differential tests
//! compare the two, so a bug in either shows as a disagreement.
//!
//! Both take the value in the canonical form the kind's `normalize` gives
//! (the call's intake is shared, as the grammar is): for `path`, the
//! absolute path, then a NUL and the part inside the working directory
//! when there is one; for `domain`, the host.
//!
//! Written to be read, not to be fast: a path pattern becomes a list of
//! segment patterns with `**` where the specification says "any depth" and
//! "or a parent directory", matched by memoised recursion; a segment or a
//! label is matched character by character by plain recursion.

use std::collections::HashMap;

/// Whether the `claude-bash` specifier `spec` covers the command `value`
/// (§3). The pattern is first canonicalised (a trailing `:*` is a trailing
/// ` *`, the spaces before the colon dropped, `:*` alone is `*`); then a
/// pattern with no star is the command itself, stars alone are every
/// command, a trailing ` *` that is the only star also matches the bare
/// prefix, and any other star is any run of characters.
///
/// The last case is decided by a table over (pattern position, value
/// position), not by finding pieces left-most as the kind does: the two
/// agree for patterns whose only wildcard is `*`, and the differential
/// tests hold them to it.
pub fn claude_bash_matches(spec: &str, value: &str) -> bool {
    let pattern = match spec.strip_suffix(":*") {
        Some(head) if head.trim_end_matches(' ').is_empty() => "*".to_string(),
        Some(head) => format!("{} *", head.trim_end_matches(' ')),
        None => spec.to_string(),
    };
    let stars = pattern.chars().filter(|&c| c == '*').count();
    if stars == 0 {
        return value == pattern;
    }
    if stars == pattern.chars().count() {
        return true;
    }
    if let (1, Some(word)) = (stars, pattern.strip_suffix(" *")) {
        return value == word || value.starts_with(&format!("{word} "));
    }
    star_table(pattern.as_bytes(), value.as_bytes())
}

/// Whether `pattern`, where `*` is any run of bytes and every other byte is
/// itself, matches the whole of `value`: `ok[i][j]` says whether the
/// pattern from `i` matches the value from `j`, filled from the ends.
fn star_table(pattern: &[u8], value: &[u8]) -> bool {
    let (n, m) = (pattern.len(), value.len());
    let mut ok = vec![vec![false; m + 1]; n + 1];
    if let Some(end) = ok.get_mut(n).and_then(|row| row.get_mut(m)) {
        *end = true;
    }
    for i in (0..n).rev() {
        for j in (0..=m).rev() {
            let here = match pattern.get(i) {
                // A star takes nothing, or one more byte of the value.
                Some(b'*') => at(&ok, i + 1, j) || (j < m && at(&ok, i, j + 1)),
                Some(&c) => value.get(j) == Some(&c) && at(&ok, i + 1, j + 1),
                None => false,
            };
            if let Some(cell) = ok.get_mut(i).and_then(|row| row.get_mut(j)) {
                *cell = here;
            }
        }
    }
    at(&ok, 0, 0)
}

fn at(table: &[Vec<bool>], i: usize, j: usize) -> bool {
    table
        .get(i)
        .and_then(|row| row.get(j))
        .copied()
        .unwrap_or(false)
}

/// Whether the `path` specifier `spec` covers the canonical path `value`.
/// A specifier the kind refuses covers nothing (check refuses it first).
pub fn path_matches(spec: &str, value: &str) -> bool {
    let Some(pattern) = path_pattern(spec) else {
        return false;
    };
    let (abs, rel) = match value.split_once('\0') {
        Some((a, r)) => (a, Some(r)),
        None => (value, None),
    };
    let target = if pattern.from_root {
        abs
    } else {
        match rel {
            Some(r) => r,
            None => return false,
        }
    };
    let parts: Vec<&str> = target.split('/').filter(|p| !p.is_empty()).collect();
    let mut memo = HashMap::new();
    segments_match(&pattern.segments, &parts, 0, 0, &mut memo)
}

/// [`path_matches`] on a file system that ignores case and Unicode
/// normalisation (§4.4): the specifier and the value, each composed and
/// lowercased, compared as `path` compares them.
pub fn folded_path_matches(spec: &str, value: &str) -> bool {
    use unicode_normalization::UnicodeNormalization as _;
    let fold = |s: &str| s.nfc().collect::<String>().to_lowercase();
    path_matches(&fold(spec), &fold(value))
}

/// A path specifier read as §4.1 says: where it is anchored, and the
/// segments a path must be made of (`None` for a whole `**` segment).
struct PathPattern {
    from_root: bool,
    segments: Vec<Option<String>>,
}

fn path_pattern(spec: &str) -> Option<PathPattern> {
    if spec.contains('\0') {
        return None;
    }
    let (from_root, body) = if let Some(rest) = spec.strip_prefix("//") {
        (true, rest)
    } else if spec.starts_with('/') || spec == "~" || spec.starts_with("~/") {
        // The front end rewrites these before a matcher sees them.
        return None;
    } else {
        // "Leading `./` is dropped", before the any-depth test below.
        let mut body = spec;
        while let Some(rest) = body.strip_prefix("./") {
            body = rest.trim_start_matches('/');
        }
        (false, body)
    };
    // `.` is dropped, `..` removes the segment before it (never a `**`, and
    // never above the anchor), empty segments (repeated and trailing
    // slashes) say nothing.
    let mut written: Vec<&str> = Vec::new();
    for seg in body.split('/') {
        match seg {
            "" | "." => {}
            ".." => match written.last() {
                Some(&last) if last != "**" => {
                    written.pop();
                }
                _ => return None,
            },
            s => written.push(s),
        }
    }
    // "A pattern with no `/` except a trailing one matches at any depth
    // under its anchor" (and only under the working directory: a `//`
    // pattern always has its slashes).
    let any_depth = !from_root && !body.trim_end_matches('/').contains('/');
    let mut segments: Vec<Option<String>> = Vec::new();
    if any_depth && !written.is_empty() {
        segments.push(None);
    }
    for s in written {
        segments.push(if s == "**" { None } else { Some(s.to_string()) });
    }
    // "The path or one of its parent directories": anything may follow.
    segments.push(None);
    Some(PathPattern {
        from_root,
        segments,
    })
}

/// Whether `segs[i..]` matches `parts[j..]` exactly.
fn segments_match(
    segs: &[Option<String>],
    parts: &[&str],
    i: usize,
    j: usize,
    memo: &mut HashMap<(usize, usize), bool>,
) -> bool {
    if let Some(&known) = memo.get(&(i, j)) {
        return known;
    }
    let result = match segs.get(i) {
        None => j == parts.len(),
        // `**`: zero segments, or one more and still `**`.
        Some(None) => {
            segments_match(segs, parts, i + 1, j, memo)
                || (j < parts.len() && segments_match(segs, parts, i, j + 1, memo))
        }
        Some(Some(glob)) => match parts.get(j) {
            Some(part) => {
                segment_matches(glob, part) && segments_match(segs, parts, i + 1, j + 1, memo)
            }
            None => false,
        },
    };
    memo.insert((i, j), result);
    result
}

/// One piece of a segment pattern.
#[derive(Debug)]
enum Piece {
    Char(char),
    /// `*` (and `**` inside a segment): any run of characters.
    Run,
    /// `?`: any one character.
    AnyChar,
    /// `[…]`: negated or not, and its ranges.
    Set(bool, Vec<(char, char)>),
}

/// Whether the segment pattern `glob` matches the path segment `part`.
fn segment_matches(glob: &str, part: &str) -> bool {
    let pieces = segment_pieces(glob);
    let chars: Vec<char> = part.chars().collect();
    let mut memo = HashMap::new();
    pieces_match(&pieces, &chars, 0, 0, &mut memo)
}

fn segment_pieces(glob: &str) -> Vec<Piece> {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars.get(i).copied().unwrap_or('\0');
        i += 1;
        match c {
            '*' => out.push(Piece::Run),
            '?' => out.push(Piece::AnyChar),
            '\\' => match chars.get(i) {
                Some(&next) => {
                    out.push(Piece::Char(next));
                    i += 1;
                }
                None => out.push(Piece::Char('\\')),
            },
            '[' => match bracket(&chars, i) {
                Some((set, after)) => {
                    out.push(set);
                    i = after;
                }
                // An unclosed `[` is the character itself.
                None => out.push(Piece::Char('[')),
            },
            c => out.push(Piece::Char(c)),
        }
    }
    out
}

/// The class whose body starts at `start` (just after `[`), and the index
/// after its `]`; `None` when nothing closes it. A `]` first in the body is
/// a member, `\` escapes, `a-z` is a range (an inverted one holds nothing),
/// and `-` first, last or escaped is itself.
fn bracket(chars: &[char], start: usize) -> Option<(Piece, usize)> {
    let mut i = start;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let body_start = i;
    let mut ranges = Vec::new();
    loop {
        let mut c = *chars.get(i)?;
        if c == ']' && i > body_start {
            return Some((Piece::Set(negated, ranges), i + 1));
        }
        i += 1;
        if c == '\\' {
            c = *chars.get(i)?;
            i += 1;
        }
        let dash = chars.get(i) == Some(&'-');
        let upper = chars.get(i + 1).copied();
        match (dash, upper) {
            (true, Some(u)) if u != ']' => {
                let (hi, next) = if u == '\\' {
                    (*chars.get(i + 2)?, i + 3)
                } else {
                    (u, i + 2)
                };
                if c <= hi {
                    ranges.push((c, hi));
                }
                i = next;
            }
            _ => ranges.push((c, c)),
        }
    }
}

fn pieces_match(
    pieces: &[Piece],
    chars: &[char],
    i: usize,
    j: usize,
    memo: &mut HashMap<(usize, usize), bool>,
) -> bool {
    if let Some(&known) = memo.get(&(i, j)) {
        return known;
    }
    let here = chars.get(j).copied();
    let result = match pieces.get(i) {
        None => here.is_none(),
        Some(Piece::Run) => {
            pieces_match(pieces, chars, i + 1, j, memo)
                || (here.is_some() && pieces_match(pieces, chars, i, j + 1, memo))
        }
        Some(p) => {
            let ok = match (p, here) {
                (_, None) => false,
                (Piece::Char(want), Some(c)) => *want == c,
                (Piece::AnyChar, Some(c)) => c != '/',
                (Piece::Set(negated, ranges), Some(c)) => {
                    let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                    c != '/' && c != '\0' && inside != *negated
                }
                (Piece::Run, Some(_)) => true,
            };
            ok && pieces_match(pieces, chars, i + 1, j + 1, memo)
        }
    };
    memo.insert((i, j), result);
    result
}

/// Whether the `domain` specifier `spec` covers `host` (a host as the
/// kind's `normalize` gives it: lowercase ASCII, an IPv4 address as four
/// decimals, an IPv6 address in brackets). A specifier the kind refuses
/// covers nothing.
#[cfg(feature = "domain")]
pub fn domain_matches(spec: &str, host: &str) -> bool {
    let Some(written) = spec.strip_prefix("domain:") else {
        return false;
    };
    let lower = written.to_ascii_lowercase();
    let written = lower.strip_suffix('.').unwrap_or(&lower);
    if written == "*" {
        return true;
    }
    if host.is_empty() {
        return false;
    }
    let (subdomains, rest) = match written.strip_prefix("*.") {
        Some(r) => (true, r),
        None => (false, written),
    };
    let Some(pattern) = host_pattern(rest, subdomains) else {
        return false;
    };
    // An IPv6 address is one label; a name, and an IPv4 address's four
    // decimals, are their dot-separated labels (§5).
    let labels: Vec<&str> = if host.starts_with('[') {
        vec![host]
    } else {
        host.split('.').collect()
    };
    if labels.iter().any(|l| l.is_empty()) {
        return false;
    }
    let fits = if subdomains {
        labels.len() > pattern.len()
    } else {
        labels.len() == pattern.len()
    };
    if !fits {
        return false;
    }
    let tail = labels.iter().skip(labels.len() - pattern.len());
    pattern.iter().zip(tail).all(|(p, l)| label_matches(p, l))
}

/// The labels of a host pattern after any leading `*.`: a literal host is
/// read as a URL's host is (IDNA, IPv4 spellings), so `bücher.de` and
/// `0x7f.1` mean what a call's URL would. `None` for one the kind refuses.
#[cfg(feature = "domain")]
fn host_pattern(rest: &str, subdomains: bool) -> Option<Vec<String>> {
    if rest.is_empty() {
        return None;
    }
    if rest.contains('*') {
        let mut out = Vec::new();
        for label in rest.split('.') {
            if label.is_empty() {
                return None;
            }
            if label.bytes().all(|b| b.is_ascii_digit()) {
                // One of an IPv4 address's decimals, taken as written.
                out.push(label.to_string());
            } else if label.contains('*') {
                let plain = label
                    .chars()
                    .all(|c| c == '*' || c == '-' || c == '_' || c.is_ascii_alphanumeric());
                if !plain {
                    return None;
                }
                out.push(label.to_string());
            } else {
                match url::Host::parse(label).ok()? {
                    url::Host::Domain(d) if !d.is_empty() && !d.contains('.') => {
                        out.push(d.to_ascii_lowercase())
                    }
                    _ => return None,
                }
            }
        }
        return Some(out);
    }
    match url::Host::parse(rest).ok()? {
        url::Host::Domain(d) => {
            let d = d.strip_suffix('.').unwrap_or(&d).to_ascii_lowercase();
            if d.is_empty() || d.split('.').any(str::is_empty) {
                return None;
            }
            Some(d.split('.').map(str::to_string).collect())
        }
        url::Host::Ipv4(a) if !subdomains => {
            Some(a.to_string().split('.').map(str::to_string).collect())
        }
        url::Host::Ipv6(a) if !subdomains => Some(vec![match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{a}]"),
        }]),
        _ => None,
    }
}

/// One label against one label pattern: `*` alone is any one label, a `*`
/// inside a label any run within it, anything else itself.
#[cfg(feature = "domain")]
fn label_matches(pattern: &str, label: &str) -> bool {
    if pattern == "*" {
        return !label.is_empty();
    }
    fn walk(p: &[char], l: &[char]) -> bool {
        match p.split_first() {
            None => l.is_empty(),
            Some(('*', rest)) => (0..=l.len()).any(|k| walk(rest, l.get(k..).unwrap_or(&[]))),
            Some((c, rest)) => l
                .split_first()
                .is_some_and(|(d, more)| c == d && walk(rest, more)),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let l: Vec<char> = label.chars().collect();
    walk(&p, &l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(abs: &str, rel: Option<&str>) -> String {
        match rel {
            Some(r) => format!("{abs}\0{r}"),
            None => abs.to_string(),
        }
    }

    #[test]
    fn paths_read_as_the_specification_says() {
        let env = value("/repo/.env", Some("/.env"));
        let deep = value("/repo/a/b/.env", Some("/a/b/.env"));
        let outside = value("/etc/passwd", None);
        assert!(path_matches(".env", &env));
        assert!(path_matches(".env", &deep));
        assert!(path_matches("./.env", &env));
        assert!(!path_matches("./a/.env", &deep));
        assert!(path_matches("a/**/.env", &deep));
        assert!(path_matches("a", &deep));
        assert!(path_matches("//etc/**", &outside));
        assert!(path_matches("//etc", &outside));
        assert!(!path_matches("passwd", &outside));
        assert!(path_matches("//e?c/pass[a-w]d", &outside));
        assert!(!path_matches("//etc/pass[!w]d", &outside));
        assert!(path_matches("//etc/x/../passwd", &outside));
        assert!(!path_matches("//../etc", &outside));
        assert!(!path_matches("/etc", &outside));
        assert!(path_matches("**", &env));
        assert!(path_matches("*.env", &env) == path_matches("*.env", &deep));
    }

    #[cfg(feature = "domain")]
    #[test]
    fn hosts_read_as_the_specification_says() {
        assert!(domain_matches("domain:example.com", "example.com"));
        assert!(domain_matches("domain:Example.COM.", "example.com"));
        assert!(!domain_matches("domain:example.com", "api.example.com"));
        assert!(domain_matches("domain:*.example.com", "a.b.example.com"));
        assert!(!domain_matches("domain:*.example.com", "example.com"));
        assert!(domain_matches("domain:example.*", "example.org"));
        assert!(!domain_matches("domain:example.*", "example.co.uk"));
        assert!(domain_matches(
            "domain:api-*.example.com",
            "api-v2.example.com"
        ));
        assert!(domain_matches("domain:*", "anything"));
        assert!(domain_matches("domain:0x7f.1", "127.0.0.1"));
        assert!(domain_matches("domain:bücher.de", "xn--bcher-kva.de"));
        assert!(!domain_matches("example.com", "example.com"));
    }
}
