//! The one suite every [`Store`] passes: the memory store in the library's
//! tests, the Redis store against a real server. Each check names the
//! store it ran on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolgate::state::{Appended, Namespace, Store, StoreError};

/// A namespace no earlier run of the suite used on a shared server.
pub fn fresh(tenant: &str) -> Namespace {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Namespace::new(
        format!(
            "{tenant}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ),
        "suite:scope",
    )
}

/// Runs every check of the suite on `store`.
pub fn suite(store: &Arc<dyn Store>) -> Result<(), StoreError> {
    deferred_calls_keep_order_and_are_taken_once(store.as_ref())?;
    namespaces_are_apart(store.as_ref())?;
    grants_are_kept_per_scope_and_source(store.as_ref())?;
    reviews_return_the_window(store.as_ref())?;
    append_if_is_compare_and_append(store.as_ref())?;
    concurrent_appends_admit_each_length_once(store)?;
    concurrent_takes_answer_a_call_once(store)?;
    store.ping()
}

fn deferred_calls_keep_order_and_are_taken_once(s: &dyn Store) -> Result<(), StoreError> {
    let ns = fresh("defer");
    s.defer(&ns, "r:1", "b", b"1")?;
    s.defer(&ns, "r:1", "a", b"2")?;
    // A second defer of `b` replaces its record and keeps its place.
    s.defer(&ns, "r:1", "b", b"3")?;
    s.defer(&ns, "r2", "c", b"")?;
    let got: Vec<(String, Vec<u8>)> = s
        .pending(&ns, "r:1")?
        .into_iter()
        .map(|p| (p.call_id, p.record))
        .collect();
    assert_eq!(
        got,
        vec![("b".into(), b"3".to_vec()), ("a".into(), b"2".to_vec())]
    );
    assert_eq!(s.runs(&ns)?, vec!["r2".to_string(), "r:1".to_string()]);
    let taken = s.take(&ns, "r:1", &["a", "zz"])?;
    assert_eq!(taken.len(), 1);
    assert_eq!(taken.first().map(|p| p.call_id.as_str()), Some("a"));
    assert!(
        s.take(&ns, "r:1", &["a"])?.is_empty(),
        "a call is answered once"
    );
    assert_eq!(s.take(&ns, "r:1", &[])?.len(), 1);
    assert_eq!(
        s.runs(&ns)?,
        vec!["r2".to_string()],
        "an emptied run is gone"
    );
    assert!(s.pending(&ns, "r:1")?.is_empty());
    assert_eq!(s.forget(&ns, "r2")?, 1);
    assert_eq!(s.forget(&ns, "r2")?, 0);
    assert!(s.runs(&ns)?.is_empty());
    Ok(())
}

fn namespaces_are_apart(s: &dyn Store) -> Result<(), StoreError> {
    let a = fresh("a");
    let b = Namespace::new(a.tenant.clone(), "other");
    s.defer(&a, "r", "x", b"")?;
    s.append_if(&a, "s", 0, b"x")?;
    s.put_grant(&a, "", "src", b"g")?;
    assert!(s.runs(&b)?.is_empty());
    assert!(s.history(&b, "s")?.is_empty());
    assert!(s.grants(&b)?.is_empty());
    // A run and a session of the same name are different things.
    assert!(s.history(&a, "r")?.is_empty());
    Ok(())
}

fn grants_are_kept_per_scope_and_source(s: &dyn Store) -> Result<(), StoreError> {
    let ns = fresh("grants");
    s.put_grant(&ns, "conv:2", "skill", b"2")?;
    s.put_grant(&ns, "", "skill", b"1")?;
    s.put_grant(&ns, "", "skill", b"1b")?;
    assert_eq!(
        s.grants(&ns)?,
        vec![
            (String::new(), "skill".into(), b"1b".to_vec()),
            ("conv:2".into(), "skill".into(), b"2".to_vec()),
        ]
    );
    assert!(s.remove_grant(&ns, "conv:2", "skill")?);
    assert!(!s.remove_grant(&ns, "conv:2", "skill")?);
    assert_eq!(s.grants(&ns)?.len(), 1);
    Ok(())
}

fn reviews_return_the_window(s: &dyn Store) -> Result<(), StoreError> {
    let ns = fresh("reviews");
    for i in 0..5 {
        s.review(&ns, "k", i % 2 == 0, 3)?;
    }
    assert_eq!(s.review(&ns, "k", true, 3)?, vec![false, true, true]);
    assert_eq!(s.review(&ns, "k", false, 50)?.len(), 7);
    assert!(s.review(&ns, "k", false, 0)?.is_empty());
    s.reset_reviews(&ns, "k")?;
    assert_eq!(s.review(&ns, "k", false, 3)?, vec![false]);
    Ok(())
}

fn append_if_is_compare_and_append(s: &dyn Store) -> Result<(), StoreError> {
    let ns = fresh("append");
    assert_eq!(s.append_if(&ns, "s", 0, b"a")?, Appended::Done);
    assert_eq!(
        s.append_if(&ns, "s", 0, b"b")?,
        Appended::Stale(vec![b"a".to_vec()])
    );
    assert_eq!(
        s.append_if(&ns, "s", 2, b"b")?,
        Appended::Stale(vec![b"a".to_vec()])
    );
    assert_eq!(s.append_if(&ns, "s", 1, b"b")?, Appended::Done);
    assert_eq!(s.history(&ns, "s")?, vec![b"a".to_vec(), b"b".to_vec()]);
    Ok(())
}

/// Threads race to append at every length: each length is taken by
/// exactly one of them.
fn concurrent_appends_admit_each_length_once(s: &Arc<dyn Store>) -> Result<(), StoreError> {
    let ns = fresh("race");
    const THREADS: usize = 4;
    const PER: usize = 25;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (s, ns) = (Arc::clone(s), ns.clone());
            std::thread::spawn(move || -> Result<usize, StoreError> {
                let mut done = 0;
                let mut len = 0;
                // Bounded: each try either appends or learns a longer
                // history; at most THREADS * PER appends happen in all.
                for _ in 0..THREADS * PER * 4 {
                    if done == PER {
                        break;
                    }
                    match s.append_if(&ns, "s", len, format!("{t}").as_bytes())? {
                        Appended::Done => {
                            done += 1;
                            len += 1;
                        }
                        Appended::Stale(h) => len = h.len(),
                    }
                }
                Ok(done)
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h
            .join()
            .map_err(|_| StoreError::Unavailable("a racing thread panicked".into()))??;
    }
    assert_eq!(total, THREADS * PER);
    assert_eq!(s.history(&ns, "s")?.len(), THREADS * PER);
    Ok(())
}

fn concurrent_takes_answer_a_call_once(s: &Arc<dyn Store>) -> Result<(), StoreError> {
    let ns = fresh("takes");
    const CALLS: usize = 20;
    for i in 0..CALLS {
        s.defer(&ns, "r", &format!("c{i}"), b"")?;
    }
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (s, ns) = (Arc::clone(s), ns.clone());
            std::thread::spawn(move || -> Result<usize, StoreError> {
                let mut n = 0;
                for i in 0..CALLS {
                    n += s.take(&ns, "r", &[format!("c{i}").as_str()])?.len();
                }
                Ok(n)
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h
            .join()
            .map_err(|_| StoreError::Unavailable("a racing thread panicked".into()))??;
    }
    assert_eq!(total, CALLS, "every call taken exactly once");
    assert!(s.runs(&ns)?.is_empty());
    Ok(())
}
