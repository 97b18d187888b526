//! Condition programs: rules that AND predicates over dot-path fields of a
//! request, compiled into the same tables, walker and artifact as rule lists.
//!
//! A front end (Rubric's, in [`crate::rubric`]) lowers its document into a
//! [`CondIr`]: groups (policies) of rules, each rule an effect and a
//! conjunction of [`Cond`]s over fields; the combining algorithm is
//! first-deny, last-allow, the first group's default, and a group marked
//! errored stops the scan. [`compile()`] turns it into a [`Program`] whose
//! words start with the magic `TGC2`:
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
//! Depends on `compile` (the trie builder and the string writer),
//! `runtime` (the program container, the walker, the work budget), `diag`,
//! regex-syntax, regex-automata and aho-corasick. The reference interpreter
//! ([`crate::rubric::reference`]) uses none of it.

pub(crate) mod compile;
pub(crate) mod eval;
pub mod glob;
pub mod pattern;
mod scan;
pub mod value;

pub use compile::compile;
pub(crate) use compile::compile_first_match;
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

/// A condition's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Strict equality: same type and value.
    Eq,
    /// Not `Eq`.
    Neq,
    /// The stringified field is one of the stringified items.
    In,
    /// Not `In`.
    NotIn,
    /// The stringified field contains the value.
    Contains,
    /// The stringified field starts with the value.
    StartsWith,
    /// The stringified field ends with the value.
    EndsWith,
    /// An RE2 pattern occurs in the stringified field.
    Matches,
}

impl Op {
    /// Every operator, in the order the seed lists them.
    pub const ALL: [Op; 8] = [
        Op::Eq,
        Op::Neq,
        Op::In,
        Op::NotIn,
        Op::Contains,
        Op::StartsWith,
        Op::EndsWith,
        Op::Matches,
    ];

    /// The operator's name as bundles write it.
    pub fn name(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Neq => "neq",
            Op::In => "in",
            Op::NotIn => "not_in",
            Op::Contains => "contains",
            Op::StartsWith => "starts_with",
            Op::EndsWith => "ends_with",
            Op::Matches => "matches",
        }
    }

    /// The operator named `name`.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// A condition's value.
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

/// One condition: the field at a dot path, an operator and a value.
#[derive(Clone, Debug, PartialEq)]
pub struct Cond {
    /// The dot path, as written.
    pub field: String,
    /// The operator.
    pub op: Op,
    /// The value.
    pub value: Operand,
}

/// One rule: an effect when all of its conditions hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The rule's id.
    pub id: String,
    /// Its description, if it has one.
    pub description: Option<String>,
    /// What it decides.
    pub effect: Effect,
    /// The conjunction.
    pub conds: Vec<Cond>,
}

/// One group of rules (a Rubric policy).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The group's id.
    pub id: String,
    /// Its version.
    pub version: u64,
    /// What applies when no rule matches and this is the first group.
    pub default: Effect,
    /// Its rules, in order.
    pub rules: Vec<Rule>,
    /// Whether a pattern of the group failed to compile: reaching the group
    /// decides deny.
    pub errored: bool,
}

/// A gate on tool names of the form `mcp__<server>__<tool>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    /// Whether the gate applies.
    pub enforce: bool,
    /// The servers whose tools pass.
    pub approved: Vec<String>,
}

/// A condition program: what the compiler reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CondIr {
    /// The groups, in order.
    pub groups: Vec<Group>,
    /// Agent ids refused before any rule, compared case-insensitively.
    pub frozen: Vec<String>,
    /// The server gate, when the document declares one.
    pub gate: Option<Gate>,
}

/// A first-match program: ordered rules, each a conjunction of [`Test`]s,
/// where the first rule whose tests all hold decides, whatever it decides.
///
/// Authensor's front end ([`crate::authensor`]) lowers its prioritised,
/// scoped policies into one: scopes become tests of every rule of their
/// policy, a policy's default and its session check become rules of their
/// own, and each rule carries a front-end tag (its effect and kind) that the
/// compiler stores and never reads. It compiles into the same tables as a
/// [`CondIr`] (predicates in tries and DFAs, rules anchored on their rarest
/// positive predicate), with every rule on the first-wins lists, so a
/// decision is the smallest rule id whose literals hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchIr {
    /// The groups' ids (an Authensor policy each), in order.
    pub groups: Vec<String>,
    /// The rules, in decision order.
    pub rules: Vec<MatchRule>,
    /// Globs over a stream of tokens (Authensor's action types), compiled
    /// into one matcher whose payloads are the globs' positions in this
    /// list ([`Compiled::walk_tokens`]).
    pub tokens: Vec<TokenGlob>,
}

/// One rule of a [`MatchIr`].
#[derive(Clone, Debug, PartialEq)]
pub struct MatchRule {
    /// The rule's id, as results name it.
    pub id: String,
    /// Its description (Authensor: the reason), if it has one.
    pub description: Option<String>,
    /// Its group's index in [`MatchIr::groups`].
    pub group: u32,
    /// A front-end code stored with the rule (at most [`MAX_TAG`]).
    pub tag: u32,
    /// Whether the front end checks more than the tests when the rule is a
    /// candidate: [`Compiled::decide_first`] asks its residual check.
    pub residual: bool,
    /// The conjunction.
    pub tests: Vec<Test>,
}

/// The largest [`MatchRule::tag`].
pub const MAX_TAG: u32 = 0xffff;

/// One test of a [`MatchRule`]: a predicate on the field at a dot path, or
/// its negation.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// The dot path, as written.
    pub field: String,
    /// Whether the test holds when the predicate does not.
    pub negated: bool,
    /// The predicate.
    pub pred: Pred,
}

/// A predicate of a first-match program. Unlike Rubric's operators, none
/// stringifies: a predicate on strings is false for a field of any other
/// type (or none).
#[derive(Clone, Debug, PartialEq)]
pub enum Pred {
    /// The field is a string that one of the globs matches ([`glob`]): `*`
    /// is any run without the separator, `**` any run, every other
    /// character itself. No globs never holds.
    Glob {
        /// The segment separator.
        sep: char,
        /// The globs, any of which may match.
        globs: Vec<String>,
    },
    /// The field is this string.
    Equals(String),
    /// The field is a string equal to one of these; none never holds.
    OneOf(Vec<String>),
    /// The field is a string in which this RE2 pattern occurs.
    Search(String),
    /// The field is a number greater than this (finite) one.
    Above(f64),
    /// The field resolves to anything but `null`.
    Present,
    /// The field is a number.
    Number,
}

/// A glob over tokens, as [`Pred::Glob`] reads one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenGlob {
    /// The segment separator.
    pub sep: char,
    /// The glob.
    pub glob: String,
}

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
