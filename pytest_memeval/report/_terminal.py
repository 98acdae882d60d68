"""Plain-text tables for the terminal summary (no pytest import: returns lines)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..analysis import Baseline
from ..errors import terminal_safe
from ..records import STATUS_WRONG, QuestionResult
from ._model import Summary, runs_by_benchmark
from ._tables import (
    Cell,
    Table,
    baselines_table,
    comparison_table,
    fmt_num,
    halumem_table,
    official_table,
    run_table,
    scoreboard_table,
)

__all__ = ["escape_controls", "render_summary", "render_table", "render_wrong"]


def escape_controls(text: str) -> str:
    """``text`` with every terminal control character shown as its escape, so data and model output
    are printed, never executed by the terminal (the one rule of :func:`errors.terminal_safe`)."""
    return terminal_safe(text)


def render_table(table: Table) -> list[str]:
    """A table as aligned plain-text lines (text columns left, numeric right; intervals left out
    and category ids folded into the label, ``single-hop [4]``, for width); the notes below as
    ``[n] ...``."""
    fold = table.id_column

    def cells(row: Sequence[Cell]) -> list[str]:
        out = [c.text for c in row]
        if fold is not None:
            ident = out.pop(fold)
            if ident and ident != out[0]:
                out[0] = f"{out[0]} [{ident}]"
        return out

    header = cells(table.header)
    rows = [cells(row.cells) for row in table.rows]
    numeric = [c.numeric for i, c in enumerate(table.header) if i != fold]
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def fmt(cells: Sequence[str]) -> str:
        parts = []
        for i, cell in enumerate(cells):
            parts.append(cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    lines.extend(fmt(row) for row in rows)
    lines.extend(f"  [{i + 1}] {note}" for i, note in enumerate(table.notes))
    if table.caption:
        lines.append(f"  {table.caption}")
    return lines


def render_summary(
    summary: Summary,
    baselines: dict[str, list[Baseline]],
    config_lines: Sequence[str],
) -> list[str]:
    lines: list[str] = []
    board = scoreboard_table(summary, baselines)
    if board is not None:
        lines.append("scoreboard")
        lines.extend(render_table(board))
    for bench, runs in runs_by_benchmark(summary).items():
        for run in runs:
            lines.append("")
            lines.append(f"{bench} · {run.label} — {run.overall_all.count} questions")
            lines.extend(render_table(run_table(run)))
            official = official_table(run)
            if official is not None:
                lines.append(f"{bench} · {run.label} — BEAM official")
                lines.extend(render_table(official))
            halu = halumem_table(run)
            if halu is not None:
                lines.append(f"{bench} · {run.label} — HaluMem official")
                lines.extend(render_table(halu))
            for note in run.notes:
                lines.append(f"  note: {note}")
        table = baselines_table(runs, baselines.get(bench, []))
        if table is not None:
            lines.append("")
            lines.append(f"{bench} · this run beside the published figures (label, notes)")
            lines.extend(render_table(table))
        if len(runs) > 1:
            lines.append("")
            lines.append(f"{bench} · comparison")
            lines.extend(render_table(comparison_table(summary, runs)))
        from ._overlays import terminal_overlays

        lines.extend(terminal_overlays(summary, bench, render_table))
    if config_lines:
        lines.append("")
        lines.extend(config_lines)
    return [escape_controls(line) for line in lines]


def _short(value: Any, width: int = 160) -> str:
    text = escape_controls(" ".join(str(value).split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_result(result: QuestionResult, memories: int = 3) -> list[str]:
    lines = [
        f"question:   {_short(result.question)}",
        f"gold:       {_short(result.gold)}",
        f"prediction: {_short(result.prediction)}",
        "scores:     " + ", ".join(f"{k}={fmt_num(v)}" for k, v in result.scores.items()),
    ]
    for i, mem in enumerate(result.memories[:memories]):
        date = f" ({mem.date})" if mem.date else ""
        lines.append(f"memory {i + 1}:{date} {_short(mem.text, 140)}")
    reasoning = result.details.get("judge_reasoning")
    if reasoning:
        lines.append(f"judge:      {_short(reasoning)}")
    return lines


def render_wrong(results: Sequence[QuestionResult], limit: int | None) -> list[str]:
    wrong = [r for r in results if r.status == STATUS_WRONG]
    if not wrong:
        return []
    shown = wrong if limit is None else wrong[:limit]
    lines: list[str] = []
    for r in shown:
        lines.append(escape_controls(f"WRONG {r.nodeid or r.question_id}"))
        lines.extend("    " + line for line in describe_result(r))
    if len(shown) < len(wrong):
        lines.append(
            f"... {len(wrong) - len(shown)} more WRONG answers (-v shows all, "
            "--memeval-json keeps every one)"
        )
    return lines
