//! The state layer over the immutable engine, on the memory store: every
//! behaviour of `toolgate_testing::supervisor` (deferred calls and their
//! release, reviewers and the denial bound, "always allow", policy swaps,
//! hooks, observers and the record), which `toolgate-redis` runs on Redis
//! too, and what happens when the store fails.
#![allow(clippy::indexing_slicing)]

use std::sync::Arc;

use toolgate::state::{Answer, MemoryStore, Namespace, Pending, StateError, Store, StoreError};
use toolgate::{Decision, RuleDecl};
use toolgate_testing::supervisor::{bash, call, on};

/// One memory store, each handle on it another replica's.
fn memory() -> Option<(impl Fn() -> Arc<dyn Store>, ())> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    Some((move || Arc::clone(&store), ()))
}

toolgate_testing::supervisor_suite!(memory());

/// A store that answers until it is switched off.
struct Flaky {
    inner: MemoryStore,
    down: std::sync::atomic::AtomicBool,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Unavailable("connection refused".into()));
        }
        Ok(())
    }
}

impl Store for Flaky {
    fn defer(&self, ns: &Namespace, run: &str, id: &str, rec: &[u8]) -> Result<(), StoreError> {
        self.check()?;
        self.inner.defer(ns, run, id, rec)
    }
    fn pending(&self, ns: &Namespace, run: &str) -> Result<Vec<Pending>, StoreError> {
        self.check()?;
        self.inner.pending(ns, run)
    }
    fn take(&self, ns: &Namespace, run: &str, ids: &[&str]) -> Result<Vec<Pending>, StoreError> {
        self.check()?;
        self.inner.take(ns, run, ids)
    }
    fn forget(&self, ns: &Namespace, run: &str) -> Result<usize, StoreError> {
        self.check()?;
        self.inner.forget(ns, run)
    }
    fn runs(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        self.check()?;
        self.inner.runs(ns)
    }
    fn put_grant(&self, ns: &Namespace, s: &str, src: &str, r: &[u8]) -> Result<(), StoreError> {
        self.check()?;
        self.inner.put_grant(ns, s, src, r)
    }
    fn remove_grant(&self, ns: &Namespace, s: &str, src: &str) -> Result<bool, StoreError> {
        self.check()?;
        self.inner.remove_grant(ns, s, src)
    }
    fn remove_grant_if(
        &self,
        ns: &Namespace,
        s: &str,
        src: &str,
        r: &[u8],
    ) -> Result<bool, StoreError> {
        self.check()?;
        self.inner.remove_grant_if(ns, s, src, r)
    }
    fn grants(&self, ns: &Namespace) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
        self.check()?;
        self.inner.grants(ns)
    }
    fn review(&self, ns: &Namespace, k: &str, r: bool, w: usize) -> Result<Vec<bool>, StoreError> {
        self.check()?;
        self.inner.review(ns, k, r, w)
    }
    fn reset_reviews(&self, ns: &Namespace, k: &str) -> Result<(), StoreError> {
        self.check()?;
        self.inner.reset_reviews(ns, k)
    }
    fn history(&self, ns: &Namespace, s: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        self.check()?;
        self.inner.history(ns, s)
    }
    fn append_if(
        &self,
        ns: &Namespace,
        s: &str,
        n: usize,
        a: &[u8],
    ) -> Result<toolgate::state::Appended, StoreError> {
        self.check()?;
        self.inner.append_if(ns, s, n, a)
    }
    fn ping(&self) -> Result<(), StoreError> {
        self.check()
    }
}

#[test]
fn an_unreachable_store_denies_every_call_and_never_allows() -> toolgate_testing::supervisor::R {
    let flaky = Arc::new(Flaky {
        inner: MemoryStore::new(),
        down: std::sync::atomic::AtomicBool::new(false),
    });
    let sup = on(
        Arc::clone(&flaky) as Arc<dyn Store>,
        Namespace::new("default", "test"),
    )?;
    flaky.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let v = sup.decide_batch(
        1,
        &[bash("r", "a", "git status"), bash("r", "b", "git push")],
    );
    for v in &v {
        assert_eq!(v.decision, Decision::Deny);
        assert!(
            v.reason.contains("state store cannot be reached"),
            "{}",
            v.reason
        );
    }
    assert_eq!(
        sup.decide_nested(1, &call("r", "n", "read", "{}"), "a")
            .decision,
        Decision::Deny
    );
    assert!(matches!(
        sup.release("r", &[Answer::approve("b")]),
        Err(StateError::Store(StoreError::Unavailable(_)))
    ));
    assert!(sup.grant("local", &RuleDecl::new("read", None)).is_err());
    // Back up: decisions recover without a restart.
    flaky.down.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        sup.decide_batch(1, &[call("r", "c", "read", "{}")])[0].decision,
        Decision::Allow
    );
    Ok(())
}
