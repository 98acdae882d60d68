"""Target ``longmemeval``: generated LongMemEval-S and -M-size files; peak RSS of the loader and of
``pytest --collect-only`` vs the file size.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from targets.common import PERF, PYTEST_BASE, Context, Row, Timing, run_timed

TARGET_RSS = 1.0

_RSS_LAUNCHER = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.STDOUT)
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"wall": time.perf_counter() - t0, "maxrss": usage.ru_maxrss,
                  "rc": os.waitstatus_to_exitcode(status)}))
"""


def run_rss(args: Sequence[str], cwd: Path, env: dict[str, str]) -> Timing:
    """Like :func:`run_timed`, but started from a small launcher process.

    Linux keeps ``ru_maxrss`` across ``execve``: a child forked from this (large) process starts
    with this process's peak as its own. The launcher is a fresh interpreter that imports nothing
    heavy, so the peak it reports for its child is the child's own."""
    out = cwd / ".perf-rss-stdout.txt"
    launch = run_timed(["-c", _RSS_LAUNCHER, str(out), sys.executable, *args], cwd, env)
    info = json.loads(launch.stdout.strip().splitlines()[-1])
    text = out.read_text(encoding="utf-8", errors="replace")
    if info["rc"] != 0:
        tail = "\n".join(text.splitlines()[-25:])
        raise RuntimeError(f"`python {' '.join(args)}` exited {info['rc']} in {cwd}:\n{tail}")
    rss_unit = 1 if sys.platform == "darwin" else 1024
    return Timing(float(info["wall"]), launch.cpu, int(info["maxrss"]) * rss_unit, text)


_MEASURE_LOADER = (
    "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
    "import gen_longmemeval; "
    "print(json.dumps(gen_longmemeval.measure(Path(sys.argv[2]), naive=False)))"
)


def _lme_rows(ctx: Context, variant: str, size_mb: float) -> list[Row]:
    """Generate a LongMemEval file of ``size_mb`` (500 questions), measure, delete it."""
    folder = ctx.work / "lme"
    folder.mkdir(exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < 2 * size_mb * 1e6:
        return [
            Row(
                "longmemeval",
                f"LongMemEval-{variant} ({size_mb:g} MB): does not fit the disk "
                f"({free / 1e9:.1f} GB free), not measured",
                None,
            )
        ]
    path = folder / f"longmemeval_{variant.lower()}_generated.json"
    gen = run_timed(
        [str(PERF / "gen_longmemeval.py"), "--out", str(path), "--size", str(size_mb)],
        folder,
        ctx.env,
    )
    size = path.stat().st_size
    try:
        # gen_longmemeval.measure runs the loader in its own subprocess; calling it from a small
        # interpreter keeps this process's RSS out of the measured peak (see run_rss)
        probe = run_timed(["-c", _MEASURE_LOADER, str(PERF), str(path)], folder, ctx.env)
        loader = json.loads(probe.stdout.strip().splitlines()[-1])
        collect = run_rss(
            [
                *PYTEST_BASE,
                "--collect-only",
                "--memeval=longmemeval",
                f"--memeval-variant={path}",
                "--memsys=no-memory",
            ],
            folder,
            ctx.env,
        )
        items = sum(1 for ln in collect.stdout.splitlines() if "::" in ln)
    finally:
        path.unlink(missing_ok=True)
    mb = 1e6
    ctx.raw[f"longmemeval_{variant}"] = {
        "file_bytes": size,
        "generate_s": gen.wall,
        "loader": loader,
        "collect_wall": collect.wall,
        "collect_maxrss": collect.maxrss,
        "collect_items": items,
    }
    peak = float(loader["peak_rss"])
    return [
        Row(
            "longmemeval",
            f"LongMemEval-{variant} generated ({int(loader['questions'])} q): loader peak RSS "
            "vs file, MB",
            peak / mb,
            size / mb,
            peak / size,
            f"< {TARGET_RSS:g}x",
            peak / size < TARGET_RSS,
            unit="MB",
        ),
        Row(
            "longmemeval",
            "  of which RSS before loading (interpreter + package), MB",
            float(loader["rss_before"]) / mb,
            unit="MB",
        ),
        Row(
            "longmemeval",
            f"  pytest --collect-only ({items} items): peak RSS vs file, MB",
            collect.maxrss / mb,
            size / mb,
            collect.maxrss / size,
            f"< {TARGET_RSS:g}x",
            collect.maxrss / size < TARGET_RSS and items == int(loader["questions"]),
            unit="MB",
        ),
        Row("longmemeval", "  loader time (index + 5 conversations), s", float(loader["seconds"])),
        Row("longmemeval", "  pytest --collect-only wall (collection time), s", collect.wall),
    ]


def section_longmemeval(ctx: Context) -> list[Row]:
    """S size (~277 MB) always; M size (~2.7 GB, same 500 questions with 10x longer sessions,
    not M's 500 sessions per question) unless ``--no-m`` or the disk is too small."""
    rows = _lme_rows(ctx, "S", 277.0)
    if ctx.with_m:
        rows += _lme_rows(ctx, "M", 2700.0)
    return rows
