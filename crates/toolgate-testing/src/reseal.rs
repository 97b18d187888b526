//! Reads an artifact's section table and rewrites its checksums, so that
//! damage made on purpose reaches the structural checks and the evaluator
//! instead of stopping at a CRC. Shared by the artifact tests and the fuzz
//! targets that damage artifacts; it never panics on any bytes.
//!
//! Offsets are those of `spec/artifact.md`: the section count at byte 96,
//! the header checksum at 100, 32-byte section entries from 104 (kind,
//! offset at +8, length at +16, checksum at +24).
#![allow(dead_code)]

use toolgate::artifact::{ENTRY_LEN, HEADER_LEN};

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
    let n = u32_at(b, 96).unwrap_or(0) as usize;
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

/// Recomputes every section checksum, then the header checksum.
pub fn reseal(b: &mut [u8]) {
    let secs = sections(b);
    for &(e, _, start, len) in &secs {
        if let Some(body) = b.get(start..start.saturating_add(len)) {
            let crc = crc32fast::hash(body);
            put_u32(b, e + 24, crc);
        }
    }
    let table_end = HEADER_LEN + ENTRY_LEN * secs.len();
    let mut h = crc32fast::Hasher::new();
    h.update(b.get(..100).unwrap_or(&[]));
    h.update(b.get(HEADER_LEN..table_end).unwrap_or(&[]));
    put_u32(b, 100, h.finalize());
}
