"""Glue between a run's state and the overlays (pytest-free): load ``--memeval-errata`` against
the loaded data, and annotate the summary with errata, context-token figures and top-k warnings."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..benchmarks import ERRATA_SOURCES, LOCOMO_AUDIT, Dataset, Errata, load_errata
from ..errors import MemevalError

__all__ = ["add_overlays", "load_run_errata"]


def load_run_errata(spec: str, cache_dir: Path, datasets: Mapping[str, Dataset]) -> Errata:
    """The overlay for this run, checked against its benchmark's loaded file."""
    known = ERRATA_SOURCES.get(spec)
    benchmark = known.benchmark if known is not None else LOCOMO_AUDIT.benchmark
    dataset = datasets.get(benchmark)
    if dataset is None:
        raise MemevalError(
            f"this overlay is for the {benchmark} benchmark, which this run does not include "
            f"(--memeval={','.join(datasets) or '?'}); add --memeval={benchmark} or drop "
            "--memeval-errata"
        )
    return load_errata(spec, cache_dir, dataset.questions, dataset.conversation_ids())


def add_overlays(summary: Any, state: Any) -> None:
    """``analysis.overlay.annotate_summary`` with what ``state`` (collect.RunState) holds."""
    from ..analysis import annotate_summary, conversation_sizes
    from ._budget import tokenizer_label

    settings = state.settings
    # only systems that produced results (a name that resolved to nothing gets no warning),
    # each with what it retrieves (``retrieves = "turns"`` on bm25 and embedding)
    ran = {(run.benchmark, run.system) for run in summary.runs}
    systems = [
        (ref.label, ref.k, getattr(ref.factory, "retrieves", None))
        for ref in state.systems or ()
        if getattr(ref.factory, "ignores_top_k", False) is not True
        and any(system == ref.label for _, system in ran)
    ]
    sizes = {
        name: conversation_sizes(ds, state.selected.get(name, []))
        for name, ds in state.datasets.items()
    }
    annotate_summary(
        summary,
        errata=state.errata,
        round3={
            name: tuple(getattr(bench, "round3_metrics", ()))
            for name, bench in state.benchmarks.items()
        },
        sizes=sizes,
        systems=systems,
        budget=settings.selection.context_budget,
        tokenizer=tokenizer_label(),
    )
