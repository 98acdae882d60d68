"""The judge calibration block (``Summary.judge_calibration``) as terminal lines, Markdown
and an HTML fragment (a template of ``templates/html/``). Every string from the data is escaped
(the caller's escaper for Markdown, autoescaping for HTML)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["html_section", "markdown_section", "terminal_lines"]

_MODE = {
    "before": "run before the system",
    "only": "run instead of the system",
}


def _pct(value: object) -> str:
    return f"{100 * float(value):.1f}%" if isinstance(value, int | float) else "-"


def rate_text(rate: Mapping[str, Any] | None) -> str:
    """``3/4 75.0% [30.1, 95.4]``, or ``-`` when nothing was judged."""
    if not rate or not rate.get("n"):
        return "-"
    ci = rate.get("ci") or (None, None)
    return (
        f"{rate.get('accepted')}/{rate.get('n')} {_pct(rate.get('rate'))} "
        f"[{_pct(ci[0])}, {_pct(ci[1])}]"
    )


def _header(block: Mapping[str, Any]) -> str:
    mode = _MODE.get(str(block.get("mode")), str(block.get("mode")))
    return (
        f"{mode}; {block.get('answers', 0)} answers, {block.get('judgments', 0)} judgments in "
        f"{block.get('seconds', 0)} s; sources: {', '.join(block.get('sources') or ()) or '-'}; "
        f"an answer is accepted when the judge's score reaches the pass threshold; "
        f"{block.get('interval', '')}"
    )


def _table(
    table: Mapping[str, Any],
) -> tuple[list[str], list[list[str]]]:
    kinds = [str(k) for k in table.get("kinds") or ()]
    head = ["category", "gold accepted", "wrong accepted", *kinds, "unscored", "skipped"]
    rows = []
    for row in table.get("rows") or ():
        by_kind = row.get("wrong_by_kind") or {}
        rows.append(
            [
                str(row.get("category")),
                rate_text(row.get("correct")),
                rate_text(row.get("wrong")),
                *(rate_text(by_kind.get(k)) for k in kinds),
                str(row.get("unscored", 0) + row.get("errors", 0)),
                str(row.get("skipped", 0)),
            ]
        )
    return head, rows


def _notes(block: Mapping[str, Any]) -> list[str]:
    notes = []
    for bench, kinds in (block.get("unmatched") or {}).items():
        for kind, n in kinds.items():
            if n:
                notes.append(
                    f"{bench}: {n} answer(s) of {kind} matched no question of this run's file "
                    "(different place or question text) and were not used"
                )
    for ws in block.get("wrong_sets") or ():
        if ws.get("sha256_mismatch"):
            notes.append(
                f"{ws.get('kind')}: {ws.get('file')} differs from the pinned file "
                f"({ws.get('repository')} @ {str(ws.get('commit'))[:12]})"
            )
    errors = sum(r.get("errors", 0) for t in block.get("tables") or () for r in t.get("rows")[-1:])
    if errors:
        notes.append(f"{errors} judgment(s) failed after retries and are counted as unscored")
    return notes


def terminal_lines(block: Mapping[str, Any]) -> list[str]:
    lines = [_header(block)]
    for table in block.get("tables") or ():
        head, rows = _table(table)
        lines.append(f"{table.get('benchmark')} · judge {table.get('judge')}")
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        for r in [head, *rows]:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    lines.extend(f"  note: {n}" for n in _notes(block))
    return lines


def markdown_section(block: Mapping[str, Any], text: Callable[[object], str]) -> list[str]:
    """Markdown lines; ``text`` escapes a value for a table cell."""
    lines = ["### Judge calibration", "", text(_header(block)), ""]
    for table in block.get("tables") or ():
        head, rows = _table(table)
        lines.append(f"**{text(table.get('benchmark'))} · judge {text(table.get('judge'))}**")
        lines.append("")
        lines.append("| " + " | ".join(text(h) for h in head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            lines.append("| " + " | ".join(text(c) for c in r) + " |")
        lines.append("")
    lines.extend(f"> note: {text(n)}" for n in _notes(block))
    return lines


def html_section(block: Mapping[str, Any]) -> str:
    """The HTML fragment (``templates/html/calibration.html.j2``, escaped by its autoescaping)."""
    from ._pages import render_page

    tables = [(t.get("benchmark"), t.get("judge"), *_table(t)) for t in block.get("tables") or ()]
    return render_page(
        "calibration.html.j2", header=_header(block), tables=tables, notes=_notes(block)
    )
