"""A drop-in for rubric-app's evaluator.

Replace ``from rubric.evaluator import Evaluator`` with
``from toolgate.rubric import Evaluator``: ``update_bundle(bundle)`` and
``evaluate(request)`` take the same arguments (rubric-app's pydantic models,
dicts or JSON text) and the result has the same fields as rubric-app's
``EvaluationResult``.
"""

from toolgate._native import EvaluationResult, Evaluator

__all__ = ["EvaluationResult", "Evaluator"]
