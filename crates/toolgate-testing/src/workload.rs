//! A deterministic workload: rule sets and call streams for benchmarks and
//! tests.
//!
//! [`Workload::generate`] builds, from a seed, a policy of any size over about
//! twenty tools (shell prefix and glob specifiers with `*` at the start, in
//! the middle and at the end; path specifiers; MCP tool-name globs;
//! carve-outs; several ranked sources, one untrusted) and a stream of calls
//! that mixes hits and misses, 10 to 200 bytes long. The same seed gives the
//! same workload on every machine, so benchmarks of different engines and
//! different commits measure the same thing.
//!
//! Depends on `policy`, `call` and `json` only; it does no I/O.

use serde_json::{json, Value};
use toolgate::call::Call;
use toolgate::policy::{List, Policy};

/// One rule of a workload, as written in the document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadRule {
    /// Which list.
    pub list: List,
    /// Index into [`SOURCES`], or `None` for the host's own rules.
    pub source: Option<usize>,
    /// The tool name, or a tool-name glob.
    pub tool: String,
    /// The specifier (a carve-out's starts with `!`).
    pub spec: Option<String>,
}

impl WorkloadRule {
    /// The rule's string form.
    pub fn text(&self) -> String {
        match &self.spec {
            Some(s) => format!("{}({s})", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// The workload's sources: name, rank, trusted.
pub const SOURCES: [(&str, i64, bool); 3] = [
    ("managed", 3, true),
    ("project", 1, false),
    ("user", 0, true),
];

/// The shell tool (glob matcher on `command`).
pub const SHELL: &str = "bash";
/// The path tools (glob matcher on `path`).
pub const PATH_TOOLS: [&str; 5] = ["read", "edit", "write", "grep", "glob"];
/// Tools with a prefix matcher on `url` or `query`.
pub const OTHER_TOOLS: [(&str, &str); 3] = [
    ("web_fetch", "url"),
    ("web_search", "query"),
    ("notebook", "path"),
];
/// MCP servers whose tools the calls use.
pub const MCP_SERVERS: [&str; 10] = [
    "github", "linear", "slack", "jira", "notion", "figma", "sentry", "stripe", "gdrive",
    "postgres",
];

const PROGRAMS: [&str; 16] = [
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
];

/// A generated policy and call stream.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The rules, in the order written.
    pub rules: Vec<WorkloadRule>,
    /// The policy document.
    pub document: Value,
    /// The calls.
    pub calls: Vec<Call>,
}

/// A small, fast, deterministic generator (xorshift64*).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any seed, zero included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// An element of `items`.
    pub fn pick<'x, T>(&mut self, items: &'x [T]) -> Option<&'x T> {
        items.get(self.below(items.len()))
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next_u64() as u8;
        }
    }

    /// One of `items`, or `""` when there are none.
    pub fn pick_str<'x>(&mut self, items: &[&'x str]) -> &'x str {
        self.pick(items).copied().unwrap_or("")
    }

    /// Whether an event of `percent` in a hundred happens.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

fn word(rng: &mut Rng) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "re", "su", "ta", "no", "vi", "de", "po", "ri", "ge", "an", "ex", "ul",
        "zo",
    ];
    let n = 2 + rng.below(3);
    (0..n).map(|_| *rng.pick(&SYL).unwrap_or(&"x")).collect()
}

impl Workload {
    /// Generates a workload of `n_rules` rules and `n_calls` calls from
    /// `seed`.
    pub fn generate(n_rules: usize, n_calls: usize, seed: u64) -> Workload {
        let mut rng = Rng::new(seed);
        let mut rules = Vec::with_capacity(n_rules);
        while rules.len() < n_rules {
            rules.push(rule(&mut rng));
        }
        let document = document(&rules);
        let mut calls = Vec::with_capacity(n_calls);
        while calls.len() < n_calls {
            calls.push(call(&mut rng, &rules));
        }
        Workload {
            rules,
            document,
            calls,
        }
    }

    /// The same workload with the shell tool split by the built-in shell
    /// splitter (`split = "shell"`, redirect targets checked as `edit`), and
    /// a quarter of its shell calls made compound: two or three of the
    /// stream's own commands joined with `&&`, `;`, `|` or a command
    /// substitution, sometimes behind a wrapper or a redirect.
    pub fn with_shell(mut self, seed: u64) -> Workload {
        let mut rng = Rng::new(seed ^ 0x5e11);
        if let Some(m) = self
            .document
            .get_mut("matchers")
            .and_then(|m| m.get_mut(SHELL))
            .and_then(Value::as_object_mut)
        {
            m.insert("split".into(), "shell".into());
        }
        let commands: Vec<String> = self
            .calls
            .iter()
            .filter(|c| c.tool == SHELL)
            .filter_map(|c| c.args.str_member("command").map(str::to_string))
            .collect();
        for c in self.calls.iter_mut().filter(|c| c.tool == SHELL) {
            if !rng.chance(25) {
                continue;
            }
            let mut line = c.args.str_member("command").unwrap_or("").to_string();
            for _ in 0..1 + rng.below(2) {
                let next = rng.pick(&commands).cloned().unwrap_or_default();
                let joined = match rng.below(6) {
                    0 => format!("{line} && {next}"),
                    1 => format!("{line}; {next}"),
                    2 => format!("{line} | {next}"),
                    3 => format!("{line} $({next})"),
                    4 => format!("timeout 30 {line} && {next}"),
                    _ => format!("{line} > /tmp/{} && {next}", word(&mut rng)),
                };
                line = joined;
            }
            let mut args = serde_json::Map::new();
            args.insert("command".into(), Value::String(line));
            c.args = toolgate::call::Args::from_value(Value::Object(args));
        }
        self
    }

    /// The policy, read from the document.
    pub fn policy(&self) -> Policy {
        toolgate::policy::doc::from_value(&self.document, None).unwrap_or_default()
    }

    /// The calls as JSON lines, the form `toolgate decide` reads.
    pub fn calls_jsonl(&self) -> String {
        let mut out = String::new();
        for c in &self.calls {
            out.push_str(
                &json!({"tool": c.tool, "args": c.args.value().cloned().unwrap_or(Value::Null)})
                    .to_string(),
            );
            out.push('\n');
        }
        out
    }
}

fn list(rng: &mut Rng) -> List {
    match rng.below(10) {
        0..=2 => List::Deny,
        3..=4 => List::Ask,
        _ => List::Allow,
    }
}

fn rule(rng: &mut Rng) -> WorkloadRule {
    let l = list(rng);
    let source = match rng.below(4) {
        3 => None,
        s => Some(s),
    };
    let carve = rng.chance(3);
    let kind = rng.below(100);
    let (tool, spec) = if kind < 55 {
        (SHELL.to_string(), Some(shell_spec(rng)))
    } else if kind < 80 {
        let t = rng.pick(&PATH_TOOLS).copied().unwrap_or("read");
        (t.to_string(), Some(path_spec(rng)))
    } else if kind < 88 {
        let (t, _) = rng
            .pick(&OTHER_TOOLS)
            .copied()
            .unwrap_or(("web_fetch", "url"));
        let spec = if t == "web_fetch" {
            format!("https://{}.example.com/{}:*", word(rng), word(rng))
        } else {
            format!("{} {}:*", word(rng), word(rng))
        };
        (t.to_string(), Some(spec))
    } else if kind < 96 {
        // Tool-name globs only in deny and ask; a bare MCP tool in any list.
        let server = rng.pick(&MCP_SERVERS).copied().unwrap_or("github");
        if l == List::Allow {
            (format!("mcp__{server}__{}", word(rng)), None)
        } else if rng.chance(50) {
            (format!("mcp__{server}__*"), None)
        } else {
            (format!("mcp__{server}__{}_*", word(rng)), None)
        }
    } else {
        let t = rng.pick(&PATH_TOOLS).copied().unwrap_or("read");
        (t.to_string(), None)
    };
    let spec = match (carve, spec) {
        (true, Some(s)) => Some(format!("!{s}")),
        (_, s) => s,
    };
    WorkloadRule {
        list: l,
        source,
        tool,
        spec,
    }
}

fn shell_spec(rng: &mut Rng) -> String {
    let p = rng.pick(&PROGRAMS).copied().unwrap_or("git");
    let a = word(rng);
    let b = word(rng);
    match rng.below(6) {
        0 => format!("{p} {a}:*"),
        1 => format!("{p} {a} {b}"),
        2 => format!("{p} {a} *"),
        3 => format!("{p} * {b}"),
        4 => format!("* --{a}"),
        _ => format!("{p} {a} * --{b} *"),
    }
}

fn path_spec(rng: &mut Rng) -> String {
    let a = word(rng);
    let b = word(rng);
    match rng.below(4) {
        0 => format!("/repo/{a}/{b}:*"),
        1 => format!("/repo/{a}/*.{b}"),
        2 => format!("*/.{a}"),
        _ => format!("/home/*/{a}/{b}"),
    }
}

fn document(rules: &[WorkloadRule]) -> Value {
    let mut matchers = serde_json::Map::new();
    matchers.insert(SHELL.into(), json!({"match": "glob", "field": "command"}));
    for t in PATH_TOOLS {
        matchers.insert(t.into(), json!({"match": "glob", "field": "path"}));
    }
    for (t, f) in OTHER_TOOLS {
        matchers.insert(t.into(), json!({"match": "prefix", "field": f}));
    }
    let lists = |pick: &dyn Fn(&WorkloadRule) -> bool| -> Value {
        let mut out = serde_json::Map::new();
        for l in List::ALL {
            let items: Vec<Value> = rules
                .iter()
                .filter(|r| r.list == l && pick(r))
                .map(|r| Value::String(r.text()))
                .collect();
            out.insert(l.name().into(), Value::Array(items));
        }
        Value::Object(out)
    };
    let mut sources = Vec::new();
    for (i, (name, rank, trusted)) in SOURCES.iter().enumerate() {
        let mut s = lists(&|r: &WorkloadRule| r.source == Some(i));
        if let Some(m) = s.as_object_mut() {
            m.insert("name".into(), (*name).into());
            m.insert("rank".into(), (*rank).into());
            m.insert("trusted".into(), (*trusted).into());
        }
        sources.push(s);
    }
    let mut doc = lists(&|r: &WorkloadRule| r.source.is_none());
    if let Some(m) = doc.as_object_mut() {
        m.insert("default".into(), "ask".into());
        m.insert("matchers".into(), Value::Object(matchers));
        m.insert(
            "aliases".into(),
            json!({"Bash": ["bash"], "Read": ["read", "grep", "glob"]}),
        );
        m.insert("sources".into(), Value::Array(sources));
    }
    doc
}

/// A value that meets `spec`'s pieces: each `*` filled with a word.
fn fill(rng: &mut Rng, spec: &str) -> String {
    let spec = spec.trim_start_matches('!');
    let spec = spec
        .strip_suffix(":*")
        .map(|s| format!("{s} *"))
        .unwrap_or_else(|| spec.to_string());
    let pieces: Vec<&str> = spec.split('*').collect();
    let mut out = String::new();
    for (i, p) in pieces.iter().enumerate() {
        out.push_str(p);
        if i + 1 < pieces.len() {
            out.push_str(&word(rng));
        }
    }
    out
}

fn pad(rng: &mut Rng, mut s: String) -> String {
    let target = 10 + rng.below(191);
    while s.len() < target {
        s.push(' ');
        s.push_str(&word(rng));
    }
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

fn call(rng: &mut Rng, rules: &[WorkloadRule]) -> Call {
    let hit = rng.chance(50);
    let base = rng.pick(rules).cloned();
    let (tool, field, value) = match (hit, base) {
        (true, Some(r)) if !r.tool.contains('*') => {
            let field = field_of(&r.tool);
            let value = r
                .spec
                .as_deref()
                .map(|s| fill(rng, s))
                .unwrap_or_else(|| word(rng));
            // A filled glob may end in the padding's words, which is still a
            // hit for a trailing `*` and a near miss otherwise.
            let value = if rng.chance(30) {
                pad(rng, value)
            } else {
                value
            };
            (r.tool.clone(), field, value)
        }
        (true, Some(r)) => {
            let tool = r.tool.replace('*', &word(rng));
            (tool, "q", word(rng))
        }
        _ => match rng.below(4) {
            0 => {
                let p = rng.pick(&PROGRAMS).copied().unwrap_or("git");
                let start = format!("{p} {}", word(rng));
                let v = pad(rng, start);
                (SHELL.to_string(), "command", v)
            }
            1 => {
                let t = rng.pick(&PATH_TOOLS).copied().unwrap_or("read");
                let start = format!("/repo/{}/{}", word(rng), word(rng));
                (t.to_string(), "path", pad(rng, start))
            }
            2 => {
                let s = rng.pick(&MCP_SERVERS).copied().unwrap_or("github");
                (format!("mcp__{s}__{}", word(rng)), "q", word(rng))
            }
            _ => (
                "web_fetch".to_string(),
                "url",
                format!("https://{}.example.org/{}", word(rng), word(rng)),
            ),
        },
    };
    let mut args = serde_json::Map::new();
    args.insert(field.into(), Value::String(value));
    Call {
        tool,
        args: toolgate::call::Args::from_value(Value::Object(args)),
        run_id: String::new(),
        call_id: String::new(),
        confined: None,
        scope: None,
        cwd: None,
    }
}

fn field_of(tool: &str) -> &'static str {
    if tool == SHELL {
        "command"
    } else if PATH_TOOLS.contains(&tool) {
        "path"
    } else {
        OTHER_TOOLS
            .iter()
            .find(|(t, _)| *t == tool)
            .map_or("q", |(_, f)| f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_workload() {
        let a = Workload::generate(500, 100, 7);
        let b = Workload::generate(500, 100, 7);
        assert_eq!(a.document, b.document);
        assert_eq!(a.calls_jsonl(), b.calls_jsonl());
        assert_ne!(a.document, Workload::generate(500, 100, 8).document);
    }

    #[test]
    fn a_shell_workload_splits_compound_commands() {
        let w = Workload::generate(500, 400, 3).with_shell(3);
        let e = toolgate::Engine::build(&w.policy()).unwrap();
        let compound = w
            .calls
            .iter()
            .filter(|c| {
                c.args
                    .str_member("command")
                    .is_some_and(|s| s.contains("&&") || s.contains("; "))
            })
            .count();
        assert!(compound > 20, "only {compound} compound commands");
        let subjects: usize = w
            .calls
            .iter()
            .map(|c| e.decide_result(c).subjects.len())
            .sum();
        assert!(subjects > w.calls.len() / 2, "the shell tool is split");
    }

    #[test]
    fn workloads_build_and_mix_decisions() {
        let w = Workload::generate(2_000, 2_000, 1);
        let e = toolgate::Engine::build(&w.policy()).unwrap();
        let mut by_rule = 0;
        let mut seen = std::collections::BTreeSet::new();
        for c in &w.calls {
            let v = e.decide(c);
            seen.insert(v.decision);
            by_rule += usize::from(v.rule.is_some());
            assert!((10..=200).contains(&c.args.raw().len()) || c.args.raw().len() < 260);
        }
        assert_eq!(seen.len(), 3, "every decision occurs");
        assert!(by_rule > 500, "only {by_rule} calls met a rule");
    }
}
