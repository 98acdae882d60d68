"""pytest-memeval: AI-agent memory benchmarks as pytest test suites."""

from __future__ import annotations

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
    "Conversation",
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
