"""LangMem (the ``langmem`` library) as a MemorySystem: every turn is stored through LangMem's
manage-memory tool (action ``create``) in a LangGraph ``InMemoryStore`` whose semantic index embeds
with the bundled all-MiniLM-L6-v2, one namespace per conversation; search is LangMem's
search-memory tool, limited to ``k``. No LLM is called. See README.md beside this file."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ...errors import AdapterError
from ...records import Conversation, Memory, Question
from .._hosted import cut_top_k, source_ids, store_name
from .._memories import turn_text

__all__ = ["DIMS", "LangMemSystem", "embed_texts"]

#: all-MiniLM-L6-v2's dimensions
DIMS = 384
EXTRA = "pip install 'pytest-memeval[langmem]'"


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise AdapterError(f"memory system 'langmem' needs {module}: {EXTRA} ({exc})") from None


def embed_texts(texts: Sequence[str]) -> list[list[float]]:
    """The store's embed function: the bundled all-MiniLM-L6-v2 (loaded once per process, shared
    with ``--memsys=embedding``), L2-normalised rows."""
    from .._embedding import default_encoder

    try:
        encoder = default_encoder()
    except AdapterError as exc:
        raise AdapterError(f"memory system 'langmem': {exc} (or: {EXTRA})") from None
    if not texts:
        return []
    return [[float(x) for x in row] for row in encoder.encode(list(texts))]


class LangMemSystem:
    """LangMem's ``create_manage_memory_tool`` / ``create_search_memory_tool`` on one
    ``InMemoryStore`` per instance (index: ``embed`` = :func:`embed_texts`, ``dims`` = 384, the
    field ``content.text``), namespace ``("memeval", <conversation>-<random>)``."""

    name = "langmem"
    #: one memory per turn: only a top-k at least the turn count returns the whole history
    retrieves = "turns"
    #: InMemoryStore's search reads a dict under no lock; searched one at a time
    thread_safe = False

    def __init__(
        self, embed: Callable[[Sequence[str]], list[list[float]]] | None = None, dims: int = DIMS
    ) -> None:
        """``embed`` replaces the bundled model (``dims``: its dimensions), as
        ``EmbeddingSystem(encoder=...)`` does."""
        with warnings.catch_warnings():
            # langmem 0.0.30 imports trustcall, which imports Send from where LangGraph 1.x
            # deprecates it (LangGraphDeprecatedSinceV10, a DeprecationWarning)
            warnings.filterwarnings("ignore", "Importing Send from langgraph.constants")
            self._langmem = _import("langmem")
        store_module = _import("langgraph.store.memory")
        self.store: Any = store_module.InMemoryStore(
            index={"dims": dims, "embed": embed or embed_texts, "fields": ["content.text"]}
        )
        self._namespace: tuple[str, ...] | None = None
        self._conversation_id = ""
        self._known: frozenset[str] = frozenset()
        self._manage: Any = None
        self._search: Any = None

    # -- the MemorySystem protocol ----------------------------------------------------------
    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        namespace = ("memeval", store_name(conversation.id))
        self._manage = self._langmem.create_manage_memory_tool(
            namespace, store=self.store, schema=dict, actions_permitted=("create",)
        )
        self._search = self._langmem.create_search_memory_tool(
            namespace, store=self.store, response_format="content_and_artifact"
        )
        self._namespace = namespace
        self._conversation_id = conversation.id
        known: set[str] = set()
        for session in conversation.sessions_by_date():
            known.add(session.id)
            date = session.date.isoformat() if session.date is not None else session.date_raw
            for turn in session.turns:
                known.add(turn.id)
                content = {
                    "text": turn_text(turn),
                    "turn_id": turn.id,
                    "session_id": session.id,
                    "date": date,
                    "speaker": turn.speaker,
                }
                self._manage.invoke({"content": content, "action": "create"})
        self._known = frozenset(known)

    def _memory(self, item: Any) -> Memory:
        content = (item.value or {}).get("content") or {}
        if not isinstance(content, Mapping):
            content = {"text": str(content)}
        date_text = str(content.get("date") or "")
        date: datetime | str | None
        try:
            date = datetime.fromisoformat(date_text) if date_text else None
        except ValueError:
            date = date_text
        score = getattr(item, "score", None)
        return Memory(
            text=str(content.get("text", "")),
            id=str(item.key),
            date=date,
            score=float(score) if score is not None else None,
            source_ids=source_ids([content.get("turn_id"), content.get("session_id")], self._known),
            speaker=str(content["speaker"]) if content.get("speaker") else None,
        )

    def search(self, question: Question, k: int) -> list[Memory]:
        if k <= 0 or self._search is None:
            return []
        query = question.question if question.question.strip() else None
        # called as an agent calls it (a tool call): the reply is a ToolMessage whose content is
        # the JSON text the agent reads and whose artifact is the store's SearchItems
        reply = self._search.invoke(
            {
                "name": self._search.name,
                "args": {"query": query or "", "limit": k},
                "id": f"memeval-{question.id}",
                "type": "tool_call",
            }
        )
        items = reply.artifact or []
        # equal scores (the same turn text twice) in store order, which is insertion order
        return cut_top_k([self._memory(item) for item in items], k)

    def dump(self, conversation_id: str) -> list[Memory]:
        """Every memory in this conversation's namespace (insertion order); ``[]`` for another
        conversation or after ``reset()``."""
        if self._namespace is None or conversation_id != self._conversation_id:
            return []
        items = self.store.search(self._namespace, limit=1_000_000)
        return [self._memory(item) for item in items]

    def reset(self) -> None:
        """Delete this conversation's memories (its namespace) from the store."""
        namespace, self._namespace = self._namespace, None
        self._manage = self._search = None
        self._conversation_id = ""
        self._known = frozenset()
        if namespace is not None:
            for item in self.store.search(namespace, limit=1_000_000):
                self.store.delete(namespace, item.key)
