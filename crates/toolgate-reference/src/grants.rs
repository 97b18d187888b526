//! Grant sets (§13.3), revocation (§13.4) and offer filtering (§15).

use super::{normal_scope, ActiveSet, Lists, Origin, Reference, Rule};
use toolgate::engine::{Grant, Refusal};
use toolgate::policy::{List, RuleSet};
use toolgate::quote::go_quote;

impl Reference {
    /// Why a rule of list `l` could never fire, if it could not: no tool
    /// name, a tool-name glob in the allow list or with a specifier, a
    /// specifier for a tool with no matcher kind, or a specifier the kind
    /// cannot read. The texts are the build errors' (§6), with toolgate's
    /// prefix.
    fn never_fires(&self, rule: &Rule, l: List) -> Option<String> {
        if rule.tool.is_empty() {
            return Some(format!(
                "toolgate: rule {}: missing tool name",
                go_quote(&rule.text)
            ));
        }
        if rule.is_glob() {
            if l == List::Allow {
                return Some(format!(
                    "toolgate: tool-name glob: {} is not honoured in the allow list",
                    rule.text
                ));
            }
            if rule.spec.is_some() {
                return Some(format!(
                    "toolgate: tool-name glob: {} takes no specifier",
                    rule.text
                ));
            }
            return None;
        }
        let spec = rule.spec.as_deref()?;
        let kind = self
            .policy
            .matcher(&rule.tool)
            .and_then(|m| m.kind.as_deref());
        let Some(kind) = kind else {
            // The near miss: a tool with a matcher whose name equals this
            // one but for case; the smallest such name.
            let near = self
                .policy
                .matchers
                .iter()
                .filter(|m| m.kind.is_some() && m.tool.eq_ignore_ascii_case(&rule.tool))
                .map(|m| m.tool.as_str())
                .min();
            return Some(match near {
                Some(n) => format!(
                    "toolgate: no matcher for the rule's tool: {}; did you mean {n}?",
                    rule.text
                ),
                None => format!("toolgate: no matcher for the rule's tool: {}", rule.text),
            });
        };
        // A kind may refuse a specifier it can never match (the built-in
        // kinds read every specifier).
        let pattern = rule.carve_out().unwrap_or(spec);
        if let Some(k) = self.registry.kind(kind) {
            if let Err(msg) = k.lower(pattern) {
                return Some(format!("toolgate: rule {}: {msg}", go_quote(&rule.text)));
            }
        }
        None
    }

    /// Activates a grant set under its source and `scope` (§13.3).
    pub(super) fn activate(&mut self, set: &RuleSet, scope: Option<&str>) -> Grant {
        let scope = normal_scope(scope).map(str::to_string);
        let origin = Origin::of(&set.source);
        let mut grant = Grant::default();
        let mut kept = Lists::default();

        // The set's deny and ask rules apply at once, trusted or not, unless
        // they could never fire; an untrusted set's carve-outs, which
        // loosen, are withheld (§5.2).
        for l in [List::Deny, List::Ask] {
            for decl in set.lists.get(l) {
                for rule in self.expand(decl, &origin) {
                    if !set.source.trusted && rule.carve_out().is_some() {
                        grant.refused.push(Refusal {
                            rule: rule.text.clone(),
                            reason: format!(
                                "withheld: the source {} is not trusted",
                                set.source.name
                            ),
                        });
                        continue;
                    }
                    match self.never_fires(&rule, l) {
                        Some(reason) => grant.refused.push(Refusal {
                            rule: rule.text.clone(),
                            reason,
                        }),
                        None => kept.get_mut(l).push(rule),
                    }
                }
            }
        }

        // The deny and ask rules the set's allow rules will be decided
        // beside: the policy's, those of the active sets under no scope or
        // this scope (the set this one replaces excepted), and the set's own.
        let mut deny: Vec<&Rule> = self.lists.deny.iter().collect();
        let mut ask: Vec<&Rule> = self.lists.ask.iter().collect();
        for other in &self.sets {
            let replaced = other.source.name == set.source.name && other.scope == scope;
            let beside = other.scope.is_none() || other.scope == scope;
            if beside && !replaced {
                deny.extend(other.lists.deny.iter());
                ask.extend(other.lists.ask.iter());
            }
        }
        deny.extend(kept.deny.iter());
        ask.extend(kept.ask.iter());

        let mut allowed: Vec<Rule> = Vec::new();
        for decl in &set.lists.allow {
            for rule in self.expand(decl, &origin) {
                match allow_refusal(self, &rule, set, &deny, &ask) {
                    Some(reason) => grant.refused.push(Refusal {
                        rule: rule.text.clone(),
                        reason,
                    }),
                    None => {
                        grant.granted.push(rule.text.clone());
                        allowed.push(rule);
                    }
                }
            }
        }
        kept.allow = allowed;

        let active = ActiveSet {
            source: set.source.clone(),
            scope,
            lists: kept,
        };
        // Activating again under the same source and scope replaces the set
        // in place.
        let slot = self
            .sets
            .iter_mut()
            .find(|s| s.source.name == active.source.name && s.scope == active.scope);
        match slot {
            Some(slot) => *slot = active,
            None => self.sets.push(active),
        }
        grant
    }

    /// Removes the set of `source` under `scope` only; how many rules it had
    /// active.
    pub(super) fn revoke_source(&mut self, source: &str, scope: Option<&str>) -> usize {
        let scope = normal_scope(scope);
        let mut removed = 0;
        self.sets.retain(|s| {
            let hit = s.source.name == source && s.scope.as_deref() == scope;
            if hit {
                removed += s.lists.len();
            }
            !hit
        });
        removed
    }

    /// Removes every set of `scope`; how many rules they had active.
    pub(super) fn revoke_all_of_scope(&mut self, scope: Option<&str>) -> usize {
        let scope = normal_scope(scope);
        let mut removed = 0;
        self.sets.retain(|s| {
            let hit = s.scope.as_deref() == scope;
            if hit {
                removed += s.lists.len();
            }
            !hit
        });
        removed
    }

    /// Offer filtering (§15): the tools no deny rule of the policy or of an
    /// unscoped grant set removes, in order.
    pub(super) fn offer(&self, tools: &[String]) -> Vec<String> {
        let deny = self.active(None).deny;
        tools
            .iter()
            .filter(|tool| {
                !deny
                    .iter()
                    .any(|d| d.is_bare() && d.names(tool) && !reached(d, &deny))
            })
            .cloned()
            .collect()
    }
}

/// Why an allow rule of a grant set is not activated, if it is not (§13.3),
/// checked in the order the seed lists: a rule that could never fire, an
/// untrusted source, a bare deny naming the tool, a bare ask of higher rank
/// naming the tool.
fn allow_refusal(
    reference: &Reference,
    rule: &Rule,
    set: &RuleSet,
    deny: &[&Rule],
    ask: &[&Rule],
) -> Option<String> {
    if rule.carve_out().is_some() {
        return Some(format!("toolgate: cannot grant a carve-out: {}", rule.text));
    }
    if let Some(reason) = reference.never_fires(rule, List::Allow) {
        return Some(reason);
    }
    if !set.source.trusted {
        return Some(format!(
            "withheld: the source {} is not trusted",
            set.source.name
        ));
    }
    for d in deny {
        if d.is_bare() && d.names(&rule.tool) && !reached(d, deny) {
            return Some(format!("denied by {}: a grant never beats a deny", d.text));
        }
    }
    for a in ask {
        if a.is_bare() && a.origin.rank > set.source.rank && a.names(&rule.tool) && !reached(a, ask)
        {
            return Some(if a.origin.name.is_empty() {
                format!("{} outranks the grant", a.text)
            } else {
                format!("{} from {} outranks the grant", a.text, a.origin.name)
            });
        }
    }
    None
}

/// Whether some carve-out of `list` reaches `rule`: same tool name, rank at
/// least the rule's. Its pattern is not consulted: it is enough that some
/// calls get through. A glob rule is never reached.
fn reached(rule: &Rule, list: &[&Rule]) -> bool {
    if rule.is_glob() {
        return false;
    }
    list.iter().any(|c| {
        c.carve_out().is_some() && c.tool == rule.tool && c.origin.rank >= rule.origin.rank
    })
}
