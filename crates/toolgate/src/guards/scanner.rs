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
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};
use toolgate_core::needles::{NeedleDfa, NeedleError};

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

/// The anchors in one flat DFA table ([`NeedleDfa`]: the `aho-corasick`
/// crate's unanchored DFA, `MatchKind::Standard`, copied out and walked a
/// byte at a time).
///
/// One walk is a chain of dependent loads, each waiting on the one before.
/// So a long input is cut into pieces of at most [`PIECE`] bytes (at
/// least [`MIN_PIECE`], [`piece_len`]) and [`LANES`]
/// pieces are walked side by side, their chains independent: each piece
/// starts from the start state `longest - 1` bytes early, so it sees every
/// anchor ending inside it, and reports only those (the piece before
/// reports the ones ending before it).
#[derive(Debug)]
struct Anchors {
    dfa: NeedleDfa,
    /// The start state.
    start: u32,
    /// The longest anchor.
    longest: usize,
}

/// Pieces walked side by side.
const LANES: usize = 4;

/// The bytes of one piece: large beside the `longest - 1` bytes each
/// piece reads again, small enough that the anchors found in a group of
/// pieces, held until the pieces before are reported, stay few.
const PIECE: usize = 4096;

/// The shortest piece: an input shorter than [`LANES`] of these is walked
/// in one piece, as the bytes read again at each piece's start would cost
/// more than the lanes save.
const MIN_PIECE: usize = 256;

/// The pieces of an input of `len` bytes: a quarter of it, within
/// [`MIN_PIECE`] and [`PIECE`], so that a request of a few KiB is walked
/// in lanes too.
fn piece_len(len: usize) -> usize {
    (len / LANES).clamp(MIN_PIECE, PIECE)
}

/// Where lane `k`'s anchors go: the first lane's straight to `f`, the
/// others' into `held`, reported once the lanes before them are.
fn lane_out<'a>(
    k: usize,
    held: &'a mut [Vec<(usize, usize, usize)>; LANES],
    f: &'a mut dyn FnMut(usize, usize, usize),
) -> impl FnMut(usize, usize, usize) + 'a {
    move |s, a, e| match held.get_mut(k) {
        Some(h) if k > 0 => h.push((s, a, e)),
        _ => f(s, a, e),
    }
}

impl Anchors {
    /// The automaton of `anchors` (anchor id: index).
    fn build(anchors: &[Vec<u8>]) -> Result<Anchors, GuardError> {
        let dfa = NeedleDfa::build(anchors).map_err(|e| GuardError::Document {
            message: match e {
                NeedleError::TooLarge => "the anchors of the guard set make too large an automaton: use fewer or longer anchors".into(),
                NeedleError::Build(e) => format!("the anchors of the guard set do not build: {e}"),
            },
        })?;
        Ok(Anchors {
            start: dfa.start(),
            longest: dfa.longest(),
            dfa,
        })
    }

    /// Calls `f(start, anchor id, end)` for every anchor occurrence in
    /// `hay`, in order of end.
    fn each(&self, hay: &[u8], f: &mut dyn FnMut(usize, usize, usize)) {
        let overlap = self.longest.saturating_sub(1);
        let piece_len = piece_len(hay.len());
        let pieces = hay.len().div_ceil(piece_len);
        // Found by the lanes after the first, reported once the lanes
        // before them are.
        let mut held: [Vec<(usize, usize, usize)>; LANES] = Default::default();
        let mut p = 0;
        while p < pieces {
            if pieces - p < LANES {
                // The last pieces: one walk to the end.
                let from = (p * piece_len).saturating_sub(overlap);
                self.walk(self.start, hay, from, hay.len(), p * piece_len, f);
                return;
            }
            let mut lanes = [(self.start, 0usize, 0usize, 0usize); LANES];
            for (k, lane) in lanes.iter_mut().enumerate() {
                let piece = (p + k) * piece_len;
                let to = (piece + piece_len).min(hay.len());
                *lane = (self.start, piece.saturating_sub(overlap), to, piece);
            }
            self.side_by_side(hay, &mut lanes, &mut held, f);
            // Each lane's rest, where lanes differ in length.
            for (k, &(sid, at, to, piece)) in lanes.iter().enumerate() {
                self.walk(sid, hay, at, to, piece, &mut lane_out(k, &mut held, f));
            }
            for h in held.iter_mut() {
                for &(s, a, e) in h.iter() {
                    f(s, a, e);
                }
                h.clear();
            }
            p += LANES;
        }
    }

    /// Walks every lane `(state, at, to, piece)` one byte at a time, side
    /// by side, for as many bytes as the shortest has left; the first
    /// lane's anchors go to `f`, the others' to `held`. Leaves each lane
    /// where it stopped.
    fn side_by_side(
        &self,
        hay: &[u8],
        lanes: &mut [(u32, usize, usize, usize); LANES],
        held: &mut [Vec<(usize, usize, usize)>; LANES],
        f: &mut dyn FnMut(usize, usize, usize),
    ) {
        let n = lanes
            .iter()
            .map(|&(_, at, to, _)| to.saturating_sub(at))
            .min()
            .unwrap_or(0);
        let [(_, a0, _, _), (_, a1, _, _), (_, a2, _, _), (_, a3, _, _)] = *lanes;
        let (Some(h0), Some(h1), Some(h2), Some(h3)) = (
            hay.get(a0..a0 + n),
            hay.get(a1..a1 + n),
            hay.get(a2..a2 + n),
            hay.get(a3..a3 + n),
        ) else {
            return;
        };
        let mut sids = lanes.map(|l| l.0);
        let mut j = 0;
        while j < n {
            (sids, j) = self.advance4(sids, [h0, h1, h2, h3], j);
            for (k, (&sid, &(_, at, _, piece))) in sids.iter().zip(lanes.iter()).enumerate() {
                self.report(sid, at + j, piece, &mut lane_out(k, held, f));
            }
        }
        for (lane, sid) in lanes.iter_mut().zip(sids) {
            lane.0 = sid;
            lane.1 += n;
        }
    }

    /// Walks four lanes of equal length from `j` to just past the first
    /// byte that takes any of them into a match state, or to the end: the
    /// states and the position stay in registers, as in [`Self::advance`].
    #[inline(never)]
    fn advance4(
        &self,
        sids: [u32; LANES],
        h: [&[u8]; LANES],
        mut j: usize,
    ) -> ([u32; LANES], usize) {
        let [mut s0, mut s1, mut s2, mut s3] = sids;
        let [h0, h1, h2, h3] = h;
        let dfa = &self.dfa;
        let first_match = dfa.first_match();
        while let (Some(&b0), Some(&b1), Some(&b2), Some(&b3)) =
            (h0.get(j), h1.get(j), h2.get(j), h3.get(j))
        {
            s0 = dfa.next(s0, b0);
            s1 = dfa.next(s1, b1);
            s2 = dfa.next(s2, b2);
            s3 = dfa.next(s3, b3);
            j += 1;
            if (s0 >= first_match) | (s1 >= first_match) | (s2 >= first_match) | (s3 >= first_match)
            {
                break;
            }
        }
        ([s0, s1, s2, s3], j)
    }

    /// Walks from `sid` at `at` to `to`, reporting the anchors that end
    /// after `piece`.
    fn walk(
        &self,
        mut sid: u32,
        hay: &[u8],
        mut at: usize,
        to: usize,
        piece: usize,
        f: &mut dyn FnMut(usize, usize, usize),
    ) {
        let Some(hay) = hay.get(..to) else {
            return;
        };
        while at < hay.len() {
            (sid, at) = self.dfa.advance(sid, hay, at);
            self.report(sid, at, piece, f);
        }
    }

    /// The anchors of state `sid`, reached just before `end`, that end
    /// after `piece`.
    fn report(&self, sid: u32, end: usize, piece: usize, f: &mut dyn FnMut(usize, usize, usize)) {
        if end <= piece {
            return;
        }
        for &(id, len) in self.dfa.ends(sid) {
            f(end - len as usize, id as usize, end);
        }
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
            let keys: Vec<Vec<u8>> = by_anchor.keys().cloned().collect();
            Some(Anchors::build(&keys)?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guards::Severity;

    fn spec(name: &str, value: &str) -> RuleSpec {
        RuleSpec {
            name: name.into(),
            kind: "test".into(),
            severity: Severity::High,
            before: None,
            value: value.into(),
            after: None,
            max_len: None,
            min_entropy: None,
            note: None,
        }
    }

    /// Pieces walked side by side find exactly what one walk finds, in the
    /// same order: inputs of every length around the piece and group
    /// sizes, dense with anchors, a long one planted across every piece
    /// boundary.
    #[test]
    fn pieces_side_by_side_find_what_one_walk_finds() -> Result<(), Box<dyn std::error::Error>> {
        let long = b"hgfedcbahgfedcba";
        let specs = [
            spec("a", "ab[a-z]"),
            spec("b", "abcdefgh"),
            spec("c", "ba"),
            spec("d", std::str::from_utf8(long)?),
        ];
        let sc = Scanner::build(&specs)?;
        let ac = sc.ac.as_ref().ok_or("no anchors")?;
        assert_eq!(ac.longest, long.len());
        let start = ac.start;
        // Numbered as the scanner numbers them: sorted, each once.
        let mut anchors = std::collections::BTreeSet::new();
        for sp in &specs {
            anchors.extend(super::anchors(sp)?);
        }
        let oracle = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(&anchors)?;
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for len in [
            0,
            1,
            LANES * MIN_PIECE - 1,
            LANES * MIN_PIECE,
            LANES * MIN_PIECE + 1,
            1100,
            PIECE - 1,
            PIECE,
            3 * PIECE + 5,
            LANES * PIECE - 1,
            LANES * PIECE,
            LANES * PIECE + 1,
            2 * LANES * PIECE + PIECE / 2,
            9 * PIECE + 7,
        ] {
            let mut hay: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    b"abcdefgh"[(x % 8) as usize]
                })
                .collect();
            let piece = piece_len(len);
            for b in (piece..len).step_by(piece) {
                // Starting 15, 14, … 1 bytes before the boundary.
                let at = b - (long.len() - 1) + (b / piece - 1) % (long.len() - 1);
                if let Some(place) = hay.get_mut(at..at + long.len()) {
                    place.copy_from_slice(long);
                }
            }
            let mut one = Vec::new();
            ac.walk(start, &hay, 0, hay.len(), 0, &mut |s, a, e| {
                one.push((s, a, e))
            });
            let mut sides = Vec::new();
            ac.each(&hay, &mut |s, a, e| sides.push((s, a, e)));
            assert!(
                len < MIN_PIECE || one.len() > len / 64,
                "too few anchors: {}",
                one.len()
            );
            assert_eq!(sides, one, "len {len}");
            // And what the aho-corasick crate's own overlapping search
            // finds, the table being a copy of its automaton.
            let mut theirs: Vec<(usize, usize, usize)> = oracle
                .find_overlapping_iter(&hay[..])
                .map(|m| (m.start(), m.pattern().as_usize(), m.end()))
                .collect();
            theirs.sort_by_key(|&(s, a, e)| (e, s, a));
            one.sort_by_key(|&(s, a, e)| (e, s, a));
            assert_eq!(one, theirs, "len {len}");
        }
        Ok(())
    }
}
