"""One self-contained HTML report: inline CSS, inline SVG, a small inline script, no network.

The page is ``templates/html/report.html.j2`` with its stylesheet and script (``report.css``,
``report.js``); the safety rules are the pages' (``report/pages.py``):

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

from ..analysis.baselines import Baseline
from ..records import STATUS_CORRECT, QuestionResult, finite_float
from .charts import BarSeries, bar_chart
from .model import (
    RunSummary,
    Summary,
    baseline_value,
    ci_note,
    judge_metric,
    overall_scopes,
    pass_metric,
    runs_by_benchmark,
)
from .pages import Markup, content_security_policy, esc, inline, render_page, script_json
from .tables import (
    Cell,
    Row,
    Table,
    baselines_table,
    cards_table,
    check_lines,
    comparison_table,
    fmt_num,
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
    "render_table",
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


def render_table(table: Table, table_id: str = "", table_class: str = "") -> str:
    """A table as HTML: cells escaped, numeric cells right-aligned, intervals in a muted span
    after their value, a row class per kind (``total``, ``extra``, ``published``), numbered notes
    and the caption below."""
    id_attr = f' id="{esc(table_id)}"' if table_id else ""
    if table_class:
        id_attr += f' class="{esc(table_class)}"'
    out = [f'<div class="scroll"><table{id_attr}><thead><tr>']
    for cell in table.header:
        text = esc(cell.text)
        out.append(f'<th class="num">{text}</th>' if cell.numeric else f"<th>{text}</th>")
    out.append("</tr></thead><tbody>")
    for row in table.rows:
        out.append(f'<tr class="{esc(row.kind)}">' if row.kind else "<tr>")
        for cell in row.cells:
            content = esc(cell.text)
            if cell.link is not None:
                content = f'<a href="#{esc(cell.link)}">{content}</a>'
            if cell.ci is not None:
                content = f'{content} <span class="ci">{esc(cell.ci)}</span>'
            out.append(f'<td class="num">{content}</td>' if cell.numeric else f"<td>{content}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if table.notes:
        out.append('<ol class="notes">')
        out.extend(f"<li>{esc(note)}</li>" for note in table.notes)
        out.append("</ol>")
    if table.caption:
        out.append(f'<p class="note">{esc(table.caption)}</p>')
    return "".join(out)


def _baselines_section(runs: Sequence[RunSummary], baselines: Sequence[Baseline]) -> str:
    table = baselines_table(runs, baselines)
    if table is None:
        return ""
    return (
        "<h3>This run beside the published figures</h3>"
        '<p class="note">Every published figure of the benchmark, with its label: comparable '
        "(same protocol, metric, judge and judge model as this run) or reference (measured "
        "another way; its note below says how).</p>" + render_table(table)
    )


def _cards_section(summary: Summary) -> str:
    """Each suite's protocol card reference, one block per suite (the target of the card links
    of the scoreboard and the run headers); the full cards are docs/protocols.md."""
    table = cards_table(summary)
    if table is None:
        return ""
    parts = [render_table(table)]
    for bench, ref in summary.protocol_cards.items():
        upstream = ref.get("upstream") or {}
        items = [
            f"<li>data revision: {esc(ref.get('data_revision') or '- (not pinned)')}</li>",
            *(f"<li>protocol {esc(k)}: upstream commit {esc(v)}</li>" for k, v in upstream.items()),
            f"<li>known deviations: {esc(', '.join(ref.get('deviations') or ()) or '-')}</li>",
            f"<li>the full card: {esc(ref.get('docs', '-'))}</li>",
        ]
        parts.append(
            f'<div class="card" id="card-{esc(bench)}"><h3>{esc(bench)} · '
            f"{esc(ref.get('card', '-'))}</h3><ul>{''.join(items)}</ul></div>"
        )
    return "".join(parts)


def _provenance_section(summary: Summary) -> str:
    """Configuration and provenance, last and collapsed: one key/value table, each nested
    mapping (package versions, tokenizer digests) as a small table of its own, never raw JSON."""
    rows = []
    nested = []
    for key, value in provenance_items(summary.provenance, files=True):
        if isinstance(value, Mapping) and value:
            inner = tuple(Row((Cell(str(k)), Cell(_plain(v) or "-"))) for k, v in value.items())
            nested.append(
                f"<h4>{esc(key)}</h4>" + render_table(Table((Cell("name"), Cell("value")), inner))
            )
            continue
        if isinstance(value, list):
            value = ", ".join(_plain(v) for v in value)
        rows.append(Row((Cell(str(key)), Cell("-" if value in (None, "") else _plain(value)))))
    table = render_table(Table((Cell("key"), Cell("value")), tuple(rows)))
    return (
        '<details class="provenance" id="config"><summary>Configuration and provenance'
        f"</summary>{table}{''.join(nested)}</details>"
    )


# ---- chart -------------------------------------------------------------------------------------


def _chart(
    summary: Summary,
    runs: Sequence[RunSummary],
    baselines: Sequence[tuple[int, Baseline]],
    metric: str,
) -> str:
    """Horizontal grouped bars (:func:`~.charts.bar_chart`): one group per category (and overall
    rows), one bar per series; this run's bars solid, published bars (``(note number,
    baseline)``, all of ``metric``) hatched and outlined in their colour, labelled comparable or
    reference (the legend says which)."""
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
    for n, b in baselines:
        values = [finite_float(baseline_value(b, row)) for row in groups]
        why = f": {'; '.join(b.reasons)}" if b.reasons else ""
        label = f"[{n}] {b.system}, published {b.metric}, {b.label}{why}"
        series.append(BarSeries(label, values, published=True))
    chart = bar_chart(
        [(row_label(row, scopes), row.key) for row in groups],
        series,
        f"{metric} by category, this run against published baselines",
    )
    if not chart:
        return ""
    ran = any(metric in r.metrics for r in runs)
    solid = (
        f"Solid bars: this run ({esc(metric)}). "
        if ran
        else f"This run has no {esc(metric)} figure: only the published ones are drawn. "
    )
    return (
        f"<h3>Chart: {esc(metric)} by category</h3>"
        f'<p class="note">{solid}Hatched bars: published {esc(metric)} figures, '
        "each labelled comparable (measured as this run) or reference (measured another way, "
        f"the reasons in the legend); one metric per chart.</p>{chart}"
    )


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


def _raw_table(
    header: Sequence[tuple[str, bool]], rows: Sequence[tuple[str, Sequence[tuple[str, bool]]]]
) -> str:
    """An HTML-only table (the worst/best questions, with status badges): ``header`` is
    (escaped text, numeric); ``rows`` (row class, [(escaped html, numeric)])."""
    out = ['<div class="scroll"><table><thead><tr>']
    for text, numeric in header:
        out.append(f'<th class="num">{text}</th>' if numeric else f"<th>{text}</th>")
    out.append("</tr></thead><tbody>")
    for cls, cells in rows:
        out.append(f'<tr class="{esc(cls)}">' if cls else "<tr>")
        for content, numeric in cells:
            out.append(f'<td class="num">{content}</td>' if numeric else f"<td>{content}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _worst_best_section(summary: Summary, run: RunSummary, text_limit: int) -> str:
    metric = pass_metric(summary, run)
    if metric is None:
        return ""
    by_cat: dict[str, list[QuestionResult]] = {}
    for r in run.results:
        by_cat.setdefault(r.category, []).append(r)
    header = [
        ("", False),
        ("id", False),
        ("question", False),
        ("gold", False),
        ("prediction", False),
        ("status", False),
        (esc(metric), True),
    ]
    blocks = []
    for row in run.categories:
        worst, best = _worst_best(by_cat.get(row.key, []), metric)
        if not worst and not best:
            continue
        rows = []
        for kind, items in (("worst", worst), ("best", best)):
            for rank, r in enumerate(items, 1):
                rows.append(
                    (
                        "",
                        [
                            (f"{kind} {rank}", False),
                            (esc(r.question_id), False),
                            (esc(_short(r.question, text_limit)), False),
                            (esc(_gold_text(r, text_limit)), False),
                            (esc(_short(_plain(r.prediction), text_limit)), False),
                            (f'<span class="st st-{esc(r.status)}">{esc(r.status)}</span>', False),
                            (esc(fmt_num(finite_float(r.scores.get(metric)))), True),
                        ],
                    )
                )
        blocks.append(f"<h4>{esc(row.key)}</h4>" + _raw_table(header, rows))
    if not blocks:
        return ""
    return (
        f"<details><summary>Five worst and five best questions per category "
        f"(by {esc(metric)}) — {esc(run.label)}</summary>{''.join(blocks)}</details>"
    )


# ---- latency, tokens, provenance, gates --------------------------------------------------------


def _latency_section(summary: Summary) -> str:
    table = latency_table(summary.runs)
    return render_table(table) if table is not None else ""


def _tokens_section(summary: Summary) -> str:
    table = tokens_table(summary)
    if table is None:
        return f'<p class="note">{esc(tokens_note(summary))}</p>'
    return render_table(table)


def _checks_section(summary: Summary) -> str:
    parts = []
    for title, checks in check_lines(summary):
        items = "".join(
            f'<li class="{"pass" if ok else "fail"}">{"PASS" if ok else "FAIL"}: {esc(text)}</li>'
            for ok, text in checks
        )
        parts.append(f'<h3>{esc(title)}</h3><ul class="checks">{items}</ul>')
    return "".join(parts)


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
    body: list[str] = []
    nav: list[tuple[str, str]] = []
    board = scoreboard_table(summary, baselines, cards=True)
    if board is not None:
        nav.append(("scoreboard", "scoreboard"))
        body.append('<h2 id="scoreboard">Scoreboard</h2>')
        body.append(render_table(board, "scoreboard-table", "scoreboard"))
    for b_index, (bench, runs) in enumerate(benches.items()):
        nav.append((f"bench-{b_index}", bench))
        body.append(f'<h2 id="bench-{b_index}">{esc(bench)}</h2>')
        for run in runs:
            metric = pass_metric(summary, run)
            body.append(f"<h3>{esc(run.label)}</h3>")
            body.append(
                f'<p class="note">{run.overall_all.count} questions; pass metric '
                f"{esc(metric or '-')}; micro means, {esc(ci_note(run))} (each resampled whole) in "
                "brackets where computed.</p>"
            )
            if run.protocol_card:
                body.append(
                    f'<p class="note">protocol card <a href="#card-{esc(run.benchmark)}">'
                    f"{esc(run.protocol_card)}</a></p>"
                )
            body.append(render_table(run_table(run)))
            official = official_table(run)
            if official is not None:
                body.append(f"<h4>{esc(run.label)} · BEAM official</h4>")
                body.append(render_table(official))
            halu = halumem_table(run)
            if halu is not None:
                body.append(f"<h4>{esc(run.label)} · HaluMem official</h4>")
                body.append(render_table(halu))
            for note in run.notes:
                body.append(f'<p class="note">note: {esc(note)}</p>')
        if len(runs) > 1:
            body.append("<h3>Comparison across systems</h3>")
            body.append(render_table(comparison_table(summary, runs)))
        body.append(_baselines_section(runs, list(baselines.get(bench, ()))))
        # every published figure goes in a chart, hatched and labelled, in its own metric's
        # chart: a chart never puts two metrics on one axis (a published judge accuracy gets a
        # chart of its own when this run has no such metric)
        numbered = list(enumerate(baselines.get(bench, ()), 1))
        chart_metrics = [m for m in [pass_metric(summary, runs[0])] if m]
        for _, b in numbered:
            if b.metric not in chart_metrics:
                chart_metrics.append(b.metric)
        benchmark_runs = [r for r in runs if not r.flow]  # hand-written tests: not beside them
        for metric in chart_metrics if benchmark_runs else ():
            own = [(n, b) for n, b in numbered if b.metric == metric]
            body.append(_chart(summary, benchmark_runs, own, metric))
        from .overlays import html_overlays

        body.append(html_overlays(summary, bench))
        body.append("<h3>Worst and best questions</h3>")
        for run in runs:
            body.append(_worst_best_section(summary, run, 300))
    if summary.judge_calibration is not None:
        from .calibration_section import html_section

        nav.append(("calibration", "judge calibration"))
        body.append('<h2 id="calibration">Judge calibration</h2>')
        body.append(html_section(summary.judge_calibration, esc))
    cards = _cards_section(summary)
    if cards:
        nav.append(("protocol-cards", "protocol cards"))
        body.append(f'<h2 id="protocol-cards">Protocol cards</h2>{cards}')
    checks = _checks_section(summary)
    if checks:
        nav.append(("checks", "gates"))
        body.append(f'<h2 id="checks">Gates and regression</h2>{checks}')
    nav.append(("latency", "latency and tokens"))
    body.append('<h2 id="latency">Latency and tokens</h2>')
    body.append(_latency_section(summary))
    body.append(_tokens_section(summary))
    nav.append(("questions", "questions"))
    nav.append(("config", "configuration"))
    metrics = sorted({m for m in (pass_metric(summary, run) for run in summary.runs) if m})
    script = inline("report.js")
    return render_page(
        "report.html.j2",
        csp=content_security_policy(script) if csp else None,
        subtitle=subtitle,
        nav=nav,
        body=Markup("".join(body)),
        score_label=" / ".join(metrics) if metrics else "score",
        provenance=Markup(_provenance_section(summary)),
        data=script_json(_question_data(summary, max_memories, memory_chars, text_chars)),
        script=script,
    )


def summary_tables(summary: Summary) -> str:
    """The per-category table of every run, as an HTML fragment (for pytest-html's summary)."""
    parts = []
    for run in summary.runs:
        parts.append(f"<h3>memeval · {esc(run.benchmark)} · {esc(run.label)}</h3>")
        parts.append(render_table(run_table(run)))
        official = official_table(run)
        if official is not None:
            parts.append(render_table(official))
        halu = halumem_table(run)
        if halu is not None:
            parts.append(render_table(halu))
    return "\n".join(parts)
