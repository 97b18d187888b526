//! The policy document: JSON or TOML text to a [`Policy`].
//!
//! ```json
//! {
//!   "default": "ask",
//!   "matchers": {"bash": {"match": "prefix", "field": "command", "split": "shell"}},
//!   "aliases": {"Bash": ["bash"]},
//!   "sources": [
//!     {"name": "managed", "rank": 3, "trusted": true, "deny": "bash(curl:*)",
//!      "notes": {"bash(curl:*)": "outbound network is proxied; use fetch"}}
//!   ],
//!   "allow": "read bash(git status:*)",
//!   "deny": ["bash(rm:*)"],
//!   "ask": "bash(git push:*)"
//! }
//! ```
//!
//! Every list is either one string in the rule grammar or an array of strings
//! holding one rule each. Unknown members are refused, with the member named,
//! so that a misspelt list never silently drops its rules. Every problem is
//! collected, not just the first, each with its place in the document and,
//! where toolgate can find it, its line and column in the text.

use super::{List, Location, MatcherDecl, Policy, RuleDecl, RuleLists, RuleSet, Source};
use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics, Span};
use serde_json::{Map, Value};

/// Reads a JSON policy document.
///
/// # Errors
///
/// Every problem found (see the module docs).
pub fn from_json(text: &str) -> Result<Policy, Diagnostics> {
    let value = crate::json::parse_document(text).map_err(|e| {
        let mut d = Diagnostic::new(
            DiagnosticKind::InvalidDocument,
            format!("the policy is not valid JSON: {e}"),
        )
        .with_help("fix the JSON syntax; duplicate keys are refused");
        // The parser reads the text after a byte order mark.
        let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
        d.location.span = Span::of_json_error(text.get(bom..).unwrap_or(text), &e.to_string())
            .map(|s| s.shift(bom));
        Diagnostics::one(d)
    })?;
    from_value(&value, Some(text))
}

/// Reads a TOML policy document.
///
/// # Errors
///
/// Every problem found (see the module docs).
pub fn from_toml(text: &str) -> Result<Policy, Diagnostics> {
    // (The text is TOML: places are found by the path alone.)
    let value: toml::Value = toml::from_str(text).map_err(|e| {
        let mut d = Diagnostic::new(
            DiagnosticKind::InvalidDocument,
            format!("the policy is not valid TOML: {}", e.message()),
        )
        .with_help("fix the TOML syntax");
        d.location.span = e.span().map(|r| Span::new(r.start, r.end));
        Diagnostics::one(d)
    })?;
    read(&toml_to_json(value), Some(text), false)
}

/// Reads a policy document already parsed into a JSON value. `text` is the
/// document's text, used to find lines and columns.
///
/// # Errors
///
/// Every problem found (see the module docs).
pub fn from_value(value: &Value, text: Option<&str>) -> Result<Policy, Diagnostics> {
    read(value, text, true)
}

fn read(value: &Value, text: Option<&str>, json: bool) -> Result<Policy, Diagnostics> {
    let mut r = Reader {
        text,
        json,
        errors: Vec::new(),
        cursor: 0,
    };
    r.nul_bytes(value, "");
    let policy = r.policy(value);
    match Diagnostics::from_vec(r.errors) {
        Some(d) => Err(match text {
            Some(t) if json => d.locate(t),
            Some(t) => toml_locate(d, t),
            None => d,
        }),
        None => Ok(policy),
    }
}

/// Converts a TOML value to JSON; dates become strings.
pub fn toml_to_json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

/// A policy document's members, in the order `fmt` writes them.
pub(crate) const TOP: &[&str] = &[
    "$schema", "default", "matchers", "aliases", "sources", "allow", "deny", "ask", "notes",
    "guards",
];
/// A source's members, in the order `fmt` writes them.
pub(crate) const SOURCE: &[&str] = &[
    "name", "rank", "trusted", "path", "hash", "allow", "deny", "ask", "notes",
];
const MATCHER: &[&str] = &["match", "field", "split"];

struct Reader<'t> {
    text: Option<&'t str>,
    /// Whether `text` is JSON, so that a path can be found in it.
    json: bool,
    errors: Vec<Diagnostic>,
    /// Where the last located string was found, so that equal strings are
    /// found in document order.
    cursor: usize,
}

impl Reader<'_> {
    fn err(&mut self, kind: DiagnosticKind, path: &str, message: String, help: &str) {
        self.errors
            .push(Diagnostic::new(kind, message).with_help(help).at(Location {
                file: String::new(),
                path: path.to_string(),
                span: None,
            }));
    }

    /// Refuses every NUL byte in the document outside its rule lists (the
    /// grammar refuses those, naming the rule): a tool name, field, alias,
    /// source or note holding one would be cut by a host, or never match.
    fn nul_bytes(&mut self, v: &Value, path: &str) {
        match v {
            Value::String(s) if s.contains('\0') && !is_rule_list(path) => {
                self.nul_at(path, &crate::json::nul_place(path, false));
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.nul_bytes(item, &format!("{path}[{i}]"));
                }
            }
            Value::Object(m) => {
                for (k, item) in m {
                    let at = join(path, k);
                    if k.contains('\0') {
                        self.nul_at(&at, &crate::json::nul_place(&at, true));
                    } else {
                        self.nul_bytes(item, &at);
                    }
                }
            }
            _ => {}
        }
    }

    fn nul_at(&mut self, path: &str, place: &str) {
        let span = self
            .text
            .filter(|_| self.json)
            .and_then(|t| crate::json::locate(t, path))
            .map(|(s, e)| Span::new(s, e));
        self.errors.push(
            Diagnostic::new(
                DiagnosticKind::InvalidDocument,
                crate::json::nul_refusal(place),
            )
            .with_help("a policy document holds no NUL byte: remove it")
            .at(Location {
                file: String::new(),
                path: path.to_string(),
                span,
            }),
        );
    }

    /// Where a rule string that cannot be found in the text is: the span of
    /// the JSON string at `path`.
    fn string_at(&self, path: &str) -> Option<Span> {
        let (s, e) = crate::json::locate(self.text.filter(|_| self.json)?, path)?;
        Some(Span::new(s, e))
    }

    fn policy(&mut self, v: &Value) -> Policy {
        let mut p = Policy::default();
        let Some(obj) = v.as_object() else {
            self.err(
                DiagnosticKind::InvalidDocument,
                "",
                "a policy document must be an object".into(),
                "write `{\"default\": \"ask\", \"allow\": \"...\"}`",
            );
            return p;
        };
        self.unknown_members(obj, TOP, "");
        if let Some(d) = obj.get("default") {
            match d.as_str().map(str::parse::<Decision>) {
                Some(Ok(d)) => p.default = Some(d),
                Some(Err(msg)) => self.err(
                    DiagnosticKind::InvalidDocument,
                    "default",
                    msg,
                    "the default is `allow`, `ask` or `deny`",
                ),
                None => self.err(
                    DiagnosticKind::InvalidDocument,
                    "default",
                    format!("`default` must be a string, not `{d}`"),
                    "the default is `allow`, `ask` or `deny`",
                ),
            }
        }
        if let Some(m) = obj.get("matchers") {
            p.matchers = self.matchers(m);
        }
        // Content guards (`spec/guards.md`) are read by `crate::guards`;
        // here they are only checked, so that a policy that holds a guard
        // which cannot be built is refused where it is written.
        if let Some(g) = obj.get("guards") {
            let built = crate::guards::Document::from_value(g.clone())
                .and_then(|d| crate::guards::Guards::build(&d));
            if let Err(e) = built {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    "guards",
                    e.to_string(),
                    "see spec/guards.md for the guard document",
                );
            }
            p.guards = Some(g.clone());
        }
        if let Some(a) = obj.get("aliases") {
            self.aliases(a, &mut p);
        }
        if let Some(s) = obj.get("sources") {
            match s.as_array() {
                Some(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(set) = self.source(item, &format!("sources[{i}]")) {
                            p.sources.push(set);
                        }
                    }
                }
                None => self.err(
                    DiagnosticKind::InvalidDocument,
                    "sources",
                    "`sources` must be an array of sources".into(),
                    "write `\"sources\": [{\"name\": \"managed\", \"rank\": 3, \"trusted\": true, \"deny\": \"...\"}]`",
                ),
            }
        }
        p.host = self.lists(obj, "");
        p
    }

    fn unknown_members(&mut self, obj: &Map<String, Value>, known: &[&str], path: &str) {
        for k in obj.keys() {
            if !known.contains(&k.as_str()) {
                let hint = suggest(k, known)
                    .map(|s| format!("did you mean `{s}`?"))
                    .unwrap_or_else(|| format!("the members here are {}", list_names(known)));
                self.err(
                    DiagnosticKind::UnknownMember,
                    path,
                    format!(
                        "unknown member `{k}`{}",
                        if path.is_empty() {
                            String::new()
                        } else {
                            format!(" in `{path}`")
                        }
                    ),
                    &hint,
                );
                if let Some(d) = self.errors.last_mut() {
                    d.token.clone_from(k);
                }
            }
        }
    }

    fn matchers(&mut self, v: &Value) -> Vec<MatcherDecl> {
        let mut out = Vec::new();
        let Some(obj) = v.as_object() else {
            self.err(
                DiagnosticKind::InvalidDocument,
                "matchers",
                "`matchers` must be an object keyed by tool name".into(),
                "write `\"matchers\": {\"bash\": {\"match\": \"prefix\", \"field\": \"command\"}}`",
            );
            return out;
        };
        for (tool, entry) in obj {
            let path = format!("matchers.{tool}");
            let Some(e) = entry.as_object() else {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &path,
                    format!("the matcher of `{tool}` must be an object"),
                    "write `{\"match\": \"prefix\", \"field\": \"command\"}`",
                );
                continue;
            };
            self.unknown_members(e, MATCHER, &path);
            let kind = self.opt_str(e, "match", &path);
            let field = self.opt_str(e, "field", &path);
            let split = self.opt_str(e, "split", &path);
            if kind.is_some() && field.is_none() {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &path,
                    format!("the matcher of `{tool}` names a kind but no `field`"),
                    "say which argument member the matcher reads, as in `\"field\": \"command\"`",
                );
            }
            if tool.is_empty() || tool.contains('*') || tool.contains(char::is_control) {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &path,
                    format!("`{}` is not a tool name", crate::json::shown(tool)),
                    "a matcher is declared for one tool, by its exact name, which holds no control character",
                );
            }
            out.push(MatcherDecl {
                tool: tool.clone(),
                kind,
                field,
                split,
                location: Location {
                    file: String::new(),
                    path,
                    span: self.locate(tool),
                },
            });
        }
        out
    }

    fn opt_str(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match obj.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &format!("{path}.{key}"),
                    format!("`{key}` must be a string, not `{other}`"),
                    "write a string",
                );
                None
            }
        }
    }

    fn aliases(&mut self, v: &Value, p: &mut Policy) {
        let Some(obj) = v.as_object() else {
            self.err(
                DiagnosticKind::InvalidDocument,
                "aliases",
                "`aliases` must be an object from rule names to lists of tools".into(),
                "write `\"aliases\": {\"Bash\": [\"bash\"]}`",
            );
            return;
        };
        for (name, tools) in obj {
            let path = format!("aliases.{name}");
            let list = match tools.as_array() {
                Some(items) => items
                    .iter()
                    .filter_map(|t| match t.as_str() {
                        Some(s) => Some(s.to_string()),
                        None => {
                            self.err(
                                DiagnosticKind::InvalidDocument,
                                &path,
                                format!("the alias `{name}` lists `{t}`, which is not a tool name"),
                                "list tool names as strings",
                            );
                            None
                        }
                    })
                    .collect(),
                None => {
                    self.err(
                        DiagnosticKind::InvalidDocument,
                        &path,
                        format!("the alias `{name}` must be an array of tool names"),
                        "write `[\"read\", \"grep\"]`",
                    );
                    continue;
                }
            };
            let span = self.locate(name);
            p.aliases.push((name.clone(), list));
            p.alias_locations.push(Location {
                file: String::new(),
                path,
                span,
            });
        }
    }

    fn source(&mut self, v: &Value, path: &str) -> Option<RuleSet> {
        let Some(obj) = v.as_object() else {
            self.err(
                DiagnosticKind::InvalidDocument,
                path,
                "a source must be an object".into(),
                "write `{\"name\": \"project\", \"rank\": 1, \"trusted\": false, \"deny\": \"...\"}`",
            );
            return None;
        };
        self.unknown_members(obj, SOURCE, path);
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &format!("{path}.name"),
                    format!("`name` must be a string, not `{other}`"),
                    "name the source",
                );
                String::new()
            }
            None => String::new(),
        };
        let rank = match obj.get("rank") {
            None => 0,
            Some(r) => match r.as_i64() {
                Some(n) => n,
                None => {
                    self.err(
                        DiagnosticKind::InvalidDocument,
                        &format!("{path}.rank"),
                        format!("`rank` must be an integer, not `{r}`"),
                        "higher ranks are more authoritative; the managed settings rank highest",
                    );
                    0
                }
            },
        };
        let trusted = match obj.get("trusted") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &format!("{path}.trusted"),
                    format!("`trusted` must be `true` or `false`, not `{other}`"),
                    "an untrusted source's allow rules are withheld",
                );
                false
            }
        };
        let path_member = self.opt_str(obj, "path", path).unwrap_or_default();
        let hash = self.opt_str(obj, "hash", path).unwrap_or_default();
        let span = if name.is_empty() {
            None
        } else {
            self.locate(&name)
        };
        let lists = self.lists(obj, path);
        Some(RuleSet {
            source: Source {
                name,
                rank,
                trusted,
                path: path_member,
                hash,
            },
            lists,
            location: Location {
                file: String::new(),
                path: path.to_string(),
                span,
            },
        })
    }

    /// The `allow`, `deny` and `ask` members of `obj` and its `notes`.
    fn lists(&mut self, obj: &Map<String, Value>, path: &str) -> RuleLists {
        let mut out = RuleLists::default();
        // Lists are read in the order they are most often written, which is
        // the order the locator searches the text in.
        for l in [List::Allow, List::Deny, List::Ask] {
            if let Some(v) = obj.get(l.name()) {
                let at = join(path, l.name());
                *out.get_mut(l) = self.rule_list(v, &at);
            }
        }
        if let Some(notes) = obj.get("notes") {
            let at = join(path, "notes");
            self.notes(notes, &at, &mut out);
        }
        out
    }

    fn rule_list(&mut self, v: &Value, path: &str) -> Vec<RuleDecl> {
        match v {
            Value::String(s) => self.parse_list(s, path),
            Value::Array(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let at = format!("{path}[{i}]");
                    match item.as_str() {
                        Some(s) => {
                            let base = self.locate(s).map(|sp| sp.start);
                            match crate::syntax::parse_one(s) {
                                Ok(t) => out.push(RuleDecl {
                                    tool: t.tool,
                                    spec: t.spec,
                                    note: None,
                                    location: Location {
                                        file: String::new(),
                                        path: at,
                                        span: base.map(|b| t.span.shift(b)),
                                    },
                                }),
                                Err(mut d) => {
                                    d.location.span = match (base, d.location.span) {
                                        (Some(b), Some(sp)) => Some(sp.shift(b)),
                                        (Some(b), None) => Some(Span::new(b, b + s.len())),
                                        // A rule written with escapes (a
                                        // `\u0000`): its string's place.
                                        _ => self.string_at(&at),
                                    };
                                    d.location.path = at;
                                    self.errors.push(d);
                                }
                            }
                        }
                        None => self.err(
                            DiagnosticKind::InvalidDocument,
                            &at,
                            format!("a rule must be a string, not `{item}`"),
                            "write the rule in the grammar, as in `\"Bash(git status:*)\"`",
                        ),
                    }
                }
                out
            }
            other => {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    path,
                    format!("a rule list must be a string or an array of strings, not `{other}`"),
                    "write `\"read bash(git:*)\"` or `[\"read\", \"bash(git:*)\"]`",
                );
                Vec::new()
            }
        }
    }

    fn parse_list(&mut self, s: &str, path: &str) -> Vec<RuleDecl> {
        let base = self.locate(s).map(|sp| sp.start);
        match crate::syntax::parse_rules(s) {
            Ok(tokens) => tokens
                .into_iter()
                .map(|t| RuleDecl {
                    tool: t.tool,
                    spec: t.spec,
                    note: None,
                    location: Location {
                        file: String::new(),
                        path: path.to_string(),
                        span: base.map(|b| t.span.shift(b)),
                    },
                })
                .collect(),
            Err(e) => {
                let mut d = e.to_diagnostic();
                d.location.path = path.to_string();
                d.location.span = base
                    .map(|b| e.span.shift(b))
                    .or_else(|| self.string_at(path));
                self.errors.push(d);
                Vec::new()
            }
        }
    }

    fn notes(&mut self, v: &Value, path: &str, lists: &mut RuleLists) {
        let Some(obj) = v.as_object() else {
            self.err(
                DiagnosticKind::InvalidDocument,
                path,
                "`notes` must be an object from rules to notes".into(),
                "write `\"notes\": {\"bash(curl:*)\": \"outbound network is proxied; use fetch\"}`",
            );
            return;
        };
        for (rule, note) in obj {
            let at = format!("{path}.{rule}");
            let Some(note) = note.as_str() else {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &at,
                    format!("the note of `{rule}` must be a string"),
                    "write the note as text",
                );
                continue;
            };
            let mut found = false;
            for l in List::ALL {
                for r in lists.get_mut(l).iter_mut() {
                    if r.text() == *rule {
                        r.note = Some(note.to_string());
                        found = true;
                    }
                }
            }
            if !found {
                self.err(
                    DiagnosticKind::InvalidDocument,
                    &at,
                    format!("the note for `{rule}` names no rule of this source"),
                    "key a note by the rule's text exactly as it is written in the lists beside it",
                );
            }
        }
    }

    /// Finds `s` in the document's text, after the last string found when it
    /// occurs there; only text written without escapes is found.
    fn locate(&mut self, s: &str) -> Option<Span> {
        let text = self.text?;
        if s.is_empty() {
            return None;
        }
        let at = text
            .get(self.cursor..)
            .and_then(|t| t.find(s))
            .map(|i| i + self.cursor)
            .or_else(|| text.find(s))?;
        self.cursor = at + s.len();
        Some(Span::new(at, at + s.len()))
    }
}

/// Points each diagnostic of a TOML document that has no span at the line
/// its path and token name: the key `token = …` inside the table the path
/// names (`[matchers.bash]`, the second `[[sources]]` for `sources[1]`),
/// else that table's header. A key written inline (`bash = {…}`) is found
/// anywhere in the text; a place not found keeps its path alone.
fn toml_locate(ds: Diagnostics, text: &str) -> Diagnostics {
    let all: Vec<Diagnostic> = ds
        .iter()
        .cloned()
        .map(|mut d| {
            if d.location.span.is_none() {
                d.location.span = toml_place(text, &d.location.path, &d.token);
            }
            d
        })
        .collect();
    Diagnostics::from_vec(all).unwrap_or(ds)
}

fn toml_place(text: &str, path: &str, token: &str) -> Option<Span> {
    // The table the path names, as its header line reads, and which of
    // the headers that read so (for an array of tables).
    let (header, nth) = match path.split_once('[') {
        Some((name, rest)) => {
            let n = rest.split_once(']')?.0.parse::<usize>().ok()?;
            (format!("[[{name}]]"), n)
        }
        None if path.is_empty() => (String::new(), 0),
        None => (format!("[{path}]"), 0),
    };
    let mut lines = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        lines.push((at, line));
        at += line.len();
    }
    let mut seen = 0;
    let start = if header.is_empty() {
        Some(0)
    } else {
        lines.iter().position(|(_, l)| {
            let hit = l.trim() == header;
            if hit {
                seen += 1;
            }
            hit && seen == nth + 1
        })
    };
    let key = |(at, l): &(usize, &str)| -> Option<Span> {
        let trimmed = l.trim_start();
        let indent = l.len() - trimmed.len();
        let name = trimmed
            .strip_prefix('"')
            .and_then(|t| t.strip_prefix(token))
            .and_then(|t| t.strip_prefix('"'))
            .or_else(|| trimmed.strip_prefix(token))?;
        let written = trimmed.len() - name.len();
        name.trim_start()
            .starts_with('=')
            .then(|| Span::new(at + indent, at + indent + written))
    };
    if let Some(first) = start {
        if !token.is_empty() {
            // The table's own keys run to the next header.
            let found = lines
                .iter()
                .skip(first + usize::from(!header.is_empty()))
                .take_while(|(_, l)| !l.trim_start().starts_with('['))
                .find_map(key);
            if found.is_some() {
                return found;
            }
        }
        if let Some((at, l)) = lines.get(first).filter(|_| !header.is_empty()) {
            let indent = l.len() - l.trim_start().len();
            return Some(Span::new(at + indent, at + indent + l.trim().len()));
        }
    }
    if token.is_empty() {
        return None;
    }
    lines.iter().find_map(key)
}

/// Whether `path` names a rule list or an entry of one: `allow`, `deny`
/// and `ask`, at the top or in a source, as a string or an array.
fn is_rule_list(path: &str) -> bool {
    let rest = match path.strip_prefix("sources[") {
        Some(r) => match r.split_once("].") {
            Some((i, rest)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => return false,
        },
        None => path,
    };
    let (list, index) = match rest.split_once('[') {
        Some((l, i)) => (l, Some(i)),
        None => (rest, None),
    };
    ["allow", "deny", "ask"].contains(&list)
        && index.is_none_or(|i| {
            i.strip_suffix(']')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn join(path: &str, member: &str) -> String {
    if path.is_empty() {
        member.to_string()
    } else {
        format!("{path}.{member}")
    }
}

fn list_names(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The known name closest to `word`, when one is close enough to be a typo.
pub fn suggest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = word.to_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&lower, &k.to_lowercase()), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

/// The optimal string alignment distance between `a` and `b`, by
/// characters; names are short, so the quadratic table is small.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    let at = |i: usize, j: usize| i * w + j;
    for i in 0..=a.len() {
        if let Some(x) = d.get_mut(at(i, 0)) {
            *x = i;
        }
    }
    for j in 0..=b.len() {
        if let Some(x) = d.get_mut(at(0, j)) {
            *x = j;
        }
    }
    let get = |d: &[usize], i: usize, j: usize| d.get(at(i, j)).copied().unwrap_or(usize::MAX / 2);
    for (i, ca) in a.iter().enumerate() {
        for (j, cb) in b.iter().enumerate() {
            let (i1, j1) = (i + 1, j + 1);
            let cost = usize::from(ca != cb);
            let mut v = (get(&d, i, j1) + 1)
                .min(get(&d, i1, j) + 1)
                .min(get(&d, i, j) + cost);
            let swapped = i > 0 && j > 0 && a.get(i - 1) == Some(cb) && b.get(j - 1) == Some(ca);
            if swapped {
                v = v.min(get(&d, i - 1, j - 1) + 1);
            }
            if let Some(x) = d.get_mut(at(i1, j1)) {
                *x = v;
            }
        }
    }
    get(&d, a.len(), b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_member() {
        let p = from_json(
            r#"{"default": "deny",
                "matchers": {"bash": {"match": "glob", "field": "command", "split": "shell"}},
                "aliases": {"Read": ["read", "grep"]},
                "sources": [{"name": "m", "rank": 3, "trusted": true, "path": "/etc/x", "hash": "h",
                             "deny": "bash(curl:*)", "notes": {"bash(curl:*)": "proxied"}}],
                "allow": ["read", "bash(git status:*)"], "ask": "edit"}"#,
        )
        .unwrap_or_default();
        assert_eq!(p.default, Some(Decision::Deny));
        assert_eq!(p.matchers[0].split.as_deref(), Some("shell"));
        assert_eq!(
            p.aliases,
            vec![(
                "Read".to_string(),
                vec!["read".to_string(), "grep".to_string()]
            )]
        );
        assert_eq!(p.sources[0].source.rank, 3);
        assert_eq!(p.sources[0].lists.deny[0].note.as_deref(), Some("proxied"));
        assert_eq!(p.host.allow[1].spec.as_deref(), Some("git status:*"));
        assert_eq!(p.host.ask[0].tool, "edit");
    }

    #[test]
    fn a_nul_byte_is_refused_and_located() {
        // In a rule: the grammar's error, at the rule's string.
        let text = "{\"default\": \"allow\",\n \"deny\": [\"read\", \"read(/etc/shadow\\u0000)\"]}";
        let errs = from_json(text)
            .err()
            .map(|d| d.iter().cloned().collect::<Vec<_>>());
        let errs = errs.unwrap_or_default();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].kind, "control_character");
        assert_eq!(errs[0].location.path, "deny[1]");
        assert_eq!(errs[0].location.span, Some(Span::new(39, 64)));
        // A rule list as one string.
        let errs =
            from_json(r#"{"default": "allow", "sources": [{"name": "s", "ask": "bash\u0000"}]}"#)
                .err()
                .map(|d| d.first().clone());
        let e = errs.unwrap_or_else(|| Diagnostic::new(DiagnosticKind::Internal, "none"));
        assert_eq!(
            (e.kind, e.location.path.as_str()),
            (DiagnosticKind::ControlCharacter, "sources[0].ask")
        );
        assert!(e.location.span.is_some());
        // Anywhere else: the place, with its span.
        for (text, path) in [
            (
                r#"{"default": "allow", "aliases": {"Bash": ["bash\u0000"]}}"#,
                "aliases.Bash[0]",
            ),
            (
                r#"{"default": "allow", "matchers": {"bash": {"match": "prefix", "field": "command\u0000"}}}"#,
                "matchers.bash.field",
            ),
            (
                r#"{"default": "allow", "notes": {"read\u0000": "n"}}"#,
                "notes.read\0",
            ),
            (
                r#"{"default": "allow", "sources": [{"name": "s\u0000"}]}"#,
                "sources[0].name",
            ),
        ] {
            let d = from_json(text).err().map(|d| d.first().clone());
            let d = d.unwrap_or_else(|| panic!("{text} was read"));
            assert_eq!(d.kind, "invalid_document", "{text}");
            assert_eq!(d.location.path, path, "{text}");
            assert!(d.message.contains("holds a NUL byte"), "{}", d.message);
            assert!(d.location.span.is_some(), "{text}");
        }
        // A matcher for a tool whose name holds another control character.
        let d = from_json(r#"{"default": "allow", "matchers": {"ba\u0001sh": {}}}"#)
            .err()
            .map(|d| d.first().message.clone());
        assert_eq!(d.as_deref(), Some("`ba\\u0001sh` is not a tool name"));
        assert!(is_rule_list("deny[0]") && is_rule_list("sources[2].ask") && is_rule_list("allow"));
        assert!(
            !is_rule_list("notes.allow")
                && !is_rule_list("sources[x].deny")
                && !is_rule_list("deny[]")
        );
    }

    #[test]
    fn errors_are_collected_and_located() {
        let text =
            "{\n  \"alow\": \"read\",\n  \"deny\": \"Read Bash() x\",\n  \"ask\": [\"a b\"]\n}";
        let errs = from_json(text)
            .err()
            .map(|d| d.iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let kinds: Vec<_> = errs.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            vec!["unknown_member", "empty_specifier", "invalid_rule"]
        );
        assert_eq!(errs[0].help.as_deref(), Some("did you mean `allow`?"));
        let span = errs[1].location.span.unwrap_or_default();
        assert_eq!(text.get(span.start..span.end), Some("Bash()"));
        assert_eq!(errs[1].location.path, "deny");
    }

    #[test]
    fn toml_reads_the_same_document() {
        let toml = "default = \"ask\"\nallow = \"read\"\n[matchers.bash]\nmatch = \"prefix\"\nfield = \"command\"\n[[sources]]\nname = \"m\"\nrank = 2\ntrusted = true\ndeny = [\"bash(rm:*)\"]\n";
        let p = from_toml(toml).unwrap_or_default();
        assert_eq!(p.default, Some(Decision::Ask));
        assert_eq!(p.sources[0].lists.deny[0].text(), "bash(rm:*)");
        assert!(from_toml("default = ").is_err());
    }

    #[test]
    fn the_published_schema_names_the_members_the_reader_knows() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../../spec/policy.schema.json")).unwrap();
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let sorted = |names: &[&str]| -> Vec<String> {
            let mut k: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            k.sort();
            k
        };
        assert_eq!(keys(&schema["properties"]), sorted(TOP));
        assert_eq!(
            keys(&schema["$defs"]["source"]["properties"]),
            sorted(SOURCE)
        );
        assert_eq!(
            keys(&schema["properties"]["matchers"]["additionalProperties"]["properties"]),
            sorted(MATCHER)
        );
        let example: Value =
            serde_json::from_str(include_str!("../../../../examples/policy.json")).unwrap();
        assert!(from_value(&example, None).is_ok());
    }

    #[test]
    fn a_note_must_name_a_rule() {
        let r = from_json(r#"{"default":"ask","deny":"bash","notes":{"bash(x)":"n"}}"#);
        assert_eq!(
            r.err().map(|d| d.first().kind),
            Some(DiagnosticKind::InvalidDocument)
        );
    }
}
