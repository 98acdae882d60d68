"""The overlay report sections: context-token table, warnings, errata columns and the
accuracy-vs-tokens SVG with its Pareto front (rendered from a hand-made summary)."""

from __future__ import annotations

import re

from pytest_memeval.report._charts import tradeoff_svg
from pytest_memeval.report._markdown import md_cell, md_text
from pytest_memeval.report._model import Summary
from pytest_memeval.report._overlays import (
    context_table,
    errata_tables,
    html_overlays,
    markdown_overlays,
    terminal_overlays,
)
from pytest_memeval.report._terminal import render_table


def _point(label: str, mean: float, acc: float, pareto: bool) -> dict[str, object]:
    return {"benchmark": "locomo", "system": label, "flow": "", "label": label, "metric": "f1",
            "accuracy": acc, "questions": 3, "mean": mean, "p50": mean, "p95": mean,
            "max": mean, "pareto": pareto}  # fmt: skip


def _summary() -> Summary:
    summary = Summary(runs=[])
    summary.context = {
        "tokenizer": "cl100k_base (test)",
        "budget": None,
        "runs": [
            _point("oracle", 60.0, 0.35, True),
            _point("bm25", 900.0, 0.27, False),
            _point("full-context<script>", 20000.0, 0.40, True),
            _point("other-bench", 5.0, 0.9, True) | {"benchmark": "demo"},
        ],
        "warnings": ["locomo · bm25: top-k 30 >= the session count of 8 of 10 conversations"],
    }
    summary.errata = {
        "source": "locomo-audit",
        "runs": [
            {
                "benchmark": "locomo",
                "label": "bm25",
                "metric": "f1",
                "rows": [
                    {"category": "single-hop", "category_id": 4, "count": 841, "audited": True,
                     "unsound": 36, "sound_count": 805, "ceiling": 805 / 841,
                     "official": {"f1": 0.16}, "sound_gold": {"f1": 0.162}},
                    {"category": "adversarial", "category_id": 5, "count": 446, "audited": False,
                     "unsound": None, "sound_count": None, "ceiling": None,
                     "official": {"f1": 0.0}, "sound_gold": {"f1": None}},
                ],
            }
        ],
    }  # fmt: skip
    summary.provenance["errata"] = {
        "name": "locomo-audit",
        "source": "https://github.com/dial481/locomo-audit",
        "commit": "9493fb4b",
        "entries": 156,
        "score_corrupting": 99,
    }
    return summary


def test_tables_and_lines() -> None:
    summary = _summary()
    header, rows = context_table(summary, "locomo")
    assert header[:3] == ["system", "questions", "mean tokens"]
    assert [r[0] for r in rows] == ["oracle", "bm25", "full-context<script>"]
    assert rows[0][-1] == "yes" and rows[1][-1] == ""
    ((title, eh, erows),) = errata_tables(summary, "locomo")
    assert title == "locomo · bm25 · errata locomo-audit (f1)"
    assert eh[3:5] == ["official f1", "sound-gold f1"]
    assert erows[0] == ["single-hop [4]", "841", "36", "0.160", "0.162", "805", "95.72%"]
    assert erows[1][2] == "not audited" and erows[1][-1] == "-"
    lines = terminal_overlays(summary, "locomo", render_table)
    assert any("errata source: locomo-audit — https://github.com/dial481/locomo-audit at "
               "commit 9493fb4b; 156 entries, 99 score-corrupting" in ln for ln in lines)  # fmt: skip
    assert lines[-1].startswith("  WARNING budget: locomo · bm25: top-k 30")
    assert terminal_overlays(summary, "demo", render_table)[-1].startswith("other-bench")
    md = "\n".join(markdown_overlays(summary, "locomo", md_cell, md_text))
    assert "| single-hop \\[4\\] | 841 | 36 | 0.160 | 0.162 | 805 | 95.72% |" in md
    assert "> **budget warning**: locomo · bm25" in md


def test_svg_points_front_and_escaping() -> None:
    summary = _summary()
    assert summary.context is not None
    points = summary.context["runs"][:3]
    svg = tradeoff_svg(points, "locomo")
    assert svg.count("<circle") == 3
    assert "(log scale)" in svg  # 20,000 vs 60 tokens
    assert "<script>" not in svg and "full-context&lt;script&gt;" in svg
    path = re.search(r'<path class="front" d="([^"]+)"', svg)
    # a staircase: from the cheaper front point right, up to the dearer one, on to the edge
    assert path is not None
    steps = re.fullmatch(r"M([\d.]+),([\d.]+)H([\d.]+)V([\d.]+)H([\d.]+)", path.group(1))
    assert steps is not None, path.group(1)
    x0, y0, x1, y1, edge = (float(v) for v in steps.groups())
    assert x0 < x1 < edge and y1 < y0  # oracle -> full-context: dearer and more accurate
    html = html_overlays(summary, "locomo")
    assert '<h3 id="tradeoff-locomo">' in html and "budget warning" in html
    assert "95.72%" in html and "<script>" not in html


def test_svg_linear_axis_and_nothing_to_draw() -> None:
    svg = tradeoff_svg([_point("a", 100.0, 0.5, True), _point("b", 300.0, 0.6, True)], "t")
    assert "(log scale)" not in svg and svg.count("<circle") == 2
    assert tradeoff_svg([{"label": "x", "mean": None, "accuracy": 0.3}], "t") == ""
    empty = Summary(runs=[])
    assert (
        terminal_overlays(empty, "locomo", render_table) == []
        and html_overlays(empty, "locomo") == ""
    )


def test_svg_log_axis_drops_zero_with_a_note_and_has_sane_ticks() -> None:
    """Issue 22: no 0 on a log axis, ticks 1, 10, 100, 1k..., a Pareto line even with a single
    point on the front."""
    points = [
        _point("no-memory", 0.0, 0.0, True),
        _point("bm25", 150.0, 0.4, True),
        _point("full-context", 20000.0, 0.35, False),
    ]
    svg = tradeoff_svg(points, "t")
    assert "(log scale)" in svg
    ticks = re.findall(r'<text class="xtick"[^>]*>([^<]+)</text>', svg)
    assert ticks == ["100", "1k", "10k", "100k"]
    assert svg.count("<circle") == 2  # no-memory has no place on a log axis...
    assert "0 tokens, not on the log axis: no-memory (0.000 f1)" in svg  # ...and says so
    path = re.search(r'<path class="front" d="([^"]+)"', svg)
    assert path is not None and path.group(1).startswith("M") and "H" in path.group(1)


def test_svg_linear_ticks_are_round() -> None:
    svg = tradeoff_svg([_point("a", 0.0, 0.1, True), _point("b", 173.0, 0.6, True)], "t")
    assert "(log scale)" not in svg and svg.count("<circle") == 2
    ticks = re.findall(r'<text class="xtick"[^>]*>([^<]+)</text>', svg)
    assert ticks == ["0", "50", "100", "150", "200"]
