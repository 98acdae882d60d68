"""Every table of the reports, built once: the terminal, Markdown and HTML renderers only format.

A :class:`Table` holds plain, unescaped text (each renderer escapes for its medium) and, per
metric cell, the value's 95% CI apart from the value (the terminal leaves CIs out, Markdown puts
them in brackets, HTML in a muted span). The figures helpers (number and millisecond formats,
CI lookup, latency quantiles, token rows, provenance rows, check lines) live here too, so no
renderer imports another.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis import Baseline, percentile
from ._headline import HEADLINE_ROW, headline_metric
from ._model import (
    STATUS_COLUMNS,
    CategoryRow,
    RunSummary,
    Summary,
    baseline_value,
    comparison_columns,
    overall_scopes,
)

__all__ = [
    "LATENCY_COLUMNS",
    "MEM0_LATENCY",
    "Cell",
    "Row",
    "Table",
    "baseline_grid",
    "baselines_table",
    "card_cell",
    "cards_table",
    "check_lines",
    "ci_text",
    "comparison_table",
    "fmt_ms",
    "fmt_num",
    "halumem_table",
    "latency_figures",
    "latency_table",
    "nearest_published",
    "official_table",
    "plain",
    "provenance_items",
    "published_cell",
    "row_label",
    "run_table",
    "same_selection",
    "scoreboard_table",
    "tokens_note",
    "tokens_table",
]

#: Mem0's published latency and token figures (docs/scoring.md#published-baselines; seed values,
#: not verified).
MEM0_LATENCY: dict[str, Any] = {
    "system": "Mem0 (published)",
    "search_p50": 0.148,
    "search_p95": 0.200,
    "total_p50": 0.708,
    "total_p95": 1.440,
    "tokens_per_query": 1764,
    "source": "Mem0 paper (arXiv 2504.19413)",
    "verified": False,
}

#: (stage, quantile) of the latency tables' figure columns, in order
LATENCY_COLUMNS = tuple(
    (stage, q) for stage in ("search", "answer", "total", "ingest") for q in ("p50", "p95")
)


@dataclass(frozen=True)
class Cell:
    """One cell: unescaped ``text``; ``numeric`` right-aligns; ``ci`` is the value's interval
    text (``[0.38, 0.44]``), shown apart by renderers that show intervals."""

    text: str
    numeric: bool = False
    ci: str | None = None
    #: an anchor in the report the cell points at (HTML renders a link; the others the text)
    link: str | None = None


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    #: "" (a category), "total" (overall rows), "extra" (macro, abstention), "published"
    kind: str = ""


@dataclass(frozen=True)
class Table:
    header: tuple[Cell, ...]
    rows: tuple[Row, ...]
    #: notes under the table, numbered ``[n]`` (rows refer to them by that number)
    notes: tuple[str, ...] = ()
    #: one sentence under the table
    caption: str = ""
    #: the column of category ids, which a narrow renderer may fold into the label column
    #: (``single-hop [4]``)
    id_column: int | None = None


# ---- figures -----------------------------------------------------------------------------------


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def _row_ci(row: CategoryRow, metric: str) -> tuple[float, float] | None:
    ci = getattr(row, "ci", None) or {}
    value = ci.get(metric) if isinstance(ci, Mapping) else None
    if value is None:
        return None
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return lo, hi


def ci_text(row: CategoryRow, metric: str) -> str | None:
    """``[0.38, 0.44]`` when the row shows a value and has a CI for the metric, else None."""
    ci = _row_ci(row, metric)
    if ci is None or fmt_num(row.metrics.get(metric)) == "-":
        return None
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def metric_cell(row: CategoryRow, metric: str) -> Cell:
    return Cell(fmt_num(row.metrics.get(metric)), True, ci_text(row, metric))


def row_label(row: CategoryRow, scopes: Mapping[str, str]) -> str:
    if row.key in scopes:
        return f"{row.key} ({scopes[row.key]})"
    return row.key


def fmt_ms(seconds: float | None) -> str:
    """Seconds shown as milliseconds with a precision that suits the magnitude."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    ms = seconds * 1000.0
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 1:
        return f"{ms:.1f}"
    return f"{ms:.3f}"


def total_latency(run: RunSummary) -> dict[str, float]:
    """p50/p95 of search + answer per question (what Mem0 calls total latency)."""
    totals = [
        r.latency["search"] + r.latency["answer"]
        for r in run.results
        if "search" in r.latency and "answer" in r.latency
    ]
    if not totals:
        return {}
    p50 = percentile(totals, 50)
    p95 = percentile(totals, 95)
    return {
        "count": float(len(totals)),
        "p50": p50 if p50 is not None else 0.0,
        "p95": p95 if p95 is not None else 0.0,
    }


def latency_figures(run: RunSummary) -> list[float | None]:
    """The run's latency figures (seconds) in ``LATENCY_COLUMNS`` order; None where missing."""
    total = total_latency(run)
    return [
        (total if stage == "total" else run.latency.get(stage, {})).get(q)
        for stage, q in LATENCY_COLUMNS
    ]


def plain(value: object) -> str:
    """A value as one line of text: None is ``-``, containers are compact JSON."""
    if value is None:
        return "-"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return str(value)


# ---- the tables --------------------------------------------------------------------------------


def _num(text: str) -> Cell:
    return Cell(text, True)


def run_table(run: RunSummary) -> Table:
    """Categories x (n, every metric, statuses), then overall, overall_all, and the macro and
    abstention rows where the benchmark has them."""
    scopes = overall_scopes(run)
    header = (
        Cell("category"),
        Cell("id"),
        Cell("shared"),
        _num("n"),
        *(_num(m) for m in run.metrics),
        *(_num(label) for _, label in STATUS_COLUMNS),
    )
    rows = []
    for row in [*run.categories, run.overall, run.overall_all]:
        total = row is run.overall or row is run.overall_all
        rows.append(
            Row(_category_cells(row, run.metrics, row_label(row, scopes)), "total" if total else "")
        )
    if run.abstention is not None:
        rows.append(Row(_category_cells(run.abstention, run.metrics, "abstention"), "extra"))
    if run.macro is not None:
        rows.append(
            Row(
                (
                    Cell(f"macro (mean of {run.macro.count} categories)"),
                    Cell(""),
                    Cell(""),
                    _num(""),
                    *(Cell(fmt_num(run.macro.metrics.get(m)), True) for m in run.metrics),
                    *(_num("") for _ in STATUS_COLUMNS),
                ),
                "extra",
            )
        )
    return Table(header, tuple(rows), id_column=1)


def official_table(run: RunSummary) -> Table | None:
    """BEAM's official composite (with --memeval-protocol=beam): per category the mean over
    conversations of each conversation's question mean, then the mean of the category values.
    None for other runs."""
    official = run.official
    if official is None:
        return None
    header = (
        Cell("category"),
        Cell("id"),
        _num("conversations"),
        _num("questions"),
        _num(f"{official.metric} (BEAM official)"),
    )
    rows = [
        Row(
            (
                Cell(c.category),
                Cell("" if c.category_id is None else str(c.category_id)),
                _num(str(c.conversations)),
                _num(str(c.questions)),
                _num(fmt_num(c.value)),
            )
        )
        for c in official.categories
    ]
    rows.append(
        Row(
            (
                Cell(f"overall (mean of {official.counted} categories)"),
                Cell(""),
                _num(""),
                _num(str(sum(c.questions for c in official.categories))),
                _num(fmt_num(official.overall)),
            ),
            "total",
        )
    )
    caption = (
        "BEAM official (report_results.py): each conversation's mean over its questions of "
        f"{official.metric} (event_ordering: tau_norm), averaged over conversations; overall: "
        f"{official.overall_rule}"
        + (f"; {official.unscored} questions without a value left out" if official.unscored else "")
    )
    return Table(header, tuple(rows), caption=caption, id_column=1)


#: (figure group, figure key, what it is) of HaluMem's table, in upstream's order
HALUMEM_ROWS: tuple[tuple[str, str, str], ...] = (
    ("memory_integrity", "recall(all)", "extraction recall"),
    ("memory_integrity", "weighted_recall(all)", "extraction weighted recall"),
    ("memory_accuracy", "target_accuracy(all)", "extraction precision (target accuracy)"),
    ("memory_accuracy", "weighted_accuracy(all)", "extraction accuracy (all stored)"),
    ("memory_accuracy", "interference_accuracy(all)", "interference rejected"),
    ("memory_extraction_f1", "", "extraction F1"),
    ("memory_update", "correct_update_memory_ratio(all)", "update correct"),
    ("memory_update", "hallucination_update_memory_ratio(all)", "update hallucinated"),
    ("memory_update", "omission_update_memory_ratio(all)", "update omitted"),
    ("memory_update", "other_update_memory_ratio(all)", "update other"),
    ("question_answering", "correct_qa_ratio(all)", "QA correct"),
    ("question_answering", "hallucination_qa_ratio(all)", "QA hallucinated"),
    ("question_answering", "omission_qa_ratio(all)", "QA omitted"),
    # upstream's memory_type_accuracy: (integrity hits + correct updates) / records, per type
    ("memory_type_accuracy", "Event Memory.memory_acc", "event memory accuracy"),
    ("memory_type_accuracy", "Persona Memory.memory_acc", "persona memory accuracy"),
    ("memory_type_accuracy", "Relationship Memory.memory_acc", "relationship memory accuracy"),
)


def _figure(figures: Mapping[str, Any], group: str, key: str) -> Any:
    """``figures[group]``, then each ``.``-separated part of ``key`` below it (the memory type
    keys hold spaces, never dots); None where a level is missing."""
    got: Any = figures[group]
    for part in key.split(".") if key else ():
        got = got.get(part) if isinstance(got, Mapping) else None
    return got


def halumem_table(run: RunSummary) -> Table | None:
    """HaluMem's official figures (with --memeval-protocol=halumem): upstream
    ``aggregate_eval_results`` over the run's judged records. None for other runs."""
    official = run.halumem
    if official is None:
        return None
    rows = []
    for group, key, label in HALUMEM_ROWS:
        if group not in official.figures:
            value = "UNSCORED"
        else:
            value = fmt_num(_figure(official.figures, group, key))
        rows.append(Row((Cell(label), Cell(f"{group}.{key}" if key else group), _num(value))))
    header = (Cell("figure"), Cell("upstream key"), _num("value"))
    granularity = ", ".join(f"{n} per {k}" for k, n in sorted(official.granularity.items()))
    caption = (
        f"HaluMem official (eval/evaluation.py aggregate_eval_results): {official.questions} "
        f"judged questions; storage judged for {official.conversations} of "
        f"{official.conversations_total} conversations"
        + (f" ({granularity})" if granularity else "")
        + (f"; storage UNSCORED: {official.storage_unscored}" if official.storage_unscored else "")
    )
    return Table(header, tuple(rows), caption=caption)


def _category_cells(row: CategoryRow, metrics: Sequence[str], label: str) -> tuple[Cell, ...]:
    return (
        Cell(label),
        Cell("" if row.category_id is None else str(row.category_id)),
        Cell(row.shared),
        _num(str(row.count)),
        *(metric_cell(row, m) for m in metrics),
        *(_num(str(row.statuses.get(status, 0))) for status, _ in STATUS_COLUMNS),
    )


def comparison_table(summary: Summary, runs: Sequence[RunSummary]) -> Table:
    """One row per system: every metric over ``overall``, the pass metric over ``overall_all``."""
    metrics, main = comparison_columns(summary, runs)
    header = (
        Cell("system"),
        _num("n"),
        *(_num(f"{m} (overall)") for m in metrics),
        *([_num(f"{main} (overall_all)")] if main else []),
        *(_num(label) for _, label in STATUS_COLUMNS),
    )
    rows = tuple(
        Row(
            (
                Cell(run.label),
                _num(str(run.overall_all.count)),
                *(metric_cell(run.overall, m) for m in metrics),
                *([metric_cell(run.overall_all, main)] if main else []),
                *(_num(str(run.overall_all.statuses.get(s, 0))) for s, _ in STATUS_COLUMNS),
            )
        )
        for run in runs
    )
    return Table(header, rows)


def baseline_grid(
    runs: Sequence[RunSummary], baselines: Sequence[Baseline]
) -> tuple[list[tuple[RunSummary, str]], list[tuple[CategoryRow, list[float | None]]]]:
    """The published-baselines table's content: the (run, metric) columns of this run (each
    metric some baseline reports), and for each row of the first run (categories, overall,
    overall_all) the values of those columns followed by one value per baseline."""
    families = list(dict.fromkeys(b.metric for b in baselines))
    run_cols = [(run, m) for m in families for run in runs if m in run.metrics]
    first = runs[0]
    grid = []
    for row in [*first.categories, first.overall, first.overall_all]:
        values: list[float | None] = []
        for run, m in run_cols:
            if _official_column(run, m):
                values.append(_official_value(run, row))
                continue
            match = run.row(row.key)
            values.append(match.metrics.get(m) if match is not None else None)
        values.extend(baseline_value(b, row) for b in baselines)
        grid.append((row, values))
    return run_cols, grid


def _official_column(run: RunSummary, metric: str) -> bool:
    """The run's column beside the baselines is BEAM's official composite (not the question
    mean) when the beam protocol produced ``metric``."""
    return run.official is not None and run.official.metric == metric


def _official_value(run: RunSummary, row: CategoryRow) -> float | None:
    assert run.official is not None
    if row.key == "overall" and row.category_id is None:
        return run.official.overall
    if row.key == "overall_all" and row.category_id is None:
        return None  # BEAM's overall already covers every category
    return run.official.value(row.key)


def _run_metric_value(run: RunSummary, metric: str, row: CategoryRow) -> float | None:
    """The run's figure for ``metric`` on the row matching ``row`` (BEAM's official composite
    when the beam protocol produced ``metric``)."""
    if _official_column(run, metric):
        return _official_value(run, row)
    match = run.row(row.key)
    return match.metrics.get(metric) if match is not None else None


def baselines_table(runs: Sequence[RunSummary], listed: Sequence[Baseline]) -> Table | None:
    """One row per series: this run's systems (their pass metric and each metric a baseline was
    published as, where the run has it), then every published baseline of the benchmark with its
    values (overall and per category where published) and its comparability label:
    ``comparable`` (same protocol, metric, judge and judge model) or ``reference`` (measured
    another way; the reasons are its numbered note). A number is never hidden for a difference:
    the label says how far to trust the comparison. Hand-written tests' runs (a ``flow``) are
    not benchmark runs and never stand beside published figures. None without baselines."""
    runs = [r for r in runs if not r.flow]
    if not listed or not runs:
        return None
    first = runs[0]
    scopes = overall_scopes(first)
    families = list(dict.fromkeys([*(first.metrics[:1]), *(b.metric for b in listed)]))
    header = (
        Cell("series"),
        Cell("system"),
        Cell("metric"),
        Cell("label"),
        *(_num(_column_label(row, scopes)) for row in (first.overall, first.overall_all)),
        *(_num(_column_label(row, scopes)) for row in first.categories),
    )
    ordered = [first.overall, first.overall_all, *first.categories]
    # a category a baseline publishes but this run did not select still gets its column
    # (a published number is never hidden)
    have = {str(row.category_id) for row in first.categories}
    missing = list(
        dict.fromkeys(str(k) for b in listed for k in b.by_category if str(k) not in have)
    )
    extra_rows = [
        CategoryRow(key=f"category {k}", category_id=_category_id(k), shared="", count=0)
        for k in missing
    ]
    header = (*header, *(_num(row.key) for row in extra_rows))
    ordered.extend(extra_rows)
    rows: list[Row] = []
    for run in runs:
        for m in families:
            if m not in run.metrics:
                continue
            official = " (BEAM official)" if _official_column(run, m) else ""
            rows.append(
                Row(
                    (
                        Cell("this run"),
                        Cell(run.label),
                        Cell(m + official),
                        Cell(""),
                        *(_num(fmt_num(_run_metric_value(run, m, row))) for row in ordered),
                    ),
                    "total",
                )
            )
    for i, b in enumerate(listed):
        rows.append(
            Row(
                (
                    Cell(f"[{i + 1}] published"),
                    Cell(b.system + ("" if b.verified else " (unverified)")),
                    Cell(b.metric),
                    Cell(b.label),
                    *(_num(fmt_num(baseline_value(b, row))) for row in ordered),
                ),
                "published",
            )
        )
    notes = tuple(
        f"{b.system} ({b.name}), {b.label}"
        + (f" ({'; '.join(b.reasons)})" if b.reasons else "")
        + f". Measured as: {b.protocol}; overall covers {b.overall_scope}. Source: {b.source}."
        for b in listed
    )
    caption = (
        "comparable: same protocol, metric, judge and judge model as this run; reference: "
        "measured another way (its note says how), shown for orientation, not as a like-for-like "
        "comparison"
    )
    return Table(header, tuple(rows), notes=notes, caption=caption)


def _category_id(key: str) -> int | str:
    return int(key) if key.isdigit() else key


def _column_label(row: CategoryRow, scopes: Mapping[str, str]) -> str:
    label = row_label(row, scopes)
    return label if row.category_id is None else f"{label} [{row.category_id}]"


#: the built-in systems that bound a benchmark (a floor, a ceiling without retrieval, the gold
#: evidence): marked "control" in the scoreboard
CONTROL_SYSTEMS: frozenset[str] = frozenset({"no-memory", "full-context", "oracle"})


def nearest_published(
    value: float | None,
    metric: str | None,
    baselines: Sequence[Baseline],
    *,
    value_all: float | None = None,
) -> Baseline | None:
    """The published figure to read a run's headline beside: of the same metric first, then over
    the same selection as the headline (``overall``, not ``overall_all``: LoCoMo's paper counts
    category 5 in), then a comparable one; among equals the one whose overall is closest to the
    run's figure over the baseline's own selection (``value`` for ``overall``, ``value_all`` for
    ``overall_all``). None without a published overall."""
    usable = [b for b in baselines if b.overall is not None]
    if not usable:
        return None

    def rank(b: Baseline) -> tuple[bool, bool, bool, float]:
        same = same_selection(b)
        own = value if same else value_all
        assert b.overall is not None
        gap = abs(b.overall - own) if own is not None else 0.0
        return b.metric != metric, not same, bool(b.reasons), gap

    return min(usable, key=rank)


def same_selection(baseline: Baseline) -> bool:
    """Whether ``baseline``'s overall covers the headline's questions (``overall``)."""
    return baseline.overall_scope == HEADLINE_ROW


def published_cell(near: Baseline | None, metric: str | None) -> str:
    """The scoreboard's ``nearest published`` cell: system, value, the metric and the selection
    when they differ from the headline's (named, never implied), and the label (``comparable``
    only when metric and selection match too)."""
    if near is None or near.overall is None:
        return "-"
    what = [near.metric] if near.metric != metric else []
    same = same_selection(near)
    if not same:
        what.append("over all categories")
    label = near.label if same and not what else "reference"
    return f"{near.system} {fmt_num(near.overall)}" + "".join(f" {w}" for w in what) + f" ({label})"


def card_cell(run: RunSummary) -> Cell:
    """The run's protocol card id, linked to the card's section (``-`` without a card)."""
    if not run.protocol_card:
        return Cell("-")
    return Cell(run.protocol_card, link=f"card-{run.benchmark}")


def cards_table(summary: Summary) -> Table | None:
    """One row per suite of the run: its protocol card id, the data revision, the upstream code
    commit of each official protocol and the keys of the known upstream deviations (the cards
    themselves: docs/protocols.md)."""
    if not summary.protocol_cards:
        return None
    header = (
        Cell("benchmark"),
        Cell("protocol card"),
        Cell("data revision"),
        Cell("upstream code"),
        Cell("known deviations"),
    )
    rows = []
    for bench, ref in summary.protocol_cards.items():
        upstream = ref.get("upstream") or {}
        rows.append(
            Row(
                (
                    Cell(bench),
                    Cell(str(ref.get("card", "-")), link=f"card-{bench}"),
                    Cell(str(ref.get("data_revision") or "- (not pinned)")),
                    Cell(", ".join(f"{k} {v[:12]}" for k, v in upstream.items()) or "-"),
                    Cell(", ".join(ref.get("deviations") or ()) or "-"),
                )
            )
        )
    return Table(
        header,
        tuple(rows),
        caption="Each card in full: docs/protocols.md (python -m pytest_memeval.report.cards).",
    )


def _count_cell(run: RunSummary) -> str:
    """The scoreboard's n: the questions its overall figure covers, ``13 of 15`` when categories
    outside overall (LoCoMo's adversarial) leave some out."""
    inside, every = run.overall.count, run.overall_all.count
    return str(every) if inside == every else f"{inside} of {every}"


def scoreboard_table(
    summary: Summary,
    baselines: Mapping[str, Sequence[Baseline]],
    headline: Mapping[tuple[str, str], str | None] | None = None,
    *,
    cards: bool = False,
) -> Table | None:
    """The headline first: one row per benchmark x system with its headline metric over
    ``overall``, the metric's cluster-bootstrap 95% CI, n, errors and unscored, the nearest
    published figure (value and label) and whether the system is a control. ``headline`` maps
    (benchmark, label) to the metric (default: the benchmark's pass metric). ``cards``: a last
    column names each run's protocol card, linked to its section (when some run has a card)."""
    if not summary.runs:
        return None
    cards = cards and any(run.protocol_card for run in summary.runs)
    header = (
        Cell("benchmark"),
        Cell("system"),
        Cell("metric"),
        _num("overall"),
        Cell("95% CI"),
        _num("n"),
        _num("errors"),
        _num("unscored"),
        Cell("nearest published"),
        Cell("role"),
        *((Cell("protocol card"),) if cards else ()),
    )
    if headline is None:
        headline = {}
    rows = []
    for run in summary.runs:
        metric = headline.get((run.benchmark, run.label)) or headline_metric(
            run, summary.provenance
        )
        value = run.overall.metrics.get(metric) if metric else None
        ci = _row_ci(run.overall, metric) if metric else None
        near = nearest_published(
            value,
            metric,
            baselines.get(run.benchmark, ()),
            value_all=run.overall_all.metrics.get(metric) if metric else None,
        )
        # a hand-written test's run (a flow) is not a benchmark run: no published figure beside it
        published = published_cell(near, metric) if not run.flow else "- (hand-written case)"
        statuses = run.overall_all.statuses
        rows.append(
            Row(
                (
                    Cell(run.benchmark),
                    Cell(run.label),
                    Cell(metric or "-"),
                    _num(fmt_num(value)),
                    Cell(f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else "-"),
                    _num(_count_cell(run)),
                    _num(str(statuses.get("ERROR", 0))),
                    _num(str(statuses.get("UNSCORED", 0))),
                    Cell(published),
                    Cell(
                        "hand-written"
                        if run.flow
                        else "control"
                        if run.system in CONTROL_SYSTEMS
                        else ""
                    ),
                    *((card_cell(run),) if cards else ()),
                ),
                "extra" if run.system in CONTROL_SYSTEMS else "",
            )
        )
    caption = (
        "overall: the micro mean over the categories in overall; 95% CI: bootstrap resampling "
        "whole clusters (the benchmark's conversations or cases); nearest published: the closest "
        "published overall, labelled comparable or reference; control: a built-in bound "
        "(no-memory floor, full-context, oracle evidence)"
    )
    if any(run.overall.count != run.overall_all.count for run in summary.runs):
        caption += (
            "; n: the questions the overall covers, of all the run's questions (13 of 15); "
            "errors, unscored: over all the run's questions, as the health gate counts them"
        )
    if any(run.flow for run in summary.runs):
        caption += (
            "; hand-written: a test of your own (memeval_case), never set beside published figures"
        )
    return Table(header, tuple(rows), caption=caption)


def latency_table(runs: Sequence[RunSummary]) -> Table | None:
    """search / answer / total / ingest p50 and p95 per run, and Mem0's published row."""
    if not any(run.latency for run in runs):
        return None
    header = (
        Cell("benchmark"),
        Cell("system"),
        *(_num(f"{stage} {q} (ms)") for stage, q in LATENCY_COLUMNS),
    )
    rows = [
        Row(
            (Cell(run.benchmark), Cell(run.label), *(_num(fmt_ms(v)) for v in latency_figures(run)))
        )
        for run in runs
    ]
    m = MEM0_LATENCY
    published = [m.get(f"{stage}_{q}") for stage, q in LATENCY_COLUMNS]
    rows.append(
        Row(
            (
                Cell("published"),
                Cell(f"{m['system']} (unverified)"),
                *(_num(fmt_ms(v)) for v in published),
            ),
            "published",
        )
    )
    caption = (
        f"Total is search + answer per question. The Mem0 row is {m['source']} "
        f"({m['tokens_per_query']:,} tokens/query): unverified, measured with Mem0's own LLM calls "
        "and hardware, so not comparable one to one."
    )
    return Table(header, tuple(rows), caption=caption)


TokenRow = tuple[str, object, "tuple[int, int, int, int] | None"]


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def token_rows(tokens: Mapping[str, Any]) -> list[TokenRow]:
    """Token use (role -> model -> usage) as rows ``(role, model, (input, output, calls, cache
    hits))``; a role whose value is not a mapping gives ``(role, value, None)``."""
    rows: list[TokenRow] = []
    for role, models in tokens.items():
        if not isinstance(models, Mapping):
            rows.append((str(role), models, None))
            continue
        for model, usage in models.items():
            u = usage if isinstance(usage, Mapping) else {}
            counts = (
                _int(u.get("input_tokens")),
                _int(u.get("output_tokens")),
                _int(u.get("calls")),
                _int(u.get("cache_hits")),
            )
            rows.append((str(role), model, counts))
    return rows


def tokens_table(summary: Summary) -> Table | None:
    """Input / output tokens, calls and cache hits per role and model; None without LLM use."""
    tokens = summary.llm.tokens if summary.llm is not None else None
    if not tokens:
        return None
    header = (
        Cell("role"),
        Cell("model"),
        _num("input tokens"),
        _num("output tokens"),
        _num("calls"),
        _num("cache hits"),
    )
    rows = []
    for role, model, counts in token_rows(tokens):
        if counts is None:
            rows.append(Row((Cell(role), Cell(plain(model)), *(_num("") for _ in range(4)))))
        else:
            rows.append(Row((Cell(role), Cell(plain(model)), *(_num(f"{c:,}") for c in counts))))
    return Table(header, tuple(rows), caption=tokens_note(summary))


def tokens_note(summary: Summary) -> str:
    """Tokens per question of this run beside Mem0's published figure."""
    mem0 = MEM0_LATENCY["tokens_per_query"]
    tokens = summary.llm.tokens if summary.llm is not None else None
    if not tokens:
        return f"No LLM token use recorded for this run. Mem0 published: {mem0:,} tokens/query (unverified)."
    questions = sum(run.overall_all.count for run in summary.runs)
    total = sum(c[0] + c[1] for _, _, c in token_rows(tokens) if c is not None)
    per_q = f"{total / questions:,.0f}" if questions else "-"
    return (
        f"{per_q} tokens/question over {questions:,} questions; Mem0 published {mem0:,} "
        "tokens/query (unverified)."
    )


def provenance_items(prov: Mapping[str, Any], *, files: bool = False) -> list[tuple[str, Any]]:
    """The provenance as (label, value) rows in display order: plugin, datasets (questions,
    sha256, optionally files), answerer, judge, top-k, systems, git commit (lists joined, empty
    as "-"), pass rules, prompt hashes, then every other non-empty key as it is."""
    rows: list[tuple[str, Any]] = []
    shown = {
        "plugin",
        "plugin_version",
        "datasets",
        "prompt_sha256",
        "pass_metric",
        "pass_threshold",
    }
    rows.append(
        (
            "plugin version",
            f"{prov.get('plugin', 'pytest-memeval')} {prov.get('plugin_version', '?')}",
        )
    )
    datasets = prov.get("datasets")
    if isinstance(datasets, Mapping):
        for name, ds in datasets.items():
            if not isinstance(ds, Mapping):
                rows.append((f"dataset {name}", ds))
                continue
            variant = f" ({ds['variant']})" if ds.get("variant") else ""
            rows.append(
                (
                    f"dataset {name}{variant}",
                    f"{ds.get('questions_run', ds.get('questions_selected', '?'))}/"
                    f"{ds.get('questions_total', '?')} questions",
                )
            )
            digests = ds.get("sha256")
            if isinstance(digests, Mapping):
                for file, digest in digests.items():
                    rows.append((f"sha256 {file}", digest))
            if files and ds.get("files"):
                rows.append((f"files {name}", ds.get("files")))
    for key, label in (
        ("answerer", "answerer"),
        ("judge", "judge"),
        ("top_k", "top-k"),
        ("systems", "systems"),
        ("git_commit", "git commit"),
    ):
        shown.add(key)
        value = prov.get(key)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        rows.append((label, "-" if value in (None, "") else value))
    metrics = prov.get("pass_metric")
    thresholds = prov.get("pass_threshold")
    if isinstance(metrics, Mapping):
        for bench, metric in metrics.items():
            threshold = thresholds.get(bench) if isinstance(thresholds, Mapping) else None
            rows.append((f"pass rule {bench}", f"{metric} >= {threshold}"))
    prompts = prov.get("prompt_sha256")
    if isinstance(prompts, Mapping):
        for name, digest in prompts.items():
            rows.append((f"prompt sha256 {name}", digest))
    for key, value in prov.items():
        if key not in shown and value not in (None, "", [], {}):
            rows.append((key, value))
    return rows


def provenance_table(summary: Summary, *, files: bool = False) -> Table:
    rows = []
    for key, value in provenance_items(summary.provenance, files=files):
        if isinstance(value, list):
            value = ", ".join(plain(v) for v in value)
        rows.append(Row((Cell(key), Cell("-" if value in (None, "") else plain(value)))))
    return Table((Cell("key"), Cell("value")), tuple(rows))


def check_lines(summary: Summary) -> list[tuple[str, list[tuple[bool, str]]]]:
    """(section title, [(passed, sentence)]) for the gates and the regression comparison; a
    section without entries is left out."""
    out: list[tuple[str, list[tuple[bool, str]]]] = []
    if summary.gates:
        out.append(("Gates", [(g.passed, g.message) for g in summary.gates]))
    regression = [
        # the power line of a pass without significance goes with the sentence (issue 15)
        (not c.failed, c.message + "".join(f" ({d})" for d in c.details if d.startswith("power:")))
        for c in [*summary.regression, *summary.health]
    ]
    if summary.regression_error is not None:
        regression.append((False, summary.regression_error))
    if regression:
        out.append(("Regression against the saved baseline", regression))
    return out
