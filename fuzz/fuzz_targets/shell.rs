//! The shell splitter against a real bash grammar (brush-parser): every
//! simple command brush finds is covered by a subject, or the splitter fails
//! closed (see `tests/support/brush.rs`, shared with the ordinary tests).
//!
//! Input: `g:` then eight bytes seed the command generator (commands built
//! from bash's constructs, where the interesting bypasses live); anything
//! else is the command itself, so the fuzzer's own mutations reach brush and
//! the splitter too. Either way the splitter must not panic, hang or grow
//! without bound, under the default limits and under tight ones.
//!
//! `z:` then eight bytes seed the generator of lines mixing what bash and
//! zsh read differently (`real_shell::zsh_line`); a line the splitter
//! accepts runs under bash and zsh themselves in a sandbox of stand-in
//! programs, and whatever either shell ran or wrote must be a subject. Only
//! generated lines reach the real shells, whose programs are the sandbox's
//! stand-ins: the fuzzer's own bytes could name `/bin/rm` itself. Each run
//! has a timeout of 2 s, and a process runs at most 20,000 lines.
#![no_main]

use toolgate_testing::brush;
use toolgate_testing::real_shell::{self, uncovered, zsh_line, Sandbox, Shell};

use brush::{check, list, Outcome};
use libfuzzer_sys::fuzz_target;
use toolgate::shell::{split_command, Kind, ShellConfig};
use toolgate_testing::workload::Rng;

fn command(data: &[u8]) -> Option<String> {
    if let Some(seed) = data.strip_prefix(b"g:") {
        let mut word = [0u8; 8];
        for (w, b) in word.iter_mut().zip(seed) {
            *w = *b;
        }
        let mut rng = Rng::new(u64::from_le_bytes(word));
        let depth = rng.below(4) as u32;
        return Some(list(&mut rng, depth));
    }
    std::str::from_utf8(data).ok().map(str::to_string)
}

/// The real-shell oracle for a generated line.
fn against_real_shells(seed: &[u8]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    static SHELLS: OnceLock<(Sandbox, Vec<Shell>)> = OnceLock::new();
    if RUNS.fetch_add(1, Ordering::Relaxed) >= 20_000 {
        return;
    }
    let mut word = [0u8; 8];
    for (w, b) in word.iter_mut().zip(seed) {
        *w = *b;
    }
    let cmd = zsh_line(&mut Rng::new(u64::from_le_bytes(word)));
    let Ok(pieces) = split_command(&cmd, &ShellConfig::default()) else {
        return;
    };
    let (sbx, shells) = SHELLS.get_or_init(|| {
        let mut sbx = Sandbox::new();
        sbx.timeout = std::time::Duration::from_secs(2);
        let shells = [real_shell::bash(), real_shell::zsh()]
            .into_iter()
            .flatten()
            .collect();
        (sbx, shells)
    });
    for sh in shells {
        let missing = uncovered(sh, &cmd, &pieces, &sbx.run(sh, &cmd));
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some(seed) = data.strip_prefix(b"z:") {
        against_real_shells(seed);
        return;
    }
    let Some(cmd) = command(data) else {
        return;
    };
    let tight = ShellConfig {
        max_len: 64,
        max_subjects: 4,
        max_depth: 3,
        ..ShellConfig::default()
    };
    if let Ok(pieces) = split_command(&cmd, &tight) {
        // An empty split would leave nothing to decide: a command always
        // yields a subject, or an error.
        assert!(!pieces.is_empty(), "{cmd:?}: no pieces");
        let units = pieces.iter().filter(|p| p.kind != Kind::Constraint).count();
        assert!(units <= 4, "{cmd:?}: {units} subjects past a limit of 4");
    }
    // brush's parser takes time exponential in nested parentheses (20 of
    // them take it 60 ms, 74 over 10 s, and 16 inside `bash -c`, parsed
    // again by the comparison, 4 s) and slows on nested `${x[`; past 10
    // of either only the splitter runs. The splitter refuses any command
    // holding a NUL byte, so brush has nothing to be compared with there.
    // Subscripts inside parameter expansions slow brush too: eight
    // `${x[:""}` in 402 bytes, and two `${x[` among eight parentheses in
    // 312, each took it over 10 s (the splitter: under 10 ms for the whole
    // `toolgate decide` process), so with a subscript expansion and more
    // than four brackets or parentheses only the splitter runs.
    let count = |c: u8| cmd.bytes().filter(|&b| b == c).count();
    // `${!x[` and `${#x[` (indirection, length) are subscripts too: a
    // 294-byte line of them took brush past 14 s (the splitter: 4 ms).
    let subscript = cmd.match_indices("${").any(|(at, m)| {
        let name = cmd[at + m.len()..]
            .trim_start_matches(['!', '#'])
            .trim_start_matches(|c: char| c == '_' || c.is_ascii_alphanumeric());
        name.starts_with('[')
    });
    let subscripts = subscript && count(b'[') + count(b'(') > 4;
    if count(b'(') > 10 || count(b'{') > 10 || subscripts || cmd.contains('\0') {
        let _ = split_command(&cmd, &ShellConfig::default());
        return;
    }
    if let Outcome::Compared { missing, .. } = check(&cmd, &ShellConfig::default()) {
        assert!(missing.is_empty(), "{cmd:?}: no subject for {missing:?}");
    }
});
