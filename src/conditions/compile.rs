//! A [`CondIr`] into tables: predicates, rules as literal lists anchored
//! on a predicate, tries and DFAs.

use super::layout::*;
use super::value::js_number;
use super::{pattern, CondIr, Effect, Limits, Op, Operand};
use crate::compile::trie::Trie;
use crate::compile::Writer;
use crate::diag::{Diagnostic, Diagnostics};
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

#[derive(Default)]
struct FieldBuild {
    path: String,
    strs: Option<usize>,
    patterns: Vec<(String, u32)>,
    /// `contains` needles as escaped literals: built apart from the
    /// patterns, as a literal set's DFA stays linear in its size while a
    /// product with patterns such as `a.*b` does not.
    needles: Vec<(String, u32)>,
}

/// Compiles a condition program.
///
/// # Errors
///
/// `invalid_pattern` for a `matches` pattern of a group not marked errored
/// that does not compile (the front end marks such groups; this is a
/// guard), and `too_complex` for a set of patterns that cannot be split
/// into DFAs within the limits.
pub fn compile(ir: &CondIr, limits: Limits) -> Result<Program<'static>, Diagnostics> {
    let stop = ir.groups.iter().position(|g| g.errored);
    let live = ir
        .groups
        .get(..stop.unwrap_or(ir.groups.len()))
        .unwrap_or(&ir.groups);

    let mut trie = Trie::default();
    let mut fields: Vec<FieldBuild> = Vec::new();
    let mut field_ids: HashMap<String, usize> = HashMap::new();
    let mut preds: HashMap<(usize, Kind), u32> = HashMap::new();
    let mut n_preds = 0usize;
    let mut pred_types: Vec<u32> = Vec::new();
    // (group, flags, literals); a literal is `predicate << 1 | negated`.
    let mut rules: Vec<(u32, u32, Vec<u32>)> = Vec::new();
    let mut errors = Vec::new();

    for (gi, g) in live.iter().enumerate() {
        for r in &g.rules {
            let mut lits: Vec<(u32, bool)> = Vec::new();
            let mut never = false;
            for c in &r.conds {
                let f = *field_ids.entry(c.field.clone()).or_insert_with(|| {
                    fields.push(FieldBuild {
                        path: c.field.clone(),
                        ..FieldBuild::default()
                    });
                    fields.len() - 1
                });
                let lit = match lower(c.op, &c.value) {
                    Ok(Some((kind, neg))) => {
                        let next = preds.len() as u32;
                        let id = *preds.entry((f, kind.clone())).or_insert(next);
                        if id == next {
                            n_preds += 1;
                            pred_types.push(match kind {
                                Kind::EqStr(_) => PT_STRING,
                                Kind::EqNum(_) => PT_NUMBER,
                                Kind::EqBool(_) => PT_BOOL,
                                _ => PT_ANY,
                            });
                            if let Some(fb) = fields.get_mut(f) {
                                add_pred(&mut trie, fb, &kind, id);
                            }
                        }
                        Lit::Pred(id, neg)
                    }
                    Ok(None) if constant(c.op) => Lit::Always,
                    Ok(None) => Lit::Never,
                    Err(msg) => {
                        errors.push(
                            Diagnostic::new(
                                "invalid_pattern",
                                format!(
                                    "policy `{}`, rule `{}`: the `matches` pattern of `{}` does not compile: {msg}",
                                    g.id, r.id, c.field
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
            let mut flags = if r.effect == Effect::Deny { RF_DENY } else { 0 };
            if never {
                flags |= RF_NEVER;
                lits.clear();
            }
            if r.description.is_some() {
                flags |= RF_HAS_DESC;
            }
            let words = lits.iter().map(|(p, n)| p << 1 | u32::from(*n)).collect();
            rules.push((gi as u32, flags, words));
        }
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

    // DFAs for `contains` and `matches`, per field.
    let mut dfas: Vec<Dfa<'static>> = Vec::new();
    let mut dfa_lists: Vec<Vec<(u32, Vec<u32>)>> = Vec::new();
    for fb in &fields {
        let mut list = Vec::new();
        for set in [&fb.needles, &fb.patterns] {
            if let Err(d) = build_chunks(set, limits, &mut |dfa, ids| {
                list.push((dfas.len() as u32, ids));
                dfas.push(Dfa::Owned(dfa));
            }) {
                errors.push(d);
            }
        }
        dfa_lists.push(list);
    }
    if let Some(d) = Diagnostics::from_vec(errors) {
        return Err(d);
    }

    // Frozen ids and approved servers: exact sets.
    let frozen_root = (!ir.frozen.is_empty()).then(|| {
        let root = trie.node();
        for id in &ir.frozen {
            let n = trie.forward(root, id.to_lowercase().as_bytes());
            trie.pay(n, 0, Vec::new());
        }
        root
    });
    let approved_root = ir.gate.as_ref().map(|gate| {
        let root = trie.node();
        for s in &gate.approved {
            let n = trie.forward(root, s.as_bytes());
            trie.pay(n, 0, Vec::new());
        }
        root
    });

    let mut w = Writer::default();
    w.words.resize(HDR_WORDS as usize, 0);

    let groups_at = w.here();
    for g in &ir.groups {
        let id = w.str(&g.id);
        w.words.extend_from_slice(&[
            id.0,
            id.1,
            g.version as u32,
            (g.version >> 32) as u32,
            u32::from(g.default == Effect::Deny),
            if g.errored { GF_ERRORED } else { 0 },
        ]);
    }

    let mut lits_at = Vec::with_capacity(rules.len());
    for (_, _, lits) in &rules {
        lits_at.push(w.here());
        w.words.extend_from_slice(lits);
    }
    let rules_at = w.here();
    let mut ri = rules.iter().zip(&lits_at);
    for g in live {
        for r in &g.rules {
            let ((group, flags, lits), at) = match ri.next() {
                Some(((g, f, l), a)) => ((*g, *f, l.len() as u32), *a),
                None => ((NONE, RF_NEVER, 0), 0),
            };
            let id = w.str(&r.id);
            let desc = match &r.description {
                Some(d) => w.str(d),
                None => (0, NONE),
            };
            w.words
                .extend_from_slice(&[id.0, id.1, desc.0, desc.1, group, flags, at, lits]);
        }
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
                w.words.extend_from_slice(&[NONE, 0, 0, 0, 0]);
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
        let dl = dfa_lists.get(i).map(Vec::as_slice).unwrap_or_default();
        let dfa_at = w.here();
        w.words.resize(w.words.len() + dl.len() * 2, 0);
        for (k, (dfa, ids)) in dl.iter().enumerate() {
            let map = w.here();
            w.words.extend_from_slice(ids);
            w.patch(dfa_at as usize + 2 * k, *dfa);
            w.patch(dfa_at as usize + 2 * k + 1, map);
        }
        field_recs.push([
            path.0,
            path.1,
            parts_at,
            parts.len() as u32,
            strs,
            dfa_at,
            dl.len() as u32,
        ]);
    }
    let fields_at = w.here();
    for rec in &field_recs {
        w.words.extend_from_slice(rec);
    }
    let types_at = w.here();
    w.words.extend_from_slice(&pred_types);

    let node_at = trie.write(&mut w);
    for (at, root) in fm_patch {
        w.patch(at, node_at(root));
    }

    let gate = ir.gate.as_ref().map_or(0, |g| {
        GATE_PRESENT | if g.enforce { GATE_ENFORCE } else { 0 }
    });
    let header = [
        (0, MAGIC),
        (H_N_GROUPS, ir.groups.len() as u32),
        (H_GROUPS, groups_at),
        (H_N_RULES, rules.len() as u32),
        (H_RULES, rules_at),
        (H_N_PREDS, n_preds as u32),
        (H_ANCHORS, anchors_at),
        (H_N_FIELDS, fields.len() as u32),
        (H_FIELDS, fields_at),
        (H_STOP, stop.map_or(NONE, |s| s as u32)),
        (H_ALWAYS_DENY, always_deny_at),
        (H_ALWAYS_DENY + 1, always_deny.len() as u32),
        (H_ALWAYS_ALLOW, always_allow_at),
        (H_ALWAYS_ALLOW + 1, always_allow.len() as u32),
        (H_FROZEN_FM, frozen_fm),
        (H_GATE, gate),
        (H_APPROVED_FM, approved_fm),
        (H_N_DFAS, dfas.len() as u32),
        (H_PRED_TYPES, types_at),
    ];
    for (h, v) in header {
        w.patch(h as usize, v);
    }
    Ok(Program {
        words: Cow::Owned(w.words),
        bytes: Cow::Owned(w.bytes),
        dfas,
        kinds: Vec::new(),
        splitters: Vec::new(),
    })
}

/// The predicate a condition tests and whether the condition negates it;
/// `None` for a condition whose truth does not depend on the request.
fn lower(op: Op, value: &Operand) -> Result<Option<(Kind, bool)>, String> {
    let scalar = |v: &Operand| match v {
        Operand::Str(s) => Some(s.clone()),
        Operand::Num(n) => Some(js_number(*n)),
        Operand::Bool(b) => Some(b.to_string()),
        Operand::Strs(_) | Operand::Nums(_) => None,
    };
    let items = |v: &Operand| -> Vec<String> {
        let mut out = match v {
            Operand::Strs(l) => l.clone(),
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
                Operand::Str(s) => Some(Kind::EqStr(s.clone())),
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
        // A needle is a literal pattern: the field's DFAs find every needle
        // and every `matches` pattern in one pass.
        Kind::Contains(s) => fb.needles.push((regex_syntax::escape(s), id)),
        Kind::Matches(p) => fb.patterns.push((p.clone(), id)),
    }
}

/// Patterns per DFA before any split.
const CHUNK: usize = 256;

/// Builds the DFAs of one field's patterns in chunks, splitting a chunk
/// whose DFA exceeds the limits.
fn build_chunks(
    patterns: &[(String, u32)],
    limits: Limits,
    out: &mut dyn FnMut(regex_automata::dfa::dense::DFA<Vec<u32>>, Vec<u32>),
) -> Result<(), Diagnostic> {
    for chunk in patterns.chunks(CHUNK) {
        build_chunk(chunk, limits, out)?;
    }
    Ok(())
}

fn build_chunk(
    chunk: &[(String, u32)],
    limits: Limits,
    out: &mut dyn FnMut(regex_automata::dfa::dense::DFA<Vec<u32>>, Vec<u32>),
) -> Result<(), Diagnostic> {
    if chunk.is_empty() {
        return Ok(());
    }
    let pats: Vec<&str> = chunk.iter().map(|(p, _)| p.as_str()).collect();
    match pattern::build_dfa(&pats, limits.dfa_bytes) {
        Ok(dfa) => {
            out(dfa, chunk.iter().map(|(_, id)| *id).collect());
            Ok(())
        }
        Err(_) if chunk.len() > 1 => {
            let (a, b) = chunk.split_at(chunk.len() / 2);
            build_chunk(a, limits, out)?;
            build_chunk(b, limits, out)
        }
        Err(e) => {
            let p = pats.first().copied().unwrap_or("");
            Err(Diagnostic::new(
                "too_complex",
                format!("the pattern `{p}` cannot be compiled within the limits: {e}"),
            )
            .with_token(p)
            .with_help("simplify the pattern: bounded repetitions of large classes make DFAs grow exponentially"))
        }
    }
}
