"""The loopback LLM server (``llm_server.LLMServer``) plus both providers' batch APIs, enough for
the official SDKs: OpenAI's Batch API (``POST /v1/files`` multipart JSONL upload,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``) and Anthropic's
Message Batches (``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, its
``results_url`` streaming JSONL).

A batch is ``in_progress`` while ``srv.hold`` is set (all but the first ``srv.hold_after``
batches created), else it ends at its next retrieval; its replies
come from the same ``reply`` function as the synchronous endpoints (so a batch reply equals the
synchronous one). ``srv.fault(index, custom_id)`` may answer ``"errored"`` or ``"expired"`` for a
request of a batch. Every request is recorded under a route name: ``POST /v1/batches`` and
``POST /v1/messages/batches`` (creations), ``POST /v1/files``, ``GET /v1/batches/{id}``,
``GET /v1/files/{id}/content``, ``GET /v1/messages/batches/{id}`` and
``GET /v1/messages/batches/{id}/results``; ``srv.count("POST /v1/batches")`` counts creations.
``srv.rewrite(api, lines)`` (when set) turns the result lines of a batch (dicts) into the raw
lines served (bytes): a malformed line, a reply without choices, a repeated ``custom_id``.
``POST /v1/batches/{id}/cancel`` and ``POST /v1/messages/batches/{id}/cancel`` mark a batch
cancelled (recorded under those route names).
"""

from __future__ import annotations

import datetime as _dt
import email.parser
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llm_server import LLMServer, RecordedRequest, _Handler, chat_payload

__all__ = ["ANTHROPIC_CANCEL", "ANTHROPIC_CREATE", "OPENAI_CANCEL", "OPENAI_CREATE", "BatchServer"]

OPENAI_CREATE = "POST /v1/batches"
ANTHROPIC_CREATE = "POST /v1/messages/batches"
Fault = Callable[[int, str], str | None]
Rewrite = Callable[[str, list[dict[str, Any]]], list[bytes]]
OPENAI_CANCEL = "POST /v1/batches/{id}/cancel"
ANTHROPIC_CANCEL = "POST /v1/messages/batches/{id}/cancel"


@dataclass
class _Batch:
    id: str
    api: str  # "openai" / "anthropic"
    requests: list[tuple[str, dict[str, Any]]]  # (custom_id, body)
    created: float
    input_file_id: str = ""
    lines: list[dict[str, Any]] | None = None  # the results, once ended
    cancelled: bool = False


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _BatchHandler(_Handler):
    server: Any

    def _log(self, route: str, body: Any = None) -> None:
        owner: BatchServer = self.server.owner
        owner._record(
            RecordedRequest(route.split()[0], route, dict(self.headers.items()), body, "ok")
        )

    def do_GET(self) -> None:
        owner: BatchServer = self.server.owner
        path = self.path.split("?", 1)[0]
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "batches"] and len(parts) == 3:
            self._log("GET /v1/batches/{id}")
            batch = owner.batches.get(parts[2])
            if batch is None:
                self._respond_json(404, {"error": {"message": "no such batch"}})
                return
            self._respond_json(200, owner._openai_batch(batch))
            return
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
            self._log("GET /v1/files/{id}/content")
            data = owner.files.get(parts[2])
            if data is None:
                self._respond_json(404, {"error": {"message": "no such file"}})
                return
            self._respond(200, data, "application/octet-stream")
            return
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) in (4, 5):
            batch = owner.batches.get(parts[3])
            if len(parts) == 4:
                self._log("GET /v1/messages/batches/{id}")
                if batch is None:
                    self._respond_json(404, {"type": "error", "error": {"message": "no batch"}})
                    return
                self._respond_json(200, owner._anthropic_batch(batch, self.server))
                return
            self._log("GET /v1/messages/batches/{id}/results")
            if batch is None or batch.lines is None:
                self._respond_json(404, {"type": "error", "error": {"message": "not ended"}})
                return
            data = owner._raw("anthropic", batch.lines)
            self._respond(200, data, "application/x-jsonl")
            return
        super().do_GET()

    def do_POST(self) -> None:
        owner: BatchServer = self.server.owner
        path = self.path.split("?", 1)[0]
        parts = path.strip("/").split("/")
        if parts[-1:] == ["cancel"] and parts[:-2] in (
            ["v1", "batches"],
            ["v1", "messages", "batches"],
        ):
            anthropic = parts[1] == "messages"
            self._log(ANTHROPIC_CANCEL if anthropic else OPENAI_CANCEL)
            batch = owner.batches.get(parts[-2])
            if batch is None:
                self._respond_json(404, {"error": {"message": "no such batch"}})
                return
            batch.cancelled = True
            if anthropic:
                self._respond_json(200, owner._anthropic_batch(batch, self.server))
            else:
                self._respond_json(200, owner._openai_batch(batch))
            return
        if path not in ("/v1/files", "/v1/batches", "/v1/messages/batches"):
            super().do_POST()
            return
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path == "/v1/files":
            self._log("POST /v1/files")
            message = email.parser.BytesParser().parsebytes(
                b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + raw
            )
            data = b""
            for part in message.walk():
                if part.get_param("name", header="content-disposition") == "file":
                    payload = part.get_payload(decode=True)
                    data = payload if isinstance(payload, bytes) else b""
            file_id = owner._new_id("file")
            owner.files[file_id] = data
            self._respond_json(
                200,
                {
                    "id": file_id,
                    "object": "file",
                    "bytes": len(data),
                    "created_at": int(time.time()),
                    "filename": "upload.jsonl",
                    "purpose": "batch",
                    "status": "processed",
                },
            )
            return
        body = json.loads(raw)
        if path == "/v1/batches":
            self._log(OPENAI_CREATE, body)
            data = owner.files[body["input_file_id"]]
            requests = []
            for line in data.decode().splitlines():
                if line.strip():
                    row = json.loads(line)
                    requests.append((row["custom_id"], row["body"]))
            batch = _Batch(owner._new_id("batch"), "openai", requests, time.time())
            batch.input_file_id = body["input_file_id"]
            owner.batches[batch.id] = batch
            self._respond_json(200, owner._openai_batch(batch))
            return
        self._log(ANTHROPIC_CREATE, body)
        requests = [(r["custom_id"], r["params"]) for r in body["requests"]]
        batch = _Batch(owner._new_id("msgbatch"), "anthropic", requests, time.time())
        owner.batches[batch.id] = batch
        self._respond_json(200, owner._anthropic_batch(batch, self.server))


class BatchServer(LLMServer):
    """:class:`LLMServer` with both batch APIs (see the module docstring)."""

    handler = _BatchHandler

    def __init__(self, *, fault: Fault | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hold = threading.Event()  # set: batches stay in_progress
        self.hold_after = 0  # ... all but the first hold_after batches created
        self.fault = fault
        self.rewrite: Rewrite | None = None
        self.batches: dict[str, _Batch] = {}
        self.files: dict[str, bytes] = {}
        self._ids = 0
        self._batch_lock = threading.Lock()

    def _new_id(self, prefix: str) -> str:
        with self._batch_lock:
            self._ids += 1
            return f"{prefix}_{self._ids:06d}"

    def _end(self, batch: _Batch) -> None:
        """Compute the batch's results once (when not held)."""
        with self._batch_lock:
            if batch.lines is not None:
                return
            if self.hold.is_set() and list(self.batches).index(batch.id) >= self.hold_after:
                return
            lines: list[dict[str, Any]] = []
            for index, (custom_id, body) in enumerate(batch.requests):
                fault = self.fault(index, custom_id) if self.fault is not None else None
                lines.append(self._line(batch.api, custom_id, body, fault, index))
            batch.lines = lines
            if batch.api == "openai":
                self.files[f"{batch.id}-out"] = self._raw(
                    "openai", [x for x in lines if x["error"] is None]
                )
                self.files[f"{batch.id}-err"] = "".join(
                    json.dumps(x) + "\n" for x in lines if x["error"] is not None
                ).encode()

    def _raw(self, api: str, lines: list[dict[str, Any]]) -> bytes:
        """The served bytes of result lines: JSON Lines, or what ``rewrite`` makes of them."""
        if self.rewrite is None:
            return "".join(json.dumps(x) + "\n" for x in lines).encode()
        return b"".join(line + b"\n" for line in self.rewrite(api, lines))

    def _line(
        self, api: str, custom_id: str, body: dict[str, Any], fault: str | None, index: int
    ) -> dict[str, Any]:
        if api == "openai":
            if fault is not None:
                return {
                    "id": f"batch_req_{index}",
                    "custom_id": custom_id,
                    "response": None,
                    "error": {"code": fault, "message": f"injected {fault}"},
                }
            return {
                "id": f"batch_req_{index}",
                "custom_id": custom_id,
                "response": {
                    "status_code": 200,
                    "request_id": f"req_{index}",
                    "body": chat_payload(self.reply, api, body, lambda: f"b{index}"),
                },
                "error": None,
            }
        if fault == "errored":
            result: dict[str, Any] = {
                "type": "errored",
                "error": {"type": "error", "error": {"type": "api_error", "message": "injected"}},
            }
        elif fault is not None:
            result = {"type": fault}
        else:
            result = {
                "type": "succeeded",
                "message": chat_payload(self.reply, api, body, lambda: f"b{index}"),
            }
        return {"custom_id": custom_id, "result": result}

    def _openai_batch(self, batch: _Batch) -> dict[str, Any]:
        self._end(batch)
        ended = batch.lines is not None
        failed = sum(1 for x in batch.lines or () if x["error"] is not None)
        total = len(batch.requests)
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": "completed" if ended else "cancelling" if batch.cancelled else "in_progress",
            "output_file_id": f"{batch.id}-out" if ended else None,
            "error_file_id": f"{batch.id}-err" if ended and failed else None,
            "created_at": int(batch.created),
            "request_counts": {
                "total": total,
                "completed": total - failed if ended else 0,
                "failed": failed,
            },
        }

    def _anthropic_batch(self, batch: _Batch, server: Any) -> dict[str, Any]:
        self._end(batch)
        ended = batch.lines is not None
        kinds = [x["result"]["type"] for x in batch.lines or ()]
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended"
            if ended
            else "canceling"
            if batch.cancelled
            else "in_progress",
            "request_counts": {
                "processing": 0 if ended else len(batch.requests),
                "succeeded": kinds.count("succeeded"),
                "errored": kinds.count("errored"),
                "canceled": kinds.count("canceled"),
                "expired": kinds.count("expired"),
            },
            "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + 86400),
            "ended_at": _iso(time.time()) if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": (
                f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None
            ),
        }
