//! Every match strategy against the reference on generated glob
//! specifiers: many rules on one field, biased toward overlapping, repeated
//! and empty pieces, pieces over the anchored ends and multi-byte
//! characters at piece boundaries (`toolgate_testing::strategies`). The
//! reference, the compiled engine and the loaded artifact must agree on
//! every verdict.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_testing::strategies::{check_strategies, StrategyCase};

fuzz_target!(|data: &[u8]| {
    let Some(case) = StrategyCase::from_bytes(data) else {
        return;
    };
    if let Err(e) = check_strategies(&case) {
        panic!("{e}");
    }
});
