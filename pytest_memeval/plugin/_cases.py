"""Pytest glue: hand-written tests that ask for ``memeval_case`` (split from ``items.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ..records import Question
from ..run import SystemRef

__all__ = ["MemevalCase", "case_conversation", "case_flow", "case_of"]


@dataclass(frozen=True)
class MemevalCase:
    """The parameter of a hand-written test asking for ``memeval_case``."""

    benchmark: str
    system: SystemRef
    question: Question

    @property
    def id(self) -> str:
        """``<benchmark>/<conversation>/<question>[<system>]``: carries the conversation so the
        xdist scheduler keeps a conversation's hand-written cases on one worker."""
        q = self.question
        return f"{self.benchmark}/{q.conversation_id}/{q.id}[{self.system.label}]"


def case_conversation(item: pytest.Item) -> tuple[str, str] | None:
    case = case_of(item)
    return (case.benchmark, case.question.conversation_id) if case is not None else None


def case_flow(item: pytest.Item) -> str:
    """A hand-written test's flow name: its function name without parameters."""
    return str(getattr(item, "originalname", None) or item.name.partition("[")[0])


def case_of(item: pytest.Item) -> MemevalCase | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    case = callspec.params.get("memeval_case")
    return case if isinstance(case, MemevalCase) else None
