//! Policy documents: generated JSON values shaped like policies, mutated
//! (wrong types, unknown members, hostile rules, extreme ranks, deep
//! nesting), or any input that is JSON text already (the seed corpus holds
//! the documents of `testdata/` and `examples/`). A clear error or an
//! engine, never a panic; both engines build alike and answer alike.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate_testing::agentpolicy::{check_policy_json, PolicyValue};

fuzz_target!(|data: &[u8]| {
    let value = match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(v) => v,
        Err(_) => match PolicyValue::arbitrary(&mut Unstructured::new(data)) {
            Ok(v) => v.0,
            Err(_) => return,
        },
    };
    if let Err(e) = check_policy_json(&value) {
        panic!("{e}");
    }
});
