"""Run level, pytest-free: the one path of a question, from a ready memory system to a verdict.

:func:`answer_question` is the whole path of a built-in question (search -> answer -> score ->
judge -> status); :func:`evaluate` (score + judge a prediction) and :func:`decide` (the verdict
rule) are the steps hand-written ``memeval_case`` tests share with it. The pytest glue
(``plugin/_items.py``, ``plugin/__init__.py``) only supplies a :class:`QuestionRun` and records the
result; nothing here imports pytest. The verdict rule lives in :func:`decide` and nowhere else.

The code is split by concern (issue 26): ``run.ingest`` (the ingested systems and their pool),
``run.retrieval`` (search / the system's own answer) and ``run.verdict`` (:class:`QuestionRun`,
scoring and the verdict rule); every name stays importable from here.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..answerers import Answerer
from ..llm import BatchDeferred
from ..records import PENDING_ANSWER, Memory, Pending, Prediction, Question, QuestionResult
from ._ingest import (
    READY_TIMEOUT,
    Factory,
    IngestedSystem,
    MemorySystemTimeout,
    SystemPool,
    call_with_timeout,
    is_factory,
    is_thread_safe,
    record_stored,
    wait_until_ready,
)
from ._retrieval import Retrieval, clean_text, retrieve
from ._verdict import (
    JudgeFn,
    QuestionRun,
    Scorer,
    clean_scores,
    decide,
    decide_status,
    evaluate,
    new_result,
    pass_metric_of,
)

__all__ = [
    "READY_TIMEOUT",
    "Answered",
    "Answerer",
    "Factory",
    "IngestedSystem",
    "JudgeFn",
    "MemorySystemTimeout",
    "Prepared",
    "QuestionRun",
    "QuestionSetCheck",
    "Retrieval",
    "Scorer",
    "Staged",
    "SystemPool",
    "answer_from",
    "answer_pending",
    "answer_question",
    "answer_stage",
    "call_with_timeout",
    "check_question_set",
    "clean_scores",
    "clean_text",
    "decide",
    "decide_status",
    "evaluate",
    "finish_question",
    "is_factory",
    "is_thread_safe",
    "judge_stage",
    "llm_stage",
    "new_result",
    "pass_metric_of",
    "prepare_question",
    "record_stored",
    "retrieve",
    "run_question",
    "select_questions",
    "wait_until_ready",
]


def answer_from(
    answerer: Answerer, question: Question, memories: tuple[Memory, ...]
) -> tuple[Prediction, float]:
    """The answerer's prediction from ``memories`` and the seconds that call took."""
    start = time.perf_counter()
    prediction = answerer.answer(question, memories)
    seconds = time.perf_counter() - start
    return replace(prediction, text=clean_text(prediction.text)), seconds


def run_question(
    ingested: IngestedSystem,
    question: Question,
    *,
    k: int,
    answerer: Answerer,
    timeout: float | None = None,
    details: dict[str, Any] | None = None,
    budget: int | None = None,
) -> tuple[Prediction, dict[str, float]]:
    """Search (unless the system answers itself), answer, and time both stages.

    What the system returns is normalised at this boundary (``systems.contract``): a lazy result
    is consumed inside the timed call, values become plain ``str``/``float``/tuples, and more than
    ``k`` memories are cut to the first ``k`` (rank order) unless the system declares
    ``ignores_top_k = True`` (full-context). ``details``, when given, receives
    ``memories_returned`` (what ``search`` returned) and ``truncated``, and the context tokens
    handed to the answerer (``run.budget.context_for_answer``; ``budget`` cuts them)."""
    __tracebackhide__ = True
    got = retrieve(ingested, question, k=k, timeout=timeout, details=details, budget=budget)
    if got.prediction is not None:
        return got.prediction, got.latency
    prediction, seconds = answer_from(answerer, question, got.memories)
    got.latency["answer"] = seconds
    return prediction, got.latency


def select_questions(
    questions: list[Question],
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> list[Question]:
    """The questions to run, in file order.

    ``limit``: the first N questions of each conversation. ``sample``: N questions per category,
    drawn with ``random.Random(f"{seed}:{category}")`` from the (limited) pool in file order, so the
    selection is the same on every worker, every run and every Python version.
    """
    chosen = questions
    if limit is not None:
        per_conv: dict[str, int] = {}
        kept = []
        for q in chosen:
            n = per_conv.get(q.conversation_id, 0)
            if n < limit:
                kept.append(q)
            per_conv[q.conversation_id] = n + 1
        chosen = kept
    if sample is not None:
        by_cat: dict[str, list[int]] = {}
        for i, q in enumerate(chosen):
            by_cat.setdefault(q.category, []).append(i)
        keep_idx: set[int] = set()
        for category, idx in by_cat.items():
            if len(idx) <= sample:
                keep_idx.update(idx)
            else:
                keep_idx.update(random.Random(f"{seed}:{category}").sample(idx, sample))
        chosen = [q for i, q in enumerate(chosen) if i in keep_idx]
    return list(chosen)


@dataclass(frozen=True)
class QuestionSetCheck:
    """The question ids a result holds against the ids its selection names
    (:func:`check_question_set`): each list in first-seen order."""

    expected: int
    held: int
    #: selected ids the result does not hold
    missing: tuple[str, ...] = ()
    #: ids the result holds that the selection does not name
    invented: tuple[str, ...] = ()
    #: (id, times held) for each id held more than once
    duplicated: tuple[tuple[str, int], ...] = ()

    @property
    def complete(self) -> bool:
        """Every selected id held exactly once and nothing else."""
        return not (self.missing or self.invented or self.duplicated)

    def problems(self, named: int = 5) -> list[str]:
        """One line per kind of problem, with its count and the first ``named`` ids."""

        def ids(values: tuple[str, ...]) -> str:
            shown = ", ".join(values[:named])
            return shown + (f", ... ({len(values) - named} more)" if len(values) > named else "")

        out = []
        if self.missing:
            out.append(f"{len(self.missing)} selected question(s) missing: {ids(self.missing)}")
        if self.invented:
            out.append(
                f"{len(self.invented)} question id(s) not in the selection: {ids(self.invented)}"
            )
        if self.duplicated:
            extra = sum(n - 1 for _, n in self.duplicated)
            named_ids = tuple(f"{q} x{n}" for q, n in self.duplicated)
            out.append(
                f"{extra} duplicate record(s) of {len(self.duplicated)} question(s): "
                f"{ids(named_ids)}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "expected": self.expected,
            "held": self.held,
            "complete": self.complete,
            "missing": list(self.missing),
            "invented": list(self.invented),
            "duplicated": [list(d) for d in self.duplicated],
        }


def check_question_set(expected: Sequence[str], held: Sequence[str]) -> QuestionSetCheck:
    """The ids ``held`` (one per stored record, in order) against the ``expected`` selection:
    which selected ids are missing, which held ids the selection does not name (invented), which
    are held more than once. Pure: the board checks a report with it, a merge can check shards."""
    wanted = set(expected)
    counts: dict[str, int] = {}
    for qid in held:
        counts[qid] = counts.get(qid, 0) + 1
    return QuestionSetCheck(
        expected=len(wanted),
        held=len(held),
        missing=tuple(dict.fromkeys(q for q in expected if q not in counts)),
        invented=tuple(q for q in counts if q not in wanted),
        duplicated=tuple((q, n) for q, n in counts.items() if n > 1),
    )


@dataclass
class Prepared:
    """A question whose memory-system half is done (on the main thread, in order): what its LLM
    half (:func:`llm_stage`, any thread) and :func:`finish_question` (main thread) need."""

    question: Question
    result: QuestionResult
    memories: tuple[Memory, ...] = ()
    #: already answered (by the system itself, or the stored one of --memeval-rejudge)
    prediction: Prediction | None = None
    #: the question as the judges get it when it carries its conversation's storage judgments
    #: (``Retrieval.carrier``); None: ``question``
    judge_question: Question | None = None
    #: a thread-safe system (:func:`is_thread_safe`) whose search is left to :func:`llm_stage`,
    #: so the pipeline's threads search several questions at once; None once searched
    search: IngestedSystem | None = None


@dataclass(frozen=True)
class Staged:
    """The LLM half's output: the prediction, the seconds the answerer's own call took (None: no
    answerer call) and what the judges said (None: no judge)."""

    prediction: Prediction
    answer_seconds: float | None
    judged: tuple[Mapping[str, Any], Mapping[str, Any]] | None
    #: the answerer's call queued for the batch (``--memeval-llm-batch`` re-answers)
    pending: tuple[Pending, ...] = ()


def prepare_question(
    run: QuestionRun,
    question: Question,
    result: QuestionResult,
    *,
    ingested: IngestedSystem | None = None,
    prediction: Prediction | None = None,
) -> Prepared:
    """The memory-system half of :func:`answer_question` (search, or the system's own answer):
    on the caller's thread. With ``prediction`` (rejudge) there is nothing to do. A system that
    declares ``thread_safe = True`` is not searched here: its search is the first step of
    :func:`llm_stage`, on whichever thread runs that (the same call, so the same memories)."""
    __tracebackhide__ = True
    if prediction is not None:
        return Prepared(question, result, prediction=prediction)
    if ingested is None or run.answerer is None:
        raise ValueError("answer_question needs an ingested system and an answerer")
    # a question of a suite that scores storage is searched here, in order: which question of
    # the conversation makes the one dump call (and carries the storage judgments) stays that of
    # a window of 1
    if is_thread_safe(ingested.system) and not question.meta.get("dump"):
        return Prepared(question, result, search=ingested)
    return _search(run, question, result, ingested)


def _search(
    run: QuestionRun, question: Question, result: QuestionResult, ingested: IngestedSystem
) -> Prepared:
    __tracebackhide__ = True
    k = int(result.details.get("k", 0))
    got = retrieve(
        ingested, question, k=k, timeout=run.timeout, details=result.details, budget=run.budget
    )
    result.latency = got.latency
    return Prepared(question, result, got.memories, got.prediction, got.carrier)


@dataclass(frozen=True)
class Answered:
    """The first half of the LLM half: the prediction and the seconds the answerer's own call
    took (None: no answerer call); ``staged`` when nothing is left for the judges (an answer
    queued for the batch)."""

    prediction: Prediction
    seconds: float | None
    staged: Staged | None = None


def answer_stage(run: QuestionRun, prepared: Prepared) -> Answered:
    """The search left to this thread (a thread-safe system), then the answerer's call unless
    answered already."""
    __tracebackhide__ = True
    if prepared.search is not None:
        searched = _search(run, prepared.question, prepared.result, prepared.search)
        prepared.memories, prepared.prediction = searched.memories, searched.prediction
        prepared.judge_question = searched.judge_question
        prepared.search = None
    prediction = prepared.prediction
    seconds: float | None = None
    if prediction is None:
        assert run.answerer is not None
        try:
            prediction, seconds = answer_from(run.answerer, prepared.question, prepared.memories)
        except BatchDeferred as exc:  # --memeval-llm-batch re-answers: answered at the run's end
            pending = answer_pending(run, prepared, exc)
            return Answered(pending.prediction, None, pending)
    return Answered(prediction, seconds)


def judge_stage(run: QuestionRun, prepared: Prepared, answered: Answered) -> Staged:
    """The second half: every judge on the answer."""
    __tracebackhide__ = True
    if answered.staged is not None:
        return answered.staged
    judged = None
    if run.judge is not None:
        judged = run.judge(prepared.judge_question or prepared.question, answered.prediction.text)
    return Staged(answered.prediction, answered.seconds, judged)


def llm_stage(run: QuestionRun, prepared: Prepared) -> Staged:
    """The LLM half: the answerer's call (unless answered already), then every judge. Touches no
    pytest state and no memory system but a thread-safe one whose search was left to it
    (``prepared.search``), so it may run on any thread (the pipeline's, which runs the two
    halves, :func:`answer_stage` and :func:`judge_stage`, as separate steps)."""
    __tracebackhide__ = True
    return judge_stage(run, prepared, answer_stage(run, prepared))


def answer_pending(run: QuestionRun, prepared: Prepared, exc: BatchDeferred) -> Staged:
    """The stage of a question whose answer is queued for the batch (``--memeval-llm-batch``
    with ``--memeval-reanswer``): UNSCORED for now (its deciding metric is None), the memories
    it is answered from kept in the result (``run.batch`` answers and judges it at the run's
    end from them), the answer's call in the result's ``pending``."""
    metric = run.judge_metric or run.pass_metric
    placeholder = Prediction(text="", memories=prepared.memories, answered_by=exc.label)
    waiting = Pending(PENDING_ANSWER, exc.label, tuple(exc.keys))
    return Staged(placeholder, None, ({metric: None}, {}), (waiting,))


def finish_question(run: QuestionRun, prepared: Prepared, staged: Staged) -> QuestionResult:
    """Score (the scoring hooks run on the caller's thread), merge the judges' verdicts, decide."""
    result = prepared.result
    prediction = staged.prediction
    k = int(result.details.get("k", 0))
    if staged.answer_seconds is not None:
        result.latency["answer"] = staged.answer_seconds
    result.prediction = prediction.text
    # every retrieved memory up to k (what --memeval-reanswer answers from)
    result.memories = list(prediction.memories[:k])
    result.details["answered_by"] = prediction.answered_by
    result.details.update(prediction.details)  # what the answerer reports (the Mem0 filing)
    scores = clean_scores(run.score(prepared.question, prediction))
    pending = list(staged.pending)
    if staged.judged is not None:
        judged, judge_details = staged.judged
        scores.update(clean_scores(judged))
        for key, detail in judge_details.items():
            # a judge's call queued for the batch: its verdict is pending, not a detail
            if isinstance(detail, Pending):
                pending.append(detail)
            else:
                result.details[key] = detail
    result.scores = scores
    result.pending = tuple(pending)
    return decide(run, result, outcome="passed", require_metric=True)


def answer_question(
    run: QuestionRun,
    question: Question,
    result: QuestionResult,
    *,
    ingested: IngestedSystem | None = None,
    prediction: Prediction | None = None,
) -> QuestionResult:
    """The whole path of one built-in question: search and answer with the ``ingested`` system
    (or take a stored ``prediction``: ``--memeval-rejudge``), score, judge, decide. Fills and
    returns ``result`` (from :func:`new_result`). The pipeline (``run.pipeline``) runs the same
    three steps, the middle one on its threads."""
    __tracebackhide__ = True
    prepared = prepare_question(run, question, result, ingested=ingested, prediction=prediction)
    return finish_question(run, prepared, llm_stage(run, prepared))
