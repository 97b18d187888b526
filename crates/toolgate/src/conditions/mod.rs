//! Condition programs: rules that AND predicates over dot-path fields of a
//! request, compiled into the same tables, walker and artifact as rule lists.
//!
//! A front end lowers its document into the one IR ([`crate::ir::Ir`]):
//! groups (policies) of rules, each rule a list (its effect) and a
//! conjunction of [`crate::ir::FieldTest`]s, combining first-deny,
//! last-allow with the first group's default and a group marked errored
//! stopping the scan (Rubric's, [`crate::rubric`]), or first-match, where
//! the first rule whose tests hold decides (Authensor's,
//! [`crate::authensor`]). [`compile()`] turns it into a
//! [`crate::runtime::program::Program`] whose words start with the magic
//! `TGC2`:
//!
//! * every distinct positive condition is a **predicate** with a `u32` id;
//!   `neq` and `not_in` are the negations of `eq` and `in`, which they are
//!   exactly, a missing field included;
//! * per field, the predicates are the payloads of tries built by
//!   `compile::trie` and walked by `runtime::eval` (`eq` by type, `in` items
//!   as exact paths, `starts_with` as prefixes, `ends_with` as suffixes),
//!   and of unanchored bounded DFAs that find every `contains` needle (an
//!   escaped literal) and every `matches` pattern in one pass;
//! * a rule is a conjunction of literals (a predicate, or its negation),
//!   and is **anchored** on its rarest positive predicate: each predicate
//!   lists the deny rules and the allow rules anchored on it, in id order;
//!   rules with no positive literal are on two "always" lists;
//! * a decision collects the true predicates, then for each one offers its
//!   anchored deny rules in increasing id order, stopping at the first
//!   whose literals all hold (a lookup per literal in the predicate bits)
//!   or at an id no smaller than the best deny found; only when no deny
//!   matched does it look for the last allow the same way, backwards;
//! * rules after the first errored group are not compiled at all, as no
//!   request can reach them.
//!
//! The cost of a decision is one walk per field addressed, plus the
//! candidates the true predicates anchor that could still beat the best
//! found: it does not grow with the number of rules a request cannot
//! match.
//!
//! Depends on `ir`, `compile` (the trie builder and the string writer),
//! `runtime` (the program container, the walker, the work budget), `diag`,
//! regex-syntax, regex-automata and aho-corasick. The reference interpreter
//! (`toolgate_reference::rubric`) uses none of it.

pub(crate) mod compile;
pub(crate) mod eval;
pub mod glob;
pub mod pattern;
mod scan;
pub mod value;

pub use compile::compile;
pub(crate) use compile::compile_with;
pub use eval::{Compiled, Outcome};

/// What a rule, or a group's default, decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Let the call through.
    Allow,
    /// Refuse the call.
    Deny,
}

impl Effect {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Deny => "deny",
        }
    }
}

/// A condition's operator: the one IR's.
pub use crate::ir::Op;

/// A condition's value, as a bundle holds it ([`crate::ir::Operand`] is
/// its copy in the arena).
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A string.
    Str(String),
    /// A finite number.
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    Strs(Vec<String>),
    /// A list of numbers.
    Nums(Vec<f64>),
}

/// One condition of a Rubric bundle, as read: the field at a dot path, an
/// operator and a value. The bundle lowers it into the IR as a
/// [`crate::ir::Pred::Op`].
#[derive(Clone, Debug, PartialEq)]
pub struct Cond {
    /// The dot path, as written.
    pub field: String,
    /// The operator.
    pub op: Op,
    /// The value.
    pub value: Operand,
}

/// The largest [`crate::ir::IrRule::tag`].
pub const MAX_TAG: u32 = 0xffff;

/// Limits that keep compilation bounded: the rule-list compiler's, whose
/// `dfa_bytes` bounds each DFA (a chunk of patterns over it is split, and a
/// single pattern over it does not compile).
pub use crate::compile::Limits;

/// The table layout, word by word (see `spec/artifact.md`).
pub(crate) mod layout {
    /// The first word of a condition program: `TGC2` little-endian.
    pub const MAGIC: u32 = u32::from_le_bytes(*b"TGC2");
    /// The magic of the programs artifact format 3.0 wrote, whose fields
    /// held serialised unanchored DFAs: refused with a message to compile
    /// again.
    pub const MAGIC_3_0: u32 = u32::from_le_bytes(*b"TGC1");
    /// Header words.
    pub const HDR_WORDS: u32 = 25;
    pub const H_N_GROUPS: u32 = 1;
    pub const H_GROUPS: u32 = 2;
    pub const H_N_RULES: u32 = 3;
    pub const H_RULES: u32 = 4;
    pub const H_N_PREDS: u32 = 5;
    /// Per predicate, 4 words: its anchored deny rules (offset, count) and
    /// allow rules (offset, count), each in increasing id order.
    pub const H_ANCHORS: u32 = 6;
    pub const H_N_FIELDS: u32 = 7;
    pub const H_FIELDS: u32 = 8;
    pub const H_STOP: u32 = 9;
    pub const H_ALWAYS_DENY: u32 = 10;
    pub const H_ALWAYS_ALLOW: u32 = 12;
    pub const H_FROZEN_FM: u32 = 14;
    pub const H_GATE: u32 = 15;
    pub const H_APPROVED_FM: u32 = 16;
    /// The same word as the rule-list programs', so that the artifact
    /// reader checks the DFA count of both kinds alike.
    pub const H_N_DFAS: u32 = 17;
    /// How the rules combine: [`KIND_RUBRIC`] (first deny, last allow; what
    /// every program written before first-match programs holds) or
    /// [`KIND_FIRST_MATCH`].
    pub const H_KIND: u32 = 18;
    pub const KIND_RUBRIC: u32 = 0;
    pub const KIND_FIRST_MATCH: u32 = 1;
    /// The field matcher of the token globs (0 or `NONE`: none).
    pub const H_TOKENS: u32 = 19;
    /// The number of token globs.
    pub const H_N_TOKENS: u32 = 23;
    /// Offset of the numeric thresholds (0: none): per field, 2 words
    /// (offset, count) of 3-word entries `[value low, value high, predicate]`
    /// (an `f64`'s bits), in increasing value.
    pub const H_NUMS: u32 = 21;
    /// Offset of the front end's own tables (0: none).
    pub const H_EXT: u32 = 22;
    /// The NFA size limit, in bytes, the patterns were checked with: the
    /// lazy DFAs are built with it (capped by [`MAX_PATTERN_LIMIT`]).
    pub const H_PATTERN_LIMIT: u32 = 24;
    /// The largest NFA size limit a reader builds patterns with, whatever
    /// the tables ask: 64 MiB.
    pub const MAX_PATTERN_LIMIT: u32 = 64 << 20;

    /// Group record: id (2), version (low, high), default (0 allow, 1 deny),
    /// flags.
    pub const GROUP_WORDS: u32 = 6;
    pub const G_VERSION: u32 = 2;
    pub const G_DEFAULT: u32 = 4;
    pub const G_FLAGS: u32 = 5;
    pub const GF_ERRORED: u32 = 1;

    /// Rule record: id (2), description (2), group, flags, literals
    /// (offset, count of words `predicate << 1 | negated`).
    pub const RULE_WORDS: u32 = 8;
    pub const R_DESC: u32 = 2;
    pub const R_GROUP: u32 = 4;
    pub const R_FLAGS: u32 = 5;
    pub const R_LITS: u32 = 6;
    pub const RF_DENY: u32 = 1;
    pub const RF_NEVER: u32 = 2;
    pub const RF_HAS_DESC: u32 = 4;
    /// First-match programs: the front end checks more than the literals.
    pub const RF_RESIDUAL: u32 = 8;
    /// First-match programs: the front end's tag, in the high 16 bits.
    pub const RF_TAG_SHIFT: u32 = 16;

    /// Field record: path (2), parts (offset, count of strings), the field
    /// matcher of its trie (`eq`, `in`, `starts_with`, `ends_with`, walked
    /// over the stringified value), the needles (offset, count of
    /// [`SCAN_WORDS`]-word entries: the `contains` value and its predicate),
    /// the patterns (offset, count of entries: the translated `matches` or
    /// `regex` pattern and its predicate).
    pub const FIELD_WORDS: u32 = 9;
    pub const F_PARTS: u32 = 2;
    pub const F_STR: u32 = 4;
    pub const F_NEEDLES: u32 = 5;
    pub const F_PATTERNS: u32 = 7;
    /// Needle and pattern entry: the text (bytes offset, length), the
    /// predicate.
    pub const SCAN_WORDS: u32 = 3;

    /// Offset of the predicate types: one word per predicate, the JSON type
    /// the field must have for the predicate to hold. An `eq` key is its
    /// value's text, so `eq` shares the field's trie with the operators that
    /// stringify, and the type keeps `"1"` from equalling `1`.
    pub const H_PRED_TYPES: u32 = 20;
    pub const PT_ANY: u32 = 0;
    pub const PT_STRING: u32 = 1;
    pub const PT_NUMBER: u32 = 2;
    pub const PT_BOOL: u32 = 3;

    /// Gate flags.
    pub const GATE_PRESENT: u32 = 1;
    pub const GATE_ENFORCE: u32 = 2;
}
