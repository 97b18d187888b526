//! An arbitrary policy and an arbitrary batch of calls, grant sets and
//! revocations: every engine of `toolgate::testing::ENGINES` gives the same
//! answers, member for member. A failure prints the minimised case as a
//! decisions-format conformance file, ready for `testdata/regressions/`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::testing::{check_case, Case};

fuzz_target!(|case: Case| {
    if check_case(&case).is_err() {
        let small = case.minimize(|c| check_case(c).is_err());
        match check_case(&small) {
            Err(m) => panic!("{m}"),
            Ok(_) => panic!("{:?}", check_case(&case).err()),
        }
    }
});
