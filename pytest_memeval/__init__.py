"""pytest-memeval: AI-agent memory benchmarks as pytest test suites.

The public API: the records a memory system sees (``Conversation``, ``Session``, ``Turn``,
``Question``) and returns (``Memory``), the ``MemorySystem`` protocol, the results
(``QuestionResult``, ``Prediction``) and the benchmark protocol for third-party
benchmarks (``Benchmark``, ``CategoryInfo``, ``Dataset``, ``LoadRequest``). Metrics live in
``pytest_memeval.metrics``; everything pytest-specific in ``pytest_memeval.plugin``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .benchmarks import Benchmark, CategoryInfo, Dataset, LoadRequest
    from .errors import AdapterError, DatasetError, JudgeError, MemevalError
    from .records import (
        Conversation,
        Memory,
        Prediction,
        Question,
        QuestionResult,
        Session,
        Turn,
    )
    from .systems import MemorySystem

#: public name -> the module defining it, imported on first use (PEP 562): the pytest11 plugin
#: imports this package on every pytest run, with or without --memeval
_EXPORTS = {
    **dict.fromkeys(("Benchmark", "CategoryInfo", "Dataset", "LoadRequest"), ".benchmarks"),
    **dict.fromkeys(("AdapterError", "DatasetError", "JudgeError", "MemevalError"), ".errors"),
    **dict.fromkeys(
        ("Conversation", "Memory", "Prediction", "Question", "QuestionResult", "Session", "Turn"),
        ".records",
    ),
    "MemorySystem": ".systems",
}

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(import_module(module, __name__), name)
        globals()[name] = value
        return value
    if name == "Score":  # never produced or consumed by the plugin; kept importable for now
        import warnings

        from . import records

        warnings.warn(
            "pytest_memeval.Score is deprecated and unused (scores are plain floats in "
            "QuestionResult.scores); it will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        return records.Score
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AdapterError",
    "Benchmark",
    "CategoryInfo",
    "Conversation",
    "Dataset",
    "DatasetError",
    "JudgeError",
    "LoadRequest",
    "MemevalError",
    "Memory",
    "MemorySystem",
    "Prediction",
    "Question",
    "QuestionResult",
    "Session",
    "Turn",
    "__version__",
]
