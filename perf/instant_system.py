"""Memory systems for ``perf/run.py``: an instant one and a slow one, both answering from a dict.

``perf/run.py`` copies this file into a temporary project next to ``answers.json`` (a JSON object
``{question_id: answer}`` it precomputes from the LoCoMo file) and names the factories on the
command line as import paths (``python -m pytest`` puts the project folder on ``sys.path``):

* ``--memsys=instant_system:instant`` - ``ingest`` and ``search`` do nothing, ``answer`` is one
  dict look-up: whatever the run costs beyond that is the harness (collection, items, metrics,
  reports).
* ``--memsys=instant_system:slow`` - ``ingest`` sleeps ``INGEST_SECONDS`` (1 s) per conversation
  and ``answer`` sleeps ``ANSWER_SECONDS`` (20 ms) per question: the xdist scaling workload
  (environment overrides: ``MEMEVAL_PERF_INGEST_SECONDS``, ``MEMEVAL_PERF_ANSWER_SECONDS``).

Sleeping, not spinning, so the slow system costs wall time but no CPU (two xdist workers on a
two-core machine do not compete for it).
"""

from __future__ import annotations

import json
import os
import time
from functools import lru_cache
from pathlib import Path

from pytest_memeval.records import Conversation, Memory, Question

__all__ = [
    "ANSWERS_FILE",
    "ANSWER_SECONDS",
    "INGEST_SECONDS",
    "InstantSystem",
    "SlowSystem",
    "answers",
    "instant",
    "slow",
]

#: the answer map, next to this module
ANSWERS_FILE = "answers.json"
INGEST_SECONDS = 1.0
ANSWER_SECONDS = 0.02


@lru_cache(maxsize=4)
def answers(path: Path) -> dict[str, str]:
    """The ``{question_id: answer}`` map in ``path`` (read once per process)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise TypeError(f"{path}: expected a JSON object {{question_id: answer}}")
    return {str(k): str(v) for k, v in data.items()}


def _default_answers() -> dict[str, str]:
    path = Path(__file__).resolve().with_name(ANSWERS_FILE)
    return answers(path) if path.is_file() else {}


class InstantSystem:
    """Ingests nothing, retrieves nothing, answers with one dict look-up."""

    def __init__(self, table: dict[str, str] | None = None) -> None:
        self._answers = _default_answers() if table is None else table

    def ingest(self, conversation: Conversation) -> None:
        return None

    def search(self, question: Question, k: int) -> list[Memory]:
        return []

    def answer(self, question: Question) -> str:
        return self._answers.get(question.id, "")


class SlowSystem(InstantSystem):
    """:class:`InstantSystem` with a fixed sleep per ingest and per answer."""

    def __init__(
        self,
        table: dict[str, str] | None = None,
        *,
        ingest_seconds: float = INGEST_SECONDS,
        answer_seconds: float = ANSWER_SECONDS,
    ) -> None:
        super().__init__(table)
        self.ingest_seconds = ingest_seconds
        self.answer_seconds = answer_seconds

    def ingest(self, conversation: Conversation) -> None:
        time.sleep(self.ingest_seconds)

    def answer(self, question: Question) -> str:
        time.sleep(self.answer_seconds)
        return super().answer(question)


def instant() -> InstantSystem:
    """Factory for ``--memsys=instant_system:instant``."""
    return InstantSystem()


def slow() -> SlowSystem:
    """Factory for ``--memsys=instant_system:slow``; ``$MEMEVAL_PERF_INGEST_SECONDS`` and
    ``$MEMEVAL_PERF_ANSWER_SECONDS`` override the sleeps (``perf/run.py --quick`` shortens them)."""
    return SlowSystem(
        ingest_seconds=float(os.environ.get("MEMEVAL_PERF_INGEST_SECONDS", INGEST_SECONDS)),
        answer_seconds=float(os.environ.get("MEMEVAL_PERF_ANSWER_SECONDS", ANSWER_SECONDS)),
    )
