"""Pytest glue: the item hooks (reports, verdict words, teardown) and the ``memeval_case`` fixtures
of hand-written tests; the pytest11 module (``plugin/__init__.py``) re-exports them so pytest
finds them there. Moved out of ``__init__.py`` verbatim (issue 26)."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import MemevalError
from ..records import STATUS_CORRECT, STATUS_UNSCORED, STATUS_WRONG
from ..run import STOPPED_PROPERTY
from ._stash import RECORDER_KEY, RESULT_KEY, STATE_KEY

if TYPE_CHECKING:
    from ..records import QuestionResult
    from ._cases import MemevalCase
    from ._items import MemevalItem

__all__ = [
    "Recorder",
    "memeval_case",
    "memeval_record",
    "memeval_system",
    "pytest_generate_tests",
    "pytest_report_teststatus",
    "pytest_runtest_makereport",
    "pytest_runtest_teardown",
]


_STATUS_WORDS = {
    STATUS_CORRECT: ("correct", "C", "CORRECT"),
    STATUS_WRONG: ("wrong", "W", "WRONG"),
    STATUS_UNSCORED: ("unscored", "U", "UNSCORED"),
}
#: a question not run because its system failed the same way too often in a row (issue 34.5):
#: an error (letter, word, exit status, JUnit), counted apart in pytest's outcome line so that
#: pytest's ERRORS section and short summary do not repeat it once per question; the controller
#: prints one line per stopped system instead
STOPPED_WORDS = ("not run (repeated error)", "E", "ERROR")
#: --memeval-estimate: nothing was judged (the verdicts are of placeholder replies), so no item is
#: CORRECT or WRONG; pytest's outcome line then reads "N estimated"
ESTIMATED_WORDS = ("estimated", ".", "ESTIMATED")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "memeval_case" not in metafunc.fixturenames:
        return
    from ._cases import MemevalCase

    config = metafunc.config
    state = config.stash.get(STATE_KEY, None)
    cases: list[MemevalCase] = []
    if state is not None and state.settings.active:
        assert state.systems is not None  # resolved at session start
        for bench, questions in state.selected.items():
            for ref in state.systems:
                cases.extend(MemevalCase(bench, ref, q) for q in questions)
    metafunc.parametrize("memeval_case", cases, ids=[c.id for c in cases])


def _conversation_key(item: pytest.Item) -> tuple[str, str] | None:
    from ._cases import case_of
    from ._items import MemevalItem

    if isinstance(item, MemevalItem):
        return (item.benchmark, item.question.conversation_id)
    case = case_of(item)
    return (case.benchmark, case.question.conversation_id) if case is not None else None


class Recorder:
    """``memeval_record(metric, value)``; ``memeval_record.prediction(text)`` scores an answer with
    the benchmark's own metrics."""

    def __init__(self, item: pytest.Item, case: MemevalCase) -> None:
        self.item = item
        self.case = case
        self.scores: dict[str, float | None] = {}
        self.details: dict[str, Any] = {}
        self.text: str | None = None

    def __call__(self, metric: str, value: float | None) -> None:
        from ..run import clean_scores

        if not isinstance(metric, str) or not metric:
            raise TypeError("memeval_record(metric, value): metric must be a non-empty string")
        self.scores.update(clean_scores({metric: value}))

    def prediction(self, text: str) -> dict[str, float | None]:
        """Score ``text`` as this case's answer, exactly as a built-in item scores its prediction
        (the benchmark's metrics, plugins' extra scores, every configured judge)."""
        from ..records import Prediction
        from ..run import evaluate
        from ._questions import question_run

        config = self.item.config
        state = config.stash[STATE_KEY]
        self.text = text
        run = question_run(config, state, self.case.benchmark)
        scores, details = evaluate(run, self.case.question, Prediction(text=text))
        self.scores.update(scores)
        self.details.update(details)
        return scores


@pytest.fixture
def memeval_case(request: pytest.FixtureRequest) -> MemevalCase:
    """The benchmark question this test instance is about (parametrized over the selection)."""
    case: MemevalCase = request.param
    return case


@pytest.fixture
def memeval_system(request: pytest.FixtureRequest, memeval_case: MemevalCase) -> object:
    """The memory system with this case's conversation ingested (shared with built-in items)."""
    from ._memsys import ingested_system

    state = request.config.stash[STATE_KEY]
    case = memeval_case
    return ingested_system(request, state, case.benchmark, case.question, case.system).system


@pytest.fixture
def memeval_record(request: pytest.FixtureRequest, memeval_case: MemevalCase) -> Recorder:
    """Record a score for this case: ``memeval_record("my_metric", 0.7)``."""
    recorder = Recorder(request.node, memeval_case)
    request.node.stash[RECORDER_KEY] = recorder
    return recorder


def _error_line(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    text = excinfo.exconly().strip().splitlines()
    line = text[-1] if text else type(excinfo.value).__name__
    return line[:500]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    result = _result_for(item, call)
    entry = None
    if result is not None:
        from ..run import PROPERTY_NAME

        entry = (PROPERTY_NAME, result.to_dict())
        item.user_properties.append(entry)
    report = yield
    tracked = False
    if call.when == "setup" and STATE_KEY in item.config.stash:
        from ._items import MemevalItem

        if isinstance(item, MemevalItem):
            _track_repeats(item, call, report)
            tracked = True
    if not tracked and call.excinfo is not None and isinstance(call.excinfo.value, MemevalError):
        from ._cases import case_of
        from ._items import MemevalItem

        if isinstance(item, MemevalItem) or case_of(item) is not None:
            # the plugin's own errors (judge, dataset, adapter contract, timeout) say what to fix
            # in one line; their tracebacks would only show plugin internals
            report.longrepr = f"{type(call.excinfo.value).__name__}: {call.excinfo.value}"
    if entry is not None:
        # this phase's report holds the result (each report copies the list); the item keeps only
        # the flat properties, so later reports (teardown, what JUnit reads) do not carry the
        # whole result again, across xdist's wire and into the controller
        from ..run import flat_properties

        at = next(i for i, p in enumerate(item.user_properties) if p is entry)
        item.user_properties[at : at + 1] = flat_properties(entry[1])
    return report


def _track_repeats(
    item: MemevalItem, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """Errors that repeat are said once (issue 34.5), on the process that ran the item (an xdist
    worker: the report travels to the controller already short). The first failure of a system
    keeps its traceback; a later one with the same type and message is one line naming the first;
    a question whose system stopped (``run.repeats``) is one line and carries the stop."""
    from ..run import SystemStopped, error_line, signature

    tracker = item.state.repeated_errors()
    system = item.system.label
    excinfo = call.excinfo
    if excinfo is None:
        tracker.answered(system)
        return
    value = excinfo.value
    if isinstance(value, SystemStopped):
        report.longrepr = str(value)
        report.user_properties.append((STOPPED_PROPERTY, value.stop.to_dict()))
        return
    if excinfo.errisinstance(pytest.skip.Exception) or not isinstance(value, Exception):
        return
    type_name = type(value).__name__
    message = str(value)
    line = error_line(type_name, message)
    first = tracker.failed(
        system, item.nodeid, signature(type_name, message, item.question.id), line
    )
    if first is not None:
        report.longrepr = f"{line} (same error as {first})"
    elif isinstance(value, MemevalError):
        # the plugin's own errors (judge, dataset, adapter contract, timeout) say what to fix in
        # one line; their tracebacks would only show plugin internals
        report.longrepr = f"{type_name}: {value}"


def _result_for(item: pytest.Item, call: pytest.CallInfo[None]) -> QuestionResult | None:
    if STATE_KEY not in item.config.stash:
        return None  # idle: no benchmark question or case exists
    from ..run import decide
    from ._cases import case_flow, case_of
    from ._items import MemevalItem
    from ._memsys import not_run_reason
    from ._questions import question_run, result_skeleton

    if isinstance(item, MemevalItem):
        bench, ref, question, flow = item.benchmark, item.system, item.question, ""
    else:
        case = case_of(item)
        if case is None:
            return None
        bench, ref, question = case.benchmark, case.system, case.question
        flow = case_flow(item)
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        if (
            call.when == "setup"
            and isinstance(item, MemevalItem)
            and ref.base in item.state.missing_systems
        ):  # not run: counted as errors in the tables, one skip line in pytest's summary
            result = result_skeleton(bench, ref, question, item.nodeid, flow=flow)
            result.error = not_run_reason(ref.base)
            return result
        return None
    if call.when == "setup" and call.excinfo is not None:
        from ..run import SystemStopped

        result = result_skeleton(bench, ref, question, item.nodeid, flow=flow)
        stopped = isinstance(call.excinfo.value, SystemStopped)
        result.error = str(call.excinfo.value) if stopped else _error_line(call.excinfo)
        return result
    if call.when != "call":
        return None
    if isinstance(item, MemevalItem):
        return item.stash.get(RESULT_KEY, None)
    result = result_skeleton(bench, ref, question, item.nodeid, flow=flow)
    recorder = item.stash.get(RECORDER_KEY, None)
    if recorder is not None:
        result.scores = dict(recorder.scores)
        result.details.update(recorder.details)
        result.prediction = recorder.text
    run = question_run(item.config, item.config.stash[STATE_KEY], bench)
    if call.excinfo is None:
        outcome = "passed"
    elif call.excinfo.errisinstance(AssertionError):
        outcome = "failed"
    else:
        outcome = "error"
        result.error = _error_line(call.excinfo)
    return decide(run, result, outcome=outcome)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Drop ingested systems when the run moves on to another conversation."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None or not state.pool.live:
        return
    from ._memsys import conversation_key

    key = _conversation_key(nextitem) if nextitem is not None else None
    if nextitem is not None and key is None:
        return  # an unrelated test in between: keep what is live
    state.pool.release(keep_conversation=conversation_key(*key) if key is not None else None)


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    if report.when == "setup" and report.failed and STATE_KEY in config.stash:
        if any(name == STOPPED_PROPERTY for name, _ in report.user_properties):
            return STOPPED_WORDS
        return None
    if report.when != "call" or not report.passed or STATE_KEY not in config.stash:
        return None
    from ..run import PROPERTY_NAME

    estimate = config.stash[STATE_KEY].settings.llm.estimate

    for name, value in report.user_properties:
        status = None
        if name == PROPERTY_NAME and isinstance(value, dict):
            status = value.get("status")
        elif name == "memeval.status":
            status = value
        words = _STATUS_WORDS.get(str(status)) if status is not None else None
        if words is not None:
            return ESTIMATED_WORDS if estimate else words
    return None
