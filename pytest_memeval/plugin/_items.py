"""Pytest glue: benchmark questions as pytest items.

Node ids: ``memeval/<benchmark>/<conversation>/<system>::<question_id>``: three virtual folders
(``pytest.Directory`` collectors, nothing on disk, in ``nodes.py``) and the question. The system is
a folder, not a ``[param]`` suffix: only pytest's own parametrization can give an item structured
parameters (pytest 9.2 parses ``[...]`` back into them for ``--lf``), and it has no public way to
parametrize items built by a plugin. Items are
``pytest.Function`` subclasses so fixtures (a conftest fixture as memory system, ``memeval_system``)
work natively; all memory-system work happens in ``setup`` (an exception there is a pytest *error*,
an infrastructure failure), the verdict in ``call`` (``--memeval-strict`` turns WRONG into a failure).

Beside it: ``nodes.py`` (the collectors), ``cases.py`` (hand-written ``memeval_case`` tests),
``questions.py`` (a benchmark's ``QuestionRun``), ``memsys.py`` (a question's memory system).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import MemevalError
from ..records import (
    STATUS_WRONG,
    Prediction,
    Question,
    QuestionResult,
    ResultKey,
)
from ..report import describe_result
from ..run import (
    Halves,
    IngestedSystem,
    Prepared,
    QuestionRun,
    RunState,
    SystemRef,
    SystemStopped,
    answer_stage,
    finish_question,
    judge_stage,
    llm_stage,
    prepare_question,
)
from ..systems import MissingReplayAnswer
from ._cases import case_conversation, case_flow, case_of
from ._memsys import (
    SystemNotFound,
    conversation_key,
    ingested_system,
    not_run_reason,
    obtain_system,
)
from ._questions import question_run, result_skeleton
from ._stash import RESULT_KEY, STATE_KEY

if TYPE_CHECKING:
    from ..run import Pipeline

__all__ = [
    "MemevalItem",
    "RunState",
    "SystemRef",
    "WrongAnswer",
    "item_nodeid",
    "path_component",
    "result_key",
]


#: memories shown per question in the reports (results keep all of them, up to the system's k)
STORED_MEMORIES = 10


class WrongAnswer(Exception):
    """Raised in ``call`` under --memeval-strict for a WRONG answer."""

    def __init__(self, result: QuestionResult) -> None:
        super().__init__(f"WRONG: {result.question_id}")
        self.result = result


def path_component(label: str) -> str:
    """A system label as one node-id path segment (no ``/``, ``\\`` or ``::``)."""
    safe = label.replace("::", "_").replace("/", "_").replace("\\", "_")
    return "_" if safe in ("", ".", "..") else safe


def item_nodeid(benchmark: str, question: Question, ref: SystemRef) -> str:
    """The node id pytest gives the built-in item of (benchmark, question, system)."""
    conv = question.conversation_id
    return f"memeval/{benchmark}/{conv}/{path_component(ref.label)}::{question.id}"


def _memeval_question(request: pytest.FixtureRequest) -> None:
    """The callable of every built-in item. The work happens in ``MemevalItem.setup`` (so a
    memory-system exception is a pytest *error*); asking for ``request`` gives that setup the
    item's public ``FixtureRequest`` (``item.funcargs["request"]``) for conftest systems."""


def _skip_not_run(system: str) -> None:
    # raised here, outside the item's hidden setup frame: every skip has this one location, so
    # pytest's summary folds them into one line
    pytest.skip(not_run_reason(system))


class MemevalItem(pytest.Function):
    """One benchmark question answered by one memory system."""

    def __init__(
        self,
        *,
        benchmark: str,
        question: Question,
        system: SystemRef,
        **kwargs: Any,
    ) -> None:
        super().__init__(callobj=_memeval_question, **kwargs)
        self.benchmark = benchmark
        self.question = question
        self.system = system

    @property
    def state(self) -> RunState:
        return self.config.stash[STATE_KEY]

    def setup(self) -> None:
        super().setup()
        __tracebackhide__ = True
        state = self.state
        run = question_run(self.config, state, self.benchmark)
        if self.system.base in state.missing_systems:
            _skip_not_run(self.system.base)
        pipeline = state.llm_pipeline()
        stop = state.repeated_errors().stopped(self.system.label)
        if stop is not None:  # failed the same way too often in a row: not run (issue 34.5)
            if pipeline is not None:
                pipeline.take(self.nodeid)  # staged before the stop: its slot is freed
            raise SystemStopped(stop)
        try:
            if pipeline is None:
                prepared = self._prepare(run, None)
                staged = llm_stage(run, prepared)
            else:
                if state.llm is not None:
                    state.llm.await_prewarm()
                if self.nodeid not in pipeline:
                    pipeline.submit(self.nodeid, self._prepare(run, None), run_stage(run))
                self._stage_ahead(run, pipeline)
                entry = pipeline.take(self.nodeid)
                assert entry is not None
                staged = entry.future.result()
                assert entry.prepared is not None  # a failed prepare raised just above
                prepared = entry.prepared
            result = finish_question(run, prepared, staged)
        except MissingReplayAnswer as exc:
            pytest.skip(str(exc))
        except SystemNotFound:
            state.missing_systems.add(self.system.base)
            raise
        self.config.hook.pytest_memeval_result(config=self.config, result=result)
        self.stash[RESULT_KEY] = result

    def _prepare(self, run: QuestionRun, ingested: IngestedSystem | None) -> Prepared:
        """This question's memory-system half, on the main thread: search with its system (the
        pool's ingested one; ``ingested`` when staged ahead), or the stored prediction/retrieval
        of --memeval-rejudge/--memeval-reanswer."""
        __tracebackhide__ = True
        state = self.state
        result = result_skeleton(self.benchmark, self.system, self.question, self.nodeid)
        if state.settings.run.rejudge:
            return Prepared(self.question, result, prediction=self._stored_prediction(result))
        if state.settings.run.reanswer:
            return self._reanswer_prepared(result)
        if ingested is None:
            request = self.funcargs["request"]
            assert isinstance(request, pytest.FixtureRequest)
            ingested = ingested_system(request, state, self.benchmark, self.question, self.system)
        return prepare_question(run, self.question, result, ingested=ingested)

    def _stage_ahead(self, run: QuestionRun, pipeline: Pipeline) -> None:
        """Fill the window with the next questions of this system: each is searched here, in
        order, and its LLM half submitted. A question whose search raises keeps the exception for
        its own setup.

        The window reaches into the next conversations of the benchmark, up to
        ``--memeval-ingest-ahead`` of them (the memory budget: each holds its systems ingested),
        whose systems are ingested here while the calls already sent are in flight
        (``SystemPool.get_ahead``: only a factory's fresh instance, never an object serving this
        conversation too), so the window stays full where conversations hold one question or a
        few. Under xdist the next conversations are the ones the scheduler has already sent this
        worker (``scheduler.worker_queue``; the scheduler sends as many items ahead as the window
        needs)."""
        state = self.state
        items = self.session.items
        if state.item_index is None:
            state.item_index = {item.nodeid: i for i, item in enumerate(items)}
        at = state.item_index.get(self.nodeid)
        if at is None:
            return
        conversation = (self.benchmark, self.question.conversation_id)
        own = not (state.settings.run.rejudge or state.settings.run.reanswer)
        ingested = None
        if own:
            ingested = state.pool.live.get((self.system.base, conversation_key(*conversation)))
            if ingested is None:
                return
        budget = state.settings.llm.ingest_ahead
        upcoming: Iterable[pytest.Item]
        if hasattr(self.config, "workerinput"):
            from ._scheduler import worker_queue

            queued = worker_queue(self.config)
            if queued is None:
                budget = 0  # the worker's next items are unknown: stay in this conversation
                upcoming = itertools.islice(items, at + 1, None)
            else:
                upcoming = (items[i] for i in queued if 0 <= i < len(items))
        else:
            upcoming = itertools.islice(items, at + 1, None)  # no copy of the list per item
        crossed = 0
        for other in upcoming:
            if len(pipeline) >= pipeline.depth:
                return
            if not isinstance(other, MemevalItem):
                if case_conversation(other) == conversation:
                    continue  # a hand-written case of this conversation
                return
            if (other.benchmark, other.question.conversation_id) != conversation:
                if crossed >= budget or other.benchmark != self.benchmark:
                    return
                crossed += 1
                conversation = (other.benchmark, other.question.conversation_id)
                ingested = None  # the next conversation's: ingested for its first question here
            if other.system != self.system or other.nodeid in pipeline:
                continue
            if own and ingested is None:
                ingested = self._ingest_ahead(other)
                if ingested is None:
                    return
            try:
                prepared = other._prepare(run, ingested)
            except Exception as exc:
                pipeline.fail(other.nodeid, exc)
                continue
            pipeline.submit(other.nodeid, prepared, run_stage(run))

    def _ingest_ahead(self, other: MemevalItem) -> IngestedSystem | None:
        """``other``'s conversation ingested before the run reaches it, or None when that is not
        safe or failed (its questions then meet the failure themselves, in their own setup)."""
        state = self.state
        request = self.funcargs["request"]
        assert isinstance(request, pytest.FixtureRequest)
        dataset = state.datasets[other.benchmark]
        conv_id = other.question.conversation_id
        try:
            return state.pool.get_ahead(
                other.system.base,
                lambda: dataset.conversation(conv_id),
                conversation_key(other.benchmark, conv_id),
                lambda: obtain_system(request, other.system),
            )
        except Exception:
            return None

    def _stored_prediction(self, result: QuestionResult) -> Prediction:
        state = self.state
        stored = state.stored_predictions().get(
            (self.benchmark, self.system.label, self.question.id)
        )
        if stored is None or stored.prediction is None:
            raise MemevalError(
                f"--memeval-rejudge: no stored prediction for {self.benchmark} / "
                f"{self.system.label} / {self.question.id} in run {state.rejudge_run}; run it "
                "once without --memeval-rejudge (same --memeval-cache-dir) to store it"
            )
        self._check_stored(stored, "--memeval-rejudge")
        result.latency = dict(stored.latency)
        result.details["rejudged"] = True
        result.details["rejudged_from"] = state.rejudge_run.name if state.rejudge_run else None
        return Prediction(
            text=stored.prediction,
            memories=tuple(stored.memories),
            answered_by=str(stored.details.get("answered_by", "")),
            details={k: v for k, v in stored.details.items() if k == "answer_prompt"},
        )

    def _check_stored(self, stored: QuestionResult, option: str) -> None:
        """A stored row is data from a run folder: it must be of this question's conversation
        (the question text and gold are always the loaded dataset's, the metrics re-computed)."""
        if stored.conversation_id != self.question.conversation_id:
            raise MemevalError(
                f"{option}: run {self.state.rejudge_run}: the stored row of {self.benchmark} / "
                f"{self.system.label} / {self.question.id} names conversation "
                f"{stored.conversation_id!r}, not the dataset's "
                f"{self.question.conversation_id!r}; the folder is edited or of another dataset: "
                "rerun without it"
            )

    def _reanswer_prepared(self, result: QuestionResult) -> Prepared:
        """--memeval-reanswer: the stored retrieval, to be answered again (no memory-system call;
        the answerer's call is the LLM stage's)."""
        from ..systems import memory_from_dict

        state = self.state
        stored = state.stored_predictions().get(
            (self.benchmark, self.system.label, self.question.id)
        )
        if stored is None:
            raise MemevalError(
                f"--memeval-reanswer: no stored retrieval for {self.benchmark} / "
                f"{self.system.label} / {self.question.id} in run {state.rejudge_run}; run it "
                "once without --memeval-reanswer (same --memeval-cache-dir) to store it"
            )
        self._check_stored(stored, "--memeval-reanswer")
        if stored.details.get("answered_by") == "system":
            raise MemevalError(
                f"--memeval-reanswer: {self.system.label} answered {self.question.id} with its "
                "own answer() in run "
                f"{state.rejudge_run.name if state.rejudge_run else '?'}, so no retrieval was "
                "stored to answer from; use --memeval-rejudge to judge its answers again"
            )
        memories = tuple(memory_from_dict(m.to_dict()) for m in stored.memories)
        from ..run import context_for_answer

        memories, context = context_for_answer(memories, state.settings.selection.context_budget)
        result.details.update(context)
        result.latency = {
            k: v for k, v in stored.latency.items() if k in ("ingest", "ready", "search")
        }
        result.details["reanswered_from"] = state.rejudge_run.name if state.rejudge_run else None
        result.details["memories_returned"] = stored.details.get("memories_returned", len(memories))
        return Prepared(self.question, result, memories)

    def runtest(self) -> None:
        result = self.stash.get(RESULT_KEY, None)
        settings = self.state.settings
        if settings.llm.estimate:
            return  # placeholder verdicts: nothing was judged, so nothing is WRONG
        if result is not None and result.status == STATUS_WRONG and settings.run.strict:
            raise WrongAnswer(result)

    def repr_failure(  # type: ignore[override]  # same signature as pytest.Function
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | Any:
        if isinstance(excinfo.value, WrongAnswer):
            return "\n".join(
                ["WRONG answer (--memeval-strict)", *describe_result(excinfo.value.result, 5)]
            )
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        q = self.question
        where = f"{self.benchmark}/{q.conversation_id}/{path_component(self.system.label)}"
        return self.path, None, f"{where}::{self.name}"


def run_stage(run: QuestionRun) -> Halves:
    """The LLM half of ``run``'s questions, for the pipeline's threads: the answer, then the
    verdicts, as two steps (the window sends waiting answers before waiting verdicts)."""

    return Halves(
        lambda prepared: answer_stage(run, prepared),
        lambda prepared, answered: judge_stage(run, prepared, answered),
    )


def result_key(item: pytest.Item) -> ResultKey | None:
    """The key of the result ``item`` records: (benchmark, system, flow, question id)."""
    if isinstance(item, MemevalItem):
        return ResultKey(item.benchmark, item.system.label, "", item.question.id)
    case = case_of(item)
    if case is None:
        return None
    return ResultKey(case.benchmark, case.system.label, case_flow(item), case.question.id)
