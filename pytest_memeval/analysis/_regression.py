"""Regression against a saved run, pytest-free: save or load a baseline, compare a session with it.

A baseline (``--memeval-save-baseline``) holds, per run (benchmark, system, flow), every question's
status and scores plus the run summary. ``compare`` pairs the questions that have a value for the
metric on both sides and fails a run only when the metric dropped by more than the allowed margin
AND the drop is significant. Questions that share a cluster (a LoCoMo or BEAM conversation) are
not independent, so the test is on per-cluster paired differences (``analysis.clusters``): the
exact sign-flip permutation test when at most 16 clusters changed, a cluster bootstrap otherwise.
When every cluster is one question (LongMemEval, the user-memory cases) the question-level test
is the cluster test: the exact McNemar test for binary outcomes (every paired value 0 or 1, e.g.
the Mem0 judge, or the pseudo metric ``correct``), the paired bootstrap for continuous scores. The
question-level verdict is reported beside the cluster one, and a pass without significance says
the smallest drop the run could detect (alpha, 80% power). Questions on one side only, or without
a value on one side, are listed, never silently dropped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files import FileTooLarge, NotAFile, read_bounded
from ..errors import MemevalError, terminal_safe
from ..judges import resolve_judge_alias
from ..protocols import metric_of_style
from ..records import (
    STATUS_CORRECT,
    STATUS_ERROR,
    STATUS_UNSCORED,
    STATUS_WRONG,
    QuestionResult,
    finite_float,
)
from ..report import (
    HEADLINE_ROW,
    REPORT_SCHEMA,
    RunSummary,
    Summary,
    headline_metric,
    judge_metric,
    row_categories,
    row_selection,
    unit_count,
)
from ._clusters import (
    TEST_SIGN_FLIP,
    ClusterTest,
    cluster_sums,
    detectable_difference,
    paired_cluster_test,
)
from ._stats import mcnemar_exact, paired_bootstrap

__all__ = [
    "BASELINE_SCHEMA",
    "CORRECT_METRIC",
    "HEALTH_MAX_RISE",
    "HEALTH_STATES",
    "MAX_BASELINE_BYTES",
    "Comparison",
    "HealthComparison",
    "compare",
    "compare_health",
    "compare_questions",
    "legacy_score_key",
    "load_baseline",
    "parse_max_drop",
    "question_health",
    "questions_from_report",
    "save_baseline",
    "split_drop_metric",
]

BASELINE_SCHEMA = "pytest-memeval-baseline/1"
MAX_BASELINE_BYTES = 256 * 1024 * 1024
#: the largest score magnitude a baseline may hold (every metric is 0-1; sums of a million
#: such values stay far from float overflow)
MAX_SCORE = 1e9
#: Pseudo metric: 1 when the status is CORRECT, 0 when WRONG or ERROR, no value when UNSCORED.
CORRECT_METRIC = "correct"
_LIST_LIMIT = 20  # ids shown per detail line
_DROP_TOLERANCE = 1e-9  # a drop equal to the margin up to float rounding is not "more than"
_METRIC_RE = re.compile(r"[\w@][\w@-]*")
_ROW_RE = re.compile(r"[\w][\w-]*")
#: the health gate's default: a run fails when the share of its questions that got no memories,
#: raised or went unscored rose by more than this (0.10 = 10 percentage points) over the baseline's
HEALTH_MAX_RISE = 0.10
#: a question's health (``question_health``), the worst first
HEALTH_STATES = ("error", "unscored", "empty", "ok")
#: the power line: the smallest drop detected with this probability at the gate's alpha
POWER = 0.8

RunKey = tuple[str, str, str]


# ---------------------------------------------------------------------------------------------
# saving and loading


def save_baseline(summary: Summary) -> dict[str, Any]:
    """A JSON-compatible baseline: schema, provenance and, per run, ``questions`` as
    ``{id: {"status", "category", "cluster", "scores", "health"}}`` and the run's ``summary`` (as
    in the JSON report).
    A question id that occurs twice in one run keeps its first result."""
    runs: list[dict[str, Any]] = []
    for run in summary.runs:
        questions: dict[str, dict[str, Any]] = {}
        for r in run.results:
            if r.question_id in questions:
                continue
            questions[r.question_id] = {
                "status": r.status,
                "category": r.category,
                "cluster": r.cluster_id,
                "scores": {str(k): finite_float(v) for k, v in r.scores.items()},
                "health": question_health(
                    r.status, r.details.get("memories_returned"), "search" in r.latency
                ),
            }
        runs.append(
            {
                "benchmark": run.benchmark,
                "system": run.system,
                "flow": run.flow,
                "questions": questions,
                "summary": run.summary_dict(),
            }
        )
    # judge_metric is always recorded: its presence marks a file written with per-style names
    provenance = {"judge_metric": None, **summary.provenance}
    return {"schema": BASELINE_SCHEMA, "provenance": provenance, "runs": runs}


def safe(value: object) -> str:
    """A name read from a baseline file (a system, a question id, a metric), as text that cannot
    drive the terminal it is printed to (errors.terminal_safe)."""
    return terminal_safe(str(value))


def question_health(status: str, memories_returned: object, searched: bool) -> str:
    """What the health gate counts of one question: ``error`` (the system raised), ``unscored``
    (no deciding score), ``empty`` (``search`` ran and returned no memory), else ``ok``. A system
    that answers itself (no search) is never ``empty``."""
    if status == STATUS_ERROR:
        return "error"
    if status == STATUS_UNSCORED:
        return "unscored"
    if searched and memories_returned == 0:
        return "empty"
    return "ok"


def _health_of_report_question(q: Mapping[str, Any]) -> str:
    details = q.get("details")
    latency = q.get("latency")
    returned = details.get("memories_returned") if isinstance(details, Mapping) else None
    searched = isinstance(latency, Mapping) and "search" in latency
    return question_health(str(q.get("status", "")), returned, searched)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _fail(path: str | os.PathLike[str], problem: str) -> MemevalError:
    return MemevalError(
        f"--memeval-baseline {os.fspath(path)}: {problem}. Write a baseline with "
        "--memeval-save-baseline=PATH (or pass a --memeval-json report)."
    )


def _questions_from_report(
    path: str | os.PathLike[str], where: str, items: object
) -> dict[str, dict[str, Any]]:
    if not isinstance(items, list):
        raise _fail(path, f"{where}: 'questions' must be a list in a JSON report")
    out: dict[str, dict[str, Any]] = {}
    for i, q in enumerate(items):
        if not isinstance(q, dict) or "id" not in q:
            raise _fail(path, f"{where}, question {i}: expected an object with an 'id'")
        out.setdefault(
            str(q["id"]),
            {
                "status": q.get("status"),
                "category": q.get("category", ""),
                "cluster": q.get("cluster") or q.get("conversation") or "",
                "scores": q.get("scores") or {},
                "health": _health_of_report_question(q),
            },
        )
    return out


# ---------------------------------------------------------------------------------------------
# files written before every judge style had its own metric name

#: the judge keys of such a file: "judge" (+ "_std", "_runs", "_official", "_strict") for every
#: style, "judge@LABEL" (+ the same suffixes after LABEL) for the second and later judges
_LEGACY_SUFFIXES = ("_std", "_runs", "_official", "_strict")
#: style -> old key -> new key, where the new name is not "<headline><suffix>"
_LEGACY_RENAMES: dict[str, dict[str, str]] = {
    "longmemeval": {"judge_official": "judge_lme_substring"},
    "beam-nugget": {"nugget_official": "nugget_beam_rule"},
    "beam-official": {
        "nugget": "nugget_official",
        "nugget_llm_judge": "nugget_official_llm_judge",
        "ordering_f1": "nugget_official_ordering_f1",
        "ordering_final": "nugget_official_ordering_final",
    },
}


def _is_legacy_judge_key(key: str) -> bool:
    base = key.partition("@")[0]
    return base == "judge" or base in {"judge" + s for s in _LEGACY_SUFFIXES}


def legacy_score_key(key: str, style: str) -> str:
    """The key a score of a file written before judge metrics were named per style has today,
    given the style that wrote it (``judge`` under ``mem0`` -> ``judge_mem0``, ``judge_std`` under
    ``graded`` -> ``judge_graded_std``, ``judge@openai:x_std`` -> ``judge_graded_std@openai:x``,
    ``nugget`` under ``beam-official`` -> ``nugget_official``). Other keys are unchanged."""
    headline = metric_of_style(style)
    if headline is None:
        return key
    base, label = key, ""
    if key.startswith("judge@"):
        rest = key[len("judge@") :]
        base = "judge"
        label = rest
        for suffix in _LEGACY_SUFFIXES:
            if rest.endswith(suffix):
                base, label = "judge" + suffix, rest[: -len(suffix)]
                break
    elif "@" in key:
        base, _, label = key.partition("@")
    renames = _LEGACY_RENAMES.get(style, {})
    if base in renames:
        base = renames[base]
    elif base == "judge":
        base = headline
    elif base in {"judge" + s for s in _LEGACY_SUFFIXES}:
        base = headline + base[len("judge") :]
    return f"{base}@{label}" if label else base


def _legacy_styles(provenance: Mapping[str, Any]) -> Mapping[str, Any] | str | None:
    styles = provenance.get("judge_style")
    if isinstance(styles, Mapping | str):
        return styles
    return None


def _rename_legacy(
    path: str | os.PathLike[str],
    where: str,
    benchmark: str,
    provenance: Mapping[str, Any],
    scores: dict[str, float | None],
) -> dict[str, float | None]:
    """A legacy file's scores under today's names (see :func:`legacy_score_key`)."""
    styles = _legacy_styles(provenance)
    style = styles.get(benchmark) if isinstance(styles, Mapping) else styles
    if not isinstance(style, str) or metric_of_style(style) is None:
        old = sorted(k for k in scores if _is_legacy_judge_key(k))
        if not old:
            return scores
        raise _fail(
            path,
            f"{where}: score {old[0]!r} was written before every judge style had its own metric "
            "name, and the file does not record which judge style wrote it (provenance."
            "judge_style). Save the baseline again with this version (--memeval-save-baseline), "
            f'or add "judge_style": {{"{benchmark}": "STYLE"}} (mem0, graded, longmemeval, '
            "beam-nugget, usermem, mem0-official, longmemeval-official, beam-official) to its "
            "provenance",
        )
    return {legacy_score_key(k, style): v for k, v in scores.items()}


def _validate(path: str | os.PathLike[str], data: object) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(path, f"expected a JSON object, found {type(data).__name__}")
    schema = data.get("schema")
    if schema not in (BASELINE_SCHEMA, REPORT_SCHEMA):
        raise _fail(
            path,
            f"schema is {schema!r}, expected {BASELINE_SCHEMA!r} (or a {REPORT_SCHEMA!r} report)",
        )
    runs = data.get("runs")
    if not isinstance(runs, list):
        raise _fail(path, "'runs' must be a list")
    provenance = data.get("provenance", {})
    if not isinstance(provenance, dict):
        provenance = {}
    # a file written since judge metrics are named per style records provenance.judge_metric
    legacy = "judge_metric" not in provenance
    clean_runs: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        where = f"run {i}"
        if not isinstance(run, dict):
            raise _fail(path, f"{where}: expected an object")
        for key in ("benchmark", "system"):
            if not isinstance(run.get(key), str):
                raise _fail(path, f"{where}: {key!r} must be a string")
        flow = run.get("flow", "")
        if not isinstance(flow, str):
            raise _fail(path, f"{where}: 'flow' must be a string")
        where = f"run {i} ({safe(run['benchmark'])} / {safe(run['system'])})"
        questions: object
        if schema == REPORT_SCHEMA:
            questions = _questions_from_report(path, where, run.get("questions"))
        else:
            questions = run.get("questions")
        if not isinstance(questions, dict):
            raise _fail(path, f"{where}: 'questions' must be an object keyed by question id")
        clean_q: dict[str, dict[str, Any]] = {}
        for qid, q in questions.items():
            if not isinstance(q, dict):
                raise _fail(path, f"{where}, question {qid!r}: expected an object")
            status = q.get("status")
            if not isinstance(status, str):
                raise _fail(path, f"{where}, question {qid!r}: 'status' must be a string")
            scores = q.get("scores", {})
            if not isinstance(scores, dict):
                raise _fail(path, f"{where}, question {qid!r}: 'scores' must be an object")
            clean_scores: dict[str, float | None] = {}
            for metric, value in scores.items():
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, int | float)
                ):
                    raise _fail(
                        path,
                        f"{where}, question {qid!r}: score {metric!r} must be a number or null, "
                        f"found {value!r:.40}",
                    )
                if value is not None and abs(value) > MAX_SCORE:
                    # 1e308 would overflow every sum and mean taken of it at the session end
                    raise _fail(
                        path,
                        f"{where}, question {safe(qid)!r}: score {safe(metric)!r} is {value!r:.40}, "
                        f"outside -{MAX_SCORE:g}..{MAX_SCORE:g} (scores are 0-1 metrics); fix or "
                        "regenerate the file",
                    )
                clean_scores[safe(metric)] = finite_float(value)
            if legacy:
                clean_scores = _rename_legacy(
                    path, f"{where}, question {qid!r}", run["benchmark"], provenance, clean_scores
                )
            clean_q[safe(qid)] = {
                "status": safe(status),
                "category": safe(q.get("category", "")),
                "cluster": safe(q.get("cluster") or q.get("conversation") or ""),
                "scores": clean_scores,
                # None: a file written before the health gate (its empty searches are unknown)
                "health": q["health"] if q.get("health") in HEALTH_STATES else None,
            }
        summary = run.get("summary", {})
        clean_runs.append(
            {
                "benchmark": safe(run["benchmark"]),
                "system": safe(run["system"]),
                "flow": safe(flow),
                "questions": clean_q,
                "summary": summary if isinstance(summary, dict) else {},
            }
        )
    return {"schema": BASELINE_SCHEMA, "provenance": provenance, "runs": clean_runs}


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a baseline file (JSON only, at most 256 MB). A ``--memeval-json`` report
    is accepted too and converted. Raises ``MemevalError`` naming the file and the problem."""
    p = Path(path)
    try:
        raw = read_bounded(p, MAX_BASELINE_BYTES)
    except FileNotFoundError:
        raise _fail(path, "file not found") from None
    except NotAFile as exc:
        raise _fail(path, f"not a regular file ({exc})") from None
    except FileTooLarge:
        size = max(p.stat().st_size, MAX_BASELINE_BYTES + 1)
        raise _fail(path, f"file is {size} bytes, larger than the 256 MB limit") from None
    except OSError as exc:
        raise _fail(path, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _fail(
            path, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:
        raise _fail(path, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise _fail(path, "not valid JSON: nested too deeply") from None
    return _validate(path, data)


def split_drop_metric(spec: str) -> tuple[str, str]:
    """``"f1"`` -> ``("overall", "f1")`` (the scoreboard's headline selection);
    ``"temporal.f1"`` -> ``("temporal", "f1")``; ``"overall_all.f1"`` -> every category."""
    row, _, metric = spec.rpartition(".")
    return (row or HEADLINE_ROW), metric


def parse_max_drop(text: str) -> tuple[str, float]:
    """``"f1:2"`` -> ``("f1", 2.0)``: the metric (``ROW.METRIC`` gates one category, or
    ``overall_all``; plain ``METRIC`` the scoreboard's headline selection) and the allowed drop in
    percentage points of the 0-1 metric (2 points = 0.02). Raises ``MemevalError`` with the
    expected form."""
    form = (
        "expected [CATEGORY.]METRIC:POINTS, e.g. f1:2 (fail when f1 over the scoreboard's "
        "headline categories drops by more than 2 points, i.e. 0.02, and the drop is "
        f"significant) or temporal.f1:5; METRIC is a score key or {CORRECT_METRIC!r}"
    )
    raw = text.strip()
    if ":" not in raw:
        raise MemevalError(f"--memeval-max-drop {text!r}: no ':' between metric and points; {form}")
    spec, points_text = (part.strip() for part in raw.rsplit(":", 1))
    row, metric = split_drop_metric(spec)
    if not metric:
        raise MemevalError(f"--memeval-max-drop {text!r}: the metric is missing; {form}")
    if not _METRIC_RE.fullmatch(metric):
        raise MemevalError(
            f"--memeval-max-drop {text!r}: metric {metric!r} is not valid "
            f"(letters, digits, '_', '@' and '-'); {form}"
        )
    if not _ROW_RE.fullmatch(row):
        raise MemevalError(
            f"--memeval-max-drop {text!r}: category {row!r} is not valid "
            f"(letters, digits, '_' and '-'); {form}"
        )
    metric = spec
    if not points_text:
        raise MemevalError(f"--memeval-max-drop {text!r}: the points are missing; {form}")
    try:
        points = float(points_text.removesuffix("%"))
    except ValueError:
        raise MemevalError(
            f"--memeval-max-drop {text!r}: points {points_text!r} is not a number; {form}"
        ) from None
    if not math.isfinite(points) or points < 0:
        raise MemevalError(
            f"--memeval-max-drop {text!r}: points must be a finite number >= 0, got "
            f"{points_text!r}; {form}"
        )
    return metric, points


# ---------------------------------------------------------------------------------------------
# comparison


@dataclass(frozen=True)
class Comparison:
    """One run (benchmark, system, flow) compared with its baseline on one metric.

    ``delta`` = current mean - baseline mean over the ``paired`` questions (negative: a drop), with
    its ``ci`` (cluster-bootstrap percentile interval; the paired bootstrap when the clusters are the
    questions); ``test`` is ``"sign-flip"`` or ``"cluster-bootstrap"`` (per-cluster differences,
    ``clusters`` of them, each a ``cluster_unit``), ``"mcnemar"`` (binary outcomes) or
    ``"paired-bootstrap"`` (continuous) when every cluster is one question, or ``""`` when nothing
    could be compared. ``failed`` iff the drop exceeds ``max_drop`` (0-1 scale) and
    ``p_value < alpha``. ``question_test`` / ``question_p_value`` / ``question_failed``: the
    question-level test (which treats questions as independent) and its verdict; ``detectable``:
    the smallest drop this run could detect at ``alpha`` with 80% power (``inf``: none)."""

    benchmark: str
    system: str
    flow: str
    metric: str
    max_drop: float
    alpha: float
    paired: int = 0
    baseline_mean: float | None = None
    current_mean: float | None = None
    delta: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    test: str = ""
    binary: bool = False
    failed: bool = False
    only_current: tuple[str, ...] = ()
    only_baseline: tuple[str, ...] = ()
    no_value: tuple[str, ...] = ()  # on both sides, but without a value for the metric on one
    flipped_to_wrong: tuple[str, ...] = ()  # binary: 1 in the baseline, 0 now
    flipped_to_correct: tuple[str, ...] = ()  # binary: 0 in the baseline, 1 now
    largest_drops: tuple[tuple[str, float], ...] = ()  # continuous: (id, delta), worst first
    cluster_unit: str = "conversation"
    clusters: int = 0
    question_test: str = ""
    question_p_value: float | None = None
    question_failed: bool = False
    detectable: float | None = None
    message: str = ""
    details: tuple[str, ...] = field(default=())
    #: the questions gated: ``overall`` (the scoreboard's headline categories), ``overall_all``
    #: or a category key; ``selection`` says it in words
    row: str = HEADLINE_ROW
    selection: str = ""
    #: the scoreboard's figures of ``metric`` over ``row``, the baseline's and this run's
    scoreboard_before: float | None = None
    scoreboard_after: float | None = None
    #: per category over the paired questions: (category, baseline mean, current mean, n,
    #: inside the gated selection)
    by_category: tuple[tuple[str, float, float, int, bool], ...] = ()

    @property
    def label(self) -> str:
        who = f"{self.system} / {self.flow}" if self.flow else self.system
        return f"{self.benchmark} ({who})"

    @property
    def compared(self) -> bool:
        """Whether any question could be paired (a run without pairs cannot show a regression)."""
        return self.paired > 0


def _metric_value(status: str, scores: Mapping[str, float | None], metric: str) -> float | None:
    if metric == CORRECT_METRIC and metric not in scores:
        if status == STATUS_CORRECT:
            return 1.0
        if status in (STATUS_WRONG, STATUS_ERROR):
            return 0.0
        return None
    v = scores.get(metric)
    if v is None or math.isnan(v):
        return None
    return float(v)


def _ids(items: Iterable[str]) -> str:
    ids = list(items)
    shown = ", ".join(ids[:_LIST_LIMIT])
    more = len(ids) - _LIST_LIMIT
    return f"{shown}, ... and {more} more" if more > 0 else shown


def _pts(value: float) -> str:
    return f"{abs(value) * 100:.1f}"


def _p_text(p: float, floor: float | None) -> str:
    if p == 0.0 and floor is not None:
        return f"p < {floor:.2g}"
    return f"p = {p:.3g}"


def _compare_run(
    key: RunKey,
    current: list[QuestionResult] | None,
    baseline: Mapping[str, Mapping[str, Any]] | None,
    metric: str,
    max_drop: float,
    alpha: float,
    round3: bool,
    seed: int,
    resamples: int,
    unit: str = "conversation",
    *,
    selected: frozenset[str] | None = None,
    row: str = HEADLINE_ROW,
    selection: str = "",
    scoreboard: tuple[float | None, float | None] = (None, None),
    category_order: tuple[str, ...] = (),
    gated: bool = True,
) -> Comparison:
    """One run against its baseline; ``selected``: the category keys gated (None: every
    question), ``scoreboard``: the (baseline, current) figures the scoreboard shows for them."""
    benchmark, system, flow = key
    base = Comparison(
        benchmark,
        system,
        flow,
        metric,
        max_drop,
        alpha,
        cluster_unit=unit,
        row=row,
        selection=selection,
        scoreboard_before=scoreboard[0],
        scoreboard_after=scoreboard[1],
    )
    if baseline is None:
        return _replace(
            base,
            only_current=tuple(dict.fromkeys(r.question_id for r in current or ())),
            message=f"regression: {base.label} has no run in the baseline; not compared.",
        )
    if current is None:
        return _replace(
            base,
            only_baseline=tuple(baseline),
            message=(
                f"regression: {base.label} is in the baseline but did not run in this "
                "session; not compared."
            ),
        )
    baseline_all = baseline
    by_category = _category_deltas(current, baseline_all, metric, selected, category_order, round3)
    cur: dict[str, QuestionResult] = {}
    for r in current:
        if selected is None or r.category in selected:
            cur.setdefault(r.question_id, r)
    if selected is not None:
        baseline = {q: b for q, b in baseline.items() if str(b.get("category", "")) in selected}
    only_current = tuple(q for q in cur if q not in baseline)
    only_baseline = tuple(q for q in baseline if q not in cur)
    ids: list[str] = []
    clusters: list[str] = []
    before: list[float] = []
    after: list[float] = []
    no_value: list[str] = []
    for qid, r in cur.items():
        if qid not in baseline:
            continue
        b_entry = baseline[qid]
        b = _metric_value(str(b_entry.get("status", "")), b_entry.get("scores") or {}, metric)
        a = _metric_value(r.status, r.scores, metric)
        if a is None or b is None:
            no_value.append(qid)
            continue
        if round3:
            a, b = round(a, 3), round(b, 3)
        ids.append(qid)
        clusters.append(r.cluster_id)
        before.append(b)
        after.append(a)
    base = _replace(
        base,
        only_current=only_current,
        only_baseline=only_baseline,
        no_value=tuple(no_value),
        by_category=by_category,
    )
    if not ids:
        return _replace(
            base,
            message=(
                f"regression: {base.label} {metric}{_over(selection)}: no question has a "
                f"{metric} value in both the baseline and this run; not compared."
            ),
            details=_details(base, metric),
        )
    n = len(ids)
    deltas = [a - b for a, b in zip(after, before, strict=True)]
    boot = paired_bootstrap(deltas, resamples=resamples, seed=seed)
    baseline_mean = math.fsum(before) / n
    current_mean = math.fsum(after) / n
    delta = current_mean - baseline_mean
    binary = all(v in (0.0, 1.0) for v in before) and all(v in (0.0, 1.0) for v in after)
    to_wrong: tuple[str, ...] = ()
    to_correct: tuple[str, ...] = ()
    largest: tuple[tuple[str, float], ...] = ()
    floor: float | None = None
    if binary:
        to_wrong = tuple(q for q, b, a in zip(ids, before, after, strict=True) if b > a)
        to_correct = tuple(q for q, b, a in zip(ids, before, after, strict=True) if a > b)
        p = mcnemar_exact(len(to_wrong), len(to_correct))
        test = "mcnemar"
    else:
        p = boot.p_value
        floor = boot.p_floor
        test = "paired-bootstrap"
        drops = sorted(
            ((q, d) for q, d in zip(ids, deltas, strict=True) if d < 0), key=lambda x: (x[1], x[0])
        )
        largest = tuple(drops[:_LIST_LIMIT])
    drop = -delta
    too_large = drop > max_drop + _DROP_TOLERANCE
    question_test, question_p, question_floor = test, p, floor
    question_name = "exact McNemar" if binary else "paired bootstrap"
    test_name = question_name
    ci = boot.ci
    grouped = cluster_sums(deltas, clusters)
    cluster_test: ClusterTest | None = None
    if grouped.singletons:  # the clusters are the questions: the question-level test is exact
        detectable = detectable_difference(deltas, clusters, alpha=alpha, power=POWER)
    else:
        cluster_test = paired_cluster_test(
            deltas, clusters, alpha=alpha, power=POWER, resamples=resamples, seed=seed
        )
        p, test, ci = cluster_test.p_value, cluster_test.test, cluster_test.ci
        floor = None if test == TEST_SIGN_FLIP else cluster_test.p_floor
        detectable = cluster_test.detectable
        over = unit_count(grouped.k, unit)
        test_name = (
            f"exact sign-flip test over {over}"
            if test == TEST_SIGN_FLIP
            else f"cluster bootstrap over {over}"
        )
    significant = p < alpha
    failed = too_large and significant
    question_failed = too_large and question_p < alpha
    result = _replace(
        base,
        paired=n,
        baseline_mean=baseline_mean,
        current_mean=current_mean,
        delta=delta,
        ci=ci,
        p_value=p,
        test=test,
        binary=binary,
        failed=failed,
        flipped_to_wrong=to_wrong,
        flipped_to_correct=to_correct,
        largest_drops=largest,
        cluster_unit=unit,
        clusters=grouped.k,
        question_test=question_test,
        question_p_value=question_p,
        question_failed=question_failed,
        detectable=detectable,
    )
    ci_text = f"95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "no CI"
    before_shown, after_shown = scoreboard
    if before_shown is None or after_shown is None:
        before_shown, after_shown = baseline_mean, current_mean
        shown = f"{before_shown:.3f} -> {after_shown:.3f}"
    else:
        shown = f"{before_shown:.3f} -> {after_shown:.3f} on the scoreboard"
        if f"{before_shown:.3f} {after_shown:.3f}" != f"{baseline_mean:.3f} {current_mean:.3f}":
            shown += f"; paired means {baseline_mean:.3f} -> {current_mean:.3f}"
    figures = (
        f"({shown}, delta {delta:+.3f}, {ci_text}, "
        f"{test_name} {_p_text(p, floor)}, {n} paired questions)"
    )
    margin = f"{_pts(max_drop)} points"
    if delta >= 0:
        verdict = f"did not drop {figures}"
        outcome = "passed"
    elif failed:
        verdict = (
            f"dropped {_pts(delta)} points {figures}: more than the allowed {margin} and "
            f"significant at alpha {alpha:g}"
        )
        outcome = "FAILED"
    elif too_large:
        verdict = (
            f"dropped {_pts(delta)} points {figures}: more than the allowed {margin} but not "
            f"significant at alpha {alpha:g}"
        )
        outcome = "passed"
    else:
        verdict = f"dropped {_pts(delta)} points {figures}: within the allowed {margin}"
        outcome = "passed"
    extra: list[str] = []
    if cluster_test is not None:
        q_text = f"question-level {question_name} {_p_text(question_p, question_floor)}"
        if question_failed and not failed:
            verdict += (
                f"; the {q_text} would have FAILED it, treating the {n} questions as "
                f"independent although they come from {unit_count(grouped.k, unit)}"
            )
        elif failed and not question_failed:
            verdict += f"; the {q_text} would have passed it"
        extra.append(
            f"question-level test (questions as independent): {question_name} over {n} "
            f"questions, {_p_text(question_p, question_floor)}: "
            + ("would fail" if question_failed else "would pass")
            + (" (same verdict)" if question_failed == failed else " (verdicts DIFFER)")
        )
    if not failed and not significant:
        extra.append(_power_line(detectable, alpha, grouped.k, unit, cluster_test))
    if failed and not gated:  # the default comparison (no --memeval-max-drop) decides nothing
        outcome = "would fail (not gated: no --memeval-max-drop)"
    message = f"regression {outcome}: {result.label} {metric}{_over(selection)} {verdict}."
    return _replace(result, message=message, details=tuple(extra) + _details(result, metric))


def _over(selection: str) -> str:
    return f" over {selection}" if selection else ""


def _category_deltas(
    current: list[QuestionResult],
    baseline: Mapping[str, Mapping[str, Any]],
    metric: str,
    selected: frozenset[str] | None,
    order: tuple[str, ...],
    round3: bool,
) -> tuple[tuple[str, float, float, int, bool], ...]:
    """Per category, the paired means of ``metric`` (baseline, current), the pairs and whether
    the category is inside the gated selection; categories in ``order``, then as met."""
    sums: dict[str, list[float]] = {}
    seen: set[str] = set()
    for r in current:
        if r.question_id in seen or r.question_id not in baseline:
            continue
        seen.add(r.question_id)
        b_entry = baseline[r.question_id]
        b = _metric_value(str(b_entry.get("status", "")), b_entry.get("scores") or {}, metric)
        a = _metric_value(r.status, r.scores, metric)
        if a is None or b is None:
            continue
        if round3:
            a, b = round(a, 3), round(b, 3)
        acc = sums.setdefault(r.category, [0.0, 0.0, 0.0])
        acc[0] += b
        acc[1] += a
        acc[2] += 1
    keys = [k for k in order if k in sums] + [k for k in sums if k not in order]
    return tuple(
        (
            k,
            sums[k][0] / sums[k][2],
            sums[k][1] / sums[k][2],
            int(sums[k][2]),
            selected is None or k in selected,
        )
        for k in keys
    )


def _power_line(
    detectable: float | None, alpha: float, k: int, unit: str, test: ClusterTest | None
) -> str:
    over = unit_count(k, unit)
    if detectable is None:
        return (
            f"power: not computed (the paired differences do not vary between the {over}, or "
            "there are fewer than two)"
        )
    if math.isinf(detectable):
        return (
            f"power: no drop can be significant at alpha {alpha:g}: the exact sign-flip test "
            f"over {over} cannot give p below {2.0 / 2.0**k:.3g}; run more {unit}s"
        )
    basis = "cluster-robust spread" if test is not None else "spread"
    return (
        f"power: this run detects a true drop of {_pts(detectable)} points or more with "
        f"{POWER:.0%} power at alpha {alpha:g} (from the observed {basis} of the paired "
        f"differences over {over})"
    )


def _details(c: Comparison, metric: str) -> tuple[str, ...]:
    lines: list[str] = []
    if c.binary:
        lines.append(
            f"flipped correct -> wrong ({len(c.flipped_to_wrong)}): "
            f"{_ids(c.flipped_to_wrong) or '-'}"
        )
        lines.append(
            f"flipped wrong -> correct ({len(c.flipped_to_correct)}): "
            f"{_ids(c.flipped_to_correct) or '-'}"
        )
    elif c.largest_drops:
        worst = ", ".join(f"{q} ({d:+.3f})" for q, d in c.largest_drops)
        if c.delta is not None and c.delta >= 0:
            lines.append(
                f"questions that fell although the mean did not ({len(c.largest_drops)} "
                f"shown): {worst}"
            )
        else:
            lines.append(f"largest drops ({len(c.largest_drops)} shown): {worst}")
    if c.only_current:
        lines.append(
            f"only in this run, not in the baseline ({len(c.only_current)}): {_ids(c.only_current)}"
        )
    if c.only_baseline:
        lines.append(
            f"only in the baseline, not in this run ({len(c.only_baseline)}): "
            f"{_ids(c.only_baseline)}"
        )
    if c.no_value:
        lines.append(
            f"no {metric} value on one side, not paired ({len(c.no_value)}): {_ids(c.no_value)}"
        )
    if c.by_category:
        outside = any(not inside for *_, inside in c.by_category)
        parts = [
            f"{cat}{'' if inside else '*'} {b:.3f} -> {a:.3f} ({a - b:+.3f}, n={n})"
            for cat, b, a, n, inside in c.by_category
        ]
        note = " (* not gated: outside " + (c.selection or "the selection") + ")"
        lines.append(
            f"{metric} by category, paired questions{note if outside else ''}: " + "; ".join(parts)
        )
    return tuple(lines)


def compare_questions(
    current: list[QuestionResult],
    baseline: Mapping[str, Mapping[str, Any]],
    metric: str,
    *,
    alpha: float = 0.05,
    unit: str = "conversation",
    round3: bool = False,
    seed: int = 0,
    resamples: int = 5000,
) -> Comparison:
    """The gate's paired test of one run (``current``) against another's questions (``{id:
    {"status", "cluster", "scores"}}``, as a saved baseline holds them) on ``metric``, with no
    drop allowed: what the board's run diff shows."""
    first = current[0] if current else None
    key = (first.benchmark, first.system, first.flow) if first else ("", "", "")
    return _compare_run(key, current, baseline, metric, 0.0, alpha, round3, seed, resamples, unit)


def questions_from_report(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A JSON report's ``questions`` as a baseline holds them (``{id: {status, category,
    cluster, scores}}``)."""
    return _questions_from_report("report", "run", items)


def _replace(c: Comparison, **changes: Any) -> Comparison:
    return dataclasses.replace(c, **changes)


def compare(
    current: Summary,
    baseline: Mapping[str, Any],
    metric: str,
    max_drop_points: float,
    alpha: float = 0.05,
    *,
    round3: Iterable[str] = (),
    seed: int = 0,
    resamples: int = 5000,
    gated: bool = True,
) -> list[Comparison]:
    """Compare every run of ``current`` with the baseline run of the same (benchmark, system, flow)
    on ``metric`` (or the pseudo metric ``correct``; ``judge`` is the first judge's headline metric
    on each run's benchmark) over the questions the scoreboard's headline covers (its ``overall``
    row: LoCoMo leaves out category 5), or over ``CATEGORY.METRIC``'s category or
    ``overall_all.METRIC``'s every category; the message quotes the scoreboard's figures. Runs on
    one side only give a ``Comparison`` that is not failed and says so. ``max_drop_points`` is in
    points (2 = 0.02)."""
    if not 0.0 < alpha < 1.0:
        raise MemevalError(f"--memeval-alpha must lie strictly between 0 and 1, got {alpha!r}")
    if not math.isfinite(max_drop_points) or max_drop_points < 0:
        raise MemevalError(f"--memeval-max-drop points must be >= 0, got {max_drop_points!r}")
    max_drop = max_drop_points / 100.0
    rounding = split_drop_metric(metric)[1] in set(round3)
    base_runs: dict[RunKey, Mapping[str, Mapping[str, Any]]] = {}
    base_summaries: dict[RunKey, Mapping[str, Any]] = {}
    for run in baseline.get("runs", []):
        key = (str(run["benchmark"]), str(run["system"]), str(run.get("flow", "")))
        base_runs.setdefault(key, run.get("questions") or {})
        base_summaries.setdefault(key, run.get("summary") or {})
    cur_runs: dict[RunKey, list[QuestionResult]] = {}
    units: dict[RunKey, str] = {}
    summaries: dict[RunKey, RunSummary] = {}
    for summary_run in current.runs:
        key = (summary_run.benchmark, summary_run.system, summary_run.flow)
        cur_runs.setdefault(key, []).extend(summary_run.results)
        units.setdefault(key, summary_run.cluster_unit)
        summaries.setdefault(key, summary_run)
    keys = list(cur_runs) + [k for k in base_runs if k not in cur_runs]
    gated_row, gated_metric = split_drop_metric(metric)
    out: list[Comparison] = []
    for key in keys:
        run = summaries.get(key)
        # `judge`: the first judge's headline metric on this run's benchmark
        resolved = resolve_judge_alias(gated_metric, judge_metric(current, key[0])) or gated_metric
        row = _resolve_row(run, gated_row) if run is not None else gated_row
        selected = row_categories(run, row) if run is not None else None
        if run is not None and selected is None:
            out.append(
                Comparison(
                    key[0],
                    key[1],
                    key[2],
                    resolved,
                    max_drop,
                    alpha,
                    row=gated_row,
                    message=(
                        f"regression: {key[0]} ({key[1]}) has no category {gated_row!r} "
                        f"(categories: {', '.join(c.key for c in run.categories) or 'none'}); "
                        "not compared."
                    ),
                )
            )
            continue
        out.append(
            _compare_run(
                key,
                cur_runs.get(key),
                base_runs.get(key),
                resolved,
                max_drop,
                alpha,
                rounding,
                seed,
                resamples,
                units.get(key, "conversation"),
                selected=selected,
                row=row,
                selection=row_selection(run, row) if run is not None else "",
                scoreboard=(
                    _baseline_figure(base_summaries.get(key), row, resolved),
                    _current_figure(run, row, resolved),
                ),
                category_order=tuple(c.key for c in run.categories) if run is not None else (),
                gated=gated,
            )
        )
    return out


def _resolve_row(run: RunSummary, row: str) -> str:
    """A category named by key or by id (``5``) -> its key; ``overall`` / ``overall_all`` as
    they are."""
    if row in ("overall", "overall_all") or run.row(row) is not None:
        return row
    for c in run.categories:
        if c.category_id is not None and str(c.category_id) == row:
            return c.key
    return row


def _current_figure(run: RunSummary | None, row: str, metric: str) -> float | None:
    found = run.row(row) if run is not None else None
    value = found.metrics.get(metric) if found is not None else None
    return finite_float(value) if isinstance(value, int | float) else None


def _baseline_figure(summary: Mapping[str, Any] | None, row: str, metric: str) -> float | None:
    """The baseline scoreboard's figure of ``metric`` over ``row`` (its saved ``summary``)."""
    if not isinstance(summary, Mapping):
        return None
    part = summary.get(row) if row in ("overall", "overall_all") else None
    if part is None:
        by_category = summary.get("by_category")
        part = by_category.get(row) if isinstance(by_category, Mapping) else None
    value = part.get(metric) if isinstance(part, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return finite_float(value)


# ---------------------------------------------------------------------------------------------
# the health gate


@dataclass(frozen=True)
class HealthComparison:
    """One run's health against its baseline's: how many questions got no memories
    (``empty``), raised (``error``) or went ``unscored``, on each side (``before`` / ``after``:
    state -> count, ``None`` for ``empty`` when the baseline predates the health gate), and
    whether the unhealthy share rose by more than ``max_rise`` (0-1)."""

    benchmark: str
    system: str
    flow: str
    max_rise: float
    questions_before: int = 0
    questions_after: int = 0
    before: Mapping[str, int | None] = field(default_factory=dict)
    after: Mapping[str, int] = field(default_factory=dict)
    share_before: float | None = None
    share_after: float | None = None
    failed: bool = False
    message: str = ""
    details: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        who = f"{self.system} / {self.flow}" if self.flow else self.system
        return f"{self.benchmark} ({who})"

    @property
    def rise(self) -> float | None:
        if self.share_before is None or self.share_after is None:
            return None
        return self.share_after - self.share_before


def _pct(n: int, total: int) -> str:
    share = f" ({100.0 * n / total:.1f}%)" if total else ""
    return f"{n:,} of {total:,} questions{share}"


def _health_counts(states: Iterable[str | None]) -> dict[str, int | None]:
    counts: dict[str, int | None] = {"error": 0, "unscored": 0, "empty": 0}
    for state in states:
        if state is None:
            counts["empty"] = None
        elif state in counts and counts[state] is not None:
            counts[state] = (counts[state] or 0) + 1
    return counts


def compare_health(
    current: Summary,
    baseline: Mapping[str, Any],
    max_rise: float = HEALTH_MAX_RISE,
) -> list[HealthComparison]:
    """The health gate: for every run of ``current`` with a baseline run of the same (benchmark,
    system, flow), the share of its questions that got no memories from ``search``, raised or
    went unscored, against the baseline's share; a run fails when its share rose by more than
    ``max_rise`` (0.10 = 10 points), whatever its scores did. Baselines written before the gate
    record no empty searches: only errors and unscored questions are compared then, and the
    message says so. The message quotes the scoreboard's headline figure on both sides."""
    base_runs: dict[RunKey, Mapping[str, Any]] = {}
    for run in baseline.get("runs", []):
        key = (str(run["benchmark"]), str(run["system"]), str(run.get("flow", "")))
        base_runs.setdefault(key, run)
    out: list[HealthComparison] = []
    seen: set[RunKey] = set()
    for summary_run in current.runs:
        key = (summary_run.benchmark, summary_run.system, summary_run.flow)
        if key in seen or key not in base_runs:
            continue
        seen.add(key)
        base_run = base_runs[key]
        questions = base_run.get("questions") or {}
        before = _health_counts(q.get("health") for q in questions.values())
        results = {r.question_id: r for r in summary_run.results}
        after_states = [
            question_health(r.status, r.details.get("memories_returned"), "search" in r.latency)
            for r in results.values()
        ]
        after = {k: v or 0 for k, v in _health_counts(after_states).items()}
        known = [k for k in ("empty", "error", "unscored") if before[k] is not None]
        n_before, n_after = len(questions), len(results)
        bad_before = sum(before[k] or 0 for k in known)
        bad_after = sum(after[k] for k in known)
        share_before = bad_before / n_before if n_before else None
        share_after = bad_after / n_after if n_after else None
        result = HealthComparison(
            key[0],
            key[1],
            key[2],
            max_rise,
            n_before,
            n_after,
            before,
            after,
            share_before,
            share_after,
        )
        said = [
            {"empty": "got no memories", "error": "raised", "unscored": "went unscored"}[k]
            for k in ("empty", "error", "unscored")
            if k in known
        ]
        what = ", ".join(said[:-1]) + " or " + said[-1] if len(said) > 1 else "".join(said)
        rise = result.rise
        failed = rise is not None and rise > max_rise + _DROP_TOLERANCE
        head = summary_run.overall
        metric = headline_metric(summary_run, current.provenance)
        now = head.metrics.get(metric) if metric else None
        was = _baseline_figure(base_run.get("summary"), HEADLINE_ROW, metric) if metric else None
        quoted = ""
        if metric is not None and now is not None:
            quoted = (
                f"; the scoreboard's {metric} over {row_selection(summary_run, HEADLINE_ROW)} "
                + (f"is {was:.3f} -> {now:.3f}" if was is not None else f"is {now:.3f}")
            )
        figures = (
            f"{_pct(bad_after, n_after)} {what}, against {_pct(bad_before, n_before)} in the "
            "baseline"
        )
        limit = f"the limit is +{_pts(max_rise)} points, --memeval-health-max-rise"
        if rise is None:
            verdict = f"health: {result.label}: not compared (no questions on one side)"
        elif failed:
            verdict = (
                f"health FAILED: {result.label}: {figures} (+{_pts(rise)} points; {limit}){quoted}"
            )
        else:
            verdict = (
                f"health passed: {result.label}: {figures} ({'+' if rise >= 0 else '-'}"
                f"{_pts(rise)} points; {limit})"
            )
        details = [
            "unhealthy questions, baseline -> this run: "
            + ", ".join(
                f"{label} {before[k] if before[k] is not None else 'not recorded'} -> {after[k]}"
                for k, label in (
                    ("empty", "no memories"),
                    ("error", "raised"),
                    ("unscored", "unscored"),
                )
            )
        ]
        if before["empty"] is None:
            details.append(
                "the baseline was written before the health gate and records no empty searches: "
                "only errors and unscored questions are compared; save it again to compare them"
            )
        out.append(_replace_health(result, failed=failed, message=verdict + ".", details=details))
    return out


def _replace_health(h: HealthComparison, **changes: Any) -> HealthComparison:
    return dataclasses.replace(h, **changes)
