"""On-disk cache of LLM completions shared by the answerer, the judges and every xdist worker.

Storage choice: one SQLite file in WAL mode under the cache directory, rather than one file per
key renamed into place. Reasons:

* WAL lets readers proceed while one writer commits, and ``busy_timeout`` makes concurrent
  writers from many xdist workers queue instead of failing; every ``INSERT OR REPLACE`` is a
  single atomic statement, so an entry is either fully there or absent (no torn writes).
* A run with 10 graded judge runs per question on LongMemEval produces tens of thousands of
  entries; one file keeps the cache directory small and cheap to copy, list or delete, where one
  file per key would mean as many inodes and a directory scan for ``len``.
* ``PRAGMA integrity_check`` gives a real corruption check.

Each process opens its own connection lazily (a connection inherited over ``fork`` is never used;
the object pickles without it, for ``spawn``). Inside a process one connection is shared by the
threads under a lock: the statements are tiny next to an HTTP call.

The key is the sha256 of a canonical JSON of exactly (provider, model, base_url, messages,
temperature (null when none is sent), max_tokens, run_index, and json_mode and reasoning_effort
when set): everything that changes the output, and nothing else (no API
key, no timeout, no retry settings; not ``n``, which can only be 1, nor ``stream``, which can only be
false, nor the name of the field the limit is sent in). An unreadable entry is a miss. Any failure of the database
itself (cannot create the directory, not a database, disk full, locked past the busy timeout)
turns this cache off for the rest of the process with one ``logging`` line, never an exception.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._base import Completion, Request
from ._redact import redact

__all__ = ["CACHE_FILENAME", "LLMCache", "cache_key", "canonical_request", "import_label"]

log = logging.getLogger("pytest_memeval.llm")

CACHE_FILENAME = "llm-cache.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS completions ("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
)
#: which entries came from ``--memeval-cache-import`` (the file as given and its sha256); a
#: completion computed here replaces the tag
_IMPORTED_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS imported ("
    " key TEXT PRIMARY KEY, source TEXT NOT NULL, sha256 TEXT NOT NULL)"
)
_VALUE_VERSION = 1


def import_label(source: str, sha256: str) -> str:
    """How an import is named in summaries and provenance."""
    return f"{source} (sha256 {sha256[:12]})"


def canonical_request(*, provider: str, model: str, base_url: str | None, request: Request) -> str:
    """The canonical JSON that is hashed into the cache key (sorted keys, no whitespace).
    ``json_mode`` and ``reasoning_effort`` are only part of the key when set (keys of earlier
    runs stay valid); a request that sends no temperature has ``"temperature": null``."""
    payload: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "base_url": (base_url or "").rstrip("/"),
        "messages": [[m.role, m.content] for m in request.messages],
        "temperature": None if request.temperature is None else float(request.temperature),
        "max_tokens": None if request.max_tokens is None else int(request.max_tokens),
        "run_index": int(request.run_index),
    }
    if request.json_mode:
        payload["json_mode"] = True
    if request.reasoning_effort is not None:
        payload["reasoning_effort"] = request.reasoning_effort
    if request.extra:  # only when given: keys of earlier runs stay valid
        payload["extra"] = [[name, value] for name, value in request.extra]
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(*, provider: str, model: str, base_url: str | None, request: Request) -> str:
    """sha256 hex digest of :func:`canonical_request`."""
    text = canonical_request(provider=provider, model=model, base_url=base_url, request=request)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _encode(completion: Completion) -> str:
    return json.dumps(
        {
            "v": _VALUE_VERSION,
            "text": completion.text,
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "model": completion.model,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _decode(raw: object) -> Completion | None:
    """The stored completion, or None for anything malformed."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("v") != _VALUE_VERSION:
        return None
    text, inp, out, model = (
        data.get("text"),
        data.get("input_tokens"),
        data.get("output_tokens"),
        data.get("model", ""),
    )
    if not isinstance(text, str) or not isinstance(model, str):
        return None
    if type(inp) is not int or type(out) is not int or inp < 0 or out < 0:
        return None
    return Completion(text=text, input_tokens=inp, output_tokens=out, cached=True, model=model)


class LLMCache:
    """SQLite (WAL) completion cache at ``cache_dir / filename``; thread- and process-safe."""

    def __init__(
        self,
        cache_dir: str | os.PathLike[str],
        *,
        filename: str = CACHE_FILENAME,
        busy_timeout: float = 60.0,
    ) -> None:
        self.path = Path(cache_dir) / filename
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._orphans: list[sqlite3.Connection] = []
        self._disabled_reason: str | None = None
        self.hits = 0
        self.misses = 0
        self.writes = 0
        #: import label -> role -> hits served from that imported file
        self.import_hits: dict[str, dict[str, int]] = {}
        self._trace = threading.local()

    # -- pickling (multiprocessing "spawn"): never ship a connection or a lock ------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_conn"] = None
        state["_orphans"] = []
        state["_lock"] = None
        state["_trace"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._trace = threading.local()
        self._pid = -1  # force a fresh connection in this process

    # -- state --------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """False once a database failure turned the cache off for this process."""
        return self._disabled_reason is None

    @property
    def disabled_reason(self) -> str | None:
        return self._disabled_reason

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes}

    def check_usable(self) -> str | None:
        """Open the database once and read it: None when usable, else why not (a corrupt or
        unreadable file), with what to do. The cache is then off for this process. Reads one row,
        not the table (``count`` would scan a large cache at every start)."""
        with self._lock:
            try:
                self._connection().execute("SELECT 1 FROM completions LIMIT 1").fetchone()
            except (sqlite3.Error, OSError) as exc:
                self._disable("open failed", exc)
        if self._disabled_reason is None:
            return None
        return (
            f"the LLM cache {self.path} cannot be used ({self._disabled_reason}); every LLM call "
            "would be paid again: delete the file (it only holds cached replies) or run with "
            "--memeval-no-cache"
        )

    def _disable(self, what: str, exc: BaseException) -> None:
        if self._disabled_reason is None:
            self._disabled_reason = redact(f"{what}: {type(exc).__name__}: {exc}")
            log.warning(
                "pytest-memeval: LLM cache %s off for this process (%s); continuing without it",
                self.path,
                self._disabled_reason,
            )
        self._drop_connection()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (opened on first use). Call with the lock held."""
        if self._pid != os.getpid():
            # Inherited over fork: SQLite forbids using (or even closing) it here.
            if self._conn is not None:
                self._orphans.append(self._conn)
            self._conn = None
            self._pid = os.getpid()
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(self.path),
            timeout=self.busy_timeout,
            isolation_level=None,  # autocommit: every statement is its own transaction
            check_same_thread=False,  # shared by this process's threads under self._lock
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            deadline = time.monotonic() + self.busy_timeout
            while True:
                # Switching to WAL needs a brief exclusive lock; when many workers open a new
                # file at once SQLite may answer "locked" without waiting, so retry by hand.
                try:
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                    conn.execute(_SCHEMA)
                    conn.execute(_IMPORTED_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
            if mode is None or str(mode[0]).lower() != "wal":
                raise sqlite3.OperationalError(f"could not enable WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; durable enough for a cache
        except BaseException:
            conn.close()
            raise
        return conn

    # -- operations ---------------------------------------------------------------------------
    def get(self, key: str) -> Completion | None:
        """The cached completion (``cached=True``), or None on a miss or an unreadable entry."""
        if self._disabled_reason is not None:
            return None
        with self._lock:
            try:
                row = (
                    self._connection()
                    .execute(
                        "SELECT c.value, i.source, i.sha256 FROM completions c LEFT JOIN "
                        "imported i ON i.key = c.key WHERE c.key = ?",
                        (key,),
                    )
                    .fetchone()
                )
            except (sqlite3.Error, OSError) as exc:
                self._disable("read failed", exc)
                return None
            found = _decode(row[0]) if row is not None else None
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
                if row[1] is not None:
                    found = dataclasses.replace(
                        found, source=import_label(str(row[1]), str(row[2]))
                    )
            return found

    def note_import(self, role: str, completion: Completion) -> None:
        """Count a hit served from an imported file (by file and role) and add it to this
        thread's trace (:meth:`trace`)."""
        if not completion.source:
            return
        with self._lock:
            roles = self.import_hits.setdefault(completion.source, {})
            roles[role] = roles.get(role, 0) + 1
        sources = getattr(self._trace, "sources", None)
        if sources is not None:
            sources.append(completion.source)

    @contextlib.contextmanager
    def trace(self) -> Iterator[list[str]]:
        """The import labels of the hits this thread is served inside the block."""
        previous = getattr(self._trace, "sources", None)
        found: list[str] = []
        self._trace.sources = found
        try:
            yield found
        finally:
            self._trace.sources = previous

    def put(self, key: str, completion: Completion) -> None:
        if self._disabled_reason is not None:
            return
        value = _encode(completion)
        with self._lock:
            try:
                conn = self._connection()
                conn.execute(
                    "INSERT OR REPLACE INTO completions (key, value, created) VALUES (?, ?, ?)",
                    (key, value, time.time()),
                )
                conn.execute("DELETE FROM imported WHERE key = ?", (key,))
                self.writes += 1
            except (sqlite3.Error, OSError) as exc:
                self._disable("write failed", exc)

    def empty(self) -> bool:
        """No entry stored (reads one row, never the table): every call of this run will miss.
        True too when the cache is off (every call is paid)."""
        if self._disabled_reason is not None:
            return True
        with self._lock:
            try:
                row = self._connection().execute("SELECT 1 FROM completions LIMIT 1").fetchone()
            except (sqlite3.Error, OSError) as exc:
                self._disable("read failed", exc)
                return True
        return row is None

    def count(self) -> int:
        """Number of stored entries (0 when the cache is off)."""
        if self._disabled_reason is not None:
            return 0
        with self._lock:
            try:
                row = self._connection().execute("SELECT COUNT(*) FROM completions").fetchone()
            except (sqlite3.Error, OSError) as exc:
                self._disable("count failed", exc)
                return 0
            return int(row[0])

    def __len__(self) -> int:
        return self.count()

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` result ("ok" when sound)."""
        with self._lock:
            rows = self._connection().execute("PRAGMA integrity_check").fetchall()
            return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                self._drop_connection()
            else:
                self._conn = None

    def __enter__(self) -> LLMCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
