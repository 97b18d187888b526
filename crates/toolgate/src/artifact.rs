//! Writing the binary artifact (`spec/artifact.md`). The format's
//! constants, its validating reader and `inspect` are the runtime's
//! (`toolgate_core::artifact`, re-exported here); writing needs BLAKE3 for
//! the revision id, which a host that only loads artifacts does not compile.
//!
//! The program kind is the compiler's word, passed in: the writer never
//! guesses it from the tables.

pub use toolgate_core::artifact::*;

use crate::runtime::program::{Dfa, Program};
use std::borrow::Cow;

/// Writes a program as an artifact. `kind` is what the compiler built;
/// the header records it in its required features.
pub fn write(p: &Program<'_>, kind: ProgramKind) -> Vec<u8> {
    let words: Vec<u8> = p.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut sections: Vec<(u32, u32, Cow<'_, [u8]>)> = vec![
        (SECTION_WORDS, 8, Cow::Owned(words)),
        (SECTION_BYTES, 8, Cow::Borrowed(&p.bytes)),
    ];
    for d in &p.dfas {
        let (bytes, pad) = match d {
            Dfa::Owned(d) => d.to_bytes_little_endian(),
            Dfa::Borrowed(d) => d.to_bytes_little_endian(),
        };
        sections.push((
            SECTION_DFA,
            8,
            Cow::Owned(bytes.get(pad..).unwrap_or_default().to_vec()),
        ));
    }
    let required = if p.dfas.is_empty() { 0 } else { FEATURE_DFA } | kind.features();
    let minor = kind.minor();

    let table_end = HEADER_LEN + sections.len() * ENTRY_LEN;
    let mut out = vec![0u8; table_end];
    let mut entries = Vec::with_capacity(sections.len());
    for (kind, align, bytes) in &sections {
        let a = *align as usize;
        while out.len() % a != 0 {
            out.push(0);
        }
        let offset = out.len() as u64;
        out.extend_from_slice(bytes);
        entries.push(Section {
            kind: *kind,
            align: *align,
            offset,
            len: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
        });
    }
    put(&mut out, 0, &MAGIC);
    put(&mut out, 8, &BYTE_ORDER_MARK.to_le_bytes());
    put(&mut out, 12, &FORMAT_MAJOR.to_le_bytes());
    put(&mut out, 14, &minor.to_le_bytes());
    put(&mut out, 16, &required.to_le_bytes());
    put(&mut out, 24, &0u64.to_le_bytes());
    put(&mut out, 32, &padded::<16>(env!("CARGO_PKG_VERSION")));
    put(&mut out, 48, &padded::<16>(REGEX_AUTOMATA_VERSION));
    put(&mut out, 96, &(entries.len() as u32).to_le_bytes());
    for (i, e) in entries.iter().enumerate() {
        let at = HEADER_LEN + i * ENTRY_LEN;
        put(&mut out, at, &e.kind.to_le_bytes());
        put(&mut out, at + 4, &e.align.to_le_bytes());
        put(&mut out, at + 8, &e.offset.to_le_bytes());
        put(&mut out, at + 16, &e.len.to_le_bytes());
        put(&mut out, at + 24, &e.crc.to_le_bytes());
    }
    let revision = revision_of(&out);
    put(&mut out, 64, revision.as_bytes());
    let crc = header_crc(&out, table_end);
    put(&mut out, 100, &crc.to_le_bytes());
    out
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = out.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

fn padded<const N: usize>(s: &str) -> [u8; N] {
    let mut b = [0u8; N];
    for (d, s) in b.iter_mut().zip(s.bytes()) {
        *d = s;
    }
    b
}

/// BLAKE3 of everything but the revision field (64..96) and the header CRC
/// (100..104).
fn revision_of(bytes: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(bytes.get(..64).unwrap_or_default());
    h.update(bytes.get(96..100).unwrap_or_default());
    h.update(bytes.get(HEADER_LEN..).unwrap_or_default());
    h.finalize()
}
