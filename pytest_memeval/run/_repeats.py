"""Errors that repeat are said once (issue 34.5), pytest-free: which of a memory system's failures
repeat an earlier one, and when a system that fails the same way every time is stopped.

A failure's *signature* is its exception type and message, with the question's own id replaced
(an adapter-contract error names the question it was about; the same broken ``search()`` is the
same error on every question). Per process and per system: the first failure of a signature is
shown in full, a later one is one line naming the first; after ``limit`` identical failures in a
row (no question of that system answered in between) the system is *stopped*: its remaining
questions of this process are reported as errors without running. Under xdist each worker counts
its own questions (so each stops after ``limit`` of its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import MemevalError

__all__ = [
    "DEFAULT_MAX_REPEATED",
    "RepeatedErrors",
    "Stop",
    "SystemStopped",
    "error_line",
    "signature",
    "stopped_message",
]

#: identical failures in a row after which a system's remaining questions are not run
DEFAULT_MAX_REPEATED = 20
#: at most this many characters of an error message in a one-line report
LINE_CHARS = 500


def error_line(type_name: str, message: str) -> str:
    """``Type: message`` on one line (the message's first line, cut at :data:`LINE_CHARS`)."""
    lines = message.strip().splitlines()
    first = lines[0] if lines else ""
    text = f"{type_name}: {first}" if first else type_name
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def signature(type_name: str, message: str, question_id: str) -> tuple[str, str]:
    """What makes two failures "the same error": the type and the message, the question's id
    replaced (``question conv-26-q1: search() must return a list ...`` is one error on every
    question)."""
    return type_name, message.replace(question_id, "<question>") if question_id else message


@dataclass(frozen=True)
class Stop:
    """A system stopped in this process: after ``after`` identical failures in a row, the first
    of that error at ``first`` (a node id), whose error line was ``error``."""

    system: str
    first: str
    error: str
    after: int

    def to_dict(self) -> dict[str, object]:
        return {
            "system": self.system,
            "first": self.first,
            "error": self.error,
            "after": self.after,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Stop:
        after = data.get("after")
        return cls(
            system=str(data.get("system", "")),
            first=str(data.get("first", "")),
            error=str(data.get("error", "")),
            after=after if isinstance(after, int) else 0,
        )


def stopped_message(stop: Stop) -> str:
    """The error of a question not run because its system stopped (the JSON keeps it)."""
    return (
        f"{stop.error} (not run: {stop.system} failed with this error {stop.after} times in a "
        f"row, the first at {stop.first}; --memeval-max-repeated-errors=0 runs every question)"
    )


class SystemStopped(MemevalError):
    """Raised for a question whose system is stopped (:meth:`RepeatedErrors.stopped`)."""

    def __init__(self, stop: Stop) -> None:
        super().__init__(stopped_message(stop))
        self.stop = stop


@dataclass
class _Streak:
    sig: tuple[str, str]
    count: int


@dataclass
class RepeatedErrors:
    """One process's failures by system. ``limit``: identical failures in a row that stop a
    system (0: never stop)."""

    limit: int = DEFAULT_MAX_REPEATED
    #: (system, signature) -> node id and error line of the first failure with it
    first: dict[tuple[str, tuple[str, str]], tuple[str, str]] = field(default_factory=dict)
    _streaks: dict[str, _Streak] = field(default_factory=dict)
    stops: dict[str, Stop] = field(default_factory=dict)

    def failed(self, system: str, nodeid: str, sig: tuple[str, str], line: str) -> str | None:
        """Record a failure of ``system`` at ``nodeid``: None when it is the first with ``sig``
        (shown in full), else the node id of that first failure. Stops the system once
        ``limit`` failures in a row had ``sig``."""
        first, first_line = self.first.setdefault((system, sig), (nodeid, line))
        streak = self._streaks.get(system)
        if streak is None or streak.sig != sig:
            streak = self._streaks[system] = _Streak(sig, 0)
        streak.count += 1
        if self.limit and streak.count >= self.limit and system not in self.stops:
            self.stops[system] = Stop(system, first, first_line, streak.count)
        return None if first == nodeid else first

    def answered(self, system: str) -> None:
        """A question of ``system`` ran without error: its streak starts again."""
        self._streaks.pop(system, None)

    def stopped(self, system: str) -> Stop | None:
        return self.stops.get(system)
