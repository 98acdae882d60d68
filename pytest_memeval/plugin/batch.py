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
from ..records import Question, QuestionResult
from ..run.question import clean_scores, decide

if TYPE_CHECKING:
    from ..llm.client import ProviderClient
    from ..run.runtime import LLMRuntime
    from ..run.state import RunState

__all__ = ["check_batch", "pending_keys", "settle_run", "start_batch"]


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


def start_batch(state: RunState, folder: Path) -> None:
    """On the controller once the run folder is known: where its judge calls are queued."""
    state.batch_dir = folder / BATCH_DIR
    if state.settings.llm.batch and state.llm is not None:
        state.llm.queue_judges(state.batch_dir, "main")


def start_worker(state: RunState, workerinput: dict[str, Any]) -> None:
    """On an xdist worker: queue in the run folder the controller chose."""
    where = workerinput.get("memeval_batch_dir")
    if where and state.settings.llm.batch and state.llm is not None:
        state.batch_dir = Path(where)
        state.llm.queue_judges(state.batch_dir, str(workerinput.get("workerid", "worker")))


def pending_keys(result: QuestionResult) -> list[str]:
    """The cache keys of ``result``'s judge calls still waiting for a batch."""
    keys: list[str] = []
    for value in result.details.values():
        if isinstance(value, dict) and isinstance(value.get("batch_pending"), list):
            keys += [str(k) for k in value["batch_pending"]]
    return keys


def _sync(client: ProviderClient) -> Callable[[QueuedRequest], Completion]:
    """The synchronous call of a queued request (cache, retries), for the batch's failures."""

    def retry(q: QueuedRequest) -> Completion:
        r = q.request
        return client.complete(
            r.messages,
            temperature=r.temperature,
            max_tokens=r.max_tokens,
            run_index=r.run_index,
            role="judge",
            json_mode=r.json_mode,
            max_tokens_field=r.max_tokens_field,
            reasoning_effort=r.reasoning_effort,
        )

    return retry


def _route(llm: LLMRuntime) -> Callable[[tuple[str, str, str]], Route | None]:
    def route(group: tuple[str, str, str]) -> Route | None:
        for spec in llm.judges:
            client = spec.client
            if (client.config.provider, client.config.model, client.config.base_url) != group:
                continue
            sdk = getattr(client.provider, "sdk", None)
            if sdk is None:
                return None
            return backend_for(client.config, sdk.get()), _sync(client)
        return None

    return route


def _account(llm: LLMRuntime) -> Callable[[QueuedRequest, Completion], None]:
    """Count each batch reply as a judge call of its model (tokens as the provider reported)."""

    def paid(q: QueuedRequest, completion: Completion) -> None:
        llm.accounting.record(
            "judge",
            f"{q.provider}:{q.model}",
            calls=1,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        )

    return paid


def settle_run(config: pytest.Config) -> list[str]:
    """At the controller's session end: send or pick up the run's batches, then judge every
    result still waiting for one again from the cache; the store gets the new rows. Returns the
    lines to print. The controller comes from the stash (``CONTROLLER_KEY``): this module does
    not import the controller's."""
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
    llm.queue_judges(None, "")  # from here on the judges send (retries and the rejudge)
    lines: list[str] = []
    policy = PollPolicy()
    writer = controller.config.pluginmanager.get_plugin("terminalreporter")

    def log(line: str) -> None:
        if writer is not None:
            writer.write_line(f"memeval: {redact(line)}")

    try:
        outcome = settle(folder, llm.cache, _route(llm), policy=policy, log=log, paid=_account(llm))
    except (JudgeError, OSError) as exc:
        return [f"batch: {redact(str(exc))}"]
    except Exception as exc:  # an SDK error while submitting or polling: the batch stays recorded
        return [
            f"batch: {type(exc).__name__}: {redact(str(exc))}; rerun with --memeval-resume to "
            "pick the batch up"
        ]
    lines += outcome.lines
    lines.append(
        f"batch: {len(outcome.submitted)} submitted, {len(outcome.resumed)} picked up, "
        f"{outcome.stored} replies stored, {outcome.retried} retried, "
        f"{len(outcome.failed)} failed"
    )
    questions: dict[tuple[str, str], Question] = {
        (bench, q.id): q for bench, qs in state.selected.items() for q in qs
    }
    from .questions import question_run

    runs = {}
    for result in waiting:
        keys = pending_keys(result)
        name = "/".join(result.key)
        failed = [outcome.failed[k] for k in keys if k in outcome.failed]
        question = questions.get((result.benchmark, result.question_id))
        if failed or question is None or result.prediction is None:
            reason = failed[0] if failed else "its question is not selected in this session"
            lines.append(f"batch: {name}: UNSCORED: {reason}")
            for value in result.details.values():
                if isinstance(value, dict) and value.get("batch_pending"):
                    value["error"] = reason
            continue
        if result.benchmark not in runs:
            runs[result.benchmark] = question_run(controller.config, state, result.benchmark)
        run = runs[result.benchmark]
        try:
            judged, details = llm.judge(result.benchmark, question, result.prediction)
        except JudgeError as exc:
            lines.append(f"batch: {name}: UNSCORED: {redact(str(exc))}")
            continue
        for key in list(result.details):
            value = result.details[key]
            if isinstance(value, dict) and value.get("batch_pending"):
                del result.details[key]
        result.scores.update(clean_scores(judged))
        result.details.update(details)
        result.details["batch_judged"] = True
        result.details.pop("pass_metric", None)
        decide(run, result, outcome="passed", require_metric=True)
        if controller.store is not None:
            controller.store.append(result)
    return lines
