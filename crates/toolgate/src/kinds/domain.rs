//! `domain`: WebFetch's `domain:` rules against the host of a URL.

use crate::registry::{CallContext, Lowering, MatcherKind, Pattern};
use std::borrow::Cow;
use std::fmt::Write as _;

/// Claude Code's `WebFetch(domain:…)` rules (`spec/claude-code.md` §5).
///
/// The call's URL is read as a browser reads it (WHATWG URL parsing with
/// the `url` crate): the host after any userinfo, IDNA-mapped to ASCII and
/// lowercased, IPv4 in decimal, hexadecimal or octal forms written as four
/// decimals, an IPv4-mapped IPv6 address as its IPv4 address, one trailing
/// dot removed. Spellings other parsers read differently are refused, which
/// denies the call: a scheme other than `http` and `https`, anything but
/// exactly `//` after the scheme, a `\` in the authority, tabs and newlines
/// (which browsers silently remove), leading or trailing controls or
/// spaces, and empty labels.
///
/// A specifier is `domain:HOST`: `HOST` exactly (case-insensitively); a
/// leading `*.` for subdomains at any depth but not the apex; a `*` label
/// elsewhere for exactly one label (`example.*`), a `*` inside a label for
/// any run within it; `domain:*` for every host.
///
/// ```
/// use toolgate::kinds::DomainKind;
/// use toolgate::{CallContext, MatcherKind};
/// let k = DomainKind;
/// let host = k.normalize("https://example.com@evil.com/", &CallContext::default()).unwrap();
/// assert_eq!(host, "evil.com");
/// assert!(k.matches("domain:*.example.com", "docs.example.com"));
/// assert!(!k.matches("domain:*.example.com", "example.com"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DomainKind;

fn shown(value: &str) -> String {
    let mut s: String = value.chars().take(200).collect();
    if s.len() < value.len() {
        s.push('…');
    }
    s
}

/// The host of `url` as WebFetch would reach it, or why it is ambiguous.
fn host_of(url: &str) -> Result<String, String> {
    let u = shown(url);
    if url.contains(['\t', '\n', '\r']) {
        return Err(format!(
            "the URL `{}` holds a tab or a line break, which browsers remove and other parsers keep",
            u.escape_default()
        ));
    }
    if url
        .chars()
        .next()
        .into_iter()
        .chain(url.chars().last())
        .any(|c| c <= ' ')
    {
        return Err(format!(
            "the URL `{}` starts or ends with a space or a control character",
            u.escape_default()
        ));
    }
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err(format!("`{u}` is not a URL: it has no scheme"));
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "`{u}` is not an http or https URL, the only ones WebFetch fetches"
        ));
    }
    let Some(after) = rest.strip_prefix("//") else {
        return Err(format!(
            "`{u}` does not have exactly `//` after its scheme, which parsers read differently"
        ));
    };
    if after.starts_with(['/', '\\']) {
        return Err(format!(
            "`{u}` does not have exactly `//` after its scheme, which parsers read differently"
        ));
    }
    let end = after.find(['/', '?', '#', '\\']).unwrap_or(after.len());
    if after.get(end..).is_some_and(|t| t.starts_with('\\')) {
        return Err(format!(
            "the authority of `{u}` holds a `\\`, which parsers read differently"
        ));
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("`{u}` is not a URL: {e}"))?;
    match parsed.host() {
        Some(url::Host::Domain(d)) => clean_domain(d).ok_or_else(|| {
            format!("the host of `{u}` has an empty label, which parsers read differently")
        }),
        Some(url::Host::Ipv4(a)) => Ok(a.to_string()),
        Some(url::Host::Ipv6(a)) => Ok(match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{a}]"),
        }),
        None => Err(format!("`{u}` has no host")),
    }
}

/// A domain with one trailing dot removed, or `None` when a label is empty.
fn clean_domain(d: &str) -> Option<String> {
    let d = d.strip_suffix('.').unwrap_or(d);
    if d.is_empty() || d.split('.').any(str::is_empty) {
        return None;
    }
    Some(d.to_ascii_lowercase())
}

/// One label of a host pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Label {
    /// A label written without `*`.
    Lit(String),
    /// `*`: exactly one label.
    One,
    /// A label with a `*` inside: any run within the label.
    Glob(String),
}

/// A parsed `domain:` specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HostPattern {
    /// `domain:*`: every host.
    any: bool,
    /// A leading `*.`: one or more labels before the rest.
    subdomains: bool,
    /// The labels after any leading `*.`.
    labels: Vec<Label>,
}

impl HostPattern {
    fn parse(spec: &str) -> Result<HostPattern, String> {
        let Some(host) = spec.strip_prefix("domain:") else {
            return Err(format!(
                "`{spec}` names no host; a WebFetch rule is written `domain:example.com`"
            ));
        };
        let host = host.to_ascii_lowercase();
        let host = host.strip_suffix('.').unwrap_or(&host);
        if host == "*" {
            return Ok(HostPattern {
                any: true,
                subdomains: false,
                labels: Vec::new(),
            });
        }
        let (subdomains, rest) = match host.strip_prefix("*.") {
            Some(r) => (true, r),
            None => (false, host),
        };
        if rest.is_empty() {
            return Err(format!("`{spec}` names no host"));
        }
        let mut labels = Vec::new();
        if !rest.contains('*') {
            let canonical = match url::Host::parse(rest) {
                Ok(url::Host::Domain(d)) => clean_domain(&d),
                Ok(url::Host::Ipv4(a)) if !subdomains => Some(a.to_string()),
                Ok(url::Host::Ipv6(a)) if !subdomains => Some(match a.to_ipv4_mapped() {
                    Some(v4) => v4.to_string(),
                    None => format!("[{a}]"),
                }),
                _ => None,
            }
            .ok_or_else(|| format!("`{spec}` is not a host name"))?;
            if canonical.starts_with('[') {
                labels.push(Label::Lit(canonical));
            } else {
                labels.extend(canonical.split('.').map(|l| Label::Lit(l.to_string())));
            }
        } else {
            for l in rest.split('.') {
                if l.is_empty() {
                    return Err(format!("`{spec}` has an empty label"));
                }
                if l == "*" {
                    labels.push(Label::One);
                } else if l.bytes().all(|b| b.is_ascii_digit()) {
                    // A decimal of an IPv4 address (`10.*.*.*`); alone, a
                    // URL parser would read it as a whole address.
                    labels.push(Label::Lit(l.to_string()));
                } else if l.contains('*') {
                    if !l
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*'))
                    {
                        return Err(format!(
                            "`{spec}` mixes `*` with characters a host name cannot hold"
                        ));
                    }
                    labels.push(Label::Glob(l.to_string()));
                } else {
                    match url::Host::parse(l) {
                        Ok(url::Host::Domain(d)) if !d.is_empty() && !d.contains('.') => {
                            labels.push(Label::Lit(d.to_ascii_lowercase()))
                        }
                        _ => {
                            return Err(format!(
                                "`{spec}` has a label `{l}` that is not a host label"
                            ))
                        }
                    }
                }
            }
        }
        Ok(HostPattern {
            any: false,
            subdomains,
            labels,
        })
    }

    fn lower(&self) -> Pattern {
        if self.any {
            return Pattern::Any;
        }
        let literal: Option<Vec<&str>> = self
            .labels
            .iter()
            .map(|l| match l {
                Label::Lit(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        match (literal, self.subdomains) {
            (Some(ls), false) => Pattern::Exact(ls.join(".")),
            (Some(ls), true) => Pattern::Suffix(format!(".{}", ls.join("."))),
            (None, _) => {
                let mut r = String::new();
                if self.subdomains {
                    r.push_str(r"(?:[^.]+\.)+");
                }
                for (i, l) in self.labels.iter().enumerate() {
                    if i > 0 {
                        r.push_str(r"\.");
                    }
                    match l {
                        Label::One => r.push_str("[^.]+"),
                        Label::Lit(s) => escape(s, &mut r),
                        Label::Glob(g) => {
                            for (k, piece) in g.split('*').enumerate() {
                                if k > 0 {
                                    r.push_str("[^.]*");
                                }
                                escape(piece, &mut r);
                            }
                        }
                    }
                }
                Pattern::Regex(r)
            }
        }
    }

    fn matches(&self, host: &str) -> bool {
        if self.any {
            return true;
        }
        if host.is_empty() {
            return false;
        }
        // An IPv6 address is one label; an IPv4 address's dotted form is
        // four, as the tables read it (`domain:10.*.*.*` meets `10.1.2.3`).
        let whole: Vec<&str> = if host.starts_with('[') {
            vec![host]
        } else {
            host.split('.').collect()
        };
        if whole.iter().any(|l| l.is_empty()) {
            return false;
        }
        let n = self.labels.len();
        let tail = if self.subdomains {
            if whole.len() <= n {
                return false;
            }
            whole.get(whole.len() - n..).unwrap_or(&[])
        } else {
            if whole.len() != n {
                return false;
            }
            &whole[..]
        };
        self.labels.iter().zip(tail).all(|(p, v)| match p {
            Label::Lit(s) => s == v,
            Label::One => !v.is_empty(),
            Label::Glob(g) => crate::glob::matches(g, v),
        })
    }
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            let _ = write!(out, r"\x{{{:x}}}", c as u32);
        }
    }
}

impl MatcherKind for DomainKind {
    fn name(&self) -> &str {
        "domain"
    }

    fn lower(&self, spec: &str) -> Result<Lowering, crate::error::MatcherError> {
        Ok(Lowering::Patterns(vec![HostPattern::parse(spec)?.lower()]))
    }

    fn matches(&self, spec: &str, value: &str) -> bool {
        HostPattern::parse(spec).is_ok_and(|p| p.matches(value))
    }

    fn normalize<'v>(
        &self,
        value: &'v str,
        _context: &CallContext<'_>,
    ) -> Result<Cow<'v, str>, crate::error::MatcherError> {
        let host = host_of(value)?;
        Ok(if host == value {
            Cow::Borrowed(value)
        } else {
            Cow::Owned(host)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(url: &str) -> Result<String, String> {
        host_of(url)
    }

    fn lowered_matches(spec: &str, value: &str) -> bool {
        match HostPattern::parse(spec).unwrap().lower() {
            Pattern::Any => true,
            Pattern::Exact(e) => value == e,
            Pattern::Suffix(s) => value.ends_with(&s),
            Pattern::Regex(r) => regex_automata::dfa::regex::Regex::new(&format!("^(?:{r})$"))
                .unwrap()
                .is_match(value),
            p => panic!("unexpected {p:?}"),
        }
    }

    fn m(spec: &str, url: &str) -> bool {
        let h = host(url).unwrap();
        let a = DomainKind.matches(spec, &h);
        assert_eq!(a, lowered_matches(spec, &h), "{spec} on {url} ({h})");
        a
    }

    #[test]
    fn hosts_as_a_browser_reads_them() {
        assert_eq!(host("https://example.com@evil.com/").unwrap(), "evil.com");
        assert_eq!(host("https://a@b@evil.com/x").unwrap(), "evil.com");
        assert_eq!(host("HTTPS://EXAMPLE.COM./").unwrap(), "example.com");
        assert_eq!(host("https://example.com:8443/x").unwrap(), "example.com");
        assert_eq!(host("https://bücher.de/").unwrap(), "xn--bcher-kva.de");
        assert_eq!(host("https://ex%61mple.com/").unwrap(), "example.com");
        assert_eq!(host("https://example。com/").unwrap(), "example.com");
        assert_eq!(host("http://2130706433/").unwrap(), "127.0.0.1");
        assert_eq!(host("http://0x7f.1/").unwrap(), "127.0.0.1");
        assert_eq!(host("http://0177.0.0.1/").unwrap(), "127.0.0.1");
        assert_eq!(host("http://[::ffff:127.0.0.1]/").unwrap(), "127.0.0.1");
        assert_eq!(host("http://[::1]:80/").unwrap(), "[::1]");
    }

    #[test]
    fn ambiguous_spellings_are_refused() {
        for bad in [
            "https://evil.com\\@example.com/",
            "https:\\\\evil.com/",
            "https:/evil.com/",
            "https:evil.com",
            "https:///evil.com/",
            "https://ev\til.com/",
            " https://example.com/",
            "https://a..example.com/",
            "https://example.com../",
            "file:///etc/passwd",
            "ftp://example.com/",
            "javascript:alert(1)",
            "example.com",
            "https://",
        ] {
            assert!(host(bad).is_err(), "{bad:?} was read as {:?}", host(bad));
        }
    }

    #[test]
    fn the_documented_patterns() {
        assert!(m("domain:example.com", "https://example.com/x"));
        assert!(m("domain:example.com", "https://EXAMPLE.com./x"));
        assert!(m("domain:EXAMPLE.com.", "https://example.com/x"));
        assert!(!m("domain:example.com", "https://docs.example.com/"));
        assert!(!m("domain:example.com", "https://example.com.evil.com/"));
        assert!(!m("domain:example.com", "https://example.com@evil.com/"));
        assert!(m("domain:*.example.com", "https://docs.example.com/"));
        assert!(m("domain:*.example.com", "https://a.b.example.com/"));
        assert!(!m("domain:*.example.com", "https://example.com/"));
        assert!(!m("domain:*.example.com", "https://evilexample.com/"));
        assert!(m("domain:example.*", "https://example.org/"));
        assert!(!m("domain:example.*", "https://example.evil.com/"));
        assert!(m("domain:*", "https://anything.test/"));
        assert!(m("domain:bücher.de", "https://BÜCHER.de/"));
        assert!(m("domain:xn--bcher-kva.de", "https://bücher.de/"));
        assert!(m("domain:127.0.0.1", "http://0x7f000001/"));
        assert!(m("domain:*.github.*", "https://api.github.com/"));
        assert!(m("domain:api-*.example.com", "https://api-v2.example.com/"));
        assert!(!m(
            "domain:api-*.example.com",
            "https://api.v2.example.com/"
        ));
    }

    #[test]
    fn bad_specifiers_are_refused() {
        for bad in [
            "example.com",
            "domain:",
            "domain:*.a..b",
            "domain:a..b",
            "domain:ex ample.com",
            "domain:a/b",
        ] {
            assert!(DomainKind.lower(bad).is_err(), "{bad}");
        }
    }
}
