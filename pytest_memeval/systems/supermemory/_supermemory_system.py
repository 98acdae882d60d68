"""Supermemory as a MemorySystem, through the official ``supermemory`` SDK: one namespace per
conversation, one document per session (its turns, one per line, dated), hybrid search of the
namespace. See README.md beside this file."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from typing import Any

from ...errors import AdapterError
from ...records import Conversation, Memory, Question
from .._hosted import (
    ServiceSettings,
    call_service,
    cut_top_k,
    import_sdk,
    parse_date,
    release_on_drop,
    session_date_iso,
    settings_from_env,
    source_ids,
    store_name,
)
from .._memories import turn_text

__all__ = ["DEFAULT_BASE_URL", "SEARCH_MODES", "SupermemorySystem"]

DEFAULT_BASE_URL = "https://api.supermemory.ai"
#: ``searchMode``: ``hybrid`` (memories and source chunks; the service's default), ``memories``
#: or ``chunks``
SEARCH_MODES = ("hybrid", "memories", "chunks")
#: document states after which nothing more will become searchable
FINAL_STATES = frozenset({"done", "failed"})
#: seconds between two polls of a document's status in ``wait_ready``
POLL_SECONDS = 0.2


def _delete_namespace(client: Any, namespace: str) -> Any:
    """``namespaces.delete``; the SDK (5.0.1) parses its reply's union with Pydantic's deprecated
    ``__fields__``, a DeprecationWarning on every call that says nothing about the run: silenced
    for this call only (never concurrent with this instance's searches: it runs at reset or when
    the instance is dropped)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message=r"The `__fields__` attribute is deprecated",
            category=DeprecationWarning,
        )
        return client.namespaces.delete(namespace)


class SupermemorySystem:
    """Supermemory through ``supermemory.Supermemory``. Environment: ``SUPERMEMORY_API_KEY``
    (required), ``SUPERMEMORY_BASE_URL`` (default :data:`DEFAULT_BASE_URL`),
    ``MEMEVAL_SUPERMEMORY_MODE`` (``hybrid`` / ``memories`` / ``chunks``),
    ``MEMEVAL_HOSTED_TIMEOUT`` (seconds per request, default 60)."""

    name = "supermemory"
    #: searches only read the namespace; the SDK's httpx client is shared safely across threads
    thread_safe = True
    #: Supermemory extracts memories with an LLM: two ingests may store different memories
    deterministic = False

    def __init__(
        self,
        settings: ServiceSettings | None = None,
        *,
        mode: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.settings = settings or settings_from_env(
            "supermemory",
            url_var="SUPERMEMORY_BASE_URL",
            key_var="SUPERMEMORY_API_KEY",
            default_url=DEFAULT_BASE_URL,
            environ=env,
        )
        self.mode = (mode or env.get("MEMEVAL_SUPERMEMORY_MODE") or "hybrid").strip()
        if self.mode not in SEARCH_MODES:
            raise AdapterError(
                f"memory system 'supermemory': MEMEVAL_SUPERMEMORY_MODE={self.mode!r}; use one "
                f"of {', '.join(SEARCH_MODES)}"
            )
        self._sdk = import_sdk("supermemory", "supermemory", "supermemory")
        self._httpx = import_sdk("supermemory", "httpx", "supermemory")
        #: the SDK client of the conversation being served (made by ingest, closed by reset)
        self.client: Any = None
        self._http: Any = None
        self._release: Any = None
        self._namespace: str | None = None
        self._conversation_id = ""
        self._documents: list[str] = []
        self._known: frozenset[str] = frozenset()

    def _call(self, what: str, fn: Any) -> Any:
        return call_service(self.settings, what, fn)

    def _connect(self) -> None:
        self._http = self._httpx.Client(timeout=self.settings.timeout)
        self.client = self._sdk.Supermemory(
            api_key=self.settings.api_key,
            base_url=self.settings.base_url,
            timeout=self.settings.timeout,
            httpx_client=self._http,
        )

    # -- the MemorySystem protocol ----------------------------------------------------------
    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        self._connect()
        namespace = self._namespace = store_name(conversation.id)
        self._conversation_id = conversation.id
        client = self.client
        self._release = release_on_drop(
            self, lambda: _delete_namespace(client, namespace), self._http.close
        )
        known: set[str] = set()
        for session in conversation.sessions_by_date():
            known.add(session.id)
            known.update(t.id for t in session.turns)
            content = "\n".join(turn_text(t) for t in session.turns)
            if not content.strip():
                continue
            when = session_date_iso(session)
            extra: dict[str, Any] = {"date": when} if when else {}
            metadata = {
                "memeval_session": session.id,
                "memeval_conversation": conversation.id,
                "memeval_date": when or "",
            }
            ref = self._call(
                f"add (session {session.id})",
                lambda content=content, metadata=metadata, extra=extra: self.client.add(
                    namespace, content=content, metadata=metadata, **extra
                ),
            )
            if getattr(ref, "id", None):
                self._documents.append(str(ref.id))
        self._known = frozenset(known)

    def wait_ready(self, timeout: float) -> bool:
        """True once every added document is processed (Supermemory extracts asynchronously)."""
        namespace = self._namespace
        deadline = time.monotonic() + timeout
        pending = list(self._documents)
        while namespace is not None and pending:
            doc = self._call(
                "documents.get", lambda: self.client.documents.get(namespace, pending[-1])
            )
            status = str(getattr(getattr(doc, "system", None), "status", "") or "")
            if status in FINAL_STATES:
                pending.pop()
                continue
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def _memory(self, text: object, hit: Any, score: float | None) -> Memory:
        meta = hit.metadata or {}
        return Memory(
            text=str(text or ""),
            id=str(hit.id),
            date=parse_date(meta.get("memeval_date")),
            score=score,
            source_ids=source_ids([meta.get("memeval_session")], self._known),
        )

    def dump(self, conversation_id: str) -> list[Memory]:
        """Every memory Supermemory learned in this conversation's namespace, every page
        (``list(namespace, "memories")``); ``[]`` for another conversation or after ``reset()``."""
        namespace = self._namespace
        if namespace is None or conversation_id != self._conversation_id:
            return []
        out: list[Memory] = []
        page = 1
        while True:
            listed = self._call(
                "list memories",
                lambda page=page: self.client.list(namespace, "memories", page=page, limit=100),
            )
            out.extend(self._memory(m.memory, m, None) for m in listed.memories or [])
            pagination = getattr(listed, "pagination", None)
            if not listed.memories or page >= int(getattr(pagination, "total_pages", 0) or 0):
                return out
            page += 1

    def search(self, question: Question, k: int) -> list[Memory]:
        namespace = self._namespace
        if k <= 0 or namespace is None or not question.question.strip():
            return []  # the service refuses an empty query
        found = self._call(
            "search",
            lambda: self.client.search(
                namespace, query=question.question, limit=k, search_mode=self.mode
            ),
        )
        out = [
            self._memory(
                hit.memory if hit.memory is not None else hit.chunk,
                hit,
                float(hit.similarity) if hit.similarity is not None else None,
            )
            for hit in getattr(found, "results", None) or []
        ]
        return cut_top_k(out, k)

    def reset(self) -> None:
        """Delete this instance's namespace (its documents and memories), then close the
        connection."""
        namespace, self._namespace = self._namespace, None
        http, self._http = self._http, None
        if self._release is not None:
            self._release.detach()
            self._release = None
        self._documents = []
        self._known = frozenset()
        self._conversation_id = ""
        try:
            if namespace is not None:
                self._call("namespaces.delete", lambda: _delete_namespace(self.client, namespace))
        finally:
            if http is not None:
                http.close()
