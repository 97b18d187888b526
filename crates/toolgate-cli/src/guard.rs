//! The hook's supervisor: every failure of the decider answers deny.
//!
//! Claude Code runs a tool call when its hook crashes, times out, or exits
//! with a code other than 0 or 2, so a hook that can fail open on its own
//! faults is no guard. `toolgate hook` therefore runs in two processes. The
//! supervisor (this module) reads the payload under the input cap, starts
//! itself again as the decider with the payload on standard input, and
//! passes on the decider's answer only when the decider exited 0 with one
//! well-formed answer on standard output, or exited 2. Anything else (a
//! panic, an abort on a failed allocation, a signal such as `SIGSEGV` or
//! `SIGBUS`, a hang past the time limit, another exit code, output that is
//! not an answer) is answered with a deny naming the fault. The supervisor
//! itself allocates only the payload and the answer, both bounded.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Set in the decider's environment, so that it decides instead of
/// supervising again.
pub const CHILD_ENV: &str = "TOOLGATE_HOOK_DECIDER";

/// The longest payload read, and the longest answer taken from the decider.
pub const INPUT_LIMIT: u64 = 16 << 20;
const ANSWER_LIMIT: u64 = 1 << 20;

/// How long the decider may take: under Claude Code's own hook timeout
/// (60 s by default), whose expiry would let the call run.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// The most JSON values a payload may hold: memory for the parsed payload
/// then stays within a small multiple of the input (a 16 MiB payload of
/// five million empty arrays once took 2.4 GB).
pub const VALUE_LIMIT: usize = 1_000_000;

/// Whether `text` holds more than [`VALUE_LIMIT`] JSON values.
pub fn too_many_values(text: &str) -> bool {
    toolgate::json::values_over(text, VALUE_LIMIT)
}

/// Whether this process is the decider.
pub fn is_decider() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The hook event a payload is for, which fixes the shape of its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Before a tool runs: a permission decision.
    PreToolUse,
    /// After a tool ran, before the model reads its output.
    PostToolUse,
    /// A prompt the user submitted, before the model reads it.
    UserPromptSubmit,
}

/// The event a payload names in `hook_event_name`: read as JSON, or, when
/// the payload is not JSON, by the event names it holds (so that even a
/// malformed payload is answered in its event's shape). `PreToolUse` when
/// it names none.
pub fn event_of(input: &[u8]) -> Event {
    #[derive(serde::Deserialize)]
    struct Named {
        hook_event_name: Option<String>,
    }
    let by_name = |n: &str| match n {
        "PostToolUse" => Event::PostToolUse,
        "UserPromptSubmit" => Event::UserPromptSubmit,
        _ => Event::PreToolUse,
    };
    match serde_json::from_slice::<Named>(input) {
        Ok(n) => by_name(n.hook_event_name.as_deref().unwrap_or("")),
        Err(_) => {
            let has = |n: &str| input.windows(n.len()).any(|w| w == n.as_bytes());
            if has("\"PostToolUse\"") {
                Event::PostToolUse
            } else if has("\"UserPromptSubmit\"") {
                Event::UserPromptSubmit
            } else {
                Event::PreToolUse
            }
        }
    }
}

/// Reads the payload from standard input, under the input cap; why not,
/// as the deny's reason.
pub fn read_input() -> Result<Vec<u8>, String> {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(INPUT_LIMIT + 1)
        .read_to_end(&mut input)
    {
        return Err(format!("the hook input could not be read: {e}"));
    }
    if input.len() as u64 > INPUT_LIMIT {
        return Err(format!("the hook input is longer than {INPUT_LIMIT} bytes"));
    }
    Ok(input)
}

/// Runs the decider on `input` (the payload, from [`read_input`]) and
/// passes its answer on, or answers deny; `deny` prints a deny answer (a
/// block, after a tool or for a prompt) for the payload's event with a
/// reason.
pub fn supervise(input: Vec<u8>, deny: &dyn Fn(Event, &str) -> ExitCode) -> ExitCode {
    let event = event_of(&input);
    let deny = |why: &str| deny(event, why);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return deny(&format!("the hook cannot find its own program: {e}")),
    };
    let mut child = match Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return deny(&format!("the hook cannot start its decider: {e}")),
    };
    // The payload is written and the answer read on threads of their own,
    // so that a decider that stops reading or writing cannot block the
    // supervisor past its time limit.
    let feeder = child.stdin.take().map(|mut stdin| {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let reader = child.stdout.take().map(|stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.take(ANSWER_LIMIT + 1).read_to_end(&mut out);
            out
        })
    });
    let errors = child.stderr.take().map(|stderr| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stderr.take(ANSWER_LIMIT).read_to_end(&mut out);
            out
        })
    });
    let deadline = Instant::now() + timeout();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "the hook's decider took longer than {} ms and was stopped",
                    timeout().as_millis()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => break Err(format!("the hook lost its decider: {e}")),
        }
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let out = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    let err = errors.and_then(|r| r.join().ok()).unwrap_or_default();
    let _ = std::io::stderr().write_all(&err);
    let status = match status {
        Ok(s) => s,
        Err(why) => return deny(&why),
    };
    match status.code() {
        Some(0) if is_answer(event, &out) => {
            let _ = std::io::stdout().write_all(&out);
            ExitCode::SUCCESS
        }
        Some(0) => deny("the hook's decider exited without a well-formed answer"),
        // Exit 2 blocks the call in Claude Code: pass it on as it is.
        Some(2) => ExitCode::from(2),
        Some(c) => deny(&format!("the hook's decider failed (exit code {c})")),
        None => deny(&format!(
            "the hook's decider was killed ({})",
            signal(&status)
        )),
    }
}

/// One JSON object answering `event`, and nothing after it: a permission
/// decision before a tool runs; after it, or for a prompt, either nothing
/// to say (`{}`) or a block with a reason.
pub fn is_answer(event: Event, out: &[u8]) -> bool {
    if out.len() as u64 > ANSWER_LIMIT {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(out) else {
        return false;
    };
    match event {
        Event::PreToolUse => matches!(
            v.pointer("/hookSpecificOutput/permissionDecision")
                .and_then(|d| d.as_str()),
            Some("allow" | "ask" | "deny")
        ),
        Event::PostToolUse | Event::UserPromptSubmit => match v.as_object() {
            Some(m) if m.is_empty() => true,
            Some(m) => {
                m.get("decision").and_then(|d| d.as_str()) == Some("block")
                    && m.get("reason").is_some_and(|r| r.is_string())
            }
            None => false,
        },
    }
}

fn signal(status: &std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(s) = status.signal() {
            return format!("signal {s}");
        }
    }
    format!("{status}")
}

/// The decider's time limit: `TOOLGATE_HOOK_TIMEOUT_MS` when set (tests set
/// it short), else 20 s.
fn timeout() -> Duration {
    std::env::var("TOOLGATE_HOOK_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}

/// Faults a test build injects into the decider, to prove each is answered
/// with a deny (`TOOLGATE_HOOK_FAULT`: `panic`, `abort`, `alloc`, `hang`,
/// `exit3`, `garbage`, `stack`). Compiled into debug builds only.
#[cfg(debug_assertions)]
#[expect(clippy::panic, reason = "the injected panic is the fault under test")]
pub fn inject_fault() {
    match std::env::var("TOOLGATE_HOOK_FAULT").as_deref() {
        Ok("panic") => panic!("injected panic"),
        Ok("abort") => std::process::abort(),
        Ok("alloc") => {
            // More than any machine has: the allocation fails and the
            // process aborts ("memory allocation failed").
            let v: Vec<u8> = Vec::with_capacity(1 << 46);
            std::hint::black_box(&v);
        }
        Ok("hang") => std::thread::sleep(Duration::from_secs(3600)),
        Ok("exit3") => std::process::exit(3),
        Ok("garbage") => {
            print!("{{\"hookSpecificOutput\": ");
            std::process::exit(0);
        }
        Ok("stack") => {
            fn deep(n: u64) -> u64 {
                if n == u64::MAX {
                    return 0;
                }
                let pad = std::hint::black_box([n; 512]);
                deep(n + 1).wrapping_add(pad.iter().sum::<u64>())
            }
            std::hint::black_box(deep(0));
        }
        _ => {}
    }
}

/// Release builds inject nothing.
#[cfg(not(debug_assertions))]
pub fn inject_fault() {}
