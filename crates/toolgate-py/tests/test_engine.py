"""The Engine API: every dialect, verdicts, batches, artifacts, revisions,
errors as exceptions and denials, never a crash."""

import json
import subprocess

import pytest

import toolgate
from conftest import run_decide

POLICY = {
    "default": "ask",
    "matchers": {"bash": {"match": "prefix", "field": "command"}},
    "allow": "read bash(git status:*)",
    "deny": "bash(rm:*)",
    "ask": "bash(git push:*)",
}

BUNDLE = {
    "bundleVersion": 1,
    "contentHash": "0" * 64,
    "builtAt": "2026-01-01T00:00:00Z",
    "policies": [
        {
            "policyId": "00000000-0000-0000-0000-000000000001",
            "policyVersion": 3,
            "document": {
                "apiVersion": "agent-governance.io/v1",
                "kind": "Policy",
                "metadata": {"name": "p"},
                "spec": {
                    "defaultEffect": "allow",
                    "rules": [
                        {
                            "id": "no-delete",
                            "description": "Deny delete_file calls",
                            "conditions": [
                                {"field": "tool_name", "operator": "eq", "value": "delete_file"}
                            ],
                            "effect": "deny",
                        }
                    ],
                },
            },
        }
    ],
    "frozenAgentIds": ["frozen-bot"],
}

AUTHENSOR = [
    {
        "id": "block-destructive",
        "version": 1,
        "priority": 100,
        "enabled": True,
        "rules": [
            {
                "effect": "deny",
                "conditions": {"action": {"pattern": "shell.*"}, "resource": {"pattern": "**/rm*"}},
                "reason": "Destructive shell commands blocked",
            }
        ],
    }
]

SETTINGS = {"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Bash(curl:*)"]}}


def test_rules_verdict_attributes_and_dict():
    e = toolgate.Engine.from_policy(POLICY)
    assert e.kind == "rules"
    v = e.decide({"tool": "bash", "args": {"command": "git push --force"}})
    assert (v.decision, v.rule, v.kind, v.allowed) == ("ask", "bash(git push:*)", "rules", False)
    assert v.reason == "approval required by bash(git push:*)"
    assert v.to_dict() == {
        "decision": "ask",
        "rule": "bash(git push:*)",
        "reason": "approval required by bash(git push:*)",
        "by": "policy",
    }
    assert v["rule"] == "bash(git push:*)"
    with pytest.raises(KeyError):
        v["nothing"]
    assert e.decide({"tool": "read", "args": {"path": "x"}}).allowed


def test_every_dialect_opens_to_its_kind():
    assert toolgate.Engine.from_policy(BUNDLE).kind == "rubric"
    assert toolgate.Engine.from_policy(AUTHENSOR).kind == "authensor"
    assert toolgate.Engine.from_policy(SETTINGS).kind == "claude-code"
    toml = 'default = "deny"\nallow = "read"\n'
    assert toolgate.Engine.from_policy(toml).kind == "rules"
    assert toolgate.Engine.from_policy(toml, format="toml").decide(
        {"tool": "read", "args": {}}
    ).decision == "allow"


def test_claude_code_settings_decide_claude_calls():
    e = toolgate.Engine.from_policy(json.dumps(SETTINGS))
    v = e.decide({"tool_name": "Bash", "tool_input": {"command": "curl http://x"}})
    assert v.decision == "deny"
    assert e.decide({"tool_name": "Bash", "tool_input": {"command": "npm test -- -u"}}).decision == "allow"


def test_rubric_and_authensor_verdicts():
    r = toolgate.Engine.from_policy(BUNDLE).decide({"tool_name": "delete_file"})
    assert (r.decision, r.rule, r.reason, r.kind) == ("deny", "no-delete", "Deny delete_file calls", "rubric")
    assert r.to_dict()["matchedPolicyVersion"] == 3
    a = toolgate.Engine.from_policy(AUTHENSOR).decide(
        {"id": "1", "action": "shell.execute", "resource": "bash://localhost/rm", "principalId": "a", "timestamp": "t"}
    )
    assert a.decision == "deny"
    assert a.to_dict()["decision"]["reason"] == "Destructive shell commands blocked"


def test_a_document_and_its_artifact_share_a_revision(tmp_path):
    for doc in (POLICY, BUNDLE, AUTHENSOR):
        e = toolgate.Engine.from_policy(doc)
        art = e.to_bytes()
        assert art is not None
        loaded = toolgate.Engine.from_bundle(art)
        assert loaded.revision == e.revision and len(e.revision) == 64
        assert loaded.kind == e.kind
        path = tmp_path / "a.tgc"
        path.write_bytes(art)
        assert toolgate.Engine.from_file(str(path)).revision == e.revision
    assert toolgate.Engine.from_policy(POLICY).revision != toolgate.Engine.from_policy(
        dict(POLICY, deny="bash")
    ).revision


def test_the_revision_is_the_artifacts_the_cli_writes(tmp_path, toolgate_bin):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(POLICY))
    out = tmp_path / "p.tgc"
    subprocess.run([str(toolgate_bin), "compile", str(src), "-o", str(out)], check=True, timeout=60)
    assert toolgate.Engine.from_file(str(out)).revision == toolgate.Engine.from_file(str(src)).revision


def test_a_batch_holds_allowed_calls_when_one_asks(tmp_path, toolgate_bin):
    e = toolgate.Engine.from_policy(POLICY)
    calls = [
        {"tool": "read", "args": {"path": "a"}},
        {"tool": "bash", "args": {"command": "git push"}},
    ]
    got = [v.to_dict() for v in e.decide_batch(calls)]
    assert got[0]["decision"] == "ask" and got[0].get("held") is True
    path = tmp_path / "p.json"
    path.write_text(json.dumps(POLICY))
    _, want, _ = run_decide(toolgate_bin, path, [json.dumps(calls)], tmp_path)
    assert got == want[0]


def test_a_batch_with_an_unreadable_call_is_denied_whole():
    e = toolgate.Engine.from_policy(POLICY)
    got = e.decide_batch([{"tool": "read", "args": {}}, {"args": {}}])
    assert [v.decision for v in got] == ["deny", "deny"]
    assert "cannot be read" in got[0].reason


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        {"args": {}},
        {"tool": 3, "args": {}},
        {"tool": "read", "args": {1: 2}},
        {"tool": "read", "args": {"x": float("nan")}},
        {"tool": "read", "args": {"x": object()}},
        None,
        42,
        b"\xff\xfe",
    ],
)
def test_unreadable_calls_are_denied_not_raised(bad):
    for doc in (POLICY, BUNDLE, AUTHENSOR):
        v = toolgate.Engine.from_policy(doc).decide(bad)
        assert v.decision == "deny", (doc, bad, v.to_dict())


def test_a_value_that_holds_itself_is_denied_not_a_crash():
    loop = []
    loop.append(loop)
    v = toolgate.Engine.from_policy(POLICY).decide({"tool": "read", "args": {"x": loop}})
    assert v.decision == "deny" and "deeper" in v.reason


def test_policy_errors_carry_located_diagnostics(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "default": "ask",\n  "allow": "Read Bash() Edit"\n}\n')
    with pytest.raises(toolgate.PolicyError) as e:
        toolgate.check(str(path))
    d = e.value.diagnostics[0]
    assert d["code"] == "empty_specifier"
    assert d["file"] == str(path)
    assert (d["line"], d["severity"]) == (3, "error")
    assert d["column"] >= 1
    assert "Bash()" in str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(toolgate.PolicyError):
        toolgate.Engine.from_file(str(path))


def test_check_returns_warnings_of_a_good_policy(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(POLICY, indent=1))
    warnings = toolgate.check(str(path))
    assert [(w["code"], w["severity"], w["file"]) for w in warnings] == [
        ("no_splitter", "warning", str(path))
    ]
    split = dict(POLICY, matchers={"bash": {"match": "prefix", "field": "command", "split": "shell"}})
    path.write_text(json.dumps(split))
    assert toolgate.check(str(path)) == []


def test_missing_files_and_bad_formats_raise():
    with pytest.raises(OSError):
        toolgate.Engine.from_file("/nonexistent/policy.json")
    with pytest.raises(ValueError):
        toolgate.Engine.from_policy(POLICY, format="yaml")
    with pytest.raises(toolgate.PolicyError):
        toolgate.Engine.from_bundle(b"TGC2 not an artifact")
    art = bytearray(toolgate.Engine.from_policy(POLICY).to_bytes())
    art[-1] ^= 1
    with pytest.raises(toolgate.PolicyError):
        toolgate.Engine.from_bundle(bytes(art))


def test_scan_finds_secrets_without_returning_them():
    key = "AKIA" + "Q" * 16
    found = toolgate.scan(f"export KEY={key}")
    assert found and found[0]["type"] == "aws-access-key-id"
    assert found[0]["start"] == len("export KEY=") and found[0]["end"] == len(f"export KEY={key}")
    assert key not in json.dumps(found)
    assert toolgate.scan(b"nothing here") == []
    with pytest.raises(ValueError):
        toolgate.scan(3)


def test_engines_are_shared_across_threads():
    import threading

    e = toolgate.Engine.from_policy(POLICY)
    seen = []

    def work():
        for _ in range(200):
            seen.append(e.decide({"tool": "bash", "args": {"command": "rm -rf /"}}).decision)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert seen == ["deny"] * 800
