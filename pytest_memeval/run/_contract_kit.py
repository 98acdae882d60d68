"""The MemorySystem contract, pytest-free: the properties every adapter is held to
(``pytest --memsys=NAME --memeval-contract``; ``plugin/_contract.py`` makes each one an item).

Each property is a function ``check(source, limits)`` that returns when the property holds,
raises :class:`ContractViolation` with one sentence naming the property and its evidence when it
does not, and :class:`ContractSkip` when it does not apply (a system that declares itself
non-deterministic, has no ``dump``, does not claim ``thread_safe``). The conversations are the demo
benchmark's and constructed ones (``contract_data.py``); no benchmark file is read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import AdapterError
from ..records import Conversation, Memory, Question
from ..systems import (
    MemorySystem,
    ensure_memory_system,
    materialise,
    normalise_answer,
    normalise_memories,
    stored_memories,
)
from ._contract_data import (
    MARKER,
    SCALE_SESSIONS,
    SCALE_TURNS_PER_SESSION,
    conversation_ids,
    demo_conversation,
    demo_questions,
    make_question,
    marked_conversation,
    memories_key,
    peak_growth,
    scale_conversation,
    show,
    unicode_conversation,
)
from ._ingest import call_with_timeout, is_factory, wait_until_ready

__all__ = [
    "DEFAULT_MEMORY_MIB",
    "DEFAULT_SCALE_TIMEOUT",
    "MARKER",
    "PROPERTIES",
    "ContractLimits",
    "ContractSkip",
    "ContractViolation",
    "SystemSource",
    "check_property",
]

#: seconds the LongMemEval-S-sized ingest may take when --memeval-timeout is not given
DEFAULT_SCALE_TIMEOUT = 600.0
#: MiB the process may grow by while ingesting it (--memeval-contract-memory)
DEFAULT_MEMORY_MIB = 1024


class ContractViolation(Exception):
    """A property does not hold: the message is the one sentence the user sees."""


class ContractSkip(Exception):
    """A property does not apply to this system: the message is the reason."""


@dataclass(frozen=True)
class ContractLimits:
    #: seconds one memory-system call may take (``--memeval-timeout``; None: no limit)
    timeout: float | None = None
    #: seconds the LongMemEval-S-sized ingest may take
    scale_timeout: float = DEFAULT_SCALE_TIMEOUT
    #: MiB the process may grow by during that ingest
    memory_mib: int = DEFAULT_MEMORY_MIB


class SystemSource:
    """Hands out the system under test ready for a new conversation, as a run does: a factory
    (a class, a zero-argument callable) gives a fresh instance; an object that serves several
    conversations (a session-scoped fixture) gets ``reset()`` before its next ``ingest``.
    ``last`` is shared by every property of one process (the object each system gave last)."""

    def __init__(
        self,
        name: str,
        obtain: Callable[[], object],
        last: dict[str, object],
        timeout: float | None = None,
    ) -> None:
        self.name = name
        self.obtain = obtain
        self.last = last
        self.timeout = timeout
        #: what a property measured (name -> value), reported beside its verdict
        self.figures: dict[str, float] = {}

    def fresh(self, prop: str) -> MemorySystem:
        obj = _guard(prop, f"{self.name}: making the system", self.obtain)
        if is_factory(obj):
            obj = _guard(prop, f"{self.name}: its factory", obj)
        elif self.last.get(self.name) is obj:
            reset = getattr(obj, "reset", None)
            if callable(reset):
                _guard(prop, "reset()", reset)
        self.last[self.name] = obj
        try:
            return ensure_memory_system(obj, self.name)
        except AdapterError as exc:
            raise ContractViolation(f"{prop}: {exc}") from None

    def ingested(
        self, prop: str, conversation: Conversation, timeout: float | None = None
    ) -> MemorySystem:
        """A fresh system with ``conversation`` ingested (and ``wait_ready`` done)."""
        system = self.fresh(prop)
        limit = self.timeout if timeout is None else timeout
        what = f"ingest() of conversation {conversation.id}"
        _guard(
            prop, what, lambda: call_with_timeout(lambda: system.ingest(conversation), limit, what)
        )
        _guard(prop, "wait_ready()", lambda: wait_until_ready(system, self.name, limit))
        return system

    def search(
        self, prop: str, system: MemorySystem, question: Question, k: int
    ) -> tuple[Memory, ...]:
        """``search`` under the timeout, normalised as the run normalises it."""
        what = f"search() of question {question.id}"
        found = _guard(
            prop,
            what,
            lambda: call_with_timeout(
                lambda: materialise(system.search(question, k)), self.timeout, what
            ),
        )
        try:
            return normalise_memories(found, system=self.name, question_id=question.id)
        except AdapterError as exc:
            raise ContractViolation(f"{prop}: {exc}") from None


def _guard(prop: str, what: str, fn: Callable[[], Any]) -> Any:
    """``fn()``; an exception it raises is the property's violation, naming the call."""
    try:
        return fn()
    except (ContractViolation, ContractSkip):
        raise
    except Exception as exc:
        raise ContractViolation(f"{prop}: {what} raised {type(exc).__name__}: {exc}") from None


# ----------------------------------------------------------------------------------------------
# the properties


def check_isolation(source: SystemSource, limits: ContractLimits) -> None:
    """Nothing ingested for one conversation is returned for another."""
    prop = "isolation"
    a = marked_conversation("contract-a", marker=MARKER)
    b = marked_conversation("contract-b", marker=None)
    source.ingested(prop, a)
    system = source.ingested(prop, b)
    only_a = conversation_ids(a) - conversation_ids(b)
    for text in (f"What is the code word {MARKER}?", MARKER):
        question = make_question(b.id, "contract-b-marker", text)
        found = source.search(prop, system, question, 10)
        leaked = [m for m in found if MARKER in m.text.lower() or set(m.source_ids) & only_a]
        if leaked:
            raise ContractViolation(
                f"{prop}: searching conversation {b.id} for {MARKER!r} after ingesting "
                f"{a.id} first returned {len(leaked)} memory(ies) of {a.id}: {show(leaked)} "
                "(keep each conversation's memories in its instance, or clear them in reset())"
            )


def check_determinism(source: SystemSource, limits: ContractLimits) -> None:
    """Two ingests of the same conversation give the same results."""
    prop = "determinism"
    system = source.fresh(prop)
    if getattr(system, "deterministic", True) is False:
        raise ContractSkip(f"{prop}: the system declares deterministic = False")
    conversation = demo_conversation("demo-1")
    questions = demo_questions("demo-1")
    runs = []
    for _ in range(2):
        system = source.ingested(prop, conversation)
        runs.append([source.search(prop, system, q, 5) for q in questions])
    for q, first, second in zip(questions, runs[0], runs[1], strict=True):
        if memories_key(first) != memories_key(second):
            raise ContractViolation(
                f"{prop}: two ingests of conversation {conversation.id} returned different "
                f"memories for question {q.id}: first {show(first)}, then {show(second)} "
                "(sort ties by a stable key, seed any randomness, or declare deterministic = False)"
            )


def check_top_k(source: SystemSource, limits: ContractLimits) -> None:
    """At most ``k`` memories (unless ``ignores_top_k = True``), with source ids of the
    conversation searched."""
    prop = "top-k and source ids"
    conversation = demo_conversation("demo-1")
    system = source.ingested(prop, conversation)
    ignores = getattr(system, "ignores_top_k", False) is True
    valid = conversation_ids(conversation)
    for q in demo_questions("demo-1"):
        for k in (1, 2, 5):
            found = source.search(prop, system, q, k)
            if len(found) > k and not ignores:
                raise ContractViolation(
                    f"{prop}: search(question {q.id}, k={k}) returned {len(found)} memories, more "
                    "than k (return at most k, or declare ignores_top_k = True)"
                )
            bad = sorted({i for m in found for i in m.source_ids} - valid)
            if bad:
                raise ContractViolation(
                    f"{prop}: search(question {q.id}, k={k}) returned source ids {bad[:5]} that "
                    f"are no turn or session id of conversation {conversation.id} (source_ids "
                    "name the turns, e.g. 'D1:3', or sessions, e.g. 'S1', a memory came from)"
                )


def check_thread_safe(source: SystemSource, limits: ContractLimits) -> None:
    """A ``thread_safe = True`` claim holds: concurrent searches equal sequential ones."""
    prop = "thread safety"
    system = source.fresh(prop)
    if getattr(system, "thread_safe", False) is not True:
        raise ContractSkip(
            f"{prop}: the system does not declare thread_safe = True (searched one at a time)"
        )
    conversation = demo_conversation("demo-1")
    system = source.ingested(prop, conversation)
    questions = demo_questions("demo-1")
    sequential = {q.id: source.search(prop, system, q, 5) for q in questions}
    work = [q for _ in range(4) for q in questions]
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="memeval-contract") as pool:
        results = list(pool.map(lambda q: (q, source.search(prop, system, q, 5)), work))
    for q, found in results:
        if memories_key(found) != memories_key(sequential[q.id]):
            raise ContractViolation(
                f"{prop}: with thread_safe = True, concurrent searches of question {q.id} "
                f"returned {show(found)} where a sequential search returned "
                f"{show(sequential[q.id])} (guard shared state with a lock, or drop "
                "thread_safe = True)"
            )


def check_dump(source: SystemSource, limits: ContractLimits) -> None:
    """``dump()`` returns this conversation's memories, and nothing after a reset."""
    prop = "dump"
    probe = source.fresh(prop)
    if not callable(getattr(probe, "dump", None)):
        raise ContractSkip(f"{prop}: the system offers no dump(conversation_id)")
    a = marked_conversation("contract-a", marker=MARKER)
    b = marked_conversation("contract-b", marker=None)
    source.ingested(prop, a)
    system = source.ingested(prop, b)
    stored = _dump(prop, source, system, b.id)
    if not stored:
        q = make_question(b.id, "contract-b-lighthouse", "What is the code word for the locker?")
        found = source.search(prop, system, q, 5)
        if found:
            raise ContractViolation(
                f"{prop}: dump({b.id!r}) returned nothing right after conversation {b.id} was "
                f"ingested, yet search() returned {len(found)} memories from it (dump lists "
                "what the system stored for that conversation)"
            )
    only_a = conversation_ids(a) - conversation_ids(b)
    leaked = [m for m in stored if MARKER in m.text.lower() or set(m.source_ids) & only_a]
    if leaked:
        raise ContractViolation(
            f"{prop}: dump({b.id!r}) returned {len(leaked)} memory(ies) of conversation {a.id}: "
            f"{show(leaked)} (dump lists only the conversation asked for)"
        )
    reset = getattr(system, "reset", None)
    if callable(reset):
        _guard(prop, "reset()", reset)
        after = _dump(prop, source, system, b.id)
        if after:
            raise ContractViolation(
                f"{prop}: dump({b.id!r}) still returned {len(after)} memory(ies) after reset(): "
                f"{show(after)} (reset() forgets what was stored)"
            )


def _dump(prop: str, source: SystemSource, system: MemorySystem, cid: str) -> tuple[Memory, ...]:
    what = f"dump({cid!r})"
    got = _guard(
        prop,
        what,
        lambda: call_with_timeout(lambda: stored_memories(system, cid), source.timeout, what),
    )
    stored = tuple(got or ())
    try:
        return normalise_memories(stored, system=source.name, question_id=what)
    except AdapterError as exc:
        raise ContractViolation(f"{prop}: {exc}") from None


def _plain(prop: str, memories: Sequence[Memory], where: str) -> None:
    """The normalised memories serialise to JSON (the results store, xdist's wire)."""
    try:
        json.dumps(
            [
                {
                    "text": m.text,
                    "id": m.id,
                    "date": m.date.isoformat() if isinstance(m.date, datetime) else m.date,
                    "score": m.score,
                    "source_ids": list(m.source_ids),
                    "speaker": m.speaker,
                }
                for m in memories
            ],
            ensure_ascii=False,
        ).encode("utf-8")
    except (TypeError, ValueError, UnicodeError) as exc:
        raise ContractViolation(f"{prop}: {where} does not serialise to JSON: {exc}") from None


def _answer(prop: str, source: SystemSource, system: MemorySystem, q: Question) -> None:
    answer = getattr(system, "answer", None)
    if not callable(answer):
        return
    what = f"answer() of question {q.id}"
    value = _guard(prop, what, lambda: call_with_timeout(lambda: answer(q), source.timeout, what))
    try:
        text = normalise_answer(value, system=source.name, question_id=q.id)
        text.encode("utf-8")
    except (AdapterError, UnicodeError) as exc:
        raise ContractViolation(f"{prop}: {exc}") from None


def check_plain_values(source: SystemSource, limits: ContractLimits) -> None:
    """Answers and memories are plain, serialisable values."""
    prop = "plain values"
    system = source.ingested(prop, demo_conversation("demo-1"))
    for q in demo_questions("demo-1"):
        found = source.search(prop, system, q, 5)
        _plain(prop, found, f"search() of question {q.id}")
        _answer(prop, source, system, q)


def check_empty_question(source: SystemSource, limits: ContractLimits) -> None:
    """The empty question works: no exception, a list of plain values."""
    prop = "empty question"
    conversation = demo_conversation("demo-1")
    system = source.ingested(prop, conversation)
    for text in ("", "   "):
        q = make_question(conversation.id, "contract-empty", text)
        _plain(prop, source.search(prop, system, q, 5), f"search() of {text!r}")
        _answer(prop, source, system, q)


def check_unicode(source: SystemSource, limits: ContractLimits) -> None:
    """Unicode text (accents, CJK, emoji, right-to-left) is ingested, searched and returned
    intact."""
    prop = "unicode"
    conversation = unicode_conversation()
    system = source.ingested(prop, conversation)
    originals = {t.id: t.text for _, t in conversation.turns()}
    for text in ("Où est le café à Montréal?", "東京の桜", "🐈 🌵", "مرحبا"):
        q = make_question(conversation.id, "contract-unicode", text)
        found = source.search(prop, system, q, 5)
        _plain(prop, found, f"search() of {text!r}")
        for m in found:
            if "\ufffd" in m.text or ("Ã" in m.text and "Ã" not in "".join(originals.values())):
                raise ContractViolation(
                    f"{prop}: search() of {text!r} returned mangled text {m.text[:80]!r} (decode "
                    "and encode as UTF-8)"
                )
        _answer(prop, source, system, q)


def check_scale(source: SystemSource, limits: ContractLimits) -> None:
    """A LongMemEval-S-sized conversation is ingested within the timeout and the memory
    budget, and searched afterwards."""
    prop = "scale"
    conversation = scale_conversation()
    size = (
        f"{SCALE_SESSIONS} sessions, {SCALE_SESSIONS * SCALE_TURNS_PER_SESSION} turns, ~115k tokens"
    )
    start = time.perf_counter()
    try:
        with peak_growth() as grown:
            system = source.ingested(prop, conversation, timeout=limits.scale_timeout)
    except ContractViolation as exc:
        if "did not return within" in str(exc):
            raise ContractViolation(
                f"{prop}: ingesting a LongMemEval-S-sized conversation ({size}) did not finish "
                f"within {limits.scale_timeout:g} s (--memeval-timeout)"
            ) from None
        raise
    seconds = time.perf_counter() - start
    source.figures.update(scale_ingest_seconds=round(seconds, 2), scale_growth_mib=round(grown[0]))
    if grown[0] > limits.memory_mib:
        raise ContractViolation(
            f"{prop}: ingesting a LongMemEval-S-sized conversation ({size}) grew this process by "
            f"{grown[0]:.0f} MiB, over the {limits.memory_mib} MiB budget "
            "(--memeval-contract-memory)"
        )
    q = make_question(
        conversation.id, "contract-scale-q", "What did I say about the piano concert?"
    )
    found = source.search(prop, system, q, 10)
    if len(found) > 10 and getattr(system, "ignores_top_k", False) is not True:
        raise ContractViolation(
            f"{prop}: search(k=10) after the {seconds:.1f} s ingest returned {len(found)} memories"
        )


#: the properties, in the order they run: item name -> check
PROPERTIES: dict[str, Callable[[SystemSource, ContractLimits], None]] = {
    "isolation": check_isolation,
    "determinism": check_determinism,
    "top-k": check_top_k,
    "thread-safe": check_thread_safe,
    "dump": check_dump,
    "plain-values": check_plain_values,
    "empty-question": check_empty_question,
    "unicode": check_unicode,
    "scale": check_scale,
}


def check_property(name: str, source: SystemSource, limits: ContractLimits) -> None:
    """Run one property (a key of :data:`PROPERTIES`)."""
    PROPERTIES[name](source, limits)
