//! Runs agentpolicy's conformance corpus (`matchers.json` and
//! `decisions.json`) on the reference evaluator, following the harness rules
//! of the corpus README. The corpus lives beside the repository, in
//! `../shared/conformance/agentpolicy/testdata/policy/`, or where
//! `TOOLGATE_AGENTPOLICY_CORPUS` points; without it the tests say so and pass.

use super::Reference;
use crate::call::{Args, Call, Subject};
use crate::decision::Decision;
use crate::engine::Evaluator;
use crate::policy::{Policy, RuleLists, RuleSet, Source};
use crate::registry::{Registry, Splitter};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn corpus_file(name: &str) -> Option<Value> {
    let dir = std::env::var("TOOLGATE_AGENTPOLICY_CORPUS").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/conformance/agentpolicy/testdata/policy"
        )
        .to_string()
    });
    let path = format!("{dir}/{name}");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).unwrap()),
        Err(e) => {
            eprintln!("skipping the corpus: {path}: {e}");
            None
        }
    }
}

/// The simulated splitter: the listed subjects (or error) of each call, by
/// tool and arguments; the call itself for a call with none listed.
#[derive(Debug, Default)]
struct Simulated {
    table: Vec<(String, Value, Result<Vec<Subject>, String>)>,
}

impl Splitter for Simulated {
    fn split(&self, tool: &str, args: &Args) -> Result<Vec<Subject>, String> {
        for (t, a, answer) in &self.table {
            if t == tool && Some(a) == args.value() {
                return answer.clone();
            }
        }
        Ok(vec![Subject::new(args.clone(), "")])
    }
}

fn str_of<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The corpus matcher table in the policy document's form: `split: true`
/// names the simulated splitter.
fn matcher_table(table: &Value) -> Value {
    let mut out = Map::new();
    for (tool, entry) in table.as_object().unwrap() {
        let mut e = Map::new();
        for (k, v) in entry.as_object().unwrap() {
            match k.as_str() {
                "match" | "field" => {
                    e.insert(k.clone(), v.clone());
                }
                "split" => {
                    if v.as_bool() == Some(true) {
                        e.insert("split".into(), "simulated".into());
                    }
                }
                other => panic!("unknown matcher member {other}"),
            }
        }
        out.insert(tool.clone(), Value::Object(e));
    }
    Value::Object(out)
}

fn call_of(c: &Value, id: usize) -> Call {
    let mut call = Call::new(str_of(c, "tool"), "{}");
    call.args = Args::from_value(c.get("args").cloned().unwrap_or(Value::Null));
    call.run_id = "run_1".into();
    call.call_id = format!("call_{id}");
    call.confined = c
        .get("confined")
        .and_then(Value::as_str)
        .map(str::to_string);
    call
}

fn subjects_of(c: &Value) -> Option<Result<Vec<Subject>, String>> {
    if let Some(e) = c.get("subjects_error") {
        return Some(Err(e.as_str().unwrap().to_string()));
    }
    let list = c.get("subjects")?.as_array()?;
    Some(Ok(list
        .iter()
        .map(|s| Subject {
            args: Args::from_value(s.get("args").cloned().unwrap_or(Value::Null)),
            tool: s.get("tool").and_then(Value::as_str).map(str::to_string),
            text: str_of(s, "text").to_string(),
            constrain: s.get("constrain").and_then(Value::as_bool).unwrap_or(false),
        })
        .collect()))
}

fn check_verdict(case: &str, c: &Value, v: &crate::decision::Verdict, failures: &mut Vec<String>) {
    let want = c.get("want").unwrap();
    let got = json!({
        "action": v.decision.agentpolicy_action(),
        "held": v.held,
        "rule": v.rule_text(),
        "source": v.source_name(),
        "reason": v.reason,
        "subject": v.subject,
        "confined": v.confined,
    });
    let expected = json!({
        "action": str_of(want, "action"),
        "held": want.get("held").and_then(Value::as_bool).unwrap_or(false),
        "rule": str_of(want, "rule"),
        "source": str_of(want, "source"),
        "reason": str_of(want, "reason"),
        "subject": str_of(want, "subject"),
        "confined": str_of(want, "confined"),
    });
    if got != expected {
        failures.push(format!(
            "{case}: {}\n  want {expected}\n  got  {got}",
            c.get("args").unwrap()
        ));
    }
    if v.by != "policy" {
        failures.push(format!("{case}: decided by {}", v.by));
    }
}

fn run_case(top: &Value, case: &Value, failures: &mut Vec<String>) {
    let name = str_of(case, "name");
    let p = case.get("policy").unwrap();
    let mut doc = p.as_object().unwrap().clone();
    let table = case
        .get("matchers")
        .unwrap_or_else(|| top.get("matchers").unwrap());
    doc.insert("matchers".into(), matcher_table(table));
    if let Some(a) = case.get("aliases") {
        doc.insert("aliases".into(), a.clone());
    }
    let policy = match crate::policy::doc::from_value(&Value::Object(doc), None) {
        Ok(p) => p,
        Err(d) => {
            failures.push(format!(
                "{name}: the policy does not read: {}",
                d.first().message
            ));
            return;
        }
    };

    let calls: Vec<&Value> = ["calls", "batch"]
        .iter()
        .filter_map(|k| case.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut sim = Simulated::default();
    for c in &calls {
        if let Some(answer) = subjects_of(c) {
            sim.table.push((
                str_of(c, "tool").to_string(),
                c.get("args").cloned().unwrap(),
                answer,
            ));
        }
    }
    let mut registry = Registry::builtin();
    registry.add_splitter("simulated", Arc::new(sim));

    let built = Reference::build(&policy, &registry);
    if let Some(kind) = case.get("build_error").and_then(Value::as_str) {
        match built {
            Ok(_) => failures.push(format!("{name}: built, want {kind}")),
            Err(d) if d.first().kind != kind => {
                failures.push(format!(
                    "{name}: build error {}, want {kind}",
                    d.first().kind
                ));
            }
            Err(_) => {}
        }
        return;
    }
    let mut r = match built {
        Ok(r) => r,
        Err(d) => {
            failures.push(format!("{name}: does not build: {}", d.first().message));
            return;
        }
    };

    for g in case
        .get("grants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = g.get("source").unwrap();
        let set = RuleSet {
            source: Source {
                name: str_of(s, "name").to_string(),
                rank: s.get("rank").and_then(Value::as_i64).unwrap(),
                trusted: s.get("trusted").and_then(Value::as_bool).unwrap(),
                ..Source::default()
            },
            lists: RuleLists::parse(str_of(g, "allow"), str_of(g, "deny"), str_of(g, "ask"))
                .unwrap(),
            ..RuleSet::default()
        };
        let grant = r.grant_set(&set, None);
        let want_granted: Vec<&str> = g
            .get("granted")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|x| x.as_str().unwrap()).collect())
            .unwrap_or_default();
        if grant.granted != want_granted {
            failures.push(format!(
                "{name}: granted {:?}, want {want_granted:?}",
                grant.granted
            ));
        }
        let want_refused: Vec<(String, String)> = g
            .get("refused")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| {
                        (
                            str_of(x, "rule").to_string(),
                            str_of(x, "reason").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let got_refused: Vec<(String, String)> = grant
            .refused
            .iter()
            .map(|x| {
                (
                    x.rule.clone(),
                    x.reason.replacen("toolgate: ", "agentpolicy: ", 1),
                )
            })
            .collect();
        if got_refused != want_refused {
            failures.push(format!(
                "{name}: refused {got_refused:?}, want {want_refused:?}"
            ));
        }
    }

    for c in case
        .get("calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let call = call_of(c, 1);
        let v = r.decide_batch(std::slice::from_ref(&call));
        check_verdict(name, c, &v[0], failures);
        if r.would(&call) != v[0] {
            failures.push(format!("{name}: would differs from the batch of one"));
        }
    }
    if let Some(batch) = case.get("batch").and_then(Value::as_array) {
        let calls: Vec<Call> = batch
            .iter()
            .enumerate()
            .map(|(i, c)| call_of(c, i + 1))
            .collect();
        let verdicts = r.decide_batch(&calls);
        for (i, (c, v)) in batch.iter().zip(&verdicts).enumerate() {
            check_verdict(name, c, v, failures);
            if v.call_id != format!("call_{}", i + 1) || v.run_id != "run_1" {
                failures.push(format!("{name}: ids not echoed"));
            }
        }
    }

    if let Some(offer) = case.get("offer") {
        let list = |k: &str| -> Vec<String> {
            offer
                .get(k)
                .unwrap()
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect()
        };
        let got = r.filter(&list("tools"));
        if got != list("want") {
            failures.push(format!("{name}: offer {got:?}, want {:?}", list("want")));
        }
    }
}

#[test]
fn decisions_corpus() {
    let Some(top) = corpus_file("decisions.json") else {
        return;
    };
    let cases = top.get("cases").unwrap().as_array().unwrap();
    assert_eq!(cases.len(), 41);
    let mut failures = Vec::new();
    for case in cases {
        run_case(&top, case, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn matchers_corpus() {
    let Some(top) = corpus_file("matchers.json") else {
        return;
    };
    let cases = top.get("cases").unwrap().as_array().unwrap();
    assert_eq!(cases.len(), 44);
    let mut failures = Vec::new();
    for case in cases {
        let kind = str_of(case, "matcher");
        let policy = Policy::from_json(&format!(
            r#"{{"default": "ask", "matchers": {{"bash": {{"match": "{kind}", "field": "command"}}}}}}"#
        ))
        .unwrap();
        let r = Reference::build(&policy, &Registry::builtin()).unwrap();
        let args = match (case.get("args"), case.get("raw")) {
            (Some(a), None) => Args::from_value(a.clone()),
            (None, Some(raw)) => Args::from_bytes(raw.as_str().unwrap().as_bytes()),
            _ => panic!("a case needs exactly one of args and raw: {case}"),
        };
        let spec = str_of(case, "spec");
        let want = case.get("match").and_then(Value::as_bool).unwrap();
        if r.spec_matches("bash", spec, &args) != want {
            failures.push(format!("{case}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn decisions_are_stable() {
    // Same policy, same call: same verdict, and the decision names `policy`.
    let policy = Policy::from_json(r#"{"default": "ask", "allow": "read"}"#).unwrap();
    let r = Reference::build(&policy, &Registry::builtin()).unwrap();
    let call = Call::new("read", r#"{"path": "/x"}"#);
    let a = r.would(&call);
    assert_eq!(a, r.would(&call));
    assert_eq!(a.decision, Decision::Allow);
    assert_eq!(a.by, "policy");
}
