"""``run.pipeline.Pipeline``: at most ``window`` LLM steps run at once, while up to ``depth``
questions are staged (searched ahead, waiting for a thread), each item taking its own entry;
waiting answers go before waiting verdicts."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from pytest_memeval.run._pipeline import DEPTH_FACTOR, Halves, Pipeline


def test_depth_defaults_to_a_multiple_of_the_window_and_never_below_it() -> None:
    assert Pipeline(4).depth == DEPTH_FACTOR * 4 > 4
    assert Pipeline(4, depth=2).depth == 4
    assert Pipeline(1, depth=10).depth == 10
    with pytest.raises(ValueError):
        Pipeline(0)


def test_staged_beyond_the_window_wait_for_a_thread_and_run_in_order() -> None:
    pipeline = Pipeline(2, depth=6)
    lock = threading.Lock()
    running = 0
    peak = 0
    started: list[int] = []

    def stage(prepared: Any) -> Any:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            started.append(prepared)
        time.sleep(0.05)
        with lock:
            running -= 1
        return prepared * 10

    for i in range(6):
        pipeline.submit(f"q{i}", i, stage)  # type: ignore[arg-type]
    assert len(pipeline) == 6  # all staged at once: the depth, not the window, bounds staging
    results = []
    for i in range(6):
        entry = pipeline.take(f"q{i}")
        assert entry is not None
        results.append(entry.future.result(timeout=10))
    assert results == [0, 10, 20, 30, 40, 50]
    assert peak == 2  # never more than the window in flight
    assert sorted(started[:2]) == [0, 1]  # first staged, first run
    pipeline.close()


def test_close_cancels_the_staged_questions_not_started() -> None:
    pipeline = Pipeline(1, depth=5)
    gate = threading.Event()

    def stage(prepared: Any) -> Any:
        gate.wait(10)
        return prepared

    for i in range(5):
        pipeline.submit(f"q{i}", i, stage)  # type: ignore[arg-type]
    time.sleep(0.05)
    assert pipeline.close() == 4  # the one running finishes; the four waiting never start
    gate.set()


def test_waiting_answers_go_before_waiting_verdicts() -> None:
    """Two steps per question (:class:`Halves`): with one thread, the three staged questions'
    answers run before any verdict, then the verdicts in staging order; each entry's result is
    its own question's."""
    pipeline = Pipeline(1, depth=3)
    order: list[str] = []
    gate = threading.Event()

    def first(prepared: Any) -> Any:
        gate.wait(10)
        order.append(f"a{prepared}")
        return prepared * 10

    def second(prepared: Any, answered: Any) -> Any:
        order.append(f"j{prepared}")
        return answered + 1

    for i in (1, 2, 3):
        pipeline.submit(f"q{i}", i, Halves(first, second))  # type: ignore[arg-type]
    gate.set()
    results = []
    for i in (1, 2, 3):
        entry = pipeline.take(f"q{i}")
        assert entry is not None
        results.append(entry.future.result(timeout=10))
    assert results == [11, 21, 31]
    assert order == ["a1", "a2", "a3", "j1", "j2", "j3"]
    pipeline.close()


def test_close_ends_an_entry_answered_but_not_judged() -> None:
    pipeline = Pipeline(1, depth=2)
    answered = threading.Event()
    release = threading.Event()

    def first(prepared: Any) -> Any:
        if prepared == 1:
            answered.set()
            release.wait(10)
        return prepared

    def second(prepared: Any, half: Any) -> Any:
        return half

    pipeline.submit("q1", 1, Halves(first, second))  # type: ignore[arg-type]
    pipeline.submit("q2", 2, Halves(first, second))  # type: ignore[arg-type]
    entry = pipeline._entries["q1"]
    assert answered.wait(10)
    assert pipeline.close() == 1  # q2 never started; q1's answer is still running
    release.set()
    with pytest.raises(CancelledError):  # its verdict step is never queued
        entry.future.result(timeout=10)
    # once closed, a submitted question runs inline, both steps
    pipeline.submit("q3", 3, Halves(first, second))  # type: ignore[arg-type]
    late = pipeline.take("q3")
    assert late is not None and late.future.result(timeout=1) == 3
