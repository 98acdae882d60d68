"""GitHub-flavoured Markdown report, fit for a pull-request comment or ``$GITHUB_STEP_SUMMARY``.

Every string that comes from data, a model or a configuration goes through :func:`md_cell` (table
cells) or :func:`md_text` (prose): ``&``, ``<`` and ``>`` become entities (so no raw HTML ever
reaches the page), Markdown punctuation is backslash-escaped (no link, image or emphasis can be
smuggled in), and newlines become spaces (a cell never breaks its row). The tables themselves
come from :mod:`._tables`; this module only formats them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..analysis import Baseline
from ._model import Summary, ci_note, pass_metric, runs_by_benchmark
from ._tables import (
    Table,
    baselines_table,
    cards_table,
    check_lines,
    comparison_table,
    halumem_table,
    latency_table,
    official_table,
    plain,
    provenance_table,
    run_table,
    scoreboard_table,
    tokens_table,
)
from .cards import card_docs

__all__ = ["md_cell", "md_text", "render_markdown", "render_table"]

# ---- escaping ----------------------------------------------------------------------------------

_MD_PUNCT = re.compile(r"([\\`*_\[\]|~$])")


def md_text(value: object) -> str:
    """Escape for Markdown prose: entities for ``& < >``, backslashes for syntax, one line."""
    text = value if isinstance(value, str) else plain(value)
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT.sub(r"\\\1", text)


def md_cell(value: object, limit: int | None = None) -> str:
    """A table cell: :func:`md_text`, optionally shortened to ``limit`` characters first."""
    text = value if isinstance(value, str) else plain(value)
    text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return md_text(text) or " "


def render_table(table: Table) -> list[str]:
    """A table as Markdown lines: cells escaped, numeric columns right-aligned, intervals in
    brackets after their value, overall rows in bold, the notes below, numbered."""
    align = ["---:" if c.numeric else "---" for c in table.header]
    lines = [
        "| " + " | ".join(md_cell(c.text) for c in table.header) + " |",
        "| " + " | ".join(align) + " |",
    ]
    for row in table.rows:
        cells = []
        for i, cell in enumerate(row.cells):
            text = md_cell(cell.text) if cell.text else " "
            if cell.ci is not None:
                text = f"{text} {cell.ci}"  # our own "[lo, hi]" digits, nothing to escape
            if i == 0 and row.kind == "total":
                text = f"**{text}**"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    if table.notes:
        lines.append("")
        lines.extend(f"{i + 1}. {md_text(note)}" for i, note in enumerate(table.notes))
    if table.caption:
        lines.extend(["", md_text(table.caption)])
    return lines


# ---- entry point -------------------------------------------------------------------------------


def render_markdown(summary: Summary, baselines: Mapping[str, Sequence[Baseline]]) -> str:
    """The whole report as GitHub-flavoured Markdown (ends with a newline)."""
    lines: list[str] = ["## pytest-memeval results", ""]
    if not summary.runs:
        calibration = summary.judge_calibration or {}
        only = calibration.get("mode") == "only"
        lines.extend(
            [
                "Judge calibration only: no question of the system ran."
                if only
                else "No memeval results were recorded.",
                "",
            ]
        )
    board = scoreboard_table(summary, baselines, cards=True)
    if board is not None:
        lines.extend(["### Scoreboard", "", *render_table(board), ""])
    for bench, runs in runs_by_benchmark(summary).items():
        for run in runs:
            main = pass_metric(summary, run)
            lines.append(f"### {md_text(bench)} · {md_text(run.label)}")
            lines.append("")
            lines.append(
                f"{run.overall_all.count} questions; pass metric {md_text(main or '-')}; "
                f"metrics are micro means with {md_text(ci_note(run))} (each resampled whole) in "
                "brackets where computed."
            )
            lines.append("")
            if run.protocol_card:
                lines.append(
                    f"Protocol card: {md_text(run.protocol_card)} "
                    f"({md_text(card_docs(run.benchmark))})."
                )
                lines.append("")
            lines.extend(render_table(run_table(run)))
            official = official_table(run)
            if official is not None:
                lines.extend(
                    ["", f"#### {md_text(bench)} · {md_text(run.label)} · BEAM official", ""]
                )
                lines.extend(render_table(official))
            halu = halumem_table(run)
            if halu is not None:
                lines.extend(
                    ["", f"#### {md_text(bench)} · {md_text(run.label)} · HaluMem official", ""]
                )
                lines.extend(render_table(halu))
            for note in run.notes:
                lines.append("")
                lines.append(f"> note: {md_text(note)}")
            lines.append("")
        if len(runs) > 1:
            lines.extend([f"### {md_text(bench)} · comparison across systems", ""])
            lines.extend(render_table(comparison_table(summary, runs)))
            lines.append("")
        from ._overlays import markdown_overlays

        lines.extend(markdown_overlays(summary, bench, md_cell, md_text))
        table = baselines_table(runs, baselines.get(bench, ()))
        if table is not None:
            lines.extend(
                [
                    f"### {md_text(bench)} · this run beside the published figures",
                    "",
                    "Every published figure is shown with its label: comparable (measured as "
                    "this run) or reference (measured another way; its note says how).",
                    "",
                    *render_table(table),
                    "",
                ]
            )
    latency = latency_table(summary.runs)
    if latency is not None:
        lines.extend(["### Latency", "", *render_table(latency), ""])
    if summary.judge_calibration is not None:
        from ._calibration_section import markdown_section

        lines.extend([*markdown_section(summary.judge_calibration, md_text), ""])
    tokens = tokens_table(summary)
    if tokens is not None:
        lines.extend(["### Tokens", "", *render_table(tokens), ""])
    for title, checks in check_lines(summary):
        lines.extend([f"### {title}", ""])
        lines.extend(f"- {'PASS' if ok else 'FAIL'}: {md_text(text)}" for ok, text in checks)
        lines.append("")
    cards = cards_table(summary)
    if cards is not None:
        lines.extend(["### Protocol cards", "", *render_table(cards), ""])
    lines.extend(["### Provenance", "", *render_table(provenance_table(summary))])
    return "\n".join(lines).rstrip("\n") + "\n"
