"""Report sections for the overlays: context tokens per system (table, warnings, and in HTML an
accuracy-vs-tokens chart with its Pareto front) and the errata columns (official, sound-gold,
ceiling per category). Every renderer reads ``summary.context`` / ``summary.errata``
(``analysis.overlay``); nothing here computes a figure."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .model import Summary
from .tables import Cell, Row, Table

__all__ = [
    "context_table",
    "context_warnings",
    "errata_tables",
    "html_overlays",
    "markdown_overlays",
    "terminal_overlays",
    "tradeoff_svg",
]


def _num(value: object, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "-"
    return f"{value:.{digits}f}"


def _pct(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "-"
    return f"{100 * value:.2f}%"


def esc(value: object) -> str:
    """HTML-escape any value, quotes included (as ``report.html.esc``)."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


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


def _tick_label(value: float) -> str:
    """``1``, ``10``, ``100``, ``1k``, ``10k``, ``1M``; ``2.5k`` between powers of ten."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _nice_step(span: float, count: int = 4) -> float:
    """A 1-2-5 step that cuts ``span`` into about ``count`` intervals."""
    raw = span / count if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return float(factor * power)
    return float(10 * power)


def tradeoff_svg(points: Sequence[Mapping[str, Any]], title: str) -> str:
    """Accuracy (y) against mean context tokens (x), one dot per system, and the Pareto front
    drawn as a staircase through its points in token order (to the right edge: everything below
    and to the right of it is dominated). ``points``: the ``extra.context.runs`` entries.

    The x axis is logarithmic (ticks 1, 10, 100, 1k, ...) when the token counts differ by more
    than 20x; a system with 0 tokens has no place on a log axis, so it is left out of the plot and
    named in a line under it. Otherwise the axis is linear from 0 with 1-2-5 ticks."""
    usable = [
        p
        for p in points
        if isinstance(p.get("mean"), int | float) and isinstance(p.get("accuracy"), int | float)
    ]
    if not usable:
        return ""
    left, top, plot_w, plot_h, right, bottom = 64, 16, 460, 260, 150, 44
    width, height = left + plot_w + right, top + plot_h + bottom
    means = [float(p["mean"]) for p in usable]
    positive = [m for m in means if m > 0]
    # a log axis when the systems' token counts differ by more than 20x (full-context vs top-k)
    log_x = bool(positive) and max(positive) / min(positive) > 20
    left_out = [p for p in usable if log_x and float(p["mean"]) <= 0]
    plotted = [p for p in usable if p not in left_out]
    metric_label = " / ".join(dict.fromkeys(str(p.get("metric") or "accuracy") for p in usable))
    y_max = min(1.0, math.ceil(max(float(p["accuracy"]) for p in usable) * 11) / 10) or 1.0
    if log_x:
        lo_exp = math.floor(math.log10(min(positive)))
        hi_exp = math.ceil(math.log10(max(positive)))
        hi_exp = max(hi_exp, lo_exp + 1)
        x_ticks = [10.0**e for e in range(lo_exp, hi_exp + 1)]
        x_lo, x_hi = x_ticks[0], x_ticks[-1]
    else:
        step = _nice_step(max(means) or 1.0)
        x_hi = step * math.ceil((max(means) or 1.0) / step)
        x_lo = 0.0
        x_ticks = [step * i for i in range(round(x_hi / step) + 1)]

    def sx(v: float) -> float:
        if log_x:
            return left + plot_w * (math.log10(v) - math.log10(x_lo)) / (
                math.log10(x_hi) - math.log10(x_lo)
            )
        return left + plot_w * (v - x_lo) / (x_hi - x_lo)

    def sy(v: float) -> float:
        return top + plot_h * (1 - min(v, y_max) / y_max)

    parts = [
        f'<svg class="tradeoff" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(title)}">'
    ]
    for xv in x_ticks:
        parts.append(
            f'<line class="grid" x1="{sx(xv):.1f}" y1="{top}" x2="{sx(xv):.1f}" '
            f'y2="{top + plot_h}"/><text class="xtick" x="{sx(xv):.1f}" '
            f'y="{top + plot_h + 14}" text-anchor="middle">{_tick_label(xv)}</text>'
        )
    for tick in range(5):
        yv = y_max * tick / 4
        parts.append(
            f'<line class="grid" x1="{left}" y1="{sy(yv):.1f}" x2="{left + plot_w}" '
            f'y2="{sy(yv):.1f}"/><text x="{left - 6}" y="{sy(yv) + 4:.1f}" '
            f'text-anchor="end">{yv:.2f}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
        f"mean context tokens per question{' (log scale)' if log_x else ''}</text>"
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">'
        f"{esc(metric_label)} (overall)</text>"
    )
    front = sorted(
        (p for p in plotted if p.get("pareto")),
        key=lambda p: (float(p["mean"]), float(p["accuracy"])),
    )
    if front:
        # a staircase: right along each point's accuracy until the next (better) point
        coords = [(sx(float(p["mean"])), sy(float(p["accuracy"]))) for p in front]
        path = [f"M{coords[0][0]:.1f},{coords[0][1]:.1f}"]
        for x1, y1 in coords[1:]:
            path.append(f"H{x1:.1f}V{y1:.1f}")
        path.append(f"H{left + plot_w:.1f}")
        parts.append(
            f'<path class="front" d="{"".join(path)}" fill="none" stroke="#c2410c" '
            'stroke-width="2"><title>Pareto front</title></path>'
        )
    for p in plotted:
        x, y = sx(float(p["mean"])), sy(float(p["accuracy"]))
        on = bool(p.get("pareto"))
        tip = esc(
            f"{p.get('label')}: {float(p['accuracy']):.3f} {p.get('metric')} at "
            f"{float(p['mean']):,.1f} tokens{' (Pareto front)' if on else ''}"
        )
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{"#c2410c" if on else "#6b7280"}">'
            f"<title>{tip}</title></circle>"
            f'<text x="{x + 8:.1f}" y="{y - 6:.1f}">{esc(str(p.get("label"))[:40])}</text>'
        )
    parts.append("</svg>")
    if left_out:
        names = ", ".join(
            f"{p.get('label')} ({float(p['accuracy']):.3f} {p.get('metric')})" for p in left_out
        )
        parts.append(f'<p class="note">0 tokens, not on the log axis: {esc(names)}.</p>')
    return "".join(parts)


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ['<div class="scroll"><table><thead><tr>']
    out.extend(f"<th{' class=num' if i else ''}>{esc(h)}</th>" for i, h in enumerate(header))
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        out.extend(f"<td{' class=num' if i else ''}>{esc(c)}</td>" for i, c in enumerate(row))
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def html_overlays(summary: Summary, bench: str) -> str:
    parts: list[str] = []
    tables = errata_tables(summary, bench)
    for title, header, rows in tables:
        parts.append(f"<h3>{esc(title)}</h3>{_html_table(header, rows)}")
    if tables:
        parts.append(f'<p class="note">{esc(_errata_source_line(summary))}</p>')
    header, rows = context_table(summary, bench)
    if rows:
        tokenizer = (summary.context or {}).get("tokenizer", "")
        parts.append(
            f'<h3 id="tradeoff-{esc(bench)}">{esc(bench)} · accuracy vs context tokens</h3>'
            f'<p class="note">Tokens of the memory texts handed to the answerer per question '
            f"({esc(tokenizer)}). Orange: the Pareto front (no other system is as accurate with "
            "fewer tokens), the orange line its staircase.</p>"
        )
        chart = tradeoff_svg(_runs(summary, bench, "context"), f"{bench}: accuracy vs tokens")
        parts.append(f'<div class="scroll">{chart}</div>{_html_table(header, rows)}')
    for warning in context_warnings(summary, bench):
        parts.append(f'<p class="note warn">budget warning: {esc(warning)}</p>')
    return "".join(parts)
