//! Authensor sessions kept by toolgate: an envelope whose `session` names a
//! `sessionId` and no `actions` is decided on the history a [`Store`]
//! keeps, and an allowed action is appended to it in the same step.
//!
//! Atomicity without a lock: the decision is made on a history of length
//! `n`, and the action is appended with [`Store::append_if`]`(n)`, which
//! appends only if the session still has `n` actions. When another replica
//! appended first, the store answers with the session as it stands and the
//! decision is made again on it, at most [`MAX_ATTEMPTS`] times, then
//! denied. So two replicas deciding the same session at once never both
//! admit the last action `maxActions` allows, nor both spend the last of a
//! budget.
//!
//! Each replica remembers the last history it saw of each session. The
//! common case (this replica decided the session's last action, or the
//! session is new) is decided on that copy and costs one call to the
//! store, the `append_if`; a stale copy costs one more, which returns the
//! history. A decision that is not an allow on a remembered copy is made
//! again on the store's history before it is answered, since only an
//! `append_if` proves a copy current.

use super::{AuthensorEngine, AuthensorResult, Effect, Envelope, Session, MAX_HISTORY};
use crate::state::{Appended, Namespace, Store, StoreError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// How many times a decision is made on a session another writer keeps
/// changing before it is denied.
pub const MAX_ATTEMPTS: usize = 8;

/// The most sessions whose history one replica remembers; past it the
/// memory is dropped (a miss only costs a round trip).
const CACHED_SESSIONS: usize = 4096;

/// One action as the store keeps it: its type, its own `riskScore` and its
/// declared cost (`constraints.maxAmount` and `constraints.currency`).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredAction {
    /// `action`.
    pub action_type: String,
    /// The envelope's `riskScore` (0 when absent).
    pub risk_score: f64,
    /// `constraints.maxAmount`, when a number.
    pub cost: Option<f64>,
    /// `constraints.currency`, when a string.
    pub currency: Option<String>,
}

impl StoredAction {
    /// The action `env` proposes.
    pub fn of(env: &Envelope) -> StoredAction {
        StoredAction {
            action_type: env.action().to_string(),
            risk_score: env.risk_score(),
            cost: cost(env),
            currency: currency(env),
        }
    }

    /// The record the store keeps: `a1`, the type, the score, the cost
    /// (empty when none) and the currency (`=` and its text, or empty),
    /// separated by tabs. An action type holds no control character (the
    /// envelope's reader refuses one), and the currency comes last, so any
    /// text it holds reads back.
    pub fn to_record(&self) -> Vec<u8> {
        use std::io::Write;
        let mut out = Vec::with_capacity(self.action_type.len() + 16);
        out.extend_from_slice(b"a1\t");
        out.extend_from_slice(self.action_type.as_bytes());
        out.push(b'\t');
        // Most actions carry no score: `0` as `Display` writes +0.0,
        // without going through the formatter.
        if self.risk_score.to_bits() == 0 {
            out.push(b'0');
        } else {
            let _ = write!(out, "{}", self.risk_score);
        }
        out.push(b'\t');
        if let Some(c) = self.cost {
            let _ = write!(out, "{c}");
        }
        out.push(b'\t');
        if let Some(c) = &self.currency {
            out.push(b'=');
            out.extend_from_slice(c.as_bytes());
        }
        out
    }

    /// Reads a record [`StoredAction::to_record`] wrote.
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] for any other bytes.
    pub fn from_record(record: &[u8]) -> Result<StoredAction, StoreError> {
        let bad = || StoreError::Corrupt("a session action is not an `a1` record".into());
        let text = std::str::from_utf8(record).map_err(|_| bad())?;
        let mut f = text.splitn(5, '\t');
        if f.next() != Some("a1") {
            return Err(bad());
        }
        let action_type = f.next().ok_or_else(bad)?.to_string();
        let risk_score = f.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
        let cost = match f.next().ok_or_else(bad)? {
            "" => None,
            c => Some(c.parse().map_err(|_| bad())?),
        };
        let currency = match f.next().ok_or_else(bad)? {
            "" => None,
            c => Some(c.strip_prefix('=').ok_or_else(bad)?.to_string()),
        };
        Ok(StoredAction {
            action_type,
            risk_score,
            cost,
            currency,
        })
    }
}

fn cost(env: &Envelope) -> Option<f64> {
    crate::conditions::value::member(env.value(), "constraints")
        .and_then(|c| c.get("maxAmount"))
        .and_then(Value::as_f64)
}

fn currency(env: &Envelope) -> Option<String> {
    crate::conditions::value::member(env.value(), "constraints")
        .and_then(|c| c.get("currency"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Decides envelopes whose sessions a [`Store`] keeps, remembering the last
/// history this replica saw of each.
///
/// ```
/// use toolgate::authensor::{AuthensorEngine, Effect, Envelope, KeptSessions, Policies};
/// use toolgate::state::{MemoryStore, Namespace};
///
/// let engine = AuthensorEngine::build(&Policies::from_json(r#"{"id": "p",
///   "rules": [{"effect": "allow"}], "sessionRules": {"maxActions": 2}}"#)?)?;
/// let (store, ns, sessions) = (MemoryStore::new(), Namespace::new("t", "p"), KeptSessions::new());
/// let env = Envelope::from_json(r#"{"action": "file.read", "resource": "/tmp/x",
///   "principalId": "agent-1", "session": {"sessionId": "s1"}}"#)?;
/// let outcomes: Vec<Effect> =
///     (0..3).map(|_| sessions.decide(&engine, &store, &ns, &env).outcome).collect();
/// assert_eq!(outcomes, [Effect::Allow, Effect::Allow, Effect::Deny]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct KeptSessions {
    seen: Mutex<Seen>,
}

/// The histories remembered, per namespace and then per session, so a
/// lookup borrows the caller's names and copies none.
#[derive(Debug, Default)]
struct Seen {
    by_ns: HashMap<Namespace, HashMap<String, History>>,
}

/// A session's actions, oldest first, as read from the store's records
/// once: the engine decides on it where it lies, so a decision on a copy
/// this replica remembers reads no record and copies no action.
#[derive(Debug, Default)]
struct History {
    session: Session,
    /// Each action's declared cost and currency, beside the session's.
    costs: Vec<(Option<f64>, Option<String>)>,
}

impl History {
    /// Reads the store's records.
    fn read(id: &str, records: &[Vec<u8>]) -> Result<History, StoreError> {
        if records.len() > MAX_HISTORY {
            return Err(too_long(id, records.len()));
        }
        let mut h = History::default();
        for r in records {
            h.push(StoredAction::from_record(r)?);
        }
        Ok(h)
    }

    fn len(&self) -> usize {
        self.session.actions.len()
    }

    fn push(&mut self, a: StoredAction) {
        self.session.actions.push(a.action_type);
        self.session.risk_scores.push(a.risk_score);
        self.costs.push((a.cost, a.currency));
    }

    /// What the session spent in `currency`.
    fn spent(&self, currency: Option<&str>) -> f64 {
        self.costs
            .iter()
            .filter(|(_, c)| c.as_deref() == currency)
            // From +0.0, as the running total always started: a sum of
            // floats starts from -0.0, which a condition on the text of
            // `maxAmount` would read as `-0`.
            .fold(0.0, |total, (cost, _)| total + cost.unwrap_or(0.0))
    }
}

/// What one decision on a kept session cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trips {
    /// Calls made to the store.
    pub store_calls: usize,
    /// Times the engine decided.
    pub decisions: usize,
}

impl KeptSessions {
    /// No session remembered yet.
    pub fn new() -> KeptSessions {
        KeptSessions::default()
    }

    /// Whether `env`'s history is the store's: its session names a
    /// `sessionId` and no `actions`.
    pub fn uses_store(env: &Envelope) -> bool {
        env.session().is_some_and(|s| s.stored)
    }

    /// Decides `env` with `engine`: on the store's history of its session
    /// when [`KeptSessions::uses_store`], appending the action when it is
    /// allowed; as the engine alone decides otherwise. Never fails: a store
    /// that cannot be reached, or a session that keeps changing, is a deny
    /// that says so.
    pub fn decide(
        &self,
        engine: &AuthensorEngine<'_>,
        store: &dyn Store,
        ns: &Namespace,
        env: &Envelope,
    ) -> AuthensorResult {
        self.decide_counted(engine, store, ns, env).0
    }

    /// As [`KeptSessions::decide`], with what it cost.
    pub fn decide_counted(
        &self,
        engine: &AuthensorEngine<'_>,
        store: &dyn Store,
        ns: &Namespace,
        env: &Envelope,
    ) -> (AuthensorResult, Trips) {
        let mut trips = Trips::default();
        let id = match env.session().filter(|s| s.stored && env.error().is_none()) {
            Some(s) => s.session_id.clone().unwrap_or_default(),
            None => {
                trips.decisions = 1;
                return (engine.decide(env), trips);
            }
        };
        let (key, remembered) = self.take(ns, &id);
        let mut fresh = false;
        let mut history = remembered.unwrap_or_default();
        history.session.session_id.get_or_insert_with(|| id.clone());
        let action = StoredAction::of(env);
        let record = action.to_record();
        // The envelope is copied only when its cost is replaced by the
        // session's running total.
        let mut priced: Option<Value> = None;
        for _ in 0..MAX_ATTEMPTS {
            if history.len() > MAX_HISTORY {
                let e = too_long(&id, history.len());
                return (AuthensorResult::fail_closed(e.to_string()), trips);
            }
            if let Some(own) = action.cost {
                let total = own + history.spent(action.currency.as_deref());
                let value = priced.get_or_insert_with(|| env.value().clone());
                if let Some(c) = value.get_mut("constraints").and_then(Value::as_object_mut) {
                    // A total that overflows to infinity has no JSON
                    // number: it is above every budget, so the largest
                    // finite one stands for it.
                    let total = serde_json::Number::from_f64(total)
                        .map_or_else(|| Value::from(f64::MAX), Value::Number);
                    c.insert("maxAmount".into(), total);
                }
            }
            trips.decisions += 1;
            let value = priced.as_ref().unwrap_or_else(|| env.value());
            let r = engine.decide_on(value, Some(&history.session));
            if r.outcome != Effect::Allow {
                if fresh {
                    self.remember(ns, key, history);
                    return (r, trips);
                }
                trips.store_calls += 1;
                history = match store.history(ns, &id) {
                    Ok(h) => match History::read(&id, &h) {
                        Ok(h) => h,
                        Err(e) => return (AuthensorResult::fail_closed(e.to_string()), trips),
                    },
                    Err(e) => return (unreachable(&e), trips),
                };
                history.session.session_id = Some(id.clone());
                fresh = true;
                continue;
            }
            trips.store_calls += 1;
            match store.append_if(ns, &id, history.len(), &record) {
                Ok(Appended::Done) => {
                    history.push(action);
                    self.remember(ns, key, history);
                    return (r, trips);
                }
                Ok(Appended::Stale(h)) => {
                    history = match History::read(&id, &h) {
                        Ok(h) => h,
                        Err(e) => return (AuthensorResult::fail_closed(e.to_string()), trips),
                    };
                    history.session.session_id = Some(id.clone());
                    fresh = true;
                }
                Err(e) => return (unreachable(&e), trips),
            }
        }
        self.remember(ns, key, history);
        (
            AuthensorResult::fail_closed(format!(
                "the session `{id}` changed under this decision {MAX_ATTEMPTS} times in a row, as other callers appended to it; send the action again (fail-closed)"
            )),
            trips,
        )
    }

    /// The history this replica remembers of session `id`, taken out while
    /// it is decided on (so no lock is held across a call to the store),
    /// with its key: the remembered key is reused, so a session seen before
    /// allocates none.
    fn take(&self, ns: &Namespace, id: &str) -> (String, Option<History>) {
        let taken = self
            .seen
            .lock()
            .ok()
            .and_then(|mut m| m.by_ns.get_mut(ns)?.remove_entry(id));
        match taken {
            Some((key, h)) => (key, Some(h)),
            None => (id.to_string(), None),
        }
    }

    fn remember(&self, ns: &Namespace, id: String, history: History) {
        if let Ok(mut m) = self.seen.lock() {
            let total: usize = m.by_ns.values().map(HashMap::len).sum();
            if total >= CACHED_SESSIONS {
                m.by_ns.clear();
            }
            match m.by_ns.get_mut(ns) {
                Some(t) => {
                    t.insert(id, history);
                }
                None => {
                    m.by_ns.insert(ns.clone(), HashMap::from([(id, history)]));
                }
            }
        }
    }
}

fn too_long(id: &str, n: usize) -> StoreError {
    StoreError::Corrupt(format!(
        "the session `{id}` holds {n} actions, more than {MAX_HISTORY}; forget it or let it expire"
    ))
}

fn unreachable(e: &StoreError) -> AuthensorResult {
    AuthensorResult::fail_closed(format!("{e} (fail-closed)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_the_action_it_was_written_from() -> Result<(), StoreError> {
        for a in [
            StoredAction {
                action_type: "file.read".into(),
                risk_score: 0.25,
                cost: Some(12.5),
                currency: Some("US\tD".into()),
            },
            StoredAction {
                action_type: "x".into(),
                risk_score: 0.0,
                cost: None,
                currency: Some(String::new()),
            },
            StoredAction {
                action_type: "y".into(),
                risk_score: -1.0,
                cost: None,
                currency: None,
            },
        ] {
            assert_eq!(StoredAction::from_record(&a.to_record())?, a);
        }
        // The bytes other replicas and earlier versions wrote and read.
        let written = |a: f64, cost, currency: Option<&str>| {
            StoredAction {
                action_type: "file.read".into(),
                risk_score: a,
                cost,
                currency: currency.map(str::to_string),
            }
            .to_record()
        };
        assert_eq!(written(0.0, None, None), b"a1\tfile.read\t0\t\t");
        assert_eq!(written(-0.0, None, None), b"a1\tfile.read\t-0\t\t");
        assert_eq!(
            written(0.25, Some(12.5), Some("USD")),
            b"a1\tfile.read\t0.25\t12.5\t=USD"
        );
        assert_eq!(
            written(1e21, Some(3.0), Some("")),
            b"a1\tfile.read\t1000000000000000000000\t3\t="
        );
        assert!(StoredAction::from_record(b"b1\tx\t0\t\t").is_err());
        assert!(StoredAction::from_record(b"a1\tx\tnan?\t\t").is_err());
        Ok(())
    }
}
