//! The plain guard scanner: every rule's pattern tried at every position of
//! the input, with a PikeVM, as `spec/guards.md` §3 defines a match. The
//! compiled scanner (`toolgate::guards::scanner`) must report the same hits;
//! the `guards` fuzz target and the differential test hold it to this.
//!
//! It shares only the rule model (`RuleSpec`) with the compiled scanner:
//! no anchors, no automaton, no windows over a buffer.

use regex_automata::nfa::thompson::{self, pikevm::PikeVM};
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input};
use toolgate::guards::RuleSpec;

/// The longest match, from its start to the end of its last part
/// (`spec/guards.md` §3; the same number as the compiled scanner's).
pub const WINDOW: usize = 8192;

/// One hit: where the match starts, the rule's index, and the value span.
pub type Hit = (u64, u32, u64, u64);

struct Rule {
    before: Option<PikeVM>,
    value: PikeVM,
    after: Option<PikeVM>,
    max_len: Option<usize>,
    min_entropy: Option<f64>,
}

fn vm(p: &str) -> Option<PikeVM> {
    PikeVM::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .thompson(thompson::Config::new().utf8(false))
        .build(p)
        .ok()
}

/// The end of `vm`'s leftmost-first match starting exactly at `from`,
/// looking no further than `to`.
fn anchored(vm: &PikeVM, hay: &[u8], from: usize, to: usize) -> Option<usize> {
    if from > to {
        return None;
    }
    let mut cache = vm.create_cache();
    let input = Input::new(hay).range(from..to).anchored(Anchored::Yes);
    vm.find(&mut cache, input).map(|m| m.end())
}

fn entropy(b: &[u8]) -> f64 {
    let mut counts = std::collections::BTreeMap::new();
    for &x in b {
        *counts.entry(x).or_insert(0u32) += 1;
    }
    let n = b.len() as f64;
    counts
        .values()
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Every hit of `rules` in `input`: for each position in order, each rule
/// in order, a match of its parts one after the other from there, unless
/// the rule's previous match ends after the position. `None` when a
/// pattern does not build.
pub fn scan(rules: &[RuleSpec], input: &[u8]) -> Option<Vec<Hit>> {
    let built: Vec<Rule> = rules
        .iter()
        .map(|r| {
            Some(Rule {
                before: match &r.before {
                    Some(p) => Some(vm(p)?),
                    None => None,
                },
                value: vm(&r.value)?,
                after: match &r.after {
                    Some(p) => Some(vm(p)?),
                    None => None,
                },
                max_len: r.max_len,
                min_entropy: r.min_entropy,
            })
        })
        .collect::<Option<_>>()?;
    let mut next = vec![0usize; built.len()];
    let mut out = Vec::new();
    for at in 0..input.len() {
        let to = input.len().min(at + WINDOW);
        for (i, r) in built.iter().enumerate() {
            if next.get(i).is_some_and(|&n| at < n) {
                continue;
            }
            let mut pos = at;
            if let Some(b) = &r.before {
                match anchored(b, input, pos, to) {
                    Some(e) => pos = e,
                    None => continue,
                }
            }
            let Some(v_end) = anchored(&r.value, input, pos, to) else {
                continue;
            };
            if v_end <= pos {
                continue;
            }
            let Some(value) = input.get(pos..v_end) else {
                continue;
            };
            if r.max_len.is_some_and(|m| value.len() > m) {
                continue;
            }
            if r.min_entropy.is_some_and(|m| entropy(value) < m) {
                continue;
            }
            let end = match &r.after {
                Some(a) => match anchored(a, input, v_end, to) {
                    Some(e) => e,
                    None => continue,
                },
                None => v_end,
            };
            if let Some(n) = next.get_mut(i) {
                *n = end;
            }
            out.push((at as u64, i as u32, pos as u64, v_end as u64));
        }
    }
    Some(out)
}
