//! Deciding a request over a condition program's tables.
//!
//! 1. Each field the program addresses is resolved once in the request.
//! 2. Its trie is walked by `runtime::eval` (the same walker rule lists
//!    use) and its needles and patterns are searched for in the stringified
//!    value (`scan`, built at the field's first decision); every predicate
//!    found true is collected once.
//! 3. Each true predicate offers the deny rules anchored on it in
//!    increasing id order; a candidate is checked against the predicate
//!    bits (every positive literal true, every negated one false), and the
//!    offer stops at the first that holds or at an id no smaller than the
//!    best deny found. The "always" deny list (rules with no positive
//!    literal) is offered the same way. The smallest holding id is the
//!    first deny.
//! 4. Only when no deny holds and no errored group stops the scan, the
//!    allow rules are offered backwards for the last allow.
//!
//! The predicate bits live in a per-thread scratch stamped with a
//! generation, so a decision allocates nothing once the scratch has grown
//! to the program.
//! Every read of the tables is bounds-checked, and every walk runs under a
//! work budget: damaged tables decide [`Outcome::Damaged`], never a panic.

use super::layout::*;
use super::scan::{self, FieldScan};
use super::value::{js_number_into, js_string, resolve, Field};
use crate::runtime::eval::{Budget, Sink};
use crate::runtime::program::{Program, View, NONE};
use regex_automata::hybrid::LazyStateID;
use serde_json::Value;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// What a condition program decides for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Rule `id` matched: the first deny, or else the last allow.
    Rule(u32),
    /// The scan reached group `g`, which failed to compile.
    Errored(u32),
    /// No rule matched: the first group's default.
    Default,
    /// The program has no groups.
    Empty,
    /// The tables are damaged: deciding ran out of its work budget or found
    /// a record outside them.
    Damaged,
}

/// A condition program ready to decide: its tables, each field's path
/// split into parts, and each field's automata once a decision built them.
#[derive(Clone, Debug)]
pub struct Compiled<'a> {
    pub(crate) prog: Program<'a>,
    /// Each field's dot path split into parts, read from the tables once.
    parts: Vec<Vec<String>>,
    /// Each field's needles and patterns, built at first use (`None` inside:
    /// they cannot be built, and every decision that reads the field is
    /// damaged).
    scans: Vec<OnceLock<Option<Arc<FieldScan>>>>,
}

/// Why tables are not a usable condition program.
pub(crate) fn check_header(p: &Program<'_>) -> Result<(), String> {
    let n = p.n_words() as u64;
    if p.w(0) == MAGIC_3_0 {
        return Err("the tables are a condition program of artifact format 3.0 (`TGC1`), which this toolgate no longer reads: compile the bundle or policies again with this toolgate".into());
    }
    if p.w(0) != MAGIC {
        return Err("the table words do not start with the condition-program magic".into());
    }
    let fits =
        |at: u32, count: u32, size: u32| u64::from(at) + u64::from(count) * u64::from(size) <= n;
    let checks = [
        (H_GROUPS, H_N_GROUPS, GROUP_WORDS, "group"),
        (H_RULES, H_N_RULES, RULE_WORDS, "rule"),
        (H_ANCHORS, H_N_PREDS, 4, "predicate"),
        (H_FIELDS, H_N_FIELDS, FIELD_WORDS, "field"),
        (H_ALWAYS_DENY, H_ALWAYS_DENY + 1, 1, "always-deny"),
        (H_ALWAYS_ALLOW, H_ALWAYS_ALLOW + 1, 1, "always-allow"),
        (H_PRED_TYPES, H_N_PREDS, 1, "predicate-type"),
    ];
    for (at, count, size, what) in checks {
        if !fits(p.h(at), p.h(count), size) {
            return Err(format!("the {what} table runs past the table words"));
        }
    }
    let nums = p.h(H_NUMS);
    if nums != 0 && !fits(nums, p.h(H_N_FIELDS), 2) {
        return Err("the numeric-threshold table runs past the table words".into());
    }
    Ok(())
}

impl<'a> Compiled<'a> {
    /// Checks the header of `prog` and splits its field paths.
    ///
    /// # Errors
    ///
    /// What is wrong with the tables.
    pub(crate) fn new(prog: Program<'a>) -> Result<Compiled<'a>, String> {
        check_header(&prog)?;
        let fields_at = prog.h(H_FIELDS);
        let parts: Vec<Vec<String>> = (0..prog.h(H_N_FIELDS))
            .map(|f| {
                let at = fields_at.wrapping_add(f.wrapping_mul(FIELD_WORDS));
                let (off, n) = (
                    prog.w(at.wrapping_add(F_PARTS)),
                    prog.w(at.wrapping_add(F_PARTS + 1)),
                );
                (0..n.min(MAX_PARTS))
                    .map(|k| prog.ws(off.wrapping_add(2 * k)).to_string())
                    .collect()
            })
            .collect();
        let scans = (0..parts.len()).map(|_| OnceLock::new()).collect();
        Ok(Compiled { prog, parts, scans })
    }

    /// The tables.
    pub fn program(&self) -> &Program<'a> {
        &self.prog
    }

    /// Whether a field the tables read has a first part starting with
    /// `prefix` (`dlp_`: the fields a DLP scan fills).
    pub fn reads_field_starting(&self, prefix: &str) -> bool {
        self.parts
            .iter()
            .any(|p| p.first().is_some_and(|f| f.starts_with(prefix)))
    }

    /// The same program, owning everything it borrowed.
    pub fn into_owned(self) -> Compiled<'static> {
        Compiled {
            prog: self.prog.into_owned(),
            parts: self.parts,
            scans: self.scans,
        }
    }

    fn view(&self) -> View<'_> {
        View {
            words: &self.prog.words,
            bytes: &self.prog.bytes,
            automata: &self.prog.automata,
            n_fire: 0,
            n_deny: 0,
            n_ask: 0,
            rules_at: 0,
            sources_at: 0,
            tools_at: 0,
            hash_at: 0,
        }
    }

    /// Whether the exact set at field matcher `fm` holds `value`.
    fn holds(&self, fm: u32, value: &str) -> bool {
        if fm == NONE {
            return false;
        }
        let budget = Budget::new(self.prog.words.len() as u64, value.len() as u64);
        let mut sink = Any {
            found: false,
            budget: &budget,
        };
        self.view()
            .walk(&self.prog.dfas, fm, NONE, value, &mut sink, &|_, _, _| {
                false
            });
        sink.found
    }

    /// Whether `agent_id` is frozen (compared lowercased).
    pub fn frozen(&self, agent_id: &str) -> bool {
        let fm = self.prog.h(H_FROZEN_FM);
        if fm == NONE {
            return false;
        }
        // PERF: most ids are lowercase ASCII already; lowercasing them
        // would only allocate.
        if agent_id
            .bytes()
            .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
        {
            return self.holds(fm, agent_id);
        }
        self.holds(fm, &agent_id.to_lowercase())
    }

    /// The server of an `mcp__<server>__<tool>` name the gate refuses.
    pub fn gate<'t>(&self, tool: &'t str) -> Option<&'t str> {
        let flags = self.prog.h(H_GATE);
        if flags & GATE_PRESENT == 0 || flags & GATE_ENFORCE == 0 {
            return None;
        }
        let rest = tool.strip_prefix("mcp__")?;
        let end = rest.find("__")?;
        let server = rest.get(..end).filter(|s| !s.is_empty())?;
        (!self.holds(self.prog.h(H_APPROVED_FM), server)).then_some(server)
    }

    /// The number of groups.
    pub fn n_groups(&self) -> u32 {
        self.prog.h(H_N_GROUPS)
    }

    fn group_at(&self, g: u32) -> u32 {
        self.prog
            .h(H_GROUPS)
            .wrapping_add(g.wrapping_mul(GROUP_WORDS))
    }

    /// Group `g`'s id.
    pub fn group_id(&self, g: u32) -> &str {
        self.prog.ws(self.group_at(g))
    }

    /// Group `g`'s version.
    pub fn group_version(&self, g: u32) -> u64 {
        let at = self.group_at(g).wrapping_add(G_VERSION);
        u64::from(self.prog.w(at)) | u64::from(self.prog.w(at.wrapping_add(1))) << 32
    }

    /// Whether group `g`'s default is deny.
    pub fn group_default_deny(&self, g: u32) -> bool {
        self.prog.w(self.group_at(g).wrapping_add(G_DEFAULT)) != 0
    }

    /// Whether group `g` failed to compile.
    pub fn group_errored(&self, g: u32) -> bool {
        self.prog.w(self.group_at(g).wrapping_add(G_FLAGS)) & GF_ERRORED != 0
    }

    fn rule_at(&self, r: u32) -> u32 {
        self.prog
            .h(H_RULES)
            .wrapping_add(r.wrapping_mul(RULE_WORDS))
    }

    /// Rule `r`'s id.
    pub fn rule_id(&self, r: u32) -> &str {
        self.prog.ws(self.rule_at(r))
    }

    /// Rule `r`'s description.
    pub fn rule_description(&self, r: u32) -> Option<&str> {
        let at = self.rule_at(r);
        (self.prog.w(at.wrapping_add(R_FLAGS)) & RF_HAS_DESC != 0)
            .then(|| self.prog.ws(at.wrapping_add(R_DESC)))
    }

    /// Rule `r`'s group.
    pub fn rule_group(&self, r: u32) -> u32 {
        self.prog.w(self.rule_at(r).wrapping_add(R_GROUP))
    }

    /// Whether rule `r` denies.
    pub fn rule_denies(&self, r: u32) -> bool {
        self.prog.w(self.rule_at(r).wrapping_add(R_FLAGS)) & RF_DENY != 0
    }

    /// The front end's tag of rule `r` (first-match programs).
    pub fn rule_tag(&self, r: u32) -> u32 {
        self.prog.w(self.rule_at(r).wrapping_add(R_FLAGS)) >> RF_TAG_SHIFT
    }

    /// How the program's rules combine: `0` first deny, last allow
    /// (Rubric); `1` first match.
    pub fn kind(&self) -> u32 {
        self.prog.h(H_KIND)
    }

    /// The offset of the front end's own tables, if the program has any.
    pub(crate) fn ext(&self) -> Option<u32> {
        Some(self.prog.h(H_EXT)).filter(|&x| x != 0 && x != NONE)
    }

    /// The number of token globs.
    pub fn n_tokens(&self) -> u32 {
        self.prog.h(H_N_TOKENS)
    }

    /// Walks the token matcher over `token`, offering the id of every token
    /// glob that matches it to `sink` (an id may be offered more than once).
    pub(crate) fn walk_tokens(&self, token: &str, sink: &mut impl Sink) {
        let fm = self.prog.h(H_TOKENS);
        if fm == 0 || fm == NONE {
            return;
        }
        self.view()
            .walk(&self.prog.dfas, fm, NONE, token, sink, &|_, _, _| false);
    }

    /// Decides `request` (a JSON object) by the rules: first deny, the first
    /// errored group, last allow, default.
    pub fn decide(&self, request: &Value) -> Outcome {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => self.decide_with(request, &mut s, None),
            Err(_) => self.decide_with(request, &mut Scratch::default(), None),
        })
    }

    /// Decides `request` by a first-match program: the smallest rule id
    /// whose literals hold and, for a rule marked residual, for which
    /// `residual` answers `Some(true)` (`None`: the front end's tables are
    /// damaged, and so is the decision). [`Outcome::Default`] when no rule
    /// holds.
    pub(crate) fn decide_first(
        &self,
        request: &Value,
        residual: &mut dyn FnMut(u32) -> Option<bool>,
    ) -> Outcome {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => self.decide_with(request, &mut s, Some(residual)),
            Err(_) => self.decide_with(request, &mut Scratch::default(), Some(residual)),
        })
    }

    fn decide_with(
        &self,
        request: &Value,
        s: &mut Scratch,
        mut residual: Option<&mut dyn FnMut(u32) -> Option<bool>>,
    ) -> Outcome {
        let p = &self.prog;
        if p.h(H_N_GROUPS) == 0 {
            return Outcome::Empty;
        }
        if !s.prepare(p.h(H_N_PREDS)) {
            return Outcome::Damaged;
        }
        let gen = s.gen;
        let view = self.view();
        let words = p.words.len() as u64;
        let types_at = p.h(H_PRED_TYPES) as usize;
        let types = p
            .words
            .get(types_at..types_at.saturating_add(p.h(H_N_PREDS) as usize))
            .unwrap_or_default();

        // 1-2. Fields and their predicates.
        let fields_at = p.h(H_FIELDS);
        for f in 0..p.h(H_N_FIELDS) {
            let Some(rec) = p
                .words
                .get(fields_at.wrapping_add(f.wrapping_mul(FIELD_WORDS)) as usize..)
                .and_then(|r| r.get(..FIELD_WORDS as usize))
            else {
                return Outcome::Damaged;
            };
            let word = |i: u32| rec.get(i as usize).copied().unwrap_or(NONE);
            let parts = self.parts.get(f as usize).map(Vec::as_slice);
            let Some(field) = parts
                .filter(|p| !p.is_empty())
                .and_then(|p| resolve(request, p))
            else {
                continue;
            };
            s.text.clear();
            let (ty, own): (u32, Option<&str>) = match field {
                Field::Value(Value::String(v)) => (PT_STRING, Some(v.as_str())),
                Field::Value(Value::Number(n)) => {
                    js_number_into(n.as_f64().unwrap_or(f64::NAN), &mut s.text);
                    (PT_NUMBER, None)
                }
                Field::Value(Value::Bool(b)) => {
                    s.text.push_str(if *b { "true" } else { "false" });
                    (PT_BOOL, None)
                }
                Field::Length(n) => {
                    let _ = std::fmt::Write::write_fmt(&mut s.text, format_args!("{n}"));
                    (PT_NUMBER, None)
                }
                Field::Value(other) => {
                    js_string(other, &mut s.text);
                    (PT_ANY, None)
                }
            };
            let number = match field {
                Field::Value(Value::Number(n)) => n.as_f64(),
                Field::Length(n) => Some(n as f64),
                Field::Value(_) => None,
            };
            let text: &str = own.unwrap_or(s.text.as_str());
            let budget = Budget::new(words, text.len() as u64);
            let mut sink = PredSink {
                seen: &mut s.pred_gen,
                gen,
                hits: &mut s.hits,
                budget: &budget,
                types,
                ty,
            };
            let strs = word(F_STR);
            if strs != NONE {
                view.walk(&p.dfas, strs, NONE, text, &mut sink, &|_, _, _| false);
            }
            if scan::has_scan(rec) {
                match self.scan(f, rec) {
                    Some(scan) => scan.run(text, &mut s.visited, &mut s.lazy, &mut sink),
                    None => return Outcome::Damaged,
                }
            }
            if let Some(x) = number {
                self.above(f, x, &mut sink);
            }
            if budget.exhausted() {
                return Outcome::Damaged;
            }
        }

        // 3. The first deny.
        let budget = Budget::new(words, 0);
        let anchors = p.h(H_ANCHORS);
        let mut first_deny = NONE;
        for &pred in &s.hits {
            let list = self.anchored(anchors, pred, 0);
            if !self.offer_deny(
                list,
                &s.pred_gen,
                gen,
                &mut first_deny,
                &budget,
                &mut residual,
            ) {
                return Outcome::Damaged;
            }
        }
        let always = self.span(H_ALWAYS_DENY);
        if !self.offer_deny(
            always,
            &s.pred_gen,
            gen,
            &mut first_deny,
            &budget,
            &mut residual,
        ) {
            return Outcome::Damaged;
        }
        if first_deny != NONE {
            return Outcome::Rule(first_deny);
        }
        let stop = p.h(H_STOP);
        if stop != NONE {
            return Outcome::Errored(stop);
        }

        // 4. The last allow.
        let mut last_allow = NONE;
        for &pred in &s.hits {
            let list = self.anchored(anchors, pred, 1);
            if !self.offer_allow(list, &s.pred_gen, gen, &mut last_allow, &budget) {
                return Outcome::Damaged;
            }
        }
        let always = self.span(H_ALWAYS_ALLOW);
        if !self.offer_allow(always, &s.pred_gen, gen, &mut last_allow, &budget) {
            return Outcome::Damaged;
        }
        if last_allow != NONE {
            return Outcome::Rule(last_allow);
        }
        Outcome::Default
    }

    /// Field `f`'s automata, built from its record `rec` the first time;
    /// `None` when they cannot be built.
    fn scan(&self, f: u32, rec: &[u32]) -> Option<&FieldScan> {
        self.scans
            .get(f as usize)?
            .get_or_init(|| FieldScan::build(&self.prog, rec).map(Arc::new))
            .as_deref()
    }

    /// The words whose offset is word `at` and count word `at + 1`; empty
    /// when they run past the tables.
    fn span(&self, at: u32) -> &[u32] {
        let p = &self.prog;
        let (off, n) = (p.w(at), p.w(at.wrapping_add(1)));
        p.words
            .get(off as usize..(off as usize).saturating_add(n as usize))
            .unwrap_or_default()
    }

    /// The deny (`k = 0`) or allow (`k = 1`) rules anchored on `pred`.
    fn anchored(&self, anchors: u32, pred: u32, k: u32) -> &[u32] {
        self.span(
            anchors
                .wrapping_add(pred.wrapping_mul(4))
                .wrapping_add(k.wrapping_mul(2)),
        )
    }

    /// Whether every literal of rule `r` holds under the predicate bits;
    /// `None` when the tables are damaged.
    fn rule_holds(&self, r: u32, seen: &[u32], gen: u32, budget: &Budget) -> Option<bool> {
        let p = &self.prog;
        let at = self.rule_at(r).wrapping_add(R_LITS);
        let (off, n) = (p.w(at), p.w(at.wrapping_add(1)));
        let lits = p
            .words
            .get(off as usize..(off as usize).checked_add(n as usize)?)?;
        if !budget.spend(lits.len() as u64 + 1) {
            return None;
        }
        for &l in lits {
            let on = *seen.get((l >> 1) as usize)? == gen;
            if on == (l & 1 == 1) {
                return Some(false);
            }
        }
        Some(true)
    }

    /// Offers ascending deny candidates; `false` when the tables are
    /// damaged. A candidate whose literals hold and that is marked residual
    /// holds when `residual` (first-match programs) says so.
    fn offer_deny(
        &self,
        list: &[u32],
        seen: &[u32],
        gen: u32,
        best: &mut u32,
        budget: &Budget,
        residual: &mut Option<&mut dyn FnMut(u32) -> Option<bool>>,
    ) -> bool {
        for &r in list {
            if r >= *best {
                break;
            }
            let holds = match self.rule_holds(r, seen, gen, budget) {
                Some(true) => match residual.as_mut() {
                    Some(check)
                        if self.prog.w(self.rule_at(r).wrapping_add(R_FLAGS)) & RF_RESIDUAL
                            != 0 =>
                    {
                        check(r)
                    }
                    _ => Some(true),
                },
                other => other,
            };
            match holds {
                Some(true) => {
                    *best = r;
                    break;
                }
                Some(false) => {}
                None => return false,
            }
        }
        true
    }

    /// Offers the numeric predicates of field `f` whose threshold is below
    /// `x`: a prefix of the field's thresholds, in increasing value.
    fn above(&self, f: u32, x: f64, sink: &mut PredSink<'_, '_>) {
        let p = &self.prog;
        let nums = p.h(H_NUMS);
        if nums == 0 || nums == NONE {
            return;
        }
        let at = nums.wrapping_add(f.wrapping_mul(2));
        let (off, n) = (p.w(at), p.w(at.wrapping_add(1)));
        for k in 0..n.min(p.n_words()) {
            if !sink.spend(1) {
                return;
            }
            let e = off.wrapping_add(k.wrapping_mul(3));
            let bits = u64::from(p.w(e)) | u64::from(p.w(e.wrapping_add(1))) << 32;
            // Also stops on a NaN that damaged tables hold.
            if f64::from_bits(bits).partial_cmp(&x) != Some(std::cmp::Ordering::Less) {
                return;
            }
            let pred = p.w(e.wrapping_add(2));
            if sink.wants(pred) {
                sink.offer(pred);
            }
        }
    }

    /// Offers allow candidates from the largest id down; `false` when the
    /// tables are damaged.
    fn offer_allow(
        &self,
        list: &[u32],
        seen: &[u32],
        gen: u32,
        best: &mut u32,
        budget: &Budget,
    ) -> bool {
        for &r in list.iter().rev() {
            if *best != NONE && r <= *best {
                break;
            }
            match self.rule_holds(r, seen, gen, budget) {
                Some(true) => {
                    *best = r;
                    break;
                }
                Some(false) => {}
                None => return false,
            }
        }
        true
    }
}

/// Collects the predicates a walk finds true, each once: those whose type
/// is the field's, or any.
struct PredSink<'s, 'b> {
    seen: &'s mut Vec<u32>,
    gen: u32,
    hits: &'s mut Vec<u32>,
    budget: &'b Budget,
    types: &'b [u32],
    ty: u32,
}

impl Sink for PredSink<'_, '_> {
    fn wants(&self, id: u32) -> bool {
        self.seen.get(id as usize).is_some_and(|&g| g != self.gen)
    }
    fn offer(&mut self, id: u32) {
        let t = self.types.get(id as usize).copied().unwrap_or(NONE);
        if t != PT_ANY && t != self.ty {
            return;
        }
        if let Some(g) = self.seen.get_mut(id as usize) {
            if *g != self.gen {
                *g = self.gen;
                self.hits.push(id);
            }
        }
    }
    fn spend(&mut self, units: u64) -> bool {
        self.budget.spend(units)
    }
}

/// Whether a walk found anything.
struct Any<'b> {
    found: bool,
    budget: &'b Budget,
}

impl Sink for Any<'_> {
    fn wants(&self, _: u32) -> bool {
        !self.found
    }
    fn offer(&mut self, _: u32) {
        self.found = true;
    }
    fn spend(&mut self, units: u64) -> bool {
        self.budget.spend(units)
    }
    fn next_wanted(&self, _: u32) -> Option<u32> {
        None
    }
}

/// The most parts a field's path may have: the bundle reader's paths are
/// far shorter; damaged tables claiming more resolve nothing beyond.
const MAX_PARTS: u32 = 256;

/// Per-thread predicate bits, stamped with a generation so that nothing is
/// cleared between decisions.
#[derive(Debug, Default)]
struct Scratch {
    gen: u32,
    pred_gen: Vec<u32>,
    hits: Vec<u32>,
    text: String,
    /// The match states a search has reported.
    visited: scan::StateSet<u32>,
    lazy: scan::StateSet<LazyStateID>,
}

/// The most predicates a scratch grows to; tables claiming more are
/// damaged (the header check bounds them by the table size first).
const SCRATCH_MAX: u32 = 1 << 26;

impl Scratch {
    /// Grows the scratch to the program and starts a new generation;
    /// `false` for counts no compiler writes.
    fn prepare(&mut self, n_preds: u32) -> bool {
        if n_preds > SCRATCH_MAX {
            return false;
        }
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            // Wrapped: clear every stamp once.
            self.pred_gen.iter_mut().for_each(|g| *g = 0);
            self.gen = 1;
        }
        let p = n_preds as usize;
        if self.pred_gen.len() < p {
            self.pred_gen.resize(p, 0);
        }
        self.hits.clear();
        true
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}
