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
    Dfa, Program, FM_CB, HDR_WORDS, H_MAGIC, H_N_DFAS, H_N_INNER, H_N_TOOLS, H_TOOLS, NONE,
    PROGRAM_MAGIC, TOOL_WORDS, T_CARVE_FM, T_RULES_FM,
};
use regex_automata::dfa::dense;
use std::borrow::Cow;
use std::fmt;

mod strategies;
mod validate;

pub use strategies::StrategyCounts;

/// The first eight bytes of every artifact.
pub const MAGIC: [u8; 8] = *b"TOOLGATE";
/// The byte-order mark: written little-endian, read back as this value.
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;
/// The format's major version: a reader refuses any other. Format 2 put the
/// program kind in a header field of its own; format 3 gave every field
/// matcher a sixth word, its inner record (the `Inner` strategy's needles
/// and entries), which a format 2 reader would not read and so would never
/// fire those rules. Older artifacts are refused with a message that says to
/// compile the policy again.
pub const FORMAT_MAJOR: u16 = 3;
/// The format's newest minor version: a reader accepts a newer minor unless
/// it sets a required feature the reader does not know. Each program is
/// written with the oldest minor that reads it: rule lists as 3.0, or 3.2
/// when they hold server-bounded globs, or 3.3 when they hold inner
/// records; condition programs, which 3.1 changed, as 3.1.
pub const FORMAT_MINOR: u16 = 3;
/// Required feature: the artifact holds DFA sections, written by the
/// regex-automata version in the header.
pub const FEATURE_DFA: u64 = 1;
/// Required feature (3.1): the condition program's fields list their
/// `contains` needles and `matches` patterns as text, built into automata
/// at load, where 3.0 serialised them as DFAs (table magic `TGC2` instead
/// of `TGC1`). Set on every condition program.
pub const FEATURE_SCANS: u64 = 2;
/// Required feature (3.2): a rule list holds allow rules whose tool-name
/// glob one MCP server bounds (rule flag `F_SERVER`). A 3.0 or 3.1 reader
/// would take them for plain glob allow rules and let another server's
/// tools through, so it must refuse the artifact.
pub const FEATURE_SERVER_GLOBS: u64 = 4;
/// Required feature (3.3): a rule list's inner records group their rules by
/// anchored prefix (a trie of the prefixes, then posting lists per group),
/// where 3.0 to 3.2 kept one posting list per needle. An older reader would
/// read the groups as postings, so it must refuse the artifact; this reader
/// refuses an artifact with inner records that lacks the flag, and says to
/// compile the policy again.
pub const FEATURE_INNER_GROUPS: u64 = 8;
/// The required features this reader knows.
pub const KNOWN_REQUIRED: u64 =
    FEATURE_DFA | FEATURE_SCANS | FEATURE_SERVER_GLOBS | FEATURE_INNER_GROUPS;

/// What an artifact's tables are, which decides the engine that reads them.
/// The compiler that built the tables tells the writer, which records it in
/// the header's program-kind field; a loader refuses every kind but its own
/// before it reads a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProgramKind {
    /// agentpolicy rule lists (and Claude Code settings): code 1.
    RuleLists,
    /// A Rubric bundle's condition program: code 2.
    Conditions,
    /// Authensor policies, a first-match condition program with session
    /// tables: code 3.
    FirstMatch,
}

impl ProgramKind {
    /// The header field's value for the kind.
    pub fn code(self) -> u32 {
        match self {
            ProgramKind::RuleLists => 1,
            ProgramKind::Conditions => 2,
            ProgramKind::FirstMatch => 3,
        }
    }

    /// The kind a header field names, `None` for a code this reader does not
    /// know.
    pub fn from_code(code: u32) -> Option<ProgramKind> {
        match code {
            1 => Some(ProgramKind::RuleLists),
            2 => Some(ProgramKind::Conditions),
            3 => Some(ProgramKind::FirstMatch),
            _ => None,
        }
    }

    /// What the kind is, as a refusal names it.
    pub fn noun(self) -> &'static str {
        match self {
            ProgramKind::RuleLists => "rule lists",
            ProgramKind::Conditions => "a Rubric bundle",
            ProgramKind::FirstMatch => "Authensor policies",
        }
    }

    /// How to decide with the kind, as a refusal advises.
    fn advice(self) -> &'static str {
        match self {
            ProgramKind::RuleLists => "decide with it as a policy (`Engine::from_bytes`)",
            ProgramKind::Conditions => {
                "decide with it as a Rubric bundle (`RubricEngine::from_bytes`)"
            }
            ProgramKind::FirstMatch => {
                "decide with it as Authensor policies (`AuthensorEngine::from_bytes`)"
            }
        }
    }
}

/// The header's length in bytes.
pub const HEADER_LEN: usize = 112;
/// Header field offsets (format 2): the program kind, the section count, a
/// reserved word that must be zero, and the header checksum.
pub const OFF_PROGRAM_KIND: usize = 96;
/// The section count's offset.
pub const OFF_SECTION_COUNT: usize = 100;
/// The reserved word's offset.
pub const OFF_RESERVED: usize = 104;
/// The header checksum's offset.
pub const OFF_HEADER_CRC: usize = 108;
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
/// The alignment every section of a known kind declares and has: the
/// words are read in place as `u32`s and the DFAs as regex-automata's
/// tables, which a smaller alignment would force to be copied.
pub const SECTION_ALIGN: u32 = 8;

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
    /// rule lists where a condition program was expected, or the reverse;
    /// or a kind this reader does not know.
    ProgramKind,
    /// The revision id does not match the contents: the artifact was changed
    /// after it was written and its checksums recomputed.
    Revision,
    /// A signature the loader requires was not made by its key for this
    /// artifact.
    Signature,
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
    /// What the tables are (the header's program-kind field).
    pub kind: ProgramKind,
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

/// CRC-32 of the header up to its checksum field and of the section table:
/// what the header's last field holds.
pub fn header_crc(bytes: &[u8], table_end: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(bytes.get(..OFF_HEADER_CRC).unwrap_or_default());
    h.update(bytes.get(HEADER_LEN..table_end).unwrap_or_default());
    h.finalize()
}

/// The bytes the revision id is the BLAKE3 hash of, in order: everything
/// but the revision field itself and the header checksum. The hash is the
/// caller's (this crate does not link BLAKE3): the writer stamps it, and a
/// loader that verifies compares it with [`Header::revision`].
pub fn revision_input(bytes: &[u8]) -> [&[u8]; 3] {
    [
        bytes.get(..64).unwrap_or_default(),
        bytes.get(96..OFF_HEADER_CRC).unwrap_or_default(),
        bytes.get(HEADER_LEN..).unwrap_or_default(),
    ]
}

/// The refusal of an artifact whose required signature does not verify.
pub fn signature_error(message: &str) -> LoadError {
    LoadError::new(LoadErrorKind::Signature, message)
}

/// The refusal of an artifact whose revision id does not match its bytes.
pub fn revision_error() -> LoadError {
    LoadError::new(
        LoadErrorKind::Revision,
        "the artifact's revision id does not match its contents: it was changed after it was written (its checksums were recomputed); compile the policy again, or load a copy you trust",
    )
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
        let why = if major < FORMAT_MAJOR {
            "an older format this toolgate no longer reads"
        } else {
            "a newer format than this toolgate reads"
        };
        return Err(LoadError::new(
            Version,
            format!("the artifact is format {major}.{minor}, {why} (it reads {FORMAT_MAJOR}.x): compile the policy again with this toolgate (`toolgate compile`)"),
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
    let n = u32_at(bytes, OFF_SECTION_COUNT).unwrap_or(0);
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
    if u32_at(bytes, OFF_HEADER_CRC) != Some(header_crc(bytes, table_end)) {
        return Err(LoadError::new(
            Checksum,
            "the artifact's header checksum does not match: the file is damaged",
        ));
    }
    let code = u32_at(bytes, OFF_PROGRAM_KIND).unwrap_or(0);
    let Some(kind) = self::ProgramKind::from_code(code) else {
        return Err(LoadError::new(
            LoadErrorKind::ProgramKind,
            format!("the artifact (format {major}.{minor}) holds a program of kind {code}, which this toolgate does not know: upgrade toolgate or compile the policy again"),
        ));
    };
    if u32_at(bytes, OFF_RESERVED) != Some(0) {
        return Err(LoadError::new(
            Layout,
            "the artifact's reserved header word is not zero: upgrade toolgate or compile the policy again",
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
        kind,
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
    expect_kind(&h, ProgramKind::RuleLists)?;
    let p = read_sections(bytes, &h)?;
    if p.w(H_MAGIC) != PROGRAM_MAGIC {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the table words do not start with the table magic",
        ));
    }
    if p.h(H_N_INNER) != 0 && h.required & FEATURE_INNER_GROUPS == 0 {
        return Err(LoadError::new(
            LoadErrorKind::Version,
            format!(
                "the artifact is format {}.{}, whose inner records this toolgate no longer reads: compile the policy again with this toolgate (`toolgate compile`)",
                h.major, h.minor
            ),
        ));
    }
    let table = p.h(crate::runtime::program::H_TOOL_HASH);
    if u64::from(table).saturating_add(u64::from(p.w(table))) >= u64::from(p.n_words()) {
        return Err(LoadError::new(
            LoadErrorKind::Layout,
            "the tool hash table runs past the table words",
        ));
    }
    validate::rule_lists(&p)?;
    let mut p = p;
    p.automata = crate::runtime::program::Automata::new(p.h(H_N_INNER) as usize);
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
    expect_kind(&h, ProgramKind::Conditions)?;
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
    expect_kind(&h, ProgramKind::FirstMatch)?;
    read_sections(bytes, &h)
}

/// Refuses an artifact whose header names another program kind than the
/// loader reads, before any section is touched.
fn expect_kind(h: &Header, want: ProgramKind) -> Result<(), LoadError> {
    if h.kind == want {
        return Ok(());
    }
    Err(LoadError::new(
        LoadErrorKind::ProgramKind,
        format!(
            "the artifact holds {}, not {}: {}",
            h.kind.noun(),
            want.noun(),
            h.kind.advice()
        ),
    ))
}

/// A condition program's header check failure, as a load error.
pub fn layout_error(message: String) -> LoadError {
    LoadError::new(LoadErrorKind::Layout, message)
}

/// The checks every artifact passes: gaps, sections, checksums, the DFAs
/// and their count in the tables (the same header word in both kinds of
/// program).
fn read_sections<'a>(bytes: &'a [u8], h: &Header) -> Result<Program<'a>, LoadError> {
    // A file cut inside a section is truncated, which is what to say before
    // the gap check would see the cut section overlap the end of the file.
    for s in &h.sections {
        if s.offset
            .checked_add(s.len)
            .is_none_or(|end| end > bytes.len() as u64)
        {
            return Err(LoadError::new(
                LoadErrorKind::Truncated,
                format!(
                    "the {} section (offset {}, {} bytes) runs past the end of the artifact ({} bytes): the file is truncated",
                    s.kind_name(),
                    s.offset,
                    s.len,
                    bytes.len()
                ),
            ));
        }
        if matches!(s.kind, SECTION_WORDS | SECTION_BYTES | SECTION_DFA) && s.align != SECTION_ALIGN
        {
            return Err(LoadError::new(
                LoadErrorKind::Layout,
                format!(
                    "the {} section declares an alignment of {}, not {SECTION_ALIGN}",
                    s.kind_name(),
                    s.align
                ),
            ));
        }
    }
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
        automata: Default::default(),
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
    /// The patterns of its rules and carve-outs per match strategy.
    pub strategies: StrategyCounts,
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
            strategies: {
                let at = p.tool_at(t);
                let mut c = strategies::count(&p, p.w(at.wrapping_add(T_RULES_FM)));
                c.add(&strategies::count(&p, p.w(at.wrapping_add(T_CARVE_FM))));
                c
            },
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
                    strategies: StrategyCounts::default(),
                };
                bump(&mut t.counts);
                tools.push(t);
            }
        }
    }
    let sources = p.sources();
    Ok(Inspection {
        header,
        len: bytes.len(),
        default: p.default_decision(),
        sources,
        counts,
        tools,
    })
}
