//! One Claude Code rule string into toolgate rules.

use crate::kinds::PathKind;
use crate::policy::{List, RuleDecl};
use crate::registry::MatcherKind;

/// The tools whose calls Read rules govern: Read itself, the search tools
/// (best effort in Claude Code), and `LSP`, which reads the file it is
/// pointed at (a hover shows a constant's value) and which Claude Code
/// checks as a read of its `filePath`.
pub const READ_FAMILY: &[&str] = &["Read", "Grep", "Glob", "LS", "NotebookRead", "LSP"];

/// The tools Edit rules govern: every built-in editing tool.
pub const EDIT_FAMILY: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// What one rule string becomes.
#[derive(Clone, Debug, Default)]
pub(super) struct Translated {
    /// toolgate rules, in the rule's list.
    pub rules: Vec<RuleDecl>,
    /// An MCP allow glob the core cannot hold: (tool-name glob, rule as
    /// written).
    pub mcp_allow: Option<(String, String)>,
    /// What the reader should know.
    pub warnings: Vec<String>,
    /// A deny or ask rule that cannot be read at all.
    pub error: Option<String>,
    /// A deny or ask rule naming a tool Claude Code does not have: it can
    /// never apply, which `check` reports as an error.
    pub unknown_tool: Option<String>,
}

/// What a rule's translation needs to know.
pub(super) struct Context<'c> {
    /// The directory a `/path` rule resolves against.
    pub root: Option<&'c str>,
    /// The home directory, for `~/path` rules.
    pub home: Option<&'c str>,
    /// The project directory: deny and ask rules relative to the working
    /// directory also apply relative to it.
    pub project: Option<&'c str>,
    /// Where the rule was written, for messages: `permissions.deny[2] of
    /// /repo/.claude/settings.json`.
    pub place: String,
}

/// Parameters of the built-in tools, for `Tool(param:value)` rules; the
/// first is the member the tool's matcher reads.
fn params(tool: &str) -> &'static [&'static str] {
    match tool {
        "Bash" => &[
            "command",
            "description",
            "run_in_background",
            "dangerouslyDisableSandbox",
        ],
        "Read" => &["file_path", "offset", "limit", "pages"],
        "Edit" => &["file_path", "old_string", "new_string", "replace_all"],
        "Write" => &["file_path", "content"],
        "MultiEdit" => &["file_path", "edits"],
        "NotebookEdit" => &[
            "notebook_path",
            "cell_id",
            "new_source",
            "cell_type",
            "edit_mode",
        ],
        "NotebookRead" => &["notebook_path", "cell_id"],
        "Glob" => &["path", "pattern"],
        "Grep" => &[
            "path",
            "pattern",
            "glob",
            "type",
            "output_mode",
            "multiline",
            "head_limit",
            "-i",
            "-n",
            "-A",
            "-B",
            "-C",
        ],
        "LS" => &["path", "ignore"],
        "WebFetch" => &["url", "prompt"],
        "Agent" | "Task" => &[
            "subagent_type",
            "description",
            "prompt",
            "model",
            "run_in_background",
        ],
        "Skill" => &["skill", "args"],
        "LSP" => &["filePath", "operation", "line", "character"],
        _ => &[],
    }
}

/// `Tool(param:value)`: the parameter and the value, when `spec` names one
/// of the tool's parameters.
fn param_rule<'s>(tool: &str, spec: &'s str) -> Option<(&'static str, &'s str)> {
    let (name, value) = spec.split_once(':')?;
    let name = name.trim();
    params(tool)
        .iter()
        .find(|p| **p == name)
        .map(|p| (*p, value.trim()))
}

fn decl(tool: &str, spec: Option<&str>, written: &str) -> RuleDecl {
    let mut r = RuleDecl::new(tool, spec);
    if r.text() != written {
        r.note = Some(format!("written as {written}"));
    }
    r
}

/// Translates `raw`, an entry of `permissions.<list>`.
pub(super) fn translate(raw: &str, list: List, cx: &Context<'_>) -> Translated {
    let mut out = Translated::default();
    let written = raw.trim();
    let lname = list.name();
    // Parsing: `Tool` or `Tool(spec)`, the specifier running to the last `)`.
    let (tool, spec) = match written.find('(') {
        None => (written, None),
        Some(open) => match written.strip_suffix(')') {
            Some(inner) => (
                written.get(..open).unwrap_or(""),
                Some(inner.get(open + 1..).unwrap_or("")),
            ),
            None => ("", None),
        },
    };
    if tool.is_empty() || tool.contains(|c: char| c.is_whitespace() || c == ')' || c == '(') {
        let why = format!(
            "`{written}` ({}) is not a rule: write `Tool` or `Tool(specifier)`",
            cx.place
        );
        if list == List::Allow {
            out.warnings
                .push(format!("{why}; the allow rule is skipped"));
        } else {
            out.error = Some(why);
        }
        return out;
    }
    let spec = spec.map(str::trim);

    // A rule toolgate cannot read: an allow rule is skipped; a deny or ask
    // rule applies to every call of its tools, which is stricter.
    let unreadable = |out: &mut Translated, tools: &[&str], why: &str| {
        if list == List::Allow {
            out.warnings.push(format!(
                "`{}` ({}): {why}; the allow rule is skipped",
                written, cx.place
            ));
        } else {
            out.warnings.push(format!(
                "`{}` ({}): {why}; the {lname} rule applies to every call of {}",
                written,
                cx.place,
                tools.join(", ")
            ));
            for t in tools {
                out.rules.push(decl(t, None, written));
            }
        }
    };

    if tool.contains('*') {
        if spec.is_some() {
            unreadable(&mut out, &[tool], "a tool-name glob takes no specifier");
            return out;
        }
        if list == List::Allow {
            match mcp_server(tool) {
                Some(server) if !server.contains('*') => {
                    out.mcp_allow = Some((tool.to_string(), written.to_string()));
                }
                _ => out.warnings.push(format!(
                    "`{written}` ({}): an allow rule's tool-name glob must follow a literal `mcp__<server>__`; skipped, as Claude Code skips it",
                    cx.place
                )),
            }
        } else {
            out.rules.push(decl(tool, None, written));
        }
        return out;
    }

    // Tool names are case-sensitive in Claude Code, so a deny or ask rule
    // written `bash(rm:*)` would guard nothing: it is applied to the tool it
    // names up to case. Never an allow rule, which would widen.
    let tool = match super::builtin_tool(tool) {
        Some(t) if t != tool && list != List::Allow => {
            out.warnings.push(format!(
                "`{written}` ({}): Claude Code's tool is `{t}` (tool names are case-sensitive); the {lname} rule is applied to `{t}`",
                cx.place
            ));
            t
        }
        Some(_) => tool,
        None if list != List::Allow && !tool.starts_with("mcp__") => {
            out.unknown_tool = Some(format!(
                "`{written}` ({}) names the tool `{tool}`, which Claude Code does not have, so the {lname} rule never applies; write the tool's name as Claude Code spells it (`Bash`, `Read`, `WebFetch`, `mcp__server__tool`)",
                cx.place
            ));
            tool
        }
        None => tool,
    };

    if tool.starts_with("mcp__") {
        if spec.is_some() {
            unreadable(
                &mut out,
                &[tool],
                "Claude Code skips an `mcp__` rule with parentheses",
            );
            return out;
        }
        match mcp_server(tool) {
            // `mcp__server`: every tool of the server.
            None => {
                let glob = format!("{tool}__*");
                if list == List::Allow {
                    out.mcp_allow = Some((glob, written.to_string()));
                } else {
                    out.rules.push(decl(&glob, None, written));
                }
            }
            Some(_) => out.rules.push(decl(tool, None, written)),
        }
        return out;
    }

    // The tools a rule of this name governs in this list.
    let family: Vec<&str> = match tool {
        "Read" if list == List::Deny => READ_FAMILY.iter().chain(EDIT_FAMILY).copied().collect(),
        "Read" => READ_FAMILY.to_vec(),
        "Edit" => EDIT_FAMILY.to_vec(),
        "Agent" | "Task" => vec!["Agent", "Task"],
        t => vec![t],
    };

    let Some(mut spec) = spec else {
        for t in &family {
            out.rules.push(decl(t, None, written));
        }
        return out;
    };
    if spec.is_empty() {
        unreadable(&mut out, &family, "the specifier is empty");
        return out;
    }
    if let Some((param, value)) = param_rule(tool, spec) {
        let primary = params(tool).first().copied() == Some(param);
        if list == List::Allow {
            out.warnings.push(format!(
                "`{written}` ({}): parameter rules are for the deny and ask lists; the allow rule is skipped",
                cx.place
            ));
            return out;
        }
        if !primary || value.is_empty() {
            unreadable(
                &mut out,
                &family,
                &format!("toolgate does not read the parameter `{param}`"),
            );
            return out;
        }
        out.warnings.push(format!(
            "`{written}` ({}): Claude Code ignores a parameter rule on `{param}`; toolgate reads it as {tool}({value})",
            cx.place
        ));
        spec = value;
    }
    if spec.starts_with('!') {
        unreadable(
            &mut out,
            &family,
            "a specifier starting with `!` is a carve-out in toolgate's grammar and is not read",
        );
        return out;
    }

    // Claude Code reads a skill rule as the call's name is read (trimmed,
    // without a leading `/`), and its `name:*` as any name that starts
    // with `name`, with no word boundary (`review:*` meets `review-pr`).
    let skill_prefix;
    if tool == "Skill" {
        let t = spec.trim();
        let t = t.strip_prefix('/').unwrap_or(t);
        spec = match t.strip_suffix(":*") {
            Some(p) => {
                skill_prefix = format!("{p}*");
                &skill_prefix
            }
            None => t,
        };
    }
    match tool {
        "Bash" | "Agent" | "Task" | "Skill" => {
            if tool == "Bash" && spec.bytes().all(|b| b == b'*') {
                // `Bash(*)` is `Bash` (Claude Code 2.1.20).
                for t in &family {
                    out.rules.push(decl(t, None, written));
                }
            } else {
                // A command is matched with its quotes removed (`git
                // commit -m "fix typo"` is `git commit -m fix typo`), so a
                // rule that quotes as the command does is read the same
                // way. A deny or ask also keeps the rule as written.
                let unquoted = (tool == "Bash").then(|| unquote(spec)).flatten();
                for t in &family {
                    match &unquoted {
                        Some(u) => {
                            out.rules.push(decl(t, Some(u), written));
                            if list != List::Allow {
                                out.rules.push(decl(t, Some(spec), written));
                            }
                        }
                        None => out.rules.push(decl(t, Some(spec), written)),
                    }
                }
            }
        }
        "WebFetch" => {
            if spec == "domain:*" {
                out.rules.push(decl(tool, None, written));
            } else if let Some(e) = domain_error(spec) {
                unreadable(&mut out, &family, &e);
            } else {
                out.rules.push(decl(tool, Some(spec), written));
                // A denied domain's subdomains are the same site's: a
                // deny or ask of `domain:example.com` also meets
                // `api.example.com`.
                if list != List::Allow {
                    if let Some(host) = spec.strip_prefix("domain:") {
                        let numeric = host
                            .rsplit('.')
                            .next()
                            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
                        if !host.starts_with('*')
                            && !host.starts_with('[')
                            && host.contains('.')
                            && !numeric
                        {
                            let sub = format!("domain:*.{host}");
                            if domain_error(&sub).is_none() {
                                out.rules.push(decl(tool, Some(&sub), written));
                            }
                        }
                    }
                }
            }
        }
        "Read" | "Edit" | "Write" | "MultiEdit" | "NotebookEdit" | "NotebookRead" | "Glob"
        | "Grep" | "LS" | "LSP" => {
            if !matches!(tool, "Read" | "Edit") && list == List::Allow {
                out.warnings.push(format!(
                    "`{written}` ({}): Claude Code accepts `{tool}(path)` rules but never uses them; the allow rule is skipped (write `Edit(…)` or `Read(…)`)",
                    cx.place
                ));
                return out;
            }
            let path = match anchored(spec, cx) {
                Ok(p) => p,
                Err(e) => {
                    unreadable(&mut out, &family, &e);
                    return out;
                }
            };
            let path = if list == List::Allow {
                path
            } else {
                any_depth_directory(&path)
            };
            if let Err(e) = PathKind::new().lower(&path) {
                unreadable(&mut out, &family, e.message());
                return out;
            }
            for t in &family {
                out.rules.push(decl(t, Some(&path), written));
            }
            if list != List::Allow && !path.starts_with("//") {
                if let Some(anchored) = cx.project.map(|p| project_anchored(&path, p)) {
                    for t in &family {
                        out.rules.push(decl(t, Some(&anchored), written));
                    }
                }
            }
        }
        _ => unreadable(
            &mut out,
            &family,
            &format!("toolgate has no matcher for `{tool}`'s specifiers"),
        ),
    }
    out
}

/// The server of an MCP tool name `mcp__server__tool`; `None` for
/// `mcp__server` or a name that is not an MCP name.
fn mcp_server(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, _) = rest.split_once("__")?;
    (!server.is_empty()).then_some(server)
}

/// A path pattern with the anchors that depend on the settings file (`/`)
/// or the home directory (`~/`) rewritten to absolute `//` patterns.
fn anchored(spec: &str, cx: &Context<'_>) -> Result<String, String> {
    if spec.starts_with("//") || !(spec.starts_with('/') || spec.starts_with('~')) {
        return Ok(spec.to_string());
    }
    if let Some(rest) = spec.strip_prefix('~') {
        if !(rest.is_empty() || rest.starts_with('/')) {
            return Err(format!(
                "`{spec}` names another user's home directory, which toolgate cannot resolve"
            ));
        }
        let home = cx.home.ok_or_else(|| {
            format!("`{spec}` is in the home directory, which toolgate was not told")
        })?;
        return Ok(format!("//{}{rest}", home.trim_matches('/')).replace("///", "//"));
    }
    let root = cx.root.ok_or_else(|| {
        format!(
            "`{spec}` is relative to the settings file's directory, which toolgate was not told"
        )
    })?;
    let root = root.trim_end_matches('/');
    Ok(format!("/{root}{spec}"))
}

/// A pattern relative to the working directory, anchored at the project
/// directory instead: a call whose working directory moved below the
/// project (`cd src`) still meets the project's `Read(.env)`.
fn project_anchored(path: &str, project: &str) -> String {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let any_depth = !p.trim_end_matches('/').contains('/');
    let mut out = String::from("/");
    for seg in project.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        for c in seg.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
    }
    if any_depth && !p.is_empty() && p != "." {
        out.push_str("/**");
    }
    if !p.is_empty() && p != "." {
        out.push('/');
        out.push_str(p);
    }
    if out == "/" {
        out.push('/');
    }
    out
}

/// In the deny and ask lists, a single-segment directory pattern (`src/**`)
/// matches that directory at any depth (Claude Code 2.1.214).
fn any_depth_directory(path: &str) -> String {
    if path.starts_with("//") {
        return path.to_string();
    }
    let p = path.trim_start_matches("./");
    match p.strip_suffix("/**") {
        Some(dir) if !dir.is_empty() && !dir.contains('/') && dir != "**" => {
            format!("**/{dir}/**")
        }
        _ => path.to_string(),
    }
}

/// Why the `domain` kind refuses a WebFetch specifier, if it does. A build
/// without the `domain` feature has no such kind, so every specifier is
/// unreadable there: a deny or ask applies to every fetch, an allow is
/// skipped.
fn domain_error(spec: &str) -> Option<String> {
    #[cfg(feature = "domain")]
    {
        crate::kinds::DomainKind
            .lower(spec)
            .err()
            .map(|e| e.message().to_string())
    }
    #[cfg(not(feature = "domain"))]
    {
        let _ = spec;
        Some(
            "this build of toolgate has no `domain` kind (its `domain` feature is off)".to_string(),
        )
    }
}

/// `spec` with the shell's quotes removed as bash removes them from a
/// word (single quotes, double quotes with their four escapes, a backslash
/// outside quotes), or `None` when it has no quote or its quotes do not
/// close. A `*` stays a wildcard wherever it stands.
///
/// ```text
/// git commit -m "fix typo"   ->  git commit -m fix typo
/// echo 'a "b"' \$HOME        ->  echo a "b" $HOME
/// ```
fn unquote(spec: &str) -> Option<String> {
    if !spec.contains(['\'', '"', '\\']) {
        return None;
    }
    let mut out = String::with_capacity(spec.len());
    let mut chars = spec.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '\\') => out.push(chars.next()?),
            (Some('"'), '\\') => match chars.peek() {
                Some(&n @ ('"' | '\\' | '$' | '`')) => {
                    out.push(n);
                    chars.next();
                }
                _ => out.push('\\'),
            },
            (_, c) => out.push(c),
        }
    }
    quote.is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(raw: &str, list: List) -> Translated {
        translate(
            raw,
            list,
            &Context {
                root: Some("/repo"),
                home: Some("/home/u"),
                project: None,
                place: "test".into(),
            },
        )
    }

    fn texts(tr: &Translated) -> Vec<String> {
        tr.rules.iter().map(RuleDecl::text).collect()
    }

    #[test]
    fn families_anchors_and_lists() {
        assert_eq!(
            texts(&t("Read(.env)", List::Allow)),
            [
                "Read(.env)",
                "Grep(.env)",
                "Glob(.env)",
                "LS(.env)",
                "NotebookRead(.env)",
                "LSP(.env)"
            ]
        );
        assert_eq!(t("Read(.env)", List::Deny).rules.len(), 10);
        // Skill rules are read as Claude Code names the skill.
        assert_eq!(texts(&t("Skill(/deploy)", List::Deny)), ["Skill(deploy)"]);
        assert_eq!(texts(&t("Skill(review:*)", List::Deny)), ["Skill(review*)"]);
        assert_eq!(
            texts(&t("Read(~/.ssh/**)", List::Ask))[0],
            "Read(//home/u/.ssh/**)"
        );
        assert_eq!(
            texts(&t("Edit(/src/**)", List::Allow))[0],
            "Edit(//repo/src/**)"
        );
        assert_eq!(texts(&t("Edit(src/**)", List::Deny))[0], "Edit(**/src/**)");
        assert_eq!(texts(&t("Edit(src/**)", List::Allow))[0], "Edit(src/**)");
        assert_eq!(texts(&t("Bash(*)", List::Allow)), ["Bash"]);
        assert_eq!(texts(&t("WebFetch(domain:*)", List::Allow)), ["WebFetch"]);
        assert_eq!(
            texts(&t("Task(Explore)", List::Allow)),
            ["Agent(Explore)", "Task(Explore)"]
        );
        assert_eq!(
            texts(&t("Bash(git commit -m \"fix typo\")", List::Allow)),
            ["Bash(git commit -m fix typo)"]
        );
        assert_eq!(
            texts(&t("Bash(rm 'a b')", List::Deny)),
            ["Bash(rm a b)", "Bash(rm 'a b')"]
        );
        assert_eq!(
            unquote(r#"echo 'a "b"' \$HOME"#).as_deref(),
            Some(r#"echo a "b" $HOME"#)
        );
        assert_eq!(unquote(r#"x "a\"b\n""#).as_deref(), Some(r#"x a"b\n"#));
        assert_eq!(unquote("echo it's"), None);
        assert_eq!(unquote("echo x\\"), None);
        assert_eq!(unquote("ls *"), None);
        assert_eq!(texts(&t("Bash(command:rm *)", List::Deny)), ["Bash(rm *)"]);
        assert!(t("Bash(command:rm *)", List::Allow).rules.is_empty());
        assert_eq!(
            texts(&t("Bash(run_in_background:true)", List::Ask)),
            ["Bash"]
        );
    }

    #[test]
    fn mcp_names_and_globs() {
        assert_eq!(texts(&t("mcp__github", List::Deny)), ["mcp__github__*"]);
        let a = t("mcp__github", List::Allow);
        assert!(a.rules.is_empty());
        assert_eq!(
            a.mcp_allow,
            Some(("mcp__github__*".into(), "mcp__github".into()))
        );
        assert_eq!(
            t("mcp__github__get_*", List::Allow).mcp_allow.map(|m| m.0),
            Some("mcp__github__get_*".to_string())
        );
        assert!(t("mcp__*", List::Allow).mcp_allow.is_none());
        assert_eq!(texts(&t("mcp__*", List::Deny)), ["mcp__*"]);
        assert_eq!(texts(&t("mcp__x__y(q:1)", List::Deny)), ["mcp__x__y"]);
        assert!(t("mcp__x__y(q:1)", List::Allow).rules.is_empty());
    }

    #[test]
    fn unreadable_rules() {
        assert!(t("Bash(", List::Deny).error.is_some());
        assert!(t("Bash(", List::Allow).error.is_none());
        assert_eq!(texts(&t("WebFetch(example.com)", List::Deny)), ["WebFetch"]);
        assert_eq!(texts(&t("WebSearch(foo)", List::Ask)), ["WebSearch"]);
        assert!(t("Write(.env)", List::Allow).rules.is_empty());
        assert_eq!(texts(&t("Write(.env)", List::Deny)), ["Write(.env)"]);
    }
}
