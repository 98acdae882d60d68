"""``run.batch`` without pytest glue: the waiting results a batch's replies settle (judged again,
answered then judged, queued again, left UNSCORED with the reason), the pending calls a waiting
result keeps (written and read back, an earlier version's ``details`` markers too), the check of which runs can batch and the rounds of
:func:`settle_run` over a run folder whose replies are cached already."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_memeval.llm import (
    BATCH_PROVIDERS,
    PROVIDERS,
    BatchQueue,
    ChatMessage,
    Completion,
    LLMCache,
    QueuedRequest,
    Request,
    has_batch_api,
)
from pytest_memeval.records import (
    PENDING_ANSWER,
    PENDING_VERDICT,
    STATUS_CORRECT,
    STATUS_UNSCORED,
    Memory,
    Pending,
    Prediction,
    Question,
    QuestionResult,
)
from pytest_memeval.run._batch import (
    batch_problem,
    batch_roles,
    finish_waiting,
    pending_keys,
    settle_run,
)
from pytest_memeval.run._question import QuestionRun, new_result
from pytest_memeval.run._settings import LLMSettings, RunSettings, Settings
from pytest_memeval.run._state import RunState
from pytest_memeval.run._store import RESULTS_FILE, read_results, row_problem

BENCH = "demo"
METRIC = "judge_mem0"
QUESTION = Question("q1", "c1", "single-hop", "What dog did Ann adopt?", "a beagle")


def _waiting(*, answer: bool = False, keys: tuple[str, ...] = ("k1",)) -> QuestionResult:
    """A result as a worker left it: UNSCORED, its judge (or answer) call queued for the batch."""
    result = new_result(BENCH, "bm25", 2, QUESTION, "test_x[q1]")
    result.status = STATUS_UNSCORED
    result.memories = [Memory("Ann: I adopted a beagle", id="D1:1")]
    result.prediction = "" if answer else "a beagle"
    result.scores = {METRIC: None}
    result.details["answered_by"] = "llm" if answer else "extractive"
    result.details["pass_metric"] = METRIC
    if keys:
        what, label, slot = (
            (PENDING_ANSWER, "answerer", "") if answer else (PENDING_VERDICT, "mem0", METRIC)
        )
        result.pending = (Pending(what, label, keys, slot),)
    return result


class Judge:
    """The judge the cache answers for: a verdict on every prediction (or queued again)."""

    def __init__(self, score: float = 1.0, defer: bool = False) -> None:
        self.score = score
        self.defer = defer
        self.seen: list[str] = []

    def __call__(self, question: Question, text: str) -> tuple[dict[str, float | None], Any]:
        self.seen.append(text)
        if self.defer:  # as LLMRuntime.judge reports a call queued again
            return {METRIC: None}, {METRIC: Pending(PENDING_VERDICT, "mem0", ("k2",), METRIC)}
        return {METRIC: self.score}, {METRIC: {"label": "mem0", "score": self.score}}


class Answerer:
    def __init__(self) -> None:
        self.got: list[tuple[str, ...]] = []

    def answer(self, question: Question, memories: tuple[Memory, ...]) -> Prediction:
        self.got.append(tuple(m.text for m in memories))
        return Prediction(text="a beagle named Rex", memories=memories, answered_by="llm")


def _runs(judge: Judge, answerer: Answerer | None = None) -> Callable[[str], QuestionRun]:
    def make(bench: str) -> QuestionRun:
        return QuestionRun(
            benchmark=bench,
            pass_metric="f1",
            threshold=0.5,
            score=lambda question, prediction: {"f1": 0.0},
            judge=judge,
            judge_metric=METRIC,
            answerer=answerer,
        )

    return make


def test_the_pending_calls_are_written_and_read_back() -> None:
    result = _waiting(keys=("k1", "k2"))
    result.pending += (Pending(PENDING_ANSWER, "answerer", ("k0",), error="errored: boom"),)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["pending"] == [
        {"what": "verdict", "label": "mem0", "keys": ["k1", "k2"], "slot": METRIC},
        {"what": "answer", "label": "answerer", "keys": ["k0"], "error": "errored: boom"},
    ]
    assert QuestionResult.from_dict(data).pending == result.pending
    assert sorted(pending_keys(result)) == ["k0", "k1", "k2"]
    done = new_result(BENCH, "bm25", 2, QUESTION, "n")
    assert "pending" not in done.to_dict()  # a settled result keeps the report's shape
    assert pending_keys(done) == []


def test_an_earlier_versions_details_markers_are_read_as_pending_calls(tmp_path: Path) -> None:
    """A result stored before ``pending`` existed (a run folder resumed, a JSON report read):
    its markers in ``details`` become its pending calls, and leave the details."""
    stored = {
        **_waiting(keys=()).to_dict(),
        "details": {METRIC: {"unscored": True, "label": "mem0", "batch_pending": ["k1"]}},
    }
    (tmp_path / RESULTS_FILE).write_text(json.dumps(stored) + "\n", encoding="utf-8")
    (read,) = read_results(tmp_path)
    assert read.pending == (Pending(PENDING_VERDICT, "mem0", ("k1",), METRIC),)
    assert METRIC not in read.details and pending_keys(read) == ["k1"]
    assert row_problem({**stored, "pending": {"k": 1}}) == "'pending' is not a list"
    assert row_problem({**stored, "pending": ["k1"]}) is not None
    data = _waiting(keys=()).to_dict()
    data["details"] |= {
        METRIC: {"unscored": True, "label": "mem0", "batch_pending": ["k1", "k2"]},
        "answer_batch": {"unscored": True, "label": "answerer", "batch_pending": ["k0"]},
        "judge_other": {"unscored": True, "label": "other", "error": "down"},
        "empty": {"batch_pending": []},
    }
    old = QuestionResult.from_dict(data)
    assert old.pending == (
        Pending(PENDING_VERDICT, "mem0", ("k1", "k2"), METRIC),
        Pending(PENDING_ANSWER, "answerer", ("k0",)),
    )
    assert METRIC not in old.details and "answer_batch" not in old.details
    assert old.details["judge_other"] == {"unscored": True, "label": "other", "error": "down"}
    assert old.details["empty"] == {"batch_pending": []}
    failed = dict(data["details"][METRIC], error="errored: boom")
    data["details"] = {METRIC: failed}
    assert QuestionResult.from_dict(data).pending[0].error == "errored: boom"


def test_a_waiting_result_is_judged_again_and_stored() -> None:
    judge, stored = Judge(), list[QuestionResult]()
    result = _waiting()
    still, lines = finish_waiting(
        [result], {(BENCH, "q1"): QUESTION}, _runs(judge), {}, store=stored.append
    )
    assert (still, lines) == ([], [])
    assert judge.seen == ["a beagle"]
    assert result.status == STATUS_CORRECT
    assert result.scores == {"f1": 0.0, METRIC: 1.0}
    assert result.details[METRIC] == {"label": "mem0", "score": 1.0}
    assert result.details["batch_judged"] is True
    assert pending_keys(result) == []
    assert stored == [result]


def test_a_queued_answer_is_answered_from_the_kept_memories_then_judged() -> None:
    judge, answerer, stored = Judge(), Answerer(), list[QuestionResult]()
    result = _waiting(answer=True)
    still, lines = finish_waiting(
        [result], {(BENCH, "q1"): QUESTION}, _runs(judge, answerer), {}, store=stored.append
    )
    assert (still, lines) == ([], [])
    assert answerer.got == [("Ann: I adopted a beagle",)]
    assert judge.seen == ["a beagle named Rex"]
    assert result.prediction == "a beagle named Rex"
    assert result.pending == ()
    assert result.status == STATUS_CORRECT and stored == [result]


def test_a_result_queued_again_waits_for_the_next_round() -> None:
    stored: list[QuestionResult] = []
    result = _waiting()
    still, lines = finish_waiting(
        [result], {(BENCH, "q1"): QUESTION}, _runs(Judge(defer=True)), {}, store=stored.append
    )
    assert still == [result] and lines == [] and stored == []
    assert pending_keys(result) == ["k2"]
    assert "batch_judged" not in result.details


@pytest.mark.parametrize("why", ["failed", "unselected"])
def test_a_failed_request_or_unselected_question_stays_unscored(why: str) -> None:
    judge, stored = Judge(), list[QuestionResult]()
    result = _waiting()
    failed = {"k1": "errored: boom"} if why == "failed" else {}
    questions = {(BENCH, "q1"): QUESTION} if why == "failed" else {}
    still, lines = finish_waiting([result], questions, _runs(judge), failed, store=stored.append)
    reason = "errored: boom" if why == "failed" else "its question is not selected in this session"
    assert still == [] and stored == [] and judge.seen == []
    assert lines == [f"batch: {BENCH}/bm25//q1: UNSCORED: {reason}"]
    assert [p.error for p in result.pending] == [reason]
    assert pending_keys(result) == ["k1"] and result.status == STATUS_UNSCORED


def test_which_providers_batch() -> None:
    assert set(BATCH_PROVIDERS) < set(PROVIDERS)
    assert has_batch_api("openai:gpt-4o-mini") and has_batch_api("anthropic:claude-sonnet-4-6")
    assert not has_batch_api("openai-compatible:llama3.1:8b")
    assert not has_batch_api("extractive") and not has_batch_api("openai")


def test_batch_problem_names_the_fix() -> None:
    on = LLMSettings(batch=True, judges=("openai:gpt-4o-mini",))
    assert batch_problem(Settings(llm=replace(on, batch=False, no_cache=True))) is None
    assert batch_problem(Settings(llm=on)) is None
    assert "drop --memeval-no-cache" in str(batch_problem(Settings(llm=replace(on, no_cache=True))))
    judge = batch_problem(Settings(llm=replace(on, judges=("openai-compatible:m",))))
    assert judge == (
        "--memeval-llm-batch: judge 'openai-compatible:m' has no batch API (openai: and "
        "anthropic: do); drop --memeval-llm-batch or judge with one of those"
    )
    reanswer = RunSettings(reanswer="latest")
    assert batch_problem(Settings(llm=on, run=reanswer)) is None  # the extractive answerer
    answerer = replace(on, answerer="openai-compatible:m")
    assert "answerer 'openai-compatible:m' has no batch API" in str(
        batch_problem(Settings(llm=answerer, run=reanswer))
    )
    assert batch_roles(Settings(llm=on)) == ("judge",)
    assert batch_roles(Settings(llm=on, run=reanswer)) == ("answerer", "judge")
    assert batch_roles(Settings()) == ()


class FakeLLM:
    """What settle_run touches of the LLM runtime: the cache, the queues, the clients."""

    def __init__(self, cache: LLMCache) -> None:
        self.cache = cache
        self.judges: list[Any] = []
        self.answerer_client = None
        self.queues: list[tuple[str | None, str, bool]] = []

    def queue_judges(self, folder: Path | None, name: str, *, answers: bool = False) -> None:
        self.queues.append((folder.name if folder else None, name, answers))


def test_settle_run_settles_cached_replies_without_pytest(tmp_path: Path) -> None:
    """A run folder whose queued request was answered already (a batch of an earlier round):
    nothing is sent, the waiting result is judged again and stored."""
    folder = tmp_path / "batch"
    request = Request((ChatMessage("user", "judge q1"),), 0.0, 64, 0)
    queue = BatchQueue(folder, "gw0")
    queue.add(QueuedRequest("k1", "openai", "gpt-4o-mini", "http://x/v1", "KEY", request))
    queue.close()
    cache = LLMCache(tmp_path / "llm")
    cache.put("k1", Completion(text="CORRECT", input_tokens=3, output_tokens=1, cached=False))
    llm = FakeLLM(cache)
    state = RunState(Settings(llm=LLMSettings(batch=True)), llm=llm)  # type: ignore[arg-type]
    state.selected = {BENCH: [QUESTION]}
    state.batch_dir = folder
    result, done = _waiting(), _waiting(keys=())
    stored: list[QuestionResult] = []
    lines = settle_run(state, [result, done], _runs(Judge()), store=stored.append)
    assert lines == ["batch: 0 submitted, 0 picked up, 0 replies stored, 0 retried, 0 failed"]
    assert stored == [result] and result.status == STATUS_CORRECT
    assert llm.queues == [("batch", "settle", True), (None, "", False)]
    state.batch_dir = tmp_path / "none"
    assert settle_run(state, [_waiting()], _runs(Judge())) == []
