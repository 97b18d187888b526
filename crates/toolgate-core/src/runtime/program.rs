//! The compiled tables and how they are read.
//!
//! A [`Program`] is a word buffer, a byte buffer and a list of DFAs. `words`
//! holds `u32`s (little-endian in an artifact): a header, then records (rules, sources, tools, field
//! matchers, trie nodes, edges, payloads, verification pieces) that refer to
//! each other by word offset. `bytes` holds every string. Both are `Cow`s, so
//! the same reader serves tables the compiler just built and tables borrowed
//! from an artifact's buffer without copying.
//!
//! Every read is bounds-checked: a read outside the buffer gives [`NONE`] (or
//! an empty string), never a panic. The layout is documented record by record
//! below and in `spec/artifact.md`.
//!
//! The offsets and accessors are public because the compiler (`toolgate`)
//! writes the same layout this module reads; they are the one interface
//! between the two crates. Each group of offsets is documented by the
//! comment of its record and field by field in `spec/artifact.md`, which is
//! why the lint for a doc comment on every item is lifted here alone.
#![allow(missing_docs)]

use crate::decision::List;
use crate::registry::{MatcherKind, Splitter};
pub use crate::runtime::inner::Automata;
use regex_automata::dfa::dense;
use std::borrow::Cow;
use std::sync::Arc;

/// The absent value for an offset, an index or a rule id.
pub const NONE: u32 = u32::MAX;

// Header: word offsets of the header fields.
pub const H_MAGIC: u32 = 0;
pub const H_N_RULES: u32 = 1;
pub const H_RULES: u32 = 2;
pub const H_N_FIRE: u32 = 3;
pub const H_N_DENY: u32 = 4;
pub const H_N_ASK: u32 = 5;
pub const H_N_SOURCES: u32 = 6;
pub const H_SOURCES: u32 = 7;
pub const H_N_TOOLS: u32 = 8;
pub const H_TOOLS: u32 = 9;
pub const H_TOOL_HASH: u32 = 10;
pub const H_NAME_FM: u32 = 11;
pub const H_DEFAULT: u32 = 12;
pub const H_N_ALIASES: u32 = 13;
pub const H_ALIASES: u32 = 14;
pub const H_N_WITHHELD: u32 = 15;
pub const H_WITHHELD: u32 = 16;
pub const H_N_DFAS: u32 = 17;
/// The number of inner records (`runtime::inner`), each with its automaton.
pub const H_N_INNER: u32 = 18;
/// Words in the header.
pub const HDR_WORDS: u32 = 20;
/// The first header word: `TGP1` little-endian.
pub const PROGRAM_MAGIC: u32 = u32::from_le_bytes(*b"TGP1");

/// Rule record: text, tool, spec, note (offset and length in `bytes`), source
/// index, flags.
pub const RULE_WORDS: u32 = 10;
pub const R_TEXT: u32 = 0;
pub const R_TOOL: u32 = 2;
pub const R_NOTE: u32 = 6;
pub const R_SOURCE: u32 = 8;
pub const R_FLAGS: u32 = 9;
/// Rule flags: the list in the low two bits (0 deny, 1 ask, 2 allow).
pub const F_LIST_MASK: u32 = 0b11;
pub const F_BARE: u32 = 1 << 2;
pub const F_CARVE: u32 = 1 << 3;
pub const F_GLOB: u32 = 1 << 4;
pub const F_CITE_NOTE: u32 = 1 << 5;
pub const F_HAS_NOTE: u32 = 1 << 6;
/// A bare allow rule whose tool-name glob one MCP server bounds
/// ([`crate::glob::server_bounded`]): Claude Code's `mcp__github`. Set only
/// with `F_GLOB` and `F_BARE` in the allow list; an artifact holding one
/// requires `FEATURE_SERVER_GLOBS`.
pub const F_SERVER: u32 = 1 << 7;

/// Source record: name, path, hash (offset and length), rank (low and high
/// words), flags.
pub const SOURCE_WORDS: u32 = 9;
pub const S_NAME: u32 = 0;
pub const S_PATH: u32 = 2;
pub const S_HASH: u32 = 4;
pub const S_RANK: u32 = 6;
pub const S_FLAGS: u32 = 8;
pub const SF_TRUSTED: u32 = 1;

/// Tool record: name, field, kind name, splitter name (offset and length;
/// length `NONE` for absent), the always-firing rule list (offset and length
/// in words), the field matcher of its rules and of its carve-outs.
pub const TOOL_WORDS: u32 = 12;
pub const T_NAME: u32 = 0;
pub const T_FIELD: u32 = 2;
pub const T_KIND: u32 = 4;
pub const T_SPLIT: u32 = 6;
pub const T_ALWAYS: u32 = 8;
pub const T_RULES_FM: u32 = 10;
pub const T_CARVE_FM: u32 = 11;

/// Field matcher record: trie root (`NONE` when empty), callback list
/// (offset, length: triples of rule id and spec offset and length), DFA list
/// (offset, length: pairs of DFA index and pattern-to-rule map offset), the
/// inner record of its floating-piece globs (`NONE` when none;
/// `runtime::inner` has its layout).
pub const FM_WORDS: u32 = 6;
pub const FM_ROOT: u32 = 0;
pub const FM_CB: u32 = 1;
pub const FM_DFA: u32 = 3;
pub const FM_INNER: u32 = 5;

/// Trie node: edges (the offset of their labels in `bytes`, sorted, and
/// their count), the offset of their targets (one word each, in the order of
/// the labels), payloads (offset of the first `[rule, verify]` pair, count),
/// the root of the reverse trie hanging off a forward node (`NONE` if none),
/// and the tail: the bytes (offset and length in `bytes`) the walk consumes
/// after the edge that led here, in the order it consumes them, standing for
/// a chain of nodes with one edge and nothing else.
pub const NODE_WORDS: u32 = 8;
pub const N_EDGES: u32 = 0;
pub const N_TARGETS: u32 = 2;
pub const N_PAY: u32 = 3;
pub const N_SUB: u32 = 5;
pub const N_TAIL: u32 = 6;

/// Alias record: name (offset and length), tools (offset and count of
/// `[offset, length]` pairs).
pub const ALIAS_WORDS: u32 = 4;

/// A DFA the program's regular-expression patterns were compiled into.
#[derive(Clone, Debug)]
pub enum Dfa<'a> {
    /// Built by the compiler.
    Owned(dense::DFA<Vec<u32>>),
    /// Borrowed from an artifact's buffer.
    Borrowed(dense::DFA<&'a [u32]>),
}

/// Compiled tables: what the runtime decides with.
#[derive(Clone, Debug)]
pub struct Program<'a> {
    pub words: Cow<'a, [u32]>,
    pub bytes: Cow<'a, [u8]>,
    pub dfas: Vec<Dfa<'a>>,
    /// The Aho-Corasick automata of the inner records, built at first use
    /// from the needles in the tables (they do not serialise).
    pub automata: Automata,
    /// The matcher kind of each tool record, resolved from the registry:
    /// what the callback path calls.
    pub kinds: Vec<Option<Arc<dyn MatcherKind>>>,
    /// The splitter of each tool record, resolved from the registry.
    pub splitters: Vec<Option<Arc<dyn Splitter>>>,
}

/// A rule as the runtime reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleView {
    pub flags: u32,
    pub source: u32,
}

impl RuleView {
    pub fn list(self) -> List {
        match self.flags & F_LIST_MASK {
            0 => List::Deny,
            1 => List::Ask,
            _ => List::Allow,
        }
    }
    pub fn bare(self) -> bool {
        self.flags & F_BARE != 0
    }
    pub fn carvable(self) -> bool {
        self.flags & F_GLOB == 0
    }
}

impl<'a> Program<'a> {
    /// The same tables, owning everything they borrowed.
    pub fn into_owned(self) -> Program<'static> {
        Program {
            words: Cow::Owned(self.words.into_owned()),
            bytes: Cow::Owned(self.bytes.into_owned()),
            dfas: self
                .dfas
                .into_iter()
                .map(|d| match d {
                    Dfa::Owned(d) => Dfa::Owned(d),
                    Dfa::Borrowed(d) => Dfa::Owned(d.to_owned()),
                })
                .collect(),
            automata: self.automata,
            kinds: self.kinds,
            splitters: self.splitters,
        }
    }

    /// The tables as slices, with the hot header fields decoded.
    #[inline]
    pub fn view(&self) -> View<'_> {
        View {
            words: &self.words,
            bytes: &self.bytes,
            automata: &self.automata,
            n_fire: self.h(H_N_FIRE),
            n_deny: self.h(H_N_DENY),
            n_ask: self.h(H_N_ASK),
            rules_at: self.h(H_RULES),
            sources_at: self.h(H_SOURCES),
            tools_at: self.h(H_TOOLS),
            hash_at: self.h(H_TOOL_HASH),
        }
    }

    /// Word `i`, or [`NONE`] outside the buffer.
    #[inline]
    pub fn w(&self, i: u32) -> u32 {
        self.words.get(i as usize).copied().unwrap_or(NONE)
    }

    /// The number of words.
    pub fn n_words(&self) -> u32 {
        u32::try_from(self.words.len()).unwrap_or(NONE)
    }

    /// Header field `h`.
    #[inline]
    pub fn h(&self, h: u32) -> u32 {
        self.w(h)
    }

    /// The string at `off` with `len` bytes, or `""` when out of range or not
    /// UTF-8.
    pub fn s(&self, off: u32, len: u32) -> &str {
        if len == NONE {
            return "";
        }
        let start = off as usize;
        self.bytes
            .get(start..start.saturating_add(len as usize))
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// The bytes at `off` with `len` bytes, empty when out of range: for
    /// comparing a string with text, which needs no UTF-8 check.
    pub fn bytes_at(&self, off: u32, len: u32) -> &[u8] {
        if len == NONE {
            return &[];
        }
        let start = off as usize;
        self.bytes
            .get(start..start.saturating_add(len as usize))
            .unwrap_or_default()
    }

    /// The string whose offset is word `i` and length word `i.wrapping_add(1)`.
    pub fn ws(&self, i: u32) -> &str {
        self.s(self.w(i), self.w(i.wrapping_add(1)))
    }

    /// Whether the string field at words `i`, `i.wrapping_add(1)` is present.
    pub fn has(&self, i: u32) -> bool {
        self.w(i.wrapping_add(1)) != NONE
    }

    pub fn n_rules(&self) -> u32 {
        self.h(H_N_RULES)
    }

    pub fn n_fire(&self) -> u32 {
        self.h(H_N_FIRE)
    }

    #[inline]
    fn rule_at(&self, id: u32) -> u32 {
        self.h(H_RULES).wrapping_add(id.wrapping_mul(RULE_WORDS))
    }

    #[inline]
    pub fn rule(&self, id: u32) -> RuleView {
        let at = self.rule_at(id);
        RuleView {
            flags: self.w(at.wrapping_add(R_FLAGS)),
            source: self.w(at.wrapping_add(R_SOURCE)),
        }
    }

    pub fn rule_text(&self, id: u32) -> &str {
        self.ws(self.rule_at(id).wrapping_add(R_TEXT))
    }

    pub fn rule_tool(&self, id: u32) -> &str {
        self.ws(self.rule_at(id).wrapping_add(R_TOOL))
    }

    pub fn rule_note(&self, id: u32) -> Option<&str> {
        let at = self.rule_at(id);
        (self.w(at.wrapping_add(R_FLAGS)) & F_HAS_NOTE != 0)
            .then(|| self.ws(at.wrapping_add(R_NOTE)))
    }

    /// Whether the rule has a note, without reading it.
    pub fn rule_has_note(&self, id: u32) -> bool {
        self.w(self.rule_at(id).wrapping_add(R_FLAGS)) & F_HAS_NOTE != 0
    }

    pub fn rule_cites_note(&self, id: u32) -> bool {
        self.w(self.rule_at(id).wrapping_add(R_FLAGS)) & F_CITE_NOTE != 0
    }

    #[inline]
    fn source_at(&self, i: u32) -> u32 {
        self.h(H_SOURCES).wrapping_add(i.wrapping_mul(SOURCE_WORDS))
    }

    pub fn n_sources(&self) -> u32 {
        self.h(H_N_SOURCES)
    }

    pub fn source_name(&self, i: u32) -> &str {
        self.ws(self.source_at(i).wrapping_add(S_NAME))
    }

    pub fn source_path(&self, i: u32) -> &str {
        self.ws(self.source_at(i).wrapping_add(S_PATH))
    }

    pub fn source_hash(&self, i: u32) -> &str {
        self.ws(self.source_at(i).wrapping_add(S_HASH))
    }

    #[inline]
    pub fn source_rank(&self, i: u32) -> i64 {
        let at = self.source_at(i).wrapping_add(S_RANK);
        let lo = u64::from(self.w(at));
        let hi = u64::from(self.w(at.wrapping_add(1)));
        ((hi << 32) | lo) as i64
    }

    pub fn source_trusted(&self, i: u32) -> bool {
        self.w(self.source_at(i).wrapping_add(S_FLAGS)) & SF_TRUSTED != 0
    }

    pub fn n_tools(&self) -> u32 {
        self.h(H_N_TOOLS)
    }

    #[inline]
    pub fn tool_at(&self, i: u32) -> u32 {
        self.h(H_TOOLS).wrapping_add(i.wrapping_mul(TOOL_WORDS))
    }

    pub fn tool_name(&self, i: u32) -> &str {
        self.ws(self.tool_at(i).wrapping_add(T_NAME))
    }

    pub fn tool_field(&self, i: u32) -> Option<&str> {
        let at = self.tool_at(i).wrapping_add(T_FIELD);
        self.has(at).then(|| self.ws(at))
    }

    pub fn tool_kind(&self, i: u32) -> Option<&str> {
        let at = self.tool_at(i).wrapping_add(T_KIND);
        self.has(at).then(|| self.ws(at))
    }

    pub fn tool_split(&self, i: u32) -> Option<&str> {
        let at = self.tool_at(i).wrapping_add(T_SPLIT);
        self.has(at).then(|| self.ws(at))
    }

    /// The index of the tool record named `name`.
    #[inline]
    pub fn find_tool(&self, name: &str) -> Option<u32> {
        self.view().find_tool(name)
    }

    pub fn default_decision(&self) -> crate::Decision {
        match self.h(H_DEFAULT) {
            0 => crate::Decision::Allow,
            1 => crate::Decision::Ask,
            _ => crate::Decision::Deny,
        }
    }

    /// The source records, in merge order. The count read from the tables
    /// is bounded by the tables' size, as `withheld` and `aliases` bound
    /// theirs: damaged tables must not ask for an allocation the process
    /// cannot make.
    pub fn sources(&self) -> Vec<crate::decision::Source> {
        (0..self.n_sources().min(self.n_words()))
            .map(|i| crate::decision::Source {
                name: self.source_name(i).to_string(),
                rank: self.source_rank(i),
                trusted: self.source_trusted(i),
                path: self.source_path(i).to_string(),
                hash: self.source_hash(i).to_string(),
            })
            .collect()
    }

    /// The alias table: rule name and the tools it stands for.
    pub fn aliases(&self) -> Vec<(String, Vec<String>)> {
        let n = self.h(H_N_ALIASES).min(self.n_words());
        let base = self.h(H_ALIASES);
        (0..n)
            .map(|i| {
                let at = base.wrapping_add(i.wrapping_mul(ALIAS_WORDS));
                let name = self.ws(at).to_string();
                let off = self.w(at.wrapping_add(2));
                let count = self.w(at.wrapping_add(3)).min(self.n_words());
                let tools = (0..count)
                    .map(|k| self.ws(off.wrapping_add(k.wrapping_mul(2))).to_string())
                    .collect();
                (name, tools)
            })
            .collect()
    }

    /// Whether a rule, withheld or not, is server-bounded (`F_SERVER`):
    /// the artifact writer then requires the feature a reader needs for it.
    pub fn has_server_rules(&self) -> bool {
        let flags_of = |base: u32, n: u32| {
            (0..n.min(self.n_words())).map(move |i| {
                base.wrapping_add(i.wrapping_mul(RULE_WORDS))
                    .wrapping_add(R_FLAGS)
            })
        };
        flags_of(self.h(H_RULES), self.h(H_N_RULES))
            .chain(flags_of(self.h(H_WITHHELD), self.h(H_N_WITHHELD)))
            .any(|at| self.w(at) & F_SERVER != 0)
    }

    /// The withheld rules: (text, source index).
    pub fn withheld(&self) -> Vec<(String, u32)> {
        let n = self.h(H_N_WITHHELD).min(self.n_words());
        let base = self.h(H_WITHHELD);
        (0..n)
            .map(|i| {
                let at = base.wrapping_add(i.wrapping_mul(RULE_WORDS));
                (
                    self.ws(at.wrapping_add(R_TEXT)).to_string(),
                    self.w(at.wrapping_add(R_SOURCE)),
                )
            })
            .collect()
    }
}

/// The tool table's hash: eight bytes at a time (little-endian, the last
/// chunk zero-padded), each mixed in with a rotate, a xor and a multiply, and
/// the two halves of the result folded. Fixed, so that tables are the same
/// bytes whatever the process, and cheap on the short names tools have.
#[inline]
pub fn name_hash(bytes: &[u8]) -> u32 {
    let mut h: u64 = bytes.len() as u64;
    for chunk in bytes.chunks(8) {
        let mut w = [0u8; 8];
        for (d, s) in w.iter_mut().zip(chunk) {
            *d = *s;
        }
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    ((h >> 32) ^ h) as u32
}

/// The tables of a program borrowed as plain slices, with the header fields
/// the hot path reads decoded once: what a decision walks.
#[derive(Clone, Copy)]
pub struct View<'p> {
    pub words: &'p [u32],
    pub bytes: &'p [u8],
    pub automata: &'p Automata,
    pub n_fire: u32,
    pub n_deny: u32,
    pub n_ask: u32,
    pub rules_at: u32,
    pub sources_at: u32,
    pub tools_at: u32,
    pub hash_at: u32,
}

impl<'p> View<'p> {
    #[inline]
    pub fn w(&self, i: u32) -> u32 {
        self.words.get(i as usize).copied().unwrap_or(NONE)
    }

    /// The bytes at `off` with `len` bytes.
    #[inline]
    pub fn b(&self, off: u32, len: u32) -> &'p [u8] {
        let at = off as usize;
        self.bytes
            .get(at..at.saturating_add(len as usize))
            .unwrap_or(&[])
    }

    /// The list of firing rule `id` (0 deny, 1 ask, 2 allow).
    #[inline]
    pub fn list_of(&self, id: u32) -> usize {
        if id < self.n_deny {
            0
        } else if id - self.n_deny < self.n_ask {
            1
        } else {
            2
        }
    }

    /// The flags and source of rule `id`.
    #[inline]
    pub fn rule(&self, id: u32) -> RuleView {
        let at = self.rules_at.wrapping_add(id.wrapping_mul(RULE_WORDS)) as usize;
        match self.words.get(at..at.wrapping_add(RULE_WORDS as usize)) {
            Some(r) => RuleView {
                flags: r.get(R_FLAGS as usize).copied().unwrap_or(NONE),
                source: r.get(R_SOURCE as usize).copied().unwrap_or(NONE),
            },
            None => RuleView {
                flags: NONE,
                source: NONE,
            },
        }
    }

    /// The tool (or tool-name glob) of rule `id`.
    pub fn rule_tool(&self, id: u32) -> &'p [u8] {
        let at = self
            .rules_at
            .wrapping_add(id.wrapping_mul(RULE_WORDS))
            .wrapping_add(R_TOOL);
        self.b(self.w(at), self.w(at.wrapping_add(1)))
    }

    /// The rank of source `i`.
    #[inline]
    pub fn source_rank(&self, i: u32) -> i64 {
        let at = self
            .sources_at
            .wrapping_add(i.wrapping_mul(SOURCE_WORDS))
            .wrapping_add(S_RANK) as usize;
        match self.words.get(at..at.wrapping_add(2)) {
            Some(&[lo, hi]) => ((u64::from(hi) << 32) | u64::from(lo)) as i64,
            _ => 0,
        }
    }

    /// The name of source `i`, as bytes.
    #[inline]
    pub fn source_name(&self, i: u32) -> &'p [u8] {
        let at = self
            .sources_at
            .wrapping_add(i.wrapping_mul(SOURCE_WORDS))
            .wrapping_add(S_NAME);
        self.b(self.w(at), self.w(at.wrapping_add(1)))
    }

    /// The record of tool `t`.
    #[inline]
    pub fn tool(&self, t: u32) -> Option<&'p [u32]> {
        let at = self.tools_at.wrapping_add(t.wrapping_mul(TOOL_WORDS)) as usize;
        self.words.get(at..at.wrapping_add(TOOL_WORDS as usize))
    }

    /// The index of the tool record named `name`.
    #[inline]
    pub fn find_tool(&self, name: &str) -> Option<u32> {
        let cap = self.w(self.hash_at);
        if cap == 0 || cap == NONE || !cap.is_power_of_two() {
            return None;
        }
        let slots = self.words.get(
            self.hash_at as usize + 1..(self.hash_at as usize + 1).checked_add(cap as usize)?,
        )?;
        let mask = cap - 1;
        let mut slot = name_hash(name.as_bytes()) & mask;
        for _ in 0..cap {
            let v = slots.get(slot as usize).copied().unwrap_or(0);
            if v == 0 {
                return None;
            }
            let t = v - 1;
            let rec = self.tool(t)?;
            let (off, len) = (rec.get(T_NAME as usize)?, rec.get(T_NAME as usize + 1)?);
            if self.b(*off, *len) == name.as_bytes() {
                return Some(t);
            }
            slot = (slot + 1) & mask;
        }
        None
    }

    /// The argument member tool `t`'s matcher reads, as bytes.
    #[inline]
    pub fn tool_field(&self, t: u32) -> Option<&'p [u8]> {
        let rec = self.tool(t)?;
        let (off, len) = (*rec.get(T_FIELD as usize)?, *rec.get(T_FIELD as usize + 1)?);
        (len != NONE).then(|| self.b(off, len))
    }
}
