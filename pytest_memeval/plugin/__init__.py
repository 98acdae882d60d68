"""pytest11 entry point: wiring only (options, hooks, fixtures, plugin registration). The item hooks
and the ``memeval_case`` fixtures are in ``item_hooks.py``, imported here so pytest finds them."""

from __future__ import annotations

import gc
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._lazy import lazy_getattr
from ..errors import MemevalError, UnknownSystemError
from . import _hookspecs as hookspecs

# the item hooks and the memeval_case fixtures live in item_hooks.py; pytest finds them here
from ._item_hooks import (
    Recorder,
    _conversation_key,
    memeval_case,
    memeval_record,
    memeval_system,
    pytest_generate_tests,
    pytest_report_teststatus,
    pytest_runtest_makereport,
    pytest_runtest_teardown,
)
from ._options import addoptions, read_settings
from ._setup_files import download_lines, read_protocol
from ._stash import CONTROLLER_KEY, STATE_KEY

if TYPE_CHECKING:
    from ._items import item_nodeid
    from ._option_table import GROUPS, OPTIONS
    from ._scheduler import ConversationScheduling


__all__ = [
    "GROUPS",
    "OPTIONS",
    "ConversationScheduling",
    "Recorder",
    "item_nodeid",
    "memeval_case",
    "memeval_record",
    "memeval_system",
    "pytest_generate_tests",
    "pytest_report_teststatus",
    "pytest_runtest_makereport",
    "pytest_runtest_teardown",
]

# Everything else is imported where it is used: installed, the plugin costs a pytest run without
# --memeval only option registration and configure (perf/run.py "plugin idle" row).
if TYPE_CHECKING:
    from ..records import Prediction
    from ..run import RunState, SystemRef


def pytest_addoption(parser: pytest.Parser) -> None:
    addoptions(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


class Builtins:
    """The plugin's own policies, as ordinary hook implementations (a conftest can add or win)."""

    @pytest.hookimpl(trylast=True)
    def pytest_memeval_make_system(self, config: pytest.Config, name: str) -> Any:
        from ..systems import resolve_system

        state = config.stash.get(STATE_KEY, None)
        return resolve_system(name, mcp=state.mcp if state is not None else None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_memeval_question_scores(
        self, config: pytest.Config, benchmark: str, question: Any, prediction: Prediction
    ) -> dict[str, float | None] | None:
        state = config.stash[STATE_KEY]
        return dict(state.benchmarks[benchmark].score(question, prediction))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("memeval_merge", None):
        from ._scale import apply_merge_defaults

        apply_merge_defaults(config)  # --memeval-merge: options default to the shards' own
    settings = read_settings(config)
    config.pluginmanager.register(Builtins(), "memeval-builtins")
    config.addinivalue_line("markers", "memeval: a pytest-memeval benchmark question")
    if settings.contract is not None:  # --memeval-contract: the adapter's contract, alone
        from ._contract import ContractHooks

        hooks = ContractHooks(config, settings, _resolve_systems)
        config.pluginmanager.register(hooks, "memeval-contract")
        return
    if not settings.active:
        # idle (no --memeval): no run state, and the plugin's run-time modules stay unimported;
        # every hook below reads a missing STATE_KEY as "not active"
        return
    from ..benchmarks import get_benchmark
    from ..run import RunState

    state = RunState(settings=settings)
    state.pool.timeout = settings.run.timeout
    config.stash[STATE_KEY] = state

    for name in settings.selection.benchmarks:
        try:
            bench = get_benchmark(name)
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
        state.benchmarks[name] = bench
        config.addinivalue_line("markers", f"{name}: questions of the {name} benchmark")
        for cat in bench.categories.values():
            config.addinivalue_line(
                "markers", f"{cat.name}: {name} category {cat.id} ({cat.shared})"
            )
    if settings.llm.protocol is not None:
        state.protocol = read_protocol(config, settings)
    llm_settings = settings.llm
    if llm_settings.uses_llm:
        from ..errors import JudgeError
        from ..llm import redact
        from ..run import check_judges, check_llm

        try:
            check_llm(llm_settings)
            check_judges(llm_settings, list(settings.selection.benchmarks), state.protocol)
        except JudgeError as exc:
            raise pytest.UsageError(redact(str(exc))) from None
    if config.pluginmanager.hasplugin("xdist"):
        from ._xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(config), "memeval-xdist")
    if config.pluginmanager.hasplugin("html") and not hasattr(config, "workerinput"):
        from ._html import PytestHtmlHooks

        config.pluginmanager.register(PytestHtmlHooks(config), "memeval-pytest-html")
    if not hasattr(config, "workerinput") and (
        settings.run.merge
        or settings.selection.shard
        or settings.run.cache_import
        or settings.run.cache_export
    ):
        from ._scale import ScaleHooks

        config.pluginmanager.register(ScaleHooks(config), "memeval-scale")
    if settings.checks.calibration is not None and not hasattr(config, "workerinput"):
        from ._calibration_hooks import CalibrationHooks

        config.pluginmanager.register(CalibrationHooks(config), "memeval-calibration")
    if not hasattr(config, "workerinput"):
        from ._controller import Controller

        controller = Controller(config)
        config.stash[CONTROLLER_KEY] = controller
        config.pluginmanager.register(controller, "memeval-controller")


def _load(config: pytest.Config, state: RunState) -> None:
    """This process's set-up (``run.start.load_run``): what it is, read off pytest."""
    from ..run import Process, StartError, load_run

    process = Process(
        workerinput=getattr(config, "workerinput", None),
        runs_items=(
            config.pluginmanager.getplugin("dsession") is None and not config.option.collectonly
        ),
        progress=download_lines(config),
    )
    try:
        load_run(state, process, lambda: _resolve_systems(config, state))
    except StartError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state.settings.active:
        _load(session.config, state)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With --memeval and no explicit paths, run the benchmark alone (no test files)."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    settings = state.settings
    if settings.active and not settings.selection.explicit_paths:
        return True
    return None


def _resolve_systems(config: pytest.Config, state: RunState) -> list[SystemRef]:
    """``--memsys`` values in order, each with its ``--memeval-top-k`` variants.

    Every value goes through ``pytest_memeval_make_system`` (entry points, built-ins, replay files,
    import paths, and a conftest's own hook). A value that is a Python identifier may also name a
    conftest fixture, which wins when it exists: a fixture of a conftest pytest has loaded (the
    rootdir's, the start folder's, the command-line folders', testpaths') is made visible to every
    item (:mod:`._conftests`). A name nothing knows is a usage error here, with "did you mean";
    only a name some loaded plugin may define as a fixture (an attribute of a non-conftest plugin,
    or ``@pytest.fixture(name=...)``) waits for its first question (:func:`memsys.obtain_system`).
    """
    from ..run import SystemRef
    from ..systems import available_systems, unknown_system_message
    from ._conftests import (
        WHERE_FIXTURES,
        fixture_names,
        loaded_modules,
        may_define,
        register_system,
    )

    builtin_names = available_systems()
    available = ", ".join(builtin_names)
    modules = loaded_modules(config)
    refs: list[SystemRef] = []
    origins: dict[str, str] = {}
    for name in state.settings.selection.systems:
        could_be_fixture = name.isidentifier()
        in_conftest = could_be_fixture and register_system(config, name, modules)
        try:
            made = config.hook.pytest_memeval_make_system(config=config, name=name)
        except UnknownSystemError:
            made = None
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
        if (
            made is None
            and not in_conftest
            and not (could_be_fixture and may_define(name, modules))
        ):
            known = [*builtin_names, *fixture_names(modules)]
            message = unknown_system_message(name, known, available=available)
            raise pytest.UsageError(message + (WHERE_FIXTURES if could_be_fixture else ""))
        pairs: list[tuple[str, Any]]
        if made is None:
            pairs = [(name, None)]
        else:
            pairs = list(made) if isinstance(made, list) else [(name, made)]
        fixture = name if could_be_fixture and len(pairs) == 1 else None
        for label, factory in pairs:
            for shown, k in state.settings.system_labels(label):
                if shown in origins:
                    raise pytest.UsageError(
                        f"--memsys: two systems are both named {shown!r} (from "
                        f"{origins[shown]!r} and {name!r}); results, tables and gates are keyed by "
                        "the system name, so give each system its own name"
                    )
                origins[shown] = name
                refs.append(
                    SystemRef(
                        shown,
                        label,
                        k,
                        fixture=fixture,
                        factory=factory,
                        available=available,
                        origin=name,
                    )
                )
    return refs


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """The benchmark nodes join the session's own collect report, so pytest collects their items
    like any others (counts, ``--collect-only``, ``pytest_itemcollected``, deselection)."""
    report = yield
    if isinstance(collector, pytest.Session) and report.passed:
        state = collector.config.stash.get(STATE_KEY, None)
        if state is not None and state.settings.active:
            from ._nodes import BenchmarkNode

            start = time.perf_counter()
            report.result.extend(
                BenchmarkNode.for_benchmark(collector, name) for name in state.selected
            )
            state.collect_seconds += time.perf_counter() - start
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.active:
        return
    from ._items import result_key

    start = time.perf_counter()
    items[:] = group_items(items)
    resume = state.resume_ids
    if resume:
        done = [item for item in items if result_key(item) in resume]
        if done:
            items[:] = [item for item in items if result_key(item) not in resume]
            config.hook.pytest_deselected(items=done)
    if state.settings.checks.calibration is not None:
        from ._calibration_hooks import deselect_questions

        deselect_questions(config, items)
    state.collect_seconds += time.perf_counter() - start


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything alive after collection (datasets, items, libraries) out of the garbage
    collector's reach: pytest's and Python's collections then only walk objects made per item."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state.settings.active and session.items:
        if not session.config.option.collectonly:
            # the scorers (nltk's stemmer and tokenizer, numpy) are imported on the first item
            # otherwise, after the freeze, and every collection would then walk their objects
            import pytest_memeval.metrics  # noqa: F401

            _preload(state.benchmarks)
        gc.freeze()


def _preload(benchmarks: Mapping[str, object]) -> None:
    """Each suite's ``preload`` hook (LoCoMo: BLEU-1's Punkt English model), called once in the
    main thread (before any judge or answerer thread); what it cannot have (a missing or altered
    model: a RuntimeError with its fix) stops the run."""
    for name, bench in benchmarks.items():
        hook = getattr(bench, "preload", None)
        if callable(hook):
            try:
                hook()
            except RuntimeError as exc:
                raise pytest.UsageError(f"--memeval={name}: {exc}") from None


def group_items(items: list[pytest.Item]) -> list[pytest.Item]:
    """Make every conversation's items contiguous (built-in items and hand-written cases alike), so
    each conversation is ingested once per system and process. Other tests keep their order and
    run first."""
    others: list[pytest.Item] = []
    groups: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        key = _conversation_key(item)
        if key is None:
            others.append(item)
        else:
            groups.setdefault(key, []).append(item)
    return others + [item for group in groups.values() for item in group]


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    if state.pipeline is not None:  # -x, --maxfail, Ctrl-C: cancel what is not sent yet
        state.pipeline.close()
    if hasattr(config, "workerinput"):
        from ..run import PROPERTY_NAME, worker_output

        config.workeroutput[PROPERTY_NAME] = worker_output(state)  # type: ignore[attr-defined]
    state.pool.clear()
    state.close_services()  # the MCP servers this run started, with their process groups


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "GROUPS": "._option_table",
    "OPTIONS": "._option_table",
    "ConversationScheduling": "._scheduler",
    "item_nodeid": "._items",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
