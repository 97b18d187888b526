//! [`Sealed`]: a [`Store`] whose records carry a tag made with a key the
//! store itself never holds.
//!
//! A shared store is one more place a permission can come from: a held
//! call in it is released as an allow, and a grant in it is applied as a
//! rule. Whoever can write to the store (a Redis reachable from another
//! host, a neighbour sharing its password) could otherwise write a call
//! as held, or a grant, and the engine would honour it. Sealed, each
//! record is kept as `tgs1 || tag || record`, the tag a keyed BLAKE3 hash
//! over the record *and where it is kept* (namespace, run and call, scope
//! and source, session and position), so a record written without the key
//! is refused, and a genuine one copied to another run, call, grant or
//! place in a session is refused as well. A refusal is
//! [`StoreError::Corrupt`]: every call it bears on is denied, as for any
//! record this version cannot read, and the repairs are the same (forget
//! the run, discard the unreadable grant records).
//!
//! What a tag cannot stop, since the store is the only memory replicas
//! share and a writer can roll it back:
//! * putting back, at its own place, a record this service sealed there
//!   before: a grant set since revoked or replaced (which allows again), a
//!   call since released (which a later release of the run answers again);
//! * deleting records: a pending call (left unanswered), a grant set (its
//!   rules gone, deny rules included), the newest actions of a session
//!   (its counts and totals lower);
//! * rewriting the reviewer history, which the store keeps as bare
//!   outcomes.
//!
//! A seal takes away forging and moving; rollback and deletion are for the
//! store's own access control (Redis ACLs, TLS, a network only the
//! replicas reach).

use std::fmt;
use std::sync::Arc;

use super::store::{Appended, Namespace, Pending, Store, StoreError};

/// What a sealed record starts with: the format's label and version.
const LABEL: &[u8; 4] = b"tgs1";
/// The tag's length: a BLAKE3 output.
const TAG: usize = 32;
/// What starts a grant record the seal refused, as handed to the state
/// layer: not JSON, so no reader takes it for a grant, and recognisable,
/// so the reason says why.
pub(crate) const REFUSED: &[u8] = b"\0toolgate-unsealed\0";

/// Why a record is refused.
const UNSEALED: &str = "its seal does not check with the state key: it was written by something that does not hold the key, copied from elsewhere in the store, or sealed with a key since retired";

/// Why a record handed back by [`Sealed`] was refused, when it was.
pub(crate) fn refused(bytes: &[u8]) -> Option<&'static str> {
    bytes.starts_with(REFUSED).then_some(UNSEALED)
}

/// A 256-bit key the replicas of one service share and the store never
/// sees.
///
/// ```
/// use toolgate::state::SealKey;
///
/// let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// assert!(SealKey::from_hex(hex).is_ok());
/// assert!(SealKey::from_hex("0011").is_err());
/// ```
#[derive(Clone)]
pub struct SealKey([u8; 32]);

/// A key shows as nothing: it is a secret.
impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// Why a key could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealKeyError(String);

impl fmt::Display for SealKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SealKeyError {}

impl SealKey {
    /// A key from 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        SealKey(bytes)
    }

    /// A key written as 64 hexadecimal digits (surrounding white space
    /// ignored). The error never repeats the text: it may be most of a key.
    pub fn from_hex(text: &str) -> Result<SealKey, SealKeyError> {
        let text = text.trim();
        let digits = text.as_bytes();
        let n = text.chars().count();
        if n != 64 {
            return Err(SealKeyError(format!(
                "a state key is 64 hexadecimal digits, and this one has {n} characters: make one with `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`"
            )));
        }
        if digits.len() != 64 {
            return Err(SealKeyError(
                "a state key is 64 hexadecimal digits, and this one holds another character: write it with 0-9 and a-f only".into(),
            ));
        }
        let mut key = [0u8; 32];
        for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
            let (Some(hi), Some(lo)) = (hex(pair.first()), hex(pair.get(1))) else {
                return Err(SealKeyError(
                    "a state key is 64 hexadecimal digits, and this one holds another character: write it with 0-9 and a-f only".into(),
                ));
            };
            *byte = hi << 4 | lo;
        }
        Ok(SealKey(key))
    }

    /// The keys of a key file: one key a line, in hexadecimal; blank lines
    /// and lines starting with `#` are skipped. The first key seals; every
    /// key opens. To rotate, add the new key below the current one on every
    /// replica; once all have it, move it to the top; once what the old key
    /// sealed has expired, remove the old one. (A replica that seals with a
    /// key another does not hold yet writes what that one refuses.)
    ///
    /// ```
    /// use toolgate::state::SealKey;
    ///
    /// let (current, retiring) = ("1".repeat(64), "2".repeat(64));
    /// let file = format!("# current, then retiring\n{current}\n\n{retiring}\n");
    /// assert_eq!(SealKey::parse_file(&file)?.len(), 2);
    /// assert!(SealKey::parse_file("# nothing\n").is_err());
    /// # Ok::<(), toolgate::state::SealKeyError>(())
    /// ```
    pub fn parse_file(text: &str) -> Result<Vec<SealKey>, SealKeyError> {
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            keys.push(
                SealKey::from_hex(line)
                    .map_err(|e| SealKeyError(format!("line {}: {e}", n + 1)))?,
            );
        }
        if keys.is_empty() {
            return Err(SealKeyError(
                "the state key file holds no key: write one key of 64 hexadecimal digits a line"
                    .into(),
            ));
        }
        Ok(keys)
    }
}

fn hex(digit: Option<&u8>) -> Option<u8> {
    match digit? {
        d @ b'0'..=b'9' => Some(d - b'0'),
        d @ b'a'..=b'f' => Some(d - b'a' + 10),
        d @ b'A'..=b'F' => Some(d - b'A' + 10),
        _ => None,
    }
}

/// Where a record is kept, which its tag covers: the same bytes under
/// another name are another record.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// A pending call: its run and id.
    Deferred(&'a str, &'a str),
    /// A grant record: its scope and source.
    Grant(&'a str, &'a str),
    /// An action of a session, and its position there (from 0).
    Action(&'a str, u64),
}

/// A [`Store`] that seals every record it writes into the store it wraps,
/// and opens every record it reads, refusing one whose tag does not check.
///
/// ```
/// use std::sync::Arc;
/// use toolgate::state::{MemoryStore, Namespace, SealKey, Sealed, Store, StoreError};
///
/// let inner = Arc::new(MemoryStore::new());
/// let key = SealKey::from_bytes([7; 32]);
/// let sealed = Sealed::new(inner.clone(), key);
/// let ns = Namespace::new("default", "policy");
///
/// sealed.defer(&ns, "run-1", "call-1", b"{\"a\":1}")?;
/// assert_eq!(sealed.pending(&ns, "run-1")?[0].record, b"{\"a\":1}");
///
/// // Written into the store by something without the key: refused.
/// inner.defer(&ns, "run-1", "call-2", b"{\"a\":2}")?;
/// assert!(matches!(sealed.pending(&ns, "run-1"), Err(StoreError::Corrupt(_))));
/// # Ok::<(), StoreError>(())
/// ```
pub struct Sealed {
    inner: Arc<dyn Store>,
    /// The key that seals first, then keys that still open.
    keys: Vec<SealKey>,
}

/// A sealed store shows as what it wraps, never its keys.
impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sealed({:?}, {} keys)", self.inner, self.keys.len())
    }
}

impl Sealed {
    /// Seal what goes into `inner` with `key`.
    pub fn new(inner: Arc<dyn Store>, key: SealKey) -> Sealed {
        Sealed {
            inner,
            keys: vec![key],
        }
    }

    /// Seal with the first of `keys` and open with any of them; `None`
    /// when there are none.
    pub fn with_keys(inner: Arc<dyn Store>, keys: Vec<SealKey>) -> Option<Sealed> {
        (!keys.is_empty()).then_some(Sealed { inner, keys })
    }

    fn tag(key: &SealKey, ns: &Namespace, place: Place<'_>, record: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&key.0);
        // Every field goes in with its length, so no two places and records
        // hash the same bytes.
        let mut field = |bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"toolgate state record");
        field(ns.tenant.as_bytes());
        field(ns.scope.as_bytes());
        match place {
            Place::Deferred(run, call) => {
                field(b"deferred");
                field(run.as_bytes());
                field(call.as_bytes());
            }
            Place::Grant(scope, source) => {
                field(b"grant");
                field(scope.as_bytes());
                field(source.as_bytes());
            }
            Place::Action(session, at) => {
                field(b"action");
                field(session.as_bytes());
                field(&at.to_le_bytes());
            }
        }
        field(record);
        h.finalize()
    }

    fn seal_with(key: &SealKey, ns: &Namespace, place: Place<'_>, record: &[u8]) -> Vec<u8> {
        let tag = Sealed::tag(key, ns, place, record);
        let mut out = Vec::with_capacity(LABEL.len() + TAG + record.len());
        out.extend_from_slice(LABEL);
        out.extend_from_slice(tag.as_bytes());
        out.extend_from_slice(record);
        out
    }

    fn seal(&self, ns: &Namespace, place: Place<'_>, record: &[u8]) -> Vec<u8> {
        // `with_keys` and `new` never leave the list empty; an empty one
        // would seal nothing, so it writes nothing readable either.
        match self.keys.first() {
            Some(key) => Sealed::seal_with(key, ns, place, record),
            None => REFUSED.to_vec(),
        }
    }

    /// The record inside `bytes` when some key's tag checks.
    fn open<'b>(&self, ns: &Namespace, place: Place<'_>, bytes: &'b [u8]) -> Option<&'b [u8]> {
        let rest = bytes.strip_prefix(LABEL.as_slice())?;
        let tag = rest.get(..TAG)?;
        let record = rest.get(TAG..)?;
        let tag = blake3::Hash::from_bytes(<[u8; TAG]>::try_from(tag).ok()?);
        // `Hash`'s equality takes the same time wherever the bytes differ.
        self.keys
            .iter()
            .any(|k| Sealed::tag(k, ns, place, record) == tag)
            .then_some(record)
    }

    fn open_or_refuse(
        &self,
        ns: &Namespace,
        place: Place<'_>,
        bytes: &[u8],
    ) -> Result<Vec<u8>, StoreError> {
        self.open(ns, place, bytes)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| StoreError::Corrupt(refusal(place)))
    }

    fn open_pending(
        &self,
        ns: &Namespace,
        run: &str,
        pending: Vec<Pending>,
    ) -> Result<Vec<Pending>, StoreError> {
        pending
            .into_iter()
            .map(|p| {
                let record =
                    self.open_or_refuse(ns, Place::Deferred(run, &p.call_id), &p.record)?;
                Ok(Pending {
                    call_id: p.call_id,
                    record,
                })
            })
            .collect()
    }

    fn open_actions(
        &self,
        ns: &Namespace,
        session: &str,
        actions: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        actions
            .iter()
            .enumerate()
            .map(|(at, a)| self.open_or_refuse(ns, Place::Action(session, at as u64), a))
            .collect()
    }
}

/// The reason a record was refused, naming where it was kept.
fn refusal(place: Place<'_>) -> String {
    let shown = crate::json::shown;
    match place {
        Place::Deferred(run, call) => format!(
            "the pending call `{}` of the run `{}`: {UNSEALED}; forget the run to drop it",
            shown(call),
            shown(run)
        ),
        Place::Grant(scope, source) => format!(
            "the grant record of `{}` under the scope `{}`: {UNSEALED}; discard the unreadable grant records to remove it",
            shown(source),
            shown(scope)
        ),
        Place::Action(session, at) => format!(
            "action {} of the session `{}`: {UNSEALED}; start a new session, or remove this one from the store",
            at + 1,
            shown(session)
        ),
    }
}

impl Store for Sealed {
    fn defer(
        &self,
        ns: &Namespace,
        run: &str,
        call_id: &str,
        record: &[u8],
    ) -> Result<(), StoreError> {
        let sealed = self.seal(ns, Place::Deferred(run, call_id), record);
        self.inner.defer(ns, run, call_id, &sealed)
    }

    fn pending(&self, ns: &Namespace, run: &str) -> Result<Vec<Pending>, StoreError> {
        let pending = self.inner.pending(ns, run)?;
        self.open_pending(ns, run, pending)
    }

    fn take(
        &self,
        ns: &Namespace,
        run: &str,
        call_ids: &[&str],
    ) -> Result<Vec<Pending>, StoreError> {
        // The state layer reads a run's records (`pending`) before it takes
        // them, so a refused record stops the release before this. Only a
        // record replaced in between is refused here, after the store took
        // the run's calls: they are then gone unanswered, which fails
        // closed (nothing runs) but is not "nothing taken".
        let taken = self.inner.take(ns, run, call_ids)?;
        self.open_pending(ns, run, taken)
    }

    fn forget(&self, ns: &Namespace, run: &str) -> Result<usize, StoreError> {
        self.inner.forget(ns, run)
    }

    fn runs(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        self.inner.runs(ns)
    }

    fn put_grant(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<(), StoreError> {
        let sealed = self.seal(ns, Place::Grant(scope, source), record);
        self.inner.put_grant(ns, scope, source, &sealed)
    }

    fn remove_grant(&self, ns: &Namespace, scope: &str, source: &str) -> Result<bool, StoreError> {
        self.inner.remove_grant(ns, scope, source)
    }

    fn remove_grant_if(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<bool, StoreError> {
        // An opened record was sealed by one of the keys, and sealing is
        // deterministic: one of them gives back the stored bytes.
        for key in &self.keys {
            let sealed = Sealed::seal_with(key, ns, Place::Grant(scope, source), record);
            if self.inner.remove_grant_if(ns, scope, source, &sealed)? {
                return Ok(true);
            }
        }
        // A refused record came back as it was stored, behind the mark (a
        // genuine record that happens to start with the mark was tried
        // above).
        match record.strip_prefix(REFUSED) {
            Some(stored) => self.inner.remove_grant_if(ns, scope, source, stored),
            None => Ok(false),
        }
    }

    fn grants(&self, ns: &Namespace) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
        // A refused grant record is handed on marked, not dropped: dropping
        // it could drop a set's deny rules, and the layer's reading of an
        // unreadable grant (every call denied until it is discarded) is
        // already the answer.
        Ok(self
            .inner
            .grants(ns)?
            .into_iter()
            .map(|(scope, source, bytes)| {
                let record = match self.open(ns, Place::Grant(&scope, &source), &bytes) {
                    Some(r) => r.to_vec(),
                    None => [REFUSED, bytes.as_slice()].concat(),
                };
                (scope, source, record)
            })
            .collect())
    }

    fn discard_unnamed_grants(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        self.inner.discard_unnamed_grants(ns)
    }

    fn review(
        &self,
        ns: &Namespace,
        key: &str,
        refused: bool,
        window: usize,
    ) -> Result<Vec<bool>, StoreError> {
        self.inner.review(ns, key, refused, window)
    }

    fn reset_reviews(&self, ns: &Namespace, key: &str) -> Result<(), StoreError> {
        self.inner.reset_reviews(ns, key)
    }

    fn history(&self, ns: &Namespace, session: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let actions = self.inner.history(ns, session)?;
        self.open_actions(ns, session, actions)
    }

    fn append_if(
        &self,
        ns: &Namespace,
        session: &str,
        expected: usize,
        action: &[u8],
    ) -> Result<Appended, StoreError> {
        let sealed = self.seal(ns, Place::Action(session, expected as u64), action);
        match self.inner.append_if(ns, session, expected, &sealed)? {
            Appended::Done => Ok(Appended::Done),
            Appended::Stale(actions) => {
                Ok(Appended::Stale(self.open_actions(ns, session, actions)?))
            }
        }
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::MemoryStore;

    fn ns() -> Namespace {
        Namespace::new("t", "s")
    }

    #[test]
    fn a_key_error_names_the_line_and_never_the_key() {
        let secret = "ab".repeat(31) + "zz";
        let file = format!("# state key\n\n{secret}\n");
        let err = SealKey::parse_file(&file).err().map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.starts_with("line 3: "), "{err}");
        assert!(err.contains("0-9 and a-f"), "{err}");
        assert!(!err.contains(&secret[..8]), "{err}");
        let short = SealKey::parse_file("abcd\n").err().map(|e| e.to_string());
        assert!(short.unwrap_or_default().contains("has 4 characters"));
        let wide = "a".repeat(63) + "é";
        let wide = SealKey::from_hex(&wide).err().map(|e| e.to_string());
        assert!(wide.unwrap_or_default().contains("another character"));
        assert_eq!(format!("{:?}", SealKey::from_bytes([1; 32])), "SealKey(..)");
        let upper = "AB".repeat(32);
        assert!(SealKey::from_hex(&upper).is_ok());
    }

    #[test]
    fn a_grant_sealed_with_a_listed_older_key_is_removed_by_compare_and_remove() {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let old = Sealed::new(Arc::clone(&inner), SealKey::from_bytes([1; 32]));
        old.put_grant(&ns(), "c", "s", b"rec").ok();
        let both = Sealed::with_keys(
            Arc::clone(&inner),
            vec![SealKey::from_bytes([2; 32]), SealKey::from_bytes([1; 32])],
        );
        let Some(both) = both else {
            panic!("two keys make a store");
        };
        let read = both.grants(&ns()).unwrap_or_default();
        assert_eq!(read, [("c".into(), "s".into(), b"rec".to_vec())]);
        assert_eq!(both.remove_grant_if(&ns(), "c", "s", b"other"), Ok(false));
        assert_eq!(both.remove_grant_if(&ns(), "c", "s", b"rec"), Ok(true));
        assert_eq!(inner.grants(&ns()).map(|g| g.len()), Ok(0));
    }

    #[test]
    fn a_refused_grant_is_handed_on_marked_and_removed_as_it_was_stored() {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let sealed = Sealed::new(Arc::clone(&inner), SealKey::from_bytes([1; 32]));
        inner.put_grant(&ns(), "c", "s", b"{\"v\":1}").ok();
        let read = sealed.grants(&ns()).unwrap_or_default();
        let Some((_, _, record)) = read.first() else {
            panic!("the refused record was dropped");
        };
        assert!(refused(record).is_some());
        assert_eq!(sealed.remove_grant_if(&ns(), "c", "s", record), Ok(true));
        assert_eq!(inner.grants(&ns()).map(|g| g.len()), Ok(0));
    }

    #[test]
    fn a_genuine_grant_that_starts_like_the_mark_is_still_removed() {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let sealed = Sealed::new(Arc::clone(&inner), SealKey::from_bytes([1; 32]));
        let record = [REFUSED, b"and more"].concat();
        sealed.put_grant(&ns(), "c", "s", &record).ok();
        let read = sealed.grants(&ns()).unwrap_or_default();
        assert_eq!(read, [("c".into(), "s".into(), record.clone())]);
        assert_eq!(sealed.remove_grant_if(&ns(), "c", "s", &record), Ok(true));
        assert_eq!(inner.grants(&ns()).map(|g| g.len()), Ok(0));
    }

    #[test]
    fn an_action_is_bound_to_its_place_in_the_session() {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let sealed = Sealed::new(Arc::clone(&inner), SealKey::from_bytes([1; 32]));
        assert_eq!(sealed.append_if(&ns(), "s", 0, b"a"), Ok(Appended::Done));
        assert_eq!(sealed.append_if(&ns(), "s", 1, b"b"), Ok(Appended::Done));
        assert_eq!(
            sealed.history(&ns(), "s"),
            Ok(vec![b"a".to_vec(), b"b".to_vec()])
        );
        // A stale append hands back the session opened.
        assert_eq!(
            sealed.append_if(&ns(), "s", 1, b"c"),
            Ok(Appended::Stale(vec![b"a".to_vec(), b"b".to_vec()]))
        );
        // The first action copied into the third place is refused, and
        // so is every later read of the session.
        let kept = inner.history(&ns(), "s").unwrap_or_default();
        if let Some(first) = kept.first() {
            inner.append_if(&ns(), "s", 2, first).ok();
        }
        let err = sealed.history(&ns(), "s");
        assert!(
            matches!(&err, Err(StoreError::Corrupt(why)) if why.starts_with("action 3 of the session `s`")),
            "{err:?}"
        );
        assert!(matches!(
            sealed.append_if(&ns(), "s", 2, b"d"),
            Err(StoreError::Corrupt(_))
        ));
    }
}
