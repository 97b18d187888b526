//! An [`Ir`] that combines first-deny, last-allow or first-match into
//! tables: predicates, rules as literal lists anchored on a predicate,
//! tries, anchored DFAs, and the needles and patterns each field's scan is
//! built from at load.
//!
//! Both modes lower into one internal form (groups, and rules whose
//! literals are predicates on fields) that [`build`] compiles; they differ
//! in what their conditions lower to (Rubric's operators or Authensor's
//! predicates, both [`Pred`]s) and in how the rules combine.

use super::layout::*;
use super::value::js_number;
use super::{glob, pattern, Limits, MAX_TAG};
use crate::compile::trie::Trie;
use crate::compile::Writer;
use crate::decision::Decision;
use crate::diag::DiagnosticKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{Combining, Cond, Ir, IrGate, IrToken, Op, Operand, Pred};
use crate::policy::List;
use crate::runtime::program::{Dfa, Program, NONE};
use std::borrow::Cow;
use std::collections::HashMap;

/// What a predicate tests, on the field it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// `eq` on a string field.
    EqStr(String),
    /// `eq` on a number field: the number's text, which is injective on
    /// numbers up to `0 == -0`, exactly as `===` is.
    EqNum(String),
    /// `eq` on a boolean field.
    EqBool(bool),
    /// `in`: the sorted, distinct stringified items.
    In(Vec<String>),
    StartsWith(String),
    EndsWith(String),
    /// A non-empty needle.
    Contains(String),
    /// The translated pattern.
    Matches(String),
    /// A string field matching one of the segment globs (sorted, distinct)
    /// with the separator.
    Globs(char, Vec<String>),
    /// A string field equal to one of the items (sorted, distinct).
    InStr(Vec<String>),
    /// The translated pattern occurring in a string field.
    Search(String),
    /// A number field above the number with these bits.
    Above(u64),
    /// A field of this type (`PT_ANY`: any field that resolves).
    Is(u32),
}

impl Kind {
    /// The JSON type a field must have for the predicate to hold.
    fn pred_type(&self) -> u32 {
        match self {
            Kind::EqStr(_) | Kind::Globs(..) | Kind::InStr(_) | Kind::Search(_) => PT_STRING,
            Kind::EqNum(_) | Kind::Above(_) => PT_NUMBER,
            Kind::EqBool(_) => PT_BOOL,
            Kind::Is(t) => *t,
            Kind::In(_)
            | Kind::StartsWith(_)
            | Kind::EndsWith(_)
            | Kind::Contains(_)
            | Kind::Matches(_) => PT_ANY,
        }
    }
}

/// One literal of a rule's conjunction.
enum Lit {
    /// A predicate, positive or negated.
    Pred(u32, bool),
    /// Always false: the rule never matches.
    Never,
    /// Always true: nothing to test.
    Always,
}

/// A condition lowered by its front end: the predicate it tests and
/// whether it negates it, `Ok(None)` with the constant truth for a
/// condition that does not depend on the request, or why its pattern does
/// not compile.
struct LitIn<'a> {
    field: &'a str,
    lowered: Result<Option<(Kind, bool)>, String>,
    constant: bool,
    /// The operator's name, for the error of a pattern that does not
    /// compile.
    op: &'static str,
}

/// A rule lowered by its front end.
struct RuleIn<'a> {
    id: &'a str,
    description: Option<&'a str>,
    group: u32,
    /// `RF_DENY`, `RF_RESIDUAL` and the tag; `RF_NEVER` and `RF_HAS_DESC`
    /// are the compiler's.
    flags: u32,
    lits: Vec<LitIn<'a>>,
}

/// A group record's contents.
struct GroupIn<'a> {
    id: &'a str,
    version: u64,
    default_deny: bool,
    errored: bool,
}

/// What [`build`] compiles.
struct Build<'a> {
    kind: u32,
    groups: Vec<GroupIn<'a>>,
    /// The rules of the groups before the first errored one.
    rules: Vec<RuleIn<'a>>,
    stop: Option<usize>,
    frozen: &'a [&'a str],
    gate: Option<IrGate<'a>>,
    tokens: &'a [IrToken<'a>],
}

#[derive(Default)]
struct FieldBuild {
    path: String,
    strs: Option<usize>,
    /// Translated `matches` and `regex` patterns.
    patterns: Vec<(String, u32)>,
    /// `contains` needles, as written.
    needles: Vec<(String, u32)>,
    /// Whole-value patterns (segment globs with a single `*`), built into
    /// anchored DFAs that the field matcher's walk runs.
    anchored: Vec<(String, u32)>,
    /// Numeric thresholds: the value and the predicate.
    nums: Vec<(f64, u32)>,
}

/// Compiles a condition program: an [`Ir`] that combines first-deny,
/// last-allow (Rubric's) or first-match (Authensor's), with no front-end
/// tables.
///
/// # Errors
///
/// `invalid_pattern` for a `matches` or `Search` pattern that is not RE2
/// syntax, `too_complex` for globs that cannot be split into anchored
/// DFAs within the limits, `too_large` for a tag above [`MAX_TAG`], and
/// `internal` for an IR that combines as rule lists or whose rules hold a
/// specifier.
pub fn compile(ir: &Ir<'_>, limits: Limits) -> Result<Program<'static>, Diagnostics> {
    compile_with(ir, limits, None)
}

/// Compiles a condition program. `ext` writes the front end's own tables
/// into the program's words and strings and returns their offset, which
/// the header keeps (see [`Compiled::ext`]).
///
/// # Errors
///
/// `invalid_pattern` for a `matches` or `Search` pattern that is not RE2
/// syntax (front ends check their patterns at load, and Rubric's marks such
/// groups errored; this is a guard), `too_complex` for globs that cannot be
/// split into anchored DFAs within the limits, `too_large` for a tag above
/// [`MAX_TAG`], and `internal` for an IR that combines as rule lists or
/// whose rules hold a specifier. Patterns are built at load, with
/// `limits.dfa_bytes` as their NFA size limit: one the front end did not
/// check may fail there, and then every decision that reads its field
/// denies.
///
/// [`Compiled::ext`]: super::Compiled::ext
pub(crate) fn compile_with(
    ir: &Ir<'_>,
    limits: Limits,
    ext: Option<&mut dyn FnMut(&mut Writer) -> u32>,
) -> Result<Program<'static>, Diagnostics> {
    let internal = |m: &str| Diagnostics::one(Diagnostic::new(DiagnosticKind::Internal, m));
    let (kind, frozen, gate, tokens) = match ir.combining {
        Combining::FirstDenyLastAllow { frozen, gate } => (KIND_RUBRIC, frozen, gate, &[][..]),
        Combining::FirstMatch { tokens } => (KIND_FIRST_MATCH, &[][..], None, tokens),
        Combining::Precedence { .. } => {
            return Err(internal(
                "rule lists compile through `compile::compile`, not as a condition program",
            ))
        }
    };
    let first_match = kind == KIND_FIRST_MATCH;
    // Rules of the groups after the first errored one are not compiled at
    // all, as no request can reach them.
    let stop = ir.groups.iter().position(|g| g.errored);
    let mut rules = Vec::with_capacity(ir.rules.len());
    for r in &ir.rules {
        if stop.is_some_and(|s| r.group as usize >= s) {
            continue;
        }
        if r.tag > MAX_TAG {
            return Err(Diagnostics::one(Diagnostic::new(
                DiagnosticKind::TooLarge,
                format!("rule `{}`: the tag {} is above {MAX_TAG}", r.text, r.tag),
            )));
        }
        let mut lits = Vec::with_capacity(r.conds.len());
        for c in r.conds {
            let Cond::Field(t) = c else {
                return Err(internal(
                    "a condition program's rules test fields, not specifiers",
                ));
            };
            lits.push(match t.pred {
                Pred::Op(op, value) => LitIn {
                    field: t.field,
                    lowered: lower(op, &value).map(|l| l.map(|(k, neg)| (k, neg != t.negated))),
                    constant: constant(op) != t.negated,
                    op: "matches",
                },
                pred => LitIn {
                    field: t.field,
                    lowered: lower_pred(&pred).map(|k| k.map(|k| (k, t.negated))),
                    // A predicate that never holds: its negation always does.
                    constant: t.negated,
                    op: "regex",
                },
            });
        }
        let deny = first_match || r.list == List::Deny;
        rules.push(RuleIn {
            id: r.text,
            description: r.note,
            group: r.group,
            flags: if deny { RF_DENY } else { 0 }
                | if r.residual { RF_RESIDUAL } else { 0 }
                | r.tag << RF_TAG_SHIFT,
            lits,
        });
    }
    build(
        Build {
            kind,
            groups: ir
                .groups
                .iter()
                .map(|g| GroupIn {
                    id: g.id,
                    version: g.version,
                    default_deny: g.default != Decision::Allow,
                    errored: g.errored,
                })
                .collect(),
            rules,
            stop,
            frozen,
            gate,
            tokens,
        },
        limits,
        ext,
    )
}

/// The predicate of a first-match test; `None` for one that never holds.
fn lower_pred(p: &Pred<'_>) -> Result<Option<Kind>, String> {
    let sorted = |v: &[&str]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    Ok(match p {
        Pred::Glob { globs: [], .. } => None,
        Pred::Glob { sep, globs } => Some(Kind::Globs(*sep, sorted(globs))),
        Pred::Equals(s) => Some(Kind::EqStr(s.to_string())),
        Pred::OneOf([]) => None,
        Pred::OneOf(items) => Some(Kind::InStr(sorted(items))),
        Pred::Search(p) => Some(Kind::Search(pattern::translate(p)?)),
        Pred::Above(x) if x.is_finite() => Some(Kind::Above(x.to_bits())),
        Pred::Above(_) => None,
        Pred::Present => Some(Kind::Is(PT_ANY)),
        Pred::Number => Some(Kind::Is(PT_NUMBER)),
        // Rubric's operators are lowered by `lower`.
        Pred::Op(..) => None,
    })
}

fn build(
    b: Build<'_>,
    limits: Limits,
    ext: Option<&mut dyn FnMut(&mut Writer) -> u32>,
) -> Result<Program<'static>, Diagnostics> {
    let mut trie = Trie::default();
    let mut fields: Vec<FieldBuild> = Vec::new();
    let mut field_ids: HashMap<String, usize> = HashMap::new();
    let mut preds: HashMap<(usize, Kind), u32> = HashMap::new();
    let mut n_preds = 0usize;
    let mut pred_types: Vec<u32> = Vec::new();
    // (group, flags, literals); a literal is `predicate << 1 | negated`.
    let mut rules: Vec<(u32, u32, Vec<u32>)> = Vec::new();
    let mut errors = Vec::new();

    for r in &b.rules {
        let mut lits: Vec<(u32, bool)> = Vec::new();
        let mut never = false;
        for c in &r.lits {
            let f = *field_ids.entry(c.field.to_string()).or_insert_with(|| {
                fields.push(FieldBuild {
                    path: c.field.to_string(),
                    ..FieldBuild::default()
                });
                fields.len() - 1
            });
            let lit = match &c.lowered {
                Ok(Some((kind, neg))) => {
                    let next = preds.len() as u32;
                    let id = *preds.entry((f, kind.clone())).or_insert(next);
                    if id == next {
                        n_preds += 1;
                        pred_types.push(kind.pred_type());
                        if let Some(fb) = fields.get_mut(f) {
                            add_pred(&mut trie, fb, kind, id);
                        }
                    }
                    Lit::Pred(id, *neg)
                }
                Ok(None) if c.constant => Lit::Always,
                Ok(None) => Lit::Never,
                Err(msg) => {
                    let group = b.groups.get(r.group as usize).map_or("", |g| g.id);
                    errors.push(
                        Diagnostic::new(
                            DiagnosticKind::InvalidPattern,
                            format!(
                                "policy `{group}`, rule `{}`: the `{}` pattern of `{}` does not compile: {msg}",
                                r.id, c.op, c.field
                            ),
                        )
                        .with_help("write an RE2 pattern without lookaround or backreferences"),
                    );
                    Lit::Never
                }
            };
            match lit {
                Lit::Pred(p, n) => lits.push((p, n)),
                Lit::Never => never = true,
                Lit::Always => {}
            }
        }
        lits.sort_unstable();
        lits.dedup();
        if lits.windows(2).any(|w| matches!(w, [a, b] if a.0 == b.0)) {
            // Both a predicate and its negation: never true.
            never = true;
        }
        let mut flags = r.flags & !(RF_NEVER | RF_HAS_DESC);
        if never {
            flags |= RF_NEVER;
            lits.clear();
        }
        if r.description.is_some() {
            flags |= RF_HAS_DESC;
        }
        let words = lits.iter().map(|(p, n)| p << 1 | u32::from(*n)).collect();
        rules.push((r.group, flags, words));
    }

    // Anchors: each rule on its rarest positive predicate.
    let mut uses = vec![0u32; n_preds];
    for (_, _, lits) in &rules {
        for l in lits.iter().filter(|l| *l & 1 == 0) {
            if let Some(u) = uses.get_mut((l >> 1) as usize) {
                *u += 1;
            }
        }
    }
    let mut anchored: Vec<[Vec<u32>; 2]> = vec![[Vec::new(), Vec::new()]; n_preds];
    for (id, (_, flags, lits)) in rules.iter().enumerate() {
        if flags & RF_NEVER != 0 {
            continue;
        }
        let anchor = lits
            .iter()
            .filter(|l| *l & 1 == 0)
            .map(|l| l >> 1)
            .min_by_key(|p| (uses.get(*p as usize).copied().unwrap_or(0), *p));
        let list = anchor
            .and_then(|p| anchored.get_mut(p as usize))
            .and_then(|lists| lists.get_mut(usize::from(flags & RF_DENY == 0)));
        if let Some(list) = list {
            list.push(id as u32);
        }
    }

    // Anchored DFAs for the globs with a single `*`, per field and for the
    // tokens. Needles and patterns are written as text: `scan` builds them
    // at load.
    let mut dfas: Vec<Dfa<'static>> = Vec::new();
    let mut anchored_lists: Vec<Vec<(u32, Vec<u32>)>> = Vec::new();
    for fb in &fields {
        let mut list = Vec::new();
        if let Err(d) = build_chunks(&fb.anchored, limits, &mut |dfa, ids| {
            list.push((dfas.len() as u32, ids));
            dfas.push(Dfa::Owned(dfa));
        }) {
            errors.push(d);
        }
        anchored_lists.push(list);
    }
    let mut token_root = None;
    let mut token_regexes = Vec::new();
    for (id, t) in b.tokens.iter().enumerate() {
        let root = *token_root.get_or_insert_with(|| trie.node());
        add_glob(
            &mut trie,
            root,
            &mut token_regexes,
            t.glob,
            t.sep,
            id as u32,
        );
    }
    let mut token_dfas = Vec::new();
    if let Err(d) = build_chunks(&token_regexes, limits, &mut |dfa, ids| {
        token_dfas.push((dfas.len() as u32, ids));
        dfas.push(Dfa::Owned(dfa));
    }) {
        errors.push(d);
    }
    if let Some(d) = Diagnostics::from_vec(errors) {
        return Err(d);
    }

    // Frozen ids and approved servers: exact sets.
    let frozen_root = (!b.frozen.is_empty()).then(|| {
        let root = trie.node();
        for id in b.frozen {
            let n = trie.forward(root, id.to_lowercase().as_bytes());
            trie.pay(n, 0, Vec::new());
        }
        root
    });
    let approved_root = b.gate.map(|gate| {
        let root = trie.node();
        for s in gate.approved {
            let n = trie.forward(root, s.as_bytes());
            trie.pay(n, 0, Vec::new());
        }
        root
    });

    let mut w = Writer::default();
    w.words.resize(HDR_WORDS as usize, 0);

    let groups_at = w.here();
    for g in &b.groups {
        let id = w.str(g.id);
        w.words.extend_from_slice(&[
            id.0,
            id.1,
            g.version as u32,
            (g.version >> 32) as u32,
            u32::from(g.default_deny),
            if g.errored { GF_ERRORED } else { 0 },
        ]);
    }

    let mut lits_at = Vec::with_capacity(rules.len());
    for (_, _, lits) in &rules {
        lits_at.push(w.here());
        w.words.extend_from_slice(lits);
    }
    let rules_at = w.here();
    for (r, ((group, flags, lits), at)) in b.rules.iter().zip(rules.iter().zip(&lits_at)) {
        let id = w.str(r.id);
        let desc = match r.description {
            Some(d) => w.str(d),
            None => (0, NONE),
        };
        w.words.extend_from_slice(&[
            id.0,
            id.1,
            desc.0,
            desc.1,
            *group,
            *flags,
            *at,
            lits.len() as u32,
        ]);
    }

    let anchors_at = w.here();
    w.words.resize(w.words.len() + anchored.len() * 4, 0);
    for (p, lists) in anchored.iter().enumerate() {
        for (k, list) in lists.iter().enumerate() {
            let at = w.here();
            w.patch(anchors_at as usize + 4 * p + 2 * k, at);
            w.patch(anchors_at as usize + 4 * p + 2 * k + 1, list.len() as u32);
            w.words.extend_from_slice(list);
        }
    }

    let always = |deny: bool| -> Vec<u32> {
        rules
            .iter()
            .enumerate()
            .filter(|(_, (_, f, lits))| {
                lits.iter().all(|l| l & 1 == 1) && f & RF_NEVER == 0 && (f & RF_DENY != 0) == deny
            })
            .map(|(i, _)| i as u32)
            .collect()
    };
    let (always_deny, always_allow) = (always(true), always(false));
    let always_deny_at = w.here();
    w.words.extend_from_slice(&always_deny);
    let always_allow_at = w.here();
    w.words.extend_from_slice(&always_allow);

    // Field matcher records: one per trie root; patched once nodes are laid.
    let mut fm_patch: Vec<(usize, usize)> = Vec::new();
    let mut fm = |w: &mut Writer, root: Option<usize>| -> u32 {
        match root {
            None => NONE,
            Some(r) => {
                let at = w.here();
                fm_patch.push((w.words.len(), r));
                w.words.extend_from_slice(&[NONE, 0, 0, 0, 0, NONE]);
                at
            }
        }
    };
    let frozen_fm = fm(&mut w, frozen_root);
    let approved_fm = fm(&mut w, approved_root);

    // Field records and what they point to.
    let mut field_recs: Vec<[u32; FIELD_WORDS as usize]> = Vec::new();
    for (i, fb) in fields.iter().enumerate() {
        let path = w.str(&fb.path);
        let parts: Vec<(u32, u32)> = fb.path.split('.').map(|p| w.str(p)).collect();
        let parts_at = w.here();
        for (o, l) in &parts {
            w.words.extend_from_slice(&[*o, *l]);
        }
        let strs = fm(&mut w, fb.strs);
        let needles_at = write_scan_list(&mut w, &fb.needles);
        let patterns_at = write_scan_list(&mut w, &fb.patterns);
        field_recs.push([
            path.0,
            path.1,
            parts_at,
            parts.len() as u32,
            strs,
            needles_at,
            fb.needles.len() as u32,
            patterns_at,
            fb.patterns.len() as u32,
        ]);
        // A field matcher's own DFA list: the anchored glob DFAs.
        let al = anchored_lists.get(i).map(Vec::as_slice).unwrap_or_default();
        if !al.is_empty() && strs != NONE {
            let at = write_dfa_list(&mut w, al);
            w.patch(strs as usize + 3, at);
            w.patch(strs as usize + 4, al.len() as u32);
        }
    }
    let fields_at = w.here();
    for rec in &field_recs {
        w.words.extend_from_slice(rec);
    }
    let types_at = w.here();
    w.words.extend_from_slice(&pred_types);

    // Numeric thresholds, per field, in increasing value.
    let nums_at = if fields.iter().any(|f| !f.nums.is_empty()) {
        let at = w.here();
        w.words.resize(w.words.len() + fields.len() * 2, 0);
        for (i, fb) in fields.iter().enumerate() {
            let mut nums = fb.nums.clone();
            nums.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let list = w.here();
            w.patch(at as usize + 2 * i, list);
            w.patch(at as usize + 2 * i + 1, nums.len() as u32);
            for (x, id) in nums {
                let bits = x.to_bits();
                w.words
                    .extend_from_slice(&[bits as u32, (bits >> 32) as u32, id]);
            }
        }
        at
    } else {
        0
    };

    // The token matcher.
    let tokens_fm = match token_root {
        Some(root) => {
            let at = fm(&mut w, Some(root));
            if !token_dfas.is_empty() {
                let list = write_dfa_list(&mut w, &token_dfas);
                w.patch(at as usize + 3, list);
                w.patch(at as usize + 4, token_dfas.len() as u32);
            }
            at
        }
        None => 0,
    };

    let ext_at = match ext {
        Some(ext) => ext(&mut w),
        None => 0,
    };

    let node_at = trie.write(&mut w);
    for (at, root) in fm_patch {
        w.patch(at, node_at(root));
    }

    let gate = b.gate.map_or(0, |g| {
        GATE_PRESENT | if g.enforce { GATE_ENFORCE } else { 0 }
    });
    let header = [
        (0, MAGIC),
        (H_N_GROUPS, b.groups.len() as u32),
        (H_GROUPS, groups_at),
        (H_N_RULES, rules.len() as u32),
        (H_RULES, rules_at),
        (H_N_PREDS, n_preds as u32),
        (H_ANCHORS, anchors_at),
        (H_N_FIELDS, fields.len() as u32),
        (H_FIELDS, fields_at),
        (H_STOP, b.stop.map_or(NONE, |s| s as u32)),
        (H_ALWAYS_DENY, always_deny_at),
        (H_ALWAYS_DENY + 1, always_deny.len() as u32),
        (H_ALWAYS_ALLOW, always_allow_at),
        (H_ALWAYS_ALLOW + 1, always_allow.len() as u32),
        (H_FROZEN_FM, frozen_fm),
        (H_GATE, gate),
        (H_APPROVED_FM, approved_fm),
        (H_N_DFAS, dfas.len() as u32),
        (H_KIND, b.kind),
        (H_TOKENS, tokens_fm),
        (H_PRED_TYPES, types_at),
        (H_NUMS, nums_at),
        (H_EXT, ext_at),
        (H_N_TOKENS, b.tokens.len() as u32),
        (
            H_PATTERN_LIMIT,
            u32::try_from(limits.dfa_bytes).unwrap_or(u32::MAX),
        ),
    ];
    for (h, v) in header {
        w.patch(h as usize, v);
    }
    Ok(Program {
        words: Cow::Owned(w.words),
        bytes: Cow::Owned(w.bytes),
        dfas,
        automata: Default::default(),
        kinds: Vec::new(),
        splitters: Vec::new(),
    })
}

/// Writes a DFA list (pairs of DFA index and the offset of its
/// pattern-to-id map) and the maps; returns the list's offset.
fn write_dfa_list(w: &mut Writer, list: &[(u32, Vec<u32>)]) -> u32 {
    let at = w.here();
    w.words.resize(w.words.len() + list.len() * 2, 0);
    for (k, (dfa, ids)) in list.iter().enumerate() {
        let map = w.here();
        w.words.extend_from_slice(ids);
        w.patch(at as usize + 2 * k, *dfa);
        w.patch(at as usize + 2 * k + 1, map);
    }
    at
}

/// Writes the entries of a needle or pattern list (its text and predicate);
/// returns the list's offset.
fn write_scan_list(w: &mut Writer, list: &[(String, u32)]) -> u32 {
    let at = w.here();
    for (text, pred) in list {
        let (o, l) = w.str(text);
        w.words.extend_from_slice(&[o, l, *pred]);
    }
    at
}

/// Adds a segment glob under trie root `root` with payload `id`, or to
/// `regexes` when it needs an anchored DFA.
fn add_glob(
    trie: &mut Trie,
    root: usize,
    regexes: &mut Vec<(String, u32)>,
    g: &str,
    sep: char,
    id: u32,
) {
    match glob::shape(g, sep) {
        glob::Shape::Exact(s) => {
            let n = trie.forward(root, s.as_bytes());
            trie.pay(n, id, Vec::new());
        }
        glob::Shape::Pieces(pieces) => {
            if let [first, mids @ .., last] = pieces.as_slice() {
                let n = trie.forward(root, first.as_bytes());
                let sub = trie.sub(n);
                let r = trie.reverse(sub, last.as_bytes());
                trie.pay(r, id, mids.iter().map(|m| m.as_bytes().to_vec()).collect());
            }
        }
        glob::Shape::Regex(re) => regexes.push((re, id)),
    }
}

/// The predicate a condition tests and whether the condition negates it;
/// `None` for a condition whose truth does not depend on the request.
fn lower(op: Op, value: &Operand<'_>) -> Result<Option<(Kind, bool)>, String> {
    let scalar = |v: &Operand<'_>| match v {
        Operand::Str(s) => Some(s.to_string()),
        Operand::Num(n) => Some(js_number(*n)),
        Operand::Bool(b) => Some(b.to_string()),
        Operand::Strs(_) | Operand::Nums(_) => None,
    };
    let items = |v: &Operand<'_>| -> Vec<String> {
        let mut out: Vec<String> = match v {
            Operand::Strs(l) => l.iter().map(|s| s.to_string()).collect(),
            Operand::Nums(l) => l.iter().map(|n| js_number(*n)).collect(),
            other => scalar(other).into_iter().collect(),
        };
        out.sort_unstable();
        out.dedup();
        out
    };
    Ok(match op {
        Op::Eq | Op::Neq => {
            let kind = match value {
                Operand::Str(s) => Some(Kind::EqStr(s.to_string())),
                Operand::Num(n) => Some(Kind::EqNum(js_number(*n))),
                Operand::Bool(b) => Some(Kind::EqBool(*b)),
                // An array is a new object: `===` never holds.
                Operand::Strs(_) | Operand::Nums(_) => None,
            };
            kind.map(|k| (k, op == Op::Neq))
        }
        Op::In | Op::NotIn => {
            let list = items(value);
            (!list.is_empty()).then(|| (Kind::In(list), op == Op::NotIn))
        }
        Op::StartsWith => scalar(value).map(|s| (Kind::StartsWith(s), false)),
        Op::EndsWith => scalar(value).map(|s| (Kind::EndsWith(s), false)),
        Op::Contains => scalar(value).map(|s| {
            if s.is_empty() {
                // Every stringified field contains the empty text.
                (Kind::StartsWith(s), false)
            } else {
                (Kind::Contains(s), false)
            }
        }),
        Op::Matches => match value {
            Operand::Str(p) => Some((Kind::Matches(pattern::translate(p)?), false)),
            _ => return Err("the value of `matches` must be a string".into()),
        },
    })
}

/// The truth of a condition [`lower`] found constant: `!==` on a list
/// value and `not_in` an empty list hold; the others never do.
fn constant(op: Op) -> bool {
    matches!(op, Op::Neq | Op::NotIn)
}

fn add_pred(trie: &mut Trie, fb: &mut FieldBuild, kind: &Kind, id: u32) {
    let root = |slot: &mut Option<usize>, trie: &mut Trie| *slot.get_or_insert_with(|| trie.node());
    match kind {
        // The text of the value: the predicate's type keeps it from
        // matching a field of another type with the same text.
        Kind::EqStr(s) | Kind::EqNum(s) => {
            let r = root(&mut fb.strs, trie);
            let n = trie.forward(r, s.as_bytes());
            trie.pay(n, id, Vec::new());
        }
        Kind::EqBool(b) => {
            let r = root(&mut fb.strs, trie);
            let n = trie.forward(r, if *b { b"true" } else { b"false" });
            trie.pay(n, id, Vec::new());
        }
        Kind::In(items) => {
            let r = root(&mut fb.strs, trie);
            for s in items {
                let n = trie.forward(r, s.as_bytes());
                trie.pay(n, id, Vec::new());
            }
        }
        Kind::StartsWith(s) => {
            let r = root(&mut fb.strs, trie);
            let n = trie.forward(r, s.as_bytes());
            let sub = trie.sub(n);
            trie.pay(sub, id, Vec::new());
        }
        Kind::EndsWith(s) => {
            let r = root(&mut fb.strs, trie);
            let sub = trie.sub(r);
            let n = trie.reverse(sub, s.as_bytes());
            trie.pay(n, id, Vec::new());
        }
        Kind::Contains(s) => fb.needles.push((s.clone(), id)),
        Kind::Matches(p) | Kind::Search(p) => fb.patterns.push((p.clone(), id)),
        Kind::InStr(items) => {
            let r = root(&mut fb.strs, trie);
            for s in items {
                let n = trie.forward(r, s.as_bytes());
                trie.pay(n, id, Vec::new());
            }
        }
        Kind::Globs(sep, globs) => {
            let r = root(&mut fb.strs, trie);
            for g in globs {
                add_glob(trie, r, &mut fb.anchored, g, *sep, id);
            }
        }
        Kind::Above(bits) => fb.nums.push((f64::from_bits(*bits), id)),
        // Every value that resolves walks the root's reverse trie, whose
        // root payloads need nothing of it; the type does the rest.
        Kind::Is(_) => {
            let r = root(&mut fb.strs, trie);
            let sub = trie.sub(r);
            trie.pay(sub, id, Vec::new());
        }
    }
}

/// Patterns per DFA before any split.
const CHUNK: usize = 256;

/// Builds the anchored DFAs of one field's whole-value patterns in chunks,
/// splitting a chunk whose DFA exceeds the limits.
fn build_chunks(
    patterns: &[(String, u32)],
    limits: Limits,
    out: &mut dyn FnMut(regex_automata::dfa::dense::DFA<Vec<u32>>, Vec<u32>),
) -> Result<(), Diagnostic> {
    crate::compile::regex::split_build(patterns, CHUNK, limits, out).map_err(|e| {
        Diagnostic::new(
            DiagnosticKind::TooComplex,
            format!(
                "the pattern `{}` cannot be compiled within the limits: {}",
                e.pattern, e.message
            ),
        )
        .with_token(e.pattern.as_str())
        .with_help("simplify the pattern: bounded repetitions of large classes make DFAs grow exponentially")
    })
}
