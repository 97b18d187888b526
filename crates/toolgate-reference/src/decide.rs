//! Deciding calls: subjects (§7), one subject (§8), confinement (§9),
//! reasons (§10), the fold and the block suffix (§11) and the batch hold
//! (§14).

use super::{normal_scope, ActiveSet, Reference, Rule};
use toolgate::call::{Args, Call, Subject};
use toolgate::decision::{Decision, RuleRef, Verdict};
use toolgate::quote::go_quote;

/// The lists a call is decided over (§8.1): the policy's, then the active
/// grant sets' (the unscoped sets first, then the sets of the call's scope,
/// each in activation order).
pub(super) struct Active<'r> {
    /// The deny list.
    pub(super) deny: Vec<&'r Rule>,
    /// The ask list.
    pub(super) ask: Vec<&'r Rule>,
    /// The allow list.
    pub(super) allow: Vec<&'r Rule>,
    /// The grant sets whose rules are in the lists, in the same order.
    pub(super) sets: Vec<&'r ActiveSet>,
}

/// What a subject's decision rests on.
#[derive(Clone, Copy, Debug)]
enum Basis<'r> {
    /// A rule fired: a deny, an ask or an allow rule.
    Rule(&'r Rule),
    /// The call is confined, so this bare ask rule was skipped (§8.3 step 3).
    Confined(&'r Rule),
    /// No rule fired: the policy's default.
    Default,
}

/// One subject decided.
#[derive(Clone, Debug)]
struct SubjectVerdict<'r> {
    decision: Decision,
    basis: Basis<'r>,
    /// The tool the subject was decided against.
    tool: String,
}

/// One call decided on its own, before the batch hold.
pub(super) struct Decided {
    /// The verdict.
    pub(super) verdict: Verdict,
    /// Whether the call asks on its own or could not be evaluated: either
    /// holds the calls of its batch the policy allows.
    pub(super) holds_siblings: bool,
}

impl Reference {
    /// The active lists for a call under `scope` (§8.1).
    pub(super) fn active(&self, scope: Option<&str>) -> Active<'_> {
        let scope = normal_scope(scope);
        let mut sets: Vec<&ActiveSet> = Vec::new();
        for set in &self.sets {
            if set.scope.is_none() {
                sets.push(set);
            }
        }
        if let Some(scope) = scope {
            for set in &self.sets {
                if set.scope.as_deref() == Some(scope) {
                    sets.push(set);
                }
            }
        }
        let mut active = Active {
            deny: self.lists.deny.iter().collect(),
            ask: self.lists.ask.iter().collect(),
            allow: self.lists.allow.iter().collect(),
            sets: Vec::new(),
        };
        for set in &sets {
            active.deny.extend(set.lists.deny.iter());
            active.ask.extend(set.lists.ask.iter());
            active.allow.extend(set.lists.allow.iter());
        }
        active.sets = sets;
        active
    }

    /// Whether `spec` matches `args` through the matcher of `tool` (§2): the
    /// string member the matcher reads, given to the kind. A tool with no
    /// matcher, and arguments without that string member, match nothing.
    pub(super) fn spec_matches(&self, tool: &str, spec: &str, args: &Args) -> bool {
        let Some(entry) = self.policy.matcher(tool) else {
            return false;
        };
        let (Some(kind), Some(field)) = (entry.kind.as_deref(), entry.field.as_deref()) else {
            return false;
        };
        let Some(value) = args.str_member(field) else {
            return false;
        };
        match kind {
            "prefix" => super::prefix_matches(spec, value),
            "glob" => super::glob_spec_matches(spec, value),
            "claude-bash" => super::kinds::claude_bash_matches(spec, value),
            "path" => super::kinds::path_matches(spec, value),
            "path-fold" => super::kinds::folded_path_matches(spec, value),
            #[cfg(feature = "domain")]
            "domain" => super::kinds::domain_matches(spec, value),
            other => self
                .registry
                .kind(other)
                .is_some_and(|k| k.matches(spec, value)),
        }
    }

    /// Whether `rule` of the active list `list` fires for `tool` and `args`
    /// (§8.2).
    pub(super) fn fires(&self, rule: &Rule, list: &[&Rule], tool: &str, args: &Args) -> bool {
        // 1. It names the tool.
        if !rule.names(tool) {
            return false;
        }
        // 2. Carve-outs never fire on their own.
        if rule.carve_out().is_some() {
            return false;
        }
        // 3. Bare, or its specifier matches.
        if !self.spec_fires(rule, tool, args) {
            return false;
        }
        // 4. No carve-out of its list reaches it and matches.
        self.carving(rule, list, tool, args).is_none()
    }

    /// Whether `rule` is bare or its specifier matches (§8.2 step 3).
    pub(super) fn spec_fires(&self, rule: &Rule, tool: &str, args: &Args) -> bool {
        match &rule.spec {
            Some(spec) => self.spec_matches(tool, spec, args),
            None => true,
        }
    }

    /// The first carve-out of `list` that cancels `rule` for these
    /// arguments: same tool name (string equality), a source of rank at
    /// least the rule's,
    /// and a pattern that matches.
    pub(super) fn carving<'r>(
        &self,
        rule: &Rule,
        list: &[&'r Rule],
        tool: &str,
        args: &Args,
    ) -> Option<&'r Rule> {
        // A glob rule is never carved: no carve-out can name a glob.
        if rule.is_glob() {
            return None;
        }
        list.iter().copied().find(|c| match c.carve_out() {
            Some(pattern) => {
                c.tool == rule.tool
                    && c.origin.rank >= rule.origin.rank
                    && self.spec_matches(tool, pattern, args)
            }
            None => false,
        })
    }

    /// Whether an active grant set shadows the ask rule `ask` for this
    /// subject (§13.3): a set of another source, of rank at least the ask
    /// rule's, with an allow rule that fires for the subject.
    pub(super) fn shadowed(
        &self,
        ask: &Rule,
        active: &Active<'_>,
        tool: &str,
        args: &Args,
    ) -> bool {
        active.sets.iter().any(|set| {
            set.source.name != ask.origin.name
                && set.source.rank >= ask.origin.rank
                && set
                    .lists
                    .allow
                    .iter()
                    .any(|a| self.fires(a, &active.allow, tool, args))
        })
    }

    /// Decides one subject against `tool`'s rules (§8.3). A constraint
    /// subject stops after the ask rules: `None` when neither a deny nor an
    /// ask rule fires.
    fn decide_subject<'r>(
        &'r self,
        active: &Active<'r>,
        tool: &str,
        args: &Args,
        confined: bool,
        constraint: bool,
    ) -> Option<SubjectVerdict<'r>> {
        let verdict = |decision: Decision, basis: Basis<'r>| SubjectVerdict {
            decision,
            basis,
            tool: tool.to_string(),
        };

        // 1. Deny: the first firing deny rule.
        for &rule in &active.deny {
            if self.fires(rule, &active.deny, tool, args) {
                return Some(verdict(Decision::Deny, Basis::Rule(rule)));
            }
        }

        // 2. Ask: the first firing ask rule neither shadowed nor skipped
        // for confinement.
        let mut skipped_for_confinement: Option<&'r Rule> = None;
        for &rule in &active.ask {
            if !self.fires(rule, &active.ask, tool, args) {
                continue;
            }
            if self.shadowed(rule, active, tool, args) {
                continue;
            }
            if confined && rule.is_bare() {
                if skipped_for_confinement.is_none() {
                    skipped_for_confinement = Some(rule);
                }
                continue;
            }
            return Some(verdict(Decision::Ask, Basis::Rule(rule)));
        }

        if constraint {
            return None;
        }

        // 3. Confined: allow, citing the first bare ask rule skipped.
        if let Some(rule) = skipped_for_confinement {
            return Some(verdict(Decision::Allow, Basis::Confined(rule)));
        }

        // 4. Allow: the first firing allow rule.
        for &rule in &active.allow {
            if self.fires(rule, &active.allow, tool, args) {
                return Some(verdict(Decision::Allow, Basis::Rule(rule)));
            }
        }

        // 5. Default.
        Some(verdict(self.default, Basis::Default))
    }

    /// The subjects of a call (§7), or why the call could not be evaluated.
    pub(super) fn subjects(
        &self,
        call: &Call,
        splitter: Option<&str>,
    ) -> Result<Vec<Subject>, String> {
        let Some(name) = splitter else {
            return Ok(vec![Subject::new(call.args.clone(), "")]);
        };
        // `check` refuses a policy naming an unregistered splitter; this is
        // only a guard.
        let Some(splitter) = self.registry.splitter(name) else {
            return Err(format!("no splitter is registered as {name}"));
        };
        let mut subjects = splitter
            .split(&call.tool, &call.args)
            .map_err(|e| e.to_string())?;
        if subjects.is_empty() {
            return Err("splitter returned no subjects".to_string());
        }
        if subjects.iter().all(|s| s.constrain) {
            subjects.insert(0, Subject::new(call.args.clone(), ""));
        }
        for s in &subjects {
            if let Some(e) = s.args.error() {
                return Err(format!("its arguments could not be read: {e}"));
            }
        }
        Ok(subjects)
    }

    /// The arguments as the subject's tool's matcher kind reads them: its
    /// member replaced by the kind's canonical form of it (a path made
    /// absolute, the host of a URL), or why it cannot be read.
    pub(super) fn normalized(
        &self,
        tool: &str,
        args: &Args,
        cwd: Option<&str>,
    ) -> Result<Args, String> {
        let entry = self.policy.matcher(tool);
        let (Some(kind), Some(field)) = (
            entry
                .and_then(|m| m.kind.as_deref())
                .and_then(|k| self.registry.kind(k)),
            entry.and_then(|m| m.field.as_deref()),
        ) else {
            return Ok(args.clone());
        };
        let Some(value) = args.str_member(field) else {
            return Ok(args.clone());
        };
        let context = toolgate::registry::CallContext { cwd };
        let canonical = kind.normalize(value, &context).map_err(|e| e.to_string())?;
        if canonical == value {
            return Ok(args.clone());
        }
        let mut object = args.value().cloned().unwrap_or_default();
        if let Some(m) = object.as_object_mut() {
            m.insert(
                field.to_string(),
                serde_json::Value::String(canonical.into_owned()),
            );
        }
        // The canonical form may hold a NUL (the `path` kind's separator).
        Ok(Args::canonical(object))
    }

    /// Decides one call on its own (§11), without the batch hold.
    pub(super) fn decide_call(&self, call: &Call) -> Decided {
        let mut verdict = Verdict::new(Decision::Deny, String::new());
        verdict.run_id = call.run_id.clone();
        verdict.call_id = call.call_id.clone();
        verdict.confined = call.confined.clone().unwrap_or_default();

        // A tool name that holds a control character, and arguments that
        // could not be read, block the call.
        let shown = toolgate::json::shown(&call.tool);
        if let Some(e) = call.intake_error() {
            verdict.reason = format!("{shown} call could not be evaluated: {e}");
            return Decided {
                verdict,
                holds_siblings: true,
            };
        }

        // 1. Split.
        let splitter = self
            .policy
            .matcher(&call.tool)
            .and_then(|m| m.split.as_deref());
        let subjects = match self.subjects(call, splitter).and_then(|subjects| {
            subjects
                .into_iter()
                .map(|mut s| {
                    let tool = s
                        .tool
                        .as_deref()
                        .filter(|t| !t.is_empty())
                        .unwrap_or(&call.tool);
                    s.args = self.normalized(tool, &s.args, call.cwd.as_deref())?;
                    Ok(s)
                })
                .collect::<Result<Vec<_>, String>>()
        }) {
            Ok(subjects) => subjects,
            Err(why) => {
                verdict.reason = format!("{shown} call could not be evaluated: {why}");
                return Decided {
                    verdict,
                    holds_siblings: true,
                };
            }
        };

        // 2. Decide every subject, and 3. fold: the strictest wins, the
        // first among equals; constraints with no verdict are skipped.
        let active = self.active(call.scope.as_deref());
        let mut kept: Option<(usize, SubjectVerdict<'_>)> = None;
        for (i, subject) in subjects.iter().enumerate() {
            let tool = subject
                .tool
                .as_deref()
                .filter(|t| !t.is_empty())
                .unwrap_or(&call.tool);
            let confined = call.confined.is_some() && tool == call.tool;
            let Some(v) =
                self.decide_subject(&active, tool, &subject.args, confined, subject.constrain)
            else {
                continue;
            };
            let stricter = match &kept {
                None => true,
                Some((_, best)) => v.decision > best.decision,
            };
            if stricter {
                kept = Some((i, v));
            }
        }
        // There is always an ordinary subject, which always has a verdict;
        // the default for the called tool is only a guard.
        let (index, decided) = kept.unwrap_or((
            0,
            SubjectVerdict {
                decision: self.default,
                basis: Basis::Default,
                tool: call.tool.clone(),
            },
        ));

        // The reason (§10).
        verdict.decision = decided.decision;
        match decided.basis {
            Basis::Rule(rule) => {
                verdict.reason = match decided.decision {
                    Decision::Deny => format!("denied by {}", rule.cited()),
                    Decision::Ask => format!("approval required by {}", rule.cited()),
                    Decision::Allow => format!("allowed by {}", rule.cited()),
                };
                verdict.rule = Some(rule_ref(rule));
            }
            Basis::Confined(rule) => {
                verdict.reason = match call.confined.as_deref() {
                    Some(name) if !name.is_empty() => {
                        format!("confined by {name}, so {} does not ask", rule.text)
                    }
                    _ => format!("confined, so {} does not ask", rule.text),
                };
                verdict.rule = Some(rule_ref(rule));
            }
            Basis::Default => {
                verdict.reason = match decided.decision {
                    Decision::Allow => "allowed by default".to_string(),
                    Decision::Deny => format!("no rule allows {}: denied by default", decided.tool),
                    Decision::Ask => format!(
                        "no rule allows {}: approval required by default",
                        decided.tool
                    ),
                };
            }
        }

        // The kept subject, and 4. the block suffix.
        if splitter.is_some() {
            let text = subjects
                .get(index)
                .map(|s| s.text.clone())
                .unwrap_or_default();
            if decided.decision == Decision::Deny && subjects.len() > 1 && !text.is_empty() {
                verdict.reason.push_str(&block_suffix(&text, &subjects));
            }
            verdict.subject = text;
        }

        Decided {
            holds_siblings: verdict.decision == Decision::Ask,
            verdict,
        }
    }

    /// Decides a batch (§14): every call on its own, then a call allowed is
    /// held when another call of the batch asks or could not be evaluated.
    pub(super) fn decide_batch_plain(&self, calls: &[Call]) -> Vec<Verdict> {
        let decided: Vec<Decided> = calls.iter().map(|c| self.decide_call(c)).collect();
        let mut out = Vec::with_capacity(decided.len());
        for (i, d) in decided.iter().enumerate() {
            let mut verdict = d.verdict.clone();
            let another_asks = decided
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && other.holds_siblings);
            if verdict.decision == Decision::Allow && another_asks {
                verdict.decision = Decision::Ask;
                verdict.held = true;
                verdict.reason = format!("held for approval: {}", verdict.reason);
            }
            out.push(verdict);
        }
        out
    }
}

/// The rule as the verdict records it; the note always, cited or not.
fn rule_ref(rule: &Rule) -> RuleRef {
    RuleRef {
        text: rule.text.clone(),
        source: rule.origin.name.clone(),
        source_hash: rule.origin.hash.clone(),
        note: rule.note.clone().unwrap_or_default(),
    }
}

/// The block suffix (§11 step 4): ` on "S"; nothing in this command ran`,
/// then `, including "a", "b" and "c"` for the other subjects' texts, in
/// order, with empty texts, the blocking text and duplicates left out.
pub(super) fn block_suffix(blocking: &str, subjects: &[Subject]) -> String {
    let blocking = go_quote(blocking);
    let mut others: Vec<String> = Vec::new();
    for s in subjects {
        if s.text.is_empty() {
            continue;
        }
        let quoted = go_quote(&s.text);
        if quoted == blocking || others.contains(&quoted) {
            continue;
        }
        others.push(quoted);
    }
    let mut out = format!(" on {blocking}; nothing in this command ran");
    if let Some((last, rest)) = others.split_last() {
        if rest.is_empty() {
            out.push_str(&format!(", including {last}"));
        } else {
            out.push_str(&format!(", including {} and {last}", rest.join(", ")));
        }
    }
    out
}
