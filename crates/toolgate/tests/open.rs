//! The front door: `open` detects each dialect from its bytes, and the
//! artifact of each opens to the same kind of engine deciding the same way.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use toolgate::authensor::Envelope;
use toolgate::open::{open, EngineBuilder, Format, OpenError, Opened};
use toolgate::rubric::Request;
use toolgate::Call;

fn example(name: &str) -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/").to_string() + name)
        .unwrap()
}

const BUNDLE: &str = r#"{"policies": [{"policyId": "p", "policyVersion": 1, "document": {"spec": {
  "defaultEffect": "allow", "rules": [{"id": "r", "effect": "deny", "conditions": [
  {"field": "tool_name", "operator": "eq", "value": "Bash"}]}]}}}]}"#;

#[test]
fn each_dialect_and_its_artifact_open_to_their_engine() {
    // Rule lists, from JSON, from TOML, and from an artifact.
    let policy = example("policy.json");
    assert_eq!(Format::detect(&policy), Format::PolicyJson);
    let Opened::Rules(e) = open(&policy, Format::Detect).unwrap() else {
        panic!("policy.json did not open as rule lists")
    };
    let call = Call::new("bash", r#"{"command": "curl x"}"#);
    let bytes = e.to_bytes();
    let Opened::Rules(loaded) = open(&bytes, Format::Detect).unwrap() else {
        panic!("its artifact did not open as rule lists")
    };
    assert_eq!(loaded.decide(&call), e.decide(&call));
    let toml = b"default = \"deny\"\nallow = \"read\"\n";
    assert_eq!(Format::detect(toml), Format::PolicyToml);
    assert!(matches!(
        open(toml, Format::Detect).unwrap(),
        Opened::Rules(_)
    ));

    // Claude Code settings.
    let settings = br#"{"permissions": {"deny": ["Bash(curl:*)"]}}"#;
    let Opened::ClaudeCode(c) = open(settings, Format::Detect).unwrap() else {
        panic!("settings did not open as Claude Code")
    };
    let v = c.would(&Call::new("Bash", r#"{"command": "curl x"}"#));
    assert_eq!(v.decision, toolgate::Decision::Deny, "{v:?}");

    // A Rubric bundle and its artifact.
    let Opened::Rubric(r) = open(BUNDLE.as_bytes(), Format::Detect).unwrap() else {
        panic!("the bundle did not open as Rubric")
    };
    let req = Request::from_json(r#"{"tool_name": "Bash"}"#).unwrap();
    let rb = r.to_bytes().unwrap();
    let Opened::Rubric(rl) = open(&rb, Format::Detect).unwrap() else {
        panic!("the bundle's artifact did not open as Rubric")
    };
    assert_eq!(rl.decide_untimed(&req), r.decide_untimed(&req));
    assert_eq!(r.decide(&req).decision.as_str(), "deny");

    // Authensor policies and their artifact.
    let policies = example("authensor.json");
    let Opened::Authensor(a) = open(&policies, Format::Detect).unwrap() else {
        panic!("authensor.json did not open as Authensor")
    };
    let env = Envelope::from_json(
        r#"{"action": "file.read", "resource": "/tmp/x", "principalId": "agent-1"}"#,
    )
    .unwrap();
    let ab = a.to_bytes();
    let Opened::Authensor(al) = open(&ab, Format::Detect).unwrap() else {
        panic!("the policies' artifact did not open as Authensor")
    };
    assert_eq!(al.decide(&env).to_json(), a.decide(&env).to_json());
}

#[test]
fn refusals_are_typed() {
    assert!(matches!(
        open(b"\xff\xfe", Format::PolicyJson),
        Err(OpenError::NotText)
    ));
    assert!(matches!(
        open(br#"{"default": "sometimes"}"#, Format::Detect),
        Err(OpenError::Document(_))
    ));
    let mut bytes =
        toolgate::Engine::build(&toolgate::Policy::from_json(r#"{"default": "deny"}"#).unwrap())
            .unwrap()
            .to_bytes();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert!(matches!(
        open(&bytes, Format::Detect),
        Err(OpenError::Artifact(_))
    ));
    // The builder's load options apply to artifacts.
    let tight =
        EngineBuilder::new().load_options(toolgate::artifact::LoadOptions::default().max_len(8));
    bytes[last] ^= 1;
    assert!(matches!(
        tight.open(&bytes, Format::Detect),
        Err(OpenError::Artifact(_))
    ));
}
