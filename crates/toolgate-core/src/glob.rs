//! agentpolicy's glob over one string, for the places that match a glob
//! directly rather than through the tables: tool-name globs while the
//! compiler sorts rules to tools, and the plain answers of the built-in
//! kinds.
//!
//! `*` stands for any run of bytes; every other byte is literal. The first
//! piece anchors at the start, the last at the end, and the pieces between
//! are found left-most, in order, without overlapping, in the window the two
//! anchors leave. The reference evaluator has its own copy on purpose: the
//! two are held together by the differential tests, not by sharing code.
//!
//! Depends on nothing.

/// Whether `value` matches the glob `pattern`; without a `*` the two must
/// be equal.
///
/// ```
/// use toolgate_core::glob::matches;
/// assert!(matches("mcp__*__delete_*", "mcp__github__delete_repo"));
/// assert!(matches("git *force*", "git push --force"));
/// assert!(!matches("a*a", "a"), "the anchors may not overlap");
/// assert!(matches("read", "read") && !matches("read", "reader"));
/// ```
pub fn matches(pattern: &str, value: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == value;
    };
    let last = rest.rsplit('*').next().unwrap_or(rest);
    if value.len() < first.len() + last.len() || !value.starts_with(first) || !value.ends_with(last)
    {
        return false;
    }
    let mut window = value
        .get(first.len()..value.len() - last.len())
        .unwrap_or("");
    // The pieces strictly between the first and the last.
    let middles = rest.get(..rest.len() - last.len()).unwrap_or("");
    for mid in middles.split('*').filter(|m| !m.is_empty()) {
        match window.find(mid) {
            Some(i) => window = window.get(i + mid.len()..).unwrap_or(""),
            None => return false,
        }
    }
    true
}

/// Whether the server-bounded glob `pattern` covers the tool name `tool`:
/// the glob matches, and when the glob starts with a literal
/// `mcp__<server>__`, what follows that prefix in `tool` holds no `__`.
/// A `*` would otherwise reach another server's tools:
/// `mcp__github__evil__delete_all` may be the tool `delete_all` of a
/// server named `github__evil`.
///
/// Claude Code's MCP allow rules (`mcp__github`, `mcp__github__*`) are read
/// this way; they are the only allow rules a tool-name glob may write.
///
/// ```
/// use toolgate_core::glob::server_bounded;
/// assert!(server_bounded("mcp__github__*", "mcp__github__list_issues"));
/// assert!(!server_bounded("mcp__github__*", "mcp__github__evil__delete_all"));
/// assert!(!server_bounded("mcp__github__*", "mcp__gitlab__list"));
/// ```
pub fn server_bounded(pattern: &str, tool: &str) -> bool {
    if !matches(pattern, tool) {
        return false;
    }
    let Some(server) = pattern
        .strip_prefix("mcp__")
        .and_then(|r| r.split_once("__"))
        .map(|(s, _)| s)
    else {
        return true;
    };
    tool.strip_prefix("mcp__")
        .and_then(|r| r.strip_prefix(server))
        .and_then(|r| r.strip_prefix("__"))
        .is_some_and(|rest| !rest.contains("__"))
}

#[cfg(test)]
mod tests {
    use super::{matches, server_bounded};

    #[test]
    fn server_bounds() {
        assert!(server_bounded("mcp__gh__*", "mcp__gh__x"));
        assert!(server_bounded("mcp__gh__*", "mcp__gh__"));
        assert!(!server_bounded("mcp__gh__*", "mcp__gh__a__b"));
        assert!(server_bounded("mcp__gh__get_*", "mcp__gh__get_issue"));
        assert!(!server_bounded("mcp__gh__get_*", "mcp__gh__list"));
        assert!(!server_bounded("mcp__gh__*", "mcp__ghx__y"));
    }

    #[test]
    fn anchors_middles_and_windows() {
        assert!(matches("*", ""));
        assert!(matches("**", "x"));
        assert!(matches("a*", "a"));
        assert!(matches("*b", "ab"));
        assert!(matches("a*b", "ab"));
        assert!(!matches("ab*b", "ab"));
        assert!(matches("a*x*b", "axb"));
        assert!(!matches("a*x*b", "ab"));
        assert!(!matches("a*xx*b", "axb"));
        assert!(matches("*x*y*", "__x__y__"));
        assert!(!matches("*y*x*", "__x__y__"));
        assert!(!matches("bash", "bash\0"));
    }

    #[test]
    fn tool_name_globs() {
        assert!(matches("mcp__*", "mcp__github__x"));
        assert!(matches("a*a", "aa"));
        assert!(matches("mcp__*__get_*", "mcp__gh__get_issue"));
        assert!(!matches("mcp__*__get_*", "mcp__gh__list"));
        assert!(!matches("Bash", "bash"), "tool names are case-sensitive");
    }
}
