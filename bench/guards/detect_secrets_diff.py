#!/usr/bin/env python3
"""Recall and false positives of `toolgate scan` and detect-secrets 1.5.0
on a generated corpus with planted secrets.

    pip install detect-secrets==1.5.0
    cargo build --release -p toolgate-cli
    python3 bench/guards/detect_secrets_diff.py [--files 200] [--seed 1]

The corpus is code-like text (identifiers, calls, URLs, hashes, UUIDs,
base64 blobs, placeholders such as `${DB_PASSWORD}`) in which a secret of
a type both tools know is planted on some lines, one per line. A planted
secret is recalled when the tool flags its line; a flagged line with no
planted secret is a false positive. Both tools run with their defaults
(detect-secrets: every plugin and filter; toolgate: the built-in
catalogue). Prints a table per type and the totals.
"""
import argparse
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def rnd(r, alphabet, n):
    return "".join(r.choice(alphabet) for _ in range(n))


def b64url(b):
    import base64
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(r):
    head = b64url(b'{"alg":"HS256","typ":"JWT"}')
    body = b64url(json.dumps({"sub": rnd(r, ALNUM, 12), "iat": r.randint(10**9, 2 * 10**9)}).encode())
    return f"{head}.{body}.{rnd(r, ALNUM + '-_', 43)}"


# (type, line maker): the types both tools know.
def planted(r):
    return [
        ("aws-access-key-id", lambda: f'aws_access_key_id = "AKIA{rnd(r, string.ascii_uppercase + string.digits, 16)}"'),
        ("aws-secret-access-key", lambda: f'aws_secret_access_key = "{rnd(r, B64, 40)}"'),
        ("github-token", lambda: f"export GITHUB_TOKEN=ghp_{rnd(r, ALNUM, 36)}"),
        ("gitlab-token", lambda: f'GITLAB_TOKEN = "glpat-{rnd(r, ALNUM, 20)}"'),
        ("npm-token", lambda: f"//registry.npmjs.org/:_authToken=npm_{rnd(r, ALNUM, 36)}"),
        ("slack-token", lambda: f'SLACK_BOT_TOKEN = "xoxb-{rnd(r, string.digits, 12)}-{rnd(r, string.digits, 13)}-{rnd(r, ALNUM, 24)}"'),
        ("stripe-key", lambda: f'stripe.api_key = "sk_live_{rnd(r, ALNUM, 24)}"'),
        ("twilio-key", lambda: f'twilio_api_key = "SK{rnd(r, HEX, 32)}"'),
        ("sendgrid-key", lambda: f'SENDGRID_API_KEY = "SG.{rnd(r, ALNUM, 22)}.{rnd(r, ALNUM, 43)}"'),
        ("openai-key", lambda: f'openai.api_key = "sk-{rnd(r, ALNUM, 20)}T3BlbkFJ{rnd(r, ALNUM, 20)}"'),
        ("azure-storage-connection-string", lambda: f'conn = "DefaultEndpointsProtocol=https;AccountName=acct{rnd(r, string.digits, 3)};AccountKey={rnd(r, B64, 86)}==;EndpointSuffix=core.windows.net"'),
        ("private-key", lambda: f"-----BEGIN RSA PRIVATE KEY-----{rnd(r, B64, 64)}-----END RSA PRIVATE KEY-----"),
        ("jwt", lambda: f"Authorization: Bearer {jwt(r)}"),
        ("database-url-password", lambda: f'DATABASE_URL = "postgres://app:{rnd(r, ALNUM, 16)}@db.internal:5432/app"'),
        ("generic-secret", lambda: f'db_password = "{rnd(r, ALNUM + "!#%", 18)}"'),
    ]


def clean_line(r):
    w = lambda: r.choice(["user", "config", "request", "value", "result", "items", "path", "name", "count", "token_count", "password_hint", "secret_name"])
    makers = [
        lambda: f"    let {w()} = {w()}.get(\"{w()}\")?;",
        lambda: f"def {w()}_{w()}(self, {w()}):",
        lambda: f"    return {w()} + {r.randint(0, 999)}",
        lambda: f"# see https://example.com/docs/{w()}/{r.randint(1, 99)}",
        lambda: f"commit {rnd(r, HEX, 40)}",
        lambda: f'id = "{rnd(r, HEX, 8)}-{rnd(r, HEX, 4)}-{rnd(r, HEX, 4)}-{rnd(r, HEX, 4)}-{rnd(r, HEX, 12)}"',
        lambda: f'"integrity": "sha512-{rnd(r, B64, 86)}=="',
        lambda: f'password = os.environ["DB_PASSWORD"]',
        lambda: f"token = get_token({w()})",
        lambda: "password: ${{ secrets.DB_PASSWORD }}",
        lambda: f"DATABASE_URL=postgres://localhost:5432/{w()}",
        lambda: f'image: "registry.example.com/{w()}:{rnd(r, HEX, 12)}"',
        lambda: f"sha256 = {rnd(r, HEX, 64)}",
        lambda: f'api_key = "{w()}"',
        lambda: f"logger.info(\"processed %d {w()}\", n)",
        lambda: f'assert {w()} == "{rnd(r, string.ascii_lowercase, 8)}"',
    ]
    return r.choice(makers)()


def corpus(dirname, files, seed):
    r = random.Random(seed)
    kinds = planted(r)
    truth = {}  # (file, line) -> type
    for i in range(files):
        lines = []
        for n in range(1, 51):
            if r.random() < 0.1:
                kind, make = r.choice(kinds)
                lines.append(make())
                truth[(f"f{i:04}.txt", n)] = kind
            else:
                lines.append(clean_line(r))
        with open(os.path.join(dirname, f"f{i:04}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return truth


def run_detect_secrets(dirname):
    t = time.perf_counter()
    out = subprocess.run(
        ["detect-secrets", "scan", "--all-files", "."],
        cwd=dirname, capture_output=True, text=True, check=True,
    ).stdout
    took = time.perf_counter() - t
    flagged = set()
    for fname, results in json.loads(out)["results"].items():
        for res in results:
            flagged.add((os.path.basename(fname), res["line_number"]))
    return flagged, took


def run_toolgate(dirname, exe):
    flagged = set()
    t = time.perf_counter()
    for fname in sorted(os.listdir(dirname)):
        path = os.path.join(dirname, fname)
        data = open(path, "rb").read()
        out = subprocess.run([exe, "scan", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = json.loads(line)
            flagged.add((fname, data.count(b"\n", 0, f["start"]) + 1))
    return flagged, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=0, help="print this many false positive lines of each tool")
    ap.add_argument("--toolgate", default=os.path.join(os.path.dirname(__file__), "../../target/release/toolgate"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        truth = corpus(d, a.files, a.seed)
        lines = a.files * 50
        ds, ds_t = run_detect_secrets(d)
        tg, tg_t = run_toolgate(d, a.toolgate)
        for name, flagged in [("toolgate", tg), ("detect-secrets", ds)]:
            for f, n in sorted(flagged - set(truth))[: a.show]:
                line = open(os.path.join(d, f)).read().split("\n")[n - 1]
                print(f"false positive of {name}: {f}:{n}: {line}")
    kinds = sorted(set(truth.values()))
    print(f"corpus: {a.files} files, {lines} lines, {len(truth)} planted secrets (seed {a.seed})")
    print(f"{'type':34} {'planted':>7} {'toolgate':>9} {'detect-secrets':>15}")
    for k in kinds:
        keys = [x for x, t in truth.items() if t == k]
        print(f"{k:34} {len(keys):7} {sum(x in tg for x in keys):9} {sum(x in ds for x in keys):15}")
    for name, flagged, took in [("toolgate", tg, tg_t), ("detect-secrets", ds, ds_t)]:
        hit = sum(x in flagged for x in truth)
        fp = len(flagged - set(truth))
        print(f"{name}: recall {hit}/{len(truth)} = {hit / len(truth):.3f}, false positives {fp} lines, {took:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
