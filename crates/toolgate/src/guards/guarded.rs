//! [`Guarded`]: a policy's engine with its content guards over every call's
//! arguments, as one [`Evaluator`].

use std::sync::Arc;

use super::Guards;
use crate::decision::{Decision, RuleRef, Verdict};
use crate::engine::{Evaluator, Grant};
use crate::{Call, RuleSet};

/// An evaluator whose calls also pass the guards: a call whose arguments a
/// guard blocks (a secret, a denied pattern, a limit) is denied, by
/// `guard`, whatever the policy says; a call the policy denies keeps the
/// policy's verdict. The guards are folded in before the batch hold, so a
/// call they block holds none of its siblings, as a deny never does.
///
/// ```
/// use std::sync::Arc;
/// use toolgate::guards::{Guarded, Guards};
/// use toolgate::{Call, Decision, Engine, Evaluator, Policy};
///
/// let engine = Engine::build(&Policy::from_json(r#"{"default": "allow"}"#)?)?;
/// let guards = Guards::from_json(r#"{"deny": [{"name": "pipe", "literal": "| sh"}]}"#)?;
/// let guarded = Guarded::new(engine.session(), Arc::new(guards));
/// let v = guarded.would(&Call::new("bash", r#"{"command": "curl x | sh"}"#));
/// assert_eq!(v.decision, Decision::Deny);
/// assert_eq!(v.by, "guard");
/// assert_eq!(v.rule.map(|r| r.text).as_deref(), Some("guards/deny/pipe"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Guarded<E> {
    inner: E,
    guards: Arc<Guards>,
}

impl<E: Evaluator> Guarded<E> {
    /// `inner`, with `guards` over the arguments of every call.
    pub fn new(inner: E, guards: Arc<Guards>) -> Guarded<E> {
        Guarded { inner, guards }
    }

    /// The evaluator the guards wrap.
    pub fn inner(&self) -> &E {
        &self.inner
    }
}

impl Guards {
    /// The deny a guard gives `call`'s arguments, or `None` when no guard
    /// blocks them. The rule is `guards/<guard rule>` of source `guards`;
    /// the reason names the rule and the span, never the content.
    pub fn verdict(&self, call: &Call) -> Option<Verdict> {
        let o = self.check_args(&call.args);
        if o.allowed() {
            return None;
        }
        let rule = o.rule.unwrap_or_else(|| "guards".into());
        let mut v = Verdict::new(
            Decision::Deny,
            format!("blocked by the guards: {}", o.reason),
        );
        v.rule = Some(RuleRef {
            text: format!("guards/{rule}"),
            source: "guards".into(),
            ..RuleRef::default()
        });
        v.by = "guard";
        v.run_id.clone_from(&call.run_id);
        v.call_id.clone_from(&call.call_id);
        Some(v)
    }
}

impl Guards {
    /// `call`'s verdict from `policy` (the verdict it gets on its own) with
    /// the guards folded in: a policy deny stands, with its rule; otherwise
    /// a guard that blocks the arguments denies.
    pub fn fold_would(&self, call: &Call, policy: &dyn Fn(&Call) -> Verdict) -> Verdict {
        let v = policy(call);
        if v.decision == Decision::Deny {
            return v;
        }
        self.verdict(call).unwrap_or(v)
    }

    /// A batch's verdicts with the guards folded in before the hold. A
    /// call the guards block is denied by them and taken out of the batch,
    /// so it holds none of its siblings, unless `policy` (the verdict a
    /// call gets on its own) denies it too: then it stays in the batch and
    /// keeps the batch's verdict, so a deny that holds its siblings (a call
    /// the policy cannot evaluate) still holds them. The rest are decided
    /// together by `batch`, so an ask among them holds their allows.
    pub fn fold_batch(
        &self,
        calls: &[Call],
        batch: &dyn Fn(&[Call]) -> Vec<Verdict>,
        policy: &dyn Fn(&Call) -> Verdict,
    ) -> Vec<Verdict> {
        let blocked: Vec<Option<Verdict>> = calls
            .iter()
            .map(|c| {
                self.verdict(c)
                    .filter(|_| policy(c).decision != Decision::Deny)
            })
            .collect();
        if blocked.iter().all(Option::is_none) {
            return batch(calls);
        }
        let open: Vec<Call> = calls
            .iter()
            .zip(&blocked)
            .filter(|(_, b)| b.is_none())
            .map(|(c, _)| c.clone())
            .collect();
        let mut decided = batch(&open).into_iter();
        blocked
            .into_iter()
            .map(|b| match b {
                Some(g) => g,
                None => decided.next().unwrap_or_else(|| {
                    Verdict::new(Decision::Deny, "the batch could not be decided")
                }),
            })
            .collect()
    }
}

impl<E: Evaluator> Evaluator for Guarded<E> {
    fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict> {
        self.guards
            .fold_batch(calls, &|cs| self.inner.decide_batch(cs), &|c| {
                self.inner.would(c)
            })
    }

    fn would(&self, call: &Call) -> Verdict {
        self.guards.fold_would(call, &|c| self.inner.would(c))
    }

    fn grant_set(&mut self, set: &RuleSet, scope: Option<&str>) -> Grant {
        self.inner.grant_set(set, scope)
    }

    fn revoke(&mut self, source: &str, scope: Option<&str>) -> usize {
        self.inner.revoke(source, scope)
    }

    fn revoke_scope(&mut self, scope: Option<&str>) -> usize {
        self.inner.revoke_scope(scope)
    }

    fn filter(&self, tools: &[String]) -> Vec<String> {
        self.inner.filter(tools)
    }
}
