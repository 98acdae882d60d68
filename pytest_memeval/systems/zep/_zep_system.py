"""Zep (the hosted temporal knowledge graph) as a MemorySystem, through the official ``zep-cloud``
SDK: one graph per conversation, one ``message`` episode per turn, search over the graph's edges
(facts) or episodes. See README.md beside this file."""

from __future__ import annotations

import os
import time
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

__all__ = ["DEFAULT_BASE_URL", "SCOPES", "ZepSystem"]

DEFAULT_BASE_URL = "https://api.getzep.com/api/v4"
#: what ``search`` returns: ``edges`` (the facts Zep extracted; the default) or ``episodes``
SCOPES = ("edges", "episodes")
#: seconds between two polls of an episode's ``processed`` flag in ``wait_ready``
POLL_SECONDS = 0.2


class ZepSystem:
    """Zep through ``zep_cloud.Zep``. Environment: ``ZEP_API_KEY`` (required), ``ZEP_BASE_URL``
    (default :data:`DEFAULT_BASE_URL`), ``MEMEVAL_ZEP_SCOPE`` (``edges`` / ``episodes``),
    ``MEMEVAL_HOSTED_TIMEOUT`` (seconds per request, default 60)."""

    name = "zep"
    #: searches only read the graph; the SDK's httpx client is shared safely across threads
    thread_safe = True
    #: Zep extracts facts with an LLM: two ingests of one conversation may store different facts
    deterministic = False

    def __init__(
        self,
        settings: ServiceSettings | None = None,
        *,
        scope: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.settings = settings or settings_from_env(
            "zep",
            url_var="ZEP_BASE_URL",
            key_var="ZEP_API_KEY",
            default_url=DEFAULT_BASE_URL,
            environ=env,
        )
        self.scope = (scope or env.get("MEMEVAL_ZEP_SCOPE") or "edges").strip()
        if self.scope not in SCOPES:
            raise AdapterError(
                f"memory system 'zep': MEMEVAL_ZEP_SCOPE={self.scope!r}; use one of {', '.join(SCOPES)}"
            )
        self._sdk = import_sdk("zep", "zep_cloud", "zep-cloud")
        self._httpx = import_sdk("zep", "httpx", "zep-cloud")
        #: the SDK client of the conversation being served (made by ingest, closed by reset)
        self.client: Any = None
        self._http: Any = None
        self._release: Any = None
        self._graph: str | None = None
        self._conversation_id = ""
        #: episode uuid -> (turn id, session id) of what this instance added
        self._episodes: dict[str, tuple[str, str]] = {}
        self._known: frozenset[str] = frozenset()

    def _call(self, what: str, fn: Any) -> Any:
        return call_service(self.settings, what, fn)

    def _connect(self) -> None:
        self._http = self._httpx.Client(timeout=self.settings.timeout)
        self.client = self._sdk.Zep(
            api_key=self.settings.api_key,
            base_url=self.settings.base_url,
            timeout=self.settings.timeout,
            httpx_client=self._http,
        )

    # -- the MemorySystem protocol ----------------------------------------------------------
    def ingest(self, conversation: Conversation) -> None:
        self.reset()
        self._connect()
        try:
            graph = self._call(
                "graph.create",
                lambda: self.client.graph.create(
                    name=store_name(conversation.id),
                    description=f"pytest-memeval conversation {conversation.id}",
                ),
            )
        except AdapterError:
            self.reset()  # closes the connection
            raise
        graph_uuid = getattr(graph, "uuid_", None)
        if not graph_uuid:
            raise AdapterError("zep: graph.create returned no uuid")
        self._graph = graph_id = str(graph_uuid)
        self._conversation_id = conversation.id
        client = self.client
        self._release = release_on_drop(
            self, lambda: client.graph.delete(graph_id), self._http.close
        )
        known: set[str] = set()
        for session in conversation.sessions_by_date():
            known.add(session.id)
            when = session_date_iso(session)
            for turn in session.turns:
                known.add(turn.id)
                extra: dict[str, Any] = {"reference_time": when} if when else {}
                added = self._call(
                    f"graph.episode.add (turn {turn.id})",
                    lambda turn=turn, session=session, extra=extra: self.client.graph.episode.add(
                        self._graph,
                        data=turn_text(turn),
                        type="message",
                        metadata={"memeval_turn": turn.id, "memeval_session": session.id},
                        source_description=f"conversation {conversation.id}, session {session.id}",
                        **extra,
                    ),
                )
                episode = getattr(added, "episode", None)
                episode_uuid = getattr(episode, "uuid_", None)
                if episode_uuid:
                    self._episodes[str(episode_uuid)] = (turn.id, session.id)
        self._known = frozenset(known)

    def wait_ready(self, timeout: float) -> bool:
        """True once every added episode is ``processed`` (Zep extracts asynchronously)."""
        graph = self._graph
        if graph is None:
            return True
        deadline = time.monotonic() + timeout
        pending = list(self._episodes)
        while pending:
            episode = self._call(
                "graph.episode.get", lambda: self.client.graph.episode.get(graph, pending[-1])
            )
            if getattr(episode, "processed", False):
                pending.pop()  # the last one first: Zep processes a graph's episodes in order
                continue
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def _sources(self, episode_uuids: object) -> tuple[str, ...]:
        ids: list[str] = []
        for uid in episode_uuids if isinstance(episode_uuids, list | tuple) else ():
            ids.extend(self._episodes.get(str(uid), ()))
        return source_ids(ids, self._known)

    def _edge_memory(self, edge: Any) -> Memory:
        return Memory(
            text=str(edge.fact or ""),
            id=str(edge.uuid_) if edge.uuid_ else None,
            date=parse_date(edge.valid_at or edge.created_at),
            score=edge.score,
            source_ids=self._sources(edge.episode_uuids),
        )

    def dump(self, conversation_id: str) -> list[Memory]:
        """Every fact (edge) of this conversation's graph, every page (``graph.edge.list``);
        ``[]`` for another conversation or after ``reset()``."""
        graph = self._graph
        if graph is None or conversation_id != self._conversation_id:
            return []
        edges = self._call(
            "graph.edge.list", lambda: list(self.client.graph.edge.list(graph, page_size=100))
        )
        return [self._edge_memory(e) for e in edges]

    def search(self, question: Question, k: int) -> list[Memory]:
        graph = self._graph
        if k <= 0 or graph is None or not question.question.strip():
            return []  # Zep refuses an empty query
        if self.scope == "episodes":
            page = self._call(
                "graph.search_episodes",
                lambda: self.client.graph.search_episodes(
                    graph, query=question.question, page_size=k
                ),
            )
            out = [
                Memory(
                    text=str(e.content or ""),
                    id=str(e.uuid_) if e.uuid_ else None,
                    date=parse_date(e.reference_time or e.created_at),
                    score=e.score,
                    source_ids=self._sources([e.uuid_]),
                    speaker=e.role_name,
                )
                for e in (page.items or [])
            ]
        else:
            page = self._call(
                "graph.search_edges",
                lambda: self.client.graph.search_edges(graph, query=question.question, page_size=k),
            )
            out = [self._edge_memory(e) for e in (page.items or [])]
        return cut_top_k(out, k)

    def reset(self) -> None:
        """Delete this instance's graph (and forget its episodes), then close the connection."""
        graph, self._graph = self._graph, None
        http, self._http = self._http, None
        if self._release is not None:
            self._release.detach()
            self._release = None
        self._episodes = {}
        self._known = frozenset()
        self._conversation_id = ""
        try:
            if graph is not None:
                self._call("graph.delete", lambda: self.client.graph.delete(graph))
        finally:
            if http is not None:
                http.close()
