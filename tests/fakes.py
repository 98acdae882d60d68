"""Fakes shared by the test suite (one copy each): a result builder for the pure-code tests and
conftest sources for pytester runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_memeval.llm import ChatMessage, Completion
from pytest_memeval.records import STATUS_CORRECT, STATUS_WRONG, Question, QuestionResult


def make_question(**fields: Any) -> Question:
    """A LoCoMo-like single-hop question (Caroline / Sweden); ``fields`` overrides any field."""
    values: dict[str, Any] = {
        "id": "q1",
        "conversation_id": "c1",
        "category": "single-hop",
        "question": "Where did Caroline move from?",
        "gold": "Sweden",
        "category_id": 4,
    }
    values.update(fields)
    return Question(**values)


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
from pytest_memeval.systems._builtin import BM25System

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


# --------------------------------------------------------------------------- a scripted LLM client


@dataclass(frozen=True)
class Call:
    """One ``complete`` call: the messages and exactly the keywords the caller passed (the
    properties give ``LLMClient.complete``'s defaults for the others)."""

    messages: tuple[ChatMessage, ...]
    kwargs: dict[str, Any]

    @property
    def prompt(self) -> str:
        return "\n".join(m.content for m in self.messages)

    @property
    def temperature(self) -> float:
        return float(self.kwargs.get("temperature", 0.0))

    @property
    def max_tokens(self) -> int | None:
        value = self.kwargs.get("max_tokens", 256)
        return None if value is None else int(value)

    @property
    def run_index(self) -> int:
        return int(self.kwargs.get("run_index", 0))

    @property
    def role(self) -> str:
        return str(self.kwargs.get("role", "judge"))


@dataclass
class ScriptedClient:
    """An ``LLMClient`` without HTTP for the pure-code tests: ``reply`` is the text of every
    completion, or ``reply(prompt, run_index) -> text``; every call is recorded (thread-safe: the
    graded judge calls from a pool)."""

    reply: str | Callable[[str, int], str]
    label: str = "fake:scripted"
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def complete(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Completion:
        call = Call(tuple(messages), dict(kwargs))
        with self._lock:
            self.calls.append(call)
        text = (
            self.reply if isinstance(self.reply, str) else self.reply(call.prompt, call.run_index)
        )
        return Completion(text=text)

    @property
    def prompts(self) -> list[str]:
        return [c.prompt for c in self.calls]
