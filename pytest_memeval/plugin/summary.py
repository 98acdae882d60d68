"""The controller's session-end summary: provenance, the aggregated ``Summary``, baselines and the
official composites. A mixin of :class:`plugin.controller.Controller`, which defines every
attribute and method declared below; moved out of ``controller.py`` verbatim (issue 26)."""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from ..records import QuestionResult, ResultKey
from .provenance import _bleu1_tokenizer, _git_commit, dependency_versions

if TYPE_CHECKING:
    from ..analysis.baselines import Baseline, RunProtocol
    from ..analysis.beam_official import OfficialComposite
    from ..analysis.halumem_official import HaluMemOfficial
    from ..report.model import RunSummary, Summary
    from ..run.state import RunState
    from ..run.store import RunStore

__all__ = ["SummaryBuilder"]


class SummaryBuilder:
    """``build_summary`` and what it reads (provenance, judges, baselines), over the controller."""

    config: pytest.Config
    results: dict[ResultKey, QuestionResult]
    duplicates: list[ResultKey]
    lost: list[dict[str, Any]]
    store: RunStore | None
    rescored: list[str]
    import_verify: dict[str, Any] | None
    started: float

    @property
    def state(self) -> RunState:
        raise NotImplementedError  # Controller.state

    @property
    def calibration(self) -> dict[str, Any] | None:
        raise NotImplementedError  # Controller.calibration

    def merged(self) -> dict[str, Any]:
        raise NotImplementedError  # Controller.merged

    def ingest_counts(self) -> dict[str, int]:
        raise NotImplementedError  # Controller.ingest_counts

    def _questions_run(self, benchmark: str, summary: Summary | None = None) -> int:
        raise NotImplementedError  # Controller._questions_run

    # ---- aggregation -------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        from .. import __version__

        state = self.state
        settings = state.settings
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
            "judge_metric": self.judge_metrics() or None,
            "protocol": self._protocol_provenance(),
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
            "git_commit": _git_commit(self.config.rootpath),
            "ingests": self.ingest_counts(),
            "duplicate_results": [list(key) for key in self.duplicates],
            "lost": list(self.lost),
            "run_id": self.store.run_id if self.store is not None else None,
            "resumed": settings.run.resume is not None,
            # stored rows whose offline numbers were re-computed to other values (merge, resume)
            "rescored": list(self.rescored),
            # LLM-cache hits served from --memeval-cache-import files: file -> role -> count
            "cache_imports": self.merged().get("imported") or {},
            "cache_import_verify": self.import_verify,
            **self._calibration_provenance(),
        }

    def _judge_heads(self, benchmark: str) -> list[tuple[str, str]]:
        """(headline metric, "@LABEL" or "") of every judge on ``benchmark``; the graded judge's
        keys when no judge is configured (results read back from an earlier run)."""
        llm = self.state.llm
        if llm is None or not self.state.settings.llm.judges:
            return [("judge_graded", "")]
        out = []
        for key in llm.judge_keys(benchmark):
            head, at, label = key.partition("@")
            out.append((head, at + label))
        return out

    def judge_metrics(self) -> dict[str, str]:
        """benchmark -> the first judge's headline metric (empty without a judge)."""
        llm = self.state.llm
        if llm is None or not self.state.settings.llm.judges:
            return {}
        return llm.judge_metrics(list(self.state.benchmarks))

    def _protocol_provenance(self) -> dict[str, Any] | None:
        """The protocol's provenance; ``answer``: the answer request it sent (None: our
        answerer's own prompt, or no LLM answerer), with how the memories were filed."""
        state = self.state
        if state.protocol is None:
            return None
        out: dict[str, Any] = state.protocol.provenance(list(state.settings.llm.judges))
        filed = self._mem0_filing()
        out["answer"] = None if filed is None else {**filed[0].provenance(), **filed[1]}
        return out

    def _mem0_filing(self) -> tuple[Any, dict[str, int]] | None:
        """The Mem0 answerer (``--memeval-protocol=mem0`` with an LLM answerer) and the totals of
        its filing over every result; None without it."""
        from ..answerers.mem0 import Mem0Answerer, filing_totals

        answerer = self.state.llm.answerer if self.state.llm is not None else None
        if not isinstance(answerer, Mem0Answerer):
            return None
        return answerer, filing_totals(r.details for r in self.results.values())

    def _calibration_provenance(self) -> dict[str, Any]:
        if self.calibration is None:
            return {}
        from ..run.calibration import provenance

        return {"judge_calibration": provenance(self.calibration)}

    def build_summary(self) -> Summary:
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

        runs = []
        for (bench_name, system, flow), results in group_runs(self.results.values()).items():
            try:
                bench = self.state.benchmarks.get(bench_name) or get_benchmark(bench_name)
            except Exception:  # an unknown benchmark in a result never breaks the summary
                bench = None
            metas, metrics, round3 = benchmark_shape(bench)
            if self.state.settings.selection.metrics:
                # `judge` is the first judge's headline metric on this benchmark (dropped when
                # no judge ran)
                headline = self.judge_metrics().get(bench_name)
                resolved = (
                    resolve_judge_alias(m, headline) for m in self.state.settings.selection.metrics
                )
                metrics = list(dict.fromkeys(m for m in resolved if m is not None))
            metrics = metric_union(results, metrics)
            run = aggregate_run(bench_name, system, flow, results, metas, metrics, round3)
            run.cluster_unit = str(getattr(bench, "cluster_unit", "conversation"))
            run.official = self._official(bench_name, results, run)
            run.halumem = self._halumem(bench_name, results)
            add_confidence_intervals(
                run, metrics, seed=self.state.settings.selection.seed, round3=round3
            )
            for head, at in self._judge_heads(bench_name):
                # a judge run several times per question (graded): <metric>_pooled_std
                add_pooled_judge_std(
                    run,
                    key=f"{head}_pooled_std{at}",
                    std_key=f"{head}_std{at}",
                    runs_key=f"{head}_runs{at}",
                )
            runs.append(run)
        order = {name: i for i, name in enumerate(self.state.settings.selection.benchmarks)}
        runs.sort(key=lambda r: (order.get(r.benchmark, 99), r.flow != "", r.flow))
        summary = Summary(
            runs=runs,
            provenance=self.provenance(),
            collect_seconds=self.state.collect_seconds,
            load_seconds=dict(self.state.load_seconds),
            judge_calibration=self.calibration,
        )
        from ..run.overlay import add_overlays

        add_overlays(summary, self.state)
        merged = self.merged()
        if self.state.llm is not None:
            usage = LLMUsage(
                tokens=merged["tokens"],
                cache=merged["cache"],
                cache_off=list(merged["cache_off"]),
                judge_warnings=merged["judge_warnings"],
                judge_unscored=merged["judge_unscored"],
            )
            if self.state.settings.llm.prices is not None:
                from ..llm import TokenAccounting

                tokens = TokenAccounting.from_dict(merged["tokens"])
                prices = self.state.settings.llm.prices
                usage.cost_usd = {
                    "total": tokens.cost(prices),
                    "by_role": tokens.cost_by_role(prices),
                }
            if len(self.state.llm.judges) > 1:
                # each benchmark's judges write their own metric names: kappa per set of keys
                by_keys: dict[tuple[str, ...], list[dict[str, float | None]]] = {}
                for r in self.results.values():
                    keys = tuple(self.state.llm.judge_keys(r.benchmark))
                    by_keys.setdefault(keys, []).append(r.scores)
                agreement: dict[str, float | None] = {}
                for keys, scores in by_keys.items():
                    agreement.update(judge_agreement(scores, keys))
                usage.judge_agreement = agreement
            summary.llm = usage
        return summary

    def _official(
        self, benchmark: str, results: Sequence[QuestionResult], run: RunSummary
    ) -> OfficialComposite | None:
        """BEAM's official composite when the beam protocol scored this benchmark."""
        from ..analysis.beam_official import official_composite

        protocol = self.state.protocol
        if (
            protocol is None
            or protocol.name != "beam"
            or benchmark not in protocol.profile.benchmarks
        ):
            return None
        return official_composite(
            results, protocol.profile.metric, [row.key for row in run.categories]
        )

    def _halumem(self, benchmark: str, results: Sequence[QuestionResult]) -> HaluMemOfficial | None:
        """HaluMem's official figures when the halumem protocol judged this benchmark."""
        from ..analysis.halumem_official import halumem_official

        protocol = self.state.protocol
        if (
            protocol is None
            or protocol.name != "halumem"
            or benchmark not in protocol.profile.benchmarks
        ):
            return None
        metric = self.judge_metrics().get(benchmark)
        return halumem_official(results, metric) if metric is not None else None

    def baselines(self, summary: Summary) -> dict[str, list[Baseline]]:
        from ..analysis.baselines import baselines_for, mark_comparability

        chosen: dict[str, list[Baseline]] = {}
        for run in summary.runs:
            if run.benchmark not in chosen:
                dataset = self.state.datasets.get(run.benchmark)
                chosen[run.benchmark] = mark_comparability(
                    baselines_for(
                        run.benchmark,
                        self.state.settings.reports.baselines,
                        None,
                        dataset.variant if dataset is not None else None,
                    ),
                    self._run_protocol(run.benchmark, summary),
                )
        return chosen

    def _run_protocol(self, benchmark: str, summary: Summary) -> RunProtocol:
        from ..analysis.baselines import RunProtocol

        state = self.state
        metrics: set[str] = set()
        for run in summary.runs:
            if run.benchmark == benchmark:
                metrics.update(run.metrics)
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
            answerer=state.answerer.label if state.answerer is not None else None,
        )
