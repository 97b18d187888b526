//! Deterministic Rubric bundles and requests, for differential tests,
//! benchmarks and fuzzing.
//!
//! [`Generator`] draws from a small vocabulary of tool names, command words
//! and paths, so that conditions hit as often as they miss. With
//! [`Shape::shared`] it keeps to the ground where the seed and rubric-app
//! 0.1.0 agree (`spec/rubric.md`, "Differential testing"): string values
//! only, paths through objects only, ASCII text without newlines, and
//! `matches` patterns whose meaning is the same in RE2 and Python's `regex`
//! (or that both refuse). Bundles carry every member Rubric's schemas
//! require, so both engines load them.
//!
//! Depends on serde_json only; it does no I/O.

use serde_json::{json, Value};

/// What a generated bundle may hold.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Policies per bundle: from 1 up to this (0 sometimes when
    /// `empty_bundles`).
    pub max_policies: usize,
    /// Rules per policy: from 1 up to this.
    pub max_rules: usize,
    /// Conditions per rule: from 1 up to this.
    pub max_conditions: usize,
    /// Numbers, booleans, number lists and array paths as well as strings.
    pub all_types: bool,
    /// Sometimes a bundle with no policies.
    pub empty_bundles: bool,
    /// Sometimes a `matches` pattern that does not compile (which marks its
    /// policy errored).
    pub invalid_patterns: bool,
}

impl Shape {
    /// The ground the seed and rubric-app 0.1.0 share.
    pub fn shared() -> Shape {
        Shape {
            max_policies: 4,
            max_rules: 6,
            max_conditions: 3,
            all_types: false,
            empty_bundles: true,
            invalid_patterns: true,
        }
    }
}

const PROGRAMS: [&str; 24] = [
    "git",
    "npm",
    "cargo",
    "docker",
    "kubectl",
    "make",
    "python",
    "pip",
    "terraform",
    "aws",
    "gcloud",
    "curl",
    "rm",
    "node",
    "go",
    "ssh",
    "scp",
    "psql",
    "redis-cli",
    "helm",
    "yarn",
    "rsync",
    "tar",
    "sed",
];
const SUBCOMMANDS: [&str; 12] = [
    "status", "push", "pull", "install", "run", "build", "deploy", "delete", "apply", "exec",
    "login", "logs",
];
const FLAGS: [&str; 8] = [
    "--force",
    "-rf",
    "--all",
    "--yes",
    "--prod",
    "-v",
    "--dry-run",
    "--no-verify",
];
const SERVERS: [&str; 8] = [
    "github", "slack", "linear", "jira", "stripe", "sentry", "notion", "postgres",
];
const VERBS: [&str; 4] = ["list", "create", "delete", "update"];
const BUILTIN_TOOLS: [&str; 8] = [
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "WebFetch",
    "WebSearch",
];
const APPS: [&str; 20] = [
    "billing", "auth", "search", "web", "api", "worker", "admin", "mail", "chat", "maps", "media",
    "ledger", "audit", "cart", "feed", "ads", "ml", "etl", "docs", "ops",
];
const DIRS: [&str; 6] = ["src", "config", "secrets", "logs", "tmp", "data"];
const FILES: [&str; 8] = [
    "main.rs", ".env", "id_rsa", "app.yaml", "dump.sql", "notes.md", "key.pem", "run.sh",
];

/// A seeded generator (xorshift64*): the same seed gives the same bundles.
#[derive(Clone, Debug)]
pub struct Generator {
    rng: crate::workload::Rng,
}

const TOOLS: [&str; 8] = [
    "Bash",
    "Read",
    "Write",
    "Edit",
    "WebFetch",
    "mcp__github__create_issue",
    "mcp__slack__post",
    "pay",
];
const WORDS: [&str; 16] = [
    "git", "push", "status", "rm", "-rf", "ls", "curl", "sh", "|", "/tmp", "x", "--force", "sudo",
    "npm", "test", "origin",
];
const PATHS: [&str; 8] = [
    "/etc/passwd",
    "./src/main.rs",
    ".env",
    "/tmp/x",
    "README.md",
    "/home/u/.ssh/id_rsa",
    "a/b/c.txt",
    "",
];
const FIELDS: [&str; 7] = [
    "tool_name",
    "input.command",
    "input.path",
    "kwargs.mode",
    "kwargs.amount",
    "input.missing",
    "agent_id",
];
const MODES: [&str; 4] = ["fast", "safe", "dry-run", ""];
/// Patterns read alike by RE2 and Python's `regex` on ASCII text without
/// newlines.
const PATTERNS: [&str; 13] = [
    "^git",
    "rm\\s+-rf",
    "(curl|wget).*\\|\\s*sh",
    "push$",
    "[a-z]+ --force",
    "^ls( |$)",
    "x{2,}",
    "\\.env$",
    "^/etc/",
    "(?i)SUDO",
    "^[0-9]{3,}$",
    "\\bsh\\b",
    "",
];
/// Patterns both refuse: drawn rarely, as one marks its whole policy
/// errored.
const BAD_PATTERNS: [&str; 3] = ["(", "a{2,1}", "[z-a]"];

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator {
            rng: crate::workload::Rng::new(seed),
        }
    }

    fn next(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A number below `n` (0 for `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs.get(self.below(xs.len())).copied().unwrap_or("")
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn command(&mut self) -> String {
        let n = 1 + self.below(4);
        (0..n)
            .map(|_| self.pick(&WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn text_for(&mut self, field: &str) -> String {
        match field {
            "tool_name" => self.pick(&TOOLS).to_string(),
            "input.command" => self.command(),
            "input.path" => self.pick(&PATHS).to_string(),
            "kwargs.mode" => self.pick(&MODES).to_string(),
            "kwargs.amount" => (self.below(3) * 1000 + self.below(20)).to_string(),
            "agent_id" => format!("agent-{}", self.below(4)),
            _ => self.pick(&WORDS).to_string(),
        }
    }

    /// A fragment of a value the field may hold: a prefix, a suffix or a
    /// middle piece of a typical value, or a whole one.
    fn fragment_for(&mut self, field: &str) -> String {
        let t = self.text_for(field);
        let n = t.len();
        let (a, b) = match self.below(4) {
            0 => (0, n),
            1 => (0, self.below(n + 1)),
            2 => (self.below(n + 1), n),
            _ => {
                let a = self.below(n + 1);
                (a, a + self.below(n - a + 1))
            }
        };
        t.get(a..b).unwrap_or("").to_string()
    }

    fn condition(&mut self, shape: &Shape) -> Value {
        let field = if shape.all_types && self.chance(10) {
            self.pick(&["args.0", "args.length", "kwargs.flag"])
                .to_string()
        } else {
            self.pick(&FIELDS).to_string()
        };
        let op = self.pick(&[
            "eq",
            "neq",
            "in",
            "not_in",
            "contains",
            "starts_with",
            "ends_with",
            "matches",
        ]);
        let value = match op {
            "in" | "not_in" if self.chance(70) => {
                let n = self.below(4);
                Value::from(
                    (0..n)
                        .map(|_| self.text_for(&field))
                        .collect::<Vec<String>>(),
                )
            }
            "matches" if shape.invalid_patterns && self.chance(4) => {
                Value::from(self.pick(&BAD_PATTERNS))
            }
            "matches" => Value::from(self.pick(&PATTERNS)),
            "contains" | "starts_with" | "ends_with" => Value::from(self.fragment_for(&field)),
            _ => Value::from(self.text_for(&field)),
        };
        let value = if shape.all_types && self.chance(15) {
            match self.below(4) {
                0 => json!(self.below(3000)),
                1 => json!(self.chance(50)),
                2 => json!([self.below(3), 1000]),
                _ => json!(1.5),
            }
        } else {
            value
        };
        json!({"field": field, "operator": op, "value": value})
    }

    /// A bundle of `shape`.
    pub fn bundle(&mut self, shape: &Shape) -> Value {
        let n_policies = if shape.empty_bundles && self.chance(3) {
            0
        } else {
            1 + self.below(shape.max_policies)
        };
        let policies: Vec<Value> = (0..n_policies)
            .map(|p| {
                let n_rules = 1 + self.below(shape.max_rules);
                self.policy(shape, p, n_rules)
            })
            .collect();
        self.wrap(policies)
    }

    /// A bundle of exactly `n_policies` policies of `rules_each` rules.
    pub fn sized_bundle(&mut self, shape: &Shape, n_policies: usize, rules_each: usize) -> Value {
        let policies: Vec<Value> = (0..n_policies)
            .map(|p| self.policy(shape, p, rules_each))
            .collect();
        self.wrap(policies)
    }

    fn wrap(&mut self, policies: Vec<Value>) -> Value {
        let frozen: Vec<String> = if self.chance(20) {
            vec![format!("Agent-{}", self.below(4))]
        } else {
            Vec::new()
        };
        json!({
            "bundleVersion": self.below(100),
            "contentHash": format!("{:064x}", self.next()),
            "builtAt": "2026-05-10T15:09:29.123Z",
            "policies": policies,
            "frozenAgentIds": frozen,
        })
    }

    fn policy(&mut self, shape: &Shape, index: usize, n_rules: usize) -> Value {
        let rules: Vec<Value> = (0..n_rules)
            .map(|r| {
                let n = 1 + self.below(shape.max_conditions);
                let conds: Vec<Value> = (0..n).map(|_| self.condition(shape)).collect();
                let mut rule = json!({
                    "id": format!("r{r}"),
                    "effect": if self.chance(40) { "deny" } else { "allow" },
                    "conditions": conds,
                });
                if self.chance(30) {
                    if let Some(o) = rule.as_object_mut() {
                        o.insert("description".into(), json!(format!("rule {r}")));
                    }
                }
                rule
            })
            .collect();
        json!({
            "policyId": format!("00000000-0000-4000-8000-{:012x}", index),
            "policyVersion": self.below(10),
            "document": {
                "apiVersion": "agent-governance.io/v1",
                "kind": "Policy",
                "metadata": {"name": format!("policy {index}")},
                "spec": {
                    "defaultEffect": if self.chance(50) { "deny" } else { "allow" },
                    "rules": rules,
                }
            }
        })
    }

    fn gateway_tool(&mut self) -> String {
        if self.chance(50) {
            self.pick(&BUILTIN_TOOLS).to_string()
        } else {
            format!("mcp__{}__{}", self.pick(&SERVERS), self.pick(&VERBS))
        }
    }

    fn gateway_command(&mut self) -> String {
        let mut c = format!("{} {}", self.pick(&PROGRAMS), self.pick(&SUBCOMMANDS));
        for _ in 0..self.below(3) {
            c.push(' ');
            c.push_str(if self.chance(50) {
                self.pick(&FLAGS)
            } else {
                self.pick(&APPS)
            });
        }
        c
    }

    fn gateway_path(&mut self) -> String {
        format!(
            "/srv/{}/{}/{}",
            self.pick(&APPS),
            self.pick(&DIRS),
            self.pick(&FILES)
        )
    }

    fn gateway_rule(&mut self, r: usize) -> Value {
        let tool = self.gateway_tool();
        let mut conds = vec![match self.below(10) {
            0..=6 => json!({"field": "tool_name", "operator": "eq", "value": tool}),
            7 | 8 => {
                json!({"field": "tool_name", "operator": "in", "value": [tool, self.gateway_tool()]})
            }
            _ => json!({"field": "tool_name", "operator": "starts_with",
                        "value": format!("mcp__{}__", self.pick(&SERVERS))}),
        }];
        let deny = self.chance(35);
        // A deny rule always constrains its tool's calls; an allow rule
        // may allow a tool outright.
        let extra = if deny {
            1 + self.below(2)
        } else {
            self.below(3)
        };
        for _ in 0..extra {
            let c = match self.below(12) {
                0 => json!({"field": "input.command", "operator": "starts_with",
                            "value": format!("{} {}", self.pick(&PROGRAMS), self.pick(&SUBCOMMANDS))}),
                1 => {
                    json!({"field": "input.command", "operator": "contains", "value": self.pick(&FLAGS)})
                }
                2 => json!({"field": "input.command", "operator": "matches",
                            "value": format!("^{} ({}|{})\\b", self.pick(&PROGRAMS), self.pick(&SUBCOMMANDS), self.pick(&SUBCOMMANDS))}),
                3 => {
                    json!({"field": "input.command", "operator": "ends_with", "value": self.pick(&APPS)})
                }
                4 => json!({"field": "input.path", "operator": "starts_with",
                            "value": format!("/srv/{}/", self.pick(&APPS))}),
                5 => {
                    json!({"field": "input.path", "operator": "ends_with", "value": self.pick(&FILES)})
                }
                6 => json!({"field": "input.path", "operator": "contains",
                            "value": format!("/{}/", self.pick(&DIRS))}),
                7 => json!({"field": "input.path", "operator": "matches",
                            "value": format!("/(secrets|{})/.*\\.(pem|env)$", self.pick(&DIRS))}),
                8 => json!({"field": "agent_id", "operator": "not_in",
                            "value": [format!("agent-{}", self.below(50)), format!("agent-{}", self.below(50))]}),
                9 => {
                    json!({"field": "input.command", "operator": "neq", "value": self.gateway_command()})
                }
                10 => json!({"field": "kwargs.env", "operator": "eq", "value": "prod"}),
                _ => json!({"field": "kwargs.env", "operator": "in", "value": ["staging", "dev"]}),
            };
            conds.push(c);
        }
        json!({"id": format!("r{r}"), "effect": if deny { "deny" } else { "allow" },
               "conditions": conds})
    }

    /// A gateway-like bundle: `n_policies` policies of `rules_each` rules,
    /// each naming one tool (or two, or an MCP server) among about forty
    /// and constraining its command, path, environment or agent with
    /// values drawn from a large vocabulary, so that a request meets a few
    /// rules, not most of them.
    pub fn gateway_bundle(&mut self, n_policies: usize, rules_each: usize) -> Value {
        let policies: Vec<Value> = (0..n_policies)
            .map(|p| {
                let rules: Vec<Value> = (0..rules_each).map(|r| self.gateway_rule(r)).collect();
                json!({
                    "policyId": format!("00000000-0000-4000-8000-{:012x}", p),
                    "policyVersion": 1 + self.below(9),
                    "document": {"metadata": {"name": format!("gateway {p}")},
                                 "spec": {"defaultEffect": "deny", "rules": rules}}
                })
            })
            .collect();
        json!({"policies": policies, "frozenAgentIds": ["agent-frozen"]})
    }

    /// A request for [`Generator::gateway_bundle`].
    pub fn gateway_request(&mut self) -> Value {
        let tool = self.gateway_tool();
        let input = if tool == "Bash" || self.chance(30) {
            json!({"command": self.gateway_command()})
        } else {
            json!({"path": self.gateway_path()})
        };
        json!({
            "tool_name": tool,
            "agent_id": format!("agent-{}", self.below(60)),
            "input": input,
            "kwargs": {"env": self.pick(&["prod", "staging", "dev"])},
        })
    }

    /// A request: a tool name, often an agent id, an `input` and `kwargs`
    /// with some members left out.
    pub fn request(&mut self, shape: &Shape) -> Value {
        let mut input = serde_json::Map::new();
        if self.chance(80) {
            input.insert("command".into(), json!(self.text_for("input.command")));
        }
        if self.chance(50) {
            input.insert("path".into(), json!(self.text_for("input.path")));
        }
        let mut r = serde_json::Map::new();
        r.insert("tool_name".into(), json!(self.text_for("tool_name")));
        if self.chance(50) {
            r.insert("agent_id".into(), json!(self.text_for("agent_id")));
        }
        if self.chance(90) {
            r.insert("input".into(), Value::Object(input));
        }
        if self.chance(50) {
            let mut k = serde_json::Map::new();
            k.insert("mode".into(), json!(self.text_for("kwargs.mode")));
            let amount = self.text_for("kwargs.amount");
            if shape.all_types && self.chance(50) {
                k.insert("amount".into(), json!(amount.parse::<u64>().unwrap_or(0)));
                k.insert("flag".into(), json!(self.chance(50)));
            } else {
                k.insert("amount".into(), json!(amount));
            }
            r.insert("kwargs".into(), Value::Object(k));
        }
        if shape.all_types && self.chance(30) {
            r.insert("args".into(), json!([self.pick(&WORDS), self.below(3)]));
        }
        Value::Object(r)
    }
}
