#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/seeds/<target>/.

parse:        every rule list and every policy document of testdata/ and
              examples/, and the grammar corpus's inputs;
policy_json:  every policy document (with the matcher table beside it
              merged in, as the harness does);
matchers:     every matcher case, as `m:<kind>\\n<spec>\\n<value>`;
decide, artifact: fixed pseudo-random byte strings for the generators
              (the decisions of testdata/ cannot be written as generator
              input; the generators reach the same shapes).
authensor:    pseudo-random byte strings, and eight seed bytes followed by
              mode 1 and the policies, or mode 0 and an envelope, of every
              case of testdata/authensor/ and of examples/authensor.json
              and examples/envelopes.jsonl (see the target's doc);
hook:         a PreToolUse payload for every call of testdata/claude-code/;
strategies:   pseudo-random byte strings for the strategy case generator;
serve_intake: a selector byte (artifact kind, surface, limits; see the
              target's doc) before the calls of examples/calls.jsonl, the
              Rubric requests of examples/requests.jsonl and the Authensor
              envelopes of examples/envelopes.jsonl, one at a time, as
              batches and as OPA inputs; hook payloads; ext_authz requests
              (a flags byte, then a `tools/call` body or tool headers); and
              garbage: cut, not JSON, not UTF-8, a batch past the cap;
state:        a mode byte (a program, one with a host hook, a damaged
              store; see the target's doc) before pseudo-random operations;
shell:        every `command` argument of the calls of testdata/, the
              inputs it found (testdata/regressions/shell/ and, those it
              was slow on, testdata/regressions/shell-slow/, as they are),
              `g:` with eight bytes seeding the command generator, and
              `z:` with eight seeding the lines run under bash and zsh.
"""
import hashlib
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "seeds")


def files(*dirs):
    for d in dirs:
        for base, _, names in os.walk(d):
            for n in sorted(names):
                if n.endswith(".json") or n.endswith(".toml"):
                    yield os.path.join(base, n)


def put(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def lists_of(obj):
    for k in ("allow", "deny", "ask"):
        v = obj.get(k)
        if isinstance(v, str):
            yield v
        elif isinstance(v, list):
            for s in v:
                if isinstance(s, str):
                    yield s


def authensor(rng):
    """The authensor target's seeds: documents behind a seed and a mode."""
    def seeded(mode, text):
        put("authensor", bytes(rng.getrandbits(8) for _ in range(8)) + bytes([mode]) + text.encode())

    docs = []
    for path in files(os.path.join(ROOT, "testdata", "authensor")):
        try:
            doc = json.load(open(path, "rb"))
        except ValueError:
            continue
        for c in doc.get("cases", []) if isinstance(doc, dict) else []:
            if not isinstance(c, dict):
                continue
            if "policies" in c:
                docs.append(json.dumps(c["policies"]))
            for e in c.get("envelopes", []):
                if isinstance(e, dict) and "envelope" in e:
                    seeded(0, json.dumps(e["envelope"]))
                elif isinstance(e, dict) and isinstance(e.get("raw"), str):
                    seeded(0, e["raw"])
    example = os.path.join(ROOT, "examples", "authensor.json")
    if os.path.exists(example):
        docs.append(open(example, encoding="utf-8").read())
    envelopes = os.path.join(ROOT, "examples", "envelopes.jsonl")
    if os.path.exists(envelopes):
        for line in open(envelopes, encoding="utf-8"):
            if line.strip():
                seeded(0, line.strip())
    for d in docs:
        seeded(1, d)
    for _ in range(64):
        n = rng.choice([8, 9, 64, 256])
        put("authensor", bytes(rng.getrandbits(8) for _ in range(n)))


def serve_intake():
    """The serve_intake target's seeds: selector byte, then the body."""
    def lines(name):
        path = os.path.join(ROOT, "examples", name)
        if not os.path.exists(path):
            return []
        return [l.strip() for l in open(path, encoding="utf-8") if l.strip()]

    def seeded(kind, surface, small, body, flags=None):
        if isinstance(body, str):
            body = body.encode("utf-8")
        sel = bytes([kind | surface << 2 | (16 if small else 0)])
        put("serve_intake", sel + (bytes([flags]) if flags is not None else b"") + body)

    calls = lines("calls.jsonl")
    inputs = {0: calls, 1: [], 2: lines("requests.jsonl"), 3: lines("envelopes.jsonl")}
    inputs[1] = [json.dumps({"tool": "Bash", "args": {"command": c}})
                 for c in ("ls -la", "rm -rf /", "git push origin main", "cat .env")]
    inputs[1].append(json.dumps({"tool": "Read", "args": {"file_path": "./src/main.rs"}}))
    garbage = ["", "{", "[", "null", "[]", "{}", "[{}]", "\"x\"", "[1,2,3,4]",
               "{\"tool\": 1}", "{\"tool\": \"bash\", \"args\": []}", " \u00a0[]"]
    for kind, items in inputs.items():
        for small in (False, True):
            for it in items:
                seeded(kind, 0, small, it)
                seeded(kind, 1, small, json.dumps({"input": json.loads(it)}))
            seeded(kind, 0, small, "[" + ",".join(items[:2]) + "]")
            seeded(kind, 0, small, "[" + ",".join(items * 2) + "]")
            seeded(kind, 1, small, json.dumps({"input": [json.loads(i) for i in items[:2]]}))
            for g in garbage:
                seeded(kind, 0, small, g)
            seeded(kind, 0, small, b"\xff\xfe" + items[0].encode())
            seeded(kind, 0, small, items[0][: len(items[0]) // 2])
            seeded(kind, 1, small, "{\"inp\": {}}")
        for c in calls + inputs[1]:
            call = json.loads(c)
            if not isinstance(call, dict) or "tool" not in call:
                continue
            seeded(kind, 2, False, json.dumps({"hook_event_name": "PreToolUse",
                                               "tool_name": call["tool"],
                                               "tool_input": call.get("args", {}),
                                               "cwd": "/repo"}))
            rpc = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": call["tool"], "arguments": call.get("args", {})}})
            for flags in (0, 1, 2, 6, 4, 32, 33):
                seeded(kind, 3, flags & 32 != 0, rpc, flags)
            seeded(kind, 3, False, call["tool"] + "\n" + json.dumps(call.get("args", {})) + "\n", 8 | 16)
        seeded(kind, 2, False, "{\"tool_name\": 7}")
        seeded(kind, 2, False, "not json")
        seeded(kind, 3, False, b"", 0xFF)


def main():
    dirs = [os.path.join(ROOT, "testdata"), os.path.join(ROOT, "examples")]
    shared = os.path.join(ROOT, "..", "shared", "conformance", "agentpolicy", "testdata")
    if os.path.isdir(shared):
        dirs.append(shared)
    for path in files(*dirs):
        raw = open(path, "rb").read()
        put("parse", raw)
        if path.endswith(".toml"):
            continue
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        cases = doc.get("cases")
        if not isinstance(cases, list):
            # A policy document of its own (examples/policy.json).
            put("policy_json", raw)
            for l in lists_of(doc):
                put("parse", l)
            continue
        for c in cases:
            if not isinstance(c, dict):
                continue
            for call in c.get("calls", []) or []:
                args = call.get("args") if isinstance(call, dict) else None
                command = args.get("command") if isinstance(args, dict) else None
                if isinstance(command, str):
                    put("shell", command)
                if "claude-code" in path and isinstance(call, dict) and "tool" in call:
                    put("hook", json.dumps({"hook_event_name": "PreToolUse",
                                            "tool_name": call["tool"],
                                            "tool_input": call.get("args", {}),
                                            "cwd": "/repo"}))
            if "input" in c:
                put("parse", c["input"])
            if "matcher" in c and c.get("matcher") in ("prefix", "glob"):
                args = c.get("args")
                field = c.get("field", "command")
                value = args.get(field) if isinstance(args, dict) else None
                if isinstance(value, str):
                    put("matchers", "m:%s\n%s\n%s" % (c["matcher"], c["spec"], value))
            policy = c.get("policy")
            if isinstance(policy, dict):
                p = dict(policy)
                m = c.get("matchers") or doc.get("matchers")
                if m and "matchers" not in p:
                    p["matchers"] = {
                        t: {k: ("corpus" if v is True else v) for k, v in e.items()}
                        for t, e in m.items()
                    }
                if c.get("aliases"):
                    p["aliases"] = c["aliases"]
                text = json.dumps(p)
                put("policy_json", text)
                put("parse", text)
                for l in lists_of(p):
                    put("parse", l)
                for s in p.get("sources", []) or []:
                    if isinstance(s, dict):
                        for l in lists_of(s):
                            put("parse", l)
    rng = random.Random(0x746F6F6C)
    for target in ("decide", "artifact", "artifact_semantic", "matchers"):
        for _ in range(64):
            n = rng.choice([64, 256, 1024, 2048])
            put(target, bytes(rng.getrandbits(8) for _ in range(n)))
    # The inputs it found: those the splitter covers, and those it once
    # took seconds over (replayed under the run's time limit per input).
    for sub in ("shell", "shell-slow"):
        found = os.path.join(ROOT, "testdata", "regressions", sub)
        if os.path.isdir(found):
            for n in sorted(os.listdir(found)):
                put("shell", open(os.path.join(found, n), "rb").read())
    # The shell target's generated commands: `g:` and a seed.
    for _ in range(64):
        put("shell", b"g:" + bytes(rng.getrandbits(8) for _ in range(8)))
    # The lines run under bash and zsh themselves: `z:` and a seed.
    for _ in range(32):
        put("shell", b"z:" + bytes(rng.getrandbits(8) for _ in range(8)))
    authensor(random.Random(0x61757468))
    serve_intake()
    # The intake target: a shape byte (0 arguments, 1 a call line, 2
    # arguments inside a call), then the text: the example calls and their
    # arguments, and texts at the one-pass reader's edges.
    for line in open(os.path.join(ROOT, "examples", "calls.jsonl"), encoding="utf-8"):
        line = line.strip()
        if line:
            put("intake", b"\x01" + line.encode("utf-8"))
            call = json.loads(line)
            args = call.get("args") if isinstance(call, dict) else None
            if args is not None:
                put("intake", b"\x00" + json.dumps(args).encode("utf-8"))
    for t in ['{"a":"\\ud83d\\ude00","b":[1,-0,12.5,{"c":null}]}', '{"a":1,"a":2}',
              '{"o":{"k":true,"k":false}}', '{"a":"\\ud800"}', '{"a":"x\\u0000"}',
              '{"a":1e5}', '{"a":01}', '{"a\\u0041":1}', '"s"', '[]', '{"a":1,}']:
        put("intake", b"\x02" + t.encode("utf-8"))
    srng = random.Random(0x73747261)
    for _ in range(64):
        n = srng.choice([64, 128, 256, 512])
        put("strategies", bytes(srng.getrandbits(8) for _ in range(n)))
    # The state target's programs: a mode byte (plain, hooked, damaged
    # store), then pseudo-random operations.
    trng = random.Random(0x73746174)
    for mode in (0, 2, 1):
        for _ in range(32):
            n = trng.choice([32, 96, 256])
            put("state", bytes([mode]) + bytes(trng.getrandbits(8) for _ in range(n)))
    for target in sorted(os.listdir(OUT)):
        print("seeds: %s: %d inputs" % (target, len(os.listdir(os.path.join(OUT, target)))))


if __name__ == "__main__":
    sys.exit(main())
