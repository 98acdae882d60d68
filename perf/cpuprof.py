"""Per-test CPU of a test run (a pytest plugin, for measuring the suite itself).

Each test's user + system CPU, its own process's and that of the child processes it waited for
(an inner ``-n 2`` run's workers, a subprocess run), and its wall time::

    CPUPROF_OUT=/tmp/prof PYTHONPATH=perf python -m pytest -n 2 -p cpuprof
    python perf/cpuprof.py /tmp/prof        # the totals and the costliest tests and files

Each process writes ``<CPUPROF_OUT>.<worker>.json`` (``main`` without xdist): a list of
``[nodeid, cpu_seconds, wall_seconds]``. docs/ci.md's table of the README command's times was
measured with it.
"""

from __future__ import annotations

import glob
import json
import os
import resource
import sys
import time
from collections.abc import Generator

import pytest

_ROWS: list[tuple[str, float, float]] = []


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    cpu, wall = _cpu(), time.perf_counter()
    try:
        return (yield)
    finally:
        _ROWS.append((item.nodeid, _cpu() - cpu, time.perf_counter() - wall))


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("CPUPROF_OUT")
    if out:
        # the xdist worker's id from its config: PYTEST_XDIST_WORKER is also inherited by the
        # pytest processes a test starts
        workerinput = getattr(session.config, "workerinput", {})
        worker = str(workerinput.get("workerid", "main"))
        with open(f"{out}.{worker}.json", "w", encoding="utf-8") as f:
            json.dump(_ROWS, f)


def main(prefix: str, most: int = 25) -> None:
    rows: list[tuple[str, float, float]] = []
    for path in sorted(glob.glob(f"{glob.escape(prefix)}.*.json")):
        with open(path, encoding="utf-8") as f:
            part = [(str(n), float(c), float(w)) for n, c, w in json.load(f)]
        cpu, wall = sum(r[1] for r in part), sum(r[2] for r in part)
        print(f"{path}: {len(part)} tests, {cpu:.0f} CPU-s, {wall:.0f} wall-s")
        rows += part
    idle = sum(max(0.0, wall - cpu) for _, cpu, wall in rows)
    print(
        f"all: {len(rows)} tests, {sum(r[1] for r in rows):.0f} CPU-s, "
        f"{idle:.0f} s of waiting (wall beyond CPU)"
    )
    by_file: dict[str, float] = {}
    for nodeid, cpu, _ in rows:
        name = nodeid.split("::")[0]
        by_file[name] = by_file.get(name, 0.0) + cpu
    print("\nCPU-s by file:")
    for name, total in sorted(by_file.items(), key=lambda kv: -kv[1])[:most]:
        print(f"{total:8.1f}  {name}")
    print("\ncostliest tests (CPU-s, wall-s):")
    for nodeid, cpu, wall in sorted(rows, key=lambda r: -r[1])[:most]:
        print(f"{cpu:8.1f} {wall:8.1f}  {nodeid}")


if __name__ == "__main__":
    main(sys.argv[1])
