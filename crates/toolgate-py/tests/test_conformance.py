"""The conformance corpora through the Python API, against the command line.

Every case's policy (toolgate decision cases, Rubric bundles, Authensor
policies) is written to a file; its calls, requests or envelopes are
decided by `toolgate decide` and by `toolgate.Engine`, from the file, from
the document as a dict, and from the engine's artifact. The answers must be
the same objects (Rubric's `latencyMs` aside, a clock reading). A policy the
command line refuses must raise `toolgate.PolicyError`.

Decision cases whose outcome depends on what a line of `decide` cannot
carry (grant sets, offers, revocations, simulated subjects) are left out;
the count of cases run is checked so that the filter cannot empty a file.
"""

import json
import pathlib

import pytest

import toolgate
from conftest import ROOT, run_decide

AGENTPOLICY = ROOT.parent / "shared" / "conformance" / "agentpolicy" / "testdata" / "policy"

# Members of a decision case that make its verdicts depend on more than a
# line of calls.
NOT_A_LINE = {"grants", "offer", "revoke"}
CALL_NOT_A_LINE = {"subjects", "subjects_error", "raw_args"}


def corpus_files():
    files = sorted((ROOT / "testdata").rglob("*.json"))
    if AGENTPOLICY.is_dir():
        files += sorted(AGENTPOLICY.glob("*.json"))
    out = []
    for f in files:
        try:
            v = json.loads(f.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(v, dict) and isinstance(v.get("cases"), list) and v["cases"]:
            out.append(f)
    return out


def load(f):
    return json.loads(f.read_text(encoding="utf-8"))


def strip_latency(v):
    if isinstance(v, dict):
        return {k: strip_latency(x) for k, x in v.items() if k != "latencyMs"}
    if isinstance(v, list):
        return [strip_latency(x) for x in v]
    return v


def decision_policy(file, case):
    """The case's policy document, with the file's or case's matcher table
    and aliases, as the harness assembles it; None when it uses the
    harness's simulated splitter, which the command line does not have."""
    doc = dict(case["policy"]) if isinstance(case["policy"], dict) else None
    if doc is None:
        return case["policy"]
    table = case.get("matchers") or file.get("matchers")
    if table:
        m = {}
        for tool, e in table.items():
            entry = {}
            if e.get("match") is not None:
                entry["match"] = e["match"]
            if e.get("field") is not None:
                entry["field"] = e["field"]
            split = e.get("split")
            if split is True:
                return None
            if isinstance(split, str):
                entry["split"] = split
            m[tool] = entry
        doc["matchers"] = m
    if case.get("aliases"):
        doc["aliases"] = case["aliases"]
    return doc


def call_line(c):
    if "call" in c:
        return c["call"]
    call = {"tool": c.get("tool", ""), "args": c.get("args")}
    for k in ("cwd", "scope", "confined"):
        if k in c:
            call[k] = c[k]
    return call


def has_duplicate_keys(line):
    """Whether a JSON text repeats a key, which a dict cannot: the dict of
    such a line is another input, not the same one."""
    dup = []

    def pairs(ps):
        keys = [k for k, _ in ps]
        if len(keys) != len(set(keys)):
            dup.append(True)
        return dict(ps)

    try:
        json.loads(line, object_pairs_hook=pairs)
    except ValueError:
        return False
    return bool(dup)


def compare_engine(engine, lines, want, exact_dicts=True):
    """Decides each line (text, then the parsed value) and compares with the
    command line's answers."""
    assert len(want) == len(lines)
    for line, w in zip(lines, want):
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if value is None or isinstance(value, (str, int, float)):
            # Not a JSON object: only the text is given.
            got = engine.decide(line).to_dict()
            assert strip_latency(got) == strip_latency(w), (line, got, w)
            continue
        if isinstance(value, list) and engine.kind in ("rules", "claude-code"):
            got = [v.to_dict() for v in engine.decide_batch(value)]
            if isinstance(w, dict):
                # One call of the batch did not read: the command line
                # answers the line with one deny, the package denies each.
                assert all(g["decision"] == "deny" for g in got), (line, got)
                continue
            assert strip_latency(got) == strip_latency(w), (line, got, w)
            continue
        got_text = engine.decide(line).to_dict()
        assert strip_latency(got_text) == strip_latency(w), (line, got_text, w)
        if has_duplicate_keys(line):
            continue
        got_value = engine.decide(value).to_dict()
        if exact_dicts or got_value.get("decision") != "deny":
            assert strip_latency(got_value) == strip_latency(w), (line, got_value, w)
        else:
            assert got_value["decision"] == w["decision"], (line, got_value, w)


def run_case(tmp_path, toolgate_bin, doc, lines, name):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, want, err = run_decide(toolgate_bin, path, lines, tmp_path)
    if code != 0 and not want:
        # The command line refused the document: so must the package.
        with pytest.raises(toolgate.PolicyError) as refused:
            toolgate.Engine.from_file(str(path))
        assert refused.value.diagnostics, name
        with pytest.raises(toolgate.PolicyError):
            toolgate.Engine.from_policy(doc)
        return "refused"
    assert code == 0, (name, err)
    engine = toolgate.Engine.from_file(str(path))
    # Unreadable inputs are worded from the text the command line read;
    # from a dict the reason of such a deny may differ, the decision not.
    compare_engine(engine, lines, want, exact_dicts=False)
    compare_engine(toolgate.Engine.from_policy(doc), lines, want, exact_dicts=False)
    art = engine.to_bytes()
    if art is not None:
        loaded = toolgate.Engine.from_bundle(art)
        assert loaded.revision == engine.revision
        assert loaded.kind == engine.kind
        compare_engine(loaded, lines, want, exact_dicts=False)
    return "decided"


def cases_of(kind):
    out = []
    for f in corpus_files():
        v = load(f)
        first = v["cases"][0]
        shape = (
            "decisions" if "policy" in first
            else "rubric" if "bundle" in first
            else "authensor" if "policies" in first
            else None
        )
        if shape == kind:
            for i, c in enumerate(v["cases"]):
                out.append(pytest.param(v, c, id=f"{f.relative_to(f.parents[1])}:{i}"))
    return out


@pytest.mark.parametrize("file,case", cases_of("decisions"))
def test_decision_case(tmp_path, toolgate_bin, file, case):
    if NOT_A_LINE & case.keys():
        pytest.skip("grant sets, offers and revocations are not a line of calls")
    doc = decision_policy(file, case)
    if doc is None:
        pytest.skip("the case simulates a splitter the command line does not have")
    lines = []
    for c in case.get("calls") or []:
        if CALL_NOT_A_LINE & c.keys():
            continue
        lines.append(json.dumps(call_line(c)))
    batch = case.get("batch")
    if batch and not any(CALL_NOT_A_LINE & c.keys() for c in batch):
        lines.append(json.dumps([call_line(c) for c in batch]))
    run_case(tmp_path, toolgate_bin, doc, lines, case["name"])


@pytest.mark.parametrize("file,case", cases_of("rubric"))
def test_rubric_case(tmp_path, toolgate_bin, file, case):
    if case.get("bundle") is None:
        pytest.skip("no bundle: the drop-in's NO_POLICIES is tested in test_dropins")
    lines = []
    for r in case.get("requests", []):
        lines.append(r["raw"] if "raw" in r else json.dumps(r["request"]))
    lines = [l for l in lines if "\n" not in l and l.strip()]
    outcome = run_case(tmp_path, toolgate_bin, case["bundle"], lines, case["name"])
    if outcome == "decided" and case.get("compile_errors") is None:
        # The drop-in decides as the engine does.
        ev = toolgate.rubric.Evaluator()
        ev.update_bundle(case["bundle"])
        engine = toolgate.Engine.from_policy(case["bundle"])
        for line in lines:
            got = ev.evaluate(line).model_dump()
            assert strip_latency(got) == strip_latency(engine.decide(line).to_dict())


@pytest.mark.parametrize("file,case", cases_of("authensor"))
def test_authensor_case(tmp_path, toolgate_bin, file, case):
    lines = []
    for e in case.get("envelopes", []):
        lines.append(e["raw"] if "raw" in e else json.dumps(e["envelope"]))
    lines = [l for l in lines if "\n" not in l and l.strip()]
    outcome = run_case(tmp_path, toolgate_bin, case["policies"], lines, case["name"])
    if outcome == "decided":
        # The drop-in decides as the engine does, the session passed apart.
        pe = toolgate.authensor.PolicyEngine()
        engine = toolgate.Engine.from_policy(case["policies"])
        for e in case.get("envelopes", []):
            if "envelope" not in e or not isinstance(e["envelope"], dict):
                continue
            env = dict(e["envelope"])
            session = env.pop("session", None)
            got = pe.evaluate(env, case["policies"], session)
            assert got == engine.decide(e["envelope"]).to_dict()


def test_the_corpora_are_found():
    """The filters above leave most of each corpus to run."""
    assert len(cases_of("decisions")) >= 100
    assert len(cases_of("rubric")) >= 20
    assert len(cases_of("authensor")) >= 20
