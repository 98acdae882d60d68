"""The session's end, pytest-free: the aggregated ``Summary`` with its notes, published figures
and gates, the baselines, the report files and the ``--memeval-estimate`` figures. Plain functions
over what they read: the run state, or a :class:`SummarySource` (what the plugin's controller
gathered), passed in explicitly. Moved out of ``plugin/`` (issue 40): the glue hands over plain
values (the root path, pytest's version, a hook as a callable) instead of pytest objects."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..records import QuestionResult, ResultKey
from ._provenance import SessionView, SummarySource, judge_heads, judge_metrics, provenance

if TYPE_CHECKING:
    from ..analysis import Baseline, RunProtocol
    from ..report import RunSummary, Summary
    from ._estimate_figures import Estimate
    from ._outputs import BoardWriter
    from ._state import RunState

__all__ = [
    "SessionView",
    "SummarySource",
    "baselines",
    "build_estimate",
    "build_summary",
    "finish_summary",
    "questions_run",
    "write_run_files",
]


def build_summary(src: SummarySource) -> Summary:
    from ..analysis import (
        add_confidence_intervals,
        add_pooled_judge_std,
        aggregate_run,
        benchmark_shape,
        group_runs,
        metric_union,
    )
    from ..benchmarks import get_benchmark
    from ..judges import resolve_judge_alias
    from ..report import LLMUsage, Summary
    from ._runtime import judge_agreement

    state = src.state
    runs = []
    for (bench_name, system, flow), results in group_runs(src.results.values()).items():
        try:
            bench = state.benchmarks.get(bench_name) or get_benchmark(bench_name)
        except Exception:  # an unknown benchmark in a result never breaks the summary
            bench = None
        metas, metrics, round3 = benchmark_shape(bench)
        if state.settings.selection.metrics:
            # `judge` is the first judge's headline metric on this benchmark (dropped when
            # no judge ran)
            headline = judge_metrics(state).get(bench_name)
            resolved = (resolve_judge_alias(m, headline) for m in state.settings.selection.metrics)
            metrics = list(dict.fromkeys(m for m in resolved if m is not None))
        metrics = metric_union(results, metrics)
        run = aggregate_run(bench_name, system, flow, results, metas, metrics, round3)
        run.cluster_unit = str(getattr(bench, "cluster_unit", "conversation"))
        _official_figures(state, bench, results, run)
        add_confidence_intervals(run, metrics, seed=state.settings.selection.seed, round3=round3)
        for head, at in judge_heads(state, bench_name):
            # a judge run several times per question (graded): <metric>_pooled_std
            add_pooled_judge_std(
                run,
                key=f"{head}_pooled_std{at}",
                std_key=f"{head}_std{at}",
                runs_key=f"{head}_runs{at}",
            )
        runs.append(run)
    from ..report.cards import run_cards

    protocol_cards = run_cards(runs)
    order = {name: i for i, name in enumerate(state.settings.selection.benchmarks)}
    runs.sort(key=lambda r: (order.get(r.benchmark, 99), r.flow != "", r.flow))
    summary = Summary(
        runs=runs,
        provenance=provenance(src),
        collect_seconds=state.collect_seconds,
        load_seconds=dict(state.load_seconds),
        judge_calibration=src.calibration,
        protocol_cards=protocol_cards,
    )
    from ._overlay import add_overlays

    add_overlays(summary, state)
    merged = src.merged()
    if state.llm is not None:
        usage = LLMUsage(
            tokens=merged["tokens"],
            cache=merged["cache"],
            cache_off=list(merged["cache_off"]),
            limiter=list(merged["limiter"]),
            judge_warnings=merged["judge_warnings"],
            judge_unscored=merged["judge_unscored"],
        )
        if state.settings.llm.prices is not None:
            from ..llm import TokenAccounting

            tokens = TokenAccounting.from_dict(merged["tokens"])
            prices = state.settings.llm.prices
            usage.cost_usd = {
                "total": tokens.cost(prices),
                "by_role": tokens.cost_by_role(prices),
            }
        if len(state.llm.judges) > 1:
            # each benchmark's judges write their own metric names: kappa per set of keys
            by_keys: dict[tuple[str, ...], list[dict[str, float | None]]] = {}
            for r in src.results.values():
                keys = tuple(state.llm.judge_keys(r.benchmark))
                by_keys.setdefault(keys, []).append(r.scores)
            agreement: dict[str, float | None] = {}
            for keys, scores in by_keys.items():
                agreement.update(judge_agreement(scores, keys))
            usage.judge_agreement = agreement
        summary.llm = usage
    return summary


def _official_figures(
    state: RunState, bench: object, results: Sequence[QuestionResult], run: RunSummary
) -> None:
    """The official figures of the protocol that scored this run (BEAM's composite, HaluMem's
    extraction / update / QA figures): the suite's ``official_summary`` hook sets them on
    ``run`` when the protocol lists the suite; the suite decides which protocol is its own."""
    protocol = state.protocol
    if protocol is None or run.benchmark not in protocol.profile.benchmarks:
        return
    hook = getattr(bench, "official_summary", None)
    if callable(hook):
        hook(protocol, run, results, judge_metrics(state).get(run.benchmark))


def baselines(state: RunState, summary: Summary) -> dict[str, list[Baseline]]:
    from ..analysis import baselines_for, mark_comparability

    chosen: dict[str, list[Baseline]] = {}
    for run in summary.runs:
        if run.benchmark not in chosen:
            dataset = state.datasets.get(run.benchmark)
            chosen[run.benchmark] = mark_comparability(
                baselines_for(
                    run.benchmark,
                    state.settings.reports.baselines,
                    None,
                    dataset.variant if dataset is not None else None,
                ),
                _run_protocol(state, run.benchmark, summary),
            )
    return chosen


def _run_protocol(state: RunState, benchmark: str, summary: Summary) -> RunProtocol:
    from ..analysis import RunProtocol, answerer_label

    metrics: set[str] = set()
    answered_by: set[str] = set()
    for run in summary.runs:
        if run.benchmark == benchmark:
            metrics.update(run.metrics)
            answered_by.update(str(r.details.get("answered_by") or "") for r in run.results)
    style = None
    model = None
    if state.llm is not None and state.settings.llm.judges:
        style = state.llm.styles([benchmark]).get(benchmark)
        model = state.settings.llm.judges[0].partition(":")[2] or None
    return RunProtocol(
        metrics=frozenset(metrics),
        protocol=state.settings.llm.protocol,
        judge_style=style,
        judge_model=model,
        # who answered: the results say (a replay: or answering system gave its own answers,
        # whatever --memeval-answerer is set to)
        answerer=answerer_label(
            answered_by, state.answerer.label if state.answerer is not None else None
        ),
    )


def questions_run(state: RunState, summary: Summary | None, benchmark: str) -> int:
    """Questions of ``benchmark`` that ran (or were restored): what -k / -m / --deselect
    left of the selection, counted from the results (the controller of an xdist run
    collects nothing, so its item list cannot say)."""
    if summary is None:
        return len(state.selected.get(benchmark, []))
    return len(
        {r.question_id for run in summary.runs if run.benchmark == benchmark for r in run.results}
    )


def finish_summary(src: SummarySource, modify: Callable[[Summary], None]) -> tuple[Summary, bool]:
    """The session's summary as the reports show it: :func:`build_summary` with the benchmarks'
    unscored and dataset notes, the published figures, each dataset's questions run, then the
    gates (``analysis.checks``) and ``modify`` (the ``pytest_memeval_modify_summary`` hook).
    Returns the summary and whether a gate failed."""
    from ..analysis import check_summary
    from ..report import dataset_notes, published_entries, unscored_metric_notes, unscored_notes

    state = src.state
    summary = build_summary(src)
    unscored_notes(
        summary,
        {name: getattr(bench, "unscored_reason", None) for name, bench in state.benchmarks.items()},
    )
    unscored_metric_notes(
        summary,
        {
            name: getattr(bench, "unscored_metrics", dict)()
            for name, bench in state.benchmarks.items()
        },
    )
    dataset_notes(summary, state.datasets)
    summary.published = published_entries(baselines(state, summary))
    for name, ds in (summary.provenance.get("datasets") or {}).items():
        if isinstance(ds, dict):
            ds["questions_run"] = questions_run(state, summary, name)
    failed = check_summary(summary, state.settings)
    modify(summary)
    return summary, failed


def write_run_files(
    src: SessionView, summary: Summary, add_to_board: BoardWriter | None
) -> list[tuple[Path, str]]:
    """Every report file the settings ask for (``outputs.write_reports``; ``add_to_board``: what
    writes the board), then the processes' outputs into the run folder, which is closed. Returns
    (path, one line) per report that could not be written."""
    from ._outputs import write_reports

    state = src.state
    store = src.store
    errors = write_reports(
        summary,
        baselines(state, summary),
        state.settings,
        store.folder if store is not None else None,
        add_to_board,
    )
    if store is not None:
        from ._shards import write_outputs

        write_outputs(store.folder, src.merged())
        store.close()
    return errors


def build_estimate(
    state: RunState,
    outputs: Sequence[Mapping[str, Any]],
    processes: int,
    results: Mapping[ResultKey, QuestionResult],
) -> Estimate:
    """``--memeval-estimate``: what the run would send, from every process's output
    (``outputs.session_outputs``) over ``processes`` processes that ran questions."""
    from ._batch import batch_roles
    from ._estimate_figures import Estimate
    from ._outputs import merge_outputs

    tokenizers: dict[str, str] = {}
    approximate: list[str] = []
    repeats = 0
    for out in outputs:
        info = out.get("estimate") or {}
        tokenizers.update({str(k): str(v) for k, v in (info.get("tokenizers") or {}).items()})
        approximate += [str(x) for x in info.get("approximate") or ()]
        repeats += int(info.get("repeats") or 0)
    llm = state.settings.llm
    return Estimate.from_accounting(
        merge_outputs([dict(out) for out in outputs])["tokens"],
        prices=llm.prices,
        concurrency=llm.concurrency,
        processes=processes,
        rpm=llm.rpm,
        tpm=llm.tpm,
        tokenizers=tokenizers,
        approximate=approximate,
        batch_roles=batch_roles(state.settings),
        repeats=repeats,
        questions=len(results),
        conversations=len({(r.benchmark, r.system, r.conversation_id) for r in results.values()}),
        ingest_ahead=llm.ingest_ahead,
        limiter=llm.limiter,
    )
