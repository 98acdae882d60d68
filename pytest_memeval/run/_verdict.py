"""Run level, pytest-free: what a question needs from the run (:class:`QuestionRun`), its result
before anything ran (:func:`new_result`), scoring a prediction (:func:`evaluate`) and the verdict
rule (:func:`decide`, the only one). Split out of ``run.question`` (issue 26); importable from
there too."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..answerers import Answerer
from ..records import (
    STATUS_CORRECT,
    STATUS_ERROR,
    STATUS_UNSCORED,
    STATUS_WRONG,
    Prediction,
    Question,
    QuestionResult,
    score_float,
)

__all__ = [
    "JudgeFn",
    "QuestionRun",
    "Scorer",
    "clean_scores",
    "decide",
    "decide_status",
    "evaluate",
    "new_result",
    "pass_metric_of",
]


def decide_status(scores: Mapping[str, float | None], pass_metric: str, threshold: float) -> str:
    """CORRECT when the pass metric reaches the threshold; UNSCORED when it is missing or NaN."""
    value = scores.get(pass_metric)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return STATUS_UNSCORED
    return STATUS_CORRECT if value >= threshold else STATUS_WRONG


def clean_scores(scores: Mapping[str, Any]) -> dict[str, float | None]:
    return {key: score_float(value) for key, value in scores.items()}


#: ``score(question, prediction)``: the benchmark's metrics and any plugin's extra scores
Scorer = Callable[[Question, Prediction], Mapping[str, float | None]]
#: ``judge(question, prediction_text)``: every configured judge -> (scores, report details); a
#: judge whose call was queued for the batch has a :class:`~pytest_memeval.records.Pending` for
#: its details (``finish_question`` moves it to the result's ``pending``)
JudgeFn = Callable[[Question, str], tuple[Mapping[str, Any], Mapping[str, Any]]]


@dataclass(frozen=True)
class QuestionRun:
    """What one question of one benchmark needs from the run, pytest-free."""

    benchmark: str
    #: the benchmark's offline pass metric (a judge's verdict replaces it, see :func:`decide`)
    pass_metric: str
    threshold: float
    score: Scorer
    judge: JudgeFn | None = None
    #: the deciding (first) judge's headline metric on this benchmark (``judge_mem0``, ``nugget``,
    #: ``judge_lme_official``, ...); set whenever ``judge`` is
    judge_metric: str | None = None
    answerer: Answerer | None = None
    timeout: float | None = None
    #: --memeval-context-budget: tokens of memory text the answerer may get (None: no limit)
    budget: int | None = None


def new_result(
    benchmark: str, system: str, k: int, question: Question, nodeid: str, flow: str = ""
) -> QuestionResult:
    """A question's result before anything ran: ERROR until :func:`decide` says otherwise."""
    return QuestionResult(
        benchmark=benchmark,
        system=system,
        question_id=question.id,
        conversation_id=question.conversation_id,
        category=question.category,
        category_id=question.category_id,
        question=question.question,
        gold=question.gold,
        prediction=None,
        status=STATUS_ERROR,
        flow=flow,
        details={"index": question.index, "k": k}
        | ({"abstention": True} if question.abstention else {}),
        nodeid=nodeid,
        cluster=question.cluster or question.conversation_id,
    )


def evaluate(
    run: QuestionRun, question: Question, prediction: Prediction
) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Score a prediction with the benchmark's metrics, then every configured judge:
    (scores, report details)."""
    scores = clean_scores(run.score(question, prediction))
    details: dict[str, Any] = {}
    if run.judge is not None:
        judged, judge_details = run.judge(question, prediction.text)
        scores.update(clean_scores(judged))
        details.update(judge_details)
    return scores, details


def pass_metric_of(run: QuestionRun, scores: Mapping[str, float | None]) -> str:
    """With a judge, the first judge's headline metric decides (``judge_mem0``, ``nugget``, ...); a
    question the judge does not score (LoCoMo category 5 under the Mem0 protocol) keeps the
    offline rule."""
    if run.judge is not None and run.judge_metric is not None and run.judge_metric in scores:
        return run.judge_metric
    return run.pass_metric


def decide(
    run: QuestionRun, result: QuestionResult, *, outcome: str, require_metric: bool = False
) -> QuestionResult:
    """The verdict rule, the only one. ``outcome`` is how the code around the question ended:
    ``passed``, ``failed`` (an assertion of a hand-written test: WRONG) or ``error``. A passed
    question is CORRECT/WRONG by its pass metric against the threshold, UNSCORED when that metric
    is missing or NaN; a hand-written test that recorded no pass metric (``require_metric`` False)
    is CORRECT because it passed."""
    pass_metric = pass_metric_of(run, result.scores)
    if outcome == "failed":
        result.status = STATUS_WRONG
    elif outcome == "error":
        result.status = STATUS_ERROR
    elif require_metric or pass_metric in result.scores:
        result.details["pass_metric"] = pass_metric
        result.status = decide_status(result.scores, pass_metric, run.threshold)
    else:
        result.status = STATUS_CORRECT
    return result
