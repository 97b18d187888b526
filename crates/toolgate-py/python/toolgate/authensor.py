"""A drop-in for ``@authensor/engine``'s ``PolicyEngine``.

``PolicyEngine().evaluate(envelope, policies, session=None)`` returns the
engine's result shape as a dict: ``result["decision"]["outcome"]``.
"""

from toolgate._native import PolicyEngine

__all__ = ["PolicyEngine"]
