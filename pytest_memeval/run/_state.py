"""The plugin's per-process run state, pytest-free: what ``config.stash[STATE_KEY]`` holds (the
loaded benchmarks and datasets, the selected questions, the systems, the LLM runtime) and the
systems as resolved from ``--memsys``. Moved here from ``plugin/_items.py`` so the glue modules
share the state's type without importing one another (issue 26)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..benchmarks import Benchmark, Dataset
from ..records import STATUS_ERROR, Question, QuestionResult, ResultKey
from ._question import SystemPool

if TYPE_CHECKING:
    from ..answerers import Answerer
    from ..systems import McpConnections
    from ._pipeline import Pipeline
    from ._repeats import RepeatedErrors
    from ._runtime import LLMRuntime
    from ._settings import Settings

__all__ = ["RunState", "SystemRef"]


@dataclass(frozen=True)
class SystemRef:
    """One memory system as resolved from ``--memsys``, at one top-k."""

    label: str  # shown in node ids and tables, e.g. "bm25" or "bm25@20"
    base: str  # the system name, shared by its top-k variants (ingestion is shared too)
    k: int
    #: fixture name to try first (a ``--memsys`` value that is a Python identifier)
    fixture: str | None = None
    #: what the other resolution rules found (None: the name must be a fixture)
    factory: Callable[[], object] | None = None
    #: the systems available, for the error when ``fixture`` turns out not to exist
    available: str = ""
    #: the ``--memsys`` value this system came from (named in usage errors)
    origin: str = ""


@dataclass
class RunState:
    """Per-process state on ``config.stash`` (workers each have their own)."""

    settings: Settings
    benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    datasets: dict[str, Dataset] = field(default_factory=dict)
    selected: dict[str, list[Question]] = field(default_factory=dict)
    systems: list[SystemRef] | None = None
    pool: SystemPool = field(default_factory=SystemPool)
    answerer: Answerer | None = None
    llm: LLMRuntime | None = None
    #: the official protocol (``--memeval-protocol``): a ``protocols.LoadedProtocol``
    protocol: Any = None
    #: run folder whose stored predictions --memeval-rejudge re-scores (chosen on the controller)
    rejudge_run: Path | None = None
    _stored: dict[tuple[str, str, str], QuestionResult] | None = None
    #: results restored from the run being resumed (their items are deselected)
    resume_ids: frozenset[ResultKey] = frozenset()
    collect_seconds: float = 0.0
    load_seconds: dict[str, float] = field(default_factory=dict)
    #: --memeval-errata overlay (benchmarks.errata.Errata), loaded on the controller only
    errata: Any = None
    #: fixture-only systems whose fixture does not exist: their first question errored with why;
    #: their other questions are not run (SystemNotFound)
    missing_systems: set[str] = field(default_factory=set)
    #: the pipelined LLM stage (``run.pipeline``), made by the first item that needs it
    pipeline: Pipeline | None = None
    #: node id -> position in ``session.items`` (where an item looks ahead from)
    item_index: dict[str, int] | None = None
    #: the run folder's ``batch/`` (--memeval-llm-batch queues and batch ids; run.batch)
    batch_dir: Path | None = None
    #: this process's memory-system failures: which repeat, which systems stopped
    _repeated: RepeatedErrors | None = None
    #: this run's MCP server connections (``--memsys=mcp:...``; closed at session end)
    _mcp: McpConnections | None = None

    def mcp(self) -> McpConnections:
        """This run's :class:`~pytest_memeval.systems._mcp.McpConnections`, made on first use
        (the MCP adapter is imported only by a run with an MCP system)."""
        if self._mcp is None:
            from ..systems import McpConnections

            self._mcp = McpConnections()
        return self._mcp

    def close_services(self) -> None:
        """Session end: close this run's MCP connections (their servers reaped) and forget the
        servers that failed to start: a next session in this process starts them afresh."""
        if self._mcp is not None:
            self._mcp.close()
            self._mcp = None

    def repeated_errors(self) -> RepeatedErrors:
        """This process's :class:`~.repeats.RepeatedErrors` (--memeval-max-repeated-errors)."""
        if self._repeated is None:
            from ._repeats import RepeatedErrors

            self._repeated = RepeatedErrors(self.settings.run.max_repeated_errors)
        return self._repeated

    def llm_pipeline(self) -> Pipeline | None:
        """The process's LLM window: None without LLM calls or at ``--memeval-llm-concurrency=1``
        (each question then runs its whole path in its own setup, as before)."""
        if self.pipeline is None and self.llm is not None and self.settings.llm.concurrency > 1:
            from ._pipeline import Pipeline

            self.pipeline = Pipeline(self.settings.llm.concurrency)
        return self.pipeline

    def stored_predictions(self) -> dict[tuple[str, str, str], QuestionResult]:
        """(benchmark, system, question id) -> stored result of the run being re-judged (the
        built-in items' results only), read once per process."""
        if self._stored is None:
            from ._store import read_results

            self._stored = {}
            if self.rejudge_run is not None:
                for r in read_results(self.rejudge_run):
                    if not r.flow and r.status != STATUS_ERROR:
                        self._stored[(r.benchmark, r.system, r.question_id)] = r
        return self._stored

    def threshold(self, bench: str) -> float:
        if self.settings.run.pass_threshold is not None:
            return self.settings.run.pass_threshold
        return float(getattr(self.benchmarks[bench], "default_threshold", 0.5))
