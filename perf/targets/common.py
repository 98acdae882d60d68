"""What every perf target shares: the table row, subprocess timing, the LoCoMo workload.

``perf/run.py`` puts the repository root, ``perf/`` and ``tests/`` on ``sys.path`` before it imports
this package, so the targets can import ``bench_f1``, ``bench_judge``, ``gen_longmemeval`` and
``llm_server`` by their plain names.
"""

from __future__ import annotations

import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PERF = Path(__file__).resolve().parent.parent
ROOT = PERF.parent

PYTEST_BASE = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark")
INSTANT = "instant_system:instant"
SLOW = "instant_system:slow"
ABSTAIN = "Not mentioned in the conversation"


@dataclass
class Row:
    """One line of the table. ``ok`` is None for rows that only report a number."""

    section: str
    what: str
    ours: float | None
    reference: float | None = None
    ratio: float | None = None
    target: str = ""
    ok: bool | None = None
    unit: str = "s"
    note: str = ""


@dataclass
class Timing:
    wall: float
    cpu: float
    maxrss: int
    stdout: str


@dataclass
class Context:
    """What every section needs: sizes for quick / full mode and a scratch folder."""

    data: Path
    work: Path
    quick: bool
    env: dict[str, str]
    profile: bool = False
    with_m: bool = True
    pyspy: bool = False
    raw: dict[str, Any] = field(default_factory=dict)


def data_dir() -> Path:
    """``$MEMEVAL_DATA_DIR`` or ``../shared/data`` relative to the repository root."""
    env = os.environ.get("MEMEVAL_DATA_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "data"


# ------------------------------------------------------------------------------------------------
# subprocess helpers


def child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMEVAL_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_timed(args: Sequence[str], cwd: Path, env: dict[str, str], check: bool = True) -> Timing:
    """Run ``python *args`` in ``cwd``; wall seconds, CPU seconds (user + sys, with its own
    children such as xdist workers) and peak RSS in bytes of the largest process."""
    out_path = cwd / ".perf-stdout.txt"
    with open(out_path, "w", encoding="utf-8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_path.read_text(encoding="utf-8", errors="replace")
    if check and proc.returncode != 0:
        tail = "\n".join(text.splitlines()[-25:])
        raise RuntimeError(f"`python {' '.join(args)}` exited {proc.returncode} in {cwd}:\n{tail}")
    rss_unit = 1 if sys.platform == "darwin" else 1024
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * rss_unit, text)


def best_of(n: int, fn: Callable[[], Timing]) -> tuple[Timing, list[float]]:
    """The fastest of ``n`` runs (by wall time) and all wall times."""
    runs = [fn() for _ in range(n)]
    return min(runs, key=lambda t: t.wall), [t.wall for t in runs]


# ------------------------------------------------------------------------------------------------
# LoCoMo workload


def locomo_questions(data: Path) -> list[tuple[str, str, int, dict[str, Any]]]:
    """``(question_id, conversation_id, index_in_conversation, qa)`` in file order (ids as the
    LoCoMo loader makes them: ``<sample_id>-q<n>``)."""
    file = data / "locomo" / "locomo10.json"
    with open(file, encoding="utf-8") as fh:
        samples = json.load(fh)
    out = []
    for sample in samples:
        for i, qa in enumerate(sample["qa"]):
            out.append((f"{sample['sample_id']}-q{i + 1}", sample["sample_id"], i, qa))
    return out


def write_answers(data: Path, path: Path) -> int:
    """Write ``{question_id: answer}`` for every LoCoMo question and return how many.

    Even positions get the gold answer (the abstention phrase for adversarial questions), odd ones
    another question's answer, so about half are CORRECT and half WRONG: both item outcomes, their
    report sections and every metric are exercised."""
    questions = locomo_questions(data)
    n = len(questions)
    table: dict[str, str] = {}
    for i, (qid, _, _, qa) in enumerate(questions):
        gold = qa.get("answer", ABSTAIN if qa.get("category") == 5 else "")
        other = questions[(i * 7 + 3) % n][3].get("answer", "no idea")
        if i % 2 == 0:
            table[qid] = ABSTAIN if qa.get("category") == 5 else str(gold)
        else:
            table[qid] = str(other)
    path.write_text(json.dumps(table), encoding="utf-8")
    return n


def count_selected(data: Path, limit: int | None) -> int:
    """How many LoCoMo questions ``--memeval-limit=limit`` selects (first N per conversation)."""
    return sum(1 for _, _, i, _ in locomo_questions(data) if limit is None or i < limit)


def make_project(ctx: Context, name: str) -> Path:
    """A temp project holding ``instant_system.py`` and ``answers.json``."""
    proj = ctx.work / name
    proj.mkdir(parents=True, exist_ok=True)
    shutil.copy(PERF / "instant_system.py", proj / "instant_system.py")
    write_answers(ctx.data, proj / "answers.json")
    return proj


def make_trivial(ctx: Context, n: int) -> Path:
    proj = ctx.work / f"trivial{n}"
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "test_trivial.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({n}))\n"
        "def test_trivial(i):\n    assert True\n",
        encoding="utf-8",
    )
    return proj


def memeval_args(ctx: Context, system: str, limit: int | None, *extra: str) -> list[str]:
    args = [
        *PYTEST_BASE,
        "--memeval=locomo",
        f"--memeval-data={ctx.data}",
        f"--memsys={system}",
    ]
    if limit is not None:
        args.append(f"--memeval-limit={limit}")
    return [*args, *extra]


def read_report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


_IMPORT_PROBE = (
    "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
)


def import_cost(
    ctx: Context,
    repeats: int,
    module: str = "pytest_memeval.metrics",
    already: str = "_pytest.python, pytest_memeval.plugin",
) -> float:
    """Best of ``repeats``: seconds to import ``module`` in a fresh interpreter that has imported
    ``already`` (by default what every pytest run imports anyway: pytest and the plugin's own
    light modules)."""
    best = float("inf")
    for _ in range(repeats):
        t = run_timed(
            ["-c", f"import {already};" + _IMPORT_PROBE.format(module=module)],
            ctx.work,
            ctx.env,
        )
        best = min(best, float(t.stdout.strip().splitlines()[-1]))
    return best


def profile_run(
    ctx: Context,
    proj: Path,
    run_args: list[str],
    env: dict[str, str] | None = None,
    key: str = "profile",
) -> list[dict[str, Any]]:
    """cProfile a run; the 15 functions of ``pytest_memeval`` with most cumulative time (the
    profiler's total goes to ``ctx.raw[key + "_total_s"]``)."""
    out = proj / f"{key}.out"
    args = ["-m", "cProfile", "-o", str(out), *run_args]
    run_timed(args, proj, env if env is not None else ctx.env)
    stats = pstats.Stats(str(out), stream=io.StringIO())
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = float(stats.total_tt)  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, nc, tt, ct, _) in raw.items():
        if "pytest_memeval" in filename:
            rel = filename.split("pytest_memeval", 1)[1].lstrip("/")
            rows.append(
                {
                    "function": f"pytest_memeval/{rel}:{line}({func})",
                    "calls": nc,
                    "tottime": tt,
                    "cumtime": ct,
                }
            )
    rows.sort(key=lambda r: -float(r["cumtime"]))
    ctx.raw[f"{key}_total_s"] = total
    return rows[:15]
