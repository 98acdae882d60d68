"""Judge-call throughput on the loopback server: wall time vs the ideal N x latency / concurrency.

    python perf/bench_judge.py          # 500 calls, 100 ms: concurrency 4, 16, and 4 procs x 4
    python perf/bench_judge.py --concurrency 1,4,16 --processes 1,4     # the full grid

Each case sends ``--calls`` distinct judge calls through the real client (openai SDK, cache on,
retries on) with ``run_parallel`` under the per-process semaphore; with ``--processes P`` the calls
are split over P worker processes (as xdist ``-n P`` would), each with its own semaphore of the
given size, so the ideal is ``N x latency / (P x concurrency)``. Every case is then rerun warm:
the same calls must make zero HTTP requests. Target: ratio <= 1.25.
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.pool
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (str(ROOT), str(ROOT / "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from llm_server import LLMServer  # noqa: E402

from pytest_memeval.llm import (  # noqa: E402
    ChatMessage,
    LLMCache,
    RetryPolicy,
    TokenAccounting,
    make_client,
    make_semaphore,
    run_parallel,
)

TARGET = 1.25
_KEY = "sk-bench-loopback"


def _run_slice(args: tuple[str, str, str, list[int], int]) -> dict[str, int]:
    """Send the calls ``indices`` through one client; returns its accounting totals."""
    base_url, cache_dir, prefix, indices, concurrency = args
    os.environ["OPENAI_API_KEY"] = _KEY
    acc = TokenAccounting()
    cache = LLMCache(cache_dir)
    with make_client(
        "openai:bench-judge",
        base_url=base_url,
        cache=cache,
        concurrency=make_semaphore(concurrency),
        retry=RetryPolicy(),
        timeout=30.0,
        accounting=acc,
    ) as client:
        texts = run_parallel(
            lambda i: (
                client.complete(
                    [
                        ChatMessage("system", "You are a strict grader. Reply CORRECT or WRONG."),
                        ChatMessage("user", f"{prefix} question {i}: gold 'Paris', answer 'Paris'"),
                    ],
                    temperature=0.0,
                    max_tokens=16,
                ).text
            ),
            indices,
            max_workers=concurrency,
        )
    cache.close()
    assert all(t == "CORRECT" for t in texts)
    return acc.total().to_dict()


def _pool(processes: int) -> multiprocessing.pool.Pool:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with the server's threads
        return ctx.Pool(processes)


def _timed(
    server: LLMServer,
    cache_dir: str,
    prefix: str,
    calls: int,
    concurrency: int,
    processes: int,
    pool: multiprocessing.pool.Pool | None,
) -> tuple[float, int, dict[str, int]]:
    before = server.count()
    slices = [list(range(calls))[p::processes] for p in range(processes)]
    jobs = [(server.openai_base_url, cache_dir, prefix, s, concurrency) for s in slices]
    t0 = time.perf_counter()
    results = [_run_slice(jobs[0])] if pool is None else pool.map(_run_slice, jobs)
    wall = time.perf_counter() - t0
    totals: dict[str, int] = {}
    for r in results:
        for k, v in r.items():
            totals[k] = totals.get(k, 0) + v
    return wall, server.count() - before, totals


def run_case(
    server: LLMServer, *, calls: int, latency: float, concurrency: int, processes: int
) -> dict[str, Any]:
    pool = _pool(processes) if processes > 1 else None
    try:
        if pool is not None:  # start the workers before the clock does
            pool.map(abs, range(processes))
        with tempfile.TemporaryDirectory(prefix="memeval-bench-") as cache_dir:
            prefix = f"c{concurrency}p{processes}"
            wall, requests, cold = _timed(
                server, cache_dir, prefix, calls, concurrency, processes, pool
            )
            warm_wall, warm_requests, warm = _timed(
                server, cache_dir, prefix, calls, concurrency, processes, pool
            )
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    ideal = calls * latency / (concurrency * processes)
    return {
        "calls": calls,
        "latency": latency,
        "concurrency": concurrency,
        "processes": processes,
        "wall": wall,
        "ideal": ideal,
        "ratio": wall / ideal,
        "requests": requests,
        "retries": cold.get("retries", 0),
        "warm_wall": warm_wall,
        "warm_requests": warm_requests,
        "warm_hits": warm.get("cache_hits", 0),
        "ok": wall / ideal <= TARGET and warm_requests == 0 and requests == calls,
    }


def _print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'procs':>5} {'conc':>4} {'calls':>5} {'wall s':>7} {'ideal s':>7} {'ratio':>6} "
        f"{'reqs':>5} {'warm s':>7} {'warm reqs':>9} {'hits':>5}  result"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['processes']:>5} {r['concurrency']:>4} {r['calls']:>5} {r['wall']:>7.2f} "
            f"{r['ideal']:>7.2f} {r['ratio']:>6.3f} {r['requests']:>5} {r['warm_wall']:>7.2f} "
            f"{r['warm_requests']:>9} {r['warm_hits']:>5}  "
            + ("ok" if r["ok"] else f"MISSED (target: ratio <= {TARGET}, 0 warm requests)")
        )


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the table, return ``{"cases": [...], "ok": bool}``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=_ints, default=None, help="e.g. 1,4,16")
    parser.add_argument("--processes", type=_ints, default=None, help="e.g. 1,4")
    args = parser.parse_args(argv)
    if args.concurrency is None and args.processes is None:
        # concurrency 4 and 16 in one process, and 4 processes x 4 (as with xdist -n 4)
        cases = [(1, 4), (1, 16), (4, 4)]
    else:
        cases = [(p, c) for p in (args.processes or [1]) for c in (args.concurrency or [4, 16])]

    import openai  # noqa: F401  (loaded once before any fork)

    os.environ["OPENAI_API_KEY"] = _KEY
    rows: list[dict[str, Any]] = []
    with LLMServer(latency=args.latency, reply=lambda m, model, p: "CORRECT") as server:
        for processes, concurrency in cases:
            rows.append(
                run_case(
                    server,
                    calls=args.calls,
                    latency=args.latency,
                    concurrency=concurrency,
                    processes=processes,
                )
            )
    print(f"judge calls against the loopback server ({args.latency * 1000:.0f} ms latency)")
    _print_table(rows)
    return {"cases": rows, "ok": all(r["ok"] for r in rows)}


if __name__ == "__main__":
    result = main()
    sys.exit(0 if result["ok"] else 1)
