//! An arbitrary policy and an arbitrary batch of calls, grant sets and
//! revocations: every engine of `toolgate_testing::agentpolicy::ENGINES` gives the same
//! answers, member for member. A failure prints the minimised case as a
//! decisions-format conformance file, ready for `testdata/regressions/`.
//!
//! The first byte chooses the compiler path: one input in eight runs with
//! `prefix` and `glob` lowered to callbacks, one in eight with them lowered
//! to regular expressions (DFAs), the rest with the built-in kinds
//! (`toolgate_testing::agentpolicy::StandIn`; the reference is unchanged).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate_testing::agentpolicy::{check_case_with, Case, Path, StandIn};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let kinds = match first % 8 {
        0 => StandIn::both(Path::Callback),
        1 => StandIn::both(Path::Regex),
        _ => Vec::new(),
    };
    let Ok(case) = Case::arbitrary(&mut Unstructured::new(rest)) else {
        return;
    };
    if check_case_with(&case, &kinds).is_err() {
        let small = case.minimize(|c| check_case_with(c, &kinds).is_err());
        let path = match first % 8 {
            0 => "prefix and glob as callbacks",
            1 => "prefix and glob as regular expressions",
            _ => "the built-in kinds",
        };
        match check_case_with(&small, &kinds) {
            Err(m) => panic!("with {path}: {m}"),
            Ok(_) => panic!("with {path}: {:?}", check_case_with(&case, &kinds).err()),
        }
    }
});
