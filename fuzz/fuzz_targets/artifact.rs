//! Artifacts given to `Engine::from_bytes`: an error or an engine, never a
//! panic, a hang or unbounded memory (run.sh sets libFuzzer's time and
//! memory limits). Five inputs:
//!
//! 0. any bytes;
//! 1. the first bytes of a valid artifact, then any bytes;
//! 2. a valid artifact with bytes changed (the checksums refuse nearly all);
//! 3. a valid artifact with bytes of its words and bytes sections changed
//!    and every checksum recomputed (`spec/artifact.md`): the layout checks
//!    and the bounds-checked reads are all that stand between the damage
//!    and a panic, so the case's every step is run on what loads;
//! 4. a valid artifact of an arbitrary policy loads and answers every step
//!    of the case exactly as the engine it was written from.
//!
//! `TOOLGATE_ARTIFACT_DUMP=<file>` writes the artifact an input of kinds
//! 1 to 3 makes, for `testdata/regressions/artifacts/`.
//!
//! Built only with the fuzz crate's `artifact` feature (see Cargo.toml),
//! which run.sh turns on when the library has `Engine::from_bytes`.
#![no_main]

use toolgate_testing::reseal;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use reseal::{reseal, sections};
use toolgate::{Call, Engine, Registry};
use toolgate_testing::agentpolicy::{run_engine, setup, Case};

/// Runs the case's steps on an engine that loaded: any answer, no panic.
fn exercise(case: &Case, e: Engine<'_>) {
    let _ = run_engine(case, &mut e.session());
    let _ = e.matching_rules("bash", &toolgate::Args::from_json(r#"{"command": "ls"}"#));
    let _ = e.sources();
    let _ = e.withheld();
}

fn valid(u: &mut Unstructured<'_>) -> Option<(Case, Registry, Engine<'static>, Vec<u8>)> {
    let case = Case::arbitrary(u).ok()?;
    let (policy, registry) = setup(&case).ok()?;
    let engine = Engine::build_with(&policy, &registry).ok()?;
    let bytes = engine.to_bytes();
    Some((case, registry, engine, bytes))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mode) = u8::arbitrary(&mut u) else {
        return;
    };
    match mode % 5 {
        0 => {
            if let Ok(e) = Engine::from_bytes(u.take_rest()) {
                let _ = e.decide(&Call::new("bash", r#"{"command": "ls"}"#));
            }
        }
        1..=3 => {
            let Some((case, registry, _, mut bytes)) = valid(&mut u) else {
                return;
            };
            match mode % 5 {
                1 => {
                    let cut = u.int_in_range(0..=bytes.len()).unwrap_or(0);
                    bytes.truncate(cut);
                    bytes.extend_from_slice(u.take_rest());
                }
                2 => {
                    for _ in 0..u.int_in_range(1..=8).unwrap_or(1) {
                        let at = u.choose_index(bytes.len().max(1)).unwrap_or(0);
                        let b = u8::arbitrary(&mut u).unwrap_or(0);
                        if let Some(slot) = bytes.get_mut(at) {
                            *slot = b;
                        }
                    }
                }
                _ => {
                    let spans: Vec<(usize, usize)> = sections(&bytes)
                        .into_iter()
                        .filter(|&(_, kind, _, len)| (kind == 1 || kind == 2) && len > 0)
                        .map(|(_, _, start, len)| (start, len))
                        .collect();
                    if spans.is_empty() {
                        return;
                    }
                    for _ in 0..u.int_in_range(1..=6).unwrap_or(1) {
                        let Ok(&(start, len)) = u.choose(&spans) else {
                            break;
                        };
                        let at = start + u.choose_index(len).unwrap_or(0);
                        let b = match u.int_in_range(0..=3).unwrap_or(0) {
                            0 => 0xff,
                            1 => 0,
                            _ => u8::arbitrary(&mut u).unwrap_or(0),
                        };
                        if let Some(slot) = bytes.get_mut(at) {
                            *slot = b;
                        }
                    }
                    reseal(&mut bytes);
                }
            }
            // To turn a finding into testdata/regressions/artifacts/*.tgb:
            // run the input with TOOLGATE_ARTIFACT_DUMP=<file>.
            if let Ok(path) = std::env::var("TOOLGATE_ARTIFACT_DUMP") {
                let _ = std::fs::write(path, &bytes);
            }
            if let Ok(e) = Engine::from_bytes_with(&bytes, &registry) {
                exercise(&case, e);
            }
        }
        _ => {
            let Some((case, registry, engine, bytes)) = valid(&mut u) else {
                return;
            };
            let loaded = match Engine::from_bytes_with(&bytes, &registry) {
                Ok(e) => e,
                Err(e) => panic!("a valid artifact does not load: {e}\n{case}"),
            };
            let want = run_engine(&case, &mut engine.session());
            let got = run_engine(&case, &mut loaded.session());
            if want != got {
                panic!(
                    "the loaded artifact answers differently:\ncompiled {want:?}\nloaded {got:?}\n{case}"
                );
            }
        }
    }
});
