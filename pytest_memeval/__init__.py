"""pytest-memeval: AI-agent memory benchmarks as pytest test suites.

The public API: the records a memory system sees (``Conversation``, ``Session``, ``Turn``,
``Question``) and returns (``Memory``), the ``MemorySystem`` protocol, the results
(``QuestionResult``, ``Prediction``, ``Score``) and the benchmark protocol for third-party
benchmarks (``Benchmark``, ``CategoryInfo``, ``Dataset``, ``LoadRequest``). Metrics live in
``pytest_memeval.metrics``; everything pytest-specific in ``pytest_memeval.plugin``.
"""

from __future__ import annotations

from .benchmarks.base import Benchmark, CategoryInfo, Dataset, LoadRequest
from .errors import AdapterError, DatasetError, JudgeError, MemevalError
from .records import (
    Conversation,
    Memory,
    Prediction,
    Question,
    QuestionResult,
    Score,
    Session,
    Turn,
)
from .systems.base import MemorySystem

__version__ = "0.1.0"

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
    "Score",
    "Session",
    "Turn",
    "__version__",
]
