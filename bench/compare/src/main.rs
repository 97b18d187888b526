//! toolgate beside its reference evaluator, Cedar and Rego, in one process,
//! on one generated workload.
//!
//! For each rule count it generates `Workload::generate(n, calls, 42)`,
//! builds every engine from it (timing the build and counting the bytes the
//! allocator hands out), decides the calls with each (timing every decision
//! on its own), checks that every engine reached the same decision on every
//! call it decided and cited the same rule, and prints a markdown table.
//!
//! ```sh
//! cargo run --release --manifest-path bench/compare/Cargo.toml
//! cargo run --release --manifest-path bench/compare/Cargo.toml -- --sizes 100,1000
//! cargo run --release --manifest-path bench/compare/Cargo.toml -- jsonl DIR RULES CALLS
//! ```
//!
//! `README.md` beside this file says how the policy is translated and what
//! each column means.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::too_many_lines
)]

mod translate;

use cedar_policy::{Authorizer, Context, Entities, EntityUid, PolicySet, Request};
use serde_json::{json, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::hint::black_box;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolgate::policy::List;
use toolgate::{Decision, Engine, Evaluator, Registry};
use toolgate_reference::Reference;
use toolgate_testing::workload::Workload;
use translate::{CedarSet, Merged};

// ------------------------------------------------------- allocator count --

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// What building cost: time, the peak of live heap bytes above what was
/// live before, and the live bytes the built engine kept.
#[derive(Clone, Copy, Default)]
struct Build {
    time: Duration,
    peak: usize,
    kept: usize,
}

fn build<T>(f: impl FnOnce() -> T) -> (T, Build) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let t = Instant::now();
    let v = f();
    let time = t.elapsed();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let kept = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    (v, Build { time, peak, kept })
}

// ------------------------------------------------------------- outcomes --

/// A decision and the rule it cites: (text, source), `None` for the default.
type Outcome = (Decision, Option<(String, String)>);

/// A decision and the merged id of the rule it cites.
type IdOutcome = (Decision, Option<usize>);

fn cite(m: &Merged, o: IdOutcome) -> Outcome {
    (
        o.0,
        o.1.map(|id| (m.rules[id].text.clone(), m.rules[id].source.clone())),
    )
}

fn list_decision(l: List) -> Decision {
    match l {
        List::Deny => Decision::Deny,
        List::Ask => Decision::Ask,
        List::Allow => Decision::Allow,
    }
}

// --------------------------------------------------------------- timing --

/// Per-decision times, after the clock's own cost is taken off.
struct Timing {
    samples: Vec<f64>,
    /// Distinct calls decided.
    calls: usize,
    /// Whole passes over those calls, divided: no clock inside.
    mean: f64,
}

impl Timing {
    fn pct(&self, p: f64) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        let i = ((s.len() as f64 - 1.0) * p).round() as usize;
        s[i]
    }
}

/// The median cost of reading the clock twice.
fn clock_cost() -> f64 {
    let mut s: Vec<f64> = (0..20_000)
        .map(|_| {
            let t = Instant::now();
            black_box(());
            t.elapsed().as_nanos() as f64
        })
        .collect();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// Decides calls `0..n` with `f`, each timed on its own, for `rounds`
/// rounds or until `budget` is spent (at least `min_calls` calls, all of
/// the first round's outcomes kept), then times whole passes over the calls
/// it covered for the mean.
fn measure<O>(
    n: usize,
    rounds: usize,
    budget: Duration,
    min_calls: usize,
    clock: f64,
    mut f: impl FnMut(usize) -> O,
) -> (Timing, Vec<O>) {
    // Warm-up: a few calls, untimed.
    for i in 0..n.min(16) {
        black_box(f(i));
    }
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut outcomes = Vec::new();
    'rounds: for round in 0..rounds {
        for i in 0..n {
            if round > 0 && i >= outcomes.len() {
                break;
            }
            let t = Instant::now();
            let o = black_box(f(i));
            let ns = t.elapsed().as_nanos() as f64;
            samples.push((ns - clock).max(0.0));
            if round == 0 {
                outcomes.push(o);
            }
            if start.elapsed() > budget && (round > 0 || i + 1 >= min_calls.min(n)) {
                break 'rounds;
            }
        }
    }
    let covered = outcomes.len();
    // The mean: whole passes over the calls covered, no clock inside, for
    // about a tenth of the budget (three passes at least); the median pass,
    // so that a pass another process interrupted does not count.
    let t = Instant::now();
    let mut passes = Vec::new();
    while passes.len() < 3 || t.elapsed() < budget / 10 {
        let p = Instant::now();
        for i in 0..covered {
            black_box(f(i));
        }
        passes.push(p.elapsed().as_nanos() as f64 / covered as f64);
    }
    passes.sort_by(f64::total_cmp);
    let mean = passes[passes.len() / 2];
    (
        Timing {
            samples,
            calls: covered,
            mean,
        },
        outcomes,
    )
}

/// The outcomes of the calls timed (`0..timed.len()`), then those of the
/// calls of `extra` beyond them, decided untimed.
fn with_carves<O>(
    timed: Vec<O>,
    extra: &[usize],
    mut f: impl FnMut(usize) -> O,
) -> Vec<(usize, O)> {
    let n = timed.len();
    let mut out: Vec<(usize, O)> = timed.into_iter().enumerate().collect();
    out.extend(extra.iter().filter(|&&i| i >= n).map(|&i| (i, f(i))));
    out
}

// ---------------------------------------------------------------- Cedar --

struct Cedar {
    sets: Vec<(List, PolicySet, Vec<usize>)>,
    auth: Authorizer,
    entities: Entities,
}

impl Cedar {
    fn build(sets: &[CedarSet]) -> Cedar {
        let sets = sets
            .iter()
            .map(|s| {
                let ps = PolicySet::from_str(&s.text).unwrap_or_else(|e| {
                    panic!("Cedar refused set {} {}: {e:?}", s.list.name(), s.label)
                });
                (s.list, ps, s.ids.clone())
            })
            .collect();
        Cedar {
            sets,
            auth: Authorizer::new(),
            entities: Entities::empty(),
        }
    }

    fn request(tool: &str, args: &Value) -> Request {
        let principal = EntityUid::from_str(r#"Agent::"agent""#).unwrap();
        let action = EntityUid::from_str(r#"Action::"call""#).unwrap();
        let resource =
            EntityUid::from_str(&format!("Tool::{}", serde_json::to_string(tool).unwrap()))
                .unwrap();
        let context = Context::from_json_value(json!({"tool": tool, "args": args}), None).unwrap();
        Request::new(principal, action, resource, context, None).unwrap()
    }

    /// Deny, then ask, then allow: the first list with a set that answers
    /// Allow decides, citing its smallest satisfied permit.
    fn decide(&self, req: &Request, default: Decision) -> IdOutcome {
        for list in List::ALL {
            let mut best: Option<usize> = None;
            for (l, ps, ids) in &self.sets {
                if *l != list {
                    continue;
                }
                let r = self.auth.is_authorized(req, ps, &self.entities);
                if r.decision() == cedar_policy::Decision::Allow {
                    for pid in r.diagnostics().reason() {
                        let id: &str = pid.as_ref();
                        let k: usize = id["policy".len()..].parse().unwrap();
                        best = Some(best.map_or(ids[k], |b| b.min(ids[k])));
                    }
                }
            }
            if best.is_some() {
                return (list_decision(list), best);
            }
        }
        (default, None)
    }
}

// ----------------------------------------------------------------- Rego --

fn rego_build(text: &str) -> regorus::Engine {
    let mut e = regorus::Engine::new();
    e.add_policy("toolgate.rego".into(), text.to_string())
        .unwrap_or_else(|e| panic!("Rego refused the module: {e}"));
    // The first evaluation prepares the module: part of building.
    e.set_input(regorus::Value::from(json!({"tool": "", "args": {}})));
    e.eval_rule("data.toolgate.decision".into())
        .unwrap_or_else(|e| panic!("Rego failed: {e}"));
    e
}

fn rego_decide(e: &mut regorus::Engine, input: &regorus::Value, default: Decision) -> IdOutcome {
    e.set_input(input.clone());
    let v = e.eval_rule("data.toolgate.decision".into()).unwrap();
    let a = v.as_array().unwrap();
    let id = a[1].as_i64().unwrap();
    let d = match a[0].as_string().unwrap().as_ref() {
        "deny" => Decision::Deny,
        "ask" => Decision::Ask,
        "allow" => Decision::Allow,
        _ => return (default, None),
    };
    (d, usize::try_from(id).ok())
}

// ---------------------------------------------------------------- table --

struct Row {
    engine: String,
    timing: Timing,
    build: Build,
    note: String,
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e4 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn fmt_bytes(b: usize) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

fn fmt_time(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1e3)
    } else {
        format!("{ms:.1} ms")
    }
}

fn fmt_ratio(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}×")
    } else {
        format!("{x:.1}×")
    }
}

fn table(n: usize, rows: &[Row]) -> String {
    let mut o = String::new();
    let base = &rows[0];
    let (bm, bp) = (base.timing.pct(0.5), base.timing.pct(0.99));
    let _ = writeln!(o, "\n### {n} rules\n");
    let _ = writeln!(
        o,
        "| engine | calls | median | p99 | mean | median ÷ toolgate | p99 ÷ toolgate | build | build peak | kept |"
    );
    let _ = writeln!(
        o,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for r in rows {
        let m = r.timing.pct(0.5);
        let p = r.timing.pct(0.99);
        let _ = writeln!(
            o,
            "| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.engine,
            r.note,
            r.timing.calls,
            fmt_ns(m),
            fmt_ns(p),
            fmt_ns(r.timing.mean),
            fmt_ratio(m / bm.max(1.0)),
            fmt_ratio(p / bp.max(1.0)),
            fmt_time(r.build.time),
            fmt_bytes(r.build.peak),
            fmt_bytes(r.build.kept),
        );
    }
    o
}

// ------------------------------------------------------------------ run --

struct Opts {
    sizes: Vec<usize>,
    calls: usize,
    budget: Duration,
    rego_max: usize,
    seed: u64,
}

fn run_size(n: usize, o: &Opts, clock: f64) -> (String, Vec<String>, usize) {
    let w = Workload::generate(n, o.calls, o.seed);
    let merged = Merged::from(&w).unwrap_or_else(|e| panic!("not translatable: {e}"));
    let default = Decision::from_any_name(w.document["default"].as_str().unwrap()).unwrap();
    let calls = &w.calls;
    let mut rows = Vec::new();
    let mut problems = Vec::new();

    // toolgate, compiled: the decision and what it rests on.
    let (engine, b) = build(|| Engine::build(&w.policy()).unwrap());
    let (t, _) = measure(calls.len(), 5, o.budget, calls.len(), clock, |i| {
        engine.decide_result(&calls[i]).decision
    });
    rows.push(Row {
        engine: "toolgate compiled (`decide_result`)".into(),
        timing: t,
        build: b,
        note: String::new(),
    });
    // The same tables loaded from the artifact and copied: what they take
    // without the spare capacity of the vectors the compiler grew.
    let artifact = engine.to_bytes();
    let (loaded, loaded_b) = build(|| Engine::from_bytes(&artifact).unwrap().into_owned());
    drop(loaded);
    let artifact_note = format!(
        "The compiled engine's tables: an artifact of {}; loaded from it and copied, the engine keeps {}.",
        fmt_bytes(artifact.len()),
        fmt_bytes(loaded_b.kept)
    );
    drop(artifact);
    // The verdicts every other engine is checked against.
    let truth: Vec<Outcome> = calls
        .iter()
        .map(|c| {
            let v = engine.decide(c);
            (v.decision, v.rule.map(|r| (r.text, r.source)))
        })
        .collect();
    let (t, _) = measure(calls.len(), 3, o.budget, calls.len(), clock, |i| {
        engine.decide(&calls[i])
    });
    rows.push(Row {
        engine: "toolgate compiled (`decide`, verdict text)".into(),
        timing: t,
        build: Build::default(),
        note: " (same engine)".into(),
    });

    // How many calls a carve-out's pattern matches: the calls on which the
    // translations of carve-outs are put to the test. Every engine decides
    // these too, beyond the calls it was timed on.
    let carve_calls: Vec<usize> = (0..calls.len())
        .filter(|&i| {
            let c = &calls[i];
            merged.rules.iter().any(|r| {
                let (Some(spec), Some(m)) = (&r.spec, merged.matchers.get(&r.tool)) else {
                    return false;
                };
                r.carve
                    && r.tool == c.tool
                    && c.args
                        .str_member(&m.field)
                        .is_some_and(|v| match m.kind.as_str() {
                            "glob" => toolgate_reference::glob_spec_matches(spec, v),
                            _ => toolgate_reference::prefix_matches(spec, v),
                        })
            })
        })
        .collect();
    let meets_carve = carve_calls.len();
    let mut disagreements = 0usize;
    let mut check = |name: &str, outcomes: &[(usize, Outcome)], problems: &mut Vec<String>| {
        let mut bad = 0;
        for (i, got) in outcomes {
            let i = *i;
            if *got != truth[i] {
                bad += 1;
                if bad <= 5 {
                    problems.push(format!(
                        "{n} rules, {name}: call {i} {} {}: toolgate {:?}, {name} {:?}",
                        calls[i].tool,
                        calls[i].args.raw(),
                        truth[i],
                        got
                    ));
                }
            }
        }
        disagreements += bad;
        let line = format!(
            "{name}: {}/{} calls agree on decision and cited rule ({} of them matched by a carve-out)",
            outcomes.len() - bad,
            outcomes.len(),
            outcomes.iter().filter(|(i, _)| carve_calls.contains(i)).count()
        );
        problems.push(line);
    };

    // The reference.
    let (reference, b) =
        build(|| Reference::build(&w.policy(), &toolgate::builtins::registry()).unwrap());
    let (t, outs) = measure(calls.len(), 3, o.budget, 64, clock, |i| {
        let v = reference.would(&calls[i]);
        (v.decision, v.rule.map(|r| (r.text, r.source)))
    });
    let outs = with_carves(outs, &carve_calls, |i| {
        let v = reference.would(&calls[i]);
        (v.decision, v.rule.map(|r| (r.text, r.source)))
    });
    check("reference", &outs, &mut problems);
    rows.push(Row {
        engine: "toolgate reference (`would`)".into(),
        timing: t,
        build: b,
        note: String::new(),
    });
    drop(reference);

    // Cedar.
    let sets = translate::cedar(&merged);
    let policies: usize = sets.iter().map(|s| s.ids.len()).sum();
    let (cedar, b) = build(|| Cedar::build(&sets));
    drop(sets);
    let requests: Vec<Request> = calls
        .iter()
        .map(|c| Cedar::request(&c.tool, c.args.value().unwrap()))
        .collect();
    let (t, outs) = measure(calls.len(), 3, o.budget, 32, clock, |i| {
        cedar.decide(&requests[i], default)
    });
    let outs = with_carves(outs, &carve_calls, |i| cedar.decide(&requests[i], default));
    let outs: Vec<(usize, Outcome)> = outs
        .into_iter()
        .map(|(i, x)| (i, cite(&merged, x)))
        .collect();
    check("Cedar", &outs, &mut problems);
    rows.push(Row {
        engine: format!(
            "Cedar {} ({} sets, {policies} policies)",
            "4.14",
            cedar.sets.len()
        ),
        timing: t,
        build: b,
        note: String::new(),
    });
    drop(cedar);
    drop(requests);

    // Rego.
    if n <= o.rego_max {
        let text = translate::rego(&merged);
        let (mut rego, b) = build(|| rego_build(&text));
        let inputs: Vec<regorus::Value> = calls
            .iter()
            .map(|c| regorus::Value::from(json!({"tool": c.tool, "args": c.args.value().unwrap()})))
            .collect();
        let (t, outs) = measure(calls.len(), 3, o.budget, 32, clock, |i| {
            rego_decide(&mut rego, &inputs[i], default)
        });
        let outs = with_carves(outs, &carve_calls, |i| {
            rego_decide(&mut rego, &inputs[i], default)
        });
        let outs: Vec<(usize, Outcome)> = outs
            .into_iter()
            .map(|(i, x)| (i, cite(&merged, x)))
            .collect();
        check("Rego", &outs, &mut problems);
        rows.push(Row {
            engine: "Rego (regorus 0.14)".into(),
            timing: t,
            build: b,
            note: String::new(),
        });
    }
    let mut out = table(n, &rows);
    let carves = merged.rules.iter().filter(|r| r.carve).count();
    let _ = writeln!(
        out,
        "\n{} rules after the merge ({} carve-outs; the untrusted source's allow rules withheld), {} calls, {} of them matched by a carve-out.",
        merged.rules.len(),
        carves,
        calls.len(),
        meets_carve
    );
    let _ = writeln!(out, "{artifact_note}");
    (out, problems, disagreements)
}

fn write_jsonl(dir: &str, rules: usize, calls: usize) {
    let w = Workload::generate(rules, calls, 42);
    std::fs::create_dir_all(dir).unwrap();
    let p = format!("{dir}/policy-{rules}.json");
    std::fs::write(&p, serde_json::to_string(&w.document).unwrap()).unwrap();
    let c = format!("{dir}/calls-{rules}-{calls}.jsonl");
    std::fs::write(&c, w.calls_jsonl()).unwrap();
    eprintln!("wrote {p} and {c}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("jsonl") {
        let dir = args.get(1).map_or("target/jsonl", String::as_str);
        let rules = args.get(2).map_or(1000, |s| s.parse().unwrap());
        let calls = args.get(3).map_or(1_000_000, |s| s.parse().unwrap());
        write_jsonl(dir, rules, calls);
        return;
    }
    let mut o = Opts {
        sizes: vec![100, 1_000, 10_000, 100_000],
        calls: 2_048,
        budget: Duration::from_secs(4),
        rego_max: 1_000,
        seed: 42,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().map(String::as_str).unwrap_or("");
        match a.as_str() {
            "--sizes" => o.sizes = v.split(',').map(|s| s.parse().unwrap()).collect(),
            "--calls" => o.calls = v.parse().unwrap(),
            "--budget-ms" => o.budget = Duration::from_millis(v.parse().unwrap()),
            "--rego-max" => o.rego_max = v.parse().unwrap(),
            "--seed" => o.seed = v.parse().unwrap(),
            _ => {
                eprintln!("usage: compare [--sizes 100,1000] [--calls N] [--budget-ms MS] [--rego-max N] [--seed S] | jsonl DIR RULES CALLS");
                std::process::exit(64);
            }
        }
    }
    let clock = clock_cost();
    println!(
        "Per-decision times: each decision timed on its own, {clock:.0} ns of clock taken off each; \
         `mean` is the median of whole passes over the same calls with no clock inside. Memory: bytes live on the \
         heap, counted by a global allocator (`build peak`: the peak above what was live before \
         building; `kept`: what the built engine holds). Ratios against toolgate compiled \
         (`decide_result`), measured in the same run."
    );
    let mut total = 0;
    for &n in &o.sizes {
        let (t, p, bad) = run_size(n, &o, clock);
        print!("{t}");
        for line in &p {
            println!("- {line}");
        }
        total += bad;
    }
    if total > 0 {
        eprintln!("{total} disagreements");
        std::process::exit(1);
    }
}
