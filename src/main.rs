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
    /// Compile a policy (or a Rubric bundle) to a binary artifact that
    /// `decide --bundle` loads.
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
    /// verdicts are written as one array on one line. A Rubric bundle
    /// (recognised by its `policies` entries with `policyId`) reads Rubric
    /// requests and writes Rubric results, one per line.
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
            (Some(policy), None) => match rubric_bundle(&policy) {
                Err(code) => code,
                Ok(Some(b)) => match rubric_engine(&b, engine) {
                    Ok(e) => decide_rubric(e.as_ref(), &calls),
                    Err(code) => code,
                },
                Ok(None) => match build(&policy, format, engine) {
                    Ok(e) => decide(e.as_ref(), &calls),
                    Err(code) => code,
                },
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

/// Reads `path` as a Rubric bundle when it has a bundle's shape (a JSON
/// document whose `policies` entries carry `policyId`): `None` for any
/// other document, which is read as a policy.
fn rubric_bundle(path: &str) -> Result<Option<toolgate::rubric::Bundle>, ExitCode> {
    if path.ends_with(".toml") {
        return Ok(None);
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read `{path}`: {e}");
            return Err(ExitCode::from(EXIT_IO));
        }
    };
    let value = match toolgate::json::parse_strict(&text) {
        Ok(v) if toolgate::rubric::Bundle::looks_like(&v) => v,
        _ => return Ok(None),
    };
    match toolgate::rubric::Bundle::from_value(&value) {
        Ok(b) => {
            for w in &b.warnings {
                let d = toolgate::Diagnostics::one(w.clone()).in_file(path);
                eprint!("{}", d.first().render(None).replacen("error", "warning", 1));
            }
            for e in b.compile_errors() {
                eprintln!("warning: {e}");
            }
            Ok(Some(b))
        }
        Err(d) => Err(report(&d.in_file(path), &text)),
    }
}

fn rubric_engine(
    b: &toolgate::rubric::Bundle,
    engine: EngineArg,
) -> Result<Box<dyn toolgate::rubric::RubricEvaluator>, ExitCode> {
    use toolgate::rubric::{reference::RubricReference, RubricEngine};
    let built = match engine {
        EngineArg::Reference => return Ok(Box::new(RubricReference::new(b))),
        _ => RubricEngine::build(b),
    };
    let built = built.map_err(|d| report(&d, ""))?;
    match engine {
        EngineArg::Artifact => {
            let bytes = built.to_bytes().unwrap_or_default();
            match RubricEngine::from_bytes(&bytes) {
                Ok(e) => Ok(Box::new(e.into_owned())),
                Err(e) => {
                    eprintln!("error: the bundle's artifact does not load back: {e}");
                    Err(ExitCode::from(EXIT_INVALID))
                }
            }
        }
        _ => Ok(Box::new(built)),
    }
}

fn check(path: &str, format: Option<Format>) -> ExitCode {
    match rubric_bundle(path) {
        Err(code) => return code,
        Ok(Some(b)) => {
            return match rubric_engine(&b, EngineArg::Compiled) {
                Ok(_) => {
                    eprintln!("{path}: ok (a Rubric bundle)");
                    ExitCode::SUCCESS
                }
                Err(code) => code,
            }
        }
        Ok(None) => {}
    }
    match build(path, format, EngineArg::Compiled) {
        Ok(_) => {
            eprintln!("{path}: ok");
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn compile(path: &str, output: &str, format: Option<Format>) -> ExitCode {
    let bytes = match rubric_bundle(path) {
        Err(code) => return code,
        Ok(Some(b)) => match toolgate::rubric::RubricEngine::build(&b) {
            Ok(e) => e.to_bytes().unwrap_or_default(),
            Err(d) => return report(&d.in_file(path), ""),
        },
        Ok(None) => {
            let policy = match load(path, format) {
                Ok(p) => p,
                Err(code) => return code,
            };
            match Engine::build(&policy) {
                Ok(e) => e.to_bytes(),
                Err(d) => {
                    let text = std::fs::read_to_string(path).unwrap_or_default();
                    return report(&d.in_file(path), &text);
                }
            }
        }
    };
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
    let conditions = toolgate::artifact::header(&mapped)
        .is_ok_and(|h| h.required & toolgate::artifact::FEATURE_CONDITIONS != 0);
    if conditions {
        return match toolgate::rubric::RubricEngine::from_bytes(&mapped) {
            Ok(engine) => decide_rubric(&engine, calls),
            Err(e) => {
                eprintln!("error: `{path}` is not a usable artifact: {e}");
                ExitCode::from(EXIT_INVALID)
            }
        };
    }
    match Engine::from_bytes(&mapped) {
        Ok(engine) => decide(&engine, calls),
        Err(e) => {
            eprintln!("error: `{path}` is not a usable artifact: {e}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

/// Decides Rubric requests: one JSON object per line in, one result per
/// line out. A line that cannot be read is answered with a deny.
fn decide_rubric(engine: &dyn toolgate::rubric::RubricEvaluator, calls: &str) -> ExitCode {
    use toolgate::rubric::Request;
    lines(calls, |line| {
        let request = match line {
            Ok(text) => Request::from_json(text).unwrap_or_else(Request::unreadable),
            Err(why) => Request::unreadable(why),
        };
        engine.decide(&request).to_json().to_string()
    })
}

/// Reads `calls` (a file, or `-` for standard input) line by line, skipping
/// blank lines, and writes `answer`'s text for each line, flushing before
/// any read that could wait.
fn lines(calls: &str, mut answer: impl FnMut(Result<&str, &str>) -> String) -> ExitCode {
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
    loop {
        if input.buffer().is_empty() && out.flush().is_err() {
            return ExitCode::from(EXIT_IO);
        }
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: reading requests: {e}");
                return ExitCode::from(EXIT_IO);
            }
        }
        let text = match std::str::from_utf8(&line) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => answer(Ok(text)),
            Err(_) => answer(Err("the line is not UTF-8")),
        };
        if writeln!(out, "{text}").is_err() {
            return ExitCode::from(EXIT_IO);
        }
    }
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EXIT_IO),
    }
}

fn decide(engine: &dyn Evaluator, calls: &str) -> ExitCode {
    lines(calls, |line| match line {
        Ok(text) => decide_line(engine, text),
        Err(why) => unreadable(why).to_json().to_string(),
    })
}

/// Decides one input line: a call, or an array of calls as one batch. A line
/// that cannot be read is answered with a deny.
fn decide_line(engine: &dyn Evaluator, line: &str) -> String {
    let value = match toolgate::json::parse_strict(line) {
        Ok(v) => v,
        Err(e) => {
            return unreadable(&format!("the line is not a JSON call: {e}"))
                .to_json()
                .to_string()
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
                    serde_json::Value::Array(verdicts).to_string()
                }
                Err(e) => unreadable(&format!("the batch holds a call that cannot be read: {e}"))
                    .to_json()
                    .to_string(),
            }
        }
        other => match Call::from_value(other) {
            Ok(call) => engine.would(&call).to_json().to_string(),
            Err(e) => unreadable(&e).to_json().to_string(),
        },
    }
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
