"""Errors and the user-facing message constants (tests import these)."""

from __future__ import annotations

import re

__all__ = [
    "AdapterError",
    "DatasetError",
    "JudgeError",
    "MemevalError",
    "UnknownSystemError",
    "terminal_safe",
]


class MemevalError(Exception):
    """Base class of every error raised by pytest-memeval on purpose."""


class DatasetError(MemevalError):
    """A benchmark file is missing, malformed or fails its checksum.

    The message always names the file, the record and the field, and says how to fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        parts = []
        if path:
            parts.append(str(path))
        if record:
            parts.append(f"record {record}")
        if field:
            parts.append(f"field {field!r}")
        prefix = ": ".join([", ".join(parts)]) if parts else ""
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path = path
        self.record = record
        self.field = field


class AdapterError(MemevalError):
    """A memory system could not be resolved, built, or returned something of the wrong type."""


class UnknownSystemError(AdapterError):
    """A ``--memsys`` value that no resolution rule knows (it may still be a conftest fixture)."""


class JudgeError(MemevalError):
    """An LLM judge or answerer could not be configured or called."""


MSG_UNKNOWN_SYSTEM = (
    "--memsys: unknown memory system {name!r}. Available: {available}. "
    "A system is a conftest fixture, an entry point in group 'pytest_memeval.systems', "
    "a built-in, 'replay:PATH' or 'package.module:factory'."
)
MSG_UNKNOWN_BENCHMARK = "--memeval: unknown benchmark {name!r}. Available: {available}."
MSG_OFFLINE = (
    "could not download {what} from {url} ({reason}). Pass a local copy with "
    "--memeval-data=DIR (expects {layout}) or set MEMEVAL_DATA_DIR."
)


def terminal_safe(text: str, limit: int | None = None) -> str:
    """``text`` with every control character (C0 but tab and newline, DEL, C1, and the Unicode
    bidi overrides) shown as a ``\\xNN`` / ``\\uNNNN`` escape, so text that came from outside (a
    service's error body, names in a baseline file) cannot move the cursor, recolour or retitle
    the terminal; cut to ``limit`` characters first when given. Used where such text enters a
    message (docs/design.md#untrusted-input-services-files-templates)."""
    if limit is not None and len(text) > limit:
        text = text[:limit]
    if _SAFE.fullmatch(text):
        return text
    return "".join(_escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if _SAFE.fullmatch(ch):
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_SAFE = re.compile(r"[^\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*")
