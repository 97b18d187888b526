"""The drop-ins: toolgate.rubric.Evaluator for rubric-app's Evaluator and
toolgate.authensor.PolicyEngine for @authensor/engine's."""

import pytest

import toolgate
from test_engine import AUTHENSOR, BUNDLE

rubric_types = pytest.importorskip("rubric.types")
from rubric.evaluator import Evaluator as RubricAppEvaluator, EvaluatorOptions  # noqa: E402

FIELDS = ["decision", "reason", "code", "matchedPolicyId", "matchedPolicyVersion", "matchedRuleId"]


def fields(r):
    """The fields compared: all but latency, and the reason only where a
    code is set (rubric-app gives no reason for a rule's deny; toolgate
    gives the rule's description, as `tests/rubric_differential.rs` says)."""
    out = {f: getattr(r, f) for f in FIELDS}
    if out["code"] is None:
        out["reason"] = None
    return out


def test_evaluator_matches_rubric_app_on_its_own_models():
    bundle = rubric_types.Bundle(**BUNDLE)
    ours, theirs = toolgate.rubric.Evaluator(), RubricAppEvaluator()
    ours.update_bundle(bundle)
    theirs.update_bundle(bundle)
    for req in (
        {"tool_name": "delete_file"},
        {"tool_name": "read_file", "agent_id": "bot"},
        {"tool_name": "read_file", "agent_id": "FROZEN-BOT"},
    ):
        r = rubric_types.EvaluationRequest(**req)
        a, b = ours.evaluate(r), theirs.evaluate(r)
        assert fields(a) == fields(b), req
        if a.matchedRuleId == "no-delete":
            assert a.reason == "Deny delete_file calls"
        assert a.latencyMs >= 0.0
        assert set(a.model_dump()) == set(b.model_dump())


def test_a_request_model_reads_as_its_dump(monkeypatch):
    """rubric-app's request model is read from its attributes rather than
    through `model_dump()`; it must decide as its dump does, and as
    rubric-app does, with top-level and nested `None`s, enum members, and
    a value only pydantic can convert (a datetime, read through the dump)."""
    import datetime
    import enum

    class Mode(str, enum.Enum):
        FAST = "fast"

    def rule(i, field, op, value):
        # Each rule is reached by its own tool, so that one that fires on
        # a missing field does not hide the others.
        return {
            "id": f"r{i}",
            "conditions": [
                {"field": "tool_name", "operator": "eq", "value": f"t{i}"},
                {"field": field, "operator": op, "value": value},
            ],
            "effect": "deny",
        }

    bundle = {
        **BUNDLE,
        "policies": [
            {
                **BUNDLE["policies"][0],
                "document": {
                    **BUNDLE["policies"][0]["document"],
                    "spec": {
                        "defaultEffect": "allow",
                        "rules": [
                            rule(0, "mode", "eq", "fast"),
                            rule(1, "input.a", "neq", "x"),
                            rule(2, "z", "neq", "q"),
                            rule(3, "when", "starts_with", "2026"),
                            rule(4, "agent_id", "neq", "bot"),
                        ],
                    },
                },
            }
        ],
    }
    ours, theirs = toolgate.rubric.Evaluator(), RubricAppEvaluator()
    ours.update_bundle(bundle)
    theirs.update_bundle(rubric_types.Bundle(**bundle))
    requests = [
        {"tool_name": "t0", "agent_id": "bot", "mode": Mode.FAST},
        {"tool_name": "t0", "agent_id": "bot"},
        {"tool_name": "t1", "agent_id": "bot", "input": {"a": None}},
        {"tool_name": "t1", "agent_id": "bot", "input": {"a": "x", "b": [None]}},
        {"tool_name": "t2", "agent_id": "bot", "z": None},
        {"tool_name": "t2", "agent_id": "bot", "z": "q"},
        {"tool_name": "t3", "agent_id": "bot", "when": datetime.datetime(2026, 1, 2)},
        {"tool_name": "t3", "agent_id": "bot", "when": datetime.datetime(2025, 1, 2)},
        {"tool_name": "t4", "agent_id": None},
        {"tool_name": "t4", "agent_id": "bot"},
    ]
    dumps = []
    real_dump = rubric_types.EvaluationRequest.model_dump

    def counted_dump(self, *args, **kwargs):
        dumps.append(self.tool_name)
        return real_dump(self, *args, **kwargs)

    decided = set()
    for req in requests:
        model = rubric_types.EvaluationRequest(**req)
        with monkeypatch.context() as m:
            m.setattr(rubric_types.EvaluationRequest, "model_dump", counted_dump)
            a = ours.evaluate(model)
        dumped = ours.evaluate(model.model_dump(mode="json", exclude_none=True))
        assert fields(a) == fields(dumped), req
        assert fields(a) == fields(theirs.evaluate(model)), req
        decided.add((a.decision, a.matchedRuleId))
    # The rules are reached, not all passed over.
    assert {rule for _, rule in decided} == {"r0", "r1", "r2", "r3", "r4", None}
    # Only the requests holding a datetime needed pydantic's dump.
    assert dumps == ["t3", "t3"]


def test_no_bundle_is_no_policies():
    r = toolgate.rubric.Evaluator().evaluate({"tool_name": "x"})
    theirs = RubricAppEvaluator().evaluate(rubric_types.EvaluationRequest(tool_name="x"))
    assert fields(r) == fields(theirs)
    assert (r.decision, r.code) == ("deny", "NO_POLICIES")


def test_a_bad_pattern_fails_its_policy_closed_and_calls_the_hook():
    bad = {**BUNDLE}
    doc = bad["policies"][0]["document"]
    rule = {
        "id": "bad",
        "conditions": [{"field": "tool_name", "operator": "matches", "value": "(unclosed"}],
        "effect": "deny",
    }
    bad = {
        **BUNDLE,
        "policies": [{**BUNDLE["policies"][0], "document": {**doc, "spec": {**doc["spec"], "rules": [rule]}}}],
    }
    seen = []
    ev = toolgate.rubric.Evaluator(EvaluatorOptions(on_compile_error=seen.append))
    ev.update_bundle(bad)
    assert [(i.policy_id, i.rule_id, i.field) for i in seen] == [
        (BUNDLE["policies"][0]["policyId"], "bad", "tool_name")
    ]
    r = ev.evaluate({"tool_name": "anything"})
    assert (r.decision, r.code) == ("deny", "POLICY_COMPILE_ERROR")
    theirs = RubricAppEvaluator()
    theirs.update_bundle(rubric_types.Bundle(**bad))
    assert fields(r) == fields(theirs.evaluate(rubric_types.EvaluationRequest(tool_name="anything")))


def test_a_refused_bundle_raises_and_keeps_the_previous_one():
    ev = toolgate.rubric.Evaluator()
    ev.update_bundle(BUNDLE)
    with pytest.raises(toolgate.PolicyError) as e:
        ev.update_bundle({"policies": [{"policyId": 3}]})
    assert e.value.diagnostics
    assert ev.evaluate({"tool_name": "delete_file"}).matchedRuleId == "no-delete"


def test_an_unreadable_request_is_denied():
    ev = toolgate.rubric.Evaluator()
    ev.update_bundle(BUNDLE)
    for bad in ({"agent_id": "x"}, "{", None, {"tool_name": 3}):
        r = ev.evaluate(bad)
        assert (r.decision, r.code) == ("deny", "INVALID_REQUEST"), bad


def test_policy_engine_in_the_seed_shape():
    pe = toolgate.authensor.PolicyEngine()
    env = {"id": "1", "action": "shell.execute", "resource": "bash://localhost/rm", "principalId": "a", "timestamp": "t"}
    r = pe.evaluate(env, AUTHENSOR)
    assert r["decision"]["outcome"] == "deny"
    assert r["decision"]["reason"] == "Destructive shell commands blocked"
    assert r["decision"]["policyId"] == "block-destructive"
    ok = pe.evaluate(dict(env, action="file.read"), AUTHENSOR)
    assert ok["decision"]["outcome"] == "deny"  # no matching rule, no default: fail closed


def test_policy_engine_session_rules():
    policy = [
        {
            "id": "session-policy",
            "version": 1,
            "rules": [{"effect": "allow", "conditions": {}}],
            "sessionRules": {
                "forbiddenSequences": [{"actions": ["file.read", "network.send"], "reason": "Read then exfil pattern"}],
                "maxActions": 50,
            },
        }
    ]
    env = {"id": "2", "action": "network.send", "resource": "https://x", "principalId": "a", "timestamp": "t"}
    pe = toolgate.authensor.PolicyEngine()
    assert pe.evaluate(env, policy)["decision"]["outcome"] == "allow"
    session = {"sessionId": "s", "actions": [{"actionType": "file.read", "timestamp": "t0"}]}
    r = pe.evaluate(env, policy, session)
    assert r["decision"]["outcome"] == "deny"
    assert r["sessionViolation"]["type"] == "forbidden_sequence"


def test_policy_engine_fails_closed_on_bad_policies():
    pe = toolgate.authensor.PolicyEngine()
    env = {"id": "1", "action": "a", "resource": "r", "principalId": "p", "timestamp": "t"}
    r = pe.evaluate(env, [{"id": 3}])
    assert r["decision"]["outcome"] == "deny"
    assert "cannot be used" in r["decision"]["reason"]
    assert pe.evaluate("not an envelope", AUTHENSOR)["decision"]["outcome"] == "deny"
