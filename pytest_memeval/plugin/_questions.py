"""Pytest glue: what the one question path (``run.question``) gets from pytest for a benchmark:
the scorer with its hooks, the judge, the threshold (split from ``items.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from ..records import Prediction, Question, QuestionResult
from ..run import QuestionRun, RunState, SystemRef, new_result

__all__ = ["question_run", "result_skeleton"]


def result_skeleton(
    benchmark: str, system: SystemRef, question: Question, nodeid: str, flow: str = ""
) -> QuestionResult:
    return new_result(benchmark, system.label, system.k, question, nodeid, flow)


def question_run(config: pytest.Config, state: RunState, bench: str) -> QuestionRun:
    """What the one question path (``run.question``) needs for a question of ``bench``."""

    def score(question: Question, prediction: Prediction) -> dict[str, float | None]:
        merged: dict[str, float | None] = {}
        for extra in config.hook.pytest_memeval_question_scores(
            config=config, benchmark=bench, question=question, prediction=prediction
        ):
            if extra:
                merged.update(extra)
        wanted = state.settings.selection.metrics
        if wanted:
            keep = set(wanted) | {state.benchmarks[bench].pass_metric}
            merged = {k: v for k, v in merged.items() if k in keep}
        return merged

    llm = state.llm
    judge = None
    judge_metric = None
    if llm is not None and llm.judges:
        judge_metric = llm.judge_metrics([bench])[bench]

        def judge(question: Question, text: str) -> tuple[dict[str, float | None], dict[str, Any]]:
            return llm.judge(bench, question, text)

    return QuestionRun(
        benchmark=bench,
        pass_metric=state.benchmarks[bench].pass_metric,
        threshold=state.threshold(bench),
        score=score,
        judge=judge,
        judge_metric=judge_metric,
        answerer=state.answerer,
        timeout=state.settings.run.timeout,
        budget=state.settings.selection.context_budget,
    )
