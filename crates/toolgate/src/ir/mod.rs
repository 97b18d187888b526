//! The intermediate representation: rules, sources and policies in an arena.
//!
//! Every front end lowers its document into an [`Ir`]: interned tool names,
//! `u32` ids for sources and rules, and rules whose conditions and combining
//! algorithm are data. A rule is an effect (its list), a target (a tool
//! name, a glob over tool names, or the whole request), a conjunction of
//! [`Cond`]s and a source; the policy's [`Combining`] says how firing rules
//! become a decision, in one of three modes:
//!
//! * agentpolicy's precedence (Claude Code lowers to it too): rules target
//!   tools, their conditions are specifiers read by each tool's matcher
//!   kind; `check` and `compile` turn it into rule-list tables;
//! * Rubric's first deny, else last allow, with the first group's default:
//!   rules target the request, their conditions are Rubric's operators on
//!   fields;
//! * Authensor's first match: rules target the request, their conditions
//!   are predicates on fields, and the first rule whose conditions hold
//!   decides, whatever it decides.
//!
//! The last two compile into condition-program tables
//! ([`crate::conditions::compile()`]). Strings and slices live in a `bumpalo`
//! arena, which runs no destructors: everything in it is plain data, and
//! what needs dropping (diagnostic locations) lives beside it.
//!
//! Depends on `policy`, `diag` and `decision`. The runtime never sees this
//! module: the compilers lower it into owned tables.

use crate::decision::Decision;
use crate::diag::Location;
use crate::policy::{List, Policy, RuleDecl};
use bumpalo::Bump;
use std::collections::HashMap;

/// An interned name: a tool, a tool-name glob or an alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sym(pub u32);

/// A source's id: its position in [`Ir::sources`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId(pub u32);

/// A rule's id: its position in [`Ir::rules`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleId(pub u32);

/// Interns names into the arena.
#[derive(Debug, Default)]
pub struct Interner<'a> {
    names: Vec<&'a str>,
    ids: HashMap<&'a str, Sym>,
}

impl<'a> Interner<'a> {
    /// The id of `name`, interning it on first sight.
    pub fn intern(&mut self, arena: &'a Bump, name: &str) -> Sym {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let s: &'a str = arena.alloc_str(name);
        let id = Sym(u32::try_from(self.names.len()).unwrap_or(u32::MAX));
        self.names.push(s);
        self.ids.insert(s, id);
        id
    }

    /// The name of `id`.
    pub fn name(&self, id: Sym) -> &'a str {
        self.names.get(id.0 as usize).copied().unwrap_or("")
    }

    /// The id of `name`, when it has been interned.
    pub fn get(&self, name: &str) -> Option<Sym> {
        self.ids.get(name).copied()
    }
}

/// A source of rules.
#[derive(Clone, Copy, Debug)]
pub struct IrSource<'a> {
    /// The name; empty for the host's own rules.
    pub name: &'a str,
    /// Authority, higher first.
    pub rank: i64,
    /// Whether its allow rules apply.
    pub trusted: bool,
    /// Where it lives.
    pub path: &'a str,
    /// Its hash.
    pub hash: &'a str,
    /// Whether this is the host's own rules (the empty-named source).
    pub host: bool,
    /// Index into [`Ir::locations`].
    pub location: u32,
}

/// Which rules a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// One tool, or an alias standing for several.
    Tool(Sym),
    /// A glob over tool names: `*` is any run of characters.
    Glob(Sym),
    /// A glob over MCP tool names that one server bounds (a
    /// [`crate::policy::ServerAllow`]): a bare allow rule, and the only
    /// glob the allow list may hold.
    ServerGlob(Sym),
    /// Every request: the rule's conditions address the request's fields
    /// (Rubric's and Authensor's rules).
    Request,
}

/// Whether a rule fires, or cancels other rules that fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleClass {
    /// The rule fires when its conditions hold.
    Fire,
    /// A carve-out: when its conditions hold it cancels the firing rules of
    /// its list, for its tool, of sources it does not rank below.
    CarveOut,
}

/// One condition of a rule. A rule fires when all of its conditions hold;
/// a rule with none (a bare rule) fires for every call of its target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cond<'a> {
    /// A specifier, read by the matcher the registry declares for the rule's
    /// tool, against the argument member that matcher names.
    Spec(&'a str),
    /// A predicate on the request's field at a dot path, or its negation.
    Field(FieldTest<'a>),
}

/// A predicate on one field of a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldTest<'a> {
    /// The dot path, as written.
    pub field: &'a str,
    /// Whether the test holds when the predicate does not.
    pub negated: bool,
    /// The predicate.
    pub pred: Pred<'a>,
}

/// A Rubric condition's operator (`spec/rubric.md`).
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

/// A Rubric operator's value, in the arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand<'a> {
    /// A string.
    Str(&'a str),
    /// A finite number.
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    Strs(&'a [&'a str]),
    /// A list of numbers.
    Nums(&'a [f64]),
}

/// What a [`FieldTest`] asks of its field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pred<'a> {
    /// A Rubric operator and its value: every operator but `eq` and `neq`
    /// reads the field as JavaScript's `String(v)`; `neq` and `not_in` are
    /// the negations of `eq` and `in`, a missing field included.
    Op(Op, Operand<'a>),
    /// The field is a string that one of the globs matches
    /// ([`crate::conditions::glob`]): `*` is any run without the separator,
    /// `**` any run, every other character itself. No globs never holds.
    Glob {
        /// The segment separator.
        sep: char,
        /// The globs, any of which may match.
        globs: &'a [&'a str],
    },
    /// The field is this string.
    Equals(&'a str),
    /// The field is a string equal to one of these; none never holds.
    OneOf(&'a [&'a str]),
    /// The field is a string in which this RE2 pattern occurs.
    Search(&'a str),
    /// The field is a number greater than this (finite) one.
    Above(f64),
    /// The field resolves to anything but `null`.
    Present,
    /// The field is a number.
    Number,
}

/// A group of rules: a Rubric or an Authensor policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IrGroup<'a> {
    /// The group's id.
    pub id: &'a str,
    /// Its version (Rubric's `policyVersion`; 0 for Authensor's).
    pub version: u64,
    /// What applies when no rule decides and this is the first group
    /// (Rubric's); Authensor's groups decide by rules of their own.
    pub default: Decision,
    /// Whether a pattern of the group failed to compile: reaching the group
    /// decides deny, and no rule after it is ever reached.
    pub errored: bool,
}

/// A gate on tool names of the form `mcp__<server>__<tool>` (Rubric's
/// `mcpAccess`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrGate<'a> {
    /// Whether the gate applies.
    pub enforce: bool,
    /// The servers whose tools pass.
    pub approved: &'a [&'a str],
}

/// A glob over a stream of tokens (Authensor's action types), compiled
/// into one matcher whose payloads are the globs' positions in
/// [`Combining::FirstMatch::tokens`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrToken<'a> {
    /// The segment separator.
    pub sep: char,
    /// The glob.
    pub glob: &'a str,
}

/// How firing rules become a decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Combining<'a> {
    /// agentpolicy's: the first firing deny rule, then the first firing ask
    /// rule, then the first firing allow rule, then the default; carve-outs
    /// cancel rules of their own list.
    Precedence {
        /// What applies when no rule fires; `None` is refused by `check`.
        default: Option<Decision>,
    },
    /// Rubric's: agent ids refused before any rule, a gate on MCP servers,
    /// then the first deny rule that holds, or else the last allow rule
    /// that holds, or else the first group's default; an errored group
    /// stops the scan.
    FirstDenyLastAllow {
        /// Agent ids refused before any rule, compared case-insensitively.
        frozen: &'a [&'a str],
        /// The server gate, when the document declares one.
        gate: Option<IrGate<'a>>,
    },
    /// Authensor's: the first rule whose conditions hold decides, whatever
    /// its list; a rule's tag carries what it decides and the front end's
    /// kind of entry.
    FirstMatch {
        /// Globs over tokens, which the front end's own tables refer to.
        tokens: &'a [IrToken<'a>],
    },
}

/// One rule.
#[derive(Clone, Copy, Debug)]
pub struct IrRule<'a> {
    /// Which list, and so which effect.
    pub list: List,
    /// Fire or carve out.
    pub class: RuleClass,
    /// What it applies to.
    pub target: Target,
    /// The conjunction of conditions.
    pub conds: &'a [Cond<'a>],
    /// Where it came from.
    pub source: SourceId,
    /// Why it exists, when its source says.
    pub note: Option<&'a str>,
    /// The rule as written: `Bash(git:*)`; a Rubric or Authensor rule's id.
    pub text: &'a str,
    /// Index into [`Ir::locations`].
    pub location: u32,
    /// Its group's index in [`Ir::groups`] (0 for rule lists, which have
    /// none).
    pub group: u32,
    /// A front-end code the compiler stores with the rule and never reads
    /// (Authensor's effect and kind of entry; at most
    /// [`crate::conditions::MAX_TAG`]).
    pub tag: u32,
    /// Whether the front end checks more than the conditions when the rule
    /// is a candidate (Authensor's session entries).
    pub residual: bool,
}

impl<'a> IrRule<'a> {
    /// The specifier (a carve-out's pattern without its `!`), if any.
    pub fn spec(&self) -> Option<&'a str> {
        self.conds.iter().find_map(|c| match c {
            Cond::Spec(s) => Some(*s),
            Cond::Field(_) => None,
        })
    }

    /// A rule of a condition program: `text` is its id, `note` its
    /// description; it targets the request and belongs to the host.
    pub fn on_request(list: List, text: &'a str, group: u32, conds: &'a [Cond<'a>]) -> IrRule<'a> {
        IrRule {
            list,
            class: RuleClass::Fire,
            target: Target::Request,
            conds,
            source: SourceId(0),
            note: None,
            text,
            location: 0,
            group,
            tag: 0,
            residual: false,
        }
    }
}

/// An alias: a rule name standing for several tools.
#[derive(Clone, Copy, Debug)]
pub struct IrAlias<'a> {
    /// The rule name.
    pub name: &'a str,
    /// The tools it stands for, in order.
    pub tools: &'a [&'a str],
    /// Index into [`Ir::locations`].
    pub location: u32,
}

/// A matcher declaration for one tool.
#[derive(Clone, Copy, Debug)]
pub struct IrMatcher<'a> {
    /// The tool.
    pub tool: Sym,
    /// The kind's name; `None` declares no matcher.
    pub kind: Option<&'a str>,
    /// The argument member read.
    pub field: Option<&'a str>,
    /// The splitter's name.
    pub split: Option<&'a str>,
    /// Index into [`Ir::locations`].
    pub location: u32,
}

/// A policy in the arena.
#[derive(Debug)]
pub struct Ir<'a> {
    /// The arena everything borrows from.
    pub arena: &'a Bump,
    /// Tool names, globs and alias names.
    pub names: Interner<'a>,
    /// Sources, in the order declared; the host's own rules are the last.
    pub sources: Vec<IrSource<'a>>,
    /// Rules: each source's deny, ask and allow rules, in order.
    pub rules: Vec<IrRule<'a>>,
    /// Aliases, in the order declared.
    pub aliases: Vec<IrAlias<'a>>,
    /// Matchers, in the order declared.
    pub matchers: Vec<IrMatcher<'a>>,
    /// Groups of rules (Rubric's and Authensor's policies), in order.
    pub groups: Vec<IrGroup<'a>>,
    /// How rules combine.
    pub combining: Combining<'a>,
    /// Where sources, rules, aliases and matchers were written.
    pub locations: Vec<Location>,
}

impl<'a> Ir<'a> {
    /// Lowers a parsed policy document into the arena.
    pub fn from_policy(arena: &'a Bump, p: &Policy) -> Ir<'a> {
        let mut ir = Ir {
            arena,
            names: Interner::default(),
            sources: Vec::new(),
            rules: Vec::new(),
            aliases: Vec::new(),
            matchers: Vec::new(),
            groups: Vec::new(),
            combining: Combining::Precedence { default: p.default },
            locations: Vec::new(),
        };
        for m in &p.matchers {
            let tool = ir.names.intern(arena, &m.tool);
            let location = ir.locate(&m.location, &p.file);
            ir.matchers.push(IrMatcher {
                tool,
                kind: m.kind.as_deref().map(|s| &*arena.alloc_str(s)),
                field: m.field.as_deref().map(|s| &*arena.alloc_str(s)),
                split: m.split.as_deref().map(|s| &*arena.alloc_str(s)),
                location,
            });
        }
        for (i, (name, tools)) in p.aliases.iter().enumerate() {
            let loc = p.alias_locations.get(i).cloned().unwrap_or_default();
            let location = ir.locate(&loc, &p.file);
            let tools: Vec<&'a str> = tools.iter().map(|t| &*arena.alloc_str(t)).collect();
            ir.aliases.push(IrAlias {
                name: arena.alloc_str(name),
                tools: arena.alloc_slice_copy(&tools),
                location,
            });
        }
        for set in &p.sources {
            let location = ir.locate(&set.location, &p.file);
            let s = &set.source;
            ir.add_source(IrSource {
                name: arena.alloc_str(&s.name),
                rank: s.rank,
                trusted: s.trusted,
                path: arena.alloc_str(&s.path),
                hash: arena.alloc_str(&s.hash),
                host: false,
                location,
            });
            let id = SourceId(ir.sources.len() as u32 - 1);
            ir.add_lists(id, &set.lists, &p.file);
        }
        let location = ir.locate(&Default::default(), &p.file);
        ir.add_source(IrSource {
            name: "",
            rank: 0,
            trusted: true,
            path: "",
            hash: "",
            host: true,
            location,
        });
        let host = SourceId(ir.sources.len() as u32 - 1);
        ir.add_lists(host, &p.host, &p.file);
        for a in &p.server_allows {
            let source = p
                .sources
                .iter()
                .position(|set| !a.source.is_empty() && set.source.name == a.source)
                .map_or(host, |i| SourceId(i as u32));
            let location = ir.locate(&a.location, &p.file);
            let glob = ir.names.intern(arena, &a.glob);
            ir.rules.push(IrRule {
                list: List::Allow,
                class: RuleClass::Fire,
                target: Target::ServerGlob(glob),
                conds: &[],
                source,
                note: None,
                text: arena.alloc_str(&a.text),
                location,
                group: 0,
                tag: 0,
                residual: false,
            });
        }
        ir
    }

    /// An empty condition program combining as `combining`, with the one
    /// source its rules belong to (the host's, id 0) and its one location.
    pub fn conditions(arena: &'a Bump, combining: Combining<'a>) -> Ir<'a> {
        Ir {
            arena,
            names: Interner::default(),
            sources: vec![IrSource {
                name: "",
                rank: 0,
                trusted: true,
                path: "",
                hash: "",
                host: true,
                location: 0,
            }],
            rules: Vec::new(),
            aliases: Vec::new(),
            matchers: Vec::new(),
            groups: Vec::new(),
            combining,
            locations: vec![Location::default()],
        }
    }

    /// Copies `s` into the arena.
    pub fn str(&self, s: &str) -> &'a str {
        self.arena.alloc_str(s)
    }

    /// Copies the strings of `items` into the arena, as one slice.
    pub fn strs<S: AsRef<str>>(&self, items: &[S]) -> &'a [&'a str] {
        let v: Vec<&'a str> = items.iter().map(|s| self.str(s.as_ref())).collect();
        self.arena.alloc_slice_copy(&v)
    }

    fn locate(&mut self, loc: &Location, file: &str) -> u32 {
        let mut loc = loc.clone();
        if loc.file.is_empty() {
            loc.file = file.to_string();
        }
        self.locations.push(loc);
        self.locations.len() as u32 - 1
    }

    fn add_source(&mut self, s: IrSource<'a>) {
        self.sources.push(s);
    }

    fn add_lists(&mut self, source: SourceId, lists: &crate::policy::RuleLists, file: &str) {
        for l in List::ALL {
            for r in lists.get(l) {
                self.add_rule(l, source, r, file);
            }
        }
    }

    /// Adds one rule of `source` to list `l`.
    pub fn add_rule(&mut self, l: List, source: SourceId, r: &RuleDecl, file: &str) -> RuleId {
        let arena = self.arena;
        let (class, conds): (RuleClass, &'a [Cond<'a>]) = match (r.carve_out(), r.spec.as_deref()) {
            (Some(pattern), _) => (
                RuleClass::CarveOut,
                arena.alloc_slice_copy(&[Cond::Spec(arena.alloc_str(pattern))]),
            ),
            (None, Some(spec)) if !spec.is_empty() => (
                RuleClass::Fire,
                arena.alloc_slice_copy(&[Cond::Spec(arena.alloc_str(spec))]),
            ),
            (None, _) => (RuleClass::Fire, &[]),
        };
        let name = self.names.intern(arena, &r.tool);
        let target = if r.is_glob() {
            Target::Glob(name)
        } else {
            Target::Tool(name)
        };
        let location = self.locate(&r.location, file);
        self.rules.push(IrRule {
            list: l,
            class,
            target,
            conds,
            source,
            note: r.note.as_deref().map(|s| &*arena.alloc_str(s)),
            text: arena.alloc_str(&r.text()),
            location,
            group: 0,
            tag: 0,
            residual: false,
        });
        RuleId(self.rules.len() as u32 - 1)
    }

    /// The name of a target.
    pub fn target_name(&self, t: Target) -> &'a str {
        match t {
            Target::Tool(s) | Target::Glob(s) | Target::ServerGlob(s) => self.names.name(s),
            Target::Request => "",
        }
    }

    /// The location of index `i`.
    pub fn location(&self, i: u32) -> Location {
        self.locations.get(i as usize).cloned().unwrap_or_default()
    }

    /// The source of id `s`.
    pub fn source(&self, s: SourceId) -> Option<&IrSource<'a>> {
        self.sources.get(s.0 as usize)
    }
}
