"""Run level, pytest-free: a memory system ingested for one conversation (:class:`SystemPool`,
one instance per system and conversation), the timeout every memory-system call runs under, and
the storage ``dump`` asked once per conversation (:func:`record_stored`). Split out of
``run.question`` (issue 26); importable from there too."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AdapterError, terminal_safe
from ..records import Conversation, Memory
from ..systems import NO_DUMP_REASON, MemorySystem, ensure_memory_system, stored_memories

__all__ = [
    "READY_TIMEOUT",
    "Factory",
    "IngestedSystem",
    "MemorySystemTimeout",
    "SystemPool",
    "call_with_timeout",
    "dump_failure",
    "is_factory",
    "is_thread_safe",
    "record_stored",
    "wait_until_ready",
]

#: a zero-argument callable returning a fresh memory system (one per conversation)
Factory = Callable[[], object]


class MemorySystemTimeout(AdapterError):
    """A memory-system call ran past ``--memeval-timeout``."""


def call_with_timeout(fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
    """Run ``fn``; with a timeout, in a daemon thread that is abandoned when it overruns (a Python
    thread cannot be killed; the session never waits for it)."""
    __tracebackhide__ = True
    if timeout is None:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"memeval-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise MemorySystemTimeout(f"{what} did not return within --memeval-timeout={timeout:g}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@dataclass
class IngestedSystem:
    system: MemorySystem
    conversation_id: str
    ingest_seconds: float
    #: seconds ``wait_ready`` took after ingest (None: the system has no ``wait_ready``)
    ready_seconds: float | None = None
    name: str = ""  # the --memsys name, for error messages
    #: what ``dump`` returned for this conversation (None: no ``dump``), asked once on the first
    #: question that wants it (a suite scoring storage marks its questions ``meta["dump"]``)
    stored: tuple[Memory, ...] | None = None
    dumped: bool = False
    #: why the storage metrics are UNSCORED when ``dump`` raised, returned the wrong type or ran
    #: past --memeval-timeout (None: it worked, or the system has no ``dump``)
    dump_failed: str | None = None
    #: the conversation ingested (what the storage judgments compare the stored memories with)
    conversation: Conversation | None = None
    #: ``dump`` is asked once even when a thread-safe system's searches run on several threads
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def record_stored(
    ingested: IngestedSystem, conversation_id: str, timeout: float | None, details: dict[str, Any]
) -> bool:
    """Ask the system once what it stored for this conversation (the optional ``dump``) and put
    the count in ``details["stored_memories"]``, or ``details["stored_unscored"]`` with the reason
    when the system has no ``dump`` (storage metrics are then UNSCORED, never zero). A ``dump``
    that raises, returns the wrong type or runs past ``timeout`` only feeds the storage metrics:
    they become UNSCORED with what went wrong, and the question (its QA result) goes on. True for
    the question that made the one ``dump`` call of a system that has it: that question carries
    the conversation's storage judgments (``details["storage_carrier"]``). ``dump`` is asked once
    even when a thread-safe system's searches run on several threads."""
    with ingested.lock:
        first = not ingested.dumped
        if first:
            system = ingested.system
            try:
                ingested.stored = call_with_timeout(
                    lambda: stored_memories(system, conversation_id), timeout, "dump()"
                )
            except Exception as exc:  # dump feeds only the storage metrics: never the QA
                ingested.stored = None
                ingested.dump_failed = dump_failure(ingested, conversation_id, exc)
            ingested.dumped = True
    if ingested.stored is None:
        details["stored_unscored"] = ingested.dump_failed or NO_DUMP_REASON
        return False
    details["stored_memories"] = len(ingested.stored)
    if first:
        details["storage_carrier"] = True
    return first


def dump_failure(ingested: IngestedSystem, conversation_id: str, exc: Exception) -> str:
    """The one-line UNSCORED reason of a ``dump`` that failed (names system and conversation)."""
    name = ingested.name or type(ingested.system).__name__
    if isinstance(exc, MemorySystemTimeout):
        what = f"dump({conversation_id!r}) did not return within {str(exc).split()[-1]}"
    else:
        what = f"dump({conversation_id!r}) raised {type(exc).__name__}: {exc}"
    what = terminal_safe(" ".join(what.split()), 300)
    return f"{name}: {what}; what it stored cannot be scored (the QA results stand)"


#: how long ``wait_ready`` may take without --memeval-timeout (a bound, never a hang)
READY_TIMEOUT = 600.0


@dataclass
class SystemPool:
    """Per process: one ingested instance per (system, conversation).

    ``conversation_key`` is ``<benchmark>/<conversation>``. ``release`` drops the instances of other
    conversations when the run moves on, so memory stays bounded by one conversation per system; an
    object that serves several conversations (a session-scoped fixture) gets ``reset()`` before
    its next ``ingest``. An ingest that raised is not retried for the other questions of that
    conversation: they fail with the same exception. ``ingests`` counts real ``ingest`` calls per
    system (reported to the controller).

    ``get_ahead`` ingests the next conversation while the current one's LLM calls are in flight
    (the pipeline's look-ahead at -n 0); ``release`` keeps those conversations too, so memory is
    bounded by two conversations per system.
    """

    live: dict[tuple[str, str], IngestedSystem] = field(default_factory=dict)
    ingests: dict[str, int] = field(default_factory=dict)
    timeout: float | None = None
    failed: dict[tuple[str, str], BaseException] = field(default_factory=dict)
    _last_instance: dict[str, object] = field(default_factory=dict)
    #: conversation keys ingested by ``get_ahead`` that the run has not reached yet
    ahead: set[str] = field(default_factory=set)
    #: systems whose ``obtain`` gives one object for every conversation: never ingested ahead
    shared: set[str] = field(default_factory=set)

    def get(
        self,
        system: str,
        conversation: Callable[[], Conversation],
        conversation_key: str,
        obtain: Callable[[], object],
    ) -> IngestedSystem:
        """The ingested system for this conversation; ``obtain`` returns an instance or a factory."""
        key = (system, conversation_key)
        ready = self.live.get(key)
        if ready is not None:
            return ready
        __tracebackhide__ = True
        earlier = self.failed.get(key)
        if earlier is not None:
            raise earlier
        obj = obtain()
        if is_factory(obj):
            obj = obj()  # type: ignore[operator]  # a class or a zero-argument callable
        elif self._last_instance.get(system) is obj:
            # The same object serves several conversations (a session-scoped fixture): reset it.
            reset = getattr(obj, "reset", None)
            if callable(reset):
                reset()
        instance = ensure_memory_system(obj, system)
        self._last_instance[system] = obj
        conv = conversation()
        start = time.perf_counter()
        try:
            call_with_timeout(lambda: instance.ingest(conv), self.timeout, f"{system}: ingest()")
        except Exception as exc:
            self.failed[key] = exc
            if isinstance(exc, MemorySystemTimeout):
                self._last_instance.pop(system, None)  # never reuse an instance stuck in ingest
            raise
        elapsed = time.perf_counter() - start
        self.ingests[system] = self.ingests.get(system, 0) + 1
        try:
            waited = wait_until_ready(instance, system, self.timeout)
        except Exception as exc:
            self.failed[key] = exc
            raise
        ready = IngestedSystem(
            instance, conversation_key, elapsed, waited, name=system, conversation=conv
        )
        self.live[key] = ready
        return ready

    def get_ahead(
        self,
        system: str,
        conversation: Callable[[], Conversation],
        conversation_key: str,
        obtain: Callable[[], object],
    ) -> IngestedSystem | None:
        """The system of a conversation the run has not reached, ingested now, when that cannot
        disturb the conversation being run: only when ``obtain`` gives a factory (a fresh
        instance per conversation). An object serving several conversations would be reset under
        the current conversation's searches: None, and never asked again. None too when its
        ingest failed before; an ingest that raises here raises (and is kept for its questions,
        as :meth:`get` keeps it)."""
        key = (system, conversation_key)
        ready = self.live.get(key)
        if ready is not None:
            return ready
        if key in self.failed or system in self.shared:
            return None
        obj = obtain()
        if not is_factory(obj):
            self.shared.add(system)
            return None
        self.ahead.add(conversation_key)
        return self.get(system, conversation, conversation_key, lambda: obj)

    def release(self, keep_conversation: str | None = None) -> None:
        """Drop every instance not serving ``keep_conversation`` or a conversation ingested
        ahead (``keep_conversation`` None: drop everything)."""
        if keep_conversation is None:
            self.ahead.clear()
        else:
            self.ahead.discard(keep_conversation)
        keep = {keep_conversation, *self.ahead}
        for key in [k for k in self.live if k[1] not in keep]:
            self.live.pop(key)
        for key in [k for k in self.failed if k[1] not in keep]:
            self.failed.pop(key)

    def clear(self) -> None:
        """Session end: drop every instance (the last one made too, so an adapter that cleans up
        when it is dropped, e.g. a hosted store, does so before the run ends)."""
        self.live.clear()
        self.failed.clear()
        self.ahead.clear()
        self._last_instance.clear()


def is_thread_safe(system: object) -> bool:
    """The system declares ``thread_safe = True`` (a class or instance attribute, exactly
    ``True``): its ``search`` / ``answer`` may run on several threads at once, so the pipeline
    searches up to its window of questions concurrently (:func:`prepare_question`). Anything else
    (absent, a truthy non-bool) keeps searches sequential on the main thread."""
    return getattr(system, "thread_safe", False) is True


def is_factory(obj: object) -> bool:
    """A memory-system factory (a class, or a callable without ``ingest``), not an instance."""
    return isinstance(obj, type) or (not callable(getattr(obj, "ingest", None)) and callable(obj))


def wait_until_ready(instance: object, name: str, timeout: float | None) -> float | None:
    """Call the optional ``wait_ready(timeout)`` after ingest (an asynchronously indexing
    service): the seconds it took, reported apart from ingest; None without ``wait_ready``. It
    returning False, raising, or overrunning its timeout errors the conversation's questions."""
    __tracebackhide__ = True
    wait = getattr(instance, "wait_ready", None)
    if not callable(wait):
        return None
    limit = timeout if timeout is not None else READY_TIMEOUT
    start = time.perf_counter()
    ok = call_with_timeout(lambda: wait(limit), limit + 5.0, f"{name}: wait_ready()")
    if ok is False:
        raise AdapterError(
            f"{name}: wait_ready() reported the system not ready {limit:g}s after ingest; "
            "raise --memeval-timeout or check the service's indexing"
        )
    return time.perf_counter() - start
