//! Every match strategy against the reference, on generated glob
//! specifiers: many rules on one field, so that the strategies meet one
//! another in one matcher (shared needles, rules anchored on the same
//! needle, carve-outs, the smallest-id pruning).
//!
//! [`StrategyCase`]'s generator is biased toward what breaks floating-piece
//! matching: pieces that overlap one another (`aba` and `ba`), pieces
//! repeated in one glob, pieces that overlap the anchored prefix or suffix,
//! empty pieces (`**`), and multi-byte characters on either side of a
//! piece's boundary. [`check_strategies`] builds the policy on the
//! reference, the compiled engine and the engine loaded from its artifact,
//! and compares every verdict. The fuzz target `strategies` and
//! `tests/differential.rs` share it.

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{json, Value};
use toolgate::engine::Evaluator;
use toolgate::policy::List;
use toolgate::runtime::inner::with_direct_limit;
use toolgate::{Call, Engine, Policy};
use toolgate_reference::Reference;

/// The atoms specifiers and values are made of: short, overlapping, with
/// multi-byte characters and the bytes shell commands are made of.
const ATOMS: [&str; 14] = [
    "a", "b", "ab", "ba", "aba", "aa", "é", "ü", "é-", "-", "--", " ", "x", "git ",
];

/// Rules on one glob-matched field and the values to decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrategyCase {
    /// Rules in order: the list and the specifier (a carve-out's starts
    /// with `!`).
    pub rules: Vec<(List, String)>,
    /// The values of the field, one call each.
    pub values: Vec<String>,
}

fn text(u: &mut Unstructured<'_>, pool: &[String], max: usize) -> arbitrary::Result<String> {
    let n = u.int_in_range(0..=max)?;
    let mut s = String::new();
    for _ in 0..n {
        if !pool.is_empty() && u.ratio(1, 2)? {
            s.push_str(u.choose(pool)?);
        } else {
            s.push_str(u.choose(&ATOMS)?);
        }
    }
    Ok(s)
}

fn spec(u: &mut Unstructured<'_>, pool: &[String]) -> arbitrary::Result<String> {
    let mut s = if u.ratio(1, 2)? {
        text(u, pool, 2)?
    } else {
        String::new()
    };
    let n = u.int_in_range(0..=3)?;
    for _ in 0..n {
        s.push('*');
        // An empty piece now and then: `**`.
        if u.ratio(1, 6)? {
            continue;
        }
        s.push_str(&text(u, pool, 2)?);
    }
    if n > 0 && u.ratio(1, 2)? {
        s.push('*');
    }
    if u.ratio(1, 10)? {
        s.push_str(":*");
    }
    Ok(s)
}

impl<'a> Arbitrary<'a> for StrategyCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<StrategyCase> {
        // Pieces shared by several rules and the values.
        let pool: Vec<String> = (0..u.int_in_range(1..=5)?)
            .map(|_| text(u, &[], 3))
            .collect::<arbitrary::Result<_>>()?;
        let mut rules = Vec::new();
        for _ in 0..u.int_in_range(1..=24)? {
            let list = *u.choose(&List::ALL)?;
            let mut s = spec(u, &pool)?;
            if u.ratio(1, 8)? {
                s.insert(0, '!');
            }
            rules.push((list, s));
        }
        let mut values = Vec::new();
        for _ in 0..u.int_in_range(1..=8)? {
            values.push(text(u, &pool, 8)?);
        }
        Ok(StrategyCase { rules, values })
    }
}

impl StrategyCase {
    /// The case `data` generates, if it is long enough.
    pub fn from_bytes(data: &[u8]) -> Option<StrategyCase> {
        StrategyCase::arbitrary(&mut Unstructured::new(data)).ok()
    }

    /// The policy document: the rules on `bash`, glob-matched on `command`.
    pub fn document(&self) -> Value {
        let list = |l: List| -> Value {
            Value::Array(
                self.rules
                    .iter()
                    .filter(|(m, _)| *m == l)
                    .map(|(_, s)| Value::String(format!("bash({s})")))
                    .collect(),
            )
        };
        json!({
            "default": "ask",
            "matchers": {"bash": {"match": "glob", "field": "command"}},
            "deny": list(List::Deny),
            "ask": list(List::Ask),
            "allow": list(List::Allow),
        })
    }
}

/// Runs `case` on the reference, the compiled engine and the loaded
/// artifact; the first disagreement, described.
///
/// # Errors
///
/// The rule set and the value on which two engines disagree, or a build
/// that only one engine refused.
pub fn check_strategies(case: &StrategyCase) -> std::result::Result<(), crate::Mismatch> {
    check_strategies_inner(case).map_err(crate::Mismatch)
}

fn check_strategies_inner(case: &StrategyCase) -> std::result::Result<(), String> {
    let doc = case.document();
    let Ok(policy) = toolgate::policy::doc::from_value(&doc, None) else {
        return Ok(());
    };
    let policy: Policy = policy;
    let registry = toolgate::builtins::registry();
    let (reference, compiled) = match (
        Reference::build(&policy, &registry),
        Engine::build_with(&policy, &registry),
    ) {
        (Ok(r), Ok(c)) => (r, c),
        (Err(_), Err(_)) => return Ok(()),
        (r, c) => {
            return Err(format!(
                "the engines build differently on {doc}: reference {:?}, compiled {:?}",
                r.err().map(|d| d.to_string()),
                c.err().map(|d| d.to_string())
            ))
        }
    };
    let bytes = compiled.to_bytes();
    let loaded = Engine::from_bytes_with(&bytes, &registry)
        .map_err(|e| format!("the artifact of {doc} does not load: {e}"))?;
    // Every prefix a group of its own, so that a case's few rules meet the
    // groups' trie and the lists split by group, not the default's few
    // groups.
    let grouped = Engine::build_limited(
        &policy,
        &registry,
        toolgate::compile::Limits {
            inner_group: 1,
            ..Default::default()
        },
    )
    .map_err(|e| format!("the grouped build of {doc} failed: {e}"))?;
    let grouped_bytes = grouped.to_bytes();
    let grouped_loaded = Engine::from_bytes_with(&grouped_bytes, &registry)
        .map_err(|e| format!("the grouped artifact of {doc} does not load: {e}"))?;
    for v in &case.values {
        let call = Call::new("bash", &json!({ "command": v }).to_string());
        let want = reference.would(&call);
        // The rules a value reaches checked one by one (the default on
        // few rules), and always through the automaton.
        let scanned = |e: &Engine| with_direct_limit(0, || e.would(&call));
        let direct = |e: &Engine| with_direct_limit(u32::MAX, || e.would(&call));
        for (name, got) in [
            ("compiled", compiled.would(&call)),
            ("loaded", loaded.would(&call)),
            ("grouped", grouped.would(&call)),
            ("grouped and loaded", grouped_loaded.would(&call)),
            ("compiled, scanned", scanned(&compiled)),
            ("loaded, scanned", scanned(&loaded)),
            ("grouped, scanned", scanned(&grouped)),
            ("compiled, direct", direct(&compiled)),
            ("grouped and loaded, direct", direct(&grouped_loaded)),
        ] {
            if got != want {
                return Err(format!(
                    "{name} and reference disagree on {v:?} under {doc}:\n  {name}: {got:?}\n  reference: {want:?}"
                ));
            }
        }
    }
    Ok(())
}
