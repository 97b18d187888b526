"""Per-call latency from Python: toolgate.rubric.Evaluator.evaluate against
rubric-app 0.1.0's pure-Python evaluator (1, 100 and 1000 rules), and
toolgate.Engine.decide against cedarpy on an equivalent policy (when
cedarpy is installed). Not run in CI; one run, printed as a Markdown table.

    python bench/python/bench.py            # after `pip install` of a release wheel
                                             # and `pip install rubric-app==0.1.0 cedarpy`

Each figure is the median over 7 rounds of the mean time per call of one
round (each round decides a fixed, seeded mix of requests, long enough to
take about 0.2 s), on the same bundle and requests for both sides.
"""

import logging
import random
import statistics
import sys
import time
import uuid

import toolgate

ROUNDS = 7
TOOLS = ["Bash", "Read", "Write", "delete_file", "mcp__github__create_issue"]
WORDS = ["git", "npm", "rm", "curl", "ls", "cat", "make", "cargo", "python", "docker"]


def rubric_bundle(n_rules, rng):
    """`n_rules` rules over tool names and command prefixes, in policies of
    at most 100 rules (rubric-app's schema limit is per document)."""
    policies = []
    left, p = n_rules, 0
    while left > 0:
        count = min(left, 100)
        rules = []
        for r in range(count):
            word = f"{rng.choice(WORDS)}{p}-{r}"
            rules.append(
                {
                    "id": f"r{p}-{r}",
                    "description": f"rule {p}-{r}",
                    "conditions": [
                        {"field": "tool_name", "operator": "eq", "value": rng.choice(TOOLS)},
                        {"field": "input.command", "operator": "starts_with", "value": word},
                    ],
                    "effect": "deny" if r % 3 == 0 else "allow",
                }
            )
        policies.append(
            {
                "policyId": str(uuid.UUID(int=rng.getrandbits(128))),
                "policyVersion": 1,
                "document": {
                    "apiVersion": "agent-governance.io/v1",
                    "kind": "Policy",
                    "metadata": {"name": f"p{p}"},
                    "spec": {"defaultEffect": "allow", "rules": rules},
                },
            }
        )
        left -= count
        p += 1
    return {
        "bundleVersion": 1,
        "contentHash": "a" * 64,
        "builtAt": "2026-01-01T00:00:00Z",
        "policies": policies,
        "frozenAgentIds": [],
    }


def requests(rng, bundle, n=200):
    cmds = []
    for p in bundle["policies"]:
        for r in p["document"]["spec"]["rules"]:
            cmds.append(r["conditions"][1]["value"])
    out = []
    for _ in range(n):
        cmd = rng.choice(cmds) + " --flag" if rng.random() < 0.5 else rng.choice(WORDS) + " x"
        out.append({"tool_name": rng.choice(TOOLS), "agent_id": "bot", "input": {"command": cmd}})
    return out


def per_call(fn, items):
    """Median over ROUNDS of the mean seconds per call of a round."""
    start = time.perf_counter()
    fn(items[0])
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            for x in items:
                fn(x)
        took = time.perf_counter() - t0
        if took > 0.2 or reps > 1 << 16:
            break
        reps *= 2
    rounds = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(reps):
            for x in items:
                fn(x)
        rounds.append((time.perf_counter() - t0) / (reps * len(items)))
    return statistics.median(rounds)


def fmt(s):
    return f"{s * 1e6:.2f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def bench_rubric(rows):
    from rubric import types
    from rubric.evaluator import Evaluator

    logging.getLogger("rubric").setLevel(logging.ERROR)
    for n in (1, 100, 1000):
        rng = random.Random(n)
        raw = rubric_bundle(n, rng)
        bundle = types.Bundle(**raw)
        reqs = [types.EvaluationRequest(**r) for r in requests(rng, raw)]
        ours, theirs = toolgate.rubric.Evaluator(), Evaluator()
        ours.update_bundle(bundle)
        theirs.update_bundle(bundle)
        for r in reqs:
            a, b = ours.evaluate(r), theirs.evaluate(r)
            assert (a.decision, a.matchedRuleId) == (b.decision, b.matchedRuleId)
        dicts = [r.model_dump(exclude_none=True) for r in reqs]
        t_ours_model = per_call(ours.evaluate, reqs)
        t_ours = per_call(ours.evaluate, dicts)
        t_theirs = per_call(theirs.evaluate, reqs)
        rows.append(
            (
                f"Rubric, {n} rule{'s' if n > 1 else ''}",
                "rubric-app 0.1.0 `Evaluator.evaluate` (pure Python)",
                fmt(t_theirs),
                f"{fmt(t_ours)} (dict) / {fmt(t_ours_model)} (pydantic request)",
                f"{t_theirs / t_ours:.0f}× / {t_theirs / t_ours_model:.0f}×",
            )
        )


def bench_cedar(rows):
    try:
        import cedarpy
    except ImportError:
        rows.append(("agentpolicy vs Cedar", "cedarpy not installed", "-", "-", "-"))
        return
    rng = random.Random(7)
    prefixes = [f"{rng.choice(WORDS)}{i}" for i in range(100)]
    # The same 100 prefixes, allowed; `rm` denied; everything else denied by
    # default (Cedar's default is deny).
    tg = toolgate.Engine.from_policy(
        {
            "default": "deny",
            "matchers": {"bash": {"match": "prefix", "field": "command"}},
            "allow": " ".join(f"bash({p}:*)" for p in prefixes),
            "deny": "bash(rm:*)",
        }
    )
    cedar_text = "\n".join(
        f'permit(principal, action == Action::"bash", resource) when {{ context.command like "{p}*" }};'
        for p in prefixes
    ) + '\nforbid(principal, action == Action::"bash", resource) when { context.command like "rm*" };\n'
    policies = cedarpy.PolicySet.from_str(cedar_text) if hasattr(cedarpy, "PolicySet") else cedar_text
    entities = cedarpy.Entities.from_json_str("[]") if hasattr(cedarpy, "Entities") else []
    cmds = [rng.choice(prefixes) + " run" if rng.random() < 0.6 else rng.choice(["rm -rf x", "ls", "curl y"]) for _ in range(200)]
    calls = [{"tool": "bash", "args": {"command": c}} for c in cmds]
    creqs = [
        {"principal": 'User::"agent"', "action": 'Action::"bash"', "resource": 'Tool::"bash"', "context": {"command": c}}
        for c in cmds
    ]
    for call, creq in zip(calls, creqs):
        a = tg.decide(call).decision
        b = cedarpy.is_authorized(creq, policies, entities).decision
        assert (a == "allow") == (str(b).endswith("Allow")), (call, a, b)
    t_tg = per_call(tg.decide, calls)
    t_cedar = per_call(lambda r: cedarpy.is_authorized(r, policies, entities), creqs)
    rows.append(
        (
            "bash prefixes, 100 allow + 1 deny",
            f"cedarpy {getattr(cedarpy, '__version__', '')} `is_authorized` (parsed PolicySet)",
            fmt(t_cedar),
            f"{fmt(t_tg)} (`Engine.decide`)",
            f"{t_cedar / t_tg:.0f}×",
        )
    )


def main():
    rows = []
    bench_rubric(rows)
    bench_cedar(rows)
    print(f"Python {sys.version.split()[0]}, toolgate {toolgate.__version__}")
    print()
    print("| workload | other engine | other, per call | toolgate, per call | speed-up |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
