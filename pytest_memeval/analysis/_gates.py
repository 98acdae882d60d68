"""Gate expressions for ``--memeval-fail-under``: parsed once when options are read, checked
against the session ``Summary``. Pytest-free; nothing here raises while checking (a missing
benchmark, category or metric is a failed gate with a sentence saying so).

Grammar::

    GATE     := BENCH [ "[" SYSTEM "]" ] "." CATEGORY "." METRIC OP VALUE
    CATEGORY := a category name | "overall" | "overall_all"
    METRIC   := a metric key (letters, digits, "_", "@", "-")
              | "latency." STAGE "." STAT     (category "overall" only; STAGE search | answer |
                                              ingest; STAT p50 | p95 | mean | count)
    OP       := ">=" | "<="
    VALUE    := NUMBER [ "%" ]                (score metrics; "%" divides by 100)
              | NUMBER [ "s" | "ms" ]         (latency, in seconds; "ms" divides by 1000)

``judge`` (and ``judge@LABEL``) stands for the first judge's (LABEL's) headline metric on the
benchmark (``judge_mem0``, ``judge_lme_official``, ``nugget``, ...; docs/scoring.md#metric-names).

Examples: ``locomo.temporal.f1>=0.40``, ``locomo.overall.judge>=65%``,
``longmemeval[bm25].overall.recall_all@5>=0.8``, ``locomo.overall.latency.search.p95<=500ms``.

Judge calibration figures (``--memeval-judge-calibration``) use the same form with ``[JUDGE]`` in
place of ``[SYSTEM]``: ``locomo.overall.judge_false_accept<=0.1``,
``locomo[openai:gpt-4o-mini].temporal.judge_true_accept>=90%`` (see analysis/_judge_calibration.py).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..errors import MemevalError
from ..judges import resolve_judge_alias
from ..report import CategoryRow, RunSummary, Summary, judge_metric
from ._judge_calibration import gate_values, is_calibration_metric

__all__ = [
    "GATE_GRAMMAR",
    "Gate",
    "GateResult",
    "GateRunResult",
    "GateSyntaxError",
    "check_gates",
    "check_metric_names",
    "parse_gate",
]

GATE_GRAMMAR = (
    "grammar: BENCHMARK[SYSTEM].CATEGORY.METRIC>=VALUE or <=VALUE, where [SYSTEM] is optional, "
    "CATEGORY is a category name, 'overall' or 'overall_all', METRIC a metric key (f1, judge_mem0, "
    "judge for the first judge's metric, recall_all@5, ...) or latency.STAGE.STAT (STAGE search|answer|ingest, "
    "STAT p50|p95|mean|count, category 'overall' only), "
    "VALUE a number with an optional '%' (or 's'/'ms' for latency)"
)
_EXAMPLES = (
    "examples: locomo.temporal.f1>=0.40, locomo.overall.judge>=65%, "
    "longmemeval[bm25].overall.recall_all@5>=0.8, locomo.overall.latency.search.p95<=500ms"
)

_NAME = r"[\w][\w-]*"
_METRIC = r"[\w@][\w@-]*"
_LATENCY_STAGES = ("search", "answer", "ingest")
_LATENCY_STATS = ("p50", "p95", "mean", "count")
_OP_RE = re.compile(r"(>=|<=|==|=>|=<|!=|>|<|=)")
_NUMBER_RE = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(%|ms|s)?$")
_LHS_RE = re.compile(
    rf"^(?P<bench>{_NAME})(?:\[(?P<system>[^\[\]]+)\])?\.(?P<rest>.+)$",
)
_TOLERANCE = 1e-9  # a mean equal to the threshold up to float rounding passes


class GateSyntaxError(MemevalError):
    """A ``--memeval-fail-under`` expression that does not parse; the message names the bad part,
    shows the grammar and an example."""

    def __init__(self, text: str, problem: str, *, grammar: bool = True) -> None:
        tail = f"; {GATE_GRAMMAR}; {_EXAMPLES}" if grammar else ""
        super().__init__(f"--memeval-fail-under {text!r}: {problem}{tail}")
        self.text = text
        self.problem = problem


def _fmt_pair(a: float, b: float) -> tuple[str, str]:
    """Format two numbers with 3 decimals, or more when 3 would make different values look equal."""
    for digits in (3, 4, 5, 6):
        fa, fb = f"{a:.{digits}f}", f"{b:.{digits}f}"
        if fa != fb or abs(a - b) <= _TOLERANCE:
            return fa, fb
    return repr(a), repr(b)


@dataclass(frozen=True)
class GateRunResult:
    """One gate checked against one run (system / flow) of its benchmark."""

    system: str
    flow: str
    label: str
    passed: bool
    actual: float | None
    message: str


@dataclass(frozen=True)
class GateResult:
    """A gate checked against a whole session: passed only when it passed on every matching run.

    ``actual`` is the worst value among the matching runs (lowest for ``>=``, highest for ``<=``),
    ``None`` when none had a value; ``message`` is one sentence; ``runs`` has the per-run detail."""

    gate: Gate
    passed: bool
    actual: float | None
    message: str
    runs: tuple[GateRunResult, ...] = ()


@dataclass(frozen=True)
class Gate:
    """A parsed gate. ``metric`` is the metric key, or ``latency.STAGE.STAT``; ``threshold`` is on
    the metric's own scale (0-1 scores, seconds for latency)."""

    text: str
    benchmark: str
    category: str
    metric: str
    op: str  # ">=" or "<="
    threshold: float
    system: str | None = None

    @property
    def is_latency(self) -> bool:
        return self.metric.startswith("latency.")

    @property
    def name(self) -> str:
        """``benchmark[system].category.metric`` as written (normalised)."""
        system = f"[{self.system}]" if self.system is not None else ""
        return f"{self.benchmark}{system}.{self.category}.{self.metric}"

    def _unit(self) -> str:
        return " s" if self.is_latency else ""

    def _value(self, run: RunSummary) -> tuple[float | None, str | None]:
        """The run's value for this gate, or ``(None, reason)``."""
        if self.is_latency:
            _, stage, stat = self.metric.split(".")
            figures = run.latency.get(stage)
            if not figures:
                return None, f"no {stage} latency was recorded for {run.benchmark} ({_who(run)})"
            value = figures.get(stat)
            if value is None:
                known = ", ".join(sorted(figures)) or "none"
                return None, f"latency {stage} has no figure {stat!r} (figures: {known})"
            return float(value), None
        row = run.row(self.category)
        if row is None:
            known = ", ".join(["overall", "overall_all", *(r.key for r in run.categories)])
            return None, (
                f"benchmark {run.benchmark} ({_who(run)}) has no category {self.category!r} "
                f"in this session (categories: {known})"
            )
        if self.metric not in row.metrics:
            known = ", ".join(row.metrics) or "none"
            return None, (
                f"metric {self.metric!r} was not computed for {run.benchmark} ({_who(run)}) "
                f"(metrics: {known})"
            )
        value = row.metrics[self.metric]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None, (
                f"no question in {run.benchmark}.{row.key} ({_who(run)}) has a value for "
                f"{self.metric} ({_status_note(row)})"
            )
        return float(value), None

    def _check_run(self, run: RunSummary) -> GateRunResult:
        value, reason = self._value(run)
        if value is None:
            message = f"memeval gate failed: {self.name}: {reason}"
            return GateRunResult(run.system, run.flow, run.label, False, None, message)
        if self.op == ">=":
            passed = value >= self.threshold - _TOLERANCE
        else:
            passed = value <= self.threshold + _TOLERANCE
        shown, limit = _fmt_pair(value, self.threshold)
        unit = self._unit()
        if passed:
            message = (
                f"memeval gate passed: {self.name} = {shown}{unit} {self.op} {limit}{unit} "
                f"({_who(run)})"
            )
        else:
            bad_op = "<" if self.op == ">=" else ">"
            message = (
                f"memeval gate failed: {self.name} = {shown}{unit} {bad_op} {limit}{unit} "
                f"({_who(run)})"
            )
        return GateRunResult(run.system, run.flow, run.label, passed, value, message)

    def check(self, summary: Summary) -> GateResult:
        """Check the gate against every run of its benchmark (and system, when filtered). The
        metric ``judge`` (``judge@LABEL``) is the first judge's (LABEL's) headline metric on the
        gate's benchmark."""
        resolved = resolve_judge_alias(self.metric, judge_metric(summary, self.benchmark))
        if resolved is None:
            return GateResult(
                self,
                False,
                None,
                f"memeval gate failed: {self.name}: {self.metric!r} stands for the first judge's "
                f"metric, and no judge scored {self.benchmark} in this session (add "
                "--memeval-judge=PROVIDER:MODEL, or name a metric such as f1)",
            )
        if resolved != self.metric:
            return dataclasses.replace(self, metric=resolved).check(summary)
        if is_calibration_metric(self.metric):  # judge calibration figures: [SYSTEM] is the judge
            return self._check_calibration(summary)
        runs = [
            run
            for run in summary.runs
            if run.benchmark == self.benchmark
            and (self.system is None or self.system in (run.system, run.label))
        ]
        if not runs:
            return GateResult(self, False, None, self._no_run_message(summary))
        checked = tuple(self._check_run(run) for run in runs)
        values = [c.actual for c in checked if c.actual is not None]
        worst: float | None = None
        if values:
            worst = min(values) if self.op == ">=" else max(values)
        failed = [c for c in checked if not c.passed]
        if not failed:
            if len(checked) == 1:
                message = checked[0].message
            else:
                _, limit = _fmt_pair(worst if worst is not None else 0.0, self.threshold)
                message = (
                    f"memeval gate passed: {self.name} {self.op} {limit}{self._unit()} on all "
                    f"{len(checked)} runs ({', '.join(c.label for c in checked)})"
                )
            return GateResult(self, True, worst, message, checked)
        if len(failed) == 1:
            message = failed[0].message
        else:
            prefix = f"memeval gate failed: {self.name}"
            tails = [f.message.removeprefix(prefix).lstrip(": ") for f in failed]
            message = f"{prefix} " + "; ".join(tails)
        return GateResult(self, False, worst, message, checked)

    def _check_calibration(self, summary: Summary) -> GateResult:
        """The gate against every calibrated judge of its benchmark (the worst one decides)."""
        values, why = gate_values(
            summary.judge_calibration, self.benchmark, self.system, self.category, self.metric
        )
        if why is not None:
            return GateResult(self, False, None, f"memeval gate failed: {self.name}: {why}")
        checked = []
        for judge, value, reason in values:
            who = f"judge {judge}, calibration"
            if value is None:
                message = f"memeval gate failed: {self.name}: {reason} ({who})"
                checked.append(GateRunResult(judge, "", judge, False, None, message))
                continue
            if self.op == ">=":
                passed = value >= self.threshold - _TOLERANCE
            else:
                passed = value <= self.threshold + _TOLERANCE
            shown, limit = _fmt_pair(value, self.threshold)
            op = self.op if passed else ("<" if self.op == ">=" else ">")
            word = "passed" if passed else "failed"
            message = f"memeval gate {word}: {self.name} = {shown} {op} {limit} ({who})"
            checked.append(GateRunResult(judge, "", judge, passed, value, message))
        known = [c.actual for c in checked if c.actual is not None]
        worst = (min(known) if self.op == ">=" else max(known)) if known else None
        failed = [c for c in checked if not c.passed]
        message = "; ".join(c.message for c in (failed or checked))
        return GateResult(self, not failed, worst, message, tuple(checked))

    def _no_run_message(self, summary: Summary) -> str:
        benchmarks = sorted({run.benchmark for run in summary.runs})
        if self.system is not None and self.benchmark in benchmarks:
            systems = sorted({r.label for r in summary.runs if r.benchmark == self.benchmark})
            return (
                f"memeval gate failed: {self.name}: system {self.system!r} did not run "
                f"{self.benchmark} in this session (systems: {', '.join(systems)})"
            )
        known = ", ".join(benchmarks) or "none"
        return (
            f"memeval gate failed: {self.name}: no results for benchmark {self.benchmark!r} "
            f"in this session (benchmarks run: {known})"
        )


def _who(run: RunSummary) -> str:
    return f"system {run.label}"


def _status_note(row: CategoryRow) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in row.statuses.items() if n)
    return f"{row.count} questions: {counts}" if counts else f"{row.count} questions"


def _parse_value(text: str, raw: str, latency: bool) -> float:
    m = _NUMBER_RE.match(raw)
    if not m:
        if not raw:
            raise GateSyntaxError(text, "the value after the operator is missing")
        raise GateSyntaxError(
            text, f"the value {raw!r} is not a number (optionally followed by '%', or 's'/'ms')"
        )
    number, unit = float(m.group(1)), m.group(2)
    if not math.isfinite(number):  # pragma: no cover - the regex admits finite numbers only
        raise GateSyntaxError(text, f"the value {raw!r} is not a finite number")
    if latency:
        if unit == "%":
            raise GateSyntaxError(text, f"a latency value takes 's' or 'ms', not '%' ({raw!r})")
        return number / 1000.0 if unit == "ms" else number
    if unit in ("s", "ms"):
        raise GateSyntaxError(
            text, f"the unit {unit!r} in {raw!r} is for latency gates only; scores take '%' or none"
        )
    return number / 100.0 if unit == "%" else number


def parse_gate(text: str) -> Gate:
    """Parse ``benchmark[system].category.metric>=value`` (see the module docstring for the
    grammar). Raises ``GateSyntaxError`` naming the bad part."""
    expr = text.strip()
    if not expr:
        raise GateSyntaxError(text, "the expression is empty")
    # operators inside a [system] filter do not count
    masked = re.sub(r"\[[^\[\]]*\]", lambda b: "_" * len(b.group(0)), expr)
    found = list(_OP_RE.finditer(masked))
    if not found:  # `--memeval-fail-under=x.y.f1>=0.4` unquoted: the shell took '>' as a redirect
        raise GateSyntaxError(
            text,
            "no comparison operator; quote the whole expression so the shell keeps '>=' and '<=', "
            "e.g. --memeval-fail-under='locomo.overall.f1>=0.40'",
            grammar=False,
        )
    if len(found) > 1:
        ops = " and ".join(repr(f.group(0)) for f in found)
        raise GateSyntaxError(text, f"more than one operator ({ops})")
    op = found[0].group(0)
    if op not in (">=", "<="):
        hint = {"=>": ">=", "=<": "<="}.get(op)
        if hint:
            raise GateSyntaxError(text, f"operator {op!r} is written {hint!r}")
        raise GateSyntaxError(text, f"operator {op!r} is not supported; use >= or <=")
    lhs, rhs = expr[: found[0].start()].strip(), expr[found[0].end() :].strip()
    if not lhs:
        raise GateSyntaxError(text, "the left side (benchmark.category.metric) is missing")
    m = _LHS_RE.match(lhs)
    if not m:
        bench_part = re.split(r"[.\[]", lhs, maxsplit=1)[0]
        if not re.fullmatch(_NAME, bench_part):
            raise GateSyntaxError(
                text,
                f"benchmark name {bench_part!r} is not valid (letters, digits, '_' and '-')"
                if bench_part
                else "the benchmark name is missing",
            )
        if "[" in lhs and not re.search(r"\[[^\[\]]+\]", lhs):
            raise GateSyntaxError(
                text,
                "the system filter must be written [SYSTEM] after the "
                "benchmark, with a non-empty name",
            )
        raise GateSyntaxError(
            text, f"{lhs!r} has no category and metric after the benchmark (need three parts)"
        )
    bench, system, rest = m.group("bench"), m.group("system"), m.group("rest")
    if system is not None:
        system = system.strip()
        if not system:
            raise GateSyntaxError(text, "the system filter [] is empty")
    latency = re.fullmatch(r"(?P<cat>[^.]+)\.latency\.(?P<stage>[^.]*)\.(?P<stat>[^.]*)", rest)
    if latency:
        category = latency.group("cat")
        stage, stat = latency.group("stage"), latency.group("stat")
        if category != "overall":
            raise GateSyntaxError(
                text,
                f"latency gates use the category 'overall' (got {category!r}): latency is "
                "measured per run, not per category",
            )
        if stage not in _LATENCY_STAGES:
            raise GateSyntaxError(
                text, f"latency stage {stage!r} is not one of {', '.join(_LATENCY_STAGES)}"
            )
        if stat not in _LATENCY_STATS:
            raise GateSyntaxError(
                text, f"latency figure {stat!r} is not one of {', '.join(_LATENCY_STATS)}"
            )
        metric = f"latency.{stage}.{stat}"
    else:
        parts = rest.split(".")
        if len(parts) < 2 or not parts[0]:
            raise GateSyntaxError(
                text,
                f"{lhs!r} needs both a category and a metric after the benchmark "
                "(benchmark.category.metric)",
            )
        if len(parts) > 2:
            raise GateSyntaxError(
                text,
                f"{lhs!r} has too many dotted parts ({len(parts) + 1}); expected "
                "benchmark.category.metric (only latency metrics have dots: latency.search.p95)",
            )
        category, metric = parts
        if not re.fullmatch(_NAME, category):
            raise GateSyntaxError(
                text, f"category {category!r} is not valid (letters, digits, '_' and '-')"
            )
        if not metric:
            raise GateSyntaxError(text, "the metric name is missing")
        if metric == "latency":
            raise GateSyntaxError(
                text, "a latency gate names a stage and a figure: latency.search.p95"
            )
        if not re.fullmatch(_METRIC, metric):
            raise GateSyntaxError(
                text, f"metric {metric!r} is not valid (letters, digits, '_', '@' and '-')"
            )
    threshold = _parse_value(text, rhs, metric.startswith("latency."))
    return Gate(
        text=text,
        benchmark=bench,
        category=category,
        metric=metric,
        op=op,
        threshold=threshold,
        system=system,
    )


def check_gates(gates: list[Gate], summary: Summary) -> list[GateResult]:
    """Check every gate; the session fails when any result has ``passed`` false."""
    return [gate.check(summary) for gate in gates]


def _suggest(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def _is_judge_extra(metric: str, heads: Sequence[str]) -> bool:
    """``<headline>_<suffix>`` (``@LABEL`` after it for a later judge): a judge's extra value."""
    base, _, label = metric.partition("@")
    for head in heads:
        head_base, _, head_label = head.partition("@")
        if label == head_label and base.startswith(head_base + "_"):
            return True
    return False


def check_metric_names(
    named: Sequence[tuple[str, str, str | None, str]],
    metrics: Mapping[str, Collection[str]],
    judge_heads: Mapping[str, Sequence[str]],
    *,
    always: Collection[str] = (),
) -> str | None:
    """The first metric a gate or regression names that the run cannot produce, as one line with
    a "did you mean", or None.

    ``named``: ``(option, expression, benchmark or None for every benchmark, metric)``;
    ``metrics``: benchmark -> its offline metrics; ``judge_heads``: benchmark -> every judge's
    headline key there (the first judge's first; empty without a judge); ``always``: names valid
    everywhere (``correct``). ``judge`` / ``judge@LABEL`` resolve to the judges' headlines; a
    judge's extras (``<headline>_<suffix>``) and latency and calibration figures are accepted."""
    for option, text, bench, metric in named:
        benches = [bench] if bench is not None else list(metrics)
        if bench is not None and bench not in metrics:
            hint = _suggest(bench, metrics)
            return (
                f"{option} {text!r}: benchmark {bench!r} is not in this run; {hint}"
                f"(benchmarks: {', '.join(metrics) or 'none'})"
            )
        if metric.startswith("latency.") or is_calibration_metric(metric):
            continue
        known: set[str] = set(always)
        found = False
        for b in benches:
            heads = list(judge_heads.get(b, ()))
            known.update(metrics[b], heads)
            resolved = resolve_judge_alias(metric, heads[0] if heads else None)
            if resolved is None:
                continue  # `judge` without a judge: read_settings already says so
            if resolved in known or _is_judge_extra(resolved, heads):
                found = True
        if found or metric in always:
            continue
        where = f"on {bench}" if bench is not None else "in this run"
        return (
            f"{option} {text!r}: metric {metric!r} is not produced {where}; "
            f"{_suggest(metric, known)}(metrics: {', '.join(sorted(known))}; "
            "docs/scoring.md#metric-names)"
        )
    return None
