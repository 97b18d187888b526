from toolgate import authensor as authensor, rubric as rubric
from toolgate._native import (
    Engine as Engine,
    PolicyError as PolicyError,
    Verdict as Verdict,
    __version__ as __version__,
    check as check,
    scan as scan,
)
