"""What a run folder's ``config.json`` records, pytest-free: the options, the plugin version, the
shard and a *fingerprint* of everything that decides the run's numbers (shards and merges must
agree on it; ``shards.load_shards`` compares them). Moved out of ``plugin/_scale.py`` (issue 26)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import __version__
from ._store import JUDGE_NAMES

if TYPE_CHECKING:
    from ._state import RunState

__all__ = ["run_config", "run_fingerprint"]


def run_fingerprint(state: RunState) -> dict[str, Any]:
    """Everything that decides a run's numbers, machine-independent (no paths): shards and merges
    must agree on all of it."""
    s = state.settings
    return {
        "plugin_version": __version__,
        "benchmarks": list(s.selection.benchmarks),
        "datasets": {
            name: {"variant": ds.variant, "sha256": sorted(ds.sha256.values())}
            for name, ds in state.datasets.items()
        },
        "memsys": list(s.selection.systems),
        "systems": [ref.label for ref in state.systems or ()],
        "top_k": list(s.selection.top_k),
        "limit": s.selection.limit,
        "sample": s.selection.sample,
        "seed": s.selection.seed,
        "metrics": list(s.selection.metrics) if s.selection.metrics else None,
        "answerer": s.llm.answerer,
        "judges": list(s.llm.judges),
        "judge_style": s.llm.judge_style,
        "judge_runs": s.llm.judge_runs if s.llm.judges else None,
        # shards written before the per-style judge metric names lack it (and differ from here)
        "judge_metric_names": JUDGE_NAMES if s.llm.judges else None,
        "prompt_sha256": (
            state.llm.prompt_hashes(list(state.benchmarks)) if state.llm is not None else {}
        ),
        "pass_threshold": s.run.pass_threshold,
        **(
            {"context_budget": s.selection.context_budget}
            if s.selection.context_budget is not None
            else {}
        ),
        "strict": s.run.strict,
    }


def run_config(state: RunState) -> dict[str, Any]:
    """The ``config.json`` of a run folder: options, plugin version, fingerprint, shard."""
    s = state.settings
    return {
        "options": dict(s.raw),
        "plugin": __version__,
        "fingerprint": run_fingerprint(state),
        "system_bases": _system_bases(state),
        "shard": s.selection.shard.to_dict() if s.selection.shard is not None else None,
        "merged_from": [str(p) for p in s.run.merge] or None,
    }


def _system_bases(state: RunState) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for ref in state.systems or ():
        bases = out.setdefault(ref.origin or ref.base, [])
        if ref.base not in bases:
            bases.append(ref.base)
    return out
