//! The engine: a compiled policy, the sessions that hold grant sets beside
//! it, and verdicts.
//!
//! [`Engine`] compiles a [`Policy`] or loads compiled tables, decides calls
//! and batches with the runtime, renders verdicts with the reference texts,
//! and filters the tools offered to a model. It never changes once built:
//! it is `Send + Sync`, and one engine behind an [`Arc`] serves every thread
//! and every session of a gateway.
//!
//! What changes during a conversation lives beside it. A [`Session`] pairs
//! an engine with the grant sets ([`Grants`]) a user activated, and decides
//! over both; its grants can be taken out ([`Session::into_grants`]), kept
//! between requests, and put back, on the same engine or on the policy that
//! replaced it.
//!
//! [`Evaluator`] is what every stateful evaluator offers the conformance
//! harness: a [`Session`] over the compiled engine and the reference
//! evaluator answer through it.

use crate::artifact::{self, LoadError, LoadOptions};
use crate::call::{Args, Call};
use crate::check::{self, CRule, Checked, SourceInfo, ToolInfo};
use crate::compile::{self, Limits};
use crate::decision::{Decision, RuleRef, Verdict};
use crate::diag::Diagnostics;
use crate::ir::Ir;
use crate::policy::{List, Policy, RuleSet, Source};
use crate::quote::go_quote;
use crate::registry::Registry;
use crate::runtime::program::{NONE, T_ALWAYS};
use crate::runtime::{self, Basis, CallResult, Component, Program};
use std::sync::Arc;

/// A rule a grant set could not activate, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The rule's string form.
    pub rule: String,
    /// The stable text that says why: `denied by web_fetch: a grant never
    /// beats a deny`.
    pub reason: String,
}

/// What activating a grant set did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grant {
    /// The allow rules activated, as evaluated (aliases expanded).
    pub granted: Vec<String>,
    /// The rules refused, with the reason.
    pub refused: Vec<Refusal>,
}

/// What every engine offers: the compiled [`Engine`] and the reference
/// evaluator answer the same questions the same way.
pub trait Evaluator {
    /// Decides a batch: every call on its own, then the calls allowed are
    /// held when another call of the batch asks.
    fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict>;

    /// The verdict a call would get on its own: no batch hold.
    fn would(&self, call: &Call) -> Verdict;

    /// As [`Evaluator::would`], written into `out` (every member
    /// overwritten). An engine that renders in place writes into the
    /// buffers `out` already holds, so a stream of calls decided into one
    /// verdict allocates little for its texts.
    fn would_into(&self, call: &Call, out: &mut Verdict) {
        *out = self.would(call);
    }

    /// Activates a grant set under its source and `scope`.
    fn grant_set(&mut self, set: &RuleSet, scope: Option<&str>) -> Grant;

    /// Removes the set of `source` under `scope`; how many rules it removed.
    fn revoke(&mut self, source: &str, scope: Option<&str>) -> usize;

    /// Removes every set of `scope`; how many rules they held.
    fn revoke_scope(&mut self, scope: Option<&str>) -> usize;

    /// The tools of `tools` the policy does not remove, in order.
    fn filter(&self, tools: &[String]) -> Vec<String>;
}

/// A boxed evaluator is one: a host that picks its engine at run time
/// (compiled or reference) still wraps it, with guards say.
impl<E: Evaluator + ?Sized> Evaluator for Box<E> {
    fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict> {
        (**self).decide_batch(calls)
    }

    fn would(&self, call: &Call) -> Verdict {
        (**self).would(call)
    }

    fn would_into(&self, call: &Call, out: &mut Verdict) {
        (**self).would_into(call, out)
    }

    fn grant_set(&mut self, set: &RuleSet, scope: Option<&str>) -> Grant {
        (**self).grant_set(set, scope)
    }

    fn revoke(&mut self, source: &str, scope: Option<&str>) -> usize {
        (**self).revoke(source, scope)
    }

    fn revoke_scope(&mut self, scope: Option<&str>) -> usize {
        (**self).revoke_scope(scope)
    }

    fn filter(&self, tools: &[String]) -> Vec<String> {
        (**self).filter(tools)
    }
}

/// A grant set in force.
#[derive(Clone, Debug)]
struct ActiveSet {
    scope: Option<String>,
    source: Source,
    prog: Program<'static>,
    n_rules: usize,
    /// The set as the user gave it: what [`Session::with_grants`]
    /// activates again on an engine other than the one that checked it.
    set: RuleSet,
}

/// The grant sets a session activated, in activation order, apart from
/// the engine they were checked against: what a gateway keeps for a
/// conversation between two requests.
///
/// ```
/// use toolgate::{Call, Decision, Engine, Grants, Policy, RuleLists, RuleSet, Session, Source};
/// let engine = Engine::build(&Policy::from_json(r#"{"default": "deny", "ask": "bash"}"#)?)?;
/// let mut session = engine.session();
/// let set = RuleSet {
///     source: Source { name: "user".into(), trusted: true, ..Source::default() },
///     lists: RuleLists::parse("bash", "", "")?,
///     ..RuleSet::default()
/// };
/// assert_eq!(session.grant_set(&set, None).granted, ["bash"]);
/// let kept: Grants = session.into_grants();
/// // A later request: the same grants over the same engine.
/// let session = Session::with_grants(&engine, kept);
/// assert_eq!(session.decide(&Call::new("bash", "{}")).decision, Decision::Allow);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Grants {
    /// The engine the sets were checked against ([`Engine::id`]); `0` for
    /// no sets.
    engine: u64,
    sets: Vec<ActiveSet>,
}

impl Grants {
    /// No grant sets.
    pub fn new() -> Grants {
        Grants::default()
    }

    /// Whether no set is in force.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The grant sets in force: source and scope, in activation order.
    pub fn list(&self) -> Vec<(Source, Option<String>)> {
        self.sets
            .iter()
            .map(|s| (s.source.clone(), s.scope.clone()))
            .collect()
    }
}

/// Gives each engine built or loaded an identity of its own, so grants
/// checked against one are never read as checked against another.
fn next_engine_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A compiled policy: immutable, `Send + Sync`, shared by every session
/// (see [`Session`] for grant sets).
///
/// ```
/// use toolgate::{Call, Decision, Engine, Policy};
/// let policy = Policy::from_json(r#"{
///     "default": "ask",
///     "matchers": {"bash": {"match": "glob", "field": "command"}},
///     "allow": "read bash(git status:*)",
///     "deny": "bash(rm:*)",
///     "ask": "bash(git push:*)"
/// }"#)?;
/// let engine = Engine::build(&policy)?;
/// let v = engine.decide(&Call::new("bash", r#"{"command": "rm -rf /"}"#));
/// assert_eq!(v.decision, Decision::Deny);
/// assert_eq!(v.reason, "denied by bash(rm:*)");
/// let v = engine.decide(&Call::new("bash", r#"{"command": "npm test"}"#));
/// assert_eq!(v.reason, "no rule allows bash: approval required by default");
/// # Ok::<(), toolgate::Diagnostics>(())
/// ```
#[derive(Clone, Debug)]
pub struct Engine<'a> {
    program: Program<'a>,
    registry: Registry,
    /// This engine's identity ([`Engine::id`]), shared by its clones.
    id: u64,
    /// What check said that did not stop the build (none for an engine
    /// loaded from an artifact).
    warnings: Vec<crate::diag::Diagnostic>,
}

impl Engine<'static> {
    /// Checks and compiles a policy with the built-in matcher kinds.
    ///
    /// # Errors
    ///
    /// Every problem `check` or the compiler found.
    pub fn build(policy: &Policy) -> Result<Engine<'static>, Diagnostics> {
        Engine::build_with(policy, &crate::builtins::registry())
    }

    /// Checks and compiles a policy with the kinds and splitters of
    /// `registry`.
    ///
    /// # Errors
    ///
    /// Every problem `check` or the compiler found.
    pub fn build_with(
        policy: &Policy,
        registry: &Registry,
    ) -> Result<Engine<'static>, Diagnostics> {
        Engine::build_limited(policy, registry, Limits::default())
    }

    /// As [`Engine::build_with`], under `limits` (the largest DFA a set of
    /// regular expressions may compile into).
    ///
    /// # Errors
    ///
    /// As [`Engine::build_with`]; a specifier whose DFA exceeds `limits` is
    /// `too_complex`.
    pub fn build_limited(
        policy: &Policy,
        registry: &Registry,
        limits: Limits,
    ) -> Result<Engine<'static>, Diagnostics> {
        let arena = bumpalo::Bump::new();
        let ir = Ir::from_policy(&arena, policy);
        let checked = check::check(&ir, registry).map_err(|d| d.in_file(&policy.file))?;
        let program = compile::compile(&checked, limits).map_err(|d| d.in_file(&policy.file))?;
        let mut warnings = checked.warnings.clone();
        for w in &mut warnings {
            if w.location.file.is_empty() {
                w.location.file.clone_from(&policy.file);
            }
        }
        Ok(Engine {
            program,
            registry: registry.clone(),
            id: next_engine_id(),
            warnings,
        })
    }
}

impl<'a> Engine<'a> {
    /// Loads an engine from an artifact (see `spec/artifact.md`), borrowing
    /// its tables from `bytes` without copying them, with the built-in matcher
    /// kinds and splitters.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming the check that refused the artifact. Loading
    /// never panics, whatever the bytes.
    ///
    /// # Example
    ///
    /// ```
    /// use toolgate::{Call, Engine, Policy};
    /// let policy = Policy::from_json(r#"{"default": "deny", "allow": "read"}"#)?;
    /// let bytes = Engine::build(&policy)?.to_bytes();
    /// let engine = Engine::from_bytes(&bytes)?;
    /// assert_eq!(engine.decide(&Call::new("read", "{}")).reason, "allowed by read");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Engine<'a>, LoadError> {
        Engine::from_bytes_with(bytes, &crate::builtins::registry())
    }

    /// As [`Engine::from_bytes`], resolving matcher kinds and splitters in
    /// `registry`. A kind the compiler could not lower and every splitter the
    /// tables name must be registered.
    ///
    /// # Errors
    ///
    /// As [`Engine::from_bytes`].
    pub fn from_bytes_with(bytes: &'a [u8], registry: &Registry) -> Result<Engine<'a>, LoadError> {
        Engine::load(bytes, registry, &LoadOptions::default())
    }

    /// As [`Engine::from_bytes_with`], under `options`: the length cap, and
    /// whether the revision id is verified.
    ///
    /// # Errors
    ///
    /// As [`Engine::from_bytes`].
    pub fn load(
        bytes: &'a [u8],
        registry: &Registry,
        options: &LoadOptions,
    ) -> Result<Engine<'a>, LoadError> {
        options.admit(bytes)?;
        let program = artifact::read(bytes, registry)?;
        options.settle(bytes)?;
        Ok(Engine {
            program,
            registry: registry.clone(),
            id: next_engine_id(),
            warnings: Vec::new(),
        })
    }

    /// The policy's tables as an artifact. Grant sets are not written: they
    /// belong to a [`Session`], not to the policy.
    pub fn to_bytes(&self) -> Vec<u8> {
        artifact::write(&self.program, artifact::ProgramKind::RuleLists)
    }

    /// The engine with every table it borrows copied, so that it outlives the
    /// buffer it was loaded from.
    pub fn into_owned(self) -> Engine<'static> {
        Engine {
            program: self.program.into_owned(),
            registry: self.registry,
            id: self.id,
            warnings: self.warnings,
        }
    }

    /// What check said about the policy that did not stop the build: rules
    /// written more than once and folded into one (`duplicate_rule`).
    pub fn warnings(&self) -> &[crate::diag::Diagnostic] {
        &self.warnings
    }

    /// The compiled tables of the policy.
    pub fn program(&self) -> &Program<'a> {
        &self.program
    }

    /// This engine's identity: unique to each engine built or loaded in the
    /// process, shared by its clones and by [`Engine::into_owned`].
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A session over this engine with no grant sets.
    pub fn session(&self) -> Session<'_, 'a> {
        Session::new(self)
    }

    /// A session that owns this engine (through an [`Arc`]): what a caller
    /// that keeps one engine per session, or boxes a [`dyn Evaluator`],
    /// holds.
    ///
    /// [`dyn Evaluator`]: Evaluator
    pub fn into_session(self) -> Session<'static, 'a> {
        Session::shared(Arc::new(self))
    }

    /// The policy alone: no grant sets beside it.
    fn view(&self) -> View<'_, 'a> {
        View {
            engine: self,
            sets: &[],
        }
    }

    /// Decides a call on its own, without rendering text: the decision and
    /// what it rests on. This is the gateway's fast path.
    pub fn decide_result(&self, call: &Call) -> CallResult {
        self.view().decide_result(call)
    }

    /// Decides one call (a batch of one).
    pub fn decide(&self, call: &Call) -> Verdict {
        self.view().would(call)
    }

    /// The verdict a call would get on its own, without a batch hold.
    pub fn would(&self, call: &Call) -> Verdict {
        self.view().would(call)
    }

    /// Decides a batch: see [`Evaluator::decide_batch`].
    pub fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict> {
        self.view().decide_batch(calls)
    }

    /// The firing rules of the policy whose tool and specifier match a call
    /// of `tool` with `args`, in list order, before precedence and
    /// carve-outs: what a front shows to explain which rules a call meets.
    /// The value is canonicalised by the tool's kind against `cwd` first;
    /// arguments that cannot be read, or canonicalised, meet only the bare
    /// rules.
    pub fn matching_rules(&self, tool: &str, args: &Args) -> Vec<RuleRef> {
        self.matching_rules_in(tool, args, None)
    }

    /// [`Engine::matching_rules`] for a call running in `cwd`.
    pub fn matching_rules_in(&self, tool: &str, args: &Args, cwd: Option<&str>) -> Vec<RuleRef> {
        self.matching_ids_in(tool, args, cwd, false)
            .into_iter()
            .map(|id| rule_ref(&self.program, id))
            .collect()
    }

    /// The ids of [`Engine::matching_rules_in`]'s rules, ascending; with
    /// `carves`, the carve-outs that match too.
    pub(crate) fn matching_ids_in(
        &self,
        tool: &str,
        args: &Args,
        cwd: Option<&str>,
        carves: bool,
    ) -> Vec<u32> {
        let context = crate::registry::CallContext { cwd };
        let p = &self.program;
        let mut ids = Vec::new();
        match p.find_tool(tool) {
            Some(t) => {
                p.offer_always(t, &mut Collect(&mut ids));
                // The value as the tool's kind reads it; one it cannot read
                // meets only the bare rules.
                let raw = p.tool_field(t).and_then(|f| args.str_member(f));
                let kind = p.kinds.get(t as usize).and_then(Option::as_ref);
                let value = match (raw, kind) {
                    (Some(v), Some(k)) => k.normalize(v, &context).ok(),
                    (Some(v), None) => Some(std::borrow::Cow::Borrowed(v)),
                    (None, _) => None,
                };
                if let Some(v) = value.as_deref() {
                    let fm = p
                        .w(p.tool_at(t)
                            .wrapping_add(crate::runtime::program::T_RULES_FM));
                    let kinds = |tool: u32, spec: &str, value: &str| {
                        p.kinds
                            .get(tool as usize)
                            .and_then(Option::as_ref)
                            .is_some_and(|k| k.matches(spec, value))
                    };
                    p.walk(fm, t, v, &mut Collect(&mut ids), &kinds);
                    if carves {
                        let cm = p
                            .w(p.tool_at(t)
                                .wrapping_add(crate::runtime::program::T_CARVE_FM));
                        p.walk(cm, t, v, &mut Collect(&mut ids), &kinds);
                    }
                }
            }
            None => {
                let fm = p.h(crate::runtime::program::H_NAME_FM);
                p.walk(fm, NONE, tool, &mut Collect(&mut ids), &|_, _, _| false);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        // A server-bounded glob the walk over tool names met meets only its
        // server's tools, as the decision's acceptance says.
        ids.retain(|&id| {
            p.rule(id).flags & crate::runtime::program::F_SERVER == 0
                || crate::glob::server_bounded(p.rule_tool(id), tool)
        });
        ids
    }

    /// The sources the policy was merged from, highest rank first, then the
    /// host's own.
    pub fn sources(&self) -> Vec<Source> {
        self.program.sources()
    }

    /// The allow rules of untrusted sources: never evaluated, reported so a
    /// front can say what trusting a source would allow.
    pub fn withheld(&self) -> Vec<RuleRef> {
        self.view().withheld()
    }

    /// The deny rule that takes `tool` out of the offer, if one does: a bare
    /// deny naming it, or a deny whose tool-name glob matches it, that no
    /// carve-out of the deny list reaches.
    pub fn removes(&self, tool: &str) -> Option<RuleRef> {
        self.view().removes(tool)
    }

    /// The tools of `tools` the policy does not remove, in order.
    pub fn filter(&self, tools: &[String]) -> Vec<String> {
        self.view().filter(tools)
    }

    /// The matcher table, resolved against the registry again.
    fn tool_infos(&self) -> Vec<ToolInfo> {
        let p = &self.program;
        let mut out: Vec<ToolInfo> = (0..p.n_tools())
            .filter(|&i| {
                p.tool_field(i).is_some() || p.tool_split(i).is_some() || p.tool_kind(i).is_some()
            })
            .map(|i| ToolInfo {
                name: p.tool_name(i).to_string(),
                field: p.tool_field(i).map(str::to_string),
                kind: p.tool_kind(i).and_then(|k| {
                    p.kinds
                        .get(i as usize)
                        .cloned()
                        .flatten()
                        .or_else(|| self.registry.kind(k).cloned())
                        .map(|imp| (k.to_string(), imp))
                }),
                split: p.tool_split(i).and_then(|s| {
                    p.splitters
                        .get(i as usize)
                        .cloned()
                        .flatten()
                        .or_else(|| self.registry.splitter(s).map(Arc::clone))
                        .map(|imp| (s.to_string(), imp))
                }),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// How a [`Session`] holds its engine.
#[derive(Clone, Debug)]
enum EngineRef<'e, 'a> {
    Borrowed(&'e Engine<'a>),
    Shared(Arc<Engine<'a>>),
}

/// An engine and the grant sets in force beside it: one conversation's
/// view of a policy.
///
/// The engine is borrowed ([`Engine::session`]) or shared
/// ([`Session::shared`]); the grants are the session's own, so sessions of
/// one engine never see each other's. A grant set's deny and ask rules apply
/// at once; its allow rules shadow the ask rules they cover (see
/// `spec/policy.md`, "Grant sets").
///
/// ```
/// use toolgate::{Call, Decision, Engine, Policy, RuleLists, RuleSet, Source};
/// let engine = Engine::build(&Policy::from_json(r#"{"default": "allow", "ask": "bash"}"#)?)?;
/// let mut alice = engine.session();
/// let bob = engine.session();
/// let set = RuleSet {
///     source: Source { name: "alice".into(), trusted: true, ..Source::default() },
///     lists: RuleLists::parse("bash", "web_fetch", "")?,
///     ..RuleSet::default()
/// };
/// alice.grant_set(&set, None);
/// let bash = Call::new("bash", "{}");
/// assert_eq!(alice.decide(&bash).decision, Decision::Allow);
/// assert_eq!(bob.decide(&bash).decision, Decision::Ask);
/// assert_eq!(alice.decide(&Call::new("web_fetch", "{}")).decision, Decision::Deny);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Session<'e, 'a> {
    engine: EngineRef<'e, 'a>,
    grants: Grants,
}

impl<'e, 'a> Session<'e, 'a> {
    /// A session over `engine` with no grant sets.
    pub fn new(engine: &'e Engine<'a>) -> Session<'e, 'a> {
        Session {
            engine: EngineRef::Borrowed(engine),
            grants: Grants::new(),
        }
    }

    /// A session over a shared engine with no grant sets.
    pub fn shared(engine: Arc<Engine<'a>>) -> Session<'static, 'a> {
        Session {
            engine: EngineRef::Shared(engine),
            grants: Grants::new(),
        }
    }

    /// A session over `engine` with `grants` a session kept. Grants checked
    /// against another engine (the policy was swapped since) are activated
    /// again, in their order, against this one: a rule the new policy
    /// refuses is dropped, as [`Session::grant_set`] would refuse it.
    pub fn with_grants(engine: &'e Engine<'a>, grants: Grants) -> Session<'e, 'a> {
        let mut s = Session::new(engine);
        s.restore(grants);
        s
    }

    /// [`Session::with_grants`] over a shared engine.
    pub fn shared_with_grants(engine: Arc<Engine<'a>>, grants: Grants) -> Session<'static, 'a> {
        let mut s = Session::shared(engine);
        s.restore(grants);
        s
    }

    fn restore(&mut self, grants: Grants) {
        if grants.is_empty() || grants.engine == self.engine().id {
            self.grants = grants;
            return;
        }
        for a in grants.sets {
            self.grant_set(&a.set, a.scope.as_deref());
        }
    }

    /// The engine the session decides with.
    pub fn engine(&self) -> &Engine<'a> {
        match &self.engine {
            EngineRef::Borrowed(e) => e,
            EngineRef::Shared(e) => e,
        }
    }

    /// The session's grant sets, to keep for a later request
    /// ([`Session::with_grants`]).
    pub fn into_grants(self) -> Grants {
        self.grants
    }

    /// The grant sets in force: source and scope, in activation order.
    pub fn grants(&self) -> Vec<(Source, Option<String>)> {
        self.grants.list()
    }

    fn view(&self) -> View<'_, 'a> {
        View {
            engine: self.engine(),
            sets: &self.grants.sets,
        }
    }

    /// As [`Engine::decide_result`], with the session's grant sets.
    pub fn decide_result(&self, call: &Call) -> CallResult {
        self.view().decide_result(call)
    }

    /// As [`Engine::decide`], with the session's grant sets.
    pub fn decide(&self, call: &Call) -> Verdict {
        self.view().would(call)
    }

    /// As [`Engine::would`], with the session's grant sets.
    pub fn would(&self, call: &Call) -> Verdict {
        self.view().would(call)
    }

    /// As [`Engine::decide_batch`], with the session's grant sets.
    pub fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict> {
        self.view().decide_batch(calls)
    }

    /// As [`Engine::withheld`], with the untrusted allow rules of the
    /// session's grant sets after the policy's.
    pub fn withheld(&self) -> Vec<RuleRef> {
        self.view().withheld()
    }

    /// As [`Engine::removes`], with the session's unscoped grant sets.
    pub fn removes(&self, tool: &str) -> Option<RuleRef> {
        self.view().removes(tool)
    }

    /// As [`Engine::filter`], with the session's unscoped grant sets.
    pub fn filter(&self, tools: &[String]) -> Vec<String> {
        self.view().filter(tools)
    }

    /// Activates a grant set under its source and `scope` (see
    /// `spec/policy.md`, "Grant sets"): its deny and ask rules apply at once,
    /// its allow rules shadow the ask rules they cover, and a rule that could
    /// never fire, or that a deny or a higher-ranked bare ask would beat, is
    /// refused with the reason. Activating again under the same source and
    /// scope replaces the set in place.
    pub fn grant_set(&mut self, set: &RuleSet, scope: Option<&str>) -> Grant {
        let scope = scope.filter(|s| !s.is_empty()).map(str::to_string);
        let engine = self.engine();
        let aliases = engine.program.aliases();
        let tools = engine.tool_infos();
        let arena = bumpalo::Bump::new();
        let mut policy = Policy {
            default: Some(Decision::Ask),
            ..Policy::default()
        };
        policy.sources.push(set.clone());
        let ir = Ir::from_policy(&arena, &policy);
        let mut grant = Grant::default();
        let mut lists: [Vec<CRule<'_>>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        let mut withheld = Vec::new();
        let source = SourceInfo {
            name: set.source.name.clone(),
            rank: set.source.rank,
            trusted: set.source.trusted,
            path: set.source.path.clone(),
            hash: set.source.hash.clone(),
        };
        let expanded = |l: List| -> Vec<CRule<'_>> {
            ir.rules
                .iter()
                .filter(|r| r.list == l)
                .flat_map(|r| check::expand(&ir, r, 0, &aliases))
                .collect()
        };

        // The set's deny and ask rules apply at once, trusted or not; an
        // untrusted set's carve-outs, which loosen, are withheld (§5.2).
        for l in [List::Deny, List::Ask] {
            for c in expanded(l) {
                if c.carve && !set.source.trusted {
                    grant.refused.push(Refusal {
                        rule: c.text.to_string(),
                        reason: format!("withheld: the source {} is not trusted", set.source.name),
                    });
                    continue;
                }
                match check::check_rule_detailed(&c, l, &tools, true) {
                    Ok(()) => {
                        if let Some(list) = lists.get_mut(l.index()) {
                            list.push(c);
                        }
                    }
                    Err(e) => grant.refused.push(Refusal {
                        rule: c.text.to_string(),
                        reason: e.reference_text,
                    }),
                }
            }
        }
        let [deny, ask, _] = &lists;
        let restrict = Checked {
            default: Decision::Ask,
            sources: vec![source.clone()],
            lists: [deny.clone(), ask.clone(), Vec::new()],
            withheld: Vec::new(),
            tools: tools.clone(),
            aliases: aliases.clone(),
            warnings: Vec::new(),
        };
        let restrict = match compile::compile(&restrict, Limits::default()) {
            Ok(p) => p,
            Err(d) => return refuse_all(&restrict, &d),
        };

        // What the allow rules are checked against: the policy, the sets a
        // call of this scope is decided beside (less the one replaced), and
        // the set's own deny and ask rules.
        let mut beside: Vec<Component<'_, '_>> = vec![Component {
            prog: &engine.program,
            set: None,
        }];
        for s in &self.grants.sets {
            let replaced = s.source.name == set.source.name && s.scope == scope;
            if !replaced && (s.scope.is_none() || s.scope == scope) {
                beside.push(Component {
                    prog: &s.prog,
                    set: Some((s.source.rank, s.source.name.as_str())),
                });
            }
        }
        beside.push(Component {
            prog: &restrict,
            set: Some((set.source.rank, set.source.name.as_str())),
        });
        for c in expanded(List::Allow) {
            match allow_refusal(&c, &tools, &set.source, &beside) {
                Some(Refused::Withheld) => {
                    grant.refused.push(Refusal {
                        rule: c.text.to_string(),
                        reason: format!("withheld: the source {} is not trusted", set.source.name),
                    });
                    withheld.push(c);
                }
                Some(Refused::Because(reason)) => grant.refused.push(Refusal {
                    rule: c.text.to_string(),
                    reason,
                }),
                None => {
                    grant.granted.push(c.text.to_string());
                    let [_, _, allow] = &mut lists;
                    allow.push(c);
                }
            }
        }

        let n_rules = lists.iter().map(Vec::len).sum();
        let checked = Checked {
            default: Decision::Ask,
            sources: vec![source],
            lists,
            withheld,
            tools,
            aliases,
            warnings: Vec::new(),
        };
        let prog = match compile::compile(&checked, Limits::default()) {
            Ok(p) => p,
            Err(d) => return refuse_all(&checked, &d),
        };
        let active = ActiveSet {
            scope: scope.clone(),
            source: set.source.clone(),
            prog,
            n_rules,
            set: set.clone(),
        };
        self.grants.engine = self.engine().id;
        match self
            .grants
            .sets
            .iter_mut()
            .find(|s| s.source.name == set.source.name && s.scope == scope)
        {
            Some(slot) => *slot = active,
            None => self.grants.sets.push(active),
        }
        grant
    }

    /// Removes the set of `source` under `scope`.
    pub fn revoke(&mut self, source: &str, scope: Option<&str>) -> usize {
        let scope = scope.filter(|s| !s.is_empty());
        let mut removed = 0;
        self.grants.sets.retain(|s| {
            let hit = s.source.name == source && s.scope.as_deref() == scope;
            if hit {
                removed += s.n_rules;
            }
            !hit
        });
        removed
    }

    /// Removes every set of `scope`.
    pub fn revoke_scope(&mut self, scope: Option<&str>) -> usize {
        let scope = scope.filter(|s| !s.is_empty());
        let mut removed = 0;
        self.grants.sets.retain(|s| {
            let hit = s.scope.as_deref() == scope;
            if hit {
                removed += s.n_rules;
            }
            !hit
        });
        removed
    }
}

/// The policy and the grant sets a call is decided beside: the one place
/// that decides, for the engine alone and for a session alike.
#[derive(Clone, Copy)]
struct View<'x, 'a> {
    engine: &'x Engine<'a>,
    sets: &'x [ActiveSet],
}

impl<'x, 'a> View<'x, 'a> {
    /// The components a call under `scope` is decided over: the policy, the
    /// unscoped sets, then the sets of the scope, in activation order.
    fn components(&self, scope: Option<&str>) -> Vec<Component<'x, 'a>> {
        let scope = scope.filter(|s| !s.is_empty());
        let mut comps: Vec<Component<'x, 'a>> = Vec::with_capacity(1 + self.sets.len());
        comps.push(Component {
            prog: &self.engine.program,
            set: None,
        });
        for s in self.sets {
            if s.scope.is_none() {
                comps.push(Component {
                    prog: &s.prog,
                    set: Some((s.source.rank, s.source.name.as_str())),
                });
            }
        }
        if let Some(sc) = scope {
            for s in self.sets {
                if s.scope.as_deref() == Some(sc) {
                    comps.push(Component {
                        prog: &s.prog,
                        set: Some((s.source.rank, s.source.name.as_str())),
                    });
                }
            }
        }
        comps
    }

    /// Decides a call on its own, without rendering text: the decision and
    /// what it rests on. This is the gateway's fast path.
    pub fn decide_result(&self, call: &Call) -> CallResult {
        if self.sets.is_empty() {
            let comps = [Component {
                prog: &self.engine.program,
                set: None,
            }];
            return runtime::decide_call(&comps, call);
        }
        runtime::decide_call(&self.components(call.scope.as_deref()), call)
    }

    /// The verdict a call would get on its own, without a batch hold.
    pub fn would(&self, call: &Call) -> Verdict {
        let mut v = Verdict::new(Decision::Deny, String::new());
        self.would_into(call, &mut v);
        v
    }

    /// As [`View::would`], rendered into `out`'s buffers.
    pub fn would_into(&self, call: &Call, out: &mut Verdict) {
        let r = self.decide_result(call);
        if self.sets.is_empty() {
            let comps = [Component {
                prog: &self.engine.program,
                set: None,
            }];
            return render_into(&comps, call, &r, out);
        }
        render_into(&self.components(call.scope.as_deref()), call, &r, out)
    }

    /// Decides a batch: see [`Evaluator::decide_batch`].
    pub fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict> {
        let results: Vec<(Verdict, bool)> = calls
            .iter()
            .map(|c| {
                let r = self.decide_result(c);
                let asks = r.decision == Decision::Ask || matches!(r.basis, Basis::Unevaluable(_));
                let comps = self.components(c.scope.as_deref());
                (render(&comps, c, &r), asks)
            })
            .collect();
        hold(results)
    }

    /// The allow rules of untrusted sources: never evaluated, reported so a
    /// front can say what trusting a source would allow.
    pub fn withheld(&self) -> Vec<RuleRef> {
        let p = &self.engine.program;
        let mut out: Vec<RuleRef> = p
            .withheld()
            .into_iter()
            .map(|(text, s)| RuleRef {
                text,
                source: p.source_name(s).to_string(),
                source_hash: p.source_hash(s).to_string(),
                note: String::new(),
            })
            .collect();
        for s in self.sets {
            out.extend(s.prog.withheld().into_iter().map(|(text, _)| RuleRef {
                text,
                source: s.source.name.clone(),
                source_hash: s.source.hash.clone(),
                note: String::new(),
            }));
        }
        out
    }

    /// The deny rule that takes `tool` out of the offer, if one does: a bare
    /// deny naming it, or a deny whose tool-name glob matches it, that no
    /// carve-out of the deny list reaches.
    pub fn removes(&self, tool: &str) -> Option<RuleRef> {
        let comps = self.components(None);
        for c in &comps {
            let p = c.prog;
            for id in bare_candidates(p, tool, List::Deny) {
                if !reached_by_carve(&comps, p, id) {
                    return Some(rule_ref(p, id));
                }
            }
        }
        None
    }

    /// The tools of `tools` the policy does not remove, in order.
    pub fn filter(&self, tools: &[String]) -> Vec<String> {
        tools
            .iter()
            .filter(|t| self.removes(t).is_none())
            .cloned()
            .collect()
    }
}

impl Evaluator for Session<'_, '_> {
    fn decide_batch(&self, calls: &[Call]) -> Vec<Verdict> {
        Session::decide_batch(self, calls)
    }
    fn would(&self, call: &Call) -> Verdict {
        Session::would(self, call)
    }
    fn would_into(&self, call: &Call, out: &mut Verdict) {
        self.view().would_into(call, out)
    }
    fn grant_set(&mut self, set: &RuleSet, scope: Option<&str>) -> Grant {
        Session::grant_set(self, set, scope)
    }
    fn revoke(&mut self, source: &str, scope: Option<&str>) -> usize {
        Session::revoke(self, source, scope)
    }
    fn revoke_scope(&mut self, scope: Option<&str>) -> usize {
        Session::revoke_scope(self, scope)
    }
    fn filter(&self, tools: &[String]) -> Vec<String> {
        Session::filter(self, tools)
    }
}

// A gateway shares one engine across threads; a field that broke this
// would break every such caller, so it breaks the build here first.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Engine<'static>>();
    shared::<Grants>();
    shared::<Session<'static, 'static>>();
};

/// Why an allow rule of a grant set is not activated.
enum Refused {
    /// The set's source is not trusted: the rule is withheld.
    Withheld,
    /// Any other reason, as the text a front shows.
    Because(String),
}

/// Why an allow rule of a grant set is not activated, if it is not, in the
/// order of `spec/policy.md`: it could never fire, its source is untrusted,
/// a bare deny names its tool, a higher-ranked bare ask names its tool.
/// `beside` are the programs in force beside the set, its own deny and ask
/// rules last.
fn allow_refusal(
    c: &CRule<'_>,
    tools: &[ToolInfo],
    source: &Source,
    beside: &[Component<'_, '_>],
) -> Option<Refused> {
    if c.carve {
        return Some(Refused::Because(format!(
            "toolgate: cannot grant a carve-out: {}",
            c.text
        )));
    }
    if let Err(e) = check::check_rule_detailed(c, List::Allow, tools, true) {
        return Some(Refused::Because(e.reference_text));
    }
    if !source.trusted {
        return Some(Refused::Withheld);
    }
    for comp in beside {
        let p = comp.prog;
        for id in bare_candidates(p, c.tool, List::Deny) {
            if !reached_by_carve(beside, p, id) {
                return Some(Refused::Because(format!(
                    "denied by {}: a grant never beats a deny",
                    p.rule_text(id)
                )));
            }
        }
    }
    for comp in beside {
        let p = comp.prog;
        for id in bare_candidates(p, c.tool, List::Ask) {
            let s = p.rule(id).source;
            if p.source_rank(s) > source.rank && !reached_by_carve(beside, p, id) {
                let name = p.source_name(s);
                return Some(Refused::Because(if name.is_empty() {
                    format!("{} outranks the grant", p.rule_text(id))
                } else {
                    format!("{} from {name} outranks the grant", p.rule_text(id))
                }));
            }
        }
    }
    None
}

/// A grant set that does not compile activates nothing: every rule is
/// refused with the compiler's first error.
fn refuse_all(checked: &Checked<'_>, d: &Diagnostics) -> Grant {
    let reason = format!("toolgate: {}", d.first().message);
    let mut g = Grant::default();
    for l in List::ALL {
        for c in checked.list(l) {
            g.refused.push(Refusal {
                rule: c.text.to_string(),
                reason: reason.clone(),
            });
        }
    }
    g
}

/// A sink that keeps every id a walk offers, for questions that are not
/// decisions: which rules a call meets, which globs name a tool.
struct Collect<'x>(&'x mut Vec<u32>);

impl runtime::eval::Sink for Collect<'_> {
    fn wants(&self, _: u32) -> bool {
        true
    }
    fn offer(&mut self, id: u32) {
        self.0.push(id);
    }
}

/// The bare rules of list `l` that name `tool` in program `p`, in list
/// order: bare rules of the tool and tool-name globs that match it.
fn bare_candidates(p: &Program<'_>, tool: &str, l: List) -> Vec<u32> {
    let mut out = Vec::new();
    match p.find_tool(tool) {
        Some(t) => {
            let at = p.tool_at(t).wrapping_add(T_ALWAYS);
            let off = p.w(at);
            let n = p.w(at.wrapping_add(1)).min(p.n_words());
            for k in 0..n {
                let id = p.w(off.wrapping_add(k));
                if id != NONE && p.rule(id).list() == l {
                    out.push(id);
                }
            }
        }
        None => {
            let fm = p.h(crate::runtime::program::H_NAME_FM);
            let mut v = Vec::new();
            p.walk(fm, NONE, tool, &mut Collect(&mut v), &|_, _, _| false);
            v.sort_unstable();
            v.dedup();
            out.extend(v.into_iter().filter(|&id| p.rule(id).list() == l));
        }
    }
    out
}

/// Whether a carve-out of rule `id`'s list, for its exact tool, from a
/// source of rank at least the rule's, exists in any component. Its pattern
/// is not consulted: it is enough that some calls get through.
fn reached_by_carve(comps: &[Component<'_, '_>], p: &Program<'_>, id: u32) -> bool {
    let r = p.rule(id);
    if !r.carvable() {
        return false;
    }
    let tool = p.rule_tool(id);
    let rank = p.source_rank(r.source);
    let list = r.list();
    comps.iter().any(|c| {
        let q = c.prog;
        // Bounded by the tables' size: a damaged rule count must not make
        // a walk of billions of absent records.
        (q.n_fire()..q.n_rules().min(q.n_words())).any(|k| {
            let cr = q.rule(k);
            cr.list() == list && q.rule_tool(k) == tool && q.source_rank(cr.source) >= rank
        })
    })
}

pub(crate) fn rule_ref(p: &Program<'_>, id: u32) -> RuleRef {
    let mut r = RuleRef::default();
    rule_ref_into(p, id, &mut r);
    r
}

/// Fills `r` with rule `id`'s strings, in the buffers `r` already holds.
fn rule_ref_into(p: &Program<'_>, id: u32, r: &mut RuleRef) {
    let s = p.rule(id).source;
    for (to, from) in [
        (&mut r.text, p.rule_text(id)),
        (&mut r.source, p.source_name(s)),
        (&mut r.source_hash, p.source_hash(s)),
        (&mut r.note, p.rule_note(id).unwrap_or("")),
    ] {
        to.clear();
        to.push_str(from);
    }
}

/// Appends the reason a rule gives to `reason`: `lead` then the rule's
/// form as a reason cites it, `R`, or `R: note` when the note may be read
/// to the model. The rule's strings come from its `RuleRef`, already read
/// out of the tables (each read checks its bytes are UTF-8 again).
fn cite(p: &Program<'_>, id: u32, rule: &RuleRef, lead: &str, reason: &mut String) {
    reason.push_str(lead);
    reason.push_str(&rule.text);
    if p.rule_has_note(id) && p.rule_cites_note(id) {
        reason.push_str(": ");
        reason.push_str(&rule.note);
    }
}

/// Renders a call's result as a verdict.
fn render(comps: &[Component<'_, '_>], call: &Call, r: &CallResult) -> Verdict {
    let mut v = Verdict::new(r.decision, String::new());
    render_into(comps, call, r, &mut v);
    v
}

/// Renders a call's result into `v`, every member overwritten, the
/// strings written into the buffers `v` already holds: a stream of calls
/// rendered into one verdict allocates little for its texts once the
/// buffers have grown.
fn render_into(comps: &[Component<'_, '_>], call: &Call, r: &CallResult, v: &mut Verdict) {
    use std::fmt::Write as _;
    let tool = r.tool(call);
    v.decision = r.decision;
    v.held = false;
    v.by = "policy";
    v.run_id.clone_from(&call.run_id);
    v.call_id.clone_from(&call.call_id);
    v.confined.clear();
    v.confined
        .push_str(call.confined.as_deref().unwrap_or_default());
    v.reason.clear();
    v.subject.clear();
    // The rule's buffers are reused when this verdict names a rule too; a
    // verdict that names none drops them.
    let mut rule = v.rule.take().unwrap_or_default();
    let named = match &r.basis {
        Basis::Rule { comp, id } => comps.get(*comp).map(|c| {
            let lead = match r.decision {
                Decision::Deny => "denied by ",
                Decision::Ask => "approval required by ",
                Decision::Allow => "allowed by ",
            };
            rule_ref_into(c.prog, *id, &mut rule);
            cite(c.prog, *id, &rule, lead, &mut v.reason);
        }),
        Basis::Confined { comp, id } => comps.get(*comp).map(|c| {
            rule_ref_into(c.prog, *id, &mut rule);
            let text = &rule.text;
            let _ = match call.confined.as_deref() {
                Some(name) if !name.is_empty() => {
                    write!(v.reason, "confined by {name}, so {text} does not ask")
                }
                _ => write!(v.reason, "confined, so {text} does not ask"),
            };
        }),
        Basis::Default => {
            // Pushed piece by piece rather than formatted: on the JSONL
            // benchmark's stream that took rendering from about 740 to 680
            // instructions a call.
            let pieces: [&str; 3] = match r.decision {
                Decision::Allow => ["allowed by default", "", ""],
                Decision::Deny => ["no rule allows ", tool, ": denied by default"],
                Decision::Ask => ["no rule allows ", tool, ": approval required by default"],
            };
            pieces.iter().for_each(|p| v.reason.push_str(p));
            None
        }
        Basis::Unevaluable(why) => {
            let _ = write!(
                v.reason,
                "{} call could not be evaluated: {why}",
                crate::json::shown(&call.tool)
            );
            None
        }
    };
    if named.is_some() {
        v.rule = Some(rule);
    }
    if r.split {
        if let Some(kept) = r.subjects.get(r.kept) {
            v.subject.push_str(&kept.text);
            if r.decision == Decision::Deny && r.subjects.len() > 1 && !kept.text.is_empty() {
                v.reason.push_str(&block_suffix(
                    &kept.text,
                    r.subjects.iter().map(|s| s.text.as_str()),
                ));
            }
        }
    }
}

/// ` on "S"; nothing in this command ran`, then `, including "a", "b" and
/// "c"` for the other subjects' texts: empty ones and the blocking one
/// skipped, duplicates removed.
pub fn block_suffix<'s>(blocking: &str, texts: impl Iterator<Item = &'s str>) -> String {
    let quoted = go_quote(blocking);
    let mut others: Vec<String> = Vec::new();
    for t in texts {
        if t.is_empty() {
            continue;
        }
        let q = go_quote(t);
        if q == quoted || others.contains(&q) {
            continue;
        }
        others.push(q);
    }
    let mut s = format!(" on {quoted}; nothing in this command ran");
    match others.len() {
        0 => {}
        1 => s.push_str(&format!(", including {}", others.join(""))),
        n => {
            let (head, last) = others.split_at(n - 1);
            s.push_str(&format!(
                ", including {} and {}",
                head.join(", "),
                last.join("")
            ));
        }
    }
    s
}

/// The batch hold: a call allowed is held when another call of its batch
/// asks (or could not be read).
pub fn hold(results: Vec<(Verdict, bool)>) -> Vec<Verdict> {
    let askers: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, (_, a))| *a)
        .map(|(i, _)| i)
        .collect();
    results
        .into_iter()
        .enumerate()
        .map(|(i, (mut v, _))| {
            if v.decision == Decision::Allow && askers.iter().any(|&a| a != i) {
                v.decision = Decision::Ask;
                v.held = true;
                v.reason = format!("held for approval: {}", v.reason);
            }
            v
        })
        .collect()
}
