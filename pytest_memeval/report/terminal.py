"""Plain-text tables for the terminal summary (no pytest import: returns lines)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..analysis.baselines import Baseline
from ..records import STATUS_WRONG, QuestionResult
from .model import (
    STATUS_COLUMNS,
    CategoryRow,
    RunSummary,
    Summary,
    baseline_value,
    comparison_columns,
    overall_scopes,
    runs_by_benchmark,
)

__all__ = ["escape_controls", "render_summary", "render_table", "render_wrong"]

#: C0 controls but tab and newline, DEL and C1 controls: what a terminal may act on (ESC starts
#: colour, cursor and title sequences; CSI 0x9b does the same in one byte)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """``text`` with every terminal control character shown as its ``\\xNN`` escape, so data and
    model output are printed, never executed by the terminal."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def fmt(cells: Sequence[str]) -> str:
        parts = []
        for i, cell in enumerate(cells):
            parts.append(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]))
        return "  ".join(parts).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    lines.extend(fmt(row) for row in rows)
    return lines


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row_label(row: CategoryRow, overall_scope: dict[str, str]) -> str:
    if row.key in overall_scope:
        return f"{row.key} ({overall_scope[row.key]})"
    if row.category_id is not None and str(row.category_id) != row.key:
        return f"{row.key} [{row.category_id}]"
    return row.key


def _run_table(run: RunSummary) -> list[str]:
    scopes = overall_scopes(run)
    header = ["category", "shared", "n", *run.metrics, *(label for _, label in STATUS_COLUMNS)]
    rows = []
    extra_rows = [r for r in (run.abstention,) if r is not None]
    for row in [*run.categories, run.overall, run.overall_all, *extra_rows]:
        rows.append(
            [
                _row_label(row, scopes),
                row.shared,
                str(row.count),
                *(_num(row.metrics.get(m)) for m in run.metrics),
                *(str(row.statuses.get(status, 0)) for status, _ in STATUS_COLUMNS),
            ]
        )
    if run.macro is not None:
        rows.append(
            [
                f"macro (mean of {run.macro.count} categories)",
                "",
                "",
                *(_num(run.macro.metrics.get(m)) for m in run.metrics),
                *("" for _ in STATUS_COLUMNS),
            ]
        )
    return render_table(header, rows)


def _baseline_table(runs: Sequence[RunSummary], baselines: Sequence[Baseline]) -> list[str]:
    if not baselines or not runs:
        return []
    run = runs[0]
    header = ["category", *(f"[{i + 1}] {b.metric}" for i, b in enumerate(baselines))]
    rows = [
        [_row_label(row, {}), *(_num(baseline_value(b, row)) for b in baselines)]
        for row in [*run.categories, run.overall, run.overall_all]
    ]
    lines = render_table(header, rows)
    for i, b in enumerate(baselines):
        lines.append(f"  [{i + 1}] {b.system} ({b.name}): {b.protocol}. Source: {b.source}.")
    return lines


def _comparison(summary: Summary, runs: Sequence[RunSummary]) -> list[str]:
    metrics, main = comparison_columns(summary, runs)
    header = [
        "system",
        "n",
        *(f"{m} (overall)" for m in metrics),
        *([f"{main} (overall_all)"] if main else []),
        *(label for _, label in STATUS_COLUMNS),
    ]
    rows = []
    for run in runs:
        rows.append(
            [
                run.label,
                str(run.overall_all.count),
                *(_num(run.overall.metrics.get(m)) for m in metrics),
                *([_num(run.overall_all.metrics.get(main))] if main else []),
                *(str(run.overall_all.statuses.get(s, 0)) for s, _ in STATUS_COLUMNS),
            ]
        )
    return render_table(header, rows)


def render_summary(
    summary: Summary,
    baselines: dict[str, list[Baseline]],
    config_lines: Sequence[str],
) -> list[str]:
    lines: list[str] = []
    lines.extend(config_lines)
    for bench, runs in runs_by_benchmark(summary).items():
        for run in runs:
            lines.append("")
            lines.append(f"{bench} · {run.label} — {run.overall_all.count} questions")
            lines.extend(_run_table(run))
            for note in run.notes:
                lines.append(f"  note: {note}")
        table = _baseline_table(runs, baselines.get(bench, []))
        if table:
            lines.append("")
            lines.append(
                f"{bench} · published baselines (own columns; protocols differ from "
                "this run's, see notes)"
            )
            lines.extend(table)
        if len(runs) > 1:
            lines.append("")
            lines.append(f"{bench} · comparison")
            lines.extend(_comparison(summary, runs))
    return [escape_controls(line) for line in lines]


def _short(value: Any, width: int = 160) -> str:
    text = escape_controls(" ".join(str(value).split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_result(result: QuestionResult, memories: int = 3) -> list[str]:
    lines = [
        f"question:   {_short(result.question)}",
        f"gold:       {_short(result.gold)}",
        f"prediction: {_short(result.prediction)}",
        "scores:     " + ", ".join(f"{k}={_num(v)}" for k, v in result.scores.items()),
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
