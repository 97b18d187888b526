"""toolgate: decide AI-agent tool calls in-process, in well under a microsecond.

One engine type for every dialect toolgate reads: agentpolicy documents
(JSON or TOML), Claude Code settings, Rubric bundles, Authensor policies,
and compiled artifacts of any of them.

>>> import toolgate
>>> engine = toolgate.Engine.from_policy({"default": "ask", "allow": "read", "deny": "bash"})
>>> engine.decide({"tool": "read", "args": {"path": "README.md"}}).decision
'allow'

The drop-ins for the Python SDKs are `toolgate.rubric.Evaluator` (for
rubric-app's) and `toolgate.authensor.PolicyEngine`.
"""

from toolgate._native import (
    Engine,
    PolicyError,
    Verdict,
    __version__,
    check,
    scan,
)
from toolgate import authensor, rubric

__all__ = [
    "Engine",
    "PolicyError",
    "Verdict",
    "__version__",
    "authensor",
    "check",
    "rubric",
    "scan",
]
