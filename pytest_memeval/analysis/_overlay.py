"""Adds the errata columns, the context-token figures and the top-k warnings to a run's summary
(pure: the controller passes in what it loaded)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..benchmarks import Dataset, Errata
from ..records import Question
from ..report import RunSummary, Summary
from ..report import headline_metric as run_headline_metric
from ._context import ConversationSize, context_figures, pareto_front, top_k_warnings
from ._errata import errata_rows, question_errata

__all__ = ["annotate_summary", "conversation_sizes", "headline_metric"]


def headline_metric(summary: Summary, run: RunSummary) -> str | None:
    """The run's headline metric (``report.headline``: the metric that decided CORRECT/WRONG in
    most questions, else the benchmark's pass metric)."""
    return run_headline_metric(run, summary.provenance)


def conversation_sizes(dataset: Dataset, questions: Sequence[Question]) -> list[ConversationSize]:
    """Session (and, where the conversation is in memory, turn) counts of the conversations of
    ``questions``; LongMemEval's lazily read haystacks are counted from the question's session
    ids, without reading the conversation."""
    out: dict[str, ConversationSize] = {}
    for q in questions:
        cid = q.conversation_id
        if cid in out:
            continue
        conv = dataset.conversations.get(cid)
        if conv is not None:
            out[cid] = ConversationSize(
                cid, len(conv.sessions), sum(len(s.turns) for s in conv.sessions)
            )
            continue
        ids = q.meta.get("haystack_session_ids") if q.meta else None
        if isinstance(ids, tuple | list):
            out[cid] = ConversationSize(cid, len(ids), None)
    return list(out.values())


def annotate_summary(
    summary: Summary,
    *,
    errata: Errata | None,
    round3: Mapping[str, Sequence[str]],
    sizes: Mapping[str, Sequence[ConversationSize]],
    systems: Sequence[tuple[str, int] | tuple[str, int, str | None]],
    budget: int | None,
    tokenizer: str,
) -> None:
    """Fill ``summary.context`` (per run: context-token figures, the headline accuracy, Pareto
    flag; the top-k warnings) and, with an overlay, ``summary.errata``,
    ``provenance["errata"]`` and each run's per-question ``erratum``."""
    runs: list[dict[str, Any]] = []
    for run in summary.runs:
        metric = headline_metric(summary, run)
        figures = context_figures(run.results)
        runs.append(
            {
                "benchmark": run.benchmark,
                "system": run.system,
                "flow": run.flow,
                "label": run.label,
                "metric": metric,
                "accuracy": run.overall.metrics.get(metric) if metric else None,
                **figures,
            }
        )
    by_bench: dict[str, list[int]] = {}
    for i, entry in enumerate(runs):
        by_bench.setdefault(str(entry["benchmark"]), []).append(i)
    for idx in by_bench.values():
        front = pareto_front([(runs[i]["mean"], runs[i]["accuracy"]) for i in idx])
        for i, on in zip(idx, front, strict=True):
            runs[i]["pareto"] = on
    warnings = [
        line
        for bench, bench_sizes in sizes.items()
        for line in top_k_warnings(bench, bench_sizes, systems)
    ]
    summary.context = {
        "tokenizer": tokenizer,
        "counted": "tokens of the memory texts handed to the answerer, per question",
        "budget": budget,
        "runs": runs,
        "warnings": warnings,
    }
    if errata is None:
        return
    summary.provenance["errata"] = dict(errata.provenance)
    tables = []
    for run in summary.runs:
        if run.benchmark != errata.benchmark:
            continue
        run.errata = question_errata(run, errata)
        tables.append(
            {
                "benchmark": run.benchmark,
                "system": run.system,
                "flow": run.flow,
                "label": run.label,
                "metric": headline_metric(summary, run),
                "rows": errata_rows(run, errata, round3.get(run.benchmark, ())),
            }
        )
    summary.errata = {"source": errata.name, "runs": tables}
