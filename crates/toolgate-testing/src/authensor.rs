//! Deterministic Authensor policies and envelopes, for differential tests,
//! benchmarks and fuzzing.
//!
//! [`Generator`] draws from small vocabularies of action types, resources,
//! principals, globs and patterns chosen so that scopes, conditions,
//! budgets and session rules hit about as often as they miss: priorities
//! with ties, disabled policies, scopes, every operator (globs with `*`,
//! `**` and characters a regular expression would read specially),
//! budgets with and without currencies, defaults, and session rules with
//! look-back windows and risk weights. Envelopes carry a session of up to
//! eight earlier actions, a cost that is sometimes not a number, and
//! sometimes another currency.
//!
//! [`Generator::gateway_policies`] is the benchmark's workload: rules that
//! each name a few of many action types, so that an envelope meets a few
//! rules, not most of them.
//!
//! Depends on serde_json only; it does no I/O.

use serde_json::{json, Map, Value};

/// What generated policies may hold.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Policies per document: from 0 up to this.
    pub max_policies: usize,
    /// Rules per policy: from 0 up to this.
    pub max_rules: usize,
    /// Conditions per rule: from 0 up to this.
    pub max_conditions: usize,
    /// Session rules on some policies, sessions on most envelopes.
    pub sessions: bool,
    /// Budgets on some rules, costs on most envelopes.
    pub budgets: bool,
}

impl Shape {
    /// Everything, small.
    pub fn small() -> Shape {
        Shape {
            max_policies: 4,
            max_rules: 5,
            max_conditions: 3,
            sessions: true,
            budgets: true,
        }
    }
}

const ACTIONS: [&str; 14] = [
    "file.read",
    "file.write",
    "file.delete",
    "file.read.all",
    "shell.execute",
    "network.send",
    "network.http.get",
    "payment.charge",
    "stripe.charges.create",
    "db.query",
    "a+b",
    "file.?",
    "x",
    "",
];
const ACTION_GLOBS: [&str; 20] = [
    "file.*",
    "file.**",
    "*",
    "**",
    "shell.*",
    "*.read",
    "network.**",
    "stripe.*",
    "**.create",
    "a+b",
    "file.?",
    "*.*",
    "***",
    "file.read",
    "payment.charge",
    "*.http.*",
    "**.read.**",
    "f*.r*",
    "x",
    "",
];
const RESOURCES: [&str; 9] = [
    "/tmp/x",
    "/etc/passwd",
    "bash://localhost/rm",
    "/tmp/a/b.txt",
    "s3://bucket/key",
    "https://example.com/pay",
    "/tmp/rm-me",
    "a.b",
    "",
];
const RESOURCE_GLOBS: [&str; 11] = [
    "/tmp/**",
    "/tmp/*",
    "**/rm*",
    "**",
    "*",
    "/etc/*",
    "s3://**",
    "**.txt",
    "/tmp/*/b.txt",
    "https://*/pay",
    "a.b",
];
const PRINCIPALS: [&str; 5] = ["agent-1", "agent-2", "admin", "agent.x", "svc-9"];
const PRINCIPAL_GLOBS: [&str; 6] = ["agent-*", "*", "admin", "agent.*", "**", "svc-?"];
const PATTERNS: [&str; 7] = [
    "^/tmp/",
    "rm",
    "\\.txt$",
    "^(file|shell)\\.",
    "(?i)ADMIN",
    "x{2,}",
    "^$",
];
const ENVIRONMENTS: [&str; 3] = ["prod", "dev", "staging"];
const CURRENCIES: [&str; 3] = ["USD", "EUR", "usd"];

/// A seeded generator (xorshift64*): the same seed gives the same
/// documents.
#[derive(Clone, Debug)]
pub struct Generator {
    state: u64,
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 for `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs.get(self.below(xs.len())).copied().unwrap_or("")
    }

    fn one<T: Copy + Default>(&mut self, xs: &[T]) -> T {
        xs.get(self.below(xs.len())).copied().unwrap_or_default()
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn some<'a>(&mut self, xs: &[&'a str], max: usize) -> Vec<&'a str> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.pick(xs)).collect()
    }

    fn condition(&mut self) -> (String, Value) {
        let field = match self.below(8) {
            0..=2 => "action",
            3..=5 => "resource",
            6 => "principalId",
            _ => self.pick(&["context.environment", "context.missing", "id"]),
        };
        let values: &[&str] = match field {
            "action" => &ACTIONS,
            "resource" => &RESOURCES,
            "principalId" => &PRINCIPALS,
            _ => &ENVIRONMENTS,
        };
        let mut ops = Map::new();
        for _ in 0..1 + self.below(2) {
            let (name, v) = match self.below(5) {
                0 => {
                    let globs: &[&str] = match field {
                        "action" => &ACTION_GLOBS,
                        "resource" => &RESOURCE_GLOBS,
                        _ => &PRINCIPAL_GLOBS,
                    };
                    ("pattern", json!(self.pick(globs)))
                }
                1 => ("equals", json!(self.pick(values))),
                2 => ("in", json!(self.some(values, 3))),
                3 => ("notIn", json!(self.some(values, 3))),
                _ => ("regex", json!(self.pick(&PATTERNS))),
            };
            ops.insert(name.into(), v);
        }
        (field.to_string(), Value::Object(ops))
    }

    fn rule(&mut self, shape: &Shape, r: usize) -> Value {
        let mut conds = Map::new();
        for _ in 0..self.below(shape.max_conditions + 1) {
            let (f, ops) = self.condition();
            conds.insert(f, ops);
        }
        if shape.budgets && self.chance(15) {
            let mut b = Map::new();
            b.insert("maxCost".into(), json!(self.one(&[0.0, 5.0, 10.0, 99.5])));
            if self.chance(60) {
                b.insert("currency".into(), json!(self.pick(&CURRENCIES)));
            }
            conds.insert("constraints".into(), Value::Object(b));
        }
        let mut rule = Map::new();
        if self.chance(50) {
            rule.insert("id".into(), json!(format!("r{r}")));
        }
        rule.insert(
            "effect".into(),
            json!(self.pick(&["allow", "deny", "require_approval"])),
        );
        if !conds.is_empty() || self.chance(50) {
            rule.insert("conditions".into(), Value::Object(conds));
        }
        if self.chance(60) {
            rule.insert("reason".into(), json!(format!("reason {r}")));
        }
        Value::Object(rule)
    }

    fn session_rules(&mut self) -> Value {
        let mut s = Map::new();
        if self.chance(40) {
            s.insert("maxActions".into(), json!(self.below(8)));
        }
        if self.chance(60) {
            let seqs: Vec<Value> = (0..1 + self.below(3))
                .map(|i| {
                    let steps: Vec<&str> = (0..1 + self.below(3))
                        .map(|_| {
                            if self.chance(50) {
                                self.pick(&ACTIONS)
                            } else {
                                self.pick(&ACTION_GLOBS)
                            }
                        })
                        .collect();
                    let mut q = Map::new();
                    q.insert("actions".into(), json!(steps));
                    if self.chance(50) {
                        q.insert("reason".into(), json!(format!("sequence {i}")));
                    }
                    if self.chance(40) {
                        q.insert("id".into(), json!(format!("seq{i}")));
                    }
                    if self.chance(40) {
                        q.insert("lookbackActions".into(), json!(self.below(5)));
                    }
                    if self.chance(30) {
                        q.insert("effect".into(), json!("require_approval"));
                    }
                    Value::Object(q)
                })
                .collect();
            s.insert("forbiddenSequences".into(), json!(seqs));
        }
        if self.chance(50) {
            s.insert(
                "riskThreshold".into(),
                json!(self.one(&[0.0, 0.8, 1.0, 2.5])),
            );
            let mut w = Map::new();
            for _ in 0..self.below(4) {
                let k = if self.chance(50) {
                    self.pick(&ACTIONS)
                } else {
                    self.pick(&ACTION_GLOBS)
                };
                w.insert(k.into(), json!(self.one(&[0.1, 0.5, 1.0, 0.3])));
            }
            s.insert("riskWeights".into(), Value::Object(w));
        }
        Value::Object(s)
    }

    fn policy(&mut self, shape: &Shape, index: usize) -> Value {
        let mut p = Map::new();
        p.insert("id".into(), json!(format!("p{index}")));
        match self.below(3) {
            0 => {}
            1 => {
                p.insert("version".into(), json!(1 + self.below(3)));
            }
            _ => {
                p.insert("version".into(), json!(format!("1.{}.0", self.below(3))));
            }
        }
        if self.chance(80) {
            p.insert("priority".into(), json!(self.one(&[0, 1, 10, 100, -5, 10])));
        }
        if self.chance(30) {
            p.insert("enabled".into(), json!(self.chance(70)));
        }
        if self.chance(50) {
            let mut s = Map::new();
            if self.chance(70) {
                s.insert("actions".into(), json!(self.some(&ACTION_GLOBS, 2)));
            }
            if self.chance(40) {
                s.insert("principals".into(), json!(self.some(&PRINCIPAL_GLOBS, 2)));
            }
            p.insert("scope".into(), Value::Object(s));
        }
        let rules: Vec<Value> = (0..self.below(shape.max_rules + 1))
            .map(|r| self.rule(shape, r))
            .collect();
        p.insert("rules".into(), json!(rules));
        if self.chance(40) {
            p.insert(
                "defaultEffect".into(),
                json!(self.pick(&["allow", "deny", "require_approval"])),
            );
        }
        if shape.sessions && self.chance(35) {
            p.insert("sessionRules".into(), self.session_rules());
        }
        Value::Object(p)
    }

    /// A list of policies of `shape`.
    pub fn policies(&mut self, shape: &Shape) -> Value {
        let n = self.below(shape.max_policies + 1);
        json!((0..n).map(|i| self.policy(shape, i)).collect::<Vec<_>>())
    }

    /// An envelope for [`Generator::policies`], with a session when the
    /// shape has sessions.
    pub fn envelope(&mut self, shape: &Shape) -> Value {
        let mut e = Map::new();
        e.insert("id".into(), json!(format!("e{}", self.below(1000))));
        e.insert("action".into(), json!(self.pick(&ACTIONS)));
        e.insert("resource".into(), json!(self.pick(&RESOURCES)));
        e.insert("principalId".into(), json!(self.pick(&PRINCIPALS)));
        e.insert("timestamp".into(), json!("2026-01-01T00:00:00Z"));
        if self.chance(60) {
            e.insert(
                "context".into(),
                json!({"environment": self.pick(&ENVIRONMENTS)}),
            );
        }
        if shape.budgets && self.chance(70) {
            let mut c = Map::new();
            if self.chance(85) {
                let cost = match self.below(6) {
                    0 => json!("12"),
                    1 => json!(0),
                    2 => json!(10),
                    3 => json!(10.01),
                    4 => json!(150),
                    _ => json!(4.5),
                };
                c.insert("maxAmount".into(), cost);
            }
            if self.chance(70) {
                c.insert("currency".into(), json!(self.pick(&CURRENCIES)));
            }
            e.insert("constraints".into(), Value::Object(c));
        }
        if shape.sessions && self.chance(80) {
            // Some actions carry their own `riskScore` (a few negative,
            // which add nothing), and so does the proposed one.
            let actions: Vec<Value> = (0..self.below(9))
                .map(|_| {
                    let mut a = json!({"actionType": self.pick(&ACTIONS), "timestamp": "2026-01-01T00:00:00Z"});
                    if self.chance(30) {
                        a["riskScore"] = json!(self.below(12) as f64 / 10.0 - 0.2);
                    }
                    a
                })
                .collect();
            if self.chance(30) {
                e.insert(
                    "riskScore".into(),
                    json!(self.below(12) as f64 / 10.0 - 0.2),
                );
            }
            e.insert(
                "session".into(),
                json!({"sessionId": "s1", "actions": actions}),
            );
        }
        Value::Object(e)
    }

    fn service(&mut self) -> String {
        format!("svc{}", self.below(60))
    }

    fn verb(&mut self) -> &'static str {
        self.pick(&[
            "read", "write", "delete", "list", "exec", "send", "charge", "query",
        ])
    }

    /// The Authensor benchmark's workload (`benches/authensor.rs`, and the
    /// profile example beside it): policies of 50 rules, `rules` in all,
    /// and 1,024 envelopes, every fourth without its session.
    pub fn gateway_workload(rules: usize) -> (Value, Vec<Value>) {
        let mut g = Generator::new(rules as u64);
        let policies = g.gateway_policies(rules / 50, 50);
        let envelopes = (0..1024)
            .map(|i| {
                let mut e = g.gateway_envelope();
                if i % 4 == 3 {
                    if let Some(o) = e.as_object_mut() {
                        o.remove("session");
                    }
                }
                e
            })
            .collect();
        (policies, envelopes)
    }

    /// Policies for a gateway: `n_policies` policies of `rules_each` rules
    /// over about sixty services and eight verbs, scoped by service group,
    /// with defaults on some and session rules on a few.
    pub fn gateway_policies(&mut self, n_policies: usize, rules_each: usize) -> Value {
        let policies: Vec<Value> = (0..n_policies)
            .map(|p| {
                let rules: Vec<Value> = (0..rules_each)
                    .map(|r| {
                        let action = match self.below(10) {
                            0..=5 => format!("{}.{}", self.service(), self.verb()),
                            6 | 7 => format!("{}.*", self.service()),
                            8 => format!("{}.**", self.service()),
                            _ => format!("*.{}", self.verb()),
                        };
                        let mut conds = Map::new();
                        conds.insert("action".into(), json!({"pattern": action}));
                        match self.below(6) {
                            0 => {
                                conds.insert(
                                    "resource".into(),
                                    json!({"pattern": format!("/srv/{}/**", self.service())}),
                                );
                            }
                            1 => {
                                conds.insert(
                                    "resource".into(),
                                    json!({"regex": format!("^/srv/{}/.*\\.(pem|env)$", self.service())}),
                                );
                            }
                            2 => {
                                conds.insert(
                                    "principalId".into(),
                                    json!({"notIn": [format!("agent-{}", self.below(50))]}),
                                );
                            }
                            3 => {
                                conds.insert(
                                    "context.environment".into(),
                                    json!({"in": ["prod", "staging"]}),
                                );
                            }
                            4 => {
                                conds.insert(
                                    "constraints".into(),
                                    json!({"maxCost": self.below(100), "currency": "USD"}),
                                );
                            }
                            _ => {}
                        }
                        json!({"id": format!("p{p}r{r}"),
                               "effect": self.pick(&["allow", "deny", "deny", "require_approval"]),
                               "conditions": conds,
                               "reason": format!("rule {r} of policy {p}")})
                    })
                    .collect();
                let mut pol = json!({"id": format!("gateway-{p}"), "version": 1,
                    "priority": self.below(5) * 10, "rules": rules});
                if let Some(o) = pol.as_object_mut() {
                    if self.chance(50) {
                        o.insert(
                            "scope".into(),
                            json!({"actions": [format!("svc{}*.**", self.below(6))]}),
                        );
                    }
                    if self.chance(30) {
                        o.insert("defaultEffect".into(), json!("deny"));
                    }
                    if self.chance(20) {
                        o.insert(
                            "sessionRules".into(),
                            json!({"maxActions": 500,
                                   "forbiddenSequences": [{"actions": [format!("{}.read", self.service()), "*.send"],
                                                           "lookbackActions": 20}],
                                   "riskThreshold": 5.0,
                                   "riskWeights": {"*.delete": 1.0, "*.charge": 0.5}}),
                        );
                    }
                }
                pol
            })
            .collect();
        json!(policies)
    }

    /// An envelope for [`Generator::gateway_policies`], with a session of
    /// up to sixteen earlier actions.
    pub fn gateway_envelope(&mut self) -> Value {
        let service = self.service();
        let action = format!("{service}.{}", self.verb());
        let history: Vec<Value> = (0..self.below(17))
            .map(|_| {
                let a = format!("{}.{}", self.service(), self.verb());
                json!({"actionType": a, "timestamp": "2026-01-01T00:00:00Z"})
            })
            .collect();
        json!({
            "id": format!("e{}", self.below(100000)),
            "action": action,
            "resource": format!("/srv/{service}/{}", self.pick(&["config/app.env", "data/x.csv", "keys/id.pem"])),
            "principalId": format!("agent-{}", self.below(60)),
            "timestamp": "2026-01-01T00:00:00Z",
            "context": {"environment": self.pick(&ENVIRONMENTS)},
            "constraints": {"maxAmount": self.below(120), "currency": "USD"},
            "session": {"sessionId": "s", "actions": history},
        })
    }
}

/// The session workload of the sessions benchmark and its profiling
/// example: a policy whose session rules all apply (a cap no envelope
/// reaches, risk weights by glob and by key, a forbidden sequence), so
/// that every action of a session is weighed and stepped through.
pub const SESSION_POLICY: &str = r#"{"id": "p", "version": 1,
  "rules": [{"effect": "deny", "conditions": {"action": {"pattern": "shell.*"}}},
            {"effect": "allow"}],
  "sessionRules": {"maxActions": 1000000, "riskThreshold": 1000000,
    "riskWeights": {"network.*": 0.5, "file.write": 0.2},
    "forbiddenSequences": [{"actions": ["secret.read", "network.send"], "lookbackActions": 8}]}}"#;

/// The session workload's envelope, as JSON: one `file.read` with no
/// session, with `actions` earlier actions inline, or (`None`) with its
/// session kept in a store (a `sessionId` and no `actions`).
pub fn session_envelope(session: SessionOf) -> String {
    let session = match session {
        SessionOf::None => String::new(),
        SessionOf::Inline(n) => {
            let actions: Vec<String> = (0..n)
                .map(|i| {
                    let kind = ["file.read", "network.get", "file.write"][i % 3];
                    format!(r#"{{"actionType": "{kind}"}}"#)
                })
                .collect();
            format!(
                r#", "session": {{"sessionId": "s", "actions": [{}]}}"#,
                actions.join(",")
            )
        }
        SessionOf::Stored => r#", "session": {"sessionId": "s"}"#.to_string(),
    };
    format!(r#"{{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1"{session}}}"#)
}

/// Where a [`session_envelope`]'s earlier actions are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionOf {
    /// No session.
    None,
    /// This many earlier actions, in the envelope.
    Inline(usize),
    /// Kept in a store.
    Stored,
}
