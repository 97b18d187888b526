//! [`Supervisor`]: the state layer over an immutable [`Engine`]. It
//! decides batches and remembers what they deferred, answers them from a
//! person's answers or a [`Reviewer`]'s, turns "always allow" into rules,
//! keeps grant sets, folds host hooks into decisions and reports every
//! verdict to its observers. Everything that must outlive one request
//! lives in a [`Store`], so replicas sharing a store share it.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};

use crate::call::Call;
use crate::decision::{Decision, RuleRef, Verdict};
use crate::diag::Diagnostics;
use crate::engine::{hold, Engine, Grant, Session};
use crate::policy::{Policy, RuleDecl, RuleLists, RuleSet, Source};
use crate::registry::Registry;
use crate::runtime::Basis;

use super::record::{self, AlwaysRec, DeclRec, Deferred, SetRec};
use super::review::{DenialBound, Reviewer};
use super::store::{Namespace, Store, StoreError};

/// The grant scope the "always allow" journal is kept under: a name no
/// host scope can take, since scopes with control characters are refused.
const ALWAYS: &str = "\u{1}always";

/// The reviewer history key: the bound counts across every run, until
/// [`Supervisor::reset_reviews`].
const REVIEWS: &str = "reviews";

/// What a refusal tells the model beside the reviewer's reason.
const DO_NOT_PURSUE: &str =
    "Do not pursue the same outcome through a workaround, indirect execution or policy circumvention.";

/// What a held call reads when the turn was stopped before it ran.
pub const HELD_STOPPED: &str =
    "The call was held for an approval and the turn was stopped; the call did not run.";

/// How a pending call is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// The call runs, and the calls held behind it with it.
    Approve,
    /// The call does not run; the calls held behind it still do, since the
    /// policy allowed them and the model reads the one refusal.
    Refuse,
    /// The call does not run and the turn ends: the held calls are refused
    /// with text that says so.
    RefuseAndEnd,
}

impl Reply {
    /// `approve`, `refuse` or `refuse_and_end`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reply::Approve => "approve",
            Reply::Refuse => "refuse",
            Reply::RefuseAndEnd => "refuse_and_end",
        }
    }

    /// Reads [`Reply::as_str`]'s words.
    pub fn parse(s: &str) -> Option<Reply> {
        match s {
            "approve" => Some(Reply::Approve),
            "refuse" => Some(Reply::Refuse),
            "refuse_and_end" => Some(Reply::RefuseAndEnd),
            _ => None,
        }
    }
}

/// The answer to one pending call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The call answered.
    pub call_id: String,
    /// How.
    pub reply: Reply,
    /// The text the model reads: after an approved call's result, or as a
    /// refused call's output.
    pub note: String,
    /// Why, for the record: the verdict's reason for an answer the state
    /// layer built, empty for one given as is.
    pub reason: String,
    /// Who answered: `human` for an answer given by hand, `agent` or
    /// `policy` for a reviewer's, `policy` for the ones the state layer
    /// builds on its own.
    pub by: &'static str,
}

impl Answer {
    fn by_hand(call_id: impl Into<String>, reply: Reply) -> Answer {
        Answer {
            call_id: call_id.into(),
            reply,
            note: String::new(),
            reason: String::new(),
            by: "human",
        }
    }

    /// Approve `call_id`.
    pub fn approve(call_id: impl Into<String>) -> Answer {
        Answer::by_hand(call_id, Reply::Approve)
    }

    /// Refuse `call_id`, letting the calls held behind it run.
    pub fn refuse(call_id: impl Into<String>) -> Answer {
        Answer::by_hand(call_id, Reply::Refuse)
    }

    /// Refuse `call_id` and end the turn.
    pub fn refuse_and_end(call_id: impl Into<String>) -> Answer {
        Answer::by_hand(call_id, Reply::RefuseAndEnd)
    }

    /// The same answer with `note` for the model.
    pub fn with_note(mut self, note: impl Into<String>) -> Answer {
        self.note = note.into();
        self
    }
}

/// A pending call nobody answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The call's id.
    pub call_id: String,
    /// The call's tool.
    pub tool: String,
}

/// Why the state layer could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateError {
    /// Pending calls nobody answered. `answers` is a preview of what a
    /// release with them answered would return: nothing was forgotten and
    /// nothing reached the observers.
    Unanswered {
        /// The calls, in the model's order.
        missing: Vec<Missing>,
        /// The answers that could be built.
        answers: Vec<Answer>,
    },
    /// The reviewer refused often enough to reach the [`DenialBound`]:
    /// every refusal among `answers` ends the turn. When `missing` is not
    /// empty the release was a preview, as for [`StateError::Unanswered`].
    DenialBound {
        /// Every answer, the held calls' included.
        answers: Vec<Answer>,
        /// Pending calls nobody answered.
        missing: Vec<Missing>,
    },
    /// "Always allow" needs the policy's rules, and the supervisor was
    /// given a compiled engine alone.
    NoPolicy,
    /// A grant scope the store cannot keep.
    BadScope(String),
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |m: &[Missing]| {
            m.iter()
                .map(|c| format!("`{}` ({})", c.call_id, c.tool))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            StateError::Unanswered { missing, .. } => write!(
                f,
                "pending call has no answer: {}; answer every call the policy asked about and release again",
                names(missing)
            ),
            StateError::DenialBound { missing, .. } => {
                write!(
                    f,
                    "the reviewer refused often enough to reach the denial bound, so the turn ends; reset the reviews before the next prompt"
                )?;
                if !missing.is_empty() {
                    write!(f, "; pending call has no answer: {}", names(missing))?;
                }
                Ok(())
            }
            StateError::NoPolicy => write!(
                f,
                "\"always allow\" needs the policy's rules, and this supervisor was built from a compiled engine; build it from the policy"
            ),
            StateError::BadScope(s) => write!(
                f,
                "the grant scope `{}` holds a control character; name scopes with printable text",
                s.escape_debug()
            ),
            StateError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StateError {}

impl From<StoreError> for StateError {
    fn from(e: StoreError) -> StateError {
        StateError::Store(e)
    }
}

/// What a host hook decided about a call, folded into the policy's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookDecision {
    /// The decision.
    pub decision: Decision,
    /// The text the model reads when this decision is the strictest.
    pub reason: String,
    /// Who decided, for the record (`hook` unless the host says).
    pub by: &'static str,
    /// The rule that decided, when the hook has one to name (a guard's
    /// `guards/<rule>`); `None` names no rule.
    pub rule: Option<RuleRef>,
}

/// A product's own before-tool-call hook, folded into the policy's
/// decision before the batch hold. It must decide a call the same way
/// each time: it is also called for a call's siblings.
pub trait Hook: Send + Sync {
    /// The hook's decision, or `None` to leave the call to the policy.
    fn before(&self, call: &Call) -> Option<HookDecision>;
}

impl<F: Fn(&Call) -> Option<HookDecision> + Send + Sync> Hook for F {
    fn before(&self, call: &Call) -> Option<HookDecision> {
        self(call)
    }
}

/// What an [`Event`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A call decided (a nested one included).
    Decision,
    /// A call the policy allowed, held because another call of its batch
    /// asks.
    Hold,
    /// A held call released (allow) or refused because the turn stopped
    /// (deny).
    Release,
    /// A grant or grant set made (allow) or refused (deny).
    Grant,
    /// A grant set revoked.
    Revoke,
    /// A reviewer's answer.
    Review,
}

/// One verdict an observer sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// What it reports.
    pub kind: EventKind,
    /// The verdict.
    pub verdict: Verdict,
    /// The call's tool (empty for grants and revocations).
    pub tool: String,
    /// The turn the call was decided in (0 when unknown).
    pub turn: u64,
    /// The call that made this call, for a nested call; empty otherwise.
    pub parent: String,
}

impl Event {
    /// The `agentpolicy:verdict` record of the event (see
    /// [`record`](super::record())).
    pub fn record(&self) -> (&'static str, String) {
        record::record(&self.verdict, &self.tool, self.turn)
    }
}

/// Sees every verdict, in order.
pub trait Observer: Send + Sync {
    /// Called once per event.
    fn observe(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync> Observer for F {
    fn observe(&self, event: &Event) {
        self(event)
    }
}

/// What "always allow" did: whether the rule was granted, and the text
/// that says so or why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantOutcome {
    /// Whether the rule is in force.
    pub granted: bool,
    /// `granted G`, `granted G over R`, or `not granted G: why`.
    pub reason: String,
}

/// The policy in force before grants, and its engine.
struct Base {
    generation: u64,
    policy: Option<Policy>,
    engine: Arc<Engine<'static>>,
}

/// The policy with the store's grants applied: what decisions use, rebuilt
/// only when the store's grants or the base change.
struct Built {
    generation: u64,
    key: Vec<(String, String, Vec<u8>)>,
    policy: Option<Policy>,
    session: Session<'static, 'static>,
}

/// The state layer: an immutable engine, and beside it what a conversation
/// changes, kept in a [`Store`].
///
/// ```
/// use std::sync::Arc;
/// use toolgate::state::{Answer, MemoryStore, Namespace, Supervisor};
/// use toolgate::{Call, Decision, Policy};
///
/// let policy = Policy::from_json(r#"{"default": "deny", "allow": "read", "ask": "bash"}"#)?;
/// let sup = Supervisor::from_policy(
///     policy,
///     toolgate::builtins::registry(),
///     Arc::new(MemoryStore::new()),
///     Namespace::new("default", "demo"),
/// )?;
/// let mut read = Call::new("read", "{}");
/// (read.run_id, read.call_id) = ("run-1".into(), "c1".into());
/// let mut bash = Call::new("bash", "{}");
/// (bash.run_id, bash.call_id) = ("run-1".into(), "c2".into());
/// let v = sup.decide_batch(1, &[read, bash]);
/// assert!(v[0].held && v[1].decision == Decision::Ask);
/// let answers = sup.release("run-1", &[Answer::approve("c2")])?;
/// assert_eq!(answers.len(), 2); // c1 released with it, in the model's order
/// assert!(sup.runs()?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Supervisor {
    store: Arc<dyn Store>,
    ns: Namespace,
    registry: Registry,
    base: RwLock<Base>,
    built: Mutex<Option<Arc<Built>>>,
    hooks: Vec<Arc<dyn Hook>>,
    observers: Vec<Arc<dyn Observer>>,
    /// Held while events reach the observers, so every observer sees every
    /// event in one order, whichever thread made it.
    observing: Mutex<()>,
    bound: DenialBound,
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("ns", &self.ns)
            .field("hooks", &self.hooks.len())
            .field("observers", &self.observers.len())
            .field("bound", &self.bound)
            .finish()
    }
}

impl Supervisor {
    /// A supervisor over a compiled engine. It decides, defers, releases,
    /// reviews and keeps grant sets; "always allow" and
    /// [`Supervisor::policy_of`] need the policy and answer
    /// [`StateError::NoPolicy`].
    pub fn new(engine: Arc<Engine<'static>>, store: Arc<dyn Store>, ns: Namespace) -> Supervisor {
        Supervisor {
            store,
            ns,
            registry: crate::builtins::registry(),
            base: RwLock::new(Base {
                generation: 0,
                policy: None,
                engine,
            }),
            built: Mutex::new(None),
            hooks: Vec::new(),
            observers: Vec::new(),
            observing: Mutex::new(()),
            bound: DenialBound::default(),
        }
    }

    /// A supervisor over `policy`, built with `registry`'s kinds.
    ///
    /// # Errors
    ///
    /// What building the policy found.
    pub fn from_policy(
        policy: Policy,
        registry: Registry,
        store: Arc<dyn Store>,
        ns: Namespace,
    ) -> Result<Supervisor, Diagnostics> {
        let engine = Arc::new(Engine::build_with(&policy, &registry)?);
        let mut s = Supervisor::new(engine, store, ns);
        s.registry = registry;
        if let Ok(mut b) = s.base.write() {
            b.policy = Some(policy);
        }
        Ok(s)
    }

    /// Adds a host hook; hooks are folded strictest first.
    pub fn with_hook(mut self, hook: impl Hook + 'static) -> Supervisor {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Adds an observer, called after the ones added before it.
    pub fn with_observer(mut self, observer: impl Observer + 'static) -> Supervisor {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Sets the denial bound (default: three in a row, ten in fifty).
    pub fn with_denial_bound(mut self, bound: DenialBound) -> Supervisor {
        self.bound = bound;
        self
    }

    /// The namespace the supervisor keeps its state under.
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }

    /// The engine of the base policy (without grants).
    pub fn engine(&self) -> Arc<Engine<'static>> {
        match self.base.read() {
            Ok(b) => Arc::clone(&b.engine),
            Err(p) => Arc::clone(&p.into_inner().engine),
        }
    }

    fn emit(&self, events: Vec<Event>) {
        if self.observers.is_empty() || events.is_empty() {
            return;
        }
        let _order = self.observing.lock().unwrap_or_else(|p| p.into_inner());
        for e in &events {
            for o in &self.observers {
                o.observe(e);
            }
        }
    }

    /// The policy in force with the store's grants: one read of the store,
    /// and a rebuild only when what it holds changed.
    fn current(&self) -> Result<Arc<Built>, StoreError> {
        let key = self.store.grants(&self.ns)?;
        let (generation, policy, engine) = {
            let b = self.base.read().unwrap_or_else(|p| p.into_inner());
            (b.generation, b.policy.clone(), Arc::clone(&b.engine))
        };
        let mut cache = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = cache.as_ref() {
            if b.generation == generation && b.key == key {
                return Ok(Arc::clone(b));
            }
        }
        let mut always = Vec::new();
        let mut sets = Vec::new();
        for (scope, src, bytes) in &key {
            if scope == ALWAYS {
                always.push(read_always(src, bytes)?);
            } else {
                sets.push((scope.clone(), read_set(scope, src, bytes)?));
            }
        }
        let (policy, engine) = match policy {
            Some(p) if !always.is_empty() => {
                let (p, e) = self.with_journal(p, &always, engine);
                (Some(p), e)
            }
            other => (other, engine),
        };
        let mut session = Session::shared(engine);
        for (scope, set) in &sets {
            let scope = Some(scope.as_str()).filter(|s| !s.is_empty());
            session.grant_set(&set.set(), scope);
        }
        let built = Arc::new(Built {
            generation,
            key,
            policy,
            session,
        });
        *cache = Some(Arc::clone(&built));
        Ok(built)
    }

    /// `policy` with the journal applied, and its engine. A grant the
    /// policy no longer builds with (its source or matcher gone after
    /// [`Supervisor::set_policy`]) is left out rather than taking the
    /// others with it.
    fn with_journal(
        &self,
        base: Policy,
        journal: &[AlwaysRec],
        engine: Arc<Engine<'static>>,
    ) -> (Policy, Arc<Engine<'static>>) {
        let mut all = base.clone();
        journal.iter().for_each(|a| apply(&mut all, a));
        if let Ok(e) = Engine::build_with(&all, &self.registry) {
            return (all, Arc::new(e));
        }
        let (mut p, mut e) = (base, engine);
        for a in journal {
            let mut next = p.clone();
            apply(&mut next, a);
            if let Ok(built) = Engine::build_with(&next, &self.registry) {
                (p, e) = (next, Arc::new(built));
            }
        }
        (p, e)
    }

    /// The policy's verdicts with the hooks folded in, then the hold.
    fn fold(&self, session: &Session<'static, 'static>, calls: &[Call]) -> Vec<Verdict> {
        if self.hooks.is_empty() {
            return session.decide_batch(calls);
        }
        let results = calls
            .iter()
            .map(|c| {
                let unreadable = matches!(session.decide_result(c).basis, Basis::Unevaluable(_));
                let v = self.fold_one(session.would(c), c);
                let asks = v.decision == Decision::Ask || unreadable;
                (v, asks)
            })
            .collect();
        hold(results)
    }

    /// One call's verdict with the hooks folded in, strictest first: the
    /// strictest hook decision stricter than the policy's replaces its
    /// decision, reason, decider and rule (the hook's, or none).
    fn fold_one(&self, mut v: Verdict, call: &Call) -> Verdict {
        let strictest = self
            .hooks
            .iter()
            .filter_map(|h| h.before(call))
            .reduce(|a, b| if b.decision > a.decision { b } else { a });
        if let Some(h) = strictest {
            if h.decision > v.decision {
                v.decision = h.decision;
                v.reason = h.reason;
                v.by = h.by;
                v.rule = h.rule;
                // What the rule matched no longer says why the call is
                // decided so.
                v.subject.clear();
                v.confined.clear();
            }
        }
        v
    }

    /// Decides the calls of one model turn. Every call deferred, asked
    /// about or held, with a run and a call id is remembered under its run
    /// for [`Supervisor::release`] and [`Supervisor::answers`]; every
    /// verdict reaches the observers. When the store cannot be reached
    /// every call of the batch is denied, saying so: a call never runs
    /// without its pending record.
    pub fn decide_batch(&self, turn: u64, calls: &[Call]) -> Vec<Verdict> {
        let verdicts = match self.current() {
            Ok(built) => {
                let vs = self.fold(&built.session, calls);
                match self.remember(turn, calls, &vs) {
                    Ok(()) => vs,
                    Err(e) => denied(calls, &e),
                }
            }
            Err(e) => denied(calls, &e),
        };
        self.emit(
            calls
                .iter()
                .zip(&verdicts)
                .map(|(c, v)| Event {
                    kind: if v.held {
                        EventKind::Hold
                    } else {
                        EventKind::Decision
                    },
                    verdict: v.clone(),
                    tool: c.tool.clone(),
                    turn,
                    parent: String::new(),
                })
                .collect(),
        );
        verdicts
    }

    fn remember(&self, turn: u64, calls: &[Call], verdicts: &[Verdict]) -> Result<(), StoreError> {
        let mut written: Vec<(&str, &str)> = Vec::new();
        for (c, v) in calls.iter().zip(verdicts) {
            if v.decision != Decision::Ask || c.run_id.is_empty() || c.call_id.is_empty() {
                continue;
            }
            let rec = Deferred::new(c, v, turn).to_bytes();
            if let Err(e) = self.store.defer(&self.ns, &c.run_id, &c.call_id, &rec) {
                // Half a batch remembered is a question nobody can answer
                // whole: take back what was written, as far as the store
                // lets us; the batch is denied either way.
                for (run, id) in &written {
                    let _ = self.store.take(&self.ns, run, &[id]);
                }
                return Err(e);
            }
            written.push((&c.run_id, &c.call_id));
        }
        Ok(())
    }

    /// Decides a nested call, one a tool made while running (`parent` is
    /// the call that made it): no hold, and nothing remembered, since the
    /// tool settles it inline. It is reported like any decision, with its
    /// parent.
    pub fn decide_nested(&self, turn: u64, call: &Call, parent: &str) -> Verdict {
        let v = match self.current() {
            Ok(built) => self.fold_one(built.session.would(call), call),
            Err(e) => denied(std::slice::from_ref(call), &e)
                .pop()
                .unwrap_or_else(|| Verdict::new(Decision::Deny, e.to_string())),
        };
        self.emit(vec![Event {
            kind: EventKind::Decision,
            verdict: v.clone(),
            tool: call.tool.clone(),
            turn,
            parent: parent.to_string(),
        }]);
        v
    }

    /// The verdict a call would get on its own: policy, grants and hooks,
    /// no hold, nothing remembered, nothing observed.
    ///
    /// # Errors
    ///
    /// The store failed to give the grants.
    pub fn would(&self, call: &Call) -> Result<Verdict, StateError> {
        let built = self.current()?;
        Ok(self.fold_one(built.session.would(call), call))
    }

    /// The verdict that deferred `call` in `run`, asked or held; `None`
    /// for a call not pending there (never deferred, or answered).
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn deferred(&self, run: &str, call: &str) -> Result<Option<Verdict>, StateError> {
        for p in self.store.pending(&self.ns, run)? {
            if p.call_id == call {
                return Ok(Some(Deferred::from_bytes(&p.record)?.verdict(run, call)));
            }
        }
        Ok(None)
    }

    /// The runs holding pending calls, sorted.
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn runs(&self) -> Result<Vec<String>, StateError> {
        Ok(self.store.runs(&self.ns)?)
    }

    /// Drops what `run` left pending; how many calls.
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn forget(&self, run: &str) -> Result<usize, StateError> {
        Ok(self.store.forget(&self.ns, run)?)
    }

    /// Answers what `run` left pending from `given`, the answers to the
    /// calls the policy asked about, and returns every answer in the
    /// model's order, then the answers for calls not pending. A held call
    /// is approved by policy (`released: …`) unless an answer ends the
    /// turn ([`Reply::RefuseAndEnd`]), when it is refused with text that
    /// says so. The calls answered are taken off the run once: when two
    /// releases race, the answers built for calls the other one took are
    /// left out.
    ///
    /// # Errors
    ///
    /// [`StateError::Unanswered`] naming every asked call `given` does not
    /// answer (a preview: nothing forgotten, nothing observed), or the
    /// store's error.
    pub fn release(&self, run: &str, given: &[Answer]) -> Result<Vec<Answer>, StateError> {
        let pending = self.store.pending(&self.ns, run)?;
        let mut calls = Vec::with_capacity(pending.len());
        for p in pending {
            let d = Deferred::from_bytes(&p.record)?;
            calls.push((p.call_id, d));
        }
        let ends = given.iter().any(|a| a.reply == Reply::RefuseAndEnd);
        let mut out = Vec::new();
        let mut built: Vec<(usize, Verdict, String, u64)> = Vec::new();
        let mut missing = Vec::new();
        for (id, d) in &calls {
            if let Some(a) = given.iter().find(|a| &a.call_id == id) {
                out.push(a.clone());
            } else if d.verdict.held {
                let allowed = d.verdict.reason.strip_prefix("held for approval: ");
                let allowed = allowed.unwrap_or(&d.verdict.reason);
                let mut v = d.verdict(run, id);
                let answer = if ends {
                    v.decision = Decision::Deny;
                    v.reason = "not released: the turn was stopped".to_string();
                    Answer {
                        call_id: id.clone(),
                        reply: Reply::Refuse,
                        note: HELD_STOPPED.to_string(),
                        reason: v.reason.clone(),
                        by: "policy",
                    }
                } else {
                    v.decision = Decision::Allow;
                    v.reason = format!("released: {allowed}");
                    Answer {
                        call_id: id.clone(),
                        reply: Reply::Approve,
                        note: String::new(),
                        reason: v.reason.clone(),
                        by: "policy",
                    }
                };
                v.by = "policy";
                built.push((out.len(), v, d.tool.clone(), d.turn));
                out.push(answer);
            } else {
                missing.push(Missing {
                    call_id: id.clone(),
                    tool: d.tool.clone(),
                });
            }
        }
        let pending_ids: HashSet<&str> = calls.iter().map(|(id, _)| id.as_str()).collect();
        out.extend(
            given
                .iter()
                .filter(|a| !pending_ids.contains(a.call_id.as_str()))
                .cloned(),
        );
        if !missing.is_empty() {
            return Err(StateError::Unanswered {
                missing,
                answers: out,
            });
        }
        let ids: Vec<&str> = calls.iter().map(|(id, _)| id.as_str()).collect();
        if ids.is_empty() {
            return Ok(out);
        }
        let taken: HashSet<String> = self
            .store
            .take(&self.ns, run, &ids)?
            .into_iter()
            .map(|p| p.call_id)
            .collect();
        // A held call another release took is that release's to answer.
        let lost: HashSet<usize> = built
            .iter()
            .filter(|(_, v, _, _)| !taken.contains(&v.call_id))
            .map(|(i, _, _, _)| *i)
            .collect();
        let events = built
            .into_iter()
            .filter(|(i, _, _, _)| !lost.contains(i))
            .map(|(_, verdict, tool, turn)| Event {
                kind: EventKind::Release,
                verdict,
                tool,
                turn,
                parent: String::new(),
            })
            .collect();
        let out = out
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !lost.contains(i))
            .map(|(_, a)| a)
            .collect();
        self.emit(events);
        Ok(out)
    }

    /// Answers what `run` left pending through `reviewer`: each call the
    /// policy asked about is reviewed with the verdict that deferred it;
    /// an approval runs it (with the reviewer's note), anything else
    /// refuses it with text telling the model not to work around the
    /// refusal. Every review counts toward the [`DenialBound`]; once it is
    /// reached, every refusal among the answers ends the turn. Completes
    /// with [`Supervisor::release`], so the held calls are answered too.
    ///
    /// # Errors
    ///
    /// [`StateError::DenialBound`] with the answers when the bound was
    /// reached, [`StateError::Unanswered`] as for `release`, or the
    /// store's error.
    pub fn answers(&self, run: &str, reviewer: &dyn Reviewer) -> Result<Vec<Answer>, StateError> {
        let mut given = Vec::new();
        let mut events = Vec::new();
        let mut reached = false;
        // Every record read before the first review: a record that cannot
        // be read fails the call, and must not leave reviews counted
        // toward the bound behind it.
        let mut pending = Vec::new();
        for p in self.store.pending(&self.ns, run)? {
            let d = Deferred::from_bytes(&p.record)?;
            pending.push((p, d));
        }
        for (p, d) in pending {
            if d.verdict.held {
                continue;
            }
            let call = d.call(run, &p.call_id);
            let asked = d.verdict(run, &p.call_id);
            let (approve, reason, note, by) = match reviewer.review(&call, &asked) {
                Ok(r) => (r.approve, r.reason, r.note, r.by),
                Err(e) => (
                    false,
                    format!("the review failed: {e}"),
                    String::new(),
                    "policy",
                ),
            };
            let history = self
                .store
                .review(&self.ns, REVIEWS, !approve, self.bound.reads())?;
            reached |= !approve && self.bound.reached(&history);
            let mut v = asked.clone();
            v.by = by;
            v.held = false;
            let answer = if approve {
                v.decision = Decision::Allow;
                v.reason = if reason.is_empty() {
                    format!("approved by {by}")
                } else {
                    reason.clone()
                };
                Answer {
                    call_id: p.call_id.clone(),
                    reply: Reply::Approve,
                    note,
                    reason: v.reason.clone(),
                    by,
                }
            } else {
                v.decision = Decision::Deny;
                v.reason = reason.clone();
                let shown = if by == "policy" { "policy" } else { by };
                Answer {
                    call_id: p.call_id.clone(),
                    reply: Reply::Refuse,
                    note: format!("Denied by {shown}: {reason}. {DO_NOT_PURSUE}"),
                    reason,
                    by,
                }
            };
            events.push(Event {
                kind: EventKind::Review,
                verdict: v,
                tool: d.tool.clone(),
                turn: d.turn,
                parent: String::new(),
            });
            given.push(answer);
        }
        if reached {
            for a in &mut given {
                if a.reply == Reply::Refuse {
                    a.reply = Reply::RefuseAndEnd;
                }
            }
        }
        self.emit(events);
        match self.release(run, &given) {
            Ok(answers) if reached => Err(StateError::DenialBound {
                answers,
                missing: Vec::new(),
            }),
            Ok(answers) => Ok(answers),
            Err(StateError::Unanswered { missing, answers }) if reached => {
                Err(StateError::DenialBound { answers, missing })
            }
            Err(e) => Err(e),
        }
    }

    /// Forgets the refusals the denial bound counts: call it before the
    /// prompt that starts a new turn.
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn reset_reviews(&self) -> Result<(), StateError> {
        Ok(self.store.reset_reviews(&self.ns, REVIEWS)?)
    }

    /// "Always allow" `rule` under `source`, as an approval prompt the
    /// default raised offers it: an allow rule appended to the source's,
    /// kept in the store so every replica decides with it. It never beats
    /// a deny and never outranks an ask rule (use
    /// [`Supervisor::grant_over`] to answer a prompt an ask rule raised).
    ///
    /// # Errors
    ///
    /// [`StateError::NoPolicy`], or the store's error.
    pub fn grant(&self, source: &str, rule: &RuleDecl) -> Result<GrantOutcome, StateError> {
        self.grant_rec(source, rule, None)
    }

    /// "Always allow" `rule` under `source`, answering the prompt behind
    /// `verdict`. When an ask rule raised it, the grant also keeps that
    /// rule from asking again: a grant with a specifier writes the
    /// carve-out `tool(!spec)` beside it, under the grant's own source; a
    /// bare grant removes it. It is refused (and says why, so a front
    /// offers a one-time approval instead) when the verdict is a deny, when
    /// the ask rule's source outranks the grant's, or when the ask rule is
    /// a grant set's rather than the policy's.
    ///
    /// # Errors
    ///
    /// [`StateError::NoPolicy`], or the store's error.
    pub fn grant_over(
        &self,
        verdict: &Verdict,
        source: &str,
        rule: &RuleDecl,
    ) -> Result<GrantOutcome, StateError> {
        let text = rule.text();
        let refuse = |why: String| -> Result<GrantOutcome, StateError> {
            let out = GrantOutcome {
                granted: false,
                reason: format!("not granted {text}: {why}"),
            };
            self.emit_grant(source, &text, &out);
            Ok(out)
        };
        if verdict.decision == Decision::Deny {
            let by = match &verdict.rule {
                Some(r) => r.text.clone(),
                None => "default".to_string(),
            };
            return refuse(format!("denied by {by}: a grant never beats a deny"));
        }
        let over = match (&verdict.rule, verdict.decision, verdict.held) {
            (Some(r), Decision::Ask, false) => r,
            _ => return self.grant_rec(source, rule, None),
        };
        let built = self.current()?;
        let policy = built.policy.as_ref().ok_or(StateError::NoPolicy)?;
        let Some(ask_rank) = rank_of(policy, &over.source) else {
            return refuse(format!(
                "{} is a grant set's rule, not the policy's; approve the call once instead",
                over.text
            ));
        };
        let Some(rank) = rank_of(policy, source) else {
            return refuse(unknown_source(source));
        };
        if rank < ask_rank {
            return refuse(if over.source.is_empty() {
                format!("{} outranks the grant", over.text)
            } else {
                format!("{} from {} outranks the grant", over.text, over.source)
            });
        }
        self.grant_rec(source, rule, Some((over.source.clone(), over.text.clone())))
    }

    fn grant_rec(
        &self,
        source: &str,
        rule: &RuleDecl,
        over: Option<(String, String)>,
    ) -> Result<GrantOutcome, StateError> {
        let text = rule.text();
        let built = self.current()?;
        let policy = built.policy.as_ref().ok_or(StateError::NoPolicy)?;
        let why = if rule.carve_out().is_some() {
            Some(format!("cannot grant a carve-out: {text}"))
        } else if rule.is_glob() {
            Some(format!(
                "a tool-name glob is not honoured in the allow list: {text}"
            ))
        } else if rank_of(policy, source).is_none() {
            Some(unknown_source(source))
        } else {
            None
        };
        let rec = AlwaysRec {
            v: 1,
            source: source.to_string(),
            rule: DeclRec::of(rule),
            over: over.clone(),
        };
        let why = why.or_else(|| {
            let mut next = policy.clone();
            apply(&mut next, &rec);
            Engine::build_with(&next, &self.registry)
                .err()
                .map(|d| d.first().message.clone())
        });
        let out = match why {
            Some(why) => GrantOutcome {
                granted: false,
                reason: format!("not granted {text}: {why}"),
            },
            None => {
                self.store
                    .put_grant(&self.ns, ALWAYS, &rec.key(), &rec.to_bytes())?;
                GrantOutcome {
                    granted: true,
                    reason: match &over {
                        Some((_, r)) => format!("granted {text} over {r}"),
                        None => format!("granted {text}"),
                    },
                }
            }
        };
        self.emit_grant(source, &text, &out);
        Ok(out)
    }

    fn emit_grant(&self, source: &str, text: &str, out: &GrantOutcome) {
        let mut v = Verdict::new(
            if out.granted {
                Decision::Allow
            } else {
                Decision::Deny
            },
            out.reason.clone(),
        );
        v.rule = Some(RuleRef {
            text: text.to_string(),
            source: source.to_string(),
            ..RuleRef::default()
        });
        self.emit(vec![Event {
            kind: EventKind::Grant,
            verdict: v,
            tool: String::new(),
            turn: 0,
            parent: String::new(),
        }]);
    }

    /// The rules of one source as they are in force, grants, carve-outs
    /// and removals applied: what a product writes back into that source's
    /// settings. `""` is the host's own rules. `None` for a source the
    /// policy was not merged from.
    ///
    /// # Errors
    ///
    /// [`StateError::NoPolicy`], or the store's error.
    pub fn policy_of(&self, source: &str) -> Result<Option<RuleSet>, StateError> {
        let built = self.current()?;
        let policy = built.policy.as_ref().ok_or(StateError::NoPolicy)?;
        if source.is_empty() {
            return Ok(Some(RuleSet {
                lists: policy.host.clone(),
                ..RuleSet::default()
            }));
        }
        Ok(policy
            .sources
            .iter()
            .find(|s| s.source.name == source)
            .cloned())
    }

    /// Replaces the policy. The grants kept in the store, "always allow"
    /// and grant sets alike, stay and are applied to the new policy (a
    /// rule it no longer builds with is left out); pending calls and the
    /// review history are untouched, and a pending call is answered under
    /// the verdict that deferred it.
    ///
    /// # Errors
    ///
    /// What building the policy found; the old policy stays in force.
    pub fn set_policy(&self, policy: Policy) -> Result<(), Diagnostics> {
        let engine = Arc::new(Engine::build_with(&policy, &self.registry)?);
        let mut b = self.base.write().unwrap_or_else(|p| p.into_inner());
        b.generation = b.generation.wrapping_add(1);
        b.policy = Some(policy);
        b.engine = engine;
        Ok(())
    }

    /// Replaces the compiled engine (for a supervisor built from one): as
    /// [`Supervisor::set_policy`], without the rules "always allow" needs.
    pub fn set_engine(&self, engine: Arc<Engine<'static>>) {
        let mut b = self.base.write().unwrap_or_else(|p| p.into_inner());
        b.generation = b.generation.wrapping_add(1);
        b.policy = None;
        b.engine = engine;
    }

    /// Activates a grant set under its source and `scope` (`None`: every
    /// call), checked as [`Session::grant_set`] checks one, and keeps it in
    /// the store. Every granted and refused rule reaches the observers.
    ///
    /// # Errors
    ///
    /// [`StateError::BadScope`], or the store's error.
    pub fn grant_set(&self, set: &RuleSet, scope: Option<&str>) -> Result<Grant, StateError> {
        let scope = checked_scope(scope)?;
        let built = self.current()?;
        let mut session = built.session.clone();
        let grant = session.grant_set(set, Some(scope).filter(|s| !s.is_empty()));
        self.store.put_grant(
            &self.ns,
            scope,
            &set.source.name,
            &SetRec::of(set).to_bytes(),
        )?;
        let name = if set.source.name.is_empty() {
            "the product"
        } else {
            set.source.name.as_str()
        };
        let rule = |text: &str| {
            Some(RuleRef {
                text: text.to_string(),
                source: set.source.name.clone(),
                source_hash: set.source.hash.clone(),
                note: String::new(),
            })
        };
        let mut events = Vec::new();
        for g in &grant.granted {
            let mut v = Verdict::new(Decision::Allow, format!("granted {g} by {name}"));
            v.rule = rule(g);
            events.push(grant_event(v));
        }
        for r in &grant.refused {
            let mut v = Verdict::new(
                Decision::Deny,
                format!("not granted {}: {}", r.rule, r.reason),
            );
            v.rule = rule(&r.rule);
            events.push(grant_event(v));
        }
        self.emit(events);
        Ok(grant)
    }

    /// Removes the set `source` activated under `scope`; how many rules it
    /// held. "Always allow" grants are not sets and stay.
    ///
    /// # Errors
    ///
    /// [`StateError::BadScope`], or the store's error.
    pub fn revoke(&self, source: &str, scope: Option<&str>) -> Result<usize, StateError> {
        let scope = checked_scope(scope)?;
        let mut n = 0;
        for (s, src, bytes) in self.store.grants(&self.ns)? {
            if s == scope && src == source {
                n = read_set(&s, &src, &bytes)?.n_rules();
            }
        }
        if !self.store.remove_grant(&self.ns, scope, source)? {
            return Ok(0);
        }
        if n > 0 {
            let name = if source.is_empty() {
                "the product"
            } else {
                source
            };
            self.emit(vec![grant_event_kind(
                EventKind::Revoke,
                Verdict::new(
                    Decision::Deny,
                    format!("revoked the rules granted by {name}"),
                ),
            )]);
        }
        Ok(n)
    }

    /// Removes every set activated under `scope`; how many rules they held.
    ///
    /// # Errors
    ///
    /// [`StateError::BadScope`], or the store's error.
    pub fn revoke_scope(&self, scope: Option<&str>) -> Result<usize, StateError> {
        let scope = checked_scope(scope)?;
        // Every set read before the first removal: a set that cannot be
        // read fails the call with nothing removed.
        let mut sets = Vec::new();
        for (s, src, bytes) in self.store.grants(&self.ns)? {
            if s == scope {
                let n = read_set(&s, &src, &bytes)?.n_rules();
                sets.push((src, n));
            }
        }
        let mut n = 0;
        for (src, rules) in sets {
            if self.store.remove_grant(&self.ns, scope, &src)? {
                n += rules;
            }
        }
        if n > 0 {
            let reason = if scope.is_empty() {
                "revoked the rules granted without a scope".to_string()
            } else {
                format!("revoked the rules granted under {scope}")
            };
            self.emit(vec![grant_event_kind(
                EventKind::Revoke,
                Verdict::new(Decision::Deny, reason),
            )]);
        }
        Ok(n)
    }

    /// Removes every grant record this version cannot read, grant sets and
    /// "always allow" grants alike, and records kept under a name the store
    /// cannot read as a scope and a source (a shared store another writer
    /// touched; [`Discarded::source`] is then that name), and says which:
    /// the repair for a store whose damaged record denies every call
    /// (`spec/policy.md` §14.6).
    /// Each removal is an atomic compare-and-remove, so a record another
    /// replica rewrote in the meantime stays; each is reported to the
    /// observers as a revocation. Records that can be read are untouched.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolgate::state::{MemoryStore, Namespace, Store, Supervisor};
    /// let store = Arc::new(MemoryStore::new());
    /// let ns = Namespace::new("tenant", "agent");
    /// let policy = toolgate::Policy::from_json(r#"{"default": "ask", "allow": "read"}"#)?;
    /// let registry = toolgate::builtins::registry();
    /// let sup = Supervisor::from_policy(policy, registry, Arc::clone(&store) as Arc<dyn Store>, ns.clone())?;
    /// store.put_grant(&ns, "c1", "skill", b"damaged")?;
    /// assert!(sup.grants().is_err());
    /// let gone = sup.discard_unreadable()?;
    /// assert_eq!((gone[0].scope.as_deref(), gone[0].source.as_str()), (Some("c1"), "skill"));
    /// assert!(sup.grants()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The store's error; what was removed before it stays removed.
    pub fn discard_unreadable(&self) -> Result<Vec<Discarded>, StateError> {
        let mut out = Vec::new();
        // Records under names the store cannot split into a scope and a
        // source go first: until they do, the listing below fails.
        for name in self.store.discard_unnamed_grants(&self.ns)? {
            let why =
                format!("the grant record named `{name}`, a name that is not a scope and a source");
            self.emit(vec![grant_event_kind(
                EventKind::Revoke,
                Verdict::new(Decision::Deny, format!("discarded {why}")),
            )]);
            out.push(Discarded {
                scope: None,
                source: name,
                always: false,
                why,
            });
        }
        for (scope, source, bytes) in self.store.grants(&self.ns)? {
            let always = scope == ALWAYS;
            let unreadable = if always {
                read_always(&source, &bytes).err()
            } else {
                read_set(&scope, &source, &bytes).err()
            };
            let Some(why) = unreadable else { continue };
            if !self
                .store
                .remove_grant_if(&self.ns, &scope, &source, &bytes)?
            {
                continue;
            }
            let why = match why {
                StoreError::Corrupt(w) | StoreError::Unavailable(w) => w,
            };
            self.emit(vec![grant_event_kind(
                EventKind::Revoke,
                Verdict::new(Decision::Deny, format!("discarded {why}")),
            )]);
            out.push(Discarded {
                scope: (!always && !scope.is_empty()).then_some(scope),
                source: if always { String::new() } else { source },
                always,
                why,
            });
        }
        Ok(out)
    }

    /// The grant sets a call under `scope` is decided beside: the unscoped
    /// ones, then the scope's, each sorted by source, with their rules as
    /// they were given, so they can be activated again elsewhere.
    ///
    /// # Errors
    ///
    /// [`StateError::BadScope`], or the store's error.
    pub fn grants_for(&self, scope: Option<&str>) -> Result<Vec<RuleSet>, StateError> {
        let scope = checked_scope(scope)?;
        let all = self.store.grants(&self.ns)?;
        let mut out = Vec::new();
        for wanted in [""]
            .into_iter()
            .chain(Some(scope).filter(|s| !s.is_empty()))
        {
            for (s, src, bytes) in &all {
                if s == wanted {
                    out.push(read_set(s, src, bytes)?.set());
                }
            }
        }
        Ok(out)
    }

    /// Every grant set in force, with its scope (`None`: unscoped).
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn grants(&self) -> Result<Vec<(Option<String>, RuleSet)>, StateError> {
        let mut out = Vec::new();
        for (s, src, bytes) in self.store.grants(&self.ns)? {
            if s != ALWAYS {
                let set = read_set(&s, &src, &bytes)?.set();
                out.push((Some(s).filter(|s| !s.is_empty()), set));
            }
        }
        Ok(out)
    }
}

/// A grant record [`Supervisor::discard_unreadable`] removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discarded {
    /// The scope of a grant set (`None`: unscoped, or an "always allow").
    pub scope: Option<String>,
    /// The source of a grant set (empty for an "always allow"), or the
    /// name of a record whose name is not a scope and a source.
    pub source: String,
    /// Whether it was an "always allow" grant rather than a grant set.
    pub always: bool,
    /// Why it could not be read.
    pub why: String,
}

/// A grant set's record, read for the set of `source` under `scope`: an
/// unreadable one names the set and the way to remove it.
fn read_set(scope: &str, source: &str, bytes: &[u8]) -> Result<SetRec, StoreError> {
    SetRec::from_bytes(bytes).map_err(|e| {
        unreadable_grant(e, || {
            let under = if scope.is_empty() {
                "without a scope".to_string()
            } else {
                format!("under the scope `{}`", crate::json::shown(scope))
            };
            format!("the grant set of `{}` {under}", crate::json::shown(source))
        })
    })
}

/// An "always allow" grant's record: an unreadable one says how to
/// remove it (no other call does).
fn read_always(key: &str, bytes: &[u8]) -> Result<AlwaysRec, StoreError> {
    AlwaysRec::from_bytes(bytes).map_err(|e| {
        unreadable_grant(e, || {
            format!("the \"always allow\" grant `{}`", crate::json::shown(key))
        })
    })
}

/// A grant record's `Corrupt` error, naming the record (`what`) and the
/// repair.
fn unreadable_grant(e: StoreError, what: impl FnOnce() -> String) -> StoreError {
    match e {
        StoreError::Corrupt(why) => StoreError::Corrupt(format!(
            "{}, {why}: discard the unreadable grant records to remove it",
            what()
        )),
        other => other,
    }
}

fn grant_event(v: Verdict) -> Event {
    grant_event_kind(EventKind::Grant, v)
}

fn grant_event_kind(kind: EventKind, verdict: Verdict) -> Event {
    Event {
        kind,
        verdict,
        tool: String::new(),
        turn: 0,
        parent: String::new(),
    }
}

/// A scope the store can keep: none is the empty scope; a control
/// character would let a host scope collide with the journal's.
fn checked_scope(scope: Option<&str>) -> Result<&str, StateError> {
    let s = scope.unwrap_or("");
    if s.chars().any(char::is_control) {
        return Err(StateError::BadScope(s.to_string()));
    }
    Ok(s)
}

fn unknown_source(source: &str) -> String {
    format!("the source `{source}` is not one the policy was merged from; grant under one of its sources")
}

/// A source's rank: the host's own rules (`""`) rank 0, as the check
/// ranks them.
fn rank_of(policy: &Policy, source: &str) -> Option<i64> {
    if source.is_empty() {
        return Some(0);
    }
    policy
        .sources
        .iter()
        .find(|s| s.source.name == source)
        .map(|s| s.source.rank)
}

fn lists_of<'p>(policy: &'p mut Policy, source: &str) -> Option<&'p mut RuleLists> {
    if source.is_empty() {
        return Some(&mut policy.host);
    }
    policy
        .sources
        .iter_mut()
        .find(|s| s.source.name == source)
        .map(|s| &mut s.lists)
}

/// Writes one "always allow" into `policy`: the allow rule under its
/// source, and the carve-out beside the ask rule it answered (or that
/// rule's removal, for a bare grant).
fn apply(policy: &mut Policy, a: &AlwaysRec) {
    let rule = a.rule.decl();
    let text = rule.text();
    let Some(lists) = lists_of(policy, &a.source) else {
        return;
    };
    if !lists.allow.iter().any(|r| r.text() == text) {
        lists.allow.push(rule.clone());
    }
    let Some((ask_source, ask_text)) = &a.over else {
        return;
    };
    match rule.spec.as_deref().filter(|s| !s.is_empty()) {
        Some(spec) => {
            let carve = RuleDecl::new(rule.tool.clone(), Some(&format!("!{spec}")));
            let carve_text = carve.text();
            if !lists.ask.iter().any(|r| r.text() == carve_text) {
                lists.ask.push(carve);
            }
        }
        None => {
            if let Some(l) = lists_of(policy, ask_source) {
                l.ask.retain(|r| &r.text() != ask_text);
            }
        }
    }
}

/// Every call of a batch denied because the store failed.
fn denied(calls: &[Call], e: &StoreError) -> Vec<Verdict> {
    calls
        .iter()
        .map(|c| {
            let mut v = Verdict::new(Decision::Deny, e.to_string());
            v.run_id = c.run_id.clone();
            v.call_id = c.call_id.clone();
            v
        })
        .collect()
}

// Shared by every request thread of a gateway.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Supervisor>();
};

/// The [`Source`] of a grant made under `name` (the host's for `""`),
/// as a host builds one for [`Supervisor::grant_set`].
pub fn trusted_source(name: &str, rank: i64) -> Source {
    Source {
        name: name.to_string(),
        rank,
        trusted: true,
        ..Source::default()
    }
}
