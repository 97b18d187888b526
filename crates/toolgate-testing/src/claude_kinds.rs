//! The Claude Code kinds `claude-bash`, `path` and `domain` against the reference's own
//! reading of them (`toolgate_reference::kinds`): one specifier and one
//! call value, decided by the kind's `matches`, by the compiled tables of a
//! one-rule policy (the lowering to exact, prefix, suffix, glob and regex
//! patterns, or the callback), and by the reference.
//!
//! Specifiers and values are generated from a small alphabet that makes
//! the interesting pieces common (anchors, `**`, classes, escapes, `..`,
//! subdomain globs, IPv4 spellings, IDNA), and values are most often built
//! from the specifier's own pieces so that matches are common too.

use arbitrary::{Arbitrary, Result, Unstructured};
use toolgate::call::Args;
use toolgate::decision::Decision;
use toolgate::engine::Engine;
use toolgate::policy::{MatcherDecl, Policy, RuleDecl};
use toolgate::registry::{CallContext, Registry};

/// Which kind a case is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindName {
    /// `path`: the value is a path, read against a working directory.
    Path,
    /// `path-fold`: as `path`, on a file system that ignores case and
    /// Unicode normalisation.
    PathFold,
    /// `domain`: the value is a URL.
    Domain,
    /// `claude-bash`: the value is one command, as the splitter gives it.
    Bash,
}

/// One specifier and one call value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindCase {
    /// The kind.
    pub kind: KindName,
    /// The specifier, as a rule holds it after the front end.
    pub spec: String,
    /// The call's value: a path or a URL.
    pub value: String,
    /// The call's working directory.
    pub cwd: String,
}

const HOME: &str = "/home/u";
const SEGMENTS: &[&str] = &[
    "src", ".env", "a", "b", ".git", "secrets", "x.txt", "*.env", "*", "**", "?", "[ab]", "[!a]",
    "[a-c]", "..", ".", "\\*", "e?v", "[]]", "s*s", "",
];
const PATH_PARTS: &[&str] = &[
    "src", ".env", "a", "b", ".git", "secrets", "x.txt", "y.env", "*", "?", "]", "!", "-", "c",
    "..", ".", "config",
];
const LABELS: &[&str] = &[
    "example",
    "com",
    "api",
    "docs",
    "*",
    "api-*",
    "*-v2",
    "github",
    "io",
    "xn--bcher-kva",
    "bücher",
    "de",
    "co",
    "uk",
    "0x7f",
    "127",
    "1",
    "0",
    "localhost",
    "EXAMPLE",
];

fn pick<'a>(u: &mut Unstructured<'_>, from: &[&'a str]) -> Result<&'a str> {
    Ok(from.get(u.choose_index(from.len())?).copied().unwrap_or(""))
}

impl<'a> Arbitrary<'a> for KindCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<KindCase> {
        match u.int_in_range(0..=7)? {
            0..=2 => path_case(u),
            3..=5 => domain_case(u),
            _ => bash_case(u),
        }
    }
}

fn path_case(u: &mut Unstructured<'_>) -> Result<KindCase> {
    let mut spec = String::from(pick(u, &["", "//", "./", "//repo/", "./../", "///"])?);
    let n = u.int_in_range(1..=4)?;
    for i in 0..n {
        if i > 0 {
            spec.push('/');
        }
        spec.push_str(pick(u, SEGMENTS)?);
    }
    if u.ratio(1, 5)? {
        spec.push('/');
    }
    if u.ratio(1, 10)? {
        let s: String = u.arbitrary()?;
        spec = s;
    }
    let cwd = pick(u, &["/repo", "/repo/src", "/", "/home/u"])?.to_string();
    let value = if u.ratio(2, 3)? {
        // Built from the specifier: its segments with the wildcards filled.
        let mut v = String::from(pick(u, &["", "/repo/", "/", "~/", "./", "/home/u/"])?);
        for seg in spec.split('/').filter(|s| !s.is_empty()) {
            let filled: String = seg
                .chars()
                .filter(|c| !matches!(c, '[' | ']' | '\\' | '!'))
                .map(|c| if matches!(c, '*' | '?') { 'e' } else { c })
                .collect();
            if filled != "**" {
                v.push_str(&filled);
                v.push('/');
            }
            if u.ratio(1, 4)? {
                v.push_str(pick(u, PATH_PARTS)?);
                v.push('/');
            }
        }
        v.trim_end_matches('/').to_string()
    } else {
        let mut v = String::from(pick(u, &["/", "", "~/"])?);
        for i in 0..u.int_in_range(1..=4)? {
            if i > 0 {
                v.push('/');
            }
            v.push_str(pick(u, PATH_PARTS)?);
        }
        v
    };
    let kind = if u.ratio(1, 3)? {
        KindName::PathFold
    } else {
        KindName::Path
    };
    // Other cases and other spellings of one name, for the folded kind
    // (and for the plain one, which must not fold them).
    let value = respell(u, &value)?;
    let spec = if u.ratio(1, 4)? {
        respell(u, &spec)?
    } else {
        spec
    };
    let cwd = if u.ratio(1, 6)? {
        respell(u, &cwd)?
    } else {
        cwd
    };
    Ok(KindCase {
        kind,
        spec,
        value,
        cwd,
    })
}

/// `text` with some letters in the other case and some `é` decomposed.
fn respell(u: &mut Unstructured<'_>, text: &str) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphabetic() && u.ratio(1, 4)? {
            out.push(if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            });
        } else if c == 'e' && u.ratio(1, 8)? {
            out.push_str(if u.ratio(1, 2)? { "\u{e9}" } else { "e\u{301}" });
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

const WORDS: &[&str] = &[
    "git", "push", "ls", "-la", "*", ":*", " :*", " *", "* ", ":", " ", "a", "aa", "main",
    "--force", "npm", "run", "test:", "x*y", "**",
];

fn bash_case(u: &mut Unstructured<'_>) -> Result<KindCase> {
    let mut spec = String::new();
    for i in 0..u.int_in_range(1..=4)? {
        if i > 0 && u.ratio(2, 3)? {
            spec.push(' ');
        }
        spec.push_str(pick(u, WORDS)?);
    }
    if u.ratio(1, 10)? {
        let s: String = u.arbitrary()?;
        spec = s;
    }
    let value = if u.ratio(2, 3)? {
        // The specifier with its wildcards filled, so that matches, bare
        // prefixes and near misses are common.
        let mut v = String::new();
        for c in spec.replace(":*", pick(u, &["", " x", ":x", " "])?).chars() {
            if c == '*' {
                v.push_str(pick(u, &["", " ", "a", "x y", "*", ":"])?);
            } else {
                v.push(c);
            }
        }
        if u.ratio(1, 4)? {
            v.push_str(pick(u, &[" ", "x", " -v", "a"])?);
        }
        v
    } else {
        let mut v = String::new();
        for i in 0..u.int_in_range(0..=3)? {
            if i > 0 {
                v.push(' ');
            }
            v.push_str(&pick(u, WORDS)?.replace('*', ""));
        }
        v
    };
    Ok(KindCase {
        kind: KindName::Bash,
        spec,
        value,
        cwd: "/repo".into(),
    })
}

fn domain_case(u: &mut Unstructured<'_>) -> Result<KindCase> {
    let mut host = String::new();
    if u.ratio(1, 3)? {
        host.push_str("*.");
    }
    for i in 0..u.int_in_range(1..=3)? {
        if i > 0 {
            host.push('.');
        }
        host.push_str(pick(u, LABELS)?);
    }
    if u.ratio(1, 10)? {
        host.push('.');
    }
    let mut spec = format!("domain:{host}");
    if u.ratio(1, 20)? {
        spec = "domain:*".into();
    }
    if u.ratio(1, 10)? {
        let s: String = u.arbitrary()?;
        spec = s;
    }
    let url_host = if u.ratio(2, 3)? {
        // The specifier's host with its wildcards filled.
        let mut h = host
            .replace("*.", "")
            .replace('*', pick(u, &["x", "api", "a.b", ""])?);
        if host.starts_with("*.") && u.ratio(3, 4)? {
            h = format!("{}.{h}", pick(u, LABELS)?.replace('*', "w"));
        }
        h
    } else {
        let mut h = String::new();
        for i in 0..u.int_in_range(1..=4)? {
            if i > 0 {
                h.push('.');
            }
            h.push_str(&pick(u, LABELS)?.replace('*', "z"));
        }
        h
    };
    let userinfo = if u.ratio(1, 8)? { "user@" } else { "" };
    let scheme = pick(u, &["https", "http", "HTTPS", "ftp"])?;
    let port = if u.ratio(1, 6)? { ":8443" } else { "" };
    let value = format!("{scheme}://{userinfo}{url_host}{port}/p");
    Ok(KindCase {
        kind: KindName::Domain,
        spec,
        value,
        cwd: "/repo".into(),
    })
}

/// The kinds a case is decided with: `path` knowing the home directory.
pub fn registry() -> Registry {
    let mut r = toolgate::builtins::registry();
    for k in toolgate::kinds::path_kinds(Some(HOME)) {
        r.add_kind(k);
    }
    r
}

/// Whether the kind, the compiled tables and the reference agree on `c`;
/// the answer, or `None` when the specifier does not build or the value is
/// one the kind refuses (the call is then denied whatever the rule).
///
/// # Errors
///
/// A message naming the three answers and the case.
pub fn check_kind(c: &KindCase) -> std::result::Result<Option<bool>, crate::Mismatch> {
    let name = match c.kind {
        KindName::Path => "path",
        KindName::PathFold => "path-fold",
        KindName::Domain => "domain",
        KindName::Bash => "claude-bash",
    };
    let registry = registry();
    let Some(kind) = registry.kind(name).cloned() else {
        return Ok(None);
    };
    // A value with a NUL is refused at intake (the call is denied whatever
    // the rule), and so is a specifier with one.
    if kind.lower(&c.spec).is_err()
        || c.spec.is_empty()
        || c.spec.starts_with('!')
        || c.value.contains('\0')
        || c.spec.contains('\0')
    {
        return Ok(None);
    }
    let context = CallContext { cwd: Some(&c.cwd) };
    let Ok(canonical) = kind.normalize(&c.value, &context) else {
        return Ok(None);
    };
    let by_kind = kind.matches(&c.spec, &canonical);
    let by_reference = match c.kind {
        KindName::Path => toolgate_reference::kinds::path_matches(&c.spec, &canonical),
        KindName::PathFold => toolgate_reference::kinds::folded_path_matches(&c.spec, &canonical),
        KindName::Domain => toolgate_reference::kinds::domain_matches(&c.spec, &canonical),
        KindName::Bash => toolgate_reference::kinds::claude_bash_matches(&c.spec, &canonical),
    };
    let mut policy = Policy {
        default: Some(Decision::Allow),
        ..Policy::default()
    };
    policy.matchers.push(MatcherDecl {
        tool: "t".into(),
        kind: Some(name.to_string()),
        field: Some("v".into()),
        split: None,
        location: Default::default(),
    });
    policy.host.deny.push(RuleDecl::new("t", Some(&c.spec)));
    let engine = match Engine::build_with(&policy, &registry) {
        Ok(e) => e,
        Err(_) => return Ok(None),
    };
    let args = Args::from_json(&serde_json::json!({ "v": c.value }).to_string());
    let by_tables = !engine
        .matching_rules_in("t", &args, Some(&c.cwd))
        .is_empty();
    if by_kind == by_reference && by_tables == by_reference {
        return Ok(Some(by_reference));
    }
    Err(crate::Mismatch(format!(
        "{name} `{}` on `{}` (cwd `{}`, canonical {:?}): kind {by_kind}, tables {by_tables}, reference {by_reference}",
        c.spec, c.value, c.cwd, canonical
    )))
}
