"""Hook specifications of pytest-memeval (added in ``pytest_addhooks``).

Every policy is an ordinary hook; the plugin's own behaviour is implemented as hookimpls that a
conftest.py can override (``firstresult`` hooks: a conftest implementation runs first and wins) or
extend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..records import Prediction, Question, QuestionResult
    from ..report import Summary


@pytest.hookspec(firstresult=True)
def pytest_memeval_make_system(config: pytest.Config, name: str) -> Any:
    """Return a memory-system factory (a zero-argument callable returning a MemorySystem) for
    ``name``, or a list of ``(label, factory)`` pairs when one name yields several systems, or None
    to let the next implementation try. Conftest fixtures are resolved before this hook."""


@pytest.hookspec
def pytest_memeval_question_scores(
    config: pytest.Config, benchmark: str, question: Question, prediction: Prediction
) -> dict[str, float | None] | None:
    """Return extra metrics for one question's prediction; all returned dicts are merged into the
    question's scores (later implementations win on a clash). The built-in offline metrics are
    themselves an implementation of this hook."""


@pytest.hookspec
def pytest_memeval_result(config: pytest.Config, result: QuestionResult) -> None:
    """Called on the worker that ran the question, with its finished result (may be edited)."""


@pytest.hookspec
def pytest_memeval_modify_summary(config: pytest.Config, summary: Summary) -> None:
    """Edit the aggregated summary (on the controller) before any report is rendered."""
