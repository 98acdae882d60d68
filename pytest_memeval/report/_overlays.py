"""Report sections for the overlays: context tokens per system (table, warnings, and in HTML an
accuracy-vs-tokens chart with its Pareto front) and the errata columns (official, sound-gold,
ceiling per category). Every renderer reads ``summary.context`` / ``summary.errata``
(``analysis.overlay``); nothing here computes a figure."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup

from ._charts import tradeoff_svg
from ._model import Summary
from ._tables import Cell, Row, Table

__all__ = [
    "context_table",
    "context_warnings",
    "errata_tables",
    "html_overlays",
    "markdown_overlays",
    "terminal_overlays",
]


def _num(value: object, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "-"
    return f"{value:.{digits}f}"


def _pct(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "-"
    return f"{100 * value:.2f}%"


def _runs(summary: Summary, bench: str, key: str) -> list[Mapping[str, Any]]:
    block = summary.context if key == "context" else summary.errata
    if not isinstance(block, Mapping):
        return []
    return [r for r in block.get("runs") or () if r.get("benchmark") == bench]


def context_table(summary: Summary, bench: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the context-token table of one benchmark ([] rows: nothing counted)."""
    runs = _runs(summary, bench, "context")
    budget = (summary.context or {}).get("budget")
    header = ["system", "questions", "mean tokens", "p50", "p95", "max", "accuracy", "Pareto"]
    if budget is not None:
        header.append(f"cut by budget {budget}")
    rows = []
    for r in runs:
        if not r.get("questions"):
            continue
        row = [
            str(r.get("label")),
            str(r.get("questions")),
            _num(r.get("mean"), 1),
            _num(r.get("p50"), 0),
            _num(r.get("p95"), 0),
            _num(r.get("max"), 0),
            f"{_num(r.get('accuracy'))} ({r.get('metric') or '-'})",
            "yes" if r.get("pareto") else "",
        ]
        if budget is not None:
            row.append(f"{r.get('budget_cut', 0)} q, {r.get('memories_dropped', 0)} memories")
        rows.append(row)
    return header, rows


def context_warnings(summary: Summary, bench: str) -> list[str]:
    block = summary.context
    if not isinstance(block, Mapping):
        return []
    return [w for w in block.get("warnings") or () if str(w).startswith(f"{bench} · ")]


def errata_tables(summary: Summary, bench: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per run of ``bench`` under an errata overlay."""
    block = summary.errata
    if not isinstance(block, Mapping):
        return []
    source = str(block.get("source"))
    out = []
    for run in _runs(summary, bench, "errata"):
        metric = str(run.get("metric") or "-")
        header = [
            "category",
            "n",
            "unsound gold",
            f"official {metric}",
            f"sound-gold {metric}",
            "sound n",
            "ceiling",
        ]
        rows = []
        for row in run.get("rows") or ():
            audited = bool(row.get("audited"))
            cid = row.get("category_id")
            label = str(row.get("category"))
            if cid is not None and str(cid) != label:
                label = f"{label} [{cid}]"
            rows.append(
                [
                    label,
                    str(row.get("count")),
                    str(row.get("unsound")) if audited else "not audited",
                    _num((row.get("official") or {}).get(metric)),
                    _num((row.get("sound_gold") or {}).get(metric)) if audited else "-",
                    str(row.get("sound_count")) if audited else "-",
                    _pct(row.get("ceiling")) if audited else "-",
                ]
            )
        title = f"{bench} · {run.get('label')} · errata {source} ({metric})"
        out.append((title, header, rows))
    return out


def _errata_source_line(summary: Summary) -> str:
    prov = summary.provenance.get("errata")
    if not isinstance(prov, Mapping):
        return ""
    where = prov.get("source")
    if prov.get("commit"):
        where = f"{where} at commit {prov.get('commit')}"
    elif prov.get("path"):
        where = f"local {prov.get('path')}" + (
            f" (same files as {prov['same_as']})" if prov.get("same_as") else ""
        )
    return (
        f"errata source: {prov.get('name')} — {where}; {prov.get('entries')} entries, "
        f"{prov.get('score_corrupting')} score-corrupting. Ceiling = share of the category's "
        "questions whose gold is sound (what a perfect system can score)."
    )


# ---- terminal ----------------------------------------------------------------------------------


def _as_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A plain (header, rows) table as ``report.tables.Table``: first column text, the rest
    numbers (right-aligned)."""
    return Table(
        header=tuple(Cell(h, numeric=i > 0) for i, h in enumerate(header)),
        rows=tuple(Row(tuple(Cell(c, numeric=i > 0) for i, c in enumerate(r))) for r in rows),
    )


def terminal_overlays(
    summary: Summary, bench: str, render_table: Callable[[Table], list[str]]
) -> list[str]:
    """Terminal lines; ``render_table`` is ``report.terminal.render_table`` (passed in: this
    module sits below the renderers)."""
    lines: list[str] = []
    for title, header, rows in errata_tables(summary, bench):
        lines.extend(["", title])
        lines.extend(render_table(_as_table(header, rows)))
    if errata_tables(summary, bench):
        lines.append("  " + _errata_source_line(summary))
    header, rows = context_table(summary, bench)
    if rows:
        tokenizer = (summary.context or {}).get("tokenizer", "")
        lines.extend(["", f"{bench} · context tokens handed to the answerer ({tokenizer})"])
        lines.extend(render_table(_as_table(header, rows)))
    for warning in context_warnings(summary, bench):
        lines.append(f"  WARNING budget: {warning}")
    return lines


# ---- markdown ----------------------------------------------------------------------------------


def _md_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], md_cell: Callable[[object], str]
) -> list[str]:
    out = ["| " + " | ".join(md_cell(h) for h in header) + " |"]
    out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    out.extend("| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows)
    return out


def markdown_overlays(
    summary: Summary,
    bench: str,
    md_cell: Callable[[object], str],
    md_text: Callable[[object], str],
) -> list[str]:
    """Markdown lines; ``md_cell`` / ``md_text`` are ``report.markdown``'s escapers."""
    lines: list[str] = []
    tables = errata_tables(summary, bench)
    for title, header, rows in tables:
        lines.extend([f"### {md_text(title)}", "", *_md_table(header, rows, md_cell), ""])
    if tables:
        lines.extend([md_text(_errata_source_line(summary)), ""])
    header, rows = context_table(summary, bench)
    if rows:
        tokenizer = (summary.context or {}).get("tokenizer", "")
        lines.extend(
            [
                f"### {md_text(bench)} · context tokens handed to the answerer",
                "",
                f"Tokenizer: {md_text(tokenizer)}.",
                "",
                *_md_table(header, rows, md_cell),
                "",
            ]
        )
    for warning in context_warnings(summary, bench):
        lines.extend([f"> **budget warning**: {md_text(warning)}", ""])
    return lines


# ---- html --------------------------------------------------------------------------------------


def html_overlays(summary: Summary, bench: str) -> str:
    """The HTML sections (``templates/html/overlays.html.j2``): errata tables, then context
    tokens (the accuracy-vs-tokens chart and its table), then budget warnings."""
    from ._pages import render_page

    header, rows = context_table(summary, bench)
    return render_page(
        "overlays.html.j2",
        bench=bench,
        errata=[(title, _as_table(h, r)) for title, h, r in errata_tables(summary, bench)],
        errata_source=_errata_source_line(summary),
        context=_as_table(header, rows) if rows else None,
        tokenizer=str((summary.context or {}).get("tokenizer", "")),
        chart=Markup(tradeoff_svg(_runs(summary, bench, "context"), f"{bench}: accuracy vs tokens"))
        if rows
        else "",
        warnings=context_warnings(summary, bench),
    )
