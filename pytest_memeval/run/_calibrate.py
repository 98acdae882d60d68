"""Judge calibration, run level (pytest-free): which answers the judge is asked about, and asking
it through the run's own ``LLMRuntime`` (so the calls share the cache, retries, concurrency bound,
circuit breaker and token accounting of normal judging).

``--memeval-judge-calibration=before`` calibrates the configured judge(s) and then runs the system
as usual; ``=only`` calibrates instead of running the system. The questions are the run's own
selection (``--memeval-limit`` / ``--memeval-sample`` apply). Sources of wrong answers
(``--memeval-calibration-wrong``): ``perturb`` (built in, see :mod:`..analysis._judge_calibration`),
``locomo-audit`` (both audit sets) or ``locomo-audit-v1`` / ``locomo-audit-v2`` (LoCoMo only), or
the path of a file of the audit's shape (any LoCoMo-shaped benchmark: ``locomo``, ``demo``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis import (
    ACCEPTED,
    ERROR,
    KIND_GOLD,
    REJECTED,
    SKIPPED,
    UNSCORED,
    Outcome,
    names_in,
    perturb,
    summarize,
)
from ..benchmarks import SUITE_CALIBRATION, SuiteCalibration
from ..benchmarks.locomo import (
    AUDIT_SETS,
    WrongAnswerSet,
    load_audit_set,
    load_wrong_file,
    match_answers,
)
from ..errors import JudgeError, MemevalError
from ..judges import gold_text
from ..llm import run_parallel
from ..records import Question
from ._settings import CalibrationSettings

if TYPE_CHECKING:
    from ._runtime import LLMRuntime
    from ._state import RunState

__all__ = [
    "AUDIT_SETS",
    "MODES",
    "PERTURB",
    "CalibrationError",
    "CalibrationSettings",
    "Case",
    "CaseSet",
    "build_cases",
    "calibrate_run",
    "calibration_settings",
    "load_wrong_sets",
    "run_calibration",
]

MODES = ("before", "only")
PERTURB = "perturb"
#: --memeval-calibration-wrong names -> audit sets
AUDIT_NAMES: dict[str, tuple[str, ...]] = {
    "locomo-audit": ("audit-v1", "audit-v2"),
    "locomo-audit-v1": ("audit-v1",),
    "locomo-audit-v2": ("audit-v2",),
}
INTERVAL_NOTE = (
    "Wilson 95% intervals; every answer counted as an independent trial (answers about one "
    "question or conversation are not, so the intervals are on the narrow side)"
)


class CalibrationError(MemevalError):
    """A calibration option or source that cannot be used; the message says how to fix it."""


def calibration_settings(
    mode: object, wrong: object, *, benchmarks: Sequence[str], judges: Sequence[str]
) -> CalibrationSettings | None:
    """The validated settings (``None`` when calibration is off); ``CalibrationError`` naming the
    option and the fix otherwise."""
    if mode in (None, "", False):
        if wrong not in (None, ""):
            raise CalibrationError(
                "--memeval-calibration-wrong needs --memeval-judge-calibration=before|only"
            )
        return None
    text = str(mode).strip().lower()
    if text not in MODES:
        raise CalibrationError(
            f"--memeval-judge-calibration={mode!r}: expected 'before' (calibrate the judge, then "
            "run the system) or 'only' (calibrate instead of running the system)"
        )
    if not judges:
        raise CalibrationError(
            "--memeval-judge-calibration calibrates the configured judge: add "
            "--memeval-judge=PROVIDER:MODEL (e.g. openai:gpt-4o-mini)"
        )
    audited = any(_fits(b).audit for b in benchmarks)
    names = [p.strip() for p in str(wrong).split(",") if p.strip()] if wrong else []
    if not names:
        names = [PERTURB, "locomo-audit"] if audited else [PERTURB]
    sources: list[str] = []
    for name in names:
        if name == PERTURB:
            picked: tuple[str, ...] = (PERTURB,)
        elif name in AUDIT_NAMES:
            if not audited:
                raise CalibrationError(
                    f"--memeval-calibration-wrong={name}: the audit's answers are for "
                    "--memeval=locomo; use 'perturb' or a file of the audit's shape here"
                )
            picked = AUDIT_NAMES[name]
        else:
            path = Path(name).expanduser()
            if not path.is_file():
                raise CalibrationError(
                    f"--memeval-calibration-wrong={name}: not a known source and not a file; "
                    f"use {PERTURB}, {', '.join(AUDIT_NAMES)} or the path of a JSON file in the "
                    "shape of the audit's ap-baseline/v1/ap_eval_results.json"
                )
            picked = (str(path),)
        sources.extend(s for s in picked if s not in sources)
    return CalibrationSettings(text, tuple(sources))


def _fits(benchmark: str) -> SuiteCalibration:
    """The wrong-answer sets that fit ``benchmark`` (the registry's SUITE_CALIBRATION; none
    but the perturbations for a suite it does not name)."""
    return SUITE_CALIBRATION.get(benchmark, SuiteCalibration())


def file_kind(path: str) -> str:
    """The kind name of a local wrong-answer file: ``file-<stem>`` (letters, digits, ``_``)."""
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", Path(path).stem).strip("_") or "answers"
    return f"file-{stem}"


def load_wrong_sets(
    settings: CalibrationSettings, data_dir: Path | None, cache_dir: Path
) -> list[WrongAnswerSet]:
    """Every file source of the settings, read (audit sets downloaded when needed)."""
    sets: list[WrongAnswerSet] = []
    for source in settings.sources:
        if source == PERTURB:
            continue
        if source in AUDIT_SETS:
            sets.append(load_audit_set(source, data_dir, cache_dir))
        else:
            sets.append(load_wrong_file(Path(source), file_kind(source)))
    return sets


@dataclass(frozen=True)
class Case:
    benchmark: str
    question: Question
    kind: str
    answer: str


@dataclass
class CaseSet:
    cases: list[Case] = field(default_factory=list)
    #: kind -> answers of that file that matched no loaded question
    unmatched: dict[str, int] = field(default_factory=dict)
    no_gold: int = 0


def build_cases(
    benchmark: str,
    questions: Sequence[Question],
    all_questions: Sequence[Question],
    *,
    perturbations: bool,
    wrong_sets: Sequence[WrongAnswerSet] = (),
    extra_names: Sequence[str] = (),
) -> CaseSet:
    """The calibration cases of one benchmark: per selected question its gold, its built-in
    perturbations and its answers from ``wrong_sets`` (matched against ``all_questions``, the
    whole file, so positions are those of the file)."""
    out = CaseSet()
    golds = {q.id: gold_text(q.gold).strip() for q in questions}
    pool = sorted({n for g in golds.values() for n in names_in(g)} | set(extra_names))
    by_category: dict[str, list[str]] = {}
    for q in questions:
        if golds[q.id]:
            by_category.setdefault(q.category, []).append(golds[q.id])
    matched: list[tuple[str, dict[str, str]]] = []
    for ws in wrong_sets:
        answers, missed = match_answers(ws.answers, all_questions)
        selected = {q.id for q in questions}
        matched.append((ws.kind, {k: v for k, v in answers.items() if k in selected}))
        out.unmatched[ws.kind] = missed
    for q in questions:
        gold = golds[q.id]
        if not gold:
            out.no_gold += 1
            continue
        out.cases.append(Case(benchmark, q, KIND_GOLD, gold))
        if perturbations:
            for kind, answer in perturb(q.id, gold, pool, by_category[q.category]).items():
                out.cases.append(Case(benchmark, q, kind, answer))
        for kind, answers in matched:
            if q.id in answers:
                out.cases.append(Case(benchmark, q, kind, answers[q.id]))
    return out


def _judge_case(runtime: LLMRuntime, case: Case, threshold: float) -> list[Outcome]:
    q = case.question

    def outcome(
        judge: str,
        status: str,
        score: float | None = None,
        reasoning: str | None = None,
        error: str | None = None,
    ) -> Outcome:
        return Outcome(
            benchmark=case.benchmark,
            judge=judge,
            question_id=q.id,
            conversation=q.conversation_id,
            category=q.category,
            kind=case.kind,
            answer=case.answer,
            status=status,
            score=score,
            reasoning=reasoning,
            error=error,
        )

    try:
        scores, details = runtime.judge(case.benchmark, q, case.answer)
    except JudgeError as exc:  # a failed call after retries: counted, the others still run
        return [outcome(spec.label, ERROR, error=str(exc)[:300]) for spec in runtime.judges]
    outcomes = []
    for spec in runtime.judges:
        key = runtime.key_for(spec, case.benchmark)
        info = details.get(key) or {}
        value = scores.get(key)
        reasoning = info.get("reasoning") if isinstance(info, dict) else None
        if info.get("skipped"):
            status = SKIPPED
        elif value is None:
            status = UNSCORED
        else:
            status = ACCEPTED if value >= threshold else REJECTED
        text = str(reasoning) if reasoning is not None else None
        outcomes.append(outcome(spec.label, status, value, text))
    return outcomes


def run_calibration(
    runtime: LLMRuntime,
    case_sets: Mapping[str, CaseSet],
    thresholds: Mapping[str, float],
    category_order: Mapping[str, Sequence[str]],
    *,
    settings: CalibrationSettings,
    wrong_sets: Sequence[WrongAnswerSet] = (),
) -> dict[str, Any]:
    """Judge every case with every configured judge; the report's ``judge_calibration`` block.

    The runtime's unscored/warning counters are restored afterwards: they describe the system's
    items, and calibration reports its own."""
    cases = [c for cs in case_sets.values() for c in cs.cases]
    unscored_before, warnings_before = runtime.unscored, runtime.warnings
    cache_before = runtime.cache.stats() if runtime.cache is not None else {}
    start = time.perf_counter()
    nested = run_parallel(
        lambda c: _judge_case(runtime, c, thresholds[c.benchmark]),
        cases,
        max(1, runtime.settings.concurrency),
    )
    seconds = time.perf_counter() - start
    warnings = runtime.warnings - warnings_before
    runtime.unscored, runtime.warnings = unscored_before, warnings_before
    cache_after = runtime.cache.stats() if runtime.cache is not None else {}
    outcomes = [o for group in nested for o in group]
    return {
        "mode": settings.mode,
        "threshold": dict(thresholds),
        "interval": INTERVAL_NOTE,
        "sources": [s if s == PERTURB else _source_name(s) for s in settings.sources],
        "answers": len(cases),
        "judgments": len(outcomes),
        "seconds": round(seconds, 3),
        "cache": {k: int(cache_after.get(k, 0)) - int(cache_before.get(k, 0)) for k in cache_after},
        "judge_warnings": warnings,
        "no_gold": {b: cs.no_gold for b, cs in case_sets.items()},
        "unmatched": {b: dict(cs.unmatched) for b, cs in case_sets.items() if cs.unmatched},
        "wrong_sets": [ws.provenance() for ws in wrong_sets],
        "tables": summarize(outcomes, category_order),
        "cases": [o.to_dict() for o in outcomes],
    }


def _source_name(source: str) -> str:
    return source if source in AUDIT_SETS else file_kind(source)


def provenance(block: Mapping[str, Any]) -> dict[str, Any]:
    """What the provenance records of a calibration block (no per-case data)."""
    return {
        "mode": block.get("mode"),
        "sources": list(block.get("sources") or ()),
        "wrong_sets": list(block.get("wrong_sets") or ()),
        "threshold": dict(block.get("threshold") or {}),
        "interval": block.get("interval"),
        "answers": block.get("answers"),
        "judgments": block.get("judgments"),
    }


def calibrate_run(state: RunState) -> dict[str, Any]:
    """``--memeval-judge-calibration`` over the run's loaded benchmarks, through its LLM runtime:
    the case sets (perturbations, wrong-answer sets each benchmark can use), then the judge asked
    about them (:func:`run_calibration`). Returns the report's ``judge_calibration`` block;
    ``CalibrationError`` when a source cannot be read or a wrong-answer file matches no loaded
    question."""
    settings = state.settings
    calibration = settings.checks.calibration
    assert calibration is not None  # called only when it is set
    runtime = state.llm
    assert runtime is not None  # calibration needs --memeval-judge, checked with the options
    try:
        wrong_sets = load_wrong_sets(calibration, settings.selection.data_dir, settings.cache_dir)
    except MemevalError as exc:
        raise CalibrationError(f"--memeval-judge-calibration: {exc}") from None
    case_sets: dict[str, CaseSet] = {}
    order: dict[str, list[str]] = {}
    thresholds: dict[str, float] = {}
    for name, bench in state.benchmarks.items():
        dataset = state.datasets[name]
        usable = [
            ws
            for ws in wrong_sets
            if (_fits(name).audit if ws.kind in AUDIT_SETS else _fits(name).files)
        ]
        speakers = [s for c in dataset.conversations.values() for s in c.speakers]
        case_sets[name] = build_cases(
            name,
            state.selected[name],
            dataset.questions,
            perturbations=PERTURB in calibration.sources,
            wrong_sets=usable,
            extra_names=speakers,
        )
        order[name] = [c.name for c in bench.categories.values()]
        thresholds[name] = state.threshold(name)
    for ws in wrong_sets:
        if ws.kind in AUDIT_SETS:
            continue
        missed = [cs.unmatched.get(ws.kind) for cs in case_sets.values()]
        if all(m is None or m == len(ws.answers) for m in missed):
            raise CalibrationError(
                f"--memeval-calibration-wrong={ws.path}: none of its {len(ws.answers)} "
                "answers matches a loaded question (locomo_<K>_qa<N> must name conversation K "
                "and question N, from 0, of a LoCoMo-shaped benchmark, with the same question "
                "text)"
            )
    return run_calibration(
        runtime,
        case_sets,
        thresholds,
        order,
        settings=calibration,
        wrong_sets=wrong_sets,
    )
