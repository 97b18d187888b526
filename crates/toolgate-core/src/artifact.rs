//! The binary artifact: compiled tables written once, loaded without copying.
//!
//! The format is specified byte by byte in `spec/artifact.md`. In short: a
//! 104-byte header (magic, byte-order mark, format major.minor, required and
//! optional feature flags, the versions of toolgate and regex-automata that
//! wrote it, a BLAKE3 revision id, the section count and a CRC-32 of the
//! header and section table), a section table, and aligned sections: the
//! table words, the string bytes, and one section per DFA.
//!
//! [`read`] validates the header, every section's bounds, alignment and
//! CRC-32, and then borrows the sections from the buffer: the words and bytes
//! are read in place, and the DFAs are deserialised zero-copy when the buffer
//! is aligned (copied into aligned memory otherwise). It never panics and
//! never allocates in proportion to anything but the DFA count.
//!
//! Depends on `runtime::program` (the layout of what it carries) and
//! `registry` (kinds and splitters named in the tables must be supplied).
//! Writing is the compiler's (`toolgate::artifact::write`), which needs
//! BLAKE3 for the revision id.

use crate::decision::{Decision, List, Source};
use crate::registry::Registry;
use crate::runtime::program::{
    Dfa, Program, FM_CB, HDR_WORDS, H_MAGIC, H_N_DFAS, H_N_TOOLS, H_TOOLS, NONE, PROGRAM_MAGIC,
    TOOL_WORDS, T_CARVE_FM, T_RULES_FM,
};
use regex_automata::dfa::dense;
use std::borrow::Cow;
use std::fmt;

/// The first eight bytes of every artifact.
pub const MAGIC: [u8; 8] = *b"TOOLGATE";
/// The byte-order mark: written little-endian, read back as this value.
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;
/// The format's major version: a reader refuses any other.
pub const FORMAT_MAJOR: u16 = 1;
/// The format's minor version: a reader accepts a newer minor unless it sets a
/// required feature the reader does not know.
pub const FORMAT_MINOR: u16 = 0;
/// The minor version of an artifact holding a condition program (1.1): a
/// 1.0 reader refuses it through the required feature it does not know.
pub const FORMAT_MINOR_CONDITIONS: u16 = 1;
/// Required feature: the artifact holds DFA sections, written by the
/// regex-automata version in the header.
pub const FEATURE_DFA: u64 = 1;
/// Required feature (1.1): the tables are a condition program (a Rubric
/// bundle), not rule lists.
pub const FEATURE_CONDITIONS: u64 = 2;
/// Required feature (1.2): the condition program is a first-match program
/// of Authensor policies, with their session tables. Set together with
/// [`FEATURE_CONDITIONS`], so that a 1.1 reader refuses it.
pub const FEATURE_AUTHENSOR: u64 = 4;
/// The minor version of an artifact holding Authensor policies (1.2).
pub const FORMAT_MINOR_AUTHENSOR: u16 = 2;
/// The required features this reader knows.
pub const KNOWN_REQUIRED: u64 = FEATURE_DFA | FEATURE_CONDITIONS | FEATURE_AUTHENSOR;
/// What an artifact's tables are, which decides the engine that reads them.
/// The writer is told it by the compiler that built the tables; the header
/// carries it as required feature bits, so that a reader of one kind refuses
/// the others by the format's own rule for unknown required features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProgramKind {
    /// agentpolicy rule lists (and Claude Code settings): format 1.0.
    RuleLists,
    /// A Rubric bundle's condition program: format 1.1, [`FEATURE_CONDITIONS`].
    Conditions,
    /// Authensor policies, a first-match condition program with session
    /// tables: format 1.2, [`FEATURE_CONDITIONS`] and [`FEATURE_AUTHENSOR`].
    FirstMatch,
}

impl ProgramKind {
    /// The required feature bits that name the kind.
    pub fn features(self) -> u64 {
        match self {
            ProgramKind::RuleLists => 0,
            ProgramKind::Conditions => FEATURE_CONDITIONS,
            ProgramKind::FirstMatch => FEATURE_CONDITIONS | FEATURE_AUTHENSOR,
        }
    }

    /// The format minor version that introduced the kind, which the writer
    /// stamps so that an older reader refuses it.
    pub fn minor(self) -> u16 {
        match self {
            ProgramKind::RuleLists => FORMAT_MINOR,
            ProgramKind::Conditions => FORMAT_MINOR_CONDITIONS,
            ProgramKind::FirstMatch => FORMAT_MINOR_AUTHENSOR,
        }
    }

    /// The kind a header's required features name: the engine to try. A
    /// header whose bits are inconsistent (Authensor without conditions) is
    /// named by its most specific bit, and that engine's loader refuses it.
    pub fn of_features(required: u64) -> ProgramKind {
        if required & FEATURE_AUTHENSOR != 0 {
            ProgramKind::FirstMatch
        } else if required & FEATURE_CONDITIONS != 0 {
            ProgramKind::Conditions
        } else {
            ProgramKind::RuleLists
        }
    }
}

/// The header's length in bytes.
pub const HEADER_LEN: usize = 104;
/// A section table entry's length in bytes.
pub const ENTRY_LEN: usize = 32;
/// The regex-automata version whose DFA format this build reads and writes.
pub const REGEX_AUTOMATA_VERSION: &str = "0.4.19";

/// Section kinds.
pub const SECTION_WORDS: u32 = 1;
/// The string bytes.
pub const SECTION_BYTES: u32 = 2;
/// One DFA, in the order the tables number them.
pub const SECTION_DFA: u32 = 3;

/// The most sections an artifact may declare; a table claiming more is refused
/// before anything is allocated for it.
const MAX_SECTIONS: u32 = 1 << 20;

/// Why an artifact was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    kind: LoadErrorKind,
    message: String,
}

/// Which check refused an artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// Shorter than its header or section table says.
    Truncated,
    /// The first eight bytes are not `TOOLGATE`.
    Magic,
    /// The byte-order mark does not read back.
    ByteOrder,
    /// A format major version this reader does not read.
    Version,
    /// A required feature this reader does not know.
    Feature,
    /// DFAs written by a regex-automata version whose format this reader
    /// cannot read.
    DfaVersion,
    /// A checksum does not match: the bytes were damaged.
    Checksum,
    /// A section or a table is malformed.
    Layout,
    /// A matcher kind or splitter the tables name was not supplied.
    Missing,
    /// The artifact holds another kind of program than the loader reads:
    /// rule lists where a condition program was expected, or the reverse.
    ProgramKind,
}

impl LoadError {
    fn new(kind: LoadErrorKind, message: impl Into<String>) -> LoadError {
        LoadError {
            kind,
            message: message.into(),
        }
    }

    /// Which check refused the artifact.
    pub fn kind(&self) -> LoadErrorKind {
        self.kind
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoadError {}

/// The header of an artifact, as [`inspect`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format major version.
    pub major: u16,
    /// Format minor version.
    pub minor: u16,
    /// Required feature flags.
    pub required: u64,
    /// Optional feature flags.
    pub optional: u64,
    /// The toolgate version that wrote it.
    pub toolgate_version: String,
    /// The regex-automata version whose DFA format it uses.
    pub regex_automata_version: String,
    /// The revision id: BLAKE3 of everything but itself and the header CRC.
    pub revision: [u8; 32],
    /// The sections: kind, alignment, offset, length, CRC-32.
    pub sections: Vec<Section>,
}

impl Header {
    /// The revision id in lowercase hex.
    pub fn revision_hex(&self) -> String {
        self.revision.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// One entry of the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// What it holds.
    pub kind: u32,
    /// Its alignment in the file, a power of two.
    pub align: u32,
    /// Its offset from the start of the file.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The CRC-32 of its bytes.
    pub crc: u32,
}

impl Section {
    /// `words`, `bytes` or `dfa`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            SECTION_WORDS => "words",
            SECTION_BYTES => "bytes",
            SECTION_DFA => "dfa",
            _ => "unknown",
        }
    }
}

/// CRC-32 of the header's first 100 bytes and the section table: what the
/// header's last field holds.
pub fn header_crc(bytes: &[u8], table_end: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(bytes.get(..100).unwrap_or_default());
    h.update(bytes.get(HEADER_LEN..table_end).unwrap_or_default());
    h.finalize()
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn text_at(b: &[u8], at: usize, len: usize) -> String {
    let raw = b.get(at..at + len).unwrap_or_default();
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(raw.get(..end).unwrap_or_default()).into_owned()
}

/// Reads and checks the header and section table, without touching the
/// sections' contents.
///
/// # Errors
///
/// The first check that fails, in the order of `spec/artifact.md`.
pub fn header(bytes: &[u8]) -> Result<Header, LoadError> {
    use LoadErrorKind::*;
    if bytes.len() < HEADER_LEN {
        return Err(LoadError::new(
            Truncated,
            format!(
                "the artifact is {} bytes, shorter than its {HEADER_LEN}-byte header",
                bytes.len()
            ),
        ));
    }
    if bytes.get(..8) != Some(&MAGIC[..]) {
        return Err(LoadError::new(
            Magic,
            "this is not a toolgate artifact: the magic label `TOOLGATE` is missing",
        ));
    }
    if u32_at(bytes, 8) != Some(BYTE_ORDER_MARK) {
        return Err(LoadError::new(
            ByteOrder,
            "the artifact's byte-order mark does not read back: it was not written little-endian",
        ));
    }
    let major = u16_at(bytes, 12).unwrap_or(0);
    let minor = u16_at(bytes, 14).unwrap_or(0);
    if major != FORMAT_MAJOR {
        return Err(LoadError::new(
            Version,
            format!("the artifact is format {major}.{minor}; this toolgate reads format {FORMAT_MAJOR}.x only: compile the policy again"),
        ));
    }
    let required = u64_at(bytes, 16).unwrap_or(u64::MAX);
    let unknown = required & !KNOWN_REQUIRED;
    if unknown != 0 {
        return Err(LoadError::new(
            Feature,
            format!("the artifact (format {major}.{minor}) requires features {unknown:#x} this toolgate does not know: upgrade toolgate or compile the policy again"),
        ));
    }
    let n = u32_at(bytes, 96).unwrap_or(0);
    if n > MAX_SECTIONS {
        return Err(LoadError::new(
            Layout,
            format!("the artifact declares {n} sections"),
        ));
    }
    let table_end = HEADER_LEN.saturating_add((n as usize).saturating_mul(ENTRY_LEN));
    if bytes.len() < table_end {
        return Err(LoadError::new(
            Truncated,
            format!("the artifact is truncated inside its section table ({n} sections)"),
        ));
    }
    if u32_at(bytes, 100) != Some(header_crc(bytes, table_end)) {
        return Err(LoadError::new(
            Checksum,
            "the artifact's header checksum does not match: the file is damaged",
        ));
    }
    let ra = text_at(bytes, 48, 16);
    if required & FEATURE_DFA != 0 && major_minor(&ra) != major_minor(REGEX_AUTOMATA_VERSION) {
        return Err(LoadError::new(
            DfaVersion,
            format!("the artifact's DFAs were written by regex-automata {ra}, whose format this toolgate (regex-automata {REGEX_AUTOMATA_VERSION}) cannot read: compile the policy again"),
        ));
    }
    let mut sections = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        let at = HEADER_LEN + i * ENTRY_LEN;
        sections.push(Section {
            kind: u32_at(bytes, at).unwrap_or(0),
            align: u32_at(bytes, at + 4).unwrap_or(0),
            offset: u64_at(bytes, at + 8).unwrap_or(u64::MAX),
            len: u64_at(bytes, at + 16).unwrap_or(u64::MAX),
            crc: u32_at(bytes, at + 24).unwrap_or(0),
        });
    }
    let mut revision = [0u8; 32];
    if let Some(r) = bytes.get(64..96) {
        revision.copy_from_slice(r);
    }
    Ok(Header {
        major,
        minor,
        required,
        optional: u64_at(bytes, 24).unwrap_or(0),
        toolgate_version: text_at(bytes, 32, 16),
        regex_automata_version: ra,
        revision,
        sections,
    })
}

fn major_minor(v: &str) -> (&str, &str) {
    let mut it = v.split('.');
    (it.next().unwrap_or(""), it.next().unwrap_or(""))
}

/// The bytes of a section, bounds- and alignment-checked against the file.
fn section_bytes<'a>(bytes: &'a [u8], s: &Section) -> Result<&'a [u8], LoadError> {
    let start = usize::try_from(s.offset).ok();
    let len = usize::try_from(s.len).ok();
    let body = match (start, len) {
        (Some(st), Some(l)) => st.checked_add(l).and_then(|end| bytes.get(st..end)),
        _ => None,
    };
    let Some(body) = body else {
        return Err(LoadError::new(
            LoadErrorKind::Truncated,
            format!(
                "the {} section (offset {}, {} bytes) runs past the end of the artifact",
                s.kind_name(),
                s.offset,
                s.len
            ),
        ));
    };
    if s.align == 0 || !s.align.is_power_of_two() || s.offset % u64::from(s.align) != 0 {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            format!(
                "the {} section at offset {} is not aligned to {}",
                s.kind_name(),
                s.offset,
                s.align
            ),
        ));
    }
    if crc32fast::hash(body) != s.crc {
        return Err(LoadError::new(
            LoadErrorKind::Checksum,
            format!(
                "the {} section's checksum does not match: the file is damaged",
                s.kind_name()
            ),
        ));
    }
    Ok(body)
}

/// Validates an artifact and borrows its tables.
///
/// Matcher kinds and splitters the tables name are resolved in `registry`. A
/// kind whose specifiers the compiler could not lower (the callback path)
/// and every splitter must be supplied: loading without them is an error,
/// never a silent non-match.
///
/// # Errors
///
/// A [`LoadError`] naming the check that failed.
pub fn read<'a>(bytes: &'a [u8], registry: &Registry) -> Result<Program<'a>, LoadError> {
    let mut p = read_tables(bytes)?;
    resolve(&mut p, registry)?;
    Ok(p)
}

/// Every check of [`read`] but the registry's: the tables, with no kind or
/// splitter resolved.
fn read_tables(bytes: &[u8]) -> Result<Program<'_>, LoadError> {
    let h = header(bytes)?;
    if h.required & FEATURE_CONDITIONS != 0 {
        return Err(LoadError::new(
            LoadErrorKind::ProgramKind,
            if h.required & FEATURE_AUTHENSOR != 0 {
                "the artifact holds Authensor policies, not rule lists: decide with it as Authensor policies (`AuthensorEngine::from_bytes`)"
            } else {
                "the artifact holds a Rubric bundle, not rule lists: decide with it as a Rubric bundle (`RubricEngine::from_bytes`)"
            },
        ));
    }
    let p = read_sections(bytes, &h)?;
    if p.w(H_MAGIC) != PROGRAM_MAGIC {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the table words do not start with the table magic",
        ));
    }
    let table = p.h(crate::runtime::program::H_TOOL_HASH);
    if u64::from(table).saturating_add(u64::from(p.w(table))) >= u64::from(p.n_words()) {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the tool hash table runs past the table words",
        ));
    }
    Ok(p)
}

/// Validates an artifact holding a condition program (a Rubric bundle) and
/// borrows its tables; the caller checks the condition-program header.
///
/// # Errors
///
/// A [`LoadError`] naming the check that failed.
pub fn read_conditions(bytes: &[u8]) -> Result<Program<'_>, LoadError> {
    let h = header(bytes)?;
    if h.required & FEATURE_CONDITIONS == 0 {
        return Err(LoadError::new(
            LoadErrorKind::ProgramKind,
            "the artifact holds rule lists, not a Rubric bundle: decide with it as a policy (`Engine::from_bytes`)",
        ));
    }
    if h.required & FEATURE_AUTHENSOR != 0 {
        return Err(LoadError::new(
            LoadErrorKind::ProgramKind,
            "the artifact holds Authensor policies, not a Rubric bundle: decide with it as Authensor policies (`AuthensorEngine::from_bytes`)",
        ));
    }
    read_sections(bytes, &h)
}

/// Validates an artifact holding Authensor policies (a first-match
/// condition program) and borrows its tables; the caller checks the
/// program's header and its session tables.
///
/// # Errors
///
/// A [`LoadError`] naming the check that failed.
pub fn read_authensor(bytes: &[u8]) -> Result<Program<'_>, LoadError> {
    let h = header(bytes)?;
    if h.required & FEATURE_AUTHENSOR == 0 || h.required & FEATURE_CONDITIONS == 0 {
        let what = if h.required & FEATURE_CONDITIONS != 0 {
            "a Rubric bundle, not Authensor policies: decide with it as a Rubric bundle (`RubricEngine::from_bytes`)"
        } else {
            "rule lists, not Authensor policies: decide with it as a policy (`Engine::from_bytes`)"
        };
        return Err(LoadError::new(
            LoadErrorKind::ProgramKind,
            format!("the artifact holds {what}"),
        ));
    }
    read_sections(bytes, &h)
}

/// A condition program's header check failure, as a load error.
pub fn layout_error(message: String) -> LoadError {
    LoadError::new(LoadErrorKind::Layout, message)
}

/// The checks every artifact passes: gaps, sections, checksums, the DFAs
/// and their count in the tables (the same header word in both kinds of
/// program).
fn read_sections<'a>(bytes: &'a [u8], h: &Header) -> Result<Program<'a>, LoadError> {
    check_gaps(bytes, h)?;
    let mut words = None;
    let mut strings = None;
    let mut dfa_sections = Vec::new();
    for s in &h.sections {
        let body = section_bytes(bytes, s)?;
        match s.kind {
            SECTION_WORDS if words.is_none() => words = Some(body),
            SECTION_BYTES if strings.is_none() => strings = Some(body),
            SECTION_DFA => dfa_sections.push(body),
            // A section this reader does not know is skipped: a newer minor
            // may add optional ones. Two words or bytes sections are not.
            SECTION_WORDS | SECTION_BYTES => {
                return Err(LoadError::new(
                    LoadErrorKind::Layout,
                    format!("the artifact has two {} sections", s.kind_name()),
                ))
            }
            _ => {}
        }
    }
    let (Some(words), Some(strings)) = (words, strings) else {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the artifact has no table words or no string bytes",
        ));
    };
    if words.len() % 4 != 0 || words.len() < HDR_WORDS as usize * 4 {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the table words are too short or not a whole number of words",
        ));
    }
    let mut dfas = Vec::with_capacity(dfa_sections.len());
    for (i, body) in dfa_sections.iter().enumerate() {
        dfas.push(load_dfa(body).map_err(|e| {
            LoadError::new(
                LoadErrorKind::Layout,
                format!("DFA {i} does not deserialise: {e}"),
            )
        })?);
    }
    let p = Program {
        words: words_of(words),
        bytes: Cow::Borrowed(strings),
        dfas,
        kinds: Vec::new(),
        splitters: Vec::new(),
    };
    if p.h(H_N_DFAS) as usize != p.dfas.len() {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            format!(
                "the tables number {} DFAs but the artifact holds {}",
                p.h(H_N_DFAS),
                p.dfas.len()
            ),
        ));
    }
    Ok(p)
}

/// The table words: borrowed in place when the section is aligned and the
/// machine is little-endian, decoded into an owned copy otherwise.
fn words_of(bytes: &[u8]) -> Cow<'_, [u32]> {
    if cfg!(target_endian = "little") {
        if let Ok(words) = bytemuck::try_cast_slice::<u8, u32>(bytes) {
            return Cow::Borrowed(words);
        }
    }
    Cow::Owned(
        bytes
            .chunks_exact(4)
            .map(|c| {
                u32::from_le_bytes([
                    c.first().copied().unwrap_or(0),
                    c.get(1).copied().unwrap_or(0),
                    c.get(2).copied().unwrap_or(0),
                    c.get(3).copied().unwrap_or(0),
                ])
            })
            .collect(),
    )
}

/// Checks that nothing but zero padding lies between the section table and
/// the sections, between sections, or after the last one, so that no bit of
/// the file escapes every checksum.
fn check_gaps(bytes: &[u8], h: &Header) -> Result<(), LoadError> {
    let mut spans: Vec<(u64, u64)> = h
        .sections
        .iter()
        .map(|s| (s.offset, s.offset.saturating_add(s.len)))
        .collect();
    spans.sort_unstable();
    let mut at = (HEADER_LEN + h.sections.len() * ENTRY_LEN) as u64;
    for (start, end) in spans
        .into_iter()
        .chain(std::iter::once((bytes.len() as u64, bytes.len() as u64)))
    {
        if start < at {
            return Err(LoadError::new(
                LoadErrorKind::Layout,
                "two sections of the artifact overlap, or a section overlaps the section table",
            ));
        }
        let gap = bytes
            .get(at as usize..(start as usize).min(bytes.len()))
            .unwrap_or_default();
        if gap.len() >= 8 || gap.iter().any(|&b| b != 0) {
            return Err(LoadError::new(
                LoadErrorKind::Checksum,
                "the artifact holds bytes outside its sections: the file is damaged",
            ));
        }
        at = end;
    }
    Ok(())
}

/// Deserialises a DFA in place when the bytes are 4-byte aligned (as they are
/// in a mapped file, whose sections are 8-byte aligned), and from an aligned
/// copy when they are not (a buffer the caller allocated as bytes).
fn load_dfa(body: &[u8]) -> Result<Dfa<'_>, String> {
    if body.as_ptr().align_offset(4) == 0 {
        let (d, _) = dense::DFA::from_bytes(body).map_err(|e| e.to_string())?;
        return Ok(Dfa::Borrowed(d));
    }
    let mut buf = vec![0u8; body.len() + 3];
    let off = buf.as_ptr().align_offset(4);
    let Some(dst) = buf.get_mut(off..off + body.len()) else {
        return Err("cannot align a copy of the DFA".into());
    };
    dst.copy_from_slice(body);
    let aligned = buf.get(off..).unwrap_or_default();
    let (d, _) = dense::DFA::from_bytes(aligned).map_err(|e| e.to_string())?;
    Ok(Dfa::Owned(d.to_owned()))
}

/// Resolves the kinds and splitters the tables name against the registry.
fn resolve(p: &mut Program<'_>, registry: &Registry) -> Result<(), LoadError> {
    let n = p.h(H_N_TOOLS);
    if u64::from(p.h(H_TOOLS)).saturating_add(u64::from(n).saturating_mul(u64::from(TOOL_WORDS)))
        > u64::from(p.n_words())
    {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the tool table runs past the table words",
        ));
    }
    let mut kinds = Vec::with_capacity(n as usize);
    let mut splitters = Vec::with_capacity(n as usize);
    for t in 0..n {
        let tool = p.tool_name(t).to_string();
        let kind = match p.tool_kind(t) {
            None => None,
            Some(k) => match registry.kind(k) {
                Some(imp) => Some(imp.clone()),
                None if has_callbacks(p, t) => {
                    return Err(LoadError::new(
                        LoadErrorKind::Missing,
                        format!("the artifact needs the matcher kind `{k}` for tool `{tool}`, whose specifiers only that kind can match: register it before loading"),
                    ))
                }
                None => None,
            },
        };
        let split = match p.tool_split(t) {
            None => None,
            Some(s) => match registry.splitter(s) {
                Some(imp) => Some(imp.clone()),
                None => {
                    return Err(LoadError::new(
                        LoadErrorKind::Missing,
                        format!("the artifact splits calls of `{tool}` with the splitter `{s}`, which was not supplied: register it before loading"),
                    ))
                }
            },
        };
        kinds.push(kind);
        splitters.push(split);
    }
    p.kinds = kinds;
    p.splitters = splitters;
    Ok(())
}

fn has_callbacks(p: &Program<'_>, t: u32) -> bool {
    [T_RULES_FM, T_CARVE_FM].iter().any(|&f| {
        let fm = p.w(p.tool_at(t).wrapping_add(f));
        fm != NONE && p.w(fm.wrapping_add(FM_CB + 1)) != 0
    })
}

/// What `toolgate inspect` shows of an artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The header and section table.
    pub header: Header,
    /// The artifact's length in bytes.
    pub len: usize,
    /// What applies when no rule decides.
    pub default: Decision,
    /// The sources, in merge order.
    pub sources: Vec<Source>,
    /// Firing rules per list (deny, ask, allow), carve-outs, withheld rules.
    pub counts: RuleCounts,
    /// The tools the tables know.
    pub tools: Vec<ToolSummary>,
}

/// Rule counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleCounts {
    /// Deny rules.
    pub deny: usize,
    /// Ask rules.
    pub ask: usize,
    /// Allow rules.
    pub allow: usize,
    /// Carve-outs, in any list.
    pub carve_outs: usize,
    /// Allow rules of untrusted sources, never evaluated.
    pub withheld: usize,
}

/// One tool of the tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSummary {
    /// Its name.
    pub name: String,
    /// The argument member its matcher reads.
    pub field: Option<String>,
    /// Its matcher kind.
    pub kind: Option<String>,
    /// Its splitter.
    pub split: Option<String>,
    /// Its rules: firing rules per list, and carve-outs.
    pub counts: RuleCounts,
}

/// Validates an artifact and summarises it: header, sections, sources,
/// tools and rule counts. Kinds and splitters need not be supplied.
///
/// # Errors
///
/// As [`read`], except that missing kinds and splitters are not an error.
pub fn inspect(bytes: &[u8]) -> Result<Inspection, LoadError> {
    let header = header(bytes)?;
    let p = read_tables(bytes)?;
    let mut tools: Vec<ToolSummary> = (0..p.n_tools())
        .map(|t| ToolSummary {
            name: p.tool_name(t).to_string(),
            field: p.tool_field(t).map(str::to_string),
            kind: p.tool_kind(t).map(str::to_string),
            split: p.tool_split(t).map(str::to_string),
            counts: RuleCounts::default(),
        })
        .collect();
    let mut counts = RuleCounts {
        withheld: p.withheld().len(),
        ..RuleCounts::default()
    };
    for id in 0..p.n_rules().min(p.n_words()) {
        let r = p.rule(id);
        let tool = p.rule_tool(id).to_string();
        let bump = |c: &mut RuleCounts| {
            if id >= p.n_fire() {
                c.carve_outs += 1;
            } else {
                match r.list() {
                    List::Deny => c.deny += 1,
                    List::Ask => c.ask += 1,
                    List::Allow => c.allow += 1,
                }
            }
        };
        bump(&mut counts);
        match tools.iter_mut().find(|t| t.name == tool) {
            Some(t) => bump(&mut t.counts),
            None => {
                let mut t = ToolSummary {
                    name: tool,
                    field: None,
                    kind: None,
                    split: None,
                    counts: RuleCounts::default(),
                };
                bump(&mut t.counts);
                tools.push(t);
            }
        }
    }
    let sources = (0..p.n_sources().min(p.n_words()))
        .map(|i| Source {
            name: p.source_name(i).to_string(),
            rank: p.source_rank(i),
            trusted: p.source_trusted(i),
            path: p.source_path(i).to_string(),
            hash: p.source_hash(i).to_string(),
        })
        .collect();
    Ok(Inspection {
        header,
        len: bytes.len(),
        default: p.default_decision(),
        sources,
        counts,
        tools,
    })
}
