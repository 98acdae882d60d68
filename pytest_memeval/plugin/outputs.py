"""What each process reports to the controller: a result as report properties, and a process's
worker output (ingests, LLM cache, tokens) merged over the processes. Moved out of
``controller.py`` verbatim (issue 26)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..run.state import RunState


PROPERTY_NAME = "memeval"
#: the report property of a question not run because its system stopped after repeated identical
#: errors (``run.repeats``): the stop as a dict on the wire, its first failing node id once the
#: controller read it (what JUnit shows)
STOPPED_PROPERTY = "memeval.stopped"


def flat_properties(result: Mapping[str, Any]) -> list[tuple[str, object]]:
    """A result dict as the flat ``memeval.status`` / ``memeval.<metric>`` report properties."""
    props: list[tuple[str, object]] = [("memeval.status", str(result.get("status")))]
    for metric, score in (result.get("scores") or {}).items():
        props.append((f"memeval.{metric}", score))
    return props


def worker_output(state: RunState) -> dict[str, Any]:
    """What one process reports to the controller at the end (plain JSON-compatible data)."""
    out: dict[str, Any] = {"ingests": dict(state.pool.ingests)}
    if state.llm is not None:
        out.update(state.llm.output())
    return out


def merge_outputs(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    from ..llm import TokenAccounting

    ingests: dict[str, int] = {}
    cache: dict[str, int] = {}
    cache_off: list[str] = []
    limiter: list[str] = []
    tokens = TokenAccounting()
    warnings = unscored = 0
    imported: dict[str, dict[str, int]] = {}
    for out in outputs:
        for label, roles in (out.get("imported") or {}).items():
            into = imported.setdefault(str(label), {})
            for role, n in roles.items():
                into[str(role)] = into.get(str(role), 0) + int(n)
        cache_off += [str(x) for x in out.get("cache_off") or () if str(x) not in cache_off]
        for line in out.get("limiter") or ():  # each process says it; the run says it once
            if str(line) not in limiter:
                limiter.append(str(line))
        for system, n in (out.get("ingests") or {}).items():
            ingests[system] = ingests.get(system, 0) + int(n)
        for key, n in (out.get("cache") or {}).items():
            if isinstance(n, (int, float)):
                cache[key] = cache.get(key, 0) + int(n)
        if out.get("tokens"):
            tokens.merge(out["tokens"])
        warnings += int(out.get("judge_warnings", 0))
        unscored += int(out.get("judge_unscored", 0))
    return {
        "ingests": ingests,
        "cache": cache,
        "cache_off": cache_off,
        "limiter": limiter,
        "tokens": tokens.to_dict(),
        "judge_warnings": warnings,
        "judge_unscored": unscored,
        "imported": imported,
    }
