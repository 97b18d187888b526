//! The compiled engine: policies lowered into a first-match condition
//! program, with the session rules in tables of the front end's own.
//!
//! Lowering, policy by policy in decision order (enabled, by priority):
//!
//! * the scope is one or two tests shared by every entry of the policy: the
//!   action among the `actions` globs, the principal among the
//!   `principals` globs;
//! * a policy with session rules starts with a **session entry** (the scope
//!   and a residual check: the front end evaluates the session rules when
//!   the entry is a candidate);
//! * each rule is an entry whose tests are the scope and its conditions; a
//!   rule with a budget becomes up to three entries at its place: the cost
//!   above `maxCost` in the budget's currency (the rule's effect), and the
//!   two ways the budget cannot be checked (a cost that is not a number; a
//!   cost in another currency), which deny;
//! * a policy with a default ends with a **default entry** (the scope
//!   alone).
//!
//! The first entry, in that order, whose tests hold decides: the condition
//! program's smallest holding rule id. Entries carry a tag (their kind and
//! effect) and the rule's id and reason.
//!
//! Session rules are checked over **tokens**: every distinct step glob and
//! risk-weight glob is a token glob, compiled into one matcher (trie and
//! anchored DFAs over action types). Each action of the session is walked
//! once to the set of tokens it matches; a forbidden sequence is then a
//! chain automaton over those sets (state `k` advances on an action holding
//! step `k`'s token), and an action's risk weight is found by looking each
//! of its tokens up, by binary search, among the weight entries (sorted by
//! token).

use super::{
    budget_currency_reason, budget_not_number_reason, default_reason, max_actions_reason,
    risk_added, risk_reason, stored_session_reason, AuthensorEvaluator, AuthensorResult, Effect,
    Envelope, MatchedRule, Operator, Policies, Session, SessionViolation, Version, Violation,
    REASON_DAMAGED, REASON_NO_MATCH,
};
use crate::artifact::{self, LoadError};
use crate::compile::Writer;
use crate::conditions::{compile_with, Compiled, Limits, Outcome};
use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{Combining, Cond, FieldTest, Ir, IrGroup, IrRule, IrToken, Pred};
use crate::policy::List;
use crate::runtime::eval::{Budget, Sink};
use crate::runtime::program::NONE;
use bumpalo::Bump;
use serde_json::Value;
use std::collections::HashMap;

/// Entry kinds, in a tag's bits 2 and 3; the effect is in bits 0 and 1.
const K_RULE: u32 = 0;
const K_DEFAULT: u32 = 1;
const K_SESSION: u32 = 2;
const K_BUDGET: u32 = 3;

fn tag(kind: u32, effect: Effect) -> u32 {
    kind << 2 | effect.code()
}

/// The front end's tables, from the offset the program's header keeps.
///
/// * header (4 words): magic `TGA1`, number of policies, offset of the
///   policy records, reserved;
/// * policy record (4 words, one per group, in decision order): version
///   kind (0 none, 1 number, 2 text), version text (2), session record
///   (`NONE` when the policy has no session rules);
/// * session record (9 words): flags (bit 0 `maxActions`, bit 1 risk),
///   `maxActions` (low, high), `riskThreshold` (an `f64`'s bits, low,
///   high), risk weights (offset, count of 6-word entries sorted by token:
///   token, key position, weight low, high, key text (2)), sequences
///   (offset, count of 8-word records: id (2; length `NONE` when absent),
///   reason (2), effect, look-back (0: all), steps (offset, count of 3-word
///   entries: token, glob text (2))).
mod layout {
    pub const MAGIC: u32 = u32::from_le_bytes(*b"TGA1");
    pub const EXT_WORDS: u32 = 4;
    pub const POLICY_WORDS: u32 = 4;
    pub const SESSION_WORDS: u32 = 9;
    pub const WEIGHT_WORDS: u32 = 6;
    pub const SEQ_WORDS: u32 = 8;
    pub const STEP_WORDS: u32 = 3;
    pub const SF_MAX: u32 = 1;
    pub const SF_RISK: u32 = 2;
}
use layout::*;

/// Compiled policies (a first-match condition program and the session
/// tables).
///
/// Authensor policies get their own engine type, as Rubric bundles do:
/// their input (an envelope and its session), output (a decision with the
/// policy, rule and session violation) and combining (first match in
/// priority order) are their own, while the tables, the walker, the work
/// budget and the artifact are shared.
#[derive(Clone, Debug)]
pub struct AuthensorEngine<'a> {
    compiled: Compiled<'a>,
    ext: u32,
}

impl AuthensorEngine<'static> {
    /// Compiles policies.
    ///
    /// # Errors
    ///
    /// Globs or patterns that cannot be split into DFAs within the limits.
    pub fn build(policies: &Policies) -> Result<AuthensorEngine<'static>, Diagnostics> {
        AuthensorEngine::build_limited(policies, Limits::default())
    }

    /// As [`AuthensorEngine::build`], under `limits`.
    ///
    /// # Errors
    ///
    /// As [`AuthensorEngine::build`].
    pub fn build_limited(
        policies: &Policies,
        limits: Limits,
    ) -> Result<AuthensorEngine<'static>, Diagnostics> {
        let arena = Bump::new();
        let (ir, sessions) = lower(&arena, policies);
        let mut ext = |w: &mut Writer| write_ext(w, &sessions);
        let prog = compile_with(&ir, limits, Some(&mut ext))?;
        let compiled = Compiled::new(prog)
            .map_err(|e| Diagnostics::one(Diagnostic::new(DiagnosticKind::Internal, e)))?;
        AuthensorEngine::new(compiled)
            .map_err(|e| Diagnostics::one(Diagnostic::new(DiagnosticKind::Internal, e)))
    }
}

impl<'a> AuthensorEngine<'a> {
    fn new(compiled: Compiled<'a>) -> Result<AuthensorEngine<'a>, String> {
        if compiled.kind() != crate::conditions::layout::KIND_FIRST_MATCH {
            return Err("the tables are not a first-match program".into());
        }
        let Some(ext) = compiled.ext() else {
            return Err("the tables have no session tables".into());
        };
        let p = compiled.program();
        let n = u64::from(p.n_words());
        if p.w(ext) != MAGIC
            || u64::from(ext) + u64::from(EXT_WORDS) > n
            || p.w(ext.wrapping_add(1)) != compiled.n_groups()
            || u64::from(p.w(ext.wrapping_add(2)))
                + u64::from(compiled.n_groups()) * u64::from(POLICY_WORDS)
                > n
        {
            return Err("the session tables run past the table words".into());
        }
        Ok(AuthensorEngine { compiled, ext })
    }

    /// Loads an engine from an artifact `toolgate compile` wrote for
    /// Authensor policies, borrowing its tables.
    ///
    /// # Errors
    ///
    /// The check that refused the artifact. Loading never panics.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<AuthensorEngine<'a>, LoadError> {
        AuthensorEngine::load(bytes, &artifact::LoadOptions::default())
    }

    /// As [`AuthensorEngine::from_bytes`], under `options`.
    ///
    /// # Errors
    ///
    /// As [`AuthensorEngine::from_bytes`].
    pub fn load(
        bytes: &'a [u8],
        options: &artifact::LoadOptions,
    ) -> Result<AuthensorEngine<'a>, LoadError> {
        options.admit(bytes)?;
        let prog = artifact::read_authensor(bytes)?;
        options.settle(bytes)?;
        let compiled = Compiled::new(prog).map_err(artifact::layout_error)?;
        AuthensorEngine::new(compiled).map_err(artifact::layout_error)
    }

    /// The policies' tables as an artifact.
    pub fn to_bytes(&self) -> Vec<u8> {
        artifact::write(self.compiled.program(), artifact::ProgramKind::FirstMatch)
    }

    /// The engine with every table it borrows copied.
    pub fn into_owned(self) -> AuthensorEngine<'static> {
        AuthensorEngine {
            compiled: self.compiled.into_owned(),
            ext: self.ext,
        }
    }

    /// Decides an envelope: a pure function of the tables, the envelope and
    /// its session; no clock is read.
    pub fn decide(&self, env: &Envelope) -> AuthensorResult {
        if let Some(e) = env.error() {
            return AuthensorResult::unreadable(e);
        }
        if let Some(s) = env.session().filter(|s| s.stored) {
            let id = s.session_id.as_deref().unwrap_or_default();
            return AuthensorResult::fail_closed(stored_session_reason(id));
        }
        self.decide_on(env.value(), env.session())
    }

    /// Decides the envelope `value` on `session`, which a store kept: the
    /// session is lent, so a decision on a remembered history copies
    /// neither the envelope nor the history.
    pub(super) fn decide_on(&self, value: &Value, session: Option<&Session>) -> AuthensorResult {
        let c = &self.compiled;
        let mut found = SessionState::default();
        let outcome = c.decide_first(value, &mut |r| {
            self.check_session(r, value, session, &mut found)
        });
        let r = match outcome {
            Outcome::Empty | Outcome::Default => {
                return AuthensorResult::fail_closed(REASON_NO_MATCH)
            }
            Outcome::Damaged | Outcome::Errored(_) => {
                return AuthensorResult::fail_closed(REASON_DAMAGED)
            }
            Outcome::Rule(r) => r,
        };
        let t = c.rule_tag(r);
        let (kind, effect) = (t >> 2 & 3, Effect::from_code(t & 3));
        let Some(effect) = effect else {
            return AuthensorResult::fail_closed(REASON_DAMAGED);
        };
        let g = c.rule_group(r);
        let mut out = AuthensorResult {
            outcome: effect,
            reason: None,
            policy_id: Some(c.group_id(g).to_string()),
            policy_version: self.version(g),
            rule: None,
            session_violation: None,
        };
        let rule = |effect| {
            Some(MatchedRule {
                id: c.rule_id(r).to_string(),
                effect,
            })
        };
        match kind {
            K_RULE => {
                out.reason = c.rule_description(r).map(str::to_string);
                out.rule = rule(effect);
            }
            K_BUDGET => {
                out.outcome = Effect::Deny;
                out.reason = c.rule_description(r).map(str::to_string);
                out.rule = rule(Effect::Deny);
            }
            K_DEFAULT => out.reason = Some(default_reason(effect)),
            _ => match found.found.into_iter().find(|(e, _, _)| *e == r) {
                Some((_, v, effect)) => {
                    out.outcome = effect;
                    out.reason = Some(v.reason.clone());
                    out.session_violation = Some(v);
                }
                None => return AuthensorResult::fail_closed(REASON_DAMAGED),
            },
        }
        out
    }

    fn policy_at(&self, g: u32) -> u32 {
        let p = self.compiled.program();
        p.w(self.ext.wrapping_add(2))
            .wrapping_add(g.wrapping_mul(POLICY_WORDS))
    }

    fn version(&self, g: u32) -> Option<Version> {
        let p = self.compiled.program();
        let at = self.policy_at(g);
        let text = p.ws(at.wrapping_add(1));
        match p.w(at) {
            1 => text.parse().ok().map(Version::Number),
            2 => Some(Version::Text(text.to_string())),
            _ => None,
        }
    }

    /// The residual check of entry `r`: for a session entry, whether the
    /// session rules of its policy are violated (`None`: damaged tables).
    fn check_session(
        &self,
        r: u32,
        value: &Value,
        session: Option<&Session>,
        st: &mut SessionState,
    ) -> Option<bool> {
        let c = &self.compiled;
        if c.rule_tag(r) >> 2 & 3 != K_SESSION {
            return Some(true);
        }
        let p = c.program();
        let sess = p.w(self.policy_at(c.rule_group(r)).wrapping_add(3));
        if u64::from(sess) + u64::from(SESSION_WORDS) > u64::from(p.n_words()) {
            return None;
        }
        let history = session.map_or(&[][..], |s| s.actions.as_slice());
        let history_risk = session.map_or(&[][..], |s| s.risk_scores.as_slice());
        let proposed = super::action_of(value);
        let n = history.len() + 1;
        let action = |i: usize| history.get(i).map_or(proposed, String::as_str);
        let risk = |i: usize| {
            if i + 1 == n {
                super::risk_score_of(value)
            } else {
                history_risk.get(i).copied().unwrap_or(0.0)
            }
        };
        if st.budget.is_none() {
            let bytes: usize = history.iter().map(String::len).sum::<usize>() + proposed.len();
            // A sound decision visits each session word at most once per
            // action of the window (sequences step through the window,
            // weights are looked up per action), so tables × history bounds
            // it; only damaged tables can run past that.
            let words = u64::from(p.n_words()).saturating_mul(n as u64 + 1);
            st.budget = Some(Budget::new(words, (bytes + n) as u64));
        }
        let budget = st.budget.as_ref()?;
        let flags = p.w(sess);

        if flags & SF_MAX != 0 {
            let max =
                u64::from(p.w(sess.wrapping_add(1))) | u64::from(p.w(sess.wrapping_add(2))) << 32;
            let count = n as u64;
            if count > max {
                let v = SessionViolation {
                    violation: Violation::MaxActions { count, max },
                    reason: max_actions_reason(count, max),
                };
                st.found.push((r, v, Effect::Deny));
                return Some(true);
            }
        }

        let (seqs, n_seqs) = (p.w(sess.wrapping_add(7)), p.w(sess.wrapping_add(8)));
        let (weights, n_weights) = (p.w(sess.wrapping_add(5)), p.w(sess.wrapping_add(6)));
        if n_seqs == 0 && n_weights == 0 && flags & SF_RISK == 0 {
            return Some(false);
        }
        if st.tokens.is_none() {
            st.tokens = Some(self.classify(n, &action, budget)?);
        }
        let tokens = st.tokens.as_ref()?;

        for k in 0..n_seqs.min(p.n_words()) {
            let rec = seqs.wrapping_add(k.wrapping_mul(SEQ_WORDS));
            let (steps, n_steps) = (p.w(rec.wrapping_add(6)), p.w(rec.wrapping_add(7)));
            if n_steps < 2 || n_steps > p.n_words() {
                continue;
            }
            let lookback = p.w(rec.wrapping_add(5)) as usize;
            let start = if lookback == 0 || lookback >= n {
                0
            } else {
                n - lookback
            };
            let mut state = 0u32;
            for i in start..n {
                if !budget.spend(1) {
                    return None;
                }
                let want = p.w(steps.wrapping_add(state.wrapping_mul(STEP_WORDS)));
                if tokens.of(i).binary_search(&want).is_ok() {
                    state += 1;
                    if state == n_steps {
                        break;
                    }
                }
            }
            if state == n_steps {
                let effect = Effect::from_code(p.w(rec.wrapping_add(4)))?;
                let sequence = (0..n_steps)
                    .map(|s| {
                        p.ws(steps
                            .wrapping_add(s.wrapping_mul(STEP_WORDS))
                            .wrapping_add(1))
                            .to_string()
                    })
                    .collect();
                let id = p.has(rec).then(|| p.ws(rec).to_string());
                let v = SessionViolation {
                    violation: Violation::ForbiddenSequence { sequence, id },
                    reason: p.ws(rec.wrapping_add(2)).to_string(),
                };
                st.found.push((r, v, effect));
                return Some(true);
            }
        }

        if flags & SF_RISK != 0 {
            let max = f64::from_bits(
                u64::from(p.w(sess.wrapping_add(3))) | u64::from(p.w(sess.wrapping_add(4))) << 32,
            );
            let entries = p
                .words
                .get(weights as usize..)
                .and_then(|w| w.get(..(n_weights as usize).checked_mul(WEIGHT_WORDS as usize)?))?;
            let mut score = 0.0f64;
            // Actions of one type share their tokens, hence their weight.
            let mut known = [((0, 0), 0.0f64); DISTINCT_ACTIONS];
            let mut n_known = 0;
            for i in 0..n {
                if !budget.spend(1) {
                    return None;
                }
                let span = tokens.span(i);
                let seen = known.get(..n_known).unwrap_or_default();
                let w = match seen.iter().find(|(s, _)| *s == span) {
                    Some(&(_, w)) => w,
                    None => {
                        let w = self.weight(entries, tokens.of(i), action(i), budget)?;
                        if let Some(slot) = known.get_mut(n_known) {
                            *slot = (span, w);
                            n_known += 1;
                        }
                        w
                    }
                };
                score += w;
                score += risk_added(risk(i));
            }
            if score > max {
                let v = SessionViolation {
                    violation: Violation::RiskThreshold { score, max },
                    reason: risk_reason(score, max),
                };
                st.found.push((r, v, Effect::Deny));
                return Some(true);
            }
        }
        Some(false)
    }

    /// The weight of an action: the key equal to it, else the first key (in
    /// the order written) whose glob matches it, else 0.
    fn weight(
        &self,
        entries: &[u32],
        tokens: &[u32],
        action: &str,
        budget: &Budget,
    ) -> Option<f64> {
        let p = self.compiled.program();
        let mut best: Option<(bool, u32, f64)> = None;
        for &t in tokens {
            if !budget.spend(1) {
                return None;
            }
            // The entries are sorted by token: a binary search.
            let size = WEIGHT_WORDS as usize;
            let key = |k: usize| entries.get(k * size).copied().unwrap_or(NONE);
            let (mut lo, mut hi) = (0, entries.len() / size);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if key(mid) < t {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if key(lo) != t {
                continue;
            }
            let e = entries.get(lo * size..)?;
            let (pos, lo, hi, off, len) =
                (*e.get(1)?, *e.get(2)?, *e.get(3)?, *e.get(4)?, *e.get(5)?);
            let exact = p.bytes_at(off, len) == action.as_bytes();
            let w = f64::from_bits(u64::from(lo) | u64::from(hi) << 32);
            let better = match best {
                None => true,
                Some((bx, bp, _)) => (exact, std::cmp::Reverse(pos)) > (bx, std::cmp::Reverse(bp)),
            };
            if better {
                best = Some((exact, pos, w));
            }
        }
        Some(best.map_or(0.0, |b| b.2))
    }

    /// The tokens each action of the session matches.
    fn classify<'s>(
        &self,
        n: usize,
        action: &dyn Fn(usize) -> &'s str,
        budget: &Budget,
    ) -> Option<Tokens> {
        let c = &self.compiled;
        let n_tokens = c.n_tokens().min(c.program().n_words()) as usize;
        let mut sink = TokenSink {
            stamp: vec![0; n_tokens],
            gen: 0,
            out: Vec::new(),
            budget,
        };
        // A session repeats a few action types many times: each distinct
        // one is walked once and the others share its tokens. Only the
        // first few distinct types are looked up, so the lookup stays
        // within a constant per action.
        // On the stack: a session of one action allocates nothing more.
        let mut distinct = [("", (0, 0)); DISTINCT_ACTIONS];
        let mut n_distinct = 0;
        let mut spans = Vec::with_capacity(n);
        for i in 0..n {
            let a = action(i);
            let seen = distinct.get(..n_distinct).unwrap_or_default();
            if let Some((_, span)) = seen.iter().find(|(d, _)| *d == a) {
                spans.push(*span);
                continue;
            }
            sink.gen += 1;
            let start = sink.out.len();
            c.walk_tokens(a, &mut sink);
            if let Some(list) = sink.out.get_mut(start..) {
                list.sort_unstable();
            }
            let span = (start, sink.out.len());
            spans.push(span);
            if let Some(slot) = distinct.get_mut(n_distinct) {
                *slot = (a, span);
                n_distinct += 1;
            }
        }
        if budget.exhausted() {
            return None;
        }
        Some(Tokens {
            spans,
            toks: sink.out,
        })
    }
}

impl AuthensorEvaluator for AuthensorEngine<'_> {
    fn decide(&self, envelope: &Envelope) -> AuthensorResult {
        AuthensorEngine::decide(self, envelope)
    }
}

impl AuthensorEngine<'_> {
    /// The enabled policies the tables hold, in decision order (disabled
    /// policies are not compiled). Never panics on tables that loaded.
    pub fn policies(&self) -> Vec<super::PolicySummary> {
        let c = &self.compiled;
        let p = c.program();
        let n_groups = c.n_groups().min(p.n_words());
        let mut out: Vec<super::PolicySummary> = (0..n_groups)
            .map(|g| super::PolicySummary {
                id: c.group_id(g).to_string(),
                version: self.version(g),
                rules: 0,
                default_effect: None,
                session_rules: p.w(self.policy_at(g).wrapping_add(3)) != NONE,
            })
            .collect();
        let n_rules = p.h(crate::conditions::layout::H_N_RULES).min(p.n_words());
        for r in 0..n_rules {
            let t = c.rule_tag(r);
            let Some(s) = out.get_mut(c.rule_group(r) as usize) else {
                continue;
            };
            // A budget's other entries (kind `K_BUDGET`) belong to the rule
            // whose `K_RULE` entry is counted.
            match t >> 2 & 3 {
                K_RULE => s.rules += 1,
                K_DEFAULT => s.default_effect = Effect::from_code(t & 3),
                _ => {}
            }
        }
        out
    }
}

/// What the session checks of one decision share.
#[derive(Default)]
struct SessionState {
    budget: Option<Budget>,
    tokens: Option<Tokens>,
    /// The violations found, by entry.
    found: Vec<(u32, SessionViolation, Effect)>,
}

/// The tokens of each action: `toks[offs[i]..offs[i + 1]]`, sorted.
struct Tokens {
    /// Each action's tokens, as a range of `toks` (actions of one type
    /// share theirs).
    spans: Vec<(usize, usize)>,
    toks: Vec<u32>,
}

/// How many distinct action types of a session [`Tokens`] shares tokens
/// between.
const DISTINCT_ACTIONS: usize = 16;

impl Tokens {
    /// Where action `i`'s tokens are: equal for actions of one type, and
    /// for actions that match no token.
    fn span(&self, i: usize) -> (usize, usize) {
        self.spans.get(i).copied().unwrap_or_default()
    }

    fn of(&self, i: usize) -> &[u32] {
        self.spans
            .get(i)
            .and_then(|&(a, b)| self.toks.get(a..b))
            .unwrap_or_default()
    }
}

/// Collects the tokens one action matches, each once.
struct TokenSink<'b> {
    stamp: Vec<u32>,
    gen: u32,
    out: Vec<u32>,
    budget: &'b Budget,
}

impl Sink for TokenSink<'_> {
    fn wants(&self, id: u32) -> bool {
        self.stamp.get(id as usize).is_some_and(|&s| s != self.gen)
    }
    fn offer(&mut self, id: u32) {
        if let Some(s) = self.stamp.get_mut(id as usize) {
            if *s != self.gen {
                *s = self.gen;
                self.out.push(id);
            }
        }
    }
    fn spend(&mut self, units: u64) -> bool {
        self.budget.spend(units)
    }
}

/// A risk weight: its glob's token, its position among the weights, the
/// weight and the glob.
type WeightIn = (u32, u32, f64, String);

/// A forbidden sequence: id, reason, effect, look-back, steps (token, glob).
type SeqIn = (Option<String>, String, Effect, u32, Vec<(u32, String)>);

/// A policy's session rules, with their globs numbered as tokens.
struct SessionIn {
    max_actions: Option<u64>,
    /// The threshold and the weights, sorted by token.
    risk: Option<(f64, Vec<WeightIn>)>,
    seqs: Vec<SeqIn>,
}

/// Each policy's version and session rules, in decision order.
type Sessions = Vec<(Option<Version>, Option<SessionIn>)>;

/// The first-match program of the policies in the one IR, in `arena`, and
/// each policy's session rules (in decision order). Each entry's list is
/// the effect its tag carries (the compiler reads neither: the first entry
/// whose tests hold decides).
fn lower<'a>(arena: &'a Bump, policies: &Policies) -> (Ir<'a>, Sessions) {
    let mut ir = Ir::conditions(arena, Combining::FirstMatch { tokens: &[] });
    let text = |s: &str| -> &'a str { arena.alloc_str(s) };
    let texts = |items: &[String]| -> &'a [&'a str] {
        let v: Vec<&'a str> = items.iter().map(|s| text(s)).collect();
        arena.alloc_slice_copy(&v)
    };
    let test = |field: &str, negated: bool, pred: Pred<'a>| {
        Cond::Field(FieldTest {
            field: text(field),
            negated,
            pred,
        })
    };
    let mut tokens: Vec<IrToken<'a>> = Vec::new();
    let mut token_ids: HashMap<String, u32> = HashMap::new();
    let mut token = |tokens: &mut Vec<IrToken<'a>>, g: &str| -> u32 {
        *token_ids.entry(g.to_string()).or_insert_with(|| {
            tokens.push(IrToken {
                sep: '.',
                glob: text(g),
            });
            tokens.len() as u32 - 1
        })
    };
    let mut sessions = Vec::new();
    for (gi, p) in policies.decision_order().into_iter().enumerate() {
        let group = gi as u32;
        ir.groups.push(IrGroup {
            id: text(&p.id),
            version: 0,
            default: Decision::Deny,
            errored: false,
        });
        let mut scope: Vec<Cond<'a>> = Vec::new();
        if !p.scope.actions.is_empty() {
            let globs = texts(&p.scope.actions);
            scope.push(test("action", false, Pred::Glob { sep: '.', globs }));
        }
        if !p.scope.principals.is_empty() {
            let globs = texts(&p.scope.principals);
            scope.push(test("principalId", false, Pred::Glob { sep: '.', globs }));
        }
        let entry = |id: &str, description: Option<&str>, tag: u32, tests: &[Cond<'a>]| {
            let list = match Effect::from_code(tag & 3) {
                Some(Effect::Allow) => List::Allow,
                Some(Effect::RequireApproval) => List::Ask,
                _ => List::Deny,
            };
            let mut r = IrRule::on_request(list, text(id), group, arena.alloc_slice_copy(tests));
            r.note = description.map(text);
            r.tag = tag;
            r
        };
        let session = p.session_rules.as_ref().map(|s| {
            let mut e = entry(
                "",
                None,
                super::Effect::Deny.code() | K_SESSION << 2,
                &scope,
            );
            e.residual = true;
            ir.rules.push(e);
            let seqs = s
                .forbidden_sequences
                .iter()
                .filter(|q| q.actions.len() >= 2)
                .map(|q| {
                    let steps = q
                        .actions
                        .iter()
                        .map(|a| (token(&mut tokens, a), a.clone()))
                        .collect();
                    let lookback = q
                        .lookback
                        .map_or(0, |l| u32::try_from(l).unwrap_or(u32::MAX));
                    (q.id.clone(), q.reason_text(), q.effect, lookback, steps)
                })
                .collect();
            let risk = s.risk_threshold.map(|max| {
                let mut w: Vec<WeightIn> = s
                    .risk_weights
                    .iter()
                    .enumerate()
                    .map(|(k, (g, x))| (token(&mut tokens, g), k as u32, *x, g.clone()))
                    .collect();
                w.sort_by_key(|e| e.0);
                (max, w)
            });
            SessionIn {
                max_actions: s.max_actions,
                risk,
                seqs,
            }
        });
        sessions.push((p.version.clone(), session));
        for (ri, r) in p.rules.iter().enumerate() {
            let name = r.name(ri);
            let mut tests = scope.clone();
            tests.extend(r.conditions.iter().map(|c| {
                let (pred, negated) = match &c.op {
                    Operator::Pattern(g) => (
                        Pred::Glob {
                            sep: Operator::separator(&c.field),
                            globs: arena.alloc_slice_copy(&[text(g)]),
                        },
                        false,
                    ),
                    Operator::Equals(s) => (Pred::Equals(text(s)), false),
                    Operator::In(items) => (Pred::OneOf(texts(items)), false),
                    Operator::NotIn(items) => (Pred::OneOf(texts(items)), true),
                    Operator::Regex(p) => (Pred::Search(text(p)), false),
                };
                test(&c.field, negated, pred)
            }));
            let Some(b) = &r.budget else {
                ir.rules.push(entry(
                    &name,
                    r.reason.as_deref(),
                    tag(K_RULE, r.effect),
                    &tests,
                ));
                continue;
            };
            const COST: &str = "constraints.maxAmount";
            const CURRENCY: &str = "constraints.currency";
            let mut fire = tests.clone();
            fire.push(test(COST, false, Pred::Above(b.max_cost)));
            if let Some(cur) = &b.currency {
                fire.push(test(CURRENCY, false, Pred::Equals(text(cur))));
            }
            ir.rules.push(entry(
                &name,
                r.reason.as_deref(),
                tag(K_RULE, r.effect),
                &fire,
            ));
            let mut not_number = tests.clone();
            not_number.push(test(COST, false, Pred::Present));
            not_number.push(test(COST, true, Pred::Number));
            ir.rules.push(entry(
                &name,
                Some(&budget_not_number_reason(&name)),
                tag(K_BUDGET, Effect::Deny),
                &not_number,
            ));
            if let Some(cur) = &b.currency {
                let mut other = tests;
                other.push(test(COST, false, Pred::Number));
                other.push(test(CURRENCY, true, Pred::Equals(text(cur))));
                ir.rules.push(entry(
                    &name,
                    Some(&budget_currency_reason(&name, cur)),
                    tag(K_BUDGET, Effect::Deny),
                    &other,
                ));
            }
        }
        if let Some(d) = p.default_effect {
            ir.rules.push(entry("", None, tag(K_DEFAULT, d), &scope));
        }
    }
    ir.combining = Combining::FirstMatch {
        tokens: arena.alloc_slice_copy(&tokens),
    };
    (ir, sessions)
}

fn f64_words(x: f64) -> [u32; 2] {
    let b = x.to_bits();
    [b as u32, (b >> 32) as u32]
}

/// Writes the front end's tables; returns their offset.
fn write_ext(w: &mut Writer, policies: &[(Option<Version>, Option<SessionIn>)]) -> u32 {
    let mut records = Vec::with_capacity(policies.len());
    for (version, session) in policies {
        let (vk, vs) = match version {
            None => (0, (0, NONE)),
            Some(Version::Number(n)) => (1, w.str(&n.to_string())),
            Some(Version::Text(t)) => (2, w.str(t)),
        };
        let sess = match session {
            None => NONE,
            Some(s) => {
                let weights_at = w.here();
                let weights = s.risk.as_ref().map_or(&[][..], |r| r.1.as_slice());
                for (tok, pos, x, key) in weights {
                    let k = w.str(key);
                    let [lo, hi] = f64_words(*x);
                    w.words.extend_from_slice(&[*tok, *pos, lo, hi, k.0, k.1]);
                }
                let mut seq_recs = Vec::new();
                for (id, reason, effect, lookback, steps) in &s.seqs {
                    let steps_at = w.here();
                    for (tok, g) in steps {
                        let gs = w.str(g);
                        w.words.extend_from_slice(&[*tok, gs.0, gs.1]);
                    }
                    let id = id.as_deref().map_or((0, NONE), |i| w.str(i));
                    let reason = w.str(reason);
                    seq_recs.push([
                        id.0,
                        id.1,
                        reason.0,
                        reason.1,
                        effect.code(),
                        *lookback,
                        steps_at,
                        steps.len() as u32,
                    ]);
                }
                let seqs_at = w.here();
                for r in &seq_recs {
                    w.words.extend_from_slice(r);
                }
                let at = w.here();
                let max = s.max_actions.unwrap_or(0);
                let [tlo, thi] = f64_words(s.risk.as_ref().map_or(0.0, |r| r.0));
                let flags = if s.max_actions.is_some() { SF_MAX } else { 0 }
                    | if s.risk.is_some() { SF_RISK } else { 0 };
                w.words.extend_from_slice(&[
                    flags,
                    max as u32,
                    (max >> 32) as u32,
                    tlo,
                    thi,
                    weights_at,
                    weights.len() as u32,
                    seqs_at,
                    seq_recs.len() as u32,
                ]);
                at
            }
        };
        records.push([vk, vs.0, vs.1, sess]);
    }
    let records_at = w.here();
    for r in &records {
        w.words.extend_from_slice(r);
    }
    let at = w.here();
    w.words
        .extend_from_slice(&[MAGIC, policies.len() as u32, records_at, 0]);
    at
}
