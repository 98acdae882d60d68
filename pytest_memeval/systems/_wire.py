"""The JSON wire format of the records a memory service sees (HTTP and MCP adapters).

Plain JSON only; dates are ISO 8601 strings (``datetime.isoformat()``) and come back as
``datetime`` when they parse, so a system behind a wire sees the same records as in-process. The
question's gold answer and evidence never leave the process: a memory system must not see them.

Conversation::

    {"id": "conv-26", "speakers": ["Caroline", "Melanie"],
     "sessions": [{"id": "session_1", "date": "2023-05-08T13:56:00", "date_raw": "1:56 pm on 8 May, 2023",
                   "turns": [{"id": "D1:1", "speaker": "Caroline", "text": "Hey Mel!", "meta": {}}]}]}

Question::

    {"id": "conv-26-q1", "conversation_id": "conv-26", "category": "multi-hop", "category_id": 1,
     "question": "When did Caroline go to the LGBTQ support group?", "question_date": null,
     "question_date_raw": "", "index": 0, "abstention": false}

Memory (``search`` may also return plain strings)::

    {"text": "Caroline: I went to a LGBTQ support group yesterday", "id": "D1:3",
     "date": "2023-05-08T13:56:00", "score": 3.2, "source_ids": ["D1:3", "session_1"]}
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import AdapterError
from ..records import Conversation, Memory, Question, Session, Turn

__all__ = [
    "MAX_REPLY_BYTES",
    "conversation_from_dict",
    "conversation_to_dict",
    "memory_from_dict",
    "memory_from_wire",
    "question_from_dict",
    "question_to_dict",
]

#: the default ``#max_bytes`` of a service's reply (HTTP body, MCP message): a reply over it errors
#: its question, read no further than the limit
MAX_REPLY_BYTES = 16 << 20


def reply_too_large(where: str, limit: int) -> str:
    """The one-line error for a service reply over ``#max_bytes``."""
    return (
        f"{where}: the reply is larger than #max_bytes={limit}; raise it in --memsys or return "
        "fewer memories"
    )


def spec_settings(spec: str, fragment: str, known: set[str]) -> dict[str, str]:
    """The ``#key=value&...`` settings of a service ``--memsys`` value, refusing unknown keys."""
    options = dict(urllib.parse.parse_qsl(fragment, keep_blank_values=True))
    unknown = sorted(set(options) - known)
    if unknown:
        raise AdapterError(
            f"--memsys={spec}: unknown setting(s) {', '.join(unknown)} after '#'; known: "
            + ", ".join(sorted(known))
        )
    return options


def spec_number(value: str, key: str, spec: str, *, integer: bool = False) -> float:
    """A number setting of a service ``--memsys`` value: ``>= 0`` for retries and backoff, ``> 0``
    otherwise; anything else is an AdapterError naming the setting."""
    try:
        number = int(value) if integer else float(value)
    except ValueError:
        number = -1
    if number < 0 or (key in ("timeout", "max_bytes", "poll") and number == 0):
        raise AdapterError(
            f"--memsys={spec}: #{key}={value!r} must be a {'whole ' if integer else ''}number "
            f"{'>= 0' if key in ('retries', 'backoff') else '> 0'}"
        )
    return number


def _date_out(value: datetime | str | None) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _date_in(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            # a date whose UTC instant lies outside year 1-9999 (0001-01-01T00:00:00+14:00)
            # breaks every comparison and conversion later: kept as the text it came as
            parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return parsed


def _json_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-compatible part of a record's ``meta`` (benchmark extras such as image captions)."""
    out: dict[str, Any] = {}
    for key, value in (meta or {}).items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        out[str(key)] = value
    return out


def conversation_to_dict(conv: Conversation) -> dict[str, Any]:
    return {
        "id": conv.id,
        "speakers": list(conv.speakers),
        "sessions": [
            {
                "id": s.id,
                "date": _date_out(s.date),
                "date_raw": s.date_raw,
                "turns": [
                    {"id": t.id, "speaker": t.speaker, "text": t.text, "meta": _json_meta(t.meta)}
                    for t in s.turns
                ],
            }
            for s in conv.sessions
        ],
    }


def conversation_from_dict(data: Mapping[str, Any]) -> Conversation:
    sessions = []
    for s in data.get("sessions") or ():
        turns = tuple(
            Turn(
                id=str(t["id"]),
                speaker=str(t.get("speaker", "")),
                text=str(t.get("text", "")),
                meta=dict(t.get("meta") or {}),
            )
            for t in s.get("turns") or ()
        )
        sessions.append(
            Session(
                id=str(s["id"]),
                date=_date_in(s.get("date")),
                turns=turns,
                date_raw=str(s.get("date_raw") or ""),
            )
        )
    return Conversation(
        id=str(data["id"]),
        sessions=tuple(sessions),
        speakers=tuple(str(x) for x in data.get("speakers") or ()),
    )


def question_to_dict(q: Question) -> dict[str, Any]:
    """The question as a memory system may see it: no gold answer, no evidence."""
    return {
        "id": q.id,
        "conversation_id": q.conversation_id,
        "category": q.category,
        "category_id": q.category_id,
        "question": q.question,
        "question_date": _date_out(q.question_date),
        "question_date_raw": q.question_date_raw,
        "index": q.index,
        "abstention": q.abstention,
    }


def question_from_dict(data: Mapping[str, Any]) -> Question:
    return Question(
        id=str(data["id"]),
        conversation_id=str(data.get("conversation_id", "")),
        category=str(data.get("category", "")),
        question=str(data.get("question", "")),
        gold=None,
        category_id=data.get("category_id"),
        question_date=_date_in(data.get("question_date")),
        question_date_raw=str(data.get("question_date_raw") or ""),
        index=int(data.get("index") or 0),
        abstention=bool(data.get("abstention", False)),
    )


def memory_from_dict(data: Mapping[str, Any]) -> Memory:
    """A stored or received memory; an ISO date becomes a ``datetime`` again."""
    date = data.get("date")
    parsed = _date_in(date)
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        score = None
    ident = data.get("id")
    speaker = data.get("speaker")
    return Memory(
        text=str(data.get("text", "")),
        id=None if ident is None else str(ident),
        date=parsed if parsed is not None else (date if isinstance(date, str) else None),
        score=None if score is None else float(score),
        source_ids=tuple(str(s) for s in data.get("source_ids") or ()),
        speaker=None if speaker is None else str(speaker),
    )


def memory_from_wire(item: object, where: str) -> Memory:
    """One element of a ``memories`` reply: a Memory object or a string; else ValueError."""
    if isinstance(item, str):
        return Memory(text=item)
    if isinstance(item, Mapping) and isinstance(item.get("text"), str):
        source = item.get("source_ids")
        if source is not None and not isinstance(source, list):
            raise ValueError(f"{where}: 'source_ids' must be a list of strings")
        return memory_from_dict(item)
    raise ValueError(
        f"{where}: each memory must be a string or an object with a string 'text', got "
        f"{type(item).__name__}"
    )
