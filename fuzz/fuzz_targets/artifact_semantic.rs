//! Tables changed behind recomputed checksums never change a decision.
//!
//! A valid artifact of an arbitrary policy has words of its tables (or
//! bytes of its strings) replaced by values biased toward what damage and
//! tampering write (zero, all ones, a neighbour's value, a small count,
//! one off), then every section checksum and the header checksum are
//! recomputed, leaving the revision id as it was. `spec/artifact.md`
//! promises that such an artifact can change no decision: the loader
//! refuses it (the revision id, or a structural check first). The target
//! asserts exactly that: it loads only if it decides every step of the case
//! as the engine the artifact was written from.
//!
//! Built only with the fuzz crate's `artifact` feature (see Cargo.toml).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate::Engine;
use toolgate_testing::agentpolicy::{run_engine, setup, Case};
use toolgate_testing::reseal::{reseal_checksums, sections};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = Case::arbitrary(&mut u) else {
        return;
    };
    let Ok((policy, registry)) = setup(&case) else {
        return;
    };
    let Ok(engine) = Engine::build_with(&policy, &registry) else {
        return;
    };
    let good = engine.to_bytes();
    let mut bytes = good.clone();
    // Section kinds 1 (words) and 2 (bytes).
    let spans: Vec<(u32, usize, usize)> = sections(&bytes)
        .into_iter()
        .filter(|&(_, kind, _, len)| (kind == 1 || kind == 2) && len >= 4)
        .map(|(_, kind, start, len)| (kind, start, len))
        .collect();
    if spans.is_empty() {
        return;
    }
    for _ in 0..u.int_in_range(1..=4).unwrap_or(1) {
        let Ok(&(kind, start, len)) = u.choose(&spans) else {
            break;
        };
        let words = len / 4;
        let at = start + 4 * u.choose_index(words).unwrap_or(0);
        let old = u32::from_le_bytes(
            bytes
                .get(at..at + 4)
                .and_then(|w| w.try_into().ok())
                .unwrap_or([0; 4]),
        );
        let other_at = start + 4 * u.choose_index(words).unwrap_or(0);
        let other = u32::from_le_bytes(
            bytes
                .get(other_at..other_at + 4)
                .and_then(|w| w.try_into().ok())
                .unwrap_or([0; 4]),
        );
        let new = match u.int_in_range(0..=6).unwrap_or(0) {
            0 => 0,
            1 => u32::MAX,
            2 => old.wrapping_add(1),
            3 => old.wrapping_sub(1),
            4 => other,
            5 => u32::from(u8::arbitrary(&mut u).unwrap_or(0)),
            _ => u32::arbitrary(&mut u).unwrap_or(0),
        };
        // In the bytes section one byte changes: a string's character.
        let new = if kind == 2 {
            (old & !0xff) | (new & 0xff)
        } else {
            new
        };
        if let Some(slot) = bytes.get_mut(at..at + 4) {
            slot.copy_from_slice(&new.to_le_bytes());
        }
    }
    if bytes == good {
        return;
    }
    reseal_checksums(&mut bytes);
    if let Ok(loaded) = Engine::from_bytes_with(&bytes, &registry) {
        let want = run_engine(&case, &mut engine.session());
        let got = run_engine(&case, &mut loaded.session());
        if want != got {
            panic!(
                "tables changed behind recomputed checksums loaded and decide differently:\noriginal {want:?}\nchanged {got:?}\n{case}"
            );
        }
    }
});
