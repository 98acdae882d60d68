"""Target ``judge``: judge calls against the loopback server (``perf/bench_judge.py``): wall vs the
ideal ``N x latency / concurrency``, and the HTTP requests of the warm rerun.
"""

from __future__ import annotations

import contextlib
import importlib
import io
from typing import Any

from targets.common import Context, Row

TARGET_JUDGE = 1.25


def section_judge(ctx: Context) -> list[Row]:
    bench_judge: Any = importlib.import_module("bench_judge")
    argv = ["--calls", "60", "--latency", "0.02", "--concurrency", "4"] if ctx.quick else []
    with contextlib.redirect_stdout(io.StringIO()):
        res = bench_judge.main(argv)
    ctx.raw["judge"] = res
    rows = []
    for case in res["cases"]:
        what = (
            f"judge: {case['calls']} calls at {case['latency'] * 1000:g} ms, "
            f"{case['processes']} proc x {case['concurrency']} conc: wall vs N x lat / conc"
        )
        rows.append(
            Row(
                "judge",
                what,
                case["wall"],
                case["ideal"],
                case["ratio"],
                f"<= {TARGET_JUDGE:g}x",
                case["ratio"] <= TARGET_JUDGE and case["requests"] == case["calls"],
            )
        )
        rows.append(
            Row(
                "judge",
                f"  warm rerun: HTTP requests (cache hits {case['warm_hits']}, "
                f"{case['warm_wall']:.2f} s)",
                float(case["warm_requests"]),
                0.0,
                None,
                "0 requests",
                case["warm_requests"] == 0,
                unit="n",
            )
        )
    return rows
