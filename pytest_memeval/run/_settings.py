"""The run's settings, pytest-free: one immutable :class:`Settings` in five groups.

``plugin/_options.py`` declares every option once (``OPTIONS``) and reads them once into these
groups; nothing else copies a setting. The groups are what the layers need: the dataset
selection (loaders, collection, shards), how the run behaves (verdict, timeouts, resume and
re-scoring), the LLM (answerer, judges, client limits, prices), the reports, and the checks
(gates, regression).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._repeats import DEFAULT_MAX_REPEATED
from ._store import JUDGE_NAMES, JUDGE_NAMES_KEY

if TYPE_CHECKING:
    from ..analysis import Gate
    from ._contract_kit import ContractLimits
    from ._shards import Shard

__all__ = [
    "CalibrationSettings",
    "CheckSettings",
    "LLMSettings",
    "ReportSettings",
    "RunSettings",
    "Selection",
    "Settings",
]


@dataclass(frozen=True)
class CalibrationSettings:
    """--memeval-judge-calibration (read by ``run.calibrate.calibration_settings``)."""

    mode: str  # "before" | "only"
    sources: tuple[str, ...]  # "perturb", audit set names ("audit-v1"), or file paths


@dataclass(frozen=True)
class Selection:
    """Which benchmarks, systems and questions run."""

    benchmarks: tuple[str, ...] = ()
    systems: tuple[str, ...] = ()
    data_dir: Path | None = None
    #: --memeval-accept-unpinned: a local copy that is not the pinned release is used (and
    #: recorded as unpinned) instead of refused
    accept_unpinned: bool = False
    variant: str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    metrics: tuple[str, ...] | None = None
    top_k: tuple[int, ...] = (10,)
    #: --memeval-context-budget: tokens of memory text per question for the answerer
    context_budget: int | None = None
    shard: Shard | None = None
    #: test paths were given on the command line (then they run beside the benchmark)
    explicit_paths: bool = False


@dataclass(frozen=True)
class RunSettings:
    """How the run decides and recovers: verdict, limits, resume, re-scoring, merging."""

    pass_threshold: float | None = None
    strict: bool = False
    show_wrong: int = 5
    #: run folders kept under <cache>/runs (the oldest beyond it are pruned; 0: keep all)
    keep_runs: int = 20
    #: seconds a memory-system call may take (None: no limit)
    timeout: float | None = None
    #: identical failures in a row after which a system's remaining questions are reported as
    #: errors without running (per process; 0: never stop); ``run.repeats``
    max_repeated_errors: int = DEFAULT_MAX_REPEATED
    resume: str | None = None
    rejudge: str | None = None
    reanswer: str | None = None
    merge: tuple[Path, ...] = ()
    cache_import: tuple[Path, ...] = ()
    cache_export: Path | None = None


@dataclass(frozen=True)
class LLMSettings:
    """The answerer, the judges and the LLM client's limits."""

    answerer: str = "extractive"  # "extractive" or PROVIDER:MODEL
    judges: tuple[str, ...] = ()
    judge_style: str | None = None
    judge_runs: int = 10
    judge_prompt: str | None = None
    answer_prompt: str | None = None
    #: --memeval-protocol and --memeval-protocol-source (a local checkout of the upstream repo)
    protocol: str | None = None
    protocol_source: Path | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 8
    #: --memeval-ingest-ahead: conversations the LLM window may reach ahead of the one being run,
    #: each ingested (one fresh system instance per system) before its questions run: the memory
    #: budget of the pipelined stage (0: the window stays in the current conversation)
    ingest_ahead: int = 32
    timeout: float = 60.0
    max_retries: int = 6
    backoff: float = 0.5
    #: connection failures in a row before no more calls (0: never)
    circuit_breaker: int = 5
    no_cache: bool = False
    #: model -> {input, output} dollars per million tokens (--memeval-prices)
    prices: dict[str, dict[str, float]] | None = None
    #: --memeval-llm-rpm / --memeval-llm-tpm: per provider and key, for the whole machine
    rpm: int | None = None
    tpm: int | None = None
    #: --memeval-llm-limiter: None for the machine-local state file, or the redis:// URL whose
    #: database every process of every host draws the rpm / tpm budget from
    limiter: str | None = None
    #: --memeval-llm-limiter-wait: seconds an LLM call waits for an unreachable Redis limiter
    #: before it fails (no request is ever sent without a slot)
    limiter_wait: float = 600.0
    #: --memeval-estimate: count the run's LLM calls and tokens, send none
    estimate: bool = False
    #: --memeval-llm-batch: judge calls queued and sent through the batch APIs at the run's end
    batch: bool = False
    #: --memeval-llm-batch-wait: seconds a batch may take from its submission; then it is
    #: cancelled and its requests are sent synchronously (default 24 h, the providers' window)
    batch_wait: float = 24 * 3600.0

    @property
    def uses_llm(self) -> bool:
        return bool(self.judges) or self.answerer != "extractive"


@dataclass(frozen=True)
class ReportSettings:
    json_path: Path | None = None
    html_path: Path | None = None
    markdown_path: Path | None = None
    #: --memeval-board: the board folder this run is added to (docs/board.md)
    board_path: Path | None = None
    #: published baselines to show (None: a representative few)
    baselines: tuple[str, ...] | None = None
    #: --memeval-errata: a known overlay name or a local path (``run.overlay`` resolves it)
    errata: str | None = None


@dataclass(frozen=True)
class CheckSettings:
    """What decides the exit status beyond the tests: gates and the regression comparison."""

    gates: tuple[Gate, ...] = ()
    save_baseline: Path | None = None
    baseline: Path | None = None
    max_drops: tuple[tuple[str, float], ...] = ()
    alpha: float = 0.05
    #: the health gate (on whenever a baseline is given): the largest rise allowed in the share
    #: of questions that got no memories, raised or went unscored (0.10 = 10 points; None: off)
    health_max_rise: float | None = 0.10
    #: --memeval-judge-calibration (None: off); its figures are gate metrics too
    calibration: CalibrationSettings | None = None


@dataclass(frozen=True)
class Settings:
    selection: Selection = field(default_factory=Selection)
    run: RunSettings = field(default_factory=RunSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    reports: ReportSettings = field(default_factory=ReportSettings)
    checks: CheckSettings = field(default_factory=CheckSettings)
    #: downloads, LLM cache and run folders
    cache_dir: Path = Path(".memeval-cache")
    #: every option's value as given (for the run folder's record and --memeval-merge)
    raw: dict[str, Any] = field(default_factory=dict)
    #: --memeval-contract: the contract's limits (None: a benchmark run or idle)
    contract: ContractLimits | None = None

    @property
    def active(self) -> bool:
        return bool(self.selection.benchmarks)

    def numbers(self) -> dict[str, Any]:
        """The settings that change a run's numbers, by option name (stored in the run folder;
        ``--memeval-resume`` refuses a run whose stored values differ)."""
        sel, llm = self.selection, self.llm
        return {
            "--memeval": list(sel.benchmarks),
            "--memsys": list(sel.systems),
            "--memeval-variant": sel.variant,
            "--memeval-limit": sel.limit,
            "--memeval-sample": sel.sample,
            "--memeval-seed": sel.seed if sel.sample is not None else None,
            "--memeval-metrics": list(sel.metrics) if sel.metrics else None,
            "--memeval-answerer": llm.answerer,
            "--memeval-answer-prompt": llm.answer_prompt,
            "--memeval-judge": list(llm.judges),
            "--memeval-judge-style": llm.judge_style,
            "--memeval-judge-runs": llm.judge_runs if llm.judges else None,
            "--memeval-judge-prompt": llm.judge_prompt,
            "--memeval-protocol": llm.protocol,
            "--memeval-top-k": list(sel.top_k),
            "--memeval-pass-threshold": self.run.pass_threshold,
            "--memeval-context-budget": sel.context_budget,
            # stored judge scores are named per judge style (docs/scoring.md#metric-names); a run
            # folder written before that has none of this key and holds `judge`-named scores
            JUDGE_NAMES_KEY: JUDGE_NAMES if llm.judges else None,
        }

    def system_labels(self, system: str) -> list[tuple[str, int]]:
        """(label, k) per top-k variant: ``bm25`` for one k, ``bm25@10`` ... for several."""
        top_k = self.selection.top_k
        if len(top_k) == 1:
            return [(system, top_k[0])]
        return [(f"{system}@{k}", k) for k in top_k]
