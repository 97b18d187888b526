//! The `path-reach` kind held to what it promises: whenever a concrete
//! path that a query names is covered by a rule, the kind must say the
//! rule could cover one of the query's paths. A "yes" where no such path
//! exists is allowed (the answer is about patterns); a "no" where one
//! exists would let a command read a denied file without asking.
//!
//! A case is a rule pattern, a query and a witness: the query with each
//! wildcard replaced by text it matches (a `*` never by `.` or `..`, which
//! bash's globs do not produce). When the `path` kind finds the rule
//! covers the witness, `path-reach` must find it could cover the query.

use crate::workload::Rng;
use toolgate::kinds::{PathKind, PathReachKind};
use toolgate::{CallContext, MatcherKind};

/// The working directory every case runs in.
const CWD: &str = "/w/c";

/// One generated case.
#[derive(Clone, Debug)]
pub struct Case {
    /// A `path` specifier (`//…` or relative to the working directory).
    pub rule: String,
    /// A query, as the shell splitter writes one.
    pub query: String,
    /// A path the query names.
    pub witness: String,
}

const NAMES: &[&str] = &["a", "b", "ab", ".e", "w", "c"];

fn rule_segment(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => "**".into(),
        1 => "*".into(),
        2 => "a*".into(),
        3 => "?".into(),
        4 => "[ab]".into(),
        5 => "*b".into(),
        _ => rng.pick_str(NAMES).to_string(),
    }
}

/// A query segment and one text it matches.
fn query_segment(rng: &mut Rng) -> (String, Vec<String>) {
    let lit = rng.pick_str(NAMES).to_string();
    match rng.below(7) {
        0 => (
            "**".into(),
            (0..rng.below(3))
                .map(|_| rng.pick_str(NAMES).to_string())
                .collect(),
        ),
        1 => ("*".into(), vec![rng.pick_str(NAMES).to_string()]),
        2 => (
            format!("{lit}*"),
            vec![format!("{lit}{}", rng.pick_str(&["", "a", "b"]))],
        ),
        3 => ("?".into(), vec![rng.pick_str(&["a", "b", "c"]).to_string()]),
        4 => (
            format!("*{lit}"),
            vec![format!("{}{lit}", rng.pick_str(&["", "a", "x"]))],
        ),
        _ => (lit.clone(), vec![lit]),
    }
}

impl Case {
    /// A case drawn from `rng`, biased toward rules and queries that share
    /// their first segments.
    pub fn generate(rng: &mut Rng) -> Case {
        let mut rule = String::new();
        if rng.chance(50) {
            rule.push_str("//w");
            if rng.chance(50) {
                rule.push_str("/c");
            }
        }
        for i in 0..1 + rng.below(3) {
            if i > 0 || !rule.is_empty() {
                rule.push('/');
            }
            rule.push_str(&rule_segment(rng));
        }
        let (mut query, mut witness) = match rng.below(3) {
            0 => ("/w".to_string(), "/w".to_string()),
            1 => (String::new(), String::new()),
            _ => ("/w/c".to_string(), "/w/c".to_string()),
        };
        for i in 0..1 + rng.below(3) {
            let (q, w) = query_segment(rng);
            if i > 0 || !query.is_empty() {
                query.push('/');
            }
            query.push_str(&q);
            let w = w.join("/");
            if !w.is_empty() {
                if !witness.is_empty() && !witness.ends_with('/') {
                    witness.push('/');
                }
                witness.push_str(&w);
            }
        }
        if witness.is_empty() {
            witness.push('.');
        }
        Case {
            rule,
            query,
            witness,
        }
    }

    /// `None` when the kind keeps its promise on the case, else what went
    /// wrong.
    pub fn check(&self) -> Option<String> {
        let cx = CallContext { cwd: Some(CWD) };
        let path = PathKind::new();
        let reach = PathReachKind::new();
        if path.lower(&self.rule).is_err() {
            return None;
        }
        let Ok(w) = path.normalize(&self.witness, &cx) else {
            return None;
        };
        if !path.matches(&self.rule, &w) {
            return None;
        }
        let q = match reach.normalize(&self.query, &cx) {
            Ok(q) => q,
            Err(e) => return Some(format!("{self:?}: the query does not read: {e}")),
        };
        if reach.matches(&self.rule, &q) {
            None
        } else {
            Some(format!(
                "{self:?}: the rule covers the witness, which the query names, and path-reach says it cannot"
            ))
        }
    }
}

/// Checks `n` cases drawn from `seed`: the failures, and how many cases
/// had a witness the rule covers (so the run tested something).
pub fn run(seed: u64, n: usize) -> (Vec<String>, usize) {
    let mut rng = Rng::new(seed);
    let mut failures = Vec::new();
    let mut covered = 0;
    let cx = CallContext { cwd: Some(CWD) };
    for _ in 0..n {
        let c = Case::generate(&mut rng);
        let p = PathKind::new();
        if p.lower(&c.rule).is_ok()
            && p.normalize(&c.witness, &cx)
                .is_ok_and(|w| p.matches(&c.rule, &w))
        {
            covered += 1;
        }
        failures.extend(c.check());
    }
    (failures, covered)
}

#[cfg(test)]
mod tests {
    #[test]
    fn path_reach_never_misses_a_covered_path() {
        let (failures, covered) = super::run(0x005e_ed0f_7eac, 50_000);
        assert!(
            covered > 2_000,
            "only {covered} cases had a covered witness"
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
