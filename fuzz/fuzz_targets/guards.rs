//! The compiled guard scanner (one Aho-Corasick pass over the anchors, each
//! hit confirmed by anchored DFAs over a window, in chunks) against the
//! plain one (`toolgate_reference::guards`: every rule's parts tried at
//! every position with a PikeVM): the same hits, whole and in chunks.
//!
//! Input: byte 0 the number of rules (1..=6), byte 1 the mode (even:
//! generated rules; odd: the built-in catalogue), then four bytes per
//! generated rule (its anchor, two pieces, and flags choosing `before`,
//! `after`, `max_len` and `min_entropy`), then a byte choosing the chunk
//! size, then the text (at most 1024 bytes, any bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use toolgate::guards::{catalogue, RuleSpec, Scanner, Severity};

/// The catalogue's rules and its scanner, built once: building them on
/// every input would leave little time for searching.
fn catalogue() -> &'static (Vec<RuleSpec>, Scanner) {
    static CAT: OnceLock<(Vec<RuleSpec>, Scanner)> = OnceLock::new();
    CAT.get_or_init(|| {
        let specs: Vec<RuleSpec> = catalogue::rules().into_iter().map(|(s, _)| s).collect();
        let sc = Scanner::build(&specs).expect("the catalogue builds");
        (specs, sc)
    })
}

const ANCHORS: [&str; 8] = ["ab", "ca", "b_", "xx", "a-a", "gh", "AK", "--"];
const PIECES: [&str; 16] = [
    "", "[a-c]{1,4}", "b*", "(?:ab|a)", r"\b", ".", "x?", "[^ ]+", "a+?", "(?:c|cc)*", "[0-9]{2}",
    r"\s*", "(?i)ab", "$", "^", r"[\x00-\xff]*?c",
];

fuzz_target!(|data: &[u8]| {
    let (Some(&n), Some(&mode)) = (data.first(), data.get(1)) else {
        return;
    };
    let mut rest = data.get(2..).unwrap_or_default();
    let built;
    let (specs, sc): (&[RuleSpec], &Scanner) = if mode % 2 == 1 {
        let (specs, sc) = catalogue();
        (specs, sc)
    } else {
        let mut specs = Vec::new();
        for i in 0..usize::from(n % 6) + 1 {
            let Some((r, tail)) = rest.split_first_chunk::<4>() else {
                break;
            };
            rest = tail;
            let anchor = ANCHORS[usize::from(r[0]) % ANCHORS.len()];
            let a = PIECES[usize::from(r[1]) % PIECES.len()];
            let b = PIECES[usize::from(r[2]) % PIECES.len()];
            let flags = r[3];
            let ctx = flags & 1 != 0;
            specs.push(RuleSpec {
                name: format!("r{i}"),
                kind: "t".into(),
                severity: Severity::High,
                before: ctx.then(|| format!("{anchor}{a}")),
                value: if ctx { format!("{b}c") } else { format!("{anchor}{a}{b}") },
                after: (flags & 2 != 0).then(|| PIECES[usize::from(flags >> 4)].to_string()),
                max_len: (flags & 4 != 0).then_some(usize::from(flags >> 5)),
                min_entropy: (flags & 8 != 0).then_some(1.5),
                note: None,
            });
        }
        let Ok(sc) = Scanner::build(&specs) else {
            // Refused at load (no anchor, too large): the plain scanner
            // has nothing to compare.
            return;
        };
        built = (specs, sc);
        (&built.0, &built.1)
    };
    let Some((&step, text)) = rest.split_first() else {
        return;
    };
    let text = &text[..text.len().min(1024)];
    let Some(want) = toolgate_reference::guards::scan(specs, text) else {
        panic!("the compiled scanner built rules the plain one cannot: {specs:?}");
    };
    let whole: Vec<_> = sc.scan(text).iter().map(|h| (h.at, h.rule, h.start, h.end)).collect();
    assert_eq!(whole, want, "{specs:?} on {text:?}");
    let mut chunked = Vec::new();
    let mut s = sc.stream();
    for c in text.chunks(usize::from(step) + 1) {
        s.feed(c, &mut |h| chunked.push((h.at, h.rule, h.start, h.end)));
    }
    s.finish(&mut |h| chunked.push((h.at, h.rule, h.start, h.end)));
    assert_eq!(chunked, want, "{specs:?} on {text:?} in chunks of {}", usize::from(step) + 1);
});
