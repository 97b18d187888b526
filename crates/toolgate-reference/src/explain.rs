//! Explaining a decision: every rule of the subject's tool, what became of
//! it, and why the fold ended where it did.
//!
//! The explanation is the reference's walk written down (§8.3, §11), so it
//! shares no code with the compiled runtime: a caller that prints the
//! runtime's verdict beside it can say when the two disagree.

use super::decide::Active;
use super::{expand, Origin, Reference, Rule};
use serde_json::{json, Value};
use toolgate::call::Call;
use toolgate::decision::{Decision, Verdict};
use toolgate::policy::List;
use toolgate::Evaluator;

/// What became of one rule for one subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It fired and decided the subject.
    Decided,
    /// It fired, but a rule before it had decided the subject.
    AlsoMatched,
    /// Its specifier does not match the subject.
    NoMatch,
    /// It matched, but this carve-out of its list excepts the subject.
    CarvedOut(String),
    /// A carve-out: it only excepts subjects from the rules of its list.
    CarveOut,
    /// An ask rule that matched, shadowed by an active grant set.
    Shadowed,
    /// A bare ask rule that matched, skipped because the call is confined.
    Confined,
    /// Its list was not consulted: a stricter list had decided.
    NotConsulted,
}

impl Outcome {
    fn text(&self) -> String {
        match self {
            Outcome::Decided => "matched, and decided".into(),
            Outcome::AlsoMatched => "matched, after the rule that decided".into(),
            Outcome::NoMatch => "does not match".into(),
            Outcome::CarvedOut(c) => format!("matched, but carved out by {c}"),
            Outcome::CarveOut => "a carve-out: it excepts calls from its list's rules".into(),
            Outcome::Shadowed => "matched, but a grant set shadows it".into(),
            Outcome::Confined => "matched, but skipped: the call is confined".into(),
            Outcome::NotConsulted => "not consulted: a stricter list decided".into(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Outcome::Decided => "decided",
            Outcome::AlsoMatched => "also_matched",
            Outcome::NoMatch => "no_match",
            Outcome::CarvedOut(_) => "carved_out",
            Outcome::CarveOut => "carve_out",
            Outcome::Shadowed => "shadowed",
            Outcome::Confined => "confined",
            Outcome::NotConsulted => "not_consulted",
        }
    }
}

/// One rule of the subject's tool.
#[derive(Clone, Debug)]
pub struct RuleTrace {
    /// The list it is in.
    pub list: List,
    /// The rule as evaluated (`bash(git status:*)`).
    pub rule: String,
    /// Its source; empty for the policy's own rules.
    pub source: String,
    /// What became of it.
    pub outcome: Outcome,
}

/// One subject of the call.
#[derive(Clone, Debug)]
pub struct SubjectTrace {
    /// The tool it was decided against.
    pub tool: String,
    /// Its text (`curl evil.example` of a split command); empty for the
    /// call itself.
    pub text: String,
    /// Whether it is a constraint, judged by deny and ask rules only.
    pub constraint: bool,
    /// Every rule of the tool, list by list.
    pub rules: Vec<RuleTrace>,
    /// Its decision; `None` for a constraint no deny or ask rule met.
    pub decision: Option<Decision>,
    /// Whether no rule fired and the default decided it.
    pub by_default: bool,
    /// Whether the fold kept it: its decision is the call's.
    pub kept: bool,
}

/// Why a call got its verdict.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The reference's verdict.
    pub verdict: Verdict,
    /// The subjects in order; empty when the call could not be evaluated.
    pub subjects: Vec<SubjectTrace>,
    /// Allow rules naming the call's tools that an untrusted source wrote,
    /// withheld (§5.2), with their sources.
    pub withheld: Vec<(String, String)>,
}

impl Explanation {
    /// The explanation as JSON.
    pub fn to_json(&self) -> Value {
        let subjects: Vec<Value> = self
            .subjects
            .iter()
            .map(|s| {
                json!({
                    "tool": s.tool,
                    "text": s.text,
                    "constraint": s.constraint,
                    "decision": s.decision.map(Decision::as_str),
                    "by_default": s.by_default,
                    "kept": s.kept,
                    "rules": s.rules.iter().map(|r| {
                        let mut v = json!({
                            "list": r.list.name(),
                            "rule": r.rule,
                            "source": r.source,
                            "outcome": r.outcome.name(),
                        });
                        if let (Outcome::CarvedOut(c), Some(o)) = (&r.outcome, v.as_object_mut()) {
                            o.insert("by".into(), json!(c));
                        }
                        v
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "verdict": self.verdict.to_json(),
            "subjects": subjects,
            "withheld": self.withheld.iter().map(|(r, s)| json!({"rule": r, "source": s})).collect::<Vec<_>>(),
        })
    }

    /// The explanation for people, one line per rule.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let v = &self.verdict;
        out.push_str(&format!("{}: {}\n", v.decision.as_str(), v.reason));
        for (i, s) in self.subjects.iter().enumerate() {
            let what = if s.text.is_empty() {
                format!("the call, as {}", s.tool)
            } else {
                format!("`{}`, as {}", s.text, s.tool)
            };
            let kind = if s.constraint { " (a constraint)" } else { "" };
            let decision = match (s.decision, s.by_default) {
                (Some(d), true) => format!("{} by default", d.as_str()),
                (Some(d), false) => d.as_str().to_string(),
                (None, _) => "no deny or ask rule".to_string(),
            };
            let kept = if s.kept { ", kept by the fold" } else { "" };
            out.push_str(&format!(
                "subject {}: {what}{kind}: {decision}{kept}\n",
                i + 1
            ));
            if s.rules.is_empty() {
                out.push_str("  no rule names this tool\n");
            }
            for r in &s.rules {
                let source = if r.source.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", r.source)
                };
                out.push_str(&format!(
                    "  {:<5} {}{source}: {}\n",
                    r.list.name(),
                    r.rule,
                    r.outcome.text()
                ));
            }
        }
        if self.subjects.len() > 1 {
            out.push_str("the strictest subject decides the call (the first among equals)\n");
        }
        for (rule, source) in &self.withheld {
            out.push_str(&format!(
                "withheld: the allow rule {rule} of `{source}`, an untrusted source\n"
            ));
        }
        out
    }
}

impl Reference {
    /// Explains the decision on `call`: each subject, each rule of its
    /// tool and what became of it, and the withheld allow rules.
    ///
    /// ```
    /// use toolgate_reference::Reference;
    /// use toolgate::{Call, Policy};
    /// let policy = Policy::from_json(r#"{"default": "ask",
    ///     "matchers": {"bash": {"match": "glob", "field": "command", "split": "shell"}},
    ///     "allow": "bash(git status:*)", "deny": "bash(curl:*)"}"#)?;
    /// let r = Reference::build(&policy, &toolgate::builtins::registry())?;
    /// let e = r.explain(&Call::new("bash", r#"{"command": "git status && curl x"}"#));
    /// assert_eq!(e.subjects.len(), 2);
    /// assert!(e.to_text().contains("bash(curl:*): matched, and decided"));
    /// # Ok::<(), toolgate::Diagnostics>(())
    /// ```
    pub fn explain(&self, call: &Call) -> Explanation {
        let verdict = self.would(call);
        let mut subjects = Vec::new();
        if call.intake_error().is_none() {
            if let Ok(list) = self.traced_subjects(call) {
                let active = self.active(call.scope.as_deref());
                for (tool, s) in list {
                    let confined = call.confined.is_some() && tool == call.tool;
                    subjects.push(self.trace(&active, &tool, &s, confined));
                }
            }
        }
        // The fold keeps the first subject of the strictest decision.
        let strictest = subjects.iter().filter_map(|s| s.decision).max();
        if let Some(d) = strictest {
            if let Some(s) = subjects.iter_mut().find(|s| s.decision == Some(d)) {
                s.kept = true;
            }
        }
        let tools: Vec<String> = subjects.iter().map(|s| s.tool.clone()).collect();
        let mut withheld = Vec::new();
        for set in self.policy.sources.iter().filter(|s| !s.source.trusted) {
            let origin = Origin::of(&set.source);
            for r in set.lists.get(List::Allow) {
                for e in expand(&self.policy.aliases, r, &origin) {
                    if tools.iter().any(|t| e.names(t)) {
                        withheld.push((e.text, set.source.name.clone()));
                    }
                }
            }
        }
        for a in &self.policy.server_allows {
            let untrusted = self
                .policy
                .sources
                .iter()
                .any(|set| !set.source.trusted && set.source.name == a.source);
            if untrusted && tools.iter().any(|t| super::in_server(&a.glob, t)) {
                withheld.push((a.text.clone(), a.source.clone()));
            }
        }
        Explanation {
            verdict,
            subjects,
            withheld,
        }
    }

    /// The subjects with their tools and canonical arguments.
    fn traced_subjects(
        &self,
        call: &Call,
    ) -> Result<Vec<(String, toolgate::call::Subject)>, String> {
        let splitter = self
            .policy
            .matcher(&call.tool)
            .and_then(|m| m.split.as_deref());
        self.subjects(call, splitter)?
            .into_iter()
            .map(|mut s| {
                let tool = s
                    .tool
                    .clone()
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| call.tool.clone());
                s.args = self.normalized(&tool, &s.args, call.cwd.as_deref())?;
                Ok((tool, s))
            })
            .collect()
    }

    /// One subject's walk over the lists (§8.3), every rule of its tool
    /// recorded.
    fn trace(
        &self,
        active: &Active<'_>,
        tool: &str,
        s: &toolgate::call::Subject,
        confined: bool,
    ) -> SubjectTrace {
        let args = &s.args;
        let mut rules = Vec::new();
        let mut decision: Option<Decision> = None;
        let mut by_default = false;
        let mut skipped_confined = false;
        let lists: [(List, &[&Rule]); 3] = [
            (List::Deny, &active.deny),
            (List::Ask, &active.ask),
            (List::Allow, &active.allow),
        ];
        for (l, list) in lists {
            let consulted = decision.is_none() && !(s.constrain && l == List::Allow);
            for &rule in list.iter().filter(|r| r.names(tool)) {
                let outcome = if rule.carve_out().is_some() {
                    Outcome::CarveOut
                } else if !consulted {
                    Outcome::NotConsulted
                } else if !self.spec_fires(rule, tool, args) {
                    Outcome::NoMatch
                } else if let Some(c) = self.carving(rule, list, tool, args) {
                    Outcome::CarvedOut(c.text.clone())
                } else if l == List::Ask && self.shadowed(rule, active, tool, args) {
                    Outcome::Shadowed
                } else if l == List::Ask && confined && rule.is_bare() {
                    skipped_confined = true;
                    Outcome::Confined
                } else if decision.is_some() {
                    Outcome::AlsoMatched
                } else {
                    decision = Some(match l {
                        List::Deny => Decision::Deny,
                        List::Ask => Decision::Ask,
                        List::Allow => Decision::Allow,
                    });
                    Outcome::Decided
                };
                rules.push(RuleTrace {
                    list: l,
                    rule: rule.text.clone(),
                    source: rule.origin.name.clone(),
                    outcome,
                });
            }
            if l == List::Ask && decision.is_none() && skipped_confined && !s.constrain {
                decision = Some(Decision::Allow);
            }
        }
        if decision.is_none() && !s.constrain {
            decision = Some(self.default);
            by_default = true;
        }
        SubjectTrace {
            tool: tool.to_string(),
            text: s.text.clone(),
            constraint: s.constrain,
            rules,
            decision,
            by_default,
            kept: false,
        }
    }
}
