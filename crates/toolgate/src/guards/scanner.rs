//! The compiled scanner: every anchor of every rule in one Aho-Corasick
//! automaton, and a bounded window after each anchor confirmed by the
//! rule's anchored DFAs.
//!
//! A rule's match starts at one of its anchors, the literal prefixes of its
//! pattern (`spec/guards.md` §3). So the scanner never tries a position the
//! automaton did not report, and it tries each reported one once per rule,
//! over at most [`WINDOW`] bytes: the work is the input's length plus a
//! bounded window per anchor hit, and nothing backtracks.
//!
//! Input arrives in chunks ([`Stream::feed`]); a hit is confirmed once the
//! window after it has arrived, so a match across a chunk boundary is found
//! as if the input were one slice, and the buffer holds at most a window and
//! a chunk.

use super::{GuardError, RuleSpec};
use aho_corasick::automaton::Automaton as _;
use aho_corasick::{MatchKind as AcKind, StartKind as AcStart};
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};

/// The longest match a rule may have, from its anchor to the end of its
/// last part: a 4096-bit RSA key in PEM, escaped in JSON, fits.
pub const WINDOW: usize = 8192;

/// The largest DFA (and its determinisation) one part of a rule may build.
pub const DFA_LIMIT: usize = 1 << 20;

/// The shortest anchor accepted: one-byte anchors would hit everywhere.
pub const MIN_ANCHOR: usize = 2;

/// One match of a rule: the secret's span (its `value` part) and the end
/// of the whole match. Offsets count bytes from the start of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    /// Where the anchor (and the match) starts.
    pub at: u64,
    /// The rule, by index in the scanner.
    pub rule: u32,
    /// The start of the value span.
    pub start: u64,
    /// The end of the value span.
    pub end: u64,
}

/// One compiled rule: its parts' DFAs and the checks on its value.
#[derive(Debug)]
struct Compiled {
    before: Option<dense::DFA<Vec<u32>>>,
    value: dense::DFA<Vec<u32>>,
    after: Option<dense::DFA<Vec<u32>>>,
    max_len: Option<usize>,
    min_entropy: Option<f64>,
}

/// The anchors in one unanchored Aho-Corasick DFA (`MatchKind::Standard`,
/// whose match states list every anchor ending there), walked byte by
/// byte: a table lookup per byte, and the anchors of a match state once.
#[derive(Debug)]
struct Anchors {
    dfa: aho_corasick::dfa::DFA,
}

impl Anchors {
    /// Calls `f(start, anchor id, end)` for every anchor occurrence in
    /// `hay`, in order of end.
    fn each(&self, hay: &[u8], f: &mut dyn FnMut(usize, usize, usize)) {
        let no = aho_corasick::Anchored::No;
        let Ok(mut sid) = self.dfa.start_state(no) else {
            return;
        };
        let mut i = 0;
        while i < hay.len() {
            (sid, i) = self.advance(sid, hay, i);
            if self.dfa.is_match(sid) {
                for k in 0..self.dfa.match_len(sid) {
                    let pid = self.dfa.match_pattern(sid, k);
                    let len = self.dfa.pattern_len(pid);
                    f(i - len, pid.as_usize(), i);
                }
            }
        }
    }

    /// Walks from `sid` at `i` to just past the next byte that enters a
    /// special (match) state, or to the end: kept apart from the calls to
    /// `f`, so that the state and the position stay in registers.
    #[inline(never)]
    fn advance(
        &self,
        mut sid: aho_corasick::automaton::StateID,
        hay: &[u8],
        mut i: usize,
    ) -> (aho_corasick::automaton::StateID, usize) {
        let no = aho_corasick::Anchored::No;
        while let Some(&b) = hay.get(i) {
            sid = self.dfa.next_state(no, sid, b);
            i += 1;
            if self.dfa.is_special(sid) {
                break;
            }
        }
        (sid, i)
    }
}

/// Every rule of a guard set, compiled.
#[derive(Debug)]
pub struct Scanner {
    ac: Option<Anchors>,
    /// The rules each anchor starts, by anchor id.
    anchor_rules: Vec<Vec<u32>>,
    /// The longest anchor, for the overlap between chunks.
    longest: usize,
    rules: Vec<Compiled>,
}

/// The byte-oriented syntax of guard patterns: `.` and classes match bytes,
/// `\b` is the ASCII word boundary, and any byte sequence may match.
pub fn syntax_config() -> syntax::Config {
    syntax::Config::new().unicode(false).utf8(false)
}

/// The whole pattern of a rule, its parts in order: what its anchors are
/// the literal prefixes of.
pub fn whole_pattern(spec: &RuleSpec) -> String {
    let mut p = String::new();
    for part in [
        spec.before.as_deref(),
        Some(spec.value.as_str()),
        spec.after.as_deref(),
    ]
    .into_iter()
    .flatten()
    {
        p.push_str("(?:");
        p.push_str(part);
        p.push(')');
    }
    p
}

/// The anchors of a rule: the literal prefixes every match of its whole
/// pattern starts with, at least [`MIN_ANCHOR`] bytes each.
///
/// # Errors
///
/// The pattern does not parse, or it has no finite set of such prefixes.
pub fn anchors(spec: &RuleSpec) -> Result<Vec<Vec<u8>>, GuardError> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let whole = whole_pattern(spec);
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(&whole)
        .map_err(|e| GuardError::Pattern {
            rule: spec.name.clone(),
            pattern: whole.clone(),
            message: first_line(&e.to_string()),
        })?;
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    let no_anchor = || GuardError::NoAnchor {
        rule: spec.name.clone(),
        pattern: whole.clone(),
    };
    let lits = seq.literals().ok_or_else(no_anchor)?;
    if lits.is_empty() || lits.iter().any(|l| l.as_bytes().len() < MIN_ANCHOR) {
        return Err(no_anchor());
    }
    let mut out: Vec<Vec<u8>> = lits.iter().map(|l| l.as_bytes().to_vec()).collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// One part of a rule as an anchored, leftmost-first DFA within
/// [`DFA_LIMIT`].
fn part(rule: &str, pattern: &str) -> Result<dense::DFA<Vec<u32>>, GuardError> {
    dense::Builder::new()
        .configure(
            dense::DFA::config()
                .match_kind(MatchKind::LeftmostFirst)
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(DFA_LIMIT))
                .determinize_size_limit(Some(DFA_LIMIT)),
        )
        .syntax(syntax_config())
        .thompson(
            thompson::Config::new()
                .utf8(false)
                .nfa_size_limit(Some(DFA_LIMIT)),
        )
        .build(pattern)
        .map_err(|e| {
            let message = first_line(&e.to_string());
            if message.contains("exceeded")
                || message.contains("too big")
                || message.contains("limit")
            {
                GuardError::TooComplex {
                    rule: rule.to_string(),
                    pattern: pattern.to_string(),
                }
            } else {
                GuardError::Pattern {
                    rule: rule.to_string(),
                    pattern: pattern.to_string(),
                    message,
                }
            }
        })
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).to_string()
}

impl Scanner {
    /// Compiles `rules`; a rule's index is its id in [`Hit::rule`].
    ///
    /// # Errors
    ///
    /// The first rule whose pattern does not parse, has no anchor, or
    /// whose DFA would exceed [`DFA_LIMIT`].
    pub fn build(rules: &[RuleSpec]) -> Result<Scanner, GuardError> {
        let mut by_anchor: std::collections::BTreeMap<Vec<u8>, Vec<u32>> =
            std::collections::BTreeMap::new();
        let mut compiled = Vec::with_capacity(rules.len());
        for (i, spec) in rules.iter().enumerate() {
            let id = u32::try_from(i).map_err(|_| GuardError::Document {
                message: "a guard set holds more than 2^32 rules".into(),
            })?;
            for a in anchors(spec)? {
                by_anchor.entry(a).or_default().push(id);
            }
            compiled.push(Compiled {
                before: spec
                    .before
                    .as_deref()
                    .map(|p| part(&spec.name, p))
                    .transpose()?,
                value: part(&spec.name, &spec.value)?,
                after: spec
                    .after
                    .as_deref()
                    .map(|p| part(&spec.name, p))
                    .transpose()?,
                max_len: spec.max_len,
                min_entropy: spec.min_entropy,
            });
        }
        let longest = by_anchor.keys().map(Vec::len).max().unwrap_or(0);
        let ac = if by_anchor.is_empty() {
            None
        } else {
            let built = |e: aho_corasick::BuildError| GuardError::Document {
                message: format!("the anchors of the guard set do not build: {e}"),
            };
            Some(Anchors {
                dfa: aho_corasick::dfa::DFA::builder()
                    .match_kind(AcKind::Standard)
                    .start_kind(AcStart::Unanchored)
                    .prefilter(false)
                    .build(by_anchor.keys())
                    .map_err(built)?,
            })
        };
        Ok(Scanner {
            ac,
            anchor_rules: by_anchor.into_values().collect(),
            longest,
            rules: compiled,
        })
    }

    /// The number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the scanner has no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Every hit in `input`, in order of anchor position, then rule: the
    /// hits a [`Stream`] fed `input` in any chunks reports, without copying
    /// it.
    pub fn scan(&self, input: &[u8]) -> Vec<Hit> {
        let mut out = Vec::new();
        self.scan_with(input, &mut |h| out.push(h));
        out
    }

    /// As [`Scanner::scan`], reporting each hit to `out`.
    pub fn scan_with(&self, input: &[u8], out: &mut dyn FnMut(Hit)) {
        let Some(ac) = &self.ac else {
            return;
        };
        let mut pending: Vec<(u64, u32)> = Vec::new();
        let mut next = vec![0u64; self.rules.len()];
        let end = input.len() as u64;
        let mut run = |pending: &mut Vec<(u64, u32)>, upto: u64, out: &mut dyn FnMut(Hit)| {
            pending.sort_unstable();
            pending.dedup();
            let ready = pending.partition_point(|&(at, _)| at < upto);
            for &(at, rule) in pending.get(..ready).unwrap_or_default() {
                self.try_at(at, rule, input, 0, end, &mut next, out);
            }
            pending.drain(..ready);
        };
        let longest = self.longest;
        ac.each(input, &mut |start, anchor, end| {
            if let Some(rules) = self.anchor_rules.get(anchor) {
                pending.extend(rules.iter().map(|&r| (start as u64, r)));
            }
            // Anchors arrive in order of end: later ones start after
            // `end - longest`.
            if pending.len() >= 1024 {
                run(&mut pending, end.saturating_sub(longest) as u64, out);
            }
        });
        run(&mut pending, u64::MAX, out);
    }

    /// Tries rule `rule` at `at`, unless its previous match ends after;
    /// `buf` holds the input from `base`, `seen` bytes in all.
    #[allow(clippy::too_many_arguments)]
    fn try_at(
        &self,
        at: u64,
        rule: u32,
        buf: &[u8],
        base: u64,
        seen: u64,
        next: &mut [u64],
        out: &mut dyn FnMut(Hit),
    ) {
        let Some(n) = next.get_mut(rule as usize) else {
            return;
        };
        if at < *n {
            return;
        }
        let lo = at.saturating_sub(1).max(base);
        let limit = (at + WINDOW as u64).min(seen);
        let hi = (limit + 1).min(seen);
        let (Ok(a), Ok(b)) = (usize::try_from(lo - base), usize::try_from(hi - base)) else {
            return;
        };
        let Some(hay) = buf.get(a..b) else {
            return;
        };
        if let Some((hit, m_end)) = self.confirm(rule, at, hay, lo, limit) {
            *n = m_end;
            out(hit);
        }
    }

    /// A stream over input that arrives in chunks.
    pub fn stream(&self) -> Stream<'_> {
        Stream {
            sc: self,
            buf: Vec::new(),
            base: 0,
            seen: 0,
            pending: Vec::new(),
            next: vec![0; self.rules.len()],
        }
    }

    /// The match of rule `rule` at `at`, if any, and where the whole match
    /// ends: `hay` holds the input from absolute offset `lo`, `limit` is
    /// where the window ends (absolute), and `hay` runs one byte past it
    /// unless the input ends there.
    fn confirm(&self, rule: u32, at: u64, hay: &[u8], lo: u64, limit: u64) -> Option<(Hit, u64)> {
        let r = self.rules.get(rule as usize)?;
        let rel = |x: u64| usize::try_from(x.checked_sub(lo)?).ok();
        let end = rel(limit)?;
        let run = |dfa: &dense::DFA<Vec<u32>>, from: usize| -> Option<usize> {
            if from > end {
                return None;
            }
            let input = Input::new(hay).range(from..end).anchored(Anchored::Yes);
            dfa.try_search_fwd(&input)
                .ok()
                .flatten()
                .map(|m| m.offset())
        };
        let mut pos = rel(at)?;
        if let Some(b) = &r.before {
            pos = run(b, pos)?;
        }
        let v_start = pos;
        let v_end = run(&r.value, pos)?;
        if v_end <= v_start {
            return None;
        }
        let value = hay.get(v_start..v_end)?;
        if r.max_len.is_some_and(|m| value.len() > m) {
            return None;
        }
        if r.min_entropy.is_some_and(|m| entropy(value) < m) {
            return None;
        }
        let m_end = match &r.after {
            Some(a) => run(a, v_end)?,
            None => v_end,
        };
        let hit = Hit {
            at,
            rule,
            start: lo + v_start as u64,
            end: lo + v_end as u64,
        };
        Some((hit, lo + m_end as u64))
    }
}

/// The Shannon entropy of `bytes`, in bits per byte.
pub fn entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        if let Some(c) = counts.get_mut(b as usize) {
            *c += 1;
        }
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// A scan over input that arrives in chunks.
#[derive(Debug)]
pub struct Stream<'s> {
    sc: &'s Scanner,
    /// The input from `base` on that a pending hit or the next anchor may
    /// still read.
    buf: Vec<u8>,
    base: u64,
    /// How much input the automaton has read.
    seen: u64,
    /// Anchor hits not yet confirmed: (start, rule).
    pending: Vec<(u64, u32)>,
    /// Per rule, the end of its last match: no match of it starts before.
    next: Vec<u64>,
}

impl Stream<'_> {
    /// Reads the next chunk of input, reporting every hit whose window has
    /// arrived.
    pub fn feed(&mut self, chunk: &[u8], out: &mut dyn FnMut(Hit)) {
        if chunk.is_empty() {
            return;
        }
        let from = self
            .seen
            .saturating_sub(self.sc.longest.saturating_sub(1) as u64)
            .max(self.base);
        self.buf.extend_from_slice(chunk);
        let seen = self.seen;
        self.seen = self.base + self.buf.len() as u64;
        if let Some(ac) = &self.sc.ac {
            let skip = usize::try_from(from - self.base).unwrap_or(usize::MAX);
            if let Some(region) = self.buf.get(skip..) {
                let (rules_of, pending) = (&self.sc.anchor_rules, &mut self.pending);
                ac.each(region, &mut |start, anchor, end| {
                    // Hits ending in what the last chunk held were taken then.
                    if from + (end as u64) <= seen {
                        return;
                    }
                    let at = from + start as u64;
                    if let Some(rules) = rules_of.get(anchor) {
                        pending.extend(rules.iter().map(|&r| (at, r)));
                    }
                });
            }
        }
        self.confirm(false, out);
        self.trim();
    }

    /// The bytes of input held for pending hits and the next chunk's
    /// anchors: at most a window and a chunk.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Ends the input: confirms every hit still pending.
    pub fn finish(&mut self, out: &mut dyn FnMut(Hit)) {
        self.confirm(true, out);
        self.buf.clear();
        self.base = self.seen;
    }

    /// The offset before which no hit can still start: output up to here
    /// can be written (redacted) now.
    pub fn settled(&self) -> u64 {
        let unread = self
            .seen
            .saturating_sub(self.sc.longest.saturating_sub(1) as u64);
        self.pending
            .iter()
            .map(|&(at, _)| at)
            .min()
            .map_or(unread, |p| p.min(unread))
    }

    fn confirm(&mut self, last: bool, out: &mut dyn FnMut(Hit)) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_unstable();
        self.pending.dedup();
        let end = self.seen;
        let ready = if last {
            self.pending.len()
        } else {
            self.pending
                .partition_point(|&(at, _)| at + (WINDOW as u64) < end)
        };
        for &(at, rule) in self.pending.get(..ready).unwrap_or_default() {
            self.sc
                .try_at(at, rule, &self.buf, self.base, end, &mut self.next, out);
        }
        self.pending.drain(..ready);
    }

    /// Drops the input no pending hit and no later anchor can read (one
    /// byte before each is kept, for `\b`).
    fn trim(&mut self) {
        let keep = self.settled().saturating_sub(1).max(self.base);
        let Ok(n) = usize::try_from(keep - self.base) else {
            return;
        };
        if n > 0 && n <= self.buf.len() {
            self.buf.drain(..n);
            self.base = keep;
        }
    }
}
