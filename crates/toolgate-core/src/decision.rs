//! Decisions and verdicts: what the engine answers and why.
//!
//! This module depends on nothing else in the crate. Every engine (the compiled
//! runtime, the runtime loaded from an artifact and the reference evaluator)
//! answers with the types defined here, which is what lets one harness compare
//! them member for member.

use std::fmt;

/// What a policy decides for a call.
///
/// The order is the lattice the fold uses: `Allow < Ask < Deny`. A call split
/// into several subjects is decided as the strictest of its subjects.
///
/// ```
/// use toolgate_core::Decision;
/// assert!(Decision::Deny > Decision::Ask && Decision::Ask > Decision::Allow);
/// assert_eq!("ask".parse::<Decision>(), Ok(Decision::Ask));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decision {
    /// The call runs.
    Allow,
    /// The call waits for somebody to approve it (agentpolicy's `defer`).
    Ask,
    /// The call is refused (agentpolicy's `block`).
    Deny,
}

impl Decision {
    /// The word used in policies and verdicts: `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }

    /// agentpolicy's name for the action: `allow`, `defer` or `block`.
    pub fn agentpolicy_action(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "defer",
            Decision::Deny => "block",
        }
    }

    /// Reads agentpolicy's action names (`allow`, `defer`, `block`) as well as
    /// toolgate's.
    pub fn from_any_name(s: &str) -> Option<Decision> {
        match s {
            "allow" => Some(Decision::Allow),
            "ask" | "defer" => Some(Decision::Ask),
            "deny" | "block" => Some(Decision::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Decision {
    type Err = String;

    fn from_str(s: &str) -> Result<Decision, String> {
        match s {
            "allow" => Ok(Decision::Allow),
            "ask" => Ok(Decision::Ask),
            "deny" => Ok(Decision::Deny),
            other => Err(format!(
                "`{other}` is not a decision; write `allow`, `ask` or `deny`"
            )),
        }
    }
}

/// The rule a verdict names, as the record shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleRef {
    /// The rule's string form as it is evaluated: `bash(git push:*)`, after
    /// alias expansion.
    pub text: String,
    /// The name of the source the rule came from; empty for the host's own rules.
    pub source: String,
    /// The hash of that source, when its declaration gave one.
    pub source_hash: String,
    /// The note written beside the rule, whether or not the reason cites it.
    pub note: String,
}

/// What was decided about one call, and why.
///
/// The JSON form (see [`Verdict::to_json`]) leaves out every empty member
/// except `decision`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// The rule that decided, or the ask rule a confined call skipped; `None`
    /// when the default applied or the call could not be evaluated.
    pub rule: Option<RuleRef>,
    /// The stable text behind the decision, the text the model reads.
    pub reason: String,
    /// The text of the subject whose verdict the fold kept; empty for a call
    /// no splitter split.
    pub subject: String,
    /// Set on an ask for a call the policy allowed but holds because another
    /// call of its batch asks.
    pub held: bool,
    /// What confines the call, when the call says it runs confined.
    pub confined: String,
    /// Who decided: always `policy` for the engine's own verdicts.
    pub by: &'static str,
    /// The call's run, echoed from the call.
    pub run_id: String,
    /// The call's id, echoed from the call.
    pub call_id: String,
}

impl Verdict {
    /// A verdict with only a decision and a reason, decided by policy.
    pub fn new(decision: Decision, reason: impl Into<String>) -> Verdict {
        Verdict {
            decision,
            rule: None,
            reason: reason.into(),
            subject: String::new(),
            held: false,
            confined: String::new(),
            by: "policy",
            run_id: String::new(),
            call_id: String::new(),
        }
    }

    /// The rule's string form, or `""`.
    pub fn rule_text(&self) -> &str {
        self.rule.as_ref().map_or("", |r| r.text.as_str())
    }

    /// The rule's source name, or `""`.
    pub fn source_name(&self) -> &str {
        self.rule.as_ref().map_or("", |r| r.source.as_str())
    }

    /// The verdict as a JSON object: `decision`, `rule`, `source`, `reason`,
    /// `subject`, `held`, `confined`, `by`, `run_id`, `call_id`, with empty
    /// members left out.
    ///
    /// ```
    /// use toolgate_core::{Decision, Verdict};
    /// let v = Verdict::new(Decision::Deny, "no rule allows bash: denied by default");
    /// assert_eq!(
    ///     v.to_json().to_string(),
    ///     r#"{"decision":"deny","reason":"no rule allows bash: denied by default","by":"policy"}"#
    /// );
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The JSON form of [`Verdict::to_json`], written straight to any serde
/// serializer (`serde_json::to_writer` streams it without building a
/// value). Implemented by hand rather than derived: empty members are left
/// out and the rule is flattened into `rule` and `source`, and the derive
/// macro would add five crates to this crate's tree.
///
/// ```
/// use toolgate_core::{Decision, Verdict};
/// let v = Verdict::new(Decision::Ask, "approval required by default");
/// assert_eq!(
///     serde_json::to_string(&v)?,
///     r#"{"decision":"ask","reason":"approval required by default","by":"policy"}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
impl Verdict {
    /// Appends the verdict's JSON form to `out`: byte for byte what
    /// serde_json writes for it (and for [`Verdict::to_json`]), without
    /// building a value or going through a serializer, which took a sixth
    /// of a `toolgate decide` line.
    ///
    /// ```
    /// use toolgate_core::{Decision, Verdict};
    /// let v = Verdict::new(Decision::Ask, "asks \"why\"");
    /// let mut out = String::new();
    /// v.write_json(&mut out);
    /// assert_eq!(out, serde_json::to_string(&v).unwrap());
    /// ```
    pub fn write_json(&self, out: &mut String) {
        use crate::json::write_str;
        // The keys need no escaping: each is written with its quotes.
        let member = |key: &str, value: &str, out: &mut String| {
            if !value.is_empty() {
                out.push_str(key);
                write_str(value, out);
            }
        };
        out.push_str("{\"decision\":");
        write_str(self.decision.as_str(), out);
        if let Some(r) = &self.rule {
            out.push_str(",\"rule\":");
            write_str(&r.text, out);
            member(",\"source\":", &r.source, out);
        }
        member(",\"reason\":", &self.reason, out);
        member(",\"subject\":", &self.subject, out);
        if self.held {
            out.push_str(",\"held\":true");
        }
        member(",\"confined\":", &self.confined, out);
        member(",\"by\":", self.by, out);
        member(",\"run_id\":", &self.run_id, out);
        member(",\"call_id\":", &self.call_id, out);
        out.push('}');
    }
}

impl serde::Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("decision", self.decision.as_str())?;
        if let Some(r) = &self.rule {
            m.serialize_entry("rule", &r.text)?;
            if !r.source.is_empty() {
                m.serialize_entry("source", &r.source)?;
            }
        }
        for (key, value) in [("reason", self.reason.as_str()), ("subject", &self.subject)] {
            if !value.is_empty() {
                m.serialize_entry(key, value)?;
            }
        }
        if self.held {
            m.serialize_entry("held", &true)?;
        }
        for (key, value) in [
            ("confined", self.confined.as_str()),
            ("by", self.by),
            ("run_id", &self.run_id),
            ("call_id", &self.call_id),
        ] {
            if !value.is_empty() {
                m.serialize_entry(key, value)?;
            }
        }
        m.end()
    }
}

/// Which list a rule is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum List {
    /// Rules that refuse calls.
    Deny,
    /// Rules that ask before calls run.
    Ask,
    /// Rules that let calls run.
    Allow,
}

impl List {
    /// The three lists in precedence order.
    pub const ALL: [List; 3] = [List::Deny, List::Ask, List::Allow];

    /// `deny`, `ask` or `allow`.
    pub fn name(self) -> &'static str {
        match self {
            List::Deny => "deny",
            List::Ask => "ask",
            List::Allow => "allow",
        }
    }

    /// The list's position in precedence order (deny 0, ask 1, allow 2).
    pub fn index(self) -> usize {
        match self {
            List::Deny => 0,
            List::Ask => 1,
            List::Allow => 2,
        }
    }

    /// The inverse of [`List::index`].
    pub fn from_index(i: usize) -> Option<List> {
        List::ALL.get(i).copied()
    }
}

/// Where a set of rules came from: a settings file, a skill, the session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// The name that keys grants and scopes. The host's own rules have the
    /// empty name.
    pub name: String,
    /// Authority: higher ranks first. Rank decides which carve-out reaches
    /// which rule and which grant set may shadow which ask; it never changes
    /// precedence between lists.
    pub rank: i64,
    /// An untrusted source's allow rules are withheld; its deny and ask rules
    /// apply at once.
    pub trusted: bool,
    /// Where the source lives, for the record.
    pub path: String,
    /// A hash of the source, for the record.
    pub hash: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written JSON of a verdict is what serde_json writes for
    /// it, member for member and escape for escape.
    #[test]
    fn write_json_writes_what_serde_json_writes() -> Result<(), serde_json::Error> {
        let odd = "a \"quoted\" \\ path\n\t\u{1}\u{7f} é 𝄞 \u{2028}";
        let rule = |source: &str| RuleRef {
            text: format!("bash({odd})"),
            source: source.into(),
            source_hash: "sha256:0f".into(),
            note: "n".into(),
        };
        let mut verdicts = vec![Verdict::new(Decision::Deny, "")];
        for decision in [Decision::Allow, Decision::Ask, Decision::Deny] {
            for (rule, text, held) in [
                (None, "", false),
                (Some(rule("")), odd, true),
                (Some(rule("project")), "", false),
                (Some(rule(odd)), odd, true),
            ] {
                let mut v = Verdict::new(decision, text);
                v.rule = rule;
                v.subject = text.to_string();
                v.held = held;
                v.confined = text.to_string();
                v.run_id = text.to_string();
                v.call_id = format!("c{text}");
                verdicts.push(v);
            }
        }
        for v in &verdicts {
            let mut out = String::new();
            v.write_json(&mut out);
            assert_eq!(out, serde_json::to_string(v)?, "{v:?}");
            assert_eq!(out, serde_json::to_string(&v.to_json())?, "{v:?}");
        }
        Ok(())
    }
}
