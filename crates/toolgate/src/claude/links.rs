//! Symbolic links: the file a call names may be another file.
//!
//! `cat src/envlink` reads `.env` when `src/envlink` links there, and a
//! cloned repository can hold such a link. Rules are matched against the
//! path as written, with no file system in sight (the engines stay pure);
//! the caller that can see the file system (the hook) resolves each named
//! path, and every path that resolves elsewhere is decided again as the
//! file it is. The stricter answer stands.

use super::rules::{EDIT_FAMILY, READ_FAMILY};
use super::ClaudeShellSplitter;
use crate::call::{Args, Call};
use crate::kinds::clean;
use crate::registry::Splitter;

/// One path of a call that resolves to another file.
#[derive(Clone, Debug)]
pub struct Link {
    /// The path as the call names it, absolute.
    pub named: String,
    /// The file it is.
    pub target: String,
    /// The call that reads or writes `target` as `named` is read or
    /// written: a `Read` or an `Edit` (or the file tool the call used).
    pub call: Call,
}

/// The paths `call` names that resolve to other files, each with the call
/// that touches that file directly. `resolve` is given an absolute path
/// as written (`..` not yet taken) and answers the file it is, with every
/// symbolic link followed as the kernel follows them (a dangling last
/// link too), or `None` when it cannot say. A path under `~` is expanded
/// with `home` first, as the rules expand it, and left alone without one.
/// `list` gives the names in a directory (none when it cannot say), for a
/// glob in the first name below a pattern's literal directories.
///
/// ```
/// use toolgate::claude::linked_calls;
/// use toolgate::Call;
/// let mut call = Call::new("Bash", r#"{"command": "cat src/envlink src/a"}"#);
/// call.cwd = Some("/repo".into());
/// let resolve = |p: &str| Some(if p == "/repo/src/envlink" { "/repo/.env".into() } else { p.to_string() });
/// let links = linked_calls(&call, None, &resolve, &|_| Vec::new());
/// assert_eq!(links.len(), 1);
/// assert_eq!((links[0].named.as_str(), links[0].target.as_str()), ("/repo/src/envlink", "/repo/.env"));
/// assert_eq!(links[0].call.tool, "Read");
/// ```
pub fn linked_calls(
    call: &Call,
    home: Option<&str>,
    resolve: &dyn Fn(&str) -> Option<String>,
    list: &dyn Fn(&str) -> Vec<String>,
) -> Vec<Link> {
    let Some(cwd) = call.cwd.as_deref().filter(|c| c.starts_with('/')) else {
        return Vec::new();
    };
    // The working directory itself may sit behind a link (`/tmp` on
    // macOS): a target inside it is written back under the name the call
    // uses, so that only links below it count.
    let real_cwd = resolve(cwd).filter(|r| r != cwd);
    let mut named: Vec<(String, &'static str, &'static str)> = Vec::new();
    if call.tool == "Bash" {
        let splitter = ClaudeShellSplitter::default();
        if let Ok(subjects) = splitter.split("Bash", &call.args) {
            for s in &subjects {
                let tool = match s.tool.as_deref() {
                    Some("Read") => "Read",
                    Some("Edit") => "Edit",
                    Some(super::shell::READ_REACH) => super::shell::READ_REACH,
                    Some(super::shell::EDIT_REACH) => super::shell::EDIT_REACH,
                    _ => continue,
                };
                if let Some(p) = s.args.str_member("file_path") {
                    named.push((p.to_string(), tool, "file_path"));
                }
            }
        }
    } else if let Some(tool) = READ_FAMILY
        .iter()
        .chain(EDIT_FAMILY)
        .find(|t| **t == call.tool)
    {
        for field in ["file_path", "notebook_path", "path", "filePath"] {
            if let Some(p) = call.args.str_member(field) {
                named.push((p.to_string(), tool, field));
            }
        }
    }
    let mut out: Vec<Link> = Vec::new();
    for (path, tool, field) in named {
        let home = home
            .filter(|h| h.starts_with('/'))
            .map(|h| h.trim_end_matches('/'));
        let path = match (path.strip_prefix('~'), home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{h}{rest}")
            }
            (Some(_), _) => continue,
            (None, _) => path,
        };
        if path.is_empty() {
            continue;
        }
        let joined = if path.starts_with('/') {
            path.clone()
        } else {
            format!("{cwd}/{path}")
        };
        // A pattern (`lnk/id_rs?`) names files below its literal
        // directories: those are resolved, and the pattern's rest is read
        // below the target. Each glob name is matched against what its
        // directory holds, and the names after it walked again, so that a
        // link met anywhere along the pattern is found (`cat */id_rsa`,
        // `cat s*/l*/id_rsa`). The path is resolved as written too: a
        // quoted `k[1]` is a name, not a class (reviews found each).
        let mut candidates = vec![(joined.clone(), String::new())];
        let mut frontier = vec![joined];
        let mut unknown = false;
        for _ in 0..MAX_GLOB_DEPTH {
            let mut next = Vec::new();
            for full in frontier {
                let Some(at) = full.find(['*', '?', '[']) else {
                    candidates.push((full, String::new()));
                    continue;
                };
                let cut = full.get(..at).and_then(|h| h.rfind('/')).unwrap_or(0);
                let (dir, rest) = full.split_at(cut);
                if dir.is_empty() {
                    continue;
                }
                candidates.push((dir.to_string(), rest.to_string()));
                let rest = rest.strip_prefix('/').unwrap_or(rest);
                let (first, after) = match rest.find('/') {
                    Some(i) => rest.split_at(i),
                    None => (rest, ""),
                };
                let names = list(dir);
                if names.len() > super::LISTED {
                    unknown = true;
                    continue;
                }
                for name in names {
                    if name_matches(first, &name) {
                        next.push(format!("{dir}/{name}{after}"));
                    }
                }
            }
            if next.len() > MAX_LISTED {
                unknown = true;
                break;
            }
            frontier = next;
            if frontier.is_empty() {
                break;
            }
        }
        // A directory too large to list, or a pattern that matches too
        // much, leaves what it reaches unknown: it is decided as anything.
        if unknown {
            let reach = if tool == "Edit" || tool == super::shell::EDIT_REACH {
                super::shell::EDIT_REACH
            } else {
                super::shell::READ_REACH
            };
            let mut m = serde_json::Map::new();
            m.insert(field.into(), serde_json::Value::String("//**".into()));
            let mut linked = Call::new(reach, "{}");
            linked.args = Args::from_value(serde_json::Value::Object(m));
            linked.cwd = Some(cwd.to_string());
            out.push(Link {
                named: path.clone(),
                target: "//**".into(),
                call: linked,
            });
        }
        for (joined, pattern) in candidates {
            let abs = clean(&joined);
            // Resolved as written: the kernel follows a link before it takes
            // the `..` after it (`lnk/../.ssh/id_rsa` is beside the link's
            // target), where `clean` takes it on paper.
            let Some(mut target) = resolve(&joined) else {
                continue;
            };
            if let Some(real) = &real_cwd {
                if let Some(rest) = target.strip_prefix(real.as_str()) {
                    if rest.is_empty() || rest.starts_with('/') {
                        target = format!("{cwd}{rest}");
                    }
                }
            }
            if target == abs {
                continue;
            }
            let (named, target) = (
                format!(
                    "{}{pattern}",
                    if joined.contains("/..") {
                        &joined
                    } else {
                        &abs
                    }
                ),
                format!("{}{pattern}", target.trim_end_matches('/')),
            );
            if out.iter().any(|l| l.target == target && l.named == named) {
                continue;
            }
            let mut m = serde_json::Map::new();
            m.insert(field.into(), serde_json::Value::String(target.clone()));
            let mut linked = Call::new(tool, "{}");
            linked.args = Args::from_value(serde_json::Value::Object(m));
            linked.cwd = Some(cwd.to_string());
            out.push(Link {
                named,
                target,
                call: linked,
            });
        }
    }
    out
}

/// The most paths a pattern's globs may expand to: past it, what the
/// pattern reaches is taken as unknown.
const MAX_LISTED: usize = 4096;

/// The most glob names of one pattern walked one after another.
const MAX_GLOB_DEPTH: usize = 8;

/// Whether the name `name` matches the one-name glob `glob` (`*`, `?`,
/// `[…]` with `!` or `^` and ranges). A leading `.` is matched by `*` too,
/// as with `dotglob`: stricter than the shell's default.
fn name_matches(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    // Star positions to come back to, as in the classic two-pointer match.
    let (mut gi, mut ni, mut star, mut mark) = (0usize, 0usize, None, 0usize);
    let class_end = |at: usize| -> Option<usize> {
        let mut k = at + 1;
        if matches!(g.get(k), Some('!' | '^')) {
            k += 1;
        }
        if g.get(k) == Some(&']') {
            k += 1;
        }
        while let Some(c) = g.get(k) {
            if *c == ']' {
                return Some(k);
            }
            k += 1;
        }
        None
    };
    let in_class = |at: usize, end: usize, c: char| -> bool {
        let mut k = at + 1;
        let negate = matches!(g.get(k), Some('!' | '^'));
        if negate {
            k += 1;
        }
        let mut hit = false;
        let mut first = true;
        while k < end {
            let lo = g.get(k).copied().unwrap_or(']');
            if (lo != ']' || first) && g.get(k + 1) == Some(&'-') && k + 2 < end {
                let hi = g.get(k + 2).copied().unwrap_or(lo);
                hit |= lo <= c && c <= hi;
                k += 3;
            } else {
                hit |= lo == c;
                k += 1;
            }
            first = false;
        }
        hit != negate
    };
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some(gi);
                mark = ni;
                gi += 1;
                continue;
            }
            Some('?') => {
                gi += 1;
                ni += 1;
                continue;
            }
            Some('[') => {
                if let Some(end) = class_end(gi) {
                    if n.get(ni).is_some_and(|c| in_class(gi, end, *c)) {
                        gi = end + 1;
                        ni += 1;
                        continue;
                    }
                } else if n.get(ni) == Some(&'[') {
                    gi += 1;
                    ni += 1;
                    continue;
                }
            }
            Some(c) if n.get(ni) == Some(c) => {
                gi += 1;
                ni += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some(s) => {
                gi = s + 1;
                mark += 1;
                ni = mark;
            }
            None => return false,
        }
    }
    while g.get(gi) == Some(&'*') {
        gi += 1;
    }
    gi == g.len()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]
    use super::linked_calls;
    use crate::Call;

    fn links(tool: &str, args: &str, map: &[(&str, &str)]) -> Vec<(String, String, String)> {
        let mut call = Call::new(tool, args);
        call.cwd = Some("/tmp/p".into());
        let map: Vec<(String, String)> = map
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let resolve = move |p: &str| {
            Some(
                map.iter()
                    .find(|(a, _)| p == a || p.starts_with(&format!("{a}/")))
                    .map_or(p.to_string(), |(a, b)| format!("{b}{}", &p[a.len()..])),
            )
        };
        linked_calls(&call, Some("/home/u"), &resolve, &|d: &str| match d {
            "/tmp/p/src" => vec!["lnk".to_string(), "a".to_string(), ".hid".to_string()],
            "/tmp/p" => vec!["src".to_string()],
            _ => Vec::new(),
        })
        .into_iter()
        .map(|l| (l.named, l.target, l.call.tool))
        .collect()
    }

    #[test]
    fn a_link_below_the_working_directory_is_decided_as_its_target() {
        let got = links(
            "Bash",
            r#"{"command": "cat src/lnk/id_rsa > src/out"}"#,
            &[("/tmp/p/src/lnk", "/home/u/.ssh")],
        );
        assert_eq!(
            got,
            [(
                "/tmp/p/src/lnk/id_rsa".to_string(),
                "/home/u/.ssh/id_rsa".to_string(),
                "Read".to_string()
            )]
        );
        let got = links(
            "Edit",
            r#"{"file_path": "src/hook"}"#,
            &[("/tmp/p/src/hook", "/tmp/p/.git/hooks/pre-commit")],
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].2, "Edit");
    }

    #[test]
    fn a_path_is_resolved_as_written_before_dot_dot_is_taken() {
        // The resolver is given `lnk/../x`, not `x`: the kernel takes the
        // `..` beside the link's target.
        let mut call = Call::new("Bash", r#"{"command": "cat src/lnk/../.ssh/id_rsa"}"#);
        call.cwd = Some("/tmp/p".into());
        let seen = std::cell::RefCell::new(Vec::new());
        let resolve = |p: &str| {
            seen.borrow_mut().push(p.to_string());
            Some(p.replace("/tmp/p/src/lnk/..", "/home/u"))
        };
        let links = linked_calls(&call, None, &resolve, &|_| Vec::new());
        assert!(seen
            .borrow()
            .contains(&"/tmp/p/src/lnk/../.ssh/id_rsa".to_string()));
        assert_eq!(links.len(), 1, "{links:?}");
        assert_eq!(links[0].target, "/home/u/.ssh/id_rsa");
        assert_eq!(links[0].named, "/tmp/p/src/lnk/../.ssh/id_rsa");
    }

    #[test]
    fn a_pattern_below_a_link_is_read_below_its_target() {
        let got = links(
            "Bash",
            r#"{"command": "cat src/lnk/id_rs?"}"#,
            &[("/tmp/p/src/lnk", "/home/u/.ssh")],
        );
        assert_eq!(
            got,
            [(
                "/tmp/p/src/lnk/id_rs?".to_string(),
                "/home/u/.ssh/id_rs?".to_string(),
                "Read.reach".to_string()
            )]
        );
        // No link in the literal part: nothing to decide again.
        assert!(links("Bash", r#"{"command": "cat src/*.rs"}"#, &[("/x", "/y")]).is_empty());
    }

    #[test]
    fn a_glob_in_the_first_name_is_matched_against_the_directory() {
        // `cat src/*/id_rsa` with `src/lnk` leading to `~/.ssh`.
        let got = links(
            "Bash",
            r#"{"command": "cat src/*/id_rsa"}"#,
            &[("/tmp/p/src/lnk", "/home/u/.ssh")],
        );
        assert!(
            got.contains(&(
                "/tmp/p/src/lnk/id_rsa".to_string(),
                "/home/u/.ssh/id_rsa".to_string(),
                "Read.reach".to_string()
            )),
            "{got:?}"
        );
        // Globs further along, and a name that only looks like a glob
        // (`k[1]` quoted): a review found both missed.
        for command in ["cat s*/l*/id_rsa", "cat 'k[1]'/id_rsa"] {
            let got = links(
                "Bash",
                &serde_json::json!({ "command": command }).to_string(),
                &[
                    ("/tmp/p/src/lnk", "/home/u/.ssh"),
                    ("/tmp/p/k[1]", "/home/u/.ssh"),
                ],
            );
            assert!(
                got.iter().any(|l| l.1 == "/home/u/.ssh/id_rsa"),
                "{command}: {got:?}"
            );
        }
        // A link after the glob (`cat */lnk/id_rsa`).
        let got = links(
            "Bash",
            r#"{"command": "cat */lnk/id_rsa"}"#,
            &[("/tmp/p/src/lnk", "/home/u/.ssh")],
        );
        assert!(got.iter().any(|l| l.1 == "/home/u/.ssh/id_rsa"), "{got:?}");
        for (g, n, want) in [
            ("*", "lnk", true),
            ("*", ".hid", true),
            ("l?k", "lnk", true),
            ("[a-m]nk", "lnk", true),
            ("[!l]nk", "lnk", false),
            ("*.rs", "a.rs", true),
            ("*.rs", "a.rsx", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("[", "[", true),
        ] {
            assert_eq!(super::name_matches(g, n), want, "{g} {n}");
        }
    }

    #[test]
    fn a_path_under_home_is_resolved_as_the_rules_expand_it() {
        let got = links(
            "Bash",
            r#"{"command": "cat ~/notes/id_rsa"}"#,
            &[("/home/u/notes", "/home/u/.ssh")],
        );
        assert_eq!(
            got,
            [(
                "/home/u/notes/id_rsa".to_string(),
                "/home/u/.ssh/id_rsa".to_string(),
                "Read".to_string()
            )]
        );
        // `~user` names another home, which the rules refuse anyway.
        assert!(links("Read", r#"{"file_path": "~root/x"}"#, &[("/root", "/")]).is_empty());
    }

    #[test]
    fn a_working_directory_behind_a_link_is_not_a_link_below_it() {
        let got = links(
            "Read",
            r#"{"file_path": "/tmp/p/src/a"}"#,
            &[("/tmp", "/private/tmp")],
        );
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(crate::kinds::clean("/a/./b//c/../d"), "/a/b/d");
    }
}
