"""JSON report (DESIGN.md section 7, fixed keys), written atomically."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .model import Summary

__all__ = ["summary_json", "write_json", "write_text_atomic"]


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def summary_json(summary: Summary) -> str:
    return json.dumps(
        _finite(summary.to_dict()), indent=2, ensure_ascii=False, allow_nan=False, default=str
    )


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place: a report is
    never left half-written, even by a crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
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
