//! Reads an artifact's section table and rewrites its checksums, so that
//! damage made on purpose reaches the structural checks and the evaluator
//! instead of stopping at a CRC. Shared by the artifact tests and the fuzz
//! targets that damage artifacts; it never panics on any bytes.
//!
//! Offsets are those of `spec/artifact.md`: the section count at byte 100,
//! the header checksum at 108, 32-byte section entries from 112 (kind,
//! offset at +8, length at +16, checksum at +24). [`reseal`] also stamps a
//! fresh revision id, as a writer who changed the tables on purpose would;
//! [`reseal_checksums`] leaves the revision, as damage that only knows the
//! checksums would.
#![allow(dead_code)]

use toolgate::artifact::{
    revision_input, ENTRY_LEN, HEADER_LEN, OFF_HEADER_CRC, OFF_SECTION_COUNT,
};

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

/// The sections of an artifact: (table entry offset, kind, start, length),
/// at most 1,024 of them.
pub fn sections(b: &[u8]) -> Vec<(usize, u32, usize, usize)> {
    let n = u32_at(b, OFF_SECTION_COUNT).unwrap_or(0) as usize;
    (0..n.min(1 << 10))
        .filter_map(|i| {
            let e = HEADER_LEN + ENTRY_LEN * i;
            Some((
                e,
                u32_at(b, e)?,
                usize::try_from(u64_at(b, e + 8)?).ok()?,
                usize::try_from(u64_at(b, e + 16)?).ok()?,
            ))
        })
        .collect()
}

/// Recomputes every section checksum, the revision id, then the header
/// checksum: the artifact is then wrong only in what its tables say.
pub fn reseal(b: &mut [u8]) {
    reseal_checksums(b);
    let mut h = blake3::Hasher::new();
    for piece in revision_input(b) {
        h.update(piece);
    }
    if let Some(r) = b.get_mut(64..96) {
        r.copy_from_slice(h.finalize().as_bytes());
    }
    seal_header(b);
}

/// Recomputes every section checksum, then the header checksum, and leaves
/// the revision id as it was.
pub fn reseal_checksums(b: &mut [u8]) {
    let secs = sections(b);
    for &(e, _, start, len) in &secs {
        if let Some(body) = b.get(start..start.saturating_add(len)) {
            let crc = crc32fast::hash(body);
            put_u32(b, e + 24, crc);
        }
    }
    seal_header(b);
}

fn seal_header(b: &mut [u8]) {
    let table_end = HEADER_LEN + ENTRY_LEN * sections(b).len();
    let mut h = crc32fast::Hasher::new();
    h.update(b.get(..OFF_HEADER_CRC).unwrap_or(&[]));
    h.update(b.get(HEADER_LEN..table_end).unwrap_or(&[]));
    put_u32(b, OFF_HEADER_CRC, h.finalize());
}
