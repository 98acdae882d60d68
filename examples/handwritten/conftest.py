"""A memory system written as a conftest fixture (run: see test_agent_flow.py)."""

from __future__ import annotations

import pytest

from pytest_memeval import Conversation, Memory, Question


class KeywordMemory:
    """Keeps every turn; search ranks turns by words shared with the question."""

    def __init__(self) -> None:
        self.memories: list[Memory] = []

    def reset(self) -> None:
        self.memories = []

    def ingest(self, conversation: Conversation) -> None:
        self.memories = [
            Memory(text=f"{t.speaker}: {t.text}", id=t.id, date=s.date, source_ids=(t.id, s.id))
            for s in conversation.sessions_by_date()
            for t in s.turns
        ]

    def search(self, question: Question, k: int) -> list[Memory]:
        words = {w.strip("?.,!").lower() for w in question.question.split()}
        scored = [
            (len(words & {w.strip("?.,!").lower() for w in m.text.split()}), -i, m)
            for i, m in enumerate(self.memories)
        ]
        scored.sort(reverse=True)
        return [m for score, _, m in scored[:k] if score > 0]


@pytest.fixture(scope="session")
def keyword_memory() -> KeywordMemory:
    return KeywordMemory()
