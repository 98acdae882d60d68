"""An MCP memory server (stdio) wrapping any Python MemorySystem, for pytest-memeval's MCP adapter.

    pytest --memeval=demo \
        --memsys="mcp:python examples/mcp_server/memeval_mcp_server.py bm25#ingest=store_memory&search=search_memory"

Tools: ``store_memory(conversation)`` (the whole conversation, wire format), ``add_turn(text,
conversation_id, turn_id, session_id, date, speaker)`` (one turn at a time; the conversation is
built on the first search), ``search_memory(question, k)``, ``search_text(query, conversation_id,
limit)``, ``is_ready(conversation_id)``, ``dump(conversation_id)`` (what the wrapped system
stored, when it has the optional ``dump`` capability; else an empty list) and
``reset(conversation_id)`` (forget that conversation). The first argument names the system
(what ``--memsys`` takes in-process: ``bm25``, ``package.module:factory``); one instance per
conversation id.
``MEMEVAL_MCP_CALLS=FILE`` appends one line per tool call (tests count them).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import Any

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]

from pytest_memeval.records import Conversation, Session, Turn
from pytest_memeval.systems import (
    conversation_from_dict,
    ensure_memory_system,
    question_from_dict,
    resolve_system,
    stored_memories,
)

SYSTEM = sys.argv[1] if len(sys.argv) > 1 else "bm25"
((_, FACTORY),) = resolve_system(SYSTEM)[:1]
SYSTEMS: dict[str, Any] = {}
PENDING: dict[str, list[tuple[str, str, str, str, str]]] = {}
LOG = os.environ.get("MEMEVAL_MCP_CALLS")

server = MCPServer("memeval-mcp-server")


def _log(tool: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as fh:
            fh.write(tool + "\n")


def _system(conversation_id: str) -> Any:
    if conversation_id in PENDING:  # turns added one by one: build the conversation now
        sessions: dict[str, list[Turn]] = {}
        dates: dict[str, str] = {}
        for text, turn_id, session_id, date, speaker in PENDING.pop(conversation_id):
            body = text[len(speaker) + 2 :] if speaker and text.startswith(f"{speaker}: ") else text
            sessions.setdefault(session_id, []).append(Turn(turn_id, speaker, body))
            dates.setdefault(session_id, date)
        conv = Conversation(
            conversation_id,
            tuple(
                Session(sid, _date(dates[sid]), tuple(turns), dates[sid])
                for sid, turns in sessions.items()
            ),
        )
        system = ensure_memory_system(FACTORY(), SYSTEM)
        system.ingest(conv)
        SYSTEMS[conversation_id] = system
    return SYSTEMS[conversation_id]


def _date(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


@server.tool()
def store_memory(conversation: dict[str, Any]) -> dict[str, Any]:
    """Ingest a whole conversation (pytest-memeval wire format)."""
    _log("store_memory")
    conv = conversation_from_dict(conversation)
    system = ensure_memory_system(FACTORY(), SYSTEM)
    system.ingest(conv)
    SYSTEMS[conv.id] = system
    return {"ok": True}


@server.tool()
def add_turn(
    text: str, conversation_id: str, turn_id: str, session_id: str, date: str, speaker: str
) -> dict[str, Any]:
    """Remember one turn of a conversation."""
    _log("add_turn")
    PENDING.setdefault(conversation_id, []).append((text, turn_id, session_id, date, speaker))
    return {"ok": True}


@server.tool()
def search_memory(question: dict[str, Any], k: int) -> dict[str, Any]:
    """The k memories most relevant to a question (pytest-memeval wire format)."""
    _log("search_memory")
    q = question_from_dict(question)
    found = _system(q.conversation_id).search(q, k)
    return {"memories": [m if isinstance(m, str) else m.to_dict() for m in found]}


@server.tool()
def search_text(query: str, conversation_id: str, limit: int) -> dict[str, Any]:
    """The memories most relevant to a query text."""
    _log("search_text")
    q = question_from_dict({"id": "q", "conversation_id": conversation_id, "question": query})
    found = _system(conversation_id).search(q, limit)
    return {"results": [{"memory": m.text, "id": m.id} for m in found if not isinstance(m, str)]}


@server.tool()
def is_ready(conversation_id: str) -> dict[str, Any]:
    """Whether searches see everything ingested for this conversation."""
    _log("is_ready")
    return {"ready": True}


@server.tool()
def dump(conversation_id: str) -> dict[str, Any]:
    """Every memory stored for this conversation (the wrapped system's ``dump``)."""
    _log("dump")
    if conversation_id not in SYSTEMS and conversation_id not in PENDING:
        return {"memories": []}  # never ingested, or forgotten by reset
    stored = stored_memories(_system(conversation_id), conversation_id) or []
    return {"memories": [m.to_dict() for m in stored]}


@server.tool()
def reset(conversation_id: str) -> dict[str, Any]:
    """Forget everything stored for this conversation."""
    _log("reset")
    SYSTEMS.pop(conversation_id, None)
    PENDING.pop(conversation_id, None)
    return {"ok": True}


if __name__ == "__main__":
    server.run("stdio")
