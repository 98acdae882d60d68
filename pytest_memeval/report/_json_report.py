"""JSON report (fixed keys: docs/design.md#the-json-report), written atomically."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from ._model import Summary

__all__ = ["summary_json", "write_json", "write_text_atomic"]


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


#: Lists written one compact element per line instead of fully indented: the per-question records.
_ONE_PER_LINE = frozenset({"questions"})


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)


def _layout(value: Any, level: int) -> str:
    """``json.dumps(value, indent=2)``, except that a ``questions`` list has one record per line.

    Indented output makes ``json`` use its pure-Python encoder, which took longer than all the
    scoring of a LoCoMo run; one line per question keeps the file readable and diff-friendly and
    lets the C encoder write the bulk of it.
    """
    pad = "  " * (level + 1)
    if isinstance(value, dict) and value:
        fields = []
        for key, item in value.items():
            name = _compact(str(key))
            if key in _ONE_PER_LINE and isinstance(item, list) and item:
                rows = ",\n".join(f"{pad}  {_compact(row)}" for row in item)
                fields.append(f"{pad}{name}: [\n{rows}\n{pad}]")
            else:
                fields.append(f"{pad}{name}: {_layout(item, level + 1)}")
        return "{\n" + ",\n".join(fields) + "\n" + "  " * level + "}"
    if isinstance(value, list) and value:
        rows = ",\n".join(pad + _layout(item, level + 1) for item in value)
        return "[\n" + rows + "\n" + "  " * level + "]"
    return _compact(value)


def summary_json(summary: Summary) -> str:
    return _layout(_finite(summary.to_dict()), 0)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place: a report is
    never left half-written, even by a crash."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(summary: Summary, path: Path) -> Path:
    return write_text_atomic(path, summary_json(summary) + "\n")
