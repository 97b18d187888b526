//! Random interleavings of decide, grant, revoke and release from several
//! threads on one supervisor, each checked against a sequential model of
//! its own runs and scope, and a race of releases on one run that must
//! answer every call once. Bounded: a fixed number of threads and steps.
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::sync::Arc;

use toolgate::state::{Answer, MemoryStore, Namespace, Supervisor};
use toolgate::{Call, Decision, Policy, RuleLists, RuleSet, Source};

const POLICY: &str = r#"{
    "default": "deny",
    "matchers": {"bash": {"match": "glob", "field": "command"}},
    "sources": [{"name": "team", "rank": 1, "trusted": true,
                 "allow": "read bash(git status:*)", "ask": "bash(git push:*)"}]
}"#;

/// A small deterministic generator: the interleaving is the threads', the
/// operations are reproducible from the seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn call(run: &str, id: &str, tool: &str, command: &str, scope: &str) -> Call {
    let args = if tool == "bash" {
        format!(r#"{{"command": {command:?}}}"#)
    } else {
        "{}".to_string()
    };
    let mut c = Call::new(tool, &args).in_scope(scope);
    c.run_id = run.into();
    c.call_id = id.into();
    c
}

fn skill(name: &str) -> Result<RuleSet, Box<dyn std::error::Error>> {
    Ok(RuleSet {
        source: Source {
            name: name.into(),
            rank: 1,
            trusted: true,
            ..Source::default()
        },
        lists: RuleLists::parse("bash(git push:*)", "", "")?,
        ..RuleSet::default()
    })
}

/// One thread's walk: its own scope and runs, a model of what it granted
/// and what each run has pending.
fn walk(sup: &Supervisor, t: u64, steps: usize) -> Result<(), String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
    let scope = format!("s{t}");
    let mut granted = false;
    let mut pending: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    let mut next_id = 0u64;
    for step in 0..steps {
        match rng.below(4) {
            0 => {
                let run = format!("t{t}-r{}", rng.below(3));
                let n = 1 + rng.below(3);
                let mut calls = Vec::new();
                for _ in 0..n {
                    next_id += 1;
                    let id = format!("c{next_id}");
                    calls.push(match rng.below(3) {
                        0 => call(&run, &id, "bash", "git push", &scope),
                        1 => call(&run, &id, "bash", "git status", &scope),
                        _ => call(&run, &id, "read", "", &scope),
                    });
                }
                let asks = calls
                    .iter()
                    .any(|c| c.args.str_member("command") == Some("git push") && !granted);
                let vs = sup.decide_batch(step as u64, &calls);
                for (c, v) in calls.iter().zip(&vs) {
                    let is_push = c.args.str_member("command") == Some("git push");
                    let want = if asks { Decision::Ask } else { Decision::Allow };
                    if v.decision != want {
                        return Err(format!(
                            "thread {t} step {step}: {} got {:?}, the model says {want:?}",
                            c.call_id, v.decision
                        ));
                    }
                    if asks {
                        let held = !is_push || granted;
                        if v.held != held {
                            return Err(format!(
                                "thread {t} step {step}: {} held {}",
                                c.call_id, v.held
                            ));
                        }
                        pending
                            .entry(run.clone())
                            .or_default()
                            .push((c.call_id.clone(), held));
                    }
                }
            }
            1 => {
                sup.grant_set(
                    &skill(&format!("k{t}")).map_err(|e| e.to_string())?,
                    Some(&scope),
                )
                .map_err(|e| e.to_string())?;
                granted = true;
            }
            2 => {
                let n = sup
                    .revoke(&format!("k{t}"), Some(&scope))
                    .map_err(|e| e.to_string())?;
                if (n > 0) != granted {
                    return Err(format!(
                        "thread {t} step {step}: revoked {n}, granted {granted}"
                    ));
                }
                granted = false;
            }
            _ => {
                let run = format!("t{t}-r{}", rng.below(3));
                let want = pending.remove(&run).unwrap_or_default();
                let answers: Vec<Answer> = want
                    .iter()
                    .filter(|(_, held)| !held)
                    .map(|(id, _)| Answer::approve(id.clone()))
                    .collect();
                let got = sup.release(&run, &answers).map_err(|e| e.to_string())?;
                let got: Vec<&str> = got.iter().map(|a| a.call_id.as_str()).collect();
                let want: Vec<&str> = want.iter().map(|(id, _)| id.as_str()).collect();
                if got != want {
                    return Err(format!(
                        "thread {t} step {step}: released {got:?}, the model says {want:?}"
                    ));
                }
            }
        }
    }
    let mine: Vec<String> = sup
        .runs()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|r| r.starts_with(&format!("t{t}-")))
        .collect();
    let model: Vec<String> = pending
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, _)| k)
        .collect();
    if mine != model {
        return Err(format!(
            "thread {t}: runs {mine:?}, the model says {model:?}"
        ));
    }
    Ok(())
}

fn supervisor() -> Result<Supervisor, Box<dyn std::error::Error>> {
    Ok(Supervisor::from_policy(
        Policy::from_json(POLICY)?,
        toolgate::builtins::registry(),
        Arc::new(MemoryStore::new()),
        Namespace::new("t", "concurrency"),
    )?)
}

#[test]
fn interleaved_threads_agree_with_a_sequential_model_of_their_own(
) -> Result<(), Box<dyn std::error::Error>> {
    let sup = Arc::new(supervisor()?);
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let sup = Arc::clone(&sup);
            std::thread::spawn(move || walk(&sup, t, 150))
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a thread panicked")??;
    }
    Ok(())
}

#[test]
fn racing_releases_answer_every_call_exactly_once() -> Result<(), Box<dyn std::error::Error>> {
    let sup = Arc::new(supervisor()?);
    for round in 0..20 {
        let run = format!("race{round}");
        let calls: Vec<Call> = (0..6)
            .map(|i| {
                call(
                    &run,
                    &format!("c{i}"),
                    if i == 0 { "bash" } else { "read" },
                    "git push",
                    "",
                )
            })
            .collect();
        sup.decide_batch(1, &calls);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let sup = Arc::clone(&sup);
                let run = run.clone();
                std::thread::spawn(move || sup.release(&run, &[Answer::approve("c0")]))
            })
            .collect();
        let mut answered = Vec::new();
        for h in handles {
            let answers = h.join().map_err(|_| "a thread panicked")??;
            // The caller's own answer comes back to every caller; the held
            // calls are answered by whichever release took them.
            answered.extend(
                answers
                    .into_iter()
                    .filter(|a| a.call_id != "c0")
                    .map(|a| a.call_id),
            );
        }
        answered.sort();
        assert_eq!(answered, ["c1", "c2", "c3", "c4", "c5"], "round {round}");
        assert!(sup.runs()?.is_empty());
    }
    Ok(())
}
