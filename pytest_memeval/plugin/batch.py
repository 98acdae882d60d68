"""``--memeval-llm-batch`` glue (docs/batch.md): queue the judge calls of every process in the run
folder, and at the controller's session end send them as batches, store the replies in the LLM
cache and judge the stored predictions again from it (the way ``--memeval-rejudge`` does)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import JudgeError
from ..llm.base import Completion
from ..llm.batch import BATCH_DIR, PollPolicy, QueuedRequest, Route, backend_for, settle
from ..llm.redact import redact
from ..records import Prediction, Question, QuestionResult
from ..run.question import (
    ANSWER_PENDING,
    Prepared,
    QuestionRun,
    finish_question,
    llm_stage,
)

if TYPE_CHECKING:
    from ..llm.client import ProviderClient
    from ..run.runtime import LLMRuntime
    from ..run.state import RunState

__all__ = ["batch_roles", "check_batch", "pending_keys", "settle_run", "start_batch"]


def check_batch(state: RunState) -> None:
    """Refuse combinations where batching cannot work, before anything is paid."""
    llm = state.settings.llm
    if not llm.batch:
        return
    if llm.no_cache:
        raise pytest.UsageError(
            "--memeval-llm-batch stores the batch's replies in the LLM cache: drop "
            "--memeval-no-cache"
        )
    for spec in llm.judges:
        if not spec.startswith(("openai:", "anthropic:")):
            raise pytest.UsageError(
                f"--memeval-llm-batch: judge {spec!r} has no batch API (openai: and anthropic: "
                "do); drop --memeval-llm-batch or judge with one of those"
            )
    answerer = llm.answerer
    if state.settings.run.reanswer and not answerer.startswith(("openai:", "anthropic:", "extr")):
        raise pytest.UsageError(
            f"--memeval-llm-batch with --memeval-reanswer: answerer {answerer!r} has no batch API "
            "(openai: and anthropic: do); drop --memeval-llm-batch or answer with one of those"
        )


def start_batch(state: RunState, folder: Path) -> None:
    """On the controller once the run folder is known: where its judge calls are queued."""
    state.batch_dir = folder / BATCH_DIR
    if state.settings.llm.batch and state.llm is not None:
        state.llm.queue_judges(state.batch_dir, "main", answers=_reanswers(state))


def start_worker(state: RunState, workerinput: dict[str, Any]) -> None:
    """On an xdist worker: queue in the run folder the controller chose."""
    where = workerinput.get("memeval_batch_dir")
    if where and state.settings.llm.batch and state.llm is not None:
        state.batch_dir = Path(where)
        name = str(workerinput.get("workerid", "worker"))
        state.llm.queue_judges(state.batch_dir, name, answers=_reanswers(state))


def batch_roles(state: RunState) -> tuple[str, ...]:
    """The roles whose calls go through the batch APIs (priced at the batch discount)."""
    if not state.settings.llm.batch:
        return ()
    return ("answerer", "judge") if _reanswers(state) else ("judge",)


def _reanswers(state: RunState) -> bool:
    """The answers go through the batch too: ``--memeval-reanswer`` (a first run's answers are
    sent at once: nothing to answer from is stored yet, and the search runs meanwhile)."""
    return state.settings.run.reanswer is not None


def pending_keys(result: QuestionResult) -> list[str]:
    """The cache keys of ``result``'s judge calls still waiting for a batch."""
    keys: list[str] = []
    for value in result.details.values():
        if isinstance(value, dict) and isinstance(value.get("batch_pending"), list):
            keys += [str(k) for k in value["batch_pending"]]
    return keys


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


#: rounds of batches at most: a re-answer's answers, then the judge calls on them (a judge whose
#: calls depend on each other's replies may need more; after the last round what is still
#: missing is sent synchronously)
MAX_ROUNDS = 4


def settle_run(config: pytest.Config) -> list[str]:
    """At the controller's session end: send or pick up the run's batches, then answer and judge
    every result still waiting for one again from the cache (what misses it is queued for the
    next round: a re-answer's judge calls wait for its answers); the store gets the new rows.
    Returns the lines to print. The controller comes from the stash (``CONTROLLER_KEY``): this
    module does not import the controller's."""
    from .keys import CONTROLLER_KEY

    controller = config.stash[CONTROLLER_KEY]
    state = controller.state
    llm = state.llm
    folder = state.batch_dir
    if llm is None or folder is None or not folder.is_dir() or llm.cache is None:
        return []
    waiting = [r for r in controller.results.values() if pending_keys(r)]
    queued = any(folder.glob("requests-*.jsonl"))
    if not waiting and not queued:
        return []
    # from here on the controller queues (a re-answer's judge calls; answers missing again)
    llm.queue_judges(folder, "settle", answers=True)
    lines: list[str] = []
    writer = controller.config.pluginmanager.get_plugin("terminalreporter")

    def log(line: str) -> None:
        if writer is not None:
            writer.write_line(f"memeval: {redact(line)}")

    questions: dict[tuple[str, str], Question] = {
        (bench, q.id): q for bench, qs in state.selected.items() for q in qs
    }
    runs: dict[str, QuestionRun] = {}
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
            still = _finish_waiting(controller, state, waiting, questions, runs, failed, lines)
            if not still:
                break
            waiting = still
    finally:
        llm.queue_judges(None, "")
    return lines


def _finish_waiting(
    controller: Any,
    state: RunState,
    waiting: list[QuestionResult],
    questions: dict[tuple[str, str], Question],
    runs: dict[str, QuestionRun],
    failed: dict[str, str],
    lines: list[str],
) -> list[QuestionResult]:
    """Answer (when its answer was queued) and judge each waiting result again from the cache;
    store those done, report those whose requests failed; the results whose calls were queued
    again (for the next round)."""
    from .questions import question_run

    still: list[QuestionResult] = []
    for result in waiting:
        keys = pending_keys(result)
        name = "/".join(result.key)
        reasons = [failed[k] for k in keys if k in failed]
        question = questions.get((result.benchmark, result.question_id))
        if reasons or question is None or result.prediction is None:
            reason = reasons[0] if reasons else "its question is not selected in this session"
            lines.append(f"batch: {name}: UNSCORED: {reason}")
            for value in result.details.values():
                if isinstance(value, dict) and value.get("batch_pending"):
                    value["error"] = reason
            continue
        if result.benchmark not in runs:
            runs[result.benchmark] = question_run(controller.config, state, result.benchmark)
        run = runs[result.benchmark]
        answer = result.details.get(ANSWER_PENDING)
        for key in list(result.details):
            value = result.details[key]
            if isinstance(value, dict) and value.get("batch_pending"):
                del result.details[key]
        result.details.pop("pass_metric", None)
        prepared = _prepared(question, result, answered=not answer)
        try:
            staged = llm_stage(run, prepared)
        except JudgeError as exc:
            lines.append(f"batch: {name}: UNSCORED: {redact(str(exc))}")
            continue
        finish_question(run, prepared, staged)
        if pending_keys(result):  # queued again: the next round's batch
            still.append(result)
            continue
        result.details["batch_judged"] = True
        if controller.store is not None:
            controller.store.append(result)
    return still


def _prepared(question: Question, result: QuestionResult, *, answered: bool) -> Prepared:
    """A waiting result as the LLM stage takes it: its prediction (judged again), or, when its
    answer was queued, the memories it is answered from (kept in the result, as the answerer got
    them)."""
    from ..systems.wire import memory_from_dict

    memories = tuple(memory_from_dict(m.to_dict()) for m in result.memories)
    if not answered:
        return Prepared(question, result, memories)
    prediction = Prediction(
        text=result.prediction or "",
        memories=memories,
        answered_by=str(result.details.get("answered_by", "")),
    )
    return Prepared(question, result, memories, prediction)
