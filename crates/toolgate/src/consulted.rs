//! What a compiled engine looked at for one call: the rules of its tool,
//! which of them matched, which one decided, and why each other one did
//! not. The service's `?explain=true` answers with it; `toolgate explain`
//! walks the policy document with the reference evaluator instead, and says
//! more (each subject of a split command).

use serde_json::{json, Value};

use crate::decision::{List, RuleRef, Verdict};
use crate::engine::{rule_ref, Engine};
use crate::runtime::program::F_CARVE;
use crate::Call;

/// Why a rule of the call's tool did, or did not, decide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It decided the call.
    Decided,
    /// Its specifier does not match the call.
    NoMatch,
    /// A carve-out that matched: it takes the call out of the rules of its
    /// list it cancels.
    CarveOut,
    /// It matched, but a carve-out of its list that also matched cancels it.
    CarvedOut(String),
    /// It matched, but a stricter list decided first (deny, then ask, then
    /// allow).
    Outranked(List),
    /// It matched, but an earlier rule of its list decided.
    Earlier,
    /// It matched and did not decide for another reason the verdict's
    /// reason gives (a confined call skips a bare ask rule; a split command
    /// is decided subject by subject, and this rule matched the whole
    /// value but no subject).
    NotApplied,
}

impl Outcome {
    /// The outcome in words, as `?explain=true` prints it.
    pub fn why(&self) -> String {
        match self {
            Outcome::Decided => "decided the call".into(),
            Outcome::NoMatch => "no match: its specifier does not match the call".into(),
            Outcome::CarveOut => {
                "a carve-out that matched: it cancels the rules of its list it reaches".into()
            }
            Outcome::CarvedOut(by) => format!("matched, but the carve-out `{by}` cancels it"),
            Outcome::Outranked(l) => format!(
                "matched, but the {} list decided first (deny, then ask, then allow)",
                l.name()
            ),
            Outcome::Earlier => "matched, but an earlier rule of its list decided".into(),
            Outcome::NotApplied => {
                "matched the value but did not decide: see the verdict's reason".into()
            }
        }
    }
}

/// One rule the engine considered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Considered {
    /// The rule.
    pub rule: RuleRef,
    /// Its list.
    pub list: List,
    /// What became of it.
    pub outcome: Outcome,
}

/// What the engine considered for one call, and why the fold ended where
/// it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consulted {
    /// Every rule naming the call's tool, and every tool-name glob that
    /// matched it, in list order (deny, ask, allow), each with its outcome.
    pub rules: Vec<Considered>,
    /// The allow rules of untrusted sources naming the tool: never
    /// evaluated.
    pub withheld: Vec<RuleRef>,
    /// Why the decision is what it is.
    pub fold: String,
}

impl Consulted {
    /// The JSON form: `consulted` (each rule with `list`, `matched` and
    /// `why`), `matched` and `skipped` (the consulted rules that matched, and
    /// those that did not decide, each with `why`), `decided_by`, `withheld`
    /// and `fold`.
    pub fn to_json(&self, verdict: &Verdict) -> Value {
        let rule = |r: &RuleRef| {
            let mut m = serde_json::Map::new();
            m.insert("rule".into(), Value::String(r.text.clone()));
            if !r.source.is_empty() {
                m.insert("source".into(), Value::String(r.source.clone()));
            }
            m
        };
        let with = |c: &Considered| {
            let mut m = rule(&c.rule);
            m.insert("list".into(), Value::String(c.list.name().into()));
            m.insert("why".into(), Value::String(c.outcome.why()));
            Value::Object(m)
        };
        let matched: Vec<Value> = self
            .rules
            .iter()
            .filter(|c| c.outcome != Outcome::NoMatch)
            .map(|c| Value::Object(rule(&c.rule)))
            .collect();
        let skipped: Vec<Value> = self
            .rules
            .iter()
            .filter(|c| c.outcome != Outcome::Decided)
            .map(with)
            .collect();
        let decided_by = match &verdict.rule {
            Some(r) => Value::Object(rule(r)),
            None => Value::String("the default (no rule fired)".into()),
        };
        json!({
            "consulted": self.rules.iter().map(with).collect::<Vec<_>>(),
            "matched": matched,
            "skipped": skipped,
            "decided_by": decided_by,
            "withheld": self.withheld.iter().map(|r| Value::Object(rule(r))).collect::<Vec<_>>(),
            "fold": self.fold,
        })
    }
}

fn rank(l: List) -> u8 {
    match l {
        List::Deny => 0,
        List::Ask => 1,
        List::Allow => 2,
    }
}

impl Engine<'_> {
    /// What the engine considered for `call`, given the `verdict` it gave.
    /// Its cost grows with the number of rules (every rule's tool is
    /// compared): it is for explaining a decision, not for making one.
    ///
    /// ```
    /// use toolgate::consulted::Outcome;
    /// use toolgate::{Call, Engine, Policy};
    ///
    /// let engine = Engine::build(&Policy::from_json(r#"{
    ///     "default": "allow",
    ///     "matchers": {"bash": {"match": "prefix", "field": "command"}},
    ///     "deny": "bash(rm:*)", "ask": "bash(git push:*)", "allow": "bash(git:*)"
    /// }"#)?)?;
    /// let call = Call::new("bash", r#"{"command": "git push"}"#);
    /// let c = engine.consulted(&call, &engine.would(&call));
    /// let outcomes: Vec<_> = c.rules.iter().map(|r| (r.rule.text.as_str(), r.outcome.clone())).collect();
    /// assert_eq!(outcomes, [
    ///     ("bash(rm:*)", Outcome::NoMatch),
    ///     ("bash(git push:*)", Outcome::Decided),
    ///     ("bash(git:*)", Outcome::Outranked(toolgate::List::Ask)),
    /// ]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consulted(&self, call: &Call, verdict: &Verdict) -> Consulted {
        let p = self.program();
        let matched = self.matching_ids_in(&call.tool, &call.args, call.cwd.as_deref(), true);
        let mut ids: Vec<u32> = (0..p.n_rules())
            .filter(|&id| p.rule_tool(id) == call.tool)
            .chain(matched.iter().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let decider = verdict.rule.as_ref().and_then(|r| {
            ids.iter().copied().find(|&id| {
                p.rule_text(id) == r.text && p.source_name(p.rule(id).source) == r.source
            })
        });
        let decided_list = decider.map(|d| p.rule(d).list());
        let carve_in = |list: List| {
            matched
                .iter()
                .copied()
                .find(|&id| p.rule(id).flags & F_CARVE != 0 && p.rule(id).list() == list)
        };
        let rules = ids
            .iter()
            .map(|&id| {
                let list = p.rule(id).list();
                let outcome = if Some(id) == decider {
                    Outcome::Decided
                } else if matched.binary_search(&id).is_err() {
                    Outcome::NoMatch
                } else if p.rule(id).flags & F_CARVE != 0 {
                    Outcome::CarveOut
                } else if let Some(d) = decided_list.filter(|d| rank(*d) < rank(list)) {
                    Outcome::Outranked(d)
                } else if let Some(c) = carve_in(list) {
                    Outcome::CarvedOut(p.rule_text(c).to_string())
                } else if decided_list == Some(list) {
                    Outcome::Earlier
                } else {
                    Outcome::NotApplied
                };
                Considered {
                    rule: rule_ref(p, id),
                    list,
                    outcome,
                }
            })
            .collect();
        let bare = call.tool.as_str();
        let withheld = self
            .withheld()
            .into_iter()
            .filter(|r| {
                r.text == bare
                    || r.text
                        .strip_prefix(bare)
                        .is_some_and(|rest| rest.starts_with('('))
            })
            .collect();
        Consulted {
            rules,
            withheld,
            fold: fold(verdict, decided_list),
        }
    }
}

/// Why the fold ended where it did, in words.
fn fold(v: &Verdict, list: Option<List>) -> String {
    let mut s = match (&v.rule, list) {
        (Some(r), Some(l)) => format!(
            "the {} list decided with `{}`: precedence is deny, then ask, then allow, then the default",
            l.name(),
            r.text
        ),
        (Some(r), None) => format!("`{}` decided, from a grant set or a host's rules", r.text),
        (None, _) => format!("no rule decided: {}", v.reason),
    };
    if !v.subject.is_empty() {
        s.push_str(&format!(
            "; the command was split into subjects and the fold kept the most restrictive, `{}`",
            v.subject
        ));
    }
    if v.held {
        s.push_str("; held: the policy allows it, but another call of its batch asks");
    }
    if !v.confined.is_empty() {
        s.push_str(&format!("; confined by {}", v.confined));
    }
    s
}
