"""The adapter boundary, pytest-free: what ``search`` and ``answer`` return, normalised once.

Memory systems return whatever their libraries hand them: numpy floats as scores, numpy ints as
ids, ``numpy.str_`` answers, ``source_ids=None`` or a single ``"D1:3"`` string, a generator. Past
this boundary every value is a plain ``str``, ``float``, ``datetime`` or tuple of ``str``, so it
serialises to JSON (the results store, xdist's wire) and scores the same everywhere. A value that
has no faithful plain form is an :class:`AdapterError` naming the system, the question, the memory
and the field: that question errors, nothing else does.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

from ..errors import AdapterError
from ..records import Memory

__all__ = [
    "materialise",
    "normalise_answer",
    "normalise_memories",
    "normalise_memory",
    "plain_str",
]


def plain_str(value: str) -> str:
    """A ``str`` subclass (``numpy.str_``, an enum member) as an exact ``str`` with the same
    characters; an exact ``str`` is returned as is."""
    return value if type(value) is str else str.__str__(value)


def materialise(found: object) -> object:
    """A lazy ``search`` result (generator, iterator, ``map``, a view) made into a list, so its
    work happens inside the timed call; a list, a tuple and anything not to be iterated (a string,
    a mapping, a non-iterable) is returned unchanged for :func:`normalise_memories` to judge."""
    if isinstance(found, list | tuple | str | bytes | bytearray | Mapping):
        return found
    if isinstance(found, Iterable):  # iterators and generators are Iterable
        return list(found)
    return found


def _where(system: str, question_id: str) -> str:
    return f"memory system {system!r}, question {question_id}"


def normalise_memories(found: object, *, system: str, question_id: str) -> tuple[Memory, ...]:
    """The memories of one ``search`` call, in rank order, as plain :class:`Memory` records."""
    where = _where(system, question_id)
    if isinstance(found, str | bytes | bytearray | Mapping) or not isinstance(found, Iterable):
        hint = (
            " (a dict is not a ranked list: return list(your_dict.values()) or Memory objects)"
            if isinstance(found, Mapping)
            else ""
        )
        raise AdapterError(
            f"{where}: search() must return a list of Memory objects or strings, got "
            f"{type(found).__name__}{hint}"
        )
    return tuple(
        normalise_memory(item, system=system, question_id=question_id, rank=i)
        for i, item in enumerate(found)
    )


def normalise_memory(item: object, *, system: str, question_id: str, rank: int = 0) -> Memory:
    """One returned memory (a ``Memory`` or a string) with every field in its plain type."""
    where = f"{_where(system, question_id)}: search() result {rank}"
    if isinstance(item, str):
        return Memory(text=plain_str(item))
    if not isinstance(item, Memory):
        raise AdapterError(
            f"{where}: expected a Memory or a string, got {type(item).__name__}: {item!r:.80}"
        )
    return Memory(
        text=_text(item.text, where),
        id=_id(item.id, where),
        date=_date(item.date, where),
        score=_score(item.score, where),
        source_ids=_source_ids(item.source_ids, where),
        speaker=_speaker(item.speaker, where),
    )


def normalise_answer(value: object, *, system: str, question_id: str) -> str:
    """What ``answer()`` returned, as an exact ``str``."""
    if isinstance(value, str):
        return plain_str(value)
    raise AdapterError(
        f"{_where(system, question_id)}: answer() must return a string, got "
        f"{type(value).__name__}: {value!r:.80}"
    )


def _bad(where: str, field: str, expected: str, value: object) -> AdapterError:
    return AdapterError(
        f"{where}, field {field!r}: expected {expected}, got {type(value).__name__}: {value!r:.80}"
    )


def _text(value: object, where: str) -> str:
    if isinstance(value, str):
        return plain_str(value)
    raise _bad(where, "text", "a string (Memory(text=...))", value)


def _id_part(value: object, where: str, field: str) -> str:
    if isinstance(value, str):
        return plain_str(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    raise _bad(where, field, "a string or an integer", value)


def _id(value: object, where: str) -> str | None:
    return None if value is None else _id_part(value, where, "id")


def _speaker(value: object, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return plain_str(value)
    raise _bad(where, "speaker", "a string or None", value)


def _date(value: object, where: str) -> datetime | str | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        return plain_str(value)
    raise _bad(where, "date", "a datetime, a string or None", value)


def _score(value: object, where: str) -> float | None:
    """Numbers (numpy's too) that convert to a float; NaN and infinities become None (no score),
    as the reports store them. Strings and booleans are not scores."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _bad(where, "score", "a number or None", value)
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        raise _bad(where, "score", "a number within float range", value) from None
    return number if math.isfinite(number) else None


def _source_ids(value: Any, where: str) -> tuple[str, ...]:
    """``None`` -> ``()``; one id (``"D1:3"``, an int) -> a 1-tuple; a list/tuple/set of ids ->
    a tuple of strings (a set in sorted order). A mapping is refused, not iterated as keys."""
    if value is None:
        return ()
    if isinstance(value, str) or (
        isinstance(value, numbers.Integral) and not isinstance(value, bool)
    ):
        return (_id_part(value, where, "source_ids"),)
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise _bad(where, "source_ids", "a sequence of turn or session ids", value)
    ids = [_id_part(v, where, "source_ids") for v in value]
    if isinstance(value, set | frozenset):
        ids.sort()
    return tuple(ids)
