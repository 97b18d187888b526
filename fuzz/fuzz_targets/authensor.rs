//! Authensor policies, envelopes and sessions: the compiled engine, the
//! engine loaded from its artifact and the reference interpreter give the
//! same result (outcome, reason, policy and version, rule, session
//! violation and its figures) for every envelope, and nothing panics.
//!
//! Input: eight bytes seed the generator, which draws policies (priorities,
//! scopes, every operator, budgets, defaults, session rules) and eight
//! envelopes with sessions of up to eight earlier actions. A ninth byte,
//! when there is one, says what the rest is:
//!
//! 0. one more envelope, as text, so that mutations reach envelope and
//!    session shapes the generator does not draw;
//! 1. policies, as text: `Policies::from_json` never panics, and policies
//!    that read are held to the same agreement on the generated envelopes;
//! 2. an artifact, given to `AuthensorEngine::from_bytes` as it is: an
//!    error or an engine, never a panic;
//! 3. damage to the generated policies' artifact: pairs of (offset, byte)
//!    written into its words and bytes sections, every checksum then
//!    recomputed (`spec/artifact.md`), so that the loader's layout checks
//!    and the bounds-checked reads of deciding are all that stand between
//!    the damage and a panic.
#![no_main]

use toolgate_testing::reseal;

use libfuzzer_sys::fuzz_target;
use reseal::{reseal, sections};
use toolgate_reference::authensor::AuthensorReference;
use toolgate::authensor::{AuthensorEngine, AuthensorEvaluator, Envelope, Policies};
use toolgate_testing::authensor::{Generator, Shape};

/// Holds the three engines to one another on every envelope.
fn agree(policies: &Policies, envelopes: &[Envelope], doc: &dyn std::fmt::Display) {
    let compiled = match AuthensorEngine::build(policies) {
        Ok(e) => e,
        // Only a glob or pattern past the DFA limits fails to compile.
        Err(_) => return,
    };
    let bytes = compiled.to_bytes();
    let loaded = match AuthensorEngine::from_bytes(&bytes) {
        Ok(e) => e,
        Err(e) => panic!("an artifact just written does not load: {e}\npolicies {doc}"),
    };
    let reference = AuthensorReference::new(policies);
    for env in envelopes {
        let want = reference.decide(env).to_json();
        let got = compiled.decide(env).to_json();
        assert_eq!(got, want, "compiled\npolicies {doc}\nenvelope {env:?}");
        let got = loaded.decide(env).to_json();
        assert_eq!(got, want, "artifact\npolicies {doc}\nenvelope {env:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut seed = [0u8; 8];
    for (d, s) in seed.iter_mut().zip(data) {
        *d = *s;
    }
    let mut g = Generator::new(u64::from_le_bytes(seed));
    let shape = Shape::small();
    let doc = g.policies(&shape);
    let Ok(policies) = Policies::from_value(&doc) else {
        return;
    };
    let mut envelopes: Vec<Envelope> = (0..8)
        .filter_map(|_| Envelope::from_value(g.envelope(&shape)).ok())
        .collect();
    let mode = data.get(8).copied();
    let rest = data.get(9..).unwrap_or(&[]);
    match mode.map(|m| m % 4) {
        None => agree(&policies, &envelopes, &doc),
        Some(0) => {
            let text = String::from_utf8_lossy(rest);
            envelopes.push(Envelope::from_json(&text).unwrap_or_else(Envelope::unreadable));
            agree(&policies, &envelopes, &doc);
        }
        Some(1) => {
            let text = String::from_utf8_lossy(rest);
            if let Ok(p) = Policies::from_json(&text) {
                agree(&p, &envelopes, &text);
            }
        }
        Some(2) => {
            if let Ok(e) = AuthensorEngine::from_bytes(rest) {
                for env in &envelopes {
                    let _ = e.decide(env);
                }
                let _ = e.policies();
            }
        }
        _ => {
            let Ok(compiled) = AuthensorEngine::build(&policies) else {
                return;
            };
            let mut bytes = compiled.to_bytes();
            let spans: Vec<(usize, usize)> = sections(&bytes)
                .into_iter()
                .filter(|&(_, kind, _, len)| (kind == 1 || kind == 2) && len > 0)
                .map(|(_, _, start, len)| (start, len))
                .collect();
            for pair in rest.chunks_exact(3).take(8) {
                let &[a, b, value] = pair else {
                    continue;
                };
                let at = usize::from(u16::from_le_bytes([a, b & 0x7f]));
                // The words (offsets, counts, tags) or the bytes (texts).
                let Some(&(start, len)) = spans.get(usize::from(b >> 7)).or(spans.first()) else {
                    return;
                };
                if let Some(slot) = bytes.get_mut(start + at % len) {
                    *slot = value;
                }
            }
            reseal(&mut bytes);
            if let Ok(e) = AuthensorEngine::from_bytes(&bytes) {
                for env in &envelopes {
                    let _ = e.decide(env);
                }
                let _ = e.policies();
            }
        }
    }
});
