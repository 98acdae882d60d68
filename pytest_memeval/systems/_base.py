"""The memory-system protocol (fixed public surface)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..records import Conversation, Memory, Question

__all__ = [
    "NO_DUMP_REASON",
    "STORED_META",
    "AnsweringSystem",
    "DumpingSystem",
    "MemorySystem",
    "stored_memories",
]


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system under test.

    ``ingest`` receives the whole conversation once (sessions in date order via
    ``conversation.sessions_by_date()``); ``search`` returns up to ``k`` memories (``Memory`` objects
    or plain strings), best first. Optional methods: ``answer(question) -> str`` (the answerer is then
    skipped), ``reset()`` (called before the instance is dropped) and ``wait_ready(timeout) ->
    bool`` (called once after ``ingest``, for services that index asynchronously: return True when
    searches will see everything ingested, False if that did not happen within ``timeout``
    seconds; its time is reported as the ``ready`` latency, apart from ``ingest``) and
    ``dump(conversation_id) -> Sequence[Memory | str]`` (everything the system *stored* for that
    conversation, for suites that score memory extraction and updates, such as HaluMem; a system
    without it gets those metrics UNSCORED with that reason, never zero: :func:`stored_memories`).
    Optional attribute: ``thread_safe = True`` (``search`` / ``answer`` may run on several threads
    at once: the pipeline then searches up to its window of questions concurrently; without it,
    searches run one at a time on the main thread).
    """

    def ingest(self, conversation: Conversation) -> None: ...

    def search(self, question: Question, k: int) -> Sequence[Memory | str]: ...


@runtime_checkable
class AnsweringSystem(MemorySystem, Protocol):
    def answer(self, question: Question) -> str: ...


@runtime_checkable
class DumpingSystem(MemorySystem, Protocol):
    """A memory system that can list what it stored (the optional ``dump`` capability)."""

    def dump(self, conversation_id: str) -> Sequence[Memory | str]: ...


#: the UNSCORED reason of the extraction / update metrics for a system without ``dump``
NO_DUMP_REASON = (
    "the system has no dump(conversation_id) method, so what it stored cannot be scored"
)

#: ``Question.meta`` key of the question that carries its conversation's storage judgments (the
#: first question of each conversation and system the run asks, in a suite whose questions say
#: ``meta["dump"]``): ``(conversation, the memories dump returned)``; set by ``run.question`` on
#: the question handed to the judges, never stored in a result
STORED_META = "memeval_stored"


def stored_memories(system: object, conversation_id: str) -> tuple[Memory, ...] | None:
    """What ``system`` stored for ``conversation_id`` through its optional ``dump`` (plain
    strings become ``Memory(text=...)``); None when the system has no ``dump`` (the caller marks
    the metrics UNSCORED with :data:`NO_DUMP_REASON`). A ``dump`` returning something other than
    a sequence of memories or strings is a TypeError naming the system."""
    dump = getattr(system, "dump", None)
    if not callable(dump):
        return None
    got = dump(conversation_id)
    if isinstance(got, (str, bytes)) or not isinstance(got, Sequence):
        raise TypeError(
            f"{type(system).__name__}.dump({conversation_id!r}) returned "
            f"{type(got).__name__}; it must return a list of Memory objects or strings"
        )
    out: list[Memory] = []
    for entry in got:
        if isinstance(entry, str):
            out.append(Memory(text=entry))
        elif isinstance(entry, Memory):
            out.append(entry)
        else:
            raise TypeError(
                f"{type(system).__name__}.dump({conversation_id!r}) returned a "
                f"{type(entry).__name__} entry; entries must be Memory objects or strings"
            )
    return tuple(out)
