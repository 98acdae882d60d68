"""Stored results are data, not truth: every row read back from a run folder (a merge's shards, a
resumed run) is checked against the dataset loaded here and scored again (pytest-free; moved out of
``plugin/``, issue 40: the glue passes how a benchmark's questions are scored, ``question_run``).

A run folder may come from another machine (a CI artifact, a colleague's upload), so a row's
benchmark, question id, conversation and system must name a question of this session's
selection and one of its systems; the question text, gold, category and cluster are taken from
the loaded dataset, never from the row; every offline metric is re-computed from the stored
prediction and memories with the benchmark's own score function, and the verdict decided again.
Judge scores (an LLM's verdict) cannot be re-computed offline and are kept as stored; a row
whose stored offline numbers differ from the re-computed ones is named (``rescored``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MemevalError
from ..records import STATUS_CORRECT, STATUS_ERROR, Prediction, QuestionResult, ResultKey
from ._question import clean_scores, decide, new_result

if TYPE_CHECKING:
    from ..records import Question
    from ._state import RunState
    from ._verdict import QuestionRun

__all__ = ["CheckedRows", "check_rows", "merge_shards", "verify_imported_verdicts"]


@dataclass
class CheckedRows:
    """Rows that name a question and system of this session, re-scored from the dataset."""

    results: dict[ResultKey, QuestionResult] = field(default_factory=dict)
    #: ``where: key: metric stored -> recomputed`` for every row whose stored numbers were wrong
    rescored: list[str] = field(default_factory=list)


def _differs(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) != math.isnan(b)
    return abs(a - b) > 1e-9


def check_rows(
    question_run: Callable[[str], QuestionRun],
    state: RunState,
    rows: Iterable[tuple[str, QuestionResult]],
    option: str,
) -> CheckedRows:
    """``rows`` are (where it came from, result). Raises MemevalError naming the first row that
    names no question or system of this session (an invented id, another benchmark's row, a
    question of another conversation), a hand-written test's row included; re-scores every other
    row (a hand-written test's: the offline metrics it recorded). ``question_run``: how a
    benchmark's questions are scored and decided (the plugin's, with its score hooks)."""
    questions: dict[tuple[str, str], Question] = {
        (bench, q.id): q for bench, qs in state.selected.items() for q in qs
    }
    systems = {ref.label: ref for ref in state.systems or ()}
    runs = {}
    out = CheckedRows()
    for where, row in rows:
        named = f"{where}: {'/'.join(row.key)}"
        question = questions.get((row.benchmark, row.question_id))
        problem = None
        if row.flow and not row.flow.isidentifier():
            # a hand-written test's flow is its function's name
            problem = f"flow {row.flow!r} is not the name of a test function"
        elif row.benchmark not in state.benchmarks:
            problem = f"benchmark {row.benchmark!r} is not in this run"
        elif question is None:
            problem = f"question id {row.question_id!r} is not a selected question of the dataset"
        elif row.conversation_id != question.conversation_id:
            problem = (
                f"conversation {row.conversation_id!r} is not the question's "
                f"({question.conversation_id!r})"
            )
        elif row.system not in systems:
            problem = f"system {row.system!r} is not one of this run's ({', '.join(systems)})"
        if problem is not None:
            raise MemevalError(
                f"{option}: {named}: {problem}; the row does not belong to this run's dataset "
                "(edited, or from another run): restore the folder from its run or rerun it"
            )
        assert question is not None
        if row.benchmark not in runs:
            runs[row.benchmark] = question_run(row.benchmark)
        run = runs[row.benchmark]
        ref = systems[row.system]
        fresh = new_result(row.benchmark, ref.label, ref.k, question, row.nodeid, row.flow)
        fresh.latency = dict(row.latency)
        fresh.memories = list(row.memories)
        fresh.details = dict(row.details) | fresh.details
        fresh.pending = row.pending  # calls still waiting for the batch (settled at the end)
        fresh.details.pop("pass_metric", None)
        if row.flow:
            _check_case_row(run, fresh, row, question, named, out)
            continue
        if row.status == STATUS_ERROR or row.prediction is None:
            fresh.error = row.error or "no prediction stored"
            fresh.status = STATUS_ERROR
            out.results[fresh.key] = fresh
            continue
        fresh.prediction = row.prediction
        prediction = Prediction(
            text=row.prediction,
            memories=tuple(row.memories),
            answered_by=str(row.details.get("answered_by", "")),
        )
        offline = clean_scores(run.score(question, prediction))
        judged = {k: v for k, v in row.scores.items() if k not in offline}
        fresh.scores = offline | (judged if run.judge is not None else {})
        decide(run, fresh, outcome="passed", require_metric=True)
        changed = [
            f"{k} {row.scores.get(k)} -> {v}"
            for k, v in offline.items()
            if _differs(row.scores.get(k), v)
        ]
        if fresh.status != row.status:
            changed.append(f"status {row.status} -> {fresh.status}")
        if changed:
            out.rescored.append(f"{named}: {', '.join(changed)}")
        out.results[fresh.key] = fresh
    return out


def _check_case_row(
    run: QuestionRun,
    fresh: QuestionResult,
    row: QuestionResult,
    question: Question,
    named: str,
    out: CheckedRows,
) -> None:
    """A hand-written test's row (its ``flow``), after the checks every row gets: the offline
    metrics it recorded are computed again from its prediction; a CORRECT row is decided again
    (its test passed: the pass metric decides when it recorded one); WRONG (a failed assertion),
    ERROR and UNSCORED stand, none of them in the system's favour."""
    fresh.prediction = row.prediction
    fresh.error = row.error
    fresh.scores = dict(row.scores)
    changed: list[str] = []
    if row.prediction is not None and row.status != STATUS_ERROR:
        prediction = Prediction(
            text=row.prediction,
            memories=tuple(row.memories),
            answered_by=str(row.details.get("answered_by", "")),
        )
        for key, value in clean_scores(run.score(question, prediction)).items():
            if key in row.scores:
                if _differs(row.scores.get(key), value):
                    changed.append(f"{key} {row.scores.get(key)} -> {value}")
                fresh.scores[key] = value
    if row.status == STATUS_CORRECT:
        decide(run, fresh, outcome="passed")
    else:
        fresh.status = row.status
    if fresh.status != row.status:
        changed.append(f"status {row.status} -> {fresh.status}")
    if changed:
        out.rescored.append(f"{named}: {', '.join(changed)}")
    out.results[fresh.key] = fresh


def merge_shards(
    state: RunState, folders: Sequence[Path], question_run: Callable[[str], QuestionRun]
) -> tuple[CheckedRows, list[dict[str, Any]]]:
    """``--memeval-merge``: the shards' run folders read (``shards.load_shards``), their
    configuration checked against this session's, and their rows checked and scored again
    (:func:`check_rows`); with each shard's process outputs. ``MemevalError`` names what
    differs."""
    from ._fingerprint import run_fingerprint
    from ._shards import fingerprint_difference, load_shards

    shards = load_shards(folders)
    diffs = fingerprint_difference(shards.fingerprint, run_fingerprint(state))
    if diffs:
        raise MemevalError(
            f"--memeval-merge: this session's configuration differs from the shards' in "
            f"{', '.join(diffs[:5])} (e.g. another dataset file under --memeval-data, or an "
            "option given here); give the shards' options or none"
        )
    checked = check_rows(
        question_run,
        state,
        ((str(run.folder), r) for run in shards.runs for r in run.results.values()),
        "--memeval-merge",
    )
    return checked, list(shards.outputs)


def verify_imported_verdicts(
    state: RunState, results: list[QuestionResult], n: int, seed: int
) -> dict[str, Any]:
    """Draw ``n`` of the (result, judge) verdicts served from an imported cache file (seeded,
    over a sorted list, so the draw is the same whatever the worker order), judge each again with
    the same judge and an uncached client, and compare the scores."""
    import copy
    import random

    from ..errors import JudgeError
    from ._runtime import score_key

    llm = state.llm
    assert llm is not None
    questions = {(b, q.id): q for b, qs in state.selected.items() for q in qs}
    candidates: list[tuple[ResultKey, int]] = []
    by_key = {r.key: r for r in results}
    for result in sorted(results, key=lambda r: r.key):
        if result.prediction is None or (result.benchmark, result.question_id) not in questions:
            continue
        for index, spec in enumerate(llm.judges):
            key = score_key(llm.judge_for(spec, result.benchmark).metric, spec.first, spec.label)
            info = result.details.get(key)
            if isinstance(info, dict) and info.get("imported_from"):
                candidates.append((result.key, index))
    sample = random.Random(seed).sample(candidates, min(n, len(candidates)))
    rows: list[str] = []
    asked = disagree = 0
    for result_key, index in sorted(sample):
        result = by_key[result_key]
        spec = llm.judges[index]
        judge = llm.judge_for(spec, result.benchmark)
        client = copy.copy(spec.client)
        client.cache = None  # asked again, never answered from (or written to) the cache
        question = questions[(result.benchmark, result.question_id)]
        assert result.prediction is not None
        try:
            fresh = judge.judge(question, result.prediction, client)
        except JudgeError as exc:
            rows.append(f"{'/'.join(result_key)}: not re-asked ({str(exc)[:120]})")
            continue
        asked += 1
        differing = []
        for name, value in fresh.scores.items():
            stored = result.scores.get(score_key(name, spec.first, spec.label))
            if (stored is None) != (value is None) or (
                stored is not None and value is not None and abs(stored - value) > 1e-9
            ):
                differing.append(f"{name} imported {stored} vs asked {value}")
        if differing:
            disagree += 1
            rows.append(f"{'/'.join(result_key)} ({spec.label}): {', '.join(differing)}")
    return {
        "requested": n,
        "imported": len(candidates),
        "asked": asked,
        "seed": seed,
        "disagree": disagree,
        "rows": rows,
    }
