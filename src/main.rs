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
use std::io::{BufRead, BufWriter, Write};
use std::process::ExitCode;
use toolgate::conformance::{run_file, EngineKind, Report};
use toolgate::{Call, Decision, Diagnostics, Evaluator, Policy, Verdict};

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
    /// Decide calls: one call JSON per line in, one verdict JSON per line out.
    ///
    /// A line holding an array of calls is decided as one batch, and its
    /// verdicts are written as one array on one line.
    Decide {
        /// The policy file (JSON or TOML).
        #[arg(long)]
        policy: String,
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
enum EngineArg {
    /// The compiled runtime.
    Compiled,
    /// The reference evaluator.
    Reference,
}

impl EngineArg {
    fn kind(self) -> EngineKind {
        match self {
            EngineArg::Compiled => EngineKind::Compiled,
            EngineArg::Reference => EngineKind::Reference,
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
        Command::Decide {
            policy,
            format,
            engine,
            calls,
        } => decide(&policy, format, engine, &calls),
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

fn decide(path: &str, format: Option<Format>, engine: EngineArg, calls: &str) -> ExitCode {
    let engine = match build(path, format, engine) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let input: Box<dyn BufRead> = if calls == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(calls) {
            Ok(f) => Box::new(std::io::BufReader::new(f)),
            Err(e) => {
                eprintln!("error: cannot read `{calls}`: {e}");
                return ExitCode::from(EXIT_IO);
            }
        }
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in input.lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: reading calls: {e}");
                return ExitCode::from(EXIT_IO);
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = decide_line(engine.as_ref(), &line);
        if writeln!(out, "{answer}").and_then(|_| out.flush()).is_err() {
            return ExitCode::from(EXIT_IO);
        }
    }
    ExitCode::SUCCESS
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
    for failure in &total.failures {
        println!("FAIL {failure}");
    }
    println!("{}", total.summary());
    if total.failed > 0 || broken {
        ExitCode::from(EXIT_IO)
    } else {
        ExitCode::SUCCESS
    }
}
