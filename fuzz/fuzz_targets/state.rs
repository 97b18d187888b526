//! The state layer (`toolgate::state`): one `Supervisor` over a
//! `MemoryStore`, driven by a short program, against a plain sequential
//! model the target keeps (the runs and their pending calls, the grant
//! sets by scope and source, the review history).
//!
//! The expected decisions are not the supervisor's own: they come from a
//! fresh `Session` over the base engine (built once) with the grant sets
//! the model believes active activated directly (`Session::grant_set`,
//! sorted by scope then source, as the store lists them), each call's
//! `Session::would`, the hook folded in by the target, and the batch hold
//! applied by the target. The supervisor instead reads its grant sets back
//! from the store's records and caches the policy it builds; what is
//! checked is that the state round trip changes no decision.
//!
//! Checked after every operation: `runs()` is exactly the model's runs
//! with pending calls, and `deferred(run, id)` answers, for every run and
//! id of the tables, the model's pending call (an ask, held or not) or
//! nothing. `decide_batch` gives one verdict per call with the expected
//! decision and hold; `release` answers every pending call once, in the
//! model's order, then the given answers for calls not pending, and a
//! release missing an asked call's answer is `StateError::Unanswered`
//! naming exactly those calls, changing nothing; a released run releases
//! nothing again; the `Release` events are the held calls answered;
//! `answers` follows the denial bound (three refusals in a row, or ten
//! within the last fifty); `grant_set` returns what a session grants,
//! `revoke` and `revoke_scope` count the rules of the sets they drop,
//! `grants_for` gives back the sets granted; `forget` counts and drops a
//! run; a scope with a control character is `BadScope` everywhere.
//!
//! Input: byte 0 is the mode: bit 0 clear runs a program, bit 1 then
//! adds a host hook (deny `write`, ask `npm test`); bit 0 set damages the
//! store (below). The rest is at most 64 operations, each an opcode byte
//! then its operands (see `program` and `damaged`): a call is two bytes
//! (its template from `CALLS`; its run, id and scope from
//! `run_id`/`call_id`/`scope` bits), a batch is a count byte then calls.
//!
//! Damaged mode: after a fixed setup (two runs deferred, two grant sets),
//! the program writes records straight into the store with
//! `Store::defer` and `Store::put_grant` (raw bytes, a valid record with
//! bytes changed, cut short, or with one member replaced or removed),
//! under the grant journal's scope too, then releases, reviews, decides and
//! lists. Nothing may panic; a store holding a grant record it cannot read
//! denies every call of a batch; with readable grant sets (and no journal
//! record) decisions are exactly a fresh session's with the sets the
//! supervisor reads back, so a damaged record never allows what the base
//! policy and the readable sets do not; `deferred` only ever reports an
//! ask; a release or review over an unreadable pending record is a
//! `Corrupt` store error that takes nothing off the run and counts no
//! review; a failed revocation removes no grant set; `discard_unreadable`
//! removes exactly the grant records a supervisor cannot read on their
//! own, after which decisions read the store again.
//!
//! Sealed damage (mode bits 0 and 2 set): the same, with the supervisor
//! on a `Sealed` store over the memory store and the damage written into
//! the memory store beneath it, as a writer without the state key would.
//! The templates are then sealed records, so the damage also copies
//! genuine records to other runs, calls, scopes and sources. On top of
//! the checks above: a pending record the program wrote is readable only
//! when it is byte for byte the sealed record set up at that same run and
//! call; anything else is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use toolgate::state::{
    Answer, Event, EventKind, HookDecision, MemoryStore, Namespace, Reply, Review, Reviewer,
    SealKey, Sealed, StateError, Store, StoreError, Supervisor,
};
use toolgate::{Call, Decision, Engine, Policy, RuleDecl, RuleLists, RuleSet, Session, Source};

const POLICY: &str = r#"{
    "default": "ask",
    "matchers": {"bash": {"match": "glob", "field": "command"}},
    "sources": [
        {"name": "managed", "rank": 9, "trusted": true, "ask": "bash(sudo:*)"},
        {"name": "team", "rank": 5, "trusted": true,
         "allow": "read bash(git status:*)", "deny": "bash(rm:*) web_fetch",
         "ask": "bash(git push:*) edit"},
        {"name": "local", "rank": 5, "trusted": true}
    ]
}"#;

/// The calls a program makes: tool and arguments.
const CALLS: [(&str, &str); 10] = [
    ("read", r#"{"path": "a"}"#),
    ("edit", r#"{"path": "a"}"#),
    ("bash", r#"{"command": "git status"}"#),
    ("bash", r#"{"command": "git push --force"}"#),
    ("bash", r#"{"command": "rm -rf x"}"#),
    ("bash", r#"{"command": "sudo ls"}"#),
    ("bash", r#"{"command": "npm test"}"#),
    ("bash", r#"{"command": "ls -la"}"#),
    ("web_fetch", r#"{"url": "x"}"#),
    ("write", r#"{"path": "b"}"#),
];
const RUNS: [&str; 4] = ["r0", "r1", "r2", ""];
const IDS: [&str; 8] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", ""];
/// Ids an answer names: the calls', and one never deferred.
const ANSWER_IDS: [&str; 8] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "zz"];
/// Grant scopes: none, two conversations, and one the store cannot keep.
const SCOPES: [Option<&str>; 4] = [None, Some("c1"), Some("c2"), Some("bad\u{7}")];
const SOURCES: [&str; 5] = ["a", "b", "c", "d", "zz"];
/// The grant journal's scope ("always allow"), as the supervisor writes it.
const ALWAYS: &str = "\u{1}always";
const MAX_OPS: usize = 64;

struct Base {
    engine: Arc<Engine<'static>>,
    policy: Policy,
    /// The grant sets a program activates; two share each source.
    sets: Vec<RuleSet>,
}

fn base() -> &'static Base {
    static B: OnceLock<Base> = OnceLock::new();
    B.get_or_init(|| {
        let policy = Policy::from_json(POLICY).expect("the policy reads");
        let engine = Engine::build_with(&policy, &toolgate::builtins::registry())
            .expect("the policy builds");
        let set =
            |name: &str, rank: i64, trusted: bool, allow: &str, deny: &str, ask: &str| RuleSet {
                source: Source {
                    name: name.into(),
                    rank,
                    trusted,
                    ..Source::default()
                },
                lists: RuleLists::parse(allow, deny, ask).expect("the set reads"),
                ..RuleSet::default()
            };
        let sets = vec![
            set("a", 5, true, "edit", "", ""),
            set("a", 5, true, "bash(npm test:*)", "", ""),
            set("b", 5, true, "bash(git push:*) write", "", ""),
            set("b", 1, false, "bash(ls:*)", "", ""),
            set("c", 5, true, "", "read", ""),
            set("c", 5, true, "web_fetch", "", "bash(git status:*)"),
            set("d", 9, true, "bash(sudo:*)", "", ""),
            set("d", 5, true, "read edit", "bash(npm:*)", "write"),
        ];
        Base {
            engine: Arc::new(engine),
            policy,
            sets,
        }
    })
}

fn ns() -> Namespace {
    Namespace::new("default", "fuzz")
}

/// The host hook of the hooked programs: a deny for `write`, an ask for
/// `npm test`.
fn hook_of(c: &Call) -> Option<HookDecision> {
    let d = if c.tool == "write" {
        Decision::Deny
    } else if c.tool == "bash" && c.args.raw().contains("npm test") {
        Decision::Ask
    } else {
        return None;
    };
    Some(HookDecision {
        decision: d,
        reason: "the host says so".into(),
        by: "hook",
        rule: None,
    })
}

/// Approves `edit`, fails on `write`, refuses the rest.
struct Desk;

impl Reviewer for Desk {
    fn review(&self, call: &Call, _: &toolgate::Verdict) -> Result<Review, String> {
        match call.tool.as_str() {
            "write" => Err("the desk is away".into()),
            t => Ok(Review {
                approve: t == "edit",
                reason: if t == "edit" {
                    String::new()
                } else {
                    "no".into()
                },
                note: String::new(),
                by: "agent",
            }),
        }
    }
}

/// The input, read a byte at a time; zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
    fn done(&self) -> bool {
        self.0.is_empty()
    }
    fn call(&mut self) -> Call {
        let (tool, args) = CALLS[usize::from(self.byte()) % CALLS.len()];
        let x = self.byte();
        let mut c = Call::new(tool, args);
        c.run_id = RUNS[usize::from(x & 3)].into();
        c.call_id = IDS[usize::from((x >> 2) & 7)].into();
        if let Some(s) = [None, Some("c1"), Some("c2"), None][usize::from(x >> 5) & 3] {
            c = c.in_scope(s);
        }
        c
    }
    fn batch(&mut self) -> Vec<Call> {
        let n = usize::from(self.byte() % 4) + 1;
        (0..n).map(|_| self.call()).collect()
    }
    fn run(&mut self) -> &'static str {
        RUNS[usize::from(self.byte() % 3)]
    }
    fn answers(&mut self) -> Vec<Answer> {
        let n = usize::from(self.byte() % 5);
        (0..n)
            .map(|_| {
                let b = self.byte();
                answer(ANSWER_IDS[usize::from(b & 7)], (b >> 3) % 3)
            })
            .collect()
    }
}

fn answer(id: &str, reply: u8) -> Answer {
    match reply {
        0 => Answer::approve(id),
        1 => Answer::refuse(id),
        _ => Answer::refuse_and_end(id),
    }
}

#[derive(Clone, Debug)]
struct Pend {
    id: String,
    tool: String,
    held: bool,
}

#[derive(Default)]
struct Model {
    runs: BTreeMap<String, Vec<Pend>>,
    /// (scope, source) -> index into `Base::sets`.
    sets: BTreeMap<(String, String), usize>,
    reviews: Vec<bool>,
}

/// A session over the base engine with `sets` activated as given.
fn session_with<'s>(
    sets: impl IntoIterator<Item = (Option<&'s str>, &'s RuleSet)>,
) -> Session<'static, 'static> {
    let mut s = Session::shared(Arc::clone(&base().engine));
    for (scope, set) in sets {
        s.grant_set(set, scope);
    }
    s
}

impl Model {
    fn session(&self) -> Session<'static, 'static> {
        let b = base();
        session_with(
            self.sets.iter().map(|((scope, _), &i)| {
                (Some(scope.as_str()).filter(|s| !s.is_empty()), &b.sets[i])
            }),
        )
    }
}

/// A call's decision on its own: the session's, then the hook's when it
/// is stricter.
fn single(s: &Session<'static, 'static>, hook: bool, c: &Call) -> Decision {
    let d = s.would(c).decision;
    match hook.then(|| hook_of(c)).flatten() {
        Some(h) if h.decision > d => h.decision,
        _ => d,
    }
}

/// Decision and hold of each call of a batch: an allowed call is held
/// when another call of the batch asks.
fn expect_batch(
    s: &Session<'static, 'static>,
    hook: bool,
    calls: &[Call],
) -> Vec<(Decision, bool)> {
    let one: Vec<Decision> = calls.iter().map(|c| single(s, hook, c)).collect();
    let asks = one.iter().any(|d| *d == Decision::Ask);
    one.into_iter()
        .map(|d| match d {
            Decision::Allow if asks => (Decision::Ask, true),
            d => (d, false),
        })
        .collect()
}

/// What a release of `pending` with `given` answers, as (call id, reply,
/// built by the state layer), or the ids of the asked calls left
/// unanswered; the preview of answers comes with them.
type Expected = (Vec<(String, Reply, bool)>, Vec<String>);

fn expect_release(pending: &[Pend], given: &[Answer]) -> Expected {
    let ends = given.iter().any(|a| a.reply == Reply::RefuseAndEnd);
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for p in pending {
        if let Some(a) = given.iter().find(|a| a.call_id == p.id) {
            out.push((a.call_id.clone(), a.reply, false));
        } else if p.held {
            let r = if ends { Reply::Refuse } else { Reply::Approve };
            out.push((p.id.clone(), r, true));
        } else {
            missing.push(p.id.clone());
        }
    }
    for a in given {
        if !pending.iter().any(|p| p.id == a.call_id) {
            out.push((a.call_id.clone(), a.reply, false));
        }
    }
    (out, missing)
}

fn check_answers(got: &[Answer], want: &[(String, Reply, bool)], given: &[Answer]) {
    let ids = |g: &[Answer]| {
        g.iter()
            .map(|a| (a.call_id.clone(), a.reply))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(got),
        want.iter()
            .map(|(i, r, _)| (i.clone(), *r))
            .collect::<Vec<_>>(),
        "answers differ from the model's"
    );
    for (a, (_, _, built)) in got.iter().zip(want) {
        if *built {
            assert_eq!(a.by, "policy", "a held call's answer: {a:?}");
        } else {
            assert!(given.contains(a), "a given answer changed: {a:?}");
        }
    }
}

type Seen = Arc<Mutex<Vec<Event>>>;

fn drain(seen: &Seen) -> Vec<Event> {
    std::mem::take(&mut *seen.lock().expect("the observer lock"))
}

/// The `Release` events are the held calls answered, once each.
fn check_release_events(events: &[Event], want: &[(String, Reply, bool)]) {
    let rel: Vec<(String, Decision)> = events
        .iter()
        .filter(|e| e.kind == EventKind::Release)
        .map(|e| (e.verdict.call_id.clone(), e.verdict.decision))
        .collect();
    let built: Vec<(String, Decision)> = want
        .iter()
        .filter(|(_, _, b)| *b)
        .map(|(id, r, _)| {
            let d = if *r == Reply::Approve {
                Decision::Allow
            } else {
                Decision::Deny
            };
            (id.clone(), d)
        })
        .collect();
    assert_eq!(rel, built, "release events");
}

/// `runs()` and `deferred()` list exactly the model's pending calls.
fn check_listing(sup: &Supervisor, m: &Model) {
    let runs = sup.runs().expect("runs");
    let want: Vec<String> = m
        .runs
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(r, _)| r.clone())
        .collect();
    assert_eq!(runs, want, "runs()");
    for run in &RUNS[..3] {
        let pend = m.runs.get(*run).map(Vec::as_slice).unwrap_or_default();
        for id in &IDS[..7] {
            let got = sup.deferred(run, id).expect("deferred");
            match (pend.iter().find(|p| p.id == *id), got) {
                (None, None) => {}
                (Some(p), Some(v)) => {
                    assert_eq!(v.decision, Decision::Ask, "{run}/{id}");
                    assert_eq!(v.held, p.held, "{run}/{id} held");
                    assert_eq!((v.run_id.as_str(), v.call_id.as_str()), (*run, *id));
                }
                (p, v) => panic!("deferred({run}, {id}): model {p:?}, supervisor {v:?}"),
            }
        }
    }
}

fn bound_reached(h: &[bool]) -> bool {
    let in_a_row = h.iter().rev().take_while(|r| **r).count();
    let last = &h[h.len().saturating_sub(50)..];
    in_a_row >= 3 || last.iter().filter(|r| **r).count() >= 10
}

fn program(mut inp: Bytes<'_>, hook: bool) {
    let b = base();
    let store = Arc::new(MemoryStore::new());
    let seen: Seen = Arc::default();
    let s2 = Arc::clone(&seen);
    let mut sup = Supervisor::new(Arc::clone(&b.engine), store, ns())
        .with_observer(move |e: &Event| s2.lock().expect("the observer lock").push(e.clone()));
    if hook {
        sup = sup.with_hook(hook_of);
    }
    let mut m = Model::default();
    for turn in 1..=MAX_OPS as u64 {
        if inp.done() {
            break;
        }
        match inp.byte() % 12 {
            0 | 1 => {
                let calls = inp.batch();
                let want = expect_batch(&m.session(), hook, &calls);
                let got = sup.decide_batch(turn, &calls);
                assert_eq!(got.len(), calls.len(), "one verdict per call");
                for ((c, v), (d, held)) in calls.iter().zip(&got).zip(&want) {
                    assert_eq!((v.decision, v.held), (*d, *held), "{c:?}: {v:?}");
                    assert_eq!((&v.run_id, &v.call_id), (&c.run_id, &c.call_id));
                    if *d == Decision::Ask && !c.run_id.is_empty() && !c.call_id.is_empty() {
                        let run = m.runs.entry(c.run_id.clone()).or_default();
                        let p = Pend {
                            id: c.call_id.clone(),
                            tool: c.tool.clone(),
                            held: *held,
                        };
                        match run.iter_mut().find(|q| q.id == c.call_id) {
                            Some(q) => *q = p,
                            None => run.push(p),
                        }
                    }
                }
            }
            2 | 3 => {
                let run = inp.run();
                let given = inp.answers();
                release(&sup, &mut m, &seen, run, &given);
            }
            4 => {
                // Every asked call answered: the run is released, and a
                // second release, with and without the answers, answers
                // nothing the first did.
                let run = inp.run();
                let bits = inp.byte();
                let pend = m.runs.get(run).cloned().unwrap_or_default();
                let given: Vec<Answer> = pend
                    .iter()
                    .filter(|p| !p.held)
                    .enumerate()
                    .map(|(i, p)| answer(&p.id, (bits >> (i % 4 * 2)) & 3))
                    .collect();
                release(&sup, &mut m, &seen, run, &given);
                let again = sup.release(run, &[]).expect("a second release");
                assert!(again.is_empty(), "a second release answered {again:?}");
                release(&sup, &mut m, &seen, run, &given);
            }
            5 => {
                let run = inp.run();
                let pend = m.runs.remove(run).unwrap_or_default();
                let mut given = Vec::new();
                let mut reached = false;
                for p in pend.iter().filter(|p| !p.held) {
                    let approve = p.tool == "edit";
                    m.reviews.push(!approve);
                    reached |= !approve && bound_reached(&m.reviews);
                    given.push(answer(&p.id, u8::from(!approve)));
                }
                if reached {
                    for a in &mut given {
                        if a.reply == Reply::Refuse {
                            a.reply = Reply::RefuseAndEnd;
                        }
                    }
                }
                let (want, missing) = expect_release(&pend, &given);
                assert!(missing.is_empty());
                drain(&seen);
                let got = sup.answers(run, &Desk);
                let events = drain(&seen);
                let got = match (got, reached) {
                    (Ok(a), false) => a,
                    (Err(StateError::DenialBound { answers, missing }), true) => {
                        assert!(missing.is_empty());
                        answers
                    }
                    (got, _) => panic!("answers({run}): {got:?}, bound reached: {reached}"),
                };
                assert_eq!(
                    got.iter()
                        .map(|a| (a.call_id.clone(), a.reply))
                        .collect::<Vec<_>>(),
                    want.iter()
                        .map(|(i, r, _)| (i.clone(), *r))
                        .collect::<Vec<_>>(),
                    "answers({run})"
                );
                check_release_events(&events, &want);
                let reviews = events
                    .iter()
                    .filter(|e| e.kind == EventKind::Review)
                    .count();
                assert_eq!(reviews, given.len(), "one review event per asked call");
            }
            6 => {
                let x = inp.byte();
                let set = &b.sets[usize::from(x & 7) % b.sets.len()];
                let scope = SCOPES[usize::from(x >> 4) % 4];
                let got = sup.grant_set(set, scope);
                if refused_scope(scope, &got) {
                    continue;
                }
                let mut s = m.session();
                let want = s.grant_set(set, scope);
                assert_eq!(got.expect("grant_set"), want, "grant_set");
                let i = usize::from(x & 7) % b.sets.len();
                m.sets.insert(
                    (scope.unwrap_or("").to_string(), set.source.name.clone()),
                    i,
                );
            }
            7 => {
                let x = inp.byte();
                let source = SOURCES[usize::from(x & 7) % SOURCES.len()];
                let scope = SCOPES[usize::from(x >> 4) % 4];
                let got = sup.revoke(source, scope);
                if refused_scope(scope, &got) {
                    continue;
                }
                let want = m
                    .sets
                    .remove(&(scope.unwrap_or("").to_string(), source.to_string()))
                    .map_or(0, |i| n_rules(&b.sets[i]));
                assert_eq!(got.expect("revoke"), want, "revoke({source}, {scope:?})");
            }
            8 => {
                let scope = SCOPES[usize::from(inp.byte()) % 4];
                let got = sup.revoke_scope(scope);
                if refused_scope(scope, &got) {
                    continue;
                }
                let sc = scope.unwrap_or("");
                let mut want = 0;
                m.sets.retain(|(s, _), i| {
                    if s == sc {
                        want += n_rules(&b.sets[*i]);
                    }
                    s != sc
                });
                assert_eq!(got.expect("revoke_scope"), want, "revoke_scope({scope:?})");
            }
            9 => {
                let scope = SCOPES[usize::from(inp.byte()) % 4];
                let got = sup.grants_for(scope);
                if refused_scope(scope, &got) {
                    continue;
                }
                let sc = scope.unwrap_or("");
                let mut want: Vec<&RuleSet> = Vec::new();
                for wanted in [""].into_iter().chain(Some(sc).filter(|s| !s.is_empty())) {
                    want.extend(
                        m.sets
                            .iter()
                            .filter(|((s, _), _)| s == wanted)
                            .map(|(_, &i)| &b.sets[i]),
                    );
                }
                let got = got.expect("grants_for");
                assert_eq!(
                    got.iter().map(shape).collect::<Vec<_>>(),
                    want.into_iter().map(shape).collect::<Vec<_>>(),
                    "grants_for({scope:?})"
                );
            }
            10 => {
                let run = inp.run();
                let want = m.runs.remove(run).map_or(0, |p| p.len());
                assert_eq!(sup.forget(run).expect("forget"), want, "forget({run})");
                assert!(!sup.runs().expect("runs").iter().any(|r| r == run));
            }
            _ => {
                let c = inp.call();
                let want = single(&m.session(), hook, &c);
                if inp.byte() & 1 == 0 {
                    assert_eq!(sup.would(&c).expect("would").decision, want, "would {c:?}");
                } else {
                    assert_eq!(
                        sup.decide_nested(turn, &c, "p").decision,
                        want,
                        "nested {c:?}"
                    );
                }
                if inp.byte() == 0xff {
                    sup.reset_reviews().expect("reset_reviews");
                    m.reviews.clear();
                }
            }
        }
        check_listing(&sup, &m);
    }
}

/// A set as a store gives it back: its source and its rules' texts
/// (where a rule was read from is not kept).
fn shape(s: &RuleSet) -> (Source, [Vec<String>; 3]) {
    let texts = |l: &[RuleDecl]| l.iter().map(RuleDecl::text).collect::<Vec<_>>();
    let l = &s.lists;
    (
        s.source.clone(),
        [texts(&l.allow), texts(&l.deny), texts(&l.ask)],
    )
}

fn n_rules(s: &RuleSet) -> usize {
    s.lists.allow.len() + s.lists.deny.len() + s.lists.ask.len()
}

/// A release checked against the model; the model follows it.
fn release(sup: &Supervisor, m: &mut Model, seen: &Seen, run: &str, given: &[Answer]) {
    let pend = m.runs.get(run).cloned().unwrap_or_default();
    let (want, missing) = expect_release(&pend, given);
    drain(seen);
    let got = sup.release(run, given);
    let events = drain(seen);
    match got {
        Ok(got) => {
            assert!(missing.is_empty(), "released with {missing:?} unanswered");
            check_answers(&got, &want, given);
            check_release_events(&events, &want);
            m.runs.remove(run);
        }
        Err(StateError::Unanswered {
            missing: got_missing,
            answers,
        }) => {
            let got_ids: Vec<String> = got_missing.iter().map(|x| x.call_id.clone()).collect();
            assert_eq!(got_ids, missing, "the unanswered calls");
            for x in &got_missing {
                let p = pend
                    .iter()
                    .find(|p| p.id == x.call_id)
                    .expect("a pending call");
                assert_eq!(x.tool, p.tool);
            }
            check_answers(&answers, &want, given);
            assert!(events.is_empty(), "a preview reached the observers");
        }
        Err(e) => panic!("release({run}): {e}"),
    }
}

// ---- damaged store --------------------------------------------------------

/// Values a damaged record's member may take.
fn values() -> Vec<Value> {
    serde_json::from_str(
        r#"[null, true, false, 0, 1, 2, -1, 18446744073709551615, 1.5, "", "x",
            "allow", "deny", "ask", "defer", "block", "human", "hook", "agent",
            "bash", "read", "edit", "\u0001always", "{\"command\": \"rm -rf /\"}",
            "{", [], {}, [{"tool": "bash"}], [{"tool": "edit", "spec": "a"}],
            {"tool": "read"}, ["team", "edit"], ["", "bash(git push:*)"]]"#,
    )
    .expect("the values read")
}

/// Every member path of `v`, objects and arrays, three levels deep.
fn paths(v: &Value, at: &mut Vec<Vec<Value>>, here: &mut Vec<Value>) {
    if here.len() >= 3 {
        return;
    }
    let kids: Vec<(Value, &Value)> = match v {
        Value::Object(o) => o
            .iter()
            .map(|(k, x)| (Value::from(k.as_str()), x))
            .collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| (Value::from(i), x))
            .collect(),
        _ => return,
    };
    for (k, x) in kids {
        here.push(k);
        at.push(here.clone());
        paths(x, at, here);
        here.pop();
    }
}

/// Replaces (or removes) the member at `path`.
fn put_at(v: &mut Value, path: &[Value], new: Option<Value>) {
    let Some((last, up)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for k in up {
        cur = match (cur, k) {
            (Value::Object(o), Value::String(s)) => match o.get_mut(s) {
                Some(x) => x,
                None => return,
            },
            (Value::Array(a), Value::Number(n)) => {
                match n.as_u64().and_then(|i| a.get_mut(i as usize)) {
                    Some(x) => x,
                    None => return,
                }
            }
            _ => return,
        };
    }
    match (cur, last, new) {
        (Value::Object(o), Value::String(s), Some(n)) => {
            o.insert(s.clone(), n);
        }
        (Value::Object(o), Value::String(s), None) => {
            o.remove(s);
        }
        (Value::Array(a), Value::Number(n), new) => {
            let i = n.as_u64().unwrap_or(0) as usize;
            match new {
                Some(x) if i < a.len() => a[i] = x,
                None if i < a.len() => {
                    a.remove(i);
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// Record bytes: raw input, or a template changed byte-wise, cut short,
/// or with one member replaced or removed.
fn damaged_bytes(inp: &mut Bytes<'_>, templates: &[Vec<u8>]) -> Vec<u8> {
    let k = inp.byte();
    let t = templates
        .get(usize::from(inp.byte()) % templates.len().max(1))
        .cloned()
        .unwrap_or_default();
    match k % 4 {
        0 => {
            let n = usize::from(inp.byte() % 96);
            inp.take(n).to_vec()
        }
        1 => {
            let mut t = t;
            for _ in 0..inp.byte() % 4 + 1 {
                let (pos, val) = (inp.byte(), inp.byte());
                if !t.is_empty() {
                    let i = usize::from(pos) * t.len() / 256;
                    t[i] = val;
                }
            }
            t
        }
        2 => {
            let cut = usize::from(inp.byte()) * t.len() / 256;
            t[..cut].to_vec()
        }
        _ => {
            let Ok(mut v) = serde_json::from_slice::<Value>(&t) else {
                return t;
            };
            let mut at = Vec::new();
            paths(&v, &mut at, &mut Vec::new());
            let (which, val) = (inp.byte(), inp.byte());
            if let Some(p) = at.get(usize::from(which) % at.len().max(1)) {
                let vals = values();
                let new = (val != 0xff).then(|| vals[usize::from(val) % vals.len()].clone());
                put_at(&mut v, p, new);
            }
            serde_json::to_vec(&v).expect("a value writes")
        }
    }
}

/// The key of the sealed damage mode.
const KEY: [u8; 32] = [0x5e; 32];

/// `store` as the supervisor of a damage mode sees it: sealed or not.
fn seen_through(store: &Arc<MemoryStore>, sealed: bool) -> Arc<dyn Store> {
    let inner = Arc::clone(store) as Arc<dyn Store>;
    if sealed {
        Arc::new(Sealed::new(inner, SealKey::from_bytes(KEY)))
    } else {
        inner
    }
}

fn damaged(mut inp: Bytes<'_>, sealed: bool) {
    let b = base();
    let store = Arc::new(MemoryStore::new());
    let ns = ns();
    let sup = Supervisor::from_policy(
        b.policy.clone(),
        toolgate::builtins::registry(),
        seen_through(&store, sealed),
        ns.clone(),
    )
    .expect("the policy builds");
    let mk = |run: &str, id: &str, i: usize| {
        let (tool, args) = CALLS[i];
        let mut c = Call::new(tool, args);
        (c.run_id, c.call_id) = (run.into(), id.into());
        c
    };
    // Setup: asked and held calls in two runs, two grant sets, one grant.
    sup.decide_batch(
        1,
        &[mk("r0", "c0", 2), mk("r0", "c1", 3), mk("r0", "c2", 0)],
    );
    sup.decide_batch(1, &[mk("r1", "c0", 1), mk("r1", "c3", 5)]);
    sup.grant_set(&b.sets[2], None).expect("grant_set");
    sup.grant_set(&b.sets[0], Some("c1")).expect("grant_set");
    let mut deferred_t: Vec<Vec<u8>> = Vec::new();
    // Each genuine pending record with where it was set up.
    let mut genuine: Vec<(&str, String, Vec<u8>)> = Vec::new();
    for r in ["r0", "r1"] {
        for p in store.pending(&ns, r).expect("pending") {
            deferred_t.push(p.record.clone());
            genuine.push((r, p.call_id, p.record));
        }
    }
    let genuine_grants = store.grants(&ns).expect("grants");
    let mut grant_t: Vec<Vec<u8>> = genuine_grants.iter().map(|g| g.2.clone()).collect();
    grant_t.push(
        br#"{"v":1,"source":"local","rule":{"tool":"bash","spec":"npm test:*"},"over":null}"#
            .to_vec(),
    );
    grant_t.push(
        br#"{"v":1,"source":"team","rule":{"tool":"edit","spec":null},"over":["team","edit"]}"#
            .to_vec(),
    );
    let probe = Call::new("read", "{}");
    for turn in 2..MAX_OPS as u64 {
        if inp.done() {
            break;
        }
        match inp.byte() % 10 {
            0 | 1 => {
                let run = RUNS[usize::from(inp.byte() % 4)];
                let id = IDS[usize::from(inp.byte() % 8)];
                let bytes = damaged_bytes(&mut inp, &deferred_t);
                store.defer(&ns, run, id, &bytes).expect("defer");
                if sealed {
                    // Read alone, at the place it was written: the run's
                    // other records cannot fail the read for it.
                    let at_home = genuine
                        .iter()
                        .any(|(r, i, g)| *r == run && i == id && *g == bytes);
                    let alone = Arc::new(MemoryStore::new());
                    alone.defer(&ns, run, id, &bytes).expect("defer");
                    let read = seen_through(&alone, true).pending(&ns, run);
                    assert_eq!(
                        read.is_ok(),
                        at_home,
                        "at {run}/{id}, a record {} the seal made there: {read:?}",
                        if at_home { "that" } else { "not" }
                    );
                }
            }
            2 | 3 => {
                let x = inp.byte();
                let scope = ["", "c1", ALWAYS, "c2"][usize::from(x & 3)];
                let source = ["a", "b", "x", "local\u{1f}edit\u{1f}"][usize::from(x >> 2) & 3];
                let bytes = damaged_bytes(&mut inp, &grant_t);
                store
                    .put_grant(&ns, scope, source, &bytes)
                    .expect("put_grant");
                if sealed {
                    let at_home = genuine_grants
                        .iter()
                        .any(|(s, src, g)| s == scope && src == source && *g == bytes);
                    if !at_home {
                        assert!(
                            !readable(scope, source, &bytes, &probe, true),
                            "a grant record the seal did not make at {scope:?}/{source:?} was read"
                        );
                    }
                }
            }
            4 => {
                let run = inp.run();
                let given = inp.answers();
                damaged_release(&sup, &*store, &ns, run, &given);
            }
            5 => {
                let run = inp.run();
                let before = store.pending(&ns, run).expect("pending");
                let readable = before.iter().all(|p| sup.deferred(run, &p.call_id).is_ok());
                let h0 = store
                    .review(&ns, "reviews", false, 4096)
                    .expect("review")
                    .len();
                let got = sup.answers(run, &Desk);
                if !readable {
                    assert!(
                        matches!(got, Err(StateError::Store(StoreError::Corrupt(_)))),
                        "answers over an unreadable record: {got:?}"
                    );
                    assert_eq!(store.pending(&ns, run).expect("pending"), before);
                    let h1 = store
                        .review(&ns, "reviews", false, 4096)
                        .expect("review")
                        .len();
                    assert_eq!(h1, h0 + 1, "a failed review counted toward the bound");
                }
            }
            6 => {
                let calls = inp.batch();
                damaged_decide(&sup, &*store, &ns, turn, &calls, &probe);
            }
            7 => {
                let run = inp.run();
                for id in IDS {
                    if let Ok(Some(v)) = sup.deferred(run, id) {
                        assert_eq!(v.decision, Decision::Ask, "deferred({run}, {id}): {v:?}");
                    }
                }
                let _ = sup.runs();
            }
            8 => {
                let scope = SCOPES[usize::from(inp.byte() % 4)];
                let _ = sup.grants_for(scope);
                let _ = sup.grants();
                let _ = sup.policy_of("local");
                let c = inp.call();
                let v = sup.decide_nested(turn, &c, "p");
                if sup.grants().is_err() || sup.would(&probe).is_err() {
                    assert_eq!(v.decision, Decision::Deny, "nested over unreadable grants");
                }
                if inp.byte() & 1 == 1 {
                    let _ = sup.grant("local", &RuleDecl::new("bash", Some("ls:*")));
                }
            }
            _ => {
                let x = inp.byte();
                let before = store.grants(&ns).expect("grants");
                let scope = SCOPES[usize::from(x & 3)];
                let got = match (x >> 2) & 7 {
                    0 => sup.revoke(SOURCES[usize::from(x >> 4) % SOURCES.len()], scope),
                    1 => sup.revoke_scope(scope),
                    2 => sup.forget(RUNS[usize::from(x >> 4) % 3]),
                    3 | 4 => {
                        let gone = sup.discard_unreadable().expect("discard_unreadable");
                        let after = store.grants(&ns).expect("grants");
                        // Exactly the unreadable records went, and what is
                        // left reads: decisions recover.
                        let want: Vec<_> = before
                            .iter()
                            .filter(|(s, src, r)| readable(s, src, r, &probe, sealed))
                            .cloned()
                            .collect();
                        assert_eq!(after, want, "discard_unreadable kept {gone:?}");
                        assert_eq!(gone.len(), before.len() - want.len());
                        sup.would(&probe).expect("decisions after a repair");
                        Ok(0)
                    }
                    _ => sup.reset_reviews().map(|()| 0),
                };
                if matches!((x >> 2) & 7, 0 | 1) && got.is_err() {
                    assert_eq!(
                        store.grants(&ns).expect("grants"),
                        before,
                        "a failed revocation removed grant sets: {got:?}"
                    );
                }
            }
        }
    }
}

/// Whether a supervisor can read the grant record `record` of `source`
/// under `scope`: one on a store holding it alone decides.
fn readable(scope: &str, source: &str, record: &[u8], probe: &Call, sealed: bool) -> bool {
    let store = Arc::new(MemoryStore::new());
    // The namespace of the damage modes: a seal covers it.
    let ns = ns();
    store
        .put_grant(&ns, scope, source, record)
        .expect("put_grant");
    Supervisor::new(Arc::clone(&base().engine), seen_through(&store, sealed), ns)
        .would(probe)
        .is_ok()
}

/// A batch over a damaged store: every call denied when a grant record
/// cannot be read; otherwise the decisions of a fresh session with the
/// sets the supervisor reads back (unless the journal holds a grant).
fn damaged_decide(
    sup: &Supervisor,
    store: &MemoryStore,
    ns: &Namespace,
    turn: u64,
    calls: &[Call],
    probe: &Call,
) {
    let sets = sup.grants();
    let readable = sets.is_ok() && sup.would(probe).is_ok();
    let journal = store
        .grants(ns)
        .expect("grants")
        .iter()
        .any(|(s, _, _)| s == ALWAYS);
    let got = sup.decide_batch(turn, calls);
    assert_eq!(got.len(), calls.len(), "one verdict per call");
    match sets {
        _ if !readable => {
            for v in &got {
                assert_eq!(v.decision, Decision::Deny, "unreadable grants: {v:?}");
                assert!(!v.held);
            }
        }
        Ok(sets) if !journal => {
            let s = session_with(sets.iter().map(|(sc, set)| (sc.as_deref(), set)));
            let want = expect_batch(&s, false, calls);
            for ((c, v), (d, held)) in calls.iter().zip(&got).zip(&want) {
                assert_eq!((v.decision, v.held), (*d, *held), "{c:?}: {v:?}");
            }
        }
        _ => {}
    }
}

/// A release over a damaged store: an unreadable pending record is a
/// `Corrupt` error that takes nothing; a readable run is released as the
/// model of its records says.
fn damaged_release(
    sup: &Supervisor,
    store: &MemoryStore,
    ns: &Namespace,
    run: &str,
    given: &[Answer],
) {
    let before = store.pending(ns, run).expect("pending");
    let mut pend = Vec::new();
    let mut readable = true;
    for p in &before {
        match sup.deferred(run, &p.call_id) {
            Ok(Some(v)) => pend.push(Pend {
                id: p.call_id.clone(),
                tool: String::new(),
                held: v.held,
            }),
            Ok(None) => panic!("deferred({run}, {}) lost a pending call", p.call_id),
            Err(_) => readable = false,
        }
    }
    let got = sup.release(run, given);
    if !readable {
        assert!(
            matches!(got, Err(StateError::Store(StoreError::Corrupt(_)))),
            "release over an unreadable record: {got:?}"
        );
        assert_eq!(store.pending(ns, run).expect("pending"), before);
        return;
    }
    let (want, missing) = expect_release(&pend, given);
    match got {
        Ok(got) => {
            assert!(missing.is_empty(), "released with {missing:?} unanswered");
            check_answers(&got, &want, given);
            assert!(store.pending(ns, run).expect("pending").is_empty());
        }
        Err(StateError::Unanswered {
            missing: m,
            answers,
        }) => {
            let ids: Vec<String> = m.iter().map(|x| x.call_id.clone()).collect();
            assert_eq!(ids, missing, "the unanswered calls");
            check_answers(&answers, &want, given);
            assert_eq!(store.pending(ns, run).expect("pending"), before);
        }
        Err(e) => panic!("release({run}) over readable records: {e}"),
    }
}

/// Whether `scope` is one the state layer refuses (a control character in
/// it), checking that `got` is that refusal.
fn refused_scope<T: std::fmt::Debug>(scope: Option<&str>, got: &Result<T, StateError>) -> bool {
    let bad = scope.is_some_and(|s| s.chars().any(char::is_control));
    if bad {
        assert!(matches!(got, Err(StateError::BadScope(_))), "{got:?}");
    }
    bad
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let inp = Bytes(&rest[..rest.len().min(1024)]);
    if mode & 1 == 0 {
        program(inp, mode & 2 != 0);
    } else {
        damaged(inp, mode & 4 != 0);
    }
});
