"""A memory system written as a conftest fixture: turns in an SQLite FTS5 full-text index.

Standard library only. Run it from this folder (see README.md):

    pytest --memeval=demo --memsys=sqlite_memory
    pytest --memeval=locomo --memeval-data=DIR --memsys=sqlite_memory,bm25 --memeval-limit=20
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime

import pytest

from pytest_memeval import Conversation, Memory, Question

#: words too common to help a full-text query
# fmt: off
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
    "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "of", "on", "or",
    "she", "that", "the", "their", "them", "they", "this", "to", "was", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "you", "your",
})
# fmt: on


class SQLiteFTSMemory:
    """One row per turn in an FTS5 table; search ranks rows with SQLite's built-in BM25.

    The protocol: ``ingest(conversation)`` once per conversation, ``search(question, k)`` returns
    up to ``k`` memories, best first; ``reset()`` is called before the next conversation.
    """

    def __init__(self, path: str = ":memory:") -> None:
        # check_same_thread=False: the plugin may call from a worker thread (--memeval-timeout)
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS turns USING fts5("
            "text, turn_id UNINDEXED, session_id UNINDEXED, date UNINDEXED, "
            "tokenize = 'porter unicode61')"
        )

    def reset(self) -> None:
        self.db.execute("DELETE FROM turns")
        self.db.commit()

    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        rows = [
            (
                f"{turn.speaker}: {turn.text}",
                turn.id,
                session.id,
                session.date.isoformat() if session.date else session.date_raw,
            )
            for session in conversation.sessions_by_date()
            for turn in session.turns
        ]
        self.db.executemany(
            "INSERT INTO turns (text, turn_id, session_id, date) VALUES (?, ?, ?, ?)", rows
        )
        self.db.commit()

    def search(self, question: Question, k: int) -> list[Memory]:
        words = [
            w
            for w in re.findall(r"\w+", question.question.lower())
            if len(w) > 1 and w not in STOPWORDS  # "Jonas's" -> "jonas", not "s"
        ]
        if not words or k <= 0:
            return []
        query = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))  # quoted: no FTS syntax
        rows = self.db.execute(
            "SELECT text, turn_id, session_id, date, bm25(turns) FROM turns "
            "WHERE turns MATCH ? ORDER BY bm25(turns), rowid LIMIT ?",
            (query, k),
        ).fetchall()
        # SQLite's bm25() is negative (smaller is better): flip it into a positive score
        return [
            Memory(
                text=text,
                id=turn_id,
                date=_date(date),
                score=-rank,
                source_ids=(turn_id, session_id),
            )
            for text, turn_id, session_id, date, rank in rows
        ]

    def close(self) -> None:
        self.db.close()


def _date(value: str) -> datetime | str | None:
    """A datetime when the session date was parsed (the extractive answerer then resolves
    "yesterday" / "last week"), else the raw date text."""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return value or None


@pytest.fixture(scope="session")
def sqlite_memory() -> Iterator[SQLiteFTSMemory]:
    """Session scope: one instance for the whole run; the plugin calls reset() between
    conversations. The teardown runs once, after the last question."""
    memory = SQLiteFTSMemory()
    yield memory
    memory.close()
