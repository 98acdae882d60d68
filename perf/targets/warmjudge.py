"""Target ``warmjudge``: a LoCoMo run with a judge whose every call is answered from the LLM cache
vs the same run with offline metrics only, and the HTTP requests the warm reruns made.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from targets.common import (
    INSTANT,
    Context,
    Row,
    Timing,
    count_selected,
    import_cost,
    make_project,
    memeval_args,
    profile_run,
    read_report,
    run_timed,
)

TARGET_WARM_JUDGE = 1.2
JUDGE_SPEC = "openai:gpt-4o-mini"
LOOPBACK_KEY = "sk-perf-loopback"


def _judge_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    """The loopback judge: a mem0-style verdict (the JSON LoCoMo's default judge parses)."""
    return '{"label": "CORRECT"}'


def section_warmjudge(ctx: Context) -> list[Row]:
    """Issue 6 item 5, second half: a warm judge rerun (every call answered from the LLM cache)
    makes zero HTTP requests and costs at most 1.2x the same run with offline metrics only."""
    llm_server: Any = importlib.import_module("llm_server")  # tests/llm_server.py
    limit = 2 if ctx.quick else 20
    repeats = 1 if ctx.quick else 3
    n = count_selected(ctx.data, limit)
    proj = make_project(ctx, "warmjudge")
    cache = ctx.work / "warmjudge-cache"
    with llm_server.LLMServer(reply=_judge_reply) as server:
        env = {**ctx.env, **server.env(LOOPBACK_KEY)}
        common = [f"--memeval-cache-dir={cache}"]

        def args(judge: bool, report: Path) -> list[str]:
            extra = [*common, f"--memeval-json={report}"]
            if judge:
                extra.append(f"--memeval-judge={JUDGE_SPEC}")
            return memeval_args(ctx, INSTANT, limit, *extra)

        before = server.count()
        cold = run_timed(args(True, proj / "cold.json"), proj, env)
        cold_requests = server.count() - before
        run_timed(args(False, proj / "offline.json"), proj, env)  # warm-up of the offline path

        runs: dict[str, list[Timing]] = {"warm": [], "offline": []}
        warm_requests = 0
        for i in range(repeats):  # interleaved, so both see the same machine load
            before = server.count()
            runs["warm"].append(run_timed(args(True, proj / f"warm{i}.json"), proj, env))
            warm_requests += server.count() - before
            runs["offline"].append(run_timed(args(False, proj / f"offline{i}.json"), proj, env))
        if ctx.profile:
            ctx.raw["profile_warmjudge"] = profile_run(
                ctx, proj, args(True, proj / "profiled.json"), env, key="profile_warmjudge"
            )

    warm_reports = [read_report(proj / f"warm{i}.json") for i in range(repeats)]
    offline_report = read_report(proj / "offline0.json")
    cold_report = read_report(proj / "cold.json")
    # the judge's headline metric, as the report names it (judge_mem0 on LoCoMo)
    metric = str(cold_report["provenance"]["judge_metric"]["locomo"])
    for name, rep in (("cold", cold_report), ("warm", warm_reports[0])):
        overall = rep["runs"][0]["summary"]["overall"]
        if overall.get("count") != n or metric not in overall:
            raise RuntimeError(
                f"{name} judge run: {overall.get('count')} questions scored, "
                f"expected {n} with a {metric} score"
            )
    if metric in offline_report["runs"][0]["summary"]["overall"]:
        raise RuntimeError("the offline-only run has a judge score")
    hits = [int((r.get("extra", {}).get("llm_cache") or {}).get("hits", 0)) for r in warm_reports]
    best = {k: min(v, key=lambda t: t.wall) for k, v in runs.items()}
    best_cpu = {k: min(t.cpu for t in v) for k, v in runs.items()}
    ratio = best["warm"].wall / best["offline"].wall
    diff = best["warm"].wall - best["offline"].wall
    openai_s = import_cost(
        ctx,
        1 if ctx.quick else 3,
        "openai",
        "_pytest.python, pytest_memeval.plugin, pytest_memeval.metrics, pytest_memeval.run._runtime",
    )
    ctx.raw["warmjudge"] = {
        "questions": n,
        "limit": limit,
        "cold_wall": cold.wall,
        "cold_requests": cold_requests,
        "walls": {k: [t.wall for t in v] for k, v in runs.items()},
        "cpus": {k: [t.cpu for t in v] for k, v in runs.items()},
        "warm_requests": warm_requests,
        "warm_cache_hits": hits,
        "import_openai_s": openai_s,
        "warm_extra": warm_reports[0].get("extra", {}),
    }
    label = f"{n} q (--memeval-limit={limit})"
    return [
        Row(
            "warmjudge",
            f"warm judge rerun, {label}, {JUDGE_SPEC} cached vs offline only: wall, best of "
            f"{repeats}",
            best["warm"].wall,
            best["offline"].wall,
            ratio,
            f"<= {TARGET_WARM_JUDGE:g}x",
            ratio <= TARGET_WARM_JUDGE,
        ),
        Row(
            "warmjudge",
            "  same, CPU s (user+sys, best)",
            best_cpu["warm"],
            best_cpu["offline"],
            best_cpu["warm"] / best_cpu["offline"],
        ),
        Row(
            "warmjudge",
            "  `import openai`, s (not paid when every call is cached: clients are built lazily)",
            openai_s,
            diff,
            # the reference is the wall difference warm - offline: near zero, a ratio means nothing
            openai_s / diff if diff > 0.01 else None,
        ),
        Row(
            "warmjudge",
            f"  warm reruns: HTTP requests to the loopback server ({repeats} runs, cache hits "
            f"{min(hits)} per run)",
            float(warm_requests),
            0.0,
            None,
            "0 requests",
            warm_requests == 0 and min(hits) > 0,
            unit="n",
        ),
        Row(
            "warmjudge",
            "  cold run (fills the cache): HTTP requests vs questions",
            float(cold_requests),
            float(n),
            None,
            unit="n",
        ),
        Row("warmjudge", "  cold run wall, s", cold.wall),
    ]
