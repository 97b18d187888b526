//! The trickiest rules, one test each.

use super::decide::block_suffix;
use super::Reference;
use std::sync::Arc;
use toolgate::call::{Args, Call, Subject};
use toolgate::decision::Decision;
use toolgate::engine::Evaluator;
use toolgate::policy::{Policy, RuleLists, RuleSet, Source};
use toolgate::registry::Splitter;

fn reference(doc: &str) -> Reference {
    Reference::build(
        &Policy::from_json(doc).unwrap(),
        &toolgate::builtins::registry(),
    )
    .unwrap()
}

fn bash(command: &str) -> Call {
    Call::new(
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    )
}

fn set(name: &str, rank: i64, trusted: bool, allow: &str, deny: &str, ask: &str) -> RuleSet {
    RuleSet {
        source: Source {
            name: name.into(),
            rank,
            trusted,
            ..Source::default()
        },
        lists: RuleLists::parse(allow, deny, ask).unwrap(),
        ..RuleSet::default()
    }
}

/// Splits a command at ` && `; a part starting with `> ` is a redirect
/// checked against `edit`; a part starting with `? ` is a constraint on
/// `read`.
#[derive(Debug)]
struct AndSplitter;

impl Splitter for AndSplitter {
    fn split(&self, _tool: &str, args: &Args) -> Result<Vec<Subject>, toolgate::error::SplitError> {
        let command = args.str_member("command").ok_or("no command")?;
        if command.contains("$(") {
            return Err("command substitution is not supported".into());
        }
        Ok(command
            .split(" && ")
            .filter(|p| !p.is_empty())
            .map(|p| {
                if let Some(path) = p.strip_prefix("> ") {
                    Subject {
                        args: Args::from_value(serde_json::json!({ "path": path })),
                        tool: Some("edit".into()),
                        text: p.into(),
                        constrain: false,
                    }
                } else if let Some(path) = p.strip_prefix("? ") {
                    Subject {
                        args: Args::from_value(serde_json::json!({ "path": path })),
                        tool: Some("read".into()),
                        text: p.into(),
                        constrain: true,
                    }
                } else {
                    Subject::new(Args::from_value(serde_json::json!({ "command": p })), p)
                }
            })
            .collect())
    }
}

fn split_reference(doc: &str) -> Reference {
    let mut registry = toolgate::builtins::registry();
    registry.add_splitter("and", Arc::new(AndSplitter));
    Reference::build(&Policy::from_json(doc).unwrap(), &registry).unwrap()
}

#[test]
fn a_carve_out_reaches_rules_of_its_rank_and_below_only() {
    let r = reference(
        r#"{"default": "allow",
            "matchers": {"read": {"match": "prefix", "field": "path"}},
            "sources": [
              {"name": "low", "rank": 1, "trusted": true, "deny": "read(!.env.example)"},
              {"name": "high", "rank": 3, "trusted": true, "deny": "read(.env:*)"},
              {"name": "mid", "rank": 1, "trusted": true, "deny": "read(.env.e:*)"}
            ]}"#,
    );
    // The rank-3 rule is not reached, so it blocks first.
    let v = r.would(&Call::new("read", r#"{"path": ".env.example"}"#));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.rule_text(), "read(.env:*)");
    assert_eq!(v.source_name(), "high");

    // Without the rank-3 rule, the equal-rank carve-out reaches `mid`.
    let r = reference(
        r#"{"default": "allow",
            "matchers": {"read": {"match": "prefix", "field": "path"}},
            "sources": [
              {"name": "low", "rank": 1, "trusted": true, "deny": "read(!.env.example)"},
              {"name": "mid", "rank": 1, "trusted": true, "deny": "read(.env.e:*)"}
            ],
            "deny": "read(.env.ex:*)"}"#,
    );
    // The host's rule has rank 0 and is reached too.
    let v = r.would(&Call::new("read", r#"{"path": ".env.example"}"#));
    assert_eq!(v.reason, "allowed by default");
    // A carve-out never touches another list.
    let v = r.would(&Call::new("read", r#"{"path": ".env.e"}"#));
    assert_eq!(v.rule_text(), "read(.env.e:*)");
}

#[test]
fn a_carve_out_from_a_grant_set_reaches_the_policy_with_enough_rank() {
    let mut r = reference(
        r#"{"default": "allow",
            "matchers": {"bash": {"match": "prefix", "field": "command"}},
            "sources": [{"name": "project", "rank": 1, "trusted": true, "ask": "bash(git:*)"}]}"#,
    );
    assert_eq!(r.would(&bash("git status")).decision, Decision::Ask);
    r.grant_set(
        &set("skill:low", 0, true, "", "", "bash(!git status)"),
        None,
    );
    assert_eq!(r.would(&bash("git status")).decision, Decision::Ask);
    r.grant_set(
        &set("skill:high", 1, true, "", "", "bash(!git status)"),
        None,
    );
    assert_eq!(r.would(&bash("git status")).decision, Decision::Allow);
    assert_eq!(r.would(&bash("git log")).decision, Decision::Ask);
}

#[test]
fn a_glob_rule_is_never_carved() {
    let r = reference(
        r#"{"default": "allow",
            "matchers": {"mcp__x": {"match": "prefix", "field": "q"}},
            "deny": "mcp__* mcp__x(!ok)"}"#,
    );
    let v = r.would(&Call::new("mcp__x", r#"{"q": "ok"}"#));
    assert_eq!(v.rule_text(), "mcp__*");
    assert_eq!(
        r.filter(&["mcp__x".into(), "read".into()]),
        vec!["read".to_string()]
    );
}

#[test]
fn a_confined_call_skips_bare_asks_only() {
    let r = reference(
        r#"{"default": "ask",
            "matchers": {"bash": {"match": "prefix", "field": "command"}},
            "ask": "ba* bash bash(sudo:*)",
            "allow": "bash(make:*)"}"#,
    );
    // Both bare asks are skipped; the first one skipped is cited, and the
    // allow list is never consulted.
    let v = r.would(&bash("make").confined_by("landlock"));
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.rule_text(), "ba*");
    assert_eq!(v.reason, "confined by landlock, so ba* does not ask");
    assert_eq!(v.confined, "landlock");
    // An ask with a specifier still asks.
    let v = r.would(&bash("sudo make").confined_by(""));
    assert_eq!(v.reason, "approval required by bash(sudo:*)");
    assert_eq!(v.confined, "");
    // Unconfined, the first bare ask asks.
    let v = r.would(&bash("make"));
    assert_eq!(v.reason, "approval required by ba*");
}

#[test]
fn a_confined_reason_never_cites_the_note() {
    let r = reference(r#"{"default": "ask", "ask": "bash", "notes": {"bash": "shell commands"}}"#);
    assert_eq!(
        r.would(&bash("ls")).reason,
        "approval required by bash: shell commands"
    );
    let v = r.would(&bash("ls").confined_by(""));
    assert_eq!(v.reason, "confined, so bash does not ask");
    assert_eq!(v.rule.unwrap().note, "shell commands");
}

#[test]
fn a_subject_routed_to_another_tool_is_decided_unconfined() {
    let r = split_reference(
        r#"{"default": "allow",
            "matchers": {"bash": {"match": "prefix", "field": "command", "split": "and"},
                         "edit": {"match": "prefix", "field": "path"}},
            "ask": "bash edit"}"#,
    );
    let v = r.would(&bash("make && > out.txt").confined_by("box"));
    assert_eq!(v.decision, Decision::Ask);
    assert_eq!(v.reason, "approval required by edit");
    assert_eq!(v.subject, "> out.txt");
}

#[test]
fn the_block_suffix_lists_the_other_texts() {
    let subjects = |texts: &[&str]| -> Vec<Subject> {
        texts
            .iter()
            .map(|t| Subject::new(Args::from_json("{}"), *t))
            .collect()
    };
    assert_eq!(
        block_suffix("rm -rf /", &subjects(&["rm -rf /"])),
        r#" on "rm -rf /"; nothing in this command ran"#
    );
    assert_eq!(
        block_suffix("rm", &subjects(&["a", "rm", "", "a", "rm"])),
        r#" on "rm"; nothing in this command ran, including "a""#
    );
    assert_eq!(
        block_suffix("rm", &subjects(&["a", "rm", "b"])),
        r#" on "rm"; nothing in this command ran, including "a" and "b""#
    );
    assert_eq!(
        block_suffix("rm", &subjects(&["a", "b", "rm", "c\t", "d"])),
        r#" on "rm"; nothing in this command ran, including "a", "b", "c\t" and "d""#
    );
}

#[test]
fn a_split_call_blocks_with_the_suffix() {
    let r = split_reference(
        r#"{"default": "allow",
            "matchers": {"bash": {"match": "prefix", "field": "command", "split": "and"},
                         "read": {"match": "prefix", "field": "path"}},
            "deny": "bash(rm:*) read(/etc:*)"}"#,
    );
    let v = r.would(&bash("ls && rm -rf / && ls && git status"));
    assert_eq!(
        v.reason,
        r#"denied by bash(rm:*) on "rm -rf /"; nothing in this command ran, including "ls" and "git status""#
    );
    assert_eq!(v.subject, "rm -rf /");
    // Only constraints: the call is prepended, so the constraint that
    // blocks gets the suffix, with nothing else to list.
    let v = r.would(&bash("? /etc/passwd"));
    assert_eq!(
        v.reason,
        r#"denied by read(/etc:*) on "? /etc/passwd"; nothing in this command ran"#
    );
    // A call split into one subject gets no suffix.
    let v = r.would(&bash("rm x"));
    assert_eq!(v.reason, "denied by bash(rm:*)");
    assert_eq!(v.subject, "rm x");
    // A splitter's failure blocks, and holds its siblings.
    let v = r.decide_batch(&[bash("echo $(id)"), bash("ls")]);
    assert_eq!(
        v[0].reason,
        "bash call could not be evaluated: command substitution is not supported"
    );
    assert_eq!(v[0].decision, Decision::Deny);
    assert!(v[1].held);
    assert_eq!(v[1].reason, "held for approval: allowed by default");
}

#[test]
fn unreadable_arguments_block_without_a_rule() {
    let r = reference(r#"{"default": "allow", "allow": "bash"}"#);
    let v = r.would(&Call::new("bash", r#"{"command": "a", "command": "b"}"#));
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.rule.is_none());
    assert!(v
        .reason
        .starts_with("bash call could not be evaluated: its arguments could not be read: "));
}

#[test]
fn a_control_character_in_the_tool_name_blocks_without_a_rule() {
    // The issue's call: `bash` is denied, `bash\0` was allowed by default.
    let r = reference(r#"{"default": "allow", "deny": "bash"}"#);
    for tool in ["bash\0", "bash\u{1b}", "bash\u{9f}"] {
        let v = r.would(&Call::new(tool, r#"{"command": "ls"}"#));
        assert_eq!(v.decision, Decision::Deny, "{tool:?}");
        assert!(v.rule.is_none());
        assert!(
            v.reason
                .contains("call could not be evaluated: the tool name `bash\\u00"),
            "{}",
            v.reason
        );
    }
    // It holds a batch, as a call that could not be evaluated does.
    let v = r.decide_batch(&[Call::new("read", "{}"), Call::new("read\0", "{}")]);
    assert!(v[0].held);
    // And a NUL in an argument is unreadable arguments.
    let v = r.would(&Call::new("read", r#"{"path": "/etc/shadow\u0000.txt"}"#));
    assert!(v
        .reason
        .starts_with("read call could not be evaluated: its arguments could not be read: the member `path` holds a NUL byte"));
}

#[test]
fn a_grant_set_shadows_asks_of_other_sources_it_does_not_rank_below() {
    let mut r = reference(
        r#"{"default": "ask",
            "matchers": {"bash": {"match": "prefix", "field": "command"}},
            "sources": [{"name": "project", "rank": 1, "trusted": true, "ask": "bash(git:*) bash"}]}"#,
    );
    // A set never shadows its own source's asks.
    let g = r.grant_set(&set("project", 1, true, "bash(git commit:*)", "", ""), None);
    assert_eq!(g.granted, vec!["bash(git commit:*)".to_string()]);
    assert_eq!(
        r.would(&bash("git commit")).reason,
        "approval required by bash(git:*)"
    );
    // Another source of lower rank: refused, as the bare ask of higher
    // rank names its tool (even though the allow rule has a specifier).
    let g = r.grant_set(
        &set("skill:low", 0, true, "bash(git commit:*)", "", ""),
        None,
    );
    assert!(g.granted.is_empty());
    assert_eq!(g.refused[0].reason, "bash from project outranks the grant");
    assert_eq!(
        r.would(&bash("git commit")).reason,
        "approval required by bash(git:*)"
    );
    // Another source of equal rank, under a scope: it shadows both asks,
    // for calls of that scope only.
    r.grant_set(
        &set("skill:commit", 1, true, "bash(git commit:*)", "", ""),
        Some("s1"),
    );
    let mut call = bash("git commit -m x");
    assert_eq!(r.would(&call).decision, Decision::Ask);
    call.scope = Some("s1".into());
    let v = r.would(&call);
    assert_eq!(v.reason, "allowed by bash(git commit:*)");
    // The first firing allow rule is cited: the unscoped `project` set's,
    // which comes before the scoped set in the active allow list.
    assert_eq!(v.source_name(), "project");
    // Revoking under no scope leaves the scoped set.
    assert_eq!(r.revoke("skill:commit", None), 0);
    assert_eq!(r.revoke_scope(Some("s1")), 1);
    assert_eq!(r.would(&call).decision, Decision::Ask);
}

#[test]
fn grant_set_refusals_and_replacement() {
    let mut r = reference(
        r#"{"default": "ask",
            "matchers": {"bash": {"match": "prefix", "field": "command"},
                         "edit": {"match": "prefix", "field": "path"}},
            "deny": "web_fetch edit edit(!/tmp:*)",
            "ask": "read"}"#,
    );
    let g = r.grant_set(
        &set(
            "skill",
            0,
            true,
            "Bash(x) web_fetch edit read mcp__* bash(!rm:*)",
            "curl curl(x)",
            "",
        ),
        None,
    );
    assert_eq!(g.granted, vec!["edit".to_string(), "read".to_string()]);
    let refused: Vec<(&str, &str)> = g
        .refused
        .iter()
        .map(|x| (x.rule.as_str(), x.reason.as_str()))
        .collect();
    assert_eq!(
        refused,
        vec![
            (
                "curl(x)",
                "toolgate: no matcher for the rule's tool: curl(x)"
            ),
            (
                "Bash(x)",
                "toolgate: no matcher for the rule's tool: Bash(x); did you mean bash?"
            ),
            (
                "web_fetch",
                "denied by web_fetch: a grant never beats a deny"
            ),
            (
                "mcp__*",
                "toolgate: tool-name glob: mcp__* is not honoured in the allow list"
            ),
            (
                "bash(!rm:*)",
                "toolgate: cannot grant a carve-out: bash(!rm:*)"
            ),
        ]
    );
    assert_eq!(
        r.filter(&["curl".into(), "edit".into(), "read".into()]),
        vec!["edit".to_string(), "read".to_string()]
    );
    // The set's own bare deny refuses its own allow.
    let g = r.grant_set(&set("skill", 0, true, "curl", "curl", ""), None);
    assert_eq!(
        g.refused[0].reason,
        "denied by curl: a grant never beats a deny"
    );
    // The replacement has two rules active (curl deny; read allow is not in it).
    assert_eq!(r.revoke("skill", None), 1);
    assert_eq!(r.revoke("skill", None), 0);
}

#[test]
fn an_untrusted_set_restricts_and_grants_nothing() {
    let mut r = reference(r#"{"default": "allow"}"#);
    let g = r.grant_set(&set("repo", 5, false, "read", "bash", ""), None);
    assert!(g.granted.is_empty());
    assert_eq!(
        g.refused[0].reason,
        "withheld: the source repo is not trusted"
    );
    assert_eq!(r.would(&bash("ls")).reason, "denied by bash");
}

#[test]
fn the_hold_counts_siblings_before_and_after() {
    let r = reference(r#"{"default": "ask", "allow": "read", "deny": "rm"}"#);
    let read = Call::new("read", "{}");
    let v = r.decide_batch(&[read.clone(), Call::new("rm", "{}"), Call::new("web", "{}")]);
    assert!(v[0].held);
    assert_eq!(v[0].reason, "held for approval: allowed by read");
    assert_eq!(v[1].decision, Decision::Deny);
    assert!(!v[2].held);
    // A blocked sibling holds nothing; `would` never holds.
    let v = r.decide_batch(&[Call::new("rm", "{}"), read.clone()]);
    assert!(!v[1].held);
    assert_eq!(r.would(&read).decision, Decision::Allow);
}
