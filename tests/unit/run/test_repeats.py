"""``run.repeats`` (issue 34.5): which failures of a memory system repeat an earlier one, and when
a system that fails the same way every time stops (the end-to-end runs:
tests/plugin/test_repeated_errors.py)."""

from __future__ import annotations

from pytest_memeval.run._repeats import (
    DEFAULT_MAX_REPEATED,
    RepeatedErrors,
    Stop,
    SystemStopped,
    error_line,
    signature,
    stopped_message,
)
from pytest_memeval.run._settings import RunSettings

DOWN = signature("ConnectionError", "refused", "q1")
LINE = "ConnectionError: refused"


def test_the_first_failure_is_shown_a_repeat_names_it() -> None:
    tracker = RepeatedErrors(limit=0)
    assert tracker.failed("sys", "n1", DOWN, LINE) is None
    assert tracker.failed("sys", "n2", DOWN, LINE) == "n1"
    other = signature("ValueError", "bad", "q3")
    assert tracker.failed("sys", "n3", other, "ValueError: bad") is None
    assert tracker.failed("sys", "n4", DOWN, LINE) == "n1"  # still the same error as n1
    # per system: another system's first failure is shown in full
    assert tracker.failed("other", "m1", DOWN, LINE) is None
    assert tracker.stops == {}  # 0: never stops


def test_identical_failures_in_a_row_stop_the_system() -> None:
    tracker = RepeatedErrors(limit=3)
    for i in range(2):
        tracker.failed("sys", f"n{i}", DOWN, LINE)
    assert tracker.stopped("sys") is None
    tracker.failed("sys", "n2", DOWN, LINE)
    assert tracker.stopped("sys") == Stop("sys", "n0", LINE, 3)
    assert tracker.stopped("other") is None


def test_an_answered_question_or_another_error_starts_the_count_again() -> None:
    tracker = RepeatedErrors(limit=3)
    tracker.failed("sys", "n0", DOWN, LINE)
    tracker.failed("sys", "n1", DOWN, LINE)
    tracker.answered("sys")
    tracker.failed("sys", "n2", DOWN, LINE)
    tracker.failed("sys", "n3", DOWN, LINE)
    assert tracker.stopped("sys") is None
    tracker.failed("sys", "n4", signature("ValueError", "bad", "q"), "ValueError: bad")
    tracker.failed("sys", "n5", DOWN, LINE)
    tracker.failed("sys", "n6", DOWN, LINE)
    assert tracker.stopped("sys") is None
    tracker.answered("other")  # another system's answer does not reset this one
    tracker.failed("sys", "n7", DOWN, LINE)
    stop = tracker.stopped("sys")
    assert stop is not None and stop.first == "n0" and stop.after == 3


def test_the_question_id_is_not_part_of_the_error() -> None:
    message = "memory system 'x', question {q}: search() must return a list, got int"
    a = signature("AdapterError", message.format(q="conv-26-q1"), "conv-26-q1")
    b = signature("AdapterError", message.format(q="conv-26-q10"), "conv-26-q10")
    assert a == b
    assert signature("AdapterError", "x", "q1") != signature("MemevalError", "x", "q1")


def test_lines_and_messages() -> None:
    assert error_line("ConnectionError", "refused\nmore detail") == LINE
    assert error_line("KeyError", "") == "KeyError"
    long = error_line("E", "x" * 1000)
    assert len(long) == 500 and long.endswith("…")
    stop = Stop("sys", "memeval/demo/demo-1/sys::demo-1-q1", LINE, 20)
    assert Stop.from_dict(stop.to_dict()) == stop
    message = stopped_message(stop)
    assert message.startswith(LINE + " (not run: sys failed with this error 20 times in a row")
    assert "the first at memeval/demo/demo-1/sys::demo-1-q1" in message
    assert str(SystemStopped(stop)) == message


def test_the_default_is_twenty() -> None:
    assert DEFAULT_MAX_REPEATED == RunSettings().max_repeated_errors == 20
    assert RepeatedErrors().limit == 20
