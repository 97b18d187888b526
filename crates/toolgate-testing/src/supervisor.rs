//! The `Supervisor`'s behaviour on any [`Store`]: deferred calls and their
//! release, reviewers and the denial bound, "always allow", grant sets
//! across policy swaps, hooks, observers and the record. The library's
//! tests run it on the memory store, `toolgate-redis`'s on a real Redis,
//! so both stores are held to the same behaviour, under concurrent
//! replicas too.
//!
//! Each behaviour is a function of an [`Open`], which hands out handles on
//! one store: a second handle is what a second replica holds. Each check
//! works in a namespace of its own, so a shared server needs no cleaning.
//! [`supervisor_suite!`](crate::supervisor_suite) makes one test of each.

use std::sync::{Arc, Mutex};

use toolgate::state::{
    Answer, DenialBound, Event, EventKind, HookDecision, Namespace, PolicyReviewer, Reply, Review,
    Reviewer, StateError, Store, StoreError, Supervisor, HELD_STOPPED,
};
use toolgate::{Call, Decision, Engine, Policy, RuleDecl, RuleLists, RuleSet, Source, Verdict};

use crate::store::fresh;

/// What a behaviour returns: an error for what failed to build or reach
/// the store; a wrong answer panics with the assertion.
pub type R = Result<(), Box<dyn std::error::Error>>;

/// Hands out handles on one store, each one another replica's.
pub type Open<'a> = &'a dyn Fn() -> Arc<dyn Store>;

/// Makes one `#[test]` per behaviour of this module. `$open` is evaluated
/// in each test to `Option<(impl Fn() -> Arc<dyn Store>, guard)>`: `None`
/// skips the test (a store that is not there, as [`crate::redis::Server`]
/// reports it), and the guard (a server, say) lives until the test ends.
#[macro_export]
macro_rules! supervisor_suite {
    ($open:expr) => {
        $crate::suite_tests!(supervisor, $open;
            a_batch_remembers_what_it_asked_about_and_what_it_held,
            an_allowed_batch_remembers_nothing,
            an_approval_runs_the_held_calls_with_it_in_the_models_order,
            refuse_and_end_stops_the_held_calls_and_a_plain_refusal_lets_them_run,
            an_unanswered_call_is_named_and_nothing_is_forgotten,
            a_nested_call_is_reported_with_its_parent_and_not_remembered,
            forget_drops_what_a_run_left_and_runs_lists_the_rest,
            a_deferred_call_recorded_by_one_replica_is_released_through_another,
            a_second_policy_answers_what_the_first_asks_about,
            three_refusals_in_a_row_reach_the_bound_and_end_the_turn,
            a_failed_review_refuses_and_counts_and_the_bound_is_configurable,
            always_allow_after_a_default_prompt_is_an_allow_rule_every_replica_sees,
            a_grant_over_an_ask_rule_writes_a_carve_out_under_its_own_source,
            a_bare_grant_over_an_ask_rule_removes_it,
            a_grant_never_beats_a_deny_nor_a_higher_ranked_ask,
            a_supervisor_without_the_policy_refuses_always_allow,
            set_policy_keeps_grant_sets_and_grants,
            revoke_scope_removes_that_scopes_sets_only,
            a_stricter_hook_replaces_the_rules_reason_and_decider_before_the_hold,
            a_hook_that_blocks_an_asked_call_leaves_nothing_held,
            every_verdict_reaches_each_observer_once_in_order,
            a_review_over_an_unreadable_record_fails_and_counts_nothing,
            a_deferred_record_that_is_not_an_ask_is_corrupt_not_an_allow,
            revoke_scope_over_an_unreadable_set_fails_and_removes_nothing,
            discarding_unreadable_grant_records_removes_them_alone_and_decisions_recover,
            a_grant_record_is_removed_only_while_it_is_what_was_read,
            threads_on_two_replicas_agree_with_a_sequential_model_of_their_own,
            racing_releases_on_replicas_answer_every_call_exactly_once,
        );
    };
}

/// One `#[test]` per behaviour `$name` of module `$module` of this crate,
/// each on the store handles `$open` gives (`None`: skipped), for
/// [`supervisor_suite!`](crate::supervisor_suite) and
/// [`sealed_suite!`](crate::sealed_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! suite_tests {
    ($module:ident, $open:expr; $($name:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() -> $crate::supervisor::R {
                let ::std::option::Option::Some((open, _guard)) = $open else {
                    return ::std::result::Result::Ok(());
                };
                $crate::$module::$name(&open)
            }
        )+
    };
}

/// The policy every behaviour is decided under: a managed ask, a team's
/// allow, deny and asks, and two empty sources to grant into.
pub const POLICY: &str = r#"{
    "default": "ask",
    "matchers": {"bash": {"match": "glob", "field": "command"}},
    "sources": [
        {"name": "managed", "rank": 9, "trusted": true, "ask": "bash(sudo:*)"},
        {"name": "team", "rank": 5, "trusted": true,
         "allow": "read bash(git status:*)", "deny": "bash(rm:*)", "ask": "bash(git push:*) edit"},
        {"name": "local", "rank": 5, "trusted": true},
        {"name": "repo", "rank": 1, "trusted": true}
    ]
}"#;

/// A supervisor of [`POLICY`] on `store` in `ns`.
///
/// # Errors
///
/// If [`POLICY`] does not build.
pub fn on(store: Arc<dyn Store>, ns: Namespace) -> Result<Supervisor, Box<dyn std::error::Error>> {
    Ok(Supervisor::from_policy(
        Policy::from_json(POLICY)?,
        toolgate::builtins::registry(),
        store,
        ns,
    )?)
}

fn sup(open: Open<'_>) -> Result<Supervisor, Box<dyn std::error::Error>> {
    on(open(), fresh("supervisor"))
}

/// A call of `tool` with `args`, in run `run` with call id `id`.
pub fn call(run: &str, id: &str, tool: &str, args: &str) -> Call {
    let mut c = Call::new(tool, args);
    c.run_id = run.into();
    c.call_id = id.into();
    c
}

/// A `bash` call of `command`.
pub fn bash(run: &str, id: &str, command: &str) -> Call {
    call(run, id, "bash", &format!(r#"{{"command": {command:?}}}"#))
}

/// git status (allowed), git push (asked by rule), read (allowed): the
/// batch of the seed's example, with the asked call between held ones.
fn turn(run: &str) -> Vec<Call> {
    vec![
        bash(run, "a", "git status"),
        bash(run, "b", "git push --force"),
        call(run, "c", "read", "{}"),
    ]
}

fn collector() -> (Arc<Mutex<Vec<Event>>>, impl Fn(&Event) + Send + Sync) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    (seen, move |e: &Event| {
        if let Ok(mut v) = s.lock() {
            v.push(e.clone());
        }
    })
}

/// A batch with an ask keeps the asked call and holds its allowed siblings;
/// `deferred` finds them by run and call.
pub fn a_batch_remembers_what_it_asked_about_and_what_it_held(open: Open<'_>) -> R {
    let sup = sup(open)?;
    let v = sup.decide_batch(1, &turn("r1"));
    assert_eq!(v[0].decision, Decision::Ask);
    assert!(v[0].held);
    assert_eq!(
        v[0].reason,
        "held for approval: allowed by bash(git status:*)"
    );
    assert!(!v[1].held);
    assert_eq!(v[1].reason, "approval required by bash(git push:*)");
    assert!(v[2].held);
    assert_eq!(sup.runs()?, ["r1"]);
    let d = sup.deferred("r1", "b")?.ok_or("b is not remembered")?;
    assert_eq!(d, v[1]);
    assert!(sup.deferred("r1", "a")?.ok_or("a is not remembered")?.held);
    assert_eq!(sup.deferred("r2", "b")?, None);
    assert_eq!(sup.deferred("r1", "zz")?, None);
    Ok(())
}

/// A batch allowed whole keeps no run.
pub fn an_allowed_batch_remembers_nothing(open: Open<'_>) -> R {
    let sup = sup(open)?;
    let v = sup.decide_batch(
        1,
        &[bash("r", "a", "git status"), call("r", "b", "read", "{}")],
    );
    assert!(v.iter().all(|v| v.decision == Decision::Allow));
    assert!(sup.runs()?.is_empty());
    Ok(())
}

/// `release` with an approval runs the held calls too, in the model's
/// order, and forgets the run.
pub fn an_approval_runs_the_held_calls_with_it_in_the_models_order(open: Open<'_>) -> R {
    let sup = sup(open)?;
    sup.decide_batch(1, &turn("r1"));
    let answers = sup.release("r1", &[Answer::approve("b").with_note("last time")])?;
    let ids: Vec<&str> = answers.iter().map(|a| a.call_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(answers.iter().all(|a| a.reply == Reply::Approve));
    assert_eq!(answers[1].note, "last time");
    assert_eq!(answers[1].by, "human");
    assert_eq!(answers[0].by, "policy");
    assert_eq!(answers[0].reason, "released: allowed by bash(git status:*)");
    assert_eq!(answers[2].reason, "released: allowed by read");
    // Answered calls are forgotten with their run.
    assert!(sup.runs()?.is_empty());
    assert_eq!(sup.deferred("r1", "a")?, None);
    Ok(())
}

/// `refuse_and_end` refuses the held calls with [`HELD_STOPPED`]; a plain
/// refusal lets them run.
pub fn refuse_and_end_stops_the_held_calls_and_a_plain_refusal_lets_them_run(open: Open<'_>) -> R {
    let sup = sup(open)?;
    sup.decide_batch(1, &turn("r1"));
    let answers = sup.release("r1", &[Answer::refuse_and_end("b")])?;
    assert_eq!(answers.len(), 3);
    for i in [0, 2] {
        assert_eq!(answers[i].reply, Reply::Refuse);
        assert_eq!(answers[i].note, HELD_STOPPED);
        assert_eq!(answers[i].reason, "not released: the turn was stopped");
    }
    assert_eq!(answers[1].reply, Reply::RefuseAndEnd);

    sup.decide_batch(1, &turn("r2"));
    let answers = sup.release("r2", &[Answer::refuse("b")])?;
    assert_eq!(answers[0].reply, Reply::Approve);
    assert_eq!(answers[1].reply, Reply::Refuse);
    assert_eq!(answers[2].reply, Reply::Approve);
    Ok(())
}

/// A release that misses an asked call is [`StateError::Unanswered`],
/// naming it, and takes nothing.
pub fn an_unanswered_call_is_named_and_nothing_is_forgotten(open: Open<'_>) -> R {
    let sup = sup(open)?;
    sup.decide_batch(
        1,
        &[
            bash("r1", "x", "git push"),
            bash("r1", "y", "npm test"),
            call("r1", "z", "read", "{}"),
        ],
    );
    let err = sup
        .release("r1", &[Answer::approve("other")])
        .err()
        .ok_or("a release missing two answers succeeded")?;
    let StateError::Unanswered { missing, answers } = &err else {
        return Err(format!("wrong error: {err}").into());
    };
    let names: Vec<&str> = missing.iter().map(|m| m.call_id.as_str()).collect();
    assert_eq!(names, ["x", "y"]);
    assert_eq!(missing[0].tool, "bash");
    assert!(err.to_string().contains("`x` (bash), `y` (bash)"));
    // The preview: held z approved, then the answer for a call not pending.
    let ids: Vec<&str> = answers.iter().map(|a| a.call_id.as_str()).collect();
    assert_eq!(ids, ["z", "other"]);
    assert!(sup.deferred("r1", "x")?.is_some());
    assert!(sup.deferred("r1", "z")?.is_some());
    let answers = sup.release("r1", &[Answer::approve("y"), Answer::refuse("x")])?;
    let ids: Vec<&str> = answers.iter().map(|a| a.call_id.as_str()).collect();
    assert_eq!(ids, ["x", "y", "z"]);
    assert!(sup.runs()?.is_empty());
    Ok(())
}

/// A nested call reaches observers with its parent and is never kept.
pub fn a_nested_call_is_reported_with_its_parent_and_not_remembered(open: Open<'_>) -> R {
    let (seen, obs) = collector();
    let sup = sup(open)?.with_observer(obs);
    let v = sup.decide_nested(2, &bash("r1", "n1", "git push"), "a");
    assert_eq!(v.decision, Decision::Ask);
    assert!(sup.runs()?.is_empty());
    let seen = seen.lock().map_err(|_| "poisoned")?;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].parent, "a");
    assert_eq!(seen[0].turn, 2);
    Ok(())
}

/// `forget` drops one run's calls; `runs` lists the others.
pub fn forget_drops_what_a_run_left_and_runs_lists_the_rest(open: Open<'_>) -> R {
    let sup = sup(open)?;
    sup.decide_batch(1, &turn("r1"));
    sup.decide_batch(1, &turn("r2"));
    assert_eq!(sup.runs()?, ["r1", "r2"]);
    assert_eq!(sup.forget("r1")?, 3);
    assert_eq!(sup.runs()?, ["r2"]);
    assert_eq!(sup.deferred("r1", "b")?, None);
    Ok(())
}

/// A call deferred through one replica is released through another, once.
pub fn a_deferred_call_recorded_by_one_replica_is_released_through_another(open: Open<'_>) -> R {
    let ns = fresh("supervisor");
    let one = on(open(), ns.clone())?;
    let two = on(open(), ns)?;
    one.decide_batch(1, &turn("r1"));
    assert_eq!(two.runs()?, ["r1"]);
    let answers = two.release("r1", &[Answer::approve("b")])?;
    assert_eq!(answers.len(), 3);
    // Answered once: the first replica has nothing left to answer.
    assert_eq!(one.release("r1", &[Answer::approve("b")])?.len(), 1);
    assert!(one.runs()?.is_empty());
    Ok(())
}

struct Refuser;
impl Reviewer for Refuser {
    fn review(&self, _: &Call, _: &Verdict) -> Result<Review, String> {
        Ok(Review {
            approve: false,
            reason: "not today".into(),
            note: String::new(),
            by: "agent",
        })
    }
}

struct Broken;
impl Reviewer for Broken {
    fn review(&self, _: &Call, _: &Verdict) -> Result<Review, String> {
        Err("the model timed out".into())
    }
}

fn ci_reviewer() -> Result<PolicyReviewer, Box<dyn std::error::Error>> {
    let p = Policy::from_json(
        r#"{"default": "deny", "matchers": {"bash": {"match": "glob", "field": "command"}},
            "allow": "bash(git push:*)", "ask": "edit"}"#,
    )?;
    Ok(PolicyReviewer::new(Arc::new(Engine::build(&p)?)))
}

/// A [`PolicyReviewer`] answers the asked calls, refusing in words that
/// tell the model not to work around it.
pub fn a_second_policy_answers_what_the_first_asks_about(open: Open<'_>) -> R {
    let sup = sup(open)?;
    let reviewer = ci_reviewer()?;
    sup.decide_batch(1, &turn("r1"));
    let answers = sup.answers("r1", &reviewer)?;
    let replies: Vec<Reply> = answers.iter().map(|a| a.reply).collect();
    assert_eq!(replies, [Reply::Approve; 3]);
    assert_eq!(answers[1].by, "policy");

    // The second policy asks about edit and denies npm: both are refused,
    // with text telling the model not to work around it.
    sup.decide_batch(
        1,
        &[call("r2", "e", "edit", "{}"), bash("r2", "n", "npm test")],
    );
    let answers = sup.answers("r2", &reviewer)?;
    assert!(answers.iter().all(|a| a.reply == Reply::Refuse));
    assert!(answers[0]
        .note
        .starts_with("Denied by policy: the reviewing policy would ask too"));
    assert!(answers[1].note.contains("Do not pursue the same outcome"));
    assert!(sup.runs()?.is_empty());
    Ok(())
}

/// The default denial bound: the third refusal in a row ends the turn;
/// `reset_reviews` starts the count again.
pub fn three_refusals_in_a_row_reach_the_bound_and_end_the_turn(open: Open<'_>) -> R {
    let sup = sup(open)?;
    for run in ["r1", "r2"] {
        sup.decide_batch(1, &[bash(run, "p", "git push")]);
        let answers = sup.answers(run, &Refuser)?;
        assert_eq!(answers[0].reply, Reply::Refuse);
        assert_eq!(answers[0].by, "agent");
    }
    sup.decide_batch(1, &turn("r3"));
    let err = sup
        .answers("r3", &Refuser)
        .err()
        .ok_or("the third refusal did not reach the bound")?;
    let StateError::DenialBound { answers, missing } = err else {
        return Err("wrong error".into());
    };
    assert!(missing.is_empty());
    assert_eq!(answers[1].reply, Reply::RefuseAndEnd);
    // The held calls are refused with it: the turn is over.
    assert_eq!(answers[0].note, HELD_STOPPED);
    assert_eq!(answers[2].reply, Reply::Refuse);
    // After a reset, one refusal is one refusal again.
    sup.reset_reviews()?;
    sup.decide_batch(1, &[bash("r4", "p", "git push")]);
    assert_eq!(sup.answers("r4", &Refuser)?[0].reply, Reply::Refuse);
    Ok(())
}

/// A reviewer's failure is a refusal and counts toward a configured bound.
pub fn a_failed_review_refuses_and_counts_and_the_bound_is_configurable(open: Open<'_>) -> R {
    let sup = sup(open)?.with_denial_bound(DenialBound {
        consecutive: 0,
        total: 2,
        window: 3,
    });
    sup.decide_batch(1, &[bash("r1", "p", "git push")]);
    let a = sup.answers("r1", &Broken)?;
    assert_eq!(a[0].reply, Reply::Refuse);
    assert!(a[0].reason.contains("the model timed out"));
    sup.decide_batch(1, &[bash("r2", "p", "git push")]);
    assert!(matches!(
        sup.answers("r2", &Broken),
        Err(StateError::DenialBound { .. })
    ));
    Ok(())
}

/// "Always allow" over a default ask is an allow rule under its source, in
/// force on another replica.
pub fn always_allow_after_a_default_prompt_is_an_allow_rule_every_replica_sees(
    open: Open<'_>,
) -> R {
    let ns = fresh("supervisor");
    let one = on(open(), ns.clone())?;
    let two = on(open(), ns)?;
    let npm = bash("r", "n", "npm test");
    let v = one.decide_batch(1, std::slice::from_ref(&npm)).remove(0);
    assert_eq!(v.decision, Decision::Ask);
    let g = one.grant_over(&v, "local", &RuleDecl::new("bash", Some("npm test:*")))?;
    assert!(g.granted, "{}", g.reason);
    assert_eq!(g.reason, "granted bash(npm test:*)");
    assert_eq!(two.would(&npm)?.decision, Decision::Allow);
    let local = two.policy_of("local")?.ok_or("no local source")?;
    assert_eq!(local.lists.allow[0].text(), "bash(npm test:*)");
    Ok(())
}

/// A grant narrower than an ask rule is a carve-out under the grant's
/// source; the asking source is untouched.
pub fn a_grant_over_an_ask_rule_writes_a_carve_out_under_its_own_source(open: Open<'_>) -> R {
    let sup = sup(open)?;
    let push = bash("r", "p", "git push origin main");
    let v = sup.would(&push)?;
    let g = sup.grant_over(
        &v,
        "local",
        &RuleDecl::new("bash", Some("git push origin:*")),
    )?;
    assert!(g.granted, "{}", g.reason);
    assert_eq!(
        g.reason,
        "granted bash(git push origin:*) over bash(git push:*)"
    );
    assert_eq!(sup.would(&push)?.decision, Decision::Allow);
    // The ask rule still asks for what the grant does not cover.
    assert_eq!(
        sup.would(&bash("r", "q", "git push --force"))?.decision,
        Decision::Ask
    );
    let local = sup.policy_of("local")?.ok_or("no local source")?;
    let ask: Vec<String> = local.lists.ask.iter().map(RuleDecl::text).collect();
    assert_eq!(ask, ["bash(!git push origin:*)"]);
    // The team's file is not touched: the carve-out is the grant's.
    let team = sup.policy_of("team")?.ok_or("no team source")?;
    assert!(team
        .lists
        .ask
        .iter()
        .any(|r| r.text() == "bash(git push:*)"));
    Ok(())
}

/// A bare grant over a bare ask rule of its own source removes the rule.
pub fn a_bare_grant_over_an_ask_rule_removes_it(open: Open<'_>) -> R {
    let sup = sup(open)?;
    let v = sup.would(&call("r", "e", "edit", "{}"))?;
    let g = sup.grant_over(&v, "team", &RuleDecl::new("edit", None))?;
    assert!(g.granted, "{}", g.reason);
    let team = sup.policy_of("team")?.ok_or("no team source")?;
    assert!(!team.lists.ask.iter().any(|r| r.text() == "edit"));
    assert_eq!(
        sup.would(&call("r", "e", "edit", "{}"))?.decision,
        Decision::Allow
    );
    Ok(())
}

/// A grant is refused over a deny, over a higher-ranked ask and into an
/// unknown source, and each refusal is observed.
pub fn a_grant_never_beats_a_deny_nor_a_higher_ranked_ask(open: Open<'_>) -> R {
    let (seen, obs) = collector();
    let sup = sup(open)?.with_observer(obs);
    let rm = sup.would(&bash("r", "x", "rm -rf /"))?;
    let g = sup.grant_over(&rm, "managed", &RuleDecl::new("bash", Some("rm:*")))?;
    assert!(!g.granted);
    assert_eq!(
        g.reason,
        "not granted bash(rm:*): denied by bash(rm:*): a grant never beats a deny"
    );
    let sudo = sup.would(&bash("r", "s", "sudo ls"))?;
    let g = sup.grant_over(&sudo, "repo", &RuleDecl::new("bash", Some("sudo ls")))?;
    assert!(!g.granted);
    assert_eq!(
        g.reason,
        "not granted bash(sudo ls): bash(sudo:*) from managed outranks the grant"
    );
    assert_eq!(
        sup.would(&bash("r", "s", "sudo ls"))?.decision,
        Decision::Ask
    );
    let g = sup.grant("nowhere", &RuleDecl::new("read", None))?;
    assert!(!g.granted && g.reason.contains("`nowhere`"));
    let seen = seen.lock().map_err(|_| "poisoned")?;
    assert_eq!(seen.len(), 3);
    assert!(seen
        .iter()
        .all(|e| e.kind == EventKind::Grant && e.verdict.decision == Decision::Deny));
    Ok(())
}

/// A supervisor built from an engine alone has no policy to grant into.
pub fn a_supervisor_without_the_policy_refuses_always_allow(open: Open<'_>) -> R {
    let engine = Engine::build(&Policy::from_json(POLICY)?)?;
    let sup = Supervisor::new(Arc::new(engine), open(), fresh("supervisor"));
    assert_eq!(
        sup.grant("local", &RuleDecl::new("read", None)),
        Err(StateError::NoPolicy)
    );
    Ok(())
}

fn skill(name: &str, allow: &str) -> Result<RuleSet, Box<dyn std::error::Error>> {
    Ok(RuleSet {
        source: Source {
            name: name.into(),
            rank: 5,
            trusted: true,
            ..Source::default()
        },
        lists: RuleLists::parse(allow, "", "")?,
        ..RuleSet::default()
    })
}

/// `set_policy` keeps grant sets and grants in force; `grants_for` and
/// `revoke` see the scoped set.
pub fn set_policy_keeps_grant_sets_and_grants(open: Open<'_>) -> R {
    let sup = sup(open)?;
    let g = sup.grant_set(&skill("commit", "bash(git push:*)")?, Some("conv1"))?;
    assert_eq!(g.granted, ["bash(git push:*)"]);
    let npm = bash("r", "n", "npm test");
    sup.grant("local", &RuleDecl::new("bash", Some("npm test:*")))?;
    let push = bash("r", "p", "git push").in_scope("conv1");
    assert_eq!(sup.would(&push)?.decision, Decision::Allow);
    assert_eq!(
        sup.would(&bash("r", "p", "git push"))?.decision,
        Decision::Ask,
        "a scoped set decides its own scope only"
    );
    // A new policy with the same sources: both grants stay in force.
    let swapped = POLICY.replace("read bash(git status:*)", "read");
    sup.set_policy(Policy::from_json(&swapped)?)?;
    assert_eq!(sup.would(&push)?.decision, Decision::Allow);
    assert_eq!(sup.would(&npm)?.decision, Decision::Allow);
    assert_eq!(
        sup.would(&bash("r", "s", "git status"))?.decision,
        Decision::Ask,
        "the new policy is in force"
    );
    let sets = sup.grants_for(Some("conv1"))?;
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].source.name, "commit");
    assert!(sup.grants_for(None)?.is_empty());
    assert_eq!(sup.revoke("commit", Some("conv1"))?, 1);
    assert_eq!(sup.would(&push)?.decision, Decision::Ask);
    assert_eq!(sup.revoke("commit", Some("conv1"))?, 0);
    Ok(())
}

/// `revoke_scope` removes one scope's sets; a scope with a control
/// character is refused.
pub fn revoke_scope_removes_that_scopes_sets_only(open: Open<'_>) -> R {
    let sup = sup(open)?;
    sup.grant_set(&skill("a", "edit")?, Some("c1"))?;
    sup.grant_set(&skill("b", "edit")?, Some("c1"))?;
    sup.grant_set(&skill("c", "edit")?, None)?;
    assert_eq!(sup.revoke_scope(Some("c1"))?, 2);
    let left = sup.grants()?;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].0, None);
    assert!(matches!(
        sup.grant_set(&skill("d", "edit")?, Some("bad\u{1}")),
        Err(StateError::BadScope(_))
    ));
    Ok(())
}

/// A stricter hook's decision replaces the rule's, and holds the batch as a
/// rule's ask would.
pub fn a_stricter_hook_replaces_the_rules_reason_and_decider_before_the_hold(open: Open<'_>) -> R {
    let sup = sup(open)?.with_hook(|c: &Call| {
        (c.tool == "read").then(|| HookDecision {
            decision: Decision::Ask,
            reason: "metered: reads cost money".into(),
            by: "hook",
            rule: None,
        })
    });
    let v = sup.decide_batch(
        1,
        &[bash("r", "a", "git status"), call("r", "b", "read", "{}")],
    );
    // The hook's ask holds the batch as a rule's would.
    assert!(v[0].held);
    assert_eq!(v[1].reason, "metered: reads cost money");
    assert_eq!(v[1].by, "hook");
    assert_eq!(v[1].rule, None);
    assert_eq!(sup.runs()?, ["r"]);
    Ok(())
}

/// A hook that denies what another hook asked about leaves nothing held.
pub fn a_hook_that_blocks_an_asked_call_leaves_nothing_held(open: Open<'_>) -> R {
    let sup = sup(open)?
        .with_hook(|c: &Call| {
            (c.tool == "edit").then(|| HookDecision {
                decision: Decision::Ask,
                reason: "weaker".into(),
                by: "hook",
                rule: None,
            })
        })
        .with_hook(|c: &Call| {
            (c.tool == "edit").then(|| HookDecision {
                decision: Decision::Deny,
                reason: "edits are frozen".into(),
                by: "hook",
                rule: None,
            })
        });
    let v = sup.decide_batch(
        1,
        &[call("r", "e", "edit", "{}"), call("r", "b", "read", "{}")],
    );
    assert_eq!(v[0].decision, Decision::Deny);
    assert_eq!(v[0].reason, "edits are frozen");
    assert_eq!(v[1].decision, Decision::Allow);
    assert!(sup.runs()?.is_empty());
    Ok(())
}

/// Every event reaches each observer once, in order, and records as the
/// seed's verdict record.
pub fn every_verdict_reaches_each_observer_once_in_order(open: Open<'_>) -> R {
    let (first, a) = collector();
    let (second, b) = collector();
    let sup = sup(open)?.with_observer(a).with_observer(b);
    sup.decide_batch(7, &turn("r1"));
    sup.release("r1", &[Answer::approve("b")])?;
    sup.grant("local", &RuleDecl::new("bash", Some("npm:*")))?;
    sup.decide_batch(8, &[bash("r2", "p", "git push")]);
    sup.answers("r2", &Refuser)?;
    let first = first.lock().map_err(|_| "poisoned")?;
    let second = second.lock().map_err(|_| "poisoned")?;
    assert_eq!(*first, *second);
    let kinds: Vec<EventKind> = first.iter().map(|e| e.kind).collect();
    use EventKind::*;
    assert_eq!(
        kinds,
        [Hold, Decision, Hold, Release, Release, Grant, Decision, Review]
    );
    let (ns, data) = first[0].record();
    assert_eq!(ns, "agentpolicy:verdict");
    let j: serde_json::Value = serde_json::from_str(&data)?;
    assert_eq!(j["run_id"], "r1");
    assert_eq!(j["turn"], 7);
    assert_eq!(j["call_id"], "a");
    assert_eq!(j["tool"], "bash");
    assert_eq!(j["action"], "defer");
    assert_eq!(j["rule"], "bash(git status:*)");
    assert_eq!(j["source"], "team");
    assert_eq!(j["by"], "policy");
    assert_eq!(j["held"], true);
    let (_, review) = first[7].record();
    let j: serde_json::Value = serde_json::from_str(&review)?;
    assert_eq!(j["by"], "agent");
    assert_eq!(j["action"], "block");
    Ok(())
}

/// A damaged record fails the review of its whole run before any call is
/// reviewed, so the failed reviews count nothing toward the bound.
pub fn a_review_over_an_unreadable_record_fails_and_counts_nothing(open: Open<'_>) -> R {
    let store = open();
    let sup = on(Arc::clone(&store), fresh("supervisor"))?;
    let ns = sup.namespace().clone();
    sup.decide_batch(1, &[bash("r1", "p", "git push")]);
    store.defer(&ns, "r1", "bad", b"not a record")?;
    // The bound is three refusals in a row: three failed reviews that
    // counted the readable call's refusal would reach it below.
    for _ in 0..3 {
        assert!(matches!(
            sup.answers("r1", &Refuser),
            Err(StateError::Store(StoreError::Corrupt(_)))
        ));
    }
    assert_eq!(store.pending(&ns, "r1")?.len(), 2, "nothing was taken");
    store.take(&ns, "r1", &["bad"])?;
    let a = sup.answers("r1", &Refuser)?;
    assert_eq!(a.len(), 1);
    assert_eq!(
        a[0].reply,
        Reply::Refuse,
        "one refusal, not the fourth in a row"
    );
    Ok(())
}

/// Only asked calls are deferred: a record that says allow is damage, not
/// an allow.
pub fn a_deferred_record_that_is_not_an_ask_is_corrupt_not_an_allow(open: Open<'_>) -> R {
    let store = open();
    let sup = on(Arc::clone(&store), fresh("supervisor"))?;
    let ns = sup.namespace().clone();
    let rec = br#"{"v":1,"tool":"bash","args":"{\"command\":\"rm -rf x\"}","turn":1,
        "verdict":{"decision":"allow","reason":"held for approval: allowed by read","held":true,"by":"policy"}}"#;
    store.defer(&ns, "r1", "x", rec)?;
    assert!(matches!(
        sup.deferred("r1", "x"),
        Err(StateError::Store(StoreError::Corrupt(_)))
    ));
    assert!(matches!(
        sup.release("r1", &[]),
        Err(StateError::Store(StoreError::Corrupt(_)))
    ));
    assert_eq!(store.pending(&ns, "r1")?.len(), 1, "nothing was taken");
    Ok(())
}

/// A scope's sets are all read before any is removed: an unreadable one
/// fails the revocation and leaves every set in place.
pub fn revoke_scope_over_an_unreadable_set_fails_and_removes_nothing(open: Open<'_>) -> R {
    let store = open();
    let sup = on(Arc::clone(&store), fresh("supervisor"))?;
    let ns = sup.namespace().clone();
    sup.grant_set(&skill("a", "edit")?, Some("c1"))?;
    store.put_grant(&ns, "c1", "z", b"not a record")?;
    assert!(matches!(
        sup.revoke_scope(Some("c1")),
        Err(StateError::Store(StoreError::Corrupt(_)))
    ));
    let kept: Vec<String> = store.grants(&ns)?.into_iter().map(|g| g.1).collect();
    assert_eq!(kept, ["a", "z"]);
    Ok(())
}

/// The scope "always allow" grants are kept under, as the supervisor
/// writes it: a record put there is one of them.
const ALWAYS_SCOPE: &str = "\u{1}always";

/// An unreadable grant record denies every call, naming the record and
/// the repair; `discard_unreadable` removes exactly the unreadable ones
/// (grant sets scoped and not, and an "always allow"), reports each to the
/// observers, and decisions recover with the readable sets in force.
pub fn discarding_unreadable_grant_records_removes_them_alone_and_decisions_recover(
    open: Open<'_>,
) -> R {
    let store = open();
    let (seen, obs) = collector();
    let sup = on(Arc::clone(&store), fresh("supervisor"))?.with_observer(obs);
    let ns = sup.namespace().clone();
    sup.grant_set(&skill("commit", "bash(git push:*)")?, Some("c1"))?;
    store.put_grant(&ns, "c1", "z", b"not a record")?;
    store.put_grant(&ns, "", "y", br#"{"v":1}"#)?;
    store.put_grant(&ns, ALWAYS_SCOPE, "k", b"\xff")?;
    let push = bash("r", "p", "git push").in_scope("c1");
    let v = sup.decide_batch(1, std::slice::from_ref(&push));
    assert_eq!(v[0].decision, Decision::Deny);
    assert!(
        v[0].reason.contains("discard the unreadable grant records"),
        "{}",
        v[0].reason
    );
    let before = seen.lock().map_err(|_| "poisoned")?.len();
    let gone = sup.discard_unreadable()?;
    let named: Vec<(Option<&str>, &str, bool)> = gone
        .iter()
        .map(|d| (d.scope.as_deref(), d.source.as_str(), d.always))
        .collect();
    assert_eq!(
        named,
        [
            (None, "y", false),
            (None, "", true),
            (Some("c1"), "z", false)
        ]
    );
    assert!(gone[2]
        .why
        .contains("the grant set of `z` under the scope `c1`"));
    let kept: Vec<(String, String)> = store
        .grants(&ns)?
        .into_iter()
        .map(|(s, src, _)| (s, src))
        .collect();
    assert_eq!(kept, [("c1".to_string(), "commit".to_string())]);
    assert_eq!(
        sup.would(&push)?.decision,
        Decision::Allow,
        "the readable set is in force"
    );
    assert!(
        sup.discard_unreadable()?.is_empty(),
        "nothing left to discard"
    );
    let seen = seen.lock().map_err(|_| "poisoned")?;
    let revoked: Vec<&Event> = seen
        .get(before..)
        .unwrap_or_default()
        .iter()
        .filter(|e| e.kind == EventKind::Revoke)
        .collect();
    assert_eq!(revoked.len(), 3);
    assert!(revoked[0]
        .verdict
        .reason
        .starts_with("discarded the grant set of `y`"));
    Ok(())
}

/// The store's compare-and-remove: a record another replica rewrote after
/// it was read stays; the one read goes.
pub fn a_grant_record_is_removed_only_while_it_is_what_was_read(open: Open<'_>) -> R {
    let (a, b) = (open(), open());
    let ns = fresh("supervisor");
    a.put_grant(&ns, "c1", "s", b"old")?;
    b.put_grant(&ns, "c1", "s", b"new")?;
    assert!(!a.remove_grant_if(&ns, "c1", "s", b"old")?);
    assert_eq!(a.grants(&ns)?.len(), 1);
    assert!(!a.remove_grant_if(&ns, "c1", "other", b"new")?);
    assert!(a.remove_grant_if(&ns, "c1", "s", b"new")?);
    assert!(b.grants(&ns)?.is_empty());
    Ok(())
}

/// A small deterministic generator: the interleaving is the threads', the
/// operations are reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// One thread's walk through decide, grant, revoke and release, in its own
/// scope and runs, against a model of what it granted and what each run
/// has pending: `git push` asks unless the thread's set grants it, `git
/// status` and `read` are allowed, and a batch that asks holds the rest.
fn walk(sup: &Supervisor, t: u64, steps: usize) -> Result<(), String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
    let scope = format!("s{t}");
    let set = skill(&format!("k{t}"), "bash(git push:*)").map_err(|e| e.to_string())?;
    let mut granted = false;
    let mut pending: std::collections::BTreeMap<String, Vec<(String, bool)>> =
        std::collections::BTreeMap::new();
    let mut next_id = 0u64;
    for step in 0..steps {
        match rng.below(4) {
            0 => {
                let run = format!("t{t}-r{}", rng.below(3));
                let mut calls = Vec::new();
                for _ in 0..1 + rng.below(3) {
                    next_id += 1;
                    let id = format!("c{next_id}");
                    calls.push(
                        match rng.below(3) {
                            0 => bash(&run, &id, "git push"),
                            1 => bash(&run, &id, "git status"),
                            _ => call(&run, &id, "read", "{}"),
                        }
                        .in_scope(&scope),
                    );
                }
                let push = |c: &Call| c.args.str_member("command") == Some("git push");
                let asks = !granted && calls.iter().any(push);
                let vs = sup.decide_batch(step as u64, &calls);
                for (c, v) in calls.iter().zip(&vs) {
                    let want = if asks { Decision::Ask } else { Decision::Allow };
                    let held = asks && (!push(c) || granted);
                    if v.decision != want || v.held != held {
                        return Err(format!(
                            "thread {t} step {step}: {} got {:?} (held {}), the model says {want:?} (held {held})",
                            c.call_id, v.decision, v.held
                        ));
                    }
                    if asks {
                        pending
                            .entry(run.clone())
                            .or_default()
                            .push((c.call_id.clone(), held));
                    }
                }
            }
            1 => {
                sup.grant_set(&set, Some(&scope))
                    .map_err(|e| e.to_string())?;
                granted = true;
            }
            2 => {
                let n = sup
                    .revoke(&set.source.name, Some(&scope))
                    .map_err(|e| e.to_string())?;
                if (n > 0) != granted {
                    return Err(format!(
                        "thread {t} step {step}: revoked {n}, granted {granted}"
                    ));
                }
                granted = false;
            }
            _ => {
                let run = format!("t{t}-r{}", rng.below(3));
                let want = pending.remove(&run).unwrap_or_default();
                let answers: Vec<Answer> = want
                    .iter()
                    .filter(|(_, held)| !held)
                    .map(|(id, _)| Answer::approve(id.clone()))
                    .collect();
                let got = sup.release(&run, &answers).map_err(|e| e.to_string())?;
                let got: Vec<&str> = got.iter().map(|a| a.call_id.as_str()).collect();
                let want: Vec<&str> = want.iter().map(|(id, _)| id.as_str()).collect();
                if got != want {
                    return Err(format!(
                        "thread {t} step {step}: released {got:?}, the model says {want:?}"
                    ));
                }
            }
        }
    }
    let prefix = format!("t{t}-");
    let mine: Vec<String> = sup
        .runs()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|r| r.starts_with(&prefix))
        .collect();
    let model: Vec<String> = pending
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, _)| k)
        .collect();
    if mine != model {
        return Err(format!(
            "thread {t}: runs {mine:?}, the model says {model:?}"
        ));
    }
    Ok(())
}

/// Four threads on two replicas (two threads sharing each supervisor)
/// decide, grant, revoke and release in random interleavings; each agrees
/// with a sequential model of its own scope and runs. Bounded: four
/// threads of 150 steps.
pub fn threads_on_two_replicas_agree_with_a_sequential_model_of_their_own(open: Open<'_>) -> R {
    let ns = fresh("concurrency");
    let replicas = [Arc::new(on(open(), ns.clone())?), Arc::new(on(open(), ns)?)];
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let sup = Arc::clone(&replicas[(t % 2) as usize]);
            std::thread::spawn(move || walk(&sup, t, 150))
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a thread panicked")??;
    }
    Ok(())
}

/// Four replicas release one run at once, each approving the asked call:
/// every held call is answered by exactly one of them, and the run is
/// gone. Twenty rounds.
pub fn racing_releases_on_replicas_answer_every_call_exactly_once(open: Open<'_>) -> R {
    let ns = fresh("race");
    let replicas: Vec<Arc<Supervisor>> = (0..4)
        .map(|_| on(open(), ns.clone()).map(Arc::new))
        .collect::<Result<_, _>>()?;
    for round in 0..20 {
        let run = format!("race{round}");
        let mut calls = vec![bash(&run, "c0", "git push")];
        calls.extend((1..6).map(|i| call(&run, &format!("c{i}"), "read", "{}")));
        replicas[0].decide_batch(1, &calls);
        let handles: Vec<_> = replicas
            .iter()
            .map(|sup| {
                let sup = Arc::clone(sup);
                let run = run.clone();
                std::thread::spawn(move || sup.release(&run, &[Answer::approve("c0")]))
            })
            .collect();
        let mut answered = Vec::new();
        for h in handles {
            let answers = h.join().map_err(|_| "a thread panicked")??;
            // The caller's own answer comes back to every caller; the held
            // calls are answered by whichever release took them.
            answered.extend(
                answers
                    .into_iter()
                    .filter(|a| a.call_id != "c0")
                    .map(|a| a.call_id),
            );
        }
        answered.sort();
        assert_eq!(answered, ["c1", "c2", "c3", "c4", "c5"], "round {round}");
        assert!(replicas[1].runs()?.is_empty());
    }
    Ok(())
}
