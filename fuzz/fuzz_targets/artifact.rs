//! Artifacts: arbitrary bytes, the first bytes of a valid artifact followed
//! by arbitrary bytes, and a valid artifact with bytes changed, given to
//! `Engine::from_bytes`: an error or an engine, never a panic, a hang or
//! unbounded memory (run.sh sets libFuzzer's time and memory limits). A
//! valid artifact of an arbitrary policy loads and answers every step of
//! the case exactly as the engine it was written from.
//!
//! Built only with the `artifact` feature (see Cargo.toml): it needs
//! `Engine::to_bytes` and `Engine::from_bytes`.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate::testing::{run_engine, setup, Case};
use toolgate::{Call, Engine};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mode) = u8::arbitrary(&mut u) else {
        return;
    };
    match mode % 4 {
        // Any bytes.
        0 => {
            let rest = u.take_rest();
            if let Ok(e) = Engine::from_bytes(rest) {
                let _ = e.decide(&Call::new("bash", r#"{"command": "ls"}"#));
            }
        }
        // A valid artifact, cut anywhere, then any bytes; or with bytes
        // changed in place.
        1 | 2 => {
            let Ok(case) = Case::arbitrary(&mut u) else {
                return;
            };
            let Ok((policy, registry)) = setup(&case) else {
                return;
            };
            let Ok(engine) = Engine::build_with(&policy, &registry) else {
                return;
            };
            let mut bytes = engine.to_bytes();
            if mode % 4 == 1 {
                let cut = u.int_in_range(0..=bytes.len()).unwrap_or(0);
                bytes.truncate(cut);
                bytes.extend_from_slice(u.take_rest());
            } else {
                for _ in 0..u.int_in_range(1..=8).unwrap_or(1) {
                    let (Ok(at), Ok(b)) =
                        (u.choose_index(bytes.len().max(1)), u8::arbitrary(&mut u))
                    else {
                        break;
                    };
                    if let Some(slot) = bytes.get_mut(at) {
                        *slot = b;
                    }
                }
            }
            if let Ok(e) = Engine::from_bytes(&bytes) {
                for c in &case.calls {
                    let _ = e.decide(&Call::new(c.tool.clone(), "{}"));
                }
            }
        }
        // A valid artifact round-trips to identical answers.
        _ => {
            let Ok(case) = Case::arbitrary(&mut u) else {
                return;
            };
            let Ok((policy, registry)) = setup(&case) else {
                return;
            };
            let Ok(engine) = Engine::build_with(&policy, &registry) else {
                return;
            };
            let bytes = engine.to_bytes();
            let mut loaded = match Engine::from_bytes(&bytes) {
                Ok(e) => e,
                Err(e) => panic!("a valid artifact does not load: {e:?}\n{case}"),
            };
            let mut compiled = engine.clone();
            let want = run_engine(&case, &mut compiled);
            let got = run_engine(&case, &mut loaded);
            if want != got {
                panic!("the loaded artifact answers differently:\ncompiled {want:?}\nloaded {got:?}\n{case}");
            }
        }
    }
});
