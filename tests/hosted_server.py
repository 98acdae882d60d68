"""A loopback HTTP server that speaks the parts of Zep's, Letta's and Supermemory's HTTP APIs the
adapters in ``pytest_memeval/systems/{zep,letta,supermemory}`` call, so that each official SDK
(zep-cloud, letta-client, supermemory) is the client under test. No third-party dependencies.

    from hosted_server import HostedServer

    with HostedServer("zep", api_key="zk-test") as srv:
        os.environ.update(srv.env())      # ZEP_BASE_URL, ZEP_API_KEY
        ...
        assert srv.count("POST", "/episodes") == 30

Paths and payloads follow the SDKs' own request code (read from the installed packages):

- ``zep``, base URL ``/api/v4``: ``POST graphs``, ``POST graphs/{g}/episodes``,
  ``GET graphs/{g}/episodes/{e}``, ``POST graphs/{g}/edges/list?page_size=N&cursor=C``,
  ``POST graphs/{g}/search/edges?page_size=N``,
  ``POST graphs/{g}/search/episodes?page_size=N``, ``DELETE graphs/{g}``; key in
  ``Authorization: Api-Key KEY``.
- ``letta``: ``POST /v1/archives/``, ``POST /v1/archives/{a}/passages/batch``,
  ``POST /v1/passages/search``, ``DELETE /v1/archives/{a}``; key in ``Authorization: Bearer KEY``.
- ``supermemory``: ``POST /ns/{ns}/document``, ``GET /ns/{ns}/document/{id}``,
  ``POST /ns/{ns}/search``, ``POST /ns/{ns}/list/memories?page=P&limit=N``, ``DELETE /ns/{ns}``;
  key in ``Authorization: Bearer KEY``.

What the real services do with an LLM or an embedding model is stood in for, deterministically:
Zep's graph extraction makes one fact (edge) per message episode, the episode's text; Supermemory's
memory extraction makes one memory per non-empty line of a document; Letta's embedding search and
every search here rank by word overlap (the share of the query's words an item contains; ties keep
insertion order; an item sharing no word is not returned). Zep episodes and Supermemory
documents become searchable ``ready_delay`` seconds after they are added (Zep's ``processed``,
Supermemory's ``status``), so an adapter that does not wait for them finds nothing; Letta passages
at once (Letta embeds them before ``create_many`` returns). A request with another key gets a 401 whose
body echoes the key it received (as some real APIs do), to check adapters never repeat it.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["APIS", "HostedServer", "Item", "overlap_rank"]

APIS = ("zep", "letta", "supermemory")
_WORD = re.compile(r"\w+")


@dataclass
class Item:
    """One stored thing: a Zep episode, a Letta passage or a Supermemory document."""

    uid: str
    text: str
    metadata: dict[str, Any]
    created_at: str
    ready_at: float
    extra: dict[str, Any] = field(default_factory=dict)

    def ready(self) -> bool:
        return time.monotonic() >= self.ready_at


def overlap_rank(query: str, items: list[tuple[str, Any]], limit: int) -> list[tuple[float, Any]]:
    """``(score, payload)`` of the ``limit`` best ``(text, payload)`` pairs by the share of the
    query's words the text contains (0 excluded; ties keep the given order)."""
    words = {w for w in _WORD.findall(query.lower())}
    if not words or limit <= 0:
        return []
    scored = []
    for n, (text, payload) in enumerate(items):
        share = len(words & set(_WORD.findall(text.lower()))) / len(words)
        if share > 0:
            scored.append((-share, n, payload))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [(-s, payload) for s, _, payload in scored[:limit]]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class HostedServer:
    """One loopback server for one API (``zep``, ``letta`` or ``supermemory``)."""

    def __init__(self, api: str, *, api_key: str, ready_delay: float = 0.05) -> None:
        if api not in APIS:
            raise ValueError(f"api must be one of {APIS}")
        self.api = api
        self.api_key = api_key
        self.ready_delay = ready_delay
        #: store id (graph uuid, archive id, namespace) -> its items in insertion order
        self.stores: dict[str, list[Item]] = {}
        self.deleted: list[str] = []
        #: (method, path, query, JSON body, Authorization header) of every request
        self.requests: list[tuple[str, str, dict[str, list[str]], Any, str]] = []
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> HostedServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def root(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/api/v4" if self.api == "zep" else self.root

    def env(self) -> dict[str, str]:
        prefix = self.api.upper()
        return {f"{prefix}_BASE_URL": self.base_url, f"{prefix}_API_KEY": self.api_key}

    def count(self, method: str, path_part: str) -> int:
        with self.lock:
            return sum(1 for m, p, *_ in self.requests if m == method and path_part in p)

    # -- the APIs ------------------------------------------------------------------------------
    def handle(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        route = {"zep": self._zep, "letta": self._letta, "supermemory": self._supermemory}
        return route[self.api](method, parts, query, body)

    def _add(self, store: str, text: str, metadata: dict[str, Any], **extra: Any) -> Item:
        item = Item(
            uid=str(uuid.uuid4()),
            text=text,
            metadata=dict(metadata or {}),
            created_at=_now(),
            # Letta embeds passages before create_many returns: searchable at once
            ready_at=time.monotonic() + (0.0 if self.api == "letta" else self.ready_delay),
            extra=extra,
        )
        self.stores[store].append(item)
        return item

    def _missing(self, what: str) -> tuple[int, Any]:
        return 404, {"message": f"{what} not found"}

    # Zep ---------------------------------------------------------------------------------------
    def _zep_episode(self, graph: str, item: Item) -> dict[str, Any]:
        return {
            "uuid": item.uid,
            "graph_uuid": graph,
            "content": item.text,
            "created_at": item.created_at,
            "metadata": item.metadata,
            "processed": item.ready(),
            "reference_time": item.extra.get("reference_time") or item.created_at,
            "role_name": item.text.split(": ", 1)[0]
            if item.extra.get("type") == "message"
            else None,
            "source": item.extra.get("type") or "text",
            "source_description": item.extra.get("source_description"),
        }

    def _zep_edge(self, graph: str, item: Item, score: float | None) -> dict[str, Any]:
        """The one fact the stand-in extraction makes of an episode: its text."""
        return {
            "uuid": f"edge-{item.uid}",
            "graph_uuid": graph,
            "fact": item.text,
            "name": "STATED",
            "episode_uuids": [item.uid],
            "created_at": item.created_at,
            "valid_at": item.extra.get("reference_time"),
            "score": score,
            "relevance": score,
        }

    def _zep(
        self, method: str, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        if parts[:2] != ["api", "v4"] or len(parts) < 3 or parts[2] != "graphs":
            return self._missing("route")
        rest = parts[3:]
        if method == "POST" and not rest:
            graph = str(uuid.uuid4())
            self.stores[graph] = []
            return 201, {"uuid": graph, "name": body.get("name"), "created_at": _now()}
        graph = rest[0] if rest else ""
        if graph not in self.stores:
            return self._missing(f"graph {graph}")
        items = self.stores[graph]
        if method == "DELETE" and len(rest) == 1:
            del self.stores[graph]
            self.deleted.append(graph)
            return 202, {"task": {"uuid": str(uuid.uuid4()), "status": "pending"}}
        if method == "POST" and rest[1:] == ["episodes"]:
            if not isinstance(body.get("data"), str) or not body["data"]:
                return 400, {"message": "data is required"}
            item = self._add(
                graph,
                body["data"],
                body.get("metadata") or {},
                type=body.get("type"),
                reference_time=body.get("reference_time"),
                source_description=body.get("source_description"),
            )
            return 202, {"episode": self._zep_episode(graph, item), "task": {"status": "pending"}}
        if method == "GET" and len(rest) == 3 and rest[1] == "episodes":
            for item in items:
                if item.uid == rest[2]:
                    return 200, self._zep_episode(graph, item)
            return self._missing(f"episode {rest[2]}")
        if method == "POST" and rest[1:] == ["edges", "list"]:
            # one fact per processed episode, pages by an offset cursor
            size = int((query.get("page_size") or ["50"])[0])
            start = int((query.get("cursor") or ["0"])[0] or 0)
            edges = [self._zep_edge(graph, item, None) for item in items if item.ready()]
            page = edges[start : start + size]
            more = start + size < len(edges)
            return 200, {"items": page, "next_cursor": str(start + size) if more else None}
        if method == "POST" and rest[1:2] == ["search"] and len(rest) == 3:
            text = body.get("query")
            if not isinstance(text, str) or not text.strip():
                return 400, {"message": "query is required"}
            limit = int((query.get("page_size") or ["10"])[0])
            ready = [(i.text, i) for i in items if i.ready()]
            ranked = overlap_rank(text, ready, limit)
            if rest[2] == "edges":
                page = [self._zep_edge(graph, item, score) for score, item in ranked]
            elif rest[2] == "episodes":
                page = [
                    {**self._zep_episode(graph, item), "score": score, "relevance": score}
                    for score, item in ranked
                ]
            else:
                return self._missing(f"search scope {rest[2]}")
            return 200, {"items": page, "next_cursor": None, "total_size": len(page)}
        return self._missing("route")

    # Letta -------------------------------------------------------------------------------------
    def _letta_passage(self, archive: str, item: Item) -> dict[str, Any]:
        return {
            "id": item.uid,
            "text": item.text,
            "archive_id": archive,
            "created_at": item.extra.get("created_at") or item.created_at,
            "metadata": item.metadata,
            "tags": item.extra.get("tags"),
        }

    def _letta(
        self, method: str, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        if parts[:1] != ["v1"]:
            return self._missing("route")
        rest = parts[1:]
        if method == "POST" and rest == ["archives"]:
            archive = f"archive-{uuid.uuid4()}"
            self.stores[archive] = []
            return 200, {
                "id": archive,
                "name": body.get("name"),
                "created_at": _now(),
                "description": body.get("description"),
            }
        if method == "POST" and rest == ["passages", "search"]:
            archive = body.get("archive_id")
            if archive not in self.stores:
                return self._missing(f"archive {archive}")
            ranked = overlap_rank(
                str(body.get("query") or ""),
                [(i.text, i) for i in self.stores[archive] if i.ready()],
                int(body.get("limit") or 10),
            )
            return 200, [
                {"passage": self._letta_passage(archive, item), "score": score, "metadata": {}}
                for score, item in ranked
            ]
        if rest[:1] != ["archives"] or len(rest) < 2 or rest[1] not in self.stores:
            return self._missing("archive")
        archive = rest[1]
        if method == "DELETE" and len(rest) == 2:
            del self.stores[archive]
            self.deleted.append(archive)
            return 200, None
        if method == "POST" and rest[2:] == ["passages", "batch"]:
            created = []
            for p in body.get("passages") or []:
                item = self._add(
                    archive,
                    p["text"],
                    p.get("metadata") or {},
                    created_at=p.get("created_at"),
                    tags=p.get("tags"),
                )
                created.append(self._letta_passage(archive, item))
            return 200, created
        return self._missing("route")

    # Supermemory -------------------------------------------------------------------------------
    def _sm_system(self, item: Item) -> dict[str, Any]:
        return {"createdAt": item.created_at, "updatedAt": item.created_at}

    def _supermemory(
        self, method: str, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        if parts[:1] != ["ns"] or len(parts) < 2:
            return self._missing("route")
        namespace, rest = parts[1], parts[2:]
        items = self.stores.get(namespace, [])
        if method == "DELETE" and not rest:
            gone = self.stores.pop(namespace, [])
            self.deleted.append(namespace)
            memories = sum(len(_lines(i.text)) for i in gone)
            return 200, {
                "status": "deleted",
                "namespace": namespace,
                "deletedDocumentsCount": len(gone),
                "deletedMemoriesCount": memories,
            }
        if method == "POST" and rest == ["document"]:
            if not isinstance(body.get("content"), str) or not body["content"].strip():
                return 400, {"error": "content is required"}
            self.stores.setdefault(namespace, [])
            item = self._add(namespace, body["content"], body.get("metadata") or {})
            item.extra["date"] = body.get("date")
            return 200, {"id": item.uid, "status": "queued"}
        if method == "GET" and len(rest) == 2 and rest[0] == "document":
            for item in items:
                if item.uid == rest[1]:
                    return 200, {
                        "id": item.uid,
                        "type": "text",
                        "content": item.text,
                        "metadata": item.metadata,
                        "system": {
                            **self._sm_system(item),
                            "status": "done" if item.ready() else "queued",
                        },
                    }
            return self._missing(f"document {rest[1]}")
        if method == "POST" and rest == ["list", "memories"]:
            limit = int((query.get("limit") or ["10"])[0])
            page = int((query.get("page") or ["1"])[0])
            every = [
                {
                    "id": f"{item.uid}-{n}",
                    "memory": line,
                    "metadata": item.metadata,
                    "isStatic": False,
                    "isInference": False,
                    "isLatest": True,
                    "isForgotten": False,
                    "version": 1,
                    "system": self._sm_system(item),
                }
                for item in items
                if item.ready()
                for n, line in enumerate(_lines(item.text))
            ]
            pages = max(1, -(-len(every) // limit))
            return 200, {
                "documents": [],
                "chunks": [],
                "memories": every[(page - 1) * limit : page * limit],
                "pagination": {
                    "currentPage": page,
                    "limit": limit,
                    "totalItems": len(every),
                    "totalPages": pages,
                },
            }
        if method == "POST" and rest == ["search"]:
            text = body.get("query")
            if not isinstance(text, str) or not text.strip():
                return 400, {"error": "query is required"}
            memories = [
                ((line, (item, n)))
                for item in items
                if item.ready()
                for n, line in enumerate(_lines(item.text))
            ]
            ranked = overlap_rank(text, memories, int(body.get("limit") or 10))
            results = [
                {
                    "id": f"{item.uid}-{n}",
                    "memory": _lines(item.text)[n],
                    "metadata": item.metadata,
                    "similarity": score,
                    "isLatest": True,
                    "isInference": False,
                    "system": self._sm_system(item),
                }
                for score, (item, n) in ranked
            ]
            return 200, {"results": results, "searchTime": 1.0}
        return self._missing("route")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class _Handler(BaseHTTPRequestHandler):
    owner: HostedServer
    protocol_version = "HTTP/1.1"
    # one write per reply (headers and body together) and no Nagle delay: on a kept-alive
    # connection a reply split in two waits for the client's delayed ACK (~40 ms a request)
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _auth_ok(self, header: str) -> bool:
        want = "Api-Key" if self.owner.api == "zep" else "Bearer"
        return header == f"{want} {self.owner.api_key}"

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._reply(400, {"message": "invalid JSON"})
            return
        query = parse_qs(split.query)
        header = self.headers.get("Authorization") or ""
        owner = self.owner
        with owner.lock:
            owner.requests.append((method, split.path, query, body, header))
            if not self._auth_ok(header):
                status, payload = 401, {"message": f"invalid credentials: {header!r}"}
            else:
                if not isinstance(body, Mapping) and method != "GET":
                    body = {}
                status, payload = owner.handle(method, split.path, query, body)
        self._reply(status, payload)

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PATCH(self) -> None:
        self._serve("PATCH")
