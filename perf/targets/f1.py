"""Target ``f1``: the official LoCoMo F1 over every question, ours vs a plain implementation
(``perf/bench_f1.py``; CPU seconds, cold and warm caches, exact float equality).
"""

from __future__ import annotations

import importlib
from typing import Any

from targets.common import Context, Row

TARGET_F1 = 10.0


def section_f1(ctx: Context) -> list[Row]:
    bench_f1: Any = importlib.import_module("bench_f1")
    res = bench_f1.main(repeats=1 if ctx.quick else 5)
    ctx.raw["f1"] = res
    q = res["questions"]
    rows = [
        Row(
            "f1",
            f"LoCoMo F1, {q} q x 2 pairs, CPU s, cold caches (ours vs plain)",
            res["ours_cold_s"],
            res["plain_s"],
            res["ratio_cold"],
            f"speed-up >= {TARGET_F1:g}x",
            res["ratio_cold"] >= TARGET_F1,
        ),
        Row(
            "f1",
            "LoCoMo F1, same, warm caches (rescoring, 2nd system)",
            res["ours_warm_s"],
            res["plain_s"],
            res["ratio_warm"],
            f"speed-up >= {TARGET_F1:g}x",
            res["ratio_warm"] >= TARGET_F1,
        ),
        Row(
            "f1",
            "LoCoMo F1 mismatches vs plain (exact float equality)",
            float(res["mismatches"]),
            float(res["pairs"]),
            None,
            "0 mismatches",
            bool(res["identical"]),
            unit="n",
        ),
    ]
    return rows
