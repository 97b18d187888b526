//! The immutable engine and the sessions beside it: grants are a session's
//! own, survive being kept between requests, and are checked again against
//! a policy that replaced the one they were checked against.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use toolgate::{
    Call, Decision, Engine, Evaluator, Grants, Policy, RuleLists, RuleSet, Session, Source,
};

fn engine(json: &str) -> Engine<'static> {
    let policy = Policy::from_json(json).unwrap();
    Engine::build(&policy).unwrap()
}

fn set(name: &str, allow: &str, deny: &str) -> RuleSet {
    RuleSet {
        source: Source {
            name: name.into(),
            trusted: true,
            ..Source::default()
        },
        lists: RuleLists::parse(allow, deny, "").unwrap(),
        ..RuleSet::default()
    }
}

fn bash() -> Call {
    Call::new("bash", "{}")
}

#[test]
fn sessions_of_one_engine_do_not_see_each_others_grants() {
    let e = engine(r#"{"default": "allow", "ask": "bash"}"#);
    let mut a = e.session();
    let b = e.session();
    assert_eq!(a.grant_set(&set("a", "bash", ""), None).granted, ["bash"]);
    assert_eq!(a.decide(&bash()).decision, Decision::Allow);
    assert_eq!(b.decide(&bash()).decision, Decision::Ask);
    // The engine itself never holds a grant.
    assert_eq!(e.decide(&bash()).decision, Decision::Ask);
    assert_eq!(a.grants().len(), 1);
    assert!(b.grants().is_empty());
}

#[test]
fn grants_kept_between_requests_decide_the_same() {
    let e = engine(r#"{"default": "allow", "ask": "bash"}"#);
    let mut s = e.session();
    s.grant_set(&set("a", "bash", "read"), Some("run-1"));
    let kept: Grants = s.into_grants();
    assert!(!kept.is_empty());
    let s = Session::with_grants(&e, kept.clone());
    let scoped = bash().in_scope("run-1");
    assert_eq!(s.decide(&scoped).decision, Decision::Allow);
    assert_eq!(s.decide(&bash()).decision, Decision::Ask);
    assert_eq!(
        s.decide(&Call::new("read", "{}").in_scope("run-1"))
            .decision,
        Decision::Deny
    );
    // The same grants over a clone of the engine (same tables, same id).
    let clone = e.clone();
    assert_eq!(clone.id(), e.id());
    let s = Session::with_grants(&clone, kept);
    assert_eq!(s.grants().len(), 1);
    assert_eq!(s.decide(&scoped).decision, Decision::Allow);
}

#[test]
fn grants_moved_to_a_new_policy_are_checked_against_it() {
    let old = engine(r#"{"default": "allow", "ask": "bash"}"#);
    let mut s = old.session();
    assert_eq!(s.grant_set(&set("a", "bash", ""), None).granted, ["bash"]);
    let kept = s.into_grants();
    // The new policy asks for bash from a source that outranks the grant's:
    // checked against it, the grant's allow is refused, so bash still asks.
    let new = engine(
        r#"{"default": "allow", "sources": [{"name": "org", "rank": 5, "trusted": true, "ask": "bash"}]}"#,
    );
    assert_ne!(new.id(), old.id());
    let mut fresh = new.session();
    let refused = fresh.grant_set(&set("a", "bash", ""), None).refused;
    assert_eq!(refused.len(), 1, "{refused:?}");
    let s = Session::with_grants(&new, kept.clone());
    let v = s.decide(&bash());
    assert_eq!(v.decision, Decision::Ask, "{}", v.reason);
    assert_eq!(v.reason, "approval required by bash");
    // A new policy that still lets the grant shadow its ask keeps it working.
    let asks = Arc::new(engine(r#"{"default": "deny", "ask": "bash"}"#));
    let s = Session::shared_with_grants(Arc::clone(&asks), kept);
    assert_eq!(s.decide(&bash()).decision, Decision::Allow);
    assert_eq!(s.grants().len(), 1);
}

#[test]
fn a_grant_refused_by_the_old_policy_is_granted_by_a_new_one_that_allows_it() {
    // The old policy denies bash outright: the set's allow is refused there.
    let old = engine(r#"{"default": "ask", "deny": "bash"}"#);
    let mut s = old.session();
    let g = s.grant_set(&set("a", "bash", ""), None);
    assert!(g.granted.is_empty(), "{g:?}");
    assert_eq!(s.decide(&bash()).decision, Decision::Deny);
    let kept = s.into_grants();
    // Checked again against a policy that only asks, the same set grants
    // bash; kept as the old check left it, it would hold no allow rule.
    let new = engine(r#"{"default": "ask", "ask": "bash"}"#);
    let s = Session::with_grants(&new, kept);
    let v = s.decide(&bash());
    assert_eq!(v.decision, Decision::Allow, "{}", v.reason);
    assert_eq!(v.rule.map(|r| r.source).as_deref(), Some("a"));
}

#[test]
fn a_shared_engine_serves_sessions_on_many_threads() {
    let e = Arc::new(engine(r#"{"default": "allow", "ask": "bash"}"#));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let mut s = Session::shared(e);
                if i % 2 == 0 {
                    s.grant_set(&set("t", "bash", ""), None);
                }
                s.decide(&bash()).decision
            })
        })
        .collect();
    let got: Vec<Decision> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        got,
        [
            Decision::Allow,
            Decision::Ask,
            Decision::Allow,
            Decision::Ask
        ]
    );
}

#[test]
fn a_boxed_session_is_an_evaluator() {
    let mut boxed: Box<dyn Evaluator> =
        Box::new(engine(r#"{"default": "allow", "ask": "bash"}"#).into_session());
    assert_eq!(
        boxed.grant_set(&set("a", "bash", ""), None).granted,
        ["bash"]
    );
    assert_eq!(boxed.would(&bash()).decision, Decision::Allow);
    assert_eq!(boxed.revoke("a", None), 1);
    assert_eq!(boxed.would(&bash()).decision, Decision::Ask);
}
