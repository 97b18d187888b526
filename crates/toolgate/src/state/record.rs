//! What the state layer writes into a [`Store`](super::Store), and the
//! `agentpolicy:verdict` record an observer writes into a session.
//!
//! Every record is a serde_json object with a version member, so a replica
//! of another version reads what it can and reports the rest as corrupt
//! rather than guessing.

use serde::{Deserialize, Serialize};

use crate::call::{Args, Call};
use crate::decision::{Decision, RuleRef, Verdict};
use crate::policy::{RuleDecl, RuleLists, RuleSet, Source};

use super::store::StoreError;

/// The record format this version writes and reads.
const VERSION: u32 = 1;

/// A deferred call as the store keeps it: the call, and the verdict that
/// deferred it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Deferred {
    pub v: u32,
    pub tool: String,
    /// The arguments' JSON text, as the call carried it.
    pub args: String,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub confined: Option<String>,
    pub turn: u64,
    pub verdict: VerdictRec,
}

/// A verdict's members, without the call it echoes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct VerdictRec {
    pub decision: String,
    #[serde(default)]
    pub rule: Option<RuleRec>,
    pub reason: String,
    #[serde(default)]
    pub subject: String,
    #[serde(default)]
    pub held: bool,
    #[serde(default)]
    pub confined: String,
    pub by: String,
}

/// A rule a verdict names.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RuleRec {
    pub text: String,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub source_hash: String,
    #[serde(default)]
    pub note: String,
}

impl Deferred {
    pub(crate) fn new(call: &Call, verdict: &Verdict, turn: u64) -> Deferred {
        Deferred {
            v: VERSION,
            tool: call.tool.clone(),
            args: call.args.raw().to_string(),
            scope: call.scope.clone(),
            cwd: call.cwd.clone(),
            confined: call.confined.clone(),
            turn,
            verdict: VerdictRec {
                decision: verdict.decision.as_str().to_string(),
                rule: verdict.rule.as_ref().map(|r| RuleRec {
                    text: r.text.clone(),
                    source: r.source.clone(),
                    source_hash: r.source_hash.clone(),
                    note: r.note.clone(),
                }),
                reason: verdict.reason.clone(),
                subject: verdict.subject.clone(),
                held: verdict.held,
                confined: verdict.confined.clone(),
                by: verdict.by.to_string(),
            },
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Deferred, StoreError> {
        let d: Deferred = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("a deferred call: {e}")))?;
        if d.v != VERSION {
            return Err(StoreError::Corrupt(format!(
                "a deferred call of record version {}",
                d.v
            )));
        }
        // Only a call decided ask is deferred: a record saying otherwise was
        // damaged, and reading it would report an allow nobody decided.
        if Decision::from_any_name(&d.verdict.decision) != Some(Decision::Ask) {
            return Err(StoreError::Corrupt(format!(
                "a deferred call decided `{}`, not asked",
                d.verdict.decision
            )));
        }
        Ok(d)
    }

    /// The call as it was decided, under `run` and `call_id`.
    pub(crate) fn call(&self, run: &str, call_id: &str) -> Call {
        let mut c = Call::new(self.tool.clone(), "{}");
        c.args = Args::from_json(&self.args);
        c.run_id = run.to_string();
        c.call_id = call_id.to_string();
        c.scope = self.scope.clone();
        c.cwd = self.cwd.clone();
        c.confined = self.confined.clone();
        c
    }

    /// The verdict that deferred the call, under `run` and `call_id`.
    pub(crate) fn verdict(&self, run: &str, call_id: &str) -> Verdict {
        let r = &self.verdict;
        let decision = Decision::from_any_name(&r.decision).unwrap_or(Decision::Ask);
        let mut v = Verdict::new(decision, r.reason.clone());
        v.rule = r.rule.as_ref().map(|x| RuleRef {
            text: x.text.clone(),
            source: x.source.clone(),
            source_hash: x.source_hash.clone(),
            note: x.note.clone(),
        });
        v.subject = r.subject.clone();
        v.held = r.held;
        v.confined = r.confined.clone();
        v.by = decider(&r.by);
        v.run_id = run.to_string();
        v.call_id = call_id.to_string();
        v
    }
}

/// The deciders a verdict may name, as the `'static` text [`Verdict::by`]
/// holds: `policy`, `hook`, `agent` or `human`. Anything else read back
/// from a store is the policy's, the decider that never approves on its
/// own account.
pub fn decider(name: &str) -> &'static str {
    match name {
        "hook" => "hook",
        "agent" => "agent",
        "human" => "human",
        _ => "policy",
    }
}

/// A rule as a grant or a grant set keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct DeclRec {
    pub tool: String,
    #[serde(default)]
    pub spec: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

impl DeclRec {
    pub(crate) fn of(r: &RuleDecl) -> DeclRec {
        DeclRec {
            tool: r.tool.clone(),
            spec: r.spec.clone(),
            note: r.note.clone(),
        }
    }

    pub(crate) fn decl(&self) -> RuleDecl {
        let mut r = RuleDecl::new(self.tool.clone(), self.spec.as_deref());
        r.note = self.note.clone();
        r
    }
}

/// A grant set as the store keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SetRec {
    pub v: u32,
    pub name: String,
    pub rank: i64,
    pub trusted: bool,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub hash: String,
    pub deny: Vec<DeclRec>,
    pub ask: Vec<DeclRec>,
    pub allow: Vec<DeclRec>,
}

impl SetRec {
    pub(crate) fn of(set: &RuleSet) -> SetRec {
        let l = &set.lists;
        SetRec {
            v: VERSION,
            name: set.source.name.clone(),
            rank: set.source.rank,
            trusted: set.source.trusted,
            path: set.source.path.clone(),
            hash: set.source.hash.clone(),
            deny: l.deny.iter().map(DeclRec::of).collect(),
            ask: l.ask.iter().map(DeclRec::of).collect(),
            allow: l.allow.iter().map(DeclRec::of).collect(),
        }
    }

    pub(crate) fn set(&self) -> RuleSet {
        RuleSet {
            source: Source {
                name: self.name.clone(),
                rank: self.rank,
                trusted: self.trusted,
                path: self.path.clone(),
                hash: self.hash.clone(),
            },
            lists: RuleLists {
                deny: self.deny.iter().map(DeclRec::decl).collect(),
                ask: self.ask.iter().map(DeclRec::decl).collect(),
                allow: self.allow.iter().map(DeclRec::decl).collect(),
            },
            ..RuleSet::default()
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<SetRec, StoreError> {
        if let Some(why) = super::sealed::refused(bytes) {
            return Err(StoreError::Corrupt(format!("a grant set: {why}")));
        }
        let s: SetRec = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("a grant set: {e}")))?;
        if s.v != VERSION {
            return Err(StoreError::Corrupt(format!(
                "a grant set of record version {}",
                s.v
            )));
        }
        Ok(s)
    }

    pub(crate) fn n_rules(&self) -> usize {
        self.deny.len() + self.ask.len() + self.allow.len()
    }
}

/// One "always allow": an allow rule under a source, and, when it answered
/// a prompt an ask rule raised, what it did to that rule.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct AlwaysRec {
    pub v: u32,
    /// The source the grant is written under.
    pub source: String,
    pub rule: DeclRec,
    /// The ask rule the grant answered: its source and text.
    #[serde(default)]
    pub over: Option<(String, String)>,
}

impl AlwaysRec {
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<AlwaysRec, StoreError> {
        if let Some(why) = super::sealed::refused(bytes) {
            return Err(StoreError::Corrupt(format!("a grant: {why}")));
        }
        let a: AlwaysRec = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("a grant: {e}")))?;
        if a.v != VERSION {
            return Err(StoreError::Corrupt(format!(
                "a grant of record version {}",
                a.v
            )));
        }
        Ok(a)
    }

    /// The key the grant is kept under: one record per grant, so two
    /// replicas granting at once never overwrite each other's.
    pub(crate) fn key(&self) -> String {
        let over = self
            .over
            .as_ref()
            .map(|(s, t)| format!("{s}\u{1f}{t}"))
            .unwrap_or_default();
        format!(
            "{}\u{1f}{}\u{1f}{over}",
            self.source,
            self.rule.decl().text()
        )
    }
}

/// The session namespace an observer writes a verdict under.
pub const VERDICT_NAMESPACE: &str = "agentpolicy:verdict";

/// The `agentpolicy:verdict` record of `v`, a call of `tool` in turn
/// `turn`: the namespace and the JSON object, with `action` always present
/// and every other member left out when empty, zero or false.
///
/// ```
/// use toolgate::state::record;
/// use toolgate::{Decision, Verdict};
///
/// let mut v = Verdict::new(Decision::Deny, "denied by bash(rm:*)");
/// v.run_id = "run-1".into();
/// v.call_id = "c1".into();
/// let (ns, data) = record(&v, "bash", 2);
/// assert_eq!(ns, "agentpolicy:verdict");
/// assert_eq!(
///     data,
///     r#"{"run_id":"run-1","turn":2,"call_id":"c1","tool":"bash","action":"block","reason":"denied by bash(rm:*)","by":"policy"}"#
/// );
/// ```
pub fn record(v: &Verdict, tool: &str, turn: u64) -> (&'static str, String) {
    fn put(m: &mut serde_json::Map<String, serde_json::Value>, k: &str, s: &str) {
        if !s.is_empty() {
            m.insert(k.to_string(), serde_json::Value::String(s.to_string()));
        }
    }
    let mut m = serde_json::Map::new();
    put(&mut m, "run_id", &v.run_id);
    if turn != 0 {
        m.insert("turn".into(), turn.into());
    }
    put(&mut m, "call_id", &v.call_id);
    put(&mut m, "tool", tool);
    put(&mut m, "action", v.decision.agentpolicy_action());
    if let Some(r) = &v.rule {
        put(&mut m, "rule", &r.text);
        put(&mut m, "source", &r.source);
        put(&mut m, "source_hash", &r.source_hash);
        put(&mut m, "note", &r.note);
    }
    put(&mut m, "reason", &v.reason);
    put(&mut m, "by", v.by);
    if v.held {
        m.insert("held".into(), true.into());
    }
    put(&mut m, "subject", &v.subject);
    put(&mut m, "confined", &v.confined);
    (VERDICT_NAMESPACE, serde_json::Value::Object(m).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferred_record_gives_back_the_call_and_its_verdict() -> Result<(), StoreError> {
        let mut call = Call::new("bash", r#"{"command":"git push"}"#).in_scope("s1");
        call.run_id = "r".into();
        call.call_id = "c".into();
        let mut v = Verdict::new(Decision::Ask, "approval required by bash(git push:*)");
        v.rule = Some(RuleRef {
            text: "bash(git push:*)".into(),
            source: "team".into(),
            source_hash: String::new(),
            note: "pushes are reviewed".into(),
        });
        v.run_id = "r".into();
        v.call_id = "c".into();
        let d = Deferred::from_bytes(&Deferred::new(&call, &v, 3).to_bytes())?;
        assert_eq!(d.verdict("r", "c"), v);
        assert_eq!(d.call("r", "c"), call);
        assert_eq!(d.turn, 3);
        Ok(())
    }

    #[test]
    fn a_record_of_another_version_is_corrupt_not_guessed() {
        let bytes = br#"{"v":2,"tool":"bash","args":"{}","turn":0,"verdict":{"decision":"ask","reason":"","by":"policy"}}"#;
        assert!(matches!(
            Deferred::from_bytes(bytes),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn the_record_carries_rule_note_source_subject_and_decider() {
        let mut v = Verdict::new(Decision::Ask, "held for approval: allowed by read");
        v.rule = Some(RuleRef {
            text: "read".into(),
            source: "local".into(),
            source_hash: "h".into(),
            note: "reads are fine".into(),
        });
        v.held = true;
        v.subject = "cat x".into();
        v.by = "hook";
        let (_, data) = record(&v, "read", 0);
        let j: serde_json::Value = serde_json::from_str(&data).unwrap_or_default();
        assert_eq!(j["action"], "defer");
        assert_eq!(j["rule"], "read");
        assert_eq!(j["source"], "local");
        assert_eq!(j["source_hash"], "h");
        assert_eq!(j["note"], "reads are fine");
        assert_eq!(j["subject"], "cat x");
        assert_eq!(j["by"], "hook");
        assert_eq!(j["held"], true);
        assert!(j.get("turn").is_none());
    }
}
