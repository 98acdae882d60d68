"""Pytest glue: benchmark questions as pytest items.

Node ids: ``memeval/<benchmark>/<conversation>/<system>::<question_id>``: three virtual folders
(``pytest.Directory`` collectors, nothing on disk) and the question. The system is a folder, not a
``[param]`` suffix: only pytest's own parametrization can give an item structured parameters (pytest
9.2 parses ``[...]`` back into them for ``--lf``), and it has no public way to parametrize items
built by a plugin. Items are
``pytest.Function`` subclasses so fixtures (a conftest fixture as memory system, ``memeval_system``)
work natively; all memory-system work happens in ``setup`` (an exception there is a pytest *error*,
an infrastructure failure), the verdict in ``call`` (``--memeval-strict`` turns WRONG into a failure).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import AdapterError, MemevalError
from ..records import (
    STATUS_WRONG,
    Prediction,
    Question,
    QuestionResult,
    ResultKey,
)
from ..report.terminal import describe_result
from ..run.question import (
    IngestedSystem,
    Prepared,
    QuestionRun,
    Staged,
    finish_question,
    llm_stage,
    new_result,
    prepare_question,
)
from ..run.state import RunState, SystemRef  # moved to run/ (issue 26); importable here too
from ..systems.builtin import MissingReplayAnswer
from .keys import RESULT_KEY, STATE_KEY

if TYPE_CHECKING:
    from ..run.pipeline import Pipeline

__all__ = [
    "BenchmarkNode",
    "ConversationNode",
    "MemevalCase",
    "MemevalItem",
    "RunState",
    "SystemNode",
    "SystemRef",
    "WrongAnswer",
]


#: memories shown per question in the reports (results keep all of them, up to the system's k)
STORED_MEMORIES = 10


class WrongAnswer(Exception):
    """Raised in ``call`` under --memeval-strict for a WRONG answer."""

    def __init__(self, result: QuestionResult) -> None:
        super().__init__(f"WRONG: {result.question_id}")
        self.result = result


class BenchmarkNode(pytest.Directory):
    """``memeval/<benchmark>``: not a folder on disk; its path only gives the node id its form.

    The plugin adds these nodes to the session's own collect report (``pytest_make_collect_report``),
    so pytest collects them like any directory: ``collected N items``, ``--collect-only``,
    ``pytest_itemcollected``, ``-k``/``-m``/``--deselect``/``--lf`` all see every question.
    """

    def __init__(self, *, benchmark: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        state = self.config.stash[STATE_KEY]
        questions = state.selected.get(self.benchmark, [])
        return [
            ConversationNode.from_parent(
                self,
                path=self.path / conv_id,
                benchmark=self.benchmark,
                conversation_id=conv_id,
                questions=conv_questions,
            )
            for conv_id, conv_questions in group_by_conversation(questions)
        ]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid

    @classmethod
    def for_benchmark(cls, session: pytest.Session, benchmark: str) -> BenchmarkNode:
        path = session.config.rootpath / "memeval" / benchmark
        node: BenchmarkNode = cls.from_parent(session, path=path, benchmark=benchmark)
        return node


class ConversationNode(pytest.Directory):
    """``memeval/<benchmark>/<conversation>``: the xdist scope unit (one worker per conversation);
    one child per memory system, in ``--memsys`` order."""

    def __init__(
        self,
        *,
        benchmark: str,
        conversation_id: str,
        questions: list[Question],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.conversation_id = conversation_id
        self.questions = questions

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        state = self.config.stash[STATE_KEY]
        assert state.systems is not None
        return [
            SystemNode.from_parent(
                self,
                path=self.path / path_component(ref.label),
                benchmark=self.benchmark,
                questions=self.questions,
                system=ref,
            )
            for ref in state.systems
        ]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid


def path_component(label: str) -> str:
    """A system label as one node-id path segment (no ``/``, ``\\`` or ``::``)."""
    safe = label.replace("::", "_").replace("/", "_").replace("\\", "_")
    return "_" if safe in ("", ".", "..") else safe


def item_nodeid(benchmark: str, question: Question, ref: SystemRef) -> str:
    """The node id pytest gives the built-in item of (benchmark, question, system)."""
    conv = question.conversation_id
    return f"memeval/{benchmark}/{conv}/{path_component(ref.label)}::{question.id}"


class SystemNode(pytest.Directory):
    """``memeval/<benchmark>/<conversation>/<system>``: one memory system's questions of one
    conversation, one item each (``...::<question_id>``)."""

    def __init__(
        self,
        *,
        benchmark: str,
        questions: list[Question],
        system: SystemRef,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.questions = questions
        self.system = system

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        start = time.perf_counter()
        items: list[pytest.Item | pytest.Collector] = []
        for q in self.questions:
            # `Function.from_parent` is untyped before pytest 8.1: called through Any
            make: Any = MemevalItem.from_parent
            item: MemevalItem = make(
                self, name=q.id, benchmark=self.benchmark, question=q, system=self.system
            )
            item.add_marker(getattr(pytest.mark, q.category))
            item.add_marker(pytest.mark.memeval)
            items.append(item)
        self.config.stash[STATE_KEY].collect_seconds += time.perf_counter() - start
        return items

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid


def _memeval_question(request: pytest.FixtureRequest) -> None:
    """The callable of every built-in item. The work happens in ``MemevalItem.setup`` (so a
    memory-system exception is a pytest *error*); asking for ``request`` gives that setup the
    item's public ``FixtureRequest`` (``item.funcargs["request"]``) for conftest systems."""


@dataclass(frozen=True)
class MemevalCase:
    """The parameter of a hand-written test asking for ``memeval_case``."""

    benchmark: str
    system: SystemRef
    question: Question

    @property
    def id(self) -> str:
        """``<benchmark>/<conversation>/<question>[<system>]``: carries the conversation so the
        xdist scheduler keeps a conversation's hand-written cases on one worker."""
        q = self.question
        return f"{self.benchmark}/{q.conversation_id}/{q.id}[{self.system.label}]"


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


#: what pytest's FixtureLookupError lists after "available fixtures:"
_AVAILABLE_FIXTURES = re.compile(r"available fixtures: ([^\n]*)")


class SystemNotFound(AdapterError):
    """A fixture-only ``--memsys`` name no fixture answers (its first question says so once)."""


def not_run_reason(system: str) -> str:
    """The skip reason of a missing system's other questions (one summary line for them all)."""
    return f"not run: memory system {system!r} was not found (its first question says why)"


def _skip_not_run(system: str) -> None:
    # raised here, outside the item's hidden setup frame: every skip has this one location, so
    # pytest's summary folds them into one line
    pytest.skip(not_run_reason(system))


def _visible_fixtures(exc: pytest.FixtureLookupError) -> list[str]:
    found = _AVAILABLE_FIXTURES.search(str(exc.formatrepr()))
    return [n.strip() for n in found.group(1).split(",")] if found else []


def obtain_system(request: pytest.FixtureRequest, ref: SystemRef) -> object:
    """The memory system (an instance or a factory) of ``ref``, asked for where it is first needed.

    A name that may be a fixture is looked up with the public ``getfixturevalue``; when no fixture
    of that name is visible, the system the other resolution rules found is used, and with none
    SystemNotFound says so with "did you mean" over the built-ins and every visible fixture."""
    if ref.fixture is not None:
        try:
            return request.getfixturevalue(ref.fixture)
        except pytest.FixtureLookupError as exc:
            if exc.argname != ref.fixture:
                raise  # the fixture exists but needs another one that does not
            if ref.factory is None:
                from ..systems.resolve import available_systems, unknown_system_message

                known = [*available_systems(), *_visible_fixtures(exc)]
                from .conftests import WHERE_FIXTURES

                raise SystemNotFound(
                    unknown_system_message(ref.fixture, known, available=ref.available)
                    + WHERE_FIXTURES
                ) from None
    assert ref.factory is not None
    return ref.factory


def conversation_key(benchmark: str, conversation_id: str) -> str:
    """How the system pool names a conversation: ``<benchmark>/<conversation id>``."""
    return f"{benchmark}/{conversation_id}"


def ingested_system(
    request: pytest.FixtureRequest,
    state: RunState,
    benchmark: str,
    question: Question,
    ref: SystemRef,
) -> IngestedSystem:
    """System ``ref`` with the question's conversation ingested: one per conversation and system
    in the process, shared by the built-in items and hand-written ``memeval_system`` tests."""
    dataset = state.datasets[benchmark]
    conv_id = question.conversation_id
    return state.pool.get(
        ref.base,
        lambda: dataset.conversation(conv_id),
        conversation_key(benchmark, conv_id),
        lambda: obtain_system(request, ref),
    )


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
        try:
            if pipeline is None:
                prepared = self._prepare(run, None)
                staged = llm_stage(run, prepared)
            else:
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

        The window may reach into the next conversation of the benchmark (one conversation
        ahead), whose system is then ingested here while this conversation's calls are in flight
        (``SystemPool.get_ahead``: only a factory's fresh instance, never an object serving this
        conversation too), so the window does not run dry at every conversation's start. Not
        under xdist: a worker does not know which conversation the controller sends it next."""
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
        crossed = hasattr(self.config, "workerinput")  # a worker: never cross
        for other in itertools.islice(items, at + 1, None):  # no copy of the item list per item
            if len(pipeline) >= pipeline.window:
                return
            if not isinstance(other, MemevalItem):
                if case_conversation(other) == conversation:
                    continue  # a hand-written case of this conversation
                return
            if (other.benchmark, other.question.conversation_id) != conversation:
                if crossed or other.benchmark != self.benchmark:
                    return
                crossed = True
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
        from ..systems.wire import memory_from_dict

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
        from ..run.budget import context_for_answer

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
        if result is not None and result.status == STATUS_WRONG and self.state.settings.run.strict:
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


def run_stage(run: QuestionRun) -> Callable[[Prepared], Staged]:
    """The LLM half of ``run``'s questions, for the pipeline's threads."""

    def stage(prepared: Prepared) -> Staged:
        return llm_stage(run, prepared)

    return stage


def case_conversation(item: pytest.Item) -> tuple[str, str] | None:
    case = case_of(item)
    return (case.benchmark, case.question.conversation_id) if case is not None else None


def group_by_conversation(questions: list[Question]) -> Iterator[tuple[str, list[Question]]]:
    groups: dict[str, list[Question]] = {}
    for q in questions:
        groups.setdefault(q.conversation_id, []).append(q)
    yield from groups.items()


def result_key(item: pytest.Item) -> ResultKey | None:
    """The key of the result ``item`` records: (benchmark, system, flow, question id)."""
    if isinstance(item, MemevalItem):
        return ResultKey(item.benchmark, item.system.label, "", item.question.id)
    case = case_of(item)
    if case is None:
        return None
    return ResultKey(case.benchmark, case.system.label, case_flow(item), case.question.id)


def case_flow(item: pytest.Item) -> str:
    """A hand-written test's flow name: its function name without parameters."""
    return str(getattr(item, "originalname", None) or item.name.partition("[")[0])


def case_of(item: pytest.Item) -> MemevalCase | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    case = callspec.params.get("memeval_case")
    return case if isinstance(case, MemevalCase) else None
