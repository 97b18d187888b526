//! The one-pass reader of calls and arguments (`json::quick`) against the
//! serde path it stands in for.
//!
//! The reader answers only for texts in its subset and leaves the rest to
//! serde; what it answers must be what serde answers. Checked on every
//! input: `json::scan_members` (the reader, then serde) gives exactly what
//! `json::scan_members_by_serde` gives, members and errors alike, and
//! `Call::from_json` gives exactly what `Call::from_json_by_serde` gives,
//! the arguments' members included, and so does `Call::from_json_reusing`
//! reading into the buffers of a call read before.
//!
//! Input: the first byte picks the shape (0: the rest is the arguments
//! text; 1: the rest is a call line; 2: the rest is the arguments inside
//! `{"tool":"bash","args":…}`, so mutations stay inside a call), the rest
//! is the text (invalid UTF-8 is skipped: both readers take `&str`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::json::{scan_members, scan_members_by_serde};
use toolgate::Call;

/// A call whose buffers hold more than most inputs: reading into them
/// must leave nothing of it behind.
const SPARE: &str = r#"{"tool":"mcp__a_rather_long_server__and_its_tool","args":{"command":"git push --force origin main","path":"/etc/passwd","n":12,"nested":{"k":"v"}}}"#;

fn same_call(line: &str) {
    let either = format!("{:?}", Call::from_json(line).map_err(|e| e.to_string()));
    let serde = format!(
        "{:?}",
        Call::from_json_by_serde(line).map_err(|e| e.to_string())
    );
    assert_eq!(either, serde, "the call line {line:?} reads differently");
    let spare = Call::from_json(SPARE).ok();
    assert!(spare.is_some(), "the spare call reads");
    let reused = format!(
        "{:?}",
        Call::from_json_reusing(line, spare).map_err(|e| e.to_string())
    );
    assert_eq!(
        reused, serde,
        "the call line {line:?} reads differently into a spare call"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match shape % 3 {
        0 => {
            assert_eq!(
                scan_members(text),
                scan_members_by_serde(text),
                "the arguments {text:?} read differently"
            );
            same_call(&format!(r#"{{"tool":"bash","args":{text}}}"#));
        }
        1 => same_call(text),
        _ => same_call(&format!(r#"{{"tool":"bash","args":{text}}}"#)),
    }
});
