//! The artifact: determinism, golden files, version checks, and robustness
//! against every truncation, every single-bit flip and random bytes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use reseal::reseal;
use std::path::Path;
use toolgate::artifact::{self, LoadErrorKind};
use toolgate::{Call, Engine, Policy, Verdict};
use toolgate_testing::reseal;
use toolgate_testing::workload::Rng;

mod common;
use common::registry;

const SAMPLE: &str = r#"{
  "default": "ask",
  "matchers": {
    "bash": {"match": "glob", "field": "command"},
    "read": {"match": "prefix", "field": "path"},
    "fetch": {"match": "regex", "field": "url"}
  },
  "aliases": {"Read": ["read", "grep"]},
  "sources": [
    {"name": "managed", "rank": 3, "trusted": true, "path": "/etc/toolgate/managed.json", "hash": "sha256:aa",
     "deny": "bash(curl:*) fetch(https?://[^/]*\\.evil\\.com/.*)", "notes": {"bash(curl:*)": "use fetch"}},
    {"name": "project", "rank": 1, "trusted": false, "allow": "bash(make:*)", "ask": "bash(git push:*)"}
  ],
  "allow": "Read bash(git status:*) fetch(https://docs\\.rs/.*)",
  "deny": "bash(rm -rf *) mcp__*__delete_* bash(!rm -rf ./target)",
  "ask": "mcp__*"
}"#;

fn sample_engine() -> Engine<'static> {
    Engine::build_with(&Policy::from_json(SAMPLE).unwrap(), &registry()).unwrap()
}

fn calls() -> Vec<Call> {
    [
        ("bash", r#"{"command": "git status"}"#),
        ("bash", r#"{"command": "curl x"}"#),
        ("bash", r#"{"command": "rm -rf /"}"#),
        ("bash", r#"{"command": "rm -rf ./target"}"#),
        ("bash", r#"{"command": "git push"}"#),
        ("grep", r#"{"pattern": "x"}"#),
        ("fetch", r#"{"url": "https://docs.rs/regex"}"#),
        ("fetch", r#"{"url": "http://a.evil.com/x"}"#),
        ("fetch", r#"{"url": "https://example.com/"}"#),
        ("mcp__gh__delete_repo", "{}"),
        ("mcp__gh__list", "{}"),
        ("other", "{}"),
        ("bash", r#"{"command": "git push --force origin"}"#),
        (
            "bash",
            r#"{"command": "git push --force-with-lease origin"}"#,
        ),
        ("bash", r#"{"command": "git commit --no-verify -m x"}"#),
        ("bash", r#"{"command": "npm run web-deploy --prod"}"#),
        ("bash", r#"{"command": "git push origin main"}"#),
        ("bash", r#"{"command": "echo é then ü"}"#),
    ]
    .iter()
    .map(|(t, a)| Call::new(*t, a))
    .collect()
}

fn verdicts(e: &Engine<'_>) -> Vec<Verdict> {
    calls().iter().map(|c| e.decide(c)).collect()
}

#[test]
fn a_loaded_artifact_decides_as_the_compiled_engine() {
    let e = sample_engine();
    let bytes = e.to_bytes();
    let h = artifact::header(&bytes).unwrap();
    assert!(
        h.sections.iter().any(|s| s.kind == artifact::SECTION_DFA),
        "the sample must exercise DFA sections"
    );
    let loaded = Engine::from_bytes_with(&bytes, &registry()).unwrap();
    assert_eq!(verdicts(&e), verdicts(&loaded));
    let v = verdicts(&loaded);
    assert_eq!(v[1].reason, "denied by bash(curl:*): use fetch");
    assert_eq!(v[6].reason, "allowed by fetch(https://docs\\.rs/.*)");
    assert_eq!(v[7].rule_text(), "fetch(https?://[^/]*\\.evil\\.com/.*)");
}

#[test]
fn an_unaligned_buffer_loads_through_an_aligned_copy() {
    let bytes = sample_engine().to_bytes();
    let mut shifted = vec![0u8; bytes.len() + 1];
    shifted[1..].copy_from_slice(&bytes);
    // One of the two views is misaligned for u32 whatever the allocator did.
    for view in [&shifted[1..], &bytes[..]] {
        let loaded = Engine::from_bytes_with(view, &registry()).unwrap();
        assert_eq!(verdicts(&loaded), verdicts(&sample_engine()));
    }
}

#[test]
fn the_same_policy_compiles_to_the_same_bytes_in_any_thread() {
    let a = sample_engine().to_bytes();
    let b = std::thread::spawn(|| sample_engine().to_bytes())
        .join()
        .unwrap();
    let c = sample_engine().to_bytes();
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn every_truncation_is_refused() {
    let bytes = sample_engine().to_bytes();
    for len in 0..bytes.len() {
        assert!(
            Engine::from_bytes_with(&bytes[..len], &registry()).is_err(),
            "a truncation to {len} of {} bytes loaded",
            bytes.len()
        );
    }
}

#[test]
fn every_single_bit_flip_is_refused() {
    // Every bit of an artifact without DFAs, and a spread of bits across one
    // with them (its DFA sections are tens of kilobytes, and every flip
    // there is refused by the same section checksum).
    let basic = Policy::from_json(
        &std::fs::read_to_string(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .join("testdata/artifacts/v1/basic.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for (bytes, step) in [
        (Engine::build(&basic).unwrap().to_bytes(), 1),
        (sample_engine().to_bytes(), 13),
    ] {
        let mut flipped = bytes.clone();
        for bit in (0..bytes.len() * 8).step_by(step) {
            let (i, b) = (bit / 8, bit % 8);
            flipped[i] ^= 1 << b;
            assert!(
                Engine::from_bytes_with(&flipped, &registry()).is_err(),
                "flipping bit {b} of byte {i} went undetected"
            );
            flipped[i] ^= 1 << b;
        }
    }
}

#[test]
fn random_bytes_are_refused_without_a_panic() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let len = (rng.next_u64() % 512) as usize;
        let mut buf = vec![0u8; len];
        rng.fill(&mut buf);
        if rng.next_u64() % 2 == 0 && len >= 8 {
            buf[..8].copy_from_slice(&artifact::MAGIC);
        }
        assert!(Engine::from_bytes(&buf).is_err());
    }
}

#[test]
fn random_tables_behind_a_valid_header_never_panic_when_deciding() {
    let good = sample_engine().to_bytes();
    let h = artifact::header(&good).unwrap();
    let words = h
        .sections
        .iter()
        .find(|s| s.kind == artifact::SECTION_WORDS)
        .unwrap();
    let (start, end) = (words.offset as usize, (words.offset + words.len) as usize);
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let mut loaded_any = 0;
    for round in 0..1_000 {
        let mut bytes = good.clone();
        // Damage a few words of the tables, keeping the table magic, then
        // make the checksums agree again.
        let n = 1 + (rng.next_u64() % 8) as usize;
        for _ in 0..n {
            let w = start + 4 + ((rng.next_u64() as usize) % ((end - start - 4) / 4)) * 4;
            let v: u32 = match round % 3 {
                0 => rng.next_u64() as u32,
                1 => u32::MAX - (rng.next_u64() % 4) as u32,
                _ => (rng.next_u64() % 64) as u32,
            };
            bytes[w..w + 4].copy_from_slice(&v.to_le_bytes());
        }
        reseal(&mut bytes);
        if let Ok(e) = Engine::from_bytes_with(&bytes, &registry()) {
            loaded_any += 1;
            for c in calls() {
                let _ = e.decide(&c);
            }
            let _ = e.filter(&["bash".to_string(), "mcp__x__delete_y".to_string()]);
        }
    }
    assert!(loaded_any > 0, "no damaged table reached the runtime");
}

fn patched(f: impl FnOnce(&mut Vec<u8>)) -> Result<(), LoadErrorKind> {
    let mut bytes = sample_engine().to_bytes();
    f(&mut bytes);
    reseal(&mut bytes);
    Engine::from_bytes_with(&bytes, &registry())
        .map(|_| ())
        .map_err(|e| e.kind())
}

#[test]
fn the_reader_says_which_check_failed() {
    assert_eq!(patched(|b| b[0] = b'X'), Err(LoadErrorKind::Magic));
    assert_eq!(
        patched(|b| b[8..12].copy_from_slice(&0x0403_0201u32.to_le_bytes())),
        Err(LoadErrorKind::ByteOrder)
    );
    assert_eq!(
        patched(|b| b[12..14].copy_from_slice(&(artifact::FORMAT_MAJOR + 1).to_le_bytes())),
        Err(LoadErrorKind::Version)
    );
    // The program kind is a header field: an unknown one is refused, and
    // the reserved word after the section count must stay zero.
    assert_eq!(
        patched(|b| b[96..100].copy_from_slice(&9u32.to_le_bytes())),
        Err(LoadErrorKind::ProgramKind)
    );
    assert_eq!(
        patched(|b| b[96..100].copy_from_slice(&2u32.to_le_bytes())),
        Err(LoadErrorKind::ProgramKind)
    );
    assert_eq!(
        patched(|b| b[104..108].copy_from_slice(&1u32.to_le_bytes())),
        Err(LoadErrorKind::Layout)
    );
    // A newer minor loads unless it requires a feature this reader lacks.
    assert_eq!(
        patched(|b| b[14..16].copy_from_slice(&7u16.to_le_bytes())),
        Ok(())
    );
    assert_eq!(
        patched(|b| {
            b[14..16].copy_from_slice(&7u16.to_le_bytes());
            b[16..24].copy_from_slice(&(artifact::FEATURE_DFA | 1 << 9).to_le_bytes());
        }),
        Err(LoadErrorKind::Feature)
    );
    // Optional features a reader does not know are ignored.
    assert_eq!(
        patched(|b| b[24..32].copy_from_slice(&u64::MAX.to_le_bytes())),
        Ok(())
    );
    assert_eq!(
        patched(|b| b[48..64].copy_from_slice(b"0.5.0\0\0\0\0\0\0\0\0\0\0\0")),
        Err(LoadErrorKind::DfaVersion)
    );
    // A checksum that does not match, without resealing.
    let mut bytes = sample_engine().to_bytes();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    let err = Engine::from_bytes_with(&bytes, &registry()).err().unwrap();
    assert_eq!(err.kind(), LoadErrorKind::Checksum);
    assert!(err.to_string().contains("checksum"), "{err}");
}

#[test]
fn without_dfas_the_regex_automata_version_is_not_checked() {
    let p = Policy::from_json(r#"{"default": "deny", "allow": "read"}"#).unwrap();
    let mut bytes = Engine::build(&p).unwrap().to_bytes();
    bytes[48..64].copy_from_slice(b"9.9.9\0\0\0\0\0\0\0\0\0\0\0");
    reseal(&mut bytes);
    assert!(Engine::from_bytes(&bytes).is_ok());
}

#[test]
fn a_callback_kind_must_be_supplied_at_load() {
    let p = Policy::from_json(
        r#"{"default": "allow", "matchers": {"bash": {"match": "contains", "field": "command"}}, "deny": "bash(sudo)"}"#,
    )
    .unwrap();
    let e = Engine::build_with(&p, &registry()).unwrap();
    let bytes = e.to_bytes();
    let err = Engine::from_bytes(&bytes).err().unwrap();
    assert_eq!(err.kind(), LoadErrorKind::Missing);
    assert!(err.to_string().contains("`contains`"), "{err}");
    let loaded = Engine::from_bytes_with(&bytes, &registry()).unwrap();
    let v = loaded.decide(&Call::new("bash", r#"{"command": "x sudo y"}"#));
    assert_eq!(v.reason, "denied by bash(sudo)");
}

#[test]
fn a_kind_that_lowered_is_not_needed_at_load() {
    let p = Policy::from_json(
        r#"{"default": "allow", "matchers": {"fetch": {"match": "regex", "field": "url"}}, "deny": "fetch(.*evil.*)"}"#,
    )
    .unwrap();
    let bytes = Engine::build_with(&p, &registry()).unwrap().to_bytes();
    let loaded = Engine::from_bytes(&bytes).unwrap();
    assert_eq!(
        loaded
            .decide(&Call::new("fetch", r#"{"url": "evil"}"#))
            .reason,
        "denied by fetch(.*evil.*)"
    );
}

/// Golden artifacts: the writer's output for these policies may change only
/// with a format version bump (regenerate them then, into a new directory,
/// with `TOOLGATE_BLESS=1 cargo test --test artifact golden`). The toolgate
/// version the header records, and the revision and header checksum that
/// cover it, are masked.
#[test]
fn golden_artifacts() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join(format!("testdata/artifacts/v{}", artifact::FORMAT_MAJOR));
    let bless = std::env::var_os("TOOLGATE_BLESS").is_some();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let policy = Policy::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let fresh = Engine::build_with(&policy, &registry()).unwrap().to_bytes();
        let golden_path = path.with_extension("tgb");
        if bless {
            std::fs::write(&golden_path, &fresh).unwrap();
        }
        let golden = std::fs::read(&golden_path).unwrap();
        let mask = |b: &[u8]| {
            let mut b = b.to_vec();
            b[32..48].fill(0);
            b[64..96].fill(0);
            b[artifact::OFF_HEADER_CRC..artifact::HEADER_LEN].fill(0);
            b
        };
        assert_eq!(
            mask(&fresh),
            mask(&golden),
            "{} changed: the artifact format changed without a version bump",
            golden_path.display()
        );
        // The golden file loads and decides as the policy does.
        let loaded = Engine::from_bytes_with(&golden, &registry()).unwrap();
        let built = Engine::build_with(&policy, &registry()).unwrap();
        for c in calls() {
            assert_eq!(loaded.decide(&c), built.decide(&c));
        }
        n += 1;
    }
    assert!(n >= 2, "no golden artifacts found in {}", dir.display());
}

/// Artifacts of older formats (the golden files of `testdata/artifacts/v1/`,
/// written before the program kind had a header field, and of `v2/`, whose
/// field matchers have no inner record) are refused with a message that says
/// to compile again, by every loader and by `inspect`.
#[test]
fn older_format_artifacts_are_refused_with_a_message_to_recompile() {
    for (dir, format) in [("v1", "format 1.0"), ("v2", "format 2.0")] {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("testdata/artifacts")
            .join(dir);
        for name in ["basic.tgb", "regex.tgb"] {
            let bytes = std::fs::read(dir.join(name)).unwrap();
            let errs = [
                Engine::from_bytes_with(&bytes, &registry()).err().unwrap(),
                toolgate::rubric::RubricEngine::from_bytes(&bytes)
                    .err()
                    .unwrap(),
                toolgate::authensor::AuthensorEngine::from_bytes(&bytes)
                    .err()
                    .unwrap(),
                artifact::inspect(&bytes).err().unwrap(),
            ];
            for e in errs {
                assert_eq!(e.kind(), LoadErrorKind::Version, "{name}: {e}");
                assert!(
                    e.to_string().contains(format)
                        && e.to_string().contains("compile the policy again"),
                    "{name}: {e}"
                );
            }
        }
    }
}

/// A rule list of format 3.0 to 3.2 with inner records (the golden file of
/// `testdata/artifacts/v3/inner-3.0.tgb`, kept from before 3.3 grouped them
/// by prefix) is refused with a message that says to compile again, by the
/// engine and by `inspect`, where reading its records in the new layout
/// would look rules up in the wrong places.
/// An artifact compiled before untrusted carve-outs were left out (a
/// review found an untrusted `bash(!rm:*)` cancelled a trusted deny of
/// equal rank) holds the carve-out in its tables: it is refused, with a
/// message to compile again, and the same policy compiled now loads.
#[test]
fn an_untrusted_carve_out_compiled_by_an_earlier_toolgate_is_refused() {
    let dir =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("testdata/artifacts/v3");
    let old = std::fs::read(dir.join("untrusted-carve-out-3.3.tgb")).unwrap();
    let e = Engine::from_bytes_with(&old, &registry()).err().unwrap();
    assert_eq!(e.kind(), LoadErrorKind::Version, "{e}");
    assert!(
        e.to_string().contains("carve-out of an untrusted source")
            && e.to_string().contains("compile the policy again"),
        "{e}"
    );
    let policy =
        Policy::from_json(&std::fs::read_to_string(dir.join("basic.json")).unwrap()).unwrap();
    let fresh = Engine::build_with(&policy, &registry()).unwrap().to_bytes();
    assert!(Engine::from_bytes_with(&fresh, &registry()).is_ok());
}

#[test]
fn inner_records_of_before_3_3_are_refused_with_a_message_to_recompile() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("testdata/artifacts/v3/inner-3.0.tgb");
    let bytes = std::fs::read(path).unwrap();
    let h = artifact::header(&bytes).unwrap();
    assert_eq!((h.major, h.minor), (3, 0));
    assert_eq!(h.required & artifact::FEATURE_INNER_GROUPS, 0);
    let errs = [
        Engine::from_bytes_with(&bytes, &registry()).err().unwrap(),
        artifact::inspect(&bytes).err().unwrap(),
    ];
    for e in errs {
        assert_eq!(e.kind(), LoadErrorKind::Version, "{e}");
        assert!(
            e.to_string().contains("format 3.0")
                && e.to_string().contains("compile the policy again"),
            "{e}"
        );
    }
    // The same policy compiled now is 3.3 and carries the flag.
    let policy = Policy::from_json(
        &std::fs::read_to_string(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .join("testdata/artifacts/v3/inner.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let fresh = Engine::build_with(&policy, &registry()).unwrap().to_bytes();
    let h = artifact::header(&fresh).unwrap();
    assert_eq!((h.major, h.minor), (3, 3));
    assert_ne!(h.required & artifact::FEATURE_INNER_GROUPS, 0);
}

fn words_at(bytes: &[u8]) -> usize {
    artifact::header(bytes)
        .unwrap()
        .sections
        .iter()
        .find(|s| s.kind == artifact::SECTION_WORDS)
        .unwrap()
        .offset as usize
}

/// Tables changed behind recomputed checksums are refused by the revision
/// id, which every loader verifies unless told not to. The change here is
/// one the structure cannot reveal: the default decision, ask, made allow.
#[test]
fn tables_changed_behind_recomputed_checksums_are_refused_by_the_revision() {
    let good = sample_engine().to_bytes();
    let at = words_at(&good) + 4 * 12;
    assert_eq!(good[at..at + 4], 1u32.to_le_bytes(), "the default is ask");
    let mut bytes = good.clone();
    bytes[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    reseal::reseal_checksums(&mut bytes);
    let err = Engine::from_bytes_with(&bytes, &registry()).err().unwrap();
    assert_eq!(err.kind(), LoadErrorKind::Revision, "{err}");
    assert!(err.to_string().contains("revision id"), "{err}");
    assert!(artifact::verify_revision(&good).is_ok());
    // Without verification the change is not detected: that is what the
    // option trades away, and why it is off only on request.
    let unverified = artifact::LoadOptions::default().verify_revision(false);
    let loaded = Engine::load(&bytes, &registry(), &unverified).unwrap();
    assert_eq!(
        loaded.decide(&Call::new("other", "{}")).decision,
        toolgate::Decision::Allow
    );
}

/// Header counts that disagree with the records are refused by the
/// structural checks, with or without the revision: the rule-list header's
/// number of firing rules set to every word, which once let `ls secret`
/// through as an allow.
#[test]
fn counts_that_disagree_with_the_tables_are_refused() {
    let good = sample_engine().to_bytes();
    let base = words_at(&good);
    let unverified = artifact::LoadOptions::default().verify_revision(false);
    // (header word, value): firing rules, deny rules, ask rules, sources,
    // tools, the default, rules.
    for (word, value) in [
        (3, u32::MAX),
        (3, 0),
        (4, 9),
        (5, 0),
        (6, 0),
        (8, 1),
        (12, 7),
        (1, 3),
    ] {
        let mut bytes = good.clone();
        let at = base + 4 * word;
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        reseal(&mut bytes);
        for options in [artifact::LoadOptions::default(), unverified] {
            let err = Engine::load(&bytes, &registry(), &options).err();
            assert_eq!(
                err.as_ref().map(|e| e.kind()),
                Some(LoadErrorKind::Layout),
                "header word {word} = {value:#x}: {err:?}"
            );
        }
    }
}

#[test]
fn an_artifact_over_the_length_cap_is_refused_before_it_is_read() {
    let bytes = sample_engine().to_bytes();
    let tight = artifact::LoadOptions::default().max_len(bytes.len() - 1);
    let err = Engine::load(&bytes, &registry(), &tight).err().unwrap();
    assert_eq!(err.kind(), LoadErrorKind::Layout);
    assert!(err.to_string().contains("over the limit"), "{err}");
    let exact = artifact::LoadOptions::default().max_len(bytes.len());
    assert!(Engine::load(&bytes, &registry(), &exact).is_ok());
}

/// A file cut inside a section says it is truncated (it once said two
/// sections overlap), and a section of a known kind must declare the
/// alignment of 8 it is written with (one of 1 was accepted and copied).
#[test]
fn a_cut_file_is_truncated_and_every_section_is_aligned_to_8() {
    let bytes = sample_engine().to_bytes();
    for cut in [bytes.len() - 1, bytes.len() - 100, 600] {
        let err = Engine::from_bytes_with(&bytes[..cut], &registry())
            .err()
            .unwrap();
        assert_eq!(err.kind(), LoadErrorKind::Truncated, "cut at {cut}: {err}");
        assert!(err.to_string().contains("truncated"), "{err}");
    }
    for (i, _) in reseal::sections(&bytes).iter().enumerate() {
        let r = patched(|b| {
            let at = artifact::HEADER_LEN + artifact::ENTRY_LEN * i + 4;
            b[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
        });
        assert_eq!(r, Err(LoadErrorKind::Layout), "section {i}");
    }
}

/// A rule written many times in one source (same list, tool, specifier,
/// source and note) compiles to the artifact of one copy, with one
/// warning saying how many there were; the same rule in two sources, or
/// with another note, is not a copy.
#[test]
fn duplicate_rules_fold_into_one_with_a_warning() {
    let doc = |deny: &str| {
        format!(
            r#"{{"default": "ask", "matchers": {{"bash": {{"match": "prefix", "field": "input"}}}}, "deny": "{deny}"}}"#
        )
    };
    let one = Engine::build(&Policy::from_json(&doc("bash(rm:*)")).unwrap()).unwrap();
    assert!(one.warnings().is_empty());
    let many =
        Engine::build(&Policy::from_json(&doc(&["bash(rm:*)"; 5_000].join(" "))).unwrap()).unwrap();
    assert_eq!(many.to_bytes(), one.to_bytes());
    assert_eq!(many.warnings().len(), 1);
    let w = &many.warnings()[0];
    assert_eq!(w.kind, "duplicate_rule");
    assert!(
        w.message.contains("`bash(rm:*)` is written 5000 times"),
        "{}",
        w.message
    );
    let c = Call::new("bash", r#"{"input": "rm -rf /"}"#);
    assert_eq!(many.decide(&c), one.decide(&c));
    assert_eq!(many.decide(&c).decision, toolgate::Decision::Deny);

    let two_sources = Policy::from_json(
        r#"{"default": "ask", "matchers": {"bash": {"match": "prefix", "field": "input"}},
            "sources": [{"name": "a", "rank": 2, "trusted": true, "deny": "bash(rm:*)"},
                        {"name": "b", "rank": 1, "trusted": true, "deny": "bash(rm:*)"}],
            "deny": "bash(rm:*)"}"#,
    )
    .unwrap();
    let e = Engine::build(&two_sources).unwrap();
    // Not folded: the later copies are only reported as never deciding.
    let kinds: Vec<&str> = e.warnings().iter().map(|w| w.kind.name()).collect();
    assert_eq!(
        kinds,
        ["shadowed_rule", "shadowed_rule"],
        "{:?}",
        e.warnings()
    );
    assert_eq!(artifact::inspect(&e.to_bytes()).unwrap().counts.deny, 3);
}

/// A policy with server-bounded globs (Claude Code's MCP allow rules) is
/// written as 3.2 with their required feature, so a reader that would take
/// them for plain globs refuses it; a policy without them stays 3.0. The
/// bound survives the round trip, and the flag on any other rule is a
/// layout error.
#[test]
fn server_bounded_globs_require_their_feature() {
    use toolgate::runtime::program::{F_SERVER, H_RULES, RULE_WORDS};
    // `mcp__gh__a__b` is a tool the tables name (it has a matcher), so the
    // glob is sorted to it at compile time as well as met at run time.
    let mut p = Policy::from_json(
        r#"{"default": "ask", "deny": "mcp__gh__delete_repo",
            "matchers": {"mcp__gh__a__b": {"match": "prefix", "field": "q"}}}"#,
    )
    .unwrap();
    let plain = Engine::build_with(&p, &registry()).unwrap().to_bytes();
    let h = artifact::header(&plain).unwrap();
    assert_eq!(
        (h.minor, h.required & artifact::FEATURE_SERVER_GLOBS),
        (0, 0)
    );
    p.server_allows.push(toolgate::ServerAllow {
        glob: "mcp__gh__*".into(),
        text: "mcp__gh".into(),
        ..Default::default()
    });
    let bytes = Engine::build_with(&p, &registry()).unwrap().to_bytes();
    let h = artifact::header(&bytes).unwrap();
    assert_eq!(h.minor, 2);
    assert_eq!(
        h.required & artifact::FEATURE_SERVER_GLOBS,
        artifact::FEATURE_SERVER_GLOBS
    );
    let loaded = Engine::load(&bytes, &registry(), &Default::default()).unwrap();
    for (tool, want) in [
        ("mcp__gh__list", "allowed by mcp__gh"),
        ("mcp__gh__delete_repo", "denied by mcp__gh__delete_repo"),
        (
            "mcp__gh__x__y",
            "no rule allows mcp__gh__x__y: approval required by default",
        ),
        (
            "mcp__gl__list",
            "no rule allows mcp__gl__list: approval required by default",
        ),
    ] {
        assert_eq!(loaded.decide(&Call::new(tool, "{}")).reason, want, "{tool}");
    }
    // The rules a call meets agree: the glob meets only its server's tools.
    let meets = |tool: &str| -> Vec<String> {
        loaded
            .matching_rules(tool, &toolgate::call::Args::from_json("{}"))
            .into_iter()
            .map(|r| r.text)
            .collect()
    };
    assert_eq!(meets("mcp__gh__list"), ["mcp__gh"]);
    assert!(meets("mcp__gh__x__y").is_empty());
    assert!(meets("mcp__gh__a__b").is_empty());
    assert_eq!(
        loaded
            .decide(&Call::new("mcp__gh__a__b", r#"{"q": "x"}"#))
            .reason,
        "no rule allows mcp__gh__a__b: approval required by default"
    );
    // The flag on the deny rule (rule 0), behind resealed checksums.
    let base = words_at(&bytes);
    let word = |b: &[u8], i: usize| {
        u32::from_le_bytes(b[base + 4 * i..base + 4 * i + 4].try_into().unwrap())
    };
    let flags_at = word(&bytes, H_RULES as usize) as usize + RULE_WORDS as usize - 1;
    let mut damaged = bytes.clone();
    let flags = word(&damaged, flags_at) | F_SERVER;
    damaged[base + 4 * flags_at..base + 4 * flags_at + 4].copy_from_slice(&flags.to_le_bytes());
    reseal(&mut damaged);
    let unverified = artifact::LoadOptions::default().verify_revision(false);
    let err = Engine::load(&damaged, &registry(), &unverified).err();
    assert_eq!(
        err.as_ref().map(|e| e.kind()),
        Some(LoadErrorKind::Layout),
        "{err:?}"
    );
}

#[test]
fn read_file_refuses_a_file_past_its_cap_and_names_it() {
    let dir = std::env::temp_dir().join(format!("toolgate-read-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.tgb");
    std::fs::write(&path, [7u8; 100]).unwrap();
    assert_eq!(
        toolgate::artifact::read_file(&path, 100).unwrap().len(),
        100
    );
    let e = toolgate::artifact::read_file(&path, 99).unwrap_err();
    assert!(matches!(e, toolgate::artifact::ReadError::TooLarge { .. }));
    assert!(e.to_string().contains("a.tgb"), "{e}");
    let e = toolgate::artifact::read_file(&dir.join("missing.tgb"), 100).unwrap_err();
    assert!(matches!(e, toolgate::artifact::ReadError::Io { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
