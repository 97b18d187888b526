//! Each built-in matcher kind (`prefix`, `glob`), compiled tables against
//! the reference matchers, on specifiers and values biased towards matches.
//!
//! Input: either `m:` then the kind, the specifier and the value on three
//! lines (the seed corpus's form, made from `testdata/`), or bytes for
//! `MatcherCase`'s generator.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate_testing::agentpolicy::{check_matcher, MatcherCase};

fn from_text(data: &[u8]) -> Option<MatcherCase> {
    let text = std::str::from_utf8(data.strip_prefix(b"m:")?).ok()?;
    let mut lines = text.splitn(3, '\n');
    let kind = match lines.next()? {
        "prefix" => "prefix",
        "glob" => "glob",
        _ => return None,
    };
    Some(MatcherCase {
        kind,
        spec: lines.next()?.to_string(),
        value: lines.next().unwrap_or("").to_string(),
        path: None,
    })
}

fuzz_target!(|data: &[u8]| {
    let case = match from_text(data) {
        Some(c) => c,
        None => match MatcherCase::arbitrary(&mut Unstructured::new(data)) {
            Ok(c) => c,
            Err(_) => return,
        },
    };
    if let Err(e) = check_matcher(&case) {
        panic!("{e}");
    }
});
