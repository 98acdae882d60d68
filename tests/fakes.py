"""Fakes shared by the test suite (one copy each): a result builder for the pure-code tests and
conftest sources for pytester runs."""

from __future__ import annotations

from typing import Any

from pytest_memeval.records import STATUS_CORRECT, STATUS_WRONG, QuestionResult


def make_result(
    question_id: str,
    *,
    scores: dict[str, float | None] | None = None,
    status: str | None = None,
    system: str = "bm25",
    category: str = "single-hop",
    conversation_id: str | None = None,
    benchmark: str = "locomo",
    **fields: Any,
) -> QuestionResult:
    """A finished result with neutral text fields. ``status`` defaults to CORRECT when ``f1``
    reaches 0.5, else WRONG; ``conversation_id`` defaults to the question id (one question per
    cluster, so cluster statistics reduce to question-level ones)."""
    scores = dict(scores or {})
    if status is None:
        status = STATUS_CORRECT if (scores.get("f1") or 0.0) >= 0.5 else STATUS_WRONG
    values: dict[str, Any] = {
        "benchmark": benchmark,
        "system": system,
        "question_id": question_id,
        "conversation_id": question_id if conversation_id is None else conversation_id,
        "category": category,
        "category_id": None,
        "question": "q?",
        "gold": "g",
        "prediction": "p",
        "status": status,
        "scores": scores,
    }
    values.update(fields)
    return QuestionResult(**values)


#: a conftest whose `counting` system is bm25 logging every searched question id to
#: answered.log (MEMEVAL_SLOW=seconds slows each search down)
COUNTING_CONFTEST = """
import os, time, pytest
from pytest_memeval.systems.builtin import BM25System

LOG = os.path.join(os.path.dirname(__file__), "answered.log")

class Counting(BM25System):
    def search(self, question, k):
        with open(LOG, "a") as fh:
            fh.write(question.id + "\\n")
        if os.environ.get("MEMEVAL_SLOW"):
            time.sleep(float(os.environ["MEMEVAL_SLOW"]))
        return super().search(question, k)

@pytest.fixture(scope="session")
def counting():
    return Counting()
"""
