//! The Claude Code kinds `claude-bash`, `path` and `domain`: the kind's own answer, the
//! compiled tables of a one-rule policy and the reference's reading of the
//! specification must agree on every specifier and call value
//! (`toolgate_testing::claude_kinds`).
//!
//! Input: `p:`, `d:` or `b:` then the specifier, the value and (for `path`) the
//! working directory on lines of their own; anything else is bytes for the
//! case generator, which favours anchors, `**`, classes, escapes, `..`,
//! subdomain globs, IPv4 spellings and values built from the specifier.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate_testing::claude_kinds::{check_kind, KindCase, KindName};

fn from_text(data: &[u8]) -> Option<KindCase> {
    let text = std::str::from_utf8(data).ok()?;
    let (kind, rest) = if let Some(r) = text.strip_prefix("p:") {
        (KindName::Path, r)
    } else if let Some(r) = text.strip_prefix("d:") {
        (KindName::Domain, r)
    } else if let Some(r) = text.strip_prefix("b:") {
        (KindName::Bash, r)
    } else {
        return None;
    };
    let mut lines = rest.splitn(3, '\n');
    Some(KindCase {
        kind,
        spec: lines.next()?.to_string(),
        value: lines.next().unwrap_or("").to_string(),
        cwd: lines.next().unwrap_or("/repo").to_string(),
    })
}

fuzz_target!(|data: &[u8]| {
    let case = match from_text(data) {
        Some(c) => c,
        None => match KindCase::arbitrary(&mut Unstructured::new(data)) {
            Ok(c) => c,
            Err(_) => return,
        },
    };
    if let Err(e) = check_kind(&case) {
        panic!("{e}");
    }
});
