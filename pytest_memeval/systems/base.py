"""The memory-system protocol (fixed public surface)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..records import Conversation, Memory, Question

__all__ = ["AnsweringSystem", "MemorySystem"]


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system under test.

    ``ingest`` receives the whole conversation once (sessions in date order via
    ``conversation.sessions_by_date()``); ``search`` returns up to ``k`` memories (``Memory`` objects
    or plain strings), best first. Optional methods: ``answer(question) -> str`` (the answerer is then
    skipped), ``reset()`` (called before the instance is dropped) and ``wait_ready(timeout) ->
    bool`` (called once after ``ingest``, for services that index asynchronously: return True when
    searches will see everything ingested, False if that did not happen within ``timeout``
    seconds; its time is reported as the ``ready`` latency, apart from ``ingest``).
    """

    def ingest(self, conversation: Conversation) -> None: ...

    def search(self, question: Question, k: int) -> Sequence[Memory | str]: ...


@runtime_checkable
class AnsweringSystem(MemorySystem, Protocol):
    def answer(self, question: Question) -> str: ...
