"""The controller's session-end summary: provenance, the aggregated ``Summary``, baselines and the
official composites. Plain functions over what they read: the run state, or a
:class:`SummarySource` (what :class:`plugin.controller.Controller` gathered), passed in explicitly;
moved out of ``controller.py`` (issue 26)."""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ..records import QuestionResult, ResultKey
from .provenance import _bleu1_tokenizer, _git_commit, dependency_versions

if TYPE_CHECKING:
    from ..analysis.baselines import Baseline, RunProtocol
    from ..benchmarks.beam.figures import OfficialComposite
    from ..benchmarks.halumem.figures import HaluMemOfficial
    from ..report.model import RunSummary, Summary
    from ..run.state import RunState
    from ..run.store import RunStore

__all__ = [
    "SessionView",
    "SummarySource",
    "baselines",
    "build_summary",
    "judge_metrics",
    "mem0_filing",
    "provenance",
    "questions_run",
    "session_record",
]


class SessionView(Protocol):
    """What both the summary and the terminal read of the session (the controller holds it)."""

    @property
    def state(self) -> RunState: ...

    @property
    def results(self) -> Mapping[ResultKey, QuestionResult]: ...

    @property
    def duplicates(self) -> Sequence[ResultKey]: ...

    @property
    def lost(self) -> Sequence[dict[str, Any]]: ...

    @property
    def store(self) -> RunStore | None: ...

    @property
    def rescored(self) -> Sequence[str]: ...

    @property
    def import_verify(self) -> dict[str, Any] | None: ...

    def merged(self) -> dict[str, Any]:
        """The processes' outputs merged (``outputs.merge_outputs``)."""
        ...


class SummarySource(SessionView, Protocol):
    """What the summary reads of the session (the controller gathers it)."""

    @property
    def config(self) -> pytest.Config: ...

    @property
    def calibration(self) -> dict[str, Any] | None: ...

    @property
    def session_end(self) -> dict[str, Any] | None:
        """How the session ended (:func:`session_record`; None: not ended yet)."""
        ...


def session_record(session: pytest.Session, shard: object = None) -> dict[str, Any]:
    """How the session ended and what narrowed its items, for provenance ``session``: the
    board tells a run stopped early (``-x``, ``--maxfail``, interrupted) or narrowed (``-k``,
    ``-m``, ``--deselect``, one shard) from a full one by it."""
    option = session.config.option
    status = session.exitstatus
    try:
        name: str | None = pytest.ExitCode(status).name
    except ValueError:
        name = None
    stopped = session.shouldfail or session.shouldstop
    return {
        "exit_status": int(status),
        "exit_name": name,
        # pytest's own reason ("stopping after 1 failures"); xdist's stop is an interruption
        "stopped": str(stopped) if stopped else None,
        "keyword": getattr(option, "keyword", "") or None,
        "markexpr": getattr(option, "markexpr", "") or None,
        "deselect": [str(d) for d in getattr(option, "deselect", None) or ()],
        "maxfail": getattr(option, "maxfail", 0) or None,
        "shard": str(shard) if shard is not None else None,
    }


def provenance(src: SummarySource) -> dict[str, Any]:
    from .. import __version__

    state = src.state
    settings = state.settings
    merged = src.merged()
    datasets = {}
    for name, ds in state.datasets.items():
        datasets[name] = {
            "variant": ds.variant,
            "files": [str(p) for p in ds.files],
            "sha256": dict(ds.sha256),
            "questions_selected": len(state.selected.get(name, [])),
            "questions_total": len(ds.questions),
            # how a suite built its items from several files (LoCoMo-Plus's stitching)
            **({"pairing": ds.meta["pairing"]} if "pairing" in ds.meta else {}),
            # files at a pinned path that are not the release's (--memeval-accept-unpinned)
            **({"unpinned": ds.meta["unpinned"]} if "unpinned" in ds.meta else {}),
            # what the loader left out, as upstream does (MemoryAgentBench's skipped records)
            **({"notes": list(ds.meta["notes"])} if ds.meta.get("notes") else {}),
        }
    return {
        "plugin": "pytest-memeval",
        "plugin_version": __version__,
        "python": platform.python_version(),
        "pytest": pytest.__version__,
        "versions": dependency_versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "datasets": datasets,
        "systems": list(settings.selection.systems),
        "top_k": list(settings.selection.top_k),
        "answerer": state.answerer.label if state.answerer else settings.llm.answerer,
        "judge": list(settings.llm.judges) or None,
        "judge_style": (
            state.llm.styles(list(state.benchmarks))
            if state.llm is not None and settings.llm.judges
            else None
        ),
        # benchmark -> the first judge's headline metric (what the alias `judge` names)
        "judge_metric": judge_metrics(state) or None,
        "protocol": _protocol_provenance(state, src.results),
        "judge_runs": settings.llm.judge_runs if settings.llm.judges else None,
        "rejudge": settings.run.rejudge,
        "prompt_sha256": (
            state.llm.prompt_hashes(list(state.benchmarks)) if state.llm is not None else {}
        ),
        "pass_threshold": {b: state.threshold(b) for b in state.benchmarks},
        "pass_metric": {b: state.benchmarks[b].pass_metric for b in state.benchmarks},
        "limit": settings.selection.limit,
        "sample": settings.selection.sample,
        "seed": settings.selection.seed,
        "metrics": list(settings.selection.metrics) if settings.selection.metrics else None,
        "bleu1_tokenizer": _bleu1_tokenizer(state.benchmarks),
        "git_commit": _git_commit(src.config.rootpath),
        "ingests": merged["ingests"],
        "duplicate_results": [list(key) for key in src.duplicates],
        "lost": list(src.lost),
        "run_id": src.store.run_id if src.store is not None else None,
        "resumed": settings.run.resume is not None,
        # stored rows whose offline numbers were re-computed to other values (merge, resume)
        "rescored": list(src.rescored),
        # LLM-cache hits served from --memeval-cache-import files: file -> role -> count
        "cache_imports": merged.get("imported") or {},
        "cache_import_verify": src.import_verify,
        # exit status, stop reason, -k / -m / --deselect, shard: what makes a run partial
        "session": src.session_end,
        **_calibration_provenance(src.calibration),
    }


def _judge_heads(state: RunState, benchmark: str) -> list[tuple[str, str]]:
    """(headline metric, "@LABEL" or "") of every judge on ``benchmark``; the graded judge's
    keys when no judge is configured (results read back from an earlier run)."""
    llm = state.llm
    if llm is None or not state.settings.llm.judges:
        return [("judge_graded", "")]
    out = []
    for key in llm.judge_keys(benchmark):
        head, at, label = key.partition("@")
        out.append((head, at + label))
    return out


def judge_metrics(state: RunState) -> dict[str, str]:
    """benchmark -> the first judge's headline metric (empty without a judge)."""
    llm = state.llm
    if llm is None or not state.settings.llm.judges:
        return {}
    return llm.judge_metrics(list(state.benchmarks))


def _protocol_provenance(
    state: RunState, results: Mapping[ResultKey, QuestionResult]
) -> dict[str, Any] | None:
    """The protocol's provenance; ``answer``: the answer request it sent (None: our
    answerer's own prompt, or no LLM answerer), with how the memories were filed."""
    if state.protocol is None:
        return None
    out: dict[str, Any] = state.protocol.provenance(list(state.settings.llm.judges))
    filed = mem0_filing(state, results)
    out["answer"] = None if filed is None else {**filed[0].provenance(), **filed[1]}
    return out


def mem0_filing(
    state: RunState, results: Mapping[ResultKey, QuestionResult]
) -> tuple[Any, dict[str, int]] | None:
    """The Mem0 answerer (``--memeval-protocol=mem0`` with an LLM answerer) and the totals of
    its filing over every result; None without it."""
    from ..answerers.mem0 import Mem0Answerer, filing_totals

    answerer = state.llm.answerer if state.llm is not None else None
    if not isinstance(answerer, Mem0Answerer):
        return None
    return answerer, filing_totals(r.details for r in results.values())


def _calibration_provenance(calibration: dict[str, Any] | None) -> dict[str, Any]:
    if calibration is None:
        return {}
    from ..run.calibrate import provenance

    return {"judge_calibration": provenance(calibration)}


def build_summary(src: SummarySource) -> Summary:
    from ..analysis.aggregate import (
        aggregate_run,
        benchmark_shape,
        group_runs,
        metric_union,
    )
    from ..analysis.stats import add_confidence_intervals, add_pooled_judge_std
    from ..benchmarks import get_benchmark
    from ..judges import resolve_judge_alias
    from ..report.model import LLMUsage, Summary
    from ..run.runtime import judge_agreement

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
        run.official = _official(state, bench_name, results, run)
        run.halumem = _halumem(state, bench_name, results)
        add_confidence_intervals(run, metrics, seed=state.settings.selection.seed, round3=round3)
        for head, at in _judge_heads(state, bench_name):
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
    from ..run.overlay import add_overlays

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


def _official(
    state: RunState, benchmark: str, results: Sequence[QuestionResult], run: RunSummary
) -> OfficialComposite | None:
    """BEAM's official composite when the beam protocol scored this benchmark."""
    from ..benchmarks.beam.figures import official_composite

    protocol = state.protocol
    if protocol is None or protocol.name != "beam" or benchmark not in protocol.profile.benchmarks:
        return None
    return official_composite(results, protocol.profile.metric, [row.key for row in run.categories])


def _halumem(
    state: RunState, benchmark: str, results: Sequence[QuestionResult]
) -> HaluMemOfficial | None:
    """HaluMem's official figures when the halumem protocol judged this benchmark."""
    from ..benchmarks.halumem.figures import halumem_official

    protocol = state.protocol
    if (
        protocol is None
        or protocol.name != "halumem"
        or benchmark not in protocol.profile.benchmarks
    ):
        return None
    metric = judge_metrics(state).get(benchmark)
    return halumem_official(results, metric) if metric is not None else None


def baselines(state: RunState, summary: Summary) -> dict[str, list[Baseline]]:
    from ..analysis.baselines import baselines_for, mark_comparability

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
    from ..analysis.baselines import RunProtocol, answerer_label

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
