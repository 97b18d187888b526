//! The `toolgate` command line: all of the project's file and terminal I/O.
//!
//! Exit codes, one meaning each across every subcommand:
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | success |
//! | 1 | an input or output error, or failing conformance cases |
//! | 4 | the policy (or artifact) is invalid |
//! | 64 | a usage error |

use clap::{Parser, Subcommand, ValueEnum};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::ExitCode;
use toolgate::conformance::{run_file, EngineKind, Report};
use toolgate::{Call, Decision, Diagnostics, Engine, Evaluator, Policy, Verdict};

const EXIT_IO: u8 = 1;
const EXIT_INVALID: u8 = 4;
const EXIT_USAGE: u8 = 64;

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Decide AI-agent tool calls against policies: allow, ask or deny, with the rule that decided and why.",
    after_help = "Exit codes: 0 success; 1 input/output error or failing cases; 4 invalid policy; 64 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a policy: exit 0, or print diagnostics with file, line and column.
    Check {
        /// The policy file (JSON or TOML).
        policy: String,
        /// The policy's format; recognised by shape when absent.
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// Compile a policy to a binary artifact that `decide --bundle` loads.
    Compile {
        /// The policy file (JSON or TOML).
        policy: String,
        /// The artifact to write.
        #[arg(short, long)]
        output: String,
        /// The policy's format; recognised by shape when absent.
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// Show an artifact: header, format version, revision, sources, tools,
    /// rule counts and section sizes.
    Inspect {
        /// The artifact.
        artifact: String,
        /// `text` for people, `json` for programs.
        #[arg(long, value_enum, default_value = "text")]
        format: OutputFormat,
    },
    /// Decide calls: one call JSON per line in, one verdict JSON per line out.
    ///
    /// A line holding an array of calls is decided as one batch, and its
    /// verdicts are written as one array on one line.
    Decide {
        /// The policy file (JSON or TOML).
        #[arg(long, required_unless_present = "bundle", conflicts_with = "bundle")]
        policy: Option<String>,
        /// A compiled artifact, mapped rather than read.
        #[arg(long)]
        bundle: Option<String>,
        /// The policy's format; recognised by shape when absent.
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Which engine decides: the compiled runtime, or the reference
        /// evaluator for cross-checking by hand.
        #[arg(long, value_enum, default_value = "compiled")]
        engine: EngineArg,
        /// A file of calls, or `-` (the default) for standard input.
        #[arg(default_value = "-")]
        calls: String,
    },
    /// Run conformance files (toolgate's and agentpolicy's) on every engine.
    Test {
        /// Conformance files: grammar, matchers or decisions, by shape.
        #[arg(required = true)]
        files: Vec<String>,
        /// Run only this engine.
        #[arg(long, value_enum)]
        engine: Option<EngineArg>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// toolgate's policy document (JSON or TOML).
    Toolgate,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    /// For people.
    Text,
    /// One JSON object.
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum EngineArg {
    /// The compiled runtime.
    Compiled,
    /// The reference evaluator.
    Reference,
    /// The compiled runtime written to an artifact and loaded back.
    Artifact,
}

impl EngineArg {
    fn kind(self) -> EngineKind {
        match self {
            EngineArg::Compiled => EngineKind::Compiled,
            EngineArg::Reference => EngineKind::Reference,
            EngineArg::Artifact => EngineKind::Artifact,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(EXIT_USAGE),
            };
        }
    };
    match cli.command {
        Command::Check { policy, format } => check(&policy, format),
        Command::Compile {
            policy,
            output,
            format,
        } => compile(&policy, &output, format),
        Command::Inspect { artifact, format } => inspect(&artifact, format),
        Command::Decide {
            policy,
            bundle,
            format,
            engine,
            calls,
        } => match (policy, bundle) {
            (_, Some(bundle)) => decide_bundle(&bundle, &calls),
            (Some(policy), None) => match build(&policy, format, engine) {
                Ok(e) => decide(e.as_ref(), &calls),
                Err(code) => code,
            },
            (None, None) => ExitCode::from(EXIT_USAGE),
        },
        Command::Test { files, engine } => test(&files, engine),
    }
}

/// Reads a policy file: TOML by extension, otherwise JSON.
fn load(path: &str, _format: Option<Format>) -> Result<Policy, ExitCode> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read `{path}`: {e}");
            return Err(ExitCode::from(EXIT_IO));
        }
    };
    let parsed = if path.ends_with(".toml") {
        Policy::from_toml(&text)
    } else {
        Policy::from_json(&text)
    };
    match parsed {
        Ok(mut p) => {
            p.file = path.to_string();
            Ok(p)
        }
        Err(d) => Err(report(&d.in_file(path), &text)),
    }
}

fn report(d: &Diagnostics, text: &str) -> ExitCode {
    eprint!("{}", d.render(Some(text)));
    eprintln!(
        "{} error{} in the policy",
        d.len(),
        if d.len() == 1 { "" } else { "s" }
    );
    ExitCode::from(EXIT_INVALID)
}

fn build(
    path: &str,
    format: Option<Format>,
    engine: EngineArg,
) -> Result<Box<dyn Evaluator>, ExitCode> {
    let policy = load(path, format)?;
    let registry = toolgate::Registry::builtin();
    engine.kind().build(&policy, &registry).map_err(|d| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        report(&d.in_file(path), &text)
    })
}

fn check(path: &str, format: Option<Format>) -> ExitCode {
    match build(path, format, EngineArg::Compiled) {
        Ok(_) => {
            eprintln!("{path}: ok");
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn compile(path: &str, output: &str, format: Option<Format>) -> ExitCode {
    let policy = match load(path, format) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let engine = match Engine::build(&policy) {
        Ok(e) => e,
        Err(d) => {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            return report(&d.in_file(path), &text);
        }
    };
    let bytes = engine.to_bytes();
    // Write beside the target and rename, so that a reader never maps a
    // half-written artifact.
    let tmp = format!("{output}.tmp");
    if let Err(e) = std::fs::write(&tmp, &bytes).and_then(|_| std::fs::rename(&tmp, output)) {
        eprintln!("error: cannot write `{output}`: {e}");
        let _ = std::fs::remove_file(&tmp);
        return ExitCode::from(EXIT_IO);
    }
    let revision = toolgate::artifact::header(&bytes)
        .map(|h| h.revision_hex())
        .unwrap_or_default();
    eprintln!("{output}: {} bytes, revision {revision}", bytes.len());
    ExitCode::SUCCESS
}

/// Maps an artifact file read-only.
fn map(path: &str) -> Result<memmap2::Mmap, ExitCode> {
    let file = std::fs::File::open(path).map_err(|e| {
        eprintln!("error: cannot open `{path}`: {e}");
        ExitCode::from(EXIT_IO)
    })?;
    // SAFETY: the map is read-only and private to this process. A file
    // another process truncates or rewrites while it is mapped could change
    // under us; `compile` never rewrites an artifact in place (it renames a
    // new file over it), which is the discipline this relies on.
    #[expect(unsafe_code, reason = "memmap2 can only map a file in an unsafe block")]
    let mapped = unsafe { memmap2::Mmap::map(&file) };
    mapped.map_err(|e| {
        eprintln!("error: cannot map `{path}`: {e}");
        ExitCode::from(EXIT_IO)
    })
}

fn inspect(path: &str, format: OutputFormat) -> ExitCode {
    let mapped = match map(path) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let info = match toolgate::artifact::inspect(&mapped) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: `{path}` is not a usable artifact: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    match format {
        OutputFormat::Json => out(&format!("{}\n", inspection_json(&info))),
        OutputFormat::Text => out(&inspection_text(path, &info)),
    }
}

fn counts_json(c: &toolgate::artifact::RuleCounts) -> serde_json::Value {
    serde_json::json!({"deny": c.deny, "ask": c.ask, "allow": c.allow, "carve_outs": c.carve_outs, "withheld": c.withheld})
}

fn inspection_json(i: &toolgate::artifact::Inspection) -> serde_json::Value {
    let h = &i.header;
    serde_json::json!({
        "schema_version": 1,
        "bytes": i.len,
        "format": {"major": h.major, "minor": h.minor},
        "required_features": h.required,
        "optional_features": h.optional,
        "toolgate_version": h.toolgate_version,
        "regex_automata_version": h.regex_automata_version,
        "revision": h.revision_hex(),
        "default": i.default.as_str(),
        "rules": counts_json(&i.counts),
        "sources": i.sources.iter().map(|s| serde_json::json!({
            "name": s.name, "rank": s.rank, "trusted": s.trusted, "path": s.path, "hash": s.hash
        })).collect::<Vec<_>>(),
        "tools": i.tools.iter().map(|t| serde_json::json!({
            "name": t.name, "field": t.field, "kind": t.kind, "split": t.split, "rules": counts_json(&t.counts)
        })).collect::<Vec<_>>(),
        "sections": h.sections.iter().map(|s| serde_json::json!({
            "kind": s.kind_name(), "offset": s.offset, "length": s.len, "align": s.align, "crc32": format!("{:08x}", s.crc)
        })).collect::<Vec<_>>(),
    })
}

fn inspection_text(path: &str, i: &toolgate::artifact::Inspection) -> String {
    use std::fmt::Write as _;
    let h = &i.header;
    let mut o = String::new();
    let c = &i.counts;
    let _ = writeln!(o, "artifact   {path} ({} bytes)", i.len);
    let _ = writeln!(
        o,
        "format     {}.{}, required features {:#x}, optional features {:#x}",
        h.major, h.minor, h.required, h.optional
    );
    let _ = writeln!(
        o,
        "written by toolgate {}, regex-automata {}",
        h.toolgate_version, h.regex_automata_version
    );
    let _ = writeln!(o, "revision   {}", h.revision_hex());
    let _ = writeln!(o, "default    {}", i.default);
    let _ = writeln!(
        o,
        "rules      {} deny, {} ask, {} allow, {} carve-outs, {} withheld",
        c.deny, c.ask, c.allow, c.carve_outs, c.withheld
    );
    let _ = writeln!(o, "sources");
    for s in &i.sources {
        let name = if s.name.is_empty() {
            "(host)"
        } else {
            s.name.as_str()
        };
        let _ = writeln!(
            o,
            "  {name:<20} rank {:<4} {:<9} {} {}",
            s.rank,
            if s.trusted { "trusted" } else { "untrusted" },
            s.path,
            s.hash
        );
    }
    let _ = writeln!(o, "tools");
    for t in &i.tools {
        let _ = writeln!(
            o,
            "  {:<24} {:<8} {:<10} {:<8} deny {} ask {} allow {} carve-outs {}",
            t.name,
            t.kind.as_deref().unwrap_or("-"),
            t.field.as_deref().unwrap_or("-"),
            t.split.as_deref().unwrap_or("-"),
            t.counts.deny,
            t.counts.ask,
            t.counts.allow,
            t.counts.carve_outs
        );
    }
    let _ = writeln!(o, "sections");
    for s in &h.sections {
        let _ = writeln!(
            o,
            "  {:<6} offset {:<8} length {:<9} align {} crc32 {:08x}",
            s.kind_name(),
            s.offset,
            s.len,
            s.align,
            s.crc
        );
    }
    o
}

fn decide_bundle(path: &str, calls: &str) -> ExitCode {
    let mapped = match map(path) {
        Ok(m) => m,
        Err(code) => return code,
    };
    match Engine::from_bytes(&mapped) {
        Ok(engine) => decide(&engine, calls),
        Err(e) => {
            eprintln!("error: `{path}` is not a usable artifact: {e}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

fn decide(engine: &dyn Evaluator, calls: &str) -> ExitCode {
    let source: Box<dyn Read> = if calls == "-" {
        Box::new(std::io::stdin())
    } else {
        match std::fs::File::open(calls) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("error: cannot read `{calls}`: {e}");
                return ExitCode::from(EXIT_IO);
            }
        }
    };
    let mut input = BufReader::with_capacity(1 << 16, source);
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut line = Vec::new();
    let mut answer = String::with_capacity(256);
    loop {
        // Verdicts stream: whatever is decided is flushed before a read
        // that could wait for more input, and not after every line.
        if input.buffer().is_empty() && out.flush().is_err() {
            return ExitCode::from(EXIT_IO);
        }
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: reading calls: {e}");
                return ExitCode::from(EXIT_IO);
            }
        }
        answer.clear();
        match std::str::from_utf8(&line) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => decide_line(engine, text, &mut answer),
            Err(_) => write_verdict(&unreadable("the line is not UTF-8"), &mut answer),
        }
        answer.push('\n');
        if out.write_all(answer.as_bytes()).is_err() {
            return ExitCode::from(EXIT_IO);
        }
    }
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EXIT_IO),
    }
}

/// Decides one input line: a call, or an array of calls as one batch, and
/// appends the answer to `out`. A line that cannot be read is answered with
/// a deny.
fn decide_line(engine: &dyn Evaluator, line: &str, out: &mut String) {
    let value = match toolgate::json::parse_strict(line) {
        Ok(v) => v,
        Err(e) => {
            return write_verdict(
                &unreadable(&format!("the line is not a JSON call: {e}")),
                out,
            )
        }
    };
    match value {
        serde_json::Value::Array(items) => {
            let calls: Result<Vec<Call>, String> =
                items.into_iter().map(Call::from_value).collect();
            match calls {
                Ok(calls) => {
                    let verdicts: Vec<serde_json::Value> = engine
                        .decide_batch(&calls)
                        .iter()
                        .map(Verdict::to_json)
                        .collect();
                    out.push_str(&serde_json::Value::Array(verdicts).to_string());
                }
                Err(e) => write_verdict(
                    &unreadable(&format!("the batch holds a call that cannot be read: {e}")),
                    out,
                ),
            }
        }
        other => match Call::from_value(other) {
            Ok(call) => write_verdict(&engine.would(&call), out),
            Err(e) => write_verdict(&unreadable(&e), out),
        },
    }
}

/// Appends a verdict's JSON form to `out`: the same bytes as
/// `v.to_json().to_string()` (members in the same order, empty ones left
/// out, strings escaped as serde_json escapes them), without building a
/// `Value` on the way. Rendering through a `Value` cost more than deciding
/// (see `benches/jsonl.rs`).
fn write_verdict(v: &Verdict, out: &mut String) {
    fn member(out: &mut String, key: &str, value: &str) {
        if !value.is_empty() {
            out.push_str(",\"");
            out.push_str(key);
            out.push_str("\":");
            json_str(out, value);
        }
    }
    out.push_str("{\"decision\":\"");
    out.push_str(v.decision.as_str());
    out.push('"');
    if let Some(r) = &v.rule {
        // `to_json` writes the rule's text even when it is empty.
        out.push_str(",\"rule\":");
        json_str(out, &r.text);
        member(out, "source", &r.source);
    }
    member(out, "reason", &v.reason);
    member(out, "subject", &v.subject);
    if v.held {
        out.push_str(",\"held\":true");
    }
    member(out, "confined", &v.confined);
    member(out, "by", v.by);
    member(out, "run_id", &v.run_id);
    member(out, "call_id", &v.call_id);
    out.push('}');
}

/// Appends `s` as a JSON string: `"` and `\` escaped, control characters
/// as `\b`, `\f`, `\n`, `\r`, `\t` or `\u00XX`, everything else as it is.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        // `i` is at an ASCII byte, so both cuts are on character boundaries.
        out.push_str(s.get(start..i).unwrap_or_default());
        if short.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(short);
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}

/// Writes to standard output; a closed pipe ends the command quietly.
fn out(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EXIT_IO),
    }
}

fn unreadable(why: &str) -> Verdict {
    Verdict::new(Decision::Deny, format!("the call could not be read: {why}"))
}

fn test(files: &[String], engine: Option<EngineArg>) -> ExitCode {
    let engines: Vec<EngineKind> = match engine {
        Some(e) => vec![e.kind()],
        None => EngineKind::ALL.to_vec(),
    };
    let mut total = Report::default();
    let mut broken = false;
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read `{f}`: {e}");
                broken = true;
                continue;
            }
        };
        match run_file(f, &text, &engines) {
            Ok(r) => total.merge(r),
            Err(e) => {
                eprintln!("error: {e}");
                broken = true;
            }
        }
    }
    let mut text = String::new();
    for failure in &total.failures {
        text.push_str(&format!("FAIL {failure}\n"));
    }
    text.push_str(&format!("{}\n", total.summary()));
    if out(&text) != ExitCode::SUCCESS {
        return ExitCode::from(EXIT_IO);
    }
    if total.failed > 0 || broken {
        ExitCode::from(EXIT_IO)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate::RuleRef;

    #[test]
    fn verdicts_are_written_as_to_json_writes_them() {
        let w = toolgate::workload::Workload::generate(300, 500, 9);
        let e = Engine::build(&w.policy()).unwrap();
        let mut verdicts: Vec<Verdict> = w.calls.iter().map(|c| e.decide(c)).collect();
        let mut every = Verdict::new(
            Decision::Ask,
            "a \"q\" \\ \n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f} é \u{2028} \u{1F600}",
        );
        every.rule = Some(RuleRef {
            text: "bash(x\"y)".into(),
            source: "s\u{0}".into(),
            ..RuleRef::default()
        });
        every.subject = "sub\u{1b}".into();
        every.held = true;
        every.confined = "box".into();
        every.run_id = "r".into();
        every.call_id = "c".into();
        verdicts.push(every);
        let mut empty_rule = Verdict::new(Decision::Allow, "");
        empty_rule.rule = Some(RuleRef::default());
        verdicts.push(empty_rule);
        for v in &verdicts {
            let mut s = String::new();
            write_verdict(v, &mut s);
            assert_eq!(s, v.to_json().to_string());
        }
    }
}
