"""Published baselines, each with the protocol that produced it
(docs/scoring.md#published-baselines): the record, the comparison with a run and the choice of
rows. The figures themselves live in each suite's home (``benchmarks/<name>/published.py``); the
registry names those modules (``benchmarks.SUITE_PUBLISHED``) and they are read at the first use
of :data:`BASELINES`, :data:`DEFAULT_BASELINES` or :func:`baselines_for`.

Values are keyed by the benchmark's numeric category id, never by name: the Mem0 paper labels its
columns with a different id->name mapping than LoCoMo's (its "single-hop" is LoCoMo category 1).
A baseline is only ever shown in a column of its own, labelled with its protocol; the report never
puts a baseline in the same column as the run's number when the protocols differ.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..benchmarks import SUITE_PUBLISHED

__all__ = [
    "BASELINES",
    "DEFAULT_BASELINES",
    "SYSTEM_ANSWERED",
    "Baseline",
    "RunProtocol",
    "answerer_label",
    "baselines_for",
    "comparability_label",
    "comparability_reasons",
    "mark_comparability",
    "not_comparable",
    "published",
]


@dataclass(frozen=True)
class Baseline:
    name: str  # short unique key, used by --memeval-published-baselines
    benchmark: str
    system: str
    #: the exact run metric it was published as: "f1" (official LoCoMo), "set_f1",
    #: "judge_mem0_official", "judge_lme_official", "nugget_official", ...
    metric: str
    protocol: str  # what makes it (in)comparable, shown beside it
    source: str
    by_category: Mapping[int | str, float] = field(default_factory=dict)  # 0-1 scale
    overall: float | None = None  # over the categories `overall_scope` names
    overall_scope: str = "overall"  # "overall" (LoCoMo 1-4) or "overall_all" (1-5)
    verified: bool = True
    variant: str | None = None  # LongMemEval oracle/s/m, BEAM 100K/500K/1M/10M
    #: what a run must use for its number to stand beside this one (None: anything)
    needs_protocol: str | None = None  # --memeval-protocol
    needs_judge_style: str | None = None  # the judge style that produced the metric
    needs_judge_model: str | None = None  # the judge model it was published with
    #: the model that wrote the published answers (None: not recorded)
    needs_answerer: str | None = None
    #: set when the run differs: the first of ``reasons`` (what to change first)
    not_comparable: str | None = None
    #: every way the run differs (protocol, judge, judge model, answerer, metric); empty: the
    #: baseline is "comparable", else it is shown as a "reference" with these reasons
    reasons: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``comparable`` or ``reference`` (shown beside the number, never instead of it)."""
        return comparability_label(self.reasons)


@dataclass(frozen=True)
class RunProtocol:
    """How one benchmark of a run was scored: what baselines are compared against."""

    metrics: frozenset[str]
    protocol: str | None = None
    judge_style: str | None = None
    judge_model: str | None = None
    #: the answerer's label (``extractive``, ``openai:gpt-4o-mini``); None: not recorded
    answerer: str | None = None


#: how a run's answers are named when the memory system gave them itself (``answer()``:
#: ``replay:`` saved answers, or a system that answers), not the configured answerer
SYSTEM_ANSWERED = "the memory system itself (its own answer(), e.g. replay's saved answers)"


def answerer_label(answered_by: Iterable[str], configured: str | None) -> str | None:
    """Who answered a benchmark's questions in a run, from each result's ``answered_by``
    (``system``, ``extractive``, ``PROVIDER:MODEL``): one label, several joined with ``and``
    (two systems answered differently), ``system`` named :data:`SYSTEM_ANSWERED`; the
    ``configured`` answerer when no result says (none recorded)."""
    seen = sorted({a for a in answered_by if a})
    if not seen:
        return configured
    return " and ".join(SYSTEM_ANSWERED if a == "system" else a for a in seen)


def comparability_label(reasons: Sequence[str]) -> str:
    """``comparable`` (no difference) or ``reference`` (shown with its reasons)."""
    return "reference" if reasons else "comparable"


def comparability_reasons(baseline: Baseline, run: RunProtocol) -> list[str]:
    """Every way the run differs from how ``baseline`` was measured, each starting with what
    differs (``protocol:``, ``judge:``, ``judge model:``, ``answerer:``, ``metric:``); empty: the
    two numbers are comparable. The protocol, judge style and judge model come first (their
    reasons say what to change), then the answerer and the metric: every judge style writes its
    own metric name, so a run's graded ``judge_graded`` never stands for a published binary
    ``judge_mem0_official``."""
    out: list[str] = []
    if baseline.needs_protocol is not None and run.protocol != baseline.needs_protocol:
        out.append(
            f"protocol: published under the {baseline.needs_protocol} protocol; this run "
            + (f"used --memeval-protocol={run.protocol}" if run.protocol else "used no protocol")
            + f" (run with --memeval-protocol={baseline.needs_protocol})"
        )
    if baseline.needs_judge_style is not None and run.judge_style != baseline.needs_judge_style:
        out.append(
            f"judge: {baseline.metric} was published by the {baseline.needs_judge_style} judge, "
            f"this run's is {run.judge_style or 'none'}"
        )
    if baseline.needs_judge_model is not None and run.judge_model != baseline.needs_judge_model:
        out.append(
            f"judge model: judged by {baseline.needs_judge_model}, this run by "
            f"{run.judge_model or 'no judge'}"
        )
    if baseline.needs_answerer is not None and run.answerer is not None:
        models = {a.partition(":")[2] or a for a in run.answerer.split(" and ")}
        if models != {baseline.needs_answerer}:
            out.append(
                f"answerer: published answers by {baseline.needs_answerer}, this run's by "
                f"{run.answerer}"
            )
    if baseline.metric not in run.metrics:
        judged = sorted(m for m in run.metrics if m.startswith(("judge_", "nugget")))
        out.append(
            f"metric: published as {baseline.metric}; this run has no {baseline.metric}"
            + (f" (its judge metrics: {', '.join(judged)})" if judged else "")
        )
    return out


def not_comparable(baseline: Baseline, run: RunProtocol) -> str | None:
    """The first of :func:`comparability_reasons`, without its ``what:`` prefix (None: the
    baseline is comparable)."""
    reasons = comparability_reasons(baseline, run)
    return reasons[0].partition(": ")[2] if reasons else None


def mark_comparability(baselines: Sequence[Baseline], run: RunProtocol) -> list[Baseline]:
    """The baselines with ``reasons`` (and ``not_comparable``, the first) set where the run
    differs from how they were measured."""
    out = []
    for b in baselines:
        reasons = tuple(comparability_reasons(b, run))
        first = reasons[0].partition(": ")[2] if reasons else None
        out.append(replace(b, reasons=reasons, not_comparable=first))
    return out


@functools.cache
def published() -> tuple[tuple[Baseline, ...], tuple[str, ...]]:
    """Every suite's published figures and the names shown by default, in the registry's order:
    each module ``SUITE_PUBLISHED`` names holds ``BASELINES`` and ``DEFAULTS``."""
    rows: list[Baseline] = []
    defaults: list[str] = []
    for module_name in SUITE_PUBLISHED.values():
        module = importlib.import_module(module_name)
        rows.extend(module.BASELINES)
        defaults.extend(module.DEFAULTS)
    return tuple(rows), tuple(defaults)


if TYPE_CHECKING:
    #: every published baseline
    BASELINES: tuple[Baseline, ...]
    #: shown when --memeval-published-baselines is not given
    DEFAULT_BASELINES: tuple[str, ...]


def __getattr__(name: str) -> Any:
    """``BASELINES`` and ``DEFAULT_BASELINES``, read from the homes at the first lookup."""
    if name == "BASELINES":
        return published()[0]
    if name == "DEFAULT_BASELINES":
        return published()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def baselines_for(
    benchmark: str,
    names: tuple[str, ...] | None = None,
    metrics: tuple[str, ...] | None = None,
    variant: str | None = None,
) -> list[Baseline]:
    """Baselines of one benchmark (the demo uses LoCoMo's schema but has no published figures).

    ``names`` None -> the defaults; ("all",) -> every one; ("none",) -> none. ``metrics`` keeps only
    baselines whose metric the run computes."""
    if names is not None and tuple(names) == ("none",):
        return []
    rows, defaults = published()
    chosen = [b for b in rows if b.benchmark == benchmark]
    if names is None:
        chosen = [b for b in chosen if b.name in defaults]
    elif tuple(names) != ("all",):
        chosen = [b for b in chosen if b.name in names]
    if metrics is not None:
        chosen = [b for b in chosen if b.metric in metrics]
    if variant is not None:
        chosen = [b for b in chosen if b.variant is None or b.variant.lower() == variant.lower()]
    return chosen
