"""Pytest glue on the controller (or the single process without xdist): gathers results from
``report.user_properties``, aggregates, renders the terminal summary and writes reports.

Workers never aggregate: their results travel inside the test reports, which xdist re-fires on the
controller through ``pytest_runtest_logreport``, so the numbers are the same with and without ``-n``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import MemevalError
from ..records import QuestionResult, ResultKey
from ._stash import STATE_KEY

if TYPE_CHECKING:  # imported where used: a pytest run without --memeval never loads them
    from ..report import Summary
    from ..run import Estimate, RunState, RunStore, Stop

from ..run import (
    PROPERTY_NAME,
    STOPPED_PROPERTY,
    flat_properties,
    merge_outputs,
    session_outputs,
    session_record,
)
from ._terminal import write_terminal_summary

__all__ = ["Controller"]


class Controller:
    """The session's results and what is built from them; the summary (``run/_session.py``) and the
    terminal lines (``run/_session_lines.py``) are pytest-free functions that read it
    (``SummarySource``, ``TerminalSource``)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: keyed by (benchmark, system, flow, question id), never by node id
        self.results: dict[ResultKey, QuestionResult] = {}
        #: results that arrived for a key already filled in this session (kept: the later one)
        self.duplicates: list[ResultKey] = []
        #: items that produced no result of their own: {"nodeid", "reason", "crashed"}
        self.lost: list[dict[str, Any]] = []
        self._by_nodeid: dict[str, tuple[str, Any, Any]] | None = None
        self.worker_outputs: list[dict[str, Any]] = []
        self.summary: Summary | None = None
        self.started = time.time()
        self.store: RunStore | None = None
        #: (path, one line) per report that could not be written at session end
        self.report_errors: list[tuple[Path, str]] = []
        #: stored rows (merged or resumed) whose numbers differed from the re-computed ones
        self.rescored: list[str] = []
        #: --memeval-llm-batch: what sending the batches did (run.batch.settle_run)
        self.batch_lines: list[str] = []
        #: --memeval-cache-import-verify: what re-asking the judge found (None: not asked)
        self.import_verify: dict[str, Any] | None = None
        #: run folders deleted by --memeval-keep-runs at session end
        self.pruned: list[Path] = []
        #: --memeval-estimate: what the run would send (set at session end)
        self.estimate: Estimate | None = None
        #: how the session ended (``summary.session_record``), for provenance ``session``
        self.session_end: dict[str, Any] | None = None
        #: systems stopped after repeated identical errors (one per process that stopped it)
        #: -> how many of their questions were not run
        self.stops: dict[Stop, int] = {}

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Open the results store (or the run being resumed) once the data loaded and before any
        xdist worker starts (xdist starts them in a trylast implementation)."""
        from ..run import metric_name_problem, open_run
        from ._questions import question_run

        state = self.state
        settings = state.settings
        if not settings.active:
            return
        scorers = self.config.pluginmanager.hook.pytest_memeval_question_scores.get_hookimpls()
        problem = metric_name_problem(state, extra_scores=len(scorers) > 1)
        if problem is not None:
            raise pytest.UsageError(problem)
        try:
            opened = open_run(state, lambda bench: question_run(self.config, state, bench))
            self.store = opened.store
            if opened.resumed is not None:
                self.rescored += opened.resumed.rescored
                self.results.update(opened.resumed.results)
            if settings.run.merge:
                scale = self.config.pluginmanager.get_plugin("memeval-scale")
                assert scale is not None  # registered with --memeval-merge
                scale.merge_into()
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
        except OSError as exc:
            raise pytest.UsageError(
                f"--memeval-cache-dir={settings.cache_dir}: cannot write the results store ({exc})"
            ) from None

    # ---- gathering ---------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take the result out of the report and leave flat ``memeval.<metric>`` properties in its
        place (what --junitxml writes as <property> elements and pytest-html shows)."""
        props: list[tuple[str, object]] = []
        carried = False
        for name, value in report.user_properties:
            if name == PROPERTY_NAME and isinstance(value, dict):
                carried = True
                self._add(QuestionResult.from_dict(value))
                props.extend(flat_properties(value))
            elif name == STOPPED_PROPERTY and isinstance(value, dict):
                from ..run import Stop

                stop = Stop.from_dict(value)
                self.stops[stop] = self.stops.get(stop, 0) + 1
                props.append((name, stop.first))  # what JUnit shows: the first failure
            else:
                props.append((name, value))
        report.user_properties = props
        if not carried and report.failed and report.when not in ("setup", "call", "teardown"):
            # pytest-xdist's report for the item a dead worker was running (when="???")
            self._lost(report.nodeid, str(report.longrepr), crashed=True)

    def _add(self, result: QuestionResult) -> None:
        if result.key in self.results and result.key not in self.state.resume_ids:
            self.duplicates.append(result.key)
        self.results[result.key] = result
        if self.store is not None and not self.state.settings.llm.estimate:
            self.store.append(result)

    def _lost(self, nodeid: str, reason: str, *, crashed: bool = False) -> None:
        """Record a question that produced no result of its own (its worker died, or the run
        stopped first) as an ERROR saying why, so tables and the JSON count it."""
        from ._questions import result_skeleton

        found = self.items_by_nodeid().get(nodeid)
        if found is None and not crashed:
            return  # another test the stopped run did not reach: pytest's own summary says so
        self.lost.append({"nodeid": nodeid, "reason": reason, "crashed": crashed})
        if found is None:
            return  # not a built-in item (a hand-written test): listed in `lost` only
        benchmark, question, ref = found
        result = result_skeleton(benchmark, ref, question, nodeid)
        if result.key in self.results:
            return
        if crashed:
            reason += (
                " (the process died: os._exit, a segfault or the OOM killer, in the memory "
                "system or a library it uses); not run again; the rest of its conversation ran "
                "on a new worker"
            )
        result.error = reason
        self._add(result)

    def items_by_nodeid(self) -> dict[str, tuple[str, Any, Any]]:
        """Node id -> (benchmark, question, system) of every built-in item of this run, for the
        reports xdist makes about items (a crash) that carry no result of their own."""
        if self._by_nodeid is None:
            from ._items import item_nodeid

            state = self.state
            self._by_nodeid = {
                item_nodeid(bench, q, ref): (bench, q, ref)
                for bench, questions in state.selected.items()
                for q in questions
                for ref in state.systems or ()
            }
        return self._by_nodeid

    def _record_unfinished(self) -> None:
        """What the xdist scheduler gave up, or never ran because the run stopped."""
        from ._stash import SCHEDULER_KEY

        scheduler = self.config.stash.get(SCHEDULER_KEY, None)
        if scheduler is None:
            return
        for nodeid, reason in scheduler.dropped:
            self._lost(nodeid, reason)
        for nodeid in scheduler.unfinished():
            self._lost(nodeid, "not run: the run stopped before this question")

    def add_worker_output(self, data: dict[str, Any]) -> None:
        self.worker_outputs.append(data)

    @property
    def state(self) -> RunState:
        return self.config.stash[STATE_KEY]

    def merged(self) -> dict[str, Any]:
        # the calibration's and the batch's judge calls were made here, on the controller
        called = self.calibration is not None or bool(self.batch_lines)
        return merge_outputs(session_outputs(self.state, self.worker_outputs, called))

    @property
    def rootpath(self) -> Path:
        return self.config.rootpath

    @property
    def pytest_version(self) -> str:
        return pytest.__version__

    @property
    def calibration(self) -> dict[str, Any] | None:
        from ._calibration_hooks import calibration_block

        return calibration_block(self.config)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.state.settings.llm.estimate and self.state.settings.active:
            self._finish_estimate(session)
            return
        self._record_unfinished()
        self.batch_lines = self._settle_batches()
        self._prune_runs()
        if not self.results and self.calibration is None:
            return
        from ..run import finish_summary, write_run_files

        status = session.exitstatus
        try:
            name: str | None = pytest.ExitCode(status).name
        except ValueError:
            name = None
        self.session_end = session_record(
            status,
            name,
            session.shouldfail or session.shouldstop,
            session.config.option,
            self.state.settings.selection.shard,
        )
        summary, failed = finish_summary(
            self,
            lambda s: self.config.hook.pytest_memeval_modify_summary(config=self.config, summary=s),
        )
        self.summary = summary
        self.report_errors = write_run_files(self, summary, _add_to_board)
        if self.report_errors:
            failed = True
        if (
            self.state.settings.run.resume is not None
            and self.results
            and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        ):
            # resuming a finished run deselects every item: pytest would exit 5 (no tests ran),
            # yet the stored results are reported. That is a complete run: exit status OK
            session.exitstatus = pytest.ExitCode.OK
        only = self.calibration is not None and self.calibration["mode"] == "only"
        if only and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            # nothing of the benchmark was meant to run: "no tests ran" is not a failure here
            session.exitstatus = pytest.ExitCode.OK
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _settle_batches(self) -> list[str]:
        """``--memeval-llm-batch``: ``run.batch.settle_run`` over the results, its progress
        written to the terminal as it goes, the results it settles appended to the store."""
        from ..llm import redact
        from ..run import settle_run
        from ._questions import question_run

        state = self.state
        writer = self.config.pluginmanager.get_plugin("terminalreporter")

        def log(line: str) -> None:
            if writer is not None:
                writer.write_line(f"memeval: {redact(line)}")

        return settle_run(
            state,
            list(self.results.values()),
            lambda bench: question_run(self.config, state, bench),
            store=self.store.append if self.store is not None else None,
            log=log,
        )

    def _prune_runs(self) -> None:
        """--memeval-keep-runs: the oldest run folders beyond N go (never this run's folder, the
        one resumed, nor the one re-judged or re-answered). The controller only: never a worker."""
        if self.store is None:
            return
        from ..run import prune_runs

        state = self.state
        protect = [self.store.folder]
        if state.rejudge_run is not None:
            protect.append(state.rejudge_run)
        self.pruned = prune_runs(state.settings.cache_dir, state.settings.run.keep_runs, protect)

    def _finish_estimate(self, session: pytest.Session) -> None:
        """--memeval-estimate: no summary, report or run folder; the estimate, exit status 0
        (the placeholder verdicts decide nothing)."""
        from ..run import build_estimate

        # the calibration's judge calls are made here, on the controller (as in merged())
        outputs = session_outputs(self.state, self.worker_outputs, self.calibration is not None)
        self.estimate = build_estimate(
            self.state, outputs, len(self.worker_outputs) or 1, self.results
        )
        if self.store is not None:
            self.store.close()
        if session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = pytest.ExitCode.OK

    # ---- terminal ----------------------------------------------------------------------------
    @pytest.hookimpl
    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> None:
        write_terminal_summary(terminalreporter, config, self)


def _add_to_board(
    board: Path,
    report_json: str,
    provenance: Mapping[str, Any],
    run_folder: Path | None,
    data_dir: Path | None,
) -> None:
    """``--memeval-board``'s writer (``board.site``, imported when a board is written)."""
    from ..board import add_to_board

    add_to_board(board, report_json, provenance, run_folder, data_dir)
