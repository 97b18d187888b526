//! The intermediate representation: rules, sources and policies in an arena.
//!
//! Every front end lowers its document into an [`Ir`]: interned tool names,
//! `u32` ids for sources and rules, and rules whose conditions and combining
//! algorithm are data. A rule is an effect, a target (a tool name or a glob
//! over tool names), a conjunction of [`Cond`]s and a source; the policy's
//! [`Combining`] says how firing rules become a decision. Strings and slices
//! live in a `bumpalo` arena, which runs no destructors: everything in it is
//! plain data, and what needs dropping (diagnostic locations) lives beside it.
//!
//! Depends on `policy`, `diag` and `decision`. The runtime never sees this
//! module: `compile` lowers it into owned tables.

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond<'a> {
    /// A specifier, read by the matcher the registry declares for the rule's
    /// tool, against the argument member that matcher names.
    Spec(&'a str),
}

/// How firing rules become a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combining {
    /// agentpolicy's: the first firing deny rule, then the first firing ask
    /// rule, then the first firing allow rule, then the default; carve-outs
    /// cancel rules of their own list.
    Precedence {
        /// What applies when no rule fires; `None` is refused by `check`.
        default: Option<Decision>,
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
    /// The rule as written: `Bash(git:*)`.
    pub text: &'a str,
    /// Index into [`Ir::locations`].
    pub location: u32,
}

impl<'a> IrRule<'a> {
    /// The specifier (a carve-out's pattern without its `!`), if any.
    pub fn spec(&self) -> Option<&'a str> {
        self.conds
            .iter()
            .map(|c| match c {
                Cond::Spec(s) => *s,
            })
            .next()
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
    /// How rules combine.
    pub combining: Combining,
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
            });
        }
        ir
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
        });
        RuleId(self.rules.len() as u32 - 1)
    }

    /// The name of a target.
    pub fn target_name(&self, t: Target) -> &'a str {
        match t {
            Target::Tool(s) | Target::Glob(s) | Target::ServerGlob(s) => self.names.name(s),
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
