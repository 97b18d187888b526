//! [`RedisStore`]: toolgate's state store on Redis, shared by every replica
//! that points at the same server.
//!
//! Each method of [`toolgate::state::Store`] is one Lua script (sent as
//! `EVALSHA`, loaded on the first `NOSCRIPT`) or one plain command, so each
//! check-and-update runs whole inside Redis, between any two commands of
//! another replica: two replicas never take the same pending call and
//! never both append to a session of the same length. That is one round
//! trip per method.
//!
//! Keys are `toolgate:TENANT:SCOPE:KIND:NAME`, each part escaped (`%` and
//! `:` are written `%25` and `%3A`), so two tenants, two artifacts, or a
//! run and a session with the same name never share a key. Every write
//! sets the keys it touched to expire after the configured time.
//!
//! Connections are kept in a small pool and opened on demand with a
//! connect timeout; each has read and write timeouts. A connection that
//! failed is dropped, and the next call opens a new one: after Redis
//! restarts, the first call that reaches it works again, with nothing to
//! restart here. Every failure to reach Redis is
//! [`StoreError::Unavailable`], which the state layer turns into a deny.

use std::sync::Mutex;
use std::time::Duration;

use redis::{Client, Connection, RedisError, Script};
use toolgate::state::{Appended, Namespace, Pending, Store, StoreError};

/// How a [`RedisStore`] talks to Redis and how long it keeps state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// How long one command may take to be sent, and to be answered.
    pub io_timeout: Duration,
    /// How long state lives after its last write; `None` keeps it until it
    /// is deleted.
    pub expiry: Option<Duration>,
    /// The most idle connections kept open.
    pub pool: usize,
}

impl Default for RedisOptions {
    /// One second to connect and for each command, state kept a day after
    /// its last write, four idle connections.
    fn default() -> RedisOptions {
        RedisOptions {
            connect_timeout: Duration::from_secs(1),
            io_timeout: Duration::from_secs(1),
            expiry: Some(Duration::from_secs(24 * 3600)),
            pool: 4,
        }
    }
}

/// A [`Store`] on a Redis server.
///
/// ```no_run
/// use toolgate::state::{Namespace, Store};
/// use toolgate_redis::{RedisOptions, RedisStore};
///
/// let store = RedisStore::open("redis://127.0.0.1:6379/0", RedisOptions::default())?;
/// store.ping()?;
/// let ns = Namespace::new("default", "policy");
/// store.defer(&ns, "run-1", "call-1", b"{}")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RedisStore {
    client: Client,
    options: RedisOptions,
    idle: Mutex<Vec<Connection>>,
    url: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: only its host part is shown.
        let shown = self.url.rsplit('@').next().unwrap_or_default();
        f.debug_struct("RedisStore")
            .field("url", &shown)
            .field("options", &self.options)
            .finish()
    }
}

/// Why [`RedisStore::open`] refused its URL.
#[derive(Debug)]
pub struct UrlError {
    url: String,
    why: String,
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the store `{}` is not a Redis URL ({}): write `redis://HOST:PORT/DB`",
            self.url.rsplit('@').next().unwrap_or_default(),
            self.why
        )
    }
}

impl std::error::Error for UrlError {}

impl RedisStore {
    /// A store on the Redis server at `url` (`redis://HOST:PORT/DB`). No
    /// connection is opened yet: a server that is down makes the calls
    /// fail with [`StoreError::Unavailable`] until it is up.
    ///
    /// # Errors
    ///
    /// A URL the client cannot read.
    pub fn open(url: &str, options: RedisOptions) -> Result<RedisStore, UrlError> {
        let client = Client::open(url).map_err(|e| UrlError {
            url: url.to_string(),
            why: e.to_string(),
        })?;
        Ok(RedisStore {
            client,
            options,
            idle: Mutex::new(Vec::new()),
            url: url.to_string(),
        })
    }

    fn connect(&self) -> Result<Connection, RedisError> {
        let pooled = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        if let Some(c) = pooled {
            return Ok(c);
        }
        let c = self
            .client
            .get_connection_with_timeout(self.options.connect_timeout)?;
        c.set_read_timeout(Some(self.options.io_timeout))?;
        c.set_write_timeout(Some(self.options.io_timeout))?;
        Ok(c)
    }

    /// Runs `f` on a connection; a connection that failed is dropped (the
    /// next call opens a new one), one that answered goes back to the pool.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, RedisError>,
    ) -> Result<T, StoreError> {
        let mut c = self.connect().map_err(unavailable)?;
        match f(&mut c) {
            Ok(v) => {
                if let Ok(mut idle) = self.idle.lock() {
                    if idle.len() < self.options.pool {
                        idle.push(c);
                    }
                }
                Ok(v)
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    fn ttl(&self) -> u64 {
        self.options.expiry.map_or(0, |d| d.as_secs().max(1))
    }
}

fn unavailable(e: RedisError) -> StoreError {
    if e.kind() == redis::ErrorKind::TypeError {
        return StoreError::Corrupt(format!(
            "redis answered in a shape this version cannot read: {e}"
        ));
    }
    StoreError::Unavailable(format!("redis: {e}"))
}

/// A part of a key with `%` and `:` escaped, so that parts never run into
/// each other.
fn part(s: &str) -> String {
    if !s.contains(['%', ':']) {
        return s.to_string();
    }
    s.replace('%', "%25").replace(':', "%3A")
}

fn prefix(ns: &Namespace) -> String {
    format!("toolgate:{}:{}:", part(&ns.tenant), part(&ns.scope))
}

fn key(ns: &Namespace, kind: &str, name: &str) -> String {
    format!("{}{kind}:{}", prefix(ns), part(name))
}

/// A grant's field in the grants hash: the scope's length, then scope and
/// source, so that any two (scope, source) pairs differ.
fn grant_field(scope: &str, source: &str) -> String {
    format!("{}:{scope}{source}", scope.len())
}

fn split_grant_field(f: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(f).ok()?;
    let (len, rest) = text.split_once(':')?;
    let len: usize = len.parse().ok()?;
    let scope = rest.get(..len)?;
    let source = rest.get(len..)?;
    Some((scope.to_string(), source.to_string()))
}

/// A grant field's name as a message shows it: its text (bytes that are
/// not UTF-8 replaced), control characters escaped, at most 200 characters.
fn shown_field(f: &[u8]) -> String {
    toolgate::json::shown(&String::from_utf8_lossy(f))
}

// The scripts. `ttl` 0 means no expiry. Each touches only the keys it is
// given (and, for `runs`, keys named from its prefix argument).

/// KEYS: order, records, runs. ARGV: run, call, record, ttl.
const DEFER: &str = r"
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then
  redis.call('RPUSH', KEYS[1], ARGV[2])
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[1])
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  for _, k in ipairs(KEYS) do redis.call('EXPIRE', k, ttl) end
end
return 1
";

/// KEYS: order, records. Returns call, record, call, record, … in order.
const PENDING: &str = r"
local out = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local r = redis.call('HGET', KEYS[2], id)
  if r then
    out[#out + 1] = id
    out[#out + 1] = r
  end
end
return out
";

/// KEYS: order, records, runs. ARGV: run, ttl, calls… (none: all).
/// Returns call, record, … of the calls taken, in order.
const TAKE: &str = r"
local want = {}
for i = 3, #ARGV do want[ARGV[i]] = true end
local all = #ARGV < 3
local out, kept = {}, {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  if all or want[id] then
    local r = redis.call('HGET', KEYS[2], id)
    if r then
      out[#out + 1] = id
      out[#out + 1] = r
    end
    redis.call('HDEL', KEYS[2], id)
  else
    kept[#kept + 1] = id
  end
end
redis.call('DEL', KEYS[1])
if #kept == 0 then
  redis.call('DEL', KEYS[2])
  redis.call('SREM', KEYS[3], ARGV[1])
else
  for _, id in ipairs(kept) do redis.call('RPUSH', KEYS[1], id) end
  local ttl = tonumber(ARGV[2])
  if ttl > 0 then
    redis.call('EXPIRE', KEYS[1], ttl)
    redis.call('EXPIRE', KEYS[2], ttl)
  end
end
return out
";

/// KEYS: order, records, runs. ARGV: run. Returns how many calls were
/// dropped.
const FORGET: &str = r"
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return n
";

/// KEYS: runs. ARGV: the order key's prefix. Returns the runs whose order
/// list still exists (dropping those that expired from the set).
const RUNS: &str = r"
local out = {}
for _, run in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local k = ARGV[1] .. string.gsub(string.gsub(run, '%%', '%%25'), ':', '%%3A')
  if redis.call('EXISTS', k) == 1 then
    out[#out + 1] = run
  else
    redis.call('SREM', KEYS[1], run)
  end
end
return out
";

/// KEYS: grants. ARGV: field, record, ttl.
const PUT_GRANT: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return 1
";

/// KEYS: grants. ARGV: field, record. Drops the field only while it holds
/// exactly the record; returns 1 when it did.
const REMOVE_GRANT_IF: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
";

/// KEYS: reviews. ARGV: outcome ('1' refused, '0' not), kept, window, ttl.
/// Returns the last `window` outcomes, oldest first.
const REVIEW: &str = r"
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
local ttl = tonumber(ARGV[4])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
local w = tonumber(ARGV[3])
if w == 0 then return {} end
return redis.call('LRANGE', KEYS[1], -w, -1)
";

/// KEYS: session. ARGV: expected length, action, ttl. Returns `{'1'}` when
/// appended, else `{'0', action, action, …}`: the session as it stands.
const APPEND_IF: &str = r"
if redis.call('LLEN', KEYS[1]) == tonumber(ARGV[1]) then
  redis.call('RPUSH', KEYS[1], ARGV[2])
  local ttl = tonumber(ARGV[3])
  if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
  return {'1'}
end
local out = {'0'}
for _, a in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do out[#out + 1] = a end
return out
";

/// The scripts, hashed once.
struct Scripts {
    defer: Script,
    pending: Script,
    take: Script,
    forget: Script,
    runs: Script,
    put_grant: Script,
    remove_grant_if: Script,
    review: Script,
    append_if: Script,
}

fn scripts() -> &'static Scripts {
    static S: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    S.get_or_init(|| Scripts {
        defer: Script::new(DEFER),
        pending: Script::new(PENDING),
        take: Script::new(TAKE),
        forget: Script::new(FORGET),
        runs: Script::new(RUNS),
        put_grant: Script::new(PUT_GRANT),
        remove_grant_if: Script::new(REMOVE_GRANT_IF),
        review: Script::new(REVIEW),
        append_if: Script::new(APPEND_IF),
    })
}

/// Reviews kept per key: as the memory store keeps them.
const REVIEWS_KEPT: usize = 1024;

fn pairs(flat: Vec<Vec<u8>>) -> Result<Vec<Pending>, StoreError> {
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let Some(id) = it.next() {
        let record = it
            .next()
            .ok_or_else(|| StoreError::Corrupt("a pending call without its record".into()))?;
        let call_id = String::from_utf8(id)
            .map_err(|_| StoreError::Corrupt("a pending call's id is not UTF-8".into()))?;
        out.push(Pending { call_id, record });
    }
    Ok(out)
}

/// A field of a Redis hash and the record it holds, as bytes.
type FieldRecord = (Vec<u8>, Vec<u8>);

impl RedisStore {
    fn run_keys(ns: &Namespace, run: &str) -> [String; 3] {
        [
            key(ns, "order", run),
            key(ns, "calls", run),
            format!("{}runs", prefix(ns)),
        ]
    }

    /// Every field of the grants hash `k` with its record, as Redis keeps
    /// them.
    fn grant_fields(&self, k: &str) -> Result<Vec<FieldRecord>, StoreError> {
        let flat: Vec<Vec<u8>> = self.with(|c| redis::cmd("HGETALL").arg(k).query(c))?;
        let mut pairs = Vec::with_capacity(flat.len() / 2);
        let mut it = flat.into_iter();
        while let (Some(f), Some(r)) = (it.next(), it.next()) {
            pairs.push((f, r));
        }
        Ok(pairs)
    }
}

impl Store for RedisStore {
    fn defer(
        &self,
        ns: &Namespace,
        run: &str,
        call_id: &str,
        record: &[u8],
    ) -> Result<(), StoreError> {
        let [order, calls, runs] = RedisStore::run_keys(ns, run);
        self.with(|c| {
            scripts()
                .defer
                .key(order)
                .key(calls)
                .key(runs)
                .arg(run)
                .arg(call_id)
                .arg(record)
                .arg(self.ttl())
                .invoke::<i64>(c)
                .map(|_| ())
        })
    }

    fn pending(&self, ns: &Namespace, run: &str) -> Result<Vec<Pending>, StoreError> {
        let [order, calls, _] = RedisStore::run_keys(ns, run);
        let flat: Vec<Vec<u8>> =
            self.with(|c| scripts().pending.key(order).key(calls).invoke(c))?;
        pairs(flat)
    }

    fn take(
        &self,
        ns: &Namespace,
        run: &str,
        call_ids: &[&str],
    ) -> Result<Vec<Pending>, StoreError> {
        let [order, calls, runs] = RedisStore::run_keys(ns, run);
        let flat: Vec<Vec<u8>> = self.with(|c| {
            let mut inv = scripts().take.key(order);
            inv.key(calls).key(runs).arg(run).arg(self.ttl());
            for id in call_ids {
                inv.arg(*id);
            }
            inv.invoke(c)
        })?;
        pairs(flat)
    }

    fn forget(&self, ns: &Namespace, run: &str) -> Result<usize, StoreError> {
        let [order, calls, runs] = RedisStore::run_keys(ns, run);
        self.with(|c| {
            scripts()
                .forget
                .key(order)
                .key(calls)
                .key(runs)
                .arg(run)
                .invoke::<usize>(c)
        })
    }

    fn runs(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        let runs_key = format!("{}runs", prefix(ns));
        let order_prefix = format!("{}order:", prefix(ns));
        let mut runs: Vec<String> =
            self.with(|c| scripts().runs.key(runs_key).arg(order_prefix).invoke(c))?;
        runs.sort();
        Ok(runs)
    }

    fn put_grant(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<(), StoreError> {
        let k = format!("{}grants", prefix(ns));
        self.with(|c| {
            scripts()
                .put_grant
                .key(k)
                .arg(grant_field(scope, source))
                .arg(record)
                .arg(self.ttl())
                .invoke::<i64>(c)
                .map(|_| ())
        })
    }

    fn remove_grant(&self, ns: &Namespace, scope: &str, source: &str) -> Result<bool, StoreError> {
        let k = format!("{}grants", prefix(ns));
        let n: i64 = self.with(|c| {
            redis::cmd("HDEL")
                .arg(k)
                .arg(grant_field(scope, source))
                .query(c)
        })?;
        Ok(n > 0)
    }

    fn remove_grant_if(
        &self,
        ns: &Namespace,
        scope: &str,
        source: &str,
        record: &[u8],
    ) -> Result<bool, StoreError> {
        let k = format!("{}grants", prefix(ns));
        let n: i64 = self.with(|c| {
            scripts()
                .remove_grant_if
                .key(k)
                .arg(grant_field(scope, source))
                .arg(record)
                .invoke(c)
        })?;
        Ok(n > 0)
    }

    fn grants(&self, ns: &Namespace) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        for (f, r) in self.grant_fields(&format!("{}grants", prefix(ns)))? {
            let (scope, source) = split_grant_field(&f).ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "the grant record named `{}`, a name that is not `LEN:SCOPESOURCE`: discard the unreadable grant records to remove it",
                    shown_field(&f)
                ))
            })?;
            out.push((scope, source, r));
        }
        out.sort();
        Ok(out)
    }

    fn discard_unnamed_grants(&self, ns: &Namespace) -> Result<Vec<String>, StoreError> {
        let k = format!("{}grants", prefix(ns));
        let mut out = Vec::new();
        for (f, r) in self.grant_fields(&k)? {
            if split_grant_field(&f).is_some() {
                continue;
            }
            let n: i64 =
                self.with(|c| scripts().remove_grant_if.key(&k).arg(&f).arg(&r).invoke(c))?;
            if n > 0 {
                out.push(shown_field(&f));
            }
        }
        Ok(out)
    }

    fn review(
        &self,
        ns: &Namespace,
        key_name: &str,
        refused: bool,
        window: usize,
    ) -> Result<Vec<bool>, StoreError> {
        let k = key(ns, "reviews", key_name);
        let got: Vec<String> = self.with(|c| {
            scripts()
                .review
                .key(k)
                .arg(if refused { "1" } else { "0" })
                .arg(REVIEWS_KEPT.max(window))
                .arg(window)
                .arg(self.ttl())
                .invoke(c)
        })?;
        Ok(got.iter().map(|s| s == "1").collect())
    }

    fn reset_reviews(&self, ns: &Namespace, key_name: &str) -> Result<(), StoreError> {
        let k = key(ns, "reviews", key_name);
        self.with(|c| redis::cmd("DEL").arg(k).query::<i64>(c).map(|_| ()))
    }

    fn history(&self, ns: &Namespace, session: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let k = key(ns, "session", session);
        self.with(|c| redis::cmd("LRANGE").arg(k).arg(0).arg(-1).query(c))
    }

    fn append_if(
        &self,
        ns: &Namespace,
        session: &str,
        expected: usize,
        action: &[u8],
    ) -> Result<Appended, StoreError> {
        let k = key(ns, "session", session);
        let mut got: Vec<Vec<u8>> = self.with(|c| {
            scripts()
                .append_if
                .key(k)
                .arg(expected)
                .arg(action)
                .arg(self.ttl())
                .invoke(c)
        })?;
        if got.first().map(Vec::as_slice) == Some(b"1") {
            return Ok(Appended::Done);
        }
        if got.first().map(Vec::as_slice) != Some(b"0") {
            return Err(StoreError::Corrupt(
                "the session script answered neither appended nor stale".into(),
            ));
        }
        got.remove(0);
        Ok(Appended::Stale(got))
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| redis::cmd("PING").query::<String>(c).map(|_| ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parts_are_escaped_so_names_never_run_into_each_other() {
        let ns = Namespace::new("a:b", "c");
        assert_eq!(
            key(&ns, "session", "x:y%"),
            "toolgate:a%3Ab:c:session:x%3Ay%25"
        );
        assert_ne!(
            key(&Namespace::new("a", "b:c"), "session", "x"),
            key(&Namespace::new("a:b", "c"), "session", "x")
        );
    }

    #[test]
    fn a_grant_field_reads_back_as_its_scope_and_source() {
        for (scope, source) in [("", "skill"), ("conv:1", "x"), ("12", "3:4")] {
            let f = grant_field(scope, source);
            assert_eq!(
                split_grant_field(f.as_bytes()),
                Some((scope.to_string(), source.to_string()))
            );
        }
        assert_eq!(split_grant_field(b"9:ab"), None);
    }

    #[test]
    fn a_url_that_is_not_redis_is_refused_naming_it() {
        let e = RedisStore::open("http://example", RedisOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("the store `http://example` is not a Redis URL"),
            "{e}"
        );
    }
}
