"""A process's set-up at session start, pytest-free: its systems, each benchmark's dataset and
selected questions (sharded), the errata, what the controller shipped to an xdist worker, the LLM
runtime with its checks and the answerer. Moved out of ``plugin/__init__.py`` (issue 40): the glue
says what this process is (:class:`Process`) and how systems are resolved and downloads reported;
a problem the user fixes on the command line is a :class:`StartError` (the glue's usage error)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MemevalError

if TYPE_CHECKING:
    from ._state import RunState, SystemRef
    from ._store import RunStore
    from ._stored import CheckedRows
    from ._verdict import QuestionRun

__all__ = ["OpenedRun", "Process", "StartError", "load_run", "metric_name_problem", "open_run"]


class StartError(MemevalError):
    """A set-up problem the user fixes on the command line (a dataset that does not load, a
    judge that cannot be configured, an unusable cache or limiter): the plugin reports it as a
    usage error, with this message."""


@dataclass(frozen=True)
class Process:
    """What the process setting up is."""

    #: what the controller shipped to this xdist worker (None: the controller, or no xdist)
    workerinput: Mapping[str, Any] | None = None
    #: it runs items (not an xdist controller, not ``--collect-only``): its first paid call's SDK
    #: import is warmed up while it collects and ingests
    runs_items: bool = True
    #: where a download's progress lines go (None: nowhere)
    progress: Callable[[str], None] | None = field(default=None, compare=False)

    @property
    def worker(self) -> bool:
        return self.workerinput is not None


def load_run(
    state: RunState, process: Process, resolve_systems: Callable[[], list[SystemRef]]
) -> None:
    """Fill ``state`` for this process (what is already there is kept: a second call loads
    nothing again). ``resolve_systems``: the ``--memsys`` values resolved, called first so a typo
    fails before any data is read. Raises :class:`StartError`."""
    from ..benchmarks import LoadRequest, check_local_copies, check_unique_ids
    from ..records import ResultKey
    from ._question import select_questions

    settings = state.settings
    if state.systems is None:
        state.systems = resolve_systems()
    loaded: list[str] = []
    for name, bench in state.benchmarks.items():
        if name in state.datasets:
            continue
        start = time.perf_counter()
        try:
            dataset = bench.load(
                LoadRequest(
                    settings.selection.data_dir,
                    settings.cache_dir,
                    settings.selection.variant,
                    progress=process.progress,
                )
            )
            check_unique_ids(dataset)
            unpinned = check_local_copies(
                name,
                getattr(bench, "pins", None),
                dataset.sha256,
                settings.selection.accept_unpinned,
            )
        except MemevalError as exc:
            raise StartError(f"--memeval={name}: {exc}") from None
        if unpinned:
            dataset.meta["unpinned"] = unpinned
        state.load_seconds[name] = time.perf_counter() - start
        state.datasets[name] = dataset
        state.selected[name] = select_questions(
            dataset.questions,
            limit=settings.selection.limit,
            sample=settings.selection.sample,
            seed=settings.selection.seed,
        )
        loaded.append(name)
    if (
        settings.selection.shard is not None and loaded
    ):  # the same conversations on every machine/worker
        from ._shards import shard_questions

        state.selected.update(
            shard_questions({n: state.selected[n] for n in loaded}, settings.selection.shard)
        )
    if settings.reports.errata and state.errata is None and not process.worker:
        from ._overlay import load_run_errata

        try:
            state.errata = load_run_errata(
                settings.reports.errata, settings.cache_dir, state.datasets
            )
        except MemevalError as exc:
            raise StartError(f"--memeval-errata={settings.reports.errata}: {exc}") from None
    workerinput = process.workerinput
    if workerinput is not None:  # what the controller chose, shipped to this xdist worker
        if workerinput.get("memeval_rejudge_run"):
            state.rejudge_run = Path(workerinput["memeval_rejudge_run"])
        if "memeval_resume" in workerinput:
            state.resume_ids = frozenset(ResultKey(*key) for key in workerinput["memeval_resume"])
    if settings.llm.uses_llm and state.llm is None:
        _start_llm(state, process)
    if state.answerer is None:
        if settings.llm.answerer == "extractive":
            from ..answerers import ExtractiveAnswerer

            state.answerer = ExtractiveAnswerer()
        else:
            assert state.llm is not None and state.llm.answerer is not None
            state.answerer = (
                state.llm.estimate_answerer() if settings.llm.estimate else state.llm.answerer
            )


def _start_llm(state: RunState, process: Process) -> None:
    """The LLM runtime, told each dataset; batching's, the cache's and the limiter's checks
    before any paid call; the SDK import warmed up where items run."""
    from ..errors import JudgeError
    from ..llm import redact
    from ._batch import batch_problem, start_worker
    from ._runtime import LLMRuntime

    settings = state.settings
    try:
        llm = LLMRuntime(settings.llm, settings.cache_dir, protocol=state.protocol)
    except JudgeError as exc:
        raise StartError(redact(str(exc))) from None
    state.llm = llm
    if llm.answerer is not None:  # "today", each benchmark's prompt, speakers
        for name, dataset in state.datasets.items():
            llm.answerer.add_dataset(name, dataset.conversations.values(), dataset.questions)
    problem = batch_problem(settings)  # combinations where batching cannot work
    if problem is not None:
        raise StartError(problem)
    if process.workerinput is not None:  # queue in the run folder the controller chose
        where = process.workerinput.get("memeval_batch_dir")
        name = str(process.workerinput.get("workerid", "worker"))
        start_worker(state, str(where) if where else None, name)
    if llm.cache is not None and not process.worker:
        problem = llm.cache.check_usable()  # before any paid call, not silently later
        if problem is not None:
            raise StartError(problem)
    if not process.worker:
        problem = llm.check_limiter()  # a shared Redis limiter answers before any call
        if problem is not None:
            raise StartError(problem)
    if process.runs_items:
        llm.prewarm()


def metric_name_problem(state: RunState, extra_scores: bool) -> str | None:
    """Every metric a gate or ``--memeval-max-drop`` names is one this run produces (the
    benchmarks' metrics, the judges' names), checked before any question runs; the problem, or
    None. Hand-written ``memeval_case`` tests (explicit paths) and score plugins
    (``extra_scores``: a plugin or conftest adds scores of its own) can record any name: then
    only the run's end can tell."""
    checks = state.settings.checks
    named: list[tuple[str, str, str | None, str]] = [
        ("--memeval-fail-under", g.text, g.benchmark, g.metric) for g in checks.gates
    ]
    named += [
        # ROW.METRIC gates one category (or overall_all): the name checked is the metric
        ("--memeval-max-drop", f"{m}:{p:g}", None, m.rpartition(".")[2])
        for m, p in checks.max_drops
    ]
    if not named or state.settings.selection.explicit_paths or extra_scores:
        return None
    # imported here: without gates (every xdist worker's common case) a worker never needs
    # them (the summary is the controller's): ~0.08 s of imports saved per process
    from ..analysis import CORRECT_METRIC, check_metric_names

    llm = state.llm
    heads = {b: llm.judge_keys(b) if llm is not None else [] for b in state.benchmarks}
    metrics = {b: tuple(bench.metrics) for b, bench in state.benchmarks.items()}
    return check_metric_names(named, metrics, heads, always=(CORRECT_METRIC,))


@dataclass
class OpenedRun:
    """The run folder the session writes to (None: ``--memeval-estimate`` leaves none) and, when
    resuming, its stored rows checked again."""

    store: RunStore | None
    resumed: CheckedRows | None = None


def open_run(state: RunState, question_run: Callable[[str], QuestionRun]) -> OpenedRun:
    """On the controller once the data loaded, before any question runs: the run folder that
    ``--memeval-rejudge`` / ``--memeval-reanswer`` read, and the results store: the run being
    resumed (its configuration checked, a torn last line repaired, its rows checked and scored
    again with ``question_run``; they become ``state.resume_ids``) or a new one, where a batch
    queues. Raises ``MemevalError`` (a run that cannot be found or resumed) and ``OSError``."""
    from ._batch import start_batch
    from ._store import NUMBERS_KEY, RunStore, check_resume_config, find_run

    settings = state.settings
    if settings.run.rejudge is not None:
        state.rejudge_run = find_run(
            settings.cache_dir, settings.run.rejudge, option="--memeval-rejudge"
        )
    if settings.run.reanswer is not None:  # stored retrievals, answered again
        state.rejudge_run = find_run(
            settings.cache_dir, settings.run.reanswer, option="--memeval-reanswer"
        )
    opened = OpenedRun(store=None)
    if settings.run.resume is not None:
        from ..records import STATUS_ERROR
        from ._stored import check_rows

        folder = find_run(settings.cache_dir, settings.run.resume)
        check_resume_config(folder, settings.numbers())
        opened.store = RunStore(folder)
        opened.store.repair_torn_tail()
        opened.resumed = check_rows(
            question_run,
            state,
            ((f"{folder}", r) for r in opened.store.stored().values() if r.status != STATUS_ERROR),
            "--memeval-resume",
        )
        state.resume_ids = frozenset(opened.resumed.results)
    elif not settings.llm.estimate:  # an estimate leaves no run folder behind
        from ._fingerprint import run_config

        opened.store = RunStore.create(settings.cache_dir)
        # the resume check reads NUMBERS_KEY; the merge reads the fingerprint and shard
        opened.store.write_config(run_config(state) | {NUMBERS_KEY: settings.numbers()})
    if opened.store is not None:  # an estimate queues no batch either
        start_batch(state, opened.store.folder)
    return opened
