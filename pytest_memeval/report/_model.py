"""The summary model every renderer reads (plain data, JSON-compatible through ``to_dict``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..analysis import Baseline
    from ..benchmarks.beam import OfficialComposite
    from ..benchmarks.halumem import HaluMemOfficial

from ..records import QuestionResult

__all__ = [
    "REPORT_SCHEMA",
    "STATUS_COLUMNS",
    "CategoryRow",
    "GateOutcome",
    "LLMUsage",
    "RegressionOutcome",
    "RunSummary",
    "Summary",
    "baseline_value",
    "ci_note",
    "comparison_columns",
    "dataset_notes",
    "judge_metric",
    "overall_scopes",
    "pass_metric",
    "published_entries",
    "runs_by_benchmark",
    "unit_count",
    "unscored_metric_notes",
    "unscored_notes",
]


@dataclass
class CategoryRow:
    """One table row: a category, or ``overall`` / ``overall_all``."""

    key: str  # category name, "overall" or "overall_all"
    category_id: int | str | None
    shared: str
    count: int
    metrics: dict[str, float | None] = field(default_factory=dict)
    scored: dict[str, int] = field(default_factory=dict)  # questions with a value, per metric
    statuses: dict[str, int] = field(default_factory=dict)
    in_overall: bool = True
    # 95% bootstrap CI of each metric's mean (stats.add_confidence_intervals); None: no values
    ci: dict[str, list[float] | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.count}
        out.update(self.metrics)
        out["category_id"] = self.category_id
        out["shared_category"] = self.shared
        out["statuses"] = dict(self.statuses)
        out["scored"] = dict(self.scored)
        out["ci"] = {k: (list(v) if v is not None else None) for k, v in self.ci.items()}
        return out


@dataclass
class RunSummary:
    benchmark: str
    system: str
    flow: str
    metrics: list[str]
    categories: list[CategoryRow]
    overall: CategoryRow
    overall_all: CategoryRow
    results: list[QuestionResult]
    latency: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the unweighted mean of the category means (LongMemEval's "task-averaged" accuracy, BEAM's
    #: mean of the ability means); ``count`` is the number of categories averaged
    macro: CategoryRow | None = None
    #: questions flagged as abstention (LongMemEval ``_abs`` ids), when they are not a category
    abstention: CategoryRow | None = None
    #: what the questions cluster in (the benchmark's ``cluster_unit``); intervals and the
    #: regression gate resample and pair by cluster (``QuestionResult.cluster_id``)
    cluster_unit: str = "conversation"
    #: with --memeval-errata: question id -> erratum dict (None: sound, not listed)
    errata: dict[str, Any] | None = None
    #: with --memeval-protocol=beam: BEAM's official composite (conversation-level means)
    official: OfficialComposite | None = None
    #: with --memeval-protocol=halumem: upstream's extraction / update / QA figures
    halumem: HaluMemOfficial | None = None
    #: the id of the suite's protocol card (``report/cards.py``, docs/protocols.md), None for a
    #: suite the plugin has no card for
    protocol_card: str | None = None

    @property
    def clusters(self) -> int:
        """How many clusters the run's questions come from."""
        return len({r.cluster_id for r in self.results})

    @property
    def label(self) -> str:
        return f"{self.system} / {self.flow}" if self.flow else self.system

    def row(self, key: str) -> CategoryRow | None:
        """The row named ``key``: ``overall``, ``overall_all`` or a category key."""
        if key == "overall":
            return self.overall
        if key == "overall_all":
            return self.overall_all
        return next((row for row in self.categories if row.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "system": self.system,
            "flow": self.flow,
            **({"protocol_card": self.protocol_card} if self.protocol_card else {}),
            "questions": [_report_question(r, self.errata) for r in self.results],
            "summary": self.summary_dict(),
        }

    def summary_dict(self) -> dict[str, Any]:
        """The ``summary`` part of ``to_dict`` (tables, latency, notes), without the questions."""
        return {
            "overall": {
                "count": self.overall.count,
                **self.overall.metrics,
                "statuses": dict(self.overall.statuses),
            },
            "overall_all": {
                "count": self.overall_all.count,
                **self.overall_all.metrics,
                "statuses": dict(self.overall_all.statuses),
            },
            "by_category": {row.key: row.to_dict() for row in self.categories},
            **(
                {"macro": {"categories": self.macro.count, **self.macro.metrics}}
                if self.macro is not None
                else {}
            ),
            **({"abstention": self.abstention.to_dict()} if self.abstention is not None else {}),
            **({"beam_official": self.official.to_dict()} if self.official is not None else {}),
            **({"halumem_official": self.halumem.to_dict()} if self.halumem is not None else {}),
            "latency": self.latency,
            "notes": list(self.notes),
            "clusters": {"unit": self.cluster_unit, "count": self.clusters},
        }


#: (status, column label) in the order every table shows them
STATUS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("CORRECT", "correct"),
    ("WRONG", "wrong"),
    ("UNSCORED", "unscored"),
    ("ERROR", "error"),
)

#: the ``schema`` of the JSON report (also accepted as a baseline by ``--memeval-baseline``)
REPORT_SCHEMA = "pytest-memeval/1"


@dataclass
class GateOutcome:
    """One ``--memeval-fail-under`` gate, checked."""

    gate: str
    passed: bool
    actual: float | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "passed": self.passed,
            "actual": self.actual,
            "message": self.message,
        }


@dataclass
class RegressionOutcome:
    """One run compared with the saved baseline (``--memeval-baseline``) on one metric."""

    label: str
    metric: str
    failed: bool
    message: str
    details: list[str] = field(default_factory=list)
    delta: float | None = None
    ci: list[float] | None = None
    p_value: float | None = None
    #: the test that decided (``sign-flip``, ``cluster-bootstrap``, ``mcnemar``,
    #: ``paired-bootstrap``) and what it treated as independent: ``{"unit", "count"}``
    test: str = ""
    clusters: dict[str, Any] = field(default_factory=dict)
    #: the question-level test (questions as independent) and its verdict, shown beside it
    question_test: str = ""
    question_p_value: float | None = None
    question_failed: bool = False
    #: the smallest drop the run could detect at alpha with 80% power (None: not computed)
    detectable: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "metric": self.metric,
            "failed": self.failed,
            "message": self.message,
            "details": list(self.details),
            "delta": self.delta,
            "ci": list(self.ci) if self.ci else None,
            "p_value": self.p_value,
            "test": self.test,
            "clusters": dict(self.clusters),
            "question_test": self.question_test,
            "question_p_value": self.question_p_value,
            "question_failed": self.question_failed,
            "detectable": finite_or_none(self.detectable),
        }


@dataclass
class LLMUsage:
    """What the run's LLM calls cost, merged over every process."""

    #: role -> model -> {input_tokens, output_tokens, calls, cache_hits}
    tokens: dict[str, Any] = field(default_factory=dict)
    #: {hits, misses}
    cache: dict[str, Any] = field(default_factory=dict)
    #: processes whose cache could not be used (why, per process)
    cache_off: list[str] = field(default_factory=list)
    #: what the rate limiters said (a rebuilt state file, Redis unreachable), each line once
    limiter: list[str] = field(default_factory=list)
    judge_warnings: int = 0
    judge_unscored: int = 0
    #: {total, by_role} in USD, with ``--memeval-prices``
    cost_usd: dict[str, Any] | None = None
    #: Cohen's kappa between every pair of judges, with several judges
    judge_agreement: dict[str, float | None] | None = None


@dataclass
class Summary:
    """Everything a report shows: the runs' tables, the checks and their verdicts, provenance.

    ``extra`` is for third-party plugins only (``pytest_memeval_modify_summary``); the JSON keeps
    its keys beside the plugin's own, under ``extra``."""

    runs: list[RunSummary]
    provenance: dict[str, Any] = field(default_factory=dict)
    collect_seconds: float = 0.0
    load_seconds: dict[str, float] = field(default_factory=dict)
    llm: LLMUsage | None = None
    gates: list[GateOutcome] = field(default_factory=list)
    regression: list[RegressionOutcome] = field(default_factory=list)
    #: the health gate beside it (``metric`` "health", ``delta`` the rise of the unhealthy share)
    health: list[RegressionOutcome] = field(default_factory=list)
    #: why the saved baseline could not be compared (a failed check)
    regression_error: str | None = None
    #: context tokens per run, the Pareto flags and the top-k warnings (``analysis.overlay``)
    context: dict[str, Any] | None = None
    #: the --memeval-errata columns per run (``analysis.overlay``)
    errata: dict[str, Any] | None = None
    #: --memeval-judge-calibration's block (run.calibrate.run_calibration), JSON-ready
    judge_calibration: dict[str, Any] | None = None
    #: benchmark -> its published baselines with values, label and reasons (published_entries)
    published: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: benchmark -> its protocol card's reference (``report.cards.card_reference``)
    protocol_cards: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def extra_dict(self) -> dict[str, Any]:
        """The JSON report's ``extra`` object (its keys are a stable part of the schema)."""
        out: dict[str, Any] = {
            "collect_seconds": round(self.collect_seconds, 4),
            "load_seconds": {k: round(v, 4) for k, v in self.load_seconds.items()},
        }
        llm = self.llm
        if llm is not None:
            out["tokens"] = llm.tokens
            out["llm_cache"] = llm.cache
            if llm.cache_off:
                out["llm_cache_off"] = list(llm.cache_off)
            if llm.limiter:
                out["llm_limiter"] = list(llm.limiter)
            out["judge_warnings"] = llm.judge_warnings
            out["judge_unscored"] = llm.judge_unscored
            if llm.cost_usd is not None:
                out["cost_usd"] = llm.cost_usd
            if llm.judge_agreement is not None:
                out["judge_agreement"] = llm.judge_agreement
        if self.gates:
            out["gates"] = [g.to_dict() for g in self.gates]
        if self.regression_error is not None:
            out["regression_error"] = self.regression_error
        if self.regression:
            out["regression"] = [c.to_dict() for c in self.regression]
        if self.health:
            out["health"] = [c.to_dict() for c in self.health]
        if self.context is not None:
            out["context"] = self.context
        if self.errata is not None:
            out["errata"] = self.errata
        if self.judge_calibration is not None:
            out["judge_calibration"] = self.judge_calibration
        if any(self.published.values()):
            out["published"] = self.published
        if self.protocol_cards:
            out["protocol_cards"] = self.protocol_cards
        out.update(self.extra)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "runs": [run.to_dict() for run in self.runs],
            # judge_metric is always recorded: its presence marks a file whose judge metrics are
            # named per style (docs/scoring.md#metric-names)
            "provenance": {"judge_metric": None, **self.provenance},
            "extra": self.extra_dict(),
        }


def published_entries(
    baselines: Mapping[str, Sequence[Baseline]],
) -> dict[str, list[dict[str, Any]]]:
    """The JSON report's ``extra.published``: per benchmark, every published baseline shown with
    its values (0-1 scale, per category keyed by the benchmark's category id), its label
    (``comparable`` / ``reference``) and the reasons of a reference."""
    return {
        bench: [
            {
                "name": b.name,
                "system": b.system,
                "metric": b.metric,
                "overall": b.overall,
                "overall_scope": b.overall_scope,
                "by_category": {str(k): v for k, v in b.by_category.items()},
                "label": b.label,
                "reasons": list(b.reasons),
                "protocol": b.protocol,
                "source": b.source,
                "verified": b.verified,
                "variant": b.variant,
            }
            for b in listed
        ]
        for bench, listed in baselines.items()
    }


def finite_or_none(value: float | None) -> float | None:
    """JSON has no infinity: ``None`` for it (and for NaN)."""
    return value if value is not None and math.isfinite(value) else None


def unit_count(n: int, unit: str) -> str:
    """``10 conversations``, ``1 conversation``, ``500 questions``."""
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def ci_note(run: RunSummary) -> str:
    """What the intervals resample: ``95% bootstrap CIs over 10 conversations``."""
    return f"95% bootstrap CIs over {unit_count(run.clusters, run.cluster_unit)}"


def baseline_value(baseline: Baseline, row: CategoryRow) -> float | None:
    """The baseline's figure for a category row (by numeric id) or an overall row (by scope)."""
    if row.key in ("overall", "overall_all") and row.category_id is None:
        return baseline.overall if baseline.overall_scope == row.key else None
    if row.category_id is None:
        return None
    value = baseline.by_category.get(row.category_id)
    if value is None:
        value = baseline.by_category.get(str(row.category_id))
    return value


def pass_metric(summary: Summary, run: RunSummary) -> str | None:
    """The benchmark's pass metric from provenance, else the run's first metric."""
    by_bench = summary.provenance.get("pass_metric")
    if isinstance(by_bench, Mapping):
        metric = by_bench.get(run.benchmark)
        if isinstance(metric, str) and metric:
            return metric
    return run.metrics[0] if run.metrics else None


def judge_metric(summary: Summary, benchmark: str) -> str | None:
    """The first judge's headline metric on ``benchmark`` (provenance ``judge_metric``), or None
    without a judge."""
    by_bench = summary.provenance.get("judge_metric")
    if isinstance(by_bench, Mapping):
        metric = by_bench.get(benchmark)
        if isinstance(metric, str) and metric:
            return metric
    return None


def comparison_columns(
    summary: Summary, runs: Sequence[RunSummary]
) -> tuple[list[str], str | None]:
    """The columns of a comparison across systems: every metric (``overall``) and the pass
    metric once more over ``overall_all``; the same in every report format."""
    metrics = list(dict.fromkeys(m for run in runs for m in run.metrics))
    return metrics, pass_metric(summary, runs[0]) if runs else None


def runs_by_benchmark(summary: Summary) -> dict[str, list[RunSummary]]:
    out: dict[str, list[RunSummary]] = {}
    for run in summary.runs:
        out.setdefault(run.benchmark, []).append(run)
    return out


def overall_scopes(run: RunSummary) -> dict[str, str]:
    """What ``overall`` and ``overall_all`` cover, in words."""
    outside = [
        str(r.category_id if r.category_id is not None else r.key)
        for r in run.categories
        if not r.in_overall
    ]
    if not outside:
        return {"overall": "all", "overall_all": "all"}
    return {"overall": f"excl. {', '.join(outside)}", "overall_all": "all categories"}


def _unscored_reason(result: QuestionResult, metric: str | None) -> str:
    if result.error:
        return result.error.splitlines()[0][:200]
    # a judge whose verdict still waits for the batch (or never came back from it)
    for pending in result.pending:
        if pending.slot:
            return f"the {pending.slot} judge gave no usable verdict"
        return "its answer queued for the batch never came back"
    # a judge that gave no usable verdict records ``unscored`` under its metric's details
    for key, value in result.details.items():
        if isinstance(value, Mapping) and value.get("unscored"):
            return f"the {key} judge gave no usable verdict"
    used = result.details.get("pass_metric")
    name = used if isinstance(used, str) and used else metric or "pass metric"
    return f"no {name} value for the question"


def unscored_notes(summary: Summary, hints: Mapping[str, str | None] | None = None) -> None:
    """Add to each run's ``notes`` why its UNSCORED questions have no score: one note per reason
    with its count, followed by the benchmark's own explanation (``hints``) where it has one."""
    for run in summary.runs:
        metric = pass_metric(summary, run)
        counts: dict[str, int] = {}
        for r in run.results:
            if r.status == "UNSCORED":
                reason = _unscored_reason(r, metric)
                counts[reason] = counts.get(reason, 0) + 1
        if not counts:
            continue
        total = len(run.results)
        hint = (hints or {}).get(run.benchmark)
        for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            note = f"UNSCORED {n} of {total}: {reason}"
            if hint and reason.startswith("no "):
                note += f" ({hint})"
            run.notes.append(note)


def dataset_notes(summary: Summary, datasets: Mapping[str, Any]) -> None:
    """Add to each run's ``notes`` what its benchmark's loader said about the files (records
    skipped as upstream skips them: ``Dataset.meta["notes"]``), once per run."""
    for run in summary.runs:
        ds = datasets.get(run.benchmark)
        for note in getattr(ds, "meta", {}).get("notes", ()):
            if note not in run.notes:
                run.notes.append(note)


def unscored_metric_notes(
    summary: Summary, reasons: Mapping[str, Mapping[str, str]] | None = None
) -> None:
    """Add to each run's ``notes`` the metrics its benchmark left UNSCORED in this installation
    (``reasons``: benchmark -> metric -> why), grouped by reason, when some question of the run
    has no value for them."""
    for run in summary.runs:
        by_metric = (reasons or {}).get(run.benchmark) or {}
        grouped: dict[str, list[str]] = {}
        for metric, reason in by_metric.items():
            if any(r.scores.get(metric, 0.0) is None for r in run.results):
                grouped.setdefault(reason, []).append(metric)
        for reason, metrics in grouped.items():
            run.notes.append(f"UNSCORED {', '.join(metrics)}: {reason}")


#: memories shown per question in the reports (the run folder keeps all of them, up to k)
REPORT_MEMORIES = 10


def _report_question(
    result: QuestionResult, errata: dict[str, Any] | None = None
) -> dict[str, Any]:
    data = result.to_dict()
    data["memories"] = data["memories"][:REPORT_MEMORIES]
    if errata is not None:
        data["erratum"] = errata.get(result.question_id)
    return data
