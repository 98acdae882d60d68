"""Run level, pytest-free: the one path of a question, from a ready memory system to a verdict.

:func:`answer_question` is the whole path of a built-in question (search -> answer -> score ->
judge -> status); :func:`evaluate` (score + judge a prediction) and :func:`decide` (the verdict
rule) are the steps hand-written ``memeval_case`` tests share with it. The pytest glue
(``plugin/items.py``, ``plugin/__init__.py``) only supplies a :class:`QuestionRun` and records the
result; nothing here imports pytest. The verdict rule lives in :func:`decide` and nowhere else.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..answerers.extractive import Answerer
from ..errors import AdapterError
from ..llm.batch import BatchDeferred
from ..records import (
    STATUS_CORRECT,
    STATUS_ERROR,
    STATUS_UNSCORED,
    STATUS_WRONG,
    Conversation,
    Memory,
    Prediction,
    Question,
    QuestionResult,
    score_float,
)
from ..systems.base import NO_DUMP_REASON, STORED_META, MemorySystem, stored_memories
from ..systems.contract import materialise, normalise_answer, normalise_memories
from ..systems.resolve import ensure_memory_system
from .budget import context_for_answer

__all__ = [
    "ANSWER_PENDING",
    "Answerer",
    "IngestedSystem",
    "Prepared",
    "QuestionRun",
    "Retrieval",
    "Staged",
    "SystemPool",
    "answer_from",
    "answer_pending",
    "answer_question",
    "decide",
    "decide_status",
    "evaluate",
    "finish_question",
    "is_factory",
    "is_thread_safe",
    "llm_stage",
    "new_result",
    "prepare_question",
    "retrieve",
    "run_question",
    "select_questions",
]

#: a zero-argument callable returning a fresh memory system (one per conversation)
Factory = Callable[[], object]


class MemorySystemTimeout(AdapterError):
    """A memory-system call ran past ``--memeval-timeout``."""


def call_with_timeout(fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
    """Run ``fn``; with a timeout, in a daemon thread that is abandoned when it overruns (a Python
    thread cannot be killed; the session never waits for it)."""
    __tracebackhide__ = True
    if timeout is None:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"memeval-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise MemorySystemTimeout(f"{what} did not return within --memeval-timeout={timeout:g}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@dataclass
class IngestedSystem:
    system: MemorySystem
    conversation_id: str
    ingest_seconds: float
    #: seconds ``wait_ready`` took after ingest (None: the system has no ``wait_ready``)
    ready_seconds: float | None = None
    name: str = ""  # the --memsys name, for error messages
    #: what ``dump`` returned for this conversation (None: no ``dump``), asked once on the first
    #: question that wants it (a suite scoring storage marks its questions ``meta["dump"]``)
    stored: tuple[Memory, ...] | None = None
    dumped: bool = False
    #: the conversation ingested (what the storage judgments compare the stored memories with)
    conversation: Conversation | None = None
    #: ``dump`` is asked once even when a thread-safe system's searches run on several threads
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def record_stored(
    ingested: IngestedSystem, conversation_id: str, timeout: float | None, details: dict[str, Any]
) -> bool:
    """Ask the system once what it stored for this conversation (the optional ``dump``) and put
    the count in ``details["stored_memories"]``, or ``details["stored_unscored"]`` with the reason
    when the system has no ``dump`` (storage metrics are then UNSCORED, never zero). True for the
    question that made the one ``dump`` call of a system that has it: that question carries the
    conversation's storage judgments (``details["storage_carrier"]``). ``dump`` is asked once
    even when a thread-safe system's searches run on several threads."""
    with ingested.lock:
        first = not ingested.dumped
        if first:
            system = ingested.system
            ingested.stored = call_with_timeout(
                lambda: stored_memories(system, conversation_id), timeout, "dump()"
            )
            ingested.dumped = True
    if ingested.stored is None:
        details["stored_unscored"] = NO_DUMP_REASON
        return False
    details["stored_memories"] = len(ingested.stored)
    if first:
        details["storage_carrier"] = True
    return first


#: how long ``wait_ready`` may take without --memeval-timeout (a bound, never a hang)
READY_TIMEOUT = 600.0


@dataclass
class SystemPool:
    """Per process: one ingested instance per (system, conversation).

    ``conversation_key`` is ``<benchmark>/<conversation>``. ``release`` drops the instances of other
    conversations when the run moves on, so memory stays bounded by one conversation per system; an
    object that serves several conversations (a session-scoped fixture) gets ``reset()`` before
    its next ``ingest``. An ingest that raised is not retried for the other questions of that
    conversation: they fail with the same exception. ``ingests`` counts real ``ingest`` calls per
    system (reported to the controller).

    ``get_ahead`` ingests the next conversation while the current one's LLM calls are in flight
    (the pipeline's look-ahead at -n 0); ``release`` keeps those conversations too, so memory is
    bounded by two conversations per system.
    """

    live: dict[tuple[str, str], IngestedSystem] = field(default_factory=dict)
    ingests: dict[str, int] = field(default_factory=dict)
    timeout: float | None = None
    failed: dict[tuple[str, str], BaseException] = field(default_factory=dict)
    _last_instance: dict[str, object] = field(default_factory=dict)
    #: conversation keys ingested by ``get_ahead`` that the run has not reached yet
    ahead: set[str] = field(default_factory=set)
    #: systems whose ``obtain`` gives one object for every conversation: never ingested ahead
    shared: set[str] = field(default_factory=set)

    def get(
        self,
        system: str,
        conversation: Callable[[], Conversation],
        conversation_key: str,
        obtain: Callable[[], object],
    ) -> IngestedSystem:
        """The ingested system for this conversation; ``obtain`` returns an instance or a factory."""
        key = (system, conversation_key)
        ready = self.live.get(key)
        if ready is not None:
            return ready
        __tracebackhide__ = True
        earlier = self.failed.get(key)
        if earlier is not None:
            raise earlier
        obj = obtain()
        if is_factory(obj):
            obj = obj()  # type: ignore[operator]  # a class or a zero-argument callable
        elif self._last_instance.get(system) is obj:
            # The same object serves several conversations (a session-scoped fixture): reset it.
            reset = getattr(obj, "reset", None)
            if callable(reset):
                reset()
        instance = ensure_memory_system(obj, system)
        self._last_instance[system] = obj
        conv = conversation()
        start = time.perf_counter()
        try:
            call_with_timeout(lambda: instance.ingest(conv), self.timeout, f"{system}: ingest()")
        except Exception as exc:
            self.failed[key] = exc
            if isinstance(exc, MemorySystemTimeout):
                self._last_instance.pop(system, None)  # never reuse an instance stuck in ingest
            raise
        elapsed = time.perf_counter() - start
        self.ingests[system] = self.ingests.get(system, 0) + 1
        try:
            waited = wait_until_ready(instance, system, self.timeout)
        except Exception as exc:
            self.failed[key] = exc
            raise
        ready = IngestedSystem(
            instance, conversation_key, elapsed, waited, name=system, conversation=conv
        )
        self.live[key] = ready
        return ready

    def get_ahead(
        self,
        system: str,
        conversation: Callable[[], Conversation],
        conversation_key: str,
        obtain: Callable[[], object],
    ) -> IngestedSystem | None:
        """The system of a conversation the run has not reached, ingested now, when that cannot
        disturb the conversation being run: only when ``obtain`` gives a factory (a fresh
        instance per conversation). An object serving several conversations would be reset under
        the current conversation's searches: None, and never asked again. None too when its
        ingest failed before; an ingest that raises here raises (and is kept for its questions,
        as :meth:`get` keeps it)."""
        key = (system, conversation_key)
        ready = self.live.get(key)
        if ready is not None:
            return ready
        if key in self.failed or system in self.shared:
            return None
        obj = obtain()
        if not is_factory(obj):
            self.shared.add(system)
            return None
        self.ahead.add(conversation_key)
        return self.get(system, conversation, conversation_key, lambda: obj)

    def release(self, keep_conversation: str | None = None) -> None:
        """Drop every instance not serving ``keep_conversation`` or a conversation ingested
        ahead (``keep_conversation`` None: drop everything)."""
        if keep_conversation is None:
            self.ahead.clear()
        else:
            self.ahead.discard(keep_conversation)
        keep = {keep_conversation, *self.ahead}
        for key in [k for k in self.live if k[1] not in keep]:
            self.live.pop(key)
        for key in [k for k in self.failed if k[1] not in keep]:
            self.failed.pop(key)

    def clear(self) -> None:
        self.live.clear()
        self.failed.clear()
        self.ahead.clear()


def is_thread_safe(system: object) -> bool:
    """The system declares ``thread_safe = True`` (a class or instance attribute, exactly
    ``True``): its ``search`` / ``answer`` may run on several threads at once, so the pipeline
    searches up to its window of questions concurrently (:func:`prepare_question`). Anything else
    (absent, a truthy non-bool) keeps searches sequential on the main thread."""
    return getattr(system, "thread_safe", False) is True


def is_factory(obj: object) -> bool:
    """A memory-system factory (a class, or a callable without ``ingest``), not an instance."""
    return isinstance(obj, type) or (not callable(getattr(obj, "ingest", None)) and callable(obj))


def wait_until_ready(instance: object, name: str, timeout: float | None) -> float | None:
    """Call the optional ``wait_ready(timeout)`` after ingest (an asynchronously indexing
    service): the seconds it took, reported apart from ingest; None without ``wait_ready``. It
    returning False, raising, or overrunning its timeout errors the conversation's questions."""
    __tracebackhide__ = True
    wait = getattr(instance, "wait_ready", None)
    if not callable(wait):
        return None
    limit = timeout if timeout is not None else READY_TIMEOUT
    start = time.perf_counter()
    ok = call_with_timeout(lambda: wait(limit), limit + 5.0, f"{name}: wait_ready()")
    if ok is False:
        raise AdapterError(
            f"{name}: wait_ready() reported the system not ready {limit:g}s after ingest; "
            "raise --memeval-timeout or check the service's indexing"
        )
    return time.perf_counter() - start


@dataclass
class Retrieval:
    """What the memory system gave one question (the main-thread half of its path): the memories
    for the answerer, or the system's own answer, with the search (or own-answer) latency."""

    memories: tuple[Memory, ...]
    latency: dict[str, float]
    #: the system answered itself (``answer(question)``): no answerer call
    prediction: Prediction | None = None
    #: this question carries its conversation's storage judgments: the question handed to the
    #: judges, with ``meta[STORED_META] = (conversation, stored memories)``
    carrier: Question | None = None


def retrieve(
    ingested: IngestedSystem,
    question: Question,
    *,
    k: int,
    timeout: float | None = None,
    details: dict[str, Any] | None = None,
    budget: int | None = None,
) -> Retrieval:
    """Search (or let a system that answers itself answer) and time it: the memory-system half of
    :func:`run_question`, on the caller's thread: the main thread's, in order, unless the system
    declares ``thread_safe = True`` (then :func:`llm_stage` calls it on the pipeline's thread)."""
    __tracebackhide__ = True
    system = ingested.system
    name = ingested.name or type(system).__name__
    latency: dict[str, float] = {"ingest": ingested.ingest_seconds}
    if ingested.ready_seconds is not None:
        latency["ready"] = ingested.ready_seconds
    own_answer = getattr(system, "answer", None)
    memories: tuple[Memory, ...] = ()
    carrier = None
    carried = details is not None and bool(question.meta.get("dump"))
    if carried and details is not None:
        carried = record_stored(ingested, question.conversation_id, timeout, details)
    if carried:
        conversation = ingested.conversation
        if conversation is not None and ingested.stored is not None:
            payload = (conversation, ingested.stored)
            carrier = replace(question, meta={**question.meta, STORED_META: payload})
    if not callable(own_answer):
        start = time.perf_counter()
        found = call_with_timeout(
            lambda: materialise(system.search(question, k)), timeout, "search()"
        )
        latency["search"] = time.perf_counter() - start
        memories = normalise_memories(found, system=name, question_id=question.id)
        returned = len(memories)
        truncated = returned > k and getattr(system, "ignores_top_k", False) is not True
        if truncated:
            memories = memories[:k]
        if details is not None:
            details["memories_returned"] = returned
            if truncated:
                details["truncated"] = True
        memories = tuple(_clean_memory(m) for m in memories)
        memories, context = context_for_answer(memories, budget)
        if details is not None:
            details.update(context)
        return Retrieval(memories, latency, carrier=carrier)
    start = time.perf_counter()
    text = call_with_timeout(lambda: own_answer(question), timeout, "answer()")
    latency["answer"] = time.perf_counter() - start
    answer = normalise_answer(text, system=name, question_id=question.id)
    if details is not None:
        details["memories_returned"] = 0
    prediction = Prediction(text=clean_text(answer), memories=(), answered_by="system")
    return Retrieval((), latency, prediction, carrier)


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


def clean_text(text: str) -> str:
    """Text a memory system or model produced, made encodable: a lone UTF-16 surrogate becomes
    its ``\\udxxx`` escape (reports are UTF-8 files)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _clean_memory(memory: Memory) -> Memory:
    cleaned = clean_text(memory.text)
    return memory if cleaned is memory.text else replace(memory, text=cleaned)


def decide_status(scores: Mapping[str, float | None], pass_metric: str, threshold: float) -> str:
    """CORRECT when the pass metric reaches the threshold; UNSCORED when it is missing or NaN."""
    value = scores.get(pass_metric)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return STATUS_UNSCORED
    return STATUS_CORRECT if value >= threshold else STATUS_WRONG


def clean_scores(scores: Mapping[str, Any]) -> dict[str, float | None]:
    return {key: score_float(value) for key, value in scores.items()}


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


#: ``score(question, prediction)``: the benchmark's metrics and any plugin's extra scores
Scorer = Callable[[Question, Prediction], Mapping[str, float | None]]
#: ``judge(question, prediction_text)``: every configured judge -> (scores, report details)
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


def llm_stage(run: QuestionRun, prepared: Prepared) -> Staged:
    """The LLM half: the answerer's call (unless answered already), then every judge. Touches no
    pytest state and no memory system but a thread-safe one whose search was left to it
    (``prepared.search``), so it may run on any thread (the pipeline's)."""
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
            return answer_pending(run, prepared, exc)
    judged = None
    if run.judge is not None:
        judged = run.judge(prepared.judge_question or prepared.question, prediction.text)
    return Staged(prediction, seconds, judged)


#: where a result waiting for its answer from the batch keeps the answer's cache keys
ANSWER_PENDING = "answer_batch"


def answer_pending(run: QuestionRun, prepared: Prepared, exc: BatchDeferred) -> Staged:
    """The stage of a question whose answer is queued for the batch (``--memeval-llm-batch``
    with ``--memeval-reanswer``): UNSCORED for now (its deciding metric is None), the memories
    it is answered from kept in the result (``plugin.batch`` answers and judges it at the run's
    end from them), the answer's cache keys under :data:`ANSWER_PENDING`."""
    pending = {"unscored": True, "label": exc.label, "batch_pending": list(exc.keys)}
    metric = run.judge_metric or run.pass_metric
    placeholder = Prediction(text="", memories=prepared.memories, answered_by=exc.label)
    return Staged(placeholder, None, ({metric: None}, {ANSWER_PENDING: pending}))


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
    if staged.judged is not None:
        judged, judge_details = staged.judged
        scores.update(clean_scores(judged))
        result.details.update(judge_details)
    result.scores = scores
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
