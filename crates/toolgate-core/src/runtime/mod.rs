//! The runtime: deciding calls over compiled tables.
//!
//! A decision reads a [`Program`] (the policy's tables) and, when grant sets
//! are active, one small program per set, in the order their rules are
//! consulted. It splits the call into subjects with the tool's splitter,
//! decides each subject ([`eval`]), and folds the subjects to the strictest.
//! The result is a [`CallResult`]: the decision and what it rests on, with no
//! text rendered; `engine` turns it into a [`crate::Verdict`].
//!
//! Invariant: this module never depends on pest, bumpalo, `ir`, `check`,
//! `compile` or `reference`. It never panics on any program that loaded, and
//! every error on the decision side ends in a deny.

pub mod eval;
pub mod inner;
pub mod program;

pub use program::Program;

use crate::call::{Args, Call, Subject};
use crate::decision::Decision;
use crate::registry::CallContext;
use eval::{Allowing, Budget, CarveSink, RuleSink};
use program::{H_NAME_FM, NONE, T_CARVE_FM, T_RULES_FM};

/// One program consulted by a decision: the policy's, or a grant set's.
#[derive(Clone, Copy, Debug)]
pub struct Component<'p, 'a> {
    /// The tables.
    pub prog: &'p Program<'a>,
    /// For a grant set: its source's rank and name, which decide whose ask
    /// rules its allow rules shadow. `None` for the policy.
    pub set: Option<(i64, &'p str)>,
}

/// What a subject's decision rests on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Basis {
    /// A rule of component `comp` fired.
    Rule {
        /// The component.
        comp: usize,
        /// The rule id in that component's program.
        id: u32,
    },
    /// The call runs confined, so this bare ask rule did not ask.
    Confined {
        /// The component.
        comp: usize,
        /// The skipped ask rule.
        id: u32,
    },
    /// No rule fired; the policy's default applied.
    Default,
    /// The call could not be evaluated (its arguments could not be read, or
    /// its splitter failed): the text says why.
    Unevaluable(String),
}

/// The decision on one subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubjectResult {
    /// `None` for a constraint subject no deny or ask rule reached.
    pub decision: Option<Decision>,
    /// What it rests on.
    pub basis: Basis,
}

/// The decision on a call, before its text is rendered.
#[derive(Clone, Debug, PartialEq)]
pub struct CallResult {
    /// The folded decision.
    pub decision: Decision,
    /// What the kept subject's decision rests on.
    pub basis: Basis,
    /// The subjects the splitter returned (empty for a call not split).
    pub subjects: Vec<Subject>,
    /// The kept subject's index in `subjects`.
    pub kept: usize,
    /// Whether the call's tool has a splitter that split it.
    pub split: bool,
}

impl CallResult {
    /// The tool the kept subject was decided against.
    pub fn tool<'c>(&'c self, call: &'c Call) -> &'c str {
        self.subjects
            .get(self.kept)
            .and_then(|s| s.tool.as_deref())
            .filter(|t| !t.is_empty())
            .unwrap_or(&call.tool)
    }

    fn unevaluable(why: String) -> CallResult {
        CallResult {
            decision: Decision::Deny,
            basis: Basis::Unevaluable(why),
            subjects: Vec::new(),
            kept: 0,
            split: false,
        }
    }
}

/// Calls matcher kinds for specifiers that did not lower.
fn callback<'p>(prog: &'p Program<'_>) -> impl Fn(u32, &str, &str) -> bool + 'p {
    move |tool, spec, value| {
        prog.kinds
            .get(tool as usize)
            .and_then(Option::as_ref)
            .is_some_and(|k| k.matches(spec, value))
    }
}

/// Decides one subject of `tool` with `args` over `comps`.
///
/// `confined` is whether the call runs confined and the subject is decided
/// against the called tool; `constraint` limits the decision to deny and ask.
pub fn decide_subject(
    comps: &[Component<'_, '_>],
    tool: &str,
    args: &Args,
    context: &CallContext<'_>,
    confined: bool,
    constraint: bool,
) -> SubjectResult {
    decide_subject_at(comps, tool, None, args, context, confined, constraint)
}

/// As [`decide_subject`], with the tool's record in the first component when
/// the caller has already looked it up.
fn decide_subject_at(
    comps: &[Component<'_, '_>],
    tool: &str,
    first: Option<u32>,
    args: &Args,
    context: &CallContext<'_>,
    confined: bool,
    constraint: bool,
) -> SubjectResult {
    if let Some(e) = args.error() {
        return SubjectResult {
            decision: Some(Decision::Deny),
            basis: Basis::Unevaluable(format!("its arguments could not be read: {e}")),
        };
    }
    // The tool record in each component, and the value its matcher reads.
    let mut small = [NONE; 4];
    let mut large = Vec::new();
    let tools: &mut [u32] = if comps.len() <= small.len() {
        small.get_mut(..comps.len()).unwrap_or_default()
    } else {
        large.resize(comps.len(), NONE);
        &mut large
    };
    let mut raw: Option<(&str, &Program<'_>, u32)> = None;
    for (i, (slot, c)) in tools.iter_mut().zip(comps).enumerate() {
        let view = c.prog.view();
        *slot = match (i, first) {
            (0, Some(t)) => t,
            _ => view.find_tool(tool).unwrap_or(NONE),
        };
        if raw.is_none() && *slot != NONE {
            raw = view
                .tool_field(*slot)
                .and_then(|f| args.str_member_bytes(f))
                .map(|v| (v, c.prog, *slot));
        }
    }
    let tools: &[u32] = tools;
    // The value as the tool's matcher kind reads it.
    let normalized = match raw {
        None => None,
        Some((v, prog, t)) => match prog.kinds.get(t as usize).and_then(Option::as_ref) {
            None => Some(std::borrow::Cow::Borrowed(v)),
            Some(kind) => match kind.normalize(v, context) {
                Ok(n) => Some(n),
                Err(e) => {
                    return SubjectResult {
                        decision: Some(Decision::Deny),
                        basis: Basis::Unevaluable(e.to_string()),
                    }
                }
            },
        },
    };
    let value: Option<&str> = normalized.as_deref();
    let words: u64 = comps.iter().map(|c| c.prog.words.len() as u64).sum();
    let len = value.map_or(tool.len(), str::len) as u64;
    let budget = Budget::new(words, len);

    // Pass 1: carve-outs.
    let mut carve = [None; 3];
    if let Some(v) = value {
        for (&t, c) in tools.iter().zip(comps) {
            if t == NONE {
                continue;
            }
            let view = c.prog.view();
            let fm = view
                .tool(t)
                .and_then(|r| r.get(T_CARVE_FM as usize).copied())
                .unwrap_or(NONE);
            if fm == NONE {
                continue;
            }
            let cb = callback(c.prog);
            let mut sink = CarveSink {
                view,
                max: &mut carve,
                budget: &budget,
            };
            view.walk(&c.prog.dfas, fm, t, v, &mut sink, &cb);
        }
    }

    // Pass 2: which grant sets allow the subject.
    let mut allowing: Vec<Allowing<'_>> = Vec::new();
    for (&t, c) in tools.iter().zip(comps) {
        let Some((rank, name)) = c.set else { continue };
        let mut sink = RuleSink::new(
            c.prog.view(),
            tool,
            &budget,
            &carve,
            &[],
            false,
            [false, false, true],
        );
        run_rules(c.prog, t, tool, value, &mut sink);
        if sink.best[2] != NONE {
            allowing.push(Allowing { rank, name });
        }
    }

    // Pass 3: the first accepted rule of each list, component by component.
    let mut found: [Option<(usize, u32)>; 3] = [None; 3];
    let mut skipped: Option<(usize, u32)> = None;
    for (i, (&t, c)) in tools.iter().zip(comps).enumerate() {
        let want = [
            found[0].is_none(),
            found[1].is_none(),
            found[2].is_none() && !constraint,
        ];
        if want == [false, false, false] {
            break;
        }
        let mut sink = RuleSink::new(
            c.prog.view(),
            tool,
            &budget,
            &carve,
            &allowing,
            confined,
            want,
        );
        run_rules(c.prog, t, tool, value, &mut sink);
        for (slot, &b) in found.iter_mut().zip(sink.best.iter()) {
            if slot.is_none() && b != NONE {
                *slot = Some((i, b));
            }
        }
        if skipped.is_none() && sink.confined_skip != NONE {
            skipped = Some((i, sink.confined_skip));
        }
    }

    if budget.exhausted() {
        return SubjectResult {
            decision: Some(Decision::Deny),
            basis: Basis::Unevaluable(
                "deciding it took more work than the tables allow: they are damaged".into(),
            ),
        };
    }
    let rule = |d, (comp, id)| SubjectResult {
        decision: Some(d),
        basis: Basis::Rule { comp, id },
    };
    if let Some(f) = found[0] {
        return rule(Decision::Deny, f);
    }
    if let Some(f) = found[1] {
        return rule(Decision::Ask, f);
    }
    if constraint {
        return SubjectResult {
            decision: None,
            basis: Basis::Default,
        };
    }
    if let Some((comp, id)) = skipped {
        return SubjectResult {
            decision: Some(Decision::Allow),
            basis: Basis::Confined { comp, id },
        };
    }
    if let Some(f) = found[2] {
        return rule(Decision::Allow, f);
    }
    SubjectResult {
        decision: comps.first().map(|c| c.prog.default_decision()),
        basis: Basis::Default,
    }
}

/// Offers the rules of tool record `t` (or, for a tool the program does not
/// name, its tool-name globs) to `sink`.
fn run_rules(
    prog: &Program<'_>,
    t: u32,
    tool: &str,
    value: Option<&str>,
    sink: &mut RuleSink<'_, '_>,
) {
    let view = sink.view;
    if t == NONE {
        let fm = prog.h(H_NAME_FM);
        view.walk(&prog.dfas, fm, NONE, tool, sink, &|_, _, _| false);
        return;
    }
    view.offer_always(t, sink);
    if let Some(v) = value {
        let fm = view
            .tool(t)
            .and_then(|r| r.get(T_RULES_FM as usize).copied())
            .unwrap_or(NONE);
        if fm != NONE {
            let cb = callback(prog);
            view.walk(&prog.dfas, fm, t, v, sink, &cb);
        }
    }
}

/// Decides a call: splits it, decides every subject, folds to the strictest.
pub fn decide_call(comps: &[Component<'_, '_>], call: &Call) -> CallResult {
    if let Some(e) = call.intake_error() {
        return CallResult::unevaluable(e);
    }
    let confined = call.confined.is_some();
    let context = CallContext {
        cwd: call.cwd.as_deref(),
    };
    let first = comps.first().and_then(|c| c.prog.find_tool(&call.tool));
    let splitter = comps.iter().enumerate().find_map(|(i, c)| {
        let t = if i == 0 {
            first?
        } else {
            c.prog.find_tool(&call.tool)?
        };
        c.prog.splitters.get(t as usize)?.as_ref()
    });
    let Some(splitter) = splitter else {
        let r = decide_subject_at(
            comps,
            &call.tool,
            Some(first.unwrap_or(NONE)),
            &call.args,
            &context,
            confined,
            false,
        );
        return CallResult {
            decision: r.decision.unwrap_or(Decision::Deny),
            basis: r.basis,
            subjects: Vec::new(),
            kept: 0,
            split: false,
        };
    };
    let mut subjects = match splitter.split(&call.tool, &call.args) {
        Ok(s) if s.is_empty() => {
            return CallResult::unevaluable("splitter returned no subjects".into())
        }
        Ok(s) => s,
        Err(e) => return CallResult::unevaluable(e.to_string()),
    };
    if subjects.iter().all(|s| s.constrain) {
        subjects.insert(0, Subject::new(call.args.clone(), ""));
    }
    // A subject that cannot be read makes the whole call one that could not
    // be evaluated, whatever the other subjects decide.
    if let Some(e) = subjects.iter().find_map(|s| s.args.error()) {
        return CallResult::unevaluable(format!("its arguments could not be read: {e}"));
    }
    let mut best: Option<(Decision, Basis, usize)> = None;
    for (i, s) in subjects.iter().enumerate() {
        let tool = s
            .tool
            .as_deref()
            .filter(|t| !t.is_empty())
            .unwrap_or(&call.tool);
        let own = tool == call.tool;
        let r = decide_subject(comps, tool, &s.args, &context, confined && own, s.constrain);
        if let Basis::Unevaluable(why) = r.basis {
            return CallResult::unevaluable(why);
        }
        let Some(d) = r.decision else { continue };
        if best.as_ref().is_none_or(|(b, _, _)| d > *b) {
            best = Some((d, r.basis, i));
        }
    }
    match best {
        Some((decision, basis, kept)) => CallResult {
            decision,
            basis,
            subjects,
            kept,
            split: true,
        },
        None => CallResult::unevaluable("no subject could be decided".into()),
    }
}
