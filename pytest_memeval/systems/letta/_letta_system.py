"""Letta's archival memory as a MemorySystem, through the official ``letta-client`` SDK: one
archive per conversation, one passage per turn (added in batches), semantic search of the archive.
See README.md beside this file."""

from __future__ import annotations

import os
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

__all__ = ["BATCH_SIZE", "DEFAULT_BASE_URL", "LettaSystem"]

DEFAULT_BASE_URL = "https://api.letta.com"
#: passages sent per ``archives.passages.create_many`` call
BATCH_SIZE = 100


class LettaSystem:
    """Letta through ``letta_client.Letta``. Environment: ``LETTA_API_KEY`` (required for Letta
    Cloud; may be unset for a self-hosted server given by ``LETTA_BASE_URL``), ``LETTA_BASE_URL``
    (default :data:`DEFAULT_BASE_URL`), ``MEMEVAL_LETTA_EMBEDDING`` (the archive's embedding
    handle, e.g. ``openai/text-embedding-3-small``; default: the server's),
    ``MEMEVAL_HOSTED_TIMEOUT`` (seconds per request, default 60)."""

    name = "letta"
    #: searches only read the archive; the SDK's httpx client is shared safely across threads
    thread_safe = True

    def __init__(
        self,
        settings: ServiceSettings | None = None,
        *,
        embedding: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.settings = settings or settings_from_env(
            "letta",
            url_var="LETTA_BASE_URL",
            key_var="LETTA_API_KEY",
            default_url=DEFAULT_BASE_URL,
            key_required=not (env.get("LETTA_BASE_URL") or "").strip(),
            environ=env,
        )
        self.embedding = (embedding or env.get("MEMEVAL_LETTA_EMBEDDING") or "").strip() or None
        self._sdk = import_sdk("letta", "letta_client", "letta-client")
        #: the SDK client of the conversation being served (made by ingest, closed by reset)
        self.client: Any = None
        self._release: Any = None
        self._archive: str | None = None
        self._known: frozenset[str] = frozenset()

    def _call(self, what: str, fn: Any) -> Any:
        return call_service(self.settings, what, fn)

    # -- the MemorySystem protocol ----------------------------------------------------------
    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        self.client = self._sdk.Letta(
            api_key=self.settings.api_key,
            base_url=self.settings.base_url,
            timeout=self.settings.timeout,
        )
        extra: dict[str, Any] = {"embedding": self.embedding} if self.embedding else {}
        try:
            archive = self._call(
                "archives.create",
                lambda: self.client.archives.create(
                    name=store_name(conversation.id),
                    description=f"pytest-memeval conversation {conversation.id}",
                    **extra,
                ),
            )
        except AdapterError:
            self.reset()  # closes the connection
            raise
        if not getattr(archive, "id", None):
            raise AdapterError("letta: archives.create returned no id")
        self._archive = archive_id = str(archive.id)
        client = self.client
        self._release = release_on_drop(
            self, lambda: client.archives.delete(archive_id), client.close
        )
        known: set[str] = set()
        passages: list[dict[str, Any]] = []
        for session in conversation.sessions_by_date():
            known.add(session.id)
            when = session_date_iso(session)
            for turn in session.turns:
                known.add(turn.id)
                passage: dict[str, Any] = {
                    "text": turn_text(turn),
                    "metadata": {"memeval_turn": turn.id, "memeval_session": session.id},
                }
                if when:
                    passage["created_at"] = when
                passages.append(passage)
        self._known = frozenset(known)
        for start in range(0, len(passages), BATCH_SIZE):
            batch = passages[start : start + BATCH_SIZE]
            self._call(
                f"archives.passages.create_many ({len(batch)} passages)",
                lambda batch=batch: self.client.archives.passages.create_many(
                    archive_id, passages=batch
                ),
            )

    def search(self, question: Question, k: int) -> list[Memory]:
        archive = self._archive
        if k <= 0 or archive is None or not question.question.strip():
            return []
        found = self._call(
            "passages.search",
            lambda: self.client.passages.search(
                archive_id=archive, query=question.question, limit=k
            ),
        )
        out = []
        for hit in found or []:
            passage = hit.passage
            meta = passage.metadata or {}
            out.append(
                Memory(
                    text=str(passage.text or ""),
                    id=str(passage.id) if passage.id else None,
                    date=parse_date(passage.created_at),
                    score=float(hit.score) if hit.score is not None else None,
                    source_ids=source_ids(
                        [meta.get("memeval_turn"), meta.get("memeval_session")], self._known
                    ),
                )
            )
        return cut_top_k(out, k)

    def reset(self) -> None:
        """Delete this instance's archive (and its passages), then close the connection."""
        archive, self._archive = self._archive, None
        client, self.client = self.client, None
        if self._release is not None:
            self._release.detach()
            self._release = None
        self._known = frozenset()
        try:
            if archive is not None:
                self._call("archives.delete", lambda: client.archives.delete(archive))
        finally:
            if client is not None:
                client.close()
