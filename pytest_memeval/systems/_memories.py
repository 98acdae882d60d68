"""Conversation turns as memories: what the built-in systems (full-context, bm25, embedding)
store and return. A module of its own so the systems share it without importing one another."""

from __future__ import annotations

from datetime import datetime

from ..records import Conversation, Memory, Session, Turn

__all__ = ["conversation_memories", "turn_memory", "turn_text"]


def turn_text(turn: Turn) -> str:
    """``"<speaker>: <text>"``, plus ``" [shares: <caption>]"`` when the turn shared an image."""
    text = f"{turn.speaker}: {turn.text}"
    caption = turn.meta.get("blip_caption") if turn.meta else None
    if caption:
        text += f" [shares: {caption}]"
    return text


def _session_date(session: Session) -> datetime | str | None:
    if session.date is not None:
        return session.date
    return session.date_raw or None


def turn_memory(session: Session, turn: Turn) -> Memory:
    """The Memory for one turn: text per :func:`turn_text`, the session's date (a ``datetime`` when
    parsed, else the raw string), id = turn id, ``source_ids = (turn.id, session.id)``,
    ``speaker`` = the turn's speaker."""
    return Memory(
        text=turn_text(turn),
        id=turn.id,
        date=_session_date(session),
        source_ids=(turn.id, session.id),
        speaker=turn.speaker,
    )


def conversation_memories(conversation: Conversation) -> list[Memory]:
    """One Memory per turn, sessions in date order (``conversation.sessions_by_date()``)."""
    return [turn_memory(s, t) for s in conversation.sessions_by_date() for t in s.turns]
