//! The compiled guard scanner against the plain one
//! (`toolgate_reference::guards`): the same hits on generated text, for the
//! catalogue and for generated rules, whole and in chunks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use toolgate::guards::{catalogue, RuleSpec, Scanner, Severity};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// Text built from pieces of secrets and the bytes around them.
fn text(rng: &mut Rng, pieces: &[&str]) -> Vec<u8> {
    let mut t = Vec::new();
    for _ in 0..rng.below(40) {
        match rng.below(4) {
            0 => t.extend_from_slice(rng.pick(pieces).as_bytes()),
            1 => {
                let alphabet = b"aZ09_-+/=.:\\\" \n'@AKIQf\xff\x00";
                for _ in 0..rng.below(50) {
                    t.push(*rng.pick(alphabet));
                }
            }
            2 => {
                let run = *rng.pick(b"a0Fx");
                t.extend(std::iter::repeat_n(run, rng.below(100)));
            }
            _ => t.push(*rng.pick(b" \n\"=:")),
        }
    }
    t
}

fn hits(sc: &Scanner, t: &[u8]) -> Vec<(u64, u32, u64, u64)> {
    sc.scan(t)
        .iter()
        .map(|h| (h.at, h.rule, h.start, h.end))
        .collect()
}

fn chunked(sc: &Scanner, t: &[u8], rng: &mut Rng) -> Vec<(u64, u32, u64, u64)> {
    let mut out = Vec::new();
    let mut s = sc.stream();
    let mut at = 0;
    while at < t.len() {
        let n = 1 + rng.below(64);
        let end = (at + n).min(t.len());
        s.feed(&t[at..end], &mut |h| {
            out.push((h.at, h.rule, h.start, h.end))
        });
        at = end;
    }
    s.finish(&mut |h| out.push((h.at, h.rule, h.start, h.end)));
    out
}

#[test]
fn the_catalogue_agrees_with_the_plain_scanner() {
    let specs: Vec<RuleSpec> = catalogue::rules().into_iter().map(|(s, _)| s).collect();
    let sc = Scanner::build(&specs).unwrap();
    let pieces = [
        "AKIA",
        "ASIA",
        "ghp_",
        "github_pat_",
        "glpat-",
        "npm_",
        "xoxb-",
        "xoxb-123456-",
        "sk_live_",
        "SK",
        "AC",
        "SG.",
        "sk-",
        "sk-proj-",
        "sk-ant-api03-",
        "hf_",
        "eyJ",
        ".eyJ",
        "AIza",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "AccountKey=",
        "postgres://u:",
        "@h",
        "password=",
        "\"secret\": \"",
        "TOKEN: ",
        "aws_secret_access_key = ",
        "\"private_key_id\": \"",
        "0123456789abcdef0123456789abcdef",
        "hooks.slack.com/services/T",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut nonempty = 0;
    for _ in 0..120 {
        let t = text(&mut rng, &pieces);
        let want = toolgate_reference::guards::scan(&specs, &t).unwrap();
        let got = hits(&sc, &t);
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&t));
        assert_eq!(chunked(&sc, &t, &mut rng), want);
        nonempty += usize::from(!want.is_empty());
    }
    assert!(nonempty > 8, "only {nonempty} texts had hits");
}

#[test]
fn generated_rules_agree_with_the_plain_scanner() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let parts = [
        "[a-c]{1,4}",
        "b*",
        "(?:ab|a)",
        r"\b",
        ".",
        "x?",
        "[^ ]+",
        "a+?",
        "(?:c|cc)*",
        "[0-9]{2}",
        r"\s*",
    ];
    let mut nonempty = 0;
    for _ in 0..100 {
        let n = 1 + rng.below(4);
        let specs: Vec<RuleSpec> = (0..n)
            .map(|i| {
                let anchor = *rng.pick(&["ab", "ca", "b_", "xx", "a-a"]);
                let mut value = anchor.to_string();
                for _ in 0..rng.below(3) {
                    let p = rng.pick(&parts);
                    value.push_str(p);
                }
                let ctx = rng.below(3) == 0;
                RuleSpec {
                    name: format!("r{i}"),
                    kind: "t".into(),
                    severity: Severity::High,
                    before: ctx.then(|| anchor.to_string()),
                    value: if ctx {
                        (*rng.pick(&parts)).to_string() + "c"
                    } else {
                        value
                    },
                    after: (rng.below(3) == 0).then(|| (*rng.pick(&parts)).to_string()),
                    max_len: (rng.below(4) == 0).then(|| rng.below(6)),
                    min_entropy: (rng.below(5) == 0).then_some(1.0),
                    note: None,
                }
            })
            .collect();
        let Ok(sc) = Scanner::build(&specs) else {
            continue;
        };
        for _ in 0..5 {
            let t = text(
                &mut rng,
                &["ab", "ca", "b_", "xx", "a-a", "abc", "cc", "12"],
            );
            let want = toolgate_reference::guards::scan(&specs, &t).unwrap();
            assert_eq!(
                hits(&sc, &t),
                want,
                "{specs:?} on {:?}",
                String::from_utf8_lossy(&t)
            );
            assert_eq!(chunked(&sc, &t, &mut rng), want);
            nonempty += usize::from(!want.is_empty());
        }
    }
    assert!(nonempty > 25, "only {nonempty} texts had hits");
}
