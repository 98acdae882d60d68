"""Errors and the user-facing message constants (tests import these)."""

from __future__ import annotations

__all__ = [
    "AdapterError",
    "DatasetError",
    "JudgeError",
    "MemevalError",
    "UnknownSystemError",
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
