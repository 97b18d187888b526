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
#![forbid(unsafe_code)]

mod guard;
mod init;
mod keys;
mod resident;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use toolgate::artifact::LoadOptions;
use toolgate::authensor::{AuthensorEngine, AuthensorEvaluator, Envelope, Policies};
use toolgate::guards::{Guarded, Guards};
use toolgate::{Call, Decision, Diagnostic, Diagnostics, Engine, Evaluator, Policy, Verdict};
use toolgate_reference::authensor::AuthensorReference;
use toolgate_reference::conformance::{run_file, EngineKind, Report};

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
    /// How diagnostics are printed: `human` (with the line and a caret) or
    /// `json` (one object per line, for editors and CI).
    #[arg(long, global = true, value_enum, default_value = "human")]
    error_format: ErrorFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ErrorFormat {
    /// For people.
    Human,
    /// One JSON object per diagnostic, on standard error.
    Json,
}

/// Whether `--error-format json` was given.
static JSON_ERRORS: AtomicBool = AtomicBool::new(false);

/// Prints one diagnostic of the file whose text is `text`, in the chosen
/// error format.
fn emit(d: &Diagnostic, text: Option<&str>) {
    if JSON_ERRORS.load(Ordering::Relaxed) {
        eprintln!("{}", d.to_json(text));
    } else {
        eprint!("{}", d.render(text));
    }
}

#[derive(Subcommand)]
enum Command {
    /// Check a policy: exit 0, or print diagnostics with file, line and column.
    ///
    /// Example: `toolgate check --strict examples/policy.json examples/settings.json`
    Check {
        /// The policy files (JSON or TOML), each checked on its own.
        #[arg(required = true)]
        policy: Vec<String>,
        /// The policy's dialect; recognised by shape when absent
        /// (`--format`, its old name, still works).
        #[arg(long = "dialect", alias = "format", value_enum)]
        format: Option<Format>,
        /// Make every warning an error (for CI): a rule one typo from a
        /// declared tool, a command line read without a splitter, a
        /// carve-out that reaches nothing, a rule written twice.
        #[arg(long, alias = "deny-warnings")]
        strict: bool,
        /// The host whose calls the policy will decide: warn of every tool
        /// it never sends under the policy's spelling (`bash` for Claude
        /// Code's `Bash`).
        #[arg(long, value_enum)]
        host: Option<HostArg>,
    },
    /// Compile a policy (or a Rubric bundle, or Authensor policies) to a
    /// binary artifact that `decide --bundle` loads.
    ///
    /// Example: `toolgate compile examples/policy.json -o policy.tgb --sign release.key`
    Compile {
        /// The policy file (JSON or TOML).
        policy: String,
        /// The artifact to write.
        #[arg(short, long)]
        output: String,
        /// The policy's dialect; recognised by shape when absent
        /// (`--format`, its old name, still works).
        #[arg(long = "dialect", alias = "format", value_enum)]
        format: Option<Format>,
        /// Sign the artifact with this secret key (a file from `toolgate
        /// keygen`): the signature is written beside it, as `OUTPUT.sig`.
        #[arg(long)]
        sign: Option<String>,
        /// Claude Code settings: apply the allow rules,
        /// `additionalDirectories` and loosening modes of the project's own
        /// settings files (an artifact's trust is fixed when it is
        /// compiled).
        #[arg(long)]
        trust_project: bool,
    },
    /// Make an ed25519 key pair for signing artifacts: the secret key in
    /// FILE (readable by its owner only), the public key in `FILE.pub`.
    ///
    /// Example: `toolgate keygen release.key`
    Keygen {
        /// Where to write the secret key; never overwritten.
        file: String,
    },
    /// Show an artifact: header, format version, revision, sources, tools,
    /// rule counts and section sizes (for Authensor policies, the policies
    /// in decision order).
    ///
    /// Example: `toolgate inspect policy.tgb --output json`
    Inspect {
        /// The artifact.
        artifact: String,
        /// `text` for people, `json` for programs (`--format`, its old
        /// name, still works).
        #[arg(long = "output", alias = "format", value_enum, default_value = "text")]
        format: OutputFormat,
        /// Refuse the artifact unless its detached signature was made by
        /// this public key (a `.pub` file from `toolgate keygen`, or its hex).
        #[arg(long)]
        require_signature: Option<String>,
        /// The detached signature, when it is not `ARTIFACT.sig`.
        #[arg(long, requires = "require_signature")]
        signature: Option<String>,
    },
    /// Decide calls: one call JSON per line in, one verdict JSON per line out.
    ///
    /// A line holding an array of calls is decided as one batch, and its
    /// verdicts are written as one array on one line. A Rubric bundle
    /// (recognised by its `policies` entries with `policyId`) reads Rubric
    /// requests and writes Rubric results, one per line. Authensor policies
    /// (a list, or an object with `rules` or `sessionRules`) read action
    /// envelopes, each with an optional `session`, and write Authensor
    /// results, one per line.
    ///
    /// Example: `toolgate decide --policy examples/policy.json examples/calls.jsonl`
    Decide {
        /// The policy file (JSON or TOML), or a Claude Code settings file
        /// (recognised by its `permissions` member).
        #[arg(long, required_unless_present_any = ["bundle", "settings"], conflicts_with = "bundle")]
        policy: Option<String>,
        /// A Claude Code settings file; repeat to merge several as ranked
        /// sources (managed, command line, local, project, user, by path).
        #[arg(long, conflicts_with = "bundle")]
        settings: Vec<String>,
        /// Apply the allow rules, `additionalDirectories` and loosening
        /// modes of the project's own settings files.
        #[arg(long)]
        trust_project: bool,
        /// A compiled artifact, read into memory and verified whole before
        /// the first call is decided.
        #[arg(long)]
        bundle: Option<String>,
        /// Skip the recomputation of the artifact's revision id at load
        /// (one BLAKE3 pass over it). The checksums and structural checks
        /// still run; tables changed on purpose behind recomputed checksums
        /// are then not detected.
        #[arg(long, requires = "bundle")]
        no_verify: bool,
        /// The largest artifact accepted, in bytes.
        #[arg(long, requires = "bundle", default_value_t = toolgate::artifact::DEFAULT_MAX_LEN)]
        max_artifact_bytes: usize,
        /// Refuse the artifact unless its detached signature was made by
        /// this public key (a `.pub` file from `toolgate keygen`, or its hex).
        #[arg(long, requires = "bundle")]
        require_signature: Option<String>,
        /// The detached signature, when it is not `BUNDLE.sig`.
        #[arg(long, requires = "require_signature")]
        signature: Option<String>,
        /// The longest input line, in bytes; a longer line is answered with
        /// a deny without being parsed.
        #[arg(long, default_value_t = DEFAULT_MAX_LINE)]
        max_line_bytes: usize,
        /// The most calls one batch line may hold; a larger batch is
        /// answered with a deny.
        #[arg(long, default_value_t = DEFAULT_MAX_BATCH)]
        max_batch: usize,
        /// The most JSON values one line may hold (counted as its commas,
        /// brackets and braces outside strings), so that a line's parsed
        /// form stays within a small multiple of its length.
        #[arg(long, default_value_t = guard::VALUE_LIMIT)]
        max_values: usize,
        /// The policy's dialect; recognised by shape when absent
        /// (`--format`, its old name, still works).
        #[arg(long = "dialect", alias = "format", value_enum)]
        format: Option<Format>,
        /// Which engine decides: the compiled runtime, or the reference
        /// evaluator for cross-checking by hand.
        #[arg(long, value_enum, default_value = "compiled")]
        engine: EngineArg,
        /// Add to each verdict an `explain` member: every subject, every
        /// rule of its tool and what became of it, the allow rules withheld
        /// (`toolgate explain` for one call; toolgate policies and Claude
        /// Code settings).
        #[arg(long, conflicts_with = "bundle")]
        explain: bool,
        /// Exit with the decision, for shell scripts and CI: 0 when every
        /// call is allowed, 2 when one is denied, 3 when one asks and none
        /// is denied.
        #[arg(long)]
        exit_code: bool,
        /// Rubric bundles: scan each request's `input`, `args` and `kwargs`
        /// for secrets and add `dlp_detected`, `dlp_severity` and
        /// `dlp_types` before deciding, as Rubric's SDK does. On without
        /// the flag when a rule of the bundle reads a `dlp_` field.
        #[arg(long)]
        dlp: bool,
        /// A guard document (or a policy with a `guards` member) over every
        /// call's arguments: a call it blocks is denied, by `guard`. A
        /// policy's own `guards` member applies without the flag; the flag
        /// replaces it.
        #[arg(long)]
        guards: Option<String>,
        /// A file of calls (or of envelopes, or of requests), or `-` (the
        /// default) for standard input.
        #[arg(default_value = "-")]
        calls: String,
    },
    /// Scan content for secrets and denied patterns (`spec/guards.md`):
    /// one finding per line, `{"type", "severity", "start", "end",
    /// "rule"}`, spans in bytes. Exits 0 when clean, 2 when something a
    /// guard blocks was found.
    ///
    /// Example: `toolgate scan --guards guards.json build.log`
    Scan {
        /// The file to scan, or `-` (the default) for standard input; read
        /// in chunks, so any size is scanned in bounded memory.
        #[arg(default_value = "-")]
        file: String,
        /// A guard document (or a policy with a `guards` member); the
        /// built-in secrets catalogue when absent.
        #[arg(long)]
        guards: Option<String>,
        /// Print the content with every secret replaced by its placeholder
        /// instead of the findings; then only `deny` matches and the limit
        /// block.
        #[arg(long)]
        redact: bool,
        /// Where the content is going, for the guards' `on` members.
        #[arg(long, value_enum, default_value = "output")]
        on: PlaceArg,
    },
    /// Answer an agent's hook: read its payload on standard input, print
    /// its answer. Always exits 0 with an answer; anything that cannot be
    /// read is answered with a deny (a block for PostToolUse and
    /// UserPromptSubmit).
    ///
    /// Example (a PreToolUse, PostToolUse or UserPromptSubmit hook
    /// command): `toolgate hook claude-code --guards guards.json`
    Hook {
        /// The agent whose hook protocol to speak.
        #[arg(value_enum)]
        agent: HookAgent,
        /// A Claude Code settings file; repeat for several. Without one,
        /// the files Claude Code would read are found from the payload's
        /// `cwd`, `$CLAUDE_PROJECT_DIR` and `$HOME`.
        #[arg(long, conflicts_with = "bundle")]
        settings: Vec<String>,
        /// A compiled artifact to decide with instead of settings files.
        #[arg(long)]
        bundle: Option<String>,
        /// A guard document (or a policy with a `guards` member) for the
        /// content events, PostToolUse (a tool's output) and
        /// UserPromptSubmit (a prompt), and for PreToolUse arguments; the
        /// built-in secrets catalogue guards the content events without it.
        #[arg(long)]
        guards: Option<String>,
        /// Apply the allow rules of the project's own settings files.
        #[arg(long)]
        trust_project: bool,
        /// Refuse the artifact unless its detached signature was made by
        /// this public key (a `.pub` file from `toolgate keygen`, or its hex).
        #[arg(long, requires = "bundle")]
        require_signature: Option<String>,
        /// The detached signature, when it is not `BUNDLE.sig`.
        #[arg(long, requires = "require_signature")]
        signature: Option<String>,
        /// Forward the payload to a running `toolgate serve` (`HOST:PORT`
        /// or `unix:PATH`) and print its answer; when it cannot be reached,
        /// decide here from the same settings (or deny, with
        /// `--fail-closed`).
        #[arg(long)]
        connect: Option<String>,
        /// With `--connect`: deny when the server cannot be reached,
        /// instead of deciding locally.
        #[arg(long, requires = "connect")]
        fail_closed: bool,
        /// With `--connect`: the file holding the server's token. The hook
        /// never sends it: both sides prove they hold it with a keyed hash
        /// over a fresh nonce, so another program listening on the port
        /// cannot answer for the server.
        #[arg(long, requires = "connect")]
        token_file: Option<String>,
    },
    /// Explain the decision on one call: each subject of a split command,
    /// every rule of its tool and what became of it (matched, no match,
    /// carved out, shadowed, not consulted), the fold, the default, and the
    /// allow rules withheld from untrusted sources.
    ///
    /// Example: `toolgate explain --policy examples/policy.json '{"tool": "bash", "args": {"command": "make build"}}'`
    Explain {
        /// The policy: a toolgate policy document or Claude Code settings.
        #[arg(long)]
        policy: String,
        /// The policy's dialect; recognised by shape when absent
        /// (`--format`, its old name, still works).
        #[arg(long = "dialect", alias = "format", value_enum)]
        format: Option<Format>,
        /// Claude Code settings: apply the project's allow rules.
        #[arg(long)]
        trust_project: bool,
        /// text for people, json for tools.
        #[arg(long, value_enum, default_value = "text")]
        output: OutputFormat,
        /// The call as JSON (the shape `decide` reads); `-` or nothing
        /// reads it from standard input.
        call: Option<String>,
    },
    /// Lay out JSON policy documents canonically: members in a fixed
    /// order, one rule per line, unordered maps sorted; never a change of
    /// decision. Prints the result unless `--write` or `--check`.
    ///
    /// Example: `toolgate fmt --check examples/policy.json`
    Fmt {
        /// The documents (JSON: toolgate policies, Claude Code settings,
        /// Rubric bundles, Authensor policies).
        #[arg(required = true)]
        files: Vec<String>,
        /// Rewrite each file that is not laid out canonically.
        #[arg(long, conflicts_with = "check")]
        write: bool,
        /// Change nothing; exit 1 naming each file that is not laid out
        /// canonically (for CI).
        #[arg(long)]
        check: bool,
    },
    /// Write a starter policy that is safe as written, and a test file
    /// beside it; never replaces a file.
    ///
    /// Example: `toolgate init --dialect claude-code .claude`
    Init {
        /// The policy's dialect.
        #[arg(long, value_enum, default_value = "toolgate")]
        dialect: InitDialect,
        /// The directory to write into.
        #[arg(default_value = ".")]
        dir: String,
    },
    /// Print a completion script for a shell to standard output.
    ///
    /// Example: `toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate`
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output, or write one page
    /// per subcommand into a directory.
    ///
    /// Example: `toolgate man --dir /usr/local/share/man/man1`
    Man {
        /// Write `toolgate.1` and `toolgate-SUBCOMMAND.1` here instead.
        #[arg(long)]
        dir: Option<String>,
    },
    /// Serve decisions over HTTP: `/v1/decide`, OPA's data API, Claude
    /// Code's `http` hook, health, status and metrics, with the artifact
    /// reloaded when its file changes (or on `SIGHUP`).
    ///
    /// Example: `toolgate serve --bundle policy.tgb --listen 127.0.0.1:8181`
    Serve(Box<Serve>),
    /// Run test files (a policy and the decisions its calls should get;
    /// `spec/testing.md`) and conformance files on every engine.
    ///
    /// Example: `toolgate test examples/policy.test.json --verbose`
    Test {
        /// Test files (JSON or TOML: `policy`, inline or a path relative to
        /// the file, and `tests`) and conformance files (grammar, matchers,
        /// decisions, Claude Code, Rubric or Authensor cases), recognised by
        /// shape.
        #[arg(required = true)]
        files: Vec<String>,
        /// Run only this engine.
        #[arg(long, value_enum)]
        engine: Option<EngineArg>,
        /// Run only the tests and cases whose name contains this.
        #[arg(long, value_name = "PATTERN")]
        run: Option<String>,
        /// List what passed, too.
        #[arg(long, short)]
        verbose: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// toolgate's policy document (JSON or TOML).
    Toolgate,
    /// Claude Code settings files.
    ClaudeCode,
    /// A Rubric bundle.
    Rubric,
    /// Authensor policies: one policy object, or a list of them.
    Authensor,
}

#[derive(Clone, Copy, ValueEnum)]
enum HostArg {
    /// Claude Code's tools: `Bash`, `Read`, `Edit`, `WebFetch`, …
    ClaudeCode,
}

impl HostArg {
    fn host(self) -> toolgate::check::Host {
        match self {
            HostArg::ClaudeCode => toolgate::check::Host::ClaudeCode,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum InitDialect {
    /// A toolgate policy in TOML (`policy.toml`, `policy.test.toml`).
    Toolgate,
    /// Claude Code settings (`settings.json`, `settings.test.toml`).
    ClaudeCode,
}

#[derive(Clone, Copy, ValueEnum)]
enum HookAgent {
    /// Claude Code's PreToolUse, PostToolUse and UserPromptSubmit hooks.
    ClaudeCode,
}

#[derive(Clone, Copy, ValueEnum)]
enum PlaceArg {
    /// A tool call's arguments.
    Arguments,
    /// A tool's output.
    Output,
    /// A prompt or a model's message.
    Message,
}

impl PlaceArg {
    fn place(self) -> toolgate::guards::Place {
        match self {
            PlaceArg::Arguments => toolgate::guards::Place::Arguments,
            PlaceArg::Output => toolgate::guards::Place::Output,
            PlaceArg::Message => toolgate::guards::Place::Message,
        }
    }
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
    // `--format` named the input dialect on most commands and the output on
    // `inspect`: it is `--dialect` and `--output` now, the old name kept.
    let args: Vec<String> = std::env::args().collect();
    if args
        .iter()
        .any(|a| a == "--format" || a.starts_with("--format="))
    {
        let new = if args.get(1).map(String::as_str) == Some("inspect") {
            "--output"
        } else {
            "--dialect"
        };
        eprintln!("warning: `--format` is now `{new}`; the old name will go in a later release");
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let help = matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            );
            if !help && std::env::args().skip(1).any(|a| a == "hook") {
                // A hook that exits with an error lets the call through:
                // answer with a deny instead.
                let first = e.to_string();
                let first = first.lines().next().unwrap_or("").to_string();
                eprintln!("{e}");
                // The payload says which event's shape the answer takes.
                let mut input = Vec::new();
                let _ = std::io::stdin()
                    .lock()
                    .take(guard::INPUT_LIMIT)
                    .read_to_end(&mut input);
                return hook_deny(
                    guard::event_of(&input),
                    &format!("`toolgate hook` was called with bad arguments: {first}"),
                );
            }
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(EXIT_USAGE),
            };
        }
    };
    JSON_ERRORS.store(cli.error_format == ErrorFormat::Json, Ordering::Relaxed);
    match cli.command {
        Command::Check {
            policy,
            format,
            strict,
            host,
        } => {
            STRICT.store(strict, Ordering::Relaxed);
            // Every file is checked, so one run reports every broken file;
            // the exit code is the first failure's.
            let host = host.map(HostArg::host);
            let codes: Vec<ExitCode> = policy.iter().map(|p| check(p, format, host)).collect();
            codes
                .into_iter()
                .find(|c| *c != ExitCode::SUCCESS)
                .unwrap_or(ExitCode::SUCCESS)
        }
        Command::Compile {
            policy,
            output,
            format,
            sign,
            trust_project,
        } => compile(&policy, &output, format, sign.as_deref(), trust_project),
        Command::Keygen { file } => match keys::keygen(&file) {
            Ok(public) => {
                eprintln!("{file}: secret key; {public}: public key");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(EXIT_IO)
            }
        },
        Command::Inspect {
            artifact,
            format,
            require_signature,
            signature,
        } => match keys::require(
            LoadOptions::default(),
            &artifact,
            require_signature.as_deref(),
            signature.as_deref(),
        ) {
            Ok(options) => inspect(&artifact, format, &options),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(EXIT_IO)
            }
        },
        Command::Decide {
            policy,
            settings,
            trust_project,
            bundle,
            no_verify,
            max_artifact_bytes,
            max_line_bytes,
            max_batch,
            max_values,
            require_signature,
            signature,
            format,
            engine,
            exit_code,
            explain,
            dlp,
            guards,
            calls,
        } => {
            EXIT_WITH_DECISION.store(exit_code, Ordering::Relaxed);
            let guards = match guards.as_deref().map(read_guards).transpose() {
                Ok(g) => g,
                Err(code) => return code,
            };
            let done = (|| {
                let intake = Intake {
                    max_line: max_line_bytes,
                    max_batch,
                    max_values,
                };
                match (policy, bundle) {
                    (_, Some(bundle)) => {
                        let options = LoadOptions::default()
                            .verify_revision(!no_verify)
                            .max_len(max_artifact_bytes);
                        match keys::require(
                            options,
                            &bundle,
                            require_signature.as_deref(),
                            signature.as_deref(),
                        ) {
                            Ok(options) => decide_bundle(
                                &bundle,
                                &calls,
                                &options,
                                intake,
                                dlp,
                                guards.clone(),
                            ),
                            Err(e) => {
                                eprintln!("error: {e}");
                                ExitCode::from(EXIT_IO)
                            }
                        }
                    }
                    (policy, None) => {
                        if let Some(p) = &policy {
                            if settings.is_empty() && !is_settings(p, format) {
                                match authensor_policies(p, format) {
                                    Err(code) => return code,
                                    Ok(Some(_)) if explain => return explain_refused(),
                                    Ok(Some(ps)) => {
                                        return match authensor_engine(&ps, engine, p) {
                                            Ok(e) => decide_authensor(e.as_ref(), &calls, intake),
                                            Err(code) => code,
                                        }
                                    }
                                    Ok(None) => {}
                                }
                                return match rubric_bundle(p, format) {
                                    Err(code) => code,
                                    Ok(Some(_)) if explain => explain_refused(),
                                    Ok(Some(b)) => match rubric_engine(&b, engine, p) {
                                        Ok(e) => decide_rubric(
                                            e.as_ref(),
                                            &calls,
                                            intake,
                                            dlp || b.reads_dlp(),
                                        ),
                                        Err(code) => code,
                                    },
                                    Ok(None) => match build(p, format, engine, guards.clone()) {
                                        Ok(e) if explain => match explainer(p, format) {
                                            Ok(r) => decide_explained(
                                                e.as_ref(),
                                                &r,
                                                &calls,
                                                intake,
                                                &|c| c,
                                            ),
                                            Err(code) => code,
                                        },
                                        Ok(e) => decide(e.as_ref(), &calls, intake, &|c| c),
                                        Err(code) => code,
                                    },
                                };
                            }
                        }
                        let mut files: Vec<String> = policy.into_iter().collect();
                        files.extend(settings);
                        decide_settings(
                            &files,
                            trust_project,
                            engine,
                            intake,
                            &calls,
                            explain,
                            guards,
                        )
                    }
                }
            })();
            if exit_code {
                decision_exit(done)
            } else {
                done
            }
        }
        Command::Scan {
            file,
            guards,
            redact,
            on,
        } => scan(&file, guards.as_deref(), redact, on.place()),
        Command::Hook {
            agent: HookAgent::ClaudeCode,
            settings,
            bundle,
            guards,
            trust_project,
            require_signature,
            signature,
            connect,
            fail_closed,
            token_file,
        } => hook(
            connect.as_deref().map(|addr| resident::Connect {
                addr,
                fail_closed,
                token_file: token_file.as_deref(),
            }),
            &settings,
            bundle.as_deref(),
            guards.as_deref(),
            trust_project,
            require_signature.as_deref(),
            signature.as_deref(),
        ),
        Command::Serve(flags) => serve(*flags),
        Command::Test {
            files,
            engine,
            run,
            verbose,
        } => test(&files, engine, run.as_deref(), verbose),
        Command::Fmt {
            files,
            write,
            check,
        } => fmt(&files, write, check),
        Command::Init { dialect, dir } => {
            match init::init(
                std::path::Path::new(&dir),
                matches!(dialect, InitDialect::ClaudeCode),
            ) {
                Ok(written) => {
                    for w in written {
                        eprintln!("wrote {w}");
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(EXIT_IO)
                }
            }
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "toolgate", &mut script);
            out(&String::from_utf8_lossy(&script))
        }
        Command::Man { dir } => man(dir.as_deref()),
        Command::Explain {
            policy,
            format,
            trust_project,
            output,
            call,
        } => explain(&policy, format, trust_project, output, call.as_deref()),
    }
}

/// The most a policy read from standard input may hold.
const STDIN_POLICY_LIMIT: u64 = 64 << 20;

/// The text of the policy file `path`, or of standard input for `-` (read
/// once, whoever asks first, and kept: detecting a policy's dialect reads
/// it more than once).
/// The manual: generated from the same definitions as `--help`, so the
/// two never disagree.
fn man(dir: Option<&str>) -> ExitCode {
    use clap::CommandFactory;
    let written = match dir {
        Some(d) => std::fs::create_dir_all(d)
            .and_then(|()| clap_mangen::generate_to(Cli::command(), d))
            .map(|()| String::new()),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map(|()| String::from_utf8_lossy(&page).into_owned())
        }
    };
    match written {
        Ok(page) if dir.is_none() => out(&page),
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "error: the manual cannot be written to `{}`: {e}",
                dir.unwrap_or("-")
            );
            ExitCode::from(EXIT_IO)
        }
    }
}

fn read_text(path: &str) -> std::io::Result<String> {
    static STDIN: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    if path != "-" {
        return std::fs::read_to_string(path);
    }
    let got = STDIN.get_or_init(|| read_stdin(STDIN_POLICY_LIMIT));
    got.clone().map_err(std::io::Error::other)
}

/// All of standard input as text, refused past `limit` bytes.
fn read_stdin(limit: u64) -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > limit {
        return Err(format!("standard input holds more than {limit} bytes"));
    }
    Ok(text)
}

/// Reads a policy file: TOML by extension, otherwise JSON.
fn load(path: &str, _format: Option<Format>) -> Result<Policy, ExitCode> {
    let text = match read_text(path) {
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

/// Prints the diagnostics that stopped a build, in document order, each
/// pointed at its place in `text`, and gives the exit code.
fn report(d: &Diagnostics, text: &str) -> ExitCode {
    let d = &d.clone().locate(text);
    if JSON_ERRORS.load(Ordering::Relaxed) {
        for one in d.in_document_order() {
            emit(one, Some(text));
        }
        return ExitCode::from(EXIT_INVALID);
    }
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
    guards: Option<Arc<Guards>>,
) -> Result<Box<dyn Evaluator>, ExitCode> {
    let policy = load(path, format)?;
    let registry = toolgate::builtins::registry();
    let built = engine.kind().build(&policy, &registry).map_err(|d| {
        let text = read_text(path).unwrap_or_default();
        report(&d.in_file(path), &text)
    })?;
    let guards = match (guards, &policy.guards) {
        (Some(g), _) => Some(g),
        (None, Some(member)) => Some(build_guards(member.clone(), path)?),
        (None, None) => None,
    };
    Ok(match guards {
        Some(g) => Box::new(Guarded::new(built, g)),
        None => built,
    })
}

/// Reads `path` as a guard document, or a policy's `guards` member.
fn read_guards(path: &str) -> Result<Arc<Guards>, ExitCode> {
    let text = read_text(path).map_err(|e| {
        eprintln!("error: cannot read `{path}`: {e}");
        ExitCode::from(EXIT_IO)
    })?;
    let value = toolgate::json::parse_document(&text).map_err(|e| {
        eprintln!("error: `{path}` is not a guard document: {e}");
        ExitCode::from(EXIT_INVALID)
    })?;
    build_guards(value, path)
}

/// Builds the guards of `value`, read from `path`.
fn build_guards(value: serde_json::Value, path: &str) -> Result<Arc<Guards>, ExitCode> {
    toolgate::guards::Document::from_value(value)
        .and_then(|d| Guards::build(&d))
        .map(Arc::new)
        .map_err(|e| {
            eprintln!("error: the guards of `{path}` cannot be used: {e}");
            ExitCode::from(EXIT_INVALID)
        })
}

/// Reads `path` as a Rubric bundle when it has a bundle's shape (a JSON
/// document whose `policies` entries carry `policyId`): `None` for any
/// other document, which is read as a policy.
fn rubric_bundle(
    path: &str,
    format: Option<Format>,
) -> Result<Option<toolgate::rubric::Bundle>, ExitCode> {
    let forced = matches!(format, Some(Format::Rubric));
    if format.is_some() && !forced || path.ends_with(".toml") {
        return Ok(None);
    }
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read `{path}`: {e}");
            return Err(ExitCode::from(EXIT_IO));
        }
    };
    let value = match toolgate::json::parse_document(&text) {
        Ok(v) if forced || toolgate::rubric::Bundle::looks_like(&v) => v,
        Err(e) if forced => {
            eprintln!("error: `{path}` is not a Rubric bundle: {e}");
            return Err(ExitCode::from(EXIT_INVALID));
        }
        _ => return Ok(None),
    };
    match toolgate::rubric::Bundle::from_value(&value) {
        Ok(b) => {
            for w in &b.warnings {
                let d = toolgate::Diagnostics::one(w.clone())
                    .in_file(path)
                    .locate(&text);
                emit(&d.first().clone().as_warning(), Some(&text));
                warned();
            }
            for e in b.compile_errors() {
                eprintln!("warning: {e}");
                warned();
            }
            Ok(Some(b))
        }
        Err(d) => Err(report(&d.in_file(path), &text)),
    }
}

fn rubric_engine(
    b: &toolgate::rubric::Bundle,
    engine: EngineArg,
    path: &str,
) -> Result<Box<dyn toolgate::rubric::RubricEvaluator>, ExitCode> {
    use toolgate::rubric::RubricEngine;
    use toolgate_reference::rubric::RubricReference;
    let built = match engine {
        EngineArg::Reference => return Ok(Box::new(RubricReference::new(b))),
        _ => RubricEngine::build(b),
    };
    let built =
        built.map_err(|d| report(&d.in_file(path), &read_text(path).unwrap_or_default()))?;
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

/// Reads `path` as Authensor policies when it has their shape (a JSON list,
/// or an object with `rules` or `sessionRules` that is neither settings
/// nor a bundle) or `--dialect authensor` says so: `None` for any other
/// document. Warnings are printed.
fn authensor_policies(path: &str, format: Option<Format>) -> Result<Option<Policies>, ExitCode> {
    let forced = matches!(format, Some(Format::Authensor));
    if !forced && (format.is_some() || path.ends_with(".toml")) {
        return Ok(None);
    }
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read `{path}`: {e}");
            return Err(ExitCode::from(EXIT_IO));
        }
    };
    if !forced
        && toolgate::open::Format::detect(text.as_bytes()) != toolgate::open::Format::Authensor
    {
        return Ok(None);
    }
    match Policies::from_json(&text) {
        Ok(ps) => {
            for w in &ps.warnings {
                let d = Diagnostics::one(w.clone()).in_file(path);
                emit(&d.first().clone().as_warning(), Some(&text));
                warned();
            }
            Ok(Some(ps))
        }
        Err(d) => Err(report(&d.in_file(path), &text)),
    }
}

/// The engine that decides envelopes against `ps`: the compiled one, the
/// reference, or the compiled one written to an artifact and loaded back.
fn authensor_engine(
    ps: &Policies,
    engine: EngineArg,
    path: &str,
) -> Result<Box<dyn AuthensorEvaluator>, ExitCode> {
    if let EngineArg::Reference = engine {
        return Ok(Box::new(AuthensorReference::new(ps)));
    }
    let built = AuthensorEngine::build(ps)
        .map_err(|d| report(&d.in_file(path), &read_text(path).unwrap_or_default()))?;
    if let EngineArg::Artifact = engine {
        let bytes = built.to_bytes();
        return match AuthensorEngine::from_bytes(&bytes) {
            Ok(e) => Ok(Box::new(e.into_owned())),
            Err(e) => {
                eprintln!("error: the policies' artifact does not load back: {e}");
                Err(ExitCode::from(EXIT_INVALID))
            }
        };
    }
    Ok(Box::new(built))
}

/// `1 policy`, `2 policies`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn check(path: &str, format: Option<Format>, host: Option<toolgate::check::Host>) -> ExitCode {
    WARNINGS.store(0, Ordering::Relaxed);
    let test_file = read_text(path).ok().is_some_and(|t| {
        toolgate::json::parse_document(&t)
            .is_ok_and(|v| v.get("tests").is_some() && v.get("policy").is_some())
    });
    if test_file && format.is_none() {
        eprintln!(
            "error: `{path}` is a test file, not a policy: run it with `toolgate test {path}`"
        );
        return ExitCode::from(EXIT_USAGE);
    }
    if is_settings(path, format) {
        return match settings_policy(path, false) {
            Ok(_) => checked(path, " (Claude Code settings)"),
            Err(code) => code,
        };
    }
    match authensor_policies(path, format) {
        Err(code) => return code,
        Ok(Some(ps)) => {
            return match authensor_engine(&ps, EngineArg::Compiled, path) {
                Ok(_) => {
                    let rules: usize = ps.policies.iter().map(|p| p.rules.len()).sum();
                    let what = format!(
                        " (Authensor policies: {}, {})",
                        plural(ps.policies.len(), "policy", "policies"),
                        plural(rules, "rule", "rules")
                    );
                    checked(path, &what)
                }
                Err(code) => code,
            }
        }
        Ok(None) => {}
    }
    match rubric_bundle(path, format) {
        Err(code) => return code,
        Ok(Some(b)) => {
            return match rubric_engine(&b, EngineArg::Compiled, path) {
                Ok(_) => checked(path, " (a Rubric bundle)"),
                Err(code) => code,
            }
        }
        Ok(None) => {}
    }
    match build_policy(path, format) {
        Ok((_, policy)) => {
            if let Some(host) = host {
                let text = read_text(path).unwrap_or_default();
                for mut w in toolgate::check::host_mismatches(&policy, host) {
                    w.location.file = path.to_string();
                    emit(&w, Some(&text));
                    warned();
                }
            }
            checked(path, "")
        }
        Err(code) => code,
    }
}

/// Warnings printed since the last file `check` began.
static WARNINGS: AtomicUsize = AtomicUsize::new(0);
/// Whether `check --strict` makes every warning an error.
static STRICT: AtomicBool = AtomicBool::new(false);

fn warned() {
    WARNINGS.fetch_add(1, Ordering::Relaxed);
}

/// The end of checking `path`, which built: `ok` unless `--strict` and a
/// warning was printed.
fn checked(path: &str, what: &str) -> ExitCode {
    let n = WARNINGS.load(Ordering::Relaxed);
    if STRICT.load(Ordering::Relaxed) && n > 0 {
        eprintln!(
            "error: `{path}`: {} under `--strict`: fix each, or check without `--strict`",
            plural(n, "warning", "warnings")
        );
        return ExitCode::from(EXIT_INVALID);
    }
    eprintln!("{path}: ok{what}");
    ExitCode::SUCCESS
}

/// Reads and builds a toolgate policy file, printing what check said that
/// did not stop the build, or the diagnostics that did.
fn build_policy(
    path: &str,
    format: Option<Format>,
) -> Result<(Engine<'static>, toolgate::Policy), ExitCode> {
    let policy = load(path, format)?;
    let text = read_text(path).unwrap_or_default();
    match Engine::build_with(&policy, &registry()) {
        Ok(e) => {
            for w in e.warnings() {
                emit(&w.clone().as_warning(), Some(&text));
                warned();
            }
            Ok((e, policy))
        }
        Err(d) => Err(report(&d.in_file(path), &text)),
    }
}

fn compile(
    path: &str,
    output: &str,
    format: Option<Format>,
    sign: Option<&str>,
    trust_project: bool,
) -> ExitCode {
    let bytes = if is_settings(path, format) {
        let loaded = match settings_policy(path, trust_project) {
            Ok(l) => l,
            Err(code) => return code,
        };
        match Engine::build_with(&loaded.policy, &registry()) {
            Ok(e) => e.to_bytes(),
            Err(d) => {
                let text = read_text(path).unwrap_or_default();
                return report(&d.in_file(path), &text);
            }
        }
    } else if let Some(ps) = match authensor_policies(path, format) {
        Ok(ps) => ps,
        Err(code) => return code,
    } {
        match AuthensorEngine::build(&ps) {
            Ok(e) => e.to_bytes(),
            Err(d) => return report(&d.in_file(path), ""),
        }
    } else {
        match rubric_bundle(path, format) {
            Err(code) => return code,
            Ok(Some(b)) => match toolgate::rubric::RubricEngine::build(&b) {
                Ok(e) => e.to_bytes().unwrap_or_default(),
                Err(d) => return report(&d.in_file(path), ""),
            },
            Ok(None) => match build_policy(path, format) {
                Ok((e, policy)) => {
                    // An artifact holds no guards: say so, or a policy
                    // compiled and served would lose them without a word.
                    if policy.guards.is_some() {
                        eprintln!(
                            "warning: `{path}` has a `guards` member, which the artifact does not hold: give the policy to `decide --guards` or `serve --guards` beside the artifact"
                        );
                    }
                    e.to_bytes()
                }
                Err(code) => return code,
            },
        }
    };
    if output == "-" {
        if sign.is_some() {
            eprintln!("error: `--sign` writes `OUTPUT.sig` beside the artifact: give `-o` a file");
            return ExitCode::from(EXIT_USAGE);
        }
        let mut stdout = std::io::stdout().lock();
        return match stdout.write_all(&bytes).and_then(|_| stdout.flush()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: cannot write the artifact to standard output: {e}");
                ExitCode::from(EXIT_IO)
            }
        };
    }
    if let Some(key) = sign {
        let signed = keys::read_hex::<{ toolgate::artifact::SECRET_KEY_LEN }>(key, "secret key")
            .and_then(|secret| {
                toolgate::artifact::sign(&bytes, &secret).map_err(|e| e.to_string())
            });
        let sig_path = format!("{output}.sig");
        match signed {
            Ok(sig) => {
                if let Err(e) = std::fs::write(&sig_path, keys::hex(&sig)) {
                    eprintln!("error: cannot write `{sig_path}`: {e}");
                    return ExitCode::from(EXIT_IO);
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    if let Err(e) = write_whole(output, &bytes) {
        eprintln!("error: cannot write `{output}`: {e}");
        return ExitCode::from(EXIT_IO);
    }
    let revision = toolgate::artifact::header(&bytes)
        .map(|h| h.revision_hex())
        .unwrap_or_default();
    eprintln!("{output}: {} bytes, revision {revision}", bytes.len());
    ExitCode::SUCCESS
}

/// Writes `bytes` to `path` beside it and renames it into place, so that a
/// reader never reads a half-written file; the partial file is removed on
/// failure.
fn write_whole(path: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Reads an artifact file into memory, refusing one over the cap before
/// reading it. An artifact is never mapped: a file rewritten in place or
/// truncated under a mapping changes the tables while they are used (torn
/// verdicts) or kills the process (`SIGBUS`), where a copy in memory is
/// validated once and cannot change.
fn read_artifact(path: &str, options: &LoadOptions) -> Result<Vec<u8>, String> {
    toolgate::artifact::read_file(std::path::Path::new(path), options.limit())
        .map_err(|e| e.to_string())
}

/// [`read_artifact`] for a command: the error printed, the exit code for it.
fn read_or_exit(path: &str, options: &LoadOptions) -> Result<Vec<u8>, ExitCode> {
    read_artifact(path, options).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_IO)
    })
}

fn inspect(path: &str, format: OutputFormat, options: &LoadOptions) -> ExitCode {
    use toolgate::artifact::ProgramKind;
    let mapped = match read_or_exit(path, options) {
        Ok(m) => m,
        Err(code) => return code,
    };
    if let Ok(h) = toolgate::artifact::header(&mapped) {
        match h.kind {
            ProgramKind::FirstMatch => {
                return inspect_authensor(path, &mapped, &h, format, options)
            }
            ProgramKind::Conditions => return inspect_rubric(path, &mapped, &h, format, options),
            _ => {}
        }
    }
    let info = match toolgate::artifact::inspect(&mapped)
        .and_then(|i| options.settle(&mapped).map(|()| i))
    {
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

/// Shows an artifact of Authensor policies: its header, its policies in
/// decision order, its sections.
fn inspect_authensor(
    path: &str,
    bytes: &[u8],
    h: &toolgate::artifact::Header,
    format: OutputFormat,
    options: &LoadOptions,
) -> ExitCode {
    use std::fmt::Write as _;
    let engine = match AuthensorEngine::load(bytes, options) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: `{path}` is not a usable artifact: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let policies = engine.policies();
    let version = |v: &Option<toolgate::authensor::Version>| match v {
        Some(toolgate::authensor::Version::Number(n)) => Some(n.to_string()),
        Some(toolgate::authensor::Version::Text(t)) => Some(t.clone()),
        None => None,
    };
    // As the policy wrote it: a number stays a number.
    let version_json = |v: &Option<toolgate::authensor::Version>| match v {
        Some(toolgate::authensor::Version::Number(n)) => serde_json::Value::Number(n.clone()),
        Some(toolgate::authensor::Version::Text(t)) => serde_json::Value::String(t.clone()),
        None => serde_json::Value::Null,
    };
    match format {
        OutputFormat::Json => {
            let mut v = header_json(bytes.len(), h, "authensor");
            v.insert(
                "policies".into(),
                serde_json::json!(policies
                    .iter()
                    .map(|p| serde_json::json!({
                        "id": p.id, "version": version_json(&p.version), "rules": p.rules,
                        "default": p.default_effect.map(|e| e.as_str()),
                        "session_rules": p.session_rules,
                    }))
                    .collect::<Vec<_>>()),
            );
            v.insert("sections".into(), sections_json(h).into());
            out(&format!("{}\n", serde_json::Value::Object(v)))
        }
        OutputFormat::Text => {
            let mut o = header_text(path, bytes.len(), h);
            let _ = writeln!(
                o,
                "holds      Authensor policies, {} in decision order",
                policies.len()
            );
            let _ = writeln!(o, "policies");
            for p in &policies {
                let _ = writeln!(
                    o,
                    "  {:<24} version {:<8} rules {:<6} default {:<16} session rules {}",
                    p.id,
                    version(&p.version).unwrap_or_else(|| "-".into()),
                    p.rules,
                    p.default_effect.map_or("-", |e| e.as_str()),
                    if p.session_rules { "yes" } else { "no" }
                );
            }
            sections_text(&mut o, h);
            out(&o)
        }
    }
}

/// Shows an artifact of a Rubric bundle: its header and its sections, once
/// the engine has loaded it (so what is shown is what would decide).
fn inspect_rubric(
    path: &str,
    bytes: &[u8],
    h: &toolgate::artifact::Header,
    format: OutputFormat,
    options: &LoadOptions,
) -> ExitCode {
    use std::fmt::Write as _;
    if let Err(e) = toolgate::rubric::RubricEngine::load(bytes, options) {
        eprintln!("error: `{path}` is not a usable artifact: {e}");
        return ExitCode::from(EXIT_INVALID);
    }
    match format {
        OutputFormat::Json => {
            let mut v = header_json(bytes.len(), h, "rubric");
            v.insert("sections".into(), sections_json(h).into());
            out(&format!("{}\n", serde_json::Value::Object(v)))
        }
        OutputFormat::Text => {
            let mut o = header_text(path, bytes.len(), h);
            let _ = writeln!(o, "holds      a Rubric bundle (a condition program)");
            sections_text(&mut o, h);
            out(&o)
        }
    }
}

/// The members every condition-program artifact's JSON inspection starts
/// with, in order; the caller adds what it holds, then `sections`.
fn header_json(
    len: usize,
    h: &toolgate::artifact::Header,
    holds: &str,
) -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(m) = serde_json::json!({
        "schema_version": 1,
        "bytes": len,
        "format": {"major": h.major, "minor": h.minor},
        "required_features": h.required,
        "optional_features": h.optional,
        "toolgate_version": h.toolgate_version,
        "regex_automata_version": h.regex_automata_version,
        "revision": h.revision_hex(),
        "holds": holds,
    }) else {
        return serde_json::Map::new();
    };
    m
}

fn sections_json(h: &toolgate::artifact::Header) -> Vec<serde_json::Value> {
    h.sections.iter().map(|s| serde_json::json!({
        "kind": s.kind_name(), "offset": s.offset, "length": s.len, "align": s.align, "crc32": format!("{:08x}", s.crc)
    })).collect()
}

/// The lines every artifact's inspection starts with.
fn header_text(path: &str, len: usize, h: &toolgate::artifact::Header) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "artifact   {path} ({len} bytes)");
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
    o
}

/// The lines every artifact's inspection ends with.
fn sections_text(o: &mut String, h: &toolgate::artifact::Header) {
    use std::fmt::Write as _;
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
}

/// A tool's patterns per match strategy, as `inspect --output json` shows them.
fn strategies_json(s: &toolgate::artifact::StrategyCounts) -> serde_json::Value {
    serde_json::json!({
        "exact": s.exact, "prefix": s.prefix, "suffix": s.suffix,
        "prefix_suffix": s.prefix_suffix, "inner": s.inner, "any": s.any,
        "regex": s.regex, "callback": s.callback
    })
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
            "name": t.name, "field": t.field, "kind": t.kind, "split": t.split, "rules": counts_json(&t.counts),
            "strategies": strategies_json(&t.strategies)
        })).collect::<Vec<_>>(),
        "sections": sections_json(h),
    })
}

fn inspection_text(path: &str, i: &toolgate::artifact::Inspection) -> String {
    use std::fmt::Write as _;
    let h = &i.header;
    let mut o = header_text(path, i.len, h);
    let c = &i.counts;
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
        let s = &t.strategies;
        let named = [
            ("exact", s.exact),
            ("prefix", s.prefix),
            ("suffix", s.suffix),
            ("prefix-suffix", s.prefix_suffix),
            ("inner", s.inner),
            ("any", s.any),
            ("regex", s.regex),
            ("callback", s.callback),
        ];
        let held: Vec<String> = named
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        if !held.is_empty() {
            let _ = writeln!(o, "    patterns: {}", held.join(", "));
        }
    }
    sections_text(&mut o, h);
    o
}

fn decide_bundle(
    path: &str,
    calls: &str,
    options: &LoadOptions,
    intake: Intake,
    dlp: bool,
    guards: Option<Arc<Guards>>,
) -> ExitCode {
    use toolgate::open::{EngineBuilder, Format, OpenError, Opened};
    let bytes = match read_or_exit(path, options) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let builder = EngineBuilder::new()
        .registry(registry())
        .load_options(*options);
    match builder.open(&bytes, Format::Artifact) {
        // An artifact holds no guards: `--guards` brings them.
        Ok(Opened::Rules(engine)) => match guards {
            Some(g) => decide(&Guarded::new(engine.session(), g), calls, intake, &|c| c),
            None => decide(&engine.session(), calls, intake, &|c| c),
        },
        Ok(Opened::Rubric(engine)) => {
            // A bundle that reads `dlp_…` gets the scan without `--dlp`,
            // compiled or not.
            let dlp = dlp || engine.reads_dlp();
            decide_rubric(&engine, calls, intake, dlp)
        }
        Ok(Opened::Authensor(engine)) => decide_authensor(&engine, calls, intake),
        Ok(other) => {
            eprintln!("error: `{path}` holds {other:?}, which `decide --bundle` does not read");
            ExitCode::from(EXIT_INVALID)
        }
        Err(e) => {
            let why = match &e {
                OpenError::Artifact(load) => load.to_string(),
                other => other.to_string(),
            };
            eprintln!("error: `{path}` is not a usable artifact: {why}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

/// Decides Rubric requests: one JSON object per line in, one result per
/// line out. A line that cannot be read is answered with a deny. With
/// `dlp`, each request gains the DLP fields first; when the catalogue
/// cannot be built, every request is denied.
fn decide_rubric(
    engine: &dyn toolgate::rubric::RubricEvaluator,
    calls: &str,
    intake: Intake,
    dlp: bool,
) -> ExitCode {
    use toolgate::rubric::Request;
    let guards = dlp.then(toolgate::guards::Guards::builtin);
    lines(calls, intake, |line, out| {
        let mut request = match line {
            Ok(text) => {
                Request::from_json(text).unwrap_or_else(|e| Request::unreadable(e.to_string()))
            }
            Err(why) => Request::unreadable(why),
        };
        match &guards {
            Some(Ok(g)) => request.add_dlp(g),
            Some(Err(e)) => {
                request = Request::unreadable(format!("the DLP scan cannot run: {e}"));
            }
            None => {}
        }
        out.push_str(&engine.decide(&request).to_json().to_string());
    })
}

/// Decides action envelopes: one JSON object per line in (its earlier
/// actions in an optional `session` member), one result per line out. A
/// line that cannot be read is answered with a deny saying why.
fn decide_authensor(engine: &dyn AuthensorEvaluator, envelopes: &str, intake: Intake) -> ExitCode {
    lines(envelopes, intake, |line, out| {
        let envelope = match line.map(toolgate::json::parse_strict) {
            Ok(Ok(v)) => {
                Envelope::from_value(v).unwrap_or_else(|e| Envelope::unreadable(e.to_string()))
            }
            Ok(Err(e)) => Envelope::unreadable(format!("the line is not JSON: {e}")),
            Err(why) => Envelope::unreadable(why),
        };
        out.push_str(&engine.decide(&envelope).to_json().to_string());
    })
}

/// Decides calls: one call JSON per line in, one verdict JSON per line out.
fn decide(
    engine: &dyn Evaluator,
    calls: &str,
    intake: Intake,
    prep: &dyn Fn(Call) -> Call,
) -> ExitCode {
    // Each call is read into the buffers of the call before it, and its
    // verdict rendered into the verdict before it: a stream's texts
    // allocate little once the buffers have grown.
    let mut reuse = Reuse {
        call: None,
        verdict: Verdict::new(Decision::Deny, String::new()),
    };
    lines(calls, intake, |line, out| match line {
        Ok(text) => decide_line(engine, text, intake.max_batch, prep, &mut reuse, out),
        Err(why) => write_verdict(&unreadable(why), out),
    })
}

/// What one line of a stream leaves for the next to read and render into.
struct Reuse {
    call: Option<Call>,
    verdict: Verdict,
}

/// The bounds of `decide`'s intake: the longest line it reads, and the most
/// calls one batch line may hold. Past either, the line is answered with a
/// deny before it is parsed, and memory stays within a small constant of
/// the cap.
#[derive(Clone, Copy, Debug)]
struct Intake {
    max_line: usize,
    max_batch: usize,
    max_values: usize,
}

/// The default longest line: 8 MiB, room for a call that writes a large
/// file.
const DEFAULT_MAX_LINE: usize = 8 << 20;
/// The default most calls in one batch line.
const DEFAULT_MAX_BATCH: usize = 10_000;

impl Default for Intake {
    fn default() -> Intake {
        Intake {
            max_line: DEFAULT_MAX_LINE,
            max_batch: DEFAULT_MAX_BATCH,
            max_values: guard::VALUE_LIMIT,
        }
    }
}

/// Reads `calls` (a file, or `-` for standard input) line by line and
/// writes what `answer` appends for each line, flushing before any read
/// that could wait. Every line gets one answer, so answers stay aligned
/// with lines: a blank line, a line that is not UTF-8 and a line longer
/// than the cap are answered through `Err` with the reason (the longer
/// line is read to its end without being kept).
fn lines(
    calls: &str,
    intake: Intake,
    mut answer: impl FnMut(Result<&str, &str>, &mut String),
) -> ExitCode {
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
    let mut text = String::with_capacity(256);
    loop {
        if input.buffer().is_empty() && out.flush().is_err() {
            return ExitCode::from(EXIT_IO);
        }
        line.clear();
        let over = match read_line(&mut input, &mut line, intake.max_line) {
            Ok(None) => break,
            Ok(Some(over)) => over,
            Err(e) => {
                eprintln!("error: reading requests: {e}");
                return ExitCode::from(EXIT_IO);
            }
        };
        text.clear();
        if over {
            let why = format!(
                "the line is longer than {} bytes: split it, or raise `--max-line-bytes`",
                intake.max_line
            );
            answer(Err(&why), &mut text);
        } else {
            match std::str::from_utf8(&line) {
                Ok(t) if t.trim().is_empty() => answer(Err("the line is empty"), &mut text),
                Ok(t) if toolgate::json::values_over(t, intake.max_values) => {
                    let why = format!(
                        "the line holds more than {} JSON values: split it, or raise `--max-values`",
                        intake.max_values
                    );
                    answer(Err(&why), &mut text);
                }
                Ok(t) => answer(Ok(t), &mut text),
                Err(_) => answer(Err("the line is not UTF-8"), &mut text),
            }
        }
        note_decisions(&text);
        text.push('\n');
        if out.write_all(text.as_bytes()).is_err() {
            return ExitCode::from(EXIT_IO);
        }
    }
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EXIT_IO),
    }
}

/// The strictest decision `decide` has written: 0 none, 1 allow, 2 ask,
/// 3 deny, for `--exit-code`.
static STRICTEST: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
/// Whether `decide --exit-code` was given: only then are answers scanned.
static EXIT_WITH_DECISION: AtomicBool = AtomicBool::new(false);

/// Records the decisions of one answer line (a verdict, or a batch's
/// verdicts). Anything but `allow` and `deny` (`ask`, `require_approval`)
/// waits for somebody, so it counts as an ask.
fn note_decisions(answer: &str) {
    if !EXIT_WITH_DECISION.load(Ordering::Relaxed) {
        return;
    }
    // toolgate's and Rubric's verdicts say `"decision":"deny"`, Authensor's
    // `"decision":{"outcome":"deny",…}`.
    for key in ["\"decision\":\"", "\"decision\":{\"outcome\":\""] {
        note_after(answer, key);
    }
}

fn note_after(answer: &str, key: &str) {
    for (at, _) in answer.match_indices(key) {
        let rest = answer.get(at + key.len()..).unwrap_or("");
        let level = if rest.starts_with("allow\"") {
            1
        } else if rest.starts_with("deny\"") {
            3
        } else {
            2
        };
        STRICTEST.fetch_max(level, Ordering::Relaxed);
    }
}

/// `decide --exit-code`: 0 when every answer allowed, 2 when one denied, 3
/// when one asked and none denied; `done` is kept when it is a failure.
fn decision_exit(done: ExitCode) -> ExitCode {
    if done != ExitCode::SUCCESS {
        return done;
    }
    match STRICTEST.load(Ordering::Relaxed) {
        3 => ExitCode::from(2),
        2 => ExitCode::from(3),
        _ => ExitCode::SUCCESS,
    }
}

/// Reads one line (without its newline) into `line`, keeping at most `max`
/// bytes: `None` at the end of the input, `Some(true)` for a line longer
/// than `max`, whose rest is read and dropped.
fn read_line(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    let mut seen = false;
    let mut over = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(seen.then_some(over));
        }
        seen = true;
        let newline = memchr::memchr(b'\n', buf);
        let chunk = buf.get(..newline.unwrap_or(buf.len())).unwrap_or_default();
        if !over {
            if line.len() + chunk.len() > max {
                over = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            return Ok(Some(over));
        }
    }
}

/// Decides one input line: a call, or an array of calls as one batch, and
/// appends the answer to `out`. `prep` completes each call (the Claude Code
/// front end fills in what its calls leave out). A line that cannot be read
/// is answered with a deny.
fn decide_line(
    engine: &dyn Evaluator,
    line: &str,
    max_batch: usize,
    prep: &dyn Fn(Call) -> Call,
    reuse: &mut Reuse,
    out: &mut String,
) {
    // A call is read in one strict pass that builds no value; so is each
    // call of a batch (a line holding an array), one at a time, up to the
    // cap.
    if !line.trim_start().starts_with('[') {
        match Call::from_json_reusing(line, reuse.call.take()).map(prep) {
            Ok(call) => {
                engine.would_into(&call, &mut reuse.verdict);
                write_verdict(&reuse.verdict, out);
                reuse.call = Some(call);
            }
            Err(e) => write_verdict(
                &unreadable(&format!("the line is not a JSON call: {e}")),
                out,
            ),
        }
        return;
    }
    let calls = match read_batch(line, max_batch) {
        Ok(calls) => calls,
        Err(e) => return write_verdict(&unreadable(&e), out),
    };
    let calls: Vec<Call> = calls.into_iter().map(prep).collect();
    out.push('[');
    for (i, v) in engine.decide_batch(&calls).iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_verdict(v, out);
    }
    out.push(']');
}

/// Reads a batch line: a JSON array of calls, each read as
/// [`Call::from_json`] reads a line, refused past `max` calls before the
/// next one is read.
fn read_batch(line: &str, max: usize) -> Result<Vec<Call>, String> {
    struct Batch {
        max: usize,
    }
    impl<'de> serde::de::Visitor<'de> for Batch {
        type Value = Vec<Call>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of calls")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Call>, A::Error> {
            let mut calls = Vec::new();
            while let Some(raw) = seq.next_element::<&serde_json::value::RawValue>()? {
                if calls.len() == self.max {
                    return Err(serde::de::Error::custom(format!(
                        "the batch holds more than {} calls: split it, or raise `--max-batch`",
                        self.max
                    )));
                }
                let call = Call::from_json(raw.get()).map_err(|e| {
                    serde::de::Error::custom(format!(
                        "the batch holds a call that cannot be read: {e}"
                    ))
                })?;
                calls.push(call);
            }
            Ok(calls)
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    serde::Deserializer::deserialize_seq(&mut de, Batch { max })
        .and_then(|c| de.end().map(|()| c))
        .map_err(|e| {
            let e = e.to_string();
            if e.starts_with("the batch") {
                e
            } else {
                format!("the line is not a JSON call: {e}")
            }
        })
}

/// Appends a verdict's JSON form to `out`, streamed through its
/// `Serialize` into the line's own buffer (no `Value` is built: rendering
/// through one cost more than deciding, see `benches/jsonl.rs`).
fn write_verdict(v: &Verdict, out: &mut String) {
    v.write_json(out);
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

fn test(
    files: &[String],
    engine: Option<EngineArg>,
    only: Option<&str>,
    verbose: bool,
) -> ExitCode {
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
        // A test file's policy path is relative to the test file.
        let dir = std::path::Path::new(f)
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let read = |p: &str| {
            std::fs::read_to_string(dir.join(p))
                .map_err(|e| format!("cannot read the policy `{p}`: {e}"))
        };
        let text = match toolgate_reference::conformance::prepare(
            &text,
            f.ends_with(".toml"),
            only,
            &read,
        ) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {f}: {e}");
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
    if verbose {
        for pass in &total.passes {
            text.push_str(&format!("ok   {pass}\n"));
        }
    }
    for failure in &total.failures {
        text.push_str(&format!("FAIL {failure}\n"));
    }
    text.push_str(&format!("{}\n", total.summary()));
    if out(&text) != ExitCode::SUCCESS {
        return ExitCode::from(EXIT_IO);
    }
    // A filter that selects nothing would pass a CI job that tests nothing.
    let none_ran = total.passed + total.failed == 0;
    if let (Some(pattern), true) = (only, none_ran) {
        eprintln!(
            "error: no test or case name contains `{pattern}`: check the spelling after `--run`"
        );
        broken = true;
    }
    if total.failed > 0 || broken {
        ExitCode::from(EXIT_IO)
    } else {
        ExitCode::SUCCESS
    }
}

/// `$HOME`, when it is an absolute path.
fn home() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| h.starts_with('/'))
}

/// Whether path rules are read folded for the project at `dir`: when the
/// file system there ignores case (macOS and Windows, whose default file
/// systems do, or a probe that finds one name under two cases), since
/// there `Read(./.env)` must also meet `.ENV`. `TOOLGATE_FOLD_PATHS=1` or
/// `=0` says so instead. Folding reads more paths as the same, so a probe
/// that cannot tell leaves paths as they are only where the platform's file
/// systems are case-sensitive by default.
fn fold_paths(dir: Option<&str>) -> bool {
    match std::env::var("TOOLGATE_FOLD_PATHS").ok().as_deref() {
        Some("1" | "true" | "yes") => return true,
        Some("0" | "false" | "no") => return false,
        _ => {}
    }
    if cfg!(any(target_os = "macos", target_os = "ios", windows)) {
        return true;
    }
    dir.is_some_and(ignores_case)
}

/// Whether the file system holding `dir` finds `dir`, or one of its first
/// entries, under its name with the case of its letters swapped, as the
/// same file.
fn ignores_case(dir: &str) -> bool {
    let dir = std::path::Path::new(dir);
    let mut names: Vec<std::path::PathBuf> = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        names.extend(entries.flatten().take(64).map(|e| e.path()));
    }
    for path in names {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let swapped: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_lowercase() {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        if swapped == name {
            continue;
        }
        let other = path.with_file_name(&swapped);
        match (std::fs::metadata(&path), std::fs::metadata(&other)) {
            (Ok(a), Ok(b)) => return same_file(&a, &b),
            (Ok(_), Err(_)) => return false,
            _ => continue,
        }
    }
    false
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// The built-in registry with the `path` and `path-reach` kinds told the home
/// directory.
fn registry() -> toolgate::Registry {
    toolgate::builtins::registry_at_home(home().as_deref())
}

/// Whether a policy file is a Claude Code settings file: a JSON object with
/// a `permissions` member (which toolgate's own documents never have).
fn is_settings(path: &str, format: Option<Format>) -> bool {
    if let Some(f) = format {
        return matches!(f, Format::ClaudeCode);
    }
    if path.ends_with(".toml") {
        return false;
    }
    read_text(path).is_ok_and(|b| {
        toolgate::open::Format::detect(b.as_bytes()) == toolgate::open::Format::ClaudeCode
    })
}

/// `path` made absolute against the current directory, lexically.
fn absolute(path: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    match std::env::current_dir() {
        Ok(d) => format!("{}/{}", d.display(), path.trim_start_matches("./")),
        Err(_) => path.to_string(),
    }
}

/// The directory holding the `.claude` directory a project settings file is
/// in.
fn project_of(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    let dot_claude = p.parent()?;
    (dot_claude.file_name()? == ".claude")
        .then(|| dot_claude.parent().map(|d| d.display().to_string()))
        .flatten()
}

/// Reads settings files into a Claude Code policy.
fn load_settings(
    paths: &[String],
    env: &toolgate::claude::Environment,
) -> Result<toolgate::claude::Loaded, String> {
    use toolgate::claude::{Scope, SettingsFile};
    let mut files = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("error: cannot read `{p}`: {e}\n"))?;
        files.push(SettingsFile {
            scope: Scope::of_path(p, env.home.as_deref()),
            path: p.clone(),
            text,
        });
    }
    toolgate::claude::load(&files, env).map_err(|d| {
        let mut s = String::new();
        for x in d.in_document_order() {
            let text = files.iter().find(|f| f.path == x.location.file);
            s.push_str(&x.render(text.map(|f| f.text.as_str())));
        }
        s.push_str(&format!(
            "{} in the settings\n",
            plural(d.len(), "error", "errors")
        ));
        s
    })
}

/// What a file given as Claude Code settings is instead, when it is a
/// policy of another dialect: a toolgate policy (a top-level rule list,
/// `default`, `matchers` or `sources`, which settings keep under
/// `permissions` or do not have), a Rubric bundle, Authensor policies or an
/// artifact. `None` for settings, and for text that is not a document at
/// all (the settings reader says what is wrong with it).
fn not_settings(bytes: &[u8]) -> Option<&'static str> {
    use toolgate::open::Format;
    match Format::detect(bytes) {
        Format::Rubric => Some("a Rubric bundle"),
        Format::Authensor => Some("a list of Authensor policies"),
        Format::Artifact => Some("a compiled artifact"),
        Format::PolicyToml => Some("a toolgate policy (TOML)"),
        Format::PolicyJson => {
            let text = std::str::from_utf8(bytes).ok()?;
            let v = toolgate::json::parse_document(text).ok()?;
            let obj = v.as_object()?;
            [
                "default", "matchers", "sources", "aliases", "allow", "deny", "ask",
            ]
            .iter()
            .any(|k| obj.contains_key(*k))
            .then_some("a toolgate policy")
        }
        _ => None,
    }
}

/// One Claude Code settings file as a policy, warnings printed, for `check`
/// and `compile`: the project directory is the one holding its `.claude`,
/// else the current directory.
fn settings_policy(path: &str, trust_project: bool) -> Result<toolgate::claude::Loaded, ExitCode> {
    if path == "-" {
        // Where a settings file lies decides its source and its trust.
        eprintln!("error: Claude Code settings are read from their file, whose place decides their source: give its path instead of `-`");
        return Err(ExitCode::from(EXIT_USAGE));
    }
    let file = absolute(path);
    let env = toolgate::claude::Environment {
        home: home(),
        project_dir: project_of(&file).or_else(|| {
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string())
        }),
        trust_project,
        mode: None,
        fold_paths: false,
    };
    let env = toolgate::claude::Environment {
        fold_paths: fold_paths(env.project_dir.as_deref()),
        ..env
    };
    let loaded = load_settings(&[file], &env).map_err(|e| {
        eprint!("{e}");
        ExitCode::from(EXIT_INVALID)
    })?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
        warned();
    }
    if !loaded.unknown_tools.is_empty() {
        for u in &loaded.unknown_tools {
            eprintln!("error: {u}");
        }
        return Err(ExitCode::from(EXIT_INVALID));
    }
    if let Err(d) = Engine::build_with(&loaded.policy, &registry()) {
        eprint!("{}", d.render(None));
        return Err(ExitCode::from(EXIT_INVALID));
    }
    Ok(loaded)
}

fn decide_settings(
    files: &[String],
    trust_project: bool,
    engine: EngineArg,
    intake: Intake,
    calls: &str,
    explain: bool,
    guards: Option<Arc<Guards>>,
) -> ExitCode {
    let files: Vec<String> = files.iter().map(|f| absolute(f)).collect();
    let project_dir = files.iter().find_map(|f| project_of(f)).or_else(|| {
        std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string())
    });
    let env = toolgate::claude::Environment {
        home: home(),
        project_dir: project_dir.clone(),
        trust_project,
        mode: None,
        fold_paths: fold_paths(project_dir.as_deref()),
    };
    let loaded = match load_settings(&files, &env) {
        Ok(l) => l,
        Err(e) => {
            eprint!("{e}");
            let unreadable = e.starts_with("error: cannot read");
            if unreadable {
                eprintln!("the settings cannot be used");
            }
            return ExitCode::from(if unreadable { EXIT_IO } else { EXIT_INVALID });
        }
    };
    for w in loaded.warnings.iter().chain(&loaded.unknown_tools) {
        eprintln!("warning: {w}");
    }
    let inner = match engine.kind().build(&loaded.policy, &registry()) {
        Ok(i) => match guards {
            Some(g) => Box::new(Guarded::new(i, g)),
            None => i,
        },
        Err(d) => {
            eprint!("{}", d.render(None));
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let reference = if explain {
        match toolgate_reference::Reference::build(&loaded.policy, &registry()) {
            Ok(r) => Some(r),
            Err(d) => {
                eprint!("{}", d.render(None));
                return ExitCode::from(EXIT_INVALID);
            }
        }
    } else {
        None
    };
    let evaluator = &*inner;
    let prep = move |mut c: Call| {
        if c.cwd.is_none() {
            c.cwd = project_dir.clone();
        }
        toolgate::claude::prepare_call(c)
    };
    match &reference {
        Some(r) => decide_explained(evaluator, r, calls, intake, &prep),
        None => decide(evaluator, calls, intake, &prep),
    }
}

fn explain_refused() -> ExitCode {
    eprintln!("error: `--explain` reads toolgate policies and Claude Code settings; Rubric bundles and Authensor policies name their deciding rule in each result");
    ExitCode::from(EXIT_USAGE)
}

/// The reference evaluator of the toolgate policy at `path`, which
/// explains decisions.
fn explainer(
    path: &str,
    format: Option<Format>,
) -> Result<toolgate_reference::Reference, ExitCode> {
    let policy = load(path, format)?;
    toolgate_reference::Reference::build(&policy, &registry()).map_err(|d| {
        let text = read_text(path).unwrap_or_default();
        report(&d.in_file(path), &text)
    })
}

/// `decide --explain`: every verdict with an `explain` member, the
/// reference's account of it. A batch's calls are each explained on their
/// own; the hold that asks for a call another call of the batch held is
/// in the verdict.
fn decide_explained(
    engine: &dyn Evaluator,
    reference: &toolgate_reference::Reference,
    calls: &str,
    intake: Intake,
    prep: &dyn Fn(Call) -> Call,
) -> ExitCode {
    let explained = |call: &Call, v: &Verdict| {
        let mut j = v.to_json();
        let e = reference.explain(call).to_json();
        if let Some(o) = j.as_object_mut() {
            let mut inner = serde_json::Map::new();
            for k in ["subjects", "withheld"] {
                inner.insert(k.into(), e.get(k).cloned().unwrap_or_default());
            }
            o.insert("explain".into(), serde_json::Value::Object(inner));
        }
        j.to_string()
    };
    lines(calls, intake, |line, out| match line {
        Ok(text) if !text.trim_start().starts_with('[') => match Call::from_json(text).map(prep) {
            Ok(call) => out.push_str(&explained(&call, &engine.would(&call))),
            Err(e) => write_verdict(
                &unreadable(&format!("the line is not a JSON call: {e}")),
                out,
            ),
        },
        Ok(text) => match read_batch(text, intake.max_batch) {
            Ok(batch) => {
                let batch: Vec<Call> = batch.into_iter().map(prep).collect();
                let verdicts = engine.decide_batch(&batch);
                let items: Vec<String> = batch
                    .iter()
                    .zip(&verdicts)
                    .map(|(c, v)| explained(c, v))
                    .collect();
                out.push_str(&format!("[{}]", items.join(",")));
            }
            Err(e) => write_verdict(&unreadable(&e), out),
        },
        Err(why) => write_verdict(&unreadable(why), out),
    })
}

fn fmt(files: &[String], write: bool, check: bool) -> ExitCode {
    use toolgate::format::{format_document, Dialect};
    let mut code = ExitCode::SUCCESS;
    for f in files {
        if f.ends_with(".toml") {
            eprintln!("error: `{f}`: fmt lays out JSON documents; a TOML file keeps its comments and layout as written");
            code = ExitCode::from(EXIT_USAGE);
            continue;
        }
        let text = match read_text(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read `{f}`: {e}");
                code = ExitCode::from(EXIT_IO);
                continue;
            }
        };
        let dialect = match toolgate::open::Format::detect(text.as_bytes()) {
            toolgate::open::Format::PolicyJson => Dialect::Toolgate,
            toolgate::open::Format::ClaudeCode => Dialect::ClaudeCode,
            _ => Dialect::AsWritten,
        };
        let formatted = match format_document(&text, dialect) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: `{f}`: {e}");
                code = ExitCode::from(EXIT_INVALID);
                continue;
            }
        };
        if check {
            if formatted != text {
                println!("{f}: not laid out canonically; run `toolgate fmt --write {f}`");
                code = ExitCode::from(EXIT_IO);
            }
        } else if write && f != "-" {
            if formatted != text {
                if let Err(e) = write_whole(f, formatted.as_bytes()) {
                    eprintln!("error: cannot write `{f}`: {e}");
                    code = ExitCode::from(EXIT_IO);
                    continue;
                }
                eprintln!("formatted {f}");
            }
        } else if out(&formatted) != ExitCode::SUCCESS {
            return ExitCode::from(EXIT_IO);
        }
    }
    code
}

fn explain(
    path: &str,
    format: Option<Format>,
    trust_project: bool,
    output: OutputFormat,
    call: Option<&str>,
) -> ExitCode {
    let text = match call {
        Some(c) if c != "-" => c.to_string(),
        _ => match read_stdin(guard::INPUT_LIMIT) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: the call cannot be read: {e}");
                return ExitCode::from(EXIT_IO);
            }
        },
    };
    let mut call = match Call::from_json(text.trim()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: the call does not read: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let policy = if is_settings(path, format) {
        let loaded = match settings_policy(path, trust_project) {
            Ok(l) => l,
            Err(code) => return code,
        };
        if call.cwd.is_none() {
            call.cwd = project_of(&absolute(path)).or_else(|| {
                std::env::current_dir()
                    .ok()
                    .map(|d| d.display().to_string())
            });
        }
        call = toolgate::claude::prepare_call(call);
        loaded.policy
    } else {
        if matches!(format, Some(Format::Rubric | Format::Authensor))
            || toolgate::open::Format::detect(read_text(path).unwrap_or_default().as_bytes())
                == toolgate::open::Format::Authensor
        {
            eprintln!("error: `explain` reads toolgate policies and Claude Code settings; decide Rubric bundles and Authensor policies with `decide`");
            return ExitCode::from(EXIT_USAGE);
        }
        match load(path, format) {
            Ok(p) => p,
            Err(code) => return code,
        }
    };
    let registry = registry();
    let reference = match toolgate_reference::Reference::build(&policy, &registry) {
        Ok(r) => r,
        Err(d) => {
            let text = read_text(path).unwrap_or_default();
            return report(&d.in_file(path), &text);
        }
    };
    let explanation = reference.explain(&call);
    // The explanation is the reference's walk; the compiled runtime, which
    // `decide` uses, must agree with it.
    let compiled = Engine::build_with(&policy, &registry).map(|e| e.would(&call));
    let agrees = compiled.as_ref().is_ok_and(|v| {
        v.decision == explanation.verdict.decision && v.reason == explanation.verdict.reason
    });
    if !agrees {
        eprintln!("error: the compiled runtime and the reference disagree on this call; please report it with the policy and the call");
    }
    let printed = match output {
        OutputFormat::Text => explanation.to_text(),
        OutputFormat::Json => {
            let mut v = explanation.to_json();
            if let (Ok(c), false, Some(o)) = (&compiled, agrees, v.as_object_mut()) {
                o.insert("compiled".into(), c.to_json());
            }
            format!("{v}\n")
        }
    };
    if out(&printed) != ExitCode::SUCCESS {
        return ExitCode::from(EXIT_IO);
    }
    if agrees {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INVALID)
    }
}

/// Prints a block of `event` with a reason (a deny for PreToolUse).
fn hook_deny(event: guard::Event, reason: &str) -> ExitCode {
    match event {
        guard::Event::PreToolUse => hook_answer(Decision::Deny, reason),
        guard::Event::PostToolUse => hook_block(toolgate::claude::post_tool_use_answer(
            Some(&format!("toolgate: {reason}")),
            None,
        )),
        guard::Event::UserPromptSubmit => hook_block(toolgate::claude::user_prompt_answer(Some(
            &format!("toolgate: {reason}"),
        ))),
    }
}

fn hook_block(answer: serde_json::Value) -> ExitCode {
    let _ = out(&format!("{answer}\n"));
    ExitCode::SUCCESS
}

/// PostToolUse and UserPromptSubmit: the tool's output or the prompt,
/// checked by the guards. A block (or a secret that would be redacted:
/// Claude Code cannot take a rewritten output of its own tools) withholds
/// the content; for a tool's output, the redacted copy goes to the model
/// as additional context.
fn hook_content(event: guard::Event, text: &str, guards: Option<&str>) -> ExitCode {
    use toolgate::guards::{Guards, Place};
    let owned;
    let g: &Guards = match guards {
        Some(path) => match read_text(path)
            .map_err(|e| format!("cannot read `{path}`: {e}"))
            .and_then(|t| Guards::from_json(&t).map_err(|e| format!("`{path}`: {e}")))
        {
            Ok(g) => {
                owned = g;
                &owned
            }
            Err(why) => return hook_deny(event, &format!("the guards cannot be used: {why}")),
        },
        None => match Guards::builtin() {
            Ok(g) => g,
            Err(e) => return hook_deny(event, &format!("the guards cannot be used: {e}")),
        },
    };
    let v = match toolgate::json::parse_strict(text) {
        Ok(v) => v,
        Err(e) => return hook_deny(event, &format!("the hook input is not JSON: {e}")),
    };
    let (place, member) = match event {
        guard::Event::PostToolUse => (Place::Output, "tool_response"),
        _ => (Place::Message, "prompt"),
    };
    let content = match (event, v.get(member)) {
        (_, Some(serde_json::Value::String(s))) => s.clone(),
        (guard::Event::PostToolUse, Some(other)) => other.to_string(),
        _ => return hook_deny(event, &format!("the hook input has no `{member}` to check")),
    };
    let o = g.check(place, content.as_bytes());
    if o.allowed() && o.findings.is_empty() {
        return hook_block(serde_json::json!({}));
    }
    if !o.allowed() {
        return hook_deny(event, &o.reason);
    }
    let mut types: Vec<&str> = o.findings.iter().map(|f| f.kind.as_ref()).collect();
    types.sort_unstable();
    types.dedup();
    let why = format!(
        "the {} held {} secret(s) ({}), so it was withheld",
        if event == guard::Event::PostToolUse {
            "tool's output"
        } else {
            "prompt"
        },
        o.findings.len(),
        types.join(", ")
    );
    match event {
        guard::Event::PostToolUse => {
            const CONTEXT_LIMIT: usize = 64 << 10;
            let mut copy =
                String::from_utf8_lossy(o.redacted.as_deref().unwrap_or_default()).into_owned();
            if copy.len() > CONTEXT_LIMIT {
                let mut cut = CONTEXT_LIMIT;
                while !copy.is_char_boundary(cut) {
                    cut -= 1;
                }
                copy.truncate(cut);
                copy.push_str("\n[toolgate: the redacted output was cut here]");
            }
            hook_block(toolgate::claude::post_tool_use_answer(
                Some(&format!(
                    "toolgate: {why}; a redacted copy follows as additional context"
                )),
                Some(&format!("The tool's output with secrets redacted:\n{copy}")),
            ))
        }
        _ => hook_deny(event, &why),
    }
}

/// PreToolUse with `--guards`: the call's arguments checked as
/// `arguments`; the reason to deny, if any.
fn hook_arguments(text: &str, path: &str) -> Option<String> {
    use toolgate::guards::Guards;
    let g = match read_text(path)
        .map_err(|e| format!("cannot read `{path}`: {e}"))
        .and_then(|t| Guards::from_json(&t).map_err(|e| format!("`{path}`: {e}")))
    {
        Ok(g) => g,
        Err(why) => return Some(format!("the guards cannot be used: {why}")),
    };
    toolgate_server::hook::blocked_arguments(&g, text)
}

/// `toolgate scan`: findings (or the redacted content) of `file`, read in
/// chunks; exit 2 when something blocks.
fn scan(
    file: &str,
    guards: Option<&str>,
    redact: bool,
    place: toolgate::guards::Place,
) -> ExitCode {
    use toolgate::guards::{Finding, Guards};
    let owned;
    let g: &Guards = match guards {
        Some(path) => {
            let text = match read_text(path) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("error: cannot read `{path}`: {e}");
                    return ExitCode::from(EXIT_IO);
                }
            };
            match Guards::from_json(&text) {
                Ok(g) => {
                    owned = g;
                    &owned
                }
                Err(e) => {
                    eprintln!("error: `{path}`: {e}");
                    return ExitCode::from(EXIT_INVALID);
                }
            }
        }
        None => match Guards::builtin() {
            Ok(g) => g,
            Err(e) => {
                eprintln!("error: the built-in catalogue does not build: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        },
    };
    let mut source: Box<dyn Read> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(file) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("error: cannot read `{file}`: {e}");
                return ExitCode::from(EXIT_IO);
            }
        }
    };
    let mut stdout = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut failed = false;
    let mut blocked = false;
    let mut chunk = vec![0u8; 1 << 20];
    let mut total = 0u64;
    // Findings with whether each blocks.
    let mut found: Vec<(Finding, bool)> = Vec::new();
    let mut plain = (!redact).then(|| g.stream(Some(place)));
    let mut redacting = redact.then(|| g.redact_stream());
    let mut done = false;
    while !done {
        let n = match source.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("error: reading `{file}`: {e}");
                return ExitCode::from(EXIT_IO);
            }
        };
        done = n == 0;
        total += n as u64;
        let part = chunk.get(..n).unwrap_or_default();
        if let Some(s) = plain.as_mut() {
            let mut fs = Vec::new();
            if done {
                s.finish(&mut |f| fs.push(f));
            } else {
                s.feed(part, &mut |f| fs.push(f));
            }
            found.extend(fs.into_iter().map(|f| {
                let b = s.blocks(&f);
                (f, b)
            }));
        }
        if let Some(s) = redacting.as_mut() {
            let mut fs = Vec::new();
            let mut write = |b: &[u8]| failed |= stdout.write_all(b).is_err();
            if done {
                s.finish(&mut write, &mut |f| fs.push(f));
            } else {
                s.feed(part, &mut write, &mut |f| fs.push(f));
            }
            found.extend(fs.into_iter().map(|f| {
                let b = f.kind.as_ref() == "deny";
                (f, b)
            }));
        }
        if let Some(max) = g.limit(place).filter(|&m| done && total > m) {
            let f = Finding {
                rule: "limit".into(),
                kind: "limit".into(),
                severity: toolgate::guards::Severity::High,
                start: max,
                end: total,
            };
            found.push((f, true));
        }
        for (f, b) in found.drain(..) {
            blocked |= b;
            if !redact {
                failed |= writeln!(stdout, "{}", f.to_json()).is_err();
            }
        }
    }
    if failed || stdout.flush().is_err() {
        return ExitCode::from(EXIT_IO);
    }
    if blocked {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints a hook answer; the hook always exits 0 so that the agent reads it.
fn hook_answer(decision: Decision, reason: &str) -> ExitCode {
    let _ = out(&format!("{}\n", toolgate::claude::answer(decision, reason)));
    ExitCode::SUCCESS
}

/// The most of Claude Code's record read; a longer one trusts nothing.
const MAX_TRUST_RECORD: u64 = 64 << 20;

/// Whether Claude Code recorded that the user accepted the workspace trust
/// dialog for the project (`projects[<dir>].hasTrustDialogAccepted` in
/// `$CLAUDE_CONFIG_DIR/.claude.json`, else `$HOME/.claude.json`), under the
/// project directory, its git root or the working directory. A record that
/// is missing, unreadable, too long or malformed means untrusted.
fn recorded_trust(home: Option<&str>, project: Option<&str>, cwd: Option<&str>) -> bool {
    let file = match std::env::var("CLAUDE_CONFIG_DIR")
        .ok()
        .filter(|d| d.starts_with('/'))
    {
        Some(d) => std::path::Path::new(&d).join(".claude.json"),
        None => match home {
            Some(h) => std::path::Path::new(h).join(".claude.json"),
            None => return false,
        },
    };
    let Ok(f) = std::fs::File::open(&file) else {
        return false;
    };
    let mut text = String::new();
    use std::io::Read;
    if f.take(MAX_TRUST_RECORD + 1)
        .read_to_string(&mut text)
        .is_err()
        || text.len() as u64 > MAX_TRUST_RECORD
    {
        eprintln!(
            "warning: `{}` cannot be read within {} MiB; the project is not trusted",
            file.display(),
            MAX_TRUST_RECORD >> 20
        );
        return false;
    }
    let mut dirs: Vec<String> = project
        .iter()
        .chain(cwd.iter())
        .map(|d| d.to_string())
        .collect();
    // The git root: the nearest directory up from the project holding `.git`.
    let mut d = project.map(std::path::Path::new);
    while let Some(p) = d {
        if p.join(".git").exists() {
            dirs.push(p.display().to_string());
            break;
        }
        d = p.parent();
    }
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    toolgate::claude::trust_recorded(&text, &dirs)
}

/// The settings files Claude Code would read for a project, those that
/// exist: managed, local, project, user.
fn discover(project: Option<&str>, home: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for dir in [
        "/etc/claude-code",
        "/Library/Application Support/ClaudeCode",
    ] {
        let f = format!("{dir}/managed-settings.json");
        if std::path::Path::new(&f).exists() {
            out.push(f);
        }
        if let Ok(entries) = std::fs::read_dir(format!("{dir}/managed-settings.d")) {
            let mut drop_ins: Vec<String> = entries
                .flatten()
                .map(|e| e.path().display().to_string())
                .filter(|p| p.ends_with(".json"))
                .collect();
            drop_ins.sort();
            out.extend(drop_ins);
        }
    }
    if let Some(p) = project {
        for name in ["settings.local.json", "settings.json"] {
            let f = format!("{}/.claude/{name}", p.trim_end_matches('/'));
            if std::path::Path::new(&f).exists() {
                out.push(f);
            }
        }
    }
    let user_dir = std::env::var("CLAUDE_CONFIG_DIR")
        .ok()
        .filter(|d| d.starts_with('/'))
        .or_else(|| home.map(|h| format!("{}/.claude", h.trim_end_matches('/'))));
    if let Some(d) = user_dir {
        let f = format!("{d}/settings.json");
        if std::path::Path::new(&f).exists() && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

fn hook(
    connect: Option<resident::Connect<'_>>,
    settings: &[String],
    bundle: Option<&str>,
    guards: Option<&str>,
    trust_project: bool,
    require_signature: Option<&str>,
    signature: Option<&str>,
) -> ExitCode {
    if !guard::is_decider() {
        let input = match guard::read_input() {
            Ok(i) => i,
            Err(why) => return hook_deny(guard::Event::PreToolUse, &why),
        };
        // The server answers PreToolUse only; the content events are
        // decided here, by the guards.
        let event = guard::event_of(&input);
        if let (Some(c), guard::Event::PreToolUse) = (connect, event) {
            match resident::forward(c.addr, c.token_file, &input) {
                Ok(answer) => return out(&answer),
                Err(why) if c.fail_closed => return hook_deny(event, &why),
                Err(why) => eprintln!("warning: {why}; deciding here instead"),
            }
        }
        return guard::supervise(input, &hook_deny);
    }
    guard::inject_fault();
    const LIMIT: u64 = guard::INPUT_LIMIT;
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(LIMIT + 1)
        .read_to_end(&mut input)
    {
        return hook_answer(
            Decision::Deny,
            &format!("the hook input could not be read: {e}"),
        );
    }
    let event = guard::event_of(&input);
    if input.len() as u64 > LIMIT {
        return hook_deny(
            event,
            &format!("the hook input is longer than {LIMIT} bytes"),
        );
    }
    let Ok(text) = std::str::from_utf8(&input) else {
        return hook_deny(event, "the hook input is not UTF-8");
    };
    if guard::too_many_values(text) {
        return hook_deny(
            event,
            &format!(
                "the hook input holds more than {} JSON values",
                guard::VALUE_LIMIT
            ),
        );
    }
    if event != guard::Event::PreToolUse {
        return hook_content(event, text, guards);
    }
    if let Some(path) = guards {
        if let Some(why) = hook_arguments(text, path) {
            return hook_answer(Decision::Deny, &why);
        }
    }
    let payload = match toolgate::claude::Payload::from_json(text) {
        Ok(p) => p,
        Err(e) => return hook_answer(Decision::Deny, &e.to_string()),
    };
    let home = home();
    let project = toolgate_server::hook::project_dir(payload.call.cwd.as_deref(), home.as_deref());
    let mut call = payload.call;
    if call.cwd.is_none() {
        call.cwd = project.clone();
    }
    if let Some(b) = bundle {
        let options = match keys::require(LoadOptions::default(), b, require_signature, signature) {
            Ok(o) => o,
            Err(e) => return hook_answer(Decision::Deny, &e),
        };
        let mapped = match read_artifact(b, &options) {
            Ok(m) => m,
            Err(e) => return hook_answer(Decision::Deny, &e),
        };
        return match Engine::load(&mapped, &registry(), &options) {
            Ok(engine) => {
                let withheld = engine.withheld().len();
                if trust_project && withheld > 0 {
                    eprintln!(
                        "warning: `{b}` was compiled without trust and withholds {}: `--trust-project` cannot apply them to an artifact; compile the settings with `--trust-project`",
                        plural(withheld, "allow rule", "allow rules")
                    );
                }
                if let Some(why) = toolgate::claude::wrong_host(engine.program(), &call.tool) {
                    return hook_answer(Decision::Deny, &why);
                }
                // Settings lowered for another mode, project or home would
                // answer this session with another session's rules.
                if let Some(why) = toolgate::claude::Lowered::refuses_session(
                    &engine.sources(),
                    payload.mode.as_deref(),
                    project.as_deref(),
                    home.as_deref(),
                ) {
                    return hook_answer(Decision::Deny, &format!("`{b}`: {why}"));
                }
                hook_decide(&|c| engine.would(c), &call, project.as_deref())
            }
            Err(e) => hook_answer(
                Decision::Deny,
                &format!("the artifact `{b}` is not usable: {e}"),
            ),
        };
    }
    let project_for_git = project.clone();
    let files: Vec<String> = if settings.is_empty() {
        discover(project.as_deref(), home.as_deref())
    } else {
        settings.iter().map(|f| absolute(f)).collect()
    };
    // A policy of another dialect given as settings would be read as
    // settings with no rules, and every call would get the default.
    for (given, f) in settings.iter().zip(&files) {
        if let Some(what) = std::fs::read(f).ok().and_then(|b| not_settings(&b)) {
            return hook_answer(
                Decision::Deny,
                &format!(
                    "`{given}` is {what}, not Claude Code settings: compile it and pass the artifact with `--bundle`, or write Claude Code rules under `permissions`"
                ),
            );
        }
    }
    let trust_project =
        trust_project || recorded_trust(home.as_deref(), project.as_deref(), call.cwd.as_deref());
    let fold = fold_paths(project.as_deref());
    let env = toolgate::claude::Environment {
        home,
        project_dir: project,
        trust_project,
        mode: payload.mode,
        fold_paths: fold,
    };
    let loaded = match load_settings(&files, &env) {
        Ok(l) => l,
        Err(e) => {
            eprint!("{e}");
            let first = e.lines().next().unwrap_or("").trim_start_matches("error: ");
            return hook_answer(
                Decision::Deny,
                &format!("the Claude Code settings cannot be used: {first}"),
            );
        }
    };
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    for u in &loaded.unknown_tools {
        eprintln!("WARNING: a rule that never applies: {u}");
    }
    let inner = match EngineKind::Compiled.build(&loaded.policy, &registry()) {
        Ok(i) => i,
        Err(d) => {
            return hook_answer(
                Decision::Deny,
                &format!(
                    "the Claude Code settings cannot be compiled: {}",
                    d.first().message
                ),
            )
        }
    };
    hook_decide(&|c| inner.would(c), &call, project_for_git.as_deref())
}

/// The flags of `toolgate serve`.
#[derive(clap::Args, Debug)]
struct Serve {
    /// A compiled artifact of any kind (rule lists, Claude Code
    /// settings, a Rubric bundle, Authensor policies).
    #[arg(long, required_unless_present = "policy", conflicts_with = "policy")]
    bundle: Option<String>,
    /// A policy document of any dialect, compiled at start (and at
    /// every reload).
    #[arg(long)]
    policy: Option<String>,
    /// Where to listen: `HOST:PORT` or `unix:PATH`; repeat for several.
    /// A non-loopback address needs `--token-file`.
    #[arg(long, default_value = toolgate_server::DEFAULT_LISTEN)]
    listen: Vec<String>,
    /// Where the admin endpoint (`POST /v1/reload`) listens.
    #[arg(long)]
    admin_listen: Option<String>,
    /// Where Envoy's `ext_authz` gRPC service listens (`HOST:PORT`).
    #[arg(long)]
    grpc_listen: Option<String>,
    /// A file holding the bearer token every request but the health
    /// checks must carry (`Authorization: Bearer TOKEN`).
    #[arg(long)]
    token_file: Option<String>,
    /// A file holding the admin listener's own bearer token, in place of
    /// `--token-file`'s there: what holds the decision token (a hook) then
    /// cannot release calls or grant rules.
    #[arg(long)]
    admin_token_file: Option<String>,
    /// Append one JSON line per decision to this file.
    #[arg(long)]
    decision_log: Option<String>,
    /// A JSON pointer into a call (`/args/command`) whose value the
    /// decision log masks; repeat for several.
    #[arg(long, requires = "decision_log")]
    mask: Vec<String>,
    /// A second artifact decided beside the first on every call: its
    /// verdict is logged and counted where it differs, never enforced.
    #[arg(long)]
    shadow: Option<String>,
    /// A guard document (or a policy with a `guards` member) over every
    /// call's arguments, in place of the policy's own member; read again
    /// at every reload (`spec/guards.md` §5.1). Rule lists and Claude Code
    /// settings only.
    #[arg(long)]
    guards: Option<String>,
    /// The largest request body, in bytes; a larger one is answered
    /// with 413 and a deny.
    #[arg(long, default_value_t = toolgate_server::DEFAULT_MAX_BODY)]
    max_body_bytes: usize,
    /// The most calls one batch may hold.
    #[arg(long, default_value_t = DEFAULT_MAX_BATCH)]
    max_batch: usize,
    /// The most connections open at once on each listener.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Where state that outlives a decision is kept (Authensor sessions
    /// named by `sessionId` alone): `memory` (this process), or
    /// `redis://HOST:PORT/DB`, shared by every replica pointing at it.
    #[arg(long, default_value = "memory")]
    store: String,
    /// The tenant whose namespace the store's keys are under.
    #[arg(long, default_value = "default")]
    tenant: String,
    /// Seconds a session kept in Redis lives after its last write (0:
    /// until deleted).
    #[arg(long, default_value_t = 86_400)]
    store_expiry: u64,
    /// A fixed scope for the store's keys, so that sessions outlive a
    /// policy reload; by default they are kept per artifact revision.
    #[arg(long)]
    store_scope: Option<String>,
    /// A file of state keys (64 hexadecimal digits a line, the first
    /// sealing): every record written into the store carries a tag made
    /// with it over the record and its place, and a record without a good
    /// tag is refused, so whoever can write to a shared store without the
    /// key cannot forge or move a held call, a grant or an action (rolling
    /// the store back is for its access control). Every replica needs the
    /// same file.
    #[arg(long)]
    state_key: Option<String>,
    /// Do not watch the artifact's file (reload on `SIGHUP` or
    /// `POST /v1/reload` only).
    #[arg(long)]
    no_watch: bool,
    /// The largest artifact accepted, in bytes.
    #[arg(long, default_value_t = toolgate::artifact::DEFAULT_MAX_LEN)]
    max_artifact_bytes: usize,
}

/// `toolgate serve`: reads the flags into the server's configuration and
/// hands over; runs until `SIGINT` or `SIGTERM`.
fn serve(flags: Serve) -> ExitCode {
    use toolgate_server::{Addr, Config, Source};
    let fail = |e: toolgate_server::ServeError| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    };
    let source = match (flags.bundle, flags.policy) {
        (Some(b), _) => Source::Bundle(b.into()),
        (None, Some(p)) => Source::Policy(p.into()),
        (None, None) => {
            eprintln!(
                "error: give the artifact to serve with `--bundle FILE.tgb` or `--policy FILE`"
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut config = Config::new(source);
    // A shadow is an artifact or a document, recognised by shape.
    config.shadow = flags.shadow.map(|s| Source::Policy(s.into()));
    config.guards = flags.guards.map(Into::into);
    for l in &flags.listen {
        match Addr::parse(l) {
            Ok(a) => config.listen.push(a),
            Err(e) => return fail(e),
        }
    }
    if let Some(a) = &flags.admin_listen {
        match Addr::parse(a) {
            Ok(a) => config.admin_listen = Some(a),
            Err(e) => return fail(e),
        }
    }
    if let Some(a) = &flags.grpc_listen {
        match Addr::parse(a) {
            Ok(a) => config.grpc_listen = Some(a),
            Err(e) => return fail(e),
        }
    }
    if let Some(f) = &flags.token_file {
        match toolgate_server::read_token(std::path::Path::new(f)) {
            Ok(t) => config.token = Some(t),
            Err(e) => return fail(e),
        }
    }
    if let Some(f) = &flags.admin_token_file {
        match toolgate_server::read_token(std::path::Path::new(f)) {
            Ok(t) => config.admin_token = Some(t),
            Err(e) => return fail(e),
        }
    }
    config.decision_log = flags.decision_log.map(Into::into);
    config.mask = flags.mask;
    config.max_body = flags.max_body_bytes;
    config.max_batch = flags.max_batch;
    config.max_connections = flags.max_connections;
    let expiry =
        (flags.store_expiry > 0).then(|| std::time::Duration::from_secs(flags.store_expiry));
    match toolgate_server::open_store(&flags.store, expiry) {
        Ok(s) => config.store = s,
        Err(e) => return fail(e),
    }
    match &flags.state_key {
        Some(f) => match toolgate_server::read_state_keys(std::path::Path::new(f)) {
            Ok(keys) => config.store = toolgate_server::seal_store(config.store, keys),
            Err(e) => return fail(e),
        },
        // The memory store is this process's own; a shared one is not.
        None if flags.store != "memory" => eprintln!(
            "toolgate serve: warning: the store's records are not sealed: whoever can write to it can release held calls and grant rules; give `--state-key FILE`"
        ),
        None => {}
    }
    config.tenant = flags.tenant;
    config.store_scope = flags.store_scope;
    config.watch = !flags.no_watch;
    config.sighup = true;
    config.load = LoadOptions::default().max_len(flags.max_artifact_bytes);
    let ready = |r: &toolgate_server::Running| {
        for a in &r.listening {
            eprintln!(
                "toolgate serve: listening on {a} (revision {})",
                r.revision()
            );
        }
        if let Some(a) = &r.admin {
            eprintln!("toolgate serve: admin on {a}");
        }
        if let Some(a) = &r.grpc {
            eprintln!("toolgate serve: ext_authz on {a}");
        }
    };
    match toolgate_server::run(config, &ready) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ toolgate_server::ServeError::Artifact { .. }) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_INVALID)
        }
        Err(
            e @ (toolgate_server::ServeError::Read { .. }
            | toolgate_server::ServeError::Bind { .. }),
        ) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_IO)
        }
        Err(e) => fail(e),
    }
}

/// The hook's answer to `call`, printed (the server's `http` hook answers
/// with the same function).
fn hook_decide(would: &dyn Fn(&Call) -> Verdict, call: &Call, project: Option<&str>) -> ExitCode {
    let (decision, reason) = toolgate::claude::hook_verdict(
        would,
        call,
        home().as_deref(),
        project,
        &toolgate_server::hook::resolve_link,
        &toolgate_server::hook::list_dir,
    );
    hook_answer(decision, &reason)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate::RuleRef;

    #[test]
    fn verdicts_are_written_as_to_json_writes_them() {
        let w = toolgate_testing::workload::Workload::generate(300, 500, 9);
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
