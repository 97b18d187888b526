from toolgate._native import EvaluationResult as EvaluationResult, Evaluator as Evaluator
