"""Memory systems for the contract tests (``--memeval-contract``): a sound one and one breaking
each property. Plain module: the unit tests import it, the end-to-end tests copy its source into
their pytester folder (as ``contract_systems.py``) and expose the classes as conftest fixtures."""

from __future__ import annotations

import random
import threading
import time
from typing import Any, ClassVar

from pytest_memeval import Conversation, Memory, Question

#: the contract's items, in order (``run.contract_kit.PROPERTIES``; a unit test checks the two
#: agree): the end-to-end tests name them without importing the kit
PROPERTIES = (
    "isolation",
    "determinism",
    "top-k",
    "thread-safe",
    "dump",
    "plain-values",
    "empty-question",
    "unicode",
    "scale",
)


class Sound:
    """Word-overlap search over the turns: isolated, deterministic, thread-safe, with dump."""

    thread_safe = True

    def __init__(self) -> None:
        self.conversation_id = ""
        self.turns: list[Memory] = []

    def reset(self) -> None:
        self.turns = []

    def ingest(self, conversation: Conversation) -> None:
        self.conversation_id = conversation.id
        self.turns = [
            Memory(
                f"{turn.speaker}: {turn.text}",
                id=turn.id,
                date=session.date,
                source_ids=(turn.id, session.id),
            )
            for session, turn in conversation.turns()
        ]

    def _store(self) -> list[Memory]:
        return self.turns

    def search(self, question: Question, k: int) -> list[Memory]:
        words = set(question.question.lower().split())
        ranked = sorted(
            enumerate(self._store()),
            key=lambda p: (-len(words & set(p[1].text.lower().split())), p[0]),
        )
        return [m for _, m in ranked[:k]]

    def dump(self, conversation_id: str) -> list[Memory]:
        return list(self.turns) if conversation_id == self.conversation_id else []


class SharedList(Sound):
    """Keeps every conversation's memories in one class-level list: breaks isolation."""

    everything: ClassVar[list[Memory]] = []

    def ingest(self, conversation: Conversation) -> None:
        super().ingest(conversation)
        SharedList.everything.extend(self.turns)

    def _store(self) -> list[Memory]:
        return SharedList.everything


class Shuffled(Sound):
    """Shuffles what it returns: breaks determinism."""

    def search(self, question: Question, k: int) -> list[Memory]:
        found = list(self.turns)
        random.shuffle(found)
        return found[:k]


class DeclaredRandom(Shuffled):
    """Shuffles, and says so."""

    deterministic = False


class TooMany(Sound):
    """Returns k + 1 memories."""

    def search(self, question: Question, k: int) -> list[Memory]:
        return self.turns[: k + 1]


class ForeignIds(Sound):
    """Gives source ids no turn of the conversation has."""

    def search(self, question: Question, k: int) -> list[Memory]:
        return [Memory(m.text, source_ids=("X9:99",)) for m in super().search(question, k)]


class Racy(Sound):
    """Claims thread_safe but keeps the question being searched on the instance."""

    def __init__(self) -> None:
        super().__init__()
        self.current: Question | None = None
        self.lock = threading.Lock()

    def search(self, question: Question, k: int) -> list[Memory]:
        self.current = question
        time.sleep(0.002)
        assert self.current is not None
        return super().search(self.current, k)


class LeakyDump(Sound):
    """dump() lists every conversation it ever saw, and reset() forgets nothing."""

    seen: ClassVar[list[Memory]] = []

    def ingest(self, conversation: Conversation) -> None:
        super().ingest(conversation)
        LeakyDump.seen.extend(self.turns)

    def dump(self, conversation_id: str) -> list[Memory]:
        return list(LeakyDump.seen)


class DictResult(Sound):
    """Returns a mapping instead of a ranked list."""

    def search(self, question: Question, k: int) -> Any:
        return {m.id: m for m in super().search(question, k)}


class EmptyQuestionCrash(Sound):
    """Fails on an empty question."""

    def search(self, question: Question, k: int) -> list[Memory]:
        if not question.question.strip():
            raise ValueError("empty query")
        return super().search(question, k)


class AsciiOnly(Sound):
    """Mangles what is not ASCII."""

    def ingest(self, conversation: Conversation) -> None:
        super().ingest(conversation)
        self.turns = [
            Memory(m.text.encode("ascii", "replace").decode().replace("?", "\ufffd"), id=m.id)
            for m in self.turns
        ]


class Slow(Sound):
    """Takes a while per turn."""

    def ingest(self, conversation: Conversation) -> None:
        time.sleep(0.01 * sum(1 for _ in conversation.turns()))  # 5 s for the scale item
        super().ingest(conversation)


class Hungry(Sound):
    """Keeps 40 MiB per conversation."""

    def ingest(self, conversation: Conversation) -> None:
        super().ingest(conversation)
        self.ballast = bytearray(b"x" * (40 * 2**20))


#: what the pytester runs' conftest exposes (fixture name -> class)
CONFTEST = """
import pytest

import contract_systems as cs


@pytest.fixture(scope="session")
def sound():
    return cs.Sound()


@pytest.fixture
def shared():
    return cs.SharedList


@pytest.fixture
def shuffled():
    return cs.Shuffled


@pytest.fixture
def hungry():
    return cs.Hungry


@pytest.fixture
def slow():
    return cs.Slow
"""
