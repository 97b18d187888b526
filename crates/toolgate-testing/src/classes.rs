//! Workloads of one match strategy each, shaped as real policies are: a few
//! programs, and hundreds of rules per program that share its prefix
//! (`git *force*`, `* --no-verify*`, `npm run *deploy* --prod`), so that a
//! decision meets every rule of a program's prefix rather than one rule per
//! program.
//!
//! [`ClassWorkload::generate`] builds, from a seed, a policy of `n` rules on
//! the shell tool (glob matcher on `command`) whose every specifier lowers to
//! the class asked for, and a stream of calls of which about half meet a
//! rule's pieces. The same seed gives the same workload everywhere, so the
//! benchmarks of two commits measure the same thing.

use crate::workload::Rng;
use serde_json::{json, Value};
use toolgate::call::Call;
use toolgate::policy::Policy;

/// The strategy every rule of a workload lowers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `git push origin main`: the whole value.
    Exact,
    /// `git push:*`: a prefix.
    Prefix,
    /// `* --force`: a suffix.
    Suffix,
    /// `git * --force`: a prefix and a suffix.
    PrefixSuffix,
    /// `git *force*`, `* --no-verify*`, `npm run *deploy* --prod`: floating
    /// pieces, with an optional anchored prefix and suffix.
    Inner,
}

impl Class {
    /// Every class, in the order the benchmarks report them.
    pub const ALL: [Class; 5] = [
        Class::Exact,
        Class::Prefix,
        Class::Suffix,
        Class::PrefixSuffix,
        Class::Inner,
    ];

    /// The class's name in benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            Class::Exact => "exact",
            Class::Prefix => "prefix",
            Class::Suffix => "suffix",
            Class::PrefixSuffix => "prefix_suffix",
            Class::Inner => "inner",
        }
    }
}

/// The programs the rules share: few, so that each holds many rules.
pub const PROGRAMS: [&str; 6] = ["git", "npm", "docker", "cargo", "kubectl", "terraform"];

/// A generated single-class policy and its calls.
#[derive(Clone, Debug)]
pub struct ClassWorkload {
    /// The specifiers, in the order written (deny, then ask, then allow).
    pub specs: Vec<String>,
    /// The policy document.
    pub document: Value,
    /// The calls, all to the shell tool.
    pub calls: Vec<Call>,
}

fn word(rng: &mut Rng) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "re", "su", "ta", "no", "vi", "de", "po", "ri", "ge", "an", "ex", "ul",
        "zo",
    ];
    let n = 2 + rng.below(3);
    (0..n).map(|_| rng.pick_str(&SYL)).collect()
}

/// A specifier of class `c` and a command that meets it.
fn spec(rng: &mut Rng, c: Class) -> (String, String) {
    let p = rng.pick_str(&PROGRAMS);
    let (a, b, x) = (word(rng), word(rng), word(rng));
    match c {
        Class::Exact => (format!("{p} {a} {b}"), format!("{p} {a} {b}")),
        Class::Prefix => (format!("{p} {a}:*"), format!("{p} {a} {x}")),
        Class::Suffix => (format!("* --{a}"), format!("{p} {x} --{a}")),
        Class::PrefixSuffix => (format!("{p} {a} * --{b}"), format!("{p} {a} {x} --{b}")),
        Class::Inner => match rng.below(4) {
            0 => (format!("{p} *{a}*"), format!("{p} {x} --{a} {b}")),
            1 => (format!("* --{a}*"), format!("{p} {x} --{a}={b}")),
            2 => (
                format!("{p} run *{a}* --prod"),
                format!("{p} run {x}-{a} --prod"),
            ),
            _ => (
                format!("{p} {a} *{b}*{x}*"),
                format!("{p} {a} --{b} then {x} now"),
            ),
        },
    }
}

impl ClassWorkload {
    /// `n_rules` rules of class `c` and `n_calls` calls, from `seed`.
    pub fn generate(c: Class, n_rules: usize, n_calls: usize, seed: u64) -> ClassWorkload {
        let mut rng = Rng::new(seed ^ 0xc1a5);
        let mut specs = Vec::with_capacity(n_rules);
        let mut hits = Vec::with_capacity(n_rules);
        while specs.len() < n_rules {
            let (s, h) = spec(&mut rng, c);
            specs.push(s);
            hits.push(h);
        }
        let (n_deny, n_ask) = (n_rules / 5, n_rules / 5);
        let rules = |from: usize, to: usize| -> Value {
            Value::Array(
                specs
                    .get(from..to)
                    .unwrap_or_default()
                    .iter()
                    .map(|s| Value::String(format!("bash({s})")))
                    .collect(),
            )
        };
        let document = json!({
            "default": "ask",
            "matchers": {"bash": {"match": "glob", "field": "command"}},
            "deny": rules(0, n_deny),
            "ask": rules(n_deny, n_deny + n_ask),
            "allow": rules(n_deny + n_ask, n_rules),
        });
        let mut calls = Vec::with_capacity(n_calls);
        while calls.len() < n_calls {
            let command = if rng.chance(50) {
                rng.pick(&hits).cloned().unwrap_or_default()
            } else {
                let p = rng.pick_str(&PROGRAMS);
                format!(
                    "{p} {} {} --{}",
                    word(&mut rng),
                    word(&mut rng),
                    word(&mut rng)
                )
            };
            calls.push(Call::new(
                "bash",
                &json!({ "command": command }).to_string(),
            ));
        }
        ClassWorkload {
            specs,
            document,
            calls,
        }
    }

    /// The policy, read from the document.
    pub fn policy(&self) -> Policy {
        toolgate::policy::doc::from_value(&self.document, None).unwrap_or_default()
    }
}
