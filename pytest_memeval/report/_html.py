"""One self-contained HTML report: inline CSS, inline SVG, a small inline script, no network.

The page is ``templates/html/report.html.j2`` with its stylesheet and script (``report.css``,
``report.js``); the safety rules are the pages' (``report/_pages.py``):

* every string from data, models or configuration is escaped (:func:`~.pages.esc`, the
  templates' autoescaping), in text and in attribute values alike;
* per-question data for the script travels as JSON inside ``<script type="application/json">``
  (:func:`~.pages.json_for_script`: ``</script>`` can never close the block), and the script
  builds the table with ``textContent`` only;
* a Content-Security-Policy ``<meta>`` allows exactly the one inline script (by its sha256) and no
  network at all, as a second line of defence should an escape ever be missed;
* the page holds no ``http://`` or ``https://`` address of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..analysis import Baseline
from ..records import STATUS_CORRECT, QuestionResult, finite_float
from ._charts import BarSeries, bar_chart
from ._model import (
    RunSummary,
    Summary,
    baseline_value,
    ci_note,
    judge_metric,
    overall_scopes,
    pass_metric,
    runs_by_benchmark,
)
from ._pages import (
    Markup,
    content_security_policy,
    esc,
    inline,
    render_page,
    render_table,
    script_json,
)
from ._tables import (
    Cell,
    Row,
    Table,
    baselines_table,
    cards_table,
    check_lines,
    comparison_table,
    halumem_table,
    latency_table,
    official_table,
    provenance_items,
    row_label,
    run_table,
    scoreboard_table,
    tokens_note,
    tokens_table,
)

__all__ = [
    "render_html",
    "summary_tables",
]


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return str(value)


# ---- tables ------------------------------------------------------------------------------------


def _card_refs(summary: Summary) -> list[dict[str, object]]:
    """Each suite's protocol card reference, one block per suite (the target of the card links
    of the scoreboard and the run headers); the full cards are docs/protocols.md."""
    return [
        {
            "bench": bench,
            "card": ref.get("card", "-"),
            "data_revision": ref.get("data_revision") or "- (not pinned)",
            "upstream": list((ref.get("upstream") or {}).items()),
            "deviations": ", ".join(ref.get("deviations") or ()) or "-",
            "docs": ref.get("docs", "-"),
        }
        for bench, ref in summary.protocol_cards.items()
    ]


def _provenance_tables(summary: Summary) -> tuple[Table, list[tuple[str, Table]]]:
    """Configuration and provenance: one key/value table, and each nested mapping (package
    versions, tokenizer digests) as a small table of its own, never raw JSON."""
    rows = []
    nested = []
    for key, value in provenance_items(summary.provenance, files=True):
        if isinstance(value, Mapping) and value:
            inner = tuple(Row((Cell(str(k)), Cell(_plain(v) or "-"))) for k, v in value.items())
            nested.append((str(key), Table((Cell("name"), Cell("value")), inner)))
            continue
        if isinstance(value, list):
            value = ", ".join(_plain(v) for v in value)
        rows.append(Row((Cell(str(key)), Cell("-" if value in (None, "") else _plain(value)))))
    return Table((Cell("key"), Cell("value")), tuple(rows)), nested


# ---- chart -------------------------------------------------------------------------------------


def _chart(
    summary: Summary,
    runs: Sequence[RunSummary],
    baselines: Sequence[tuple[int, Baseline]],
    metric: str,
) -> tuple[str, bool]:
    """Horizontal grouped bars (:func:`~.charts.bar_chart`; "" when nothing to draw): one group per category (and overall
    rows), one bar per series; this run's bars solid, published bars (``(note number,
    baseline)``, all of ``metric``) hatched and outlined in their colour, labelled comparable or
    reference (the legend says which). With it, whether any published bar is drawn (a published
    figure with a value in one of the groups), so the chart's note and label speak of published
    bars only then."""
    first = runs[0]
    scopes = overall_scopes(first)
    groups = [*first.categories, first.overall, first.overall_all]
    series: list[BarSeries] = []
    for run in (r for r in runs if metric in r.metrics):
        values = []
        for row in groups:
            match = run.row(row.key)
            values.append(finite_float(match.metrics.get(metric)) if match else None)
        series.append(BarSeries(f"{run.label} ({metric}, this run)", values))
    published = False
    for n, b in baselines:
        values = [finite_float(baseline_value(b, row)) for row in groups]
        published = published or any(v is not None for v in values)
        why = f": {'; '.join(b.reasons)}" if b.reasons else ""
        label = f"[{n}] {b.system}, published {b.metric}, {b.label}{why}"
        series.append(BarSeries(label, values, published=True))
    against = " against published baselines" if published else ""
    svg = bar_chart(
        [(row_label(row, scopes), row.key) for row in groups],
        series,
        f"{metric} by category, this run{against}",
    )
    return svg, published and bool(svg)


# ---- worst and best ----------------------------------------------------------------------------


def _worst_best(
    results: Sequence[QuestionResult], metric: str
) -> tuple[list[QuestionResult], list[QuestionResult]]:
    scored = [r for r in results if finite_float(r.scores.get(metric)) is not None]
    scored.sort(key=lambda r: (finite_float(r.scores.get(metric)) or 0.0, r.question_id))
    # "best" holds only answers that passed (never a WRONG at 0.000); "worst" the lowest of
    # the others, so no question is in both lists
    correct = [r for r in scored if r.status == STATUS_CORRECT]
    best = list(reversed(correct[-5:]))
    chosen = {id(r) for r in best}
    worst = [r for r in scored if id(r) not in chosen][:5]
    return worst, best


def _gold_text(result: QuestionResult, limit: int) -> str:
    return "(none)" if result.gold is None else _short(_plain(result.gold), limit)


def _worst_best_section(summary: Summary, run: RunSummary, text_limit: int) -> dict[str, Any]:
    """Per category: the five worst and five best questions by the pass metric, as
    (label, result, question, gold, prediction, value) rows."""
    metric = pass_metric(summary, run)
    blocks: list[tuple[str, list[tuple[Any, ...]]]] = []
    if metric is None:
        return {"metric": metric, "label": run.label, "blocks": blocks}
    by_cat: dict[str, list[QuestionResult]] = {}
    for r in run.results:
        by_cat.setdefault(r.category, []).append(r)
    for row in run.categories:
        worst, best = _worst_best(by_cat.get(row.key, []), metric)
        rows = [
            (
                f"{kind} {rank}",
                r,
                _short(r.question, text_limit),
                _gold_text(r, text_limit),
                _short(_plain(r.prediction), text_limit),
                finite_float(r.scores.get(metric)),
            )
            for kind, items in (("worst", worst), ("best", best))
            for rank, r in enumerate(items, 1)
        ]
        if rows:
            blocks.append((row.key, rows))
    return {"metric": metric, "label": run.label, "blocks": blocks}


# ---- per-question data -------------------------------------------------------------------------


def _question_data(
    summary: Summary, max_memories: int, memory_chars: int, text_chars: int
) -> dict[str, Any]:
    memories: list[list[str]] = []
    index: dict[tuple[str, str], int] = {}
    rows: list[dict[str, Any]] = []
    for run in summary.runs:
        metric = pass_metric(summary, run)
        first_judge = judge_metric(summary, run.benchmark)
        for r in run.results:
            refs: list[list[Any]] = []
            for mem in r.memories[:max_memories]:
                date = mem.date.isoformat() if isinstance(mem.date, datetime) else _plain(mem.date)
                key = (_short(mem.text, memory_chars), str(date))
                if key not in index:
                    index[key] = len(memories)
                    memories.append([key[0], key[1]])
                score = finite_float(mem.score)
                refs.append([index[key], None if score is None else round(score, 4)])
            question = _short(r.question, text_chars)
            gold = _gold_text(r, text_chars)
            prediction = None if r.prediction is None else _short(r.prediction, text_chars)
            scores = {}
            for k, v in r.scores.items():
                f = finite_float(v)
                scores[str(k)] = None if f is None else round(f, 4)
            # the first judge's details sit under its headline metric (judge_mem0, nugget, ...)
            judge = r.details.get(first_judge) if first_judge else None
            reasoning = r.details.get("judge_reasoning")
            rows.append(
                {
                    "s": run.label,
                    "c": r.category,
                    "id": r.question_id,
                    "q": question,
                    "g": gold,
                    "p": prediction,
                    "st": r.status,
                    "pm": scores.get(metric) if metric else None,
                    "sc": scores,
                    "m": refs,
                    "mn": len(r.memories),
                    "j": _short(_plain(judge), text_chars) if judge not in (None, "") else None,
                    "jr": _short(_plain(reasoning), text_chars)
                    if reasoning not in (None, "")
                    else None,
                    "e": _short(r.error, text_chars) if r.error else None,
                }
            )
    return {"page": 200, "memories": memories, "rows": rows}


# ---- entry point -------------------------------------------------------------------------------


def render_html(
    summary: Summary,
    baselines: Mapping[str, Sequence[Baseline]],
    *,
    max_memories: int = 10,
    memory_chars: int = 600,
    text_chars: int = 2000,
    csp: bool = True,
) -> str:
    """The whole report as one HTML document.

    ``max_memories`` / ``memory_chars`` / ``text_chars`` bound the embedded per-question data
    (memories are also de-duplicated across questions). ``csp=False`` drops the
    Content-Security-Policy (only to test that escaping alone keeps injected code inert).
    """
    prov = summary.provenance
    benches = runs_by_benchmark(summary)
    n_questions = sum(run.overall_all.count for run in summary.runs)
    systems = list(dict.fromkeys(run.label for run in summary.runs))
    subtitle = (
        f"{n_questions:,} question results · benchmarks: {', '.join(benches) or '-'} · "
        f"systems: {', '.join(systems) or '-'} · created {prov.get('created', '-')}"
    )
    nav: list[tuple[str, str]] = []
    scoreboard = scoreboard_table(summary, baselines, cards=True)
    if scoreboard is not None:
        nav.append(("scoreboard", "scoreboard"))
    sections = []
    for b_index, (bench, runs) in enumerate(benches.items()):
        nav.append((f"bench-{b_index}", bench))
        # every published figure goes in a chart, hatched and labelled, in its own metric's
        # chart: a chart never puts two metrics on one axis (a published judge accuracy gets a
        # chart of its own when this run has no such metric)
        numbered = list(enumerate(baselines.get(bench, ()), 1))
        chart_metrics = [m for m in [pass_metric(summary, runs[0])] if m]
        for _, b in numbered:
            if b.metric not in chart_metrics:
                chart_metrics.append(b.metric)
        benchmark_runs = [r for r in runs if not r.flow]  # hand-written tests: not beside them
        charts = []
        for metric in chart_metrics if benchmark_runs else ():
            own = [(n, b) for n, b in numbered if b.metric == metric]
            svg, published = _chart(summary, benchmark_runs, own, metric)
            if svg:
                ran = any(metric in r.metrics for r in benchmark_runs)
                charts.append(
                    {"metric": metric, "ran": ran, "published": published, "svg": Markup(svg)}
                )
        from ._overlays import html_overlays

        sections.append(
            {
                "name": bench,
                "runs": [
                    {
                        "run": run,
                        "metric": pass_metric(summary, run),
                        "ci_note": ci_note(run),
                        "table": run_table(run),
                        "extras": _official_tables(run),
                    }
                    for run in runs
                ],
                "comparison": comparison_table(summary, runs) if len(runs) > 1 else None,
                "baselines": baselines_table(runs, list(baselines.get(bench, ()))),
                "charts": charts,
                "overlays": Markup(html_overlays(summary, bench)),
                "worst_best": [_worst_best_section(summary, run, 300) for run in runs],
            }
        )
    calibration = None
    if summary.judge_calibration is not None:
        from ._calibration_section import html_section

        nav.append(("calibration", "judge calibration"))
        calibration = Markup(html_section(summary.judge_calibration))
    cards = cards_table(summary)
    if cards is not None:
        nav.append(("protocol-cards", "protocol cards"))
    checks = check_lines(summary)
    if checks:
        nav.append(("checks", "gates"))
    nav.append(("latency", "latency and tokens"))
    nav.append(("questions", "questions"))
    nav.append(("config", "configuration"))
    metrics = sorted({m for m in (pass_metric(summary, run) for run in summary.runs) if m})
    provenance, nested = _provenance_tables(summary)
    tokens = tokens_table(summary)
    script = inline("report.js")
    return render_page(
        "report.html.j2",
        csp=content_security_policy(script) if csp else None,
        subtitle=subtitle,
        nav=nav,
        scoreboard=scoreboard,
        benches=sections,
        calibration=calibration,
        cards=cards,
        card_refs=_card_refs(summary) if cards is not None else [],
        checks=checks,
        latency=latency_table(summary.runs),
        tokens=tokens,
        tokens_note=tokens_note(summary) if tokens is None else "",
        score_label=" / ".join(metrics) if metrics else "score",
        provenance=provenance,
        provenance_nested=nested,
        data=script_json(_question_data(summary, max_memories, memory_chars, text_chars)),
        script=script,
    )


def summary_tables(summary: Summary) -> str:
    """The per-category table of every run, as an HTML fragment (for pytest-html's summary)."""
    parts = []
    for run in summary.runs:
        parts.append(f"<h3>memeval · {esc(run.benchmark)} · {esc(run.label)}</h3>")
        parts.append(render_table(run_table(run)))
        parts.extend(render_table(table) for _, table in _official_tables(run))
    return "\n".join(parts)


def _official_tables(run: RunSummary) -> list[tuple[str, Table]]:
    """The run's official-scorer tables, each with its heading."""
    tables = [("BEAM official", official_table(run)), ("HaluMem official", halumem_table(run))]
    return [(heading, table) for heading, table in tables if table is not None]
