//! A [`Sealed`] store on any store: what someone who can write to the
//! store, but holds no state key, can no longer make the engine allow.
//!
//! Each behaviour takes handles on the *unsealed* store, as the one who
//! writes into it behind the service's back holds them, and seals its own
//! supervisor's handle. The library's tests run it on the memory store,
//! `toolgate-redis`'s on a real Redis. [`sealed_suite!`](crate::sealed_suite)
//! makes one test of each.

use std::sync::Arc;

use toolgate::authensor::{AuthensorEngine, Effect, Envelope, KeptSessions, Policies};
use toolgate::state::{
    Answer, MemoryStore, Namespace, Reply, SealKey, Sealed, StateError, Store, StoreError,
};
use toolgate::{Decision, RuleDecl};

use crate::store::fresh;
use crate::supervisor::{bash, on, Open, R};

/// Makes one `#[test]` per behaviour of this module, as
/// [`supervisor_suite!`](crate::supervisor_suite) does.
#[macro_export]
macro_rules! sealed_suite {
    ($open:expr) => {
        $crate::suite_tests!(sealed, $open;
            a_held_call_written_without_the_key_is_not_released,
            a_genuine_record_copied_to_another_call_is_refused,
            a_grant_written_without_the_key_denies_until_discarded,
            a_genuine_grant_moved_to_another_scope_or_source_is_refused,
            records_sealed_with_a_retired_key_open_while_it_is_listed,
            an_action_written_without_the_key_denies_the_session,
        );
    };
}

fn key(byte: u8) -> SealKey {
    SealKey::from_bytes([byte; 32])
}

fn sealed(inner: &Arc<dyn Store>, byte: u8) -> Arc<dyn Store> {
    Arc::new(Sealed::new(Arc::clone(inner), key(byte)))
}

/// A deferred call as a writer without the key would put it: well formed,
/// decided ask, held behind the asked call, and a command the policy
/// denies.
const FORGED_HELD: &[u8] = br#"{"v":1,"tool":"bash","args":"{\"command\":\"rm -rf /\"}","turn":1,
    "verdict":{"decision":"ask","reason":"held for approval: allowed by read","held":true,"by":"policy"}}"#;

/// The batch the behaviours defer: `a` held, `b` asked by rule.
fn turn(run: &str) -> Vec<toolgate::Call> {
    vec![bash(run, "a", "git status"), bash(run, "b", "git push")]
}

fn refused(e: &StateError, what: &str) -> bool {
    matches!(e, StateError::Store(StoreError::Corrupt(why))
        if why.contains(what) && why.contains("state key"))
}

/// Unsealed, a forged held record is released as an allow (spec §14.2: a
/// pending call keeps the verdict that deferred it). Sealed, the release
/// fails, names the record, and takes nothing; forgetting the run clears it.
pub fn a_held_call_written_without_the_key_is_not_released(open: Open<'_>) -> R {
    let inner = open();

    let bare_ns = fresh("unsealed");
    let bare = on(Arc::clone(&inner), bare_ns.clone())?;
    bare.decide_batch(1, &turn("r1"));
    inner.defer(&bare_ns, "r1", "x", FORGED_HELD)?;
    let answers = bare.release("r1", &[Answer::approve("b")])?;
    let x = answers
        .iter()
        .find(|a| a.call_id == "x")
        .ok_or("the forged call was not answered")?;
    assert_eq!(
        x.reply,
        Reply::Approve,
        "without a seal the forged record runs: the attack this closes"
    );

    let ns = fresh("sealed");
    let sup = on(sealed(&inner, 1), ns.clone())?;
    sup.decide_batch(1, &turn("r1"));
    inner.defer(&ns, "r1", "x", FORGED_HELD)?;
    let err = sup
        .release("r1", &[Answer::approve("b")])
        .err()
        .ok_or("a release over a forged record succeeded")?;
    assert!(
        refused(&err, "the pending call `x` of the run `r1`"),
        "{err}"
    );
    assert_eq!(inner.pending(&ns, "r1")?.len(), 3, "nothing was taken");
    assert!(sup.deferred("r1", "b").is_err(), "the run is unreadable");
    assert_eq!(sup.forget("r1")?, 3);
    assert!(sup.runs()?.is_empty());

    // Dressed as a sealed record, with the label and a made-up tag.
    sup.decide_batch(1, &turn("r2"));
    let dressed = [b"tgs1".as_slice(), &[0; 32], FORGED_HELD].concat();
    inner.defer(&ns, "r2", "x", &dressed)?;
    let err = sup.release("r2", &[Answer::approve("b")]).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| refused(e, "the pending call `x` of the run `r2`")),
        "{err:?}"
    );
    Ok(())
}

/// A genuine sealed record copied under another call, another run or
/// another namespace is refused: the tag covers where a record is kept.
pub fn a_genuine_record_copied_to_another_call_is_refused(open: Open<'_>) -> R {
    let inner = open();
    let ns = fresh("sealed");
    let sup = on(sealed(&inner, 1), ns.clone())?;
    sup.decide_batch(1, &turn("r1"));
    let held = inner
        .pending(&ns, "r1")?
        .into_iter()
        .find(|p| p.call_id == "a")
        .ok_or("no record for a")?
        .record;

    inner.defer(&ns, "r1", "z", &held)?;
    let err = sup.release("r1", &[Answer::approve("b")]).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| refused(e, "the pending call `z` of the run `r1`")),
        "{err:?}"
    );
    sup.forget("r1")?;

    sup.decide_batch(1, &turn("r2"));
    inner.defer(&ns, "r3", "a", &held)?;
    sup.decide_batch(1, &[bash("r3", "b", "git push")]);
    let err = sup.release("r3", &[Answer::approve("b")]).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| refused(e, "the pending call `a` of the run `r3`")),
        "{err:?}"
    );

    let other = fresh("sealed");
    let elsewhere = on(sealed(&inner, 1), other.clone())?;
    inner.defer(&other, "r1", "a", &held)?;
    assert!(elsewhere.deferred("r1", "a").is_err());

    // The untouched run still releases.
    let answers = sup.release("r2", &[Answer::approve("b")])?;
    assert!(answers.iter().all(|a| a.reply == Reply::Approve));
    Ok(())
}

/// An "always allow" written by a supervisor without the key (here, one
/// on an unsealed store, its record copied over) is not applied: every
/// call is denied, naming the record and the repair, until the unreadable
/// records are discarded; then the policy decides again, and a grant made
/// through the sealed store is in force.
pub fn a_grant_written_without_the_key_denies_until_discarded(open: Open<'_>) -> R {
    let inner = open();
    let npm = bash("r", "n", "npm test");
    let scratch_ns = Namespace::new("scratch", "scratch");
    let scratch: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let writer = on(Arc::clone(&scratch), scratch_ns.clone())?;
    let granted = writer.grant("local", &RuleDecl::new("bash", Some("npm test:*")))?;
    assert!(granted.granted, "{}", granted.reason);
    assert_eq!(writer.would(&npm)?.decision, Decision::Allow);

    let ns = fresh("sealed");
    let sup = on(sealed(&inner, 1), ns.clone())?;
    assert_eq!(sup.would(&npm)?.decision, Decision::Ask);
    for (scope, source, record) in scratch.grants(&scratch_ns)? {
        inner.put_grant(&ns, &scope, &source, &record)?;
    }
    let v = sup.decide_batch(1, std::slice::from_ref(&npm)).remove(0);
    assert_eq!(v.decision, Decision::Deny, "{}", v.reason);
    assert!(v.reason.contains("state key"), "{}", v.reason);
    assert!(
        v.reason.contains("discard the unreadable grant records"),
        "{}",
        v.reason
    );

    let gone = sup.discard_unreadable()?;
    assert_eq!(gone.len(), 1);
    assert!(gone.iter().all(|d| d.always && d.why.contains("state key")));
    assert!(inner.grants(&ns)?.is_empty());
    assert_eq!(sup.would(&npm)?.decision, Decision::Ask);

    let g = sup.grant("local", &RuleDecl::new("bash", Some("npm test:*")))?;
    assert!(g.granted, "{}", g.reason);
    assert_eq!(sup.would(&npm)?.decision, Decision::Allow);
    Ok(())
}

/// A genuine sealed grant set copied under another scope, another source
/// or another namespace is refused there (every call denied until it is
/// discarded), and the original stays in force.
pub fn a_genuine_grant_moved_to_another_scope_or_source_is_refused(open: Open<'_>) -> R {
    let inner = open();
    let ns = fresh("sealed");
    let sup = on(sealed(&inner, 1), ns.clone())?;
    let set = toolgate::RuleSet {
        source: toolgate::Source {
            name: "skill".into(),
            rank: 5,
            trusted: true,
            ..toolgate::Source::default()
        },
        lists: toolgate::RuleLists::parse("bash(npm test:*)", "", "")?,
        ..toolgate::RuleSet::default()
    };
    sup.grant_set(&set, Some("c1"))?;
    let npm = |scope: &str| bash("r", "n", "npm test").in_scope(scope);
    assert_eq!(sup.would(&npm("c1"))?.decision, Decision::Allow);
    assert_eq!(sup.would(&npm("c2"))?.decision, Decision::Ask);
    let (_, _, record) = inner
        .grants(&ns)?
        .into_iter()
        .next()
        .ok_or("the grant set was not kept")?;

    let other = fresh("sealed");
    for (at, scope, source) in [
        (&ns, "c2", "skill"),
        (&ns, "c1", "other"),
        (&other, "c1", "skill"),
    ] {
        inner.put_grant(at, scope, source, &record)?;
        let here = on(sealed(&inner, 1), at.clone())?;
        let v = here.decide_batch(1, &[npm(scope)]).remove(0);
        assert_eq!(v.decision, Decision::Deny, "{scope}/{source}: {}", v.reason);
        assert!(v.reason.contains("state key"), "{}", v.reason);
        let gone = here.discard_unreadable()?;
        assert_eq!(gone.len(), 1, "{scope}/{source}");
    }
    assert_eq!(sup.would(&npm("c1"))?.decision, Decision::Allow);
    assert_eq!(sup.would(&npm("c2"))?.decision, Decision::Ask);
    Ok(())
}

/// Keys rotate: a store sealing with a new key and still opening with the
/// old one reads what the old key sealed, and seals what it writes with
/// the new one; once the old key is dropped, what it alone sealed is
/// refused.
pub fn records_sealed_with_a_retired_key_open_while_it_is_listed(open: Open<'_>) -> R {
    let inner = open();
    let ns = fresh("sealed");
    let npm = bash("r", "n", "npm test");
    let old = on(sealed(&inner, 1), ns.clone())?;
    old.decide_batch(1, &turn("r1"));
    assert!(
        old.grant("local", &RuleDecl::new("bash", Some("npm test:*")))?
            .granted
    );

    let both: Arc<dyn Store> =
        Arc::new(Sealed::with_keys(Arc::clone(&inner), vec![key(2), key(1)]).ok_or("no keys")?);
    let rotating = on(both, ns.clone())?;
    assert!(rotating.deferred("r1", "a")?.is_some_and(|v| v.held));
    assert_eq!(rotating.would(&npm)?.decision, Decision::Allow);
    rotating.decide_batch(1, &turn("r2"));

    let new = on(sealed(&inner, 2), ns.clone())?;
    assert_eq!(
        new.deferred("r2", "b")?.map(|v| v.decision),
        Some(Decision::Ask)
    );
    let err = new
        .deferred("r1", "a")
        .err()
        .ok_or("an old record opened")?;
    assert!(refused(&err, "the run `r1`"), "{err}");
    assert_eq!(
        new.decide_batch(1, std::slice::from_ref(&npm))[0].decision,
        Decision::Deny
    );
    assert!(Sealed::with_keys(inner, Vec::new()).is_none());
    Ok(())
}

/// An Authensor session whose history gains an action nobody sealed is
/// denied with the reason, not decided on the forged history.
pub fn an_action_written_without_the_key_denies_the_session(open: Open<'_>) -> R {
    let inner = open();
    let engine = AuthensorEngine::build(&Policies::from_json(
        r#"{"id": "p", "rules": [{"effect": "allow"}], "sessionRules": {"maxActions": 5}}"#,
    )?)?;
    let env = Envelope::from_json(
        r#"{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1",
            "session": {"sessionId": "s1"}}"#,
    )?;
    let ns = fresh("sealed");
    let store = sealed(&inner, 1);
    let sessions = KeptSessions::new();
    for _ in 0..2 {
        assert_eq!(
            sessions.decide(&engine, &*store, &ns, &env).outcome,
            Effect::Allow
        );
    }
    let genuine = inner.history(&ns, "s1")?;
    let first = genuine.first().ok_or("nothing was kept")?;
    // A copy of a genuine action, appended as the third: its tag names
    // the first position.
    inner.append_if(&ns, "s1", 2, first)?;
    let r = sessions.decide(&engine, &*store, &ns, &env);
    assert_eq!(r.outcome, Effect::Deny);
    let reason = r.reason.unwrap_or_default();
    assert!(
        reason.contains("action 3 of the session `s1`") && reason.contains("state key"),
        "{reason}"
    );
    assert_eq!(inner.history(&ns, "s1")?.len(), 3, "nothing more appended");
    assert!(store.history(&ns, "s1").is_err());
    Ok(())
}
