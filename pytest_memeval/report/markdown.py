"""GitHub-flavoured Markdown report, fit for a pull-request comment or ``$GITHUB_STEP_SUMMARY``.

Every string that comes from data, a model or a configuration goes through :func:`md_cell` (table
cells) or :func:`md_text` (prose): ``&``, ``<`` and ``>`` become entities (so no raw HTML ever
reaches the page), Markdown punctuation is backslash-escaped (no link, image or emphasis can be
smuggled in), and newlines become spaces (a cell never breaks its row).

The helpers at the top (pass metric, overall scopes, row labels, CI lookup, latency totals) are
shared with the HTML renderer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.aggregate import percentile
from ..analysis.baselines import Baseline
from .model import (
    STATUS_COLUMNS,
    CategoryRow,
    RunSummary,
    Summary,
    baseline_value,
    comparison_columns,
    overall_scopes,
    pass_metric,
    runs_by_benchmark,
)

__all__ = [
    "MEM0_LATENCY",
    "baseline_grid",
    "check_items",
    "ci_text",
    "describe_item",
    "fmt_ci",
    "fmt_ms",
    "fmt_num",
    "md_cell",
    "md_text",
    "provenance_items",
    "render_markdown",
    "row_ci",
    "row_label",
    "token_rows",
    "total_latency",
]

#: Mem0's published latency and token figures (SCORING.md 6.2; seed values, not verified).
MEM0_LATENCY: dict[str, Any] = {
    "system": "Mem0 (published)",
    "search_p50": 0.148,
    "search_p95": 0.200,
    "total_p50": 0.708,
    "total_p95": 1.440,
    "tokens_per_query": 1764,
    "source": "Mem0 paper (arXiv 2504.19413), as quoted in SCORING.md 6.2",
    "verified": False,
}

# ---- shared helpers (also used by the HTML renderer) -------------------------------------------


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def row_ci(row: CategoryRow, metric: str) -> tuple[float, float] | None:
    """The row's 95% CI for ``metric`` (``row.ci`` may be absent on older summaries)."""
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
    ci = row_ci(row, metric)
    if ci is None or fmt_num(row.metrics.get(metric)) == "-":
        return None
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def fmt_ci(row: CategoryRow, metric: str) -> str:
    """``0.412 [0.38, 0.44]`` when the row has a CI for the metric, else ``0.412`` (or ``-``)."""
    text = fmt_num(row.metrics.get(metric))
    ci = ci_text(row, metric)
    return f"{text} {ci}" if ci is not None else text


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


#: (stage, quantile) of the latency tables' figure columns, in order
LATENCY_COLUMNS = tuple(
    (stage, q) for stage in ("search", "answer", "total", "ingest") for q in ("p50", "p95")
)


def latency_figures(run: RunSummary) -> list[float | None]:
    """The run's latency figures (seconds) in ``LATENCY_COLUMNS`` order; None where missing."""
    total = total_latency(run)
    return [
        (total if stage == "total" else run.latency.get(stage, {})).get(q)
        for stage, q in LATENCY_COLUMNS
    ]


def mem0_latency_figures() -> list[float | None]:
    """Mem0's published figures in ``LATENCY_COLUMNS`` order (search and total only)."""
    m = MEM0_LATENCY
    return [m.get(f"{stage}_{q}") for stage, q in LATENCY_COLUMNS]


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


# ---- escaping ----------------------------------------------------------------------------------

_MD_PUNCT = re.compile(r"([\\`*_\[\]|~$])")


def md_text(value: object) -> str:
    """Escape for Markdown prose: entities for ``& < >``, backslashes for syntax, one line."""
    text = value if isinstance(value, str) else _plain(value)
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT.sub(r"\\\1", text)


def md_cell(value: object, limit: int | None = None) -> str:
    """A table cell: :func:`md_text`, optionally shortened to ``limit`` characters first."""
    text = value if isinstance(value, str) else _plain(value)
    text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return md_text(text) or " "


def _plain(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return str(value)


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1
) -> list[str]:
    """Cells must already be escaped. Columns from ``numeric_from`` on are right-aligned."""
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


# ---- sections ----------------------------------------------------------------------------------


def provenance_items(prov: Mapping[str, Any], *, files: bool = False) -> list[tuple[str, Any]]:
    """The provenance as (label, value) rows in display order, shared by the Markdown and HTML
    renderers: plugin, datasets (questions, sha256, optionally files), answerer, judge, top-k,
    systems, git commit (lists joined, empty as "-"), pass rules, prompt hashes, then every other
    non-empty key as it is."""
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
                    f"{ds.get('questions_selected', '?')}/{ds.get('questions_total', '?')} questions",
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


def _provenance(summary: Summary) -> list[str]:
    rows = [[md_cell(k), md_cell(v)] for k, v in provenance_items(summary.provenance)]
    return ["### Provenance", "", *_table(["key", "value"], rows, numeric_from=2)]


def _run_table(run: RunSummary) -> list[str]:
    scopes = overall_scopes(run)
    header = [
        "category",
        "id",
        "shared",
        "n",
        *(md_cell(m) for m in run.metrics),
        *(label for _, label in STATUS_COLUMNS),
    ]
    rows = []
    for row in [*run.categories, run.overall, run.overall_all]:
        label = md_cell(row_label(row, scopes))
        if row is run.overall or row is run.overall_all:
            label = f"**{label}**"
        rows.append(
            [
                label,
                md_cell("" if row.category_id is None else row.category_id),
                md_cell(row.shared),
                str(row.count),
                *(fmt_ci(row, m) for m in run.metrics),
                *(str(row.statuses.get(status, 0)) for status, _ in STATUS_COLUMNS),
            ]
        )
    return _table(header, rows, numeric_from=3)


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
            match = run.row(row.key)
            values.append(match.metrics.get(m) if match is not None else None)
        values.extend(baseline_value(b, row) for b in baselines)
        grid.append((row, values))
    return run_cols, grid


def _baselines_table(runs: Sequence[RunSummary], baselines: Sequence[Baseline]) -> list[str]:
    """Categories x (this run's metric per system, then one column per baseline); footnotes."""
    if not baselines or not runs:
        return []
    run_cols, grid = baseline_grid(runs, baselines)
    header = [
        "category",
        "id",
        *(f"{md_cell(run.label)}: {md_cell(m)} (this run)" for run, m in run_cols),
        *(f"{md_cell(b.system)}: {md_cell(b.metric)} [{i + 1}]" for i, b in enumerate(baselines)),
    ]
    scopes = overall_scopes(runs[0])
    rows = [
        [
            md_cell(row_label(row, scopes)),
            md_cell("" if row.category_id is None else row.category_id),
            *map(fmt_num, values),
        ]
        for row, values in grid
    ]
    lines = _table(header, rows, numeric_from=2)
    lines.append("")
    for i, b in enumerate(baselines):
        flag = "" if b.verified else " (unverified)"
        lines.append(
            f"{i + 1}. {md_text(b.system)} ({md_text(b.name)}){flag}: {md_text(b.protocol)}; "
            f"overall covers {md_text(b.overall_scope)}. Source: {md_text(b.source)}."
        )
    return lines


def _comparison(summary: Summary, runs: Sequence[RunSummary]) -> list[str]:
    metrics, main = comparison_columns(summary, runs)
    header = [
        "system",
        "n",
        *(f"{md_cell(m)} (overall)" for m in metrics),
        *([f"{md_cell(main)} (overall\\_all)"] if main else []),
        *(label for _, label in STATUS_COLUMNS),
    ]
    rows = []
    for run in runs:
        rows.append(
            [
                md_cell(run.label),
                str(run.overall_all.count),
                *(fmt_ci(run.overall, m) for m in metrics),
                *([fmt_ci(run.overall_all, main)] if main else []),
                *(str(run.overall_all.statuses.get(s, 0)) for s, _ in STATUS_COLUMNS),
            ]
        )
    return _table(header, rows)


def _latency(runs: Sequence[RunSummary]) -> list[str]:
    if not any(run.latency for run in runs):
        return []
    header = ["system", *(f"{stage} {q} (ms)" for stage, q in LATENCY_COLUMNS)]
    rows = [[md_cell(run.label), *map(fmt_ms, latency_figures(run))] for run in runs]
    m = MEM0_LATENCY
    rows.append([md_cell(f"{m['system']}, unverified"), *map(fmt_ms, mem0_latency_figures())])
    lines = _table(header, rows)
    lines.append("")
    lines.append(
        f"Mem0 row: {md_text(m['source'])}; {m['tokens_per_query']:,} tokens/query; not verified; "
        "measured with Mem0's own LLM calls and hardware, so not comparable one to one. Total is "
        "search + answer per question."
    )
    return lines


TokenRow = tuple[str, object, "tuple[int, int, int, int] | None"]


def token_rows(tokens: Mapping[str, Any]) -> list[TokenRow]:
    """``extra.tokens`` (role -> model -> usage) as rows ``(role, model, (input, output, calls,
    cache hits))``; a role whose value is not a mapping gives ``(role, value, None)``."""
    rows: list[TokenRow] = []
    for role, models in tokens.items():
        if not isinstance(models, Mapping):
            rows.append((str(role), models, None))
            continue
        for model, usage in models.items():
            u = usage if isinstance(usage, Mapping) else {}
            counts = tuple(
                _int(u.get(k)) for k in ("input_tokens", "output_tokens", "calls", "cache_hits")
            )
            rows.append((str(role), model, (counts[0], counts[1], counts[2], counts[3])))
    return rows


def _tokens(summary: Summary) -> list[str]:
    tokens = summary.extra.get("tokens")
    if not isinstance(tokens, Mapping) or not tokens:
        return []
    questions = sum(run.overall_all.count for run in summary.runs)
    rows = []
    total = 0
    for role, model, counts in token_rows(tokens):
        if counts is None:
            rows.append([md_cell(role), md_cell(model), "", "", "", ""])
            continue
        total += counts[0] + counts[1]
        rows.append([md_cell(role), md_cell(model), *(f"{c:,}" for c in counts)])
    lines = _table(
        ["role", "model", "input tokens", "output tokens", "calls", "cache hits"],
        rows,
        numeric_from=2,
    )
    if questions:
        lines.append("")
        lines.append(
            f"{total / questions:,.0f} tokens/question over {questions:,} "
            f"questions (Mem0 published: {MEM0_LATENCY['tokens_per_query']:,}, unverified)."
        )
    return lines


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def describe_item(item: object) -> tuple[bool | None, str]:
    """(passed or None, one line) for a gate or regression entry of any reasonable shape."""
    if isinstance(item, Mapping):
        passed: bool | None = None
        for key in ("passed", "ok", "success"):
            if isinstance(item.get(key), bool):
                passed = bool(item[key])
                break
        if passed is None and isinstance(item.get("failed"), bool):
            passed = not item["failed"]
        for key in ("message", "sentence", "text", "description"):
            if isinstance(item.get(key), str) and item[key]:
                return passed, item[key]
        parts = [f"{k}={_plain(v)}" for k, v in item.items() if k not in ("passed", "ok", "failed")]
        return passed, ", ".join(parts)
    return None, _plain(item)


def check_items(value: object) -> list[object]:
    """Gate / regression results (``extra.gates``, ``extra.regression``) as a flat list for
    ``describe_item``: a mapping with ``items``/``results`` gives its other keys first, then the
    entries; a list its elements; anything else itself. Empty for None and empty containers."""
    if value is None or value == [] or value == {}:
        return []
    if isinstance(value, Mapping):
        inner = value.get("items") or value.get("results")
        if isinstance(inner, list):
            head = {k: v for k, v in value.items() if k not in ("items", "results")}
            return ([head] if head else []) + list(inner)
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _extra_list(title: str, value: object) -> list[str]:
    items = check_items(value)
    if not items:
        return []
    lines = [f"### {title}", ""]
    for item in items:
        passed, text = describe_item(item)
        mark = "" if passed is None else ("PASS: " if passed else "FAIL: ")
        lines.append(f"- {mark}{md_text(text)}")
    return lines


# ---- entry point -------------------------------------------------------------------------------


def render_markdown(summary: Summary, baselines: Mapping[str, Sequence[Baseline]]) -> str:
    """The whole report as GitHub-flavoured Markdown (ends with a newline)."""
    lines: list[str] = ["## pytest-memeval results", ""]
    if not summary.runs:
        lines.extend(["No memeval results were recorded.", ""])
    for bench, runs in runs_by_benchmark(summary).items():
        for run in runs:
            main = pass_metric(summary, run)
            lines.append(f"### {md_text(bench)} · {md_text(run.label)}")
            lines.append("")
            lines.append(
                f"{run.overall_all.count} questions; pass metric {md_text(main or '-')}; "
                "metrics are micro means with 95% bootstrap CIs in brackets where computed."
            )
            lines.append("")
            lines.extend(_run_table(run))
            for note in run.notes:
                lines.append("")
                lines.append(f"> note: {md_text(note)}")
            lines.append("")
        if len(runs) > 1:
            lines.extend([f"### {md_text(bench)} · comparison across systems", ""])
            lines.extend(_comparison(summary, runs))
            lines.append("")
        table = _baselines_table(runs, baselines.get(bench, ()))
        if table:
            lines.extend(
                [
                    f"### {md_text(bench)} · published baselines",
                    "",
                    "Each baseline has its own column, labelled with its protocol (numbered notes "
                    "below); protocols differ from this run's, so compare with care.",
                    "",
                    *table,
                    "",
                ]
            )
        latency = _latency(runs)
        if latency:
            lines.extend([f"### {md_text(bench)} · latency", "", *latency, ""])
    tokens = _tokens(summary)
    if tokens:
        lines.extend(["### Tokens", "", *tokens, ""])
    for key, title in (("gates", "Gates"), ("regression", "Regression against the saved baseline")):
        block = _extra_list(title, summary.extra.get(key))
        if block:
            lines.extend([*block, ""])
    lines.extend(_provenance(summary))
    return "\n".join(lines).rstrip("\n") + "\n"
