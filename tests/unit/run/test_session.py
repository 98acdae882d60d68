"""The pytest-free session layer (issue 40 item 2), without an inner pytest run: a process's set-up
(``run.start``), the summary, provenance and report files of the session's end (``run.session``,
``run.provenance``, ``run.outputs``) and stored rows checked again (``run.stored``), over a real
LoCoMo dataset and a plain session object instead of the plugin's controller."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from calibration_files import audit_doc

from pytest_memeval.analysis import parse_gate
from pytest_memeval.benchmarks import get_benchmark
from pytest_memeval.errors import MemevalError
from pytest_memeval.records import (
    STATUS_CORRECT,
    STATUS_ERROR,
    STATUS_WRONG,
    Prediction,
    QuestionResult,
    ResultKey,
)
from pytest_memeval.report import Summary
from pytest_memeval.run._batch import BATCH_DIR
from pytest_memeval.run._calibrate import CalibrationError, calibrate_run
from pytest_memeval.run._estimate_figures import Estimate
from pytest_memeval.run._outputs import (
    merge_outputs,
    report_targets,
    session_outputs,
    worker_output,
    write_reports,
)
from pytest_memeval.run._provenance import SummarySource, session_record
from pytest_memeval.run._question import QuestionRun, clean_scores, decide, new_result
from pytest_memeval.run._repeats import Stop
from pytest_memeval.run._session import (
    build_estimate,
    build_summary,
    finish_summary,
    questions_run,
    write_run_files,
)
from pytest_memeval.run._session_lines import Line, TerminalSource, summary_lines
from pytest_memeval.run._settings import (
    CalibrationSettings,
    ReportSettings,
    Selection,
    Settings,
)
from pytest_memeval.run._shards import OUTPUTS_FILE
from pytest_memeval.run._start import (
    Process,
    StartError,
    load_run,
    metric_name_problem,
    open_run,
)
from pytest_memeval.run._state import RunState, SystemRef
from pytest_memeval.run._store import RunStore
from pytest_memeval.run._stored import check_rows, merge_shards

BM25 = SystemRef("bm25", "bm25", 10)


def _state(data_dir: Path, cache: Path, **reports: Any) -> RunState:
    settings = Settings(
        selection=Selection(benchmarks=("locomo",), systems=("bm25",), data_dir=data_dir, limit=1),
        reports=ReportSettings(**reports),
        cache_dir=cache,
    )
    state = RunState(settings=settings)
    state.benchmarks["locomo"] = get_benchmark("locomo")
    return state


def _loaded(data_dir: Path, cache: Path, **reports: Any) -> RunState:
    state = _state(data_dir, cache, **reports)
    load_run(state, Process(), lambda: [BM25])
    return state


def _run(state: RunState) -> QuestionRun:
    bench = state.benchmarks["locomo"]
    return QuestionRun(
        benchmark="locomo",
        pass_metric=bench.pass_metric,
        threshold=state.threshold("locomo"),
        score=lambda q, p: dict(bench.score(q, p)),
    )


def _answered(state: RunState, right: int) -> dict[ResultKey, QuestionResult]:
    """Every selected question answered: the first ``right`` with the gold answer, the rest
    with a wrong one; scored and decided as the question path does."""
    run = _run(state)
    out = {}
    for i, q in enumerate(state.selected["locomo"]):
        result = new_result("locomo", BM25.label, BM25.k, q, f"memeval/locomo::{q.id}")
        result.prediction = str(q.gold) if i < right else "zebra crossing"
        prediction = Prediction(text=result.prediction)
        result.scores = clean_scores(run.score(q, prediction))
        decide(run, result, outcome="passed", require_metric=True)
        out[result.key] = result
    return out


@dataclass
class Session:
    """A plain :class:`SummarySource`: what the plugin's controller gathers, without pytest."""

    state: RunState
    results: dict[ResultKey, QuestionResult]
    rootpath: Path
    store: RunStore | None = None
    pytest_version: str = "0.0-test"
    duplicates: list[ResultKey] = field(default_factory=list)
    lost: list[dict[str, Any]] = field(default_factory=list)
    rescored: list[str] = field(default_factory=list)
    import_verify: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    session_end: dict[str, Any] | None = None
    worker_outputs: list[dict[str, Any]] = field(default_factory=list)

    def merged(self) -> dict[str, Any]:
        return merge_outputs(session_outputs(self.state, self.worker_outputs, False))


def _session(state: RunState, tmp_path: Path, right: int = 4) -> Session:
    src = Session(state, _answered(state, right), rootpath=tmp_path)
    _: SummarySource = src  # the plain object is what the summary reads
    return src


# ---- run.start ------------------------------------------------------------------------------


def test_load_run_resolves_systems_first_then_loads_and_selects(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _state(data_dir, tmp_path)
    asked: list[bool] = []

    def resolve() -> list[SystemRef]:
        asked.append(not state.datasets)  # nothing was read yet
        return [BM25]

    load_run(state, Process(), resolve)
    assert asked == [True]
    assert state.systems == [BM25]
    selected = state.selected["locomo"]
    # --memeval-limit=1: one question of each of LoCoMo's ten conversations
    assert len(selected) == 10
    assert len({q.conversation_id for q in selected}) == 10
    assert state.load_seconds["locomo"] >= 0
    assert state.answerer is not None and state.llm is None  # the extractive answerer
    loaded = state.datasets["locomo"]
    load_run(state, Process(), resolve)  # a second call keeps what is there
    assert asked == [True] and state.datasets["locomo"] is loaded


def test_a_system_that_does_not_resolve_stops_before_any_data_is_read(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _state(data_dir, tmp_path)

    def resolve() -> list[SystemRef]:
        raise MemevalError("--memsys=bm52: no such system")

    with pytest.raises(MemevalError, match="bm52"):
        load_run(state, Process(), resolve)
    assert state.datasets == {} and state.systems is None


def test_a_dataset_that_does_not_load_is_a_start_error_naming_the_benchmark(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    (data / "locomo").mkdir(parents=True)
    (data / "locomo" / "locomo10.json").write_text("{not json", encoding="utf-8")
    state = _state(data, tmp_path / "cache")
    with pytest.raises(StartError) as caught:
        load_run(state, Process(), lambda: [BM25])
    assert str(caught.value).startswith("--memeval=locomo: ")
    assert isinstance(caught.value, MemevalError)
    assert "locomo" not in state.datasets


def test_a_worker_takes_what_the_controller_shipped(data_dir: Path, tmp_path: Path) -> None:
    state = _state(data_dir, tmp_path)
    shipped = {
        "workerid": "gw0",
        "memeval_rejudge_run": str(tmp_path / "runs" / "r1"),
        "memeval_resume": [["locomo", "bm25", "", "conv-26-q1"]],
    }
    process = Process(workerinput=shipped, runs_items=True)
    assert process.worker and not Process().worker
    load_run(state, process, lambda: [BM25])
    assert state.rejudge_run == tmp_path / "runs" / "r1"
    assert state.resume_ids == frozenset({ResultKey("locomo", "bm25", "", "conv-26-q1")})


# ---- run.provenance -------------------------------------------------------------------------


def test_session_record_reads_plain_values() -> None:
    option = SimpleNamespace(keyword="single", markexpr="", deselect=["a::b"], maxfail=2)
    record = session_record(1, "TESTS_FAILED", "stopping after 2 failures", option, "1/4")
    assert record == {
        "exit_status": 1,
        "exit_name": "TESTS_FAILED",
        "stopped": "stopping after 2 failures",
        "keyword": "single",
        "markexpr": None,
        "deselect": ["a::b"],
        "maxfail": 2,
        "shard": "1/4",
    }
    bare = session_record(0, "OK", False, object())
    assert bare["stopped"] is None and bare["deselect"] == [] and bare["shard"] is None


# ---- run.session ----------------------------------------------------------------------------


def test_build_summary_from_a_plain_session(data_dir: Path, tmp_path: Path) -> None:
    state = _loaded(data_dir, tmp_path)
    src = _session(state, tmp_path, right=4)
    src.session_end = session_record(0, "OK", False, object())
    summary = build_summary(src)
    (run,) = summary.runs
    assert (run.benchmark, run.system, run.flow) == ("locomo", "bm25", "")
    assert len(run.results) == 10
    statuses = [r.status for r in run.results]
    assert statuses.count(STATUS_CORRECT) == 4 and statuses.count(STATUS_WRONG) == 6
    assert {"f1", "set_f1", "bleu1"} <= set(run.metrics)
    prov = summary.provenance
    assert prov["pytest"] == "0.0-test"  # what the source says, not the pytest installed
    assert prov["git_commit"] is None  # tmp_path is not a git checkout
    assert prov["session"] == src.session_end
    assert prov["systems"] == ["bm25"]
    assert prov["datasets"]["locomo"]["questions_selected"] == 10
    assert prov["bleu1_tokenizer"] is not None  # LoCoMo scores BLEU-1
    assert summary.llm is None  # no LLM ran
    assert questions_run(state, summary, "locomo") == 10
    assert questions_run(state, None, "locomo") == 10  # before any summary: the selection


def test_finish_summary_adds_the_notes_and_tells_the_modify_hook(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _loaded(data_dir, tmp_path)
    src = _session(state, tmp_path)
    seen: list[Summary] = []
    summary, failed = finish_summary(src, seen.append)
    assert seen == [summary]
    assert failed is False  # no gate was asked for
    assert summary.provenance["datasets"]["locomo"]["questions_run"] == 10


def test_write_run_files_writes_every_report_and_names_the_one_that_fails(
    data_dir: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked"
    blocked.mkdir()  # a folder where the HTML report should go: it cannot be written
    state = _loaded(
        data_dir,
        tmp_path / "cache",
        json_path=tmp_path / "r.json",
        markdown_path=tmp_path / "r.md",
        html_path=blocked,
        board_path=tmp_path / "board",
    )
    store = RunStore.create(tmp_path / "cache")
    src = _session(state, tmp_path)
    src.store = store
    summary, _ = finish_summary(src, lambda s: None)
    boards: list[tuple[Path, str, Path | None]] = []

    def board(
        path: Path, text: str, provenance: Any, run_folder: Path | None, data: Path | None
    ) -> None:
        boards.append((path, text, run_folder))

    errors = write_run_files(src, summary, board)
    assert [path for path, _ in errors] == [blocked]
    assert errors[0][1].startswith(f"memeval: HTML report NOT written (--memeval-html={blocked}):")
    written = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert len(written["runs"]) == 1
    assert "locomo" in (tmp_path / "r.md").read_text(encoding="utf-8")
    ((where, text, folder),) = boards
    assert where == tmp_path / "board" and json.loads(text) == written
    assert folder == store.folder
    outputs = json.loads((store.folder / OUTPUTS_FILE).read_text(encoding="utf-8"))
    assert outputs == src.merged()  # the processes' outputs, next to the results


def test_report_targets_name_every_report_the_settings_ask_for(tmp_path: Path) -> None:
    settings = Settings(reports=ReportSettings(json_path=tmp_path / "r.json"))
    targets = dict(report_targets(settings))
    assert targets["JSON report"] == tmp_path / "r.json"
    assert targets["HTML report"] is None and targets["baseline"] is None


def test_write_reports_without_a_board_writer_writes_no_board(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _loaded(data_dir, tmp_path, board_path=tmp_path / "board")
    summary = build_summary(_session(state, tmp_path))
    assert write_reports(summary, {}, state.settings) == []
    assert not (tmp_path / "board").exists()


# ---- run.outputs ----------------------------------------------------------------------------


def test_session_outputs_add_the_controllers_own_calls_beside_the_workers(
    tmp_path: Path,
) -> None:
    state = RunState(settings=Settings())
    state.pool.ingests["bm25"] = 3
    alone = session_outputs(state, [], controller_called=True)
    assert alone == [worker_output(state)]  # no worker: this process is the one that ran
    workers = [{"ingests": {"bm25": 2}}, {"ingests": {"bm25": 5}}]
    assert session_outputs(state, workers, controller_called=False) == workers
    both = session_outputs(state, workers, controller_called=True)
    assert both[-1]["ingests"] == {}  # the controller ran no question
    assert merge_outputs(both)["ingests"] == {"bm25": 7}


def test_build_estimate_counts_questions_and_conversations(data_dir: Path, tmp_path: Path) -> None:
    state = _loaded(data_dir, tmp_path)
    results = _answered(state, right=0)
    outputs = [
        {"estimate": {"tokenizers": {"openai:m": "o200k"}, "approximate": ["x"], "repeats": 2}},
        {"estimate": {"repeats": 1}},
    ]
    estimate = build_estimate(state, outputs, 2, results)
    assert estimate.calls == 0 and estimate.repeats == 3
    assert estimate.approximate == ("x",)


# ---- run.stored -----------------------------------------------------------------------------


def _rows(results: dict[ResultKey, QuestionResult]) -> list[tuple[str, QuestionResult]]:
    return [("shard-1", replace(r, details=dict(r.details))) for r in results.values()]


def test_stored_rows_are_scored_again_and_a_wrong_number_is_named(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _loaded(data_dir, tmp_path)
    results = _answered(state, right=3)
    rows = _rows(results)
    _, edited = rows[0]
    edited.scores = dict(edited.scores) | {"f1": 0.25}  # stored by hand, not by the scorer
    asked: list[str] = []

    def question_run(bench: str) -> QuestionRun:
        asked.append(bench)
        return _run(state)

    checked = check_rows(question_run, state, rows, "--memeval-merge")
    assert asked == ["locomo"]  # one scorer per benchmark
    assert set(checked.results) == set(results)
    again = checked.results[edited.key]
    assert again.scores["f1"] == results[edited.key].scores["f1"]
    (named,) = checked.rescored
    assert named.startswith(f"shard-1: {'/'.join(edited.key)}: f1 0.25 -> ")
    assert [r.status for r in checked.results.values()] == [r.status for r in results.values()]


def test_a_stored_row_of_no_selected_question_is_refused(data_dir: Path, tmp_path: Path) -> None:
    state = _loaded(data_dir, tmp_path)
    result = next(iter(_answered(state, right=1).values()))
    invented = replace(result, question_id="conv-26-q9999")
    with pytest.raises(MemevalError, match=r"^--memeval-resume: .*conv-26-q9999.*not a selected"):
        check_rows(lambda b: _run(state), state, [("run-1", invented)], "--memeval-resume")


def test_an_errored_stored_row_stays_an_error(data_dir: Path, tmp_path: Path) -> None:
    state = _loaded(data_dir, tmp_path)
    result = next(iter(_answered(state, right=1).values()))
    failed = replace(result, status=STATUS_ERROR, prediction=None, error="boom")
    checked = check_rows(lambda b: _run(state), state, [("run-1", failed)], "--memeval-resume")
    again = checked.results[failed.key]
    assert again.status == STATUS_ERROR and again.error == "boom"


# ---- run.calibrate.calibrate_run ------------------------------------------------------------


def _calibrating(data_dir: Path, tmp_path: Path, wrong: Path) -> RunState:
    state = _loaded(data_dir, tmp_path)
    calibration = CalibrationSettings(mode="only", sources=(str(wrong),))
    state.settings = replace(
        state.settings, checks=replace(state.settings.checks, calibration=calibration)
    )
    # the runtime is never reached: both problems are found before the judge is asked
    state.llm = cast("Any", object())
    return state


def test_a_wrong_answer_file_that_matches_no_question_is_a_calibration_error(
    data_dir: Path, tmp_path: Path
) -> None:
    stray = tmp_path / "stray.json"
    stray.write_bytes(audit_doc([(7, 0, "Not a LoCoMo question?", "x")]))
    with pytest.raises(CalibrationError) as caught:
        calibrate_run(_calibrating(data_dir, tmp_path, stray))
    assert str(caught.value).startswith(f"--memeval-calibration-wrong={stray}: none of its 1 ")


def test_a_wrong_answer_file_that_does_not_read_is_a_calibration_error(
    data_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"detailed_results": {"u": [{"question_id": "x"}]}}', encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"^--memeval-judge-calibration: .*broken\.json"):
        calibrate_run(_calibrating(data_dir, tmp_path, broken))


# ---- run.start: the run folder and the gates' metric names ---------------------------------


def test_open_run_creates_a_store_then_resumes_it_with_its_rows_checked_again(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _loaded(data_dir, tmp_path)
    opened = open_run(state, lambda b: _run(state))
    assert opened.store is not None and opened.resumed is None
    assert state.batch_dir == opened.store.folder / BATCH_DIR
    results = _answered(state, right=2)
    first, second = list(results.values())[:2]
    failed = replace(second, status=STATUS_ERROR, prediction=None, error="boom")
    for result in (first, failed):
        opened.store.append(result)
    opened.store.close()

    again = _state(data_dir, tmp_path)
    again.settings = replace(
        again.settings, run=replace(again.settings.run, resume=opened.store.run_id)
    )
    load_run(again, Process(), lambda: [BM25])
    resumed = open_run(again, lambda b: _run(again))
    assert resumed.store is not None and resumed.store.folder == opened.store.folder
    assert resumed.resumed is not None
    # an errored row runs again: only the answered one is restored
    assert set(resumed.resumed.results) == {first.key}
    assert again.resume_ids == frozenset({first.key})


def test_an_estimate_opens_no_run_folder(data_dir: Path, tmp_path: Path) -> None:
    state = _loaded(data_dir, tmp_path)
    state.settings = replace(state.settings, llm=replace(state.settings.llm, estimate=True))
    assert open_run(state, lambda b: _run(state)).store is None
    assert not (tmp_path / "runs").exists()


def test_a_gate_on_a_metric_the_run_does_not_produce_is_named_before_it_runs(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _loaded(data_dir, tmp_path)

    def gated(text: str) -> RunState:
        checks = replace(state.settings.checks, gates=(parse_gate(text),))
        return replace(state, settings=replace(state.settings, checks=checks))

    assert metric_name_problem(gated("locomo.overall.f1>=0.1"), extra_scores=False) is None
    problem = metric_name_problem(gated("locomo.overall.f2>=0.1"), extra_scores=False)
    assert problem is not None and "f2" in problem and "--memeval-fail-under" in problem
    # a score plugin may add any name: only the run's end can tell
    assert metric_name_problem(gated("locomo.overall.f2>=0.1"), extra_scores=True) is None


def test_merge_shards_checks_the_configuration_then_the_rows(
    data_dir: Path, tmp_path: Path
) -> None:
    state = _loaded(data_dir, tmp_path)
    store = open_run(state, lambda b: _run(state)).store
    assert store is not None
    results = _answered(state, right=3)
    for result in results.values():
        store.append(result)
    store.close()
    merging = _loaded(data_dir, tmp_path)
    checked, _ = merge_shards(merging, [store.folder], lambda b: _run(merging))
    assert set(checked.results) == set(results) and checked.rescored == []
    other = _state(data_dir, tmp_path)
    other.settings = replace(other.settings, selection=replace(other.settings.selection, limit=2))
    load_run(other, Process(), lambda: [BM25])
    with pytest.raises(MemevalError, match=r"^--memeval-merge: this session's configuration"):
        merge_shards(other, [store.folder], lambda b: _run(other))


# ---- run.session_lines ----------------------------------------------------------------------


@dataclass
class Ended(Session):
    """A :class:`Session` at its end, as the terminal summary reads it."""

    summary: Summary | None = None
    report_errors: list[tuple[Path, str]] = field(default_factory=list)
    batch_lines: list[str] = field(default_factory=list)
    pruned: list[Path] = field(default_factory=list)
    estimate: Estimate | None = None
    stops: dict[Stop, int] = field(default_factory=dict)


def test_summary_lines_are_the_terminal_summary_in_order(data_dir: Path, tmp_path: Path) -> None:
    state = _loaded(data_dir, tmp_path, json_path=tmp_path / "r.json")
    src = Ended(state, _answered(state, right=4), rootpath=tmp_path)
    _: TerminalSource = src
    assert summary_lines(src, verbose=False) == []  # nothing built yet: nothing to say
    src.summary, _failed = finish_summary(src, lambda s: None)
    src.rescored = ["run-1: locomo/bm25//conv-26-q1: f1 0.25 -> 1.0"]
    src.report_errors = [(tmp_path / "r.html", "memeval: HTML report NOT written (x)")]
    lines = summary_lines(src, verbose=False)
    assert lines[0] == Line("memeval summary", sep="=")
    texts = [line.text for line in lines]
    assert any(t.startswith("configuration: locomo: 10/") for t in texts)
    assert Line("WRONG answers", sep="-") in lines
    (rescored,) = [line for line in lines if "re-scored" in line.text]
    assert rescored.markup == {"yellow": True}
    assert lines[-2] == Line(f"memeval: JSON report written to {tmp_path / 'r.json'}")
    assert lines[-1] == Line("memeval: HTML report NOT written (x)", markup={"red": True})
    # -v: every WRONG answer, not the first --memeval-show-wrong
    assert len(summary_lines(src, verbose=True)) > len(lines)
