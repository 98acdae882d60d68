"""Run level, pytest-free: the process's pipelined LLM stage.

Items still run one by one, in pytest order. When a question's item starts, the plugin searches
the next questions of the same conversation and system (on the main thread, in order: systems need
not be thread-safe; a system declaring ``thread_safe = True`` is searched on the window's threads,
as the first step of its LLM half) and hands each one's LLM half (:func:`run.question.llm_stage`:
the answerer's call, then every judge) to this window; each item then waits for its own entry and records its own
result. So at most ``window`` questions (``--memeval-llm-concurrency``) have LLM work in flight
while the main thread searches ahead, and what is sent is exactly what a window of 1 sends: the
same requests, so the same cache keys and verdicts.

The main thread may search up to ``depth`` questions ahead (:data:`DEPTH_FACTOR` x ``window``):
the questions beyond the window wait, searched, for a free thread. A window that only staged
``window`` questions left the main thread idle whenever they were all waiting: while the SDK is
imported (the first second of a judged run), and whenever a conversation's ingest is slower than
a question's LLM calls (one question per conversation: LongMemEval, LoCoMo-Plus), so the main
thread's ingest and the calls in flight took turns instead of overlapping.

Latency is attributed per question: ``search`` is that question's own search call, ``answer`` that
question's own answerer call, timed on the thread that makes it from its start (time spent queued
behind other questions is not counted).

Stopping (``-x``, ``--maxfail``, Ctrl-C, the end of the session): :meth:`Pipeline.close` cancels
every entry not started; calls already sent finish on their threads and their replies are written
to the LLM cache as they arrive, so ``--memeval-resume`` never pays for one twice. Calls wasted on
questions that will not run are bounded by the window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from .question import Prepared, Staged

__all__ = ["DEPTH_FACTOR", "Entry", "Pipeline"]

#: questions staged (searched, LLM half queued or running) per thread of the window
DEPTH_FACTOR = 2


@dataclass(frozen=True)
class Entry:
    """One question in the window: its prepared half (None when preparing it raised) and the
    future of its LLM half (holding the exception when preparing or the LLM half raised)."""

    prepared: Prepared | None
    future: Future[Staged]


class Pipeline:
    """The bounded in-flight window of one process, keyed by item (node id)."""

    def __init__(self, window: int, depth: int | None = None) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self.window = window
        #: how many questions may be staged at once (searched ahead; at most ``window`` of them
        #: have calls in flight, the others wait, searched, for a thread)
        self.depth = max(window, depth if depth is not None else DEPTH_FACTOR * window)
        self._executor: ThreadPoolExecutor | None = None
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self.closed = False

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def submit(self, key: str, prepared: Prepared, stage: Callable[[Prepared], Staged]) -> None:
        """Start ``stage(prepared)`` on the window's threads (inline once closed)."""
        with self._lock:
            if self.closed:
                future: Future[Staged] = Future()
                try:
                    future.set_result(stage(prepared))
                except Exception as exc:
                    future.set_exception(exc)
            else:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        max_workers=self.window, thread_name_prefix="memeval-pipeline"
                    )
                future = self._executor.submit(stage, prepared)
            self._entries[key] = Entry(prepared, future)

    def fail(self, key: str, exc: BaseException) -> None:
        """Preparing ``key`` raised: its item re-raises ``exc`` when it runs."""
        future: Future[Staged] = Future()
        future.set_exception(exc)
        self._entries[key] = Entry(None, future)

    def take(self, key: str) -> Entry | None:
        """The entry of ``key`` (removed from the window), None when it was never staged."""
        return self._entries.pop(key, None)

    def close(self) -> int:
        """Cancel every entry not started; calls in flight finish (their replies are cached).
        Returns how many entries were cancelled."""
        with self._lock:
            self.closed = True
            cancelled = sum(1 for e in self._entries.values() if e.future.cancel())
            self._entries.clear()
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
        return cancelled
