"""Run level, pytest-free: the memory-system half of a question (:func:`retrieve`: search, or the
system's own answer), normalised at this boundary and cut to the context budget. Split out of
``run.question`` (issue 26); importable from there too."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ..records import Memory, Prediction, Question
from ..systems import STORED_META, materialise, normalise_answer, normalise_memories
from ._budget import context_for_answer
from ._ingest import IngestedSystem, call_with_timeout, record_stored

__all__ = ["Retrieval", "clean_text", "retrieve"]


@dataclass
class Retrieval:
    """What the memory system gave one question (the main-thread half of its path): the memories
    for the answerer, or the system's own answer, with the search (or own-answer) latency."""

    memories: tuple[Memory, ...]
    latency: dict[str, float]
    #: the system answered itself (``answer(question)``): no answerer call
    prediction: Prediction | None = None
    #: this question carries its conversation's storage judgments: the question handed to the
    #: judges, with ``meta[STORED_META] = (conversation, stored memories)``
    carrier: Question | None = None


def retrieve(
    ingested: IngestedSystem,
    question: Question,
    *,
    k: int,
    timeout: float | None = None,
    details: dict[str, Any] | None = None,
    budget: int | None = None,
) -> Retrieval:
    """Search (or let a system that answers itself answer) and time it: the memory-system half of
    :func:`run_question`, on the caller's thread: the main thread's, in order, unless the system
    declares ``thread_safe = True`` (then :func:`llm_stage` calls it on the pipeline's thread)."""
    __tracebackhide__ = True
    system = ingested.system
    name = ingested.name or type(system).__name__
    latency: dict[str, float] = {"ingest": ingested.ingest_seconds}
    if ingested.ready_seconds is not None:
        latency["ready"] = ingested.ready_seconds
    own_answer = getattr(system, "answer", None)
    memories: tuple[Memory, ...] = ()
    carrier = None
    carried = details is not None and bool(question.meta.get("dump"))
    if carried and details is not None:
        carried = record_stored(ingested, question.conversation_id, timeout, details)
    if carried:
        conversation = ingested.conversation
        if conversation is not None and ingested.stored is not None:
            payload = (conversation, ingested.stored)
            carrier = replace(question, meta={**question.meta, STORED_META: payload})
    if not callable(own_answer):
        start = time.perf_counter()
        found = call_with_timeout(
            lambda: materialise(system.search(question, k)), timeout, "search()"
        )
        latency["search"] = time.perf_counter() - start
        memories = normalise_memories(found, system=name, question_id=question.id)
        returned = len(memories)
        truncated = returned > k and getattr(system, "ignores_top_k", False) is not True
        if truncated:
            memories = memories[:k]
        if details is not None:
            details["memories_returned"] = returned
            if truncated:
                details["truncated"] = True
        memories = tuple(_clean_memory(m) for m in memories)
        memories, context = context_for_answer(memories, budget)
        if details is not None:
            details.update(context)
        return Retrieval(memories, latency, carrier=carrier)
    start = time.perf_counter()
    text = call_with_timeout(lambda: own_answer(question), timeout, "answer()")
    latency["answer"] = time.perf_counter() - start
    answer = normalise_answer(text, system=name, question_id=question.id)
    if details is not None:
        details["memories_returned"] = 0
    prediction = Prediction(text=clean_text(answer), memories=(), answered_by="system")
    return Retrieval((), latency, prediction, carrier)


def clean_text(text: str) -> str:
    """Text a memory system or model produced, made encodable: a lone UTF-16 surrogate becomes
    its ``\\udxxx`` escape (reports are UTF-8 files)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _clean_memory(memory: Memory) -> Memory:
    cleaned = clean_text(memory.text)
    return memory if cleaned is memory.text else replace(memory, text=cleaned)
