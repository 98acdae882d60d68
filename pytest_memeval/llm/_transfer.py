"""Export the LLM cache to one file and import it elsewhere (shards sharing judge calls).

The file is JSON Lines: a header ``{"format": "pytest-memeval-llm-cache/1"}`` and one
``{"key", "value", "created"}`` object per entry, exactly the SQLite rows. Each imported entry is
tagged with its file (as given) and the file's sha256 (table ``imported``), so a hit it serves is
counted by file and role in the summary and provenance. Import checks every
line (a 64-hex key, a value the cache can decode, at most 4 MB per line) and skips bad ones;
entries already in the local cache are kept (``INSERT OR IGNORE``). Nothing is ever evaluated or
unpickled. Writing goes through a temporary file and ``os.replace``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import stat
from pathlib import Path

from ..errors import MemevalError
from ._cache import _IMPORTED_SCHEMA, _SCHEMA, LLMCache, _decode

__all__ = ["FORMAT", "export_cache", "import_cache"]

FORMAT = "pytest-memeval-llm-cache/1"
_KEY = re.compile(r"^[0-9a-f]{64}$")
_MAX_LINE = 4 << 20


def export_cache(db_path: Path, out: Path) -> int:
    """Write every entry of the cache at ``db_path`` to ``out``; returns the number written (an
    absent cache gives a file with the header only). ``out`` must be absent or a regular file (a
    FIFO, a device, a directory or a symlink is refused, never replaced); the file is written
    beside it and moved into place with ``os.replace``. A row that is not the cache's own shape
    (a BLOB or number where text belongs, a value the cache cannot decode) is refused, naming it."""
    out = Path(out)
    problem = _export_target_problem(out)
    if problem is not None:
        raise MemevalError(f"{out}: {problem}")
    rows: list[tuple[str, str, float]] = []
    if Path(db_path).is_file():
        try:
            conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=60)
            try:
                raw = conn.execute(
                    "SELECT key, value, created FROM completions ORDER BY key"
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise MemevalError(f"cannot read the LLM cache {db_path} ({exc})") from None
        for number, (key, value, created) in enumerate(raw, 1):
            bad_key = not isinstance(key, str) or not _KEY.match(key)
            if bad_key or not isinstance(value, str):
                what, found = ("key", key) if bad_key else ("value", value)
                raise MemevalError(
                    f"the LLM cache {db_path}: row {number} holds a {type(found).__name__} "
                    f"{what}, not the cache's text; the file was written by something else: "
                    "delete it (it only holds cached replies) or run with --memeval-no-cache"
                )
            if isinstance(created, bool) or not isinstance(created, int | float):
                created = 0.0
            rows.append((key, value, float(created)))
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"format": FORMAT}) + "\n")
            for key, value, created in rows:
                line = {"key": key, "value": value, "created": created}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        problem = _export_target_problem(out)  # it may have changed while we wrote
        if problem is not None:
            raise MemevalError(f"{out}: {problem}")
        os.replace(tmp, out)
    except OSError as exc:
        raise MemevalError(f"cannot write {out} ({exc.strerror})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return len(rows)


def _export_target_problem(out: Path) -> str | None:
    """Why ``out`` may not be replaced by an export (None: absent or a regular file)."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot check it ({exc.strerror})"
    if stat.S_ISREG(st.st_mode):
        return None
    kind = (
        "a symbolic link"
        if stat.S_ISLNK(st.st_mode)
        else "a directory"
        if stat.S_ISDIR(st.st_mode)
        else "a FIFO"
        if stat.S_ISFIFO(st.st_mode)
        else "a device or socket"
    )
    return (
        f"is {kind}, not a regular file; the export never replaces it: give a path that does "
        "not exist or is a regular file"
    )


def import_cache(db_path: Path, source: Path) -> tuple[int, int]:
    """Add the entries of ``source`` to the cache at ``db_path``; returns (added, skipped), where
    skipped counts malformed lines and keys already present."""
    source = Path(source)
    try:
        fh = open(source, "rb")  # noqa: SIM115  (closed by the `with fh` below)
    except OSError as exc:
        raise MemevalError(
            f"cannot read it ({exc.strerror}); it is a file written by --memeval-cache-export"
        ) from None
    cache = LLMCache(Path(db_path).parent, filename=Path(db_path).name)
    added = skipped = 0
    with fh:
        digest = hashlib.sha256()
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
        sha256 = digest.hexdigest()
        fh.seek(0)
        header = fh.readline(_MAX_LINE + 1)
        try:
            fmt = json.loads(header).get("format")
        except (ValueError, AttributeError, RecursionError):
            fmt = None
        if fmt != FORMAT:
            raise MemevalError(
                f"not an LLM-cache export (its first line is not {{'format': {FORMAT!r}}}); "
                "write one with --memeval-cache-export=FILE"
            )
        with cache._lock:
            try:
                conn = cache._connection()
                conn.execute(_SCHEMA)
                conn.execute(_IMPORTED_SCHEMA)
                conn.execute("BEGIN")
                for raw in iter(lambda: fh.readline(_MAX_LINE + 1), b""):
                    entry = _entry(raw)
                    if entry is None:
                        skipped += 1
                        continue
                    cur = conn.execute(
                        "INSERT OR IGNORE INTO completions (key, value, created) VALUES (?, ?, ?)",
                        entry,
                    )
                    if cur.rowcount == 1:
                        added += 1
                        conn.execute(
                            "INSERT OR REPLACE INTO imported (key, source, sha256) "
                            "VALUES (?, ?, ?)",
                            (entry[0], str(source), sha256),
                        )
                    else:
                        skipped += 1
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise MemevalError(f"cannot write the LLM cache {db_path} ({exc})") from None
    cache.close()
    return added, skipped


def _entry(raw: bytes) -> tuple[str, str, float] | None:
    if len(raw) > _MAX_LINE or not raw.strip():
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    key, value, created = data.get("key"), data.get("value"), data.get("created")
    if not isinstance(key, str) or not _KEY.match(key) or not isinstance(value, str):
        return None
    if _decode(value) is None:
        return None
    if isinstance(created, bool) or not isinstance(created, int | float):
        created = 0.0
    return key, value, float(created)


def main(argv: list[str] | None = None) -> int:
    """``memeval-cache export FILE`` / ``memeval-cache import FILE...`` (``--cache-dir DIR``,
    default ``.memeval-cache``): the same as the pytest options, without a run."""
    import argparse

    from ._cache import CACHE_FILENAME

    parser = argparse.ArgumentParser(
        prog="memeval-cache", description="Export or import pytest-memeval's LLM cache."
    )
    parser.add_argument("action", choices=("export", "import"))
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--cache-dir", default=".memeval-cache", metavar="DIR")
    args = parser.parse_args(argv)
    db = Path(args.cache_dir).expanduser() / "llm" / CACHE_FILENAME  # as LLMRuntime keeps it
    try:
        if args.action == "export":
            if len(args.files) != 1:
                parser.error("export writes one FILE")
            n = export_cache(db, Path(args.files[0]))
            print(f"memeval-cache: {n} entries written to {args.files[0]}")
        else:
            for name in args.files:
                added, skipped = import_cache(db, Path(name))
                print(f"memeval-cache: {name}: {added} entries added, {skipped} skipped")
    except MemevalError as exc:
        print(f"memeval-cache: {exc}", flush=True)
        return 2
    return 0
