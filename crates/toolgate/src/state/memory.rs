//! [`MemoryStore`]: the store of one process, the default.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use super::store::{Appended, Namespace, Pending, Store, StoreError};

/// A [`Store`] in this process's memory: nothing to start, nothing shared.
/// One lock guards everything, so each method is atomic as the trait asks.
///
/// ```
/// use toolgate::state::{MemoryStore, Namespace, Store};
///
/// let store = MemoryStore::new();
/// let ns = Namespace::new("default", "policy");
/// store.defer(&ns, "run-1", "call-1", b"{}").unwrap();
/// assert_eq!(store.runs(&ns).unwrap(), vec!["run-1".to_string()]);
/// assert_eq!(store.take(&ns, "run-1", &["call-1"]).unwrap().len(), 1);
/// assert!(store.take(&ns, "run-1", &["call-1"]).unwrap().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<HashMap<Namespace, Tenant>>,
}

#[derive(Debug, Default)]
struct Tenant {
    runs: BTreeMap<String, Vec<Pending>>,
    grants: BTreeMap<(String, String), Vec<u8>>,
    reviews: HashMap<String, VecDeque<bool>>,
    sessions: HashMap<String, Vec<Vec<u8>>>,
}

/// Reviews kept per key: the denial bound never looks further back.
const REVIEWS_KEPT: usize = 1024;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn with<T>(&self, ns: &Namespace, f: impl FnOnce(&mut Tenant) -> T) -> Result<T, StoreError> {
        let mut guard = self.lock()?;
        // Only a new namespace's names are copied.
        if let Some(t) = guard.get_mut(ns) {
            return Ok(f(t));
        }
        Ok(f(guard.entry(ns.clone()).or_default()))
    }

    fn lock(&self) -> Result<MutexGuard<'_, HashMap<Namespace, Tenant>>, StoreError> {
        // A poisoned lock means a panic mid-update: the state may be half
        // written, so the store answers as unavailable and every decision
        // that needs it is denied.
        self.inner
            .lock()
            .map_err(|_| StoreError::Unavailable("a writer of the memory store panicked".into()))
    }
}

impl Store for MemoryStore {
    fn defer(
        &self,
        ns: &Namespace,
        run: &str,
        call_id: &str,
        record: &[u8],
    ) -> Result<(), StoreError> {
        self.with(ns, |t| {
            let calls = t.runs.entry(run.to_string()).or_default();
            match calls.iter_mut().find(|p| p.call_id == call_id) {
                Some(p) => p.record = record.to_vec(),
                None => calls.push(Pending {
                    call_id: call_id.to_string(),
                    record: record.to_vec(),
                }),
            }
        })
    }

    fn pending(&self, ns: &Namespace, run: &str) -> Result<Vec<Pending>, StoreError> {
        self.with(ns, |t| t.runs.get(run).cloned().unwrap_or_default())
    }

    fn take(
        &self,
        ns: &Namespace,
        run: &str,
        call_ids: &[&str],
    ) -> Result<Vec<Pending>, StoreError> {
        self.with(ns, |t| {
            let Some(calls) = t.runs.get_mut(run) else {
                return Vec::new();
            };
            let (taken, kept): (Vec<Pending>, Vec<Pending>) = std::mem::take(calls)
                .into_iter()
                .partition(|p| call_ids.is_empty() || call_ids.contains(&p.call_id.as_str()));
            if kept.is_empty() {
                t.runs.remove(run);
            } else {
                *calls = kept;
            }
            taken
        })
    }

    fn forget(&self, ns: &Namespace, run: &str) -> Result<usize, StoreError> {
        self.with(ns, |t| t.runs.remove(run).map_or(0, |c| c.len()))
    }

    fn runs(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        self.with(ns, |t| t.runs.keys().cloned().collect())
    }

    fn put_grant(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<(), StoreError> {
        self.with(ns, |t| {
            t.grants
                .insert((scope.to_string(), source.to_string()), record.to_vec());
        })
    }

    fn remove_grant(&self, ns: &Namespace, scope: &str, source: &str) -> Result<bool, StoreError> {
        self.with(ns, |t| {
            t.grants
                .remove(&(scope.to_string(), source.to_string()))
                .is_some()
        })
    }

    fn remove_grant_if(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<bool, StoreError> {
        self.with(ns, |t| {
            let key = (scope.to_string(), source.to_string());
            let same = t.grants.get(&key).is_some_and(|r| r.as_slice() == record);
            if same {
                t.grants.remove(&key);
            }
            same
        })
    }

    fn grants(&self, ns: &Namespace) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
        self.with(ns, |t| {
            t.grants
                .iter()
                .map(|((scope, source), r)| (scope.clone(), source.clone(), r.clone()))
                .collect()
        })
    }

    fn review(
        &self,
        ns: &Namespace,
        key: &str,
        refused: bool,
        window: usize,
    ) -> Result<Vec<bool>, StoreError> {
        self.with(ns, |t| {
            let h = t.reviews.entry(key.to_string()).or_default();
            h.push_back(refused);
            while h.len() > REVIEWS_KEPT.max(window) {
                h.pop_front();
            }
            let skip = h.len().saturating_sub(window);
            h.iter().skip(skip).copied().collect()
        })
    }

    fn reset_reviews(&self, ns: &Namespace, key: &str) -> Result<(), StoreError> {
        self.with(ns, |t| {
            t.reviews.remove(key);
        })
    }

    fn history(&self, ns: &Namespace, session: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        self.with(ns, |t| t.sessions.get(session).cloned().unwrap_or_default())
    }

    fn append_if(
        &self,
        ns: &Namespace,
        session: &str,
        expected: usize,
        action: &[u8],
    ) -> Result<Appended, StoreError> {
        let append = |h: &mut Vec<Vec<u8>>| {
            if h.len() == expected {
                h.push(action.to_vec());
                Appended::Done
            } else {
                Appended::Stale(h.clone())
            }
        };
        self.with(ns, |t| match t.sessions.get_mut(session) {
            Some(h) => append(h),
            // Only a new session's name is copied.
            None => append(t.sessions.entry(session.to_string()).or_default()),
        })
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.lock().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_call_is_taken_once_and_in_the_order_it_was_deferred() -> Result<(), StoreError> {
        let s = MemoryStore::new();
        let ns = Namespace::new("t", "p");
        s.defer(&ns, "r", "b", b"1")?;
        s.defer(&ns, "r", "a", b"2")?;
        s.defer(&ns, "r", "b", b"3")?;
        let all = s.pending(&ns, "r")?;
        assert_eq!(
            all.iter()
                .map(|p| (p.call_id.as_str(), p.record.as_slice()))
                .collect::<Vec<_>>(),
            vec![("b", &b"3"[..]), ("a", &b"2"[..])]
        );
        assert_eq!(s.take(&ns, "r", &["a"])?.len(), 1);
        assert!(s.take(&ns, "r", &["a"])?.is_empty());
        assert_eq!(s.runs(&ns)?, vec!["r".to_string()]);
        assert_eq!(s.take(&ns, "r", &[])?.len(), 1);
        assert!(s.runs(&ns)?.is_empty());
        // Another namespace sees none of it.
        s.defer(&ns, "r", "x", b"")?;
        assert!(s.runs(&Namespace::new("u", "p"))?.is_empty());
        assert_eq!(s.forget(&ns, "r")?, 1);
        Ok(())
    }

    #[test]
    fn append_if_appends_only_on_the_history_it_was_decided_on() -> Result<(), StoreError> {
        let s = MemoryStore::new();
        let ns = Namespace::new("t", "p");
        assert_eq!(s.append_if(&ns, "s", 0, b"a")?, Appended::Done);
        assert_eq!(
            s.append_if(&ns, "s", 0, b"b")?,
            Appended::Stale(vec![b"a".to_vec()])
        );
        assert_eq!(s.append_if(&ns, "s", 1, b"b")?, Appended::Done);
        assert_eq!(s.history(&ns, "s")?, vec![b"a".to_vec(), b"b".to_vec()]);
        Ok(())
    }

    #[test]
    fn reviews_return_the_window_with_the_new_outcome() -> Result<(), StoreError> {
        let s = MemoryStore::new();
        let ns = Namespace::new("t", "p");
        for i in 0..5 {
            s.review(&ns, "k", i % 2 == 0, 3)?;
        }
        assert_eq!(s.review(&ns, "k", true, 3)?, vec![false, true, true]);
        s.reset_reviews(&ns, "k")?;
        assert_eq!(s.review(&ns, "k", false, 3)?, vec![false]);
        Ok(())
    }

    #[test]
    fn grants_are_kept_per_scope_and_source() -> Result<(), StoreError> {
        let s = MemoryStore::new();
        let ns = Namespace::new("t", "p");
        s.put_grant(&ns, "", "skill", b"1")?;
        s.put_grant(&ns, "conv", "skill", b"2")?;
        assert_eq!(s.grants(&ns)?.len(), 2);
        assert!(s.remove_grant(&ns, "conv", "skill")?);
        assert!(!s.remove_grant(&ns, "conv", "skill")?);
        assert_eq!(
            s.grants(&ns)?,
            vec![(String::new(), "skill".into(), b"1".to_vec())]
        );
        Ok(())
    }
}
