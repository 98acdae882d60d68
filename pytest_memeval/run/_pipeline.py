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

Each question's LLM half is two steps (:class:`Halves`: the answer, then the verdicts), taken
by the window's threads from one queue where every answer waiting goes before every verdict
waiting (then first staged, first served). With one step per question, a thread ran a question's
answer and then its verdicts; at the end of a run the last questions' chains finished one by one,
the window emptying for up to a call's latency. Answers first, the verdicts left at the end are
independent calls that keep the window full to the last round. The requests are the same.

Latency is attributed per question: ``search`` is that question's own search call, ``answer`` that
question's own answerer call, timed on the thread that makes it from its start (time spent queued
behind other questions is not counted).

Stopping (``-x``, ``--maxfail``, Ctrl-C, the end of the session): :meth:`Pipeline.close` cancels
every entry not started; calls already sent finish on their threads and their replies are written
to the LLM cache as they arrive, so ``--memeval-resume`` never pays for one twice. Calls wasted on
questions that will not run are bounded by the window.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any

from ._question import Prepared, Staged

__all__ = ["DEPTH_FACTOR", "Entry", "Halves", "Pipeline"]

#: questions staged (searched, LLM half queued or running) per thread of the window
DEPTH_FACTOR = 2


@dataclass(frozen=True)
class Entry:
    """One question in the window: its prepared half (None when preparing it raised) and the
    future of its LLM half (holding the exception when preparing or the LLM half raised)."""

    prepared: Prepared | None
    future: Future[Staged]


@dataclass(frozen=True)
class Halves:
    """A question's LLM half as two steps: ``first`` (the answer) and ``second`` (the verdicts,
    given the first's result). A plain callable is one step."""

    first: Callable[[Prepared], Any]
    second: Callable[[Prepared, Any], Staged]

    def __call__(self, prepared: Prepared) -> Staged:
        return self.second(prepared, self.first(prepared))


Stage = Callable[[Prepared], Staged]


class Pipeline:
    """The bounded in-flight window of one process, keyed by item (node id)."""

    def __init__(self, window: int, depth: int | None = None) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self.window = window
        #: how many questions may be staged at once (searched ahead; at most ``window`` of them
        #: have calls in flight, the others wait, searched, for a thread)
        self.depth = max(window, depth if depth is not None else DEPTH_FACTOR * window)
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        #: (step, order, future, work): answers (step 0) before verdicts (step 1)
        self._queue: list[tuple[int, int, Future[Staged], Callable[[], None]]] = []
        self._order = itertools.count()
        self._threads: list[threading.Thread] = []
        self.closed = False

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def submit(self, key: str, prepared: Prepared, stage: Stage | Halves) -> None:
        """Start ``stage(prepared)`` on the window's threads (inline once closed)."""
        future: Future[Staged] = Future()
        with self._lock:
            if not self.closed:
                self._entries[key] = Entry(prepared, future)
                self._push(0, future, lambda: self._first(future, prepared, stage))
                if len(self._threads) < self.window:
                    thread = threading.Thread(
                        target=self._work,
                        name=f"memeval-pipeline_{len(self._threads)}",
                        daemon=True,
                    )
                    self._threads.append(thread)
                    thread.start()
                return
        try:
            future.set_result(stage(prepared))
        except Exception as exc:
            future.set_exception(exc)
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
        """Cancel every entry not finished whose next step has not started; calls in flight
        finish (their replies are cached). Returns how many entries were cancelled."""
        with self._lock:
            self.closed = True
            cancelled = 0
            for _, _, future, _ in self._queue:
                if future.cancel() or _cancel_running(future):
                    cancelled += 1
            self._queue.clear()
            self._entries.clear()
            self._ready.notify_all()
        return cancelled

    # -- the window's threads -----------------------------------------------------------------
    def _push(self, step: int, future: Future[Staged], work: Callable[[], None]) -> None:
        """Queue a step (call with the lock held)."""
        heapq.heappush(self._queue, (step, next(self._order), future, work))
        self._ready.notify()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self.closed:
                    self._ready.wait()
                if not self._queue:
                    return  # closed
                _, _, _, work = heapq.heappop(self._queue)
            work()

    def _first(self, future: Future[Staged], prepared: Prepared, stage: Stage | Halves) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            if not isinstance(stage, Halves):
                future.set_result(stage(prepared))
                return
            half = stage.first(prepared)
        except BaseException as exc:
            future.set_exception(exc)
            return
        with self._lock:
            if self.closed:
                _cancel_running(future)
                return
            self._push(1, future, lambda: self._second(future, prepared, stage, half))

    @staticmethod
    def _second(future: Future[Staged], prepared: Prepared, stage: Halves, half: Any) -> None:
        try:
            future.set_result(stage.second(prepared, half))
        except BaseException as exc:
            future.set_exception(exc)


def _cancel_running(future: Future[Staged]) -> bool:
    """End a future whose first step ran (``cancel`` refuses a running future): it raises
    ``CancelledError`` to whoever waits. False when it has finished already."""
    if future.done():
        return False
    future.set_exception(CancelledError())
    return True
