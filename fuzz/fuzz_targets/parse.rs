//! Any bytes as a rule list and as a policy document (JSON, TOML, and a
//! deny list inside a document): never a panic; whatever parses prints back
//! to a list that parses to the same rules; a document that reads builds
//! alike on both engines. See `toolgate_testing::agentpolicy::check_parse`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = toolgate_testing::agentpolicy::check_parse(&text) {
        panic!("{e}");
    }
});
