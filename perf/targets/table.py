"""The printed table (``what | ours | reference | ratio | target | ok?``) and the machine header."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from typing import Any

from targets.common import Row


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if value != value:  # NaN
        return "n/a"
    if unit in ("n", "bool"):
        return f"{value:.0f}"
    if unit == "MB":
        return f"{value:.1f}"
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"


def format_table(rows: Sequence[Row]) -> str:
    """The table as text: ``what | ours | reference | ratio | target | ok?``."""
    head = ("what", "ours", "reference", "ratio", "target", "ok?")
    body = []
    for r in rows:
        ok = "-" if r.ok is None else ("yes" if r.ok else "NO")
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        unit = "" if r.unit in ("n", "bool") else f" {r.unit}"
        ours = _num(r.ours, r.unit) + (unit if r.ours is not None else "")
        ref = _num(r.reference, r.unit) + (unit if r.reference is not None else "")
        what = r.what + (f" [{r.note}]" if r.note else "")
        body.append((what, ours, ref, ratio, r.target or "-", ok))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:5], widths[1:5], strict=True)]
        return " | ".join([first, *rest, cells[5].ljust(widths[5])]).rstrip()

    sep = "-+-".join("-" * w for w in widths)
    out = [line(head), sep]
    section = None
    for r, cells in zip(rows, body, strict=True):
        if section is not None and r.section != section:
            out.append(sep)
        section = r.section
        out.append(line(cells))
    return "\n".join(out)


def machine_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
