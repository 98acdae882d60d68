"""``--memeval-llm-batch`` at run level, pytest-free (docs/batch.md): which runs can batch, where
each process queues its calls, and at the controller's session end the rounds that send the
batches (``llm.batch.settle``) and answer and judge again, from the cache, every result still
waiting for one (the way ``--memeval-rejudge`` does). The pytest glue only wires this to the hooks
and the terminal (``plugin/_controller.py``; the usage check and a worker's queue at set-up,
``run/_start.py``).

A waiting result lists its queued calls in ``QuestionResult.pending`` (a judge's verdict or a
re-answer's answer, each a :class:`~pytest_memeval.records.Pending`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import JudgeError
from ..llm import (
    BATCH_DIR,
    BATCH_PROVIDERS,
    Completion,
    PollPolicy,
    QueuedRequest,
    Route,
    backend_for,
    has_batch_api,
    redact,
    settle,
)
from ..records import PENDING_ANSWER, Prediction, Question, QuestionResult
from ._question import Prepared, QuestionRun, finish_question, llm_stage

if TYPE_CHECKING:
    from ..llm import ProviderClient
    from ._runtime import LLMRuntime
    from ._settings import Settings
    from ._state import RunState

__all__ = [
    "MAX_ROUNDS",
    "batch_problem",
    "batch_roles",
    "finish_waiting",
    "pending_keys",
    "settle_run",
    "start_batch",
    "start_worker",
]

#: rounds of batches at most: a re-answer's answers, then the judge calls on them (a judge whose
#: calls depend on each other's replies may need more; after the last round what is still
#: missing is sent synchronously)
MAX_ROUNDS = 4


def batch_problem(settings: Settings) -> str | None:
    """Why batching cannot work with these settings (one line naming the fix), checked before
    anything is paid; None when it can (or ``--memeval-llm-batch`` is off)."""
    llm = settings.llm
    if not llm.batch:
        return None
    if llm.no_cache:
        return (
            "--memeval-llm-batch stores the batch's replies in the LLM cache: drop "
            "--memeval-no-cache"
        )
    which = " and ".join(f"{p}:" for p in BATCH_PROVIDERS)
    for spec in llm.judges:
        if not has_batch_api(spec):
            return (
                f"--memeval-llm-batch: judge {spec!r} has no batch API ({which} "
                "do); drop --memeval-llm-batch or judge with one of those"
            )
    answerer = llm.answerer
    if settings.run.reanswer and not (has_batch_api(answerer) or answerer.startswith("extr")):
        return (
            f"--memeval-llm-batch with --memeval-reanswer: answerer {answerer!r} has no batch API "
            f"({which} do); drop --memeval-llm-batch or answer with one of those"
        )
    return None


def _reanswers(settings: Settings) -> bool:
    """The answers go through the batch too: ``--memeval-reanswer`` (a first run's answers are
    sent at once: nothing to answer from is stored yet, and the search runs meanwhile)."""
    return settings.run.reanswer is not None


def batch_roles(settings: Settings) -> tuple[str, ...]:
    """The roles whose calls go through the batch APIs (priced at the batch discount)."""
    if not settings.llm.batch:
        return ()
    return ("answerer", "judge") if _reanswers(settings) else ("judge",)


def start_batch(state: RunState, folder: Path) -> None:
    """On the controller once the run folder is known: where its judge calls are queued."""
    state.batch_dir = folder / BATCH_DIR
    if state.settings.llm.batch and state.llm is not None:
        state.llm.queue_judges(state.batch_dir, "main", answers=_reanswers(state.settings))


def start_worker(state: RunState, where: str | None, name: str) -> None:
    """On an xdist worker: queue in the run folder the controller chose (``where``), in the file
    of worker ``name``."""
    if where and state.settings.llm.batch and state.llm is not None:
        state.batch_dir = Path(where)
        state.llm.queue_judges(state.batch_dir, name, answers=_reanswers(state.settings))


def pending_keys(result: QuestionResult) -> list[str]:
    """The cache keys of ``result``'s calls still waiting for a batch."""
    return [k for pending in result.pending for k in pending.keys]


def _sync(client: ProviderClient) -> Callable[[QueuedRequest], Completion]:
    """The synchronous call of a queued request (cache, retries), for the batch's failures: sent
    at once, never queued again (the client's queue is set aside for the call; the controller
    settles on one thread)."""

    def retry(q: QueuedRequest) -> Completion:
        r = q.request
        queue, client.batch = client.batch, None
        try:
            return client.complete(
                r.messages,
                temperature=r.temperature,
                max_tokens=r.max_tokens,
                run_index=r.run_index,
                role=q.role,
                json_mode=r.json_mode,
                max_tokens_field=r.max_tokens_field,
                reasoning_effort=r.reasoning_effort,
            )
        finally:
            client.batch = queue

    return retry


def _clients(llm: LLMRuntime) -> list[ProviderClient]:
    clients = [spec.client for spec in llm.judges]
    if llm.answerer_client is not None:
        clients.append(llm.answerer_client)
    return clients


def _route(llm: LLMRuntime) -> Callable[[tuple[str, str, str]], Route | None]:
    def route(group: tuple[str, str, str]) -> Route | None:
        for client in _clients(llm):
            if (client.config.provider, client.config.model, client.config.base_url) != group:
                continue
            sdk = getattr(client.provider, "sdk", None)
            if sdk is None:
                return None
            return backend_for(client.config, sdk.get()), _sync(client)
        return None

    return route


def _account(llm: LLMRuntime) -> Callable[[QueuedRequest, Completion], None]:
    """Count each batch reply as a call of its role and model (tokens as the provider reported,
    priced at the batch discount)."""

    def paid(q: QueuedRequest, completion: Completion) -> None:
        llm.accounting.record(
            q.role,
            f"{q.provider}:{q.model}",
            calls=1,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            batch=True,  # priced at the batch discount
        )

    return paid


def settle_run(
    state: RunState,
    results: Iterable[QuestionResult],
    question_run: Callable[[str], QuestionRun],
    *,
    store: Callable[[QuestionResult], None] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> list[str]:
    """At the controller's session end: send or pick up the run's batches, then answer and judge
    every result of ``results`` still waiting for one again from the cache (what misses it is
    queued for the next round: a re-answer's judge calls wait for its answers); ``store`` gets
    each result done. ``question_run`` makes what a question of a benchmark needs; ``log`` is
    told of each batch's progress. Returns the lines to print."""
    llm = state.llm
    folder = state.batch_dir
    if llm is None or folder is None or not folder.is_dir() or llm.cache is None:
        return []
    waiting = [r for r in results if r.pending]
    queued = any(folder.glob("requests-*.jsonl"))
    if not waiting and not queued:
        return []
    # from here on the controller queues (a re-answer's judge calls; answers missing again)
    llm.queue_judges(folder, "settle", answers=True)
    lines: list[str] = []
    questions: dict[tuple[str, str], Question] = {
        (bench, q.id): q for bench, qs in state.selected.items() for q in qs
    }
    runs: dict[str, QuestionRun] = {}

    def run_of(bench: str) -> QuestionRun:
        if bench not in runs:
            runs[bench] = question_run(bench)
        return runs[bench]

    failed: dict[str, str] = {}
    try:
        for round_number in range(1, MAX_ROUNDS + 1):
            if round_number == MAX_ROUNDS:  # the last round sends what is still missing
                llm.queue_judges(None, "")
            try:
                outcome = settle(
                    folder,
                    llm.cache,
                    _route(llm),
                    policy=PollPolicy(deadline=state.settings.llm.batch_wait),
                    log=log,
                    paid=_account(llm),
                    exclude=failed,
                )
            except (JudgeError, OSError) as exc:
                return [*lines, f"batch: {redact(str(exc))}"]
            except Exception as exc:  # an SDK error while submitting or polling: kept recorded
                return [
                    *lines,
                    f"batch: {type(exc).__name__}: {redact(str(exc))}; rerun with "
                    "--memeval-resume to pick the batch up",
                ]
            failed.update(outcome.failed)
            lines += outcome.lines
            if round_number == 1 or outcome.submitted or outcome.resumed or outcome.failed:
                lines.append(f"batch: {outcome.counts()}")
            still, done = finish_waiting(waiting, questions, run_of, failed, store=store)
            lines += done
            if not still:
                break
            waiting = still
    finally:
        llm.queue_judges(None, "")
    return lines


def finish_waiting(
    waiting: Iterable[QuestionResult],
    questions: dict[tuple[str, str], Question],
    question_run: Callable[[str], QuestionRun],
    failed: dict[str, str],
    *,
    store: Callable[[QuestionResult], None] | None = None,
) -> tuple[list[QuestionResult], list[str]]:
    """Answer (when its answer was queued) and judge each waiting result again (its judge and
    answerer calls are served from the cache the batch filled); ``store`` gets those done, a
    result whose requests failed (cache key -> reason in ``failed``) or whose question is not in
    ``questions`` stays UNSCORED with the reason in its markers. Returns the results whose calls
    were queued again (for the next round) and the lines to print."""
    still: list[QuestionResult] = []
    lines: list[str] = []
    for result in waiting:
        name = "/".join(result.key)
        reasons = [failed[k] for k in pending_keys(result) if k in failed]
        question = questions.get((result.benchmark, result.question_id))
        if reasons or question is None or result.prediction is None:
            reason = reasons[0] if reasons else "its question is not selected in this session"
            lines.append(f"batch: {name}: UNSCORED: {reason}")
            result.pending = tuple(replace(p, error=reason) for p in result.pending)
            continue
        run = question_run(result.benchmark)
        answered = all(p.what != PENDING_ANSWER for p in result.pending)
        result.pending = ()
        result.details.pop("pass_metric", None)
        prepared = _prepared(question, result, answered=answered)
        try:
            staged = llm_stage(run, prepared)
        except JudgeError as exc:
            lines.append(f"batch: {name}: UNSCORED: {redact(str(exc))}")
            continue
        finish_question(run, prepared, staged)
        if result.pending:  # queued again: the next round's batch
            still.append(result)
            continue
        result.details["batch_judged"] = True
        if store is not None:
            store(result)
    return still, lines


def _prepared(question: Question, result: QuestionResult, *, answered: bool) -> Prepared:
    """A waiting result as the LLM stage takes it: its prediction (judged again), or, when its
    answer was queued, the memories it is answered from (kept in the result, as the answerer got
    them)."""
    from ..systems import memory_from_dict

    memories = tuple(memory_from_dict(m.to_dict()) for m in result.memories)
    if not answered:
        return Prepared(question, result, memories)
    prediction = Prediction(
        text=result.prediction or "",
        memories=memories,
        answered_by=str(result.details.get("answered_by", "")),
    )
    return Prepared(question, result, memories, prediction)
