"""Shared fixtures: where the repository is, and the `toolgate` binary the
Python API is compared with."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def cli_path():
    """The command line built from this checkout (`cargo build -p
    toolgate-cli`), or the one TOOLGATE_BIN names."""
    given = os.environ.get("TOOLGATE_BIN")
    if given:
        return pathlib.Path(given)
    return ROOT / "target" / "debug" / "toolgate"


@pytest.fixture(scope="session")
def toolgate_bin():
    path = cli_path()
    if not path.is_file():
        pytest.fail(
            f"the toolgate binary is missing at {path}: run `cargo build -p toolgate-cli` "
            "or set TOOLGATE_BIN"
        )
    return path


def run_decide(binary, policy_path, lines, tmp_path):
    """Runs `toolgate decide --policy POLICY CALLS` over `lines` and returns
    (exit code, answers as parsed JSON, stderr)."""
    calls = tmp_path / "calls.jsonl"
    calls.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    p = subprocess.run(
        [str(binary), "decide", "--policy", str(policy_path), str(calls)],
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
    )
    out = [json.loads(x) for x in p.stdout.decode("utf-8").splitlines() if x.strip()]
    return p.returncode, out, p.stderr.decode("utf-8", "replace")
