//! The workload's policy as Cedar policy sets and as a Rego module.
//!
//! Both translations start from the same merged rule list: the workload's
//! rules merged as `spec/policy.md` §6 says (sources by rank, highest first,
//! equal ranks in the order written, the host's rules last; an untrusted
//! source's allow rules withheld), each rule with an id in that order. The id
//! of the first firing rule of a list is then the smallest firing id, which
//! is how both translations name the rule that decided.
//!
//! What the translations assume of the policy, and check (`Merged::from`
//! refuses anything else): no rule's tool is an alias (so nothing expands),
//! no splitter, matcher kinds `glob` and `prefix` only, tool-name globs only
//! bare. The calls are decided unconfined, with no grant set active. Under
//! those assumptions both are exact; `README.md` in this crate says how.

use serde_json::Value;
use std::collections::BTreeMap;
use toolgate::policy::List;
use toolgate_testing::workload::{Workload, SOURCES};

/// A matcher: the kind and the argument field it reads.
#[derive(Clone, Debug)]
pub struct Matcher {
    pub kind: String,
    pub field: String,
}

/// One rule after the merge.
#[derive(Clone, Debug)]
pub struct MRule {
    pub id: usize,
    pub list: List,
    pub tool: String,
    /// The specifier (a carve-out's without its `!`).
    pub spec: Option<String>,
    pub carve: bool,
    pub rank: i64,
    /// The source's name; empty for the host.
    pub source: String,
    /// The string form, as toolgate's verdicts cite it.
    pub text: String,
}

impl MRule {
    fn is_glob(&self) -> bool {
        self.tool.contains('*')
    }
}

/// The merged rules and the matcher table.
pub struct Merged {
    pub rules: Vec<MRule>,
    pub matchers: BTreeMap<String, Matcher>,
}

impl Merged {
    pub fn from(w: &Workload) -> Result<Merged, String> {
        let mut matchers = BTreeMap::new();
        if let Some(Value::Object(m)) = w.document.get("matchers") {
            for (tool, entry) in m {
                let kind = entry["match"].as_str().unwrap_or_default().to_string();
                let field = entry["field"].as_str().unwrap_or_default().to_string();
                if entry.get("split").is_some() {
                    return Err(format!("{tool} has a splitter"));
                }
                if kind != "glob" && kind != "prefix" {
                    return Err(format!("{tool}: kind {kind} is not translated"));
                }
                matchers.insert(tool.clone(), Matcher { kind, field });
            }
        }
        let aliases: Vec<String> = match w.document.get("aliases") {
            Some(Value::Object(a)) => a.keys().cloned().collect(),
            _ => Vec::new(),
        };
        // Sources by rank, highest first; sort_by_key is stable. The host
        // (None) comes last.
        let mut order: Vec<Option<usize>> = (0..SOURCES.len()).map(Some).collect();
        order.sort_by_key(|s| std::cmp::Reverse(s.map_or(0, |i| SOURCES[i].1)));
        order.push(None);
        let mut rules = Vec::new();
        for list in List::ALL {
            for &src in &order {
                let (name, rank, trusted) = match src {
                    Some(i) => SOURCES[i],
                    None => ("", 0, true),
                };
                if list == List::Allow && !trusted {
                    continue;
                }
                for r in w.rules.iter().filter(|r| r.list == list && r.source == src) {
                    if aliases.contains(&r.tool) {
                        return Err(format!("{} names an alias", r.text()));
                    }
                    if r.tool.contains('*') && r.spec.is_some() {
                        return Err(format!("{}: a tool-name glob with a specifier", r.text()));
                    }
                    let (spec, carve) = match &r.spec {
                        Some(s) => match s.strip_prefix('!') {
                            Some(p) => (Some(p.to_string()), true),
                            None => (Some(s.clone()), false),
                        },
                        None => (None, false),
                    };
                    rules.push(MRule {
                        id: rules.len(),
                        list,
                        tool: r.tool.clone(),
                        spec,
                        carve,
                        rank,
                        source: name.to_string(),
                        text: r.text(),
                    });
                }
            }
        }
        Ok(Merged { rules, matchers })
    }

    /// The distinct ranks of the rules (not carve-outs) of `list` whose tool
    /// is not a glob, highest first.
    fn tiers(&self, list: List) -> Vec<i64> {
        let mut t: Vec<i64> = self
            .rules
            .iter()
            .filter(|r| r.list == list && !r.carve && !r.is_glob())
            .map(|r| r.rank)
            .collect();
        t.sort_unstable_by(|a, b| b.cmp(a));
        t.dedup();
        t
    }
}

// ---------------------------------------------------------------- Cedar --

/// A Cedar string literal.
fn cedar_str(s: &str, like: bool) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '*' if like => o.push_str("\\*"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                o.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A Cedar `like` pattern for a glob: every `*` a wildcard, everything else
/// literal.
fn cedar_glob(pattern: &str) -> String {
    let pieces: Vec<String> = pattern
        .split('*')
        .map(|p| {
            let q = cedar_str(p, true);
            q[1..q.len() - 1].to_string()
        })
        .collect();
    format!("\"{}\"", pieces.join("*"))
}

/// The condition under which `spec` matches the call, by the tool's matcher
/// (`spec/policy.md` §3): `context.args[field]` must be present and a
/// string (`like` on anything else is an error, and a policy whose condition
/// errs is not satisfied).
fn cedar_cond(m: &Matcher, spec: &str) -> String {
    let f = cedar_str(&m.field, false);
    let v = format!("context.args[{f}]");
    let test = match (m.kind.as_str(), spec.strip_suffix(":*")) {
        ("glob", Some("")) | ("prefix", Some("")) => format!("{v} like \"*\""),
        ("glob", Some(p)) => format!(
            "({v} like {} || {v} like {})",
            cedar_glob(p),
            cedar_glob(&format!("{p} *"))
        ),
        ("glob", None) => format!("{v} like {}", cedar_glob(spec)),
        ("prefix", Some(p)) => {
            let lit = cedar_str(p, true);
            format!("{v} like {}*\"", &lit[..lit.len() - 1])
        }
        _ => format!("{v} like {}", cedar_str(spec, true)),
    };
    format!("context.args has {f} && {test}")
}

fn cedar_policy(effect: &str, r: &MRule, matchers: &BTreeMap<String, Matcher>) -> String {
    if r.is_glob() {
        return format!(
            "{effect} (principal, action, resource) when {{ context.tool like {} }};\n",
            cedar_glob(&r.tool)
        );
    }
    let head = format!(
        "{effect} (principal, action, resource == Tool::{})",
        cedar_str(&r.tool, false)
    );
    match (&r.spec, matchers.get(&r.tool)) {
        (None, _) => format!("{head};\n"),
        (Some(s), Some(m)) => format!("{head} when {{ {} }};\n", cedar_cond(m, s)),
        // check refuses a specifier for a tool with no matcher.
        (Some(_), None) => format!("{head} when {{ false }};\n"),
    }
}

/// One Cedar policy set: the rules of one list and one tier.
pub struct CedarSet {
    pub list: List,
    /// `glob` or `rank N`.
    pub label: String,
    /// The set's text.
    pub text: String,
    /// The rule id of each policy, by position (`policyK` is position K).
    pub ids: Vec<usize>,
    /// How many policies are carve-outs (forbids).
    pub forbids: usize,
}

/// The policy as Cedar policy sets, one per list and tier.
///
/// A list fires when one of its sets answers Allow, and the rule it cites
/// is the smallest id among the satisfied permits of its sets. The sets of a
/// list: one for its tool-name globs (permits only: no carve-out reaches a
/// glob rule), and one per rank R of its other rules: a `permit` per rule of
/// rank R, and a `forbid` per carve-out of the list of rank at least R.
/// Cedar's forbid-overrides-permit is then the carve-out: a carve-out that
/// matches cancels every rule of the set. Only rules of the call's tool can
/// be satisfied in a non-glob set, and a carve-out names its own tool, so a
/// carve-out cancels exactly the rules §9.1 says it cancels.
pub fn cedar(m: &Merged) -> Vec<CedarSet> {
    let mut sets = Vec::new();
    for list in List::ALL {
        let globs: Vec<&MRule> = m
            .rules
            .iter()
            .filter(|r| r.list == list && !r.carve && r.is_glob())
            .collect();
        if !globs.is_empty() {
            let mut s = CedarSet {
                list,
                label: "glob".into(),
                text: String::new(),
                ids: Vec::new(),
                forbids: 0,
            };
            for r in globs {
                s.text.push_str(&cedar_policy("permit", r, &m.matchers));
                s.ids.push(r.id);
            }
            sets.push(s);
        }
        for tier in m.tiers(list) {
            let mut s = CedarSet {
                list,
                label: format!("rank {tier}"),
                text: String::new(),
                ids: Vec::new(),
                forbids: 0,
            };
            for r in m.rules.iter().filter(|r| r.list == list) {
                if r.carve && r.rank >= tier {
                    s.text.push_str(&cedar_policy("forbid", r, &m.matchers));
                    s.ids.push(r.id);
                    s.forbids += 1;
                } else if !r.carve && !r.is_glob() && r.rank == tier {
                    s.text.push_str(&cedar_policy("permit", r, &m.matchers));
                    s.ids.push(r.id);
                }
            }
            sets.push(s);
        }
    }
    sets
}

// ----------------------------------------------------------------- Rego --

/// A Rego string literal (a JSON string).
fn rego_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Rego statements that hold when the string `v` matches `glob(pattern)`:
/// it starts with the first piece, ends with the last, and holds the middle
/// pieces in order, each found left-most after the previous, none
/// overlapping. Lengths are in characters, as Rego's `substring`,
/// `indexof` and `count` count.
fn rego_glob(v: &str, pattern: &str, tag: &str) -> Vec<String> {
    let pieces: Vec<&str> = pattern.split('*').collect();
    if pieces.len() == 1 {
        return vec![format!("{v} == {}", rego_str(pattern))];
    }
    let n = |s: &str| s.chars().count();
    let first = pieces[0];
    let last = pieces[pieces.len() - 1];
    let middles: Vec<&str> = pieces[1..pieces.len() - 1]
        .iter()
        .copied()
        .filter(|p| !p.is_empty())
        .collect();
    let mut out = Vec::new();
    if !first.is_empty() {
        out.push(format!("startswith({v}, {})", rego_str(first)));
    }
    if middles.is_empty() {
        out.push(format!("count({v}) >= {}", n(first) + n(last)));
        if !last.is_empty() {
            out.push(format!("endswith({v}, {})", rego_str(last)));
        }
        return out;
    }
    let mut rest = format!("{tag}r0");
    out.push(format!("{rest} := substring({v}, {}, -1)", n(first)));
    for (k, m) in middles.iter().enumerate() {
        let i = format!("{tag}i{}", k + 1);
        let next = format!("{tag}r{}", k + 1);
        out.push(format!("{i} := indexof({rest}, {})", rego_str(m)));
        out.push(format!("{i} >= 0"));
        out.push(format!("{next} := substring({rest}, {i} + {}, -1)", n(m)));
        rest = next;
    }
    out.push(format!("count({rest}) >= {}", n(last)));
    if !last.is_empty() {
        out.push(format!("endswith({rest}, {})", rego_str(last)));
    }
    out
}

/// The alternatives (each a list of statements) under which `spec` matches
/// the string `v` by the matcher `m`.
fn rego_match(m: &Matcher, spec: &str, v: &str) -> Vec<Vec<String>> {
    match (m.kind.as_str(), spec.strip_suffix(":*")) {
        (_, Some("")) => vec![vec![]],
        ("glob", Some(p)) => vec![rego_glob(v, p, "a"), rego_glob(v, &format!("{p} *"), "b")],
        ("glob", None) => vec![rego_glob(v, spec, "a")],
        ("prefix", Some(p)) => vec![vec![format!("startswith({v}, {})", rego_str(p))]],
        _ => vec![vec![format!("{v} == {}", rego_str(spec))]],
    }
}

/// The bodies under which rule `r` matches the call (tool and specifier,
/// carve-outs aside).
fn rego_bodies(r: &MRule, matchers: &BTreeMap<String, Matcher>) -> Vec<Vec<String>> {
    if r.is_glob() {
        let mut b = vec!["t := input.tool".to_string()];
        b.extend(rego_glob("t", &r.tool, "g"));
        return vec![b];
    }
    let head = format!("input.tool == {}", rego_str(&r.tool));
    match (&r.spec, matchers.get(&r.tool)) {
        (None, _) => vec![vec![head]],
        (Some(s), Some(m)) => rego_match(m, s, "v")
            .into_iter()
            .map(|alt| {
                let mut b = vec![
                    head.clone(),
                    format!("v := input.args[{}]", rego_str(&m.field)),
                    "is_string(v)".to_string(),
                ];
                b.extend(alt);
                b
            })
            .collect(),
        (Some(_), None) => vec![vec![head, "false".to_string()]],
    }
}

fn ident(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The policy as one Rego module, package `toolgate`, rule
/// `data.toolgate.decision`: `[decision, rule id]` (-1 for the default).
///
/// Each rule is a body of the partial set `<list>_fires`, contributing its
/// id. A carve-out is a body of the boolean rule `carve_<list>_<tool>_<R>`
/// for every rank R at most its own that a rule of its list and tool has;
/// a rule of rank R adds `not carve_<list>_<tool>_<R>`. Rego evaluates each
/// such rule once per query.
pub fn rego(m: &Merged) -> String {
    let mut o = String::from("package toolgate\n\nimport rego.v1\n\n");
    // Every set defined, even a list with no rule.
    for list in List::ALL {
        o.push_str(&format!(
            "{}_fires contains -1 if {{\n\tfalse\n}}\n\n",
            list.name()
        ));
    }
    // carve groups: (list, tool, tier) -> carve-outs of rank >= tier.
    let mut groups: BTreeMap<(usize, String, i64), Vec<&MRule>> = BTreeMap::new();
    for (li, list) in List::ALL.iter().enumerate() {
        for tier in m.tiers(*list) {
            for c in m
                .rules
                .iter()
                .filter(|r| r.list == *list && r.carve && r.rank >= tier)
            {
                groups
                    .entry((li, c.tool.clone(), tier))
                    .or_default()
                    .push(c);
            }
        }
    }
    let group_name = |li: usize, tool: &str, tier: i64| {
        format!("carve_{}_{}_{}", List::ALL[li].name(), ident(tool), tier)
    };
    for ((li, tool, tier), carves) in &groups {
        let name = group_name(*li, tool, *tier);
        for c in carves {
            for body in rego_bodies(c, &m.matchers) {
                o.push_str(&format!("{name} if {{\n\t{}\n}}\n\n", body.join("\n\t")));
            }
        }
    }
    for (li, list) in List::ALL.iter().enumerate() {
        for r in m.rules.iter().filter(|r| r.list == *list && !r.carve) {
            let guard = (!r.is_glob())
                .then(|| (li, r.tool.clone(), r.rank))
                .filter(|k| groups.contains_key(k))
                .map(|(li, t, tier)| format!("not {}", group_name(li, &t, tier)));
            for mut body in rego_bodies(r, &m.matchers) {
                body.extend(guard.clone());
                o.push_str(&format!(
                    "{}_fires contains {} if {{\n\t{}\n}}\n\n",
                    list.name(),
                    r.id,
                    body.join("\n\t")
                ));
            }
        }
    }
    o.push_str(
        "decision := [\"deny\", min(deny_fires)] if {\n\tcount(deny_fires) > 0\n} \
         else := [\"ask\", min(ask_fires)] if {\n\tcount(ask_fires) > 0\n} \
         else := [\"allow\", min(allow_fires)] if {\n\tcount(allow_fires) > 0\n} \
         else := [\"default\", -1]\n",
    );
    o
}
