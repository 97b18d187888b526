//! The `path-reach` kind never answers "cannot" for a rule that covers a
//! path the query names: each input seeds a run of generated rules,
//! queries and witnesses (`toolgate_testing::reach`), and a witness the
//! `path` kind finds covered must be reachable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut seed = 0xcbf2_9ce4_8422_2325u64;
    for &b in data {
        seed = (seed ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let (failures, _) = toolgate_testing::reach::run(seed, 64);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
});
