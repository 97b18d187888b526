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
        (SECTION_WORDS, SECTION_ALIGN, Cow::Owned(words)),
        (SECTION_BYTES, SECTION_ALIGN, Cow::Borrowed(&p.bytes)),
    ];
    for d in &p.dfas {
        let (bytes, pad) = match d {
            Dfa::Owned(d) => d.to_bytes_little_endian(),
            Dfa::Borrowed(d) => d.to_bytes_little_endian(),
        };
        sections.push((
            SECTION_DFA,
            SECTION_ALIGN,
            Cow::Owned(bytes.get(pad..).unwrap_or_default().to_vec()),
        ));
    }
    let dfa = if p.dfas.is_empty() { 0 } else { FEATURE_DFA };
    // Rule lists are written as 3.0, byte for byte as before 3.1, unless
    // they hold server-bounded globs, which a reader before 3.2 would
    // read as plain globs.
    let (minor, required) = if kind == ProgramKind::RuleLists {
        let server = if p.has_server_rules() {
            FEATURE_SERVER_GLOBS
        } else {
            0
        };
        // Inner records changed layout in 3.3; a rule list without any is
        // read by every 3.x reader.
        let inner = if p.automata.is_empty() {
            0
        } else {
            FEATURE_INNER_GROUPS
        };
        let minor = if inner != 0 {
            3u16
        } else if server != 0 {
            2
        } else {
            0
        };
        (minor, dfa | server | inner)
    } else {
        // Condition programs stay 3.1: they have no server-bounded rules.
        (1u16, dfa | FEATURE_SCANS)
    };

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
    put(&mut out, OFF_PROGRAM_KIND, &kind.code().to_le_bytes());
    put(
        &mut out,
        OFF_SECTION_COUNT,
        &(entries.len() as u32).to_le_bytes(),
    );
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
    put(&mut out, OFF_HEADER_CRC, &crc.to_le_bytes());
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

/// BLAKE3 of everything but the revision field and the header checksum
/// ([`revision_input`]).
fn revision_of(bytes: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    for piece in revision_input(bytes) {
        h.update(piece);
    }
    h.finalize()
}

/// Recomputes an artifact's revision id and compares it with the header's.
/// The loaders of this crate call it after every structural check, so that
/// tables changed behind recomputed checksums are refused rather than
/// decided with.
///
/// # Errors
///
/// [`LoadErrorKind::Revision`] when the id does not match, or the header's
/// own refusal when there is no readable header.
///
/// ```
/// use toolgate::{artifact, Engine, Policy};
/// let policy = Policy::from_json(r#"{"default": "deny", "allow": "read"}"#)?;
/// let mut bytes = Engine::build(&policy)?.to_bytes();
/// assert!(artifact::verify_revision(&bytes).is_ok());
/// let last = bytes.len() - 1;
/// bytes[last] ^= 1;
/// assert!(artifact::verify_revision(&bytes).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_revision(bytes: &[u8]) -> Result<(), LoadError> {
    let h = header(bytes)?;
    if revision_of(bytes).as_bytes() == &h.revision {
        Ok(())
    } else {
        Err(revision_error())
    }
}

/// The largest artifact the loaders accept by default: 256 MiB, well above
/// what 100,000 rules compile to, so that a file of gigabytes is refused
/// before any checksum runs over it.
pub const DEFAULT_MAX_LEN: usize = 256 << 20;

/// How the loaders of this crate treat an artifact beyond the format's own
/// checks.
///
/// ```
/// use toolgate::artifact::LoadOptions;
/// let trusting = LoadOptions::default().verify_revision(false).max_len(1 << 20);
/// assert!(!trusting.verifies_revision());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    verify_revision: bool,
    max_len: usize,
    signature: Option<([u8; SIGNATURE_LEN], [u8; PUBLIC_KEY_LEN])>,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            verify_revision: true,
            max_len: DEFAULT_MAX_LEN,
            signature: None,
        }
    }
}

impl LoadOptions {
    /// Whether the revision id is recomputed and compared (on by default).
    /// Turning it off saves one BLAKE3 pass over the artifact at load; the
    /// structural checks and the work budget still hold, but tables changed
    /// on purpose behind recomputed checksums may then decide differently.
    pub fn verify_revision(mut self, yes: bool) -> LoadOptions {
        self.verify_revision = yes;
        self
    }

    /// Requires the artifact to carry `signature` made by the secret key of
    /// `public` ([`sign`]): a loader then refuses any other artifact, and
    /// verifies the revision id whatever [`LoadOptions::verify_revision`]
    /// says.
    pub fn require_signature(
        mut self,
        signature: [u8; SIGNATURE_LEN],
        public: [u8; PUBLIC_KEY_LEN],
    ) -> LoadOptions {
        self.signature = Some((signature, public));
        self
    }

    /// The largest artifact accepted, in bytes.
    pub fn max_len(mut self, bytes: usize) -> LoadOptions {
        self.max_len = bytes;
        self
    }

    /// Whether the revision id is verified.
    pub fn verifies_revision(&self) -> bool {
        self.verify_revision
    }

    /// The largest artifact accepted.
    pub fn limit(&self) -> usize {
        self.max_len
    }

    /// The check before any other: the artifact's length against the cap.
    ///
    /// # Errors
    ///
    /// [`LoadErrorKind::Layout`] for an artifact over the cap.
    pub fn admit(&self, bytes: &[u8]) -> Result<(), LoadError> {
        if bytes.len() > self.max_len {
            return Err(too_large(bytes.len() as u64, self.max_len));
        }
        Ok(())
    }

    /// The check after every other: the revision id, when verified.
    ///
    /// # Errors
    ///
    /// As [`verify_revision`].
    pub fn settle(&self, bytes: &[u8]) -> Result<(), LoadError> {
        if let Some((signature, public)) = &self.signature {
            return verify_signature(bytes, signature, public);
        }
        if self.verify_revision {
            verify_revision(bytes)?;
        }
        Ok(())
    }
}

/// The refusal of an artifact of `len` bytes over a cap of `max`.
pub fn too_large(len: u64, max: usize) -> LoadError {
    layout_error(format!(
        "the artifact is {len} bytes, over the limit of {max}: raise the limit if the policy really is this large"
    ))
}

/// Why [`read_file`] refused a file.
#[derive(Debug)]
pub enum ReadError {
    /// The file cannot be opened or read.
    Io {
        /// The path as given.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The file is longer than the cap.
    TooLarge {
        /// The path as given.
        path: String,
        /// What [`too_large`] says.
        error: LoadError,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io { path, source } => write!(f, "cannot read `{path}`: {source}"),
            ReadError::TooLarge { path, error } => {
                write!(f, "`{path}` is not a usable artifact: {error}")
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// Reads an artifact (or a document) whole into memory, refusing it past
/// `max` bytes. Never mapped: a writer that truncates the file cannot change
/// tables in use. The file may grow while it is read, so at most one byte
/// past the cap is read, and a file that reached it is refused.
///
/// # Errors
///
/// [`ReadError`]: the file cannot be read, or is longer than `max`.
pub fn read_file(path: &std::path::Path, max: usize) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let shown = || path.display().to_string();
    let io = |source| ReadError::Io {
        path: shown(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let refuse = |len: u64| ReadError::TooLarge {
        path: shown(),
        error: too_large(len, max),
    };
    if let Ok(meta) = file.metadata() {
        if meta.len() > max as u64 {
            return Err(refuse(meta.len()));
        }
    }
    let mut bytes = Vec::new();
    file.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > max {
        return Err(refuse(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What a signature signs: this label, then the artifact's revision id. The
/// label keeps a signature made for an artifact from meaning anything
/// anywhere else the same key signs.
const SIGNATURE_LABEL: &[u8] = b"toolgate artifact revision v1\0";

/// The length of a signature, of a public key and of a secret key's seed.
pub const SIGNATURE_LEN: usize = 64;
/// The length of a public key.
pub const PUBLIC_KEY_LEN: usize = 32;
/// The length of a secret key's seed.
pub const SECRET_KEY_LEN: usize = 32;

/// Signs an artifact with an ed25519 secret key (its 32-byte seed): the
/// signature covers the revision id, which covers every other byte, so it
/// is detached (`toolgate compile --sign` writes it beside the artifact).
///
/// # Errors
///
/// The artifact's own refusal when its revision id does not match it: an
/// artifact that does not verify is not signed.
///
/// ```
/// use toolgate::{artifact, Engine, Policy};
/// let bytes = Engine::build(&Policy::from_json(r#"{"default": "deny"}"#)?)?.to_bytes();
/// let secret = [7u8; 32];
/// let signature = artifact::sign(&bytes, &secret)?;
/// let public = artifact::public_key(&secret);
/// assert!(artifact::verify_signature(&bytes, &signature, &public).is_ok());
/// assert!(artifact::verify_signature(&bytes, &signature, &[9u8; 32]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sign(bytes: &[u8], secret: &[u8; SECRET_KEY_LEN]) -> Result<[u8; SIGNATURE_LEN], LoadError> {
    use ed25519_dalek::Signer as _;
    verify_revision(bytes)?;
    let h = header(bytes)?;
    let key = ed25519_dalek::SigningKey::from_bytes(secret);
    Ok(key.sign(&signed_message(&h.revision)).to_bytes())
}

/// The public key of a secret key's seed.
pub fn public_key(secret: &[u8; SECRET_KEY_LEN]) -> [u8; PUBLIC_KEY_LEN] {
    ed25519_dalek::SigningKey::from_bytes(secret)
        .verifying_key()
        .to_bytes()
}

/// Checks a detached signature of an artifact against a public key: the
/// revision id is recomputed first, then the signature over it verified.
///
/// # Errors
///
/// [`LoadErrorKind::Revision`] when the revision id does not match, or
/// [`LoadErrorKind::Signature`] when the signature was not made by the key
/// for this artifact.
pub fn verify_signature(
    bytes: &[u8],
    signature: &[u8; SIGNATURE_LEN],
    public: &[u8; PUBLIC_KEY_LEN],
) -> Result<(), LoadError> {
    verify_revision(bytes)?;
    let h = header(bytes)?;
    let refused = || {
        signature_error(
            "the artifact's signature was not made by the required key for this artifact: load an artifact signed with that key, or compile and sign it again",
        )
    };
    let key = ed25519_dalek::VerifyingKey::from_bytes(public).map_err(|_| refused())?;
    let sig = ed25519_dalek::Signature::from_bytes(signature);
    key.verify_strict(&signed_message(&h.revision), &sig)
        .map_err(|_| refused())
}

fn signed_message(revision: &[u8; 32]) -> Vec<u8> {
    let mut m = SIGNATURE_LABEL.to_vec();
    m.extend_from_slice(revision);
    m
}
