//! Scanning content with the whole built-in secrets catalogue: the
//! compiled scanner (one Aho-Corasick pass over every rule's anchors, each
//! hit confirmed by the rule's anchored DFAs) against a baseline that runs
//! the same catalogue as one multi-pattern `regex_automata::meta::Regex`
//! (the `RegexSet`-plus-confirmation approach of regex-based scanners)
//! and checks each match's length and entropy.
//!
//! Workloads, 1 MiB each, generated from a fixed seed:
//!
//! * `clean`: words of source code and prose with no secret, one word in
//!   500 one that rules anchor on (`token`, `password`, `sk`, `eyJ`, …);
//! * `anchor_dense`: the same with one word in three such a word, the
//!   prefilter's worst case short of an attack;
//! * `secret_per_kb`: the same text with one secret planted per KiB,
//!   rotating through the catalogue's types.
//!
//! And `dlp_1kb`: Rubric DLP on a typical 1 KiB request (its `input`
//! scanned as JSON text, the three fields added).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use std::hint::black_box;
use std::time::Duration;
use toolgate::guards::{catalogue, scanner, Guards};
use toolgate::rubric::Request;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

/// Words of source code and prose that no rule anchors on.
const WORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "self",
    "return",
    "if",
    "else",
    "match",
    "the",
    "of",
    "to",
    "and",
    "in",
    "is",
    "for",
    "request",
    "response",
    "user",
    "value",
    "config",
    "=",
    "==",
    ":",
    "{",
    "}",
    "(",
    ")",
    ";",
    ".",
    ",",
    "\"",
    "'",
    "->",
    "String",
    "Vec<u8>",
    "Result",
    "Option",
    "None",
    "Some",
    "error",
    "println!",
    "assert_eq!",
    "http://example.com/path",
    "src/main.rs",
    "0x1f",
    "42",
    "3.14",
    "TODO",
    "which",
    "when",
    "with",
    "that",
    "this",
    "from",
    "into",
    "impl",
    "struct",
    "pub",
    "use",
    "crate",
    "where",
    "while",
    "loop",
    "break",
    "continue",
    "const",
    "static",
    "buffer",
    "length",
    "offset",
    "index",
    "count",
    "total",
    "name",
    "path",
    "file",
    "line",
];

/// Words a rule anchors on, as code and prose use them (`token`,
/// `password`, `sk`, `AC`, `eyJ`, `BEGIN`, `postgres`, `xox`, …).
const ANCHORY: &[&str] = &[
    "token",
    "tokens",
    "password",
    "secret",
    "sk",
    "AC",
    "SK",
    "hf",
    "npm",
    "eyJ",
    "-----BEGIN",
    "postgres://localhost/db",
    "xox",
    "github",
    "AKIA",
    "ghp_",
    "SG.",
    "sk-",
    "AccountKey=",
];

/// Text of `WORDS`, with one word in `every` taken from `ANCHORY`.
fn text(len: usize, seed: u64, every: u64) -> Vec<u8> {
    let mut r = Rng(seed);
    let mut t = Vec::with_capacity(len + 64);
    while t.len() < len {
        let w = if r.next() % every == 0 {
            r.pick(ANCHORY)
        } else {
            r.pick(WORDS)
        };
        t.extend_from_slice(w.as_bytes());
        t.push(if r.next() % 9 == 0 { b'\n' } else { b' ' });
    }
    t.truncate(len);
    t
}

fn clean(len: usize, seed: u64) -> Vec<u8> {
    text(len, seed, 500)
}

fn secrets() -> Vec<String> {
    let a = "aB3dE5fG7hJ9kLmNpQrStUvWxYz0C2D4F6H8aB3dE5fG7hJ9kLmNpQrStUvWxYz0C2D4F6H8";
    vec![
        format!("AKIA{}", "QWERTYUIOP234567"),
        format!("ghp_{}", &a[..36]),
        format!("glpat-{}", &a[..20]),
        format!("npm_{}", &a[1..37]),
        format!("xoxb-1234567890-{}", &a[..24]),
        format!("sk_live_{}", &a[2..26]),
        format!("SG.{}.{}", &a[..22], &a[..43]),
        format!("sk-ant-api03-{}", &a[..70].repeat(2)),
        format!("hf_{}", &a[3..37]),
        format!("eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}", &a[..30], &a[..43]),
        format!("postgres://app:{}@db:5432/app", &a[..16]),
        format!("password=\"{}\"", &a[5..25]),
    ]
}

fn with_secrets(len: usize) -> Vec<u8> {
    let mut t = clean(len, 7);
    for (i, s) in secrets().iter().cycle().take(len / 1024).enumerate() {
        let at = i * 1024 + 100;
        let bytes = format!(" {s} ");
        t[at..at + bytes.len()].copy_from_slice(bytes.as_bytes());
    }
    t
}

/// The catalogue as one meta regex, with each rule's checks after a match.
struct Baseline {
    re: Regex,
    checks: Vec<(Option<usize>, Option<f64>)>,
}

impl Baseline {
    fn new() -> Baseline {
        let specs: Vec<_> = catalogue::rules().into_iter().map(|(s, _)| s).collect();
        let pats: Vec<String> = specs.iter().map(scanner::whole_pattern).collect();
        let re = Regex::builder()
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .build_many(&pats)
            .unwrap();
        let checks = specs.iter().map(|s| (s.max_len, s.min_entropy)).collect();
        Baseline { re, checks }
    }

    fn count(&self, hay: &[u8]) -> usize {
        self.re
            .find_iter(hay)
            .filter(|m| {
                let (max, ent) = self.checks[m.pattern().as_usize()];
                let v = &hay[m.range()];
                max.is_none_or(|x| v.len() <= x) && ent.is_none_or(|e| scanner::entropy(v) >= e)
            })
            .count()
    }
}

fn scan(c: &mut Criterion) {
    let g = Guards::builtin().unwrap();
    let base = Baseline::new();
    let mib = 1 << 20;
    for (name, text) in [
        ("clean", clean(mib, 3)),
        ("anchor_dense", text(mib, 5, 3)),
        ("secret_per_kb", with_secrets(mib)),
    ] {
        let mut group = c.benchmark_group(format!("guards/{name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.measurement_time(Duration::from_secs(4));
        group.warm_up_time(Duration::from_secs(1));
        group.sample_size(20);
        group.bench_function("compiled", |b| {
            b.iter(|| black_box(g.findings(black_box(&text))).len())
        });
        group.bench_function("meta_regex_set", |b| {
            b.iter(|| base.count(black_box(&text)))
        });
        group.finish();
    }
}

fn dlp(c: &mut Criterion) {
    let g = Guards::builtin().unwrap();
    let body = String::from_utf8(clean(900, 11)).unwrap();
    let text = serde_json::json!({
        "tool_name": "Bash", "agent_id": "payments-bot", "session_id": "sess-42",
        "input": {"command": "cargo test --workspace", "cwd": "/repo", "description": body},
    })
    .to_string();
    assert!((900..1400).contains(&text.len()), "{}", text.len());
    let request = Request::from_json(&text).unwrap();
    let mut group = c.benchmark_group("guards/dlp_1kb");
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    group.bench_function("add_dlp", |b| {
        b.iter_batched_ref(
            || request.clone(),
            |r| r.add_dlp(g),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, scan, dlp);
criterion_main!(benches);
