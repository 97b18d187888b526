"""toolgate.rubric.Evaluator against rubric-app 0.1.0's pure-Python
evaluator, on seeded random bundles and requests: zero disagreements.

Bundles go through rubric-app's own `Bundle` model (so only bundles it
accepts are used) and both evaluators get the same model objects; requests
are rubric-app's `EvaluationRequest`s. The generator keeps to the ground
the seed and rubric-app 0.1.0 share (`spec/rubric.md`, "Differential
testing", and `toolgate_testing::rubric::Shape::shared`): string values,
paths through objects to string leaves, ASCII text, and patterns RE2 and Python's `regex`
read alike (or both refuse). Past it, rubric-app stringifies with Python's
`str` (`True`, `['a']`, a dict) where Rubric's TypeScript evaluator, which toolgate
follows, uses JavaScript's `String(v)`. Every field is compared but
`latencyMs`, and `reason` only where a code is set (rubric-app gives no
reason for a rule's deny; toolgate gives the rule's description), as
`crates/toolgate/tests/rubric_differential.rs` compares them.
"""

import logging
import random
import uuid

import pytest

import toolgate

types = pytest.importorskip("rubric.types")
from rubric.evaluator import Evaluator as RubricAppEvaluator  # noqa: E402

SEED = 18
BUNDLES = 300
REQUESTS = 40

TOOLS = ["Bash", "Read", "delete_file", "mcp__github__create_issue", "mcp__slack__post", "bash", "Write", ""]
AGENTS = [None, "bot", "Payments-Bot", "payments-bot", "frozen", "FROZEN"]
STRINGS = ["", "rm -rf /", "git push", "ls", "/tmp/x", "/etc/passwd", "1000", "10", "true", "None", "a.b", "AB", "x" * 40]
FIELDS = [
    "tool_name",
    "agent_id",
    "kwargs.amount",
    "kwargs.path",
    "kwargs.flag",
    "input.command",
    "input.nested.deep",
    "missing.field",
]
PATTERNS = ["^rm", "push$", "a.b", "(?i)bash", "^mcp__(github|slack)__", "[0-9]+", "^$", "\\d{3,}", "x{40}", "(unclosed", "[a-c]+b"]


def gen_value(rng):
    return rng.choice(STRINGS + TOOLS[:-1])


def gen_condition(rng):
    field = rng.choice(FIELDS)
    op = rng.choice(["eq", "neq", "in", "not_in", "contains", "starts_with", "ends_with", "matches"])
    if op == "matches":
        value = rng.choice(PATTERNS)
    elif op in ("in", "not_in"):
        pool = STRINGS + TOOLS[:-1]
        value = [rng.choice(pool) for _ in range(rng.randint(1, 4))]
    elif op in ("contains", "starts_with", "ends_with"):
        value = rng.choice(STRINGS + ["ba", "sh", "mcp__", "/"])
    else:
        value = gen_value(rng)
    if field == "tool_name" and op in ("eq", "neq") and rng.random() < 0.6:
        value = rng.choice(TOOLS[:-1])
    return {"field": field, "operator": op, "value": value}


def gen_bundle(rng, n_rules=None):
    policies = []
    for p in range(rng.randint(1, 3) if n_rules is None else 1):
        rules = []
        for r in range(rng.randint(1, 6) if n_rules is None else n_rules):
            rule = {
                "id": f"r{p}-{r}",
                "conditions": [gen_condition(rng) for _ in range(rng.randint(1, 3))],
                "effect": rng.choice(["allow", "deny"]),
            }
            if rng.random() < 0.5:
                rule["description"] = f"rule {p}-{r}"
            rules.append(rule)
        policies.append(
            {
                "policyId": str(uuid.UUID(int=rng.getrandbits(128))),
                "policyVersion": rng.randint(0, 9),
                "document": {
                    "apiVersion": "agent-governance.io/v1",
                    "kind": "Policy",
                    "metadata": {"name": f"p{p}"},
                    "spec": {"defaultEffect": rng.choice(["allow", "deny"]), "rules": rules},
                },
            }
        )
    frozen = [rng.choice(["frozen", "FROZEN", "bot"])] if rng.random() < 0.3 else []
    return {
        "bundleVersion": 1,
        "contentHash": "a" * 64,
        "builtAt": "2026-01-01T00:00:00Z",
        "policies": policies,
        "frozenAgentIds": frozen,
    }


def gen_request(rng):
    req = {"tool_name": rng.choice(TOOLS)}
    agent = rng.choice(AGENTS)
    if agent is not None:
        req["agent_id"] = agent
    if rng.random() < 0.7:
        req["kwargs"] = {
            k: gen_value(rng) for k in rng.sample(["amount", "path", "flag"], rng.randint(0, 3))
        }
    if rng.random() < 0.5:
        cmd = rng.choice(STRINGS)
        req["input"] = {"command": cmd}
        if rng.random() < 0.3:
            req["input"]["nested"] = {"deep": gen_value(rng)}
    return req


def compared(r):
    out = {
        "decision": r.decision,
        "code": r.code,
        "matchedPolicyId": r.matchedPolicyId,
        "matchedPolicyVersion": r.matchedPolicyVersion,
        "matchedRuleId": r.matchedRuleId,
        "reason": r.reason if r.code is not None else None,
    }
    return out


def test_zero_disagreements_with_rubric_app():
    # rubric-app logs each failing pattern; the differential makes many.
    logging.getLogger("rubric.evaluator").setLevel(logging.ERROR)
    rng = random.Random(SEED)
    decisions = disagreements = denies = bundles = 0
    first = []
    for _ in range(BUNDLES):
        raw = gen_bundle(rng)
        try:
            bundle = types.Bundle(**raw)
        except Exception:
            continue
        bundles += 1
        ours, theirs = toolgate.rubric.Evaluator(), RubricAppEvaluator()
        theirs.update_bundle(bundle)
        ours.update_bundle(bundle)
        for _ in range(REQUESTS):
            req = types.EvaluationRequest(**gen_request(rng))
            a, b = compared(ours.evaluate(req)), compared(theirs.evaluate(req))
            decisions += 1
            denies += a["decision"] == "deny"
            if a != b:
                disagreements += 1
                if len(first) < 5:
                    first.append((raw, req.model_dump(), a, b))
    print(f"rubric-app 0.1.0: {bundles} bundles, {decisions} decisions ({denies} deny), {disagreements} disagreements")
    assert bundles >= BUNDLES // 2
    assert 0 < denies < decisions
    assert disagreements == 0, first
